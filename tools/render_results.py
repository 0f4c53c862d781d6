"""Render the results tables of docs/benchmarks.md and docs/scaling.md from docs/results/*.jsonl.

Each line of ``docs/results/<table>.jsonl`` is one row, a JSON object with the fields

    workload, peer, peer_figure, graphsys_figure, unit, ratio, machine, measured_on, command

and, where the row was recorded from a benchmark's output, ``raw`` (the JSON line the
benchmark printed). A figure is a number or a string (a mean ± std, a range); ``null``
renders as "–". ``ratio`` is how many times better graphsys's figure is than the peer's:
the peer's time over graphsys's, graphsys's rate over the peer's, the peer's memory over
graphsys's, graphsys's accuracy over the published one. Rows of the ``memory`` table also
carry ``peak_rss`` and ``peak_anon_rss`` (GB), which the memory table of docs/scaling.md
shows.

A page marks where a table goes with ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->``
(NAME is the jsonl file's stem, or ``scaling-memory`` for the scaling page's view of
``memory.jsonl``); everything between the markers is rewritten.

    python tools/render_results.py           # rewrite the tables in place
    python tools/render_results.py --check   # exit 1 if a page differs from its rendering
    python tools/render_results.py --gpu OUT/results.jsonl   # GPU rows, then rewrite

``--gpu`` reads the ``results.jsonl`` of ``scripts/gpu_check.py`` and puts each of its
comparison rows (records carrying ``row``) into ``docs/results/gpu.jsonl`` with the GPU and
driver the check recorded as the machine: a row replaces the one of the same part and name
(``key``), so the table keeps one current row per measurement. Every record of the run, rows
or not (supersteps, step profiles, counts, failures), goes the same way into
``docs/results/raw/gpu_check.jsonl``: what a later look at a GPU figure reads it beside.

The benchmarks (``benchmarks/<area>/*.py``) take ``--record FILE``: the harness's ``emit``
prints their JSON line and appends it, with the command line and the date, to FILE, from
which a row is made by adding the row fields above (``raw`` keeps what the benchmark
printed). A record without ``workload`` is not rendered until it has them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "docs" / "results"
PAGES = (REPO / "docs" / "benchmarks.md", REPO / "docs" / "scaling.md")
FIELDS = ("workload", "peer", "peer_figure", "graphsys_figure", "unit", "ratio", "machine",
          "measured_on", "command")
MARKER = re.compile(r"(<!-- results:(?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)"
                    r"(<!-- /results:(?P=name) -->)", re.S)


def load_rows(path: Path) -> list[dict]:
    """The complete rows of one jsonl file, in file order (records still lacking fields skipped)."""
    rows = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path.name}:{n}: not JSON: {e.msg}") from None
        if "workload" not in row:
            print(f"{path.name}:{n}: a record without workload; not rendered", file=sys.stderr)
            continue
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise SystemExit(f"{path.name}:{n}: missing field(s) {', '.join(missing)}")
        rows.append(row)
    return rows


def figure(value, unit: str = "") -> str:
    """One figure as the table shows it: numbers as stored to six significant digits,
    grouped by thousands, then the unit."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        text = str(value)
    elif float(value).is_integer():
        text = f"{int(value):,}"
    else:
        value = float(f"{value:.6g}")  # a ratio of two counts stored as its float
        text = f"{int(value):,}" if value.is_integer() else f"{value:,}"
    return f"{text} {unit}".rstrip() if unit else text


def ratio(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, int | float) and not isinstance(value, bool):
        digits = 2 if value < 10 else 1 if value < 100 else 0
        text = f"{value:.{digits}f}×"
        return f"**{text}**" if value >= 1 else text
    text = str(value)
    return f"{text}×" if re.fullmatch(r"[0-9.]+(–[0-9.]+)?", text) else text


def cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    return f"`{text}`" if text else "–"


def results_table(rows: list[dict]) -> str:
    out = ["| workload | peer | peer's figure | graphsys | ratio | machine | command |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| " + " | ".join(cell(x) for x in (
            r["workload"], r["peer"] or "–", figure(r["peer_figure"], r["unit"]),
            figure(r["graphsys_figure"], r["unit"]), ratio(r["ratio"]),
            f"{r['machine']}; measured on {r['measured_on']}", code(r["command"]))) + " |")
    return "\n".join(out) + "\n"


def scaling_memory_table(rows: list[dict]) -> str:
    out = ["| workload | peak RSS | peak anonymous RSS | bound | command |",
           "|---|---|---|---|---|"]
    for r in rows:
        bound = figure(r["peer_figure"], r["unit"]) if r["peer"] == "bound" else "–"
        out.append("| " + " | ".join(cell(x) for x in (
            r["workload"], figure(r.get("peak_rss"), "GB"), figure(r.get("peak_anon_rss"), "GB"),
            bound, code(r["command"]))) + " |")
    return "\n".join(out) + "\n"


VIEWS: dict[str, tuple[str, Callable[[list[dict]], str]]] = {
    "scaling-memory": ("memory", scaling_memory_table),
}


def render_page(text: str, results: Path | None = None) -> str:
    """The page with every marked table replaced by its rendering (rows from ``results``,
    default docs/results)."""
    results = RESULTS if results is None else results
    def one(m: re.Match) -> str:
        name = m["name"]
        stem, render = VIEWS.get(name, (name, results_table))
        path = results / f"{stem}.jsonl"
        if not path.exists():
            raise SystemExit(f"<!-- results:{name} -->: no {path.relative_to(REPO)}")
        return m.group(1) + render(load_rows(path)) + m.group(4)
    return MARKER.sub(one, text)


def gpu_rows(records: list[dict]) -> list[dict]:
    """The results rows of a ``scripts/gpu_check.py`` run (its ``results.jsonl`` records):
    one per record carrying ``row``, keyed ``part/name``, the machine being the GPU, driver
    and torch/CUDA of the run's environment record, measured on the record's date. A dry
    run's (``--tiny``, or not on CUDA) rows are refused: they are no GPU figures."""
    env = next((r for r in records if r.get("name") == "environment"), None)
    run = next((r for r in records if r.get("part") == "all"), {})
    if env is None or run.get("tiny") or not str(run.get("device", "cuda")).startswith("cuda"):
        raise SystemExit("--gpu: not a GPU run of scripts/gpu_check.py (a --tiny or CPU run, "
                         "or no environment record)")
    gpu = env.get("gpu") or "GPU"
    smi = (env.get("nvidia_smi") or "").split(",")
    driver = f", driver {smi[1].strip()}" if len(smi) > 1 else ""
    machine = (f"{gpu}{driver}, torch {env.get('torch')}, CUDA {env.get('torch_cuda')}, "
               f"{env.get('cpus')} cores")
    rows = []
    for r in records:
        if "row" not in r:
            continue
        row = {k: r["row"].get(k) for k in FIELDS if k not in ("machine", "measured_on")}
        row.update(machine=machine, measured_on=str(r.get("time", ""))[:10],
                   key=f"{r['part']}/{r['name']}", raw=r)
        rows.append(row)
    return rows


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` with each row whose ``key`` a row of ``new`` has replaced in place; new keys
    appended in their order."""
    fresh = {r["key"]: r for r in new}
    out = [fresh.pop(r["key"]) if r.get("key") in fresh else r for r in old]
    return out + [r for r in new if r["key"] in fresh]


def _merge_into(target: Path, new: list[dict]) -> None:
    """Rewrite the jsonl ``target`` as :func:`merge_rows` of its lines and ``new``."""
    old = [json.loads(x) for x in target.read_text(encoding="utf-8").splitlines()
           if x.strip()] if target.exists() else []
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                              for r in merge_rows(old, new)), encoding="utf-8")


def record_gpu_rows(path: Path, results: Path | None = None) -> int:
    """Merge the rows of a gpu_check ``results.jsonl`` into ``results/gpu.jsonl``, and all
    its records into ``results/raw/gpu_check.jsonl`` (keyed ``part/name`` too); returns
    how many rows it had."""
    results = RESULTS if results is None else results
    records = [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines()
               if x.strip()]
    new = gpu_rows(records)
    _merge_into(results / "gpu.jsonl", new)
    _merge_into(results / "raw" / "gpu_check.jsonl",
                [dict(r, key=f"{r.get('part')}/{r.get('name')}") for r in records])
    return len(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a page differs from its rendering")
    ap.add_argument("--gpu", type=Path, metavar="RESULTS",
                    help="first merge the rows of scripts/gpu_check.py's results.jsonl into "
                         "docs/results/gpu.jsonl")
    args = ap.parse_args(argv)
    if args.gpu is not None:
        print(f"docs/results/gpu.jsonl: {record_gpu_rows(args.gpu)} row(s) from {args.gpu}")
    stale = []
    for page in PAGES:
        old = page.read_text(encoding="utf-8")
        new = render_page(old)
        if new == old:
            continue
        if args.check:
            stale.append(page.relative_to(REPO))
        else:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(REPO)}")
    if stale:
        print(f"out of date: {', '.join(map(str, stale))}; "
              "run python tools/render_results.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
