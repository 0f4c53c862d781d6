"""Helpers shared by CLI commands: JSON output, column arguments and node-id files."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one JSON line on stdout; a NaN or infinite number is ``null``, as
    JSON has no such numbers (Python's ``NaN`` and ``Infinity`` are refused by jq and other
    strict parsers)."""
    print(json.dumps(_finite(obj), sort_keys=False, default=str))


def _finite(obj: Any) -> Any:
    """``obj`` with every non-finite float, in nested dicts, lists and tuples, as None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def column_arg(value: str | None) -> str | int | None:
    """A column given on the command line: a 0-based index if all digits, else a name."""
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def graph_arg(value: str) -> str | Path:
    """A graph argument: a filesystem URI (``s3://b/g``, ``file:///g``) stays a string for
    :func:`graphsys.open_graph` to resolve through pyarrow.fs; anything else is a path."""
    return value if "://" in value else Path(value)


def parquet_out(out: Path | None, overwrite: bool) -> Path | None:
    """``--out FILE.parquet`` checked before a run: its suffix, its directory, and an
    existing file only with ``overwrite`` (:func:`graphsys.outputs.check_output`)."""
    from graphsys.errors import GraphsysError
    from graphsys.outputs import check_output, check_parent

    if out is None:
        return None
    if out.suffix != ".parquet":
        raise GraphsysError(f"--out {out}: expected a .parquet file name")
    check_parent(out, f"--out {out}")
    return check_output(out, overwrite=overwrite, name="out")


def write_parquet(out: Path, table, overwrite: bool) -> None:
    """``table`` written to ``out`` atomically, with page CRCs (a later ``--init`` of an
    incremental run refuses a garbled page)."""
    import pyarrow.parquet as pq

    from graphsys.storage.atomic import atomic_path

    with atomic_path(out, overwrite=overwrite) as tmp:
        pq.write_table(table, tmp, write_page_checksum=True)


def warned(call, *args, **kwargs):
    """``call(*args, **kwargs)``, its warnings printed as one ``warning:`` line each."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(*args, **kwargs)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return result


def add_trace_arg(parser) -> None:
    """``--trace FILE.json``: a Chrome / Perfetto trace of the run (:mod:`graphsys.trace`),
    and ``--overwrite`` when the command has none yet (call it after the command's own)."""

    parser.add_argument("--trace", type=Path, metavar="FILE.json",
                        help="write a Chrome trace (torch.profiler; opens in Perfetto) with "
                             "named ranges per superstep, bucket, minibatch and pipeline "
                             "stage (under torchrun, rank 0's); the path is checked before "
                             "the run starts (an existing file only with --overwrite, never "
                             "inside a graph or checkpoint directory)")
    if "--overwrite" not in parser._option_string_actions:
        parser.add_argument("--overwrite", action="store_true",
                            help="replace an existing --trace file")


def add_time_args(parser, verb: str, what: str = "the graph") -> None:
    """``--until T`` and ``--since S``: the command reads only the edges of a time window
    (``verb`` ``what`` as of time T: "run on" "the graph", "export" "the edge set")."""
    parser.add_argument("--until", metavar="T",
                        help=f"{verb} {what} as of time T: only the edges whose timestamp "
                             f"edge column is <= T (a number in the column's unit, or an "
                             f"ISO-8601 date read as Unix seconds, UTC)")
    parser.add_argument("--since", metavar="S",
                        help=f"{verb} only the edges whose timestamp edge column is > S "
                             f"(strictly after S; with --until T the window (S, T], so "
                             f"windows (a, b] and (b, c] tile time; S as --until's T)")


def trace_path(args):
    """The checked ``--trace`` path (a one-line error if it cannot be written), or None."""
    from graphsys.trace import check_trace_path

    trace = getattr(args, "trace", None)
    return None if trace is None else check_trace_path(
        trace, overwrite=getattr(args, "overwrite", False))


def add_quiet_arg(parser) -> None:
    """``--quiet``: no progress bar or progress lines (:func:`show_progress`)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress: neither the bar on a terminal nor, elsewhere, "
                             "the line every GRAPHSYS_PROGRESS_SECONDS (default 10) seconds")


def show_progress(args) -> bool:
    """Progress on stderr unless --quiet: a tqdm bar on a terminal (not with --json, whose
    line the bar's redraws would interleave), else a line (done/total, rate, ETA) every
    ``GRAPHSYS_PROGRESS_SECONDS`` seconds (:mod:`graphsys.progress`), --json or not. Under
    torchrun, on rank 0 only (:func:`graphsys.distributed.this_rank`)."""
    from graphsys.distributed import this_rank

    if getattr(args, "quiet", False) or this_rank() != 0:
        return False
    return not (getattr(args, "json", False) and sys.stderr.isatty())


def typed_ids(graph, values: list[str], what: str) -> list:
    """Original ids given as text, typed as the graph stores them (integers or strings);
    ``what`` (a flag or a file) names them in the one-line error."""
    from graphsys.errors import InputError

    if not graph.entity_type().id_type.startswith(("int", "uint")):
        return values
    try:
        return [int(v) for v in values]
    except ValueError:
        bad = next(v for v in values if not v.lstrip("-").isdigit())
        raise InputError(f"{what}: {bad!r} is not an integer node id (the graph's ids are "
                         f"integers)") from None


def read_ids(graph, path: Path, flag: str, per_line: int = 1) -> list:
    """The node ids of a text file, ``per_line`` whitespace-separated ids on each line
    (blank lines and ``#`` comments skipped), typed by :func:`typed_ids`: a flat list, or
    for ``per_line`` > 1 a list of tuples."""
    rows = read_rows(path, flag, per_line)
    flat = typed_ids(graph, [v for r in rows for v in r], f"{flag} {path}")
    return flat if per_line == 1 else list(zip(*(flat[i::per_line] for i in range(per_line))))


def read_rows(path: Path, flag: str, per_line: int) -> list[list[str]]:
    """The lines of a text file as ``per_line`` fields each: tab-separated on a line with a
    tab (as a TSV edge list holds ids with spaces), else the stripped line for one field,
    else whitespace-separated (blank lines and ``#`` comments skipped); a missing file or
    a line of another width is one line."""
    from graphsys.errors import InputError

    if not Path(path).is_file():
        raise InputError(f"{flag}: {path} is not a file")
    rows = [line.split("\t") if "\t" in line else [line.strip()] if per_line == 1
            else line.split() for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]
    bad = next((n for n, r in enumerate(rows) if len(r) != per_line), None)
    if bad is not None:
        raise InputError(f"{flag}: {path}: a line holds {len(rows[bad])} fields, not "
                         f"{per_line}: {' '.join(rows[bad])[:80]!r}")
    return rows
