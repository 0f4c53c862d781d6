"""Where graphsys's numba kernels are cached between processes and installs.

Every graphsys kernel is compiled with ``cache=True``: the first call of a kernel in a new
install compiles it (seconds for the larger ones), later processes load the machine code
from a cache directory (milliseconds). numba's own default keeps that cache beside the
source, in ``__pycache__`` (or, when the package directory is read-only, in a user
directory keyed by the source's path), so a new virtual environment of the same release
starts cold, and a kernel whose callee in *another* module changed can load stale code.

``import graphsys`` therefore puts :class:`KernelCacheLocator` in front of numba's
own locators for graphsys's source files only: their kernels are cached under
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
of a first run.
"""

from __future__ import annotations

import functools
import hashlib
import os
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
        subdirectory per package directory (file names are only unique within one)."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            rel = Path(py_file).resolve().parent.relative_to(PACKAGE)
            self._cache_path = str(cache_dir().joinpath(*(rel.parts or ("_",))))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                Path(py_file).resolve().relative_to(PACKAGE)
            except (OSError, ValueError):
                return None  # not graphsys's: numba's own locators decide
            return super().from_function(py_func, py_file)

    return KernelCacheLocator


KernelCacheLocator = _locator_class()


def install() -> bool:
    """Put :class:`KernelCacheLocator` first among numba's cache locators, after
    ``NUMBA_CACHE_DIR``'s (done by ``import graphsys``, before any kernel is defined;
    idempotent). Returns whether it is installed (False on a numba without the locator
    interface, or with ``NUMBA_CACHE_LOCATOR_CLASSES`` set, which numba then follows)."""
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
    return not os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES")


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
