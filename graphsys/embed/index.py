"""Nearest-neighbour indexes of trained embeddings, built with faiss (an optional extra:
``pip install 'graphsys[faiss]'``; never imported unless an index is built or opened).

Kinds (:data:`KINDS`): ``flat`` (exact inner product), ``ivf`` (k-means into ``nlist``
cells, ``nprobe`` searched) and ``hnsw`` (``hnsw_m`` links per node, ``ef_search``
candidates per query); similarity ``by`` is ``cos`` (unit rows) or ``dot``. Row ``i`` is the
entity with type-global id ``i``. An approximate index is tuned when built
(:func:`tune_search`: the smallest setting reaching ``target_recall`` on 500 rows, the
recall then measured on 500 held-out rows).

Stored as ``CKPT/index/{entity_type}.{by}.faiss`` (faiss's own format, no pickle) and a
``.json`` record (``INDEX_FORMAT``, ``checkpoint_version``, ``kind``, ``params``, the faiss
file's ``bytes`` and ``sha256``, ``recall``, ...), both written atomically, the JSON last.
The size and hash are checked before faiss reads the file. An index of another version than
the committed one is stale (:class:`StaleIndexError`): :func:`open_index` refuses it and
:meth:`Embeddings.nearest <graphsys.embed.embeddings.Embeddings.nearest>` warns and
searches exactly instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import FormatError, GraphsysError, ParameterError, check_count, check_real
from graphsys.storage import file_rules
from graphsys.storage.atomic import atomic_path, sha256_file, write_bytes_atomic
from graphsys.storage.lock import writer_lock

KINDS = ("flat", "ivf", "hnsw")
#: The recall@k (against the exact top-k, on rows of the table as queries) that an index
#: built without an explicit ``ef_search`` / ``nprobe`` is tuned to reach
TARGET_RECALL = 0.95
#: k of the recall an index is tuned for and reported with (``nearest``'s default k)
RECALL_K = 10
#: Queries a recall is tuned on, and as many others, held out, on which it is reported
RECALL_QUERIES = 500
#: A setting is kept when the tuning queries' mean recall, less this many standard errors
#: of that mean, reaches the target: the recall of other queries then does too, but for
#: about one time in 40 (recall varies widely from query to query on hard tables)
RECALL_MARGIN_SE = 2.0
#: The search settings tried, smallest first, when tuning: HNSW's ``ef_search`` and IVF's
#: ``nprobe`` double from these until the target recall is reached (or the largest)
EF_SEARCH_STEPS = tuple(16 << i for i in range(9))  # 16 ... 4096
NPROBE_STEPS = tuple(1 << i for i in range(15))  # 1 ... 16384 (capped at nlist)
MEASURES = ("cos", "dot")
INDEX_FORMAT = "graphsys-faiss-index"
INDEX_DIR = "index"
#: Rows normalised and added per step while building (bounded memory besides the index).
ADD_ROWS = 1 << 16
#: Searches of fewer queries run on one OpenMP thread: faiss parallelises over queries, so
#: a few queries gain nothing from more threads, and on a busy machine the idle threads'
#: barrier spinning costs a few queries far more than their search (see docs/benchmarks.md).
FEW_QUERIES = 32


class StaleIndexError(GraphsysError):
    """A stored index built from another checkpoint version than the embeddings: its rows
    are not the current embeddings. ``reason`` is the message without the advice."""

    def __init__(self, reason: str, advice: str):
        super().__init__(f"{reason}; {advice}")
        self.reason = reason


@dataclass
class IndexParams:
    """Build and search settings. ``nlist``: IVF cells (default ``round(sqrt(N))``, at
    least 1 and at most ``N // 39`` so that every cell gets training points); ``nprobe``:
    IVF cells searched per query; ``train_rows``: rows sampled (seeded by ``seed``) to train
    the IVF quantizer (default ``min(N, 64 * nlist)``); ``hnsw_m``: HNSW links per node;
    ``ef_construction`` / ``ef_search``: HNSW candidate-list lengths when building /
    searching. ``nprobe`` / ``ef_search`` left None are picked by :func:`tune_search`: the
    smallest of :data:`NPROBE_STEPS` / :data:`EF_SEARCH_STEPS` whose recall@``RECALL_K``
    on a sample of the table reaches ``target_recall``; ``seed`` also draws that sample."""

    nlist: int | None = None
    nprobe: int | None = None
    train_rows: int | None = None
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int | None = None
    seed: int = 0
    target_recall: float = TARGET_RECALL

    #: What faiss accepts, checked before any value reaches it: HNSW's level generator
    #: divides by ``log(M)``, so ``hnsw_m = 1`` crashes the process; the upper bounds keep an
    #: index's memory and a query's work finite.
    LIMITS = {"nlist": (1, 1 << 24), "nprobe": (1, 1 << 24), "train_rows": (1, 1 << 40),
              "hnsw_m": (2, 1024), "ef_construction": (1, 1 << 20), "ef_search": (1, 1 << 20),
              "seed": (0, 2**32 - 1)}

    #: The settings only one kind reads; another kind refuses them away from the default.
    KIND_FIELDS = {"ivf": ("nlist", "nprobe", "train_rows"),
                   "hnsw": ("hnsw_m", "ef_construction", "ef_search")}

    def check(self, kind: str | None = None) -> None:
        """Each value within :data:`LIMITS`; with ``kind``, no other kind's setting set."""
        for owner, names in self.KIND_FIELDS.items():
            for name in names if kind is not None and owner != kind else ():
                if getattr(self, name) != getattr(IndexParams, name):
                    raise ParameterError(name, f"is a setting of {owner} indexes, not of "
                                               f"{kind}")
        check_real("target_recall", self.target_recall, low=0, high=1, low_open=True)
        for name, (lo, hi) in self.LIMITS.items():
            v = getattr(self, name)
            if v is None:
                continue
            setattr(self, name, check_count(name, v, minimum=lo, maximum=hi))


def require_faiss():
    """The faiss module, or a one-line :class:`GraphsysError` saying how to install it."""
    try:
        import faiss
    except ImportError:
        raise GraphsysError("faiss is not installed: pip install 'graphsys[faiss]' "
                            "(faiss-cpu)") from None
    return faiss


def _prepared(rows: np.ndarray, by: str) -> np.ndarray:
    """float32 C-contiguous copy of ``rows`` ``(n, d)``, unit length when ``by`` is cos
    (zero rows stay zero)."""
    x = np.array(rows, dtype=np.float32, order="C", copy=True)
    if by == "cos":
        np.divide(x, np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12), out=x)
    return x


class _Rows:
    """Type-global row access over a list of ``(n_p, d)`` partition arrays."""

    def __init__(self, parts: list[np.ndarray]):
        self.parts = parts
        self.offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(
            np.int64)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def take(self, ids: np.ndarray) -> np.ndarray:
        """Rows of sorted ids."""
        part = np.searchsorted(self.offsets, ids, side="right") - 1
        return np.concatenate([self.parts[p][ids[part == p] - self.offsets[p]]
                               for p in np.unique(part)])

    def blocks(self):
        for part in self.parts:
            for start in range(0, len(part), ADD_ROWS):
                yield part[start:start + ADD_ROWS]


def build_index(parts: list[np.ndarray], kind: str, by: str = "cos",
                params: IndexParams | None = None):
    """A faiss index of the rows of ``parts`` (float32 ``(n_p, d)`` arrays, e.g. the
    memory-mapped partitions of one entity type, concatenated in id order), of ``kind``
    (:data:`KINDS`) for similarity ``by``. Memory: the index (``N * d * 4`` bytes for flat
    and ivf, plus ``2 * hnsw_m * 4`` bytes per row for hnsw) plus one block of
    :data:`ADD_ROWS` rows and, for ivf, ``train_rows`` rows."""
    faiss = require_faiss()
    if kind not in KINDS:
        raise GraphsysError(f"index kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if by not in MEASURES:
        raise GraphsysError(f"by must be cos or dot, got {by!r}")
    params = params or IndexParams()
    params.check(kind)
    rows = _Rows(parts)
    n = len(rows)
    if n == 0:
        raise GraphsysError("cannot index an entity type with no entities")
    d = int(parts[0].shape[1])
    metric = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, params.hnsw_m, metric)
        index.hnsw.efConstruction = params.ef_construction
        index.hnsw.efSearch = params.ef_search or EF_SEARCH_STEPS[3]  # until tuned
    else:
        nlist = params.nlist or int(round(np.sqrt(n)))
        nlist = max(1, min(nlist, n // 39 or 1))
        params.nlist = nlist
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, metric)
        want = min(n, params.train_rows or 64 * nlist)
        rng = np.random.default_rng(params.seed)
        sample = np.sort(rng.choice(n, want, replace=False)) if want < n else np.arange(n)
        index.cp.seed = params.seed
        index.train(_prepared(rows.take(sample), by))
        index.nprobe = params.nprobe or NPROBE_STEPS[5]  # until tuned
    for block in rows.blocks():
        index.add(_prepared(block, by))
    return index


class NearestIndex:
    """A built or opened faiss index with its settings; :meth:`search` answers queries."""

    def __init__(self, index, kind: str, by: str, params: IndexParams):
        self.index, self.kind, self.by, self.params = index, kind, by, params

    @property
    def num_entities(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int, exclude: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows for raw query vectors float32 ``(q, d)`` (normalised here
        when ``by`` is cos): type-global ids int64 ``(q, k)`` and scores float32 ``(q, k)``,
        best first. ``exclude``: int64 ``(q,)``, a row never returned for its query (the
        query entity itself). Rows the index could not fill (an IVF probe of too few cells)
        hold id -1 and score -inf."""
        kk = min(k + (0 if exclude is None else 1), self.num_entities)
        scores, ids = self._search(_prepared(queries, self.by), kk)
        ids = ids.astype(np.int64)
        scores = np.where(ids < 0, -np.inf, scores).astype(np.float32)
        if exclude is not None:
            drop = ids == np.asarray(exclude, np.int64)[:, None]
            drop[:, -1] |= ~drop.any(axis=1)  # nothing excluded: drop the (k+1)-th
            keep = ~drop
            ids = ids[keep].reshape(len(ids), kk - 1)
            scores = scores[keep].reshape(len(ids), kk - 1)
        return ids[:, :k], scores[:, :k]

    def set_search(self, value: int) -> None:
        """Set the search setting of an approximate index: ``nprobe`` (ivf) or
        ``ef_search`` (hnsw), in the index and its :attr:`params`."""
        if self.kind == "ivf":
            self.index.nprobe = self.params.nprobe = int(value)
        elif self.kind == "hnsw":
            self.index.hnsw.efSearch = self.params.ef_search = int(value)

    def _search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if len(x) >= FEW_QUERIES:
            return self.index.search(x, k)
        faiss = require_faiss()
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            return self.index.search(x, k)
        finally:
            faiss.omp_set_num_threads(threads)

    def save(self, ckpt: str | Path, entity_type: str, version: int,
             seconds: float = 0.0, recall: dict[str, Any] | None = None
             ) -> tuple[Path, Path]:
        """Write the index into ``ckpt``'s index directory for ``entity_type`` (see the
        module docstring), with its measured ``recall`` (:func:`tune_search`); returns the
        faiss file's and the JSON's paths."""
        faiss = require_faiss()
        data, meta_path = index_paths(ckpt, entity_type, self.by)
        data.parent.mkdir(parents=True, exist_ok=True)
        # one writer at a time: two saves at once paired one's file with the other's JSON
        with writer_lock(data.parent):
            try:
                with atomic_path(data, overwrite=True) as tmp:
                    faiss.write_index(self.index, str(tmp))
                    digest, size = sha256_file(tmp), tmp.stat().st_size
                meta = {"format": INDEX_FORMAT, "checkpoint_version": int(version),
                        "entity_type": entity_type, "by": self.by, "kind": self.kind,
                        "num_entities": self.num_entities, "dimension": int(self.index.d),
                        "params": asdict(self.params), "sha256": digest, "bytes": size,
                        "seconds": round(seconds, 3)}
                if recall is not None:
                    meta["recall"] = recall
                write_bytes_atomic(meta_path, json.dumps(meta, indent=1).encode() + b"\n")
            except OSError as exc:
                raise GraphsysError(f"{data}: cannot write ({exc.strerror or exc})") from None
        return data, meta_path


def exact_neighbours(rows: _Rows, ids: np.ndarray, by: str, k: int) -> np.ndarray:
    """The exact ``k`` best rows of each query row ``ids`` (int64, type-global) by ``by``,
    leaving out the query itself: int64 ``(q, k)``, best first. One blocked pass over the
    rows (:data:`ADD_ROWS` at a time, float32 matrix products), a running top-k."""
    q = _prepared(rows.take(np.sort(ids)), by)[np.argsort(np.argsort(ids))]
    best_s = np.full((len(ids), k), -np.inf, np.float32)
    best_i = np.full((len(ids), k), -1, np.int64)
    start = 0
    for block in rows.blocks():
        scores = q @ _prepared(block, by).T
        here = np.arange(start, start + len(block))
        scores[here[None, :] == ids[:, None]] = -np.inf  # not the query itself
        kk = min(k, scores.shape[1])
        top = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(scores, top, 1)], axis=1)
        cand_i = np.concatenate([best_i, top + start], axis=1)
        keep = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s = np.take_along_axis(cand_s, keep, 1)
        best_i = np.take_along_axis(cand_i, keep, 1)
        start += len(block)
    return best_i


def search_recall(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per query, the share of ``want``'s ids (the exact top-k, ``(q, k)``) that ``got``
    (``(q, k)``, an approximate search's) holds: float64 ``(q,)``; its mean is the search's
    recall@k (how much of the exact answer an approximate index finds, not a ranking's
    recall: :func:`graphsys.ranking.recall_at_k`)."""
    return np.array([len(set(np.asarray(a).tolist()) & set(np.asarray(b).tolist())) / len(b)
                     for a, b in zip(got, want)], np.float64)


def tune_search(built: NearestIndex, rows: _Rows, *, k: int = RECALL_K,
                queries: int = RECALL_QUERIES) -> dict[str, Any]:
    """Measure the recall@``k`` of ``built`` against the exact top-``k``
    (:func:`exact_neighbours`) and, for an approximate index whose search setting was not
    given (``nprobe`` for ivf, ``ef_search`` for hnsw left None in its params), pick the
    smallest setting of :data:`NPROBE_STEPS` / :data:`EF_SEARCH_STEPS` whose recall on
    ``queries`` rows of the table reaches ``params.target_recall`` with a margin (the mean
    less :data:`RECALL_MARGIN_SE` standard errors; the largest setting when none does). The
    recall is then reported on ``queries`` *other* rows, held out from the tuning. Queries
    are rows drawn with ``params.seed``, as ``nearest(id, k)`` asks: the query row itself
    never counts.

    Returns
    -------
    dict
        ``k``, ``recall`` (held out), ``queries`` (held out), ``tuned_recall`` and
        ``tuned_lower`` (mean and its margin-lowered value on the tuning queries, when
        tuned), ``target`` and ``reached`` (when tuned), and the setting: ``nprobe`` or
        ``ef_search`` (picked or given).
    """
    n = built.num_entities
    k = min(k, n - 1)
    if k < 1:
        return {"k": k, "recall": 1.0, "queries": 0}
    rng = np.random.default_rng(built.params.seed)
    draw = rng.choice(n, min(n, 2 * queries), replace=False)
    tune_ids, held_ids = draw[: len(draw) // 2], draw[len(draw) // 2:]
    if len(tune_ids) == 0:
        tune_ids = held_ids
    want = exact_neighbours(rows, draw, built.by, k)
    want_tune, want_held = want[: len(tune_ids)], want[len(draw) - len(held_ids):]
    name = {"ivf": "nprobe", "hnsw": "ef_search"}.get(built.kind)

    def recall(ids: np.ndarray, truth: np.ndarray) -> np.ndarray:
        got, _ = built.search(rows.take(np.sort(ids))[np.argsort(np.argsort(ids))], k,
                              exclude=ids)
        return search_recall(got, truth)

    out: dict[str, Any] = {"k": k}
    if name is not None and getattr(built.params, name) is None:
        target = built.params.target_recall
        steps = EF_SEARCH_STEPS if name == "ef_search" else [
            s for s in NPROBE_STEPS if s < built.params.nlist] + [built.params.nlist]
        mean = lower = 0.0
        for value in steps:
            built.set_search(value)
            per_query = recall(tune_ids, want_tune)
            mean = float(per_query.mean())
            lower = mean - RECALL_MARGIN_SE * float(per_query.std() / np.sqrt(len(per_query)))
            if lower >= target:
                break
        out.update(tuned_recall=round(mean, 4), tuned_lower=round(lower, 4), target=target,
                   reached=bool(lower >= target))
    if name is not None:
        out[name] = getattr(built.params, name)
    out.update(recall=round(float(recall(held_ids, want_held).mean()), 4),
               queries=len(held_ids))
    return out


def index_paths(ckpt: str | Path, entity_type: str, by: str) -> tuple[Path, Path]:
    """The faiss file and JSON of the ``by`` index of ``entity_type`` in checkpoint ``ckpt``."""
    base = Path(ckpt) / INDEX_DIR
    return base / f"{entity_type}.{by}.faiss", base / f"{entity_type}.{by}.json"


def open_index(ckpt: str | Path, entity_type: str, by: str, *, version: int,
               num_entities: int, dimension: int) -> NearestIndex | None:
    """The stored ``by`` index of ``entity_type`` in ``ckpt``, or ``None`` when there is
    none. Raises a one-line error when it was built from another checkpoint version
    (:class:`StaleIndexError`) or another table shape (``num_entities``, ``dimension``),
    when its file does not match the recorded sha256, or when faiss is missing."""
    data, meta_path = index_paths(ckpt, entity_type, by)
    if not meta_path.is_file():
        return None
    meta = file_rules.read_json(ckpt, meta_path)  # a regular file inside the checkpoint
    if not isinstance(meta, dict) or meta.get("format") != INDEX_FORMAT:
        raise FormatError(f"{meta_path}: not a graphsys faiss index")
    built = meta.get("checkpoint_version")
    if built != version:
        older = isinstance(built, int) and built < version  # the usual case: trained on
        what = "index is older than the embeddings: built" if older else "index built"
        raise StaleIndexError(f"{meta_path}: {what} for checkpoint version {built}, the "
                              f"checkpoint is at version {version}",
                              "rebuild it (graphsys embed index) or remove it")
    if meta.get("num_entities") != num_entities or meta.get("dimension") != dimension:
        raise FormatError(f"{meta_path}: index of {meta.get('num_entities')} x "
                          f"{meta.get('dimension')} rows, the checkpoint has {num_entities} x "
                          f"{dimension}")
    if meta.get("kind") not in KINDS:
        raise FormatError(f"{meta_path}: unknown index kind {meta.get('kind')!r}")
    size = file_rules.file_size(ckpt, data)
    if meta.get("bytes", size) != size:   # before the hash: a sparse terabyte took hours
        raise FormatError(f"{data}: {size:,} bytes, the {meta_path.name} record says "
                          f"{meta['bytes']!r} (damaged or replaced; rebuild it)")
    digest = file_rules.sha256(ckpt, data)
    if digest != meta.get("sha256"):
        raise FormatError(f"{data}: sha256 {digest[:12]}... does not match the "
                          f"{meta_path.name} record (damaged or replaced; rebuild it)")
    faiss = require_faiss()
    try:
        index = faiss.read_index(str(data))
    except RuntimeError as exc:
        raise FormatError(f"{data}: faiss cannot read it ({str(exc).splitlines()[0]})"
                          ) from None
    if int(index.ntotal) != num_entities or int(index.d) != dimension:
        raise FormatError(f"{data}: holds {index.ntotal} x {index.d} rows, its record says "
                          f"{num_entities} x {dimension}")
    fields = IndexParams.__dataclass_fields__
    recorded = meta.get("params") or {}
    params = IndexParams(**{k: v for k, v in recorded.items() if k in fields}) \
        if isinstance(recorded, dict) else None
    try:   # the record has no checksum: nprobe "x" or 10**20 raised raw faiss/SWIG errors
        if params is None:
            raise ParameterError("params", f"must be a table, got {recorded!r}")
        params.check()
    except ParameterError as exc:
        raise FormatError(f"{meta_path}: search settings: {exc}") from None
    if meta["kind"] == "ivf" and params.nprobe is not None:
        index.nprobe = params.nprobe
    elif meta["kind"] == "hnsw" and params.ef_search is not None:
        index.hnsw.efSearch = params.ef_search
    return NearestIndex(index, meta["kind"], by, params)


def build_and_save(emb, kind: str, by: str = "cos", entity_type: str | None = None,
                   params: IndexParams | None = None) -> dict[str, Any]:
    """Build the ``kind`` index of ``entity_type`` of the checkpoint embeddings ``emb``
    (:class:`~graphsys.embed.embeddings.Embeddings`), tune its search setting to
    ``params.target_recall`` when none is given and measure its recall@10 on held-out
    queries (:func:`tune_search`), and store it in its directory; returns the recorded
    figures (the index JSON, with ``recall``)."""
    if emb.storage is None:
        raise GraphsysError(f"{emb.path}: indexes are stored in embedding checkpoints; this "
                            f"is a GNN embedding directory")
    t = emb._etype(entity_type)
    params = params or IndexParams()
    t0 = time.perf_counter()
    parts = emb.partitions(t)
    built = NearestIndex(build_index(parts, kind, by, params), kind, by, params)
    seconds = time.perf_counter() - t0
    recall = tune_search(built, _Rows(parts))
    recall["seconds"] = round(time.perf_counter() - t0 - seconds, 3)
    _, meta_path = built.save(emb.path, t, emb.version, seconds, recall)
    emb.forget_index(t, by)
    return json.loads(meta_path.read_text())
