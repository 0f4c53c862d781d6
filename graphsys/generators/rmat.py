r"""R-MAT (recursive matrix) power-law edges, as in Graph500's Kronecker generator.

Chakrabarti, Zhan, Faloutsos, *R-MAT: A Recursive Model for Graph Mining*, SDM 2004.

Each edge picks one cell of the ``2**L x 2**L`` adjacency matrix (``L = ceil(log2 N)``) by
descending ``L`` levels, falling at each in the top-left, top-right, bottom-left or
bottom-right quadrant with probability ``a, b, c, d = 1 - a - b - c`` (quadrant ``b`` sets
the level's ``dst`` bit, ``c`` the ``src`` bit, ``d`` both; default Graph500's
``0.57, 0.19, 0.19``). What defines the output:

* a level draws one 16-bit uniform per edge and compares it with the cumulative
  thresholds ``a, a+b, a+b+c`` (rounded to multiples of ``2**-16``);
* when ``N`` is not a power of two, an edge with an endpoint ``>= N`` is rejected and
  redrawn from the same block's stream (no modulo folding onto low ids);
* ``permute=True`` relabels vertices with a seeded bijection of ``[0, N)``
  (:class:`~graphsys.generators._random.IdPermutation`), so hubs are not all at ids with
  few one-bits;
* self-loops and duplicate edges are kept (as in Graph500);
* RNG block ``k`` of :data:`RNG_BLOCK_EDGES` edges uses ``SeedSequence([seed, 1, k])``, so
  the output does not depend on ``chunk_edges``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphsys.errors import GraphsysError, check_real
from graphsys.generators._random import Chunk, IdPermutation, block_rng, rechunk
from graphsys.generators._validate import check_int, check_seed

DEFAULT_A, DEFAULT_B, DEFAULT_C = 0.57, 0.19, 0.19
#: Default rows per yielded chunk (4,194,304 edges = 64 MiB of int64 ``src`` + ``dst``).
DEFAULT_CHUNK_EDGES = 1 << 22
#: Edges per RNG block (fixed: changing it changes every generated graph).
RNG_BLOCK_EDGES = 1 << 20
_TAG_EDGES, _TAG_PERMUTATION = 1, 2
#: Redraw rounds after which rejection gives up (parameters put ~no mass on ids < N).
_MAX_REJECTION_ROUNDS = 1000


def check_rmat_params(a: float, b: float, c: float) -> tuple[float, float, float, float]:
    """Validate the quadrant probabilities; return ``(a, b, c, d)``."""
    a = check_real("a", a, low=0, high=1)
    b = check_real("b", b, low=0, high=1)
    c = check_real("c", c, low=0, high=1)
    if a + b + c > 1.0 + 1e-9:
        raise GraphsysError(f"a + b + c must be <= 1 (d = 1 - a - b - c), got "
                            f"{a:g} + {b:g} + {c:g} = {a + b + c:g}")
    return a, b, c, max(0.0, 1.0 - a - b - c)


def rmat_edges(num_nodes: int, num_edges: int, *, seed: int = 0, a: float = DEFAULT_A,
               b: float = DEFAULT_B, c: float = DEFAULT_C, permute: bool = True,
               chunk_edges: int = DEFAULT_CHUNK_EDGES) -> Iterator[Chunk]:
    """Directed power-law edges from the R-MAT recursive matrix model, in chunks.

    Each edge descends the ``2**L x 2**L`` adjacency matrix, at every level falling in one
    quadrant with probability ``a``, ``b``, ``c`` or ``d = 1 - a - b - c`` [1]_ (the
    module docstring has the exact sampling rules). The Graph500 defaults give the heavy
    tailed in- and out-degrees of web and social graphs.

    Parameters
    ----------
    num_nodes : int
        ``N``; ids are in ``[0, N)``. The recursion runs over ``2**ceil(log2 N)`` ids and
        edges that leave ``[0, N)`` are redrawn, never folded.
    num_edges : int
        ``M``, the exact number of edges produced (self-loops and duplicates included,
        as in Graph500; ingest can drop or dedupe them).
    seed : int, default 0
        Any integer in ``[0, 2**63)``; the same seed gives the same edges.
    a, b, c : float, default 0.57, 0.19, 0.19
        Quadrant probabilities, ``a + b + c <= 1``.
    permute : bool, default True
        Relabel vertices with a seeded bijection of ``[0, N)``, so the hubs are not the ids
        with few one-bits (which would load the first partition of a range partitioner).
        The degree distribution is the same either way.
    chunk_edges : int, default 4194304
        Rows per yielded chunk (the last may be shorter); changes how the edges are cut,
        never which edges they are.

    Returns
    -------
    iterator of dict
        Chunks ``{"src": int64 array, "dst": int64 array}`` whose lengths sum to
        ``num_edges``. Arguments are checked on the call, before iteration.

    Raises
    ------
    ParameterError
        A count or probability out of range.
    GraphsysError
        ``a + b + c > 1``.

    See Also
    --------
    graphsys.generators.write_edges : stream the chunks to a TSV, CSV, Parquet or Arrow
        file.

    References
    ----------
    .. [1] D. Chakrabarti, Y. Zhan and C. Faloutsos, "R-MAT: A Recursive Model for Graph
       Mining", SIAM International Conference on Data Mining (SDM), 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.generators import rmat_edges
    >>> chunks = list(rmat_edges(1000, 5000, seed=1, chunk_edges=2000))
    >>> [len(c["src"]) for c in chunks]
    [2000, 2000, 1000]
    >>> src = np.concatenate([c["src"] for c in chunks])
    >>> int(src.min()) >= 0 and int(src.max()) < 1000
    True
    >>> degree = np.bincount(src, minlength=1000)
    >>> float(degree.mean()), bool(degree.max() > 20 * degree.mean())  # hubs
    (5.0, True)
    """
    num_nodes = check_int(num_nodes, "num_nodes")
    num_edges = check_int(num_edges, "num_edges")
    seed = check_seed(seed)
    chunk_edges = check_int(chunk_edges, "chunk_edges")
    probs = check_rmat_params(a, b, c)
    generator = _RMat(num_nodes, num_edges, seed, probs, permute)
    return rechunk(generator.blocks(), chunk_edges)


class _RMat:
    def __init__(self, num_nodes: int, num_edges: int, seed: int,
                 probs: tuple[float, float, float, float], permute: bool):
        self.n, self.m, self.seed = num_nodes, num_edges, seed
        self.levels = (num_nodes - 1).bit_length()
        self.dtype = np.uint32 if self.levels <= 32 else np.uint64
        a, b, c, _ = probs
        # Cumulative thresholds on a 16-bit uniform u: u < t_a -> a, < t_ab -> b, < t_abc -> c.
        self.t_a, self.t_ab, self.t_abc = (min(65536, round(x * 65536))
                                           for x in (a, a + b, a + b + c))
        self.permutation = IdPermutation(num_nodes, seed, _TAG_PERMUTATION) if permute else None

    def blocks(self) -> Iterator[Chunk]:
        for k in range(-(-self.m // RNG_BLOCK_EDGES)):
            yield self.block(k)

    def block(self, k: int) -> Chunk:
        size = min(RNG_BLOCK_EDGES, self.m - k * RNG_BLOCK_EDGES)
        rng = block_rng(self.seed, _TAG_EDGES, k)
        src, dst = self._draw(rng, size)
        if self.n != 1 << self.levels:
            redo = np.flatnonzero((src >= self.n) | (dst >= self.n))
            rounds = 0
            while redo.size:
                rounds += 1
                if rounds > _MAX_REJECTION_ROUNDS:
                    raise GraphsysError(
                        f"R-MAT parameters put almost no probability on ids < num_nodes "
                        f"({self.n}); raise a or lower b, c")
                s, d = self._draw(rng, redo.size)
                src[redo], dst[redo] = s, d
                redo = redo[(s >= self.n) | (d >= self.n)]
        src, dst = src.astype(np.int64), dst.astype(np.int64)
        if self.permutation is not None:
            src, dst = self.permutation.forward(src), self.permutation.forward(dst)
        return {"src": src, "dst": dst}

    def _draw(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        src = np.zeros(size, dtype=self.dtype)
        dst = np.zeros(size, dtype=self.dtype)
        for _ in range(self.levels):
            u = rng.bit_generator.random_raw((size + 3) // 4).view(np.uint16)[:size]
            src_bit = _at_least(u, self.t_ab)
            dst_bit = _at_least(u, self.t_a)  # b or d: [t_a, t_ab) or [t_abc, 1)
            dst_bit ^= src_bit
            dst_bit ^= _at_least(u, self.t_abc)
            src <<= 1
            src |= src_bit
            dst <<= 1
            dst |= dst_bit
        return src, dst


def _at_least(u: np.ndarray, threshold: int) -> np.ndarray:
    if threshold >= 65536:
        return np.zeros(u.shape, dtype=bool)
    return u >= np.uint16(threshold)
