"""Model checkpoints without pickle: a JSON header and one raw ``.npy`` per tensor.

Layout of a checkpoint directory::

    model.json        {"format": "graphsys-gnn-checkpoint", "version": 1, "config": {...},
                       "tensors": {name: {"file", "shape", "dtype"}}, "meta": {...}}
    tensors/<k>.npy   NumPy arrays, written and read with allow_pickle=False

Files are written through :func:`graphsys.storage.atomic.write_bytes_atomic` (temp name,
fsync, rename); ``model.json`` goes last, so a directory with a readable ``model.json`` is
complete. Loading never unpickles anything.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.atomic import write_bytes_atomic

FORMAT = "graphsys-gnn-checkpoint"
VERSION = 1


def save_checkpoint(path: str | Path, state: dict[str, torch.Tensor], config: dict[str, Any],
                    meta: dict[str, Any] | None = None) -> Path:
    """Write ``state`` (name -> tensor) with the JSON-able ``config`` and ``meta``."""
    path = Path(path)
    (path / "tensors").mkdir(parents=True, exist_ok=True)
    index = {}
    for k, (name, tensor) in enumerate(state.items()):
        arr = tensor.detach().cpu().numpy()
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        fname = f"tensors/{k:04d}.npy"
        write_bytes_atomic(path / fname, buf.getvalue())
        index[name] = {"file": fname, "shape": list(arr.shape), "dtype": str(arr.dtype)}
    header = {"format": FORMAT, "version": VERSION, "config": config, "tensors": index,
              "meta": meta or {}}
    write_bytes_atomic(path / "model.json", json.dumps(header, indent=1).encode())
    return path


def load_checkpoint(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any],
                                               dict[str, Any]]:
    """``(state, config, meta)`` of the checkpoint directory ``path``."""
    path = Path(path)
    try:
        header = json.loads((path / "model.json").read_text())
    except FileNotFoundError:
        raise GraphsysError(f"{path}: not a GNN checkpoint (no model.json)") from None
    except (OSError, ValueError) as exc:
        raise FormatError(f"{path / 'model.json'}: unreadable ({exc})") from None
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise FormatError(f"{path}: unknown checkpoint format {header.get('format')!r} "
                          f"version {header.get('version')!r}")
    state = {}
    for name, entry in header["tensors"].items():
        f = path / entry["file"]
        try:
            arr = np.load(f, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise FormatError(f"{f}: unreadable tensor {name!r} ({exc})") from None
        if list(arr.shape) != entry["shape"] or str(arr.dtype) != entry["dtype"]:
            raise FormatError(f"{f}: tensor {name!r} is {arr.dtype}{list(arr.shape)}, "
                              f"model.json says {entry['dtype']}{entry['shape']}")
        state[name] = torch.from_numpy(arr)
    return state, header["config"], header["meta"]
