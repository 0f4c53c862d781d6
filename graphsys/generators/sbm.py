r"""Labelled stochastic block model (SBM) for node classification.

``N`` nodes fall into ``k`` blocks of near-equal size; a node's label is its block, and
nodes are scattered over blocks by a seeded bijection of ``[0, N)``
(:class:`~graphsys.generators._random.IdPermutation`), so ids do not reveal labels.

Edges are undirected, written once, with no self-loops; ``ratio = p_in / p_out``. The exact
total ``M`` is split over block pairs ``(i <= j)`` by one multinomial draw with weights
``ratio * n_i (n_i - 1) / 2`` (``i == j``) and ``n_i n_j`` (``i < j``), then each edge gets
endpoints uniform within its blocks (orientation random). The expected intra-block fraction
is :attr:`SBM.intra_fraction`. Pairs are drawn independently, so a pair can repeat (ingest
with dedupe removes them).

Features: float32 ``[N, d]``, ``feat = mu[label] + feature_noise * z`` with seeded class
means ``mu ~ N(0, I_d)`` and ``z ~ N(0, I_d)``. Split masks (Planetoid style, disjoint):
``train_per_class`` nodes of every class, then ``num_val`` and ``num_test`` nodes among the
rest, stratified by class and scaled down in proportion if the rest is too small. Edges and
nodes come from RNG blocks (:data:`RNG_BLOCK_EDGES`, :data:`RNG_BLOCK_NODES`), so the
output does not depend on chunk sizes.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from graphsys.errors import GraphsysError, ParameterError, check_real
from graphsys.generators._random import Chunk, IdPermutation, block_rng, largest_remainder, rechunk
from graphsys.generators._validate import check_int, check_seed

DEFAULT_BLOCKS = 4
DEFAULT_RATIO = 10.0
DEFAULT_FEATURES = 16
DEFAULT_FEATURE_NOISE = 2.0
DEFAULT_CHUNK_EDGES = 1 << 22
DEFAULT_CHUNK_NODES = 1 << 18
#: Edges / nodes per RNG block (fixed: changing them changes every generated graph).
RNG_BLOCK_EDGES = 1 << 20
RNG_BLOCK_NODES = 1 << 16
_TAG_PAIRS, _TAG_EDGES, _TAG_PERMUTATION, _TAG_MEANS, _TAG_FEATURES = 21, 22, 23, 24, 25


def sbm(num_nodes: int, num_edges: int, *, blocks: int = DEFAULT_BLOCKS,
        ratio: float = DEFAULT_RATIO, features: int = DEFAULT_FEATURES,
        feature_noise: float = DEFAULT_FEATURE_NOISE, train_per_class: int = 20,
        num_val: int = 500, num_test: int = 1000, seed: int = 0) -> SBM:
    """Build a labelled stochastic block model for node classification.

    ``N`` nodes fall into ``blocks`` near-equal blocks (a node's label is its block);
    ``num_edges`` undirected edges link nodes of the same block ``ratio`` times as likely
    as nodes of different blocks [1]_. Nodes get Gaussian features around their class
    mean and Planetoid-style train / validation / test masks. Nothing is drawn until
    :meth:`SBM.edges` or :meth:`SBM.nodes` is iterated, so memory stays bounded.

    Parameters
    ----------
    num_nodes : int
        ``N >= blocks``.
    num_edges : int
        The exact number of undirected edges ``M`` (each written once, no self-loops).
    blocks : int, default 4
        Number of blocks = classes ``k``.
    ratio : float, default 10.0
        ``p_in / p_out``: with 4 equal blocks, 77% of the edges are intra-block.
    features : int, default 16
        Feature width ``d``; 0 for no ``feat`` column.
    feature_noise : float, default 2.0
        Standard deviation of the noise around the class mean.
    train_per_class, num_val, num_test : int, default 20, 500, 1000
        Split sizes, scaled down in proportion when the graph is too small.
    seed : int, default 0
        Any integer in ``[0, 2**63)``.

    Returns
    -------
    SBM
        The model: :meth:`SBM.edges` yields ``{"src", "dst"}`` chunks, :meth:`SBM.nodes`
        the node table (``id``, ``label``, ``feat``, ``train_mask``, ``val_mask``,
        ``test_mask``); ``p_in``, ``p_out``, ``intra_fraction``, ``block_sizes`` describe it.

    Raises
    ------
    ParameterError
        A value out of range, or more blocks than nodes.
    GraphsysError
        ``num_edges`` so large that ``p_in`` or ``p_out`` would exceed 1.

    References
    ----------
    .. [1] P. W. Holland, K. B. Laskey and S. Leinhardt, "Stochastic blockmodels: First
       steps", Social Networks 5(2), 109-137, 1983.

    Examples
    --------
    >>> from graphsys.generators import sbm
    >>> model = sbm(400, 2000, blocks=4, seed=0)
    >>> model.block_sizes.tolist(), round(model.intra_fraction, 3)
    ([100, 100, 100, 100], 0.767)
    >>> nodes = next(model.nodes())
    >>> nodes["feat"].shape, int(nodes["train_mask"].sum())
    ((400, 16), 80)
    >>> edges = next(model.edges())
    >>> len(edges["src"]), bool((edges["src"] != edges["dst"]).all())
    (2000, True)
    """
    return SBM(
        num_nodes=check_int(num_nodes, "num_nodes"),
        num_edges=check_int(num_edges, "num_edges"),
        blocks=check_int(blocks, "blocks"),
        ratio=check_real("ratio", ratio, low=0),
        features=check_int(features, "features", minimum=0, maximum=1 << 16),
        feature_noise=check_real("feature_noise", feature_noise, low=0),
        train_per_class=check_int(train_per_class, "train_per_class", minimum=0),
        num_val=check_int(num_val, "num_val", minimum=0),
        num_test=check_int(num_test, "num_test", minimum=0),
        seed=check_seed(seed),
    )


class SBM:
    """A sampled block model. Use :func:`sbm` to build one (it validates the arguments).

    Attributes
    ----------
    block_sizes : numpy.ndarray
        int64 ``[k]``, nodes per block.
    pair_blocks : numpy.ndarray
        int64 ``[P, 2]``, the block pairs ``(i, j)``, ``i <= j``, row-major.
    pair_counts : numpy.ndarray
        int64 ``[P]``, edges drawn for each pair; sums to ``num_edges``.
    p_in, p_out : float
        The link probabilities the expected counts correspond to.
    intra_fraction : float
        Expected fraction of intra-block edges.
    split_sizes : numpy.ndarray
        int64 ``[k, 3]``, train / val / test nodes per class.

    Examples
    --------
    >>> from graphsys.generators import sbm
    >>> model = sbm(40, 100, blocks=2, features=4, train_per_class=5, num_val=10,
    ...             num_test=10, seed=0)
    >>> model.block_sizes.tolist(), model.pair_blocks.tolist(), model.pair_counts.tolist()
    ([20, 20], [[0, 0], [0, 1], [1, 1]], [45, 7, 48])
    >>> round(model.p_in, 3), round(model.p_out, 3), model.split_sizes.tolist()
    (0.238, 0.024, [[5, 5, 5], [5, 5, 5]])
    """

    def __init__(self, *, num_nodes: int, num_edges: int, blocks: int, ratio: float,
                 features: int, feature_noise: float, train_per_class: int, num_val: int,
                 num_test: int, seed: int):
        if blocks > num_nodes:
            raise ParameterError("blocks", f"must be <= the number of nodes ({num_nodes}), "
                                           f"got {blocks}")
        self.num_nodes, self.num_edges, self.blocks = num_nodes, num_edges, blocks
        self.ratio, self.features, self.feature_noise = ratio, features, feature_noise
        self.seed = seed
        k = blocks
        self.block_sizes = np.full(k, num_nodes // k, dtype=np.int64)
        self.block_sizes[: num_nodes % k] += 1
        self.block_starts = np.concatenate([[0], np.cumsum(self.block_sizes)[:-1]])
        i, j = np.triu_indices(k)
        self.pair_blocks = np.stack([i, j], axis=1).astype(np.int64)
        sizes = self.block_sizes.astype(np.float64)
        slots = np.where(i == j, sizes[i] * (sizes[i] - 1) / 2, sizes[i] * sizes[j])
        weights = np.where(i == j, ratio, 1.0) * slots
        total = float(weights.sum())
        if total <= 0:
            raise GraphsysError("no node pair can be linked: use more nodes per block, or "
                                "ratio > 0 when blocks = 1")
        self.p_out = num_edges / total
        self.p_in = ratio * self.p_out
        # A probability only binds where its pairs exist: no p_out with one block, no p_in
        # when every block is a single node.
        has_intra, has_inter = bool((slots[i == j] > 0).any()), k > 1
        if max(self.p_in if has_intra else 0.0, self.p_out if has_inter else 0.0) > 1.0:
            raise GraphsysError(
                f"num_edges ({num_edges}) too large for {num_nodes} nodes in {k} blocks at "
                f"ratio {ratio:g}: p_in = {self.p_in:.3g}, p_out = {self.p_out:.3g}; link "
                f"probabilities must be <= 1")
        self.intra_fraction = float(weights[i == j].sum() / total)
        rng = block_rng(seed, _TAG_PAIRS, 0)
        self.pair_counts = rng.multinomial(num_edges, weights / total).astype(np.int64)
        self._pair_ends = np.cumsum(self.pair_counts)
        self._permutation = IdPermutation(num_nodes, seed, _TAG_PERMUTATION)
        self._means = block_rng(seed, _TAG_MEANS, 0).standard_normal(
            (k, features), dtype=np.float32)
        self.split_sizes = _split_sizes(self.block_sizes, train_per_class, num_val, num_test)

    # -- nodes ---------------------------------------------------------------------------------
    def labels(self, ids: np.ndarray) -> np.ndarray:
        """Block (= label) of each node id; int64, same shape as ``ids``."""
        return self._locate(np.asarray(ids, dtype=np.int64))[0]

    def nodes(self, chunk_nodes: int = DEFAULT_CHUNK_NODES) -> Iterator[Chunk]:
        """The node table in id order, in chunks of ``chunk_nodes`` rows:
        ``{"id": int64[n], "label": int64[n], "feat": float32[n, d]`` (omitted when
        ``features == 0``) ``, "train_mask", "val_mask", "test_mask": bool[n]}``."""
        chunk_nodes = check_int(chunk_nodes, "chunk_nodes")
        blocks = (self._node_block(b) for b in range(-(-self.num_nodes // RNG_BLOCK_NODES)))
        return rechunk(blocks, chunk_nodes)

    def _locate(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        position = self._permutation.forward(ids)
        label = np.searchsorted(self.block_starts, position, side="right") - 1
        return label, position - self.block_starts[label]

    def _node_block(self, b: int) -> Chunk:
        ids = np.arange(b * RNG_BLOCK_NODES, min(self.num_nodes, (b + 1) * RNG_BLOCK_NODES),
                        dtype=np.int64)
        label, offset = self._locate(ids)
        # Offsets within a block are a pseudo-random order of its members, so the first
        # train_j of them are a random training set, the next val_j a random validation set...
        bounds = np.cumsum(self.split_sizes, axis=1)[label]
        chunk: Chunk = {"id": ids, "label": label}
        if self.features:
            rng = block_rng(self.seed, _TAG_FEATURES, b)
            feat = rng.standard_normal((ids.size, self.features), dtype=np.float32)
            feat *= np.float32(self.feature_noise)
            feat += self._means[label]
            chunk["feat"] = feat
        chunk["train_mask"] = offset < bounds[:, 0]
        chunk["val_mask"] = (offset >= bounds[:, 0]) & (offset < bounds[:, 1])
        chunk["test_mask"] = (offset >= bounds[:, 1]) & (offset < bounds[:, 2])
        return chunk

    # -- edges ---------------------------------------------------------------------------------
    def edges(self, chunk_edges: int = DEFAULT_CHUNK_EDGES) -> Iterator[Chunk]:
        """The ``num_edges`` edges as chunks ``{"src": int64[n], "dst": int64[n]}``, grouped by
        block pair. Each undirected edge appears once, never as a self-loop."""
        chunk_edges = check_int(chunk_edges, "chunk_edges")
        blocks = (self._edge_block(b) for b in range(-(-self.num_edges // RNG_BLOCK_EDGES)))
        return rechunk(blocks, chunk_edges)

    def _edge_block(self, b: int) -> Chunk:
        first = b * RNG_BLOCK_EDGES
        index = np.arange(first, min(self.num_edges, first + RNG_BLOCK_EDGES), dtype=np.int64)
        pair = np.searchsorted(self._pair_ends, index, side="right")
        bi, bj = self.pair_blocks[pair, 0], self.pair_blocks[pair, 1]
        rng = block_rng(self.seed, _TAG_EDGES, b)
        u = rng.random((3, index.size))
        size_i, size_j = self.block_sizes[bi], self.block_sizes[bj]
        intra = bi == bj
        off_s = np.minimum((u[0] * size_i).astype(np.int64), size_i - 1)
        # Intra-block: draw among the other size_i - 1 members, skipping the source.
        span = np.where(intra, size_i - 1, size_j)
        off_d = np.minimum((u[1] * span).astype(np.int64), span - 1)
        off_d += intra & (off_d >= off_s)
        src = self.block_starts[bi] + off_s
        dst = self.block_starts[bj] + off_d
        flip = u[2] < 0.5
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        return {"src": self._permutation.inverse(src), "dst": self._permutation.inverse(dst)}


def _split_sizes(block_sizes: np.ndarray, train_per_class: int, num_val: int,
                 num_test: int) -> np.ndarray:
    train = np.minimum(block_sizes, train_per_class)
    rest = block_sizes - train
    total_rest = int(rest.sum())
    if num_val + num_test > total_rest:
        num_val = total_rest * num_val // (num_val + num_test)
        num_test = total_rest - num_val
    val = largest_remainder(rest, num_val)
    test = largest_remainder(rest - val, num_test)
    return np.stack([train, val, test], axis=1).astype(np.int64)
