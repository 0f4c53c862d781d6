"""Uniform neighbour sampling in torch ops, on the device that holds the CSR.

:class:`DeviceNeighborSampler` draws the blocks :class:`~graphsys.sampling.NeighborSampler`
draws, bit for bit, from a CSR held as torch tensors: in GPU memory (the minibatches of a
CUDA run are made where they are consumed), or on the CPU, where the same code runs and is
tested. Every step is a whole-batch tensor operation on buffers whose sizes are bounds
known on the host, so a batch makes no host read until its end; the only Python loops run
over the layers and over the ``ceil(log2 fanout)`` rounds of :func:`floyd_resolve`. On CUDA
a layer's picks are one kernel compiled at run time by torch's jiterator
(:func:`fused_draw`); the launch counts are in docs/gnn.md, "Sampling on the GPU".

The random stream is the CPU sampler's (:mod:`graphsys.sampling._kernels`): SplitMix64 keyed
by ``(rng_seed, layer, node)``, written here in int64 torch arithmetic. The uint64 words of
the CPU kernels are held as int64 with the same 64 bits: addition, multiplication and xor
give the same bits in two's complement (torch's integer arithmetic wraps, on the CPU and on
CUDA), and the right shifts, arithmetic on int64, are made logical by masking off the
copied sign bits (:func:`srl64`). The conversion to a float in [0, 1) keeps the top 53 bits,
exactly as the CPU kernel does, and the picks truncate the same float64 products.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence

import numpy as np
import torch

from graphsys.device import note_launch, resolve_device
from graphsys.errors import GraphsysError
from graphsys.sampling._util import as_seed_array, derive_seed
from graphsys.sampling.adjacency import Adjacency
from graphsys.sampling.base import Sampler
from graphsys.sampling.block import Block, PaddedBlock
from graphsys.sampling.neighbor import NeighborSampler, check_picks, parse_fanouts

_U64 = 1 << 64


def as_int64(x: int) -> int:
    """The uint64 ``x`` (reduced mod 2**64) as the int64 of the same bits."""
    x %= _U64
    return x - _U64 if x >= 1 << 63 else x


_GOLDEN = as_int64(0x9E3779B97F4A7C15)
_M1 = as_int64(0xBF58476D1CE4E5B9)
_M2 = as_int64(0x94D049BB133111EB)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


def srl64(z: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of the uint64 words ``z`` (int64 bits) by ``0 < s < 64``."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def mix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors holding uint64 bits: the bits of
    :func:`graphsys.sampling._kernels.splitmix64` on the same words.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling._kernels import _mix
    >>> from graphsys.sampling.device import mix64
    >>> z = np.array([0, 1, 2**63, 2**64 - 1], np.uint64)
    >>> bool((mix64(torch.from_numpy(z.view(np.int64))).numpy().view(np.uint64)
    ...       == _mix(z)).all())
    True
    """
    z = (z ^ srl64(z, 30)) * _M1
    z = (z ^ srl64(z, 27)) * _M2
    return z ^ srl64(z, 31)


def floyd_resolve(r: torch.Tensor, top: torch.Tensor, tri: torch.Tensor,
                  steps: torch.Tensor) -> torch.Tensor:
    """int64 (S, k): Floyd's uniform ``k``-subsets from the draws ``r`` (S, k), ``r[:, c]``
    in ``[0, top[:, c]]`` for ``top[:, c] = deg - k + c``: the CPU kernel's picks, in its
    order (rows with ``deg <= k`` come out undefined). ``tri``: the bool (k, k) mask
    ``j < c``; ``steps``: int64 ``0..k-1``.

    Step ``c`` keeps ``top[:, c]`` instead of ``r[:, c]`` when ``r[:, c]`` was chosen
    before (it *collides*). A value chosen before is an earlier draw, or the ``top[:, j] =
    deg - k + j`` kept by an earlier collision, that of step ``j = r[:, c] - (deg - k)``
    when it lies in ``[0, c)``. So ``collided[c] = repeats[c] or collided[j]``: along a
    chain of strictly decreasing steps, the first step that repeats an earlier draw decides
    (none does: no collision). Each step points to its ``j`` (a step that repeats, or has
    no ``j``, to itself; a draw below ``deg - k`` to step 0, which never collides), the
    pointers are doubled ``ceil(log2(k - 1))`` times, one gather each, and the chain's end
    says whether it repeats: a loop over the ``k`` steps done in a few whole-batch gathers.

    Examples
    --------
    >>> import torch
    >>> from graphsys.sampling.device import floyd_resolve
    >>> k = 3
    >>> steps = torch.arange(k)
    >>> top = 5 - k + steps.unsqueeze(0)          # deg 5: steps draw in [0, 2], [0, 3], [0, 4]
    >>> r = torch.tensor([[2, 2, 3]])             # step 1 repeats 2 -> keeps 3; step 2 draws
    >>> floyd_resolve(r, top, steps.unsqueeze(1) > steps, steps).tolist()   # 3: taken -> 4
    [[2, 3, 4]]
    """
    k = r.shape[1]
    rep = ((r.unsqueeze(2) == r.unsqueeze(1)) & tri).any(2)      # an earlier equal draw
    # the step whose top the draw equals (r <= top: at most the step itself; below the
    # top zone: step 0); rows with deg < k may point past their steps, hence the clamp
    ptr = torch.clamp(r - top[:, :1], steps[:1], steps)        # steps[:1]: a zero
    ptr = torch.where(rep, steps, ptr)                          # a repeat ends its chain
    for _ in range(max(k - 2, 0).bit_length()):
        ptr = ptr.gather(1, ptr)
    return torch.where(rep.gather(1, ptr), top, r)


class _Fanout:
    """Constant tensors of one fanout ``k`` on a device: ``steps`` 0..k-1, ``words`` the
    stream's golden-ratio steps ``(j + 1) * golden``, ``shift`` ``steps - k`` (so that
    ``deg + shift`` is Floyd's ``top``), ``scale`` ``(shift + 1) * 2**-53`` (float64; with
    ``deg * 2**-53`` added, the factor that takes a draw's 53 bits to ``[0, top]``),
    ``tri`` the (k, k) mask ``j < c`` (None with replacement: no Floyd) and ``lim`` what a
    step is compared with the degree by (``steps``; zeros with replacement: every step or
    none is kept)."""

    def __init__(self, k: int, replace: bool, device: torch.device):
        self.k = k
        self.steps = torch.arange(k, dtype=torch.int64, device=device)
        self.words = (self.steps + 1) * _GOLDEN
        self.shift = self.steps - k
        self.scale = (self.shift + 1).to(torch.float64) * _INV53
        self.tri = None if replace else self.steps.unsqueeze(1) > self.steps    # Floyd's
        self.lim = torch.zeros_like(self.steps) if replace else self.steps
        self.fused = None


#: One CUDA kernel for a layer's picks (compiled at run time by torch's jiterator): per
#: destination row and step ``c``, the SplitMix64 words of steps 0..c, the draws scaled as
#: the CPU kernel scales them, Floyd's loop up to step c (or the draw of step c with
#: replacement; step c itself where the row has at most K neighbours), and the CSR
#: position of the pick, or PAD (a padding entry that holds the padding node) for a step
#: past the row's picks; ``kept`` 1 for a pick, else 0. Bits as :func:`mix64` and
#: :func:`floyd_resolve` (checked against them when a sampler is made).
_DRAW_CODE = """template <typename T> void gs_neighbour_draw(T w0, T key, T deg, T lo, T step,
                                               T& pos, T& kept) {
  const unsigned long long G = 0x9E3779B97F4A7C15ULL;
  const unsigned long long M1 = 0xBF58476D1CE4E5B9ULL, M2 = 0x94D049BB133111EBULL;
  unsigned long long z = ((unsigned long long) w0) ^ ((unsigned long long) key);
  z = (z ^ (z >> 30)) * M1; z = (z ^ (z >> 27)) * M2; z = z ^ (z >> 31);
  const long long d = (long long) deg, c = (long long) step;
  long long pick = c;
  long long chosen[@K@];
  const long long first = (@REPL@ || d > @K@) ? (@REPL@ ? c : 0) : c + 1;
  for (long long j = first; j <= c; ++j) {
    unsigned long long w = z + (unsigned long long) (j + 1) * G;
    w = (w ^ (w >> 30)) * M1; w = (w ^ (w >> 27)) * M2; w = w ^ (w >> 31);
    const double u = ((double) (w >> 11)) * 1.1102230246251565e-16;
    if (@REPL@) {
      pick = (long long) (u * (double) d);
    } else {
      const long long t = d - @K@ + j;
      const long long r = (long long) (u * (double) (t + 1));
      bool dup = false;
      for (long long q = 0; q < j; ++q) dup |= chosen[q] == r;
      chosen[j] = dup ? t : r;
      pick = chosen[j];
    }
  }
  const bool keep = @REPL@ ? d > 0 : c < d;
  kept = keep ? 1 : 0;
  pos = keep ? ((long long) lo) + pick : (long long) @PAD@;
}"""


def fused_draw(k: int, replace: bool, pad: int, device: torch.device):
    """The jiterator kernel of a layer's picks (:data:`_DRAW_CODE`) for fanout ``k``, or
    None off CUDA or where torch cannot compile it: a function of ``(w0, key, deg, lo,
    steps)`` (int64 tensors broadcast to (D, k)) returning ``(positions, kept)``. ``k``: 1
    to 64 (Floyd's chosen values are held in a per-thread array); ``pad``: the CSR position
    read for a step past a row's picks.

    Examples
    --------
    >>> import torch
    >>> from graphsys.sampling.device import fused_draw
    >>> fused_draw(15, False, 100, torch.device("cpu")) is None     # jiterator is CUDA's
    True
    """
    if device.type != "cuda" or not 0 < k <= 64:
        return None
    try:
        from torch.cuda.jiterator import _create_multi_output_jit_fn
    except ImportError:
        return None
    code = (_DRAW_CODE.replace("@K@", str(k)).replace("@REPL@", str(int(replace)))
            .replace("@PAD@", str(pad)))
    return _create_multi_output_jit_fn(code, num_outputs=2)


def _in_process_group() -> bool:
    """Whether this process is in an initialised ``torch.distributed`` group."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def node_table(indptr: np.ndarray, device: torch.device) -> torch.Tensor:
    """int64 (N + 1, 3): per node its first CSR position, its degree and the first word of
    its random streams (``mix64(node + golden)``, shared by every seed and layer); row N, a
    padding node without neighbours, starts at the CSR's end."""
    n = len(indptr) - 1
    ptr = torch.from_numpy(np.ascontiguousarray(indptr, dtype=np.int64)).to(device)
    table = torch.zeros((n + 1, 3), dtype=torch.int64, device=device)
    table[:, 0] = ptr
    table[:n, 1] = ptr[1:] - ptr[:-1]
    table[:n, 2] = mix64(torch.arange(n, dtype=torch.int64, device=device) + _GOLDEN)
    return table


def uva_view(host: torch.Tensor, device: torch.device) -> torch.Tensor | None:
    """A CUDA tensor over the pinned host tensor ``host``'s memory (no copy): CUDA kernels
    given it read host memory across the bus (unified virtual addressing), or None where
    this cannot be made (``host`` not pinned, no CUDA).

    torch has no public constructor for such a view; it takes any memory described by
    the CUDA array interface that the CUDA runtime knows (its pointer attributes are not
    "unregistered"), and page-locked memory from ``torch.Tensor.pin_memory`` is mapped for
    every device at the same address when addressing is unified (every 64-bit CUDA
    platform). ``host``: a contiguous int32 or int64 tensor; the view keeps it alive.

    Examples
    --------
    >>> import torch
    >>> from graphsys.sampling.device import uva_view
    >>> uva_view(torch.arange(4), torch.device("cpu")) is None      # only CUDA reads host memory
    True
    """
    if device.type != "cuda" or not host.is_pinned() or not host.is_contiguous():
        return None
    typestr = {torch.int32: "<i4", torch.int64: "<i8"}[host.dtype]

    class _Interface:
        keep = host
        __cuda_array_interface__ = {"shape": tuple(host.shape), "typestr": typestr,
                                    "data": (host.data_ptr(), False), "version": 2,
                                    "strides": None}
    try:
        view = torch.as_tensor(_Interface(), device=device)
    except (RuntimeError, TypeError, ValueError):
        return None
    return view if view.device.type == "cuda" else None


class DeviceNeighborSampler(Sampler):
    """Uniform neighbour sampling in torch ops on the device holding the CSR: the blocks of
    :class:`~graphsys.sampling.NeighborSampler` (same arguments, same ``rng_seed``), made
    where the model runs.

    The CSR goes to ``device`` once, as a per-node table (first position, degree and first
    stream word, int64; one more row for a padding node without neighbours) and the
    neighbour ids (int32 when the graph allows, else int64). A batch's seeds go to the
    device in one transfer, with the layers' stream keys (none when the seeds are a tensor
    there already); per layer, the destinations' table rows are gathered, the picks are
    drawn from the CPU sampler's counter-based stream (a node's sample is a function of
    ``(rng_seed, layer, node)``), with or without replacement as the CPU sampler draws
    them (Floyd's algorithm, :func:`floyd_resolve`), and the sources are numbered in the
    CPU sampler's order (destinations first, then new nodes in order of first appearance)
    through a dense map of the node ids (the first position of each id, a scatter-min).
    The blocks carry their edge groupings (:attr:`Block.dst_offsets`, and
    :attr:`Block.src_offsets` for every block but the input layer's, which a gradient
    does not go through), computed there.

    Parameters
    ----------
    graph : Graph, Adjacency or NeighborSampler
        What :class:`~graphsys.sampling.NeighborSampler` takes (its ``entity_type``,
        ``edge_set``, ``symmetric``, ``direction`` keywords pass through), or a
        NeighborSampler whose adjacency and settings are taken (``fanouts`` None).
    fanouts : sequence of int or str, optional
        Neighbours per layer, input layer first; -1 takes every neighbour.
    replace : bool, optional
        Sample with replacement (default False), as the CPU sampler.
    device : str or torch.device, optional
        Where the CSR lives and the blocks are made: ``"cpu"``, ``"cuda[:k]"`` or ``"auto"``
        (default: ``"cuda"`` when available, else ``"cpu"``;
        :func:`~graphsys.device.resolve_device`).
    pin_memory : bool, optional
        Keep the CSR in pinned host memory instead of on ``device`` (a graph larger than
        the GPU's memory): the batch is drawn by the same torch ops on the host and its
        blocks copied to ``device`` without blocking. ``csr`` (``"uva"``, ``"staged"``)
        keeps the neighbour ids in host memory and samples on the GPU.
    index_dtype : torch.dtype, optional
        dtype of the device CSR's neighbour ids: ``torch.int32`` (half the memory; default
        when the node and edge counts fit) or ``torch.int64``. The picks do not depend on
        it.
    cuda_graphs : bool or None, optional
        Replay a batch's operators as one CUDA graph (default False): one launch instead
        of 18 to 64 a layer, then one copy of the output buffers (which the graph joins
        into one). None: on where it can be (``NodeLoader``'s choice): on CUDA,
        with every fanout fixed, the CSR on the device (``csr`` ``"device"``; a graph too
        large for it is sampled eagerly) and no ``torch.distributed`` process group (a
        capture forbids other threads' CUDA calls, which a group's watchdog makes). A
        graph is recorded by :meth:`record_graphs` (``NodeLoader`` calls it for its batch
        sizes before its sampling threads start), or with True on the first batch of a
        size sampled on the main thread; a batch of an unrecorded size is otherwise drawn
        without one.
        Host seeds only (seeds already on the device run eagerly); not with fanout -1.
        Elsewhere than on CUDA the recorded draw is run again on the same buffers (how
        the tests check their handling).
    csr : {"auto", "device", "uva", "staged"}, optional
        Where the neighbour ids (4 or 8 bytes an edge, the bulk of the CSR) are read
        from; the node table (24 bytes a node) is on ``device`` in every case.
        ``"device"``: copied there. ``"uva"``: kept in pinned host memory that CUDA
        kernels read across the bus (:func:`uva_view`; the same operators, no transfer;
        where no such view can be made, ``"staged"``). ``"staged"``: kept in host memory;
        each layer reads its CSR positions on the host (one synchronisation), gathers the
        ids there into a pinned staging buffer and copies them to the device without
        blocking (two transfers). ``"auto"`` (default): ``"device"`` when
        :meth:`csr_bytes` fits ``device_budget``, else ``"uva"`` on CUDA and
        ``"staged"`` elsewhere. Off CUDA, ``"uva"`` reads host memory as ``"device"``
        does. The batches are the same in every case.
    device_budget : int, optional
        Bytes the CSR may take on the device with ``csr="auto"`` (default on CUDA: half
        the device's free memory when the sampler is made; elsewhere no limit): the name
        :func:`graphsys.bsp.run` gives its device memory budget. ``device_memory_budget``,
        its former name, is deprecated and goes in the next release.
    fused : bool, optional
        Draw each layer's picks (the streams' words, the scaled draws, Floyd's loop, the
        CSR positions) in one CUDA kernel that torch's jiterator compiles at run time
        (:func:`fused_draw`) instead of about 45 torch operators. Default: where it
        compiles and, on a check batch when the sampler is made, gives the operators'
        positions bit for bit (CUDA, fanouts up to 64); True raises where it does not.
    **graph_options
        ``entity_type``, ``edge_set``, ``symmetric``, ``direction``, ``memory_limit`` of a
        stored graph, as :class:`~graphsys.sampling.NeighborSampler` takes them.

    Raises
    ------
    GraphsysError
        Fanouts that are not positive integers or -1; ``pin_memory`` without CUDA;
        ``cuda_graphs`` with fanout -1 or ``csr="staged"``; an unknown ``csr``; ``fused``
        where no checked kernel can be made; repeated or out-of-range seeds (when sampled).

    See Also
    --------
    graphsys.sampling.NeighborSampler : the CPU sampler (numba kernels), same blocks.

    Notes
    -----
    Host reads per batch: one (a few counts, after the last layer), plus one per layer of
    fanout -1 (its edge count) and, with ``csr="staged"``, one per layer (its positions).
    The sizes of the intermediate buffers are bounds known on the host: ``D * k`` picks
    for ``D`` padded destinations and at most ``min(D * (k + 1), num_nodes)`` sources,
    ``k`` the fanout (without replacement at most the largest degree, which every row
    then keeps whole), so all of a batch's operators before its read have shapes fixed by the batch
    size. Device memory: 24 bytes a node for the table (and 4 for the degrees, the
    :attr:`~graphsys.sampling.Block.src_degree` of a layer of fanout -1, only when there is
    one), 4 or 8 an edge (none with ``csr`` ``"uva"`` or ``"staged"``), and per layer of a
    batch a map of 4 bytes a node.
    ``tests/sampling/test_device_counts.py`` pins the operators, transfers and host
    synchronisations of a batch (:mod:`graphsys.analysis.device_counts`).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> from graphsys.sampling.device import DeviceNeighborSampler
    >>> rng = np.random.default_rng(0)
    >>> adj = from_coo(rng.integers(0, 50, 400), rng.integers(0, 50, 400), 50, 50)
    >>> dev = DeviceNeighborSampler(adj, [4, 3], device="cpu")
    >>> blocks = dev.sample_blocks(torch.tensor([3, 7, 11]), rng_seed=5)
    >>> cpu = NeighborSampler(adj, [4, 3]).sample_blocks([3, 7, 11], rng_seed=5)
    >>> all(torch.equal(a.src_nodes, b.src_nodes) and torch.equal(a.edge_src, b.edge_src)
    ...     and torch.equal(a.edge_dst, b.edge_dst) for a, b in zip(blocks, cpu))
    True
    >>> blocks[-1].dst_nodes.tolist()
    [3, 7, 11]
    """

    def __init__(self, graph, fanouts: Sequence[int] | str | None = None, *,
                 replace: bool | None = None, device: str | torch.device | None = None,
                 pin_memory: bool = False, index_dtype: torch.dtype | None = None,
                 cuda_graphs: bool | None = False, csr: str = "auto",
                 device_budget: int | None = None, fused: bool | None = None,
                 device_memory_budget: int | None = None, **graph_options):
        if isinstance(graph, NeighborSampler):
            if graph_options:          # the sampler's adjacency is taken as it is
                raise GraphsysError(f"{next(iter(graph_options))} selects the adjacency of a "
                                    f"stored graph; a NeighborSampler's is taken as it is")
            base = graph
            fanouts = base.fanouts if fanouts is None else fanouts
            replace = base.replace if replace is None else replace
        else:
            if fanouts is None:
                raise GraphsysError("DeviceNeighborSampler needs fanouts (one per layer)")
            base = NeighborSampler(graph, fanouts, **graph_options)
        self.fanouts = parse_fanouts(fanouts)
        self.replace = bool(replace)
        self.adj: Adjacency = base.adj
        # the fanout each layer draws: without replacement a row of at most k neighbours
        # keeps them all, in CSR order, so a fanout above the largest degree draws the
        # largest degree's picks, and the (D, k) and (k, k) buffers stay bounded by the graph
        top = max(1, int(self.adj.degrees().max(initial=0)))
        self._draws = [k if k < 0 or self.replace else min(k, top) for k in self.fanouts]
        self.entity_type = base.entity_type
        self.device = resolve_device("auto" if device is None else device)
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not torch.cuda.is_available():
            raise GraphsysError("pin_memory needs CUDA (pinned host memory is page-locked "
                                "for a GPU's copies)")
        self.cuda_graphs = bool(cuda_graphs)
        if self.cuda_graphs and min(self.fanouts) < 0:
            raise GraphsysError("cuda_graphs needs fanouts of fixed size (a layer of "
                                "fanout -1 reads its edge count on the host)")
        self._graphs: dict[int, tuple] = {}
        self._graph_lock = threading.Lock()
        #: the event after the last replay's clone (CUDA), which the next replay's stream
        #: waits for: threads may replay on different streams (a loader's side stream)
        self._replayed = None
        index_dtype = self._index_dtype(index_dtype)
        if device_memory_budget is not None:
            if device_budget is not None:
                raise GraphsysError("device_memory_budget is the former name of device_budget: "
                                    "give device_budget only")
            warnings.warn("DeviceNeighborSampler(device_memory_budget=...) is deprecated and goes "
                          "in the next release: use device_budget", DeprecationWarning, 2)
            device_budget = device_memory_budget
        self.csr = self._placement(csr, device_budget, index_dtype)
        if cuda_graphs is None:
            self.cuda_graphs = (self.device.type == "cuda" and self.csr == "device"
                                and min(self.fanouts) > 0 and not _in_process_group())
        # recorded on a batch of a new size, or only ahead (record_graphs): a link
        # loader's batches, of many seed counts, would each record one
        self._record_on_demand = cuda_graphs is True
        if self.cuda_graphs and self.csr == "staged":
            raise GraphsysError("cuda_graphs needs the CSR on the device or read through UVA "
                                "(csr='staged' reads positions on the host every layer)")
        self.table, self.indices = self._upload(index_dtype)
        self._staged = self.csr == "staged"
        where = self.table.device
        # the src_degree of a full layer's block (4 bytes a node), made only when a layer
        # takes every neighbour: a sampled layer's block keeps its own degrees
        self._degrees = (torch.from_numpy(self.adj.source_degrees).to(where)
                         if min(self.fanouts) < 0 else None)
        self._check_picks(1)                # a fanout's constants: 40 bytes a step
        self._fanouts = {k: _Fanout(k, self.replace, where)
                         for k in set(self._draws) if k > 0}
        self._pad = torch.full((1,), self.num_nodes, dtype=torch.int64, device=where)
        self._zero = torch.zeros(1, dtype=torch.int64, device=where)
        self._inv53 = torch.tensor(_INV53, dtype=torch.float64, device=where)
        self._ranges: dict[tuple, torch.Tensor] = {}
        if fused is not False:
            for k, f in self._fanouts.items():
                f.fused = self._fuse(k)
        self.fused = any(f.fused is not None for f in self._fanouts.values())
        if fused and not self.fused:
            raise GraphsysError("fused needs CUDA and torch's jiterator (a kernel compiled "
                                "at run time), whose picks matched the torch operators'")

    def _index_dtype(self, index_dtype: torch.dtype | None) -> torch.dtype:
        """``index_dtype`` checked; None: int32 where the node and edge counts fit."""
        if index_dtype is None:
            fits = max(self.adj.nnz, self.adj.num_rows) < 2**31 - 1
            return torch.int32 if fits else torch.int64
        if index_dtype not in (torch.int32, torch.int64):
            raise GraphsysError(f"index_dtype must be torch.int32 or torch.int64, got "
                                f"{index_dtype}")
        return index_dtype

    def _placement(self, csr: str, budget: int | None, index_dtype) -> str:
        """Where the neighbour ids are read from: ``"device"``, ``"uva"`` (pinned host
        memory that CUDA kernels read) or ``"staged"`` (host memory, gathered on the host);
        ``"auto"``: on the device when the CSR's bytes fit ``budget`` (default on CUDA:
        half the device's free memory; elsewhere no limit), else through UVA on CUDA and
        staged elsewhere. With ``pin_memory`` the whole batch is drawn on the host."""
        if csr not in ("auto", "device", "uva", "staged"):
            raise GraphsysError(f"csr must be 'auto', 'device', 'uva' or 'staged', got "
                                f"{csr!r}")
        if self.pin_memory:
            if csr not in ("auto", "device"):
                raise GraphsysError("pin_memory draws the batch on the host: csr must be "
                                    "'auto' or 'device'")
            return "host"
        if csr != "auto":
            return csr
        if budget is None and self.device.type == "cuda":
            budget = torch.cuda.mem_get_info(self.device)[0] // 2
        return "device" if budget is None or self.csr_bytes(index_dtype) <= budget else (
            "uva" if self.device.type == "cuda" else "staged")

    def csr_bytes(self, index_dtype: torch.dtype | None = None) -> int:
        """Bytes of the sampler's CSR where it is read: the node table (24 a node) and the
        neighbour ids (4 or 8 an edge, ``index_dtype`` as the constructor takes it), what
        ``csr="auto"`` compares with ``device_budget``.

        Examples
        --------
        >>> import numpy as np
        >>> from graphsys.sampling import from_coo
        >>> from graphsys.sampling.device import DeviceNeighborSampler
        >>> adj = from_coo(np.array([0, 1]), np.array([1, 2]), 3, 3)
        >>> DeviceNeighborSampler(adj, [2], device="cpu").csr_bytes()   # 24 * 4 + 4 * (2 + 1)
        108
        """
        width = 4 if self._index_dtype(index_dtype) == torch.int32 else 8
        return 24 * (self.adj.num_rows + 1) + width * (self.adj.nnz + 1)

    def _upload(self, index_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """The node table and the neighbour ids where they are read (a one-off copy); the
        ids are followed by one entry holding the padding node, read for the steps past a
        row's picks. The table goes to the device unless the batch is
        drawn on the host; the ids stay on the host with ``csr`` ``"uva"`` (pinned, seen
        by CUDA as device memory: :func:`uva_view`) or ``"staged"``."""
        adj = self.adj
        dtype = np.dtype(str(index_dtype).removeprefix("torch."))
        indices = np.full(adj.nnz + 1, adj.num_rows, dtype)     # padding: the padding node
        indices[:adj.nnz] = adj.indices
        ids = torch.from_numpy(indices)
        if self.csr == "host":
            return node_table(adj.indptr, "cpu").pin_memory(), ids.pin_memory()
        table = node_table(adj.indptr, self.device)
        if self.csr == "device" or (self.csr == "uva" and self.device.type != "cuda"):
            return table, ids.to(self.device)
        if self.csr == "uva":
            view = uva_view(ids.pin_memory(), self.device)
            if view is not None:
                return table, view
            self.csr = "staged"             # no zero-copy view here: gather on the host
        return table, ids

    @property
    def num_nodes(self) -> int:
        return self.adj.num_rows

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    @property
    def sample_device(self) -> torch.device:
        """Where the batches are drawn: the node table's device (the host when pinned)."""
        return self.table.device

    def _iota(self, n: int) -> torch.Tensor:
        """``0..n-1`` (int64) on the sampling device: a view of a kept range."""
        return self._kept(n, torch.int64, lead=0)

    def _kept(self, n: int, dtype: torch.dtype, lead: int) -> torch.Tensor:
        """``[lead, 0, 1, ..., n - 2]`` (``lead`` 0: ``0..n-1``) of ``dtype`` on the sampling
        device: a view of a kept range, grown when too short (no operator per batch once
        it has grown)."""
        key = (dtype, lead)
        kept = self._ranges.get(key)
        if kept is None or len(kept) < n:
            size = max(n, 1024, 2 * (0 if kept is None else len(kept)))
            kept = torch.arange(size, dtype=dtype, device=self.sample_device)
            if lead:
                kept -= 1
                kept[:1].fill_(lead)                # a fill: no copy of a host scalar
            self._ranges[key] = kept
        return kept[:n]

    def sample_blocks(self, seeds, rng_seed: int = 0, *, parallel: bool | None = None
                      ) -> list[Block]:
        """The blocks of one batch, input layer first: those of
        :meth:`NeighborSampler.sample_blocks` with the same arguments, on the device.

        Parameters
        ----------
        seeds : int tensor, array or sequence (S,), or SamplerInput
            Unique node ids (a tensor on the sampling device is used where it is), bare or
            in a :class:`~graphsys.sampling.SamplerInput` without times.
        rng_seed : int, optional
            Seed of the batch (default 0); layer ``l`` draws from
            ``derive_seed(rng_seed, l)``.
        parallel : bool, optional
            Accepted for the CPU sampler's signature; ignored.

        Returns
        -------
        list of Block
            One per layer, tensors on ``device``, with their edge groupings computed.

        Raises
        ------
        GraphsysError
            Repeated seeds, an id outside the graph, or seed times.
        """
        seeds = self.seed_nodes(seeds)
        self._check_picks(len(seeds))
        terms = [as_int64(derive_seed(rng_seed, layer) * 0x9E3779B97F4A7C15)
                 for layer in range(self.num_layers)]
        if torch.is_tensor(seeds) and seeds.device == self.sample_device:
            dst, bad = self._device_seeds(seeds)
            layers, sizes = self._draw(dst, terms, bad)
        else:
            bad = None
            ids = as_seed_array(seeds, self.num_nodes)
            packed = torch.from_numpy(np.concatenate([np.asarray(terms, np.int64), ids]))
            if self.cuda_graphs:
                layers, sizes = self._replay(packed)
            else:
                layers, sizes = self._draw_packed(self._upload_packed(packed))
        n_seeds = len(layers[-1]["offsets"]) - 1
        sizes = sizes.tolist()                                               # the read
        if bad is not None and sizes[-1]:
            as_seed_array(seeds, self.num_nodes)     # raises, naming the first bad id
        if sizes[2 * self.num_layers] != n_seeds:
            raise GraphsysError("seed ids must be unique within a batch")
        n_src = [sizes[2 * k] for k in range(self.num_layers)]
        num_dst = n_src[1:] + [n_seeds]
        return [self._block(o, n_src[k], sizes[2 * k + 1], num_dst[k], k > 0,
                            self.fanouts[k] < 0) for k, o in enumerate(layers)]

    def padded_blocks(self, seeds, rng_seed: int = 0, *, size: int | None = None
                      ) -> list[PaddedBlock]:
        """The batch of :meth:`sample_blocks` in shapes fixed by ``size``, with no host read
        (but ``csr="staged"``'s, a layer): one :class:`~graphsys.sampling.PaddedBlock` a
        layer, input layer first, on ``device``, whose real rows hold the same picks as
        the blocks (what a training step captured as one CUDA graph runs on,
        :class:`graphsys.gnn.NodeStepGraph`).

        Parameters
        ----------
        seeds : int tensor, array or sequence (S,)
            Unique node ids, checked on the host.
        rng_seed : int, optional
            Seed of the batch (default 0), as :meth:`sample_blocks` takes it.
        size : int, optional
            Destination rows of the output layer (default ``S``): the seeds are followed by
            ``size - S`` padding rows (the padding node, without neighbours), so that
            batches of any seed count up to ``size`` have the same shapes.

        Returns
        -------
        list of PaddedBlock
            Layer ``l``'s destination rows are layer ``l + 1``'s source rows; the output
            layer's first ``S`` destinations are the seeds, in order.

        Raises
        ------
        GraphsysError
            Repeated seeds, an id outside the graph, more seeds than ``size``, or a layer of
            fanout -1 (its shape depends on the sample).
        """
        if min(self.fanouts) < 0:
            raise GraphsysError("padded blocks need fanouts of fixed size (a layer of fanout "
                                "-1 takes as many picks as its rows have neighbours)")
        ids = as_seed_array(self.seed_nodes(seeds), self.num_nodes)
        if len(np.unique(ids)) != len(ids):
            raise GraphsysError("seed ids must be unique within a batch")
        size = len(ids) if size is None else int(size)
        if not len(ids) <= size <= max(self.num_nodes, 1):
            raise GraphsysError(f"size {size}: a padded batch holds its {len(ids)} seeds and "
                                f"at most {self.num_nodes} rows (the graph's nodes)")
        self._check_picks(size)
        packed = np.full(self.num_layers + size, self.num_nodes, np.int64)
        packed[:self.num_layers] = [as_int64(derive_seed(rng_seed, layer) * 0x9E3779B97F4A7C15)
                                    for layer in range(self.num_layers)]
        packed[self.num_layers:self.num_layers + len(ids)] = ids
        blocks = self.draw_padded(self._upload_packed(torch.from_numpy(packed)))
        if self.sample_device != self.device:      # drawn on the host (pin_memory)
            blocks = [b.to(self.device, non_blocking=True) for b in blocks]
        return blocks

    def draw_padded(self, packed: torch.Tensor) -> list[PaddedBlock]:
        """:meth:`padded_blocks` of ``packed`` on the sampling device: the layers' stream
        keys (``as_int64(derive_seed(rng_seed, l) * golden)``), then the seeds, padded with
        the padding node ``num_nodes``; no check and no host read, every shape fixed by
        ``len(packed)`` (the operators a captured step records)."""
        n = self.num_layers
        dst, blocks = packed[n:], []
        for layer in range(n - 1, -1, -1):
            blocks.insert(0, self._layer(dst, layer, packed[layer], padded=True))
            dst = blocks[0].src_nodes
        return blocks

    def _check_picks(self, n_seeds: int) -> None:
        """:func:`~graphsys.sampling.neighbor.check_picks` of the widest layer of a batch of
        ``n_seeds``: each layer draws for at least the batch's seeds (a block's sources
        begin with its destinations), so a padded layer past the device's memory is refused
        before it is drawn."""
        widest = max(range(self.num_layers), key=self._draws.__getitem__)
        check_picks(self.fanouts[widest], float(n_seeds) * self._draws[widest],
                    self.sample_device)

    def _device_seeds(self, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Seeds already on the sampling device, clamped into the graph's ids (an id
        outside reads a node's row; the batch is refused after its read), and the device
        count of ids outside (``num_nodes`` too: the padding row, which no clamp into the
        table would tell apart, made it read as a repeated seed). A graph without nodes
        has no row to read: its seeds are checked on the host."""
        if seeds.is_floating_point() or seeds.dtype == torch.bool:
            raise GraphsysError(f"seed ids must be integers, got dtype {seeds.dtype}")
        s = seeds.reshape(-1)
        if self.num_nodes == 0:
            as_seed_array(s, 0)                  # raises for any seed
        d = s.clamp(0, max(self.num_nodes - 1, 0)).to(torch.int64)
        return d, (d != s).sum()

    def _upload_packed(self, packed: torch.Tensor) -> torch.Tensor:
        """The host's stream keys and seed ids to the sampling device, in one copy."""
        dev = self.sample_device
        if dev.type == "cuda":      # from pinned memory: no wait for the copy
            return packed.pin_memory().to(dev, non_blocking=True)
        return packed.to(dev, copy=True)

    def _draw_packed(self, packed: torch.Tensor) -> tuple[list[dict], torch.Tensor]:
        """:meth:`_draw` of the uploaded keys and seeds (``packed``: the layers' stream
        keys, then the seed ids)."""
        n = self.num_layers
        return self._draw(packed[n:], [packed[i] for i in range(n)], None)

    def _draw(self, dst: torch.Tensor, keys: list, bad: torch.Tensor | None
              ) -> tuple[list[dict], torch.Tensor]:
        """Every layer's padded buffers, input layer first, and the int64 counts the
        host reads: per layer its sources and its edges, then the distinct seeds, then
        ``bad`` when given. No host read, and the shapes depend
        on the batch size only (no fanout -1)."""
        n_seeds = len(dst)
        layers: list[dict] = []
        for layer in range(self.num_layers - 1, -1, -1):
            out = self._layer(dst, layer, keys[layer])
            layers.insert(0, out)
            dst = out["src"]
        counts = [x for o in layers for x in (o.pop("n_src"), o.pop("n_edges"))]
        counts.append(layers[-1]["firsts"][n_seeds])     # the distinct seeds
        for o in layers:
            del o["firsts"]
        return layers, torch.stack(counts + ([] if bad is None else [bad]))

    def _replay(self, packed: torch.Tensor) -> tuple[list[dict], torch.Tensor]:
        """:meth:`_draw_packed` by a replay of a CUDA graph recorded for the batch size
        (on the first batch of that size): the keys and seeds copied into the graph's input
        buffer, the graph replayed, its output buffer (every output, joined by the graph:
        :meth:`_flatten`) cloned in one copy (the next replay overwrites it) and cut into
        views. The lock keeps the copy, replay and clone of two threads apart; an event
        after each clone keeps the next replay, on whichever stream, after it. Without CUDA
        (the tests) the recorded draw is run again on the input buffer."""
        with self._graph_lock:
            entry = self._graphs.get(len(packed))
            if entry is None and (not self._record_on_demand or threading.current_thread()
                                  is not threading.main_thread()):
                return self._draw_packed(self._upload_packed(packed))
            if entry is None:
                entry = self._record(packed)
            static_in = entry[0]
            if static_in.device.type == "cuda":
                stream = torch.cuda.current_stream(static_in.device)
                if self._replayed is not None:  # the last clone, maybe on another stream
                    stream.wait_event(self._replayed)
                static_in.copy_(packed.pin_memory(), non_blocking=True)
            else:
                static_in.copy_(packed)
            flat = self._run_graph(entry).clone()
            if static_in.device.type == "cuda":
                self._replayed = torch.cuda.Event()
                self._replayed.record(stream)
            return self._unflatten(flat, entry[6])

    def _run_graph(self, entry: tuple) -> torch.Tensor:
        """Replay a recorded graph (one launch) and return its joined output buffer, which
        the next replay overwrites; without CUDA, the recorded draw run again on the
        graph's input buffer."""
        if entry[1] is None:
            return self._flatten(*self._draw_packed(entry[0]))[0]
        entry[1].replay()
        note_launch("cuda_graph")
        return entry[5]

    @staticmethod
    def _flatten(layers: list[dict], sizes: torch.Tensor) -> tuple[torch.Tensor, list]:
        """A batch's output buffers (all int64 and one-dimensional) joined into one
        (one kernel), and the layout :meth:`_unflatten` cuts it back by."""
        parts = [t for o in layers for t in o.values()] + [sizes]
        layout = [[(k, len(t)) for k, t in o.items()] for o in layers] + [len(sizes)]
        return torch.cat(parts), layout

    @staticmethod
    def _unflatten(flat: torch.Tensor, layout: list) -> tuple[list[dict], torch.Tensor]:
        """The output buffers of :meth:`_flatten`'s ``flat``, as views of it."""
        lengths = [n for spec in layout[:-1] for _, n in spec] + [layout[-1]]
        pieces = iter(torch.split(flat, lengths))
        return [{k: next(pieces) for k, _ in spec} for spec in layout[:-1]], next(pieces)

    def record_graphs(self, batch_sizes) -> None:
        """Record now the CUDA graphs of batches of these seed counts (``cuda_graphs``;
        sizes already recorded, above the node count or below 1 are skipped).

        Recording registers torch's default CUDA generator with the capture: while it
        runs, no other thread may draw from that generator (a training step's dropout
        would fail and leave the generator unusable) nor synchronise the device. So
        graphs are recorded here, before the threads that sample and train start, and a
        sampling thread never records one.

        Parameters
        ----------
        batch_sizes : iterable of int
            Seed counts of the batches to come (at most four are kept).
        """
        if not self.cuda_graphs:
            return
        terms = np.zeros(self.num_layers, np.int64)
        # largest first: the kept ranges then grow before the first capture, not after
        for size in sorted({int(b) for b in batch_sizes}, reverse=True):
            if 0 < size <= self.num_nodes and self.num_layers + size not in self._graphs:
                packed = torch.from_numpy(np.concatenate([terms, np.arange(size)]))
                with self._graph_lock:
                    self._record(packed)

    def _record(self, packed: torch.Tensor) -> tuple:
        """The CUDA graph of :meth:`_draw_packed` for batches of ``packed``'s size (after
        one warm-up run on a side stream, which also grows the kept ranges): ``(input
        buffer, graph, output buffers, counts, kept ranges, the outputs joined by the graph,
        their layout)``; at most four batch sizes are kept. The graph reads the kept
        ranges' memory as it was when recorded: the entry holds those tensors, so a range
        grown later for a larger batch (a new tensor) does not free the memory a replay
        reads."""
        static_in = self._upload_packed(packed)
        graph = None
        layers, sizes = self._draw_packed(static_in)
        if static_in.device.type == "cuda":
            side = torch.cuda.Stream(static_in.device)
            side.wait_stream(torch.cuda.current_stream(static_in.device))
            with torch.cuda.stream(side):
                self._draw_packed(static_in)
            torch.cuda.current_stream(static_in.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                layers, sizes = self._draw_packed(static_in)
                flat, layout = self._flatten(layers, sizes)
        else:
            flat, layout = self._flatten(layers, sizes)
        if len(self._graphs) >= 4:
            self._graphs.clear()
        self._graphs[len(packed)] = (static_in, graph, layers, sizes,
                                     tuple(self._ranges.values()), flat, layout)
        return self._graphs[len(packed)]

    def _layer(self, dst: torch.Tensor, layer: int, key, padded: bool = False):
        """One layer from the destinations ``dst`` (ids, the padding node ``num_nodes``
        after the real ones), its stream key ``key`` (int or 0-dim tensor). Returns padded
        buffers: ``src`` (padded with ``num_nodes``), ``edge_src``, ``edge_dst``,
        ``offsets``, and the 0-dim counts ``n_src`` (sources) and ``n_edges``; ``firsts``
        (running count of first appearances over the padding node, ``dst``, the picks).
        ``padded``: a :class:`PaddedBlock` of the picks instead (no edge list)."""
        info = self.table.index_select(0, dst)
        k = self._draws[layer]
        if k < 0:
            return self._every_neighbour(dst, info[:, 0], info[:, 1])
        eid, mask = self._picks(info, key, k)
        n_dst = len(dst)
        # the candidates, int64 like every piece (one copy kernel on CUDA; pieces of
        # mixed dtypes are copied one by one): padding node, dst, picks, padding node
        cand = torch.cat([self._pad, dst, self._neighbours(eid).view(-1), self._pad])
        out = self._relabel(cand, n_dst)
        if padded:          # a pick past a row's picks reads the end: row 0 instead
            keep = mask.bool()
            weights = keep.to(torch.float32) / keep.sum(1, keepdim=True).clamp_(min=1)
            return PaddedBlock(out["src"], out["local"].view(mask.shape).where(keep, 0),
                               weights, dst != self.num_nodes)
        kept = torch.cumsum(mask.view(-1), 0)       # kept[i]: kept picks up to i, inclusive
        slot = kept.view(mask.shape) * mask         # 0 past a row's picks: junk
        edge_src = torch.empty(kept.numel() + 1, dtype=torch.int64, device=dst.device)
        edge_src.index_put_((slot,), out.pop("local").view(mask.shape))
        edge_dst = torch.empty(kept.numel() + 1, dtype=torch.int64, device=dst.device)
        edge_dst.index_put_((slot,), self._iota(n_dst).unsqueeze(1))
        # each row's kept picks end where its last step's count stands
        offsets = torch.cat([self._zero, kept.view(mask.shape)[:, -1]])
        return {**out, "edge_src": edge_src[1:], "edge_dst": edge_dst[1:],
                "offsets": offsets, "n_edges": offsets[-1]}

    def _picks(self, info: torch.Tensor, key, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The CSR positions (D, k) of the picks of the destinations whose table rows are
        ``info``, past a row's picks the padding position (which holds the padding node),
        and the kept flags (bool, or 0/1 int64 from the fused kernel): one jiterator kernel
        (:func:`fused_draw`) where it was compiled and checked, else torch operators."""
        f = self._fanouts[k]
        lo, deg = info[:, :1], info[:, 1:2]
        if f.fused is not None:
            if not torch.is_tensor(key):
                key = torch.full((), key, dtype=torch.int64, device=info.device)
            note_launch("jiterator")
            return f.fused(info[:, 2:3], key, deg, lo, f.steps)
        x = srl64(mix64(mix64(info[:, 2] ^ key).unsqueeze(1) + f.words), 11)    # 53 bits
        if self.replace:    # the CPU kernel's int(u * deg), u = x * 2**-53: exact scaling
            pos = (x * (deg * self._inv53)).to(torch.int64)
        else:               # int(u * (top + 1)) as x * ((top + 1) * 2**-53): the same float
            r = (x * torch.add(f.scale, deg, alpha=_INV53)).to(torch.int64)
            top = deg + f.shift
            pos = torch.where(deg <= k, f.steps, floyd_resolve(r, top, f.tri, f.steps))
        mask = f.lim < deg                        # kept picks: a prefix of each row
        return torch.where(mask, lo + pos, self.adj.nnz), mask

    def _fuse(self, k: int):
        """:func:`fused_draw` for fanout ``k`` when it compiles and draws what
        :meth:`_picks`'s torch operators draw on a batch of degrees around ``k`` (none,
        ``k``, ``k + 1``, large) and random streams; else None."""
        fused = fused_draw(k, self.replace, self.adj.nnz, self.sample_device)
        if fused is None:
            return None
        gen = torch.Generator().manual_seed(k)
        deg = torch.cat([torch.tensor([0, 1, k - 1, k, k + 1, k + 2, 2 * k, 10**6, 2**40]),
                         torch.randint(0, 3 * k + 3, (503,), generator=gen)])
        info = torch.stack([torch.randint(0, 2**40, deg.shape, generator=gen), deg,
                            torch.randint(-2**63, 2**63 - 1, deg.shape, generator=gen)], 1)
        info = info.to(self.sample_device)
        f, self._fanouts[k].fused = self._fanouts[k], None
        key = torch.randint(-2**63, 2**63 - 1, (), generator=gen).to(self.sample_device)
        try:
            want = self._picks(info, key, k)
            got = fused(info[:, 2:3], key, info[:, 1:2], info[:, :1], f.steps)
            same = torch.equal(got[0], want[0]) and torch.equal(got[1].bool(), want[1])
        except RuntimeError:
            return None
        return fused if same else None

    def _every_neighbour(self, dst: torch.Tensor, lo: torch.Tensor, deg: torch.Tensor
                         ) -> dict:
        """A layer of fanout -1: every neighbour of ``dst``, after one host read of their
        number."""
        total = int(deg.sum())                        # host read: the layer's edge count
        rows = torch.repeat_interleave(self._iota(len(dst)), deg, output_size=total)
        offsets = torch.zeros(len(dst) + 1, dtype=torch.int64, device=dst.device)
        torch.cumsum(deg, 0, out=offsets[1:])
        eid = (lo - offsets[:-1])[rows] + self._iota(total)
        cand = torch.cat([self._pad, dst, self._neighbours(eid), self._pad])
        out = self._relabel(cand, len(dst))
        return {**out, "edge_src": out.pop("local"), "edge_dst": rows, "offsets": offsets,
                "n_edges": offsets[-1]}

    def _neighbours(self, eid: torch.Tensor) -> torch.Tensor:
        """The neighbour ids (int64) at the CSR positions ``eid`` (any shape), on the
        sampling device: one gather where the ids are read (device memory, or pinned host
        memory through UVA), or with ``csr="staged"`` the positions read on the host (a
        synchronisation), gathered there into a pinned staging buffer and copied to the
        device without blocking (two transfers); int32 ids are then widened (one more
        operator)."""
        if not self._staged:
            ids = self.indices.index_select(0, eid.view(-1))
        else:
            host = eid.view(-1).cpu()                                   # the read
            pin = self.sample_device.type == "cuda"
            staging = torch.empty(host.shape, dtype=self.indices.dtype, pin_memory=pin)
            torch.index_select(self.indices, 0, host, out=staging)
            ids = staging.to(self.sample_device, non_blocking=pin, copy=True)
        return ids.to(torch.int64).view(eid.shape)

    def _relabel(self, cand: torch.Tensor, n_dst: int) -> dict:
        """Block-local numbering of the candidates ``cand`` (int64: the padding node
        ``num_nodes``, the ``n_dst`` destinations, the picks, the padding node again) in the
        CPU relabel's order: first appearances, in order, the padding node left out.

        The first position ``p`` of every id comes from a scatter-min of ``p - 1`` into a
        dense map of the node ids; the leading padding node scatters -2, so that no padding
        entry is a first appearance. An entry whose map value is its own ``p - 1`` is a
        first appearance; a running count of those numbers the sources (``firsts``), and an
        entry's number is that count just before its first position (``firsts[map]``). The
        sources are the candidates at the first positions with counts 1, 2, ...: a binary
        search of the counts (past the last source, the trailing padding node)."""
        n, size = self.num_nodes, len(cand)
        pos = torch.int32 if size < 2**31 - 1 else torch.int64    # half the map
        first = torch.full((n + 1,), torch.iinfo(pos).max, dtype=pos, device=cand.device)
        first.scatter_reduce_(0, cand, self._kept(size, pos, lead=-2), "amin")
        at = first.index_select(0, cand)
        firsts = torch.cumsum(at == self._kept(size, pos, lead=-1), 0)
        cap = min(size - 2, n)
        src = cand.index_select(0, torch.searchsorted(firsts[:-1], self._iota(cap + 1)[1:]))
        return {"src": src, "firsts": firsts, "n_src": firsts[-1],
                "local": firsts[at[n_dst + 1:size - 1]]}     # padding: -2 reads the end

    def _block(self, o: dict, n_src: int, n_edges: int, n_dst: int, by_source: bool,
               full: bool) -> Block:
        """The exact block of a layer's padded buffers, with its edge groupings (by
        source when ``by_source``) and, for a ``full`` layer (every neighbour), its
        sources' graph degrees."""
        edge_src = o["edge_src"][:n_edges]
        src = o["src"][:n_src]
        block = Block(src, n_dst, edge_src, o["edge_dst"][:n_edges],
                      src_degree=self._degrees.index_select(0, src) if full else None)
        block.__dict__["dst_offsets"] = (o["offsets"][:n_dst + 1], None)
        if by_source:
            ordered, order = torch.sort(edge_src, stable=True)
            block.__dict__["src_offsets"] = (
                torch.searchsorted(ordered, self._iota(n_src + 1)), order)
        if self.sample_device != self.device:
            block = block.to(self.device, non_blocking=True)
        return block

    def __repr__(self) -> str:
        where = {"host": "pinned host", "device": str(self.device)}.get(
            self.csr, f"{self.csr} {self.device}")
        return (f"DeviceNeighborSampler(fanouts={self.fanouts}, replace={self.replace}, "
                f"nodes={self.num_nodes}, edges={self.adj.nnz}, csr={where} "
                f"{str(self.indices.dtype).removeprefix('torch.')})")
