"""tools/check_layers.py: the layer table of docs/architecture.md enforced, import cycles,
the library importing the CLI or naming its flags, the function budget and its allow-list."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "check_layers.py"


#: A table placing every module of the small test packages in one layer that may import
#: everything: only the other checks can find something.
ANYTHING_GOES = """
| layer | members | may import |
|---|---|---|
| all | `__init__`, `core/`, `errors`, `commands/`, `cli`, `api`, `store`, `sub/`, `a`, `b` | all |
"""

LAYERED = """# Architecture

## What may import what

Prose before the table.

| layer | members | may import |
|---|---|---|
| base | `errors`, `units` | base |
| storage | `storage/` (the format, `open_graph`), `__init__` | base, storage |
| engines | `bsp/`, `embed/`, `gnn/`, `sampling/` | base, storage; `gnn/` also `sampling/` |
| commands | `commands/`, `cli` | everything |

Prose after it: `not/` a member.
"""


def _package(root: Path, files: dict[str, str], table: str = ANYTHING_GOES) -> Path:
    for name, text in files.items():
        path = root / "graphsys" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    page = root / "docs" / "architecture.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(table if table.startswith("# ") else
                    "# Architecture\n\n## What may import what\n" + table)
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120)


def test_findings_and_exit_codes(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/a.py": "from . import b\n",
        "core/b.py": "def f():\n    from graphsys.core import a\n",  # a -> b -> a
        "core/c.py": ("from graphsys.errors import ParameterError\n"
                      "def g(x):\n"
                      "    if x < 1:\n"
                      "        raise ValueError(f'--max-iters must be >= 1, got {x}')\n"
                      "    raise ParameterError('max_iters', 'must be >= 1 (not -1 or --x)')\n"),
        "core/d.py": "import graphsys.commands.run\n",
        "errors.py": "class ParameterError(Exception):\n    pass\n",
        "commands/__init__.py": "",
        "commands/run.py": "def r():\n    raise SystemExit('--max-iters must be >= 1')\n",
        "cli.py": "from graphsys.commands import run\n",
    })
    warn = _run(root)
    assert warn.returncode == 0, warn.stderr
    out = warn.stdout
    assert "import cycle among: graphsys.core.a, graphsys.core.b" in out
    assert "library imports the CLI: graphsys.core.d imports graphsys.commands.run" in out
    assert "graphsys/core/c.py:4: --max-iters" in out and "--x" in out
    assert "commands/run.py" not in out and "graphsys.cli " not in out
    assert "0 import(s) against the layer table, 0 module(s) in no layer, 1 import " \
           "cycle(s), 1 library module(s) importing graphsys.commands, 2 library raise(s) " \
           "naming a flag" in out and "--strict" in out
    assert _run(root, "--strict").returncode == 1


def test_package_importing_its_children_is_an_edge(tmp_path):
    """graphsys/__init__ re-exports a child that (through another) imports a name from
    graphsys: a cycle, found. ``from pkg import child`` imports the child only."""
    root = _package(tmp_path, {
        "__init__.py": "from graphsys.api import open_graph\n__version__ = '1'\n",
        "api.py": "from graphsys.store import write\ndef open_graph():\n    pass\n",
        "store.py": "def write():\n    from graphsys import __version__\n",
        "sub/__init__.py": "from graphsys.sub.a import f\n",
        "sub/a.py": "from graphsys.sub import kernels\ndef f():\n    pass\n",
        "sub/kernels.py": "",
    })
    out = _run(root).stdout
    assert "import cycle among: graphsys, graphsys.api, graphsys.store" in out
    assert "1 import cycle(s)" in out and "graphsys.sub" not in out


def test_clean_package_passes_strict(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "", "a.py": "import graphsys.b\n",
        "b.py": "def f(n):\n    raise ValueError(f'n must be positive, got {n} - a -- b')\n"})
    proc = _run(root, "--strict")
    assert proc.returncode == 0 and "clean" in proc.stdout


def test_layer_table_enforced_lazy_imports_included(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "from graphsys.storage import open_graph\n",
        "errors.py": "", "units.py": "from graphsys.errors import X\n",
        "storage/__init__.py": "def open_graph():\n    from graphsys import units\n",
        "bsp/__init__.py": "import graphsys.storage\n",
        "bsp/distributed.py": "from graphsys.errors import X\n",
        "embed/train.py": "def f():\n    from graphsys.bsp.distributed import g\n",
        "gnn/train.py": ("from graphsys.sampling import blocks\n"
                         "from graphsys.embed import train\n"),
        "sampling/blocks.py": "from graphsys import storage\n",
        "sampling/__init__.py": "",
        "commands/run.py": "import graphsys.gnn.train\n",
        "cli.py": "from graphsys.commands import run\n",
        "stray.py": "",
        "errors_extra.py": "import graphsys.storage\n",
    }, LAYERED)
    out = _run(root).stdout
    assert ("graphsys/embed/train.py:2: graphsys.embed.train (embed/, engines) imports "
            "graphsys.bsp.distributed (bsp/, engines)") in out
    assert ("graphsys/gnn/train.py:2: graphsys.gnn.train (gnn/, engines) imports "
            "graphsys.embed.train (embed/, engines)") in out
    assert "gnn.train (gnn/, engines) imports graphsys.sampling" not in out  # allowed
    assert "module in no layer of the table (docs/architecture.md): graphsys.stray" in out
    assert "graphsys.errors_extra" in out  # in no layer either: `errors` is one module
    assert "2 import(s) against the layer table, 2 module(s) in no layer" in out
    assert _run(root, "--strict").returncode == 1


def test_base_importing_storage_is_refused(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "", "errors.py": "x = 1\n" * 900,  # no per-file limit
        "units.py": "def f():\n    import graphsys.storage.atomic\n",
        "storage/__init__.py": "", "storage/atomic.py": ""}, LAYERED)
    out = _run(root).stdout
    assert ("graphsys/units.py:2: graphsys.units (units, base) imports "
            "graphsys.storage.atomic (storage/, storage)") in out
    fixed = _package(tmp_path, {"units.py": ""}, LAYERED)
    proc = _run(fixed, "--strict")
    assert proc.returncode == 0 and "- clean" in proc.stdout and "900" not in proc.stdout


def _function(name: str, lines: int, doc_lines: int = 0, indent: str = "") -> str:
    """A function ``name`` whose body is ``lines`` lines after a ``doc_lines``-line
    docstring."""
    pad = indent + "    "
    doc = ([f'{pad}"""Doc.'] + [f"{pad}more" for _ in range(doc_lines - 2)] + [f'{pad}"""']
           if doc_lines else [])
    body = [f"{pad}x = {k}" for k in range(lines - 1)] + [f"{pad}return x"]
    return "\n".join([f"{indent}def {name}(a,", f"{indent}        b):", *doc, *body]) + "\n"


def _budget_package(tmp_path, allow: str, **functions: int) -> Path:
    """A package whose module ``graphsys.a`` holds the functions named (name: body
    lines), a class ``C`` with a method ``m`` of 85 lines, and ``allow`` as the
    allow-list."""
    source = "".join(_function(n, k) for n, k in functions.items())
    source += "class C:\n" + _function("m", 85, indent="    ")
    root = _package(tmp_path, {"__init__.py": "", "a.py": source})
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "function_budget.txt").write_text(allow)
    return root


def test_function_sizes_count_the_body_after_the_docstring():
    check_layers = _check_layers()
    tree = ast.parse(_function("f", 80, doc_lines=30) + _function("g", 81)
                     + "class C:\n" + _function("m", 3, indent="    ")
                     + "def outer():\n" + _function("inner", 2, indent="    "))
    sizes = check_layers.function_sizes("graphsys.a", tree)
    assert sizes["graphsys.a:f"] == (1, 80)  # a long docstring is no body
    assert sizes["graphsys.a:g"][1] == 81
    assert sizes["graphsys.a:C.m"][1] == 3
    assert sizes["graphsys.a:outer.inner"][1] == 2
    assert sizes["graphsys.a:outer"][1] == 4  # the nested function's lines count in it


def test_a_new_function_over_the_budget_fails_until_it_has_a_reason(tmp_path):
    allow = ("# comment\n"
             "graphsys.a:C.m  \u2014 one dispatch table\n")
    root = _budget_package(tmp_path, allow, short=80, long=81)
    proc = _run(root, "--strict")
    assert proc.returncode == 1
    assert ("function over 80 lines with no entry in tools/function_budget.txt: "
            "graphsys/a.py:83: graphsys.a:long (81 lines)") in proc.stdout
    assert "graphsys.a:short" not in proc.stdout and "graphsys.a:C.m" not in proc.stdout
    assert "1 function(s) over 80 lines without a reason" in proc.stdout
    assert _run(root).returncode == 0  # reported only without --strict
    root = _budget_package(tmp_path, allow + "graphsys.a:long  \u2014 argument parser\n",
                           short=80, long=81)
    proc = _run(root, "--strict")
    assert proc.returncode == 0 and "- clean" in proc.stdout, proc.stdout
    assert _run(root, "--strict", "--budget", "90").returncode == 1  # entries now stale


def test_an_entry_of_a_gone_or_short_function_fails_so_the_list_only_shrinks(tmp_path):
    allow = ("graphsys.a:C.m  \u2014 one dispatch table\n"
             "graphsys.a:split  \u2014 numba kernel: one loop nest\n"
             "graphsys.a:gone  \u2014 argument parser\n"
             "graphsys.gone:f  \u2014 argument parser\n")
    root = _budget_package(tmp_path, allow, split=40)
    proc = _run(root, "--strict")
    assert proc.returncode == 1
    out = proc.stdout
    assert ("entry of tools/function_budget.txt to remove: graphsys.a:split: 40 lines, "
            "within the budget") in out
    assert "to remove: graphsys.a:gone: no such function" in out
    assert "to remove: graphsys.gone:f: no such function" in out
    assert "graphsys.a:C.m" not in out
    assert "0 function(s) over 80 lines without a reason, 3 allow-list entr(ies)" in out


def test_an_entry_without_a_reason_fails(tmp_path):
    allow = ("graphsys.a:C.m\n"  # no reason
             "graphsys.a:C.m  \u2014  \n"  # an empty one
             "graphsys.a:C.m - a hyphen is no separator\n")
    proc = _run(_budget_package(tmp_path, allow), "--strict")
    assert proc.returncode == 1
    for number in (1, 2, 3):
        assert f"not 'module:function  \u2014 reason': function_budget.txt:{number}:" \
            in proc.stdout
    assert "graphsys/a.py:2: graphsys.a:C.m (85 lines)" in proc.stdout


def test_repository_functions_over_the_budget_all_have_a_reason():
    """Every function of graphsys/ over 80 lines is in tools/function_budget.txt with a
    reason, and every entry there is a function still over the budget."""
    found = _check_layers().check(REPO)
    assert found["over_budget"] == []
    assert found["stale_allowances"] == [] and found["bad_allowances"] == []


def test_a_table_naming_an_unknown_layer_is_refused(tmp_path):
    root = _package(tmp_path, {"__init__.py": ""}, """
| layer | members | may import |
|---|---|---|
| base | `__init__` | base, nowhere |
""")
    proc = _run(root)
    assert proc.returncode != 0 and "may import unknown layer(s) nowhere" in proc.stderr


def _check_layers():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import check_layers
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return check_layers


def test_repository_table_is_the_target_layering():
    """docs/architecture.md's table, as the check reads it: engines side by side (gnn may
    import sampling only) above the one view layer and the one kernel library, both
    directly above storage (views may import kernels, kernels no view),
    process groups and ranking in the base layer, every module of
    graphsys/ placed."""
    check_layers = _check_layers()
    table = check_layers.read_table(REPO / "docs" / "architecture.md")
    engines = {m for m, layer in table.members.items() if layer == "engines"}
    assert engines == {"bsp/", "embed/", "gnn/", "sampling/", "mining/", "measures/"}
    assert table.also == {"gnn/": {"sampling/"}}
    assert table.allowed["engines"] == {"base", "storage", "kernels", "views"}
    assert table.allowed["views"] == {"base", "storage", "kernels", "views"}
    assert table.allowed["kernels"] == {"base", "storage", "kernels"}
    assert not table.may_import("storage/", "views/") and not table.may_import("kernels/",
                                                                                "views/")
    assert table.allowed["base"] == {"base"}
    assert {"distributed", "ranking", "errors"} <= {m for m, layer in table.members.items()
                                                     if layer == "base"}
    assert table.member_of("graphsys.storage.graph") == "storage/"
    assert table.may_import("gnn/", "sampling/") and not table.may_import("gnn/", "embed/")
    assert not table.may_import("embed/", "bsp/") and not table.may_import("sampling/", "gnn/")
    assert table.may_import("commands/", "analysis/")
    found = check_layers.check(REPO)
    assert found["unplaced"] == []


def test_repository_has_no_cycle_and_library_does_not_import_the_cli():
    """The repository's own package: no import cycle (package-to-child imports included),
    no library module importing the CLI."""
    found = _check_layers().check(REPO)
    assert found["cycles"] == []
    assert found["cli_imports"] == []
    # outside graphsys/embed (restructured on its own branch) no library raise names a flag
    assert [f for f in found["flag_raises"] if not f.startswith("graphsys/embed/")] == []
