"""The ``graphsys`` command line: one sub-command per module of :mod:`graphsys.commands`.

Every command module exposes ``register(subparsers)``, which adds its parser and sets
``func`` to a callable ``(args) -> int`` (the exit code). User-facing failures raise
:class:`graphsys.errors.GraphsysError`; they are printed here as one line, with no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from graphsys.errors import GraphsysError

COMMANDS = ("demo", "ingest", "index", "info", "verify", "export", "generate", "datasets", "run",
            "embed", "profile", "gnn")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``argv`` naming a command, only that command's module is
    imported (commands import heavy libraries such as torch only when they need them)."""
    parser = argparse.ArgumentParser(
        prog="graphsys",
        description="Partitioned Arrow graph storage, BSP analytics, embeddings and GNNs.",
    )
    from graphsys import __version__

    parser.add_argument("--version", action="version", version=f"graphsys {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    for name in (first,) if first in COMMANDS else COMMANDS:
        importlib.import_module(f"graphsys.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except GraphsysError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # the system refused: a full disk, a permission, a vanished file
        if exc.errno is None:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
