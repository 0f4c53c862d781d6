"""What the ``graphsys`` program imports before it runs a command: ``--version``, ``--help``
and a command line that does not parse import no command module and none of the heavy
libraries (torch, numba, pyarrow, SciPy, NumPy); a command's own ``--help`` imports that
command's module only, and no torch unless the command's options come from torch code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphsys import cli

HEAVY = ("torch", "numba", "pyarrow", "scipy", "numpy")
#: Run as ``python -m graphsys ARGV``; the modules loaded by the time the process exits
#: are written, as JSON, as the last line of stderr.
CHILD = ("import atexit, json, runpy, sys\n"
         "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
         "sys.argv = ['graphsys', *sys.argv[1:]]\n"
         "runpy.run_module('graphsys', run_name='__main__', alter_sys=True)\n")


def _loaded(argv: list[str]) -> tuple[int, set[str]]:
    """The exit code of ``python -m graphsys argv`` and the modules it had imported."""
    out = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True,
                         text=True, timeout=120)
    return out.returncode, set(json.loads(out.stderr.splitlines()[-1]))


@pytest.mark.parametrize("argv, code", [
    (["--version"], 0), (["--help"], 0), ([], 2), (["no-such-command"], 2),
    (["--no-such-flag"], 2),
])
def test_version_help_and_bad_command_lines_import_nothing_heavy(argv, code):
    rc, modules = _loaded(argv)
    assert rc == code
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert not [m for m in modules if m.startswith("graphsys.commands.")]


@pytest.mark.parametrize("argv", [
    ["run", "--help"], ["run", "bfs", "--no-such-flag"], ["mine", "triangles", "--help"],
    ["info", "--help"], ["export", "--help"], ["index", "--help"], ["verify", "--help"],
    ["subgraph", "--help"], ["datasets", "ingest", "--help"], ["demo", "--help"],
    ["warmup", "--help"], ["profile", "--help"],
])
def test_a_commands_help_and_argument_errors_import_that_command_only(argv):
    rc, modules = _loaded(argv)
    assert rc == (0 if "--help" in argv else 2)
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    commands = {m for m in modules if m.startswith("graphsys.commands.")}
    assert commands == {"graphsys.commands._common", f"graphsys.commands.{argv[0]}"}


def test_the_command_list_reads_as_the_full_parsers():
    """The top-level help built from the commands' sources is the full parser's, and
    every command's help line was found there (no module had to be imported for it)."""
    assert all(cli.command_help(name) for name in cli.COMMANDS)
    assert cli.build_parser(["--help"]).format_help() == cli.build_parser().format_help()
    assert cli.build_parser([]).format_usage() == cli.build_parser().format_usage()


def test_a_help_line_that_is_not_a_literal_is_read_from_the_module(tmp_path, monkeypatch):
    """A command whose ``help=`` is computed is registered by its module, as before."""
    source = tmp_path / "commands" / "x.py"
    source.parent.mkdir()
    source.write_text("def register(subparsers):\n"
                      "    subparsers.add_parser('x', help=' '.join(['a', 'b']))\n")
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "cli.py"))
    assert cli.command_help("x") is None
    source.write_text("def register(subparsers):\n"
                      "    subparsers.add_parser('x', help='one ' 'line')\n")
    assert cli.command_help("x") == "one line"
    assert cli.command_help("not-there") is None
