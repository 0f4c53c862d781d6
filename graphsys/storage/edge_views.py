"""Several stored edge sets read as one edge set: what every engine reads when it is given
a list of edge sets, ``"all"``, or nothing (the default view).

Readers name what they read: ``"day2"`` (that stored edge set alone), ``"default,day2"`` or
``["default", "day2"]`` (those together, in that order), ``"all"`` (every stored edge set,
unless one is named ``all``) or ``None`` (the default edge set with every edge set appended
to it). The view is an :class:`~graphsys.storage.format.EdgeSet` named by its members joined
by commas, whose bucket counts are the members' sums and whose edge columns are those every
member has with one type; its bucket ``(i, j)`` (:class:`UnionBucket`) yields the members'
record batches of that bucket one member after the other. A view that names change sets
reads its members through them (:mod:`graphsys.storage.edge_changes`). docs/format.md,
"Reading several edge sets as one", gives the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import edge_changes
from graphsys.storage.edges import Bucket
from graphsys.storage.format import MANIFEST, EdgeSet, Manifest

#: What names an edge set to read: a stored edge set, several (a list, or names joined by
#: commas), ``"all"``, or None for the default view.
EdgeSets = str | Sequence[str] | None
#: The name that reads every stored edge set together.
ALL = "all"
#: What separates the edge sets of a view in its name (never part of an edge set's name).
SEPARATOR = ","


def default_base(manifest: Manifest) -> str:
    """The default edge set: among the edge sets not appended to another, the only one,
    else ``default``, else ``train``; a :class:`GraphsysError` when none is."""
    sets = manifest.edge_sets
    bases = [n for n, es in sets.items() if not es.appended_to]
    if len(bases) == 1:
        return bases[0]
    for candidate in ("default", "train"):
        if candidate in bases:
            return candidate
    raise GraphsysError(f"graph has edge sets {list(sets)}: name one")


def appended(manifest: Manifest, base: str) -> tuple[str, ...]:
    """The edge sets appended to ``base`` (``appended_to``), in manifest order."""
    return tuple(n for n, es in manifest.edge_sets.items() if es.appended_to == base)


def members(manifest: Manifest, name: str | Sequence[str] | None) -> tuple[str, ...]:
    """The stored edge sets an edge set name reads (see the module docstring), in order.

    Raises
    ------
    GraphsysError
        An unknown edge set (listing those there are), one named twice, an empty list, or
        something that is neither a name nor a list of names.
    """
    sets = manifest.edge_sets
    if name is None:
        base = default_base(manifest)
        return (base, *appended(manifest, base))
    if isinstance(name, str):
        if name in sets:
            return (name,)
        if name == ALL:
            return tuple(sets)
        names = [n.strip() for n in name.split(SEPARATOR)]
    elif isinstance(name, (list, tuple)) and all(isinstance(n, str) for n in name):
        names = list(name)
    else:
        raise GraphsysError(f"an edge set is a name or a list of names, got {name!r}")
    if not names:
        raise GraphsysError("an empty list of edge sets names no edges")
    out: list[str] = []
    for n in names:
        if n not in sets:
            raise GraphsysError(f"unknown edge set {n!r} (edge sets: {', '.join(sets)})")
        if n in out:
            raise GraphsysError(f"edge set {n!r} is named twice")
        out.append(n)
    return tuple(out)


_SHAPE = (("has_rel", "a relation column"), ("has_weight", "weights"),
          ("undirected", "both directions stored (undirected)"))


def union(manifest: Manifest, names: tuple[str, ...]) -> EdgeSet:
    """The stored edge set of one name, or the :class:`EdgeSet` that reads several as one
    (see the module docstring); edge sets of different shapes are refused in one line, as
    is a change set named without its targets (:mod:`graphsys.storage.edge_changes`)."""
    sets = manifest.edge_sets
    if len(names) == 1:
        return sets[names[0]]
    edge_changes.check_targets(manifest, names)
    parts = [sets[n] for n in names if not sets[n].change]
    first = parts[0]
    for es in parts[1:]:
        for attr, what in _SHAPE:
            if getattr(es, attr) != getattr(first, attr):
                has, lacks = (first, es) if getattr(first, attr) else (es, first)
                raise GraphsysError(f"edge sets {first.name!r} and {es.name!r} cannot be read "
                                    f"as one: {has.name!r} has {what}, {lacks.name!r} has not")
    buckets: dict[tuple[int, int], int] = {}
    for es in parts:
        for key, n in es.buckets.items():
            buckets[key] = buckets.get(key, 0) + n
    for name in edge_changes.change_members(manifest, names):
        for key, n in sets[name].change.removed.items():
            buckets[key] = buckets.get(key, 0) - n
            if buckets[key] < 0:   # a hand-edited record: more removed than stored
                raise FormatError(f"{MANIFEST}: delete set {name!r} records more edges "
                                  f"removed from bucket {key[0]}-{key[1]} than its targets "
                                  f"hold (corrupted or modified)")
    buckets = {k: n for k, n in buckets.items() if n}
    columns = [c for c in first.columns if all(c in es.columns for es in parts[1:])]
    return EdgeSet(SEPARATOR.join(names), sum(buckets.values()), buckets,
                   first.has_rel, first.has_weight, undirected=first.undirected,
                   dedupe=False, drop_self_loops=all(es.drop_self_loops for es in parts),
                   skipped_lines=sum(es.skipped_lines for es in parts), columns=columns,
                   members=names)


class UnionBucket(Bucket):
    """Bucket ``(i, j)`` of an edge set view: the members' buckets ``(i, j)`` one after the
    other (:meth:`batches`; ``start`` counts rows across them), each through the change
    sets the view names (:func:`graphsys.storage.edge_changes.apply`). Obtained from
    :meth:`Graph.bucket <graphsys.storage.graph.Graph.bucket>` with a view's name."""

    def __init__(self, graph, es: EdgeSet, i: int, j: int):
        self.graph, self.edge_set, self.i, self.j = graph, es.name, i, j
        sets = graph.manifest.edge_sets
        self.changes = edge_changes.change_members(graph.manifest, es.members)
        self.parts = [graph.bucket(i, j, m) for m in es.members if not sets[m].change]
        self.num_edges = es.buckets.get((i, j), 0)
        stored = [b for b in self.parts if b.num_edges]
        self.file_name = stored[0].file_name if stored else ""
        self.path = stored[0].path if stored else None

    @property
    def mapped_region(self) -> tuple[int, int]:
        """The one member file's mapping when only one member has edges here; else ``(0,
        0)``, which no paging advice touches (the batches lie in several mappings)."""
        stored = [b for b in self.parts if b.num_edges]
        return stored[0].mapped_region if len(stored) == 1 else (0, 0)

    def batches(self) -> Iterator:
        changes = [edge_changes.load_bucket(self.graph, c, self.i, self.j)
                   for c in self.changes] if any(b.num_edges for b in self.parts) else []
        start = 0
        for b in self.parts:
            for eb in b.batches():
                eb = edge_changes.apply(eb, b.edge_set, changes)
                if len(eb):
                    yield dataclasses.replace(eb, start=start)
                start += len(eb)
        if changes and start != self.num_edges:  # the delete sets' counts, as recorded
            raise FormatError(f"{self.graph.location.file(MANIFEST)}: bucket {self.i}-"
                              f"{self.j} of {self.edge_set!r} holds {start:,} edges after its "
                              f"delete sets, their records give {self.num_edges:,} "
                              f"(corrupted or modified)")
