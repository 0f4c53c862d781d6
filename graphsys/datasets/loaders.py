"""Turn a fetched dataset into inputs of :func:`graphsys.storage.ingest.ingest_sources`.

One function ``FetchResult -> IngestPlan`` per dataset family, registered by name in
:data:`graphsys.plugins.DATASET_LOADERS` and selected by the registry's ``loader`` key;
every parsing option (columns, delimiter, comments, id type, direction) comes from the
registry entry. Families: ``edge_list`` (SNAP, DIMACS10), ``linqs`` (Cora, CiteSeer),
``kg_triples`` (FB15k-237), ``movielens`` (MovieLens 100K, with a ``temporal`` split),
``planetoid`` (PubMed) and ``temporal_edges`` (:mod:`graphsys.datasets.temporal_edges`);
each function's docstring says what it builds. Text inputs are read with the encoding of
their ``[files.format]``, gzip or plain (recognised by their magic bytes).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from graphsys.datasets.fetch import FetchResult
from graphsys.datasets.registry import DataFile, DatasetLoader
from graphsys.datasets.splits import per_class_split
from graphsys.errors import GraphsysError, InputError
from graphsys.plugins import DATASET_LOADERS
from graphsys.storage.format import RelationType
from graphsys.storage.ingest import (
    EdgeSource,
    IngestOptions,
    IngestReport,
    NodeSource,
    ingest_sources,
)


@dataclass
class IngestPlan:
    """Everything :func:`graphsys.storage.ingest.ingest_sources` needs for one dataset.

    ``undirected``, ``dedupe`` and ``relation_types`` override the corresponding
    :class:`IngestOptions`; ``metadata`` is JSON-able (label names, split, features).
    """

    edges: list[EdgeSource]
    nodes: list[NodeSource] = field(default_factory=list)
    undirected: bool = False
    dedupe: bool = False
    relation_types: list[RelationType] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# -- text helpers ------------------------------------------------------------------------------

def read_text_table(path: Path, f: DataFile, types: dict[str, pa.DataType] | None = None,
                    *, column_names: list[str] | None = None) -> pa.Table:
    """Read a small delimited text file (gzip or plain) into an Arrow table.

    Columns are named by ``f.format.columns`` (or ``column_names`` when one format column
    spans several fields); ``types`` fixes the Arrow type of some columns. Comment lines
    (``format.comment``), blank lines and a header line (``format.header``) are skipped;
    quoting is off.
    """
    fmt = f.format
    names = column_names or list(fmt.columns)
    raw = _read_bytes(path)
    try:
        text = raw.decode(fmt.encoding)
    except UnicodeDecodeError as exc:
        raise InputError(f"not {fmt.encoding} text ({exc.reason} at byte {exc.start})",
                         path=path) from None
    if fmt.comment:
        text = "\n".join(line for line in text.split("\n")
                         if not line.startswith(tuple(fmt.comment)))
    try:
        return pacsv.read_csv(
            io.BytesIO(text.encode("utf-8")),
            read_options=pacsv.ReadOptions(column_names=names, block_size=64 << 20,
                                           skip_rows=1 if fmt.header else 0),
            parse_options=pacsv.ParseOptions(delimiter=fmt.delimiter, quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types or {}),
        )
    except pa.ArrowInvalid as exc:
        raise InputError(f"cannot parse as {len(names)} {fmt.delimiter!r}-separated columns "
                         f"({' '.join(str(exc).split())[:200]})", path=path) from None


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"corrupt gzip data ({exc})", path=path) from None
    return raw


def edge_source(fetched: FetchResult, file_name: str, *, src: str, dst: str,
                edge_set: str = "default", rel: str | None = None, weight: str | None = None,
                relation: str | None = None, edge_columns: Sequence[str] = ()) -> EdgeSource:
    """An :class:`EdgeSource` over one registry file; columns are given by their registry
    names and passed to the ingest as 0-based indices; ``edge_columns``: registry columns
    kept beside the edges under their names."""
    f = fetched.dataset.file(file_name)
    cols = f.format.columns

    def index(name: str | None) -> int | None:
        return None if name is None else cols.index(name)

    return EdgeSource(paths=[fetched.path(file_name)], edge_set=edge_set, format="tsv",
                      src_col=index(src), dst_col=index(dst), rel_col=index(rel),
                      weight_col=index(weight), relation=relation,
                      delimiter=f.format.delimiter, header=f.format.header,
                      comment=f.format.comment,
                      edge_columns={c: index(c) for c in edge_columns})


def features_array(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """An (N, D) matrix as Arrow ``fixed_size_list<float32>[D]`` of length N."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


# -- edge lists (SNAP, DIMACS10) ---------------------------------------------------------------

def load_edge_list(fetched: FetchResult) -> IngestPlan:
    """SNAP-style edge list: one edge set ``default`` over entity type ``node``.

    Undirected graphs set ``undirected`` (both directions stored); when the file already
    lists both directions, ``dedupe`` collapses the doubled pairs, so every undirected
    edge is stored exactly twice and a self-loop once. Optional labels become the int64
    node column ``label``; ``index_base`` creates every node ``base .. base+nodes-1``.
    """
    ds = fetched.dataset
    g = ds.graph
    plan = IngestPlan(
        edges=[edge_source(fetched, g["edges"], src=g["src"], dst=g["dst"])],
        undirected=not g["directed"],
        dedupe=not g["directed"] and g["both_directions"],
    )
    plan.metadata["directed"] = g["directed"]
    if "index_base" in g:
        base = g["index_base"]
        ids = np.arange(base, base + ds.stats["nodes"], dtype=np.int64)
        plan.nodes.append(NodeSource(pa.table({"id": ids})))
        plan.metadata["index_base"] = base
    if "labels" in g:
        f = ds.file(g["labels"])
        table = read_text_table(fetched.path(g["labels"]), f,
                                {g["label_id"]: pa.int64(), g["label"]: pa.int64()})
        plan.nodes.append(NodeSource(pa.table({"id": table.column(g["label_id"]),
                                               "label": table.column(g["label"])})))
        plan.metadata["labels"] = {"label": f"{g['labels']} column {g['label']!r}"}
    return plan


EDGE_LIST = DatasetLoader(load_edge_list, {
    "edges": ("file", True),
    "src": ("column:edges", True),
    "dst": ("column:edges", True),
    "directed": ("bool", True),
    "both_directions": ("bool", True),
    "index_base": ("int", False),
    "labels": ("file", False),
    "label_id": ("column:labels", False),
    "label": ("column:labels", False),
})


# -- LINQS citation graphs ---------------------------------------------------------------------

@dataclass
class LinqsContent:
    """A parsed LINQS ``*.content`` file, rows in file order.

    ``ids``: int64 or string Arrow array (N,); ``features``: float32 (N, D) of 0/1 word
    indicators; ``labels``: int64 (N,) in 0..k-1; ``classes``: the k class names, sorted
    (label k is ``classes[k]``).
    """

    ids: pa.Array
    features: np.ndarray
    labels: np.ndarray
    classes: list[str]


def read_linqs_content(path: Path, f: DataFile, *, feature_dim: int, id_type: str
                       ) -> LinqsContent:
    """Parse ``<id> <feature_dim word indicators> <class>`` lines (tab-separated)."""
    id_col, _, label_col = f.format.columns
    words = [f"w{k}" for k in range(feature_dim)]
    table = read_text_table(
        path, f, {id_col: pa.int64() if id_type == "int64" else pa.string(),
                  label_col: pa.string(), **{w: pa.uint8() for w in words}},
        column_names=[id_col, *words, label_col])
    features = np.empty((table.num_rows, feature_dim), np.float32)
    for k, w in enumerate(words):
        features[:, k] = table.column(w).to_numpy()
    names = table.column(label_col).to_numpy(zero_copy_only=False).astype(str)
    classes, labels = np.unique(names, return_inverse=True)
    return LinqsContent(table.column(id_col).combine_chunks(), features,
                        labels.astype(np.int64), [str(c) for c in classes])


def load_linqs(fetched: FetchResult) -> IngestPlan:
    """Cora / CiteSeer: node table with ``feat`` fixed_size_list<float32>[D], ``label``
    int64, ``train_mask``/``val_mask``/``test_mask`` bool; edges citing -> cited.

    Ids that occur only in the citations (CiteSeer) become nodes with zero features,
    label -1 and all masks False.
    """
    ds = fetched.dataset
    g = ds.graph
    content_path = fetched.path(g["content"])
    content = read_linqs_content(content_path, ds.file(g["content"]),
                                 feature_dim=g["feature_dim"], id_type=g["id_type"])
    if content.classes != g["classes"]:
        raise InputError(f"class names {content.classes} differ from graph.classes "
                         f"{g['classes']} of {ds.source}", path=content_path)
    sp = ds.split
    train, val, test = per_class_split(
        content.labels, len(content.classes), seed=sp["seed"],
        train_per_class=sp["train_per_class"], val=sp["val"], test=sp["test"])
    table = pa.table({"id": content.ids, "feat": features_array(content.features),
                      "label": pa.array(content.labels), "train_mask": pa.array(train),
                      "val_mask": pa.array(val), "test_mask": pa.array(test)})
    return IngestPlan(
        edges=[edge_source(fetched, g["cites"], src=g["src"], dst=g["dst"])],
        nodes=[NodeSource(table)],
        undirected=not g["directed"],
        metadata={"directed": g["directed"], "labels": {"label": content.classes},
                  "features": {"feat": f"{g['feature_dim']} binary word indicators"},
                  "split": dict(sp)},
    )


LINQS = DatasetLoader(load_linqs, {
    "content": ("file", True),
    "cites": ("file", True),
    "src": ("column:cites", True),
    "dst": ("column:cites", True),
    "directed": ("bool", True),
    "id_type": ("id_type", True),
    "feature_dim": ("int", True),
    "classes": ("str_list", True),
})


# -- knowledge graph triples -------------------------------------------------------------------

def load_kg_triples(fetched: FetchResult) -> IngestPlan:
    """Triples ``head relation tail``: one edge set per ``graph.edge_sets`` entry, edges
    head -> tail with the relation column; relations are created as they are met, all
    over entity type ``node``."""
    g = fetched.dataset.graph
    edges = [edge_source(fetched, fname, src=g["head"], dst=g["tail"], rel=g["relation"],
                         edge_set=es) for es, fname in g["edge_sets"].items()]
    return IngestPlan(edges=edges, metadata={"edge_sets": list(g["edge_sets"])})


KG_TRIPLES = DatasetLoader(load_kg_triples, {
    "edge_sets": ("file_map", True),
    "head": ("column:edge_sets", True),
    "relation": ("column:edge_sets", True),
    "tail": ("column:edge_sets", True),
})


# -- MovieLens ---------------------------------------------------------------------------------

def read_movielens_items(path: Path, f: DataFile, num_genres: int) -> pa.Table:
    """``u.item`` to a table ``id`` int64, ``feat`` fixed_size_list<float32>[num_genres]
    (the 0/1 genre flags, in ``u.genre`` order) and ``title`` (UTF-8, decoded from the
    file's encoding; a string node column)."""
    id_col, *info_cols, _ = f.format.columns
    genre_cols = [f"genre{k}" for k in range(num_genres)]
    table = read_text_table(
        path, f, {id_col: pa.int64(), **{c: pa.uint8() for c in genre_cols},
                  **{c: pa.string() for c in info_cols}},
        column_names=[id_col, *info_cols, *genre_cols])
    flags = np.stack([table.column(c).to_numpy() for c in genre_cols], axis=1)
    return pa.table({"id": table.column(id_col), "feat": features_array(flags),
                     "title": table.column(info_cols[0]).cast(pa.large_string())})


def load_movielens(fetched: FetchResult, temporal: bool = False) -> IngestPlan:
    """Users and items as entity types, every rating an edge user -> item of relation
    ``rated`` with the rating as float32 weight; the rating and (where the registry names
    one) the timestamp are also kept as edge columns ``rating`` and ``timestamp`` (int64);
    items get the genre features and their ``title`` (a string node column).

    ``temporal``: instead of one edge set, ``train``, ``valid`` and ``test`` by
    :func:`temporal_split` of the ratings' ``graph.timestamp`` column.
    """
    ds = fetched.dataset
    g = ds.graph
    users = read_text_table(fetched.path(g["users"]), ds.file(g["users"]))
    user_ids = users.column(ds.file(g["users"]).format.columns[0]).cast(pa.int64())
    items = read_movielens_items(fetched.path(g["items"]), ds.file(g["items"]), g["num_genres"])
    genres_file = ds.file(g["genres"])
    genres = read_text_table(fetched.path(g["genres"]), genres_file,
                             {genres_file.format.columns[1]: pa.int64()})
    genre_names = genres.column(genres_file.format.columns[0]).to_pylist()
    if len(genre_names) != g["num_genres"]:
        raise InputError(f"{len(genre_names)} genres, graph.num_genres is {g['num_genres']}",
                         path=fetched.path(g["genres"]))
    relation = RelationType(g["relation"], g["user_type"], g["item_type"])
    metadata = {"features": {f"{g['item_type']}.feat": genre_names},
                "weight": f"{g['rating']} (1..5)"}
    if temporal:
        edges, metadata["split"] = _movielens_temporal_edges(fetched)
    else:
        edges = [edge_source(fetched, g["ratings"], src=g["user"], dst=g["item"],
                             weight=g["rating"], relation=g["relation"],
                             edge_columns=_movielens_edge_columns(g))]
    return IngestPlan(
        edges=edges,
        nodes=[NodeSource(pa.table({"id": user_ids}), g["user_type"]),
               NodeSource(items, g["item_type"])],
        relation_types=[relation],
        metadata=metadata,
    )


def load_movielens_temporal(fetched: FetchResult) -> IngestPlan:
    """:func:`load_movielens` with the leave-last-out split by timestamp: edge sets
    ``train``, ``valid`` and ``test`` (:func:`temporal_split`)."""
    return load_movielens(fetched, temporal=True)


def _movielens_edge_columns(g: dict[str, Any]) -> list[str]:
    """The ratings' columns kept as edge columns: the rating, and the timestamp if named."""
    return [g["rating"]] + ([g["timestamp"]] if "timestamp" in g else [])


#: The edge sets of a temporal split, in the order of :func:`temporal_split`'s masks.
TEMPORAL_EDGE_SETS = ("train", "valid", "test")


def temporal_split(users: np.ndarray, items: np.ndarray, timestamps: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leave-last-out split of interactions by time: boolean masks (train, valid, test).

    Each user's interactions are ordered by ``(timestamp, item)``: the item id breaks
    ties between interactions of the same second, so the split is deterministic and
    independent of the file's row order. A user with at least 2 interactions has the last
    one in ``test``; with at least 3, the one before it in ``valid``; the rest are
    ``train`` (the rule of DGL's PinSage example, ``train_test_split_by_time``, whose
    pandas sort leaves ties unordered). Rows equal in user, time and item keep their file
    order. The masks are disjoint and cover every row.

    Parameters
    ----------
    users, items, timestamps : numpy.ndarray
        One row per interaction: user id, item id, time (any integer or float unit,
        compared in its own type; NaN or infinite times are refused).

    Returns
    -------
    train, valid, test : numpy.ndarray
        bool (E,) each.

    Examples
    --------
    >>> import numpy as np
    >>> tr, va, te = temporal_split(np.array([1, 1, 1, 2, 2, 3]),
    ...                             np.array([10, 11, 12, 10, 13, 10]),
    ...                             np.array([5, 9, 9, 1, 0, 7]))
    >>> np.flatnonzero(te).tolist(), np.flatnonzero(va).tolist(), np.flatnonzero(tr).tolist()
    ([2, 3], [1], [0, 4, 5])
    """
    users, items, timestamps = (np.asarray(a) for a in (users, items, timestamps))
    e = len(users)
    if not len(items) == len(timestamps) == e:
        raise InputError(f"users, items and timestamps differ in length ({e}, {len(items)}, "
                         f"{len(timestamps)})")
    if timestamps.dtype.kind == "f" and not np.isfinite(timestamps).all():
        row = int(np.flatnonzero(~np.isfinite(timestamps))[0])
        raise InputError(f"timestamp of row {row} is {timestamps[row]}: every interaction "
                         f"needs a finite one")
    # in the stamps' own type: int64 nanoseconds stay exact (float64 would tie them)
    order = np.lexsort((items, timestamps, users))      # by user, then time, then item
    u_sorted = users[order]
    ends = np.flatnonzero(np.r_[u_sorted[1:] != u_sorted[:-1], True])   # last row per user
    sizes = np.diff(np.r_[-1, ends])
    test = np.zeros(e, bool)
    valid = np.zeros(e, bool)
    test[order[ends[sizes >= 2]]] = True
    valid[order[ends[sizes >= 3] - 1]] = True
    return ~(test | valid), valid, test


def _movielens_temporal_edges(fetched: FetchResult) -> tuple[list[EdgeSource], dict[str, Any]]:
    """The ratings as three in-memory edge sources (:data:`TEMPORAL_EDGE_SETS`) and the
    split's metadata."""
    ds, g = fetched.dataset, fetched.dataset.graph
    if "timestamp" not in g:
        raise GraphsysError(f"dataset {ds.name!r} names no graph.timestamp column; it has "
                            f"no temporal split")
    cols = (g["user"], g["item"], g["rating"], g["timestamp"])
    table = read_text_table(fetched.path(g["ratings"]), ds.file(g["ratings"]),
                            {c: pa.int64() for c in cols})
    user, item, ts = (table.column(c).to_numpy() for c in (g["user"], g["item"],
                                                            g["timestamp"]))
    rating = table.column(g["rating"]).to_numpy()
    masks = temporal_split(user, item, ts)
    kept = _movielens_edge_columns(g)
    sources = [EdgeSource(table=pa.table({"src": user[m], "dst": item[m],
                                          "weight": rating[m].astype(np.float32),
                                          **{c: table.column(c).to_numpy()[m] for c in kept}}),
                          edge_set=name, weight_col="weight", relation=g["relation"],
                          edge_columns=kept)
               for name, m in zip(TEMPORAL_EDGE_SETS, masks)]
    split = {"method": "temporal",
             "rule": "per user, ordered by (timestamp, item id): last interaction -> test, "
                     "the one before -> valid (users with >= 3), the rest -> train",
             **{name: int(m.sum()) for name, m in zip(TEMPORAL_EDGE_SETS, masks)}}
    return sources, split


MOVIELENS = DatasetLoader(load_movielens, {
    "ratings": ("file", True),
    "items": ("file", True),
    "users": ("file", True),
    "genres": ("file", True),
    "user": ("column:ratings", True),
    "item": ("column:ratings", True),
    "rating": ("column:ratings", True),
    "relation": ("str", True),
    "user_type": ("str", True),
    "item_type": ("str", True),
    "num_genres": ("int", True),
    "timestamp": ("column:ratings", False),
})


# -- Planetoid public split ---------------------------------------------------------------------

def _planetoid_plan(fetched: FetchResult, random_split: bool) -> IngestPlan:
    """The plan of the ``planetoid-*`` files, with the public masks or (``random_split``)
    the registry's seeded per-class ones; the files' feature width and labels are checked
    against ``[graph]`` (``feature_dim``; ``num_classes`` or the ``classes`` list)."""
    from graphsys.datasets.planetoid import PARTS, read_planetoid

    ds, g = fetched.dataset, fetched.dataset.graph
    data = read_planetoid({p: fetched.path(f"planetoid-{p}") for p in PARTS})
    classes = g["num_classes"] if "num_classes" in g else len(g["classes"])
    if data.features.shape[1] != g["feature_dim"]:
        raise InputError(f"{data.features.shape[1]} feature columns, expected graph."
                         f"feature_dim = {g['feature_dim']} of {ds.source}",
                         path=fetched.path("planetoid-allx"))
    if data.labels.max() >= classes:
        raise InputError(f"label {data.labels.max()} outside the {classes} classes of "
                         f"{ds.source}", path=fetched.path("planetoid-ally"))
    masks = (data.train_mask, data.val_mask, data.test_mask)
    split = {"method": "public", "reader": ds.split.get("public"),
             **{k: int(m.sum()) for k, m in zip(("train", "val", "test"), masks)}}
    if random_split:
        sp = ds.split
        masks = per_class_split(data.labels, classes, seed=sp["seed"],
                                train_per_class=sp["train_per_class"], val=sp["val"],
                                test=sp["test"])
        split = dict(sp)
    table = pa.table({"id": pa.array(np.arange(data.num_nodes, dtype=np.int64)),
                      "feat": features_array(data.features), "label": pa.array(data.labels),
                      **{k: pa.array(m) for k, m in zip(("train_mask", "val_mask", "test_mask"),
                                                        masks)}})
    edges = pa.table({"src": pa.array(data.src), "dst": pa.array(data.dst)})
    return IngestPlan(
        edges=[EdgeSource(table=edges)], nodes=[NodeSource(table)], undirected=True,
        metadata={"directed": False,
                  "labels": {"label": "Planetoid one-hot column index (the files name no "
                                      "classes; it is not the LINQS class order)"},
                  "features": {"feat": "Planetoid feature rows (allx, tx)"},
                  "split": split},
    )


def load_planetoid(fetched: FetchResult) -> IngestPlan:
    """The public split from the ``planetoid-*`` files: nodes ``0..N-1`` in Planetoid order
    with ``feat``, ``label`` and the three masks, every undirected edge stored both ways
    (see :mod:`graphsys.datasets.planetoid`)."""
    return _planetoid_plan(fetched, random_split=False)


def load_planetoid_random(fetched: FetchResult) -> IngestPlan:
    """As :func:`load_planetoid`, with the masks of the registry's ``per-class-random``
    split (:func:`per_class_split`, seeded) over the Planetoid nodes instead of the public
    ones: the ``planetoid`` loader's own split, for datasets (PubMed) whose only source is
    the Planetoid files. ``[graph]`` gives ``feature_dim`` and ``num_classes``, checked
    against the files."""
    return _planetoid_plan(fetched, random_split=True)


PLANETOID = DatasetLoader(load_planetoid_random, {
    "feature_dim": ("int", True),
    "num_classes": ("int", True),
})


#: ``--split`` choices: ``public`` (the standard split, where the registry has one),
#: ``random`` (the loader's own seeded split) and ``temporal`` (the leave-last-out split by
#: timestamp of an interaction dataset: MovieLens).
SPLITS = ("public", "random", "temporal")

#: Loaders with a temporal split, and the plan they make with it.
TEMPORAL_LOADERS = {"movielens": load_movielens_temporal}


def default_split(dataset) -> str:
    """``public`` where the registry entry has a public split, else ``random``."""
    return "public" if "public" in dataset.split else "random"


def plan_ingest(fetched: FetchResult, split: str | None = None) -> IngestPlan:
    """The :class:`IngestPlan` of a fetched dataset: by its registry ``loader``, or the
    public split reader; ``split`` None = :func:`default_split`."""
    ds = fetched.dataset
    split = split or default_split(ds)
    if split not in SPLITS:
        raise GraphsysError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if split == "public":
        if "public" not in ds.split:
            raise GraphsysError(f"dataset {ds.name!r} has no public split (use the random "
                                f"split)")
        return load_planetoid(fetched)
    if split == "temporal":
        if ds.loader not in TEMPORAL_LOADERS:
            raise GraphsysError(f"dataset {ds.name!r} has no temporal split (only "
                                f"interaction datasets with timestamps: loader "
                                f"{', '.join(TEMPORAL_LOADERS)})")
        return TEMPORAL_LOADERS[ds.loader](fetched)
    return DATASET_LOADERS.get(ds.loader).load(fetched)


def ingest_dataset(fetched: FetchResult, out: str | Path,
                   options: IngestOptions | None = None, split: str | None = None
                   ) -> tuple[IngestReport, dict[str, Any]]:
    """Ingest a fetched dataset into the graph directory ``out``.

    ``options`` gives partitions, partitioner, memory limit and progress; the dataset
    decides ``undirected``, ``dedupe`` and ``relation_types``. The provenance (see
    :func:`dataset_metadata`) is stored as the manifest's ``metadata`` field; returns the
    ingest report and that metadata. ``split``: see :func:`plan_ingest`.
    """
    plan = plan_ingest(fetched, split)
    metadata = {**dataset_metadata(fetched, plan),
                "ingest_split": split or default_split(fetched.dataset)}
    opts = dataclasses.replace(options or IngestOptions(), undirected=plan.undirected,
                               dedupe=plan.dedupe, relation_types=plan.relation_types,
                               metadata=metadata)
    report = ingest_sources(plan.edges, out, opts, plan.nodes)
    return report, metadata


def load_dataset(name: str, out: str | Path, *, partitions: int = 1,
                 partitioner: str = "hash", split: str | None = None,
                 cache: str | Path | None = None, mirror: str | Path | None = None,
                 memory_limit: int | str = "2GB", progress: bool = False,
                 log: Callable[[str], None] | None = None):
    """Fetch a registry dataset by name and ingest it as a graph directory.

    The files come from the cache, else from a local mirror, else from the original
    publisher; every file is verified by sha256 (:func:`graphsys.datasets.fetch.fetch`).
    The dataset's registry entry decides how its files become a graph (direction,
    deduplication, relation types, node features and labels, the split); its provenance
    (licence, citation, input digests) is stored in the graph's manifest ``metadata``.
    ``graphsys datasets ingest NAME --out DIR`` does the same on the command line.

    Parameters
    ----------
    name : str
        A registry name: ``"cora"``, ``"fb15k-237"``, ... (``graphsys datasets list``, or
        ``graphsys.datasets.load_registry()``).
    out : str or path-like
        The graph directory to create; one that already holds this dataset (the same
        registry files, split, partitions and partitioner: a second run) is opened as it
        is, one that holds anything else is refused.
    partitions : int, default 1
        Number of partitions ``P``.
    partitioner : str, default "hash"
        A registered partitioning strategy (:func:`partitioners.get_partitioner`).
    split : {"public", "random", "temporal"}, optional
        The standard split where the dataset has one (Planetoid's for Cora, CiteSeer,
        PubMed), the dataset's seeded random split, or (MovieLens) the leave-last-out split
        by timestamp: edge sets ``train``, ``valid``, ``test``
        (:func:`temporal_split`); default: the public split where there is one.
    cache : str or path-like, optional
        Cache directory (default ``$GRAPHSYS_DATA``, else ``~/.cache/graphsys/datasets``).
    mirror : str or path-like, optional
        A local mirror to copy files from instead of downloading (default
        ``$GRAPHSYS_MIRROR``).
    memory_limit : int or str, default "2GB"
        Memory budget of the ingest, in bytes or as ``"512MiB"``, ``"2GB"``.
    progress : bool, default False
        Show the ingest's progress bars.
    log : callable, optional
        Called with one line per file copied from the mirror or downloaded.

    Returns
    -------
    Graph
        The ingested graph, opened.

    Raises
    ------
    GraphsysError
        An unknown dataset name or split, a file whose digest does not match, a failed
        download, an ingest failure, or an ``out`` that holds another graph.

    See Also
    --------
    graphsys.datasets.registry.get_dataset : the registry entry alone (licence, citation,
        published counts, files).

    Examples
    --------
    With a mirror or network access (Cora's 5,429 undirected links are stored in both
    directions):

    >>> import tempfile
    >>> from graphsys.datasets import load_dataset
    >>> g = load_dataset("cora", tempfile.mkdtemp() + "/cora")  # doctest: +SKIP
    >>> g.num_nodes(), g.edge_set().num_edges  # doctest: +SKIP
    (2708, 10556)
    """
    from graphsys.datasets.existing import open_existing
    from graphsys.datasets.fetch import fetch
    from graphsys.datasets.registry import get_dataset
    from graphsys.storage.graph import open_graph
    from graphsys.units import parse_size

    ds = get_dataset(name)
    held = open_existing(out, ds, split or default_split(ds), partitions, partitioner)
    if held is not None:  # a second run: the dataset is there already
        return held
    fetched = fetch(ds, cache=cache, mirror=mirror, log=log)
    opts = IngestOptions(partitions=partitions, partitioner=partitioner,
                         memory_limit=parse_size(memory_limit, field="memory_limit"),
                         progress=progress)
    ingest_dataset(fetched, out, opts, split)
    return open_graph(out)


def dataset_metadata(fetched: FetchResult, plan: IngestPlan) -> dict[str, Any]:
    """Provenance of an ingested dataset: name, licence, citation, the sha256 of every
    input file, and the plan's metadata (label names, split, features)."""
    ds = fetched.dataset
    return {
        "dataset": ds.name,
        "title": ds.title,
        "kind": ds.kind,
        "licence": {"name": ds.licence.name, "terms": ds.licence.terms,
                    "redistribute": ds.licence.redistribute},
        "citation": list(ds.citation),
        "inputs": {n: {"sha256": f.sha256, "bytes": f.bytes}
                   for n, f in fetched.files.items()},
        **plan.metadata,
    }
