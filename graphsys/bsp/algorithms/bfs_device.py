r"""In-memory BFS on the torch backend (any device with torch's sparse CSR product: the CPU,
CUDA) as lean direction-optimizing supersteps, one per level, with one small host read each.

The layout (:func:`device_layout`, built once per run): the out-lists (CSR) for top-down
steps and the in-lists (CSC; the CSR on a symmetric edge set) as a torch sparse CSR matrix
of float32 ones for bottom-up steps; ids int32 where the edge count allows. The state is
``level``, int32 (N,), :data:`UNREACHED` where unset, and ``x``, float64 (N,), 1 on the
frontier.

* **top-down** (:func:`push_step`): the frontier, kept as its ids (the source's; a top-down
  step's new vertices; after a bottom-up step, its vertices compacted once by
  :func:`frontier_ids`), has its out-edges found by a sorted search in the prefix sum of
  its out-degrees, their targets lowered to ``d + 1`` by one atomic minimum scatter
  (duplicates and races agree), and the targets it reached first made the next frontier,
  one each (the lowest edge position claims a target): every op is over the frontier's
  vertices or out-edges, none over all the vertices;
* **bottom-up** (:func:`pull_step`): one sparse product of the in-list matrix with the
  frontier counts each vertex's frontier in-neighbours; those with one get
  ``min(level, d + 1)``. Where the unreached vertices' in-edges are fewer than
  ``1 / UNREACHED_PULL_COST`` of all in-edges (a late bottom-up level, once the search
  has reached the graph's core), only they are read (:func:`pull_unreached`): the
  ``e``-th of them found by a sorted search in the prefix sum of the unreached vertices'
  in-degrees, as a top-down step finds its edges, its sender's level compared and the
  row lowered by one atomic minimum scatter. Where they are more, on a device of
  :data:`PROBE_DEVICES`, each unreached vertex first reads its first :data:`PROBE_EDGES`
  in-edges (:func:`probe_step`: a fixed-width gather, no search), and those that find a
  frontier sender stop there, Beamer's early exit; one more host read counts the in-edges
  of the vertices still unreached, which are then read alone or by the product as above.
  On a large bottom-up level of a power-law graph most vertices find a sender among their
  first few in-edges (an R-MAT of 1.2M vertices and 32M edges: 3.2M edges read at its
  largest level against 32M).

After a bottom-up step, one product of a (3, N) matrix (ones; out-degrees; in-degrees)
with the new frontier gives its size, out-edges and in-edges (:func:`frontier_counts`); a
top-down step sums the same three over its new vertices. That is the superstep's one host
read, which decides termination and the next direction by Beamer's rules as
:func:`graphsys.kernels.bfs.search` does, so directions and levels match the CPU search's,
and counts the unreached vertices' in-edges (all in-edges less those of the vertices
reached so far).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from graphsys.bsp import device_stream
from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.device_stream import device_adjacency
from graphsys.bsp.edges import SPARSE_CSR_DEVICES, build_adjacency
from graphsys.bsp.program import Solved
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import csr_tensor, tensor_bytes
from graphsys.kernels.bfs import ALPHA, BETA
from graphsys.trace import trace_range

if TYPE_CHECKING:
    import torch

#: ``level`` of a vertex no superstep has reached
UNREACHED = 2**31 - 1

#: torch ops (kernel launches on CUDA) of a top-down superstep (:func:`push_step`, its
#: counts included), of a bottom-up one (:func:`pull_step` and :func:`frontier_counts`) and
#: of a bottom-up one over the unreached vertices' in-edges (:func:`pull_unreached` and
#: :func:`frontier_counts`); each adds one host read of three numbers
PUSH_OPS = 28
#: torch ops of :func:`frontier_ids`: a top-down superstep after a bottom-up one adds them
FRONTIER_IDS_OPS = 4
#: a bottom-up product after a top-down superstep first marks the frontier: one op
MARK_OPS = 1
PULL_OPS = 7
PULL_UNREACHED_OPS = 16
#: torch ops of :func:`probe_step`, which adds one host read of two numbers
PROBE_OPS = 18
#: In-edges each unreached vertex reads first on a bottom-up level whose unreached
#: vertices' in-edges are too many to read alone (:func:`probe_step`; 0: none, the
#: product reads every in-edge)
PROBE_EDGES = 4
#: Devices where that probe runs: on a GPU its gathers cost less than the sparse product
#: they spare; on the CPU, whose product is a tight loop, its torch operators over every
#: vertex cost more than the product
PROBE_DEVICES = ("cuda",)
#: A bottom-up superstep reads only the unreached vertices' in-edges
#: (:func:`pull_unreached`) when they, times this, are fewer than all in-edges: an edge
#: found by a sorted search and gathered costs several of the sparse product's (``inf``:
#: every bottom-up superstep is the product)
UNREACHED_PULL_COST = 16.0

#: Largest index int32 ids hold
_INT32_MAX = 2**31 - 1


@dataclass
class Layout:
    """What the supersteps read on the device: out-lists (``out_ptr`` (N+1,), ``out_idx``
    (E,), ``out_deg`` (N,), all of the id dtype), the in-list matrix ``pull`` (sparse CSR,
    float32 ones; its rows and ids are the in-lists ``in_ptr`` and ``in_idx``), ``in_deg``
    (N,) and ``counts`` ((3, N) float64: ones, out-degrees, in-degrees); ``nbytes``: the
    bytes copied to the device to build it."""

    out_ptr: torch.Tensor
    out_idx: torch.Tensor
    out_deg: torch.Tensor
    pull: torch.Tensor
    in_ptr: torch.Tensor
    in_idx: torch.Tensor
    in_deg: torch.Tensor
    counts: torch.Tensor
    num_edges: int
    pull_edges: int
    nbytes: int

    @property
    def device_bytes(self) -> int:
        """Bytes the layout takes on the device (the in-lists once: the product's)."""
        return tensor_bytes(self.out_ptr, self.out_idx, self.out_deg, self.pull, self.in_deg,
                            self.counts)


def _upload(arr: np.ndarray, dtype, device) -> torch.Tensor:
    import torch

    return torch.from_numpy(np.ascontiguousarray(arr, dtype)).to(device)


def device_layout(graph, edge_set: str, device: torch.device,
                  on_device: bool = False) -> Layout:
    """:class:`Layout` of ``edge_set`` on ``device``, with int32 ids where the edge count
    allows: on a device of :data:`~graphsys.bsp.device_stream.DEVICE_BUILDS` (int32 ids)
    built there (:func:`~graphsys.bsp.device_stream.device_adjacency`: the graph's stored
    indexes uploaded through page-locked staging where it has them, else the edge list
    uploaded once and sorted there); else the adjacency mapped from the stored index or
    built on the host (:func:`build_adjacency`) and uploaded. ``on_device`` (an
    out-of-core run: nothing built on the host) builds on the device in any case, each
    batch's or index block's pages released once uploaded."""
    import torch

    both = not symmetric(graph, edge_set)
    kinds = ("csr", "csc") if both else ("csr",)
    n, m = graph.num_nodes(), graph.num_edges(edge_set)
    ids = np.int32 if max(m, n + 1) <= _INT32_MAX else np.int64
    if on_device or (device.type in device_stream.DEVICE_BUILDS and ids == np.int32):
        adj, nbytes = device_adjacency(graph, edge_set, device, kinds, release=on_device)
    else:
        adj, nbytes = [], 0
        for kind in kinds:
            ptr, idx, _ = build_adjacency(graph, edge_set, kind, False)
            adj.append((_upload(ptr - ptr[0], ids, device), _upload(idx, ids, device)))
            nbytes += sum(t.numel() * t.element_size() for t in adj[-1])
    (o_ptr, o_idx), (i_ptr, i_idx) = adj[0], adj[-1]
    ones = torch.ones(i_idx.shape[0], dtype=torch.float32, device=device)
    pull = csr_tensor(i_ptr, i_idx, ones, (n, n))
    deg = o_ptr[1:] - o_ptr[:-1]
    in_deg = deg if len(adj) == 1 else i_ptr[1:] - i_ptr[:-1]
    counts = torch.stack([torch.ones(n, dtype=torch.float64, device=device),
                          deg.to(torch.float64), in_deg.to(torch.float64)])
    return Layout(o_ptr, o_idx, deg, pull, i_ptr, i_idx, in_deg, counts, m,
                  int(i_idx.shape[0]), nbytes)


def solve_on_device(program, ctx, edges, state: dict, schedule: str,
                    max_iters: int) -> Solved | None:
    """The BFS levels of the module docstring, written into ``state["level"]`` (float64,
    ``inf`` where unreached); one recorded superstep per level. None (the engine's
    supersteps run) for ``schedule="async"`` and on a device without torch's sparse CSR
    product. Out of core (``edges.streams``; the engine calls it there where the build fits
    the run's device budget) the layout is built on the device from the buckets."""
    import torch

    if schedule not in ("auto", "sync") or ctx.device.type not in SPARSE_CSR_DEVICES:
        return None
    t0 = time.perf_counter()
    dev = ctx.device
    lay = device_layout(ctx.graph, ctx.edge_set, dev, on_device=edges.streams)
    edges.bytes_h2d += lay.nbytes if dev.type != "cpu" else 0
    if edges.streams:  # out of core: the layout is what the run keeps on the device
        edges.layout_bytes += lay.device_bytes
    n = ctx.num_nodes
    level = torch.full((n,), UNREACHED, dtype=torch.int32, device=dev)
    level[program.source] = 0
    x = torch.empty(n, dtype=torch.float64, device=dev)
    y = torch.empty(n, dtype=torch.float32, device=dev)
    nf, fe, reached_in = frontier_counts(lay, level, x, 0)
    x_depth = 0  # x marks the vertices of this level
    # the frontier's ids (None after a bottom-up step), and each vertex's claim of a top-down
    # step: the lowest position of an out-edge that reached it (reset after each step)
    queue = torch.tensor([program.source], dtype=torch.int64, device=dev)
    owner = torch.full((n,), torch.iinfo(lay.out_deg.dtype).max, dtype=lay.out_deg.dtype,
                       device=dev)
    setup = time.perf_counter() - t0
    steps, t_step = [], time.perf_counter()
    to_check, bottom_up, depth = lay.num_edges, False, 0
    while nf and depth < max_iters:
        bottom_up_edges = max(to_check / ALPHA, n / BETA)
        if not bottom_up and fe > bottom_up_edges:
            bottom_up = True
        with trace_range(f"bsp.superstep#{depth}"):  # a range only while a trace records
            left = lay.pull_edges - reached_in  # the unreached vertices' in-edges
            scanned = 0
            if (bottom_up and left * UNREACHED_PULL_COST >= lay.pull_edges and PROBE_EDGES
                    and dev.type in PROBE_DEVICES):
                probed, found_in = probe_step(lay, level, depth, PROBE_EDGES)
                scanned, left = probed, left - found_in
            if bottom_up and left * UNREACHED_PULL_COST < lay.pull_edges:
                if left:
                    pull_unreached(lay, level, depth, left)
                scanned += left
            elif bottom_up:
                if x_depth != depth:  # after a top-down step: its frontier marked
                    torch.eq(level, depth, out=x)
                pull_step(lay, level, x, y, depth)
                scanned += lay.pull_edges
            if bottom_up:
                found, next_fe, next_in = frontier_counts(lay, level, x, depth + 1)
                queue, x_depth = None, depth + 1
            else:
                if queue is None:
                    queue = frontier_ids(level, depth, nf)
                queue, (found, next_fe, next_in) = push_step(lay, level, queue, owner, depth,
                                                             fe)
                scanned = fe
                to_check -= fe
            reached_in += next_in
        now = time.perf_counter()
        ss = SuperstepStats(superstep=depth, active=nf,
                            direction="pull" if bottom_up else "push",
                            edges_scanned=scanned, messages_sent=scanned,
                            messages_combined=found, fused=True)
        ss.seconds["edges"], t_step = now - t_step, now
        steps.append(ss)
        if bottom_up:
            bottom_up = not (found < n / BETA and found < nf)
        nf, fe, depth = found, next_fe, depth + 1
    state["level"] = torch.where(level == UNREACHED, torch.inf, level.to(torch.float64))
    ids = "int32" if lay.out_idx.dtype == torch.int32 else "int64"
    return Solved(f"direction-optimizing-bfs (device, {ids} ids)", steps, nf, setup)


def frontier_counts(lay: Layout, level: torch.Tensor, x: torch.Tensor,
                    depth: int) -> tuple[int, int, int]:
    """``x`` = 1 at the vertices of ``level == depth`` (the frontier), 0 elsewhere; returns
    (its vertices, their out-edges, their in-edges): two ops and the superstep's one host
    read."""
    import torch

    torch.eq(level, depth, out=x)
    nf, fe, fi = torch.mv(lay.counts, x).tolist()  # the one host read of the superstep
    return int(nf), int(fe), int(fi)


def frontier_ids(level: torch.Tensor, depth: int, nf: int) -> torch.Tensor:
    """int64 (nf,): the ids of the vertices of ``level == depth`` (``nf`` of them, counted
    by :func:`frontier_counts`), ascending, with no host read: the ``i``-th is found by a
    sorted search of ``i + 1`` in the prefix count of the level's vertices."""
    import torch

    ends = torch.cumsum(level == depth, 0)
    want = torch.arange(1, nf + 1, dtype=ends.dtype, device=level.device)
    return torch.searchsorted(ends, want)


def push_step(lay: Layout, level: torch.Tensor, frontier: torch.Tensor, owner: torch.Tensor,
              depth: int, fe: int) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """Top-down from the ``frontier`` ids (``fe`` out-edges): lower their out-neighbours to
    ``depth + 1`` and return the next frontier's ids with (its vertices, their out-edges,
    their in-edges), the step's one host read. The ``e``-th frontier edge is found by a
    sorted search of ``e`` in the prefix sum of the frontier's out-degrees; a target
    unreached before the step joins the next frontier once, through the edge of lowest
    position that reached it (``owner``: int (N,) of the ids' dtype, all its largest value,
    touched entries reset after). Every op is over the frontier's vertices or out-edges."""
    import torch

    empty = torch.iinfo(owner.dtype).max
    with trace_range("bsp.edges"):
        deg = lay.out_deg.index_select(0, frontier)
        ends = torch.cumsum(deg, 0, dtype=deg.dtype)
        # a frontier row's first edge minus its first output position
        base = lay.out_ptr.index_select(0, frontier) + deg - ends
        at = torch.arange(fe, dtype=deg.dtype, device=deg.device)
        row = torch.searchsorted(ends, at, right=True)
        targets = lay.out_idx.index_select(0, base.index_select(0, row) + at).to(torch.int64)
        fresh = level.index_select(0, targets) == UNREACHED
        level.scatter_reduce_(0, targets, torch.full_like(targets, depth + 1,
                                                          dtype=level.dtype), "amin")
        owner.scatter_reduce_(0, targets, torch.where(fresh, at, empty), "amin")
        first = fresh & (owner.index_select(0, targets) == at)
        owner.index_fill_(0, targets, empty)
        w = first.to(torch.float64)
        sums = torch.mv(lay.counts.index_select(1, targets), w)
        nf, nfe, nfi = (int(v) for v in sums.tolist())  # the step's one host read
        nxt = targets.index_select(0, torch.searchsorted(
            torch.cumsum(first, 0), torch.arange(1, nf + 1, device=deg.device)))
    return nxt, (nf, nfe, nfi)


def pull_unreached(lay: Layout, level: torch.Tensor, depth: int, edges: int) -> None:
    """Bottom-up over the unreached vertices' in-edges alone (``edges`` of them, counted
    by :func:`frontier_counts`), with no host read: their in-degrees (0 elsewhere) are
    prefix-summed, the ``e``-th such edge found by a sorted search of ``e`` in that sum (as
    :func:`push_step` finds the frontier's out-edges), and each row lowered to
    ``depth + 1`` by one atomic minimum scatter where its sender is on the frontier."""
    import torch

    with trace_range("bsp.edges"):
        deg = torch.where(level == UNREACHED, lay.in_deg, 0)
        ends = torch.cumsum(deg, 0, dtype=deg.dtype)
        base = lay.in_ptr[1:] - ends  # as in push_step: a row's first edge less its start
        at = torch.arange(edges, dtype=deg.dtype, device=deg.device)
        row = torch.searchsorted(ends, at, right=True)
        senders = lay.in_idx.index_select(0, base.index_select(0, row) + at)
        hit = level.index_select(0, senders) == depth
        lowered = torch.full_like(row, UNREACHED, dtype=level.dtype).masked_fill_(hit,
                                                                                   depth + 1)
        level.scatter_reduce_(0, row, lowered, "amin")


def probe_step(lay: Layout, level: torch.Tensor, depth: int, k: int) -> tuple[int, int]:
    """Bottom-up over the first ``k`` in-edges of every unreached vertex: those with a
    sender on the frontier (``level == depth``) take ``depth + 1``, with no search (entry
    ``j`` of row ``v`` is in-edge ``in_ptr[v] + j``, masked past its in-degree). Returns
    (in-edges read, in-edges of the vertices reached): the step's host read."""
    import torch

    with trace_range("bsp.edges"):
        unreached = level == UNREACHED
        j = torch.arange(k, dtype=lay.in_deg.dtype, device=level.device)
        read = (j < lay.in_deg.unsqueeze(1)) & unreached.unsqueeze(1)          # (N, k)
        at = torch.where(read, lay.in_ptr[:-1].unsqueeze(1) + j, 0)
        senders = lay.in_idx.index_select(0, at.view(-1)).view(at.shape)
        hit = (level.index_select(0, senders.view(-1)).view(at.shape) == depth) & read
        found = hit.any(1)
        level.masked_fill_(found, depth + 1)
        deg = lay.counts[2]
        sums = torch.stack([(deg.clamp(max=k) * unreached).sum(), (deg * found).sum()])
        probed, found_in = sums.tolist()                     # the step's one host read
    return int(probed), int(found_in)


def pull_step(lay: Layout, level: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
              depth: int) -> None:
    """Bottom-up: every vertex with a frontier in-neighbour (one sparse product of the
    in-list matrix with the frontier) takes ``min(level, depth + 1)``."""
    import torch

    with trace_range("bsp.edges"):
        torch.mv(lay.pull, x.to(torch.float32), out=y)
        torch.where(y > 0, level.clamp(max=depth + 1), level, out=level)
