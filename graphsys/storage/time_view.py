"""A stored graph in a time window: :class:`TimeView`, what ``open_graph(path, until=t)``
and ``open_graph(path, since=s, until=t)`` return.

Only the edges whose timestamp edge column (``timestamp`` by default) is in the half-open
window ``(since, until]`` exist (``since`` alone is ``(s, +inf)``, ``until`` alone
``(-inf, t]``), so consecutive windows tile time. The view is a
:class:`~graphsys.storage.graph.Graph`, so every engine reads it unchanged; nodes stay (a
node with no edge in the window is isolated), so ids and node columns are the stored
graph's. docs/growing.md, "The graph as of a time", is the guide.

How. Opening the view reads the time column once and counts each bucket's edges in the
window; the view's manifest holds those counts and no adjacency index, and its buckets'
record batches are the stored ones filtered row for row (a batch entirely inside the window
stays a zero-copy view of the mapped file). Comparisons run in the column's own type: an
integer column is compared with an integer bound exactly (a fractional bound is rounded
down, which selects the same edges). A bound is a number in the column's unit, or a date
read as Unix seconds, UTC where it names no zone (:func:`parse_time`).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import functools
import math
from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np

from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage import edge_changes
from graphsys.storage.edge_views import UnionBucket

#: The edge column a time view (and the temporal samplers and splits) read by default.
TIME_COLUMN = "timestamp"


def parse_time(value, *, name: str = "until"):
    """A time as an ``int`` or ``float`` in the time column's unit.

    Parameters
    ----------
    value : int, float, str, datetime.date or datetime.datetime
        A number (an integral string such as ``"1082040961"`` is an int), or a date or
        ISO-8601 date-time, converted to Unix seconds (UTC when it names no zone).
    name : str, optional
        The parameter named by a refusal.

    Returns
    -------
    int or float

    Raises
    ------
    ParameterError
        Anything else: a bool, NaN, infinity, a string that is neither a number nor an
        ISO-8601 date.

    Examples
    --------
    >>> parse_time(1082040961), parse_time("2004-04-15"), parse_time("2004-04-15T14:56:01")
    (1082040961, 1081987200, 1082040961)
    >>> parse_time("1.5")
    1.5
    """
    if isinstance(value, bool) or value is None:
        raise ParameterError(name, f"must be a time (a number, or an ISO-8601 date), got "
                                   f"{value!r}")
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        if not math.isfinite(value):
            raise ParameterError(name, f"must be a finite time, got {value!r}")
        return float(value)
    if isinstance(value, _dt.datetime):
        when = value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
        seconds = when.timestamp()
        return int(seconds) if seconds == int(seconds) else seconds
    if isinstance(value, _dt.date):
        return parse_time(_dt.datetime(value.year, value.month, value.day), name=name)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return parse_time(float(text), name=name)
        except ValueError:
            pass
        try:
            return parse_time(_dt.datetime.fromisoformat(text), name=name)
        except ValueError:
            pass
    raise ParameterError(name, f"must be a time (a number in the time column's unit, or an "
                               f"ISO-8601 date such as 2004-06-01), got {value!r}")


def time_bound(value, dtype: np.dtype, *, name: str = "until", up: bool = False):
    """``value`` (:func:`parse_time`) as a bound comparable with a column of ``dtype``
    exactly: for an integer column ``floor(value)`` (``up``: ``ceil``) as that integer
    type, so ``t <= bound`` selects what ``t <= value`` does (``up``: ``t >= bound`` what
    ``t >= value`` does), clipped to the type's range; for a float column the float
    (infinite beyond its range: an integer of 400 digits raised a raw OverflowError)."""
    t = parse_time(value, name=name)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        whole = t if isinstance(t, int) else (math.ceil(t) if up else math.floor(t))
        return dtype.type(min(max(whole, int(info.min)), int(info.max)))
    with np.errstate(over="ignore"):
        return dtype.type(as_float(t))


def as_float(t) -> float:
    """A number as a float, an integer beyond the float range as +-infinity."""
    try:
        return float(t)
    except OverflowError:
        return math.inf if t > 0 else -math.inf


def _column_dtype(graph, edge_set: str, column: str) -> np.dtype | None:
    cols = {c.name: c.dtype for c in graph._stored(edge_set).columns}
    return np.dtype(cols[column]) if column in cols else None


@functools.cache
def _subclass(mixin: type, base: type) -> type:
    """``mixin`` over ``base`` (the stored graph's or bucket's own class), built once: the
    view is that class, so it is a :class:`~graphsys.storage.graph.Graph` (a
    :class:`~graphsys.storage.graph.Bucket`) whatever module defines it."""
    return type(mixin.__name__, (mixin, base), {"__module__": mixin.__module__,
                                               "__doc__": mixin.__doc__})


def in_window(stamps: np.ndarray, since, until) -> np.ndarray:
    """bool mask of ``stamps`` in the window ``(since, until]`` (a bound of None: no bound
    on that side), the bounds already in the column's type (:func:`time_bound`).

    Examples
    --------
    >>> in_window(np.array([1, 2, 3, 4]), 1, 3).tolist(), in_window(np.arange(3), None, 1).tolist()
    ([False, True, True, False], [True, True, False])
    """
    keep = np.ones(len(stamps), dtype=bool) if until is None else stamps <= until
    if since is not None:
        keep &= stamps > since
    return keep


def _window_bounds(since, until, dtype: np.dtype) -> tuple:
    """``(since, until)`` as bounds of a column of ``dtype`` (None: unbounded on that side).
    Out of an integer type's range: a ``since`` below it bounds nothing, an ``until`` below
    it keeps nothing (``since`` becomes the type's maximum, which no stamp is after)."""
    lo = None if since is None else time_bound(since, dtype, name="since")
    hi = None if until is None else time_bound(until, dtype)
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if since is not None and since < info.min:
            lo = None
        if until is not None and until < info.min:
            lo = dtype.type(info.max)
    return lo, hi


class ViewBucket:
    """A bucket of a :class:`TimeView`: the stored bucket's edges stamped in the window
    ``(since, until]``,
    batch for batch (``num_edges``: those in the view); an instance is also a
    :class:`~graphsys.storage.graph.Bucket`."""

    def __new__(cls, view, stored, num_edges: int):
        if cls is ViewBucket:
            cls = _subclass(ViewBucket, type(stored))
        return object.__new__(cls)

    def __init__(self, view, stored, num_edges: int):
        super().__init__(view, stored.edge_set, stored.i, stored.j, num_edges)
        self._stored = stored
        self._bound = view._bounds_by_set[stored.edge_set]

    @property
    def mapped_region(self) -> tuple[int, int]:
        return self._stored.mapped_region

    def batches(self) -> Iterator:
        if self.num_edges == 0:
            return
        column, lo, hi = self._bound
        start = 0
        for eb in self._stored.batches():
            keep = in_window(eb.columns[column], lo, hi)
            kept = int(np.count_nonzero(keep))
            if kept == len(eb):
                yield dataclasses.replace(eb, start=start)
            elif kept:
                yield dataclasses.replace(
                    eb, start=start, src=eb.src[keep], dst=eb.dst[keep],
                    rel=None if eb.rel is None else eb.rel[keep],
                    weight=None if eb.weight is None else eb.weight[keep],
                    columns={k: v[keep] for k, v in eb.columns.items()})
            start += kept


class TimeView:
    """A stored graph in a time window: the edges whose time column is in ``(since,
    until]`` (see the module docstring). Obtained from :func:`graphsys.open_graph` with
    ``until`` and/or ``since`` (or built over an opened graph); an instance is a
    :class:`~graphsys.storage.graph.Graph`, which engines read as any other.

    Parameters
    ----------
    graph : Graph
        The stored graph (opened), or a view (its stored graph is read with the new window).
    until : int, float, str or datetime, optional
        The last time in the view, inclusive (:func:`parse_time`); None: no upper bound.
    column : str, optional
        The time edge column (default ``timestamp``). Edge sets without it cannot be read
        through the view (one line naming the edge set); their counts are kept.
    since : int, float, str or datetime, optional
        The view holds the edges stamped strictly after ``since`` (exclusive, so that
        ``since=b`` starts where ``until=b`` ends); None: no lower bound. At least one of
        ``since`` and ``until`` is given.

    Attributes
    ----------
    stored : Graph
        The graph the view reads: the version of ``graph`` it was made from. A later write
        through ``graph`` (a change set, :func:`~graphsys.storage.compact.compact`) moves
        ``graph`` on and leaves the view as it was, as a graph opened before another
        writer's commit (a read of a file that write replaced is refused: open it again).
    until, since : int, float or None
        The bounds as given (parsed).
    column : str
        The time column.

    Raises
    ------
    ParameterError
        ``until`` or ``since`` is not a time, neither is given, ``since > until``; no edge
        set has the column.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, graphsys
    >>> d = tempfile.mkdtemp()
    >>> edges = pa.table({"src": [1, 2, 3, 1], "dst": [2, 3, 1, 3],
    ...                   "timestamp": [10, 20, 30, 40]})
    >>> g = graphsys.from_arrow(edges, d + "/g", edge_columns=["timestamp"])
    >>> view = graphsys.open_graph(d + "/g", until=25)
    >>> view.num_nodes(), view.num_edges(), isinstance(view, graphsys.Graph)
    (3, 2, True)
    >>> [(s.tolist(), d.tolist()) for s, d, _, _ in view.iter_edges()]
    [([0, 1], [1, 2])]
    >>> later = graphsys.open_graph(d + "/g", since=20, until=40)   # stamps 30 and 40
    >>> later.num_edges(), sorted(t for c in later.edge_column("timestamp") for t in c.tolist())
    (2, [30, 40])
    """

    def __new__(cls, graph, until=None, column: str = TIME_COLUMN, *, since=None):
        if cls is TimeView:
            stored = graph.stored if isinstance(graph, TimeView) else graph
            cls = _subclass(TimeView, type(stored))
        return object.__new__(cls)

    def __init__(self, graph, until=None, column: str = TIME_COLUMN, *, since=None):
        if isinstance(graph, TimeView):
            graph = graph.stored
        # the version of ``graph`` the view is made from, kept when a later write through
        # ``graph`` reopens that object on the new version (its caches are this version's)
        graph = self.stored = copy.copy(graph)
        self.until = None if until is None else parse_time(until)
        self.since = None if since is None else parse_time(since, name="since")
        self.column = column
        check_window(self.since, self.until)
        self._bounds_by_set: dict[str, tuple] = {}
        manifest = graph.manifest
        sets = {}
        for name, es in manifest.edge_sets.items():
            dtype = _column_dtype(graph, name, column)
            if dtype is None:
                sets[name] = es
                continue
            lo, hi = _window_bounds(self.since, self.until, dtype)
            self._bounds_by_set[name] = (column, lo, hi)
            counts = {}
            for b in graph.buckets("row-major", name):
                kept = sum(int(np.count_nonzero(in_window(eb.columns[column], lo, hi)))
                           for eb in b.batches())
                if kept:
                    counts[(b.i, b.j)] = kept
            sets[name] = dataclasses.replace(es, num_edges=sum(counts.values()),
                                             buckets=counts)
        if not self._bounds_by_set:
            have = sorted({c.name for es in manifest.edge_sets.values() for c in es.columns})
            raise ParameterError("until" if self.until is not None else "since",
                                 f"needs the edge column {column!r}, which no edge "
                                 f"set of {graph.path} has (edge columns: "
                                 f"{', '.join(have) or 'none'}; keep it at ingest "
                                 f"as an edge column)")
        view_manifest = dataclasses.replace(manifest, edge_sets=sets, indexes={})
        verify = graph.verify_hashes
        super().__init__(graph.path, view_manifest, graph.location)
        graph.verify_hashes = verify  # the base __init__ reset it through the setter
        for name in edge_changes.change_members(manifest, manifest.edge_sets):
            change = sets[name].change  # what a delete removes within the window
            if any(t not in self._bounds_by_set and not sets[t].change
                   for t in change.targets):
                continue  # a view of its targets is refused (not timestamped)
            sets[name] = dataclasses.replace(sets[name], change=dataclasses.replace(
                change, removed=edge_changes.removed_counts(self, name)))

    @property
    def window(self) -> str:
        """The window in words: ``until 40``, ``since 20``, ``since 20 until 40``."""
        return " ".join(f"{k} {v!r}" for k, v in (("since", self.since),
                                                   ("until", self.until)) if v is not None)

    @property
    def verify_hashes(self) -> bool:
        """The stored graph's ``verify_hashes`` (set through the view)."""
        return self.stored.verify_hashes

    @verify_hashes.setter
    def verify_hashes(self, value: bool) -> None:
        self.stored.verify_hashes = value

    def check_hash(self, rel: str) -> None:
        self.stored.check_hash(rel)

    def __repr__(self) -> str:
        lo = "" if self.since is None else f"{self.since!r} < "
        hi = "" if self.until is None else f" <= {self.until!r}"
        return f"TimeView({super().__repr__()}, {lo}{self.column}{hi})"

    def bucket(self, i: int, j: int, edge_set: str | None = None):
        es = self._stored(edge_set)
        if es.members:  # several edge sets read as one: each member through the view
            for m in es.members:
                if not self.manifest.edge_sets[m].change:  # read from the stored graph
                    self._check_stamped(m)
            return UnionBucket(self, es, i, j)
        self._check_stamped(es.name)
        stored = self.stored.bucket(i, j, es.name)
        return ViewBucket(self, stored, es.buckets.get((i, j), 0))


    def _check_stamped(self, edge_set: str) -> None:
        if edge_set not in self._bounds_by_set:
            raise GraphsysError(f"edge set {edge_set!r} of {self.path} has no edge column "
                                f"{self.column!r}: a view {self.window} reads only "
                                f"timestamped edge sets")


def check_window(since, until) -> None:
    """Refuse an empty request and a window that ends before it starts."""
    if since is None and until is None:
        raise ParameterError("until", "a time view needs until, since or both")
    if since is not None and until is not None and since > until:
        raise ParameterError("since", f"is after until ({since!r} > {until!r}): the window "
                                      f"(since, until] would run backwards")


def until(graph, until=None, column: str = TIME_COLUMN, *, since=None) -> TimeView:
    """``graph`` in the window ``(since, until]``: :class:`TimeView` (what
    ``open_graph(path, since=s, until=t)`` returns); a view of a view reads the stored
    graph with the new window."""
    return TimeView(graph, until, column, since=since)
