#!/usr/bin/env python
"""The GPU check: every engine's CUDA path, its tests and its GPU peers, in one command.

    python scripts/gpu_check.py [--device cuda] [--data DIR] [--parts env,tests,...] OUTDIR
    python scripts/gpu_check.py --device cpu --tiny OUTDIR     # the CPU dry run (CI runs it)

A GPU machine may be lent for minutes at a time: this one command (one process tree) runs
every part below in priority order, each in a child process with its own time cap, and writes
each part's results before the next part starts, so a run that is cut off still returns the
parts it finished. On an NVIDIA H100 (16 cores, torch 2.11 + CUDA 13) it is planned to end
within 8 minutes (the caps add up to 480 s; ``--budget`` bounds the whole run, default 480 s,
and a part starting late gets what is left).

Parts (``--parts``, in this order; cap seconds on the GPU / in the ``--tiny`` dry run):

========  ====  ====  ==================================================================
part      cap   tiny  what it measures
========  ====  ====  ==================================================================
env       15    20    GPU, driver, torch/CUDA, numba(-cuda), CuPy, PyG, pyg-lib, ncu, pytest
tests     150   60    ``pytest -m device --device cuda`` (every test that runs on the test
                      device) over the files holding them (one collection of the suite
                      finds them, so each worker collects those alone), per-test timeout
                      ``--test-timeout`` (pytest-timeout), spread over ``--test-workers``
                      pytest-xdist workers when installed
bsp       70    30    PageRank and BFS on a generated R-MAT (``--bsp-edges``, default 100M
                      edges over 2**23 ids, P = 8) held in GPU memory and read from the
                      host buckets (out of core: uploaded once into the in-memory layout
                      on the GPU within the default budget, the BFS row's time with that
                      setup, and streamed every superstep with ``device_budget=0``;
                      resident and streamed bytes per superstep):
                      edges/s per iteration, bytes copied host
                      to device per superstep, beside torch's CSR SpMV (cuSPARSE) on the same
                      matrix and device; in memory run to convergence with float64 ranks
                      (tol 1e-10) and float32 ones (tol 1e-6), timed over the supersteps
                      after the first window between two host reads; the lean supersteps'
                      ops per superstep and supersteps per host read; the in-memory BFS
                      under four direction-switch rules (Beamer's and three later ones)
                      and three costs of a bottom-up step over the unreached vertices'
                      in-edges alone;
                      the streamed pass with every batch kept and nothing merged (its
                      compute without the copies); the streamed one run batch by batch
                      rather than replayed as a recorded CUDA graph, with each packed
                      batch split by torch operators, not one jiterator kernel, and with
                      its batches unpacked; one in-memory BFS under torch.profiler (each
                      level's host time beside its kernels'); last, out-of-core BFS
                      streamed every superstep on an indexed R-MAT (10M edges) with and
                      without its active-edge supersteps (the senders' or the unreached
                      vertices' index rows alone), and without recorded passes,
                      alternated
gnn       45    30    GraphSAGE minibatch epoch, the CPU benchmark's shape (SBM 1M nodes /
                      25M directed edges, 100 features, 8 classes, fanouts 15,10 input layer
                      first, batch 1024, hidden 256, Adam 0.003, dropout 0.5), beside PyG's
                      SAGEConv fed by its NeighborLoader on the same GPU and arrays; share of
                      each step waiting for the sampler; GPU utilisation sampled every
                      50 ms (NVML); the same epoch with its batches sampled on the device
                      (DeviceNeighborSampler) beside the CPU sampler, one row (the PyG row
                      compares NodeLoader's default on the device: the device sampler on
                      CUDA, each batch a CUDA graph replay); the device sampler with its
                      neighbour ids in pinned host memory read through UVA (staged on the
                      host in the dry run), its first batch checked against the CPU
                      sampler's; one batch's launches, transfers and syncs, eager (picks
                      fused into a jiterator kernel on CUDA) and replayed; a training
                      step's launches, copies across the bus and host waits, from
                      torch.profiler over 10 steps of NodeLoader's default; last, the
                      device sampler's epoch without CUDA graphs, and the default's with
                      the loader's worker on the step's stream (no side stream)
embed     120   35    FB15k-237 with PyTorch-BigGraph's settings (ComplEx d = 400, softmax,
                      1000 uniform + 50 batch negatives, batch 1000, lr 0.1, 3 epochs),
                      after one untimed epoch that pays the device's one-time costs:
                      edges/s and filtered test MRR on the GPU by default (CUDA graphs),
                      then with ``cuda_graphs = false`` (a row: the default beside it) and
                      with ``batches_per_step = 4``; R-GCN + DistMult (``gnn.train``'s rgcn
                      link task, the shipped fb15k-237-rgcn.toml with the paper's d = 500
                      and batches of 30,000 triples) trained ``--rgcn-seconds`` (30) on the
                      GPU: filtered MRR beside the paper's 0.248; last, the same ComplEx run
                      on the CPU (about 37 s), each GPU run's row beside it
profile   80    45    ``graphsys profile pagerank|bfs --device cuda --ncu`` (R-MAT 2M edges)
                      and ``--workload gnn`` (SBM 20k nodes): modelled edge-kernel lane
                      utilisation beside Nsight Compute's, per kernel; kernel launches,
                      transfers and synchronisations per step beside a dense MLP step
========  ====  ====  ==================================================================

Measured on an H200 (16 cores, torch 2.11 + CUDA 13): env 7-9 s, tests 94-108 s (the
suite's collection, then the files holding device tests on eight workers), bsp 68 s with
every diagnostic (generating and ingesting the R-MAT 27 s of it; PageRank in memory and its
SpMV peer come first; at a 60 s cap the diagnostics after the rows were left out), gnn
36 s, embed 102 s (the three GPU runs with the data's load, R-GCN 42 s, the CPU run 34 s),
profile 76 s (ncu replays each of the first 200 kernel launches: about 20 s for each of
PageRank and BFS): about 6.5 minutes in all. A part needing what the machine lacks
(CUDA, ncu, the FB15k-237 files) records why and is marked ``skipped``. In the ``--tiny``
dry run on the CPU every part runs on small inputs (the GPU-only pieces recorded as
skipped) within 3 minutes (its budget, 178 s; about a minute of CPU time).

Peers, each named with its version in the output: torch's sparse CSR matrix-vector product
(``torch.sparse_csr_tensor @ x``: cuSPARSE SpMV on CUDA) for BSP; PyG (torch_geometric, 2.8
on the GPU image) ``SAGEConv`` with ``NeighborLoader`` when pyg-lib or torch-sparse is
installed, else the same PyG ``SAGEConv`` model fed by graphsys's sampler (the JSON says
which); graphsys's own CPU run for embeddings (same config, seed and machine); the R-GCN
paper (Schlichtkrull et al. 2018, FB15k-237 filtered MRR 0.248); Nsight Compute (``ncu
--version``) for the SIMT model; a dense two-layer MLP step of equal FLOPs
(``graphsys profile``'s reference) for launches per step.

Output, under OUTDIR (at most 8 files, none in sub-folders; scratch data goes to ``--work``,
default a temporary directory removed at the end):

* ``results.jsonl``: one JSON object per measurement (``part``, ``name``, ``device``, figures;
  a comparison carries ``row``: workload, peer, peer_figure, graphsys_figure, unit, ratio, for
  the results page) and one ``"name": "summary"`` object per part (``status`` ok, failed,
  timeout or skipped, ``reason``, ``seconds``, ``cap_s``), then one for the whole run.
* ``env.log``, ``tests.log``, ``bsp.log``, ``gnn.log``, ``embed.log``, ``profile.log``: each
  part's output.

``python tools/render_results.py --gpu OUTDIR/results.jsonl`` turns the rows into the GPU
table of docs/benchmarks.md.

**Datasets on the GPU machine.** The machine has no network, and the dataset mirror
(``../shared/datasets``, 15.4 MiB) lies outside the repository, which is all that travels.
Copy it into the git-ignored folder ``.gpu-data/`` of the repository before the call
(``mkdir -p .gpu-data && cp -r ../shared/datasets/. .gpu-data/``), name ``.gpu-data`` in the
device call's ``carry`` (``--data`` defaults to that folder when it is there): the embed
part reads ``.gpu-data/fb15k-237`` (only that folder is needed, 5.9 MB), and the tests part
uses the folder as ``GRAPHSYS_MIRROR``, so the tests on Cora, MovieLens and SNAP graphs run
on the GPU too. Without it the embed part records ``skipped`` and those tests skip.

On the GPU machine install graphsys first: ``pip install --no-deps --no-build-isolation -e .``
(the image has every dependency).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = "results.jsonl"
#: (part, cap seconds on the GPU, cap seconds in the --tiny dry run), in priority order
PARTS = (("env", 15, 20), ("tests", 150, 60), ("bsp", 70, 30), ("gnn", 45, 30),
         ("embed", 120, 35), ("profile", 80, 45))
BUDGET, TINY_BUDGET = 480, 178
#: a part's child exits with this when the whole part was skipped (its reason recorded)
SKIPPED = 3
PAPER_RGCN_MRR = 0.248  # Schlichtkrull et al. 2018, FB15k-237, filtered MRR
#: the tests the dry run runs (a handful: the full subset runs on the GPU)
TINY_TESTS = ("tests/bsp/test_traversal.py::test_bfs_levels", "-k", "directed-p1")


class Skip(Exception):
    """The whole part cannot run here (its reason is recorded)."""


# -- the parent ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="output directory (results.jsonl and logs)")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:k or cpu")
    ap.add_argument("--tiny", action="store_true",
                    help="small inputs everywhere (the CPU dry run; minutes, not a figure)")
    ap.add_argument("--parts", default=",".join(p for p, _, _ in PARTS),
                    help="comma-separated parts to run, in the fixed order (default: all)")
    ap.add_argument("--cap", action="append", default=[], metavar="PART=SECONDS",
                    help="another time cap for a part (repeatable)")
    ap.add_argument("--budget", type=float, default=None,
                    help=f"seconds for the whole run (default {BUDGET}, {TINY_BUDGET} with "
                         f"--tiny)")
    ap.add_argument("--data", type=Path, default=None,
                    help="a dataset mirror holding fb15k-237/ (see the docstring; default "
                         ".gpu-data of the repository when it is there)")
    ap.add_argument("--work", type=Path, default=None,
                    help="scratch directory (default: a temporary one, removed at the end)")
    ap.add_argument("--bsp-edges", type=int, default=None,
                    help="R-MAT edges of the bsp part (default 100M; 200k with --tiny)")
    ap.add_argument("--rgcn-seconds", type=float, default=None,
                    help="R-GCN training seconds (default 30; 2 with --tiny)")
    ap.add_argument("--rgcn-hidden", type=int, default=None, choices=(200, 500),
                    help="R-GCN encoding width on the GPU (default 500, the paper's; 200 "
                         "is the shipped CPU config's), 5 x 5 blocks")
    ap.add_argument("--test-timeout", type=int, default=60, help="seconds per test (60)")
    ap.add_argument("--test-workers", type=int, default=None,
                    help="pytest-xdist workers for the tests part (default: min(8, cores / "
                         "2) on CUDA when pytest-xdist is installed, else 1)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    known = [p for p, _, _ in PARTS]
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    bad = [p for p in parts if p not in known]
    if bad:
        ap.error(f"--parts: unknown part(s) {', '.join(bad)} (choose from {', '.join(known)})")
    args.parts = [p for p in known if p in parts]
    caps = {p: (tiny if args.tiny else gpu) for p, gpu, tiny in PARTS}
    for item in args.cap:
        name, _, value = item.partition("=")
        if name not in caps:
            ap.error(f"--cap {item}: unknown part {name!r}")
        try:
            caps[name] = float(value)
        except ValueError:
            ap.error(f"--cap {item}: expected PART=SECONDS")
    args.caps = caps
    if args.budget is None:
        args.budget = TINY_BUDGET if args.tiny else BUDGET
    if args.data is None and (REPO / ".gpu-data").is_dir() and not args.child:
        args.data = REPO / ".gpu-data"
    if args.data is not None and not args.data.is_dir():
        ap.error(f"--data {args.data}: not a directory")
    return args


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def append_record(out: Path, obj: dict) -> None:
    """Append one JSON line to OUTDIR/results.jsonl (open, write, flush, close: a killed run
    keeps every line written before)."""
    with (out / RESULTS).open("a", encoding="utf-8") as f:
        f.write(json.dumps(obj, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def part_command(args: argparse.Namespace, part: str) -> str:
    """The command that reruns one part (the rows' ``command``)."""
    cmd = ["python", "scripts/gpu_check.py", "--device", args.device, "--parts", part]
    if args.tiny:
        cmd.append("--tiny")
    if args.data is not None and part == "embed":
        cmd += ["--data", "DATA"]
    return shlex.join(cmd + ["OUT"])


def child_argv(args: argparse.Namespace, part: str, work: Path, cap: float) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", part, "--device",
            args.device, "--work", str(work), "--test-timeout", str(args.test_timeout),
            "--cap", f"{part}={cap:.1f}"]
    for flag, value in (("--data", args.data), ("--bsp-edges", args.bsp_edges),
                        ("--rgcn-seconds", args.rgcn_seconds),
                        ("--rgcn-hidden", args.rgcn_hidden),
                        ("--test-workers", args.test_workers)):
        if value is not None:
            argv += [flag, str(value)]
    if args.tiny:
        argv.append("--tiny")
    return argv + [str(args.out)]


def last_record(out: Path, part: str) -> dict | None:
    rec = None
    with contextlib.suppress(OSError):
        for line in (out / RESULTS).read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if obj.get("part") == part:
                    rec = obj
    return rec


def log_tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
        return lines[-1][:300] if lines else ""
    return ""


def kill_tree(proc: subprocess.Popen) -> None:
    """End a part's child and everything it started (its own process group)."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
            return


def run_parts(args: argparse.Namespace) -> int:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS).write_text("")
    own_work = args.work is None
    work = Path(tempfile.mkdtemp(prefix="gpu-check-")) if own_work else args.work
    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = start + args.budget
    statuses: dict[str, str] = {}
    print(f"gpu_check: device {args.device}{' (tiny)' if args.tiny else ''}, parts "
          f"{', '.join(args.parts)}, budget {args.budget:.0f} s, output {out}", flush=True)
    try:
        for part in args.parts:
            left = deadline - time.monotonic()
            cap = min(args.caps[part], left)
            summary = {"part": part, "name": "summary", "device": args.device,
                       "cap_s": round(cap, 1), "command": part_command(args, part)}
            if cap < 5:
                summary.update(status="skipped", seconds=0.0,
                               reason=f"{left:.0f} s left of the {args.budget:.0f} s budget")
                append_record(out, summary)
                statuses[part] = "skipped"
                continue
            log = out / f"{part}.log"
            t0 = time.monotonic()
            with log.open("w") as fh:
                proc = subprocess.Popen(child_argv(args, part, work, cap), stdout=fh,
                                        stderr=subprocess.STDOUT, cwd=REPO,
                                        start_new_session=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
                try:
                    rc = proc.wait(cap)
                except subprocess.TimeoutExpired:
                    kill_tree(proc)
                    rc = None
            seconds = round(time.monotonic() - t0, 1)
            if rc is None:
                status, reason = "timeout", f"stopped at its cap of {cap:.0f} s"
            elif rc == 0:
                status, reason = "ok", ""
            elif rc == SKIPPED:
                status = "skipped"
                reason = (last_record(out, part) or {}).get("reason", "")
            else:
                status, reason = "failed", f"exit {rc}: {log_tail(log)}"
            summary.update(status=status, seconds=seconds, reason=reason)
            append_record(out, summary)
            statuses[part] = status
            print(f"gpu_check: {part}: {status} in {seconds} s{': ' + reason if reason else ''}",
                  flush=True)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)
    total = round(time.monotonic() - start, 1)
    append_record(out, {"part": "all", "name": "summary", "device": args.device,
                        "tiny": args.tiny, "seconds": total, "budget_s": args.budget,
                        "parts": statuses, "finished": now()})
    print(f"gpu_check: done in {total} s: {statuses}", flush=True)
    return 0 if all(s in ("ok", "skipped") for s in statuses.values()) else 1


# -- what every part shares ---------------------------------------------------------------


class Ctx:
    """One part's settings and its record writer (in the part's child process)."""

    def __init__(self, args: argparse.Namespace):
        self.part, self.out, self.tiny = args.child, args.out, args.tiny
        self.data, self.args = args.data, args
        self.work = args.work / args.child
        self.work.mkdir(parents=True, exist_ok=True)
        self.device = args.device
        self.cuda = self.device.startswith("cuda")
        self.started = time.monotonic()
        self.cap = args.caps[args.child]
        self.command = part_command(args, args.child)
        self.errors: list[str] = []

    def left(self) -> float:
        """Seconds left of this part's cap."""
        return self.cap - (time.monotonic() - self.started)

    def record(self, name: str, **fields) -> None:
        rec = {"part": self.part, "name": name, "device": self.device, "time": now(), **fields}
        if "row" in rec:
            rec["row"] = {**rec["row"], "command": self.command}
        append_record(self.out, rec)
        print(f"[{self.part}] {name}: " + json.dumps(fields, default=str)[:400], flush=True)

    def sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def attempt(self, name: str, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``; on an exception its traceback goes to the log, a record
        ``name`` with status ``error`` to the results, and the part carries on with its next
        measurement (it ends as failed). Returns fn's result, None after an error."""
        try:
            return fn(*args, **kwargs)
        except (Skip, KeyboardInterrupt):
            raise
        except Exception as exc:
            traceback.print_exc()
            self.errors.append(name)
            self.record(name, status="error", reason=f"{type(exc).__name__}: {str(exc)[:300]}")
            return None


def ratio(peer: float | None, ours: float | None) -> float | None:
    """How many times better graphsys is (the caller orders: peer time over ours, our rate
    over the peer's)."""
    if not peer or not ours:
        return None
    return round(peer / ours, 3)


def one_decimal(value: float | None) -> str:
    """A mean count a step as a row's words give it (``?`` when not measured)."""
    return "?" if value is None else f"{value:.1f}"


def median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def run_quiet(cmd: list[str], timeout: float = 30) -> str | None:
    """A small command's stdout (None when it is missing or fails)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


# -- env ----------------------------------------------------------------------------------


def part_env(ctx: Ctx) -> None:
    import platform

    import torch

    import graphsys

    info = {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "graphsys": graphsys.__version__,
            "torch": torch.__version__, "torch_cuda": torch.version.cuda,
            "cuda_available": torch.cuda.is_available()}
    with contextlib.suppress(OSError, ValueError):
        mem = Path("/proc/meminfo").read_text().split("\n")[0].split()
        info["memory_gb"] = round(int(mem[1]) / 2**20, 1)
    for dist in ("numpy", "scipy", "numba", "numba-cuda", "pyarrow", "cupy-cuda13x",
                 "cupy-cuda12x", "torch-geometric", "pyg-lib", "torch-sparse", "pytest",
                 "pytest-timeout", "pytest-xdist", "nvidia-ml-py", "networkx"):
        info[dist] = version(dist)
    smi = run_quiet(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                     "--format=csv,noheader"])
    info["nvidia_smi"] = smi
    ncu = shutil.which("ncu")
    info["ncu"] = ncu
    if ncu:
        text = run_quiet([ncu, "--version"], timeout=60) or ""
        info["ncu_version"] = text.splitlines()[-1] if text else None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_count=torch.cuda.device_count(),
                    capability=f"{props.major}.{props.minor}",
                    gpu_memory_gb=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count)
    try:
        from numba import cuda as numba_cuda

        info["numba_cuda_available"] = bool(numba_cuda.is_available())
    except Exception as exc:  # numba without its CUDA target, or no driver
        info["numba_cuda_available"] = f"no ({type(exc).__name__})"
    ctx.record("environment", **info)
    if ctx.cuda:
        if not torch.cuda.is_available():
            raise SystemExit(f"device {ctx.device}: torch {torch.__version__} sees no CUDA GPU")
        dev = torch.device(ctx.device)
        t0 = time.perf_counter()
        x = torch.randn(4096, 4096, device=dev)
        y = (x @ x).sum().item()
        ctx.record("cuda-smoke", ok=bool(y == y), seconds=round(time.perf_counter() - t0, 3))


# -- tests --------------------------------------------------------------------------------

RESULT = re.compile(r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
NODEID = re.compile(r"(tests/\S+?\.py::\S+)")
COLLECTED = re.compile(r"(\d+)(?:/(\d+))? tests? collected(?: \((\d+) deselected\))?")


def parse_test_line(line: str) -> tuple[str, str] | None:
    """(node id, outcome) of a ``pytest -v`` result line (plain or pytest-xdist's
    ``[gw0] [ 10%] PASSED tests/...``), else None."""
    m, n = RESULT.search(line), NODEID.search(line)
    if not m or not n or "::" not in n.group(1):
        return None
    return n.group(1), m.group(1)


def device_test_files(collected: str) -> list[str]:
    """The test files, in order, of the node ids a ``pytest --collect-only -q`` printed."""
    files: dict[str, None] = {}
    for line in collected.splitlines():
        m = NODEID.match(line.strip())
        if m:
            files[m.group(1).split("::")[0]] = None
    return list(files)


def test_device(ctx: Ctx) -> str:
    """The device the tests run on: the check's device; in the CPU dry run, torch's lazy
    tensors when torch has them (a device that is not the CPU: the device discipline is
    exercised), else the CPU."""
    if ctx.cuda or not ctx.tiny:
        return ctx.device
    try:
        import torch._lazy.ts_backend  # noqa: F401
    except ImportError:
        return "cpu"
    return "lazy"


def part_tests(ctx: Ctx) -> None:
    import importlib.util

    device = test_device(ctx)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "device",
            "--device", device, "-o", "console_output_style=classic"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if ctx.data is not None:
        env["GRAPHSYS_MIRROR"] = str(ctx.data.resolve())
    files = ["tests"]
    try:
        co = subprocess.run(base + ["--collect-only", "-q", "tests"], capture_output=True,
                            text=True, cwd=REPO, env=env, timeout=max(20.0, ctx.left() - 25))
    except subprocess.TimeoutExpired:
        ctx.record("collected", test_device=device, status="timeout",
                   reason="collecting the suite outran the part's cap")
    else:
        m = None
        for line in co.stdout.splitlines()[::-1]:
            m = COLLECTED.search(line)
            if m:
                break
        found = device_test_files(co.stdout)
        if co.returncode == 0 and found:  # each worker then collects these files alone
            files = found
        ctx.record("collected", test_device=device, device_tests=int(m.group(1)) if m else None,
                   all_tests=int(m.group(2)) if m and m.group(2) else None,
                   files=len(found), exit_code=co.returncode)
    cmd = base + ["-v", "-rfE"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        cmd += ["--timeout", str(ctx.args.test_timeout)]
    workers = ctx.args.test_workers
    if workers is None:
        workers = min(8, max(1, (os.cpu_count() or 2) // 2)) if ctx.cuda else 1
    if workers > 1 and importlib.util.find_spec("xdist") is not None:
        cmd += ["-n", str(workers)]
    else:
        workers = 1
    cmd += list(TINY_TESTS) if ctx.tiny else files
    outcomes: dict[str, str] = {}
    last = ""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=REPO, env=env, start_new_session=True)
    timer = threading.Timer(max(5.0, ctx.left() - 10), kill_tree, (proc,))
    timer.start()
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            got = parse_test_line(line)
            if got:
                outcomes[got[0]] = got[1]
            if line.strip():
                last = line.strip()
        rc = proc.wait()
    finally:
        timer.cancel()
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome.lower()] = counts.get(outcome.lower(), 0) + 1
    bad = sorted(k for k, v in outcomes.items() if v in ("FAILED", "ERROR"))
    ctx.record("results", test_device=device, exit_code=rc, finished=rc in (0, 1, 5),
               workers=workers, ran=len(outcomes), **counts, failures=bad[:100],
               summary=last[:300], command=shlex.join(cmd[1:]))
    if rc not in (0, 5):
        raise SystemExit(f"pytest exited {rc}: {len(bad)} failed; {last[:200]}")


# -- bsp ----------------------------------------------------------------------------------


def build_rmat(ctx: Ctx, num_nodes: int, num_edges: int, partitions: int, seed: int = 1,
               tag: str = ""):
    """Generate (seeded) an R-MAT graph in memory and ingest it under the part's work dir
    (``tag``: a suffix of its directory, for a copy that gets indexes); reused when it is
    there already."""
    import numpy as np

    import graphsys
    from graphsys.generators import rmat_edges

    out = ctx.work / f"rmat-{num_edges}-{num_nodes}-p{partitions}{tag}"
    if (out / "manifest.json").exists():
        return graphsys.open_graph(out), {}
    t0 = time.perf_counter()
    chunks = list(rmat_edges(num_nodes, num_edges, seed=seed))
    src = np.concatenate([c["src"] for c in chunks])
    dst = np.concatenate([c["dst"] for c in chunks])
    del chunks
    t1 = time.perf_counter()
    g = graphsys.from_numpy(src, dst, out, partitions=partitions, memory_limit=8 << 30)
    return g, {"generate_s": round(t1 - t0, 1), "ingest_s": round(time.perf_counter() - t1, 1)}


def steady_from(method: str, supersteps: int) -> int:
    """The first superstep of a run's steady state, the one its medians start at: after
    superstep 0 (it warms up, or uploads the edges); for the lean supersteps, whose
    window of :data:`~graphsys.bsp.algorithms.pagerank_device.CHECK_EVERY` supersteps
    between two host reads is timed as a whole and split evenly, after the first window
    where a later one ran (skipping superstep 0 alone would keep its window's time)."""
    window = lean_counts(method).get("supersteps_per_host_read")
    if window and supersteps > window:
        return window
    return 1 if supersteps > 1 else 0


def superstep_figures(stats) -> dict:
    """Per superstep seconds (all phases), edges scanned and bytes copied host to device;
    their medians over the steady supersteps (:func:`steady_from`, recorded as
    ``steady_from``), edges/s of that median, and each phase's median seconds (where the
    time of a superstep beyond its edges goes). A float32 PageRank whose last supersteps
    ran in float64 (its method says from which) has its medians over its float32 ones, and
    the float64 tail's median seconds as ``float64_from`` and ``float64_median_seconds``."""
    steps = [{"superstep": s.superstep, "seconds": round(sum(s.seconds.values()), 6),
              "edges": s.edges_scanned, "bytes_h2d": s.bytes_h2d, "direction": s.direction}
             for s in stats.supersteps]
    wide = re.search(r"float64 from superstep (\d+)", stats.method)
    end = int(wide.group(1)) if wide else len(steps)
    start = steady_from(stats.method, end)
    body = steps[start:end]
    sec = median([s["seconds"] for s in body])
    edges = median([s["edges"] for s in body])
    phases = {p: round(median([s.seconds.get(p, 0.0) for s in stats.supersteps[start:end]])
                       or 0.0, 6) for p in stats.supersteps[0].seconds} if body else {}
    tail = {"float64_from": end, "float64_median_seconds": median(
        [s["seconds"] for s in steps[end:]])} if wide else {}
    return {"supersteps": steps, "steady_from": start, "median_seconds": sec, **tail,
            "median_phase_seconds": phases,
            "median_edges": edges, "edges_per_s": round(edges / sec) if sec else None,
            "median_bytes_h2d": median([s["bytes_h2d"] for s in body]),
            "setup_s": round(stats.setup_seconds, 3), "setup_bytes_h2d": stats.setup_bytes_h2d}


def lean_counts(method: str) -> dict:
    """What the in-memory PageRank's lean supersteps launch (pinned by
    tests/bsp/test_pagerank_device.py on the CPU): torch ops per superstep and supersteps
    per host read of the L1 change; the device BFS's ops per top-down and bottom-up
    superstep, whole or over the unreached vertices' in-edges (tests/bsp/test_bfs_device.py);
    empty for another method."""
    if method.startswith("direction-optimizing-bfs (device"):
        from graphsys.bsp.algorithms import bfs_device as b

        return {"push_ops_per_superstep": b.PUSH_OPS, "pull_ops_per_superstep": b.PULL_OPS,
                "pull_unreached_ops_per_superstep": b.PULL_UNREACHED_OPS,
                "probe_ops": b.PROBE_OPS, "probe_edges": b.PROBE_EDGES,
                "probe_devices": list(b.PROBE_DEVICES),
                "frontier_ids_ops": b.FRONTIER_IDS_OPS, "mark_ops": b.MARK_OPS,
                "host_reads_per_superstep": "1 (2 where a bottom-up step probes)"}
    if "device SpMV" not in method:
        return {}
    from graphsys.bsp.algorithms.pagerank_device import CHECK_EVERY, OPS_PER_SUPERSTEP

    return {"ops_per_superstep": OPS_PER_SUPERSTEP, "supersteps_per_host_read": CHECK_EVERY}


def bfs_warm_check(ctx: Ctx, bsp, g, hub, label: str, first) -> None:
    """The in-memory device BFS again (its kernels loaded, the layout built again), its
    levels checked on the device as Graph500 validates a BFS (:func:`bfs_levels_valid`):
    record ``bfs-memory-warm`` with the search's seconds (the supersteps, setup apart)."""
    import numpy as np

    t0 = time.perf_counter()
    res = ctx.attempt("bfs-memory-warm", bsp.bfs, g, hub, mode="memory", device=ctx.device,
                      backend="torch", schedule="sync")
    if res is None:
        return
    wall = time.perf_counter() - t0
    figs = superstep_figures(res.stats)
    search = sum(s["seconds"] for s in figs["supersteps"])
    edges = sum(s["edges"] for s in figs["supersteps"])
    valid = ctx.attempt("bfs-valid", bfs_levels_valid, ctx, g, res.values,
                        int(np.asarray(g.to_internal([hub]))[0]))
    traversed = traversed_edges(g, res.values)
    ctx.record("bfs-memory-warm", graph=label, backend="torch", method=res.stats.method,
               wall_s=round(wall, 3), search_s=round(search, 6),
               search_edges_per_s=round(edges / search) if search else None,
               traversed_edges=traversed,
               teps=round(traversed / search) if search else None,
               directions="".join("t" if s["direction"] == "push" else "b"
                                  for s in figs["supersteps"]),  # top-down, bottom-up
               levels_valid=valid, same_as_first=bool(np.array_equal(first.values,
                                                                     res.values)),
               **lean_counts(res.stats.method), **figs,
               note="a second run in the same process; search_s: its supersteps' seconds")


#: Kernels of most device time listed per level by :func:`bfs_level_profile`
BFS_PROFILE_TOP = 5


def bfs_level_profile(ctx: Ctx, bsp, g, hub) -> dict:
    """torch.profiler over one more in-memory device BFS (its kernels loaded by the runs
    before), with the engine's ranges on: per level its host microseconds (the
    ``bsp.superstep#k`` range, its host read included), the kernels that started in it,
    their summed device microseconds and the :data:`BFS_PROFILE_TOP` of most device time
    (name, count, microseconds). A level whose kernels take a small share of its
    time waits on the host issuing its operators, not on the device: what fewer launches
    (a fused kernel, a recorded graph) would win there."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from graphsys.trace import ranges_on

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.cuda else [])
    with ranges_on(), profile(activities=acts) as prof:
        res = bsp.bfs(g, hub, mode="memory", device=ctx.device, backend="torch",
                      schedule="sync")
        ctx.sync()
    events = list(prof.events())
    on_gpu = [getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
              for e in events]
    # the host's ranges (on CUDA each also shows as an annotation on the GPU's timeline)
    levels = sorted((e for e, g in zip(events, on_gpu, strict=True)
                     if not g and e.name.startswith("bsp.superstep#")),
                    key=lambda e: e.time_range.start)
    kernels = [e for e, g in zip(events, on_gpu, strict=True)
               if g and not e.name.startswith("bsp.")]
    out = []
    for e in levels:
        lo, hi = e.time_range.start, e.time_range.end
        mine = [k for k in kernels if lo <= k.time_range.start < hi]
        top: dict[str, list] = {}
        for k in mine:
            t = top.setdefault(k.name[:60], [k.name[:60], 0, 0.0])
            t[1], t[2] = t[1] + 1, t[2] + k.time_range.elapsed_us()
        out.append({"level": int(e.name.rsplit("#", 1)[1]),
                    "host_us": round(e.time_range.elapsed_us(), 1), "kernels": len(mine),
                    "kernel_us": round(sum(k.time_range.elapsed_us() for k in mine), 1),
                    "top_kernels": [[n, c, round(us, 1)] for n, c, us in sorted(
                        top.values(), key=lambda t: -t[2])[:BFS_PROFILE_TOP]]})
    return {"method": res.stats.method, "levels": out,
            "directions": "".join("t" if s.direction == "push" else "b"
                                  for s in res.stats.supersteps),
            "torch": torch.__version__}


#: The device BFS's switch rules tried beside Beamer's: ``alpha`` and ``beta`` of
#: :mod:`graphsys.bsp.algorithms.bfs_device` divided by the factor, which raises the
#: frontier needed to go bottom-up and to stay there (a bottom-up step there scans every
#: in-edge, with no early exit, so its best switch point on a GPU may lie later than the
#: CPU's); ``inf``: never bottom-up
BFS_POLICIES = {"beamer": None, "later-4x": 4.0, "later-16x": 16.0, "top-down": float("inf")}
#: The default rule's bottom-up supersteps with other costs of an unreached vertex's
#: in-edge against the whole product's (``bfs_device.UNREACHED_PULL_COST``; the default
#: is 16): ``inf`` every bottom-up step the product, 1 and 4 more of them over the
#: unreached vertices' in-edges alone
PULL_COSTS = {"whole-pulls": float("inf"), "unreached-pull-cost-4": 4.0,
              "unreached-pull-cost-1": 1.0}
#: The default rule with the bottom-up probe of each unreached vertex's first in-edges
#: (``bfs_device.PROBE_EDGES``, the default on CUDA) off, or reading more or fewer
PROBES = {"no-probe": 0, "probe-2": 2, "probe-8": 8}


def bfs_direction_policies(ctx: Ctx, bsp, g, hub, want) -> dict:
    """The in-memory device BFS under each :data:`BFS_POLICIES` rule, each
    :data:`PULL_COSTS` cost and each :data:`PROBES` probe: per run, the directions taken,
    the search's seconds (its supersteps, setup apart, the second of two runs), the edges
    scanned and whether the levels equal ``want``."""
    import numpy as np

    from graphsys.bsp.algorithms import bfs_device

    base = (bfs_device.ALPHA, bfs_device.BETA)
    cost, probe = bfs_device.UNREACHED_PULL_COST, bfs_device.PROBE_EDGES
    out = {}
    try:
        # Beamer's rule as it runs by default, then without the probe and with others (the
        # default's A/B), then the other rules and costs, while the part has time
        runs = [("beamer", None), *PROBES.items(),
                *[(k, v) for k, v in BFS_POLICIES.items() if k != "beamer"],
                *PULL_COSTS.items()]
        for name, factor in runs:
            if ctx.left() < 8:  # the part's cap is near: the rest are left out
                break
            if name in PROBES:
                bfs_device.PROBE_EDGES = factor
            elif name in PULL_COSTS:
                bfs_device.UNREACHED_PULL_COST = factor
            elif factor is not None:  # a tiny alpha and beta: thresholds past any frontier
                bfs_device.ALPHA, bfs_device.BETA = (max(b / factor, 1e-300) for b in base)
            for _ in range(2):
                res = bsp.bfs(g, hub, mode="memory", device=ctx.device, backend="torch",
                              schedule="sync")
            steps = res.stats.supersteps
            out[name] = {"directions": "".join("t" if s.direction == "push" else "b"
                                               for s in steps),
                         "search_s": round(sum(s.seconds.get("edges", 0.0) for s in steps), 6),
                         "edges_scanned": int(sum(s.edges_scanned for s in steps)),
                         "same_levels": bool(np.array_equal(res.values, want))}
            bfs_device.ALPHA, bfs_device.BETA = base
            bfs_device.UNREACHED_PULL_COST, bfs_device.PROBE_EDGES = cost, probe
    finally:
        bfs_device.ALPHA, bfs_device.BETA = base
        bfs_device.UNREACHED_PULL_COST, bfs_device.PROBE_EDGES = cost, probe
    return out


def unmerged_pass(ctx: Ctx, bsp, g, iters: int) -> dict:
    """Out-of-core PageRank with every batch kept on the device after the first superstep
    but neither merged nor laid out as in memory: its steady supersteps run the streamed
    row's batch-by-batch pass (the same ops a batch) with no copy, so their seconds are
    that pass's compute and per-batch overhead, to set beside the streamed row's
    superstep, whose copies overlap it."""
    from graphsys.bsp import device_stream, stream

    saved = device_stream.DEVICE_BUILDS, stream.StreamEdges._merge
    device_stream.DEVICE_BUILDS = ()
    stream.StreamEdges._merge = lambda self, *args, **kwargs: False
    try:
        with warnings.catch_warnings():  # tol 1e-30: a fixed number of supersteps
            warnings.simplefilter("ignore")
            res = bsp.pagerank(g, tol=1e-30, max_iters=iters, mode="out-of-core",
                               device=ctx.device, backend="torch", weighted=False,
                               device_budget=0.5 if ctx.cuda else 1 << 40)
    finally:
        device_stream.DEVICE_BUILDS, stream.StreamEdges._merge = saved
    figs = superstep_figures(res.stats)
    return {"method": res.stats.method, "resident_bytes": res.stats.resident_bytes,
            **{k: figs[k] for k in ("median_seconds", "median_phase_seconds",
                                    "median_bytes_h2d", "steady_from", "supersteps")}}


def streamed_with(ctx: Ctx, bsp, g, iters: int, **switches) -> dict:
    """Out-of-core PageRank streamed every superstep (``device_budget=0``) as the streamed
    row, with ``graphsys.bsp.device_stream``'s module switches set to ``switches`` for the
    run: ``PACK_LOW=0, HI_BITS=0`` its batches as two int32 offsets an edge (nothing
    packed: a superstep whose seconds follow its bytes waits on the bus, one whose seconds
    do not, on its compute); ``FUSED_SPLIT_DEVICES=()`` a packed batch split by torch
    operators (3 to 11 launches a batch) rather than one jiterator kernel;
    ``RECORDED_PASS_DEVICES=()`` the pass run batch by batch every superstep rather than
    replayed as one recorded CUDA graph."""
    from graphsys.bsp import device_stream

    saved = {name: getattr(device_stream, name) for name in switches}
    for name, value in switches.items():
        setattr(device_stream, name, value)
    try:
        with warnings.catch_warnings():  # tol 1e-30: a fixed number of supersteps
            warnings.simplefilter("ignore")
            res = bsp.pagerank(g, tol=1e-30, max_iters=iters, mode="out-of-core",
                               device=ctx.device, backend="torch", weighted=False,
                               device_budget=0)
    finally:
        for name, value in saved.items():
            setattr(device_stream, name, value)
    figs = superstep_figures(res.stats)
    return {"method": res.stats.method, **stream_figures(res.stats, figs),
            **{k: figs[k] for k in ("median_seconds", "median_phase_seconds",
                                    "median_bytes_h2d", "steady_from", "supersteps")}}


def fused_splits() -> dict:
    """The packings (``"hs,hd"``) whose streamed batches were split by one jiterator kernel
    in this process (True), or by torch operators where the kernel failed to compile or
    to split the check batch (False)."""
    from graphsys.bsp import device_stream

    return {f"{hs},{hd}": fn is not None
            for ((hs, hd), _, _), fn in device_stream._FUSED.items()}


#: The streamed PageRank's variants, each set beside the streamed row: (name, the
#: ``device_stream`` switches of :func:`streamed_with`, its record's note)
STREAMED_VARIANTS = (
    ("unrecorded", {"RECORDED_PASS_DEVICES": ()},
     "streamed every superstep as the streamed row, batch by batch (the host issuing each "
     "batch's copy and kernels) where the row replays the pass recorded as one CUDA "
     "graph"),
    ("unfused", {"FUSED_SPLIT_DEVICES": ()},
     "streamed every superstep as the streamed row, each packed batch split by torch "
     "operators where the row splits it in one jiterator kernel"),
    ("unpacked", {"PACK_LOW": 0, "HI_BITS": 0},
     "streamed every superstep as the streamed row, its batches as two int32 offsets an "
     "edge (8 bytes) where the row packs them"))
#: The active-edge BFS's graph: R-MAT edges, ids and partitions, with CSR and CSC indexes
ACTIVE_GRAPH = (10_000_000, 1 << 20, 4)
#: Alternated turns of each side of the active-edge BFS
ACTIVE_TURNS = 3


def active_edge_bfs(ctx: Ctx, bsp) -> dict:
    """Out-of-core BFS from the highest-degree vertex, streamed every superstep
    (``device_budget=0``), on an R-MAT with stored CSR and CSC indexes (:data:`ACTIVE_GRAPH`),
    with its frontier supersteps reading only their senders' index rows (the default,
    :mod:`graphsys.bsp.active_edges`) and with every bucket of the senders' partitions
    streamed (``ACTIVE_EDGES = False``), and so again with no pass recorded as a CUDA
    graph (``RECORDED_PASS_DEVICES = ()``), :data:`ACTIVE_TURNS` turns alternated: per side
    the median run seconds (synchronised), bytes read and copied to the device, the
    supersteps' passes (``a`` the senders' index rows, ``p`` the unreached vertices'
    in-edges from the index, ``s`` streamed) and the replays of recorded passes; whether
    the levels agree; and one run with the default budget, which uploads the stored
    indexes into the in-memory layout (``index_build``: its setup and search seconds)."""
    import numpy as np

    from graphsys import open_graph
    from graphsys.bsp import active_edges, device_stream
    from graphsys.storage.adjacency_index import build_index

    edges, nodes, parts = (200_000, 1 << 14, 4) if ctx.tiny else ACTIVE_GRAPH
    g, built = build_rmat(ctx, nodes, edges, parts, tag="-indexed")
    if g.adjacency_index(None, "csc") is None:
        build_index(g, ("csr", "csc"))
        g = open_graph(g.path)
    hub = g.to_original([int(g.degrees(direction="out").argmax())])
    hub = hub.tolist()[0] if hasattr(hub, "tolist") else hub.to_pylist()[0]
    runs: dict[str, list] = {"active": [], "streamed": [], "streamed-unrecorded": []}
    recorded = device_stream.RECORDED_PASS_DEVICES
    try:
        for turn in range(ACTIVE_TURNS + 1):  # the first turn warms every side
            for side in runs:
                active_edges.ACTIVE_EDGES = side == "active"
                device_stream.RECORDED_PASS_DEVICES = (() if side == "streamed-unrecorded"
                                                       else recorded)
                t0 = time.perf_counter()
                res = bsp.bfs(g, hub, mode="out-of-core", device=ctx.device, backend="torch",
                              schedule="sync", device_budget=0)
                ctx.sync()
                if turn:
                    runs[side].append((time.perf_counter() - t0, res))
    finally:
        active_edges.ACTIVE_EDGES = True
        device_stream.RECORDED_PASS_DEVICES = recorded
    out = {"graph": f"R-MAT {edges / 1e6:g}M edges, {nodes} ids, P = {parts}, CSR and CSC "
                    f"indexes", **built,
           "same_levels": all(np.array_equal(runs["active"][0][1].values, done[0][1].values)
                              for done in runs.values())}
    # the default budget: the stored indexes uploaded into the in-memory layout, no sort
    res = bsp.bfs(g, hub, mode="out-of-core", device=ctx.device, backend="torch",
                  schedule="sync")
    out["index_build"] = {"method": res.stats.method, "setup_s": round(res.stats.setup_seconds,
                                                                        4),
                          "search_s": round(sum(s.seconds.get("edges", 0.0)
                                                for s in res.stats.supersteps), 6),
                          "same_levels": bool(np.array_equal(res.values,
                                                             runs["active"][0][1].values))}
    for side, done in runs.items():
        steps = done[0][1].stats.supersteps
        out[side] = {"median_s": round(median([t for t, _ in done]), 6),
                     "bytes_read": int(sum(s.bytes_read for s in steps)),
                     "bytes_h2d": int(sum(s.bytes_h2d for s in steps)),
                     "directions": "".join({"active": "a", "active-pull": "p"}.get(
                         s.direction, "s") for s in steps),
                     "pass_replays": done[0][1].stats.pass_replays,
                     # per superstep, median over the turns: which levels each side wins
                     "superstep_seconds": [
                         round(median([r.stats.supersteps[k].seconds.get("edges", 0.0)
                                       for _, r in done]), 6) for k in range(len(steps))],
                     "superstep_active": [int(s.active) for s in steps],
                     "superstep_bytes_h2d": [int(s.bytes_h2d) for s in steps]}
    return out


def traversed_edges(g, levels) -> int:
    """Graph500's traversed edges of a BFS (the numerator of its TEPS): the out-edges of the
    vertices it reached (``levels`` finite)."""
    import numpy as np

    reached = np.isfinite(np.asarray(levels, np.float64))
    return int(np.asarray(g.degrees(direction="out"))[reached].sum())


def bfs_levels_valid(ctx: Ctx, g, levels, source: int) -> bool:
    """Whether ``levels`` (float64 (N,), ``inf`` where unreached) are the BFS levels from
    ``source`` (internal id), checked on the check's device over every edge ``u -> v``:
    ``level[v] <= level[u] + 1``, and every reached vertex but the source (level 0) has an
    in-neighbour one level up."""
    import torch

    from graphsys.bsp.device_stream import device_adjacency

    dev = torch.device(ctx.device)
    [(ptr, idx)], _ = device_adjacency(g, g.edge_set(None).name, dev, ("csr",))
    lv = torch.from_numpy(levels).to(dev)
    n, idx = lv.numel(), idx.long()
    rows = torch.repeat_interleave(torch.arange(n, device=dev), (ptr[1:] - ptr[:-1]).long(),
                                   output_size=idx.numel())
    up, down = lv[rows], lv[idx]
    has_parent = torch.zeros(n, dtype=torch.bool, device=dev)
    has_parent[idx[down == up + 1]] = True
    reached = torch.isfinite(lv)
    return bool((down <= up + 1).all()) and float(lv[source]) == 0.0 and bool(
        (has_parent | ~reached | (lv == 0)).all()) and int((lv == 0).sum()) == 1


def spmv_peer(ctx: Ctx, g, reps: int) -> dict:
    """torch's CSR SpMV ``y = Aᵀ x`` (float64, one entry per stored edge, duplicates kept:
    the matrix graphsys's pull scans) on the check's device: cuSPARSE on CUDA."""
    import numpy as np
    import torch

    dev = torch.device(ctx.device)
    src, dst = [], []
    for s, d, _, _ in g.iter_edges():
        src.append(np.asarray(s))
        dst.append(np.asarray(d))
    n = g.num_nodes()
    s_t = torch.from_numpy(np.concatenate(src).astype(np.int64)).to(dev)
    d_t = torch.from_numpy(np.concatenate(dst).astype(np.int64)).to(dev)
    del src, dst
    order = torch.argsort(d_t, stable=True)
    col = s_t[order]
    crow = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    torch.cumsum(torch.bincount(d_t, minlength=n), 0, out=crow[1:])
    del s_t, d_t, order
    with warnings.catch_warnings():  # "beta" and invariant-check notices of sparse CSR
        warnings.simplefilter("ignore", UserWarning)
        a = torch.sparse_csr_tensor(crow, col, torch.ones(len(col), dtype=torch.float64,
                                                           device=dev), (n, n))
    x = torch.rand(n, dtype=torch.float64, device=dev)
    times = []
    for k in range(reps + 2):
        ctx.sync()
        t0 = time.perf_counter()
        y = a @ x
        ctx.sync()
        if k >= 2:
            times.append(time.perf_counter() - t0)
    sec = median(times)
    return {"peer": f"torch {torch.__version__} sparse CSR SpMV"
                    + (f" (cuSPARSE, CUDA {torch.version.cuda})" if ctx.cuda else " (CPU)"),
            "nnz": int(len(col)), "median_seconds": sec, "reps": reps,
            "edges_per_s": round(len(col) / sec) if sec else None,
            "checksum": float(y.sum())}


def stream_figures(stats, figs: dict) -> dict:
    """Of an out-of-core run: bytes of edges kept in device memory after the first
    superstep, bytes copied host to device in the median superstep after it (the streamed
    ones), and the rate of those copies over the superstep's seconds (GB/s, the figure to
    hold against the bus's limit); empty for another mode."""
    if stats.mode != "out-of-core":
        return {}
    sec = figs["median_seconds"]
    return {"resident_bytes": stats.resident_bytes, "pass_replays": stats.pass_replays,
            "streamed_bytes_per_superstep": figs["median_bytes_h2d"],
            "streamed_gb_per_s": round(figs["median_bytes_h2d"] / sec / 1e9, 2) if sec else None}


def bus_copy(ctx: Ctx, nbytes: int, reps: int = 5) -> dict:
    """The bus's host-to-device rate in this run: a plain ``copy_`` of ``nbytes`` from a
    pinned host buffer to the device, median of ``reps`` after one warm copy."""
    import torch

    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=ctx.device)
    times = []
    for k in range(reps + 1):
        ctx.sync()
        t0 = time.perf_counter()
        dev.copy_(host, non_blocking=True)
        ctx.sync()
        if k:
            times.append(time.perf_counter() - t0)
    sec = median(times)
    return {"bytes": nbytes, "median_seconds": sec, "reps": reps,
            "gb_per_s": round(nbytes / sec / 1e9, 2)}


def streamed_row(ctx: Ctx, label: str, stream: dict) -> None:
    """Streamed PageRank's copy rate beside a plain pinned copy of the same bytes (the
    bus's rate, measured in the same run)."""
    nbytes = int(stream.get("streamed_bytes_per_superstep") or 0)
    if not ctx.cuda or not nbytes or not stream.get("streamed_gb_per_s"):
        return
    bus = ctx.attempt("bus-copy", bus_copy, ctx, nbytes)
    if bus is None:
        return
    ctx.record("bus-copy", **bus)
    ctx.record("row-pagerank-streamed-bus", row={
        "workload": f"PageRank, {label}, streamed from the host every superstep "
                    f"(device_budget=0): bytes copied host to device per second of superstep "
                    f"({nbytes:,} bytes a superstep)",
        "peer": "a plain pinned-memory copy_ of the same bytes to the device (the bus), "
                "same run", "peer_figure": bus["gb_per_s"],
        "graphsys_figure": stream["streamed_gb_per_s"], "unit": "GB/s",
        "ratio": ratio(stream["streamed_gb_per_s"], bus["gb_per_s"])})


def pagerank_row(label: str, where: str, figs: dict, peer: dict, method: str = "") -> dict:
    """The results-page row of a PageRank run (:func:`superstep_figures`; ``method``: its
    stats') beside the SpMV peer: milliseconds per iteration, medians of its steady
    supersteps."""
    wide = re.search(r"float64 from superstep \d+", method)
    run = (f"{len(figs['supersteps'])} supersteps"
           + (f" (float32, {wide.group(0)})" if wide else "")
           + f", {'converged' if figs['converged'] else 'not converged'}, "
           f"median of supersteps {figs['steady_from']}..")
    if wide and figs.get("float64_median_seconds") is not None:
        run += (f"{figs['float64_from'] - 1} (the float32 ones; the float64 ones' "
                f"{figs['float64_median_seconds'] * 1e3:.3f} ms)")
    return {"workload": f"PageRank, {label}, {where}, time per iteration (torch backend; "
                        f"{int(figs['median_bytes_h2d']):,} bytes host to device per "
                        f"superstep; {run})",
            "peer": peer["peer"], "peer_figure": round(peer["median_seconds"] * 1e3, 3),
            "graphsys_figure": round(figs["median_seconds"] * 1e3, 3), "unit": "ms",
            "ratio": ratio(peer["median_seconds"], figs["median_seconds"])}


#: tol of the in-memory PageRank runs (float64 ranks below 1e-6, float32 from it), run to
#: convergence within MEMORY_ITERS supersteps; the out-of-core ones run a fixed count
MEMORY_TOL = {"memory": 1e-10, "memory-float32": 1e-6}
MEMORY_ITERS = 100


def ordered_pagerank(ctx: Ctx, bsp, g, label: str, where: str, peer: dict | None) -> None:
    """The float32 in-memory PageRank again with the vertices relabelled by out-degree
    (``pagerank_device.DEGREE_ORDER``), its record and its row beside the SpMV peer."""
    from graphsys.bsp.algorithms import pagerank_device

    pagerank_device.DEGREE_ORDER = True
    try:
        t0 = time.perf_counter()
        res = ctx.attempt("pagerank-memory-float32-ordered", bsp.pagerank, g,
                          tol=MEMORY_TOL["memory-float32"], max_iters=MEMORY_ITERS,
                          mode="memory", device=ctx.device, backend="torch", weighted=False)
    finally:
        pagerank_device.DEGREE_ORDER = False
    if res is None:
        return
    figs = superstep_figures(res.stats)
    figs["converged"] = res.stats.converged
    ctx.record("pagerank-memory-float32-ordered", graph=label, backend="torch",
               method=res.stats.method, wall_s=round(time.perf_counter() - t0, 3),
               **lean_counts(res.stats.method), **figs,
               note="the vertices relabelled by decreasing out-degree (hub sorting) before "
                    "the supersteps; the ranks back in the graph's order")
    if peer is not None:
        ctx.record("row-pagerank-memory-float32-ordered", row=pagerank_row(
            label, where + ", vertices relabelled by decreasing out-degree", figs, peer,
            res.stats.method))


def part_bsp(ctx: Ctx) -> None:
    from graphsys import bsp

    edges = ctx.args.bsp_edges or (200_000 if ctx.tiny else 100_000_000)
    nodes = 1 << (14 if ctx.tiny else 23 if edges <= 200_000_000 else 25)
    parts = 4 if ctx.tiny else 8 if edges <= 200_000_000 else 16
    iters = 3 if ctx.tiny else 5  # out of core: superstep 0 uploads, then steady ones
    g, built = build_rmat(ctx, nodes, edges, parts)
    ctx.record("graph", kind="R-MAT (Graph500 a, b, c = 0.57, 0.19, 0.19), seed 1",
               nodes=g.num_nodes(), edges=g.num_edges(), partitions=parts, **built)
    deg = g.degrees(direction="out")
    hub = g.to_original([int(deg.argmax())])
    hub = hub.tolist()[0] if hasattr(hub, "tolist") else hub.to_pylist()[0]
    label = f"R-MAT {edges / 1e6:g}M edges"
    where = {"memory": f"held in {'GPU' if ctx.cuda else 'device'} memory",
             "out-of-core": "read out of core from the host buckets, uploaded once and laid "
                            "out on the device as in memory where they fit (device_budget "
                            "default; else kept after the first superstep as they fit)",
             "out-of-core-streamed": "streamed from the host every superstep "
                                     "(device_budget=0: copied from a pinned host cache "
                                     "written in the first superstep, copies overlapped "
                                     "with compute)"}
    where["memory-float32"] = where["memory"] + ", float32 ranks (tol 1e-6)"
    where["pagerank-memory"] = where["memory"] + ", float64 ranks (tol 1e-10)"
    peer = bfs_levels = None
    #: mode -> (its words, figures, method), for a row once the peer is measured
    pagerank: dict[str, tuple[str, dict, str]] = {}
    # most telling first: PageRank in memory, its SpMV peer, then streamed, then BFS
    for algo, mode in (("pagerank", "memory"), ("peer", None), ("pagerank", "memory-float32"),
                       ("pagerank", "out-of-core"), ("pagerank", "out-of-core-streamed"),
                       ("bfs", "memory"), ("bfs", "out-of-core")):
        if algo != "peer" and ctx.left() < 15:
            ctx.record(f"{algo}-{mode}", status="skipped", reason="out of time")
            continue
        if algo == "peer":
            peer = ctx.attempt("spmv-peer", spmv_peer, ctx, g, reps=3 if ctx.tiny else 10)
            if peer is not None:
                ctx.record("spmv-peer", graph=label, **peer)
                for done, (text, figs, method) in pagerank.items():
                    ctx.record(f"row-pagerank-{done}", row=pagerank_row(label, text, figs,
                                                                        peer, method))
            continue
        t0 = time.perf_counter()
        run_mode = mode.split("-")[0] if mode.startswith("memory") else "out-of-core"
        budget = 0 if mode == "out-of-core-streamed" else None  # None: the default budget
        if algo == "pagerank":  # in memory: the lean supersteps, run to convergence
            res = ctx.attempt(f"{algo}-{mode}", bsp.pagerank, g,
                              tol=MEMORY_TOL.get(mode, 1e-30),
                              max_iters=MEMORY_ITERS if run_mode == "memory" else iters,
                              mode=run_mode, device=ctx.device, backend="torch",
                              weighted=False, device_budget=budget)
        else:
            res = ctx.attempt(f"{algo}-{mode}", bsp.bfs, g, hub, mode=mode, device=ctx.device,
                              backend="torch", schedule="sync")
        if res is None:
            continue
        what = where.get(f"{algo}-{mode}", where[mode])
        figs = superstep_figures(res.stats)
        figs["converged"] = res.stats.converged
        stream = stream_figures(res.stats, figs)
        ctx.record(f"{algo}-{mode}", graph=label, backend="torch", method=res.stats.method,
                   wall_s=round(time.perf_counter() - t0, 3), **lean_counts(res.stats.method),
                   **stream, **figs,
                   note=f"{algo} {what}; edges/s = median edges scanned per superstep"
                        f" / median superstep seconds (supersteps steady_from..)")
        if algo == "pagerank" and mode == "out-of-core-streamed":
            ctx.record("fused-split", packings=fused_splits())
            streamed_row(ctx, label, stream)   # its row: the copy rate beside the bus's
        elif algo == "pagerank" and peer is not None:
            ctx.record(f"row-pagerank-{mode}", row=pagerank_row(label, what, figs,
                                                                 peer, res.stats.method))
        elif algo == "pagerank":
            pagerank[mode] = (what, figs, res.stats.method)
        if algo == "bfs" and mode == "memory":
            bfs_warm_check(ctx, bsp, g, hub, label, res)
            bfs_levels = res.values
        if algo == "bfs":
            total = sum(s["edges"] for s in figs["supersteps"])
            secs = sum(s["seconds"] for s in figs["supersteps"])
            traversed = traversed_edges(g, res.values)
            upload = ""
            if mode != "memory":  # out of core, the read and upload of the edges count
                secs += figs["setup_s"]
                upload = f", its setup included ({figs['setup_s']} s: reading and uploading"
                upload += " the edges)"
            ctx.record(f"row-bfs-{mode}", row={
                "workload": f"BFS from the highest-degree vertex, {label}, {where[mode]}: "
                            f"traversed edges per second over the run (Graph500's TEPS: the "
                            f"reached vertices' {traversed:,} out-edges; "
                            f"{len(figs['supersteps'])} supersteps{upload}, {secs * 1e3:.3f} "
                            f"ms; {total:,} edges scanned, "
                            f"{total / secs if secs else 0:,.0f} a second)",
                "peer": None, "peer_figure": None,
                "graphsys_figure": round(traversed / secs) if secs else None, "unit": "TEPS",
                "ratio": None})
    if ctx.left() >= 15:  # the float32 run with the vertices in degree order
        ordered_pagerank(ctx, bsp, g, label, where["memory-float32"], peer)
    if ctx.left() >= 20:  # diagnostics last: no row waits on them
        unmerged = ctx.attempt("pagerank-out-of-core-unmerged", unmerged_pass, ctx, bsp, g,
                               iters)
        if unmerged is not None:
            ctx.record("pagerank-out-of-core-unmerged", graph=label, **unmerged,
                       note="every batch kept on the device, not merged: the streamed "
                            "pass's compute without its copies")
    for name, switches, note in STREAMED_VARIANTS:
        if ctx.left() < 20:
            break
        variant = ctx.attempt(f"pagerank-out-of-core-streamed-{name}", streamed_with, ctx,
                              bsp, g, iters, **switches)
        if variant is not None:
            ctx.record(f"pagerank-out-of-core-streamed-{name}", graph=label, **variant,
                       note=note)
    if bfs_levels is not None and ctx.left() >= 10:
        prof = ctx.attempt("bfs-level-profile", bfs_level_profile, ctx, bsp, g, hub)
        if prof is not None:
            ctx.record("bfs-level-profile", graph=label, **prof)
    if bfs_levels is not None and ctx.left() >= 15:
        policies = ctx.attempt("bfs-direction-policies", bfs_direction_policies, ctx, bsp, g,
                               hub, bfs_levels)
        if policies is not None:
            ctx.record("bfs-direction-policies", graph=label, policies=policies,
                       left_out=[k for k in [*BFS_POLICIES, *PROBES, *PULL_COSTS]
                                 if k not in policies],
                       note="the device BFS's switch rule, alpha and beta divided by each "
                            "factor; then the cost of a bottom-up step over the unreached "
                            "vertices' in-edges alone against the whole product's; then "
                            "the bottom-up probe of each unreached vertex's first in-edges "
                            "off, or of 2 or 8 of them (default 4)")
    if ctx.left() >= 25:
        active = ctx.attempt("bfs-active-edges", active_edge_bfs, ctx, bsp)
        if active is not None:
            ctx.record("bfs-active-edges", **active)
            ctx.record("row-bfs-active-edges", row={
                "workload": f"BFS from the highest-degree vertex out of core, streamed every "
                            f"superstep (device_budget=0), {active['graph']}: run seconds "
                            f"with its frontier supersteps reading only their senders' index "
                            f"rows, or the unreached vertices' in-edges "
                            f"({active['active']['bytes_h2d']:,} bytes to the device "
                            f"against {active['streamed']['bytes_h2d']:,}; supersteps "
                            f"{active['active']['directions']}), median of {ACTIVE_TURNS}",
                "peer": "the same run streaming every bucket of the senders' partitions "
                        "(active_edges.ACTIVE_EDGES = False), alternated",
                "peer_figure": active["streamed"]["median_s"],
                "graphsys_figure": active["active"]["median_s"], "unit": "s",
                "ratio": ratio(active["streamed"]["median_s"], active["active"]["median_s"])})


# -- gnn ----------------------------------------------------------------------------------

HIDDEN, FANOUTS, BATCH, LR, DROPOUT = 256, (15, 10), 1024, 0.003, 0.5


def sbm_arrays(ctx: Ctx, nodes: int, edges: int, features: int, classes: int) -> dict:
    """The CPU GNN benchmark's inputs: a labelled SBM (``edges / 2`` undirected pairs stored
    both ways), Gaussian features, 100k training seeds (scaled down with the graph) and 20k
    test nodes; CSR of in-neighbours. Generated with :func:`graphsys.generators.sbm`."""
    import numpy as np
    import scipy.sparse as sp

    from graphsys.generators import sbm

    t0 = time.perf_counter()
    train = min(100_000, nodes // 10)
    model = sbm(nodes, edges // 2, blocks=classes, features=features, feature_noise=8.0,
                train_per_class=train // classes, num_val=0,
                num_test=min(20_000, nodes // 5), seed=0)
    feat = np.empty((nodes, features), np.float32)
    label = np.empty(nodes, np.int64)
    tr, te = [], []
    for chunk in model.nodes():
        ids = chunk["id"]
        feat[ids] = chunk["feat"]
        label[ids] = chunk["label"]
        tr.append(ids[chunk["train_mask"]])
        te.append(ids[chunk["test_mask"]])
    src = np.concatenate([c["src"] for c in model.edges()]).astype(np.int64)
    dst = np.concatenate([c["dst"] for c in model.edges()]).astype(np.int64)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    adj = sp.csr_matrix((np.ones(len(src), np.float32), (dst, src)), shape=(nodes, nodes))
    adj.sort_indices()  # row v: the in-neighbours of v (duplicates summed, as the CPU bench)
    return {"src": src, "dst": dst, "indptr": adj.indptr.astype(np.int64),
            "indices": adj.indices.astype(np.int64), "feat": feat, "label": label,
            "train": np.sort(np.concatenate(tr)), "test": np.sort(np.concatenate(te)),
            "classes": classes, "generate_s": round(time.perf_counter() - t0, 1)}


class GpuUtilisation:
    """Samples the GPU's utilisation (NVML, every 50 ms) in a thread while in use."""

    def __init__(self, ctx: Ctx):
        self.samples: list[int] = []
        self.reason = None
        self.handle = None
        self._stop = threading.Event()
        if not ctx.cuda:
            self.reason = "not a CUDA run"
            return
        try:
            import pynvml
            import torch

            pynvml.nvmlInit()
            index = torch.cuda.current_device()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = pynvml
        except Exception as exc:  # nvidia-ml-py missing or NVML unusable
            self.reason = f"NVML unavailable ({type(exc).__name__}: {exc})"

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(Exception):
                self.samples.append(
                    self._nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

    def __enter__(self):
        if self.handle is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self.handle is not None:
            self._thread.join()

    def summary(self) -> dict:
        if not self.samples:
            return {"gpu_utilisation": None, "gpu_utilisation_note": self.reason}
        return {"gpu_utilisation_mean": round(sum(self.samples) / len(self.samples), 1),
                "gpu_utilisation_median": median(self.samples),
                "gpu_utilisation_samples": len(self.samples)}


def unsynced_epoch(ctx: Ctx, batches, step) -> float:
    """Seconds of a pass of ``step(batch)`` over ``batches`` synchronised with the GPU at
    its end only, as a training loop runs (the next step is queued while one runs)."""
    t0 = time.perf_counter()
    for batch in batches:
        step(batch)
    ctx.sync()
    return round(time.perf_counter() - t0, 3)


#: CUDA runtime calls and device activities a step profile counts
RUNTIME_CALLS = ("cudaLaunch", "cudaMemcpy", "cudaStreamSynchronize", "cudaDeviceSynchronize",
                 "cudaEventSynchronize", "cuLaunch", "cudaGraphLaunch", "cudaMemset",
                 "Memcpy HtoD", "Memcpy DtoH")


def step_profile(ctx: Ctx, batches, step, n: int = 10) -> dict:
    """torch.profiler over ``n`` steps after two warm ones: the operators taking the most
    device and host time, and the CUDA runtime calls that launch, copy and wait."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    it = iter(batches)
    for _ in range(2):
        step(next(it))
    ctx.sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step(next(it))
        ctx.sync()
    events = prof.key_averages()

    def top(key: str, k: int = 12) -> list:
        rows = sorted(events, key=lambda e: getattr(e, key), reverse=True)[:k]
        return [[e.key[:60], e.count, round(getattr(e, key) / n, 1)] for e in rows]

    runtime = {e.key: e.count / n for e in events if e.key.startswith(RUNTIME_CALLS)}
    return {"steps": n, "per_step_us": "self time per step, microseconds",
            "top_device": top("self_device_time_total"), "top_host": top("self_cpu_time_total"),
            "runtime_calls_per_step": runtime, "torch": torch.__version__}


#: CUDA runtime calls and device activities of a profiled step (:func:`step_profile`'s
#: ``runtime_calls_per_step``) counted as a kernel launch (a CUDA graph's replay is one),
#: a copy across the bus, and a host wait for the device
STEP_LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC",
                 "cuLaunchKernelEx", "cudaGraphLaunch", "cudaMemsetAsync")
STEP_TRANSFERS = ("Memcpy HtoD", "Memcpy DtoH")
STEP_SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def step_counts(prof: dict) -> dict:
    """Launches, copies across the bus and host waits per step of a :func:`step_profile`
    record (the profile's own closing synchronisation, one over its steps, left out)."""
    calls = prof["runtime_calls_per_step"]

    def total(names) -> float:
        return sum(v for k, v in calls.items() if k.startswith(names))

    closing = 1 / prof["steps"]
    return {"launches": round(total(STEP_LAUNCHES), 2),
            "transfers": round(total(STEP_TRANSFERS), 2),
            "syncs": round(max(0.0, total(STEP_SYNCS) - closing), 2)}


def step_counts_row(counts: dict, shape: str, sampler: str) -> dict:
    """The results-page row of a GraphSAGE step's :func:`step_counts`."""
    return {"workload": f"kernel launches per GraphSAGE training step, {shape} ({sampler}; "
                        f"NodeLoader's default; torch.profiler over 10 steps, a CUDA graph's "
                        f"replay one launch); copies across the bus {counts['transfers']} "
                        f"and host waits {counts['syncs']} a step",
            "peer": None, "peer_figure": None, "graphsys_figure": counts["launches"],
            "unit": "launches", "ratio": None}


def timed_epoch(ctx: Ctx, batches, step, max_steps: int | None) -> dict:
    """Run ``step(batch)`` over ``batches``; per step the seconds waiting for the next
    batch and the seconds of the step (synchronised with the GPU)."""
    waits, steps = [], []
    it = iter(batches)
    t_epoch = time.perf_counter()
    with GpuUtilisation(ctx) as util:
        while max_steps is None or len(steps) < max_steps:
            t0 = time.perf_counter()
            batch = next(it, None)
            t1 = time.perf_counter()
            if batch is None:
                break
            step(batch)
            ctx.sync()
            waits.append(t1 - t0)
            steps.append(time.perf_counter() - t1)
    epoch = time.perf_counter() - t_epoch
    total = sum(waits) + sum(steps)
    return {"epoch_s": round(epoch, 3), "steps": len(steps),
            "wait_share": round(sum(waits) / total, 4) if total else None,
            "median_wait_share": median([w / (w + s) for w, s in zip(waits, steps)]),
            "median_step_s": median(steps), **util.summary()}


def gnn_graphsys(ctx: Ctx, d: dict, steps: int | None, workers: int,
                 device_sampling: bool | str = False, profile: bool = True) -> dict:
    """graphsys's GraphSAGE epoch: batches from the CPU sampler (``workers`` threads) or,
    with ``device_sampling``, drawn on the check's device (DeviceNeighborSampler: the same
    blocks; on CUDA the features and labels gathered there, each batch a CUDA graph
    replay, NodeLoader's default); ``"eager"``: the device sampler without CUDA graphs,
    one launch per operator; ``"uva"`` or ``"staged"``: its neighbour
    ids left in host memory (read through UVA, or gathered on the host and staged), the
    first batch's blocks compared with the CPU sampler's (``same_blocks``). ``profile``:
    the default's steps also profiled on CUDA (:func:`step_profile`)."""
    import torch
    import torch.nn.functional as F

    from graphsys.gnn import GNN, NodeLoader
    from graphsys.gnn.loader import on_device
    from graphsys.gnn.optim import fused_adam
    from graphsys.sampling import Adjacency, NeighborSampler

    dev = torch.device(ctx.device)
    torch.manual_seed(0)
    adj = Adjacency(d["indptr"], d["indices"], len(d["indptr"]) - 1)
    sampler = NeighborSampler(adj, list(FANOUTS))
    cpu_sampler = sampler
    if device_sampling in ("eager", "uva", "staged"):
        from graphsys.sampling import DeviceNeighborSampler

        sampler = (DeviceNeighborSampler(sampler, device=dev, cuda_graphs=False)
                   if device_sampling == "eager" else
                   DeviceNeighborSampler(sampler, device=dev, csr=device_sampling))
    label = torch.from_numpy(d["label"])
    model = GNN("sage", d["feat"].shape[1], HIDDEN, d["classes"], num_layers=2,
                dropout=DROPOUT).to(dev)
    opt = fused_adam(model.parameters(), lr=LR)     # gnn.train's: one fused update

    def loader(ids, shuffle, dropout=0.0):
        return NodeLoader(None, sampler, ids, batch_size=BATCH, shuffle=shuffle, seed=0,
                          features=d["feat"], labels=label, input_dropout=dropout,
                          device=dev, num_workers=workers,
                          device_sampling=bool(device_sampling))

    def step(batch):
        loss = F.cross_entropy(model(batch.blocks, batch.x, input_dropout=False), batch.y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    model.train()
    timed_epoch(ctx, loader(d["train"], True, DROPOUT), step, 3)  # warm-up
    out = timed_epoch(ctx, loader(d["train"], True, DROPOUT), step, steps)
    if device_sampling is True:     # the loader's default on CUDA
        out["epoch_unsynced_s"] = unsynced_epoch(ctx, loader(d["train"], True, DROPOUT),
                                                 step)
        if ctx.cuda and profile:
            prof = ctx.attempt("gnn-step-profile", step_profile, ctx,
                               loader(d["train"], True, DROPOUT), step)
            if prof is not None:
                ctx.record("gnn-step-profile", **prof)
                out["step_counts"] = step_counts(prof)
    model.eval()
    right = 0
    with torch.no_grad():
        for batch in loader(d["test"], False):
            right += int((model(batch.blocks, batch.x).argmax(1) == batch.y).sum())
    out["test_accuracy"] = round(right / len(d["test"]), 4)
    out["sampler_workers"] = workers
    graphs = getattr(on_device(sampler, dev, bool(device_sampling)), "cuda_graphs", False)
    out["sampler"] = (f"DeviceNeighborSampler on {ctx.device}" + (
        ", CUDA graphs" if graphs else ", eager") if device_sampling else
                      f"NeighborSampler (numba, {workers} threads)")
    if device_sampling in ("uva", "staged"):
        out["sampler"] += f", neighbour ids in host memory (csr={sampler.csr})"
        out["csr"] = sampler.csr
        out["same_blocks"] = same_blocks(sampler, cpu_sampler, d["train"][:BATCH])
    return out


def gnn_step_graph(ctx: Ctx, d: dict, epochs: int = 3) -> dict:
    """graphsys's GraphSAGE epoch with each step one CUDA graph replay
    (:class:`graphsys.gnn.NodeStepGraph`: the padded sample, the gathers, the model and the
    update recorded once; on the CPU the same operators run eagerly): the first epoch
    (its warm-up steps and the recording), then the median of the next ``epochs - 1``,
    each synchronised at its end only (its totals' read); the last one profiled on CUDA
    for its launches, copies and host waits a step; the test accuracy of
    :func:`gnn_graphsys`' evaluation (exact blocks)."""
    import torch

    from graphsys.gnn import GNN, NodeLoader, NodeStepGraph
    from graphsys.gnn.optim import fused_adam
    from graphsys.sampling import Adjacency, NeighborSampler

    dev = torch.device(ctx.device)
    torch.manual_seed(0)
    adj = Adjacency(d["indptr"], d["indices"], len(d["indptr"]) - 1)
    model = GNN("sage", d["feat"].shape[1], HIDDEN, d["classes"], num_layers=2,
                dropout=DROPOUT).to(dev)
    t0 = time.perf_counter()
    steps = NodeStepGraph(model, fused_adam(model.parameters(), lr=LR),
                          NeighborSampler(adj, list(FANOUTS)), d["feat"], d["label"],
                          batch_size=BATCH)
    setup = time.perf_counter() - t0
    times, res = [], []
    with warnings.catch_warnings(record=True) as caught:     # a recording that failed
        warnings.simplefilter("always")
        for epoch in range(epochs):
            t0 = time.perf_counter()
            res.append(steps.epoch(d["train"], epoch))
            times.append(time.perf_counter() - t0)
    out = {"epoch_s": round(median(times[1:]), 4), "first_epoch_s": round(times[0], 3),
           "epochs_s": [round(t, 4) for t in times], "setup_s": round(setup, 3),
           "steps": res[-1]["steps"], "captured": steps.captured,
           "train_loss": [round(r["loss"], 4) for r in res],
           "sampler": f"NodeStepGraph on {ctx.device}"
                      + (", one CUDA graph a step" if steps.captured else ", eager"),
           "warnings": [str(w.message)[:300] for w in caught]}
    if ctx.cuda:        # the profile apart: its failure keeps the timings
        counts = ctx.attempt("step-graph-profile", step_graph_counts, steps, d["train"],
                             epochs)
        if counts is not None:
            out["step_counts"] = counts
    out["epochs_trained"] = steps.steps / max(out["steps"], 1)
    model.eval()
    right = 0
    loader = NodeLoader(None, steps.sampler, d["test"], batch_size=BATCH, shuffle=False,
                        features=d["feat"], labels=torch.from_numpy(d["label"]), device=dev,
                        num_workers=1)
    with torch.no_grad():
        for batch in loader:
            right += int((model(batch.blocks, batch.x).argmax(1) == batch.y).sum())
    out["test_accuracy"] = round(right / len(d["test"]), 4)
    return out


def step_graph_counts(steps, train, epoch: int) -> dict:
    """Launches, copies across the bus and host waits a step of a NodeStepGraph epoch
    under torch.profiler (:func:`step_counts`; the epoch's one read at its end is the
    closing synchronisation it leaves out)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        done = steps.epoch(train, epoch)
    n = done["steps"]
    runtime = {e.key: e.count / n for e in prof.key_averages()
               if e.key.startswith(RUNTIME_CALLS)}
    return step_counts({"runtime_calls_per_step": runtime, "steps": n})


def step_graph_row(ctx: Ctx, d: dict, on_dev: dict | None, shape: str) -> None:
    """:func:`gnn_step_graph`'s record, and its row beside NodeLoader's default epoch
    ``on_dev`` as a training loop runs it (synchronised at its end)."""
    graphed = ctx.attempt("graphsys-step-graph", gnn_step_graph, ctx, d)
    if graphed is None:
        return
    ctx.record("graphsys-step-graph", model="graphsys GNN('sage'), NodeStepGraph", **graphed)
    if on_dev is None:
        return
    peer = on_dev.get("epoch_unsynced_s", on_dev["epoch_s"])
    counts = graphed.get("step_counts")
    ctx.record("row-epoch-step-graph", row={
        "workload": f"GraphSAGE minibatch epoch, each step one CUDA graph (NodeStepGraph, "
                    f"gnn.train's default on CUDA: "
                    f"padded sample, gathers, model, loss, backward, Adam), {shape} "
                    f"({graphed['steps']} steps, {graphed['sampler']}"
                    + (f"; {counts['launches']} launches, {counts['transfers']} copies "
                       f"across the bus and {counts['syncs']} host waits a step"
                       if counts else "")
                    + f"; test accuracy {graphed['test_accuracy']} vs "
                      f"{on_dev['test_accuracy']})",
        "peer": f"graphsys NodeLoader's default ({on_dev['sampler']}), the same run, "
                f"synchronised at the epoch's end",
        "peer_figure": peer, "graphsys_figure": graphed["epoch_s"], "unit": "s",
        "ratio": ratio(peer, graphed["epoch_s"])})


def device_sampler_counts(ctx: Ctx, d: dict) -> None:
    """One GraphSAGE batch of the device sampler on the check's device, counted
    (DeviceWorkCounter: launches, transfers, syncs; on the CPU the device emulated), with
    its picks fused into one kernel a layer where that kernel was made (CUDA); then, as
    NodeLoader makes it (``cuda_graphs=None``: on CUDA a graph replay), from host seeds."""
    import torch

    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.sampling import Adjacency, DeviceNeighborSampler, NeighborSampler

    adj = Adjacency(d["indptr"], d["indices"], len(d["indptr"]) - 1)
    cpu = NeighborSampler(adj, list(FANOUTS))
    dev = DeviceNeighborSampler(cpu, device=torch.device(ctx.device))
    seeds = d["train"][:BATCH]
    dev.sample_blocks(seeds, 0)
    with DeviceWorkCounter(ctx.device, device_tensors=[dev.table, dev.indices]) as c:
        dev.sample_blocks(seeds, 1)
    ctx.record("device-sampler-counts", fused=dev.fused, csr=dev.csr, **c.summary(),
               ops=dict(c.ops), same_blocks=same_blocks(dev, cpu, seeds))
    dev = DeviceNeighborSampler(cpu, device=torch.device(ctx.device), cuda_graphs=None)
    dev.sample_blocks(seeds, 0)                  # records the graph of this batch size
    with DeviceWorkCounter(ctx.device, device_tensors=[dev.table, dev.indices]) as c:
        dev.sample_blocks(seeds, 1)
    ctx.record("device-sampler-loader-counts", cuda_graphs=dev.cuda_graphs, **c.summary(),
               ops=dict(c.ops))


def same_blocks(dev_sampler, cpu_sampler, seeds) -> bool:
    """Whether the device sampler draws the CPU sampler's blocks for ``seeds``."""
    import torch

    got = dev_sampler.sample_blocks(torch.as_tensor(seeds), 7)
    want = cpu_sampler.sample_blocks(seeds, 7)
    return all(torch.equal(a.src_nodes, b.src_nodes.cpu())
               and torch.equal(a.edge_src, b.edge_src.cpu())
               and torch.equal(a.edge_dst, b.edge_dst.cpu()) for a, b in zip(want, got))


def pyg_sampling_backend() -> str | None:
    """The neighbour-sampling library PyG's NeighborLoader needs, when installed."""
    try:
        import torch_geometric.typing as pt
    except ImportError:
        return None
    return "pyg-lib" if pt.WITH_PYG_LIB else "torch-sparse" if pt.WITH_TORCH_SPARSE else None


def gnn_pyg(ctx: Ctx, d: dict, steps: int | None, workers: int) -> dict:
    """PyG's ``SAGEConv`` (mean aggregation, root weight) two-layer model on the same
    arrays: fed by ``NeighborLoader`` (num_neighbors 10, 15: hop 1 is the output layer's
    fanout) when pyg-lib or torch-sparse is installed, else by graphsys's sampler."""
    import torch
    import torch.nn.functional as F
    import torch_geometric
    from torch_geometric.nn import SAGEConv

    from graphsys.gnn import NodeLoader
    from graphsys.sampling import Adjacency, NeighborSampler

    dev = torch.device(ctx.device)
    torch.manual_seed(0)

    class SAGE(torch.nn.Module):
        def __init__(self, i, h, o):
            super().__init__()
            self.c1, self.c2 = SAGEConv(i, h), SAGEConv(h, o)

        def forward_edges(self, x, edge_index, input_dropout=True):
            x = F.dropout(x, DROPOUT, self.training and input_dropout)
            h = F.relu(self.c1(x, edge_index))
            return self.c2(F.dropout(h, DROPOUT, self.training), edge_index)

        def forward_blocks(self, blocks, x):
            h = x
            for k, (b, conv) in enumerate(zip(blocks, (self.c1, self.c2))):
                if k:
                    h = F.dropout(F.relu(h), DROPOUT, self.training)
                ei = torch.stack([b.edge_src, b.edge_dst])
                h = conv((h, h[:b.num_dst_nodes]), ei, size=(b.num_src_nodes, b.num_dst_nodes))
            return h

    model = SAGE(d["feat"].shape[1], HIDDEN, d["classes"]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    backend = pyg_sampling_backend()
    label = torch.from_numpy(d["label"])

    def train_step(out, y):
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    if backend is not None:
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader

        data = Data(x=torch.from_numpy(d["feat"]), y=label,
                    edge_index=torch.stack([torch.from_numpy(d["src"]),
                                            torch.from_numpy(d["dst"])]),
                    num_nodes=len(d["label"]))

        def loader(ids, shuffle):
            return NeighborLoader(data, num_neighbors=list(FANOUTS[::-1]), batch_size=BATCH,
                                  input_nodes=torch.from_numpy(ids), shuffle=shuffle,
                                  num_workers=workers, pin_memory=ctx.cuda)

        def step(batch):
            batch = batch.to(dev, non_blocking=True)
            n = batch.batch_size
            train_step(model.forward_edges(batch.x, batch.edge_index)[:n], batch.y[:n])

        def predict(batch):
            batch = batch.to(dev)
            n = batch.batch_size
            return model.forward_edges(batch.x, batch.edge_index)[:n].argmax(1), batch.y[:n]
        sampler_name = f"PyG NeighborLoader ({backend} {version(backend)}, {workers} workers)"
    else:
        adj = Adjacency(d["indptr"], d["indices"], len(d["indptr"]) - 1)
        sampler = NeighborSampler(adj, list(FANOUTS))

        def loader(ids, shuffle):  # the input dropout in the loader, as graphsys's side
            return NodeLoader(None, sampler, ids, batch_size=BATCH, shuffle=shuffle, seed=0,
                              features=d["feat"], labels=label, device=dev,
                              num_workers=workers, input_dropout=DROPOUT if shuffle else 0.0)

        def step(batch):
            train_step(model.forward_blocks(batch.blocks, batch.x), batch.y)

        def predict(batch):
            return model.forward_blocks(batch.blocks, batch.x).argmax(1), batch.y
        sampler_name = (("graphsys DeviceNeighborSampler (NodeLoader's default on CUDA)"
                         if ctx.cuda else "graphsys NeighborSampler")
                        + "; PyG's NeighborLoader needs pyg-lib or torch-sparse, neither "
                          "installed")
    model.train()
    timed_epoch(ctx, loader(d["train"], True), step, 3)  # warm-up
    out = timed_epoch(ctx, loader(d["train"], True), step, steps)
    out["epoch_unsynced_s"] = unsynced_epoch(ctx, loader(d["train"], True), step)
    model.eval()
    right = 0
    with torch.no_grad():
        for batch in loader(d["test"], False):
            pred, y = predict(batch)
            right += int((pred == y).sum())
    out.update(test_accuracy=round(right / len(d["test"]), 4), sampler=sampler_name,
               torch_geometric=torch_geometric.__version__)
    return out


def part_gnn(ctx: Ctx) -> None:
    if ctx.tiny:
        nodes, edges, features, classes, steps = 4000, 40_000, 16, 4, 6
    else:
        nodes, edges, features, classes, steps = 1_000_000, 25_000_000, 100, 8, None
    d = sbm_arrays(ctx, nodes, edges, features, classes)
    ctx.record("data", nodes=nodes, directed_edges=len(d["src"]), features=features,
               classes=classes, train=len(d["train"]), test=len(d["test"]),
               generate_s=d["generate_s"])
    workers = min(4, max(1, (os.cpu_count() or 2) // 4)) if ctx.cuda else 1
    host = ctx.attempt("graphsys", gnn_graphsys, ctx, d, steps, workers)
    if host is not None:
        ctx.record("graphsys", model="graphsys GNN('sage'), NodeLoader", **host)
    # the device sampler: one loader thread (its work is launching the device's ops)
    on_dev = ctx.attempt("graphsys-device-sampler", gnn_graphsys, ctx, d, steps, 1, True)
    if on_dev is not None:
        ctx.record("graphsys-device-sampler",
                   model="graphsys GNN('sage'), NodeLoader(device_sampling=True)", **on_dev)
    ctx.attempt("device-sampler-counts", device_sampler_counts, ctx, d)
    # the neighbour ids in pinned host memory (a CSR larger than the GPU): read through
    # UVA on CUDA; the CPU dry run exercises the staged gather instead
    csr = "uva" if ctx.cuda else "staged"
    far = ctx.attempt(f"graphsys-device-{csr}", gnn_graphsys, ctx, d, steps, 1, csr)
    if far is not None:
        ctx.record(f"graphsys-device-{csr}", model=f"graphsys GNN('sage'), NodeLoader("
                   f"DeviceNeighborSampler(csr={csr!r}))", **far)
    shape = (f"SBM {nodes:,} nodes / {len(d['src']):,} edges, {features} features, fanouts "
             f"15,10, batch 1024, hidden 256")
    if host is not None and on_dev is not None:
        ctx.record("row-device-sampler", row={
            "workload": f"GraphSAGE minibatch epoch sampled on the device "
                        f"(DeviceNeighborSampler, the CPU sampler's blocks), {shape} "
                        f"({on_dev['steps']} steps; waiting for the sampler "
                        f"{on_dev['wait_share']:.1%} of a step against "
                        f"{host['wait_share']:.1%}; test accuracy {on_dev['test_accuracy']} "
                        f"vs {host['test_accuracy']})",
            "peer": f"graphsys {host['sampler']}, the same run",
            "peer_figure": host["epoch_s"], "graphsys_figure": on_dev["epoch_s"],
            "unit": "s", "ratio": ratio(host["epoch_s"], on_dev["epoch_s"])})
    if on_dev is not None and "step_counts" in on_dev:
        ctx.record("row-gnn-step-launches", row=step_counts_row(
            on_dev["step_counts"], shape, on_dev["sampler"]))
    ours = on_dev if ctx.cuda else host     # NodeLoader's default sampler on this device
    if ctx.left() < (5 if ctx.tiny else 20):
        raise SystemExit("out of time before the PyG side")
    gnn_pyg_row(ctx, d, steps, workers, ours, shape)
    if ctx.left() >= (3 if ctx.tiny else 12):       # each step one CUDA graph
        step_graph_row(ctx, d, on_dev, shape)
    else:
        ctx.record("graphsys-step-graph", status="skipped", reason="out of time")
    if ctx.cuda:    # the same sampler without CUDA graphs: an operator a launch
        eager = ctx.attempt("graphsys-device-eager", gnn_graphsys, ctx, d, steps, 1,
                            "eager")
        if eager is not None:
            ctx.record("graphsys-device-eager", model="graphsys GNN('sage'), NodeLoader("
                       "DeviceNeighborSampler(cuda_graphs=False))", **eager)
    else:
        ctx.record("graphsys-device-eager", status="skipped",
                   reason="the default is eager off CUDA")
    if ctx.cuda and ctx.left() >= 15:    # the loader's workers on the step's own stream
        side_stream_record(ctx, d, steps, on_dev, shape)


def side_stream_record(ctx: Ctx, d: dict, steps, on_dev: dict | None, shape: str) -> None:
    """The default epoch again with the loader's worker on the step's stream
    (:func:`shared_stream_epoch`), and a record of both epochs and waits beside the default
    ``on_dev``."""
    shared = ctx.attempt("graphsys-device-shared-stream", shared_stream_epoch, ctx, d, steps)
    if shared is None:
        return
    ctx.record("graphsys-device-shared-stream", model="graphsys GNN('sage'), NodeLoader's "
               "default with SIDE_STREAM off", **shared)
    if on_dev is not None:  # a record beside the default's, not a row of the results page
        ctx.record("side-stream", epoch_s=on_dev["epoch_s"],
                   shared_stream_epoch_s=shared["epoch_s"], wait_share=on_dev["wait_share"],
                   shared_stream_wait_share=shared["wait_share"],
                   note=f"NodeLoader's default ({shape}): its worker draws on a side stream; "
                        f"shared_stream: the same loader with its worker on the step's stream")


def shared_stream_epoch(ctx: Ctx, d: dict, steps) -> dict:
    """NodeLoader's default epoch (:func:`gnn_graphsys`) with its worker enqueueing on the
    step's stream (``graphsys.gnn.loader.SIDE_STREAM`` off), to set beside the default,
    whose worker draws on a side stream."""
    from graphsys.gnn import loader

    loader.SIDE_STREAM = False
    try:
        return gnn_graphsys(ctx, d, steps, 1, True, profile=False)
    finally:
        loader.SIDE_STREAM = True


def gnn_pyg_row(ctx: Ctx, d: dict, steps, workers: int, ours: dict | None, shape: str
                ) -> None:
    """PyG's epoch on the same arrays and device, and the row beside ``ours``."""
    try:
        import torch_geometric  # noqa: F401
    except ImportError as exc:
        ctx.record("pyg", status="skipped", reason=f"torch_geometric not importable ({exc})")
        return
    peer = ctx.attempt("pyg", gnn_pyg, ctx, d, steps, workers)
    if peer is None or ours is None:
        return
    ctx.record("pyg", model="torch_geometric.nn.SAGEConv x 2", **peer)
    ctx.record("row-epoch", row={
        "workload": f"GraphSAGE minibatch epoch, {shape} ({ours['steps']} steps, "
                    f"{ours['sampler']}; waiting for "
                    f"the sampler {ours['wait_share']:.1%} of a step; test accuracy "
                    f"{ours['test_accuracy']} vs {peer['test_accuracy']})",
        "peer": f"PyG {peer['torch_geometric']} SAGEConv, {peer['sampler']}",
        "peer_figure": peer["epoch_s"], "graphsys_figure": ours["epoch_s"], "unit": "s",
        "ratio": ratio(peer["epoch_s"], ours["epoch_s"])})
    if "epoch_unsynced_s" in ours and "epoch_unsynced_s" in peer:  # a record, not a row
        ctx.record("epoch-unsynced", epoch_s=ours["epoch_unsynced_s"],
                   pyg_epoch_s=peer["epoch_unsynced_s"],
                   note=f"the epoch as a training loop runs it (the device synchronised at "
                        f"the epoch's end only), {shape} ({ours['sampler']})")


# -- embed --------------------------------------------------------------------------------


def tiny_kg(ctx: Ctx):
    """A generated knowledge graph with train / valid / test edge sets (the dry run)."""
    import numpy as np

    import graphsys

    out = ctx.work / "kg"
    if (out / "manifest.json").exists():
        return graphsys.open_graph(out)
    rng = np.random.default_rng(0)
    n, rels = 300, 4
    heads = rng.integers(0, n, 6000)
    r = rng.integers(0, rels, 6000)
    tails = (heads // 4 * 4 + 4 * (r + 1) + rng.integers(0, 4, 6000)) % n
    rows = sorted(set(zip(heads.tolist(), r.tolist(), tails.tolist())))
    rng.shuffle(rows)
    k = len(rows) // 10
    parts = {"test": rows[:k], "valid": rows[k:2 * k], "train": rows[2 * k:]}
    for name, part in parts.items():
        (ctx.work / f"{name}.tsv").write_text("".join(f"e{h}\tr{x}\te{t}\n"
                                                      for h, x, t in part))
    for k, name in enumerate(("train", "valid", "test")):
        graphsys.ingest(ctx.work / f"{name}.tsv", out, src_col=0, rel_col=1, dst_col=2,
                        edge_set=name, append=k > 0)
    return graphsys.open_graph(out)


def fb15k237(ctx: Ctx):
    from graphsys.datasets import load_dataset

    if ctx.data is None or not (ctx.data / "fb15k-237").is_dir():
        where = "no --data given" if ctx.data is None else f"no {ctx.data}/fb15k-237"
        raise Skip(f"FB15k-237 is not on this machine ({where}): copy the mirror's "
                   f"fb15k-237/ into .gpu-data/, carry .gpu-data and pass --data .gpu-data")
    return load_dataset("fb15k-237", ctx.work / "fb15k-237", mirror=ctx.data)


def train_embeddings(ctx: Ctx, graph, overrides: list[str], device: str, name: str,
                     score: bool = True) -> dict:
    """One embedding run: its edges a second over its epochs (each epoch's seconds apart,
    and the rate of the epochs after the first, whose one-time costs the later ones do
    not pay) and, with ``score``, its filtered test MRR."""
    import torch

    from graphsys.embed import evaluate, load_config, train

    cfg = load_config(None, overrides + [f'device="{device}"'])
    t0 = time.perf_counter()
    emb = train(graph, cfg, edges="train", out=ctx.work / name).embeddings
    wall = time.perf_counter() - t0
    stats = emb.meta["stats"]
    seconds = sum(s["seconds"] for s in stats)
    edges = sum(s["edges"] for s in stats)
    later = sum(s["seconds"] for s in stats[1:])
    t1 = time.perf_counter()
    mrr = evaluate(emb, graph, "test", filtered=True)["mrr"] if score else None
    return {"device": device, "epochs": len(stats), "train_seconds": round(seconds, 2),
            "epoch_seconds": [round(s["seconds"], 3) for s in stats],
            "wall_s": round(wall, 2), "edges_per_s": round(edges / seconds) if seconds else None,
            "edges_per_s_after_first": (round(sum(s["edges"] for s in stats[1:]) / later)
                                        if later else None),
            "filtered_test_mrr": None if mrr is None else round(mrr, 4),
            "eval_s": round(time.perf_counter() - t1, 2),
            "torch_threads": torch.get_num_threads()}


def train_rgcn(ctx: Ctx, graph, seconds: float) -> dict:
    """R-GCN + DistMult link prediction (Schlichtkrull et al. 2018), ``graphsys.gnn.train``'s
    rgcn link task, on the check's device for at most ``seconds`` of training:
    datasets/configs/fb15k-237-rgcn.toml with the paper's d = 500 and batches of 30,000
    triples (a tiny model in the dry run); its figures."""
    from graphsys.gnn import RGCNSettings, TrainConfig, load_train_config, train

    if ctx.tiny:
        cfg = TrainConfig(task="link", model="rgcn", hidden=16, batch_size=500, epochs=4,
                          eval_every=2, seed=0,
                          rgcn=RGCNSettings(num_blocks=4, eval_max=200, max_seconds=seconds))
    else:
        # the config's d = 200 suits one CPU core; on the GPU the paper's FB15k-237 model
        # (Schlichtkrull et al. 2018, Sec. 5: two layers, d = 500, block-diagonal 5 x 5
        # blocks) and batches of 30,000 triples (the config's too); validation every 50
        # epochs (500 steps, DGL's example's cadence) so that ranking does not take the time
        hidden = ctx.args.rgcn_hidden or 500
        cfg = load_train_config(REPO / "datasets" / "configs" / "fb15k-237-rgcn.toml",
                                {"batch_size": 30_000, "hidden": hidden, "eval_every": 50,
                                 "rgcn": {"num_blocks": hidden // 5, "max_seconds": seconds}})
    res = train(graph, cfg, device=ctx.device)
    return {"steps": res.extra["steps"], "batch_edges": cfg.batch_size, "hidden": cfg.hidden,
            "train_seconds": res.extra["train_seconds"], "epochs": res.epochs,
            **{k: round(v, 4) if isinstance(v, float) else v for k, v in res.metrics.items()},
            "protocol": res.protocol, "history": res.history[-5:]}


#: The embed part's further device runs: (record name, config keys added to the PBG
#: settings). The default run replays its steps from CUDA graphs on CUDA; ``eager``: the
#: same run with ``cuda_graphs = false`` (the same model, one launch per operator);
#: ``grouped``: one Adagrad step per 4 batches (the same batches and negatives, fewer
#: steps: the MRR says what that costs).
EMBED_VARIANTS = [("embed-device-eager", ["cuda_graphs=false"]),
                  ("embed-device-grouped", ["batches_per_step=4"])]


def embed_row(ctx: Ctx, label: str, name: str, res: dict, keys: list[str], peer: dict,
              peer_name: str) -> None:
    """The row of the device run ``res`` (``keys`` added to the settings) beside ``peer``."""
    what = f"{label}{', ' if keys else ''}{', '.join(keys)}"
    ctx.record(f"row-{name}", row={
        "workload": f"embeddings, {what}: edges/s on {ctx.device} (filtered test MRR "
                    f"{res['filtered_test_mrr']}; the peer's {peer['filtered_test_mrr']})",
        "peer": peer_name, "peer_figure": peer["edges_per_s"],
        "graphsys_figure": res["edges_per_s"], "unit": "edges/s",
        "ratio": ratio(res["edges_per_s"], peer["edges_per_s"])})


def part_embed(ctx: Ctx) -> None:
    """The default device run first (CUDA graphs on CUDA), its eager and grouped
    variants, R-GCN, then the CPU peer (the longest run) with what is left: each row once
    its peer is measured."""
    import torch

    if ctx.tiny:
        graph = tiny_kg(ctx)
        overrides = ["dimension=32", 'operator="complex_diagonal"', 'comparator="dot"',
                     'loss_fn="softmax"', "lr=0.1", "num_epochs=1", "batch_size=200",
                     "num_uniform_negs=50", "num_batch_negs=10"]
        label = "generated KG"
    else:
        graph = fb15k237(ctx)
        overrides = ["dimension=400", 'operator="complex_diagonal"', 'comparator="dot"',
                     'loss_fn="softmax"', "lr=0.1", "num_epochs=3", "batch_size=1000",
                     "num_uniform_negs=1000", "num_batch_negs=50"]
        label = "FB15k-237, ComplEx d = 400, PBG's settings, 3 epochs"
    torch.set_num_threads(os.cpu_count() or 1)
    # the process's one-time device costs (its CUDA libraries' handles, kernels loaded on
    # first use) paid by one untimed epoch, not by whichever timed run comes first
    warm = ctx.attempt("embed-warmup", train_embeddings, ctx, graph,
                       overrides + ["num_epochs=1"], ctx.device, "emb-warmup", False)
    if warm is not None:
        ctx.record("embed-warmup", graph=label, why="untimed: the device's one-time costs",
                   **warm)
    runs: dict[str, tuple[dict, list[str]]] = {}  # name -> (figures, keys added)
    for name, extra in [("embed-device", [])] + EMBED_VARIANTS:
        if name != "embed-device" and ctx.left() < 75 and not ctx.tiny:
            ctx.record(name, status="skipped", reason="out of time")
            continue
        res = ctx.attempt(name, train_embeddings, ctx, graph, overrides + extra, ctx.device,
                          name.replace("embed-", "emb-"))
        if res is not None:
            ctx.record(name, graph=label, keys=extra, **res)
            runs[name] = (res, extra)
    dev, eager = runs.get("embed-device", (None,))[0], runs.get("embed-device-eager")
    if dev is not None and eager is not None and ctx.cuda:
        embed_row(ctx, label, "embed-device-graphs", dev, [], eager[0],
                  "graphsys with cuda_graphs = false (one launch per operator), same run")
    part_rgcn(ctx, graph, label.split(",")[0])
    if ctx.left() < 45 and not ctx.tiny:
        ctx.record("embed-cpu", status="skipped", reason="out of time")
        return
    cpu = ctx.attempt("embed-cpu", train_embeddings, ctx, graph, overrides, "cpu", "emb-cpu")
    if cpu is None:
        return
    ctx.record("embed-cpu", graph=label, **cpu)
    peer = f"graphsys on the CPU, same run ({cpu['torch_threads']} threads)"
    for name, (res, extra) in runs.items():
        if name != "embed-device-eager" or not ctx.cuda:  # on CUDA: the peer of a row above
            embed_row(ctx, label, name, res, extra, cpu, peer)
    if dev is not None:
        ctx.record("row-embed-mrr", row={
            "workload": f"embeddings, {label}: filtered test MRR on {ctx.device}",
            "peer": "graphsys on the CPU, same seed", "peer_figure": cpu["filtered_test_mrr"],
            "graphsys_figure": dev["filtered_test_mrr"], "unit": "",
            "ratio": ratio(dev["filtered_test_mrr"], cpu["filtered_test_mrr"])})


def part_rgcn(ctx: Ctx, graph, name: str) -> None:
    """R-GCN + DistMult for ``--rgcn-seconds`` (at most what the part has left but 55 s:
    its own setup and evaluation, then the CPU peer's run), its row beside the paper's
    MRR."""
    seconds = ctx.args.rgcn_seconds or (2.0 if ctx.tiny else 30.0)
    seconds = max(1.0, min(seconds, ctx.left() - (20 if ctx.tiny else 55)))
    rg = ctx.attempt("rgcn", train_rgcn, ctx, graph, seconds)
    if rg is None:
        return
    ctx.record("rgcn", graph=name, **rg)
    ctx.record("row-rgcn", row={
        "workload": f"R-GCN + DistMult, {name}, {rg['train_seconds']:.0f} s of training on "
                    f"{ctx.device} ({rg['steps']} steps of {rg['batch_edges']:,} triples, "
                    f"d = {rg['hidden']}): filtered test MRR",
        "peer": "R-GCN paper (Schlichtkrull et al. 2018), d = 500, trained to convergence",
        "peer_figure": PAPER_RGCN_MRR, "graphsys_figure": rg["mrr"], "unit": "",
        "ratio": ratio(rg["mrr"], PAPER_RGCN_MRR)})


# -- profile ------------------------------------------------------------------------------


def profile_cli(ctx: Ctx, argv: list[str], timeout: float) -> dict:
    """``python -m graphsys profile ARGV --json``: its JSON (stderr to the log)."""
    cmd = [sys.executable, "-m", "graphsys", "profile", *argv, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    sys.stdout.write(proc.stderr[-4000:])
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd[2:])} exited {proc.returncode}: "
                           f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def profile_figures(prof: dict) -> dict:
    """What the GPU table keeps of a profile: launches, transfers and syncs per step beside
    the dense reference's, and the ncu comparison per kernel."""
    k, t = prof.get("kernels", {}), prof.get("transfers", {})
    steps = max(1, k.get("steps") or 1)
    ref = prof.get("dense_reference") or {}
    rk = ref.get("kernels", {})
    rsteps = max(1, rk.get("steps") or 1)
    out = {"steps": k.get("steps"), "unit": k.get("unit"),
           "invocations_per_step": k.get("invocations_per_step"),
           "dense_invocations_per_step": k.get("dense_invocations_per_step"),
           "invocations_over_dense": k.get("invocations_per_step_over_dense"),
           "transfers_per_step": t.get("per_step"),
           "transfer_bytes": t.get("bytes"),
           "syncs_per_step": (k.get("syncs") or 0) / steps,
           "dense_transfers_per_step": (ref.get("transfers") or {}).get("per_step"),
           "dense_syncs_per_step": (rk.get("syncs") or 0) / rsteps if rk else None,
           "device": prof.get("workload", {}).get("device")}
    n = prof.get("ncu")
    if n:
        out["ncu"] = {key: n.get(key) for key in (
            "version", "mapping", "model_utilization", "measured_utilization",
            "abs_difference", "launches", "edge_launches")}
        out["ncu"]["kernels"] = [{key: kern.get(key) for key in (
            "name", "edge", "launches", "utilization", "warp_instructions")}
            for kern in n.get("kernels", [])[:12]]
    return out


def part_profile(ctx: Ctx) -> None:
    import numpy as np

    import graphsys

    g, _ = build_rmat(ctx, 1 << (12 if ctx.tiny else 18), 20_000 if ctx.tiny else 2_000_000, 4)
    deg = g.degrees(direction="out")
    hub = g.to_original([int(deg.argmax())])
    hub = hub.tolist()[0] if hasattr(hub, "tolist") else hub.to_pylist()[0]
    n = 2000 if ctx.tiny else 20_000
    sbm_dir = ctx.work / f"sbm-{n}"
    if not (sbm_dir / "manifest.json").exists():
        d = sbm_arrays(ctx, n, 10 * n, 16, 4)
        train = np.zeros(n, bool)
        train[d["train"]] = True
        half = len(d["src"]) // 2  # sbm_arrays stores both ways; ingest undirected
        graphsys.from_numpy(d["src"][:half], d["dst"][:half], sbm_dir, num_nodes=n,
                            node_columns={"feat": d["feat"], "label": d["label"],
                                          "train_mask": train}, undirected=True,
                            partitions=2)
    ncu = ctx.cuda and shutil.which("ncu") is not None
    if not ncu:
        why = "not a CUDA run" if not ctx.cuda else "ncu not on PATH"
        ctx.record("ncu", status="skipped", reason=why)
    runs = [("pagerank", ["pagerank", str(g.path), "--max-iters", "2"], True),
            ("gnn", ["--workload", "gnn", str(sbm_dir), "--steps", "5", "--batch-size", "256"],
             False),
            ("bfs", ["bfs", str(g.path), "--max-iters", "2", "--source", str(hub)], True)]
    if ctx.tiny:  # bfs takes pagerank's path through the profiler
        runs = runs[:2]
    for name, argv, with_ncu in runs:
        extra = ["--device", ctx.device, "--schedule", "sync"] if name != "gnn" else \
            ["--device", ctx.device]
        if ncu and with_ncu:
            extra += ["--ncu", "--ncu-launch-count", "200"]
        if ctx.left() < 10:
            ctx.record(name, status="skipped", reason="out of time")
            continue
        t0 = time.perf_counter()
        prof = ctx.attempt(name, profile_cli, ctx, argv + extra,
                           timeout=max(5.0, ctx.left() - 5))
        if prof is None:
            continue
        figs = profile_figures(prof)
        ctx.record(name, seconds=round(time.perf_counter() - t0, 1),
                   command="graphsys profile " + shlex.join(argv + extra), **figs)
        what = {"pagerank": "PageRank superstep (R-MAT 2M edges)",
                "bfs": "BFS superstep (R-MAT 2M edges)",
                "gnn": "GraphSAGE training step (SBM 20k nodes, batch 256)"}[name]
        ctx.record(f"row-{name}-launches", row={
            "workload": f"kernel launches per {what} on {ctx.device}; transfers "
                        f"{one_decimal(figs['transfers_per_step'])} and syncs "
                        f"{one_decimal(figs['syncs_per_step'])} per step",
            "peer": "dense MLP step of equal FLOPs, same device",
            "peer_figure": figs["dense_invocations_per_step"],
            "graphsys_figure": figs["invocations_per_step"], "unit": "launches",
            "ratio": ratio(figs["dense_invocations_per_step"], figs["invocations_per_step"])})
        nc = figs.get("ncu")
        if nc and nc.get("measured_utilization") is not None:
            ctx.record(f"row-{name}-ncu", row={
                "workload": f"SIMT model, {what.split(' superstep')[0]}: edge-kernel lanes "
                            f"busy (edge-balanced model)",
                "peer": f"Nsight Compute {nc.get('version') or ''}, threads per warp "
                        f"instruction / 32".replace("  ", " "),
                "peer_figure": round(nc["measured_utilization"], 5),
                "graphsys_figure": round(nc["model_utilization"], 5), "unit": "",
                "ratio": ratio(nc["model_utilization"], nc["measured_utilization"])})


# -- the child ----------------------------------------------------------------------------

PART_FUNCTIONS = {"env": part_env, "tests": part_tests, "bsp": part_bsp, "gnn": part_gnn,
                  "embed": part_embed, "profile": part_profile}


def run_child(args: argparse.Namespace) -> int:
    os.environ.setdefault("NUMBA_CACHE_DIR", str(args.work / "numba-cache"))
    ctx = Ctx(args)
    if ctx.part != "env" and ctx.part != "tests" and ctx.cuda:
        import torch

        if not torch.cuda.is_available():
            ctx.record("skipped", reason=f"device {ctx.device}: no CUDA GPU visible")
            return SKIPPED
    try:
        PART_FUNCTIONS[ctx.part](ctx)
        if ctx.errors:
            raise SystemExit(f"{len(ctx.errors)} measurement(s) failed: {', '.join(ctx.errors)}")
    except Skip as exc:
        ctx.record("skipped", reason=str(exc))
        return SKIPPED
    except SystemExit as exc:
        if exc.code in (None, 0):
            return 0
        print(f"{ctx.part}: {exc.code}", flush=True)
        ctx.record("error", reason=str(exc.code))
        return 1
    except Exception as exc:
        traceback.print_exc()
        ctx.record("error", reason=f"{type(exc).__name__}: {str(exc)[:300]}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        return run_child(args)
    return run_parts(args)


if __name__ == "__main__":
    sys.exit(main())
