#!/usr/bin/env python3
"""Ingest of R-MAT edge lists beside pyarrow's read and write of the same bytes: seconds,
edges/s, peak RSS and peak anonymous RSS.

For each size (edges) a seeded R-MAT TSV (or, with ``--input parquet``, Parquet) file is
generated (``graphsys.generators``; edge factor 16: nodes = the power of two nearest
edges/16), then, each in a fresh process whose memory is sampled from outside:

- the peers: pyarrow reads the same file and writes one uncompressed Arrow IPC (Feather)
  file, the raw read + write cost of the bytes. TSV: ``csv.read_csv`` (multi-threaded) then
  ``feather.write_feather`` (``pyarrow-csv``). Parquet, two ways: ``pq.read_table`` (its
  threaded column decoding, the whole table in memory) then ``feather.write_feather``
  (``pyarrow-read_table``, the stronger), and ``ParquetFile.iter_batches`` (1M rows,
  ``pre_buffer=False``, one decoding thread) into ``ipc.new_file``, one batch in memory at
  a time (``pyarrow-iter_batches``);
- graphsys: the ``graphsys ingest`` command (``python -m graphsys ingest ... --json``) with
  P = each of ``--partitions`` (hash partitioner) under ``--memory-limit`` (the bound of
  the anonymous peak), which also partitions, sorts every bucket, writes node files, hashes
  every file and syncs before the manifest names them.

Both sides import from compiled bytecode, as installed packages do (pip compiles a package
as it installs it; pyarrow's is in the environment already): where the environment sets
``PYTHONDONTWRITEBYTECODE``, which would have every turn compile graphsys's sources again,
the children write their bytecode under the scratch directory (``PYTHONPYCACHEPREFIX``),
compiled by one import (and numba's start-up) before the turns.

The sides take turns (peers, P=..., peers, ...) ``--repeats`` times. The JSON line holds,
per size, each peer's and graphsys's median seconds (in the process: the peer's read and
write, the command's reported ``seconds["total"]``) and ``command_seconds`` (the whole
command, interpreter start-up and imports included), edges/s and peaks; per graphsys side,
``ratio`` / ``command_ratio`` = the median of the per-turn ratios peer seconds / graphsys
seconds against the strongest peer (``strongest_peer``, the lowest median), and the same
against every peer under ``ratios``. Usage::

    python benchmarks/storage/ingest.py --sizes 1M,10M,100M --partitions 1,4,16 \\
        --memory-limit 1GB
    python benchmarks/storage/ingest.py --input parquet --sizes 20M --partitions 16
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

CSV_PEER = r"""
import json, sys, time
import pyarrow.csv as csv, pyarrow.feather as feather
t = time.perf_counter()
table = csv.read_csv(sys.argv[1], read_options=csv.ReadOptions(column_names=["src", "dst"]),
                     parse_options=csv.ParseOptions(delimiter="\t"))
feather.write_feather(table, sys.argv[2], compression="uncompressed")
print(json.dumps({"seconds": time.perf_counter() - t, "rows": table.num_rows}))
"""

PARQUET_STREAM_PEER = r"""
import json, sys, time
import pyarrow.ipc as ipc, pyarrow.parquet as pq
t = time.perf_counter()
pf = pq.ParquetFile(sys.argv[1], pre_buffer=False)
rows = 0
with ipc.new_file(sys.argv[2], pf.schema_arrow) as w:
    for batch in pf.iter_batches(batch_size=1 << 20):
        w.write_batch(batch)
        rows += batch.num_rows
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows}))
"""

PARQUET_TABLE_PEER = r"""
import json, sys, time
import pyarrow.feather as feather, pyarrow.parquet as pq
t = time.perf_counter()
table = pq.read_table(sys.argv[1])
feather.write_feather(table, sys.argv[2], compression="uncompressed")
print(json.dumps({"seconds": time.perf_counter() - t, "rows": table.num_rows}))
"""

#: The peers of each input format, by the name the JSON line gives them.
PEERS = {"tsv": {"pyarrow-csv": CSV_PEER},
         "parquet": {"pyarrow-read_table": PARQUET_TABLE_PEER,
                     "pyarrow-iter_batches": PARQUET_STREAM_PEER}}



def _compiled_env(work: Path) -> dict[str, str]:
    """The children's environment: ours, with bytecode written under ``work`` (see the
    module docstring), the command's imports compiled once."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    subprocess.run([sys.executable, "-c", "import graphsys.cli, graphsys.commands.ingest, "
                    "pyarrow.parquet; from graphsys.storage import kernels; kernels.start_up()"],
                   env=env, check=True)
    return env


def _peaks(children) -> dict[str, int]:
    """The largest peaks of a side's turns."""
    return {"peak_rss_bytes": max(c.peak_rss_bytes for c in children),
            "peak_rss_anon_bytes": max(c.peak_rss_anon_bytes for c in children)}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--sizes", type=harness.counts, default=harness.counts("1M,10M"),
                    help="edge counts, e.g. 1M,10M,100M (default 1M,10M)")
    ap.add_argument("--partitions", type=harness.counts, default=[1, 4, 16],
                    help="partition counts P (default 1,4,16)")
    ap.add_argument("--memory-limit", type=harness.size, default=harness.size("1GB"),
                    help="ingest's memory budget (default 1GB)")
    ap.add_argument("--work", "--workdir", type=Path, dest="work",
                    help="scratch directory (default: a temporary one, removed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3,
                    help="turns of each side, alternated (default 3); medians are quoted")
    ap.add_argument("--input", choices=("tsv", "parquet"), default="tsv",
                    help="edge file format (default tsv)")
    args = ap.parse_args(argv)

    from graphsys.generators import rmat_edges, write_edges

    run = harness.Run("storage/ingest", args.record, memory=False)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    env = _compiled_env(work)
    results = []
    for size in args.sizes:
        nodes = 1 << max(1, round(size / 16).bit_length() - 1)
        edge_file = work / f"rmat-{size}.{args.input}"
        t = time.perf_counter()
        write_edges(rmat_edges(nodes, size, seed=args.seed), edge_file, overwrite=True)
        entry = {"edges": size, "nodes_ids": nodes, "input_bytes": edge_file.stat().st_size,
                 "generate_seconds": round(time.perf_counter() - t, 2)}
        raw = work / "raw.arrow"

        def peer(script: str, edge_file=edge_file, raw=raw):
            child = harness.run_child([python, "-c", script, edge_file, raw], env=env)
            raw.unlink()
            return child

        def ingest(p: int, edge_file=edge_file, size=size):
            out = work / f"g-{size}-{p}"
            child = harness.run_child([python, "-m", "graphsys", "ingest", edge_file,
                                       "--out", out, "--partitions", str(p),
                                       "--memory-limit", str(args.memory_limit), "--json"],
                                       env=env)
            shutil.rmtree(out)
            return child

        peers = PEERS[args.input]
        sides = {**{name: (lambda s=script: peer(s)) for name, script in peers.items()},
                 **{f"P{p}": (lambda p=p: ingest(p)) for p in args.partitions}}
        turns = harness.alternate(sides, args.repeats)
        entry["peers"], peer_turns = {}, {}
        for name in peers:
            children = turns.pop(name)
            secs = [c.json["seconds"] for c in children]
            command = [c.seconds for c in children]
            peer_turns[name] = (secs, command)
            entry["peers"][name] = {"seconds": round(harness.median(secs), 3),
                                    "seconds_turns": [round(x, 3) for x in secs],
                                    "command_seconds": round(harness.median(command), 3),
                                    "edges_per_s": round(size / harness.median(secs)),
                                    **_peaks(children)}
        strongest = min(entry["peers"], key=lambda n: entry["peers"][n]["seconds"])
        entry["strongest_peer"] = strongest
        entry["graphsys"] = {}
        for name, children in turns.items():
            totals = [c.json["seconds"]["total"] for c in children]
            ours = [c.seconds for c in children]
            total = harness.median(totals)
            ratios = {peer_name: {
                "ratio": harness.pair_ratios(secs, totals)["median"],
                "command_ratio": harness.pair_ratios(command, ours)["median"]}
                for peer_name, (secs, command) in peer_turns.items()}
            entry["graphsys"][name] = {
                "seconds": round(total, 3), "seconds_turns": [round(x, 3) for x in totals],
                "phases": children[-1].json["seconds"],
                "command_seconds": round(harness.median(ours), 3),
                "edges_per_s": round(size / total), **_peaks(children),
                **ratios[strongest], "ratios": ratios}
        edge_file.unlink()
        results.append(entry)
    if args.work is None:
        shutil.rmtree(work)
    run.emit(input=args.input, memory_limit_bytes=args.memory_limit, results=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
