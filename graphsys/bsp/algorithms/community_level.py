"""One level of a modularity optimisation (Louvain and Leiden, in
:mod:`graphsys.bsp.algorithms.community`): a graph's symmetrised adjacency with its
strengths, built from a stored edge set, its aggregation by a labelling and the modularity
of a labelling."""

from __future__ import annotations

import contextlib

import numba
import numpy as np

from graphsys.bsp import kernels_community as kc

#: Level 0 of a graph with fewer symmetrised arcs is built on one thread: there a
#: parallel region costs more than it saves (the answer is the same either way)
PARALLEL_ARCS = 1 << 22


@contextlib.contextmanager
def _threads_for(arcs: int):
    """The enclosed kernels on numba's threads where ``arcs`` reaches
    :data:`PARALLEL_ARCS`, else on one."""
    before = numba.get_num_threads()
    if arcs < PARALLEL_ARCS:
        numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


class Level:
    """One level of a modularity optimisation: the symmetrised adjacency without self
    entries (``sptr``, ``sidx``, ``sw``), self-loop arc weights, out- and in-strengths
    and the total arc weight ``m`` (see :mod:`graphsys.bsp.kernels_community`); ``sym``:
    the strengths ``kout`` equal ``kin`` (undirected modularity), ``unit`` > 0: every
    entry of ``S`` weighs it and ``sw`` is empty (an unweighted level 0); ``ids``: the
    stored node that each node is, where level 0 renumbered them (else None)."""

    def __init__(self, sptr, sidx, sw, loops, kout, kin, m: float, *, sym: bool = False,
                 unit: float = 0.0, ids: np.ndarray | None = None):
        self.sptr, self.sidx, self.sw, self.loops = sptr, sidx, sw, loops
        self.kout, self.kin, self.m = kout, kin, float(m)
        self.sym, self.unit, self.ids = sym, float(unit), ids

    @property
    def n(self) -> int:
        return len(self.kout)

    @property
    def arrays(self) -> tuple:
        return self.sptr, self.sidx, self.sw

    @classmethod
    def from_adjacency(cls, out: tuple, into: tuple | None, directed: bool, *,
                       visit_order: bool = False) -> Level:
        """Level 0 of a stored edge set: ``out`` its CSR (indptr, indices, weight float32
        or empty), ``into`` its CSC (None: the edge set is stored undirected, both
        directions). ``directed``: Leicht-Newman's directed modularity (a directed edge
        set only); otherwise every edge counts as undirected, a self-loop twice in its
        node's degree (networkx's conventions). ``visit_order``: the nodes may be
        renumbered in Louvain's first-level order (see
        :func:`~graphsys.bsp.kernels_community.symmetrise`); ``ids`` maps them back."""
        with _threads_for(len(out[1]) * (1 if into is None else 2)):
            return cls._symmetrised(out, into, directed, visit_order)

    @classmethod
    def _symmetrised(cls, out: tuple, into: tuple | None, directed: bool,
                     visit_order: bool) -> Level:
        ptr, idx, w = out
        if into is None:  # stored both ways: A symmetric
            sptr, sidx, sw, loops, rows, ids = kc.symmetrise(ptr, idx, w, ptr, idx, w, False,
                                                             2.0, 2.0, visit_order)
            k = rows / 2 + loops
            return cls(sptr, sidx, sw, loops, k, k, k.sum(), sym=True,
                       unit=2.0 if len(w) == 0 else 0.0, ids=ids)
        iptr, iidx, iw = into
        rows, cols = _row_sums(ptr, w), _row_sums(iptr, iw)
        unit = len(w) == 0 and len(iw) == 0
        if directed:
            sptr, sidx, sw, loops, _, ids = kc.symmetrise(ptr, idx, w, iptr, iidx, iw, True,
                                                          1.0, 1.0, visit_order)
            m = rows.sum()
            if ids is not None:
                rows, cols = rows[ids], cols[ids]
            return cls(sptr, sidx, sw, loops, rows, cols, m, unit=1.0 if unit else 0.0, ids=ids)
        sptr, sidx, sw, loops, _, ids = kc.symmetrise(ptr, idx, w, iptr, iidx, iw, True, 2.0,
                                                      2.0, visit_order)
        k = rows + cols
        m = k.sum()
        if ids is not None:
            k = k[ids]
        return cls(sptr, sidx, sw, loops, k, k, m, sym=True, unit=2.0 if unit else 0.0, ids=ids)

    def modularity(self, comm: np.ndarray, gamma: float) -> float:
        if self.m == 0:
            return float("nan")
        return float(kc.modularity(*self.arrays, self.loops, self.kout, self.kin, self.m,
                                   gamma, comm, self.unit))

    def aggregate(self, comm: np.ndarray, ncomm: int) -> Level:
        out = kc.aggregate(*self.arrays, self.loops, self.kout, self.kin, comm, ncomm, self.unit)
        return Level(*out, self.m, sym=self.sym)


def _row_sums(ptr: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per-row sums of weights ``w`` (empty: 1 per entry) of a CSR, float64 (N,)."""
    if len(w) == 0:
        return np.diff(ptr).astype(np.float64)
    c = np.concatenate([[0.0], np.cumsum(w, dtype=np.float64)])
    return c[ptr[1:]] - c[ptr[:-1]]
