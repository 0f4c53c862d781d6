"""Which nodes a model's rows belong to: the sha256 of each partition's original ids.

A trained model stores per-node rows by position: row ``i`` of partition ``p`` is the
``i``-th node of that partition, so another partition count or id order would attach the
rows to other nodes. A checkpoint records, per entity type, the nodes of each partition and
the sha256 of their original ids in row order (:func:`node_record`); loading it compares
them (:func:`check_nodes`) and refuses, in one line, a graph whose rows would attach to
other nodes. :func:`grown_ids` maps a recorded state's internal ids to a grown graph's
(an append moves them up), checked; :func:`stored_record` checks a file that stores its
ids beside its rows.

Examples
--------
>>> import tempfile, graphsys
>>> from graphsys.storage.identity import check_nodes, node_record
>>> a = graphsys.from_numpy([10, 20, 30], [20, 30, 10], tempfile.mkdtemp() + "/a")
>>> b = graphsys.from_numpy([10, 20, 30], [20, 30, 10], tempfile.mkdtemp() + "/b",
...                         partitions=2)
>>> record = node_record(a)
>>> record["node"]["partition_sizes"]
[3]
>>> check_nodes(record, a, "ckpt")
>>> check_nodes(record, b, "ckpt")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
graphsys.errors.GraphsysError: ckpt: entity type 'node' had 3 nodes in 1 partitions [3], ...
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.index_merge import moved_ids

if TYPE_CHECKING:
    from graphsys.storage.graph import Graph


def id_digest(ids) -> str:
    """sha256 (hex) of original ids in order: int64 NumPy ids, or a pyarrow string array
    (its lengths and bytes, whatever its offset in a larger buffer)."""
    h = hashlib.sha256()
    if isinstance(ids, np.ndarray):
        h.update(b"i")
        h.update(np.ascontiguousarray(ids, dtype="<i8").tobytes())
        return h.hexdigest()
    arr = ids.cast(pa.large_string()) if isinstance(ids, pa.Array) else pa.array(
        ids, pa.large_string())
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype="<i8")[arr.offset:arr.offset + len(arr) + 1]
    h.update(b"s")
    h.update((offsets - offsets[0]).tobytes())
    if bufs[2] is not None and len(arr):
        h.update(memoryview(bufs[2])[int(offsets[0]):int(offsets[-1])])
    return h.hexdigest()


def id_digests(graph: Graph, etype: str, rows: list[int] | None = None) -> list[str]:
    """:func:`id_digest` of each partition of ``etype`` in ``graph``, over its first
    ``rows[p]`` nodes when given (the rows a checkpoint grown from this one inherits)."""
    out = []
    for p in range(graph.num_partitions):
        ids = graph.node_ids(etype, partition=p)
        if rows is not None:
            ids = ids[:rows[p]] if isinstance(ids, np.ndarray) else ids.slice(0, rows[p])
        out.append(id_digest(ids))
    return out


def node_record(graph: Graph, entity_types: list[str] | None = None
                ) -> dict[str, dict[str, list]]:
    """Per entity type (default: every one of ``graph``), ``partition_sizes`` (nodes per
    partition) and ``id_digests`` (:func:`id_digests`): what a checkpoint records of the
    nodes its rows belong to."""
    types = graph.entity_types if entity_types is None else entity_types
    return {t: {"partition_sizes": [int(x) for x in graph.partition_sizes(t)],
                "id_digests": id_digests(graph, t)} for t in types}


def stored_record(etype: str, ids: list) -> dict[str, dict[str, list]]:
    """:func:`node_record` of the original ids a file stores per partition (``ids``: one
    pyarrow array, integer or string, per partition, in row order): what a file keyed by
    position but holding its ids (an embedding or propagation directory) is checked with."""
    return {etype: {"partition_sizes": [len(a) for a in ids], "id_digests": [id_digest(
        a.cast(pa.int64()).to_numpy(zero_copy_only=False) if pa.types.is_integer(a.type)
        else a) for a in ids]}}


def check_record(record: Any, where: str) -> None:
    """A :class:`FormatError` naming ``where`` unless ``record`` is shaped as
    :func:`node_record` writes it (it is read from an untrusted file)."""
    if not isinstance(record, dict):
        raise FormatError(f"{where}: the node record must map entity types to partitions")
    for t, info in record.items():
        sizes = info.get("partition_sizes") if isinstance(info, dict) else None
        digests = info.get("id_digests") if isinstance(info, dict) else None
        if not isinstance(sizes, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in sizes):
            raise FormatError(f"{where}: entity type {t!r}: partition_sizes must be a list of "
                              f"node counts")
        if not isinstance(digests, list) or len(digests) != len(sizes) or not all(
                isinstance(x, str) for x in digests):
            raise FormatError(f"{where}: entity type {t!r}: id_digests must hold one sha256 "
                              f"per partition")


def check_nodes(record: dict[str, dict[str, list]], graph: Graph, where: str,
                hint: str = "(another graph, or re-ingested with other partitions or ids?)",
                *, grown: bool = False) -> dict[str, list[int]] | None:
    """Raise a one-line :class:`GraphsysError` naming ``where`` unless ``graph`` holds, per
    entity type of ``record`` (:func:`node_record`), the same nodes in the same partitions
    and order: the rows recorded would otherwise attach to other nodes.

    ``grown``: also accept the graph grown from the recorded one by appends
    (:mod:`graphsys.storage.append`), which keep every old node at its partition and
    offset and add new nodes at the ends of partitions: each partition at least as large,
    its first recorded rows holding the recorded ids. Returns, when the graph grew, the
    recorded nodes per partition of every entity type of ``record`` (the rows a model has;
    the others are new), else None. A graph whose old entities moved (re-ingested rather
    than appended to) is refused saying which partition and rows changed."""
    sizes: dict[str, list[int]] = {}
    grew = False
    for etype, info in record.items():
        if etype not in graph.entity_types:
            raise GraphsysError(f"{where}: trained on entity type {etype!r}, which the graph "
                                f"{graph.path} does not have ({', '.join(graph.entity_types)}) "
                                f"{hint}")
        want = [int(x) for x in info["partition_sizes"]]
        have = [int(x) for x in graph.partition_sizes(etype)]
        sizes[etype] = want
        if want != have:
            if not grown or len(want) != len(have) or any(
                    a > b for a, b in zip(want, have)):
                raise GraphsysError(f"{where}: entity type {etype!r} had {sum(want):,} nodes "
                                    f"in {len(want)} partitions {want[:8]}, the graph "
                                    f"{graph.path} has {sum(have):,} in {len(have)} "
                                    f"{have[:8]} {hint}")
            grew = True
        if info.get("id_digests") is None:     # recorded before ids were: counts only
            continue
        now = id_digests(graph, etype, want if grown else None)
        bad = next((p for p, (a, b) in enumerate(zip(info["id_digests"], now)) if a != b),
                   None)
        if bad is not None and want != have:
            raise GraphsysError(f"{where}: the first {want[bad]:,} nodes of partition {bad} of "
                                f"entity type {etype!r} in {graph.path} are not the entities "
                                f"it was trained on (other ids, or another order): the "
                                f"entities moved, as a re-ingest of old and new edges moves "
                                f"them; an append to the old graph keeps them in place")
        if bad is not None:
            raise GraphsysError(f"{where}: partition {bad} of entity type {etype!r} holds "
                                f"other ids (or the same in another order) than it was "
                                f"trained on; the graph {graph.path} is not that graph {hint}")
    return sizes if grew else None


def grown_ids(record: dict[str, dict[str, list]], graph: Graph, where: str,
              entity_type: str | None = None) -> np.ndarray:
    """Where the nodes of ``record`` (:func:`node_record` of a graph, taken before appends
    grew it) are in ``graph``: the type-global internal id in ``graph`` of each recorded
    type-global id, int64, checked first (:func:`check_nodes` with ``grown``; a graph
    whose recorded nodes moved, as a re-ingest moves them, is refused in one line naming
    ``where``). An array kept by internal id is carried over as ``new[grown_ids(...)] =
    old``; the rows of the new nodes are the others.

    Examples
    --------
    >>> import tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq, graphsys
    >>> from graphsys.storage.identity import grown_ids, node_record
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([10, 20, 30, 40], [20, 30, 40, 10], work + "/g", partitions=2)
    >>> record, scores = node_record(g), g.node_ids() * 1.0   # an array by internal id
    >>> pq.write_table(pa.table({"src": [10, 50, 60], "dst": [50, 60, 70]}), work + "/d2.pq")
    >>> g = graphsys.ingest(work + "/d2.pq", work + "/g", append=True, edge_set="day2")
    >>> moved = grown_ids(record, g, "scores")
    >>> moved.tolist()                     # partition 1's nodes moved by partition 0's new
    [0, 3, 4, 5]
    >>> bool((g.node_ids()[moved] == scores).all())
    True
    """
    etype = graph.entity_type(entity_type).name
    if etype not in record:
        raise GraphsysError(f"{where}: no nodes of entity type {etype!r} recorded")
    check_nodes({etype: record[etype]}, graph, where, grown=True)
    old = tuple(int(x) for x in record[etype]["partition_sizes"])
    return moved_ids(old, tuple(int(x) for x in graph.partition_sizes(etype)))
