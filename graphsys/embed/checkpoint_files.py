"""Checkpoint directory: versioned, memory-mappable NumPy files; never pickle.

:class:`CheckpointStorage` owns the layout (``embeddings/``, ``optim/``, ``model/`` files
per version ``N``, ``config.json`` and ``checkpoint.json``, described in ``docs/embed.md``,
"The checkpoint directory"). Every ``.npy`` is written with ``allow_pickle=False`` and
opened with ``mmap_mode="r"``. ``checkpoint.json`` names the committed version and is
replaced atomically only after every file of the version is on disk; it lists the sha256 of
every file of that version (:meth:`CheckpointStorage.verify_files`) and, per entity type
and partition, the sha256 of the original ids in row order (:func:`id_digests`), both
checked by loads, resumes and growth. Files above the committed version are leftovers of
an interrupted epoch and are removed on resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from graphsys.embed.stats import EpochStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import file_rules
from graphsys.storage.atomic import (
           atomic_path,
           fsync_path,
           sha256_file,
           sync_files,
           write_bytes_atomic,
)
from graphsys.storage.identity import (  # noqa: F401 (the digests of checkpoint.json)
           check_nodes,
           id_digests,
)

if TYPE_CHECKING:
    from graphsys.storage.graph import Graph

FORMAT = "graphsys-embeddings"
FORMAT_VERSION = 1
META = "checkpoint.json"
_VERSIONED = re.compile(r"\.v(\d{6,})\.npy$")


#: Fields of ``checkpoint.json`` that readers index, with their JSON types (checked where
#: present; those of :data:`META_REQUIRED` must be)
META_FIELDS = {"epochs_done": int, "dimension": int, "num_partitions": int,
               "entity_types": dict, "relations": list, "stats": list, "history": list,
               "graph": str}
META_REQUIRED = ("epochs_done", "dimension", "entity_types")
_JSON_NAMES = {int: "integer", dict: "object", list: "list", str: "string"}


def stream_seed(*parts: int) -> int:
    """The seed (uint32 range) of the generator of one purpose of a run, from the config's
    ``seed`` and the purpose's coordinates (each taken modulo 2**32); stable across runs,
    processes and platforms."""
    return int(np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts]).generate_state(1)[0])


def check_fields(meta: dict[str, Any], path: Path) -> None:
    """Raise :class:`FormatError` naming the first field of ``meta`` (a ``checkpoint.json``
    at ``path``) that a reader would index and that has the wrong shape: the file carries no
    checksum of its own, so an edit or a flipped byte must not surface as a KeyError or
    TypeError deep in a reader."""
    for key, typ in META_FIELDS.items():
        value = meta.get(key)
        if (value is None and key in META_REQUIRED) or (value is not None and (
                not isinstance(value, typ) or isinstance(value, bool))):
            raise FormatError(f"{path}: field {key!r} must be a JSON {_JSON_NAMES[typ]}")
    if meta["dimension"] < 1:   # every row is read and allocated by it
        raise FormatError(f"{path}: field 'dimension' must be a positive integer, got "
                          f"{meta['dimension']}")
    for etype, info in meta["entity_types"].items():
        sizes = info.get("partition_sizes") if isinstance(info, dict) else None
        if not isinstance(sizes, list) or not all(_is_count(x) for x in sizes):
            raise FormatError(f"{path}: field 'entity_types.{etype}.partition_sizes' must be "
                              f"a list of node counts")
        digests = info.get("id_digests")
        if digests is not None and not (isinstance(digests, list) and len(digests) == len(sizes)
                                        and all(isinstance(x, str) for x in digests)):
            raise FormatError(f"{path}: field 'entity_types.{etype}.id_digests' must be a list "
                              f"of one sha256 per partition")
    for k, rel in enumerate(meta.get("relations") or []):
        if not isinstance(rel, dict) or not all(isinstance(rel.get(f), str)
                                                for f in ("name", "lhs", "rhs")):
            raise FormatError(f"{path}: field 'relations[{k}]' must give name, lhs and rhs")
    try:
        for stats in meta.get("stats") or []:
            EpochStats.from_json(stats)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise FormatError(f"{path}: field 'stats' is malformed ({exc})") from None
    _check_progress(meta.get("progress"), path)
    grown = meta.get("grown_from")
    if grown is not None and not (
            isinstance(grown, dict) and _is_count(grown.get("version"))
            and isinstance(grown.get("entity_types"), dict) and all(
                isinstance(info, dict) and isinstance(info.get("partition_sizes"), list)
                and all(_is_count(n) for n in info["partition_sizes"])
                for info in grown["entity_types"].values())):
        raise FormatError(f"{path}: field 'grown_from' must give the version and the entity "
                          f"types' partition_sizes it was grown from")


def check_model(meta: dict[str, Any], config, path: Path) -> None:
    """Raise :class:`FormatError` unless ``checkpoint.json``'s model fields (``meta``: the
    dimension, comparator and relation operators a reader scores with) are those of the
    checkpoint's ``config.json`` (``config``, an EmbedConfig: the settings a resumed run
    trains with); an edit of either file scored with one model and trained another."""
    rels = [SimpleNamespace(name=r.get("name")) for r in meta.get("relations") or []]
    for key, have, want in (
            ("dimension", meta.get("dimension"), config.dimension),
            ("comparator", meta.get("comparator"), config.comparator),
            ("relations[].operator", [r.get("operator") for r in meta.get("relations") or []],
             config.relation_operators(rels))):
        if have != want:
            raise FormatError(f"{path / META}: {key} is {have!r}, its config.json says "
                              f"{want!r}")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_progress(progress: Any, path: Path) -> None:
    """FormatError unless ``progress`` (of a commit inside an epoch) is None or gives the
    epoch's ``stats`` and its ``buckets_done`` as ``[i, j]`` pairs."""
    if progress is None:
        return
    try:
        if not isinstance(progress, dict):
            raise TypeError(f"{progress!r} is not an object")
        EpochStats.from_json(progress["stats"])
        done = progress["buckets_done"]
        if not isinstance(done, list) or not all(
                isinstance(b, list) and len(b) == 2 and all(_is_count(x) for x in b)
                for b in done):
            raise TypeError("buckets_done must be a list of [i, j] buckets")
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise FormatError(f"{path}: field 'progress' is malformed ({exc})") from None


def check_graph(meta: dict[str, Any], graph: Graph, where: str | Path, *,
                grown: bool = False) -> dict[str, list[int]] | None:
    """Raise :class:`GraphsysError` unless ``graph`` is shaped like the one the embeddings
    ``where`` were trained on: ``meta`` (a ``checkpoint.json``) records, per entity type, the
    nodes of each partition (``entity_types[t]["partition_sizes"]``) and, in index order, the
    relation types with their lhs/rhs types (``relations``; empty for GNN embeddings). Node
    ids are local to a partition, so another graph (or another partitioning of the same one)
    would silently index the wrong rows, or past the end. ``grown``: the graph may have
    grown by appends since (:func:`~graphsys.storage.identity.check_nodes`); returns then
    the trained rows per partition of every entity type, None when it did not grow."""
    hint = "(wrong --graph, or re-ingested with other partitions?)"
    old = check_nodes(meta["entity_types"], graph, str(where), hint, grown=grown)
    want_rels = [(r["name"], r["lhs"], r["rhs"]) for r in (meta.get("relations") or [])]
    have_rels = [(r.name, r.lhs, r.rhs) for r in graph.relation_types]
    if want_rels and want_rels != have_rels:
        k = next((k for k, (a, b) in enumerate(zip(want_rels, have_rels)) if a != b),
                 min(len(want_rels), len(have_rels)))
        got = have_rels[k] if k < len(have_rels) else "nothing"
        was = want_rels[k] if k < len(want_rels) else "nothing"
        raise GraphsysError(f"{where}: relation {k} was {was} (name, lhs, rhs), the graph "
                            f"{graph.path} has {got} ({len(want_rels)} vs {len(have_rels)} "
                            f"relation types) {hint}")
    return old


def save_npy(path: Path, array: np.ndarray, *, durable: bool = True) -> int:
    """Write ``array`` to ``path`` atomically (temp, fsync, rename); returns bytes written.

    ``durable=False`` skips the fsyncs (still temp + rename): for files of an uncommitted
    version, which :meth:`CheckpointStorage.sync` makes durable before the commit.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if durable:
        with atomic_path(path, overwrite=True) as tmp, open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
    else:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            with open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(array), allow_pickle=False)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return path.stat().st_size


def load_npy(path: Path, *, mmap: bool = False, root: Path | None = None) -> np.ndarray:
    """The array of the checkpoint file ``path`` under the checkpoint directory ``root``
    (default: the file's own directory), read by the file rules of
    :mod:`graphsys.storage.file_rules`: inside ``root``, a regular file, its size that of its
    header (never a FIFO, a device, a symlink out, a truncated file or pickled objects);
    ``mmap``: a read-only memory map. A version's file that is gone because another writer
    (a resumed training) has since committed a later version is said so, in one line."""
    path = Path(path)
    root = path.parent if root is None else Path(root)
    try:
        return file_rules.load_npy(root, path, mmap=mmap)
    except file_rules.MissingFile:
        if m := _VERSIONED.search(path.name):
            check_committed(root, int(m.group(1)))
        raise


def check_committed(root: Path, version: int) -> None:
    """Raise a one-line :class:`GraphsysError` if the checkpoint ``root`` now commits
    another version than ``version`` (the one read): a file of ``version`` found missing
    was dropped by another writer's commit (a resumed training), not lost."""
    with contextlib.suppress(file_rules.FormatError):
        meta = file_rules.read_json(root, META)
        now = meta.get("version") if isinstance(meta, dict) else None
        if isinstance(now, int) and now != version:
            raise GraphsysError(f"{root}: changed by another writer since it was loaded "
                                f"(version {version}, now {now}); load it again") from None


class CheckpointStorage:
    """File names and raw reads/writes of one checkpoint directory (no policy)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def emb_path(self, etype: str, part: int, version: int) -> Path:
        return self.root / "embeddings" / etype / f"part-{part:05d}.v{version:06d}.npy"

    def optim_path(self, etype: str, part: int, version: int) -> Path:
        return self.root / "optim" / etype / f"part-{part:05d}.v{version:06d}.npy"

    def model_path(self, key: str, version: int) -> Path:
        return self.root / "model" / f"{key}.v{version:06d}.npy"

    def has_meta(self) -> bool:
        return (self.root / META).is_file()

    def read_meta(self, *, check_files: bool = True) -> dict[str, Any]:
        """The committed ``checkpoint.json``; with ``check_files`` (the default) every file of
        its version is checked against its recorded sha256 first."""
        path = self.root / META
        try:
            meta = file_rules.read_json(self.root, META)
        except file_rules.MissingFile:
            raise GraphsysError(f"{self.root}: not an embedding checkpoint (no {META})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise FormatError(f"{path}: not a graphsys embedding checkpoint")
        if meta.get("format_version") != FORMAT_VERSION:
            raise FormatError(f"{path}: format_version {meta.get('format_version')} is not "
                              f"{FORMAT_VERSION}")
        if not isinstance(meta.get("version"), int) or meta["version"] < 0:
            raise FormatError(f"{path}: field 'version' must be a non-negative integer")
        check_fields(meta, path)
        if check_files:
            self.verify_files(meta)
        return meta

    def version_files(self, version: int) -> list[Path]:
        """Every file of ``version`` (embeddings, optimizer state, relation parameters)."""
        return sorted(p for p, v in self.versioned_files() if v == version)

    def verify_files(self, meta: dict[str, Any]) -> None:
        """Raise :class:`FormatError` naming the first file of the committed version whose
        sha256 differs from ``meta["files"]``, or that is missing or not listed."""
        files = meta.get("files")
        where = self.root / META
        if not isinstance(files, dict):
            raise FormatError(f"{where}: no file checksums (field 'files'); written by an "
                              f"older graphsys or edited")
        on_disk = {p.relative_to(self.root).as_posix() for p in
                   self.version_files(meta["version"])}
        extra = sorted(on_disk - set(files))
        if extra:
            raise FormatError(f"{self.root / extra[0]}: not listed in {META}")
        for rel, digest in sorted(files.items()):
            f = self.root / rel
            try:
                if rel not in on_disk:
                    raise file_rules.MissingFile(f"{f}: missing (listed in {META})")
                with file_rules.open_regular(self.root, f) as (fd, size, _):
                    # its size against its own header first: a sparse terabyte in its
                    # place was hashed through (minutes to hours) before it was refused
                    file_rules.npy_header(fd, size, f)
                if file_rules.sha256(self.root, f) != digest:
                    raise FormatError(f"{f}: sha256 mismatch (corrupted or modified file)")
            except file_rules.MissingFile:
                check_committed(self.root, meta["version"])  # read before a commit
                raise

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Commit ``meta`` (its ``version``'s files must all be on disk): records the sha256
        of every file of the version, then replaces ``checkpoint.json`` atomically."""
        files = {p.relative_to(self.root).as_posix(): sha256_file(p)
                 for p in self.version_files(meta["version"])}
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, **meta, "files": files}
        write_bytes_atomic(self.root / META, json.dumps(meta, indent=1).encode() + b"\n")

    def write_config(self, config: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(self.root / "config.json",
                           json.dumps(config, indent=1).encode() + b"\n")

    def read_config(self) -> dict[str, Any]:
        config = file_rules.read_json(self.root, "config.json")
        if not isinstance(config, dict):
            raise FormatError(f"{self.root / 'config.json'}: not a JSON object")
        return config

    def versioned_files(self) -> list[tuple[Path, int]]:
        return [(path, int(m.group(1))) for sub in ("embeddings", "optim", "model")
                for path in (self.root / sub).rglob("*.npy")
                if (m := _VERSIONED.search(path.name))]

    def drop_versions(self, keep: int, *, above: bool = True, below: bool = True) -> None:
        """Delete version files other than ``keep`` (those above and/or below it) and temps."""
        for path, v in self.versioned_files():
            if (above and v > keep) or (below and v < keep):
                path.unlink(missing_ok=True)
        for sub in ("embeddings", "optim", "model"):
            for tmp in (self.root / sub).rglob(".*.tmp-*"):
                tmp.unlink(missing_ok=True)

    def sync(self, paths: Iterable[Path]) -> None:
        """Make the files ``paths`` (under :attr:`root`) and their directories durable: an
        fsync each (:func:`~graphsys.storage.atomic.sync_files`), not a sync of the whole
        filesystem, which would wait for other processes' writes too."""
        sync_files(self.root, sorted({Path(p).relative_to(self.root) for p in paths}))

    def sync_dirs(self) -> None:
        for sub in ("embeddings", "optim", "model"):
            base = self.root / sub
            if base.is_dir():
                for d in [base, *[p for p in base.rglob("*") if p.is_dir()]]:
                    fsync_path(d)
