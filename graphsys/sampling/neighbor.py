"""Uniform neighbour sampling with per-layer fanouts (GraphSAGE, Hamilton et al. 2017).

Layers are listed input side first, as in DGL's ``NeighborSampler([10, 25])``: sampling
starts from the seeds with the *last* fanout (the output layer) and walks outwards, each
layer's source nodes becoming the next layer's seeds.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np
import torch

from graphsys.errors import GraphsysError, ParameterError, check_flag
from graphsys.memory import over_budget
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import as_seed_array, kernel_seed, run_parallel, scratch
from graphsys.sampling.adjacency import Adjacency, homogeneous_adjacency
from graphsys.sampling.base import LayerwiseSampler
from graphsys.sampling.block import Block
from graphsys.storage.graph import Graph
from graphsys.units import format_size


def parse_fanouts(text: str | Sequence[int], name: str = "fanouts") -> list[int]:
    """``"10,25"`` or ``[10, 25]`` to a list of positive ints (-1 = all neighbours); an
    error names ``name``, the parameter the caller gave the list as."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",")]
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise ParameterError(name, f"must be comma-separated integers like 10,25; got "
                                       f"{text!r}") from None
    else:
        try:                                        # 1.5 was cut to 1, True read as 1
            if any(isinstance(v, (bool, np.bool_)) for v in text):
                raise TypeError
            values = [operator.index(v) for v in text]
        except TypeError:
            raise ParameterError(name, f"must be integers, one per layer (-1: all "
                                       f"neighbours); got {text!r}") from None
    if not values or any(v == 0 or v < -1 or v >= 2**63 for v in values):
        raise ParameterError(name, f"must be positive integers (below 2**63) or -1 (all "
                                   f"neighbours), one per layer; got {text!r}")
    return values


def sample_neighbors(adj: Adjacency, seeds: np.ndarray, fanout: int, *, replace: bool = False,
                     rng_seed: int = 0, parallel: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pick up to ``fanout`` neighbours of every seed uniformly (``-1``: all of them).

    The one-layer kernel of :class:`NeighborSampler`, on NumPy arrays.

    Parameters
    ----------
    adj : Adjacency
        Rows are the seeds' node type; a row lists the neighbours to sample from.
    seeds : numpy.ndarray
        int64 (S,) row ids.
    fanout : int
        Neighbours per seed. Without ``replace`` a seed with fewer neighbours keeps all of
        them; with ``replace`` every seed that has a neighbour gets exactly ``fanout``
        draws.
    replace : bool, optional
        Sample with replacement (default False).
    rng_seed : int, optional
        Seed of the draws, in ``[0, 2**63)`` (default 0); the picks do not depend on
        ``parallel``.
    parallel : bool, optional
        Run on every thread (default True) or on the calling one.

    Returns
    -------
    tuple of numpy.ndarray
        ``(neighbors, counts, edge_pos)``: int64 (E,) picked neighbour ids grouped by seed,
        int64 (S,) picks per seed, int64 (E,) positions in ``adj.indices``.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.sampling import from_coo, sample_neighbors
    >>> adj = from_coo(np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), 4, 4)  # row 0: 1, 2, 3
    >>> nbr, counts, _ = sample_neighbors(adj, np.array([0, 1]), 2)
    >>> counts.tolist(), len(nbr), set(nbr[:2].tolist()) <= {1, 2, 3}
    ([2, 1], 3, True)
    """
    seeds = as_seed_array(seeds, adj.num_rows)   # the kernels read rows unchecked
    if not (isinstance(fanout, (int, np.integer)) and not isinstance(fanout, bool)
            and fanout == 0):  # 0: no picks
        try:  # -2 and NaN were read as -1, 1.5 as 1
            fanout = parse_fanouts([fanout])[0]
        except GraphsysError:
            raise ParameterError("fanout", f"must be a positive integer (below 2**63), 0 (no "
                                           f"picks) or -1 (every neighbour), got {fanout!r}"
                                 ) from None
    return pick_neighbors(adj, seeds, fanout, check_flag("replace", replace), kernel_seed(rng_seed),
                          parallel)


def pick_neighbors(adj: Adjacency, seeds: np.ndarray, fanout: int, replace: bool,
                   rng_seed: int, parallel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sample_neighbors` of ``seeds`` already checked (int64 row ids of ``adj``): what
    the samplers call on their validated batches."""
    counts = np.empty(len(seeds), np.int64)
    (K.count_picks_par if parallel else K.count_picks_ser)(adj.indptr, seeds, fanout, replace,
                                                           counts)
    check_picks(fanout, counts.sum(dtype=np.float64))      # float64: no int64 wrap
    offsets = np.zeros(len(seeds) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    nbr = np.empty(offsets[-1], np.int64)
    eid = np.empty(offsets[-1], np.int64)
    (K.fill_picks_par if parallel else K.fill_picks_ser)(
        adj.indptr, adj.indices, seeds, fanout, replace, rng_seed, offsets, nbr, eid)
    return nbr, counts, eid


def check_picks(fanout: int, picks: float, device: torch.device | None = None) -> None:
    """Refuse, in one line, a layer of a batch that draws ``picks`` neighbours (40 bytes
    each: the picks, then the block's ids and edges) past the memory of ``device`` (None or
    the CPU: the RAM available; CUDA: its free memory): a fanout of 10**15 with replacement
    failed in NumPy's allocator, and on the device sampler the kernel killed the process."""
    if picks <= 1 << 24:
        return
    need = 40 * picks
    if device is not None and device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
        short = None if need <= free else (f"about {format_size(need)}, more than the "
                                           f"{format_size(free)} free on {device}")
    else:
        short = over_budget(need)
    if short:
        raise GraphsysError(f"fanout {fanout} draws {picks:.0f} neighbours in one layer, "
                            f"needing {short} (use a smaller fanout or batch)")


def make_block(dst: np.ndarray, nbr: np.ndarray, counts: np.ndarray,
               weight: np.ndarray | None, num_nodes: int, *, check: bool = True,
               degrees: np.ndarray | None = None) -> Block:
    """A :class:`Block` whose destinations are ``dst`` (unique int64; checked unless
    ``check`` is False) and whose edges come from ``nbr`` (int64 (E,), grouped by
    destination, ``counts[i]`` for ``dst[i]``); ``degrees``: every node's
    :attr:`Block.src_degree` (:attr:`Adjacency.source_degrees`)."""
    sc = scratch(num_nodes)
    if check and K.has_duplicates(dst, sc):
        raise GraphsysError("seed ids must be unique within a batch")
    src_nodes, local = K.relabel(dst, nbr, sc)
    return Block(torch.from_numpy(src_nodes), len(dst), torch.from_numpy(local),
                 torch.from_numpy(np.repeat(np.arange(len(dst), dtype=np.int64), counts)),
                 None if weight is None else torch.from_numpy(weight),
                 src_degree=None if degrees is None else torch.from_numpy(degrees[src_nodes]))


class NeighborSampler(LayerwiseSampler):
    """Uniform neighbour sampling with per-layer fanouts (GraphSAGE), a :class:`Sampler`.

    Sampling starts from the seeds with the *last* fanout (the output layer) and walks
    outwards, each layer's source nodes becoming the next layer's destinations, as DGL's
    ``NeighborSampler([10, 25])`` and PyG's ``NeighborLoader(num_neighbors=[25, 10])``
    (PyG lists the fanouts output layer first). The sampler holds only read-only arrays, so
    worker threads share one instance.

    Parameters
    ----------
    graph : Graph or Adjacency
        A stored graph (its ``entity_type`` nodes; the undirected view when ``symmetric``,
        else the ``direction`` neighbours; mapped from the graph's adjacency index when it
        has one, see :func:`~graphsys.sampling.adjacency.mapped_adjacency`), or a ready
        :class:`~graphsys.sampling.Adjacency` whose row ``v`` lists the in-neighbours of
        ``v``.
    fanouts : sequence of int or str
        Neighbours per layer, input layer first (``[10, 25]`` or ``"10,25"``); ``-1`` takes
        every neighbour. Its length is :attr:`num_layers`.
    replace : bool, optional
        Sample with replacement: every node with a neighbour gets exactly ``fanout`` picks
        (default False: a node with fewer neighbours keeps all of them).
    entity_type : str, optional
        Node type to sample (default: the graph's only one).
    edge_set : str, optional
        Stored edge set (default: the graph's default).
    symmetric : bool, optional
        Sample the undirected view: in- and out-neighbours (default True).
    direction : {"in", "out"}, optional
        Without ``symmetric``, which neighbours a node aggregates (default ``"in"``).
    memory_limit : int, optional
        Bytes the adjacency may take to build in RAM when no stored index serves it
        (default: the RAM available); above it the sampler is refused in one line naming
        the ``graphsys index`` command that builds the index
        (:func:`graphsys.views.check`).

    Raises
    ------
    GraphsysError
        Fanouts that are not positive integers or -1; an adjacency that is not square;
        ``edge_set``, ``symmetric``, ``direction`` or ``memory_limit`` with an Adjacency.

    See Also
    --------
    graphsys.gnn.NodeLoader : batches of seeds with their blocks, features and labels.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.sampling import NeighborSampler
    >>> g = graphsys.from_numpy(np.arange(9), np.arange(1, 10),
    ...                         tempfile.mkdtemp() + "/path")      # the path 0 - 1 - ... - 9
    >>> sampler = NeighborSampler(g, [2, 2])
    >>> blocks = sampler.sample_blocks([4], rng_seed=0)
    >>> [b.dst_nodes.tolist() for b in blocks]
    [[4, 3, 5], [4]]
    >>> sorted(blocks[0].src_nodes.tolist())
    [2, 3, 4, 5, 6]
    """

    def __init__(self, graph: Graph | Adjacency, fanouts: Sequence[int] | str, *,
                 replace: bool = False, entity_type: str | None = None,
                 edge_set: str | None = None, symmetric: bool = True,
                 direction: str = "in", memory_limit: int | None = None):
        self.fanouts = parse_fanouts(fanouts)
        self.replace = check_flag("replace", replace)  # "no" sampled with replacement
        if isinstance(graph, Adjacency):
            given = [name for name, value, default in (
                ("edge_set", edge_set, None), ("symmetric", symmetric, True),
                ("direction", direction, "in"), ("memory_limit", memory_limit, None))
                if value != default]
            if given:          # they choose a stored graph's adjacency: they were ignored
                raise GraphsysError(f"{given[0]} selects the adjacency of a stored graph; an "
                                    f"Adjacency is sampled as given")
            self.adj = graph
            self.entity_type = entity_type
        else:
            self.entity_type = graph.entity_type(entity_type).name
            self.adj = homogeneous_adjacency(graph, entity_type, edge_set=edge_set,
                                             symmetric=symmetric, direction=direction,
                                             memory_limit=memory_limit)
        if self.adj.num_rows != self.adj.num_cols:
            raise GraphsysError("neighbour sampling needs a square adjacency (one node type)")

    @property
    def num_nodes(self) -> int:
        return self.adj.num_rows

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    def _layer_block(self, dst: np.ndarray, layer: int, rng_seed: int, *,
                     parallel: bool | None = None, check: bool = True) -> Block:
        fanout = self.fanouts[layer]
        nbr, counts, _ = pick_neighbors(self.adj, dst, fanout, self.replace,
                                        rng_seed, run_parallel(parallel))
        # a full neighbourhood carries its sources' graph degrees; a sampled one keeps the
        # block's own (PyG's gcn_norm on the sampled subgraph, DGL's GraphConv on a block)
        return make_block(dst, nbr, counts, None, self.num_nodes, check=check,
                          degrees=self.adj.source_degrees if fanout < 0 else None)

    def __repr__(self) -> str:
        return (f"NeighborSampler(fanouts={self.fanouts}, replace={self.replace}, "
                f"nodes={self.num_nodes}, edges={self.adj.nnz})")
