r"""In-memory PageRank on the torch backend (any device) as lean supersteps: one sparse
matrix-vector product and one update each, the convergence test read every
:data:`CHECK_EVERY` supersteps.

The layout (:func:`lean_matrix`): the pull adjacency as a torch sparse CSR matrix of ones,
widened by row :math:`N` (an entry at every dangling vertex and at column :math:`N`). With
the vector :math:`x_u = \alpha\, r_u / d_u` (:math:`\alpha\, r_u` where dangling) and
:math:`x_N = 1 - \alpha`, one product :math:`y = M x` gives every target's pulled sum and,
in :math:`y_N`, the teleport plus dangling mass; the new ranks are
:math:`r' = y_{0..N-1} + y_N / N` (or :math:`+ y_N\, p`), and a third op writes the next
:math:`x`. Ids are int32 where the matrix allows (int64 beyond). Ranks are float32 where
``PageRank.fused_float32`` allows (the CPU loop's rule), float64 otherwise.

float32 ranks: the product then sums in float32 too, and a row of :math:`k` entries
rounds its sum by up to :math:`(k + 1)\,2^{-24}` of it, so on a graph with a hub the L1
change settles on a floor that may lie above ``tol`` (an undirected star of :math:`n`
vertices: about :math:`n\,2^{-24}`), where the run would go on to ``max_iters``. A
float32 run therefore goes on in float64 (the matrix's values and the vectors widened on
the device from the ranks reached, :meth:`Vectors.widen`) after the first check whose
change is below :data:`FLOAT64_TAIL` times ``tol``, or falls by less than :data:`STALL`
times :math:`\alpha^{8}`, the least contraction of a window of :data:`CHECK_EVERY`
supersteps in exact arithmetic (:func:`widen`). The float32 map's own fixed point lies up
to :math:`\epsilon\,\alpha / (1 - \alpha)` from the true one in L1, with
:math:`\epsilon = (k_{max} + 1)\,2^{-24}` (:math:`k_{max}`: the longest row), so a float32
run never stops: the stopping rule is met by float64 supersteps, and the answer is within
the float64 run's bound, :math:`\mathrm{tol}\,\alpha / (1 - \alpha)`.
``result.stats.method`` names the superstep where float64 took over (``float32 ranks,
float64 from superstep K``), and the ranks are rescaled to sum to 1.

Convergence: the L1 change is read on the host only every :data:`CHECK_EVERY`-th
superstep (counted from the last read), on the first float64 superstep of a float32 run,
and on the last one ``max_iters`` allows; the run stops at the first checked
superstep whose change is below ``tol``. As the change contracts by at least
:math:`\alpha` a superstep, this stops at most ``CHECK_EVERY - 1`` supersteps after a
test on every superstep would, within the CPU loop's bound of the fixed point. Each
superstep of a window records the window's time split evenly; :func:`warm_up` runs one
superstep and one check first, so a first call's cost falls in the setup.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from graphsys.bsp.device_stream import device_adjacency
from graphsys.bsp.edges import SPARSE_CSR_DEVICES, build_adjacency
from graphsys.bsp.program import Solved
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import csr_tensor, tensor_bytes
from graphsys.trace import trace_range

if TYPE_CHECKING:
    import torch

#: Supersteps between two host reads of the L1 change (and the last one ``max_iters``
#: allows): at most this many minus one run past the superstep a test on every superstep
#: would stop at, each one moving the ranks closer to the fixed point
CHECK_EVERY = 8

#: torch ops (kernel launches on CUDA) of a superstep between two checks
#: (:func:`lean_superstep`: the SpMV, the rank update, the next vector); a check adds the
#: L1 change (a difference and a norm) and its read
OPS_PER_SUPERSTEP = 3

#: Largest index int32 ids hold
_INT32_MAX = 2**31 - 1

#: Relabel the vertices of an in-memory run by decreasing out-degree before the supersteps
#: (hub sorting, Balaji and Lucia, IISWC 2018): the product's reads of ``x`` by source then
#: fall on a few contiguous lines for the most-read sources instead of lines scattered over
#: all of ``x``. The ranks come back in the graph's order. Off by default: ``gpu_check``
#: times it beside the graph's order on a GPU, which decides
DEGREE_ORDER = False
#: A float32 run goes on in float64 once its L1 change is below this many times ``tol``
#: (:func:`widen`): the last supersteps, where float32 sums' rounding would stall the
#: change above ``tol``, in float64
FLOAT64_TAIL = 4
#: ... or once its change falls by less than this times the least contraction of
#: :data:`CHECK_EVERY` supersteps (:func:`widen`)
STALL = 1.25
#: Edges whose new positions :func:`degree_order` computes at once (int64 temporaries of
#: 24 bytes an edge)
ORDER_CHUNK = 1 << 24


def lean_matrix(graph, edge_set: str, inv_deg: torch.Tensor, dtype: torch.dtype,
                device: torch.device, on_device: bool = False
                ) -> tuple[torch.Tensor, int, int, int, torch.Tensor | None]:
    """The (N+1, N+1) CSR matrix of the module docstring on ``device``: ``inv_deg`` is
    ``1/out_degree`` (0: dangling), values are ones of ``dtype``. The pull adjacency is built
    on the host (:func:`build_adjacency`), or with ``on_device`` (an out-of-core run) sorted
    on the device from the uploaded buckets
    (:func:`~graphsys.bsp.device_stream.device_adjacency`: the same order, int32 ids).
    With :data:`DEGREE_ORDER` an in-memory run's vertices are relabelled
    (:func:`degree_order`). Returns
    (matrix, edges of the graph, targets with an in-edge, bytes uploaded, the old id of
    each new one or None)."""
    import torch

    if on_device or DEGREE_ORDER:    # the pull adjacency on the device, then the tail
        if on_device:
            [(ptr, idx)], nbytes = device_adjacency(graph, edge_set, device, ("csc",),
                                                    release=True)
        else:
            ptr, idx, nbytes = _upload_pull(graph, edge_set, device)
        order = None
        if DEGREE_ORDER and not on_device:   # out of core the build keeps to its budget
            ptr, idx, order = degree_order(ptr, idx)
            inv_deg = inv_deg.index_select(0, order)
        n, m = len(ptr) - 1, len(idx)
        dangling = torch.nonzero(inv_deg == 0).flatten().to(torch.int32)  # a read, in setup
        nnz = m + len(dangling) + 1
        crow = torch.cat([ptr, torch.tensor([nnz], dtype=torch.int32, device=device)])
        col = torch.cat([idx, dangling, torch.tensor([n], dtype=torch.int32, device=device)])
        del idx
        receivers = int(torch.count_nonzero(ptr[1:] - ptr[:-1]))
    else:
        order = None
        indptr, idx, _ = build_adjacency(graph, edge_set, "csc", False)
        n, m = len(indptr) - 1, int(indptr[-1] - indptr[0])
        dangling = torch.nonzero(inv_deg == 0).flatten().cpu().numpy()  # one read, in setup
        nnz = m + len(dangling) + 1
        ids = np.int32 if max(nnz, n + 1) <= _INT32_MAX else np.int64
        crow_h = np.empty(n + 2, ids)
        crow_h[:n + 1] = indptr - indptr[0]
        crow_h[n + 1] = nnz
        col_h = np.empty(nnz, ids)
        col_h[:m] = idx
        col_h[m:-1] = dangling
        col_h[-1] = n
        crow, col = torch.from_numpy(crow_h).to(device), torch.from_numpy(col_h).to(device)
        nbytes = crow_h.nbytes + col_h.nbytes
        receivers = int(np.count_nonzero(np.diff(indptr)))
    values = torch.ones(nnz, dtype=dtype, device=device)
    mat = csr_tensor(crow, col, values, (n + 1, n + 1))
    return mat, m, receivers, nbytes, order


def _upload_pull(graph, edge_set: str, device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The pull adjacency built on the host (:func:`build_adjacency`) uploaded as int32
    (or int64) row pointers and ids, and the bytes uploaded."""
    import torch

    indptr, idx, _ = build_adjacency(graph, edge_set, "csc", False)
    n, m = len(indptr) - 1, int(indptr[-1] - indptr[0])
    ids = np.int32 if max(m + n + 1, n + 1) <= _INT32_MAX else np.int64
    ptr_h = np.ascontiguousarray(indptr - indptr[0], dtype=ids)
    idx_h = np.ascontiguousarray(idx, dtype=ids)
    return (torch.from_numpy(ptr_h).to(device), torch.from_numpy(idx_h).to(device),
            ptr_h.nbytes + idx_h.nbytes)


def degree_order(ptr: torch.Tensor, idx: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pull adjacency (row pointers ``ptr`` (N+1,), source ids ``idx`` (E,), one dtype)
    relabelled by decreasing out-degree: ``(ptr', idx', order)``, ``order`` int64 (N,) the
    old id of each new one (a stable sort of the out-degrees, each source's count in
    ``idx``), row ``r`` of the result being old row ``order[r]`` with its sources renamed.
    Torch ops on the arrays' device, the edges about :data:`ORDER_CHUNK` at a time (whole
    rows); one host read, of the chunks' bounds.

    Examples
    --------
    >>> import torch
    >>> from graphsys.bsp.algorithms.pagerank_device import degree_order
    >>> ptr, idx = torch.tensor([0, 0, 2, 3]), torch.tensor([0, 2, 2])   # 0, 2 -> 1; 2 -> 2
    >>> p, i, order = degree_order(ptr, idx)                             # 2 sends twice
    >>> order.tolist(), p.tolist(), i.tolist()
    ([2, 0, 1], [0, 1, 1, 3], [0, 1, 0])
    """
    import torch

    n, m, dev = len(ptr) - 1, len(idx), ptr.device
    out_deg = torch.bincount(idx, minlength=n)
    order = torch.sort(out_deg, descending=True, stable=True).indices
    pos = torch.empty(n, dtype=idx.dtype, device=dev)
    pos[order] = torch.arange(n, dtype=idx.dtype, device=dev)
    wide = ptr.to(torch.int64)
    in_deg = (wide[1:] - wide[:-1]).index_select(0, order)
    start = wide[:-1].index_select(0, order)             # each new row's old first edge
    new_ptr = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    torch.cumsum(in_deg, 0, out=new_ptr[1:])
    new_idx = torch.empty_like(idx)
    marks = torch.arange(0, m, ORDER_CHUNK, dtype=torch.int64, device=dev)
    rows = torch.searchsorted(new_ptr, marks, right=True) - 1     # a chunk's first row
    rows = torch.cat([rows, torch.full((1,), n, dtype=torch.int64, device=dev)])
    firsts = torch.stack([rows, new_ptr.index_select(0, rows)]).tolist()    # the read
    bounds = sorted(set(zip(*firsts)))           # (row, its first edge), rows ascending
    for (r0, e0), (r1, e1) in zip(bounds[:-1], bounds[1:]):
        if e1 == e0:
            continue
        row = torch.repeat_interleave(torch.arange(r0, r1, device=dev), in_deg[r0:r1],
                                      output_size=e1 - e0)
        at = start[row] + (torch.arange(e0, e1, device=dev) - new_ptr[row])
        new_idx[e0:e1] = pos.index_select(0, idx.index_select(0, at))
    return new_ptr.to(ptr.dtype), new_idx, order


def solve_on_device(program, ctx, edges, state: dict, max_iters: int) -> Solved | None:
    """PageRank's supersteps as the module docstring says, writing the ranks (float64) into
    ``state``; None (the engine's supersteps run) for a weighted run, whose pulls multiply
    by the edge weights, and on a device without torch's sparse CSR product. Out of core
    (``edges.streams``; the engine calls it there where the build fits the run's device
    budget) the matrix is built on the device from the buckets."""
    import torch

    if (program.weighted or program.width is not None
            or ctx.device.type not in SPARSE_CSR_DEVICES):
        return None
    t0 = time.perf_counter()
    n, a, dev = ctx.num_nodes, program.damping, ctx.device
    dtype = torch.float32 if program.fused_float32 else torch.float64
    inv_deg = state["inv_deg"]
    mat, m, receivers, nbytes, order = lean_matrix(ctx.graph, ctx.edge_set, inv_deg, dtype,
                                                   dev, on_device=edges.streams)
    edges.bytes_h2d += nbytes if dev.type != "cpu" else 0
    if edges.streams:  # out of core: the matrix is what the run keeps on the device
        edges.layout_bytes += tensor_bytes(mat)
    p, rank = state["p"], state["rank"]
    if order is not None:     # the vectors in the matrix's order, the ranks put back at the end
        inv_deg, rank = inv_deg.index_select(0, order), rank.index_select(0, order)
        p = None if p is None else p.index_select(0, order)
    scaled64 = torch.where(inv_deg > 0, inv_deg * a, a)  # x = rank * scaled
    vec = Vectors(n, a, dtype, scaled64, p, rank)
    warm_up(mat, vec.x, vec.y, vec.new, vec.rank, vec.scaled, vec.p)
    steps, converged, first, t_chunk = [], False, 0, time.perf_counter()
    setup, previous, wide_from, check_at = t_chunk - t0, None, None, CHECK_EVERY
    for it in range(max_iters):
        with trace_range(f"bsp.superstep#{it}"):  # a range only while a trace records
            lean_superstep(mat, vec.x, vec.y, vec.new, vec.scaled, vec.p)
        vec.rank, vec.new = vec.new, vec.rank
        steps.append(SuperstepStats(superstep=it, active=n, direction="pull",
                                    edges_scanned=m, messages_sent=m,
                                    messages_combined=receivers, fused=True))
        if it + 1 < min(check_at, max_iters):
            continue
        check_at = it + 1 + CHECK_EVERY
        delta = float(torch.dist(vec.rank, vec.new, 1))  # the one host read of the chunk
        now = time.perf_counter()
        for s in steps[first:]:  # the device ran the chunk asynchronously: split evenly
            s.seconds["edges"] = (now - t_chunk) / (len(steps) - first)
        t_chunk, first = now, len(steps)
        if vec.dtype == torch.float64 and delta < program.tol:
            converged = True
            break
        if vec.dtype == torch.float32 and widen(delta, previous, program.tol, a):
            narrow, mat = tensor_bytes(mat), vec.widen(mat)
            if edges.streams:   # the float64 values the run keeps from now on
                edges.layout_bytes += tensor_bytes(mat) - narrow
            # one float64 superstep, then a check: from ranks within tol of the float32
            # map's fixed point, its change alone bounds the answer's distance
            wide_from, check_at = it + 1, it + 2
        previous = delta
    rank = vec.rank
    if order is not None:
        rank = torch.empty_like(rank).index_copy_(0, order, rank)
    finish(state, rank, state["inv_deg"], rescale=dtype == torch.float32)
    ids = "int32" if mat.col_indices().dtype == torch.int32 else "int64"
    ranks = (f"{str(dtype)[6:]} ranks" if wide_from is None else
             f"float32 ranks, float64 from superstep {wide_from}")
    method = (f"fused-pagerank (device SpMV, {ids} ids, {ranks}"
              + (", degree-ordered)" if order is not None else ")"))
    return Solved(method, steps, 0 if converged else ctx.num_local, setup)


def widen(delta: float, previous: float | None, tol: float, damping: float) -> bool:
    """Whether a float32 run goes on in float64 after a check of L1 change ``delta`` (the
    check before: ``previous``): once the change is below :data:`FLOAT64_TAIL` times
    ``tol`` (so below ``tol`` too: a float32 run does not stop), or once it falls by less
    than the product allows, to more than :data:`STALL` times ``damping**CHECK_EVERY`` of
    ``previous`` (in exact arithmetic :data:`CHECK_EVERY` supersteps contract the change
    by that at least; what stays above is the float32 sums' rounding, a floor the change
    would not pass)."""
    if delta < FLOAT64_TAIL * tol:
        return True
    return previous is not None and delta >= min(1.0, STALL * damping ** CHECK_EVERY) * previous


class Vectors:
    """The superstep's vectors on the device, in ``dtype``: ``rank`` (N,), ``new`` (N,),
    ``x`` (N+1,) the product's input (``x[N] = 1 - damping``), ``y`` (N+1,) its output,
    ``scaled`` (N,) what ``rank`` is multiplied by into ``x``, and the teleport ``p``
    (None: uniform). :meth:`widen` takes them, and the matrix, to float64."""

    def __init__(self, n: int, damping: float, dtype, scaled64: torch.Tensor,
                 p: torch.Tensor | None, rank: torch.Tensor):
        import torch

        self.n, self.damping, self.dtype = n, damping, dtype
        self._scaled64, self._p64 = scaled64, p
        self.scaled = scaled64.to(dtype)
        self.p = None if p is None else p.to(dtype)
        self.rank = rank.to(dtype, copy=True)
        self.new = torch.empty_like(self.rank)
        self.x = torch.empty(n + 1, dtype=dtype, device=rank.device)
        self.x[n] = 1.0 - damping
        torch.mul(self.rank, self.scaled, out=self.x[:n])
        self.y = torch.empty_like(self.x)

    def widen(self, mat: torch.Tensor) -> torch.Tensor:
        """The vectors in float64 from the ranks reached (``x`` written from them), and
        ``mat`` with float64 ones as values, its ids shared; device ops, no host read."""
        import torch

        wide = torch.float64
        values = torch.ones(mat.values().shape[0], dtype=wide, device=mat.device)
        mat = csr_tensor(mat.crow_indices(), mat.col_indices(), values, tuple(mat.shape))
        self.__init__(self.n, self.damping, wide, self._scaled64, self._p64, self.rank)
        return mat


def warm_up(mat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, new: torch.Tensor,
            rank: torch.Tensor, scaled: torch.Tensor, p: torch.Tensor | None) -> None:
    """One superstep and one convergence check in setup, their results dropped (``x``
    written back from ``rank``), then one host read: every first call of the run (the
    sparse library's handle and workspace, the device's lazy load of the update's and the
    check's kernels, the check's temporary) and the uploads finish here, so that the first
    window's time, split over its supersteps, is a window's like the others."""
    import torch

    lean_superstep(mat, x, y, new, scaled, p)
    delta = torch.dist(rank, new, 1)
    torch.mul(rank, scaled, out=x[:rank.shape[0]])
    float(delta)  # waits for the device


def lean_superstep(mat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, new: torch.Tensor,
                   scaled: torch.Tensor, p: torch.Tensor | None) -> None:
    """One superstep in three torch ops (kernel launches on CUDA), no host read:
    ``y = mat @ x``, ``new`` = the new ranks, ``x[:N] = new * scaled`` (the next vector)."""
    import torch

    n = new.shape[0]
    with trace_range("bsp.edges"):  # the edge phase, as the engine's supersteps name it
        torch.mv(mat, x, out=y)
    if p is None:
        torch.add(y[:n], y[n], alpha=1.0 / n, out=new)
    else:
        torch.addcmul(y[:n], p, y[n], out=new)
    torch.mul(new, scaled, out=x[:n])


def finish(state: dict, rank: torch.Tensor, inv_deg: torch.Tensor, rescale: bool) -> None:
    """Write the float64 ranks into ``state``, with the values to send and the dangling
    mass that go with them; ``rescale`` (a run that summed in float32, for some supersteps
    or all) rescales them to sum to 1: the float32 sums' rounding leaks some of the mass,
    as the CPU loop's float32 sends do."""
    import torch

    out = rank.to(torch.float64)
    if rescale:
        out /= out.sum()
    state["rank"] = out
    state["send"] = out * inv_deg
    state["dangling"] = out[inv_deg == 0].sum()
