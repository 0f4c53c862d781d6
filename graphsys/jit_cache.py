"""The kernel cache's keys and files: what a kernel module compiles from, and entries that
are checked before they are unpickled and written whole.

**Keys.** A graphsys kernel module's cache directory is named by :func:`module_digest`: a
digest of the graphsys source files the module compiles from (:func:`module_sources`: its
own file and the graphsys modules it imports at module level, transitively, read with
:mod:`ast`, nothing imported), of numba's, llvmlite's and Python's versions and of this
file format. Imports inside functions are not followed: a kernel
can only see its module's globals, and a jitted function handed in as an argument or a
closure's cell keys numba's entry by that object, which no other process matches. What no
static reading sees (a global reassigned at run time, an ``@overload`` registered by a
module the kernel's module does not import) is not part of the key. The bytes digested are
those each module was imported from in this process (:func:`note_source`, recorded as
graphsys's modules are imported), read from disk only for a module not imported: a file
edited after its import changes no key this process uses, so the code a process compiled
is never saved under the key of sources it did not run. The import lists of
each source file are kept per process, and across processes in a small file beside the
cache (``imports-2``, named by the cache :data:`FORMAT`; keyed by the file's bytes), so a
new process parses only the files that changed.

**Entries.** numba keeps a kernel as an index file (``.nbi``: numba's version, the source
file's stamp, and which data file holds each compiled signature) and one data file per
signature (``.nbc``: the pickled compile result with its machine code), and unpickles both
as it finds them: a truncated or garbled file raises from inside the kernel's first call,
and garbled machine code that still unpickles can crash the process inside LLVM. A graphsys
kernel's files (wherever they are kept) start with a format tag and a SHA-256 of the rest,
checked before anything is unpickled; a data file then names itself (its cache directory
and file name), so one copied or renamed from another kernel, signature or source version
does not load. :func:`checked_file_class` reads and writes them. An entry that does not
load (empty, truncated, garbled, unreadable, of another format, a data file that holds
another kernel or signature) is reported in one line
(:class:`KernelCacheWarning`, naming the file, once per file and process) and the kernel
is compiled as on a miss, then saved over the entry where its directory can be written.
An index of another numba version, or in numba's own format, is a plain miss (no line).
Each file is written under a temporary name (holding the writer's process id: the next
write of the file removes those of a killed writer), flushed to disk (``fsync``) and
renamed over the old one, the data file before the index that names it, with the index rewritten
under an exclusive lock of the directory (``flock``): two processes compiling the same
kernel at once leave one whole entry, and a reader sees the old entry or the new one. A
data file is named by its signature's key, so two processes saving different signatures
never write the same file.

**Threads before linking.** Machine code that calls numba's threading layer (a ``prange``
loop, or a callee's linked in) can be linked only once numba has started its threads, and
numba's hook that starts them is saved only where the parallel code was compiled in the
same process (docs/architecture.md says how that crashed). Every entry is checked as it is
saved and as it is loaded (:func:`with_thread_start`): code that calls the threading layer
gets the hook, so an entry saved without it loads safely too.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import json
import linecache
import os
import pickle
import stat
import sys
import warnings
from pathlib import Path

from graphsys.temp_files import temp_beside

#: The package directory whose modules are keyed (graphsys/).
PACKAGE = Path(__file__).resolve().parent
#: The version of this file format and keying; part of every digest.
FORMAT = 2
#: The first bytes of every file this module writes; a SHA-256 of the rest follows.
MAGIC = b"graphsys-kernel-cache/1\n"
_DIGEST = 32
#: The largest kernel cache file read (an index, or one kernel's compiled code: kilobytes
#: to a few megabytes); a larger one is refused before it is read.
MAX_ENTRY_BYTES = 1 << 30


class KernelCacheWarning(UserWarning):
    """A kernel cache entry did not load (the kernel is compiled instead), could not be
    written, or a cache directory is open to other users (it is not used). Said once per
    file and process, as one line that names the file."""


class BadEntry(Exception):
    """A cache file that is not a whole entry of this format (the message says why)."""


class ForeignEntry(Exception):
    """A cache file in numba's own format (written by numba itself): a miss."""


_said: set[str] = set()


def say(path: str, what: str) -> None:
    """Warn once per process about the cache file ``path`` (one line: the file, then
    ``what``)."""
    if path in _said:
        return
    _said.add(path)
    # no source line: the warning would read the file itself for one (a FIFO: forever)
    linecache.cache.setdefault(str(path), (0, None, [], str(path)))
    warnings.warn_explicit(what, KernelCacheWarning, str(path), 0, module=__name__)


def frame(body: bytes) -> bytes:
    """``body`` as this format stores it: :data:`MAGIC`, its SHA-256, then itself."""
    return MAGIC + hashlib.sha256(body).digest() + body


def unframe(blob: bytes) -> bytes:
    """The body of a file written by :func:`frame`.

    Raises
    ------
    BadEntry
        Empty, truncated, garbled (its checksum does not match), or not this format.
    ForeignEntry
        A file in numba's own format (a pickle).
    """
    if not blob:
        raise BadEntry("empty")
    if not blob.startswith(MAGIC):
        if blob[:1] == b"\x80" and not MAGIC.startswith(blob):
            raise ForeignEntry
        raise BadEntry("truncated, or not a kernel cache file")
    digest, body = blob[len(MAGIC):len(MAGIC) + _DIGEST], blob[len(MAGIC) + _DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise BadEntry("truncated or garbled: its checksum does not match")
    return body


#: The functions numba's threading layer gives LLVM when its threads start
#: (``numba.np.ufunc.parallel._launch_threads``), as names in an object file's symbol
#: table: machine code that calls one of them can be linked only after that.
THREAD_SYMBOLS = tuple(f"{name}\0".encode() for name in (
    "numba_parallel_for", "do_scheduling_signed", "do_scheduling_unsigned", "allocate_sched",
    "deallocate_sched", "get_num_threads", "set_num_threads", "get_thread_id",
    "set_parallel_chunksize", "get_parallel_chunksize", "get_sched_size"))


def with_thread_start(payload):
    """A compile result as numba's cache stores it (``CompileResult._reduce``: the library,
    ..., the reload hooks, the environments), with numba's parfors reload hook (which
    starts numba's threads before the code is linked) added where its machine code calls
    the threading layer (:data:`THREAD_SYMBOLS`) and the hook is missing; anything else
    is returned as it is.

    numba adds the hook where a ``prange`` loop is compiled and passes it on to the
    kernels whose code links that one, but not from a callee loaded from the cache: a
    kernel compiled beside cached parallel callees would be saved without it, and a
    process that loaded it before starting its threads would crash.

    Examples
    --------
    >>> from graphsys.jit_cache import with_thread_start
    >>> with_thread_start(("not", "a", "compile result"))
    ('not', 'a', 'compile result')
    """
    try:
        from numba.core.typed_passes import _reload_parfors as start
    except ImportError:  # a numba without the hook: nothing to add
        return payload
    if not (isinstance(payload, tuple) and len(payload) == 9
            and isinstance(payload[0], tuple) and len(payload[0]) == 3
            and payload[0][1] == "object" and isinstance(payload[0][2], tuple)
            and payload[0][2] and isinstance(payload[7], (list, tuple))):
        return payload
    hooks, code = payload[7], payload[0][2][0]
    if start in hooks or not isinstance(code, bytes) or not any(
            s in code for s in THREAD_SYMBOLS):
        return payload
    return payload[:7] + ([*hooks, start],) + payload[8:]


def read_file(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path`` of at most :data:`MAX_ENTRY_BYTES`; anything
    else in its place (a FIFO, which would block the read forever, a device, a directory,
    a larger file, which would fill memory) is refused unread (BadEntry)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadEntry("not a regular file")
        if st.st_size > MAX_ENTRY_BYTES:
            raise BadEntry(f"{st.st_size:,} bytes, more than a kernel cache file holds "
                           f"({MAX_ENTRY_BYTES:,})")
        return f.read(MAX_ENTRY_BYTES + 1)


def write_atomic(path: str, blob: bytes, sync: bool = True) -> None:
    """Write ``blob`` to ``path`` whole: a new file under a temporary name beside it that
    holds this process's id (:func:`~graphsys.temp_files.temp_beside`, which first removes
    those a killed writer of ``path`` left), flushed to disk (unless not ``sync``), then
    renamed over ``path`` (mode ``0o666`` less the umask, as numba's)."""
    tmp = temp_beside(Path(path))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def dir_lock(path: str):
    """An exclusive ``flock`` of the directory ``path`` for the block (none where the system
    or the file system has none: the writes stay whole, an index update may then be lost,
    which costs a compilation, never a wrong entry)."""
    try:
        import fcntl

        fd = os.open(path, os.O_RDONLY)
    except (ImportError, OSError):
        fd = None
    try:
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)


@functools.cache
def open_to_others(path: str, root: str) -> str | None:
    """Why another account could write the cache directory ``path`` or one of its parents up
    to ``root`` (one it does not own, neither this user nor root; one every user may
    write), or None. A cache entry is a pickle, which runs code as it loads: such a
    directory is not used."""
    me = os.geteuid() if hasattr(os, "geteuid") else None
    p, top = Path(path), Path(root)
    while True:
        try:
            st = os.stat(p)
        except OSError:
            st = None  # not made yet: this process makes it
        if st is not None and me is not None:
            if st.st_uid not in (me, 0):
                return f"belongs to another user (uid {st.st_uid})"
            if st.st_mode & stat.S_IWOTH:
                return "can be written by every user"
        if p == top or top not in p.parents:
            return None
        p = p.parent


# -- what a kernel module compiles from ------------------------------------------------

def module_name(path: Path) -> str:
    """The dotted name of the graphsys module whose source file is ``path``."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _module_file(name: str) -> Path | None:
    """The source file of the graphsys module ``name``; None when it is not graphsys's or
    names no module (a name inside a module)."""
    parts = name.split(".")
    if parts[0] != PACKAGE.name:
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for path in ((base.with_suffix(".py"),) if parts[1:] else ()) + (base / "__init__.py",):
        if path.is_file():
            return path
    return None


def _top_level(tree: ast.Module):
    """The nodes run when the module is imported: not those inside functions, lambdas or
    ``if TYPE_CHECKING:`` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_names(source: bytes, module: str, is_package: bool) -> list[str]:
    """What a module's top-level imports read, as absolute names, relative ones resolved
    against ``module``: each package and module of ``import a.b.c`` (``a``, ``a.b``,
    ``a.b.c``), and ``a.b:x`` for ``from a.b import x`` (the submodule ``a.b.x`` where
    there is one, else a name of ``a.b``; :func:`_resolve`)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    names = set()
    for node in _top_level(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:  # with or without "as", each package is read
                parts = alias.name.split(".")
                names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names.update(f"{base}:{a.name}" if a.name != "*" else base for a in node.names)
    return sorted(n for n in names if n.split(".")[0].split(":")[0] == PACKAGE.name)


def _resolve(name: str) -> Path | None:
    """The graphsys source file an :func:`imported_names` entry reads: ``a.b:x`` is the
    module ``a.b.x`` where there is one (``from a.b import x`` of a submodule reads that
    module, not the package's ``__init__``), else the module ``a.b``."""
    base, _, attr = name.partition(":")
    found = _module_file(f"{base}.{attr}") if attr else None
    return found if found is not None else _module_file(base)


class _ImportMemo:
    """The import lists of source files by their bytes: per process, and in a framed JSON
    file beside the cache that later processes read (a file that does not check out is
    ignored)."""

    def __init__(self):
        self.path: Path | None = None
        self.entries: dict[str, list[str]] = {}
        self.new = False

    def attach(self, path: Path) -> None:
        if self.path is not None:
            return
        self.path = path
        try:
            data = json.loads(unframe(read_file(path)))
            entries = data["imports"]
            if isinstance(entries, dict) and all(
                    isinstance(v, list) and all(isinstance(n, str) for n in v)
                    for v in entries.values()):
                self.entries = {**entries, **self.entries}
        except Exception:  # noqa: BLE001 - absent or unusable: parse again
            pass

    def imports(self, path: Path) -> tuple[str, list[str]]:
        """(a SHA-256 of the module's bytes as imported, :func:`imported_source`, the
        names its top-level imports bind); an unreadable file has none."""
        source = imported_source(path)
        if source is None:
            return "unreadable", []
        module = module_name(path)
        key = hashlib.sha256(module.encode() + b"\0" + source).hexdigest()[:32]
        if key not in self.entries:
            self.entries[key] = imported_names(source, module, path.name == "__init__.py")
            self.new = True
        return key, self.entries[key]

    def save(self) -> None:
        if not self.new or self.path is None:
            return
        self.new = False
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            body = json.dumps({"imports": dict(list(self.entries.items())[-4096:])})
            write_atomic(str(self.path), frame(body.encode()), sync=False)  # a memo only


_memo = _ImportMemo()

#: The bytes of each graphsys source file as it was imported in this process (resolved
#: path -> bytes, :func:`note_source`): the sources a key is taken from.
_imported: dict[Path, bytes] = {}
#: :func:`_source`'s results, per process.
_sources: dict[Path, tuple[str, list[str]]] = {}


def note_source(path: str | Path, source: bytes) -> None:
    """Record ``source`` as the bytes the module at ``path`` was imported from in this
    process: its key (and the digest of every kernel module that compiles from it) is
    taken from them, not from the file as it is when the key is asked for, so a file
    edited after its import cannot name a cache entry of code this process does not run
    (:func:`graphsys.jit.install_on_import` records every graphsys module as it is
    imported)."""
    path = Path(path).resolve()
    _imported[path] = source
    _sources.pop(path, None)


def imported_source(path: Path) -> bytes | None:
    """The bytes of the source file ``path`` as this process imported it
    (:func:`note_source`), else as they are on disk now; None when it cannot be read."""
    source = _imported.get(path)
    if source is not None:
        return source
    try:
        return path.read_bytes()
    except OSError:
        return None


def _source(path: Path) -> tuple[str, list[str]]:
    """:meth:`_ImportMemo.imports` of ``path``, once per process (and once more where it
    is imported again)."""
    if path not in _sources:
        _sources[path] = _memo.imports(path)
    return _sources[path]


@functools.cache
def module_sources(py_file: str, memo_dir: str | None = None) -> tuple[str, ...]:
    """The graphsys source files the module ``py_file`` compiles from: itself and the
    graphsys modules it imports at module level, transitively (sorted paths).

    ``memo_dir``: where the import lists are kept across processes (none: this process
    only)."""
    if memo_dir is not None:
        _memo.attach(Path(memo_dir) / f"imports-{FORMAT}")
    seen: set[Path] = set()
    stack = [Path(py_file).resolve()]
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _source(path)[1]:
            found = _resolve(name)
            if found is not None and found not in seen:
                stack.append(found)
    _memo.save()
    return tuple(sorted(str(p) for p in seen))


@functools.cache
def module_digest(py_file: str, memo_dir: str | None = None) -> str:
    """16 hex digits naming the cache directory of the kernels of ``py_file``: a SHA-256
    of :data:`FORMAT`, numba's, llvmlite's and Python's versions, and the relative path
    and a SHA-256 of the bytes of each of :func:`module_sources`.

    Examples
    --------
    >>> from graphsys import jit_cache
    >>> len(jit_cache.module_digest(jit_cache.__file__))
    16
    """
    import llvmlite
    import numba

    h = hashlib.sha256(f"{FORMAT}\0{sys.implementation.cache_tag}\0numba {numba.__version__}"
                       f"\0llvmlite {llvmlite.__version__}\0".encode())
    for source in module_sources(py_file, memo_dir):
        path = Path(source)
        h.update(f"{path.relative_to(PACKAGE).as_posix()}\0{_source(path)[0]}\0".encode())
    return h.hexdigest()[:16]


# -- the entry files -------------------------------------------------------------------

@functools.cache
def checked_file_class():
    """numba's index-and-data cache file class (``IndexDataCacheFile``) with every file
    framed and checked (:func:`frame`, :func:`unframe`), written whole and named by its
    key (see the module docstring); None on a numba without that class."""
    try:
        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return None
    if not all(hasattr(IndexDataCacheFile, a) for a in ("_load_index", "_save_index",
                                                          "_data_path", "_dump")):
        return None

    class CheckedCacheFile(IndexDataCacheFile):
        """A kernel's index and data files in graphsys's checked format."""

        #: The data file the last :meth:`load` read (named when its result does not load).
        loading = None

        def load(self, key):
            self.loading = None
            name = self._load_index().get(key)
            if name is None:
                return None
            path = self.loading = self._data_path(name)
            blob = self._read(path)
            if blob is None:
                return None
            try:
                owner, _, body = unframe(blob).partition(b"\0")
                if owner != self._owner(name):
                    raise BadEntry(f"it holds the kernel of {owner.decode(errors='replace')}")
                return with_thread_start(pickle.loads(body))
            except ForeignEntry:
                return None
            except Exception as exc:  # noqa: BLE001 - any entry that does not load
                self._bad(path, exc)
                return None

        def save(self, key, data):
            body = self._dump(with_thread_start(data))
            with dir_lock(self._cache_path):
                overloads = self._load_index(quiet=True)
                name = overloads.get(key) or self._entry_name(key)
                blob = frame(self._owner(name) + b"\0" + body)
                write_atomic(self._data_path(name), blob)  # before the index names it
                if overloads.get(key) != name:
                    overloads[key] = name
                    self._save_index(overloads)

        def _owner(self, name: str) -> bytes:
            """What a data file holds before its compile result: its cache directory's
            name (module and digest) and its own, so a file copied or renamed from
            another kernel, signature or source version does not load."""
            return f"{os.path.basename(self._cache_path)}/{name}".encode()

        def _entry_name(self, key) -> str:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            return f"{self._index_name[:-len('.nbi')]}.{digest}.nbc"

        def _load_index(self, quiet=False):
            blob = self._read(self._index_path, quiet)
            if blob is None:
                return {}
            try:
                f = io.BytesIO(unframe(blob))
                if pickle.load(f) != self._version:
                    return {}  # another numba's: a miss, saved over
                stamp, overloads = pickle.loads(f.read())
                self._check(overloads)
            except ForeignEntry:
                return {}
            except Exception as exc:  # noqa: BLE001 - any index that does not load
                if not quiet:
                    self._bad(self._index_path, exc)
                return {}
            return overloads if stamp == self._source_stamp else {}

        def _check(self, overloads) -> None:
            base = self._index_name[:-len(".nbi")] + "."
            if not isinstance(overloads, dict) or not all(
                    isinstance(n, str) and os.path.basename(n) == n and n.startswith(base)
                    and n.endswith(".nbc") for n in overloads.values()):
                raise BadEntry("it names files that are not its kernel's")

        def _save_index(self, overloads):
            body = pickle.dumps(self._version, protocol=-1)
            write_atomic(self._index_path, frame(body + self._dump((self._source_stamp,
                                                                    overloads))))

        def _read(self, path, quiet=False):
            try:
                return read_file(path)
            except FileNotFoundError:
                return None
            except (OSError, BadEntry) as exc:
                if not quiet:
                    self._bad(path, exc)
                return None

        def _bad(self, path, exc) -> None:
            say(path, f"kernel cache entry did not load ({describe(exc)}); compiling the "
                      "kernel again")

    return CheckedCacheFile


def describe(exc: BaseException) -> str:
    """One short line about ``exc``."""
    if isinstance(exc, BadEntry):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def forget() -> None:
    """Drop what this process remembers of the sources (their import lists and digests),
    for a caller that edits them; a module imported keeps the bytes it was imported from
    (:func:`note_source`)."""
    for cached in (module_sources, module_digest, _module_file):
        cached.cache_clear()
    _sources.clear()
