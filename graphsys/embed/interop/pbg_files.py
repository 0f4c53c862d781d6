"""Reading PyTorch-BigGraph (PBG 1.0.0) checkpoint files: the version file, the HDF5
embedding and model files, entity count / name files, and the row-wise Adagrad sums inside
PBG's ``torch.save`` optimizer blobs, read as raw storage with :mod:`zipfile` (never
unpickled). The layout is in :mod:`graphsys.embed.interop.pbg_checkpoint`; every reader
raises :class:`~graphsys.errors.FormatError` naming the file, whatever a damaged file makes
h5py raise (:func:`h5_errors`); a dataset is read only once its size fits in its file, and
non-finite values are refused. ``h5py`` is imported lazily
(``pip install graphsys[pbg]``)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import file_rules

_MODEL_PARAM = re.compile(r"relations/(\d+)/operator/(lhs|rhs)/([^/]+)")
_GLOBAL_EMB = re.compile(r"entities/([^/]+)/global_embedding")
PBG_FORMAT_VERSION = 1


def h5py_module():
    """The h5py module, or a one-line error saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise GraphsysError("reading PyTorch-BigGraph checkpoints needs h5py: "
                            "pip install 'graphsys[pbg]'") from None
    return h5py


#: The largest count or version file read (a number and white space).
MAX_NUMBER_BYTES = 4096


def read_text(path: Path, what: str, *, max_bytes: int = 1 << 40) -> str:
    """The UTF-8 text of ``path``, read by the rules of :mod:`graphsys.storage.
    file_rules` for its directory: a regular file (never a FIFO or a device), inside the
    directory (no symlink out of it), of at most ``max_bytes`` (checked before reading)."""
    try:
        data = file_rules.read_bytes(path.parent, path.name, max_bytes=max_bytes)
    except file_rules.MissingFile:
        raise FormatError(f"{path}: missing ({what})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: unreadable ({exc})") from None


def read_count(path: Path) -> int:
    text = read_text(path, "PBG entity/relation count", max_bytes=MAX_NUMBER_BYTES).strip()
    if not text.isdigit():
        raise FormatError(f"{path}: expected a non-negative integer, got {text[:40]!r}")
    return int(text)


#: The most bytes one name may take in a PBG names file: the JSON string, escapes
#: included, with its separator and indentation.
MAX_NAME_BYTES = 4096


def read_names(path: Path, count: int) -> list[str]:
    """The JSON list of name strings in ``path``, a file that holds ``count`` names (as the
    count file beside it says): one over ``count * MAX_NAME_BYTES`` bytes (plus the
    brackets) is refused before it is read."""
    try:
        names = json.loads(read_text(path, "PBG names",
                                     max_bytes=MAX_NUMBER_BYTES + count * MAX_NAME_BYTES))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    except RecursionError:   # nested past the stack: a traceback
        raise FormatError(f"{path}: invalid JSON (nested too deeply)") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError(f"{path}: expected a JSON list of name strings")
    return names


def read_pbg_version(pbg_ckpt: Path) -> int:
    """The committed version ``N`` of a PBG checkpoint (``checkpoint_version.txt``)."""
    path = pbg_ckpt / "checkpoint_version.txt"
    if not path.is_file():
        raise FormatError(f"{pbg_ckpt}: not a PBG checkpoint (no checkpoint_version.txt)")
    text = read_text(path, "PBG checkpoint version", max_bytes=MAX_NUMBER_BYTES).strip()
    if not text.isdigit():
        raise FormatError(f"{path}: expected a version number, got {text[:40]!r}")
    return int(text)


#: What h5py (and the HDF5 library under it) raises on a damaged file: a bad address or
#: size is an OSError, KeyError or ValueError, a bad datatype or header a RuntimeError or
#: TypeError, a bad string a UnicodeDecodeError, an impossible dimension an OverflowError.
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError,
             OverflowError, UnicodeDecodeError, MemoryError)


@contextlib.contextmanager
def h5_errors(path: Path) -> Iterator[None]:
    """Within the block, whatever h5py raises on a damaged file becomes one
    :class:`FormatError` naming ``path``."""
    try:
        yield
    except H5_ERRORS as exc:
        detail = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise FormatError(f"{path}: damaged or unreadable HDF5 file ({detail})") from None


def open_h5(h5py, path: Path):
    try:   # a regular file inside its directory (file_rules), before HDF5 opens it
        file_rules.file_size(path.parent, path.name)
    except file_rules.MissingFile:
        raise FormatError(f"{path}: missing (PBG checkpoint file)") from None
    try:
        hf = h5py.File(path, "r")
    except H5_ERRORS as exc:
        raise FormatError(f"{path}: not a readable HDF5 file ({exc})") from None
    with h5_errors(path):
        version = hf.attrs.get("format_version", None)
    if version != PBG_FORMAT_VERSION:
        hf.close()
        raise FormatError(f"{path}: PBG format_version {version!r} is not "
                          f"{PBG_FORMAT_VERSION}")
    return hf


def read_dataset(h5py, obj, path: Path, name: str) -> np.ndarray:
    """A dataset's values as float32, after checking that it is one as PBG writes it (IEEE
    float32: a damaged datatype message can describe another float layout of the same
    bytes, which HDF5 would convert silently), that its bytes fit in the file (a damaged
    shape cannot ask for more memory than the file holds) and that every value is finite
    (a damaged value read as NaN or infinity would be imported silently)."""
    if not isinstance(obj, h5py.Dataset) or not any(
            obj.id.get_type().equal(t) for t in (h5py.h5t.IEEE_F32LE, h5py.h5t.IEEE_F32BE)):
        raise FormatError(f"{path}: {name} is not an IEEE float32 dataset (as PBG writes its "
                          f"tensors)")
    size = path.stat().st_size
    if obj.size * obj.dtype.itemsize > size:
        raise FormatError(f"{path}: {name} claims {obj.shape} values of {obj.dtype}, more "
                          f"than the file's {size:,} bytes")
    arr = np.asarray(obj[...], np.float32)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise FormatError(f"{path}: {name} holds a non-finite value ({arr.flat[bad[0]]} at "
                          f"flat position {bad[0]})")
    return arr


def read_model(h5py, path: Path):
    """Operator params ``{(idx, side, param): float32 array}`` and global embeddings
    ``{entity: float32 (d,)}`` of ``model.vN.h5``, plus its root attrs (never the
    optimizer blob)."""
    params: dict[tuple[int, str, str], np.ndarray] = {}
    globals_: dict[str, np.ndarray] = {}
    with open_h5(h5py, path) as hf, h5_errors(path):
        attrs = {k: hf.attrs[k] for k in hf.attrs}
        if "model" in hf:
            names: list[str] = []
            hf["model"].visit(names.append)
            for name in names:
                obj = hf["model"][name]
                if not isinstance(obj, h5py.Dataset):
                    continue
                m, g = _MODEL_PARAM.fullmatch(name), _GLOBAL_EMB.fullmatch(name)
                if m:
                    params[(int(m.group(1)), m.group(2), m.group(3))] = read_dataset(
                        h5py, obj, path, f"model/{name}")
                elif g:
                    globals_[g.group(1)] = read_dataset(h5py, obj, path, f"model/{name}")
                else:
                    raise FormatError(f"{path}: unknown PBG model dataset model/{name}")
    return params, globals_, attrs


_OPTIM_DATASET = "optimizer/state_dict"
_STORAGE = re.compile(r"[^/]+/data/[0-9]+")


def read_optim_blob(h5py, hf) -> bytes | None:
    """The raw bytes of a PBG file's ``optimizer/state_dict`` dataset (None when absent)."""
    obj = hf.get(_OPTIM_DATASET)
    if not isinstance(obj, h5py.Dataset) or obj.ndim != 1:
        return None
    if obj.size * obj.dtype.itemsize > Path(hf.filename).stat().st_size:
        return None  # a damaged size: the blob cannot be larger than its file
    return obj[...].tobytes()


def pbg_row_adagrad(blob: bytes | None, n: int) -> tuple[np.ndarray | None, str]:
    """PBG's RowAdagrad sums of an ``n``-row partition from its ``torch.save`` blob.

    Reads the zip archive with :mod:`zipfile` and only its one raw storage file (float32,
    little endian); never ``data.pkl``. Returns ``(float32 (n,), "")``, or ``(None, why)``
    when the blob is absent or its layout is not unambiguously one ``n``-float storage (see
    the module docstring).
    """
    if blob is None:
        return None, "no optimizer/state_dict dataset"
    try:
        return _row_adagrad(blob, n)
    except _ZIP_ERRORS as exc:  # a damaged archive: the sums restart, with the reason
        return None, (f"optimizer state archive unreadable ({type(exc).__name__}: "
                      f"{' '.join(str(exc).split())[:120]})")


#: What :mod:`zipfile` raises on a damaged archive (a bad header, version, CRC or
#: compressed stream).
_ZIP_ERRORS = (zipfile.BadZipFile, ValueError, OSError, NotImplementedError, RuntimeError,
               EOFError, zlib.error, struct.error, UnicodeDecodeError, KeyError)


def _row_adagrad(blob: bytes, n: int) -> tuple[np.ndarray | None, str]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
    except _ZIP_ERRORS:
        return None, "optimizer state is not a torch.save zip archive"
    with zf:
        infos = zf.infolist()
        roots = {i.filename.split("/", 1)[0] for i in infos}
        if len(roots) != 1:
            return None, "optimizer state archive has no single top-level folder"
        root = roots.pop()
        names = {i.filename for i in infos}
        if f"{root}/data.pkl" not in names:
            return None, "optimizer state archive has no data.pkl (not torch.save's layout)"
        storages = [i for i in infos if _STORAGE.fullmatch(i.filename)]
        if len(storages) != 1:
            return None, (f"optimizer state archive has {len(storages)} tensor storages, "
                          f"expected 1 (RowAdagrad's per-row sums)")
        info = storages[0]
        if info.file_size != 4 * n:
            return None, (f"optimizer state storage {info.filename} has {info.file_size} "
                          f"bytes, expected {4 * n} (float32 x {n} rows)")
        order = sys.byteorder
        if f"{root}/byteorder" in names:
            if zf.getinfo(f"{root}/byteorder").file_size > 16:
                return None, "optimizer state archive has an oversized byteorder record"
            try:
                order = zf.read(f"{root}/byteorder").decode("ascii").strip()
            except (zipfile.BadZipFile, UnicodeDecodeError, OSError, ValueError):
                return None, "optimizer state archive has an unreadable byteorder"
        if order != "little":
            return None, f"optimizer state byte order {order[:20]!r}, expected 'little'"
        try:
            raw = zf.read(info)
        except _ZIP_ERRORS as exc:
            return None, f"optimizer state storage {info.filename} unreadable ({exc})"
    if len(raw) != 4 * n:
        return None, f"optimizer state storage {info.filename} is truncated"
    sums = np.frombuffer(raw, "<f4").astype(np.float32)
    if not np.all(np.isfinite(sums)) or (sums < 0).any():
        return None, ("optimizer state storage holds negative or non-finite values (not "
                      "sums of squares)")
    return sums, ""


def epochs_done(attrs: dict[str, Any], version: int, warnings: list[str]) -> int:
    """Epochs PBG completed, from the ``iteration/*`` attrs of the model file."""
    try:
        epoch = int(attrs["iteration/epoch_idx"])
        path_i = int(attrs["iteration/edge_path_idx"])
        paths = int(attrs["iteration/num_edge_paths"])
        chunk_i, chunks = (int(attrs["iteration/edge_chunk_idx"]),
                           int(attrs["iteration/num_edge_chunks"]))
    except (KeyError, TypeError, ValueError):
        return version
    if path_i == paths - 1 and chunk_i == chunks - 1:
        return epoch + 1
    warnings.append(f"PBG stopped inside epoch {epoch + 1} (edge path {path_i + 1}/{paths}, "
                    f"chunk {chunk_i + 1}/{chunks}); graphsys counts {epoch} epochs done")
    return epoch
