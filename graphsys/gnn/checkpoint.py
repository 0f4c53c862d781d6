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
tensor's sha256, shape and dtype, refuses non-finite values and paths outside the directory,
and never unpickles anything. Saving refuses non-finite tensors (a diverged model). The
``config`` (a builtin model's constructor arguments, or a user model's dimensions) and
``meta.train_config`` (a :class:`~graphsys.gnn.config.TrainConfig`) are checked field by
field on load: a hand-edited value is refused in one line naming ``model.json`` and the
field.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.errors import FormatError, GraphsysError, ParameterError
from graphsys.storage.atomic import fsync_path, write_bytes_atomic

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
    if set(config) != want:
        odd = sorted(set(config) ^ want)[0]
        what = "is missing" if odd in want else "is not a field of an rgcn model"
        raise FormatError(f"{where}: config.{odd} {what}")
    nodes = config["num_nodes"]
    if not isinstance(nodes, dict) or not nodes or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in nodes.items()):
        raise FormatError(f"{where}: config.num_nodes must map entity types to node counts")
    for key, low in (("num_relations", 1), ("hidden", 1), ("num_layers", 1),
                     ("num_blocks", 0), ("num_bases", 0)):
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise FormatError(f"{where}: config.{key} is {value!r}, not an integer >= {low}")
    _check_dropout(where, config["dropout"])


def _check_dropout(where: Path, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and 0 <= value < 1):
        raise FormatError(f"{where}: config.dropout is {value!r}, not a number in [0, 1)")


def _check_model_config(where: Path, config: dict[str, Any]) -> None:
    """FormatError naming ``config.<field>`` of ``where`` unless ``config`` is what
    :meth:`GNN.config` writes (a user model, ``module:Factory``: its integer dimensions;
    the R-GCN link model: :func:`_check_rgcn_config`)."""
    from graphsys.gnn.config import RGCN
    from graphsys.plugins import GNN_MODELS

    model = config.get("model")
    if model == RGCN:
        _check_rgcn_config(where, config)
        return
    if not isinstance(model, str) or (model not in GNN_MODELS and ":" not in model):
        raise FormatError(f"{where}: config.model is {model!r}, not one of "
                          f"{', '.join(GNN_MODELS.names())} or module:Factory")
    builtin = ":" not in model
    for key, value in config.items():
        if key == "model":
            continue
        if key == "dropout":
            _check_dropout(where, value)
        elif key in _MODEL_INTS or not builtin:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise FormatError(f"{where}: config.{key} is {value!r}, not an integer >= 1")
        else:
            raise FormatError(f"{where}: config.{key}: not a field of a {model} model")
    missing = [k for k in (*_MODEL_INTS, "dropout") if builtin and k not in config]
    if missing:
        raise FormatError(f"{where}: config.{missing[0]} is missing")


def _check_train_config(where: Path, raw: Any) -> None:
    """FormatError naming ``meta.train_config.<field>`` of ``where`` unless ``raw`` builds
    a :class:`~graphsys.gnn.config.TrainConfig`."""
    from graphsys.gnn.config import TrainConfig

    if not isinstance(raw, dict):
        raise FormatError(f"{where}: meta.train_config must be an object")
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise FormatError(f"{where}: meta.train_config.{unknown[0]}: not a training setting")
    values = dict(raw)
    if isinstance(values.get("hard_band"), list):
        values["hard_band"] = tuple(values["hard_band"])
    try:
        TrainConfig(**values)
    except ParameterError as exc:
        raise FormatError(f"{where}: meta.train_config.{exc.parameter} {exc.message}"
                          ) from None
    except (GraphsysError, TypeError, ValueError) as exc:
        raise FormatError(f"{where}: meta.train_config: {exc}") from None


def _versions(path: Path) -> list[tuple[int, Path]]:
    found = [(_VERSION_DIR.match(d.name), d) for d in path.iterdir()] if path.is_dir() else []
    return sorted((int(m.group(1)), d) for m, d in found if m and d.is_dir())


def save_checkpoint(path: str | Path, state: dict[str, torch.Tensor], config: dict[str, Any],
                    meta: dict[str, Any] | None = None) -> Path:
    """Write ``state`` (name -> tensor) with the JSON-able ``config`` and ``meta`` as a new
    version of the checkpoint ``path``, committed atomically (see the module docstring).
    Raises :class:`GraphsysError` for a non-finite tensor or a write that fails."""
    path = Path(path)
    arrays = {name: t.detach().cpu().numpy() for name, t in state.items()}
    for name, arr in arrays.items():
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise GraphsysError(f"{path}: tensor {name!r} holds NaN or infinity; not saved "
                                f"(the checkpoint keeps its last good model)")
    vdir = None
    try:
        path.mkdir(parents=True, exist_ok=True)
        old = _versions(path)
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
        write_bytes_atomic(path / "model.json", json.dumps(header, indent=1).encode())
    except OSError as exc:
        if vdir is not None:
            shutil.rmtree(vdir, ignore_errors=True)
        raise GraphsysError(f"{path}: cannot write the checkpoint ({exc.strerror or exc}); "
                            f"the previous one, if any, is intact") from None
    for _, d in old:
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(path / "tensors", ignore_errors=True)  # a pre-versioned layout
    return path


def load_checkpoint(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any],
                                               dict[str, Any]]:
    """``(state, config, meta)`` of the checkpoint directory ``path``; every problem is a
    one-line :class:`FormatError` naming the file."""
    path = Path(path)
    where = path / "model.json"
    try:
        header = json.loads(where.read_text())
    except FileNotFoundError:
        raise GraphsysError(f"{path}: not a GNN checkpoint (no model.json)") from None
    except (OSError, ValueError) as exc:
        raise FormatError(f"{where}: unreadable ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT \
            or header.get("version") != VERSION:
        raise FormatError(f"{where}: not a {FORMAT} version {VERSION} file")
    tensors = header.get("tensors")
    if not isinstance(tensors, dict) or not isinstance(header.get("config"), dict) \
            or not isinstance(header.get("meta", {}), dict):
        raise FormatError(f"{where}: fields 'tensors', 'config' and 'meta' must be objects")
    _check_model_config(where, header["config"])
    if "train_config" in header.get("meta", {}):
        _check_train_config(where, header["meta"]["train_config"])
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
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise FormatError(f"{f}: unreadable tensor {name!r} ({exc.strerror or exc})") from None
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise FormatError(f"{f}: sha256 mismatch for tensor {name!r} (corrupted or "
                              f"modified file)")
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise FormatError(f"{f}: unreadable tensor {name!r} ({exc})") from None
        if list(arr.shape) != entry["shape"] or str(arr.dtype) != entry["dtype"]:
            raise FormatError(f"{f}: tensor {name!r} is {arr.dtype}{list(arr.shape)}, "
                              f"model.json says {entry['dtype']}{entry['shape']}")
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            raise FormatError(f"{f}: tensor {name!r} holds NaN or infinity")
        state[name] = torch.from_numpy(arr)
    return state, header["config"], header.get("meta", {})
