"""The benchmark suite's shape: every benchmark is one file under benchmarks/<area>/ on the
one harness, says what it measures, is listed in benchmarks/README.md, and every command
on the results pages names a benchmark whose options accept it."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402

BENCHMARKS = sorted(p for p in (REPO / "benchmarks").glob("*/*.py") if p.name != "__init__.py")


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(
        f"benchmark_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Parsed(Exception):
    pass


@pytest.fixture
def parse_only(monkeypatch):
    """Benchmarks whose parser stops right after parsing (nothing is measured)."""
    real = harness.parser

    def parser(doc):
        ap = real(doc)
        parse = ap.parse_args

        def parse_args(args=None, namespace=None):
            raise _Parsed(parse(args, namespace))

        ap.parse_args = parse_args
        return ap

    monkeypatch.setattr(harness, "parser", parser)


def test_one_harness_and_docstrings_that_say_what_is_measured():
    assert len(BENCHMARKS) >= 20
    for path in BENCHMARKS:
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(REPO).as_posix()
        doc = text.split('"""')[1]
        assert "from benchmarks import harness" in text, rel
        assert "harness.parser(__doc__)" in text and "def main(argv" in text, rel
        assert "harness.Run(" in text or "harness.emit(" in text, rel
        assert f"python {rel}" in doc, f"{rel}: its usage line"
        assert not re.search(r"\bissue\s*#?\d|scripts/", text, re.I), rel
        # ``python benchmarks/x/profile.py`` would put the folder first on sys.path
        assert path.stem not in sys.stdlib_module_names, rel
        # memory through graphsys.memory (the harness), never read by hand
        assert not re.search(r"render_results|/proc/self/status|RUSAGE_CHILDREN", text), rel


def test_readme_lists_every_benchmark():
    readme = (REPO / "benchmarks" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([a-z_]+/[a-z0-9_]+\.py)\)", readme))
    assert listed == {p.relative_to(REPO / "benchmarks").as_posix() for p in BENCHMARKS}


def _commands() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO / "docs" / "results").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out += [(row["workload"], c.strip())
                        for c in re.split(r" && ", row["command"]) if "benchmarks/" in c]
    return out


def test_results_pages_name_benchmarks_not_scripts():
    for page in ("benchmarks.md", "scaling.md"):
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        # scripts/ holds the GPU check alone; the benchmarks moved to benchmarks/
        assert not re.search(r"scripts/(?!gpu_check\.py)", text), page
    assert len(_commands()) >= 20


@pytest.mark.parametrize("workload, command", _commands())
def test_results_page_command_parses(workload, command, parse_only):
    words = command.split(" (")[0]  # a note in parentheses follows some commands
    argv = [w for w in shlex.split(words) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
    assert argv[0] == "python", command
    script = REPO / argv[1]
    assert script.is_file(), f"{workload}: {argv[1]} does not exist"
    with pytest.raises(_Parsed):
        _load(script).main(argv[2:])


class _Parser(Exception):
    pass


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_help_gives_every_default(path, monkeypatch):
    """benchmarks/README.md: '--help # every option, with its default'. Options such as
    pagerank_bfs_wcc.py's --iters (10) or incremental.py's --work, --edges and --tol said
    nothing of their default."""
    real = harness.parser

    def parser(doc):
        ap = real(doc)
        ap.parse_args = lambda *a, **k: (_ for _ in ()).throw(_Parser(ap))
        return ap

    monkeypatch.setattr(harness, "parser", parser)
    with pytest.raises(_Parser) as caught:
        _load(path).main([])
    ap = caught.value.args[0]
    text = "".join(ap.format_help().split())  # wrapping may break a long value
    for action in ap._actions:
        if action.default in (None, False, True, "", "==SUPPRESS=="):
            continue
        shown = " ".join(ap._get_formatter()._expand_help(action).split()) if action.help \
            else ""
        assert "default" in shown or re.search(r"\([^()]*\)\s*$", shown), \
            f"{action.option_strings}: {shown!r}"
        assert "".join(shown.split()) in text
