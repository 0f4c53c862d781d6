"""Layer check of the graphsys package: what may import what, and who speaks CLI.

Fails (with ``--strict``) on

* an import cycle among the modules of ``graphsys/`` (an import inside a function or under
  ``TYPE_CHECKING`` counts: a cycle is a cycle). A package's ``__init__`` importing its own
  children (its re-exports) is an edge like any other, so a child that imports a name
  from its package (``from graphsys import __version__`` in a module that
  ``graphsys/__init__.py`` reaches) is a cycle; ``from pkg import child`` of a child
  module is an import of that child (``pkg/__init__`` itself is run first by every import
  of a child, which no module can avoid, so that is no edge);
* a library module (everything but ``graphsys/commands/``, ``graphsys/cli.py`` and
  ``graphsys/__main__.py``) importing ``graphsys.commands``;
* a library ``raise`` whose message names a command-line flag (``--max-iters``): the library
  names parameters (:class:`graphsys.errors.ParameterError`) and the CLI maps them to flags.

Usage, from the repository root::

    python tools/check_layers.py            # report; exit 0 (warn)
    python tools/check_layers.py --strict   # report; exit 1 on any finding

It reads the sources only (``ast``); nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

#: Modules of the command-line layer: they may name flags and import anything.
CLI_MODULES = ("graphsys.commands", "graphsys.cli", "graphsys.__main__")
#: A flag inside a string: ``--`` then a letter, not preceded by a letter, digit or ``-``.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package`` (a package directory
    whose parent is the import root)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, tree: ast.AST, known: set[str]) -> set[str]:
    """The modules in ``known`` that module ``name`` (at ``path``) imports, anywhere in it."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                keep = len(base) - node.level + (1 if is_package else 0)
                base = base[:keep]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # "from pkg import child" imports the module pkg.child (pkg's __init__ runs
            # first whatever is imported, as it does for "import pkg.child"); any other
            # name imported from pkg is an import of pkg itself
            children = [f"{module}.{a.name}" for a in node.names]
            candidates = [c for c in children if c in known]
            if len(candidates) < len(children):
                candidates.append(module)
        else:
            continue
        for c in candidates:
            # "import a.b.c" imports a, a.b and a.b.c: the deepest known one is the edge
            while c and c not in known:
                c = c.rpartition(".")[0]
            if c and c != name:
                found.add(c)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def flag_raises(path: Path, tree: ast.AST) -> list[str]:
    """``path:line: --flag`` for every ``raise`` whose expression holds a string naming a
    command-line flag."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        flags = set()
        for sub in ast.walk(node.exc):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                flags.update(FLAG.findall(sub.value))
        if flags:
            out.append(f"{path}:{node.lineno}: {', '.join(sorted(flags))}")
    return out


def check(root: Path) -> dict[str, list]:
    """The findings for the package ``root/graphsys``: ``cycles`` (lists of modules),
    ``cli_imports`` (library modules importing graphsys.commands) and ``flag_raises``."""
    files = module_files(root / "graphsys")
    known = set(files)
    edges: dict[str, set[str]] = {}
    cli_imports, flags = [], []
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        imports = imported_modules(name, path, tree, known)
        edges[name] = imports
        library = not any(name == c or name.startswith(c + ".") for c in CLI_MODULES)
        if library:
            bad = sorted(m for m in imports if m == "graphsys.commands"
                         or m.startswith("graphsys.commands."))
            if bad:
                cli_imports.append(f"{name} imports {', '.join(bad)}")
            flags += flag_raises(path.relative_to(root), tree)
    return {"cycles": cycles(edges), "cli_imports": cli_imports, "flag_raises": flags}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when anything is found (default: report and exit 0)")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="repository root (default: this script's)")
    args = ap.parse_args(argv)
    found = check(args.root)
    for comp in found["cycles"]:
        print(f"import cycle among: {', '.join(comp)}")
    for line in found["cli_imports"]:
        print(f"library imports the CLI: {line}")
    for line in found["flag_raises"]:
        print(f"library raise names a flag: {line}")
    total = sum(len(v) for v in found.values())
    print(f"check_layers: {len(found['cycles'])} import cycle(s), {len(found['cli_imports'])} "
          f"library module(s) importing graphsys.commands, {len(found['flag_raises'])} library "
          f"raise(s) naming a flag" + ("" if total else " - clean"))
    if total and not args.strict:
        print("check_layers: reported only (run with --strict to fail on these)")
    return 1 if total and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
