"""tools/check_layers.py: import cycles, the library importing the CLI or naming its flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "check_layers.py"


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "graphsys" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
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
    assert "1 import cycle(s), 1 library module(s) importing graphsys.commands, 2 library " \
           "raise(s) naming a flag" in out and "--strict" in out
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


def test_repository_has_no_cycle_and_library_does_not_import_the_cli():
    """The repository's own package: no import cycle (package-to-child imports included),
    no library module importing the CLI."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import check_layers
    finally:
        sys.path.remove(str(SCRIPT.parent))
    found = check_layers.check(REPO)
    assert found["cycles"] == []
    assert found["cli_imports"] == []
    # outside graphsys/embed (restructured on its own branch) no library raise names a flag
    assert [f for f in found["flag_raises"] if not f.startswith("graphsys/embed/")] == []
