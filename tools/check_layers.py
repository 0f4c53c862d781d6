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

* a function whose body runs past the budget (``--budget``, 80 lines) with no entry in the
  allow-list ``tools/function_budget.txt``, and an entry there that names a function that
  no longer exists or is now within the budget (so the list only shrinks). A function's
  lines are its body's, from the first statement after its docstring to its last line
  (the signature, decorators and docstring do not count; a nested function or class
  counts in the function that holds it, and is measured by itself too). A function is
  named ``module:qualname`` (``graphsys.storage.format:Manifest.from_json``; a nested one
  ``outer.inner``). Each entry of the list is one line, ``module:function  — reason``: why
  the function is one piece (one dispatch table, one numba loop nest) or what split is
  due; a line starting with ``#`` is a comment.

There is no per-file line limit: it rewarded squeezed lines and modules split to stay under
it rather than by job. What a module's package is for is in its ``README.md``.

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
#: Lines a function's body may run to without an allow-list entry.
BUDGET = 80
#: The allow-list of functions over the budget, each with its reason.
ALLOW_LIST = Path("tools") / "function_budget.txt"
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


def grant_line(table: Table, member: str) -> str:
    """What member ``member`` (``gnn/``) may import, as its package's README.md says it:
    ``**Layer:** engines. **May import:** base, storage, kernels, views; also
    `sampling/`.`` (its layer's grant in the table's row order, ``everything`` for a layer
    that may import every layer; its own package goes without saying)."""
    layer = table.members[member]
    order = list(dict.fromkeys(table.members.values()))
    allowed = table.allowed[layer]
    may = ("everything" if allowed == set(order)
           else ", ".join(name for name in order if name in allowed))
    also = "".join(f"; also `{m}`" for m in sorted(table.also.get(member, ())))
    return f"**Layer:** {layer}. **May import:** {may}{also}."


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


def function_sizes(name: str, tree: ast.AST) -> dict[str, tuple[int, int]]:
    """``module:qualname`` -> ``(line of its def, lines of its body)`` for every function
    of module ``name`` (methods ``Class.method``, nested functions ``outer.inner``). The
    body runs from the first statement after the docstring to the function's last line;
    of two definitions of one name, the longer counts."""
    out: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = child.body
                if ast.get_docstring(child, clean=False) is not None and len(body) > 1:
                    body = body[1:]
                key = f"{name}:{prefix}{child.name}"
                lines = child.end_lineno - body[0].lineno + 1
                if lines > out.get(key, (0, 0))[1]:
                    out[key] = (child.lineno, lines)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def read_allow_list(path: Path) -> tuple[dict[str, str], list[str]]:
    """``(entries, malformed)`` of the allow-list at ``path`` (none when it does not exist):
    ``module:function`` -> its reason, and ``path:line: text`` of each line that is not
    ``module:function  — reason`` with a reason, or repeats an entry."""
    entries: dict[str, str] = {}
    malformed: list[str] = []
    if not path.is_file():
        return entries, malformed
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = "" if raw.lstrip().startswith("#") else raw.strip()
        if not line:
            continue
        function, dash, reason = (part.strip() for part in line.partition("—"))
        if (not dash or not reason or re.fullmatch(r"[\w.]+:[\w.]+", function) is None
                or function in entries):
            malformed.append(f"{path.name}:{number}: {raw.strip()}")
            continue
        entries[function] = reason
    return entries, malformed


def budget_findings(sizes: dict[str, tuple[int, int]], files: dict[str, Path], root: Path,
                    budget: int) -> dict[str, list[str]]:
    """``over_budget`` (``path:line: module:function (lines)`` of each function over
    ``budget`` lines with no allow-list entry, longest first), ``stale_allowances``
    (entries naming a function that no longer exists or is within the budget) and
    ``bad_allowances`` (malformed lines) of the allow-list under ``root``."""
    allowed, malformed = read_allow_list(root / ALLOW_LIST)
    over = sorted(((n, f) for f, (_, n) in sizes.items() if n > budget and f not in allowed),
                  key=lambda x: (-x[0], x[1]))
    stale = []
    for function in sorted(allowed):
        if function not in sizes:
            stale.append(f"{function}: no such function")
        elif sizes[function][1] <= budget:
            stale.append(f"{function}: {sizes[function][1]} lines, within the budget")
    return {"over_budget": [f"{files[f.split(':')[0]].relative_to(root)}:{sizes[f][0]}: "
                            f"{f} ({n} lines)" for n, f in over],
            "stale_allowances": stale, "bad_allowances": malformed}


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


def check(root: Path, budget: int = BUDGET) -> dict[str, list]:
    """The findings for the package ``root/graphsys`` against ``root/docs/architecture.md``:
    ``layers`` (imports the table does not allow), ``unplaced`` (modules in no layer),
    ``cycles`` (lists of modules), ``cli_imports`` (library modules importing
    graphsys.commands), ``flag_raises``, and against the allow-list
    ``root/tools/function_budget.txt``: ``over_budget``, ``stale_allowances``,
    ``bad_allowances`` (:func:`budget_findings`)."""
    files = module_files(root / "graphsys")
    known = set(files)
    table = read_table(root / ARCHITECTURE)
    edges: dict[str, set[str]] = {}
    sites: dict[str, list[tuple[str, int]]] = {}
    cli_imports, flags = [], []
    sizes: dict[str, tuple[int, int]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        sizes.update(function_sizes(name, tree))
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
            **budget_findings(sizes, files, root, budget)}


#: The findings that fail ``--strict``.
FAILING = ("layers", "unplaced", "cycles", "cli_imports", "flag_raises", "over_budget",
           "stale_allowances", "bad_allowances")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when anything is found (default: report and exit 0)")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                    help="repository root (default: this script's)")
    ap.add_argument("--budget", type=int, default=BUDGET,
                    help=f"lines a function's body may run to without an entry in "
                         f"{ALLOW_LIST} (default {BUDGET})")
    args = ap.parse_args(argv)
    found = check(args.root, args.budget)
    headings = {
        "layers": "import the layer table does not allow",
        "unplaced": f"module in no layer of the table ({ARCHITECTURE})",
        "cycles": "import cycle among",
        "cli_imports": "library imports the CLI",
        "flag_raises": "library raise names a flag",
        "over_budget": f"function over {args.budget} lines with no entry in {ALLOW_LIST}",
        "stale_allowances": f"entry of {ALLOW_LIST} to remove",
        "bad_allowances": f"entry of {ALLOW_LIST} not 'module:function  — reason'",
    }
    for key, heading in headings.items():
        for item in found[key]:
            print(f"{heading}: {', '.join(item) if key == 'cycles' else item}")
    total = sum(len(found[k]) for k in FAILING)
    print(f"check_layers: {len(found['layers'])} import(s) against the layer table, "
          f"{len(found['unplaced'])} module(s) in no layer, {len(found['cycles'])} import "
          f"cycle(s), {len(found['cli_imports'])} library module(s) importing "
          f"graphsys.commands, {len(found['flag_raises'])} library raise(s) naming a flag, "
          f"{len(found['over_budget'])} function(s) over {args.budget} lines without a "
          f"reason, {len(found['stale_allowances']) + len(found['bad_allowances'])} "
          f"allow-list entr(ies) to remove or fix"
          + ("" if total else " - clean"))
    if total and not args.strict:
        print("check_layers: reported only (run with --strict to fail on these)")
    return 1 if total and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
