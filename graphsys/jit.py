"""Where graphsys's numba kernels are cached between processes and installs, and what
``import graphsys`` installs in numba for that (docs/architecture.md, "The kernel cache",
says it in full).

Kernels are cached under :func:`cache_root`, one directory per kernel module named by the
digest of the sources it compiles from (:func:`kernel_dir`,
:func:`graphsys.jit_cache.module_digest`); where that cannot be written, numba's defaults
apply, and where nothing can be written the directory is read as it is
(:class:`ReadOnlyKernelCacheLocator`); :func:`kernel_cache` says which one a kernel uses.
A cache directory owned by another user or writable by every user is not used.
:func:`install_on_import` puts two finders on ``sys.meta_path``: one records the bytes each
graphsys submodule is imported from (:func:`record_sources`), the other, at the first
``import numba`` (with the garbage collector paused, :func:`gc_paused`), calls
:func:`install`: :class:`KernelCacheLocator` and :class:`ReadOnlyKernelCacheLocator` go into
numba's cache locators, ``Cache.load_overload`` / ``save_overload`` read and write the
checked entries of :mod:`graphsys.jit_cache` for graphsys's kernels only
(:func:`_patch_cache`) with keys that end with the kernel's compile options
(:func:`_patch_options`), and one ``numba:compile`` listener (:func:`watch_compiles`) counts
compilations (:func:`compile_totals`). ``GRAPHSYS_KERNEL_CACHE=numba`` (:data:`OFF_SWITCH`)
turns all of it off.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path

from graphsys import jit_cache

#: The package directory whose source files the locator takes (graphsys/).
PACKAGE = jit_cache.PACKAGE
#: The environment variable and value that leave numba as it is (see the module docstring).
OFF_SWITCH = ("GRAPHSYS_KERNEL_CACHE", "numba")


def cache_root() -> Path:
    """The directory under which graphsys keeps its kernel caches, one subdirectory per
    kernel module and digest (:func:`kernel_dir`): ``$NUMBA_CACHE_DIR/graphsys`` when
    ``NUMBA_CACHE_DIR`` is set, else ``$XDG_CACHE_HOME/graphsys/numba``, else
    ``~/.cache/graphsys/numba``.

    Returns
    -------
    Path
        The directory (it may not exist yet).

    Examples
    --------
    >>> from graphsys.jit import cache_root
    >>> cache_root().name in ("numba", "graphsys")
    True
    """
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    if numba_dir:
        return Path(numba_dir) / "graphsys"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphsys" / "numba"


@functools.cache
def kernel_dir(py_file: str) -> str | None:
    """The cache directory of the kernels of the source file ``py_file``:
    :func:`cache_root` / its package directories / ``<module>-<digest>``, the digest
    :func:`graphsys.jit_cache.module_digest` of what the module compiles from; None when
    the file is not graphsys's (or its sources cannot be read as Python). numba is
    imported.

    Examples
    --------
    >>> from pathlib import Path
    >>> from graphsys import jit
    >>> from graphsys.storage import kernels
    >>> Path(jit.kernel_dir(kernels.__file__)).parent.name
    'storage'
    """
    try:
        path = Path(py_file).resolve()
        rel = path.parent.relative_to(PACKAGE)
    except (OSError, ValueError):
        return None
    if path.suffix != ".py":
        return None
    root = cache_root()
    memo = None if jit_cache.open_to_others(str(root), str(root)) else str(root)
    try:
        digest = jit_cache.module_digest(str(path), memo)
    except Exception:  # noqa: BLE001 - no key, no graphsys cache: numba's locators decide
        return None
    return str(root.joinpath(*rel.parts, f"{path.stem}-{digest}"))


@functools.cache
def locator_classes():
    """(:class:`KernelCacheLocator`, :class:`ReadOnlyKernelCacheLocator`), defined on
    numba's locator base classes (numba imported on first call); None when this numba has
    none of that shape (then numba's defaults apply)."""
    try:
        from numba.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin
    except ImportError:
        return None

    class KernelCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
        """numba cache locator of graphsys's source files: :func:`kernel_dir`, where it
        can be written and no other user can write it. Every kernel is located as its
        module is imported (some forty for the storage modules alone), so the directory of
        each source file is worked out once, and each directory's check that it can be
        written (numba writes and removes a file in it) is made once per process."""

        _writable: set[str] = set()

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = kernel_dir(py_file)

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            if self._cache_path not in self._writable:
                super().ensure_cache_path()
                self._writable.add(self._cache_path)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _usable(py_file):
                return None  # not graphsys's, or open to others: numba's locators decide
            return super().from_function(py_func, py_file)

    class ReadOnlyKernelCacheLocator(KernelCacheLocator):
        """The last of numba's locators, for graphsys's source files where no other can
        write: :func:`kernel_dir` as it is (entries there load; nothing is saved, a kernel
        not there is compiled in each process) instead of numba's error that no locator
        is available."""

        def ensure_cache_path(self):
            raise OSError(errno.EROFS, "the kernel cache is read-only here", self._cache_path)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _usable(py_file) or not os.path.exists(py_file):
                return None
            return cls(py_func, py_file)

    return KernelCacheLocator, ReadOnlyKernelCacheLocator


def _usable(py_file: str) -> bool:
    """Whether ``py_file`` is graphsys's and its :func:`kernel_dir` is not open to other
    users (that is said once)."""
    path = kernel_dir(py_file)
    if path is None:
        return False
    why = jit_cache.open_to_others(path, str(cache_root()))
    if why is not None:
        jit_cache.say(str(cache_root()), f"kernel cache directory {why}: not used (numba's "
                                         "default cache locations apply)")
    return why is None


def __getattr__(name: str):
    classes = ("KernelCacheLocator", "ReadOnlyKernelCacheLocator")
    if name in classes:  # defined on numba's classes: imports numba
        found = locator_classes()
        return found[classes.index(name)] if found else None
    raise AttributeError(f"module 'graphsys.jit' has no attribute {name!r}")


def install() -> bool:
    """Put :class:`KernelCacheLocator` first and :class:`ReadOnlyKernelCacheLocator` last
    among numba's cache locators (before any kernel is defined: :func:`install_on_import`
    has ``import graphsys`` do it when numba is first imported; idempotent), and have
    numba's cache loads and saves of graphsys kernels go through :func:`_patch_cache`.
    Returns whether the locators are installed (False on a numba without the locator
    interface, or with ``NUMBA_CACHE_LOCATOR_CLASSES`` set, which numba then follows)."""
    watch_compiles()
    found = locator_classes()
    if found is None:
        return False
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):
        return False
    first, last = found
    if first not in classes:
        classes.insert(0, first)
    if last not in classes:
        classes.append(last)
    _patch_cache(caching)
    _patch_options(caching)
    return not os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES")


def _patch_options(caching) -> None:
    """Key a graphsys kernel's cache entries by its dispatcher's compile options as well.

    numba keys an entry by the signature, the CPU and the function's bytecode, and names
    its files by the function's module, name and first line; the options it was compiled
    with are in neither. Two dispatchers of one Python function with other options (the
    samplers' ``parallel=True`` kernel and its serial ``nogil`` twin) therefore share their
    files and keys, and whichever compiles first is what the other loads from then on: a
    serial kernel where the parallel one was asked for (half the rate on two cores), or a
    parallel one inside a loader's worker threads. Here a graphsys dispatcher's cache
    holds its options (``graphsys_options``, set when caching is enabled) and its index
    keys end with them, so each twin has its own entries in the shared index. A no-op on
    a numba without these internals."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        return
    cache = getattr(caching, "Cache", None)
    usual_enable = getattr(Dispatcher, "enable_caching", None)
    usual_key = getattr(cache, "_index_key", None)
    if usual_enable is None or usual_key is None or getattr(usual_key, "graphsys", False):
        return

    def enable_caching(self):
        usual_enable(self)
        module = getattr(self.py_func, "__module__", None) or ""
        kept = getattr(self, "_cache", None)
        if module.startswith("graphsys.") and kept is not None:
            kept.graphsys_options = tuple(sorted(
                (k, repr(v)) for k, v in getattr(self, "targetoptions", {}).items()))

    def _index_key(self, sig, codegen):
        key = usual_key(self, sig, codegen)
        options = getattr(self, "graphsys_options", None)
        return key if options is None else (*key, options)

    enable_caching.graphsys = _index_key.graphsys = True
    Dispatcher.enable_caching = enable_caching
    cache._index_key = _index_key


def _patch_cache(caching) -> None:
    """Have numba's cache loads and saves of graphsys kernels read and write checked
    entries (:func:`graphsys.jit_cache.checked_file_class`), fail closed, and load without
    numba's refresh of its target context.

    **Fail closed.** An entry that does not load (a file that does not check out, a data
    file of another signature, a compile result that does not rebuild) is said in one line
    and loads as a miss: the dispatcher compiles the kernel and saves it over the entry. A
    save that fails (a directory that became read-only, a full disk) is said in one line;
    the compiled kernel runs. Nothing is saved through :class:`ReadOnlyKernelCacheLocator`.

    **No refresh.** numba refreshes the CPU target (imports every typing and lowering
    registry, most of its start-up) before every cache load; a CPU cache load of a graphsys
    kernel initialises numba's runtime (NRT) instead, which is all loaded machine code
    calls (graphsys's kernels use no object mode), with :func:`blas_check_alone`. A
    compilation refreshes the contexts itself, and a load that fails here is retried with
    the refresh. A no-op on a numba without these internals."""
    cache = getattr(caching, "Cache", None)
    cpu_cache = getattr(caching, "FunctionCache", None)  # the CPU target's (njit) cache
    usual_load = getattr(cache, "load_overload", None)
    usual_save = getattr(cache, "save_overload", None)
    checked = jit_cache.checked_file_class()
    if (usual_load is None or usual_save is None or cpu_cache is None or checked is None
            or getattr(usual_load, "graphsys", False)
            or not all(hasattr(cache, a) for a in ("_load_overload", "_save_overload"))):
        return
    try:
        from numba.core import sigutils
        from numba.core.runtime import rtsys
    except ImportError:
        return

    def ours(self) -> bool:
        module = getattr(getattr(self, "_py_func", None), "__module__", None) or ""
        if not module.startswith("graphsys.") or type(
                getattr(self, "_cache_file", None)) not in (checked.__base__, checked):
            return False
        self._cache_file.__class__ = checked
        return True

    def load(self, sig, target_context):
        cres = self._load_overload(sig, target_context)
        if cres is not None and hasattr(cres, "signature"):
            args, ret = sigutils.normalize_signature(sig)
            if tuple(cres.signature.args) != tuple(args) or ret not in (
                    None, cres.signature.return_type):
                raise jit_cache.BadEntry("it holds another signature than its index says")
        return cres

    def load_overload(self, sig, target_context):
        if not ours(self):
            return usual_load(self, sig, target_context)
        try:
            if type(self) is cpu_cache and hasattr(rtsys, "initialize"):
                try:
                    rtsys.initialize(target_context)
                    with blas_check_alone():
                        return load(self, sig, target_context)
                except jit_cache.BadEntry:
                    raise
                except Exception:  # noqa: BLE001 - retried with numba's refresh
                    pass
            target_context.refresh()
            return load(self, sig, target_context)
        except Exception as exc:  # noqa: BLE001 - fail closed: compiled as on a miss
            path = self._cache_file.loading or self._cache_file._index_path
            jit_cache.say(path, f"kernel cache entry did not load "
                                f"({jit_cache.describe(exc)}); compiling the kernel again")
            return None

    def save_overload(self, sig, data):
        if not ours(self):
            return usual_save(self, sig, data)
        classes = locator_classes()
        if isinstance(self._impl.locator, classes[1]):
            return None  # read-only here: compiled in each process
        try:
            self._save_overload(sig, data)
        except Exception as exc:  # noqa: BLE001 - the compiled kernel runs regardless
            jit_cache.say(self._cache_file._index_path,
                          f"kernel cache entry could not be written "
                          f"({jit_cache.describe(exc)}); the kernel is compiled "
                          "in each process")
        return None

    load_overload.graphsys = save_overload.graphsys = True
    cache.load_overload = load_overload
    cache.save_overload = save_overload


_watching = [False]
_compiled = {"kernels": 0, "seconds": 0.0}  # graphsys kernel compilations in this process


def compile_totals() -> dict[str, float]:
    """The graphsys kernel signatures compiled in this process since numba was imported
    and their seconds (outermost compilations, by ``time.perf_counter``):
    ``{"kernels": int, "seconds": float}``, for a caller that reports its own time less
    compilations (:func:`watch_compiles` counts them; a cache load is no compilation).

    Examples
    --------
    >>> from graphsys.jit import compile_totals
    >>> sorted(compile_totals())
    ['kernels', 'seconds']
    """
    return dict(_compiled)


def watch_compiles() -> bool:
    """Have numba tell :mod:`graphsys.progress` when a kernel of a ``graphsys.*`` module
    compiles (a ``numba:compile`` event, numba's public event API; a cache load is none),
    so that an open progress display says it and leaves its seconds out of the loop's time
    (:func:`graphsys.progress.compile_started`, :func:`~graphsys.progress.compile_ended`).
    Only the outermost of nested compilations is told, with the number of graphsys kernel
    signatures compiled in it. Nothing is imported for it: where ``graphsys.progress`` is
    not imported, no display is open. :func:`install` calls it (idempotent); returns
    whether the listener is registered."""
    if _watching[0]:
        return True
    try:
        from numba.core import event
    except ImportError:
        return False

    class CompileListener(event.Listener):
        depth = kernels = 0
        t0 = 0.0

        def on_start(self, ev):
            module = _kernel_module(ev)
            if module is not None:
                self.depth += 1
                self.kernels += 1
                if self.depth == 1:
                    self.t0 = time.perf_counter()
                    _tell("compile_started", module)

        def on_end(self, ev):
            module = _kernel_module(ev)
            if module is not None and self.depth:
                self.depth -= 1
                if not self.depth:
                    kernels, self.kernels = self.kernels, 0
                    _compiled["kernels"] += kernels
                    _compiled["seconds"] += time.perf_counter() - self.t0
                    _tell("compile_ended", module, kernels)

    event.register("numba:compile", CompileListener())
    _watching[0] = True
    return True


def _kernel_module(ev) -> str | None:
    """The module of the kernel a ``numba:compile`` event compiles, if it is graphsys's."""
    data = ev.data if isinstance(ev.data, dict) else {}
    func = getattr(data.get("dispatcher"), "py_func", None)
    module = getattr(func, "__module__", None) or ""
    return module if module.startswith("graphsys.") else None


def _tell(what: str, *args) -> None:
    """Call ``graphsys.progress.<what>(*args)`` if that module is imported; a display's
    failure never fails the compilation."""
    progress = sys.modules.get("graphsys.progress")
    if progress is not None:
        try:
            getattr(progress, what)(*args)
        except Exception:  # noqa: BLE001 - progress display only
            pass


class _NumbaHook:
    """A ``sys.meta_path`` finder that runs :func:`install` right after the ``numba``
    package is first imported (its import with the collector paused, see
    :func:`gc_paused`), then takes itself off the path. Every graphsys kernel is defined
    by a module that imports numba first, so each one finds the locator installed."""

    busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "numba" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        sys.meta_path.remove(self)  # the import stops at this spec: nothing is skipped
        loader = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                with gc_paused():  # numba's import: ~10^5 objects, all kept
                    loader.exec_module(module)
                module.__loader__ = module.__spec__.loader = loader
                install()

        spec.loader = Loader()
        return spec


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Python's source file loader, which first records the bytes of the module it imports
    (:func:`graphsys.jit_cache.note_source`): the kernel cache's keys are taken from
    them."""

    def exec_module(self, module):
        with contextlib.suppress(OSError):  # unreadable: its key reads the file (none)
            jit_cache.note_source(self.path, self.get_data(self.path))
        super().exec_module(module)


class _SourceHook:
    """A ``sys.meta_path`` finder of graphsys's submodules that loads each from its source
    file with :class:`_SourceLoader` (found as the path finder finds it; any other
    module, or one that is no source file, is left to the finders after it)."""

    def find_spec(self, fullname, path=None, target=None):
        if path is None or not fullname.startswith(f"{PACKAGE.name}."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return spec
        spec.loader = _SourceLoader(spec.loader.name, spec.loader.path)
        return spec


def record_sources() -> None:
    """Record the bytes every graphsys module is imported from in this process
    (:func:`graphsys.jit_cache.note_source`): those imported already now, later ones as
    they are imported (:class:`_SourceHook`; idempotent)."""
    if any(isinstance(f, _SourceHook) for f in sys.meta_path):
        return
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == PACKAGE.name or name.startswith(f"{PACKAGE.name}.")) and path:
            with contextlib.suppress(OSError):
                jit_cache.note_source(path, Path(path).read_bytes())
    sys.meta_path.insert(0, _SourceHook())


def install_on_import() -> None:
    """Have :func:`install` run once numba is imported: now if it is, else when it is first
    imported (``import graphsys`` calls this: a command that reads its input before it
    needs a kernel starts without numba's import; idempotent), and record the sources
    graphsys's modules are imported from (:func:`record_sources`). Nothing is done where
    the environment sets :data:`OFF_SWITCH` (``GRAPHSYS_KERNEL_CACHE=numba``)."""
    name, off = OFF_SWITCH
    value = os.environ.get(name, "").strip().lower()
    if value == off:
        return
    if value not in ("", "graphsys"):
        jit_cache.say(name, f"={value} is neither 'graphsys' nor '{off}': graphsys's kernel "
                            "cache is used")
    record_sources()
    if "numba" in sys.modules:
        install()
    elif not any(isinstance(f, _NumbaHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _NumbaHook())


_gc_lock = threading.Lock()
_gc_pauses = [0]  # blocks in gc_paused now, in any thread
_freezing = [False]  # freeze_long_lived was called


def freeze_long_lived() -> None:
    """For a process that ends once its work is done (the CLI's commands that exit
    without teardown): move every object the collector tracks now, and at the end of
    every later :func:`gc_paused` block, into its permanent generation (:func:`gc.freeze`),
    where no collection scans them again. Those are the imports' objects (numba's some
    10^5 among them), alive until the process ends; left young, the first collections
    after a pause would traverse them all. Not for a long-lived process: a cycle
    among frozen objects that becomes garbage is never collected."""
    with _gc_lock:
        _freezing[0] = True
        gc.freeze()


@contextlib.contextmanager
def gc_paused():
    """Within the block, Python's cyclic garbage collector does not run (it is switched back
    on when the last such block in any thread ends, if it was on before the first began).

    For numba's imports and start-up: they make some 10^5 objects that all stay alive, so
    the collections their allocations trigger (a full one among them) find nothing.

    Examples
    --------
    >>> import gc
    >>> from graphsys.jit import gc_paused
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses.append(gc.isenabled())
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses.pop():
                if _freezing[0]:
                    gc.freeze()
                gc.enable()


_BLAS_MODULE = "scipy.linalg.cython_blas"


@contextlib.contextmanager
def blas_check_alone():
    """Within the block, numba's first start-up checks for BLAS without importing
    ``scipy.linalg``.

    numba's CPU target, when it starts, imports ``numba.np.arraymath``, which checks that a
    BLAS is there by importing ``scipy.linalg.cython_blas``: that imports all of
    ``scipy.linalg`` (its LAPACK, its array-API layer), about a third of numba's start-up,
    for kernels (graphsys's) that never call a BLAS. Within the block the ``cython_blas``
    extension module is loaded by itself, from the file that import would load, and
    listed in ``sys.modules`` for that check; after it the entry is removed, so a later
    import of it goes through ``scipy.linalg`` as usual (and gets the same module: an
    extension module is initialised once per process). Nothing is done when numba's
    array support has loaded already, ``cython_blas`` is imported, or its file is not found.
    """
    added = None
    if "numba.np.arraymath" not in sys.modules and _BLAS_MODULE not in sys.modules:
        added = _load_blas_alone()
    try:
        yield
    finally:
        if added is not None and sys.modules.get(_BLAS_MODULE) is added:
            del sys.modules[_BLAS_MODULE]


def _load_blas_alone():
    """``scipy.linalg.cython_blas`` loaded from its file without its package, listed in
    ``sys.modules``; None where it cannot be."""
    try:
        scipy = importlib.util.find_spec("scipy")
        if scipy is None or not scipy.submodule_search_locations:
            return None
        for folder in scipy.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(folder, "linalg", "cython_blas" + suffix)
                if path.is_file():
                    spec = importlib.util.spec_from_file_location(_BLAS_MODULE, path)
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    sys.modules[_BLAS_MODULE] = module
                    return module
    except Exception:  # noqa: BLE001 - a shortcut only: numba's own import path remains
        pass
    return None


def kernel_cache(dispatcher) -> tuple[str | None, int, int]:
    """Where a numba kernel (a ``cache=True`` dispatcher) is cached, and its cache hits and
    misses in this process (a miss is a compilation).

    Returns
    -------
    tuple of (str or None, int, int)
        The cache directory (None for a kernel without a cache), hits, misses.
    """
    stats = dispatcher.stats
    return (stats.cache_path, sum(stats.cache_hits.values()),
            sum(stats.cache_misses.values()))


def kernels() -> list:
    """Every cached numba kernel (dispatcher) of the graphsys modules imported so far."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:
        return []
    seen: dict[int, object] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "graphsys" or name.startswith("graphsys.")):
            continue
        for obj in list(vars(module).values()):
            if isinstance(obj, Dispatcher) and obj._cache.cache_path is not None:
                seen.setdefault(id(obj), obj)
    return list(seen.values())


def cache_counts() -> dict[str, int]:
    """Cache hits (kernels loaded) and misses (kernels compiled) of every graphsys kernel in
    this process so far: ``{"loaded": int, "compiled": int}`` (one per signature)."""
    loaded = compiled = 0
    for d in kernels():
        _, hits, misses = kernel_cache(d)
        loaded += hits
        compiled += misses
    return {"loaded": loaded, "compiled": compiled}


def cache_location() -> str | None:
    """The directory holding the caches of the graphsys kernels imported so far (their
    common parent: under :func:`cache_root`, or numba's defaults where it cannot be
    written); None when no cached kernel is imported."""
    paths = [d.stats.cache_path for d in kernels()]
    return os.path.commonpath(paths) if paths else None
