"""One small generic registry for every plug-in point of graphsys.

Configs and command lines hold a string key (``"complex_diagonal"``, ``"pagerank"``), never a
class; a :class:`Registry` turns the key into its entry and an unknown key into one
:class:`UnknownPluginError` that lists the known ones. An entry is whatever its kind needs: a
class (partitioners, embedding operators), a factory, or a small spec dataclass (vertex
algorithms, GNN models, dataset loaders, input formats).

Entries are registered three ways, all equivalent once looked up:

* eagerly, ``REG.register(name, obj)`` or the class decorator ``@REG.register_as(name)``;
* lazily, ``REG.register_lazy(name, "package.module:attribute")``: the module is imported the
  first time the entry is looked up, so listing :meth:`Registry.names` (argparse ``choices``
  and help texts) imports nothing heavy. The built-in plug-ins of graphsys are registered
  this way in :mod:`graphsys.plugins`;
* by a third-party distribution, through the ``graphsys.plugins`` entry-point group. Each
  entry point is named ``KIND.NAME`` and points at the entry, e.g. in ``pyproject.toml``::

      [project.entry-points."graphsys.plugins"]
      "algorithm.triangles" = "my_package.triangles:TRIANGLES"
      "partitioner.metis" = "my_package.metis:MetisPartitioner"

  ``KIND`` is the :attr:`Registry.kind` of the registry (``algorithm``, ``partitioner``,
  ``gnn_model``, ``dataset_loader``, ``input_format``, ``operator``, ``comparator``,
  ``loss_fn``). The group is read once per process, the first time any registry is queried;
  each entry point is imported only when its name is looked up (like a lazy entry). A name
  that is already registered by graphsys keeps the built-in entry, and a name that two
  entry points give different targets is ignored (a warning is logged for each).

A name is letters, digits, ``_``, ``.`` and ``-``, not starting with ``.`` or ``-`` (it is
a command-line choice and a config value); any other is refused (an entry point's with a
warning). An entry that raises as it is imported gives one :class:`GraphsysError` naming
it, and stays unresolved.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from graphsys.errors import GraphsysError

T = TypeVar("T")

log = logging.getLogger(__name__)

#: The entry-point group third-party plug-ins register in.
ENTRY_POINT_GROUP = "graphsys.plugins"


class UnknownPluginError(GraphsysError, KeyError, ValueError):
    """A name that no plug-in of its kind is registered under; the message lists the known
    names. A :class:`KeyError` and a :class:`ValueError` too, for callers that catch those."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def lazy_exports(package: str, namespace: dict[str, Any], exports: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of a package whose public names are imported on first use
    (PEP 562): ``exports`` maps each name to the module that defines it; a name, once
    imported, is kept in the package's ``namespace`` (its ``globals()``), so later lookups
    are plain attribute reads."""
    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__


def _check_name(kind: str, name: object) -> None:
    """Refuse a plug-in name that is not letters, digits, ``_``, ``.`` and ``-`` (not first
    a ``.`` or ``-``): a name is a command-line choice (``--help``) and a config value."""
    if not isinstance(name, str) or not re.fullmatch(r"\w[\w.-]*", name, re.ASCII):
        raise ValueError(f"{kind} name {name!r} is not letters, digits, '_', '.' and '-'")


class _Lazy:
    """A ``module:attribute`` reference imported on first use."""

    __slots__ = ("target",)

    def __init__(self, target: str):
        module, sep, attr = target.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"lazy plug-in {target!r} is not of the form 'module:attribute'")
        self.target = target

    def load(self) -> Any:
        module, _, attr = self.target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


class Registry(Generic[T]):
    """Maps names to plug-ins of one ``kind`` (the word used in errors and entry points).

    ``register`` / ``register_as`` add an entry now, ``register_lazy`` adds a
    ``module:attribute`` reference imported on first lookup; :meth:`get` returns the entry
    (``get_class`` is the same, for class registries) and :meth:`names` the sorted names.
    """

    def __init__(self, kind: str, entry_type: str | None = None):
        self.kind = kind
        #: ``"module:Class"`` that a lazy or entry-point entry must be an instance or a
        #: subclass of (checked as it is imported; None: anything).
        self.entry_type = entry_type
        self._entries: dict[str, T | _Lazy] = {}
        self._plugins_loaded = False

    # -- registering ----------------------------------------------------------------------
    def register(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name``; returns ``entry``. Registering the same entry
        twice is a no-op; another entry under a taken name is a ValueError."""
        _check_name(self.kind, name)
        old = self._entries.get(name)
        if isinstance(old, _Lazy):
            old = self._resolve(name)
        if old is not None and old is not entry:
            raise ValueError(f"{self.kind} {name!r} is already registered to "
                             f"{getattr(old, '__name__', repr(old))}")
        self._entries[name] = entry
        return entry

    def register_as(self, name: str) -> Callable[[T], T]:
        """Class (or function) decorator: ``@REG.register_as("name")``; sets ``cls.name``
        on classes."""
        def decorator(entry: T) -> T:
            self.register(name, entry)
            if isinstance(entry, type):
                entry.name = name  # type: ignore[attr-defined]
            return entry
        return decorator

    def register_lazy(self, name: str, target: str) -> None:
        """Register the object at ``target`` (``"package.module:attribute"``) under ``name``
        without importing it; it is imported by the first :meth:`get` of ``name``."""
        _check_name(self.kind, name)
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = _Lazy(target)

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and interactive sessions); absent names are ignored."""
        self._entries.pop(name, None)

    # -- looking up -----------------------------------------------------------------------
    def get(self, name: str) -> T:
        """The entry registered as ``name``; :class:`UnknownPluginError` (listing the known
        names) when there is none."""
        if name not in self:  # an unhashable name too (a list for a string)
            raise UnknownPluginError(f"unknown {self.kind} {name!r} "
                                     f"(known: {', '.join(self.names())})")
        return self._resolve(name)

    get_class = get

    def names(self) -> list[str]:
        """Every registered name, sorted (for argparse ``choices`` and help texts)."""
        self._load_plugins()
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` for every name, sorted; imports every lazy entry."""
        return [(name, self.get(name)) for name in self.names()]

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return isinstance(name, str) and name in self._entries

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"

    def _resolve(self, name: str) -> T:
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            try:
                entry = entry.load()
            except Exception as exc:  # noqa: BLE001 - a plug-in's import may raise anything
                why = str(exc).splitlines()[0] if str(exc) else ""
                if not isinstance(exc, (ImportError, AttributeError)):
                    why = f"{type(exc).__name__}: {why}" if why else type(exc).__name__
                raise GraphsysError(f"{self.kind} {name!r}: cannot load {entry.target} "
                                    f"({why})") from exc
            self._check_type(name, entry, self._entries[name].target)
            if isinstance(entry, type) and getattr(entry, "name", None) is None:
                entry.name = name  # type: ignore[attr-defined]
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def _check_type(self, name: str, entry: Any, target: str) -> None:
        """Refuse, in one line, an imported entry that is not of :attr:`entry_type`."""
        if self.entry_type is None:
            return
        want = _Lazy(self.entry_type).load()
        if not (isinstance(entry, want) or (isinstance(entry, type) and issubclass(entry, want))):
            what = (f"class {entry.__name__}" if isinstance(entry, type) else
                    f"{type(entry).__name__} {entry!r:.60}")
            raise GraphsysError(f"{self.kind} {name!r}: {target} is {what} (expected "
                                f"{want.__name__})")

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for name, target in _plugin_entry_points().get(self.kind, {}).items():
            if name in self._entries:
                log.warning("%s plug-in %r from the %s entry points is ignored: the name is "
                            "already registered", self.kind, name, ENTRY_POINT_GROUP)
                continue
            try:
                _check_name(self.kind, name)
                self._entries[name] = _Lazy(target)
            except ValueError as exc:
                log.warning("%s plug-in %r ignored: %s", self.kind, name, exc)


_ENTRY_POINTS: dict[str, dict[str, str]] | None = None


def _plugin_entry_points() -> dict[str, dict[str, str]]:
    """``{kind: {name: "module:attribute"}}`` of the ``graphsys.plugins`` entry points,
    read once per process (:func:`reset_plugins` forgets them)."""
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        from importlib.metadata import entry_points

        found: dict[str, dict[str, str]] = {}
        clashes: set[tuple[str, str]] = set()
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            kind, sep, name = ep.name.partition(".")
            if not sep or not name:
                log.warning("entry point %r of group %s is not named KIND.NAME; ignored",
                            ep.name, ENTRY_POINT_GROUP)
                continue
            if found.setdefault(kind, {}).setdefault(name, ep.value) != ep.value:
                clashes.add((kind, name))
        for kind, name in sorted(clashes):  # which would win is the order of sys.path
            del found[kind][name]
            log.warning("%s plug-in %r is ignored: several entry points of %s name it, with "
                        "different targets", kind, name, ENTRY_POINT_GROUP)
        _ENTRY_POINTS = found
    return _ENTRY_POINTS


def reset_plugins(*registries: Registry) -> None:
    """Forget the entry points read so far (they are read again on the next query) and
    drop the entry-point entries of ``registries``; for tests that install plug-ins."""
    global _ENTRY_POINTS
    old = _ENTRY_POINTS or {}
    _ENTRY_POINTS = None
    for reg in registries:
        for name in old.get(reg.kind, {}):
            entry = reg._entries.get(name)
            if isinstance(entry, _Lazy) and entry.target == old[reg.kind][name]:
                del reg._entries[name]
        reg._plugins_loaded = False
