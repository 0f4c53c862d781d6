#!/usr/bin/env python3
"""Ingest throughput and peak RSS vs a raw pyarrow baseline, on R-MAT edge lists.

For each size (edges) an R-MAT TSV (or, with ``--input parquet``, Parquet) file is generated
(edge factor 16: nodes = the power of two nearest edges/16, seed 0), then, each in a fresh
process:

- baseline: pyarrow reads the same file (multi-threaded CSV reader; for Parquet, record batch
  by record batch, as ingest does) and writes one uncompressed Arrow IPC (Feather) file: the
  raw read+write cost of the bytes;
- graphsys: ``ingest`` with P = 1, 4, 16 (hash partitioner) under ``--memory-limit``.

Prints one JSON line: per size, seconds, edges/s and peak RSS (bytes, the child's ru_maxrss)
of each, graphsys's peak anonymous RSS (``peak_rss_anon_bytes``, sampled every 20 ms: what
``--memory-limit`` bounds), and ``ratio`` = graphsys edges/s / baseline edges/s.

    python scripts/bench_ingest.py --sizes 1M,10M,100M --partitions 1,4,16 --memory-limit 1GB
    python scripts/bench_ingest.py --input parquet --sizes 20M --partitions 16
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render_results import add_record_argument, emit

BASELINE = r"""
import json, resource, sys, time
import pyarrow.csv as csv, pyarrow.feather as feather
t = time.perf_counter()
table = csv.read_csv(sys.argv[1], read_options=csv.ReadOptions(column_names=["src", "dst"]),
                     parse_options=csv.ParseOptions(delimiter="\t"))
feather.write_feather(table, sys.argv[2], compression="uncompressed")
print(json.dumps({"seconds": time.perf_counter() - t, "rows": table.num_rows,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

BASELINE_PARQUET = r"""
import json, resource, sys, time
import pyarrow.ipc as ipc, pyarrow.parquet as pq
t = time.perf_counter()
pf = pq.ParquetFile(sys.argv[1], pre_buffer=False)
rows = 0
with ipc.new_file(sys.argv[2], pf.schema_arrow) as w:
    for batch in pf.iter_batches(batch_size=1 << 20):
        w.write_batch(batch)
        rows += batch.num_rows
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

INGEST = r"""
import json, sys, time
from graphsys.memory import PeakMemory
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
with PeakMemory() as peak:
    report = ingest_sources([EdgeSource([sys.argv[1]])], sys.argv[2], IngestOptions(
        partitions=int(sys.argv[3]), memory_limit=int(sys.argv[4])))
print(json.dumps({**report.to_json(), "peak_rss_anon_bytes": peak.peak_anon}))
"""


def parse_count(text: str) -> int:
    mult = {"K": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip().upper()
    return int(float(text[:-1]) * mult[text[-1]]) if text[-1] in mult else int(text)


def child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,10M", help="edge counts, e.g. 1M,10M,100M")
    ap.add_argument("--partitions", default="1,4,16")
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--workdir", type=Path, help="scratch directory (default: a temp dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--input", choices=("tsv", "parquet"), default="tsv",
                    help="edge file format (default tsv)")
    add_record_argument(ap)
    args = ap.parse_args()

    from graphsys.generators import rmat_edges, write_edges
    from graphsys.units import parse_size

    memory_limit = parse_size(args.memory_limit)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for size in [parse_count(s) for s in args.sizes.split(",")]:
        nodes = 1 << max(1, round(size / 16).bit_length() - 1)
        edge_file = work / f"rmat-{size}.{args.input}"
        t = time.perf_counter()
        write_edges(rmat_edges(nodes, size, seed=args.seed), edge_file)
        entry = {"edges": size, "nodes_ids": nodes, "input_bytes": edge_file.stat().st_size,
                 "generate_seconds": round(time.perf_counter() - t, 2)}
        base = child(BASELINE if args.input == "tsv" else BASELINE_PARQUET, str(edge_file),
                     str(work / "raw.arrow"))
        (work / "raw.arrow").unlink()
        entry["baseline"] = {"seconds": round(base["seconds"], 3),
                             "edges_per_s": round(size / base["seconds"]),
                             "peak_rss_bytes": base["peak_rss_bytes"]}
        entry["graphsys"] = {}
        for p in [int(x) for x in args.partitions.split(",")]:
            out = work / f"g-{size}-{p}"
            rep = child(INGEST, str(edge_file), str(out), str(p), str(memory_limit))
            shutil.rmtree(out)
            secs = rep["seconds"]["total"]
            entry["graphsys"][f"P{p}"] = {
                "seconds": secs, "phases": rep["seconds"], "edges_per_s": round(size / secs),
                "peak_rss_bytes": rep["peak_rss_bytes"],
                "peak_rss_anon_bytes": rep["peak_rss_anon_bytes"],
                "ratio": round(base["seconds"] / secs, 3)}
        edge_file.unlink()
        results.append(entry)
    emit({"bench": "ingest", "input": args.input, "machine": f"{platform.machine()}, "
                      f"{__import__('os').cpu_count()} cpus", "python": platform.python_version(),
                      "memory_limit_bytes": memory_limit, "date": time.strftime("%Y-%m-%d"),
                      "results": results}, args.record)
    if args.workdir is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
