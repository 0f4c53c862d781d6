"""Crash-safe writing: temp name, fsync, rename; staging directories for whole graphs."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import shutil
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from graphsys.errors import GraphsysError
from graphsys.temp_files import temp_beside

#: In the name of a staging directory beside its graph: ``.NAME.staging-PID-HEX``.
STAGING_MARK = ".staging-"


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (its entries) by path."""
    fd = os.open(str(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: Threads that fsync a directory's files at once: an fsync mostly waits on the disk, and
#: concurrent ones share the filesystem's journal commits.
SYNC_THREADS = 8


def sync_files(root: Path, names: Iterable[str], *, linked: Iterable[str] = ()) -> None:
    """Flush the files ``root / name`` and the directories holding them (up to, not
    including, ``root``) to disk: an fsync per file, :data:`SYNC_THREADS` at a time, then
    one per directory. Unlike a filesystem-wide ``syncfs`` it waits only for these files,
    not for every dirty page of the filesystem (another process's large write); started early
    with :func:`start_writeback`, little is left to wait for. ``linked``: names that are
    new hard links to files already on disk, of which only the directories are flushed."""
    root = Path(root)
    paths = [root / name for name in names]
    dirs: set[Path] = set()
    for path in [*paths, *(root / name for name in linked)]:
        for parent in path.parents:
            if parent == root or root not in parent.parents:
                break
            dirs.add(parent)
    if len(paths) > 1:
        with ThreadPoolExecutor(min(SYNC_THREADS, len(paths)),
                                thread_name_prefix="graphsys-fsync") as pool:
            list(pool.map(fsync_path, paths))
    else:
        for path in paths:
            fsync_path(path)
    for d in sorted(dirs, key=lambda d: len(d.parts), reverse=True):
        fsync_path(d)


def start_writeback(path: Path | int) -> None:
    """Ask the kernel to start writing the dirty pages of ``path`` (or of the open file
    descriptor ``path``) to disk now, without waiting (Linux ``sync_file_range``), so that
    a later :func:`sync_files` finds less left to write; a no-op
    where the call is missing. It makes nothing durable by itself."""
    if _sync_file_range is None:
        return
    if isinstance(path, int):
        _sync_file_range(path, 0, 0, _SYNC_FILE_RANGE_WRITE)
        return
    fd = os.open(str(path), os.O_RDONLY)
    try:
        _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)
    finally:
        os.close(fd)


def _libc_sync_file_range():
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range = _libc_sync_file_range()


def make_directory(path: Path, what: str) -> None:
    """Create directory ``path`` and its parents where missing; refuse in one line
    (:class:`~graphsys.errors.GraphsysError` naming ``path`` and ``what``, e.g. "the
    checkpoint directory") when the system cannot."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraphsysError(f"{path}: cannot create {what} ({exc.strerror or exc})") from None


def write_bytes_atomic(path: Path, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, rename
    (over an existing file only with ``overwrite``: :func:`commit_file`)."""
    path = Path(path)
    tmp = temp_beside(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        commit_file(tmp, path, overwrite=overwrite)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def sha256_file(path: Path, chunk: int = 8 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def atomic_path(path: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success fsync it and rename it to ``path``
    (:func:`commit_file`).

    On any exception the temp file is removed, so ``path`` is never half written. A
    ``path`` that exists (unless ``overwrite``) or whose directory does not is refused in
    one line before anything is written, and one created meanwhile by another process when
    the temp file is committed.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise GraphsysError(f"{path}: already exists (remove it or choose another name)")
    if not path.parent.is_dir():
        raise GraphsysError(f"{path}: cannot write in {path.parent} (no such directory)")
    tmp = temp_beside(path)
    try:
        yield tmp
        fsync_path(tmp)
        commit_file(tmp, path, overwrite=overwrite)
        fsync_path(path.parent)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise


def commit_file(tmp: Path, path: Path, *, overwrite: bool) -> None:
    """Rename the written file ``tmp`` to ``path``, over an existing file only with
    ``overwrite``. Without it the new name is a hard link, which never replaces: of two
    writers of one new file, the second is refused in one line and the first's file kept
    (on a filesystem without hard links, a rename)."""
    if not overwrite:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise GraphsysError(f"{path}: was created by another process while this one "
                                f"wrote; nothing written (remove it or choose another "
                                f"name)") from None
        except OSError:
            pass  # no hard links here
        else:
            os.unlink(tmp)
            return
    os.replace(tmp, path)


def disk_full(exc: OSError, path: Path) -> bool:
    """Whether ``exc``, raised while writing under ``path``, means the filesystem is full:
    ENOSPC or EDQUOT; or, with almost no space left (under 1 MiB), EFAULT (a ``write()``
    whose source is a mapped file that tmpfs could not give a page) or no errno at all
    (NumPy's ``tofile`` reports a short write as "N requested and M written"). Call it
    before freeing what the failed write used."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if exc.errno not in (errno.EFAULT, errno.EFBIG, None):
        return False
    try:
        return shutil.disk_usage(path).free < (1 << 20)
    except OSError:
        return False


@contextlib.contextmanager
def staging_directory(out: Path) -> Iterator[Path]:
    """Yield an empty staging directory beside ``out``; rename it to ``out`` on success.

    ``out`` must not exist, or be an empty directory. A symlink is followed: the graph is
    written where it points (a directory kept on another disk). The staging name starts
    with a dot and holds the pid; staging directories of dead processes (a killed ingest)
    are removed first. On failure the staging directory is removed, so no partial graph is
    ever at ``out``.
    """
    out = Path(os.path.realpath(out))
    if out.exists():
        if (out / "manifest.json").exists():
            raise GraphsysError(f"{out}: already holds a graph (remove it or choose another "
                                f"output directory)")
        if not out.is_dir() or any(out.iterdir()):
            raise GraphsysError(f"{out}: exists and is not an empty directory")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GraphsysError(f"{out}: cannot create its directory {out.parent} "
                            f"({exc.strerror or exc})") from None

    def rename_into_place(staging: Path) -> None:
        try:
            if out.exists():
                out.rmdir()
            os.rename(staging, out)
        except OSError as exc:  # another writer finished first (ENOTEMPTY, EEXIST)
            raise GraphsysError(f"{out}: was created by another process while this one "
                                f"wrote ({exc.strerror or exc}); nothing written") from None

    with _staged(out, rename_into_place, "nothing written") as staging:
        yield staging


def exchange_directories(a: Path, b: Path) -> None:
    """Swap the directories ``a`` and ``b`` in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``). Where that is missing, three renames: a crash between them leaves
    ``b`` absent and both trees complete beside it."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_fdcwd, rename_exchange = -100, 2
    if renameat2 is not None and renameat2(at_fdcwd, os.fsencode(a), at_fdcwd,
                                           os.fsencode(b), rename_exchange) == 0:
        return
    aside = b.with_name(b.name + f".swap-{os.getpid()}")
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


@contextlib.contextmanager
def _staged(out: Path, commit, nothing: str) -> Iterator[Path]:
    """Yield a fresh staging directory beside ``out``; on success fsync it, ``commit`` it
    (a callable taking the staging path) and fsync ``out``'s parent. On failure the staging
    directory is removed; an ``OSError`` becomes one line ending in ``nothing``."""
    staging = temp_beside(out, STAGING_MARK)
    try:
        staging.mkdir()
    except OSError as exc:
        raise GraphsysError(f"{out}: cannot write in {out.parent} ({exc.strerror or exc})"
                            ) from None
    try:
        yield staging
        fsync_path(staging)
        commit(staging)
        fsync_path(out.parent)
    except OSError as exc:  # a full disk, a lost permission: one line, nothing left
        shutil.rmtree(staging, ignore_errors=True)
        raise GraphsysError(f"{out}: cannot write ({exc.strerror or exc}"
                            f"{': ' + str(exc.filename) if exc.filename else ''}); "
                            f"{nothing}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@contextlib.contextmanager
def replacement_directory(out: Path) -> Iterator[Path]:
    """Yield an empty staging directory beside the existing directory ``out``; on success
    swap it with ``out`` atomically (:func:`exchange_directories`) and delete the old tree.

    Readers see the old directory or the new one, never a mix. On failure the staging
    directory is removed and ``out`` is untouched; a staging directory left by a killed
    process is removed by the next writer (its name holds the dead pid).
    """
    out = Path(out).absolute()
    with _staged(out, lambda staging: exchange_directories(staging, out),
                 "nothing changed") as staging:
        yield staging
    shutil.rmtree(staging, ignore_errors=True)  # now the old tree


def link_unchanged(graph: Path, staging: Path, files: dict
                    ) -> tuple[list[str], list[str]]:
    """Hard-link (or copy, across filesystems) every file of ``files`` not yet in
    ``staging`` from the old graph directory; returns the names linked and those copied."""
    linked, copied = [], []
    for rel in files:
        dst = staging / rel
        if dst.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(graph / rel, dst)
            linked.append(rel)
        except OSError:
            shutil.copy2(graph / rel, dst)
            copied.append(rel)
    return linked, copied
