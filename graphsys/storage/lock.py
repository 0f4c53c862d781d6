"""One writer at a time per graph directory, and no lost update.

Every function that commits to an existing graph directory holds :func:`writer_lock` from
before it reads what it will change until its manifest is written: an exclusive
``fcntl.flock`` on :data:`LOCK_FILE` inside the directory, which the kernel releases when
the holder's process ends, however it ends, so a lock is never stale. A second writer fails
at once with one line, ``another writer holds DIR (pid N)``; a writer that read the manifest
before taking the lock passes it and is refused, in one line naming what changed, when the
directory's manifest is no longer that one. A writer that locked a file the path no longer
names (removed by its last holder, or left in a tree an append swapped out) locks again.
docs/format.md, "Writing protocol", gives the rules (symlinks refused, readers lock-free).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from graphsys.errors import GraphsysError
from graphsys.storage.file_rules import kind_of
from graphsys.storage.format import Manifest, read_manifest

#: Name of the lock file inside a graph directory.
LOCK_FILE = ".lock"


def manifest_digest(manifest: Manifest) -> str:
    """sha256 of ``manifest``'s content (its JSON with sorted keys): equal for two reads of
    the same committed version, different after any commit that changed it."""
    text = json.dumps(manifest.to_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def describe_change(old: Manifest, new: Manifest) -> str:
    """What a commit changed from ``old`` to ``new``, in a few words, for a message."""
    parts = []
    for what, names in (("added", set(new.edge_sets) - set(old.edge_sets)),
                        ("removed", set(old.edge_sets) - set(new.edge_sets))):
        if names:
            parts.append(f"edge set {', '.join(map(repr, sorted(names)))} {what}")
    nodes = {t: e.num_nodes for t, e in old.entity_types.items()}
    grown = [t for t, e in new.entity_types.items() if nodes.get(t) != e.num_nodes]
    if grown:
        parts.append(f"nodes of {', '.join(map(repr, sorted(grown)))} added")
    columns = {t: [c.name for c in e.columns] for t, e in old.entity_types.items()}
    for t, e in sorted(new.entity_types.items()):
        extra = [c.name for c in e.columns if c.name not in columns.get(t, [])]
        if extra:
            parts.append(f"node column {', '.join(map(repr, extra))} added")
    if {k: {i: v.to_json() for i, v in d.items()} for k, d in old.indexes.items()} != {
            k: {i: v.to_json() for i, v in d.items()} for k, d in new.indexes.items()}:
        parts.append("indexes rebuilt")
    return ", ".join(parts) or "the manifest was rewritten"


def check_current(directory: str | Path, manifest: Manifest) -> None:
    """Raise a one-line :class:`GraphsysError` unless the manifest of ``directory`` is still
    ``manifest`` (the version its caller read): another writer committed since."""
    current = read_manifest(directory)
    if manifest_digest(current) != manifest_digest(manifest):
        raise GraphsysError(f"{directory}: changed by another writer since it was read "
                            f"({describe_change(manifest, current)}); nothing written: "
                            f"open it again and retry")


def _holder(fd: int) -> str:
    """The pid recorded in an open lock file, or ``?``."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return "?"
    return text if text.isdigit() else "?"


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


@contextlib.contextmanager
def writer_lock(directory: str | Path, manifest: Manifest | None = None) -> Iterator[Path]:
    """Hold the exclusive writer lock of the graph directory ``directory`` inside the block
    (yields the directory as an absolute path).

    Refused at once, in one line and with nothing written, while another process holds it
    (``another writer holds DIR (pid N)``). With ``manifest`` (what the caller read before
    locking) the directory's manifest must still be that version
    (:func:`check_current`). Released when the block ends, or by the kernel when the process
    dies.
    """
    directory = Path(directory).absolute()
    path = directory / LOCK_FILE
    while True:
        try:  # never through a symlink (out of the directory) nor blocking on a FIFO
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            why = "a symlink" if exc.errno == errno.ELOOP else exc.strerror or exc
            raise GraphsysError(f"{directory}: cannot take the writer lock "
                                f"({why}: {path})") from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise GraphsysError(f"{directory}: cannot take the writer lock ({path} is "
                                f"{kind_of(mode)}, not a regular file)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise GraphsysError(f"another writer holds {directory} (pid {holder}); "
                                    f"nothing written: retry when it has finished") from None
            raise GraphsysError(f"{directory}: cannot take the writer lock "
                                f"({exc.strerror or exc})") from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the directory was replaced while we waited: lock the new file
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        if manifest is not None:
            check_current(directory, manifest)
        yield directory
    finally:
        # remove the file while still holding it (a writer that opened it meanwhile finds
        # that the path no longer names its file, and locks again); a replaced directory
        # has a new file at the path, of another writer: left alone
        try:
            with contextlib.suppress(OSError):
                if _same_file(fd, path):
                    os.unlink(path)
        finally:  # even when interrupted (Ctrl-C) while unlinking
            os.close(fd)  # releases the lock
