"""List docstrings and comments that state a measured figure (a timing, a speed-up, a rate).

Code says what and why; how fast lives on the results page (docs/benchmarks.md). A
docstring or comment keeps the mechanism and the rule ("push when the rank vector outgrows
L2 and fits half the L3"), never "1.25x faster" or "0.58 ms before, 0.45 ms after".

What counts as a figure (in docstrings and ``#`` comments of ``graphsys/`` and
``partitioners/``):

- a duration below a second: ``0.5 ms``, ``120 us``, ``40 ns`` (any number);
- a duration in seconds with a fractional part: ``1.6 s``, ``2.5 seconds`` (a whole number of
  seconds is a default or a limit: "after 300 s");
- a ratio: ``1.6x``, ``3×``, ``2-3x`` (``16 x N``, spaced, is a product);
- a rate: ``308k edges/s``, ``12 GB/s``, ``83 GFLOP/s``;
- ``faster`` / ``slower`` / ``speed-up`` next to a number;
- ``measured`` next to a number of seconds, bytes or percent.

Usage: ``python tools/check_figures.py [PATH ...]``: prints ``file:line: text`` per hit and
exits 1 when there is any.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("graphsys", "partitioners")

_NUM = r"\d[\d,]*(?:\.\d+)?"
PATTERNS = [
    re.compile(rf"(?<![\w.]){_NUM}\s*(?:ns|µs|us|ms|msec)\b"),
    re.compile(r"(?<![\w.])\d[\d,]*\.\d+\s*(?:s|sec|secs|seconds?)\b"),
    re.compile(rf"(?<![\w.]){_NUM}(?:\s*[-–]\s*{_NUM})?(?:×|x)(?![\w])"),
    re.compile(rf"(?<![\w.]){_NUM}\s+(?:×|x)\s+(?:faster|slower|more|less|fewer)\b"),
    re.compile(rf"(?<![\w.]){_NUM}\s*[kMG]?\s*(?:edges|nodes|rows|batches|samples|ids|B|KB|MB|GB|"
               rf"KiB|MiB|GiB|FLOP|GFLOP|TFLOP|items|triples|queries)\s*/\s*s\b"),
    re.compile(rf"{_NUM}[^.\n]{{0,40}}\b(?:faster|slower|speed-?up)\b", re.IGNORECASE),
    re.compile(rf"\b(?:faster|slower|speed-?up)\b[^.\n]{{0,40}}{_NUM}", re.IGNORECASE),
    re.compile(rf"\bmeasured\b[^.\n]{{0,30}}{_NUM}\s*(?:s|seconds?|GB|MB|%)\b"),
    re.compile(rf"{_NUM}\s*(?:s|seconds?|GB|MB|%)\b[^.\n]{{0,30}}\bmeasured\b"),
]


def _docstring_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].value


def figures_in_source(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring or comment line of ``text`` stating a figure."""
    hits: list[tuple[int, str]] = []

    def check(lineno: int, line: str) -> None:
        if any(p.search(line) for p in PATTERNS):
            hits.append((lineno, line.strip()))

    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            check(tok.start[0], tok.string)
    for node in _docstring_nodes(ast.parse(text)):
        for k, line in enumerate(node.value.splitlines()):
            check(node.lineno + k, line)
    return sorted(set(hits))


def python_files(paths) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    paths = args or [ROOT / d for d in DEFAULT_PATHS]
    found = 0
    for f in python_files(paths):
        for lineno, line in figures_in_source(f.read_text(encoding="utf-8")):
            rel = f.relative_to(ROOT) if f.is_absolute() and ROOT in f.parents else f
            print(f"{rel}:{lineno}: {line}")
            found += 1
    if found:
        print(f"{found} docstring or comment line(s) state a measured figure: keep the "
              f"mechanism and the rule, put the figure on docs/benchmarks.md", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
