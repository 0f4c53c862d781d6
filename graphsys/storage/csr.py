"""CSR / CSC reads: a graph's adjacency over global node ids, built in RAM from the buckets
or mapped from the stored indexes.

:func:`build_rows` is the one in-RAM build of the out- (or in-) neighbour rows, every
engine's and view's: sized first and refused in one line over the budget
(:func:`check_build`, the one refusal of every build in RAM), then each bucket read once.
:func:`map_index` maps a stored index (:mod:`graphsys.storage.adjacency_index`), checked
against the manifest (stale ones refused) and its values in range; :func:`map_offsets` maps
only a ``csr``/``csc`` index's row offsets (the degrees) in O(N). Each is mapped and checked
once per :class:`~graphsys.storage.graph.Graph` (:func:`mapped_index`,
:func:`mapped_offsets`), whose CSR methods are thin calls into this module.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass, replace

import numba
import numpy as np

from graphsys.errors import FormatError, GraphsysError
from graphsys.memory import budget
from graphsys.storage import edge_changes, index_merge, kernels, pages
from graphsys.storage.column_file import map_column
from graphsys.storage.edges import bucket_pairs, rel_bases
from graphsys.storage.format import (
    PUSH_STEP_DTYPE,
    IndexInfo,
    Manifest,
    bucket_file,
    index_file,
)
from graphsys.storage.push_layout import PUSH_STEP_MAX, layout_problem
from graphsys.storage.time_view import TimeView
from graphsys.units import format_size

#: Entries per slice of a mapped column read in one go by a checking or counting pass
#: (:func:`chunks`): 64 MiB of int32
CHECK_CHUNK = 1 << 24


@dataclass
class CSR:
    """Compressed sparse rows over global node ids, from :meth:`Graph.csr` / :meth:`Graph.csc`.

    Row ``v``'s neighbours are ``indices[indptr[v]:indptr[v + 1]]``, ascending.

    Attributes
    ----------
    indptr : numpy.ndarray
        int64 (N+1,) row offsets.
    indices : numpy.ndarray
        int32 (E,) neighbours, int64 from 2**31 nodes (when mapped from a stored adjacency
        index every array is a read-only view of page cache).
    weight : numpy.ndarray or None
        float32 (E,) edge weights, or None.
    edge_ids : numpy.ndarray or None
        int64 (E,) position of each entry in the bucket stream (row-major bucket order),
        present only when asked for.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> g = graphsys.from_numpy([10, 10, 20, 30, 40], [20, 30, 30, 40, 10],
    ...                         tempfile.mkdtemp() + "/g", partitions=2)
    >>> c = g.csr()
    >>> c.num_nodes, c.indptr.tolist(), c.indices.tolist()
    (4, [0, 1, 3, 4, 5], [2, 0, 2, 3, 1])
    >>> c.to_scipy().shape
    (4, 4)
    """

    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray | None = None
    edge_ids: np.ndarray | None = None

    @property
    def num_nodes(self) -> int:
        """Number of rows ``N``."""
        return len(self.indptr) - 1

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return sum(a.nbytes for a in (self.indptr, self.indices, self.weight, self.edge_ids)
                   if a is not None)

    def to_scipy(self):
        """The rows as a ``scipy.sparse.csr_matrix`` (N, N): entries are the weights, or 1.

        A matrix of a mapped index gets copies of its read-only arrays: scipy changes a
        matrix's arrays in place, even to sum it (merging parallel edges)."""
        import scipy.sparse as sp

        data = self.weight if self.weight is not None else np.ones(len(self.indices), np.float32)
        n = self.num_nodes
        arrays = (data, self.indices, self.indptr)
        return sp.csr_matrix(arrays, shape=(n, n),
                             copy=not all(a.flags.writeable for a in arrays))


@dataclass(frozen=True)
class MappedIndex:
    """One adjacency index mapped read-only: ``indptr`` int64 (N+1,), ``indices`` int32 or
    int64 (M,), ``weight`` float32 (M,) or None; views of the mapped files (page cache)."""

    info: IndexInfo
    indptr: np.ndarray
    indices: np.ndarray
    weight: np.ndarray | None


@dataclass(frozen=True)
class MappedPush:
    """A ``push`` index mapped read-only and checked (:func:`map_index`): the arrays of
    :mod:`graphsys.storage.push_layout` as views of the mapped files, ``heavy``, and
    ``receivers`` (targets with at least one in-edge, counted by the check)."""

    info: IndexInfo
    order: np.ndarray
    bounds: np.ndarray
    edge_ptr: np.ndarray
    step: np.ndarray
    dst: np.ndarray
    runs: np.ndarray
    heavy: int
    receivers: int

    def layout(self) -> tuple:
        """``(bounds, edge_ptr, step, dst, runs, heavy)``: the push step's layout arguments."""
        return self.bounds, self.edge_ptr, self.step, self.dst, self.runs, self.heavy


def edges_digest(manifest: Manifest, edge_set: str) -> str:
    """sha256 over the (path, sha256) of every bucket file of ``edge_set``: what an index
    was built from."""
    es = manifest.edge_sets[edge_set]
    h = hashlib.sha256()
    for (i, j) in sorted(es.buckets):
        rel = bucket_file(edge_set, i, j)
        h.update(f"{rel}:{manifest.files.get(rel, {}).get('sha256', '')}\n".encode())
    return h.hexdigest()


@numba.njit(cache=True, nogil=True)
def _unsorted_row(indptr, indices):
    """0 if every row of the CSR ascends strictly (sorted, no repeated neighbour); else the
    first bad row + 1."""
    for r in range(indptr.shape[0] - 1):
        for k in range(indptr[r] + 1, indptr[r + 1]):
            if indices[k] <= indices[k - 1]:
                return r + 1
    return 0


@numba.njit(cache=True, nogil=True)
def _indptr_problem(indptr, num_edges):
    """0 if ``indptr`` starts at 0, never decreases and ends at ``num_edges``; else the
    first bad position + 1."""
    if indptr.shape[0] == 0 or indptr[0] != 0:
        return 1
    for k in range(1, indptr.shape[0]):
        if indptr[k] < indptr[k - 1]:
            return k + 1
    if indptr[indptr.shape[0] - 1] != num_edges:
        return indptr.shape[0]
    return 0


@numba.njit(cache=True, nogil=True, parallel=True)
def _out_of_range(indices, n):
    """Number of entries outside ``[0, n)``."""
    bad = 0
    for k in numba.prange(indices.shape[0]):
        v = indices[k]
        if v < 0 or v >= n:
            bad += 1
    return bad


def index_state(manifest: Manifest, edge_set: str, kind: str) -> str:
    """Whether the ``kind`` index of the stored ``edge_set`` is ``current`` (built over its
    edges in the graph's numbering), ``grown`` (built over its edges before an append grew
    the partitions: read renumbered, :mod:`graphsys.storage.index_merge`, but for a
    ``push`` index, which is then not read), ``stale`` (built over other edges),
    ``outdated`` (a ``push`` index in the layout before format version 7: not read, built
    again), or ``missing``."""
    info = manifest.indexes.get(edge_set, {}).get(kind)
    if info is None:
        return "missing"
    if kind == "push" and info.index_dtype != PUSH_STEP_DTYPE:
        return "outdated"
    es = manifest.edge_sets[edge_set]
    if info.edges_digest != edges_digest(manifest, edge_set) or (
            kind == "temporal" and es.undirected and info.num_edges != es.num_edges):
        return "stale"  # (the latter: built with each undirected edge twice in a row)
    now = index_merge.layout(manifest)
    if not info.layout or tuple(info.layout) == now:
        return "current" if info.num_nodes == sum(now) else "stale"
    return "grown" if index_merge.grown_from(info.layout, now) else "stale"


_KIND_OPTIONS = {"csr": "--csr", "csc": "--csc", "push": "--push", "sym": "--undirected",
                 "temporal": "--temporal"}


def build_command(graph, kinds: tuple[str, ...], edge_set: str | None = None) -> str:
    """The command line that builds the ``kinds`` indexes of an edge set of ``graph``.

    What a refusal to build an adjacency in RAM, or to read a stale index, names; the
    Python equivalent is
    :func:`~graphsys.storage.adjacency_index.build_index` with the same ``kinds``.

    Parameters
    ----------
    graph : Graph
        An opened graph.
    kinds : tuple of str
        Index kinds among ``csr``, ``csc``, ``push``, ``sym``, ``temporal``.
    edge_set : str, optional
        The edge set; named in the command only when the graph has several.

    Returns
    -------
    str
        ``graphsys index DIR`` and the options that select ``kinds``, quoted for a POSIX
        shell (a path with a space runs as it reads).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> build_command(g, ("sym",)).endswith("/g --undirected")
    True
    """
    parts = ["graphsys index", shlex.quote(str(graph.location))] + [
        _KIND_OPTIONS[k] for k in kinds]
    if edge_set is not None and len(graph.edge_sets) > 1:
        parts += ["--edge-set", shlex.quote(graph.edge_set(edge_set).name)]
    return " ".join(parts)


def time_view_note(view: TimeView) -> str:
    """Why a time view maps no index, and the way to one: a stored index holds every edge,
    also those after the view's time."""
    return (f"ingest the view as a graph of its own and index it (a view "
            f"{view.window} maps none of the indexes of {view.path}: they hold the edges "
            f"stamped later too)")


def check_build(graph, edge_set: str | None, what: str, need: int, memory_limit,
                kinds: tuple[str, ...] | None = None, then: str = "",
                instead: str = "raise memory_limit or use a machine with more RAM") -> int:
    """The budget of ``memory_limit`` (:func:`budget`), refusing in one line a build of
    ``need`` bytes over it.

    Parameters
    ----------
    graph : Graph
        The opened graph.
    edge_set : str or None
        The edge set.
    what : str
        What would be built, as the message names it.
    need : int
        Its size in bytes.
    memory_limit : int or None
        The budget in bytes; None: the RAM available now.
    kinds : tuple of str, optional
        The stored indexes that would be mapped instead (None: none can).
    then : str, default ""
        What else those indexes allow, for the message.
    instead : str, optional
        The way out where no index serves (``kinds`` None): by default, raise
        ``memory_limit`` or use a machine with more RAM.

    Returns
    -------
    int
        The budget in bytes.

    Raises
    ------
    GraphsysError
        ``need`` exceeds the budget: one line naming both sizes and the way out (the
        ``graphsys index`` command that builds ``kinds``).

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), tempfile.mkdtemp() + "/g")
    >>> try:
    ...     check_build(g, None, "the symmetric adjacency", 10**9, 10**6, ("sym",))
    ... except GraphsysError as exc:
    ...     print(str(exc).replace(str(g.path), "G"))
    building the symmetric adjacency in RAM needs about 1 GB, more than the 1 MB of
    memory_limit; build its index on disk once and it is mapped instead: graphsys index G
    --undirected
    """
    limit = budget(memory_limit)
    if need <= limit:
        return limit
    if isinstance(graph, TimeView):
        fix = f"raise memory_limit, or {time_view_note(graph)}"
    elif kinds:
        its = "its index" if len(kinds) == 1 else "their indexes"
        fix = (f"build {its} on disk once and {'it is' if len(kinds) == 1 else 'they are'} "
               f"mapped instead{then}: "
               f"{build_command(graph, kinds, edge_set)}")
    else:
        fix = f"no stored index can serve it: {instead}"
    raise GraphsysError(f"building {what} in RAM needs about {format_size(need)}, more than "
                        f"the {format_size(limit)} of "
                        f"{'memory_limit' if memory_limit is not None else 'available RAM'}; "
                        f"{fix}")


def _current(graph, edge_set: str, kind: str) -> IndexInfo | None:
    """The manifest's entry of the ``kind`` index of ``edge_set`` (None if it lists none,
    or for a ``push`` index built before an append, which is not renumbered), refused as
    stale when it was built for other edges."""
    info = graph.manifest.indexes.get(edge_set, {}).get(kind)
    if info is None:
        return None
    es = graph.edge_set(edge_set)
    state = index_state(graph.manifest, edge_set, kind)
    if kind == "push" and state == "grown":
        return None  # built before an append: the push step then builds its own layout
    if state == "outdated":
        return None  # PageRank says so (adjacency_index.warn_outdated_push) and rebuilds it
    if kind == "temporal" and state == "grown":
        state = "stale"  # a temporal index is not read renumbered: built again after an append
    # a sym (temporal) index holds each stored edge at most twice (once per direction) after dedupe
    entries_ok = (info.num_edges <= 2 * es.num_edges if kind in ("sym", "temporal")
                  else info.num_edges == es.num_edges)
    if state == "stale" or not entries_ok:
        first = graph.location.file(index_file(edge_set, kind, info.columns()[0]))
        raise FormatError(f"{first}: stale index (built for other edges; build it again: "
                          f"{build_command(graph, (kind,), edge_set)})")
    return info


def _offsets(graph, edge_set: str, kind: str, info: IndexInfo) -> np.ndarray:
    """The mapped ``indptr`` of a CSR/CSC index, checked (O(N))."""
    rel = index_file(edge_set, kind, "indptr")
    loc = graph.location
    indptr = map_column(loc.file(rel), np.dtype(np.int64), info.num_nodes + 1,
                        what="index column", location=loc, rel=rel)
    bad = _indptr_problem(indptr, info.num_edges)
    if bad:
        raise FormatError(f"{loc.file(rel)}: offsets corrupted at entry {bad - 1}")
    return indptr


def map_offsets(graph, edge_set: str, kind: str) -> np.ndarray | None:
    """Only the row offsets (int64 (N+1,)) of the ``csr``/``csc`` index of ``edge_set``,
    mapped and checked in O(N) (not the neighbour ids): what the degrees need. None if the
    manifest lists no such index; stale or corrupted offsets raise :class:`FormatError`."""
    info = _current(graph, edge_set, kind)
    return None if info is None else _offsets(graph, edge_set, kind, info)


def map_index(graph, edge_set: str, kind: str, *, check_values: bool = True,
              renumber: bool = True) -> MappedIndex | MappedPush | None:
    """Map the ``kind`` index of ``edge_set`` if the manifest lists one (else None), after
    checking that it matches the current edges (digest, counts) and that its offsets and
    ids are in range (``check_values``: O(N + M) reads of page cache; always for a push
    index, whose check also counts its receivers, and for an index renumbered); a stale,
    truncated or corrupted index raises :class:`FormatError` naming its file. Unchecked,
    the offsets and ids are as read: the caller checks what it uses (:func:`map_offsets`,
    and each id it reads). An index built before an append is renumbered into the grown
    partitions, unless ``renumber`` is False: then it is returned as built, in the
    numbering its ``info.layout`` records (a reader that translates the ids it touches, as
    :mod:`graphsys.kernels.repair` does)."""
    info = _current(graph, edge_set, kind)
    if info is None:
        return None
    loc = graph.location
    n, m = info.num_nodes, info.num_edges

    def column(name: str, dtype: np.dtype, length: int) -> np.ndarray:
        rel = index_file(edge_set, kind, name)
        return map_column(loc.file(rel), dtype, length, what="index column", location=loc,
                          rel=rel)

    if kind == "push":
        nb, heavy = info.num_blocks, info.heavy
        edge_ptr = column("edge_ptr", np.dtype(np.int64), nb + 1)
        # the slots: the edges and the padding between sources more than a step apart
        # (at most one per PUSH_STEP_MAX vertices per block)
        slots = int(edge_ptr[nb])
        if not m <= slots <= m + nb * (n // PUSH_STEP_MAX + 1):
            raise FormatError(f"{loc.file(index_file(edge_set, kind, 'edge_ptr'))}: push "
                              f"index edge_ptr out of range (corrupted)")
        arrays = [column("order", np.dtype(np.int64), n),
                  column("bounds", np.dtype(np.int64), nb + 1), edge_ptr,
                  column("step", np.dtype(np.uint8), slots),
                  column("dst", np.dtype(np.uint16), slots),
                  column("runs", np.dtype(np.int64), nb * (heavy + 1))]
        bad, receivers = layout_problem(*arrays, heavy)
        if bad:
            name = ("order", "bounds", "edge_ptr", "runs", "step", "dst")[bad - 1]
            raise FormatError(f"{loc.file(index_file(edge_set, kind, name))}: push index "
                              f"{name} out of range (corrupted)")
        return MappedPush(info, *arrays, heavy, int(receivers))

    # an index built before an append is read whole to renumber it: checked first
    grown = bool(info.layout) and tuple(info.layout) != index_merge.layout(graph.manifest)
    check_values = check_values or grown and renumber
    indptr = (_offsets(graph, edge_set, kind, info) if check_values
              else column("indptr", np.dtype(np.int64), n + 1))
    ipath = loc.file(index_file(edge_set, kind, "indices"))
    indices = column("indices", np.dtype(info.index_dtype), m)
    weight = column("weight", np.dtype(np.float32), m) if info.weighted else None
    if check_values:
        if loc.local:  # read: the pages stay in the page cache, not in the resident set
            pages.release(pages.extent(indptr), indptr)
        for part in chunks(indices):
            if _out_of_range(part, n):
                raise FormatError(f"{ipath}: neighbour id out of range [0, {n}) (corrupted)")
            if loc.local:
                pages.release(pages.extent(part), part)
        bad_row = _unsorted_row(indptr, indices) if kind == "sym" else 0
        if kind == "sym" and loc.local:  # the sortedness pass read both columns whole
            pages.release(pages.extent(indptr), indptr)
            pages.release(pages.extent(indices), indices)
        if bad_row:
            raise FormatError(f"{ipath}: row {bad_row - 1} is not sorted and deduplicated "
                              f"(corrupted)")
    if grown and renumber:  # built before an append: renumbered into the grown partitions
        indptr, indices = index_merge.remap_index(indptr, indices, info.layout,
                                                  index_merge.layout(graph.manifest))
        info = replace(info, num_nodes=graph.num_nodes(), index_dtype=str(indices.dtype),
                       layout=())
        _read_only(indptr, indices)
    return MappedIndex(info, indptr, indices, weight)


def _read_only(*arrays: np.ndarray | None) -> None:
    """Mark arrays built on read as read-only, as mapped ones are: they are kept per Graph
    and shared by every engine (one that renumbers in place copies first)."""
    for a in arrays:
        if a is not None:
            a.flags.writeable = False


def merged_index(graph, es, kind: str) -> MappedIndex | None:
    """The ``kind`` (``csr``, ``csc``, ``sym``) index of an edge set view: the members'
    indexes merged (:func:`graphsys.storage.index_merge.merge`) when every member that is
    not a change set has one, else None, decided from the manifest before any member's
    index is mapped; a ``push`` index is never merged (None). A view with change sets
    (deletions, weight updates) reads each member's ``csr``/``csc`` index through the
    change sets that target it (:func:`graphsys.storage.index_merge.through_changes`: its
    deleted pairs dropped, its re-weighted ones given their new weight, as the view's
    buckets read), checked against the view's edge count, on a graph of one entity type
    (:func:`_keyed`); its ``sym`` index is None (the view is built from its buckets)."""
    sets = graph.manifest.edge_sets
    edges = [name for name in es.members if not sets[name].change]
    changes = [name for name in es.members if sets[name].change]
    if kind not in ("csr", "csc", "sym") or (changes and not _keyed(graph, kind)) or any(
            kind not in graph.manifest.indexes.get(name, {}) for name in edges):
        return None  # a member without one: mapping (renumbering) the others is wasted
    parts = [mapped_index(graph, name, kind) for name in edges]
    if any(p is None for p in parts):
        return None
    n = graph.num_nodes()
    arrays = [(p.indptr, p.indices, p.weight) for p in parts]
    if changes:
        arrays = [index_merge.through_changes(
            *a, kind == "csc", *edge_changes.member_changes(graph, name, changes))
            for name, a in zip(edges, arrays)]
    indptr, indices, weight = (arrays[0] if len(arrays) == 1
                               else index_merge.merge(arrays, n, dedupe=kind == "sym"))
    if changes and len(indices) != es.num_edges:
        return None  # not the view's edges: it is built from its buckets
    _read_only(indptr, indices, weight)
    info = IndexInfo(kind, str(indices.dtype), n, len(indices), weight is not None, "")
    return MappedIndex(info, indptr, indices, weight)


def _keyed(graph, kind: str) -> bool:
    """Whether a view's ``kind`` index can be read through its change sets: a ``csr`` or
    ``csc`` of one entity type's graph of fewer than 2**31 nodes (a pair's key ``u * N +
    v`` fits int64); else the view is built from its buckets."""
    return kind in ("csr", "csc") and len(graph.manifest.entity_types) == 1 \
        and graph.num_nodes() < 1 << 31


def rows_index(graph, name: str, kind: str) -> tuple[MappedIndex, bool] | None:
    """Stored edge set ``name``'s ``kind`` (``csr``/``csc``) index for a reader of some of
    its rows, and whether its ids are checked: the index mapped whole and checked where it
    is already (or must be: built before an append), else its offsets checked in O(N)
    (:func:`mapped_offsets`) and its ids and weights mapped unchecked, for the reader to
    check each id it reads before it indexes an array with it; None without an index."""
    whole = graph._mapped_indexes.get((name, kind))
    if whole is None and index_state(graph.manifest, name, kind) != "current":
        whole = mapped_index(graph, name, kind)
    if whole is not None:
        return whole, True
    info = graph.manifest.indexes.get(name, {}).get(kind)
    if info is None:
        return None
    indptr = mapped_offsets(graph, name, kind)
    for column in ("indices", "weight") if info.weighted else ("indices",):
        graph.check_hash(index_file(name, kind, column))
    raw = map_index(graph, name, kind, check_values=False)
    if indptr is None or raw is None:
        return None
    return MappedIndex(raw.info, indptr, raw.indices, raw.weight), False


def _rows(graph, name: str, kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(indptr, indices)`` of edge set ``name``'s ``kind`` index for counting the rows a
    change touches (:func:`rows_index`: its ids are only compared with the changed pairs,
    never used to index an array)."""
    found = rows_index(graph, name, kind)
    return None if found is None else (found[0].indptr, found[0].indices)


def _changed_offsets(graph, es, kind: str) -> np.ndarray | None:
    """The row offsets :func:`merged_index` gives a view with change sets, from its
    members' indexes and the pairs deleted from each, without copying their ids (O(N) and
    the rows holding a deleted pair); None where it gives none."""
    sets = graph.manifest.edge_sets
    edges = [name for name in es.members if not sets[name].change]
    changes = [name for name in es.members if sets[name].change]
    if not _keyed(graph, kind) or any(
            kind not in graph.manifest.indexes.get(name, {}) for name in edges):
        return None
    n = graph.num_nodes()
    degree = np.zeros(n, np.int64)
    for name in edges:
        rows = _rows(graph, name, kind)
        if rows is None:
            return None
        gone = edge_changes.member_changes(graph, name, changes)[0]
        degree += index_merge.kept_counts(*rows, kind == "csc", gone)[0]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(degree, out=indptr[1:])
    if indptr[-1] != es.num_edges:
        return None
    _read_only(indptr)
    return indptr


def chunks(column: np.ndarray, size: int = CHECK_CHUNK) -> list[np.ndarray]:
    """``column`` as consecutive views of ``size`` entries: a pass over a mapped column
    releases each one once read, so its resident pages stay bounded by one chunk."""
    return [column[lo:lo + size] for lo in range(0, len(column), size)]


def verify_indexes(graph) -> int:
    """Map and check every index listed in ``graph``'s manifest, its weights finite (hashes
    are checked with the other files by :func:`graphsys.storage.verify.verify_graph`);
    returns how many."""
    count = 0
    for name, kinds in graph.manifest.indexes.items():
        for kind in kinds:        # each file listed: checked on open (check_listed)
            mapped = map_index(graph, name, kind)
            weight = getattr(mapped, "weight", None)  # finite, as the edges' (ingest's rule)
            if weight is not None and not all(np.isfinite(part).all() for part in chunks(weight)):
                raise FormatError(f"{graph.location.file(index_file(name, kind, 'weight'))}: "
                                  f"a weight is not finite (corrupted)")
            count += 1
    return count


#: Anonymous bytes of the rows :func:`build_rows` holds beside the neighbour ids (int32 per
#: edge where the ids fit, else int64): float32 weights and int64 edge ids per edge, int64
#: offsets per node and a partition's int64 cursor.
WEIGHT_BYTES, EDGE_ID_BYTES, ROW_BYTES_PER_NODE = 4, 8, 8


def check_rows(graph, edge_set: str | None, kind: str, weights: bool, memory_limit=None,
               edge_ids: bool = False, also: tuple[str, ...] = ()) -> int:
    """The budget of a :func:`build_rows` of these options (:func:`check_build`: the
    anonymous bytes of its arrays against ``memory_limit``, None for the RAM available
    now), refused in one line naming the ``graphsys index`` command whose index is mapped
    instead (none can give ``edge_ids``). ``also``: the other direction (``out``/``in``,
    ``csr``/``csc``) where the caller builds it next, sized with this one and named in the
    same refusal, so that one command builds every index the run needs."""
    es = graph.edge_set(edge_set)
    n = graph.num_nodes()
    outs = sorted({k in ("out", "csr") for k in (kind, *also)}, reverse=True)  # out first
    per_edge = (4 if n < 2**31 else 8) + (WEIGHT_BYTES if weights and es.has_weight else 0) \
        + (EDGE_ID_BYTES if edge_ids else 0)
    need = len(outs) * (per_edge * es.num_edges + ROW_BYTES_PER_NODE * (n + 1 + -(-n // max(
        graph.num_partitions, 1))))
    rows = " and ".join("out" if out else "in" for out in outs)
    return check_build(graph, es.name, f"the {rows.replace(' and ', '- and ')}-neighbour "
                                       f"rows of edge set {es.name!r}", need, memory_limit,
                       None if edge_ids else tuple("csr" if out else "csc" for out in outs))


def build_rows(graph, edge_set: str | None = None, kind: str = "out", weights: bool = True,
               edge_ids: bool = False, memory_limit: int | None = None) -> CSR:
    """The one in-RAM build of an edge set's ``out`` (``csr``) or ``in`` (``csc``) rows
    over global ids (:meth:`Graph.csr <graphsys.storage.graph.Graph.csr>` holds the
    contract), reading every bucket once: on a graph of one entity type a partition's rows
    (contiguous ids, their edges in its buckets) are counted and scattered while their
    pages are in cache; on a typed graph every bucket is one group, ids made global. A
    view of several edge sets has its rows sorted, as one ingest of them all. Sized first
    against ``memory_limit`` (None: the RAM available now) by :func:`check_rows`, which
    refuses a build over it in one line."""
    check_rows(graph, edge_set, kind, weights, memory_limit, edge_ids)
    es = graph.edge_set(edge_set)
    n, p, m = graph.num_nodes(), graph.num_partitions, es.num_edges
    out = kind in ("out", "csr")
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(m, index_merge.index_dtype(n))
    weight = np.empty(m, np.float32) if weights and es.has_weight else None
    perm = np.empty(m, np.int64) if edge_ids else np.zeros(0, np.int64)
    w_out = weight if weight is not None else np.zeros(0, np.float32)
    start = np.cumsum([0] + [es.buckets.get(b, 0) for b in bucket_pairs("row-major", p)])
    bases = rel_bases(graph, es)
    row_base, col_base = bases if out else bases[::-1]
    one, offsets = len(graph.entity_types) == 1, graph.partition_offsets(graph.entity_types[0])
    groups = [(int(offsets[r]), int(offsets[r + 1]), [(r, j) if out else (j, r) for j in
               range(p)]) for r in range(p)] if one else [(0, n, "row-major")]
    for lo, hi, pairs in groups:
        group = [(b, list(b.batches())) for b in graph.buckets(pairs, es.name)]
        counts = indptr[lo + 1:hi + 1]
        for b, batches in group:
            for eb in batches:
                kernels.count_into(_ends(eb, b, out, one, row_base, col_base)[0], counts)
        np.cumsum(counts, out=counts)
        counts += indptr[lo]
        cursor = indptr[lo:hi].copy()
        for b, batches in group:
            pos = int(start[b.i * p + b.j])
            for eb in batches:
                rows, cols, base = _ends(eb, b, out, one, row_base, col_base)
                kernels.csr_fill(rows, cols, base, cursor, indices,
                                 eb.weight if weight is not None else w_out, w_out, perm, pos)
                pos += len(rows)
    if es.members:  # several edge sets: each row ascends, as one ingest of them all
        index_merge.sort_rows(indptr, indices, w_out, perm)
    return CSR(indptr, indices, weight, perm if edge_ids else None)


def _ends(eb, b, out: bool, one: bool, row_base, col_base) -> tuple:
    """``(rows, cols, col_base)`` of one record batch for :func:`build_rows`: stored
    partition-local ids on a graph of one entity type, else global ids."""
    src, dst, i, j = (eb.src, eb.dst, b.i, b.j) if out else (eb.dst, eb.src, b.j, b.i)
    if one:
        return src, dst, int(col_base[0][j])
    rel = 0 if eb.rel is None else eb.rel
    return row_base[rel, i] + src, col_base[rel, j] + dst, 0


def mapped_index(graph, edge_set: str | None = None, kind: str = "csr"
                 ) -> MappedIndex | MappedPush | None:
    """:func:`map_index` once per Graph (kept in ``graph._mapped_indexes``), each of the
    index's files hash-checked first when the graph verifies hashes; None without an
    index."""
    es = graph.edge_set(edge_set)
    key = (es.name, kind)
    cache = graph._mapped_indexes
    if key not in cache and es.members:
        cache[key] = merged_index(graph, es, kind)
    if key not in cache:
        info = graph.manifest.indexes.get(key[0], {}).get(kind)
        for column in info.columns() if info is not None else ():
            graph.check_hash(index_file(key[0], kind, column))
        cache[key] = map_index(graph, key[0], kind)
    return cache[key]


def forget_mapped(graph, kind: str) -> None:
    """Drop what :func:`mapped_index` and :func:`mapped_offsets` keep of ``graph``'s
    ``kind`` indexes (of every edge set and view): an index just built or rebuilt is mapped
    on next use, not an earlier absence or copy."""
    cache = graph._mapped_indexes
    for key in [k for k in cache if k[1] == kind]:
        del cache[key]


def mapped_offsets(graph, edge_set: str | None = None, kind: str = "csr"
                   ) -> np.ndarray | None:
    """:func:`map_offsets` once per Graph: the ``indptr`` of an index already mapped whole,
    else only its offsets, mapped and checked in O(N); None without an index."""
    es = graph.edge_set(edge_set)
    key = (es.name, kind, "offsets")
    cache = graph._mapped_indexes
    if key not in cache:
        mapped = cache.get(key[:2])
        if mapped is None and es.members and edge_changes.change_members(graph.manifest,
                                                                          es.members):
            cache[key] = _changed_offsets(graph, es, kind)  # no copy of the ids
        elif mapped is None and (es.members or index_state(
                graph.manifest, es.name, kind) == "grown"):
            mapped = mapped_index(graph, es.name, kind)  # the offsets come with the ids
            cache[key] = None if mapped is None else mapped.indptr
        elif mapped is not None:
            cache[key] = mapped.indptr
        else:
            if kind in graph.manifest.indexes.get(key[0], {}):
                graph.check_hash(index_file(key[0], kind, "indptr"))
            cache[key] = map_offsets(graph, key[0], kind)
    return cache[key]
