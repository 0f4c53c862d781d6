"""Generate docs/cli.md, the reference of every ``graphsys`` command and flag, from the parsers.

The page is built from :func:`graphsys.cli.build_parser`: every (sub-)command in the order the
CLI registers it, its description, and a table of its arguments with their help and defaults.
Nothing is written by hand, so the page cannot drift from the CLI:

    python tools/gen_cli_docs.py           # rewrite docs/cli.md
    python tools/gen_cli_docs.py --check   # exit 1 if docs/cli.md is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "cli.md"

HEADER = """# Command line reference

Every `graphsys` command and flag. This page is generated from the CLI's parsers by
`python tools/gen_cli_docs.py` (`--check` fails when it is out of date); `graphsys COMMAND -h`
prints the same help.
"""


def one_line(text: str | None) -> str:
    """Help text as one table cell: whitespace collapsed, pipes escaped."""
    return re.sub(r"\s+", " ", text or "").strip().replace("|", "\\|")


def paragraphs(text: str | None) -> str:
    """A description as markdown: prose paragraphs re-joined, indented blocks as code."""
    text = re.sub(r"``([^`]+)``", r"`\1`", textwrap.dedent(text or "").strip("\n"))
    out = []
    for part in re.split(r"\n\s*\n", text):
        lines = [x for x in part.splitlines() if x.strip()]
        if not lines:
            continue
        if all(x.startswith((" ", "\t")) for x in lines):
            out.append("```\n" + textwrap.dedent("\n".join(lines)) + "\n```")
        else:
            out.append(re.sub(r"\s+", " ", part).strip())
    return "\n\n".join(out)


def default_text(action: argparse.Action) -> str:
    """The default as a user would type it; empty when there is nothing to say."""
    default = action.default
    if default is None or default is argparse.SUPPRESS or action.nargs == 0:
        return ""
    if isinstance(default, list | tuple):
        default = ",".join(str(x) for x in default)
    text = str(default)
    if re.search(r" at 0x[0-9a-f]+", text):  # an object's repr: name its type, not its address
        text = type(default).__name__
    return f"`{text}`" if text else '`""`'


def argument_name(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{s}`" for s in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            if isinstance(metavar, tuple):
                metavar = " ".join(metavar)
            names += f" `{metavar}`"
        return names
    metavar = action.metavar or action.dest
    return f"`{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"


def expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        listed = ", ".join(f"`{c}`" for c in action.choices)
        if listed.replace("`", "") not in text:
            text = f"{text} (one of {listed})" if text else f"one of {listed}"
    return one_line(text)


def subcommands(parser: argparse.ArgumentParser):
    """``(name, summary, sub-parser)`` of each sub-command, in registration order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, summaries.get(name), sub


def command_section(path: list[str], summary: str | None,
                    parser: argparse.ArgumentParser) -> list[str]:
    level = "#" * min(len(path) + 1, 4)
    out = [f"{level} `graphsys {' '.join(path)}`", ""]
    description = paragraphs(parser.description) or one_line(summary)
    if description:
        out += [description, ""]
    rows = [a for a in parser._actions
            if a.help is not argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
            and not isinstance(a, argparse._SubParsersAction)]
    if rows:
        out += ["| argument | help | default |", "|---|---|---|"]
        out += [f"| {argument_name(a)} | {expanded_help(parser, a)} | {default_text(a)} |"
                for a in rows]
        out.append("")
    subs = list(subcommands(parser))
    if subs:
        out += ["Sub-commands: " + ", ".join(f"`{name}`" for name, _, _ in subs) + ".", ""]
    for name, sub_summary, sub in subs:
        out += command_section([*path, name], sub_summary, sub)
    return out


def render() -> str:
    """The whole page, from the CLI's parsers."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from graphsys.cli import build_parser

    parser = build_parser()
    subs = list(subcommands(parser))
    out = [HEADER]
    out += ["| command | what it does |", "|---|---|"]
    out += [f"| [`graphsys {name}`](#graphsys-{name}) | {one_line(summary)} |"
            for name, summary, _ in subs]
    out.append("")
    top = [a for a in parser._actions
           if a.option_strings and not isinstance(a, argparse._HelpAction)]
    if top:
        out += ["Options before the command: "
                + "; ".join(f"{argument_name(a)}: {expanded_help(parser, a)}" for a in top) + ".",
                ""]
    for name, summary, sub in subs:
        out += command_section([name], summary, sub)
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if docs/cli.md differs from the parsers")
    args = ap.parse_args(argv)
    page = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page:
            print("docs/cli.md is out of date; run python tools/gen_cli_docs.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
