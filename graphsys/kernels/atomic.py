"""An atomic add for numba's CPU kernels (numba offers atomics only on CUDA).

:func:`atomic_add` emits LLVM's ``atomicrmw add`` (monotonic ordering) on one element of a
C-contiguous 1-D integer array and returns the element's value before the add, so parallel
loops may add into shared counters (a vertex's triangles, an edge's support) or take slots
from a shared cursor without per-thread copies. Only the addition is atomic: reading the
array while other threads add into it sees some of their additions.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def atomic_add(typingctx, arr, index, value):
    """``old = arr[index]; arr[index] += value`` as one atomic step; returns ``old``.

    ``arr``: a C-contiguous 1-D integer array; ``index``: an integer (no bounds check, no
    negative wrap-around); ``value``: an integer, cast to the array's type.
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
            and isinstance(arr.dtype, types.Integer) and isinstance(index, types.Integer)
            and isinstance(value, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        arr_t, index_t, value_t = sig.args
        arr_v, index_v, value_v = args
        ary = context.make_array(arr_t)(context, builder, arr_v)
        i = context.cast(builder, index_v, index_t, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, arr_t, ary, [i])
        v = context.cast(builder, value_v, value_t, arr_t.dtype)
        return builder.atomic_rmw("add", ptr, v, "monotonic")

    return arr.dtype(arr, index, value), codegen
