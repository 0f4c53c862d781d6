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
and never unpickles anything. Saving refuses non-finite tensors (a diverged model).
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

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.atomic import fsync_path, write_bytes_atomic

FORMAT = "graphsys-gnn-checkpoint"
VERSION = 1


_VERSION_DIR = re.compile(r"^tensors\.v(\d{6,})$")
_TENSOR_FILE = re.compile(r"^tensors\.v\d{6,}/\d{4,}\.npy$")


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
