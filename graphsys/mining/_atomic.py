"""The mining kernels' atomic add (:func:`graphsys.atomics.atomic_add`, re-exported) and a
prefetch hint."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from graphsys.atomics import atomic_add

__all__ = ["atomic_add", "prefetch"]


@intrinsic
def prefetch(typingctx, arr, index):
    """Ask the CPU to bring ``arr[index]`` into cache (LLVM's ``llvm.prefetch``, for a read):
    a hint, never a load (the kernels still pass indices inside the array).

    The triangle kernels jump from row to row; fetching the next row's offsets and first
    entries while the current row is scanned hides most of each jump's cache miss.
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
            and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        arr_t, index_t = sig.args
        ary = context.make_array(arr_t)(context, builder, args[0])
        i = context.cast(builder, args[1], index_t, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, arr_t, ary, [i])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(arr, index), codegen
