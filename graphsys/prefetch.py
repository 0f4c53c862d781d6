"""A software prefetch for numba kernels: :func:`prefetch` ``(array, index)`` asks the CPU
to bring the cache line of ``array[index]`` in for a write, :func:`prefetch_read` for a read
(LLVM's ``llvm.prefetch``, a hint: it never faults, whatever the index).

Kernels that update an array at random rows known ahead of time (a bucket's target
offsets) issue it a few dozen edges early, so the cache misses of consecutive edges overlap
instead of queueing behind the out-of-order window. It pays where the updated array
outgrows the last-level cache (the streamed PageRank pass over a billion-edge R-MAT,
``benchmarks/scale/billion.py``); the timings are on docs/benchmarks.md.
"""

from __future__ import annotations

from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: How many edges ahead a scatter over edges prefetches the row it will update: far enough
#: ahead to cover an L3 miss (8 hides too little of it), and 64 does no better than 32
PREFETCH_EDGES = 32

#: LLVM from 17 on has opaque pointers only: the intrinsic is named for ``ptr`` (``p0``),
#: before that for ``i8*`` (``p0i8``)
_NAME = "llvm.prefetch.p0" if binding.llvm_version_info >= (17,) else "llvm.prefetch.p0i8"
_I32 = ir.IntType(32)


def _prefetch(rw: int):
    """The intrinsic ``(array, index)`` prefetching ``array[index]`` (1-D array, integer
    index, not bounds-checked: a prefetch never faults) for writing (``rw`` 1) or reading
    (0), into every cache level."""

    def typer(typingctx, array, index):
        if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(
                index, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            aty = signature.args[0]
            ary = context.make_array(aty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aty, ary, [args[1]],
                                           wraparound=False, boundscheck=False)
            i8p = ir.IntType(8).as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32])
            fn = cgutils.get_or_insert_function(builder.module, fnty, _NAME)
            # rw, locality = 3 (keep in all levels), cache type = 1 (data)
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(_I32, rw),
                              ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
            return context.get_dummy_value()

        return types.void(array, index), codegen

    return intrinsic(typer)


#: ``prefetch(array, index)``: bring ``array[index]`` in for a write
prefetch = _prefetch(1)
#: ``prefetch_read(array, index)``: bring ``array[index]`` in for a read (the triangle kernels
#: fetch the next row's offsets and first entries while the current row is scanned)
prefetch_read = _prefetch(0)
