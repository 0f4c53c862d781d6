"""Edge batches of an out-of-core run on the torch backend, moved to the device through a
ring of staging buffers allocated once per run, and kept on the device when they fit a
memory budget (:class:`DeviceBuckets`, used by :class:`~graphsys.bsp.stream.StreamEdges`).

Layout on the device: a record batch's int32 local source and destination offsets (and its
float32 weights only when the program reads weights), packed where the bucket's partitions
allow (:func:`packing`): the offsets' low :data:`PACK_LOW` bits share one int32 word
(``src << 16 | dst``), and where either partition has more than ``2**PACK_LOW`` vertices,
their higher bits follow in a side stream of one byte or two an edge (at most
:data:`HI_BITS`): 4, 5 or 6 bytes an edge instead of 8. On the device one kernel splits a
batch's words (:func:`fused_split`, on CUDA; torch operators elsewhere,
:func:`split_words`); ops there add the partition offsets and widen the ids to int64.

Mechanism (CUDA): a streamed batch is written once, when first read, into its region of a
page-locked host cache (at most :func:`host_cache_budget` bytes); every later read copies
it from there to one of :data:`RING` device buffers on a side stream, synchronised by
events with the compute that reads the buffer, so the copies of the next ``RING - 1``
batches overlap batch ``k``'s compute. Batches longer than :data:`BLOCK_ROWS` edges are
read as blocks (:func:`blocks`) to keep the bus busy on uneven buckets. A batch the host
cache has no room for goes through the ring's own page-locked staging buffers. On the CPU
the same code runs in the same order with host memory and no stream operations.

Residency: in the first superstep each batch, in the pass's order, is kept on the device
while the kept bytes stay within :func:`resident_budget`; later supersteps stream only the
others. When every batch of an all-active copy/sum pass (PageRank's) is kept, the pass is
merged once into one layout (:class:`MergedPass`): one sparse matrix-vector product a
superstep on CUDA. Any other pass of a builtin scalar program (BFS's, WCC's: its senders a
frontier) is merged in its first superstep when its batches and the merged edge list fit the
budget together (:class:`MergedFrontier`): a few ops a superstep over all its edges, none of
them a host synchronisation.

Whole layouts: :func:`device_adjacency` uploads the edge set's stored CSR/CSC index where it
has one (:func:`upload_words`: no sort), else every bucket once, sorting the edge list on
the device, into the CSR/CSC arrays the in-memory solvers read (the device BFS, PageRank's
lean matrix); on :data:`DEVICE_BUILDS` an out-of-core run builds them so, and skips the
supersteps above, where the build fits the budget (:func:`build_bytes`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from graphsys.device import csr_tensor, note_launch
from graphsys.errors import ParameterError
from graphsys.memory import available_memory
from graphsys.storage import pages
from graphsys.threads import available_cores

if TYPE_CHECKING:  # torch is imported where a batch moves: a CPU run never loads it
    import torch

#: Slots of the ring: the side stream may copy up to ``RING - 1`` blocks ahead of the one
#: being computed
RING = 4
#: The torch path reads a longer record batch as blocks of at most this many edges
#: (:func:`blocks`; 32 MiB unweighted): even copies, each long enough for the bus's rate,
#: that the ring keeps ahead of the compute, and one block's compute left after the last
#: copy of a pass
BLOCK_ROWS = 1 << 22
#: A packed batch's word holds its offsets' low bits, ``src << PACK_LOW | dst`` (each below
#: ``2**PACK_LOW``): 4 bytes an edge unweighted where both partitions are that small
PACK_LOW = 16
#: The offsets' higher bits (partitions past ``2**PACK_LOW`` vertices) travel in a side
#: stream of one byte an edge (8 bits or fewer) or two (at most this many); a bucket whose
#: partitions need more travels as two int32 offsets (0: no side stream)
HI_BITS = 16
#: The default budget on CUDA: this share of the device memory free when the run starts
RESIDENT_FRACTION = 0.5
#: The host cache of streamed batches may take this share of the host memory available
#: when the run starts (:func:`host_cache_budget`)
HOST_FRACTION = 0.25
#: Devices whose merged pass is one CSR matrix-vector product (cuSPARSE); elsewhere it is
#: one gather and one ``index_add_`` over all the kept edges, which sums every target in
#: the order the batches do (the CPU's CSR product, MKL's, does not), so a CPU run's ranks
#: are the same bit for bit whatever the budget
MERGED_SPMV_DEVICES = ("cuda",)
#: Devices where a packed batch's split is one kernel compiled at run time by torch's
#: jiterator (:func:`fused_split`); elsewhere, and where it does not compile or split a
#: check batch as they do, the torch operators of :func:`split_words`
FUSED_SPLIT_DEVICES = ("cuda",)
#: Devices where a streamed pass (PageRank's all-active one, a frontier program's that
#: recurs), once every batch it reads is on the device or in the host cache, is recorded as
#: one CUDA graph and replayed (:mod:`graphsys.bsp.recorded_pass`)
RECORDED_PASS_DEVICES = ("cuda",)
#: The fused split's source (:func:`fused_split`): per edge its word, and its side stream
#: entry widened to ``T`` (a two-byte entry arrives sign-extended from int16, hence the
#: mask), split into the source and target offsets as :func:`split_words` splits them
_SPLIT_CODE = """template <typename T> void gs_split_offsets(T word@SIDE_ARG@, T& src, T& dst) {
  const unsigned int w = (unsigned int) word;
  const unsigned int s = @SIDE@;
  src = (T) (((w >> @LOW@) & @MASK@u) | (@HS@ ? (s >> @HD@) << @LOW@ : 0u));
  dst = (T) ((w & @MASK@u) | ((s & ((1u << @HD@) - 1u)) << @LOW@));
}"""
#: The fused splits made so far, by (packing, :data:`PACK_LOW`, device): a kernel, or None
#: where it failed
_FUSED: dict[tuple, object] = {}
#: A batch of at least this many rows is written into host memory by several threads
PARALLEL_STAGE_ROWS = 1 << 18
#: The threads of those writes (made on first use, kept for the process)
_POOL: ThreadPoolExecutor | None = None
#: Largest index int32 ids hold
_INT32_MAX = 2**31 - 1
#: Devices where an in-memory layout (the device BFS's, PageRank's lean matrix) may be built
#: from the uploaded edge list by a sort there (:func:`device_adjacency`) rather than on the
#: host, and where an out-of-core run builds it so when it fits the budget
DEVICE_BUILDS = ("cuda",)
#: Device bytes an edge that building a layout with :func:`device_adjacency` may take at its
#: peak (the uploaded ids, a sort's keys and permutation, the kept ids, the matrix values)
DEVICE_BUILD_BYTES = 32
#: The same peak where the edge set stores its CSR and CSC indexes, uploaded rather than
#: sorted: the layouts' int32 out- and in-neighbour ids and the bottom-up matrix's float32
#: ones (:func:`device_adjacency`)
DEVICE_INDEX_BUILD_BYTES = 12


def blocks(batches: list, rows: int | None = None) -> list:
    """Record batches (:class:`~graphsys.storage.edges.EdgeBatch`) cut into consecutive
    blocks of at most ``rows`` edges (default :data:`BLOCK_ROWS`), in order: views of the
    same arrays, each block's ``start`` its first row in the bucket.

    Examples
    --------
    >>> import numpy as np
    >>> from graphsys.storage.edges import EdgeBatch
    >>> eb = EdgeBatch(0, 1, 10, np.arange(5, dtype=np.int32), np.zeros(5, np.int32),
    ...                None, None)
    >>> [(b.start, b.src.tolist()) for b in blocks([eb], rows=2)]
    [(10, [0, 1]), (12, [2, 3]), (14, [4])]
    """
    import dataclasses

    rows = BLOCK_ROWS if rows is None else rows
    out = []
    for eb in batches:
        if len(eb) <= rows:
            out.append(eb)
            continue
        for a in range(0, len(eb), rows):
            cut = slice(a, a + rows)
            out.append(dataclasses.replace(
                eb, start=eb.start + a, src=eb.src[cut], dst=eb.dst[cut],
                rel=None if eb.rel is None else eb.rel[cut],
                weight=None if eb.weight is None else eb.weight[cut],
                columns={k: v[cut] for k, v in eb.columns.items()}))
    return out


def host_buffer(n: int, pin: bool) -> torch.Tensor:
    """An int32 (n,) host buffer, page-locked when ``pin``: every host allocation of a run
    for its batches (the host cache, the ring's staging buffers) goes through here."""
    import torch

    return torch.empty(n, dtype=torch.int32, pin_memory=pin)


def host_cache_budget() -> int:
    """Bytes the host cache of a run may take: :data:`HOST_FRACTION` of the host memory
    available now (:func:`graphsys.memory.available_memory`)."""
    return int(available_memory() * HOST_FRACTION)


def packing(num_sources: int, num_targets: int) -> tuple[int, int] | None:
    """How a batch of a bucket whose partitions have ``num_sources`` and ``num_targets``
    vertices travels: ``(hs, hd)``, the higher bits of its source and target offsets past
    the word's :data:`PACK_LOW` each (``(0, 0)``: one word an edge; else a side stream of
    one byte an edge where ``hs + hd <= 8``, two where it is at most :data:`HI_BITS`), or
    None: two int32 offsets an edge.

    Examples
    --------
    >>> packing(1 << 16, 1000), packing(1 << 20, 1 << 20), packing(1 << 24, 1 << 20)
    ((0, 0), (4, 4), (8, 4))
    >>> packing(1 << 25, 1 << 25) is None
    True
    """
    hs = max(0, (int(num_sources) - 1).bit_length() - PACK_LOW)
    hd = max(0, (int(num_targets) - 1).bit_length() - PACK_LOW)
    return (hs, hd) if hs + hd <= HI_BITS else None


def _side_bytes(pack: tuple[int, int] | None) -> int:
    """Bytes an edge of the side stream of the higher bits (0, 1 or 2)."""
    if pack is None or pack == (0, 0):
        return 0
    return 1 if sum(pack) <= 8 else 2


def words(n: int, pack: tuple[int, int] | None, weights: bool) -> int:
    """int32 words a batch of ``n`` edges packed as ``pack`` (:func:`packing`) takes on
    the bus and on the device: its words (or offsets), its side stream rounded up to whole
    words, its weights."""
    if pack is None:
        return n * (2 + weights)
    return n * (1 + weights) + -(-n * _side_bytes(pack) // 4)


def split_words(word: torch.Tensor, side: torch.Tensor | None,
                pack: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """A packed batch's int32 source and target offsets (n,) from its words (int32 (n,))
    and its side stream (uint8 (n,), int16 (n,) for two bytes an edge, or None) packed as
    ``pack`` (:func:`packing`), in torch operators: each word's high and low
    :data:`PACK_LOW` bits, the side entry's higher bits shifted above them.

    Examples
    --------
    >>> import torch
    >>> word = torch.tensor([(5 << PACK_LOW) | 7], dtype=torch.int32)
    >>> side = torch.tensor([(1 << 4) | 2], dtype=torch.uint8)        # hs = hd = 4
    >>> [t.tolist() for t in split_words(word, side, (4, 4))]
    [[65541], [131079]]
    """
    import torch

    low, mask = PACK_LOW, (1 << PACK_LOW) - 1
    src, dst = (word >> low) & mask, word & mask
    if side is None:
        return src, dst
    two = side.dtype == torch.int16
    side = side.to(torch.int32)
    if two:  # int16 (torch's shifts want a signed type): the high bit's sign off
        side &= 0xFFFF
    hd = pack[1]
    if pack[0]:
        src |= (side >> hd) << low
    if hd:
        dst |= (side & ((1 << hd) - 1)) << low
    return src, dst


def split_code(pack: tuple[int, int]) -> str:
    """The fused split's source for ``pack`` (:data:`_SPLIT_CODE`): a function of the word
    and, where the batch has a side stream, its entry."""
    side = _side_bytes(pack) > 0
    return (_SPLIT_CODE.replace("@SIDE_ARG@", ", T side" if side else "")
            .replace("@SIDE@", "((unsigned int) side) & 0xFFFFu" if side else "0u")
            .replace("@LOW@", str(PACK_LOW)).replace("@MASK@", str((1 << PACK_LOW) - 1))
            .replace("@HS@", str(pack[0])).replace("@HD@", str(pack[1])))


def fused_split(pack: tuple[int, int], device: torch.device):
    """The split of batches packed as ``pack`` as one kernel on ``device`` (torch's
    jiterator, :func:`split_code`): a function of the words (and the side stream where
    there is one) returning the (source, target) int32 offsets, once it split a check
    batch (random words, side entries of every allowed value) as :func:`split_words` does;
    None off :data:`FUSED_SPLIT_DEVICES` or where it cannot be made or splits otherwise.
    Made once per packing, :data:`PACK_LOW` and device.

    Examples
    --------
    >>> import torch
    >>> fused_split((4, 4), torch.device("cpu")) is None       # jiterator is CUDA's
    True
    """
    if device.type not in FUSED_SPLIT_DEVICES:
        return None
    key = (pack, PACK_LOW, str(device))  # the source's parameters (:func:`split_code`)
    if key not in _FUSED:
        _FUSED[key] = _checked_split(pack, device)
    return _FUSED[key]


def _checked_split(pack: tuple[int, int], device: torch.device):
    """:func:`fused_split`'s kernel, compiled and checked; None where either fails."""
    import torch

    try:
        from torch.cuda.jiterator import _create_multi_output_jit_fn

        fn = _create_multi_output_jit_fn(split_code(pack), num_outputs=2)
    except (ImportError, RuntimeError):
        return None
    rng = np.random.default_rng(sum(pack))
    top = 1 << (pack[0] + pack[1])
    n = top + 4096
    word = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    word[:4] = 0, -1, -2**31, 2**31 - 1
    args = [torch.from_numpy(word)]
    size = _side_bytes(pack)
    if size:  # every allowed entry, then random ones; two bytes travel as an int16 view
        side = np.concatenate([np.arange(top), rng.integers(0, top, n - top)])
        side = side.astype(np.uint8) if size == 1 else side.astype(np.uint16).view(np.int16)
        args.append(torch.from_numpy(side))
    args = [t.to(device) for t in args]
    try:
        got = fn(*args)
        want = split_words(args[0], args[1] if size else None, pack)
        same = all(torch.equal(a, b) for a, b in zip(got, want))
    except (RuntimeError, AssertionError):  # torch's jiterator asserts where it cannot run
        return None
    return fn if same else None


def check_budget(budget) -> None:
    """ParameterError (one line) unless ``budget`` is None, an int >= 0 or a float in
    [0, 1] (see :func:`resident_budget`)."""
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not (
            budget >= 0) or (isinstance(budget, float) and budget > 1):
        raise ParameterError("device_budget", f"must be bytes (an int >= 0) or a share of "
                                              f"free device memory in [0, 1], got {budget!r}")


def resident_budget(device: torch.device, budget: int | float | None) -> int:
    """Bytes of edges a run may keep on ``device``: ``budget`` bytes (an int >= 0), or a
    float in [0, 1] as a share of the device memory free now (0 off CUDA); None: the
    default, :data:`RESIDENT_FRACTION` of the free memory on CUDA and 0 elsewhere (a CPU
    run keeps nothing: its batches are read from the mapped files)."""
    check_budget(budget)
    if budget is None:
        budget = RESIDENT_FRACTION if device.type == "cuda" else 0
    if isinstance(budget, float):
        if device.type != "cuda":
            return 0
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free * budget)
    return int(budget)


def _stage(view: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None,
           pack: tuple[int, int] | None) -> int:
    """Write a batch's columns into the int32 staging ``view`` straight from its (mapped)
    arrays: ``src``, ``dst`` (or, packed as ``pack``, the words and the side stream of
    :func:`~graphsys.bsp.kernels.pack_offsets`), then the weights; a long batch in row
    ranges on the staging threads (:func:`in_row_ranges`). Returns the int32 words
    written."""
    n = len(src)
    in_row_ranges(n, lambda a, b: _stage_rows(view, src, dst, weight, pack, a, b))
    return words(n, pack, weight is not None)


def in_row_ranges(n: int, write) -> None:
    """``write(a, b)`` over rows ``0:n``: in one call below :data:`PARALLEL_STAGE_ROWS` rows,
    else in :func:`stage_threads` row ranges on the staging threads (NumPy's copies and
    shifts release the GIL; one thread's copy out of the page cache is several times slower
    than the bus)."""
    threads = stage_threads() if n >= PARALLEL_STAGE_ROWS else 1
    if threads == 1:
        write(0, n)
        return
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(threads, thread_name_prefix="graphsys-stage")
    bounds = np.linspace(0, n, threads + 1).astype(np.int64)
    list(_POOL.map(lambda k: write(int(bounds[k]), int(bounds[k + 1])), range(threads)))


def stage_threads() -> int:
    """Threads that write one long batch: the CPUs this process may use, at most 8."""
    return max(1, min(8, available_cores()))


def _stage_rows(view: np.ndarray, src: np.ndarray, dst: np.ndarray,
                weight: np.ndarray | None, pack: tuple[int, int] | None, a: int,
                b: int) -> None:
    """Rows ``a:b`` of :func:`_stage`."""
    n = len(src)
    if pack is None:
        np.copyto(view[a:b], src[a:b], casting="no")
        np.copyto(view[n + a:n + b], dst[a:b], casting="no")
        at = 2 * n
    else:
        from graphsys.bsp.kernels import pack_offsets

        side = _side_view(view, n, pack)
        pack_offsets(src[a:b], dst[a:b], view[a:b].view(np.uint32), side[a:b],
                     PACK_LOW, pack[1])
        at = words(n, pack, False)
    if weight is not None:
        np.copyto(view[at + a:at + b].view(np.float32), weight[a:b], casting="same_kind")


def _side_view(view: np.ndarray, n: int, pack: tuple[int, int]) -> np.ndarray:
    """The side stream of a packed batch of ``n`` edges in its int32 region ``view``: uint8
    or uint16 (n,), or empty where the words hold the whole offsets."""
    size = _side_bytes(pack)
    if size == 0:
        return np.empty(0, np.uint8)
    return view[n:words(n, pack, False)].view(np.uint8 if size == 1 else np.uint16)[:n]


class _Slot:
    """One slot of the ring: on CUDA its device buffer and the events of its last copy and
    of the last compute that read it; its host staging buffer (pinned on CUDA) and NumPy
    view are made by :meth:`staging` the first time a batch the host cache does not hold
    passes through it."""

    def __init__(self, n: int, device: torch.device):
        import torch

        cuda = device.type == "cuda"
        self.n, self.cuda = n, cuda
        self.host: torch.Tensor | None = None
        self.view: np.ndarray | None = None
        self.device = torch.empty(n, dtype=torch.int32, device=device) if cuda else None
        self.copied = torch.cuda.Event() if cuda else None
        self.consumed = torch.cuda.Event() if cuda else None
        self.used = False

    def staging(self) -> bool:
        """Make the host staging buffer if it is not there yet; True when it was made."""
        if self.host is not None:
            return False
        self.host = host_buffer(self.n, self.cuda)
        self.view = self.host.numpy()
        return True


class DeviceBuckets:
    """Record batches on the device for one run; see the module docstring.

    Parameters
    ----------
    device : torch.device
        Where the compute runs.
    budget : int
        Bytes of batches that may stay on the device (:func:`resident_budget`).
    max_batch : int
        The longest batch the pass reads (edges): the ring's size.
    weights : bool
        Whether batches carry float32 weights (the program reads them).
    total : int, optional
        Edges of all the batches the run may read: the most the host cache holds.
    host_budget : int, optional
        Bytes the host cache may take (default :func:`host_cache_budget`; 0: none, every
        streamed batch is staged through the ring every superstep).
    fuse : bool, optional
        Whether a packed batch is split by :func:`fused_split`'s kernel where the device
        has one (default True: a run that reads its batches every superstep); False: by
        torch operators (a one-time upload, which the kernel's compilation would outlast).

    Attributes
    ----------
    resident_bytes : int
        Bytes of batches kept on the device.
    moved_bytes : int
        Bytes copied host -> device so far (streamed batches and first uploads).
    cached_bytes : int
        Bytes of streamed batches held in the host cache.
    staging_allocations : int
        Host buffers allocated (:func:`host_buffer` calls): one a run for the host cache,
        and :data:`RING` for the ring's staging buffers where a batch does not fit the
        cache (more only for a batch longer than the ring's buffers).
    """

    def __init__(self, device: torch.device, budget: int, max_batch: int, weights: bool,
                 total: int = 0, host_budget: int | None = None, fuse: bool = True):
        import torch

        self.device, self.budget, self.weights, self.fuse = device, budget, weights, fuse
        self.cols = 3 if weights else 2
        self.cuda = device.type == "cuda"
        self.side = torch.cuda.Stream(device) if self.cuda else None
        self.resident: dict[tuple, torch.Tensor] = {}
        #: batches seen once and not kept: streamed every superstep
        self.streamed: set[tuple] = set()
        self.resident_bytes = self.moved_bytes = self.staging_allocations = 0
        self.total_words = total * self.cols
        self.host_budget = host_cache_budget() if host_budget is None else host_budget
        #: the host cache: one buffer, a region (start, words) per cached batch
        self.cache: torch.Tensor | None = None
        self.cached: dict[tuple, tuple[int, int]] = {}
        self.cached_bytes = 0
        self.slots: list[_Slot] = []
        self._capacity = 0
        self._next = 0
        self._last: _Slot | None = None
        self._grow(max_batch)

    def _grow(self, max_batch: int) -> None:
        if max_batch <= self._capacity:
            return
        self.finish()
        self._capacity = max(max_batch, 2 * self._capacity)  # a longer batch: at least double
        self.slots = [_Slot(max(1, self._capacity * self.cols), self.device)
                      for _ in range(RING)]

    def fetch(self, key: tuple, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None,
              pack: tuple[int, int] | None = None
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The batch ``key`` (int32 ``src``, ``dst`` (n,), float32 ``weight`` (n,) or None)
        on the device, ready for the compute stream: (src int32, dst int32, weight float32
        or None), made from a device buffer of the ring (valid until the next :data:`RING` -
        1 fetches) or from the batch's resident copy. ``pack``: the bucket's
        :func:`packing`, as the batch travels and stays (its offsets within the bucket's
        partitions' sizes), split by the device."""
        import torch

        if key in self.resident:
            return self._split(self.resident[key], len(src), pack)
        n = len(src)
        if self._last is not None and self.cuda:  # the compute that read it is enqueued
            self._last.consumed.record(torch.cuda.current_stream(self.device))
        self._grow(n)
        slot = self.slots[self._next]
        self._next = (self._next + 1) % RING
        size = words(n, pack, weight is not None)
        keep = key not in self.streamed and self.resident_bytes + size * 4 <= self.budget
        host = None
        if not keep:
            self.streamed.add(key)
            host = self._cached(key, src, dst, weight, pack)
        if host is None:  # through the slot's staging buffer
            self.staging_allocations += slot.staging()
            if self.cuda and slot.used:
                slot.copied.synchronize()  # its previous copy has left the host buffer
            _stage(slot.view, src, dst, weight, pack)
            host = slot.host[:size]
        out = self._copy(slot, host)
        self.moved_bytes += size * 4
        if keep:
            out = out.clone() if self.cuda else out
            self.resident[key] = out
            self.resident_bytes += size * 4
        return self._split(out, n, pack)

    def reads_files(self, key: tuple) -> bool:
        """Whether :meth:`fetch` of ``key`` reads the batch's (mapped) arrays: neither kept
        on the device nor in the host cache."""
        return key not in self.resident and key not in self.cached

    def _copy(self, slot: _Slot, host: torch.Tensor) -> torch.Tensor:
        """``host`` (pinned on CUDA) copied into ``slot``'s device buffer on the side
        stream once the compute that last read that buffer (for a new buffer: all queued
        compute) is done; the compute stream waits for the copy. No host wait."""
        import torch

        if self.cuda:
            out = slot.device[:host.numel()]
            if slot.used:
                self.side.wait_event(slot.consumed)
            else:  # a new buffer may reuse memory the compute stream still reads
                self.side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self.side):
                out.copy_(host, non_blocking=True)
                slot.copied.record(self.side)
            torch.cuda.current_stream(self.device).wait_event(slot.copied)
        else:  # the copy a GPU run makes, addressed to the device (counted as one)
            out = host.to(self.device, copy=True)
        slot.used = True
        self._last = slot
        return out

    def _cached(self, key: tuple, src: np.ndarray, dst: np.ndarray,
                weight: np.ndarray | None, pack: tuple[int, int] | None
                ) -> torch.Tensor | None:
        """The host cache's region of a streamed batch, written from the mapped arrays the
        first time; None where the cache has no room for it (or there is none)."""
        if key in self.cached:
            start, size = self.cached[key]
            return self.cache[start:start + size]
        if self.cache is None:
            want = min(self.total_words, self.host_budget // 4)
            if self.cuda and want > 0:  # the pinned allocator rounds up to a power of two
                want = min(want, (1 << (self.host_budget.bit_length() - 1)) // 4)
            if want <= 0:
                return None
            self.cache = host_buffer(want, self.cuda)
            self._cache_view = self.cache.numpy()
            self.staging_allocations += 1
        start = self.cached_bytes // 4
        size = words(len(src), pack, weight is not None)
        if start + size > self.cache.numel():
            return None
        _stage(self._cache_view[start:start + size], src, dst, weight, pack)
        self.cached[key] = (start, size)
        self.cached_bytes += size * 4
        return self.cache[start:start + size]

    def _split(self, buf: torch.Tensor, n: int, pack: tuple[int, int] | None) -> tuple:
        import torch

        at = words(n, pack, False)
        w = buf[at:at + n].view(torch.float32) if self.weights else None
        if pack is None:
            return buf[:n], buf[n:2 * n], w
        size = _side_bytes(pack)
        args = [buf[:n]]
        if size:
            args.append(buf[n:at].view(torch.uint8 if size == 1 else torch.int16)[:n])
        fused = fused_split(pack, buf.device) if self.fuse else None
        if fused is None:
            src, dst = split_words(args[0], args[1] if size else None, pack)
            return src, dst, w
        note_launch("jiterator")
        src, dst = fused(*args)
        return src, dst, w

    def finish(self) -> None:
        """Wait for the copies in flight (before the buffers are dropped or replaced)."""
        if self.cuda and self.side is not None:
            self.side.synchronize()

    def forget_ring(self) -> None:
        """Forget the ring's events: the next copy into each slot waits for all the work
        queued on the compute stream before it, not only for the last compute that read
        the slot. After a replay of a recorded pass (:mod:`graphsys.bsp.recorded_pass`),
        whose copies into the same slots the events do not see."""
        for slot in self.slots:
            slot.used = False
        self._last = None

    def fresh_ring(self) -> None:
        """:meth:`finish` and :meth:`forget_ring`: a recording of the pass begins and ends
        with it (a capture's copies wait only on events recorded within it)."""
        self.finish()
        self.forget_ring()



class MergedPass:
    """An all-active copy/sum pass (every vertex sends its value, summed per target) over
    kept batches, merged once into one layout on the device: the pass's sums are then one
    op (:meth:`sums`).

    On a device of :data:`MERGED_SPMV_DEVICES`: a CSR matrix of ones as
    :func:`~graphsys.bsp.algorithms.pagerank_device.lean_matrix` builds it (no dangling
    row); the sums are one matrix-vector product. Elsewhere: the pass's source and target
    ids concatenated in its order; the sums are one gather and one ``index_add_``.

    Parameters
    ----------
    edges : list of (torch.Tensor, torch.Tensor, ...)
        Each batch's (source offset into ``x``, global target id) on the device, in the
        pass's order (int32 or int64); anything after them (a weight) is not read.
    num_sources, num_targets : int
        Length of ``x`` and of the sums.

    Attributes
    ----------
    nbytes : int
        Bytes of the layout on the device.
    """

    def __init__(self, edges: list, num_sources: int, num_targets: int):
        import torch

        src = torch.cat([e[0] for e in edges])
        dst = torch.cat([e[1] for e in edges])
        self.num_targets = num_targets
        ids = (torch.int32 if max(len(src), num_sources, num_targets) <= _INT32_MAX
               else torch.int64)
        self.spmv = src.device.type in MERGED_SPMV_DEVICES
        if self.spmv:
            targets, order = torch.sort(dst, stable=True)
            crow = torch._convert_indices_from_coo_to_csr(
                targets, num_targets, out_int32=ids == torch.int32)
            values = torch.ones(len(src), dtype=torch.float64, device=src.device)
            self.mat = csr_tensor(crow, src[order].to(ids), values, (num_targets, num_sources))
            self.nbytes = (crow.numel() + len(src)) * crow.element_size() + values.nbytes
        else:
            self.src, self.dst = src.to(ids), dst.to(ids)
            self.nbytes = self.src.nbytes + self.dst.nbytes

    def sums(self, x: torch.Tensor) -> torch.Tensor:
        """float64 (num_targets,): every target's sum of its sources' ``x``."""
        import torch

        if self.spmv:
            return torch.mv(self.mat, x)
        acc = torch.zeros(self.num_targets, dtype=torch.float64, device=x.device)
        return acc.index_add_(0, self.dst, x.index_select(0, self.src))


class MergedFrontier:
    """The kept batches of any other pass of a builtin scalar program (BFS's, SSSP's,
    WCC's: its senders may be a frontier) merged once into one edge list on the device, so
    that a superstep's edge phase is a few ops over all of the pass's edges with no host
    synchronisation (:meth:`~graphsys.bsp.stream.StreamEdges.run` applies them): a gather
    of the sources' values, the messages, one scatter-reduce into the targets and one
    index fill of those that receive. With a frontier, an edge whose source is off it is
    sent to a spare target, :math:`N` (``num_targets``), then dropped: no compaction, whose
    output size a GPU reads on the host, and each target still combines its messages in
    the pass's order (the batch-by-batch pass's answer, bit for bit on the CPU).

    Parameters
    ----------
    edges : list of (torch.Tensor, torch.Tensor, torch.Tensor or None)
        Each batch's (source offset into ``x``, global target id, float32 weight or None)
        on the device, in the pass's order.
    num_sources, num_targets : int
        Length of ``x`` and of the combined messages.

    Attributes
    ----------
    src : torch.Tensor
        int32 (int64 past ``2**31`` sources) (E,) offsets into ``x``.
    dst : torch.Tensor
        int64 (E,) target ids (the scatter's index dtype).
    weight : torch.Tensor or None
        float32 (E,) weights, where the program reads them.
    nbytes : int
        Bytes of the layout on the device.

    Examples
    --------
    >>> import torch
    >>> m = MergedFrontier([(torch.tensor([0, 1]), torch.tensor([1, 2]), None),
    ...                     (torch.tensor([2]), torch.tensor([0]), None)], 3, 3)
    >>> m.src.tolist(), m.dst.tolist(), m.nbytes
    ([0, 1, 2], [1, 2, 0], 36)
    """

    def __init__(self, edges: list, num_sources: int, num_targets: int):
        import torch

        ids = torch.int32 if num_sources <= _INT32_MAX else torch.int64
        self.src = torch.cat([s.to(ids) for s, _, _ in edges])
        self.dst = torch.cat([d.to(torch.int64) for _, d, _ in edges])
        self.weight = (torch.cat([w for _, _, w in edges]) if edges and edges[0][2] is not None
                       else None)
        self.num_targets = num_targets
        self.nbytes = sum(t.nbytes for t in (self.src, self.dst, self.weight)
                          if t is not None)

    @staticmethod
    def bytes_for(edges: int, num_sources: int, weights: bool) -> int:
        """Bytes of the layout of ``edges`` edges (see the attributes)."""
        return edges * ((4 if num_sources <= _INT32_MAX else 8) + 8 + 4 * weights)


def stored_index(graph, edge_set: str, kinds: tuple[str, ...]) -> tuple[list, bool] | None:
    """The mapped ``kinds`` indexes of a stored edge set with int32 ids (the arrays of
    :func:`build_adjacency`'s order), and whether their arrays are views of the local
    files (not read into memory: a remote graph's, or one renumbered after an append),
    whose pages may be released; None where one is missing or the edge set is a view (its
    index is merged in memory)."""
    from graphsys.storage.csr import index_state

    es = graph.edge_set(edge_set)
    if es.members or any(graph.index_offsets(es.name, k) is None for k in kinds):
        return None
    mapped = [graph.adjacency_index(es.name, k) for k in kinds]
    if any(m is None or m.indices.dtype != np.int32 for m in mapped):
        return None
    in_files = graph.location.local and all(
        index_state(graph.manifest, es.name, k) == "current" for k in kinds)
    return mapped, in_files


def build_bytes(graph, edge_set: str) -> int:
    """Device bytes an edge that :func:`device_adjacency` takes at its peak:
    :data:`DEVICE_INDEX_BUILD_BYTES` where the edge set stores its CSR and CSC indexes,
    else :data:`DEVICE_BUILD_BYTES` (the sort)."""
    es = graph.edge_set(edge_set)
    indexed = not es.members and all(graph.index_offsets(es.name, k) is not None
                                     for k in ("csr", "csc"))
    return DEVICE_INDEX_BUILD_BYTES if indexed else DEVICE_BUILD_BYTES


def device_adjacency(graph, edge_set: str, device: torch.device, kinds: tuple[str, ...],
                     release: bool = False
                     ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], int]:
    """The ``kinds`` (``csr``, ``csc``) adjacency as :func:`build_adjacency` orders it (row
    offsets and neighbour ids, int32) built on ``device``: where the edge set stores those
    indexes (:func:`stored_index`), their arrays uploaded as they are (:func:`upload_words`);
    else every bucket's edges uploaded once, in row-major bucket order, as int32 global ids
    (:func:`upload_edges`), then a stable sort by the row id (source for ``csr``, target
    for ``csc``) keeps each row's neighbours in bucket and stored order; the offsets are a
    sorted search of the sorted rows. Needs fewer than ``2**31`` nodes and edges.
    ``release`` (an out-of-core run): each batch's (or index block's) pages leave the
    resident set once it is staged. Returns the pairs and the bytes copied to the device."""
    import torch

    n = graph.num_nodes()
    stored = stored_index(graph, edge_set, kinds)
    if stored is not None:
        mapped, in_files = stored
        release = release and in_files  # advice on heap memory would drop its contents
        adj = [(upload_words(m.indptr, device, release), upload_words(m.indices, device,
                                                                      release))
               for m in mapped]
        return adj, sum(4 * (len(m.indptr) + len(m.indices)) for m in mapped)
    src, dst, moved = upload_edges(graph, edge_set, device, release)
    rows = torch.arange(n + 1, dtype=torch.int32, device=device)
    adj = []
    for kind in kinds:
        keys, other = (src, dst) if kind == "csr" else (dst, src)
        keys, order = torch.sort(keys, stable=True)
        idx = other[order]
        del order
        adj.append((torch.searchsorted(keys, rows).to(torch.int32), idx))
    return adj, moved


def upload_words(arr: np.ndarray, device: torch.device, release: bool = False
                 ) -> torch.Tensor:
    """``arr`` (int32, or int64 whose values int32 holds: an index's offsets) as an int32
    tensor on ``device``, in blocks of :data:`BLOCK_ROWS` through two staging buffers
    (page-locked on CUDA), each block written into one in row ranges
    (:func:`in_row_ranges`) while the block before crosses the bus on a side stream; on
    the CPU the same blocks are copied in turn. ``release``: a block's pages leave the
    resident set once staged (``arr`` must then be a view of a file mapping: advice on heap
    memory drops its contents).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.bsp.device_stream import upload_words
    >>> upload_words(np.array([0, 2, 5], np.int64), torch.device("cpu")).tolist()
    [0, 2, 5]
    """
    import torch

    n = len(arr)
    out = torch.empty(n, dtype=torch.int32, device=device)
    if n == 0:
        return out
    cuda = device.type == "cuda"
    rows = min(n, BLOCK_ROWS)
    bufs = [host_buffer(rows, cuda) for _ in range(1 if n <= rows else 2)]
    copied: list = [None] * len(bufs)
    side = torch.cuda.Stream(device) if cuda else None
    if cuda:  # ``out`` may reuse memory the current stream's queued work still reads
        side.wait_stream(torch.cuda.current_stream(device))
    for k, a in enumerate(range(0, n, rows)):
        b, s = min(n, a + rows), k % len(bufs)
        if copied[s] is not None:
            copied[s].synchronize()  # the buffer's last block has crossed
        _stage_block(bufs[s].numpy()[:b - a], arr[a:b])
        if release:
            pages.release(pages.extent(arr[a:b]), arr[a:b])
        if cuda:
            with torch.cuda.stream(side):
                out[a:b].copy_(bufs[s][:b - a], non_blocking=True)
                copied[s] = torch.cuda.Event()
                copied[s].record(side)
        else:
            out[a:b].copy_(bufs[s][:b - a])
    if cuda:
        torch.cuda.current_stream(device).wait_stream(side)
        for event in copied:  # the staging buffers outlive their copies
            event.synchronize()
    return out


def _stage_block(view: np.ndarray, arr: np.ndarray) -> None:
    """``arr`` written into the int32 ``view`` (:func:`in_row_ranges`)."""
    in_row_ranges(len(arr), lambda a, b: np.copyto(view[a:b], arr[a:b], casting="unsafe"))


def upload_edges(graph, edge_set: str, device: torch.device, release: bool = False
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Every edge of ``edge_set`` on ``device`` as int32 global (source, target) ids (E,),
    in row-major bucket order, and the bytes copied: the batches, as :func:`blocks`, pass
    through the staging ring of a :class:`DeviceBuckets` that keeps nothing (no budget, no
    host cache, split by torch operators: read once), so a long batch is written into
    page-locked memory by several threads while the block before it crosses the bus on the
    side stream; a bucket travels packed where its partitions allow (:func:`packing`: 4 to
    6 bytes an edge). The partition
    offsets are added on the device as each block is copied out of the ring. ``release``:
    a block's pages leave the resident set once staged (the host keeps no more of the edge
    files than a batch). Needs fewer than ``2**31`` nodes and edges."""
    import torch

    m = graph.num_edges(edge_set)
    offsets = np.asarray(graph.partition_offsets(), np.int64)
    sizes = np.diff(offsets)
    src = torch.empty(m, dtype=torch.int32, device=device)
    dst = torch.empty(m, dtype=torch.int32, device=device)
    ring: DeviceBuckets | None = None
    at = 0
    for b in graph.buckets("row-major", graph.edge_set(edge_set).name):
        pack = packing(sizes[b.i], sizes[b.j])
        for eb in blocks(list(b.batches())):  # checked against the partitions' sizes
            k = len(eb)
            if ring is None:
                ring = DeviceBuckets(device, 0, min(m, BLOCK_ROWS), False, host_budget=0,
                                     fuse=False)
            s, d, _ = ring.fetch((b.i, b.j, eb.start), eb.src, eb.dst, None, pack)
            torch.add(s, int(offsets[b.i]), out=src[at:at + k])
            torch.add(d, int(offsets[b.j]), out=dst[at:at + k])
            if release:  # staged: the pages have been read
                pages.release(b.mapped_region, eb.src, eb.dst)
            at += k
    if ring is None:
        return src, dst, 0
    ring.finish()
    return src, dst, ring.moved_bytes
