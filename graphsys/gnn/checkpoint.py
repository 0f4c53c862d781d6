"""Model checkpoints without pickle: a JSON header and one raw ``.npy`` per tensor.

Layout of a checkpoint directory::

    model.json          {"format": "graphsys-gnn-checkpoint", "version": 1, "config": {...},
                         "tensors": {name: {"file", "shape", "dtype", "sha256"}},
                         "meta": {...}}
    tensors.v{N:06d}/<k>.npy
                        NumPy arrays of save ``N``, written and read with allow_pickle=False

A save commits atomically: it writes a new version directory ``tensors.v{N+1}`` (each file
temp + fsync + rename), fsyncs it, then replaces ``model.json`` (temp + fsync + rename) and
only then deletes older version directories. A kill at any moment leaves either the old
``model.json`` with its intact tensors, or the new one: never a mix. Loading checks every
tensor's sha256, shape and dtype, refuses non-finite values, and reads every file by the
rules of :mod:`graphsys.storage.file_rules` (regular files inside the directory, never a
FIFO or a symlink out; sizes checked against ``model.json`` before a byte of data is read);
it never unpickles anything. Saving refuses non-finite tensors (a diverged model) and takes
the directory's writer lock (:func:`graphsys.storage.lock.writer_lock`): a second saver at
once is refused in one line. The
``config`` (a builtin model's constructor arguments, or a user model's dimensions) and
``meta.train_config`` (a :class:`~graphsys.gnn.config.TrainConfig`) are checked field by
field on load: a hand-edited value is refused in one line naming ``model.json`` and the
field.

Which graph: a model's per-node rows (a learned id embedding, the item bias) and the splits
it re-derives attach to nodes by position, so ``meta.graph_identity`` (:func:`
graph_identity`) records the training graph's digest
(:func:`graphsys.distributed.graph_digest`) and, per entity type, the nodes of each
partition and the sha256 of their original ids (:func:`graphsys.storage.identity.
node_record`). :func:`check_graph` compares them with the graph a checkpoint is used on:
the same ids in the same partitions and order (embedding, recommending, evaluating), and
for a resumed run the very same graph.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.errors import FormatError, GraphsysError, ParameterError, check_count, check_real
from graphsys.storage import file_rules
from graphsys.storage.atomic import fsync_path, make_directory, write_bytes_atomic
from graphsys.storage.identity import check_nodes, check_record, node_record
from graphsys.storage.index_merge import moved_ids
from graphsys.storage.lock import writer_lock

FORMAT = "graphsys-gnn-checkpoint"
VERSION = 1


_VERSION_DIR = re.compile(r"^tensors\.v(\d{6,})$")
_TENSOR_FILE = re.compile(r"^tensors\.v\d{6,}/\d{4,}\.npy$")


#: A builtin model's constructor arguments as :meth:`GNN.config <graphsys.gnn.model.GNN.config>`
#: writes them: integer fields (at least 1) and the dropout (in [0, 1))
_MODEL_INTS = ("in_dim", "hidden_dim", "out_dim", "num_layers", "heads")


def _check_rgcn_config(where: Path, config: dict[str, Any]) -> None:
    """FormatError naming ``config.<field>`` of ``where`` unless ``config`` is what
    :meth:`RGCNLinkModel.config <graphsys.gnn.rgcn_link.RGCNLinkModel.config>` writes."""
    want = {"model", "num_nodes", "num_relations", "hidden", "num_layers", "num_blocks",
            "num_bases", "dropout"}
    # "norm" (optional: checkpoints from before it existed normalise per relation)
    _check_fields(where, set(config) - {"norm"}, want, "an rgcn model")
    if config.get("norm", "relation") not in ("node", "relation"):
        raise FormatError(f"{where}: config.norm is {config['norm']!r}, not 'node' or "
                          f"'relation'")
    nodes = config["num_nodes"]
    if not isinstance(nodes, dict) or not nodes or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in nodes.items()):
        raise FormatError(f"{where}: config.num_nodes must map entity types to node counts")
    for key, low in (("num_relations", 1), ("hidden", 1), ("num_layers", 1),
                     ("num_blocks", 0), ("num_bases", 0)):
        _check_value(where, key, config[key], low)
    _check_value(where, "dropout", config["dropout"])


def _check_temporal_config(where: Path, config: dict[str, Any]) -> None:
    """FormatError naming ``config.<field>`` of ``where`` unless ``config`` is what
    :meth:`TGN.config <graphsys.gnn.temporal.TGN.config>`, :meth:`TGAT.config
    <graphsys.gnn.tgat.TGAT.config>` or :meth:`JODIE.config
    <graphsys.gnn.jodie.JODIE.config>` writes."""
    from graphsys.gnn.config import JODIE, TGAT

    lows = {"num_nodes": 1, "dim": 1, "raw_dim": 0}
    if config["model"] != JODIE:             # JODIE has no attention
        lows["heads"] = 1
    if config["model"] == TGAT:
        lows["num_layers"] = 1
    _check_fields(where, set(config), {"model", *lows}, f"a {config['model']} model")
    for key, low in lows.items():
        _check_value(where, key, config[key], low)


def _check_fields(where: Path, got: set, want: set, model: str) -> None:
    """FormatError naming the first field of ``got`` or ``want`` not in both."""
    if got != want:
        odd = sorted(got ^ want)[0]
        what = "is missing" if odd in want else f"is not a field of {model}"
        raise FormatError(f"{where}: config.{odd} {what}")


def _check_value(where: Path, key: str, value: Any, low: int = 1) -> None:
    """FormatError naming ``config.<key>`` of ``where`` unless ``value`` is an integer >=
    ``low`` (1 or 0) or, for ``dropout``, a finite number in [0, 1)."""
    try:
        if key == "dropout":
            check_real("config.dropout", value, low=0, high=1, high_open=True)
        else:
            check_count(f"config.{key}", value, minimum=low)
    except ParameterError as exc:
        raise FormatError(f"{where}: {exc}") from None


def _check_model_config(where: Path, config: dict[str, Any]) -> None:
    """FormatError naming ``config.<field>`` of ``where`` unless ``config`` is what
    :meth:`GNN.config` writes (a user model, ``module:Factory``: its integer dimensions;
    the R-GCN link model: :func:`_check_rgcn_config`; TGN, TGAT and JODIE:
    :func:`_check_temporal_config`)."""
    from graphsys.gnn.config import RGCN, TEMPORAL_MODELS
    from graphsys.plugins import GNN_MODELS

    model = config.get("model")
    if model == RGCN or model in TEMPORAL_MODELS:
        (_check_rgcn_config if model == RGCN else _check_temporal_config)(where, config)
        return
    if not isinstance(model, str) or (model not in GNN_MODELS and ":" not in model):
        raise FormatError(f"{where}: config.model is {model!r}, not one of "
                          f"{', '.join(GNN_MODELS.names())}, {RGCN}, "
                          f"{', '.join(TEMPORAL_MODELS)} or module:Factory")
    builtin = ":" not in model
    for key, value in config.items():
        if key == "model":
            continue
        if key == "dropout" or key in _MODEL_INTS or not builtin:
            _check_value(where, key, value)
        else:
            raise FormatError(f"{where}: config.{key}: not a field of a {model} model")
    missing = [k for k in (*_MODEL_INTS, "dropout") if builtin and k not in config]
    if missing:
        raise FormatError(f"{where}: config.{missing[0]} is missing")


def _check_train_config(where: Path, raw: Any, model: str) -> None:
    """FormatError naming ``meta.train_config.<field>`` of ``where`` unless ``raw`` builds
    a :class:`~graphsys.gnn.config.TrainConfig` of the checkpoint's ``model`` (its
    ``config.model``)."""
    from graphsys.gnn.config import TrainConfig

    if not isinstance(raw, dict):
        raise FormatError(f"{where}: meta.train_config must be an object")
    try:
        trained = TrainConfig.from_dict(raw).model
    except ParameterError as exc:
        raise FormatError(f"{where}: meta.train_config.{exc.parameter} {exc.message}"
                          ) from None
    except (GraphsysError, TypeError, ValueError) as exc:
        raise FormatError(f"{where}: meta.train_config: {exc}") from None
    if trained != model:   # the settings of another model's run (its own fields unset)
        raise FormatError(f"{where}: meta.train_config.model is {trained!r}, config.model "
                          f"{model!r}")


def save_checkpoint(path: str | Path, state: dict[str, torch.Tensor], config: dict[str, Any],
                    meta: dict[str, Any] | None = None) -> Path:
    """Write ``state`` (name -> tensor) with the JSON-able ``config`` and ``meta`` as a new
    version of the checkpoint ``path``, committed atomically (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The checkpoint directory (created if missing).
    state : dict of str to torch.Tensor
        The tensors, saved as NumPy arrays.
    config : dict
        The model's configuration, as :meth:`GNN.config` writes it (``model`` a builtin
        name or ``module:Factory``), checked again by :func:`load_checkpoint`.
    meta : dict, optional
        Anything else JSON-able (``train_config``, ``graph_identity`` are checked on load).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    GraphsysError
        A non-finite tensor (the previous version stays), another saver holding the lock,
        or a write that fails.

    Examples
    --------
    >>> import os, tempfile, torch
    >>> d = tempfile.mkdtemp() + "/ckpt"
    >>> config = {"model": "mypkg:Net", "in_dim": 3}
    >>> _ = save_checkpoint(d, {"w": torch.ones(3)}, config, {"epoch": 1})
    >>> _ = save_checkpoint(d, {"w": torch.zeros(3)}, config, {"epoch": 2})
    >>> sorted(os.listdir(d))  # the older version is gone once the new one is committed
    ['model.json', 'tensors.v000002']
    >>> save_checkpoint(d, {"w": torch.tensor([float("nan")])}, config)
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: ...: tensor 'w' holds NaN or infinity; not saved ...
    >>> load_checkpoint(d)[2]
    {'epoch': 2}
    """
    path = Path(path)
    arrays = {name: t.detach().cpu().numpy() for name, t in state.items()}
    for name, arr in arrays.items():
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise GraphsysError(f"{path}: tensor {name!r} holds NaN or infinity; not saved "
                                f"(the checkpoint keeps its last good model)")
    make_directory(path, "the checkpoint directory")
    file_rules.check_tree(path, what="checkpoint")
    with writer_lock(path):
        return _save(path, arrays, config, meta)


def _save(path: Path, arrays: dict[str, np.ndarray], config: dict[str, Any],
          meta: dict[str, Any] | None) -> Path:
    vdir, committing = None, False
    try:
        old = sorted((int(m.group(1)), d) for d in (path.iterdir() if path.is_dir() else ())
                     if (m := _VERSION_DIR.match(d.name)) and d.is_dir())  # the versions
        version = old[-1][0] + 1 if old else 1
        vdir = path / f"tensors.v{version:06d}"
        if vdir.exists():
            shutil.rmtree(vdir)
        vdir.mkdir()
        index = {}
        for k, (name, arr) in enumerate(arrays.items()):
            buf = io.BytesIO()
            np.save(buf, arr, allow_pickle=False)
            fname = f"{vdir.name}/{k:04d}.npy"
            write_bytes_atomic(path / fname, buf.getvalue())
            index[name] = {"file": fname, "shape": list(arr.shape), "dtype": str(arr.dtype),
                           "sha256": hashlib.sha256(buf.getvalue()).hexdigest()}
        fsync_path(vdir)
        header = {"format": FORMAT, "version": VERSION, "config": config, "tensors": index,
                  "meta": meta or {}}
        # from here model.json may name vdir (a failed flush after the rename): vdir is
        # kept; unnamed, it is an older version to the next save, which deletes it
        vdir, committing = None, True
        write_bytes_atomic(path / "model.json", json.dumps(header, indent=1).encode())
    except OSError as exc:
        if vdir is not None:
            shutil.rmtree(vdir, ignore_errors=True)
        raise GraphsysError(f"{path}: cannot write the checkpoint ({exc.strerror or exc}); "
                            + ("it holds the previous save or this one, complete" if committing
                               else "the previous one, if any, is intact")) from None
    for _, d in old:
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(path / "tensors", ignore_errors=True)  # a pre-versioned layout
    return path


def load_checkpoint(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any],
                                               dict[str, Any]]:
    """``(state, config, meta)`` of the checkpoint directory ``path``; every problem is a
    one-line error naming the file.

    Parameters
    ----------
    path : str or Path
        A directory :func:`save_checkpoint` wrote.

    Returns
    -------
    state : dict of str to torch.Tensor
        The tensors of the committed version, each checked against its sha256, shape and
        dtype, all finite.
    config : dict
        The model's configuration, checked field by field.
    meta : dict
        What the save recorded (empty if nothing).

    Raises
    ------
    GraphsysError
        ``path`` holds no ``model.json``.
    FormatError
        Anything in it not as :func:`save_checkpoint` writes it.

    Examples
    --------
    >>> import tempfile, torch
    >>> d = tempfile.mkdtemp() + "/ckpt"
    >>> _ = save_checkpoint(d, {"w": torch.arange(3.0)}, {"model": "mypkg:Net", "in_dim": 3})
    >>> state, config, meta = load_checkpoint(d)
    >>> state["w"].tolist(), config["in_dim"], meta
    ([0.0, 1.0, 2.0], 3, {})
    >>> load_checkpoint(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: ...: not a GNN checkpoint (no model.json)
    """
    path = Path(path)
    where = path / "model.json"
    try:
        header = file_rules.read_json(path, "model.json")
    except file_rules.MissingFile:
        raise GraphsysError(f"{path}: not a GNN checkpoint (no model.json)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT \
            or header.get("version") != VERSION:
        raise FormatError(f"{where}: not a {FORMAT} version {VERSION} file")
    tensors = header.get("tensors")
    if not isinstance(tensors, dict) or not isinstance(header.get("config"), dict) \
            or not isinstance(header.get("meta", {}), dict):
        raise FormatError(f"{where}: fields 'tensors', 'config' and 'meta' must be objects")
    _check_model_config(where, header["config"])
    layers = header["config"].get("num_layers")   # a builtin model's layers store tensors
    if ":" not in header["config"]["model"] and isinstance(layers, int) \
            and layers > len(tensors):
        raise FormatError(f"{where}: config.num_layers is {layers}, more than the "
                          f"{len(tensors)} tensors the checkpoint holds")
    if "train_config" in header.get("meta", {}):
        _check_train_config(where, header["meta"]["train_config"], header["config"]["model"])
    if "graph_identity" in header.get("meta", {}):
        _check_identity(where, header["meta"]["graph_identity"])
    state = {}
    for name, entry in tensors.items():
        if not isinstance(entry, dict) or not all(
                isinstance(entry.get(k), str) for k in ("file", "dtype", "sha256")) \
                or not isinstance(entry.get("shape"), list):
            raise FormatError(f"{where}: tensor {name!r} needs string 'file', 'dtype', "
                              f"'sha256' and a list 'shape'")
        if not _TENSOR_FILE.match(entry["file"]):
            raise FormatError(f"{where}: tensor {name!r} has file {entry['file']!r}, not "
                              f"tensors.vNNNNNN/NNNN.npy inside the checkpoint")
        f = path / entry["file"]
        shape = tuple(entry["shape"])
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            # int() of each took 2.5 as 2 and raised a raw OverflowError on infinity
            raise FormatError(f"{where}: tensor {name!r} has shape {entry['shape']!r}, not a "
                              f"list of non-negative integers")
        try:
            dtype = np.dtype(entry["dtype"])
        except (TypeError, ValueError) as exc:
            raise FormatError(f"{where}: tensor {name!r} has a bad dtype ({exc})") from None
        try:
            arr = file_rules.load_npy(path, entry["file"], shape=shape, dtype=dtype,
                                      sha256=entry["sha256"])
        except file_rules.MissingFile:
            raise FormatError(f"{f}: missing (tensor {name!r} of model.json)") from None
        except FormatError as exc:
            raise FormatError(f"{exc} (tensor {name!r})") from None
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise FormatError(f"{f}: tensor {name!r} holds NaN or infinity")
        state[name] = torch.from_numpy(arr)
    return state, header["config"], header.get("meta", {})


def graph_identity(graph) -> dict[str, Any]:
    """What a checkpoint records of its training graph (``meta.graph_identity``):
    ``digest`` (:func:`graphsys.distributed.graph_digest`: partitioning, types, edge sets
    and every node and bucket file) and ``nodes`` (per entity type, the nodes of each
    partition and the sha256 of their original ids: :func:`~graphsys.storage.identity.
    node_record`)."""
    from graphsys.distributed import graph_digest

    return {"digest": graph_digest(graph), "nodes": node_record(graph)}


def _check_identity(where: Path, identity: Any) -> None:
    if not isinstance(identity, dict) or not isinstance(identity.get("digest"), str):
        raise FormatError(f"{where}: meta.graph_identity must hold a digest and nodes")
    check_record(identity.get("nodes"), f"{where}: meta.graph_identity.nodes")


def check_graph(meta: dict[str, Any], graph, where: str | Path, *,
                same_graph: bool = False, grown: bool = False) -> dict[str, list[int]] | None:
    """Refuse, in one line naming ``where``, to use a checkpoint whose ``meta`` (as
    :func:`load_checkpoint` returns it) was trained on a graph whose nodes are not those of
    ``graph`` in the same partitions and order: its per-node rows (learned embeddings, item
    biases) and the splits it re-derives attach by position. ``same_graph`` (resuming a
    run): the graph must be the very one (its digest), edges included. A checkpoint written
    before graphs were recorded is compared by node counts only, as its loaders do.
    ``grown`` (inference): the graph may also be the training graph grown by appends
    (:func:`~graphsys.storage.identity.check_nodes`); returns then the trained nodes per
    partition of every entity type (see :func:`grown_rows`), None when it did not grow."""
    from graphsys.distributed import graph_digest

    identity = meta.get("graph_identity")
    if identity is None:
        return None
    if same_graph and identity["digest"] != graph_digest(graph):
        raise GraphsysError(f"{where}: trained on another graph ({meta.get('graph')}) than "
                            f"{graph.path}, whose nodes, edges or partitions differ; a run "
                            f"resumes on its own graph only (choose a new output directory)")
    return check_nodes(identity["nodes"], graph, str(where), grown=grown and not same_graph)


def grown_rows(state: dict[str, torch.Tensor], prefix: str, graph, etype: str,
               old: list[int]) -> dict[str, torch.Tensor]:
    """``state`` with the per-node rows of ``etype`` under ``prefix`` (a learned id
    embedding, an item bias: tensors whose first dimension is the trained node count
    ``sum(old)``) laid out for ``graph``, the training graph grown by appends: each old
    node's row moves to its new type-global id (partition ``p``'s first ``old[p]`` nodes
    are the trained ones), and a new node gets the mean of its old neighbours' rows in
    every stored edge set (an append joined to the default view or apart: the edge sets
    stored before it join no new node to an old one) when the graph has one entity type,
    else the mean of every old row (a bias: 0)."""
    now = tuple(int(x) for x in graph.partition_sizes(etype))
    n = sum(now)
    where = moved_ids(tuple(old), now)
    is_new = np.ones(n, np.bool_)
    is_new[where] = False
    out = dict(state)
    for key, value in state.items():
        if not key.startswith(prefix) or value.ndim == 0 or value.shape[0] != sum(old):
            continue
        rows = value.new_zeros((n, *value.shape[1:]))
        rows[torch.from_numpy(where)] = value
        if value.ndim == 2:  # embeddings: new nodes from their old neighbours
            fill = value.mean(0, keepdim=True).expand(int(is_new.sum()), -1).clone()
            if len(graph.entity_types) == 1:
                sums, counts = _neighbour_sums(graph, is_new, where, value)
                has = counts > 0
                fill[torch.from_numpy(has)] = torch.from_numpy(
                    sums[has] / counts[has, None]).to(value.dtype)
            rows[torch.from_numpy(is_new)] = fill
        out[key] = rows
    return out


def _neighbour_sums(graph, is_new: np.ndarray, where: np.ndarray, value: torch.Tensor):
    """Per new node (in id order): the sum of its old neighbours' rows of ``value`` (rows
    of old nodes in trained order) over every stored edge set, either direction, and their
    count."""
    old_of = np.full(len(is_new), -1, np.int64)
    old_of[where] = np.arange(len(where))
    new_of = np.cumsum(is_new) - 1
    rows = value.detach().numpy().astype(np.float64)
    sums = np.zeros((int(is_new.sum()), rows.shape[1]))
    counts = np.zeros(int(is_new.sum()), np.int64)
    for s, d, _, _ in graph.iter_edges(list(graph.manifest.edge_sets)):
        s, d = np.asarray(s, np.int64), np.asarray(d, np.int64)
        for a, b in ((s, d), (d, s)):
            m = is_new[a] & ~is_new[b]
            np.add.at(sums, new_of[a[m]], rows[old_of[b[m]]])
            np.add.at(counts, new_of[a[m]], 1)
    return sums, counts


def load_module_state(module: torch.nn.Module, state: dict[str, torch.Tensor], prefix: str,
                      where: str | Path, *, strict: bool = True) -> None:
    """Load the tensors ``prefix.*`` of a checkpoint's ``state`` into ``module``, each
    checked first (name and shape): a checkpoint that does not fit the model rebuilt from
    its config is a one-line :class:`FormatError` naming ``where`` and the tensor, never
    torch's multi-line error. ``strict=False``: tensors the module lacks, and ones the
    checkpoint lacks, are left out."""
    sub = _check_fits(module, state, prefix, where, strict)
    own = module.state_dict()
    module.load_state_dict({k: v for k, v in sub.items() if k in own}, strict=strict)


def build_to_fit(build, state: dict[str, torch.Tensor], prefix: str, where: str | Path
                 ) -> torch.nn.Module:
    """``build()``'s module with the tensors ``prefix.*`` of a checkpoint's ``state`` loaded
    (:func:`load_module_state`), once :func:`check_fits` passed: dimensions in ``model.json``
    (which carries no checksum) that the stored tensors do not have are refused in one line
    before the model's memory is allocated, so an edited ``hidden_dim`` never asks for
    gigabytes."""
    check_fits(build, state, prefix, where)
    module = build()
    load_module_state(module, state, prefix, where)
    return module


def check_fits(build, state: dict[str, torch.Tensor], prefix: str, where: str | Path) -> None:
    """Build ``build()``'s module on torch's ``meta`` device (shapes, no memory) and check
    the tensors ``prefix.*`` of ``state`` against it, as :func:`load_module_state` does;
    a one-line :class:`FormatError` naming ``where`` otherwise, also for sizes torch cannot
    even shape."""
    try:
        with torch.device("meta"):
            shape_only = build()
    except (RuntimeError, TypeError, ValueError, OverflowError) as exc:  # sizes past torch
        raise FormatError(f"{where}: the model cannot be built from its config ("
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                          ) from None
    _check_fits(shape_only, state, prefix, where, True)


def check_task_dimensions(where: str | Path, config: dict[str, Any], cfg, state: dict[str,
                          torch.Tensor]) -> None:
    """Before a reader rebuilds a builtin GNN's task from its training settings ``cfg``
    (a link task's input, model and decoder are sized by ``cfg.hidden``): the checkpoint's
    ``config`` must fit its stored ``model.*`` tensors (:func:`check_fits`) and ``cfg.hidden``
    must be its ``hidden_dim``, so no edited ``model.json`` sizes the task beyond what the
    checkpoint holds."""
    from graphsys.gnn.model import GNN

    check_fits(lambda: GNN(**config), state, "model.", where)
    if cfg.hidden != config["hidden_dim"]:
        raise FormatError(f"{Path(where) / 'model.json'}: meta.train_config.hidden is "
                          f"{cfg.hidden}, config.hidden_dim {config['hidden_dim']}")


def _check_fits(module: torch.nn.Module, state: dict[str, torch.Tensor], prefix: str,
                where: str | Path, strict: bool) -> dict[str, torch.Tensor]:
    """The tensors ``prefix.*`` of ``state`` (prefix cut) after checking them against
    ``module``'s (see :func:`load_module_state`)."""
    sub = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    own = module.state_dict()
    if strict:
        missing, extra = sorted(set(own) - set(sub)), sorted(set(sub) - set(own))
        if missing or extra:
            name = (missing or extra)[0]
            what = "is missing" if missing else "is not a tensor of the model"
            raise FormatError(f"{where}: tensor {prefix}{name} {what} (a checkpoint of "
                              f"another model?)")
    for k, v in sub.items():
        if k in own and tuple(v.shape) != tuple(own[k].shape):
            raise FormatError(f"{where}: tensor {prefix}{k} is {tuple(v.shape)}, the model "
                              f"rebuilt from its config has {tuple(own[k].shape)}")
    return sub


_JSON_TYPES = {str: "string", int: "integer", list: "list", dict: "object", bool: "boolean"}


def meta_field(meta: dict[str, Any], key: str, where: str | Path, kind: type = str) -> Any:
    """``meta[key]`` of a checkpoint at ``where`` if it is a JSON ``kind``, else a one-line
    :class:`FormatError` (``model.json`` carries no checksum of its own: an edited or
    damaged one must not surface as a KeyError deep in a reader)."""
    value = meta.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FormatError(f"{Path(where) / 'model.json'}: meta.{key} is "
                          f"{'missing' if value is None else repr(value)}, not a "
                          f"{_JSON_TYPES.get(kind, kind.__name__)}")
    return value


def train_config_of(meta: dict[str, Any], where: str | Path):
    """The :class:`~graphsys.gnn.config.TrainConfig` a checkpoint at ``where`` was trained
    with (``meta.train_config``, checked on load), or a one-line :class:`FormatError`."""
    from graphsys.gnn.config import TrainConfig

    return TrainConfig.from_dict(meta_field(meta, "train_config", where, dict))
