"""Tests of graphsys.registry: eager, lazy and entry-point plug-ins, and the unknown-name
error."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from graphsys.errors import GraphsysError
from graphsys.registry import ENTRY_POINT_GROUP, Registry, UnknownPluginError, reset_plugins


@pytest.fixture(autouse=True)
def _no_cached_entry_points():
    """Every test reads the entry points afresh (and leaves none cached behind)."""
    reset_plugins()
    yield
    reset_plugins()


def test_register_get_names_and_contains():
    reg: Registry[object] = Registry("thing")
    entry = object()
    assert reg.register("b", entry) is entry
    reg.register("b", entry)                          # the same entry again: a no-op

    @reg.register_as("a")
    class A:
        pass

    assert reg.get("a") is A and A.name == "a" and reg.get("b") is entry
    assert reg.names() == ["a", "b"] and list(reg) == ["a", "b"] and len(reg) == 2
    assert "a" in reg and "zzz" not in reg
    assert reg.items() == [("a", A), ("b", entry)]
    with pytest.raises(ValueError, match="'b' is already registered"):
        reg.register("b", object())
    reg.unregister("b")
    assert reg.names() == ["a"]


def test_unknown_name_is_one_error_listing_the_known_ones():
    reg: Registry[int] = Registry("widget")
    reg.register("x", 1)
    reg.register("y", 2)
    with pytest.raises(UnknownPluginError) as info:
        reg.get("z")
    assert str(info.value) == "unknown widget 'z' (known: x, y)"
    # a GraphsysError for the CLI (one line, exit 2), a KeyError and a ValueError for callers
    assert isinstance(info.value, GraphsysError)
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_a_name_of_another_type_is_unknown():
    """A list or dict where a name goes (``from_numpy(partitioner=["hash"])``,
    ``g.view(["out"])``) raised TypeError: unhashable type; it is the unknown-name error,
    and ``in`` says False."""
    reg: Registry[object] = Registry("thing")
    reg.register("a", 1)
    for name in (["a"], {"a": 1}, None, 1):
        assert name not in reg
        with pytest.raises(UnknownPluginError, match=r"^unknown thing .* \(known: a\)$"):
            reg.get(name)


def test_lazy_entries_import_on_first_lookup(tmp_path, monkeypatch):
    (tmp_path / "lazy_plugin_mod.py").write_text("class Thing:\n    name = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_plugin_mod", raising=False)
    reg: Registry[type] = Registry("thing")
    reg.register_lazy("thing", "lazy_plugin_mod:Thing")
    assert reg.names() == ["thing"] and "lazy_plugin_mod" not in sys.modules
    cls = reg.get("thing")
    assert cls.__name__ == "Thing" and cls.name == "thing" and reg.get("thing") is cls
    with pytest.raises(ValueError, match="already registered"):
        reg.register_lazy("thing", "lazy_plugin_mod:Thing")
    with pytest.raises(ValueError, match="module:attribute"):
        reg.register_lazy("bad", "no_colon")
    reg.register_lazy("gone", "lazy_plugin_mod:Missing")
    with pytest.raises(GraphsysError, match="thing 'gone': cannot load lazy_plugin_mod:Missing"):
        reg.get("gone")


def test_a_plugin_that_raises_at_import_is_one_error(tmp_path, monkeypatch):
    """A plug-in module that raises anything as it is imported (not only ImportError) gives
    one GraphsysError naming the entry, not the plug-in's traceback; the entry stays
    registered and unresolved (a RuntimeError went through the CLI as a traceback)."""
    (tmp_path / "raising_plugin.py").write_text("raise RuntimeError('no licence\\nfound')\n")
    (tmp_path / "bad_syntax_plugin.py").write_text("SPEC = (\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[object] = Registry("thing")
    reg.register_lazy("boom", "raising_plugin:SPEC")
    reg.register_lazy("typo", "bad_syntax_plugin:SPEC")
    for _ in range(2):
        with pytest.raises(GraphsysError, match=r"^thing 'boom': cannot load raising_plugin:"
                                                r"SPEC \(RuntimeError: no licence\)$"):
            reg.get("boom")
    with pytest.raises(GraphsysError, match=r"^thing 'typo': .*SyntaxError"):
        reg.get("typo")
    assert reg.names() == ["boom", "typo"]


def _entry_points(*specs):
    return [importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in specs]


def test_entry_points_register_lazily_and_are_read_once(tmp_path, monkeypatch):
    (tmp_path / "third_party_plugin.py").write_text("SPEC = {'what': 'a third-party spec'}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "third_party_plugin", raising=False)
    calls = []

    def entry_points(*, group):
        calls.append(group)
        return _entry_points(("gizmo.fancy", "third_party_plugin:SPEC"),
                             ("gizmo.builtin", "third_party_plugin:SPEC"),
                             ("other.fancy", "third_party_plugin:SPEC"),
                             ("no-kind", "third_party_plugin:SPEC"))

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    gizmos: Registry[object] = Registry("gizmo")
    gizmos.register("builtin", "the built-in")
    others: Registry[object] = Registry("other")
    assert gizmos.names() == ["builtin", "fancy"]          # the built-in name is kept
    assert others.names() == ["fancy"]
    assert "third_party_plugin" not in sys.modules          # nothing imported yet
    assert gizmos.get("fancy") == {"what": "a third-party spec"}
    assert gizmos.get("builtin") == "the built-in"
    assert calls == [ENTRY_POINT_GROUP]                    # the group was read once
    reset_plugins(gizmos)
    assert "fancy" in gizmos.names()                       # a resolved entry stays registered


def test_odd_names_are_refused_and_clashing_entry_points_ignored(monkeypatch, caplog):
    """A name that is not a plain token ('--help', 'has space', 'a,b', '') is refused when
    registered and ignored, with a warning, from an entry point ('algorithm.--help' was an
    ALGO choice of 'graphsys run'); a name two entry points give different targets is
    ignored with a warning, not resolved by the order of sys.path."""
    reg: Registry[object] = Registry("thing")
    for bad in ("--help", "has space", "a,b", "", ".x", 3):
        with pytest.raises(ValueError, match="is not letters, digits"):
            reg.register(bad, object())
        with pytest.raises(ValueError, match="is not letters, digits"):
            reg.register_lazy(bad, "mod:attr")
    reg.register("ok_name-2.v1", "fine")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: _entry_points(
        ("thing.--help", "a:B"), ("thing.two", "a:B"), ("thing.two", "c:D"),
        ("thing.same", "a:B"), ("thing.same", "a:B")))
    with caplog.at_level("WARNING", logger="graphsys.registry"):
        assert reg.names() == ["ok_name-2.v1", "same"]
    assert "'--help' ignored" in caplog.text and "'two' is ignored" in caplog.text


def test_real_registries_see_entry_points(monkeypatch):
    """The plug-in kinds of graphsys read the group too: a third-party partitioner."""
    from graphsys.plugins import PARTITIONERS

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: _entry_points(
        ("partitioner.also_hash", "partitioners.hash:HashPartitioner")))
    monkeypatch.setattr(PARTITIONERS, "_plugins_loaded", False)
    try:
        assert "also_hash" in PARTITIONERS.names()
        from partitioners import HashPartitioner, get_partitioner

        assert isinstance(get_partitioner("also_hash", 2), HashPartitioner)
    finally:
        PARTITIONERS.unregister("also_hash")


def test_an_entry_point_of_the_wrong_type_is_one_error(monkeypatch):
    """An entry point naming an object that is not its kind's (an int as an algorithm, a
    function as a partitioner) failed deep inside the command ('graphsys run NAME G':
    AttributeError: 'int' object has no attribute 'run'); it is one GraphsysError naming
    the entry as it is looked up, and a right one of a class registry (a subclass) loads."""
    from graphsys.embed.model import OPERATORS
    from graphsys.plugins import ALGORITHMS, PARTITIONERS

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: _entry_points(
        ("algorithm.badtype", "math:pi"), ("partitioner.badpart", "math:sqrt"),
        ("operator.notanop", "fractions:Fraction"),
        ("partitioner.also_range", "partitioners.range:RangePartitioner")))
    regs = (ALGORITHMS, PARTITIONERS, OPERATORS)
    reset_plugins()  # the imports above may have read the real group
    for reg in regs:
        monkeypatch.setattr(reg, "_plugins_loaded", False)
    try:
        with pytest.raises(GraphsysError, match=r"^algorithm 'badtype': math:pi is float "
                                                r"3.14\d+ \(expected AlgorithmSpec\)$"):
            ALGORITHMS.get("badtype")
        with pytest.raises(GraphsysError, match=r"math:sqrt is builtin_function_or_method "
                                                r".*\(expected Partitioner\)$"):
            PARTITIONERS.get("badpart")
        with pytest.raises(GraphsysError, match=r"is class Fraction \(expected Operator\)$"):
            OPERATORS.get("notanop")
        assert PARTITIONERS.get("also_range").__name__ == "RangePartitioner"
    finally:
        for reg, name in zip(regs, ("badtype", "badpart", "notanop")):
            reg.unregister(name)
        PARTITIONERS.unregister("also_range")


def test_listing_the_builtin_names_imports_no_plugin():
    """Building ``graphsys run``'s parser (choices and help from the registries) imports
    neither torch nor any algorithm module."""
    code = ("import sys\nfrom graphsys.cli import build_parser\nbuild_parser(['run'])\n"
            "from graphsys.plugins import ALGORITHMS, GNN_MODELS\n"
            "assert 'pagerank' in ALGORITHMS.names() and 'sage' in GNN_MODELS.names()\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or "
            "m.startswith('graphsys.bsp') or m.startswith('graphsys.gnn')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"

