"""scripts/gpu_check.py: the CPU dry run (``--device cpu --tiny``) runs every part and
records each one's result in the output layout the GPU machine returns (at most 8 files, no
sub-folders), so the GPU command cannot rot between GPU runs; its parsing helpers; and the
results renderer's GPU rows."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tools"))

import gpu_check  # noqa: E402
import render_results  # noqa: E402

PARTS = [p for p, _, _ in gpu_check.PARTS]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """One dry run for the module: (the process, output dir, records). Its caps are the
    dry run's own (within 3 minutes on a quiet 2-core machine) times 4, so that a machine
    shared with other jobs does not cut a part short."""
    out = tmp_path_factory.mktemp("gpu-check") / "out"
    caps = [f"--cap={part}={4 * tiny}" for part, _, tiny in gpu_check.PARTS]
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--device",
                           "cpu", "--tiny", "--budget", str(4 * gpu_check.TINY_BUDGET), *caps,
                           str(out)], capture_output=True, text=True, timeout=1200, cwd=REPO)
    records = [json.loads(x) for x in (out / gpu_check.RESULTS).read_text().splitlines()]
    return proc, out, records


def test_dry_run_runs_every_part(dry_run):
    proc, out, records = dry_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = {r["part"]: r for r in records if r["name"] == "summary"}
    assert list(summary) == PARTS + ["all"]
    for part in PARTS:
        s = summary[part]
        assert s["status"] == "ok", (part, s)
        assert s["seconds"] <= s["cap_s"] + 10
    assert summary["all"]["tiny"] and set(summary["all"]["parts"].values()) == {"ok"}
    # what needs CUDA or ncu says why it did not run
    skipped = [r for r in records if r.get("status") == "skipped"]
    assert any(r["part"] == "profile" and r["name"] == "ncu" for r in skipped)
    assert all(r["reason"] for r in skipped)


def test_dry_run_output_fits_what_the_gpu_machine_returns(dry_run):
    _, out, _ = dry_run
    files = sorted(p for p in out.rglob("*"))
    assert all(p.is_file() and p.parent == out for p in files), files
    assert len(files) <= 8
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p.name) for p in files)
    assert {p.name for p in files} == {gpu_check.RESULTS} | {f"{p}.log" for p in PARTS}


def test_dry_run_records_each_parts_figures(dry_run):
    _, _, records = dry_run
    names = {(r["part"], r["name"]) for r in records}
    for want in [("env", "environment"), ("tests", "collected"), ("tests", "results"),
                 ("bsp", "pagerank-memory"), ("bsp", "pagerank-memory-float32"),
                 ("bsp", "pagerank-out-of-core"), ("bsp", "pagerank-out-of-core-streamed"),
                 ("bsp", "bfs-memory"), ("bsp", "spmv-peer"), ("gnn", "graphsys"),
                 ("gnn", "pyg"), ("gnn", "graphsys-device-staged"),
                 ("gnn", "device-sampler-counts"), ("gnn", "device-sampler-loader-counts"),
                 ("embed", "embed-device"), ("embed", "embed-device-grouped"),
                 ("embed", "embed-cpu"),
                 ("embed", "rgcn"), ("profile", "pagerank"), ("profile", "gnn")]:
        assert want in names, want
    by = {(r["part"], r["name"]): r for r in records}
    # PageRank in memory takes the lean supersteps to convergence, float64 at tol 1e-10,
    # float32 at 1e-6
    for name, dtype in (("pagerank-memory", "float64"), ("pagerank-memory-float32", "float32")):
        tail = "(, float64 from superstep \\d+)?" if dtype == "float32" else ""
        assert re.search(rf"int32 ids, {dtype} ranks{tail}\)$", by["bsp", name]["method"])
        assert by["bsp", name]["ops_per_superstep"] == 3 and by["bsp", name]["converged"]
    # the float32 run again with the vertices in degree order: its ranks' method says so
    ordered = by["bsp", "pagerank-memory-float32-ordered"]
    assert re.search(r"float32 ranks(, float64 from superstep \d+)?, degree-ordered\)$",
                     ordered["method"]) and ordered["converged"]
    # streamed PageRank: kept within the default budget, and streamed every superstep
    for name in ("pagerank-out-of-core", "pagerank-out-of-core-streamed"):
        assert {"resident_bytes", "streamed_bytes_per_superstep"} <= set(by["bsp", name])
    assert by["bsp", "pagerank-out-of-core-streamed"]["resident_bytes"] == 0
    # replays of the pass recorded as a CUDA graph: none off CUDA
    assert by["bsp", "pagerank-out-of-core-streamed"]["pass_replays"] == 0
    assert set(by["bsp", "pagerank-out-of-core-streamed"]["median_phase_seconds"]) == {
        "aggregate", "edges", "communicate", "update"}
    # the streamed pass kept whole on the device, batch by batch: nothing copied after the
    # first superstep
    unmerged = by["bsp", "pagerank-out-of-core-unmerged"]
    assert unmerged["method"] == "supersteps" and unmerged["resident_bytes"] > 0
    assert unmerged["median_bytes_h2d"] == 0
    # streamed again with each packed batch split by torch operators, and with the batches
    # unpacked (on the CPU no byte crosses a bus and the operators split every batch)
    for name, _, _ in gpu_check.STREAMED_VARIANTS:
        variant = by["bsp", f"pagerank-out-of-core-streamed-{name}"]
        assert variant["resident_bytes"] == 0 and variant["method"] == "supersteps"
        assert len(variant["supersteps"]) == len(
            by["bsp", "pagerank-out-of-core-streamed"]["supersteps"])
    assert by["bsp", "fused-split"]["packings"] == {}
    # the device BFS under each switch rule: the same levels; never bottom-up last
    policies = by["bsp", "bfs-direction-policies"]["policies"]
    assert set(policies) == (set(gpu_check.BFS_POLICIES) | set(gpu_check.PULL_COSTS)
                             | set(gpu_check.PROBES))
    assert all(p["same_levels"] for p in policies.values())
    assert set(policies["top-down"]["directions"]) == {"t"}
    # one more device BFS profiled: each level's host time and its kernels (none here)
    prof = by["bsp", "bfs-level-profile"]
    assert [lv["level"] for lv in prof["levels"]] == list(range(len(prof["directions"])))
    assert all(lv["host_us"] > 0 and lv["kernels"] == 0 and lv["top_kernels"] == []
               for lv in prof["levels"])
    # the warm BFS: Graph500's traversed edges (the reached vertices' out-edges), a rate
    warm = by["bsp", "bfs-memory-warm"]
    assert 0 < warm["traversed_edges"] <= by["bsp", "graph"]["edges"] and warm["teps"] > 0
    for mode in ("memory", "out-of-core"):  # the rows: Graph500's TEPS, the scans in words
        row = by["bsp", f"row-bfs-{mode}"]["row"]
        assert row["unit"] == "TEPS" and row["graphsys_figure"] > 0
        assert f"reached vertices' {warm['traversed_edges']:,} out-edges" in row["workload"]
    # out of core on an indexed copy: the first levels read their senders' rows alone
    active = by["bsp", "bfs-active-edges"]
    assert active["same_levels"] and active["active"]["directions"].startswith("a")
    assert set(active["streamed"]["directions"]) == {"s"}
    assert active["active"]["bytes_read"] < active["streamed"]["bytes_read"]
    assert active["streamed-unrecorded"]["pass_replays"] == 0
    for side in ("active", "streamed", "streamed-unrecorded"):  # each superstep, per side
        assert len(active[side]["superstep_seconds"]) == len(active[side]["directions"]) \
            == len(active[side]["superstep_active"])
    assert active["index_build"]["same_levels"]
    # each embedding run's epochs timed apart (a first epoch's one-time costs show)
    for name in ("embed-device", "embed-cpu"):
        run = by["embed", name]
        assert len(run["epoch_seconds"]) == run["epochs"]
        assert abs(sum(run["epoch_seconds"]) - run["train_seconds"]) < 0.01 * run["epochs"]
        assert (run["edges_per_s_after_first"] is None) == (run["epochs"] == 1)
    # one untimed epoch first: the device's one-time costs outside every timed run
    warm = by["embed", "embed-warmup"]
    assert warm["epochs"] == 1 and warm["filtered_test_mrr"] is None
    assert [r["name"] for r in records if r["part"] == "embed"][0] == "embed-warmup"
    # the device sampler with its neighbour ids in host memory draws the CPU's blocks
    assert by["gnn", "graphsys-device-staged"]["same_blocks"] is True
    # a step as one graph: eager on the CPU, trained and evaluated
    graphed = by["gnn", "graphsys-step-graph"]
    assert graphed["captured"] is False and graphed["steps"] >= 1
    assert all(math.isfinite(v) for v in graphed["train_loss"])
    assert 0 <= graphed["test_accuracy"] <= 1
    assert by["tests", "collected"]["device_tests"] >= 150  # the suite's device subset
    assert 10 <= by["tests", "collected"]["files"] < 100       # which the run is given
    assert by["tests", "results"]["passed"] >= 1 and not by["tests", "results"]["failures"]
    rows = [r for r in records if "row" in r]
    assert {r["part"] for r in rows} == {"bsp", "gnn", "embed", "profile"}
    # PageRank in memory runs before its peer is measured: its row comes after the peer's
    assert {"row-pagerank-memory", "row-pagerank-out-of-core"} <= {r["name"] for r in rows}
    for r in rows:
        assert set(r["row"]) >= {"workload", "peer", "peer_figure", "graphsys_figure", "unit",
                                 "ratio", "command"}
        assert r["row"]["command"].startswith("python scripts/gpu_check.py")


def test_rows_of_a_gpu_run_render_and_a_dry_run_is_refused(dry_run, tmp_path):
    _, _, records = dry_run
    with pytest.raises(SystemExit, match="not a GPU run"):
        render_results.gpu_rows(records)
    # the same records as a GPU run would write them
    fake = [dict(r) for r in records]
    for r in fake:
        r["device"] = "cuda"
        if r["part"] == "all":
            r["tiny"] = False
        if r["name"] == "environment":
            r.update(gpu="NVIDIA H100 80GB HBM3", nvidia_smi="NVIDIA H100, 580.1, 81559 MiB")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in fake))
    (tmp_path / "gpu.jsonl").write_text("")
    n = render_results.record_gpu_rows(results, tmp_path)
    assert n == sum("row" in r for r in fake) > 0
    assert render_results.record_gpu_rows(results, tmp_path) == n  # replaced, not appended
    rows = render_results.load_rows(tmp_path / "gpu.jsonl")
    assert len(rows) == n and all("H100" in r["machine"] and "580.1" in r["machine"]
                                  for r in rows)
    # every record of the run kept beside the rows, one per part and name
    raw = [json.loads(x) for x in (tmp_path / "raw" / "gpu_check.jsonl").read_text(
        ).splitlines()]
    assert len(raw) == len({(r["part"], r["name"]) for r in fake})
    assert {"bsp/pagerank-memory", "gnn/graphsys", "all/summary"} <= {r["key"] for r in raw}
    page = "<!-- results:gpu -->\n<!-- /results:gpu -->\n"
    assert render_results.render_page(page, tmp_path).count("\n| ") == n + 1


@pytest.mark.parametrize("line, want", [
    ("tests/bsp/test_x.py::test_y[memory-torch] PASSED   [ 12%]",
     ("tests/bsp/test_x.py::test_y[memory-torch]", "PASSED")),
    ("[gw3] [ 40%] FAILED tests/embed/test_t.py::test_a ", ("tests/embed/test_t.py::test_a",
                                                          "FAILED")),
    ("tests/gnn/test_g.py::test_b SKIPPED (needs 2 GPUs)   [ 50%]",
     ("tests/gnn/test_g.py::test_b", "SKIPPED")),
    ("ERROR tests/a/test_c.py::test_d - RuntimeError: boom", ("tests/a/test_c.py::test_d",
                                                             "ERROR")),
    ("============ 4 passed in 9.18s ============", None),
])
def test_pytest_lines_are_parsed(line, want):
    assert gpu_check.parse_test_line(line) == want


def test_collected_counts_are_parsed():
    m = gpu_check.COLLECTED.search("212/1990 tests collected (1778 deselected) in 12.1s")
    assert m.groups() == ("212", "1990", "1778")


def test_device_test_files_are_the_collected_ids_files():
    listing = ("tests/bsp/test_a.py::test_x[cuda-p1]\ntests/bsp/test_a.py::test_y\n"
               "tests/gnn/test_b.py::Case::test_z\n\n"
               "3/40 tests collected (37 deselected) in 1.0s\n")
    assert gpu_check.device_test_files(listing) == ["tests/bsp/test_a.py",
                                                    "tests/gnn/test_b.py"]
    assert gpu_check.device_test_files("no tests ran\n") == []


def test_unknown_parts_and_caps_are_refused(capsys):
    for argv in (["--parts", "bsp,gpu", "OUT"], ["--cap", "nope=3", "OUT"],
                 ["--cap", "bsp=x", "OUT"]):
        with pytest.raises(SystemExit):
            gpu_check.parse_args(argv)
    assert "unknown part" in capsys.readouterr().err
    args = gpu_check.parse_args(["--parts", "profile,env", "--cap", "env=7", "OUT"])
    assert args.parts == ["env", "profile"] and args.caps["env"] == 7.0
    assert sum(cap for _, cap, _ in gpu_check.PARTS) <= gpu_check.BUDGET <= 480
    assert gpu_check.TINY_BUDGET <= 180  # the dry run's own limit: 3 minutes


def _stats(method: str, seconds: list[float]):
    from types import SimpleNamespace

    steps = [SimpleNamespace(superstep=k, seconds={"edges": t}, edges_scanned=100,
                             bytes_h2d=0, direction="pull") for k, t in enumerate(seconds)]
    return SimpleNamespace(method=method, supersteps=steps, setup_seconds=1.0,
                           setup_bytes_h2d=0)


def test_lean_pagerank_is_timed_after_its_first_window():
    """The lean supersteps' windows are timed as a whole and split evenly: the medians
    start after the first window where a later one ran (a first window holding a one-time
    cost does not set the figure), after superstep 0 for another method."""
    from graphsys.bsp.algorithms.pagerank_device import CHECK_EVERY

    lean = "fused-pagerank (device SpMV, int32 ids, float64 ranks)"
    slow, fast = 5e-3, 1e-3
    figs = gpu_check.superstep_figures(_stats(lean, [slow] * CHECK_EVERY + [fast] * 2))
    assert figs["steady_from"] == CHECK_EVERY and figs["median_seconds"] == fast
    one = gpu_check.superstep_figures(_stats(lean, [fast] * CHECK_EVERY))
    assert one["steady_from"] == 1 and one["median_seconds"] == fast
    other = gpu_check.superstep_figures(_stats("supersteps", [0.3, fast, fast, slow]))
    assert other["steady_from"] == 1 and other["median_seconds"] == fast
    assert gpu_check.superstep_figures(_stats("supersteps", [0.3]))["median_seconds"] == 0.3


def test_float32_pagerank_is_timed_over_its_float32_supersteps():
    """A float32 run that went on in float64 from superstep K is timed over its float32
    supersteps (all but superstep 0 where they are one window), its float64 tail recorded
    apart and named in the row."""
    from graphsys.bsp.algorithms.pagerank_device import CHECK_EVERY

    method = ("fused-pagerank (device SpMV, int32 ids, float32 ranks, float64 from "
              f"superstep {CHECK_EVERY})")
    f32, f64 = 0.768e-3, 1.292e-3
    figs = gpu_check.superstep_figures(_stats(method, [f32] * CHECK_EVERY + [f64]))
    assert figs["steady_from"] == 1 and figs["median_seconds"] == f32
    assert figs["float64_from"] == CHECK_EVERY and figs["float64_median_seconds"] == f64
    figs["converged"] = True
    peer = {"peer": "cuSPARSE", "median_seconds": 0.909e-3}
    row = gpu_check.pagerank_row("R-MAT", "held in GPU memory", figs, peer, method)
    assert row["graphsys_figure"] == 0.768 and row["ratio"] == 1.184
    assert f"median of supersteps 1..{CHECK_EVERY - 1} (the float32 ones; the float64 " \
           "ones' 1.292 ms)" in row["workload"]
    long = gpu_check.superstep_figures(_stats(method.replace(
        f"superstep {CHECK_EVERY}", f"superstep {3 * CHECK_EVERY}"), [5e-3] * CHECK_EVERY
        + [f32] * (2 * CHECK_EVERY) + [f64]))
    assert long["steady_from"] == CHECK_EVERY and long["median_seconds"] == f32


def test_step_counts_of_a_profile():
    """A profiled GraphSAGE step's launches (a CUDA graph's replay one), copies across the
    bus (device-to-device copies are not) and host waits, the profile's closing
    synchronisation left out; the row shows them."""
    prof = {"steps": 10, "runtime_calls_per_step": {
        "cudaLaunchKernel": 28.0, "cudaGraphLaunch": 1.0, "cudaMemsetAsync": 2.0,
        "cudaMemcpyAsync": 4.0, "Memcpy HtoD (Pinned -> Device)": 1.0,
        "Memcpy DtoH (Device -> Pinned)": 1.0, "Memcpy DtoD (Device -> Device)": 2.0,
        "cudaStreamSynchronize": 1.0, "cudaDeviceSynchronize": 0.1}}
    counts = gpu_check.step_counts(prof)
    assert counts == {"launches": 31.0, "transfers": 2.0, "syncs": 1.0}
    row = gpu_check.step_counts_row(counts, "SBM", "DeviceNeighborSampler on cuda")
    assert row["graphsys_figure"] == 31.0 and row["unit"] == "launches"
    assert "copies across the bus 2.0 and host waits 1.0 a step" in row["workload"]


def test_shared_stream_epoch_restores_the_side_stream(monkeypatch):
    """The check's epoch with the loader's worker on the step's stream switches
    SIDE_STREAM off for that epoch only, whatever it raises."""
    from graphsys.gnn import loader

    seen = []

    def epoch(*args, **kwargs):
        seen.append(loader.SIDE_STREAM)
        raise RuntimeError("out of memory")

    monkeypatch.setattr(gpu_check, "gnn_graphsys", epoch)
    with pytest.raises(RuntimeError):
        gpu_check.shared_stream_epoch(None, {}, 3)
    assert seen == [False] and loader.SIDE_STREAM is True
