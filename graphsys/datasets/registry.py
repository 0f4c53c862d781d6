"""The dataset registry: one TOML file per dataset, parsed with :mod:`tomllib` and validated.

The registry is data, not code. Each ``<name>.toml`` in the registry directory describes one
dataset: licence and citation, the published counts (``[stats]``), every file with its
relative path in the mirror layout, its sha256 and the publisher's download it derives from
(``[[files]]`` with ``[files.download]`` and ``[files.format]``), how the files become a
graph (``[graph]``, keyed by ``loader``) and the split (``[split]``)::

    schema = 1                       # SCHEMA_VERSION
    name = "cora"                    # = the file name without .toml
    title, description, homepage     # strings (homepage: http(s) URL)
    loader = "linqs"                 # a name in graphsys.plugins.DATASET_LOADERS
    kind = "homogeneous"             # KINDS
    citation = ["..."]               # at least one reference
    [licence]  name, terms, redistribute (bool; false: never ship copies), url (optional)
    [stats]    published counts, non-negative integers (nodes, edges, ...)
    [[files]]  name, path (relative, mirror layout), bytes, sha256, compression (none|gzip)
      [files.download]  url, unpack (none|gzip|tar|zip), member (tar/zip), strip
                        (none|snap-header|matrixmarket-header), path, bytes, sha256 of the
                        derived file
      [files.format]    delimiter, comment, header, columns, line_ending, encoding
                        (absent for documentation files)
    [graph]    keys of the loader's DatasetLoader.graph_keys
    [split]    method (none|edge-sets|per-class-random) [seed, train_per_class, val, test]
               [note] [public = "planetoid": the standard split, read from the files named
               planetoid-<part> for every part of graphsys.datasets.planetoid.PARTS]

The registry directory is, in order: the environment variable ``GRAPHSYS_REGISTRY``;
``<repository>/datasets`` beside the package (source checkout or editable install);
``<sys.prefix>/share/graphsys/datasets`` (installed through the pyproject data-files).

Every problem found while validating raises :class:`graphsys.errors.InputError` naming the
file and the key, e.g. ``datasets/cora.toml: files[0].sha256: must be 64 lowercase hex digits``.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from graphsys.errors import GraphsysError, InputError
from graphsys.plugins import DATASET_LOADERS

#: Version of the TOML layout described in this module.
SCHEMA_VERSION = 1
ENV_REGISTRY = "GRAPHSYS_REGISTRY"

#: Readers of a dataset's standard ("public") split, besides its loader's own split.
PUBLIC_SPLITS = ("planetoid",)
KINDS = ("homogeneous", "knowledge_graph", "bipartite")
UNPACK = ("none", "gzip", "tar", "zip")
STRIP = ("none", "snap-header", "matrixmarket-header")
COMPRESSION = ("none", "gzip")
LINE_ENDINGS = ("lf", "crlf")
ENCODINGS = ("ascii", "utf-8", "latin-1")
ID_TYPES = ("int64", "string")
SPLIT_METHODS = ("none", "edge-sets", "per-class-random")

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

@dataclass(frozen=True)
class DatasetLoader:
    """A dataset family, registered by name in :data:`graphsys.plugins.DATASET_LOADERS`
    (the ``loader`` key of a registry file).

    Attributes
    ----------
    load : callable
        ``load(fetched: FetchResult) -> IngestPlan`` (:mod:`graphsys.datasets.loaders`).
    graph_keys : dict of str to (str, bool)
        The keys of the ``[graph]`` table: key -> (type, required). ``file`` values name a
        ``[[files]]`` entry, ``column:<key>`` values name a column of the file named by
        ``<key>`` (``format.columns``); the other types are ``bool``, ``int``, ``str``,
        ``str_list``, ``file_map`` and ``id_type``.
    """

    load: Any
    graph_keys: dict[str, tuple[str, bool]]


@dataclass(frozen=True)
class Licence:
    """Licence or terms of use. ``redistribute`` is False where copies may not be passed on."""

    name: str
    terms: str
    redistribute: bool
    url: str | None


@dataclass(frozen=True)
class Download:
    """How one registry file is obtained from the original publisher.

    The artifact at ``url`` is unpacked (``unpack``: ``none``, ``gzip``, or ``tar``/``zip``
    with ``member``), a header may be stripped (``strip``), and the result, ``bytes`` long
    with digest ``sha256``, is stored at ``path`` (relative to the cache directory).
    """

    url: str
    unpack: str
    member: str | None
    strip: str
    path: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class FileFormat:
    """Parsing options of a text file.

    ``delimiter`` is one character (``"\\t"``, ``" "``, ``","``, ``"|"``); ``comment`` holds
    the characters that start comment lines (empty: none); ``columns`` names the fields of a
    line in order.
    """

    delimiter: str
    comment: str
    header: bool
    columns: tuple[str, ...]
    line_ending: str
    encoding: str


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset.

    ``path`` is relative to the mirror root and to the cache directory; ``sha256`` and
    ``bytes`` describe the file as it lies in the mirror (``compression`` says whether that
    file is gzip-compressed). ``format`` is None for documentation files.
    """

    name: str
    path: str
    sha256: str
    bytes: int
    compression: str
    download: Download
    format: FileFormat | None


@dataclass(frozen=True)
class Dataset:
    """One validated registry entry (see the module docstring for the TOML layout).

    Attributes
    ----------
    name, title, description, homepage : str
        The entry's name (its key in :func:`load_registry`) and what it says of itself.
    loader, kind : str
        The loader that ingests its files and the kind of graph it makes.
    licence : Licence
        Its terms (``redistribute``: whether a mirror may hold the files).
    citation : tuple of str
        The works to cite.
    stats : dict of str to int
        The figures the publisher states (``nodes``, ``edges``, ...).
    files : tuple of DataFile
        Its files, each with its size and sha256 (:meth:`file` finds one by name).
    graph, split : dict
        The loader's options and the split the entry defines.
    source : pathlib.Path
        The TOML file the entry was read from.

    Examples
    --------
    >>> from graphsys.datasets import get_dataset
    >>> cora = get_dataset("cora")
    >>> cora.title, cora.kind, cora.stats["nodes"], cora.split["method"]
    ('Cora (LINQS)', 'homogeneous', 2708, 'per-class-random')
    >>> cora.file("content").bytes, cora.source.name
    (109653, 'cora.toml')
    """

    name: str
    title: str
    description: str
    homepage: str
    loader: str
    kind: str
    licence: Licence
    citation: tuple[str, ...]
    stats: dict[str, int]
    files: tuple[DataFile, ...]
    graph: dict[str, Any]
    split: dict[str, Any]
    source: Path

    def file(self, name: str) -> DataFile:
        """The ``[[files]]`` entry called ``name``."""
        for f in self.files:
            if f.name == name:
                return f
        raise KeyError(name)

    def summary(self) -> dict[str, Any]:
        """JSON-able description (for ``graphsys datasets list --json``)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "homepage": self.homepage,
            "kind": self.kind,
            "loader": self.loader,
            "licence": {"name": self.licence.name, "terms": self.licence.terms,
                        "redistribute": self.licence.redistribute, "url": self.licence.url},
            "citation": list(self.citation),
            "stats": dict(self.stats),
            "split": dict(self.split),
            "files": [{"name": f.name, "path": f.path, "bytes": f.bytes, "sha256": f.sha256,
                       "url": f.download.url, "member": f.download.member}
                      for f in self.files],
            "registry_file": str(self.source),
        }


# -- locating the registry ---------------------------------------------------------------------

def registry_dir() -> Path:
    """The directory holding the ``*.toml`` entries (see the module docstring for the order)."""
    env = os.environ.get(ENV_REGISTRY)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise GraphsysError(f"{ENV_REGISTRY}={env}: not a directory")
        return path
    source_root = Path(__file__).resolve().parent.parent.parent
    candidates = [source_root / "datasets", Path(sys.prefix) / "share" / "graphsys" / "datasets"]
    for path in candidates:
        if path == candidates[0] and not (source_root / "pyproject.toml").is_file():
            continue  # an installed package: its parent is site-packages, not the repository
        if path.is_dir() and any(path.glob("*.toml")):
            return path
    raise GraphsysError("no dataset registry found (looked in "
                        + ", ".join(str(p) for p in candidates)
                        + f"; set {ENV_REGISTRY} to a directory of <name>.toml files)")


def load_registry(directory: str | Path | None = None) -> dict[str, Dataset]:
    """Every dataset of the registry, parsed and validated.

    Parameters
    ----------
    directory : str or path-like, optional
        A directory of ``<name>.toml`` entries (default :func:`registry_dir`).

    Returns
    -------
    dict of str to Dataset
        The entries by name, sorted by name.

    Raises
    ------
    InputError
        An entry that does not validate, naming the file and the key.

    Examples
    --------
    >>> from graphsys.datasets import load_registry
    >>> registry = load_registry()
    >>> [name for name in registry if name.startswith("c")]
    ['ca-grqc', 'ca-hepth', 'citeseer', 'collegemsg', 'cora']
    """
    root = Path(directory) if directory is not None else registry_dir()
    datasets = {ds.name: ds for ds in map(load_entry, sorted(root.glob("*.toml")))}
    if not datasets:
        raise GraphsysError(f"{root}: no dataset entries (*.toml)")
    return datasets


def get_dataset(name: str, directory: str | Path | None = None) -> Dataset:
    """The registry entry of one dataset: licence, citation, published counts, files.

    Parameters
    ----------
    name : str
        The dataset's registry name (``"cora"``, ``"fb15k-237"``, ...).
    directory : str or path-like, optional
        A directory of ``<name>.toml`` entries (default :func:`registry_dir`).

    Returns
    -------
    Dataset

    Raises
    ------
    GraphsysError
        An unknown name (the message lists the known ones).

    Examples
    --------
    >>> from graphsys.datasets import get_dataset
    >>> fb = get_dataset("fb15k-237")
    >>> fb.kind, fb.loader
    ('knowledge_graph', 'kg_triples')
    >>> get_dataset("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: unknown dataset 'nope'; known datasets: bitcoin-alpha, ...
    """
    datasets = load_registry(directory)
    if name not in datasets:
        raise GraphsysError(f"unknown dataset {name!r}; known datasets: "
                            + ", ".join(datasets))
    return datasets[name]


def load_entry(path: str | Path) -> Dataset:
    """Parse and validate one registry file."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a FIFO blocked the read forever
        raise InputError("cannot read (not a regular file: a directory, a FIFO or a device)",
                         path=path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML ({exc})", path=path) from None
    return _Validator(path).dataset(data)


# -- validation --------------------------------------------------------------------------------

class _Validator:
    """Checks one parsed TOML document; errors name the file and the dotted key."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, message: str):
        raise InputError(f"{key}: {message}", path=self.path)

    def get(self, table: dict, key: str, typ: type | tuple[type, ...], ctx: str = "", *,
            default: Any = ...) -> Any:
        name = f"{ctx}.{key}" if ctx else key
        if key not in table:
            if default is ...:
                self.fail(name, "missing")
            return default
        value = table[key]
        if isinstance(value, bool) and bool not in (typ if isinstance(typ, tuple) else (typ,)):
            self.fail(name, f"must be {_type_name(typ)}, got a boolean")
        if not isinstance(value, typ):
            self.fail(name, f"must be {_type_name(typ)}, got {type(value).__name__}")
        return value

    def choice(self, table: dict, key: str, choices: tuple[str, ...], ctx: str = "", *,
               default: Any = ...) -> str:
        value = self.get(table, key, str, ctx, default=default)
        if value not in choices:
            self.fail(f"{ctx}.{key}" if ctx else key,
                      f"{value!r} is not one of {', '.join(choices)}")
        return value

    def no_extra(self, table: dict, allowed: set[str], ctx: str = ""):
        for key in table:
            if key not in allowed:
                self.fail(f"{ctx}.{key}" if ctx else key,
                          f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def sha256(self, table: dict, key: str, ctx: str) -> str:
        value = self.get(table, key, str, ctx)
        if not _SHA256_RE.fullmatch(value):
            self.fail(f"{ctx}.{key}", "must be 64 lowercase hex digits")
        return value

    def positive(self, table: dict, key: str, ctx: str) -> int:
        value = self.get(table, key, int, ctx)
        if value <= 0:
            self.fail(f"{ctx}.{key}", f"must be positive, got {value}")
        return value

    def rel_path(self, table: dict, key: str, ctx: str) -> str:
        value = self.get(table, key, str, ctx)
        p = PurePosixPath(value)
        if (not value or p.is_absolute() or ".." in p.parts or "\\" in value
                or str(p) != value or value.startswith("./")):
            self.fail(f"{ctx}.{key}", f"{value!r} must be a plain relative path "
                                      f"('/'-separated, no '..', no leading '/')")
        return value

    def url(self, table: dict, key: str, ctx: str) -> str:
        value = self.get(table, key, str, ctx)
        if not re.fullmatch(r"https?://[^\s/]+/\S*", value):
            self.fail(f"{ctx}.{key}", f"{value!r} is not an http(s) URL")
        return value

    # -- sections ------------------------------------------------------------------------------
    def dataset(self, data: dict) -> Dataset:
        self.no_extra(data, {"schema", "name", "title", "description", "homepage", "loader",
                             "kind", "citation", "licence", "stats", "files", "graph", "split"})
        schema = self.get(data, "schema", int)
        if schema != SCHEMA_VERSION:
            self.fail("schema", f"unsupported schema {schema} (this graphsys reads "
                                f"{SCHEMA_VERSION})")
        name = self.get(data, "name", str)
        if not _NAME_RE.fullmatch(name):
            self.fail("name", f"{name!r} must be lowercase letters, digits, '-', '_' or '.'")
        if name != self.path.stem:
            self.fail("name", f"{name!r} differs from the file name {self.path.name!r}")
        loader = self.choice(data, "loader", tuple(DATASET_LOADERS.names()))
        citation = self.get(data, "citation", list)
        if not citation or not all(isinstance(c, str) and c.strip() for c in citation):
            self.fail("citation", "must be a non-empty list of non-empty strings")
        stats = self.get(data, "stats", dict)
        for key, value in stats.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                self.fail(f"stats.{key}", "must be a non-negative integer")
        raw_files = self.get(data, "files", list)
        if not raw_files:
            self.fail("files", "must list at least one file")
        files = tuple(self.data_file(f, f"files[{k}]") for k, f in enumerate(raw_files))
        seen: set[str] = set()
        for k, f in enumerate(files):
            if f.name in seen:
                self.fail(f"files[{k}].name", f"duplicate file name {f.name!r}")
            seen.add(f.name)
        graph = self.graph(self.get(data, "graph", dict), loader, files)
        return Dataset(
            name=name,
            title=self.get(data, "title", str),
            description=self.get(data, "description", str),
            homepage=self.url(data, "homepage", ""),
            loader=loader,
            kind=self.choice(data, "kind", KINDS),
            licence=self.licence(self.get(data, "licence", dict)),
            citation=tuple(citation),
            stats=dict(stats),
            files=files,
            graph=graph,
            split=self.split(self.get(data, "split", dict), loader, files),
            source=self.path,
        )

    def licence(self, table: dict) -> Licence:
        self.no_extra(table, {"name", "terms", "redistribute", "url"}, "licence")
        url = self.url(table, "url", "licence") if "url" in table else None
        return Licence(name=self.get(table, "name", str, "licence"),
                       terms=self.get(table, "terms", str, "licence"),
                       redistribute=self.get(table, "redistribute", bool, "licence"),
                       url=url)

    def data_file(self, table: Any, ctx: str) -> DataFile:
        if not isinstance(table, dict):
            self.fail(ctx, "must be a table")
        self.no_extra(table, {"name", "path", "sha256", "bytes", "compression", "download",
                              "format"}, ctx)
        name = self.get(table, "name", str, ctx)
        if not _NAME_RE.fullmatch(name):
            self.fail(f"{ctx}.name", f"{name!r} must be lowercase letters, digits, '-', '_'")
        fmt = self.get(table, "format", dict, ctx, default=None)
        return DataFile(
            name=name,
            path=self.rel_path(table, "path", ctx),
            sha256=self.sha256(table, "sha256", ctx),
            bytes=self.positive(table, "bytes", ctx),
            compression=self.choice(table, "compression", COMPRESSION, ctx),
            download=self.download(self.get(table, "download", dict, ctx), f"{ctx}.download"),
            format=None if fmt is None else self.file_format(fmt, f"{ctx}.format"),
        )

    def download(self, table: dict, ctx: str) -> Download:
        self.no_extra(table, {"url", "unpack", "member", "strip", "path", "sha256", "bytes"}, ctx)
        unpack = self.choice(table, "unpack", UNPACK, ctx)
        member = None
        if unpack in ("tar", "zip"):
            member = self.rel_path(table, "member", ctx)
        elif "member" in table:
            self.fail(f"{ctx}.member", f"only allowed with unpack = tar or zip, not {unpack!r}")
        return Download(url=self.url(table, "url", ctx), unpack=unpack, member=member,
                        strip=self.choice(table, "strip", STRIP, ctx, default="none"),
                        path=self.rel_path(table, "path", ctx),
                        sha256=self.sha256(table, "sha256", ctx),
                        bytes=self.positive(table, "bytes", ctx))

    def file_format(self, table: dict, ctx: str) -> FileFormat:
        self.no_extra(table, {"delimiter", "comment", "header", "columns", "line_ending",
                              "encoding"}, ctx)
        delimiter = self.get(table, "delimiter", str, ctx)
        if len(delimiter) != 1:
            self.fail(f"{ctx}.delimiter", f"must be one character, got {delimiter!r}")
        columns = self.get(table, "columns", list, ctx)
        if not columns or not all(isinstance(c, str) and c for c in columns):
            self.fail(f"{ctx}.columns", "must be a non-empty list of column names")
        if len(set(columns)) != len(columns):
            self.fail(f"{ctx}.columns", "column names must be distinct")
        return FileFormat(
            delimiter=delimiter,
            comment=self.get(table, "comment", str, ctx, default=""),
            header=self.get(table, "header", bool, ctx),
            columns=tuple(columns),
            line_ending=self.choice(table, "line_ending", LINE_ENDINGS, ctx),
            encoding=self.choice(table, "encoding", ENCODINGS, ctx),
        )

    def graph(self, table: dict, loader: str, files: tuple[DataFile, ...]) -> dict[str, Any]:
        spec = DATASET_LOADERS.get(loader).graph_keys
        self.no_extra(table, set(spec), "graph")
        by_name = {f.name: f for f in files}
        out: dict[str, Any] = {}
        for key, (kind, required) in spec.items():
            ctx = f"graph.{key}"
            if key not in table:
                if required:
                    self.fail(ctx, f"missing (required by loader {loader!r})")
                continue
            value = table[key]
            if kind == "file":
                self.get(table, key, str, "graph")
                self._text_file(by_name, value, ctx)
            elif kind == "file_map":
                self.get(table, key, dict, "graph")
                if not value:
                    self.fail(ctx, "must map at least one edge set to a file")
                for es, fname in value.items():
                    if not isinstance(fname, str):
                        self.fail(f"{ctx}.{es}", "must be a file name")
                    self._text_file(by_name, fname, f"{ctx}.{es}")
            elif kind.startswith("column:"):
                self.get(table, key, str, "graph")
                ref = table.get(kind.split(":", 1)[1])
                targets = list(ref.values()) if isinstance(ref, dict) else [ref]
                for fname in targets:
                    if fname is None:
                        self.fail(ctx, f"needs graph.{kind.split(':', 1)[1]}")
                    columns = by_name[fname].format.columns
                    if value not in columns:
                        self.fail(ctx, f"{value!r} is not a column of file {fname!r} "
                                       f"(columns: {', '.join(columns)})")
            elif kind == "bool":
                self.get(table, key, bool, "graph")
            elif kind == "int":
                if self.get(table, key, int, "graph") < 0:
                    self.fail(ctx, "must be non-negative")
            elif kind == "str":
                self.get(table, key, str, "graph")
            elif kind == "id_type":
                self.choice(table, key, ID_TYPES, "graph")
            elif kind == "str_list":
                self.get(table, key, list, "graph")
                if not value or not all(isinstance(v, str) for v in value):
                    self.fail(ctx, "must be a non-empty list of strings")
                if list(value) != sorted(set(value)):
                    self.fail(ctx, "must be sorted alphabetically with no duplicates "
                                   "(label k is the k-th name)")
            out[key] = value
        if loader == "edge_list" and out.get("index_base", 0) not in (0, 1):
            self.fail("graph.index_base", "must be 0 or 1")
        if loader == "edge_list" and ("labels" in out) != ("label" in out and "label_id" in out):
            self.fail("graph.labels", "labels, label_id and label go together")
        return out

    def _text_file(self, by_name: dict[str, DataFile], fname: str, ctx: str):
        if fname not in by_name:
            self.fail(ctx, f"no file named {fname!r} in [[files]] "
                           f"(files: {', '.join(by_name)})")
        if by_name[fname].format is None:
            self.fail(ctx, f"file {fname!r} has no [files.format] table")

    def split(self, table: dict, loader: str, files: tuple[DataFile, ...]) -> dict[str, Any]:
        from graphsys.datasets.planetoid import PARTS

        method = self.choice(table, "method", SPLIT_METHODS, "split")
        public = None
        if "public" in table:
            public = self.choice(table, "public", PUBLIC_SPLITS, "split")
            names = {f.name for f in files}
            missing = [f"planetoid-{p}" for p in PARTS if f"planetoid-{p}" not in names]
            if missing:
                self.fail("split.public", f"needs files {', '.join(missing)}")
        elif loader == "planetoid":
            self.fail("split.public", 'loader planetoid reads the Planetoid files: set '
                                      'public = "planetoid"')
        if method == "per-class-random":
            self.no_extra(table, {"method", "seed", "train_per_class", "val", "test", "note",
                                  "public"}, "split")
            out = {"method": method, "seed": self.get(table, "seed", int, "split")}
            if out["seed"] < 0:   # raised NumPy's ValueError as the split was drawn
                self.fail("split.seed", f"must be a non-negative integer, got {out['seed']}")
            for key in ("train_per_class", "val", "test"):
                out[key] = self.positive(table, key, "split")
            if loader not in ("linqs", "planetoid"):
                self.fail("split.method", "per-class-random needs labelled nodes (loader "
                                          "linqs or planetoid)")
        elif method == "edge-sets":
            self.no_extra(table, {"method", "note"}, "split")
            if loader != "kg_triples":
                self.fail("split.method", "edge-sets needs loader kg_triples")
            out = {"method": method}
        else:
            self.no_extra(table, {"method", "note"}, "split")
            out = {"method": method}
        if "note" in table:
            out["note"] = self.get(table, "note", str, "split")
        if public is not None:
            out["public"] = public
        return out


def _type_name(typ: type | tuple[type, ...]) -> str:
    names = {bool: "a boolean", int: "an integer", str: "a string", list: "an array",
             dict: "a table"}
    if isinstance(typ, tuple):
        return " or ".join(names.get(t, t.__name__) for t in typ)
    return names.get(typ, typ.__name__)
