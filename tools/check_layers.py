"""Layer check of the graphsys package: what may import what, and who speaks CLI.

Fails (with ``--strict``) on

* an import the layer table of docs/architecture.md ("What may import what") does not allow.
  The table is read from the page itself: each row names a layer, its members (```errors```
  or ```storage/graph.py``` a module of ``graphsys/``, ```bsp/``` a package and everything
  in it, ```__init__``` the top-level package; a note in parentheses names no member) and
  what they may import (layer names, or ``everything``; after a ``;``, extra allowances such
  as ```gnn/` also `sampling/```). A module belongs to the member that names it most
  precisely; it may import its own member, the members of the layers listed and its extra
  allowances, nothing else, so the members of a layer that does not list itself (the
  engines) stand side by side. An import inside a function or under ``TYPE_CHECKING``
  counts; a module the table does not place is a finding too;
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

It also warns, without failing, of modules of more than ``--max-lines`` (700) lines: a
proxy for a file doing several jobs, which a reviewer weighs (a hard limit would reward
squeezed lines rather than files split by job).

Usage, from the repository root::

    python tools/check_layers.py            # report; exit 0 (warn)
    python tools/check_layers.py --strict   # report; exit 1 on any finding

It reads the sources and the page only (``ast``, the markdown table); nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

#: Modules of the command-line layer: they may name flags and import anything.
CLI_MODULES = ("graphsys.commands", "graphsys.cli", "graphsys.__main__")
#: The page whose table is enforced, and the table's heading.
ARCHITECTURE = Path("docs") / "architecture.md"
TABLE_HEADING = "## What may import what"
#: Modules of more lines than this are reported (a warning).
MAX_LINES = 700
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
    return {target for target, _ in import_sites(name, path, tree, known)}


def import_sites(name: str, path: Path, tree: ast.AST,
                 known: set[str]) -> list[tuple[str, int]]:
    """``(module, line)`` of every import of a module in ``known`` by module ``name`` (at
    ``path``), anywhere in it (inside functions and ``TYPE_CHECKING`` blocks too)."""
    found: list[tuple[str, int]] = []
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
                found.append((c, node.lineno))
    return found


class Table:
    """The layer table of docs/architecture.md: ``members`` (member -> its layer, a member
    being ``errors`` or ``bsp/`` as the table writes it), ``allowed`` (layer -> the layers
    its members may import) and ``also`` (member -> the members it may import besides)."""

    def __init__(self, members: dict[str, str], allowed: dict[str, set[str]],
                 also: dict[str, set[str]]):
        self.members, self.allowed, self.also = members, allowed, also

    def member_of(self, module: str) -> str | None:
        """The member naming ``module`` (``graphsys.gnn.conv.gcn`` -> ``gnn/``) most
        precisely, or None."""
        rel = module.split(".")[1:]
        best, depth = None, -1
        for m in self.members:
            if m == "__init__":
                parts, package = [], False
            else:
                package = m.endswith("/")
                parts = m.rstrip("/").removesuffix(".py").split("/")
            if rel == parts or (package and rel[:len(parts)] == parts):
                if len(parts) > depth:
                    best, depth = m, len(parts)
        return best

    def may_import(self, importer: str, imported: str) -> bool:
        """Whether member ``importer`` may import member ``imported``."""
        if importer == imported:
            return True
        return (self.members[imported] in self.allowed[self.members[importer]]
                or imported in self.also.get(importer, set()))


def read_table(page: Path) -> Table:
    """Parse the "What may import what" table of ``page`` (docs/architecture.md)."""
    text = page.read_text(encoding="utf-8")
    if TABLE_HEADING not in text:
        raise SystemExit(f"{page}: no '{TABLE_HEADING}' section")
    section = text.split(TABLE_HEADING, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    members: dict[str, str] = {}
    grants: dict[str, str] = {}
    also: dict[str, set[str]] = {}
    for cells in rows[2:]:  # after the header and its rule
        if len(cells) != 3:
            raise SystemExit(f"{page}: a layer table row needs 3 cells: {cells}")
        layer, names, may = cells
        # the members are the code names outside parentheses (inside: what they hold)
        for name in re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", names)):
            members[name] = layer
        grants[layer] = may
    layers = set(grants)
    allowed: dict[str, set[str]] = {}
    for layer, may in grants.items():
        head, _, extra = may.partition(";")
        words = {w.strip() for w in head.split(",") if w.strip()}
        allowed[layer] = layers if "everything" in words else words
        unknown = allowed[layer] - layers
        if unknown:
            raise SystemExit(f"{page}: layer {layer!r} may import unknown layer(s) "
                             f"{', '.join(sorted(unknown))}")
        for clause in extra.split(";"):
            named = re.findall(r"`([^`]+)`", clause)
            if " also " in clause and len(named) >= 2:
                also.setdefault(named[0], set()).update(named[1:])
    for member, extra in also.items():
        missing = ({member} | extra) - set(members)
        if missing:
            raise SystemExit(f"{page}: {', '.join(sorted(missing))} in no row of the table")
    return Table(members, allowed, also)


def layer_findings(table: Table, sites: dict[str, list[tuple[str, int]]],
                   files: dict[str, Path], root: Path) -> tuple[list[str], list[str]]:
    """``(violations, unplaced)``: ``file:line: A (member, layer) imports B (member,
    layer)`` for every import the table does not allow, and the modules it places in no
    layer."""
    violations, unplaced = [], []
    for name in sorted(sites):
        src = table.member_of(name)
        if src is None:
            unplaced.append(name)
            continue
        for target, line in sorted(sites[name], key=lambda x: (x[1], x[0])):
            dst = table.member_of(target)
            if dst is None or table.may_import(src, dst):
                continue
            violations.append(
                f"{files[name].relative_to(root)}:{line}: {name} ({src}, "
                f"{table.members[src]}) imports {target} ({dst}, {table.members[dst]})")
    return violations, unplaced


def long_modules(files: dict[str, Path], root: Path, limit: int) -> list[str]:
    """``path (lines)`` of every module of more than ``limit`` lines, longest first."""
    sizes = [(p.read_text(encoding="utf-8").count("\n"), p) for p in files.values()]
    return [f"{p.relative_to(root)} ({n})" for n, p in sorted(sizes, key=lambda x: -x[0])
            if n > limit]


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


def check(root: Path, max_lines: int = MAX_LINES) -> dict[str, list]:
    """The findings for the package ``root/graphsys`` against ``root/docs/architecture.md``:
    ``layers`` (imports the table does not allow), ``unplaced`` (modules in no layer),
    ``cycles`` (lists of modules), ``cli_imports`` (library modules importing
    graphsys.commands), ``flag_raises``, and the warnings ``long_modules``."""
    files = module_files(root / "graphsys")
    known = set(files)
    table = read_table(root / ARCHITECTURE)
    edges: dict[str, set[str]] = {}
    sites: dict[str, list[tuple[str, int]]] = {}
    cli_imports, flags = [], []
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        sites[name] = import_sites(name, path, tree, known)
        imports = {target for target, _ in sites[name]}
        edges[name] = imports
        library = not any(name == c or name.startswith(c + ".") for c in CLI_MODULES)
        if library:
            bad = sorted(m for m in imports if m == "graphsys.commands"
                         or m.startswith("graphsys.commands."))
            if bad:
                cli_imports.append(f"{name} imports {', '.join(bad)}")
            flags += flag_raises(path.relative_to(root), tree)
    violations, unplaced = layer_findings(table, sites, files, root)
    return {"layers": violations, "unplaced": unplaced, "cycles": cycles(edges),
            "cli_imports": cli_imports, "flag_raises": flags,
            "long_modules": long_modules(files, root, max_lines)}


#: The findings that fail ``--strict`` (``long_modules`` only warns).
FAILING = ("layers", "unplaced", "cycles", "cli_imports", "flag_raises")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when anything is found (default: report and exit 0)")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="repository root (default: this script's)")
    ap.add_argument("--max-lines", type=int, default=MAX_LINES,
                    help=f"warn of modules longer than this (default {MAX_LINES})")
    args = ap.parse_args(argv)
    found = check(args.root, args.max_lines)
    for line in found["layers"]:
        print(f"import the layer table does not allow: {line}")
    for name in found["unplaced"]:
        print(f"module in no layer of the table ({ARCHITECTURE}): {name}")
    for comp in found["cycles"]:
        print(f"import cycle among: {', '.join(comp)}")
    for line in found["cli_imports"]:
        print(f"library imports the CLI: {line}")
    for line in found["flag_raises"]:
        print(f"library raise names a flag: {line}")
    for line in found["long_modules"]:
        print(f"warning: module over {args.max_lines} lines: {line}")
    total = sum(len(found[k]) for k in FAILING)
    print(f"check_layers: {len(found['layers'])} import(s) against the layer table, "
          f"{len(found['unplaced'])} module(s) in no layer, {len(found['cycles'])} import "
          f"cycle(s), {len(found['cli_imports'])} library module(s) importing "
          f"graphsys.commands, {len(found['flag_raises'])} library raise(s) naming a flag"
          + ("" if total else " - clean")
          + (f"; {len(found['long_modules'])} module(s) over {args.max_lines} lines "
             f"(warning)" if found["long_modules"] else ""))
    if total and not args.strict:
        print("check_layers: reported only (run with --strict to fail on these)")
    return 1 if total and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
