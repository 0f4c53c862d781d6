"""The file rules of every directory graphsys reads back: checkpoints (embedding and GNN),
GNN run directories, embedding directories and propagated features, as for graph
directories (docs/format.md, "Files are untrusted input").

A file of such a directory is read only when it stays inside the directory (safe path
components, symlinks resolving inside it: the rule of
:func:`~graphsys.storage.format.safe_relative_path`), is a regular file (opened with
``O_NONBLOCK`` and checked with ``fstat`` before a byte is read, so a FIFO or device is
never read) and its size is checked before it is read: a JSON file against
:data:`MAX_JSON_BYTES`, a ``.npy`` file against its own header and the header against the
shape and dtype its metadata records; an object dtype (pickle) never loads. Every refusal
is a one-line :class:`~graphsys.errors.FormatError` naming the file; a missing file is a
:class:`MissingFile`. :func:`check_tree` is the writers' side: a directory a run writes into
must hold directories and regular files only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.errors import FormatError

#: The largest JSON metadata file read (a checkpoint's index, a run's record).
MAX_JSON_BYTES = 64 << 20
#: The largest ``.npy`` header read.
MAX_NPY_HEADER = 1 << 16

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket",
          stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symlink"}


class MissingFile(FormatError):
    """A file the directory's metadata names is not there."""


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO", "a directory", ...), for
    a refusal of anything but a regular file."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def inside(directory: str | Path, path: object, *, source: str | None = None,
           field: str = "file") -> Path:
    """The file ``path`` names, once checked to stay inside ``directory``: a ``str`` is a
    name relative to ``directory`` (as metadata records it), a :class:`~pathlib.Path` a
    path under it. Its components must be safe (no ``..``, not absolute) and its symlinks,
    if any, must resolve inside ``directory``; else a :class:`FormatError` naming ``source``
    (default: the file) and ``field``, the metadata entry that gave the path."""
    directory = Path(directory)
    if isinstance(path, Path):
        try:
            rel = (path.relative_to(directory) if path.is_absolute() or path.parts[
                :len(directory.parts)] == directory.parts else path).as_posix()
        except ValueError:
            raise FormatError(f"{path}: not inside {directory}") from None
    elif isinstance(path, str):
        rel = path
    else:
        raise FormatError(f"{source or directory}: {field} {path!r} is not a path")
    where = source or str(directory / rel)
    parts = rel.split("/")
    if not rel or "\\" in rel or "\0" in rel or rel.startswith("/") or any(
            c in ("", ".", "..") for c in parts):
        raise FormatError(f"{where}: {field} {rel!r} is not a path inside {directory}")
    target = directory / rel
    root = os.path.realpath(directory)
    if os.path.commonpath([root, os.path.realpath(target)]) != root:
        raise FormatError(f"{where}: {field} {rel!r} resolves outside {directory} (a symlink)")
    return target


@contextlib.contextmanager
def open_regular(directory: str | Path, path: str | Path) -> Iterator[tuple[int, int, Path]]:
    """Yield ``(fd, size, path)`` of the regular file ``path`` inside ``directory`` (see
    the module docstring), opened read-only; the descriptor is closed after the block."""
    f = inside(directory, path)
    try:
        fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        raise MissingFile(f"{f}: missing") from None
    except OSError as exc:
        raise FormatError(f"{f}: cannot read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{f}: not a regular file ({kind_of(st.st_mode)})")
        yield fd, st.st_size, f
    finally:
        os.close(fd)


def file_size(directory: str | Path, path: str | Path) -> int:
    """Bytes of the regular file ``path`` inside ``directory``."""
    with open_regular(directory, path) as (_, size, _f):
        return size


def _read_exact(fd: int, size: int, offset: int, f: Path, into: memoryview | None = None
                ) -> memoryview | bytes:
    buf = into if into is not None else memoryview(bytearray(size))
    got = 0
    while got < size:
        try:
            n = os.preadv(fd, [buf[got:]], offset + got)
        except OSError as exc:
            raise FormatError(f"{f}: cannot read ({exc.strerror or exc})") from None
        if n == 0:
            raise FormatError(f"{f}: ended after {offset + got} bytes while read (truncated "
                              f"meanwhile?)")
        got += n
    return buf if into is not None else bytes(buf)


def read_bytes(directory: str | Path, path: str | Path, *, max_bytes: int) -> bytes:
    """The content of the regular file ``path`` inside ``directory``, at most
    ``max_bytes`` (a larger file is refused before it is read)."""
    with open_regular(directory, path) as (fd, size, f):
        if size > max_bytes:
            raise FormatError(f"{f}: {size:,} bytes, more than the {max_bytes:,} such a file "
                              f"may hold")
        return _read_exact(fd, size, 0, f)


def read_json(directory: str | Path, path: str | Path, *,
              max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON document of the regular file ``path`` inside ``directory`` (at most
    ``max_bytes``); bad UTF-8 or JSON is a :class:`FormatError` naming the file."""
    data = read_bytes(directory, path, max_bytes=max_bytes)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError(f"{Path(directory) / path}: unreadable JSON "
                          f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                          ) from None


def sha256(directory: str | Path, path: str | Path, *, chunk: int = 8 << 20) -> str:
    """Hex sha256 of the regular file ``path`` inside ``directory``, streamed."""
    h = hashlib.sha256()
    with open_regular(directory, path) as (fd, size, f):
        offset = 0
        while offset < size:
            block = _read_exact(fd, min(chunk, size - offset), offset, f)
            h.update(block)
            offset += len(block)
    return h.hexdigest()


def npy_header(fd: int, size: int, f: Path) -> tuple[tuple[int, ...], np.dtype, bool, int]:
    """``(shape, dtype, fortran_order, data offset)`` of the ``.npy`` file open as ``fd``
    (``size`` bytes), checked: a known header version, no object dtype, and a size that is
    exactly the header plus shape times item size."""
    head = _read_exact(fd, min(size, MAX_NPY_HEADER), 0, f)
    buf = _Reader(head)
    try:
        major, _ = np.lib.format.read_magic(buf)
        if major == 1:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
        elif major == 2:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
        else:
            raise ValueError(f"header version {major} is not 1 or 2")
    except Exception as exc:  # noqa: BLE001 (numpy's parser of untrusted bytes: any error)
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FormatError(f"{f}: not a NumPy .npy file ({why})") from None
    if dtype.hasobject:
        raise FormatError(f"{f}: holds Python objects (dtype {dtype}); never unpickled")
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise FormatError(f"{f}: bad shape {shape} in its header")
    want = buf.pos + math.prod(shape) * dtype.itemsize
    if size != want:
        raise FormatError(f"{f}: size {size:,} bytes, its header ({dtype} {shape}) says "
                          f"{want:,} (truncated or extended)")
    return tuple(shape), dtype, bool(fortran), buf.pos


class _Reader:
    """The read() NumPy's header parsers need, over bytes already read."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.pos + n
        out = self.data[self.pos:end]
        self.pos += len(out)
        return out


def load_npy(directory: str | Path, path: str | Path, *, mmap: bool = False,
             shape: tuple[int, ...] | None = None, dtype: str | np.dtype | None = None,
             sha256: str | None = None) -> np.ndarray:
    """The array of the ``.npy`` file ``path`` inside ``directory``, checked as the module
    docstring says before its data is read; ``shape`` / ``dtype``: what the directory's
    metadata records (a file that holds another is refused); ``sha256``: the file's
    recorded digest (hex), checked over its bytes as read (a mismatch is refused).
    ``mmap``: a read-only memory map (no copy), else the array read into memory."""
    with open_regular(directory, path) as (fd, size, f):
        got_shape, got_dtype, fortran, offset = npy_header(fd, size, f)
        if (shape is not None and tuple(shape) != got_shape) or (
                dtype is not None and np.dtype(dtype) != got_dtype):
            want = f"{np.dtype(dtype) if dtype is not None else got_dtype} " \
                   f"{tuple(shape) if shape is not None else got_shape}"
            raise FormatError(f"{f}: holds {got_dtype} {got_shape}, its metadata says {want}")
        order = "F" if fortran else "C"
        if sha256 is not None and not mmap:      # one read: the bytes hashed are the array's
            raw = bytearray(size)
            _read_exact(fd, size, 0, f, into=memoryview(raw))
            if hashlib.sha256(raw).hexdigest() != sha256:
                raise FormatError(f"{f}: sha256 mismatch (corrupted or modified file)")
            return np.frombuffer(raw, got_dtype, math.prod(got_shape), offset).reshape(
                got_shape, order=order)
        if sha256 is not None:
            h = hashlib.sha256()
            for at in range(0, size, 8 << 20):
                h.update(_read_exact(fd, min(8 << 20, size - at), at, f))
            if h.hexdigest() != sha256:
                raise FormatError(f"{f}: sha256 mismatch (corrupted or modified file)")
        if math.prod(got_shape) == 0:
            out = np.zeros(got_shape, got_dtype, order=order)
        elif mmap:
            with os.fdopen(os.dup(fd), "rb") as fobj:
                out = np.memmap(fobj, dtype=got_dtype, mode="r", offset=offset,
                                shape=got_shape, order=order)
        else:
            out = np.empty(got_shape, got_dtype, order=order)
            _read_exact(fd, out.nbytes, offset, f,
                        into=memoryview(out.reshape(-1, order="A").view(np.uint8)))
        return out


def check_tree(directory: str | Path, *, what: str = "directory") -> None:
    """Refuse, in one line, a ``directory`` (a run directory, a checkpoint about to be
    written) that holds anything but directories and regular files: a symlink (a write
    would follow it out), a FIFO (a write would block), a device or a socket. The
    directory itself may be a symlink to a directory (a checkpoint kept on another disk);
    a missing one passes."""
    root = Path(directory)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FormatError(f"{root}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FormatError(f"{root}: the {what} is {kind_of(st.st_mode)}, not a directory")
    for top, dirs, files in os.walk(root, followlinks=False,
                                    onerror=_walk_error):
        for name in sorted(dirs + files):
            p = Path(top) / name
            try:
                mode = os.lstat(p).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise FormatError(f"{p}: cannot read ({exc.strerror or exc})") from None
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise FormatError(f"{p}: {kind_of(mode)} in the {what} {root} (only "
                                  f"directories and regular files belong there)")


def _walk_error(exc: OSError) -> None:
    raise FormatError(f"{exc.filename}: cannot read ({exc.strerror or exc})")
