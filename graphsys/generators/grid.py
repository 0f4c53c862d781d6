"""Road-like graphs: a thinned 2-D grid with positive edge lengths and a large diameter.

The ``N`` nodes lie row-major on a near-square grid (``cols = ceil(sqrt(N))``, the last row
may be partial): node ``v`` sits at ``(v // cols, v % cols)``. Candidate edges, undirected
and written **once** with ``src < dst``, are the ``E0`` *lattice* edges to the right and
down neighbours (:func:`lattice_edge_count`, about ``2N``) and the ``D0`` *diagonal
shortcuts* down-right and down-left. ``num_edges = M`` is exact:

* ``M`` omitted: a random ``drop`` fraction (default 0.2) of the lattice is removed, so the
  mean degree is about ``4 * (1 - drop)``;
* ``M <= E0``: ``M`` lattice edges, chosen uniformly (stratified over id ranges);
* ``E0 < M <= E0 + D0``: the whole lattice plus ``M - E0`` random diagonals;
* ``M > E0 + D0``: an error (:func:`max_grid_edges`).

Weights are lengths: float32 uniform in ``[low, high)`` for lattice edges, times
``sqrt(2)`` for diagonals. The output does not depend on ``chunk_edges`` (RNG blocks of
:data:`RNG_BLOCK_NODES` nodes).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from graphsys.errors import ParameterError, check_real
from graphsys.generators._random import Chunk, block_rng, rechunk, stratified_quota
from graphsys.generators._validate import check_int, check_seed

DEFAULT_DROP = 0.2
DEFAULT_WEIGHT_RANGE = (1.0, 10.0)
DEFAULT_CHUNK_EDGES = 1 << 22
#: Nodes per RNG block (fixed: changing it changes every generated graph).
RNG_BLOCK_NODES = 1 << 18
_TAG_GRID = 11
_LATTICE, _DIAGONAL = (True, True, False, False), (False, False, True, True)


def grid_shape(num_nodes: int) -> tuple[int, int]:
    """``(rows, cols)`` of the grid holding ``num_nodes`` nodes row-major."""
    cols = math.isqrt(num_nodes - 1) + 1 if num_nodes > 1 else 1
    return -(-num_nodes // cols), cols


def lattice_edge_count(num_nodes: int) -> int:
    """``E0``: right/down neighbour pairs of the (possibly partial) grid."""
    return _Prefix(num_nodes).lattice(num_nodes)


def max_grid_edges(num_nodes: int) -> int:
    """``E0 + D0``: the most edges :func:`grid_edges` can produce for ``num_nodes``."""
    prefix = _Prefix(num_nodes)
    return prefix.lattice(num_nodes) + prefix.diagonal(num_nodes)


def default_grid_edges(num_nodes: int, drop: float = DEFAULT_DROP) -> int:
    """The edge count used when ``num_edges`` is omitted: ``E0 - round(drop * E0)``."""
    e0 = lattice_edge_count(num_nodes)
    return max(1, e0 - round(drop * e0)) if e0 else 0


def grid_edges(num_nodes: int, num_edges: int | None = None, *, seed: int = 0,
               weight_range: tuple[float, float] = DEFAULT_WEIGHT_RANGE,
               drop: float = DEFAULT_DROP,
               chunk_edges: int = DEFAULT_CHUNK_EDGES) -> Iterator[Chunk]:
    """Undirected road-like edges on a thinned 2-D grid, each pair once, in chunks.

    Nodes sit row-major on a near-square grid, so neighbours have nearby ids and the
    diameter grows like the square root of ``N``, like a road network; the lattice is
    thinned at random (or extended with diagonal shortcuts) to honour ``num_edges``
    exactly, as the module docstring describes.

    Parameters
    ----------
    num_nodes : int
        ``N >= 2``; ids in ``[0, N)``, row-major on the grid.
    num_edges : int, optional
        The exact edge count ``M``, at most :func:`max_grid_edges` ``(N)``; default
        :func:`default_grid_edges` ``(N, drop)``, the lattice less a ``drop`` fraction.
    seed : int, default 0
        Any integer in ``[0, 2**63)``.
    weight_range : (float, float), default (1.0, 10.0)
        ``(low, high)``, ``0 < low <= high``: lattice edge lengths are uniform in
        ``[low, high)``, diagonal lengths ``sqrt(2)`` times that.
    drop : float, default 0.2
        Fraction of lattice edges removed when ``num_edges`` is omitted, in ``[0, 1)``.
    chunk_edges : int, default 4194304
        Rows per yielded chunk; does not change the edges.

    Returns
    -------
    iterator of dict
        Chunks ``{"src": int64, "dst": int64, "weight": float32}`` in ``src`` order (a
        node's edges to its right, lower, lower-right and lower-left neighbours, in that
        order), ``src < dst``, ``M`` rows in all. Arguments are checked on the call.
        Ingest them with ``undirected=True`` to store both directions.

    Raises
    ------
    ParameterError
        A value out of range, or ``num_edges`` above :func:`max_grid_edges`.

    Examples
    --------
    >>> from graphsys.generators import grid_edges
    >>> chunk = next(grid_edges(100, seed=0))  # a 10 x 10 grid, 20% of the lattice dropped
    >>> len(chunk["src"]), bool((chunk["src"] < chunk["dst"]).all())
    (144, True)
    >>> chunk["weight"].dtype, bool((chunk["weight"] >= 1).all())
    (dtype('float32'), True)
    """
    num_nodes = check_int(num_nodes, "num_nodes", minimum=2)
    seed = check_seed(seed)
    chunk_edges = check_int(chunk_edges, "chunk_edges")
    drop = check_real("drop", drop, low=0, high=1, high_open=True)
    low, high = _check_weight_range(weight_range)
    limit = max_grid_edges(num_nodes)
    if num_edges is None:
        num_edges = default_grid_edges(num_nodes, drop)
    num_edges = check_int(num_edges, "num_edges")
    if num_edges > limit:
        raise ParameterError("num_edges", f"must be <= {limit} for a grid of {num_nodes} nodes "
                                          f"(lattice plus all diagonals), got {num_edges}")
    generator = _Grid(num_nodes, num_edges, seed, low, high)
    return rechunk(generator.blocks(), chunk_edges)


def _check_weight_range(weight_range: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = weight_range
    except (TypeError, ValueError):
        raise ParameterError(
            "weight_range", f"must be a (low, high) pair, got {weight_range!r}") from None
    f32 = np.finfo(np.float32)  # weights are float32: no zero, no inf from a diagonal's
    try:                        # sqrt(2) (the ingest refuses both, named by line)
        low = check_real("low", low, low=0, low_open=True)
        high = check_real("high", high, low=low,
                          high=float(f32.max) / math.sqrt(2.0) * (1 - 1e-6))
        if low < float(f32.tiny):
            raise ParameterError("low", f"must be at least {float(f32.tiny):.3g} (the "
                                        f"smallest normal float32), got {low:g}")
    except ParameterError as exc:
        raise ParameterError("weight_range", str(exc)) from None
    return low, high


class _Prefix:
    """Closed-form counts of candidate edges whose ``src`` is below a node id."""

    def __init__(self, num_nodes: int):
        self.n = num_nodes
        self.cols = grid_shape(num_nodes)[1]

    def lattice(self, v: int) -> int:
        n, cols = self.n, self.cols
        m = max(0, min(v, n - 1))  # right: u + 1 < n and u not in the last column
        down = max(0, min(v, n - cols))  # down: u + cols < n
        return m - m // cols + down

    def diagonal(self, v: int) -> int:
        n, cols = self.n, self.cols
        m1 = max(0, min(v, n - cols - 1))  # down-right: not in the last column
        m2 = max(0, min(v, n - cols + 1))  # down-left: not in the first column
        return (m1 - m1 // cols) + (m2 - (m2 + cols - 1) // cols)


class _Grid:
    def __init__(self, num_nodes: int, num_edges: int, seed: int, low: float, high: float):
        self.n, self.seed = num_nodes, seed
        self.cols = grid_shape(num_nodes)[1]
        self.prefix = _Prefix(num_nodes)
        self.e0 = self.prefix.lattice(num_nodes)
        self.d0 = self.prefix.diagonal(num_nodes)
        self.keep_lattice = min(num_edges, self.e0)
        self.keep_diagonal = num_edges - self.keep_lattice
        self.low, self.high = low, high

    def blocks(self) -> Iterator[Chunk]:
        for k in range(-(-self.n // RNG_BLOCK_NODES)):
            yield self.block(k)

    def block(self, k: int) -> Chunk:
        v0 = k * RNG_BLOCK_NODES
        v1 = min(self.n, v0 + RNG_BLOCK_NODES)
        rng = block_rng(self.seed, _TAG_GRID, k)
        v = np.arange(v0, v1, dtype=np.int64)
        col = v % self.cols
        offsets = np.array([1, self.cols, self.cols + 1, self.cols - 1], dtype=np.int64)
        dst = v[:, None] + offsets
        valid = dst < self.n
        valid[:, 0] &= col != self.cols - 1
        valid[:, 2] &= col != self.cols - 1
        valid[:, 3] &= col != 0
        chosen = np.zeros(valid.shape, dtype=bool)
        p = self.prefix
        quotas = (
            (_LATTICE, stratified_quota(self.keep_lattice, self.e0, p.lattice(v0), p.lattice(v1))
             if self.keep_lattice else 0),
            (_DIAGONAL, stratified_quota(self.keep_diagonal, self.d0, p.diagonal(v0),
                                         p.diagonal(v1)) if self.keep_diagonal else 0),
        )
        for kinds, quota in quotas:
            if quota:
                slots = np.flatnonzero(valid & np.array(kinds))
                pick = rng.choice(slots.size, quota, replace=False, shuffle=False)
                chosen.reshape(-1)[slots[pick]] = True
        src = np.broadcast_to(v[:, None], chosen.shape)[chosen]
        kind = np.broadcast_to(np.arange(4), chosen.shape)[chosen]
        weight = self.low + (self.high - self.low) * rng.random(src.size)
        weight[kind >= 2] *= math.sqrt(2.0)
        weight = weight.astype(np.float32)
        # float64 -> float32 rounding may reach the open upper bound; keep it open.
        top = np.where(kind >= 2, np.float32(self.high * math.sqrt(2.0)), np.float32(self.high))
        if self.high > self.low:
            np.minimum(weight, np.nextafter(top, np.float32(0)), out=weight)
        return {"src": src, "dst": dst[chosen], "weight": weight}
