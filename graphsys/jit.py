"""Where graphsys's numba kernels are cached between processes and installs.

Every graphsys kernel is compiled with ``cache=True``: the first call of a kernel in a new
install compiles it (seconds for the larger ones), later processes load the machine code
from a cache directory (milliseconds). numba's own default keeps that cache beside the
source, in ``__pycache__`` (or, when the package directory is read-only, in a user
directory keyed by the source's path), so a new virtual environment of the same release
starts cold, and a kernel whose callee in *another* module changed can load stale code.

``import graphsys`` therefore has :class:`KernelCacheLocator` put in front of numba's
own locators, as numba is first imported (:func:`install_on_import`; ``import graphsys``
itself does not import numba), for graphsys's source files only: their kernels are cached under
:func:`cache_root` (``$XDG_CACHE_HOME/graphsys/numba``, else ``~/.cache/graphsys/numba``),
in a directory named by a digest of every source file of the installed package
(:func:`source_digest`). Any install of the same sources, read-only or not, in any
environment, shares one cache; any change to any source file starts a new one. Beside it,
each entry keeps numba's own checks (the numba and Python versions, the CPU, the source
file's content).

``NUMBA_CACHE_DIR``, when set, wins as numba documents: every kernel is cached there, as
numba lays it out. Where neither directory can be written, numba's defaults apply
(``__pycache__``, then its user directory); :func:`kernel_cache` says which one a kernel
uses. ``graphsys warmup`` compiles every builtin algorithm's kernels into the cache ahead
of a first run. Loading a graphsys kernel from the cache skips numba's refresh of its
compiler's registries, which only compiling needs (:func:`install`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.abc
import importlib.util
import os
import sys
import threading
from pathlib import Path

#: The package directory whose source files the locator takes (graphsys/).
PACKAGE = Path(__file__).resolve().parent


def cache_root() -> Path:
    """The directory under which graphsys keeps its kernel caches, one subdirectory per
    :func:`source_digest`: ``$XDG_CACHE_HOME/graphsys/numba``, else
    ``~/.cache/graphsys/numba``.

    Returns
    -------
    Path
        The directory (it may not exist yet).

    Examples
    --------
    >>> from graphsys.jit import cache_root
    >>> cache_root().parts[-2:]
    ('graphsys', 'numba')
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphsys" / "numba"


@functools.cache
def source_digest() -> str:
    """A digest of the installed package's sources: the relative path and the bytes of
    every ``.py`` file under ``graphsys/``, sorted; 16 hex digits. It names the kernel
    cache directory, so a cached kernel never outlives a change to its own module or to a
    module it calls into.

    Returns
    -------
    str
        16 lowercase hex digits.
    """
    return digest_of(PACKAGE)


def digest_of(package: Path) -> str:
    """:func:`source_digest` of the package directory ``package``."""
    h = hashlib.sha256()
    for path in sorted(Path(package).rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:  # unreadable: its name still counts
            pass
        h.update(b"\0")
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """The kernel cache directory of these sources: :func:`cache_root` /
    :func:`source_digest`, with one subdirectory per package directory
    (``bsp``, ``storage``, ...; the package's own files in ``_``)."""
    return cache_root() / source_digest()


def _locator_class():
    """:class:`KernelCacheLocator`, defined on numba's locator base classes; None when this
    numba has none of that shape (then numba's defaults apply)."""
    try:
        from numba.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin
    except ImportError:
        return None

    class KernelCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
        """numba cache locator of graphsys's source files: :func:`cache_dir`, one
        subdirectory per package directory (file names are only unique within one).
        Every kernel is located as its module is imported (some forty for the storage
        modules alone), so the directory of each source file is worked out once, and each
        directory's check that it can be written (numba writes and removes a file in it)
        is made once per process."""

        _writable: set[str] = set()

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = _kernel_dir(py_file)

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            if self._cache_path not in self._writable:
                super().ensure_cache_path()
                self._writable.add(self._cache_path)

        @classmethod
        def from_function(cls, py_func, py_file):
            if _kernel_dir(py_file) is None:
                return None  # not graphsys's: numba's own locators decide
            return super().from_function(py_func, py_file)

    return KernelCacheLocator


@functools.cache
def _kernel_dir(py_file: str) -> str | None:
    """The cache directory of the kernels of the source file ``py_file``; None when the
    file is not graphsys's."""
    try:
        rel = Path(py_file).resolve().parent.relative_to(PACKAGE)
    except (OSError, ValueError):
        return None
    return str(cache_dir().joinpath(*(rel.parts or ("_",))))


@functools.cache
def locator_class():
    """:class:`KernelCacheLocator` (numba imported on first call); None on a numba without
    the locator interface."""
    return _locator_class()


def __getattr__(name: str):
    if name == "KernelCacheLocator":  # defined on numba's classes: imports numba
        return locator_class()
    raise AttributeError(f"module 'graphsys.jit' has no attribute {name!r}")


def install() -> bool:
    """Put :class:`KernelCacheLocator` first among numba's cache locators, after
    ``NUMBA_CACHE_DIR``'s (before any kernel is defined: :func:`install_on_import` has
    ``import graphsys`` do it when numba is first imported; idempotent). Returns whether it
    is installed (False on a numba without the locator interface, or with
    ``NUMBA_CACHE_LOCATOR_CLASSES`` set, which numba then follows). Also has a cache load
    of a graphsys kernel skip numba's refresh of its target (:func:`_load_without_refresh`)."""
    KernelCacheLocator = locator_class()
    if KernelCacheLocator is None:
        return False
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):
        return False
    if KernelCacheLocator not in classes:
        user = (getattr(caching, "UserProvidedCacheLocator", None)
                or getattr(caching, "_UserProvidedCacheLocator", None))
        classes.insert(1 if classes[:1] == [user] else 0, KernelCacheLocator)
    _load_without_refresh(caching)
    return not os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES")


def _load_without_refresh(caching) -> None:
    """Have a cache load of a graphsys kernel skip numba's refresh of its target context.

    Before every cache load numba refreshes the CPU target: it imports and installs every
    typing and lowering registry (NumPy's array functions, typed containers, unicode, cffi:
    some 90 modules, most of numba's start-up). Code loaded from the cache needs none of
    them: its machine code is linked already, and what it calls at run time is numba's
    runtime (NRT), which is initialised here as the refresh would. The registries are
    needed to compile, and numba's compiler refreshes both contexts itself, so a cache
    miss, any kernel without ``cache=True``, other targets' caches (CUDA's) and every other
    package's functions are as before; a load that fails here is retried the usual way.
    A loaded kernel's environment may import a module of numba's (``numba.np.arraymath``
    for ``np.arange``): its BLAS check spares ``scipy.linalg`` (:func:`blas_check_alone`),
    as in :func:`graphsys.storage.kernels.start_up`'s refresh. graphsys's kernels use no
    object mode (whose cached code calls back into numba's Python side). A no-op on a
    numba without these internals."""
    cache = getattr(caching, "Cache", None)
    cpu_cache = getattr(caching, "FunctionCache", None)  # the CPU target's (njit) cache
    usual = getattr(cache, "load_overload", None)
    if usual is None or cpu_cache is None or getattr(usual, "graphsys_lazy", False) or not all(
            hasattr(cache, a) for a in ("_load_overload", "_guard_against_spurious_io_errors")):
        return
    try:
        from numba.core.runtime import rtsys
    except ImportError:
        return

    def load_overload(self, sig, target_context):
        module = getattr(getattr(self, "_py_func", None), "__module__", None) or ""
        if type(self) is not cpu_cache or not module.startswith("graphsys.") or not hasattr(
                rtsys, "initialize"):
            return usual(self, sig, target_context)
        try:
            rtsys.initialize(target_context)
            with blas_check_alone(), self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - numba's own path (refresh, then load) decides
            return usual(self, sig, target_context)

    load_overload.graphsys_lazy = True
    cache.load_overload = load_overload


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


def install_on_import() -> None:
    """Have :func:`install` run once numba is imported: now if it is, else when it is first
    imported (``import graphsys`` calls this: a command that reads its input before it
    needs a kernel starts without numba's import; idempotent)."""
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
    import sys

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
    import importlib.machinery
    import importlib.util
    import sys

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
    import sys

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
    common parent: :func:`cache_dir`, ``NUMBA_CACHE_DIR``, or numba's defaults where
    neither can be written); None when no cached kernel is imported."""
    paths = [d.stats.cache_path for d in kernels()]
    return os.path.commonpath(paths) if paths else None
