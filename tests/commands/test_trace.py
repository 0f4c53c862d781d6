"""``--trace FILE.json`` on ``run``, ``embed train``, ``gnn train`` and ``profile``: the file
loads as Chrome trace JSON (what Perfetto's JSON loader reads) and holds the engines' named
ranges; a path that cannot be written fails before the run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from graphsys import cli
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

_spec = importlib.util.spec_from_file_location(
    "graphsys_tests_gnn_sbm_trace", Path(__file__).resolve().parents[1] / "gnn" / "conftest.py")
_sbm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sbm)


@pytest.fixture(scope="module")
def kg(tmp_path_factory):
    """A small two-partition KG (train edge set) for the BSP and embedding runs."""
    root = tmp_path_factory.mktemp("trace-kg")
    rng = np.random.default_rng(0)
    rows = {(int(rng.integers(60)), int(rng.integers(3)), int(rng.integers(60)))
            for _ in range(800)}
    (root / "train.tsv").write_text("".join(f"{h}\tr{r}\t{t}\n" for h, r, t in sorted(rows)))
    out = root / "g"
    ingest_sources([EdgeSource([root / "train.tsv"], edge_set="train", src_col=0, rel_col=1,
                               dst_col=2)], out, IngestOptions(partitions=2))
    return out


def _ranges(path: Path) -> dict[str, int]:
    """Range name -> count of the ``user_annotation`` events of a Chrome trace."""
    data = json.loads(path.read_text())
    assert isinstance(data["traceEvents"], list)
    out: dict[str, int] = {}
    for e in data["traceEvents"]:
        if e.get("cat") == "user_annotation" and e.get("ph") == "X":
            assert e["dur"] >= 0 and "ts" in e
            name = e["name"].split("#")[0]
            out[name] = out.get(name, 0) + 1
    return out


def test_run_trace_has_supersteps_and_buckets(kg, tmp_path, capsys):
    trace = tmp_path / "run.json"
    assert cli.main(["run", "pagerank", str(kg), "--mode", "out-of-core", "--max-iters", "3",
                     "--backend", "torch", "--json", "--trace", str(trace),
                     "--allow-unconverged"]) == 0
    got = _ranges(trace)
    assert got["bsp.superstep"] == 3 and got["bsp.edges"] == 3
    assert got["bsp.bucket"] >= 3
    assert "USDT" not in capsys.readouterr().err


def test_embed_train_trace(kg, tmp_path, capsys):
    trace = tmp_path / "embed.json"
    assert cli.main(["embed", "train", "--graph", str(kg), "--out", str(tmp_path / "ck"),
                     "--set", "dimension=8", "--set", "num_epochs=1", "--set",
                     "batch_size=100", "--set", "num_partitions=2", "--json", "--trace",
                     str(trace)]) == 0
    got = _ranges(trace)
    n_buckets = 4
    assert got["embed.bucket"] == n_buckets and got["embed.bucket-read"] == n_buckets
    assert got["embed.minibatch"] >= n_buckets and got["embed.checkpoint"] == 1
    assert got["embed.load"] >= 2


def test_gnn_train_trace(tmp_path, capsys):
    sbm = _sbm.write_sbm(tmp_path / "sbm")
    trace = tmp_path / "gnn.json"
    assert cli.main(["gnn", "train", "--graph", str(sbm), "--model", "sage", "--fanouts",
                     "5,5", "--epochs", "2", "--hidden", "8", "--batch-size", "32",
                     "--json", "--trace", str(trace)]) == 0
    got = _ranges(trace)
    assert got["gnn.sample"] == got["gnn.step"] == got["gnn.load"] == got["gnn.wait"]
    assert got["gnn.step"] >= 2


def test_profile_trace(kg, tmp_path, capsys):
    trace = tmp_path / "profile.json"
    assert cli.main(["profile", "pagerank", str(kg), "--max-iters", "2", "--no-dense",
                     "--backend", "torch", "--schedule", "sync", "--json", "--trace",
                     str(trace)]) == 0
    got = _ranges(trace)
    assert got["bsp.superstep"] == 2 and got["graphsys.step"] >= 2
    assert "USDT" not in capsys.readouterr().err
    # run's default path (numba): every call of a compiled function is a named range
    assert cli.main(["profile", "pagerank", str(kg), "--max-iters", "2", "--no-dense",
                     "--json", "--overwrite", "--trace", str(trace)]) == 0
    kernels = {n: c for n, c in _ranges(trace).items() if n.startswith("numba.")}
    assert kernels and max(kernels.values()) >= 2


@pytest.mark.parametrize("argv", [
    ["run", "pagerank", "{g}"],
    ["embed", "train", "--graph", "{g}", "--out", "{tmp}/ck", "--set", "dimension=8"],
    ["profile", "pagerank", "{g}"],
])
@pytest.mark.parametrize("bad, message", [
    ("{tmp}/missing/t.json", "does not exist"),
    ("{tmp}/t.txt", "name it FILE.json"),
    ("{tmp}", "is a directory"),
])
def test_unwritable_trace_fails_before_the_run(kg, tmp_path, capsys, argv, bad, message):
    fill = {"g": str(kg), "tmp": str(tmp_path)}
    trace = bad.format(**fill)
    if message == "is a directory":
        trace = str(tmp_path / "d.json")
        Path(trace).mkdir()
    rc = cli.main([a.format(**fill) for a in argv] + ["--trace", trace])
    err = capsys.readouterr().err
    assert rc != 0 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("argv, ranges", [
    (["run", "pagerank", "{g}", "--mode", "out-of-core", "--max-iters", "3", "--backend",
      "torch", "--allow-unconverged", "--device", "{device}"], ("bsp.superstep", "bsp.edges")),
    (["embed", "train", "--graph", "{g}", "--out", "{tmp}/ck", "--set", "dimension=8", "--set",
      "num_epochs=1", "--set", "batch_size=100", "--set", "device=\"{device}\""],
     ("embed.bucket", "embed.minibatch")),
    (["gnn", "train", "--graph", "{sbm}", "--model", "sage", "--fanouts", "5,5", "--epochs",
      "1", "--hidden", "8", "--batch-size", "32", "--device", "{device}"],
     ("gnn.sample", "gnn.load", "gnn.step")),
], ids=["run", "embed", "gnn"])
def test_trace_on_the_device(kg, tmp_path, capsys, device, argv, ranges):
    """Each engine's ranges are recorded on the test device; on CUDA the trace also holds
    the GPU's kernels (CUDA activity) and the ranges are NVTX ranges as well."""
    if device == "lazy" and argv[0] == "embed":
        pytest.skip("the embedding trainer does not run on torch's lazy backend (LAZY_SKIPS)")
    sbm = _sbm.write_sbm(tmp_path / "sbm") if "{sbm}" in argv else None
    fill = {"g": str(kg), "tmp": str(tmp_path), "sbm": str(sbm), "device": device}
    trace = tmp_path / "t.json"
    assert cli.main([a.format(**fill) for a in argv] + ["--json", "--trace", str(trace)]) == 0
    got = _ranges(trace)
    if argv[0] == "gnn" and device.startswith("cuda"):  # the step graph draws inside a step
        ranges = ("gnn.step",)
    assert all(got.get(r, 0) >= 1 for r in ranges), got
    if device.startswith("cuda"):
        cats = {e.get("cat") for e in json.loads(trace.read_text())["traceEvents"]}
        assert "kernel" in cats, cats
