"""``graphsys profile``: report + JSON for BSP and training workloads, rendered in Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory):
    from tests.conftest import hub_graph_dir

    return hub_graph_dir(tmp_path_factory.mktemp("profile-cli"), hubs=5, hub_edges=600,
                         nodes=400, edges=1500, partitions=4, seed=0)


REQUIRED = ("mean_utilization", "histogram")


def _check_keys(doc, mappings):
    assert isinstance(doc["kernels"]["invocations"], int) and doc["kernels"]["invocations"] > 0
    assert doc["transfers"]["count"] == 0 and doc["transfers"]["bytes"] == 0
    for m in mappings:
        s = doc["simt"][m] if len(mappings) > 1 else doc["simt"]
        lb = doc["load_balance"][m] if len(mappings) > 1 else doc["load_balance"]
        assert 0 < s["mean_utilization"] <= 1
        assert len(s["histogram"]["warps"]) == 4
        assert lb["sm"]["max_over_mean"] >= 1 and lb["sm"]["cv"] >= 0
        assert lb["warp"]["cv"] >= 0


def test_bsp_report_and_json(main, graph_dir, tmp_path, capsys):
    report = tmp_path / "bfs.html"
    rc = main(["profile", "bfs", str(graph_dir), "--source", "0", "--report", str(report),
               "--ranks", "2", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    maps = doc["mappings"]
    assert len(maps) == 4
    _check_keys(doc, maps)
    # the memory every command reports: total, anonymous and file peaks (one sampler)
    assert 0 < doc["peak_rss_anon_bytes"] <= doc["peak_rss_bytes"]
    on_disk = json.loads(report.with_suffix(".json").read_text())
    assert on_disk["kernels"]["invocations"] == doc["kernels"]["invocations"]
    # one SIMT entry per superstep that ran an edge kernel, frontier sizes from the engine
    steps = doc["simt"]["warp-per-vertex"]["per_step"]
    assert doc["workload"]["supersteps"] == doc["kernels"]["steps"]
    # a whole-graph search: no per-superstep split of its kernel calls, their mean
    assert doc["kernels"]["per_step"] == [] and doc["kernels"]["mean_per_step"] > 0
    # run's default path: direction-optimizing BFS; its BSP supersteps feed the model
    assert doc["workload"]["method"] == "direction-optimizing-bfs"
    assert len(steps) == doc["workload"]["model_supersteps"]
    assert steps[0]["active"] == 1
    assert doc["advice"] and "dense_reference" in doc
    assert "storage" in doc["load_balance"]
    # per-rank balance of the distributed run: static split and per-superstep active edges
    ranks = doc["storage"]["ranks"]
    assert ranks["world_size"] == 2 and len(ranks["supersteps"]["per_step"]) == len(steps)
    assert sum(ranks["supersteps"]["work"]) == doc["simt"]["warp-per-vertex"]["edges"]
    assert ranks["supersteps"]["superstep_max_over_mean"] >= 1
    page = report.read_text()
    assert "What to change" in page and page.count("data:image/png;base64,") >= 3
    assert "Modelled for GPU" not in page  # a CPU run: the GPU model is not shown
    assert "superstep busiest rank / mean rank" in page
    assert "src='http" not in page and 'src="http' not in page


def test_single_mapping_is_flat(main, graph_dir, tmp_path, capsys):
    rc = main(["profile", "pagerank", str(graph_dir), "--mapping", "merge-path",
               "--max-iters", "3", "--no-dense", "--gpu", "A100", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["mappings"] == ["edge-balanced"]
    _check_keys(doc, doc["mappings"])
    assert doc["load_balance"]["num_sms"] == 108
    assert doc["simt"]["mean_utilization"] > 0.9
    # pagerank: every vertex active, pull over in-degrees: one kernel per superstep
    assert doc["simt"]["kernels"] == 3


def test_gnn_workload(main, graph_dir, capsys):
    rc = main(["profile", "--workload", "gnn", str(graph_dir), "--steps", "2",
               "--batch-size", "32", "--mapping", "warp-per-vertex,thread-per-vertex",
               "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    _check_keys(doc, doc["mappings"])
    assert len(doc["kernels"]["per_step"]) == 2
    assert doc["simt"]["warp-per-vertex"]["kernels"] == 2 * 2  # 2 steps x 2 blocks
    assert doc["workload"]["sampler"] == "cpu"     # the loader's steps: on CUDA "device"


def _gnn_profile(main, graph_dir, capsys, *extra):
    rc = main(["profile", "--workload", "gnn", str(graph_dir), "--steps", "2",
               "--batch-size", "32", "--mapping", "thread-per-vertex", "--json", *extra])
    assert rc == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_gnn_workload_profiles_the_users_config(main, graph_dir, capsys):
    """--set hidden/model/fanouts and --model reach the profiled model: its parameter
    shapes, the modelled FLOPs and the sampled blocks follow them."""
    base = _gnn_profile(main, graph_dir, capsys)
    w = base["workload"]
    assert (w["model"], w["hidden"], w["fanouts"]) == ("sage", 64, [10, 5])
    wide = _gnn_profile(main, graph_dir, capsys, "--set", "hidden=128")
    assert wide["workload"]["hidden"] == 128
    assert any(128 in shape for shape in wide["workload"]["parameters"].values())
    assert not any(128 in shape for shape in w["parameters"].values())
    assert wide["workload"]["modelled_flops"] > w["modelled_flops"] > 0
    gcn = _gnn_profile(main, graph_dir, capsys, "--set", "model=gcn")
    assert gcn["workload"]["model"] == "gcn"
    assert gcn["workload"]["parameters"] != w["parameters"]
    assert _gnn_profile(main, graph_dir, capsys, "--model", "gcn")["workload"]["parameters"] \
        == gcn["workload"]["parameters"]
    for model in ("gat", "gin", "pinsage"):  # every builtin runs under the profiler
        heads = ("--set", "heads=2") if model == "gat" else ()   # gat's setting only
        assert _gnn_profile(main, graph_dir, capsys, "--model", model, *heads
                            )["workload"]["model"] == model
    three = _gnn_profile(main, graph_dir, capsys, "--set", "fanouts=4,3,2")
    assert three["workload"]["fanouts"] == [4, 3, 2]
    assert three["simt"]["kernels"] == 2 * 3  # 2 steps x 3 blocks (one mapping)
    assert len([k for k in three["workload"]["parameters"] if k.endswith("weight")]) > \
        len([k for k in w["parameters"] if k.endswith("weight")])


def test_no_store_index_leaves_the_graph_untouched(main, push_twins, tree_bytes, capsys):
    """``profile pagerank --no-store-index`` writes nothing into the graph directory, where
    a plain profile stores the push index as ``graphsys run`` does."""
    g, stored = push_twins
    before = tree_bytes(g)
    argv = ["--max-iters", "3", "--no-dense", "--json"]
    assert main(["profile", "pagerank", str(g), "--no-store-index", *argv]) == 0
    assert tree_bytes(g) == before
    assert main(["profile", "pagerank", str(stored), *argv]) == 0
    assert "push" in json.loads((stored / "manifest.json").read_text())["indexes"]["default"]
    capsys.readouterr()


@pytest.mark.parametrize("argv, message", [
    (["profile", "--workload", "gnn", "{g}", "--set", "hiden=8"], "hiden: unknown"),
    (["profile", "--workload", "gnn", "{g}", "--set", "hidden=wide"], "hidden: must be"),
    (["profile", "--workload", "gnn", "{g}", "--set", "dropout=1.5"], "dropout must be"),
    (["profile", "--workload", "gnn", "{g}", "--set", "fanouts=a,b"], "fanouts must be"),
    (["profile", "--workload", "gnn", "{g}", "--model", "gatt"],
     "--model of task node must be one of"),
    (["profile", "--workload", "embed", "{g}", "--model", "gcn"], "--model applies"),
    (["profile", "pagerank", "{g}", "--all-steps"], "--all-steps applies"),
    (["profile", "pagerank", "{g}", "--set", "hidden=8"], "--set applies"),
    (["profile", "nope", "{g}"], "unknown algorithm"),
    (["profile", "bfs", "{g}"], "--source is needed by bfs"),
    (["profile", "pagerank", "{g}", "--mapping", "diagonal"], "unknown mapping"),
    (["profile", "pagerank", "{g}", "--block-size", "100"], "--block-size"),
    (["profile", "pagerank", "{g}", "--gpu", "K80"], "unknown GPU"),
    (["profile", "pagerank", "{g}", "--device", "cuda"], "CUDA"),
    (["profile", "pagerank", "{g}", "--report", "x.txt"], ".html"),
    (["profile", "{g}"], "give ALGO DIR"),
    (["profile", "pagerank", "{g}/nope"], "not a directory"),
    (["profile", "pagerank", "{g}", "--ranks", "5"], "at least one partition per rank"),
    (["profile", "pagerank", "{g}", "--report", "{g}/nope/r.html"], "does not exist"),
    (["profile", "bfs", "{g}", "--source", "0", "--no-store-index"],
     "--no-store-index applies to pagerank, ppr"),
    (["profile", "--workload", "gnn", "{g}", "--no-store-index"], "--no-store-index applies"),
    # the step graph has no loader steps to mark: it trained unprofiled
    (["profile", "--workload", "gnn", "{g}", "--set", "sampler=graph"],
     "sampler 'graph' replays each step as one CUDA graph"),
    # PageRank's flags on another algorithm were silently ignored (its default value too)
    (["profile", "bfs", "{g}", "--source", "0", "--damping", "0.5"],
     "--damping applies to pagerank, ppr, not bfs"),
    (["profile", "wcc", "{g}", "--tol", "0.1"], "--tol applies to hits, pagerank, ppr, not wcc"),
    (["profile", "kcore", "{g}", "--sum-dtype", "auto"], "--sum-dtype applies to pagerank"),
    (["profile", "--workload", "mining", "{g}", "--damping", "0.85"], "--damping applies"),
])
def test_errors_are_one_line(main, graph_dir, tmp_path, capsys, argv, message):
    """One line on stderr, a non-zero status, and no report (HTML or JSON) left behind."""
    import torch

    if torch.cuda.is_available() and message in ("CUDA",):
        pytest.skip("a GPU is present")
    report = tmp_path / "r.html"
    argv = [a.format(g=graph_dir) for a in argv]
    if "--report" not in argv:
        argv += ["--report", str(report)]
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert err.startswith("error:") and message in err and "\n" not in err
    assert not report.exists() and not report.with_suffix(".json").exists()


def test_report_renders_in_headless_chromium(graph_dir, tmp_path):
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which(
        "google-chrome")
    if exe is None:
        pytest.skip("chromium not installed (apt-get install -y chromium) - cannot render "
                    "the report")
    from graphsys.analysis import profile_graph, write_report

    prof = profile_graph(graph_dir, algorithm="pagerank", max_iters=2)
    page, _ = write_report(prof, tmp_path / "r.html")
    shot = tmp_path / "shot.png"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--window-size=1000,3000",
           f"--screenshot={shot}", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert shot.is_file() and shot.stat().st_size > 0, proc.stderr[-2000:]
    # no failed resource loads in the browser log
    assert "ERR_FILE_NOT_FOUND" not in proc.stderr and "net::ERR" not in proc.stderr
    # the screenshot is not blank: plots and text draw many distinct colours
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    colors = img.getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 20
    # every image in the page is inline data
    html = page.read_text()
    import re

    srcs = re.findall(r"src=['\"]([^'\"]+)", html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<link" not in html and "<script src" not in html


def test_embed_workload(main, graph_dir, capsys):
    rc = main(["profile", "--workload", "embed", str(graph_dir), "--mapping", "cpv",
               "--no-dense", "--batch-size", "500", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    _check_keys(doc, doc["mappings"])
    assert doc["workload"]["batches"] >= 3  # 1,500 edges in batches of 500
    assert doc["kernels"]["mean_per_step"] > 0


def test_report_measures_first(main, graph_dir, tmp_path, capsys):
    """Operators by measured self time (most first, with counts), a timeline of the named
    ranges, the modelled sections labelled as such, and no profiler noise on stderr."""
    report = tmp_path / "r.html"
    rc = main(["profile", "pagerank", str(graph_dir), "--max-iters", "3", "--no-dense",
               "--backend", "torch", "--schedule", "sync", "--model-gpu", "h100",
               "--report", str(report), "--json"])
    assert rc == 0
    cap = capsys.readouterr()
    assert "USDT" not in cap.err
    doc = json.loads(cap.out.strip().splitlines()[-1])
    rows = doc["kernels"]["self_time"]
    assert rows and all(r["count"] >= 1 and r["self_seconds"] > 0 for r in rows)
    selfs = [r["self_seconds"] for r in rows]
    assert selfs == sorted(selfs, reverse=True)
    top = [r["seconds"] for r in doc["kernels"]["top"]]
    assert top == sorted(top, reverse=True)
    names = {n.split("#")[0] for n, _, _ in doc["kernels"]["ranges"]}
    assert {"graphsys.step", "bsp.superstep", "bsp.edges"} <= names
    page = report.read_text()
    assert "by self time" in page and "Measured: timeline of the named ranges" in page
    assert "Modelled for GPU H100: SIMT lane utilization" in page and "not measured" in page


def test_profile_states_its_own_cost(main, graph_dir, tmp_path, capsys):
    """The summary, the JSON and the report say what the profiler itself cost (seconds
    outside the run, events analysed, peak memory) and list the other threads."""
    report = tmp_path / "own.html"
    rc = main(["profile", "--workload", "gnn", str(graph_dir), "--steps", "2", "--no-dense",
               "--mapping", "edge-balanced", "--report", str(report)])
    assert rc == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("profiler's own cost: "))
    assert "events" in line and "peak RSS" in line and "GB by the end of the run" in line
    doc = json.loads(report.with_suffix(".json").read_text())
    own = doc["time"]["overhead"]
    assert 0 < own["profiler_seconds"] <= own["total_seconds"]
    assert own["share"] == own["profiler_seconds"] / own["total_seconds"]
    assert own["events"] > 0 and 0 < own["peak_rss_run_bytes"] <= own["peak_rss_bytes"]
    assert isinstance(doc["time"]["threads"], list)
    assert "The profiler's own cost" in report.read_text()


def test_gnn_profile_samples_steps_and_says_so(main, graph_dir, tmp_path, capsys):
    """Past its first 10 steps a GNN profile records 3 steps of every 40; the summary, the
    JSON and the report say from how many steps the times come; --all-steps records
    every one."""
    # 14 steps: the first 10, then 10-12 recorded, 13 not
    report = tmp_path / "sampled.html"
    args = ["profile", "--workload", "gnn", str(graph_dir), "--steps", "14",
            "--batch-size", "16", "--no-dense", "--mapping", "edge-balanced"]
    assert main(args + ["--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "steps sampled: 13 of 14 recorded (the first 10, then 3 of the other 4" in out
    doc = json.loads(report.with_suffix(".json").read_text())
    k, sampled = doc["kernels"], doc["time"]["sampled"]
    assert k["steps"] == 14 and len(k["per_step"]) == 13
    assert k["sampling"]["recorded"] == list(range(13))
    assert sampled["recorded_steps"] == 13 and sampled["count_scale"] == pytest.approx(4 / 3)
    assert "steps sampled: 13 of 14 recorded" in report.read_text()
    assert main(args + ["--all-steps", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(whole["kernels"]["per_step"]) == 14 and "sampled" not in whole["time"]
    assert whole["kernels"]["per_step"][:13] == k["per_step"]


def test_embed_workload_profiles_the_users_config(main, graph_dir, tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('dimension = 24\noperator = "diagonal"\ncomparator = "dot"\n'
                   'num_partitions = 4\nbatch_size = 100\n')
    rc = main(["profile", "--workload", "embed", str(graph_dir), "--config", str(cfg),
               "--set", "loss_fn=\"softmax\"", "--steps", "4", "--no-dense", "--mapping",
               "cpv", "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    w = doc["workload"]
    assert w["dimension"] == 24 and w["operator"] == "diagonal" and w["loss"] == "softmax"
    assert w["batches"] == 4 and w["edges_trained"] == 400
    # the thread mapping is not an embedding user's choice: no advice about it
    assert not any("Switch" in a or "mapping" in a for a in doc["advice"])
    rc = main(["profile", "pagerank", str(graph_dir), "--set", "dimension=3"])
    assert rc != 0 and "--workload embed" in capsys.readouterr().err


def test_existing_report_json_is_refused_before_the_run(main, graph_dir, tmp_path, capsys,
                                                        monkeypatch):
    """The page's JSON sibling is checked with the page, before anything is profiled."""
    import graphsys.analysis.profile as profile

    def never(*args, **kwargs):
        raise AssertionError("profiled although the report could not be written")

    monkeypatch.setattr(profile, "profile_graph", never)
    report = tmp_path / "r.html"
    report.with_suffix(".json").write_text("{}")
    rc = main(["profile", "pagerank", str(graph_dir), "--report", str(report)])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "r.json, which already exists" in err and "\n" not in err
    assert not report.exists()


@pytest.mark.parametrize("algo, extra", [("pagerank", []), ("bfs", ["--source", "0"]),
                                         ("wcc", []), ("pagerank", ["--backend", "torch"]),
                                         ("bfs", ["--source", "0", "--schedule", "sync"])])
def test_profile_takes_the_path_run_takes(main, graph_dir, capsys, algo, extra):
    """Same arguments, same code path: backend and method (fused PageRank,
    direction-optimizing BFS, Afforest, BSP supersteps) of ``profile`` are ``run``'s."""
    assert main(["run", algo, str(graph_dir), *extra, "--json"]) == 0
    ran = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["profile", algo, str(graph_dir), *extra, "--no-dense", "--mapping",
                 "edge-balanced", "--json"]) == 0
    prof = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    w = prof["workload"]
    assert (w["backend"], w["method"], w["supersteps"], w["mode"]) == (
        ran["backend"], ran["method"], ran["num_supersteps"], ran["mode"])
    assert w["path"].startswith(f"{ran['backend']} backend, {ran['method']}")
    # the text output says which path it took
    assert main(["profile", algo, str(graph_dir), *extra, "--no-dense", "--mapping",
                 "edge-balanced"]) == 0
    assert f"profiled: {ran['backend']} backend, {ran['method']}" in capsys.readouterr().out


def test_cpu_profile_carries_no_gpu_advice(main, graph_dir, capsys, tmp_path):
    report = tmp_path / "p.html"
    assert main(["profile", "pagerank", str(graph_dir), "--backend", "torch", "--json",
                 "--report", str(report)]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["model_gpu"] is False and doc["modelled"] == []
    gpu_words = ("SM", "warp", "SIMT", "GPU", "mapping", "CTA", "lane")
    assert doc["advice"] and not any(w in a for a in doc["advice"] for w in gpu_words)
    # every item names the flag or config key that acts on it
    assert all("--" in a or "NUMBA_CACHE_DIR" in a or "graphsys index" in a
               or a.startswith("No change") for a in doc["advice"])
    assert "Modelled for GPU" not in report.read_text()
    assert main(["profile", "pagerank", str(graph_dir), "--model-gpu", "h100"]) == 0
    out = capsys.readouterr().out
    assert "modelled for GPU H100 (not measured)" in out


@pytest.mark.parametrize("argv, steps", [
    (["pagerank", "{g}", "--max-iters", "2", "--schedule", "sync"], 2),
    (["bfs", "{g}", "--source", "0", "--max-iters", "3", "--schedule", "sync"], None),
    (["--workload", "gnn", "{g}", "--steps", "2", "--batch-size", "32"], 2),
    (["--workload", "embed", "{g}", "--steps", "2", "--batch-size", "200"], None),
], ids=["pagerank", "bfs", "gnn", "embed"])
def test_profile_on_the_device(main, graph_dir, capsys, device, argv, steps):
    """Every workload profiles on the test device: its invocations charged to its steps,
    and on a device other than the CPU the copies to it counted (CUDA kernels on CUDA)."""
    if device == "lazy":
        pytest.skip("torch's lazy tensors cannot run views under a TorchDispatchMode (the "
                    "transfer counter)")
    argv = [a.format(g=graph_dir) for a in argv]
    assert main(["profile", *argv, "--device", device, "--mapping", "edge-balanced",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    k, t = doc["kernels"], doc["transfers"]
    assert str(doc["workload"]["device"]).startswith(device)
    assert k["invocations"] > 0
    if steps is not None:
        assert k["steps"] == steps and k["mean_per_step"] > 0
        # one count per step, or their mean where one call ran them all (fused PageRank)
        assert len(k["per_step"]) == steps or (
            k["per_step"] == [] and "one call" in k["per_step_unit"])
    assert doc["dense_reference"]["kernels"]["invocations"] > 0
    if device != "cpu":
        assert t["h2d"] > 0 and t["bytes"] > 0 and t["counted"].startswith("every")
    if device.startswith("cuda"):
        assert k["unit"] == "CUDA kernels"


def test_profile_and_run_share_their_bsp_defaults():
    """``profile ALGO DIR`` with no flags runs what ``run ALGO DIR`` runs: the BSP flags the
    two share default alike (``--mode`` included: auto)."""
    from graphsys.cli import build_parser

    defaults = {name: build_parser([name]).parse_args([name, "pagerank", "g"])
                for name in ("run", "profile")}
    for flag in ("mode", "device", "backend", "schedule", "threads", "damping", "sum_dtype"):
        assert getattr(defaults["profile"], flag) == getattr(defaults["run"], flag), flag
    assert defaults["profile"].mode == "auto"


def test_a_mapping_flag_that_names_none_is_refused(main, graph_dir, capsys):
    # '--mapping ,' named no mapping and silently profiled all four
    rc = main(["profile", "pagerank", str(graph_dir), "--mapping", ",", "--json"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "--mapping names no mapping" in err and "\n" not in err
