"""Where a graph's files live: a local directory or a directory on a ``pyarrow.fs`` filesystem.

A *local* graph (a plain path, a ``file://`` URI, or ``pyarrow.fs.LocalFileSystem``) is
memory-mapped; a *remote* one (``s3://``, ``gs://``, ``hdfs://`` URIs, or any
``pyarrow.fs.FileSystem`` passed in) is read through ``FileSystem.open_input_file``, each
record batch, node partition or index column an engine touches into a heap buffer. Relative
paths pass the same checks on both (:func:`graphsys.storage.format.safe_relative_path`);
remote graphs are read-only. docs/format.md, "Where the directory lives", gives the rules.
"""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from graphsys.errors import FormatError, GraphsysError
from graphsys.storage import file_rules


class GraphLocation:
    """The root of one graph directory. ``local``: a :class:`~pathlib.Path` that is
    memory-mapped; else ``root`` is a path inside ``filesystem`` (no trailing ``/``).
    ``uri`` names the graph in messages and configs: the absolute local path, or the URI
    (``s3://bucket/g``)."""

    def __init__(self, root: str | Path, filesystem: pafs.FileSystem | None = None,
                 uri: str | None = None):
        self.filesystem = filesystem
        self.local = filesystem is None
        if self.local:
            self.root: Path | str = Path(root)
            self.uri = str(self.root.absolute())
        else:
            self.root = str(root).rstrip("/") or "/"
            self.uri = (uri or f"{filesystem.type_name}:{self.root}").rstrip("/")

    @classmethod
    def resolve(cls, path: str | Path, filesystem: pafs.FileSystem | None = None
                ) -> GraphLocation:
        """A location from a path, a filesystem URI (``scheme://...``, parsed by
        ``pyarrow.fs.FileSystem.from_uri``), or a path inside ``filesystem``. Local
        filesystems give a local (memory-mapped) location."""
        if filesystem is not None:
            if isinstance(filesystem, pafs.LocalFileSystem):
                return cls(path)
            return cls(str(path), filesystem)
        if isinstance(path, str) and "://" in path:
            try:
                fs, root = pafs.FileSystem.from_uri(path)
            except (pa.ArrowException, ValueError, OSError) as exc:
                raise GraphsysError(f"{path}: cannot open filesystem URI ({exc})") from None
            if isinstance(fs, pafs.LocalFileSystem):
                return cls(root)
            return cls(root, fs, uri=path)
        return cls(path)

    def __str__(self) -> str:
        return self.uri

    def file(self, rel: str) -> Path | str:
        """``rel`` under the root: a Path locally; remotely ``uri/rel`` (for messages)."""
        return self.root / rel if self.local else f"{self.uri}/{rel}"

    def _remote(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    def is_dir(self) -> bool:
        if self.local:
            return self.root.is_dir()
        return self._info("").type == pafs.FileType.Directory

    def size(self, rel: str) -> int | None:
        """Bytes of the regular file ``rel``, or None if it is missing or not a file."""
        found = self.version(rel)
        return None if found is None else found[0]

    def version(self, rel: str) -> tuple[int, object] | None:
        """``(bytes, identity)`` of the regular file ``rel``, or None if it is missing or not
        a file. The identity (device and inode of a local file, else None) names this copy
        of the file: a writer that replaces a file (a new tree swapped in) gives it a new
        one, while a file it keeps (hard-linked) keeps its own."""
        if self.local:
            try:
                st = (self.root / rel).stat()
            except (OSError, ValueError):
                return None
            return (st.st_size, (st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None
        info = self._info(rel)
        return (info.size, None) if info.type == pafs.FileType.File else None

    def not_a_file(self, rel: str) -> str:
        """Why :meth:`size` found no regular file ``rel``, for messages: ``missing``, or
        ``not a regular file (a FIFO)`` (a directory, a device, a socket...)."""
        if self.local:
            try:
                mode = (self.root / rel).stat().st_mode
            except FileNotFoundError:
                return "missing"
            except OSError as exc:
                return f"cannot stat ({exc.strerror or exc})"
            kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                     (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                     (stat.S_ISBLK, "a block device"))
            kind = next((name for test, name in kinds if test(mode)), "not a regular file")
        else:
            kind = {pafs.FileType.NotFound: None, pafs.FileType.Directory: "a directory"}.get(
                self._info(rel).type, "not a regular file")
            if kind is None:
                return "missing"
        return f"not a regular file ({kind})" if kind != "not a regular file" else kind

    def _info(self, rel: str) -> pafs.FileInfo:
        try:
            return self.filesystem.get_file_info(self._remote(rel))
        except (pa.ArrowException, OSError) as exc:
            raise FormatError(f"{self.file(rel)}: cannot stat ({exc})") from None

    def open(self, rel: str) -> pa.NativeFile:
        """A random-access file: a memory map locally (zero copy), else the filesystem's
        input file (reads become heap buffers). Raises OSError/ArrowException as pyarrow
        does; callers name the file in their one-line error."""
        if self.local:
            return pa.memory_map(str(self.root / rel))
        return self.filesystem.open_input_file(self._remote(rel))

    def read_bytes(self, rel: str, *, max_bytes: int) -> bytes:
        """The content of the regular file ``rel``, at most ``max_bytes``: a larger file is
        refused in one line before it is read (locally, also a symlink out of the root)."""
        if self.local:
            return file_rules.read_bytes(self.root, rel, max_bytes=max_bytes)
        with self.filesystem.open_input_stream(self._remote(rel)) as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FormatError(f"{self.file(rel)}: more than the {max_bytes:,} bytes such a "
                              f"file may hold")
        return data

    def sha256(self, rel: str, chunk: int = 8 << 20) -> str:
        """Hex sha256 of ``rel``, streamed in ``chunk``-byte reads."""
        h = hashlib.sha256()
        opener = (open(self.root / rel, "rb") if self.local  # noqa: SIM115
                  else self.filesystem.open_input_stream(self._remote(rel)))
        with opener as f:
            while block := f.read(chunk):
                h.update(block)
        return h.hexdigest()

    def require_local(self, what: str) -> Path:
        """The local root, or a :class:`GraphsysError` saying ``what`` needs one."""
        if not self.local:
            raise GraphsysError(f"{self.uri}: {what} needs the graph on a local disk; this "
                                f"one is read through a filesystem URI (copy it first)")
        return self.root


def not_an_input(path: Path) -> str:
    """Why an input ``path`` that is not a regular file cannot be read, for messages: ``no
    such file``, or what it is (``not a regular file (a FIFO)``, ``... (a directory)``)."""
    why = GraphLocation(path.parent).not_a_file(path.name)
    return "no such file" if why == "missing" else why
