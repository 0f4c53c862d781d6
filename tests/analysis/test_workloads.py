"""BSP workload profiling: frontiers recorded during the profiled run itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.analysis import workloads as W
from graphsys.analysis.kernels import profile_call
from graphsys.analysis.simt import GPUS
from graphsys.bsp import run as bsp_run
from graphsys.bsp.algorithms.common import source_index


def test_recording_dispatches_no_operator():
    log = W.FrontierLog()
    masks = [torch.ones(50, dtype=torch.bool), torch.arange(50) % 3 == 0, None]

    def work(marker):
        marker.step()
        refs = [log._store(m) for m in masks]
        marker.finish()
        return refs

    refs, st = profile_call(work)
    log.close()
    assert st.invocations == 0 and st.syncs == 0 and not st.transfers
    assert refs[0] == W.ALL and refs[2] is None and refs[1] != W.ALL


def test_masks_round_trip_in_chunks(monkeypatch):
    monkeypatch.setattr(W, "FRONTIER_CHUNK", 16)
    rng = np.random.default_rng(0)
    log = W.FrontierLog()
    masks = [rng.random(n) < 0.3 for n in (45, 45, 7)]
    refs = [log._store(torch.as_tensor(m)) for m in masks]
    deg = np.arange(45, dtype=np.int64)
    for m, ref in zip(masks[:2], refs[:2]):
        got = np.concatenate(list(W._chunks_of(deg, log.mask(ref))()))
        assert got.tolist() == deg[m].tolist()
    sel = log.mask(refs[2])
    assert sel(0, 7).tolist() == masks[2].tolist()
    log.close()


def _recorder():
    maps = ["thread-per-vertex", "edge-balanced"]
    return W.SimtRecorder(maps, 64, 4, GPUS["h100"])


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_single_run_counts_match_unhooked_run(graph, mode, device):
    """The hooks add no invocation to the profiled run (on the test device, whose kernels
    or operators are counted); the SIMT model gets the frontier."""
    if device == "lazy":
        pytest.skip("torch's lazy tensors cannot run views under a TorchDispatchMode (the "
                    "transfer counter)")
    # the device's first run, uncounted: one-time set-up is in neither counted run (a CUDA
    # kernel counts in the step that launched it, wherever the device's queue ran it)
    warm, warm_limit = W.make_program(graph, "bfs", source=150)
    bsp_run(graph, warm, device=device, backend="torch", mode=mode, max_iters=warm_limit)
    out_rec = _recorder()
    out = W.profile_bsp(graph, "bfs", recorder=out_rec, source=150, mode=mode,
                        backend="torch", schedule="sync", device=device)
    prog, limit = W.make_program(graph, "bfs", source=150)

    def work(marker):
        inner = prog.init

        def init(ctx):
            res = inner(ctx)
            marker.step()
            return res

        prog.init = init
        res = bsp_run(graph, prog, device=device, backend="torch", mode=mode,
                      max_iters=limit, progress=lambda ss: marker.step())
        marker.finish()
        return res

    res, st = profile_call(work, device=device, count_transfers=device != "cpu")
    n = res.stats.num_supersteps
    # per superstep where the engine ran them one by one, else (a whole-graph search) the mean
    stepwise = W._stepwise(res.stats)
    assert out["steps"] == n and out["stats"].per_step == (st.per_step[:n] if stepwise else [])
    kernels = out["stats"].to_dict()["kernels"]
    assert kernels["mean_per_step"] == sum(st.per_step[:n]) / n
    assert out["stats"].invocations == st.invocations
    # the frontier: recorded in the profiled run on the CPU when it ran the engine's
    # supersteps, by a model run (numba on the CPU) after a run on another device, whose
    # frontier is not read back, or after a whole-graph search (the device BFS in memory)
    recorded = device == "cpu" and res.stats.method == "supersteps"
    assert (out["workload"]["model_run_seconds"] == 0.0) == recorded
    # the first superstep pushes from the source (a leaf) alone: one item, its out-degree
    first = out_rec.steps["thread-per-vertex"][0]
    assert first["direction"] != "pull" and first["active"] == first["items"] == 1
    deg = graph.degrees(direction="out")
    assert first["edges"] == int(deg[source_index(graph, 150)])
    assert len(out_rec.steps["edge-balanced"]) == n


def test_rank_work_follows_the_frontier(graph):
    """Every superstep's work items are charged to the ranks owning them: per superstep the
    ranks' work adds up to the SIMT model's edges, and ids map to ranks as the engine
    splits partitions."""
    from graphsys.analysis.balance import RankWork, rank_bounds

    bounds = rank_bounds(graph, 2)
    off = graph.partition_offsets()
    assert bounds.tolist() == [0, int(off[1]), int(off[3])]  # 3 partitions: [0, 1), [1, 3)
    rec, ranked = _recorder(), RankWork(bounds)
    W.profile_bsp(graph, "bfs", recorder=rec, source=150, rank_work=ranked)
    steps = rec.steps["thread-per-vertex"]
    assert len(ranked.per_step) == len(steps) > 2
    assert [sum(w) for w in ranked.per_step] == [s["edges"] for s in steps]
    # the first superstep pushes from the source alone, on the rank that owns it
    src = source_index(graph, 150)
    owner = int(np.searchsorted(bounds, src, side="right")) - 1
    first = ranked.per_step[0]
    assert first[owner] == steps[0]["edges"] and first[1 - owner] == 0


def test_every_cli_algorithm_has_its_program(graph):
    """make_program builds the program the CLI runs (HITS is no k-core), and HITS, whose
    direction switches every superstep, profiles."""
    from graphsys.bsp import algorithms as A

    prog, _ = W.make_program(graph, "hits")
    assert isinstance(prog, A.HITS)
    rec = _recorder()
    out = W.profile_bsp(graph, "hits", recorder=rec, max_iters=4)
    assert out["steps"] == 4
    # each superstep is modelled on its own direction's degrees: even ones pull along
    # in-edges, odd ones along out-edges (every step took the last one's direction)
    from graphsys.analysis.simt import simt_model

    want = {d: simt_model(graph.degrees(direction=d), "thread-per-vertex", block_size=64,
                          gpu="H100")["warp_iterations"] for d in ("in", "out")}
    assert want["in"] != want["out"]
    assert [s["warp_iterations"] for s in rec.steps["thread-per-vertex"]] == [
        want["in"], want["out"], want["in"], want["out"]]
    # the report's step count is the supersteps', not the marker's (one more: the finish)
    kernels = out["stats"].to_dict()["kernels"]
    assert kernels["steps"] == 4


def test_supersteps_run_in_one_call_are_modelled_and_counted_as_such(graph):
    """SSSP on the CPU fuses its min-relaxation supersteps into one numba call, which no
    hook sees: the SIMT model got the first superstep alone (1 item, 11 of the run's
    edges) while saying every superstep was recorded, and the kernel counts read
    [n, 0, 0, ...] per superstep. A model run records them now, as for a whole-graph
    method, and only the mean per superstep is given."""
    rec = _recorder()
    out = W.profile_bsp(graph, "sssp", recorder=rec, source=150)
    run = out["run"]
    assert run["method"] == "supersteps" and all(s["fused"] for s in run["supersteps"])
    steps = rec.steps["thread-per-vertex"]
    assert len(steps) == out["steps"] == run["num_supersteps"] > 2
    assert out["workload"]["model_run_seconds"] > 0
    # the same frontiers as the engine's unfused supersteps (torch backend, hooks see them)
    ref = _recorder()
    W.profile_bsp(graph, "sssp", recorder=ref, source=150, backend="torch")
    assert [(s["items"], s["edges"]) for s in steps] == [
        (s["items"], s["edges"]) for s in ref.steps["thread-per-vertex"]]
    kernels = out["stats"].to_dict()["kernels"]
    assert kernels["per_step"] == [] and kernels["steps"] == out["steps"]
    assert kernels["mean_per_step"] * out["steps"] == (
        kernels["invocations"] - kernels["setup"] - kernels["finish"])
    assert "one call" in kernels["per_step_unit"]


def test_zero_threads_or_batch_size_are_refused_not_replaced(graph):
    """``threads=0`` ran with numba's thread count and ``batch_size=0`` (``profile --workload
    embed --batch-size 0``) with 1000, where ``bsp.run`` and ``mine`` refuse 0; a mapping
    given as one string was read letter by letter ("unknown mapping 'e'")."""
    from graphsys.analysis import profile_graph
    from graphsys.analysis.mining_workload import profile_mining
    from graphsys.errors import ParameterError

    with pytest.raises(ParameterError, match="threads must be a positive integer, got 0"):
        W.profile_bsp(graph, "pagerank", recorder=_recorder(), threads=0, max_iters=1)
    with pytest.raises(ParameterError, match="threads must be a positive integer, got 0"):
        profile_mining(graph, recorder=_recorder(), threads=0)
    with pytest.raises(ParameterError, match="batch_size must be a positive integer"):
        W.profile_embed(graph, recorder=_recorder(), batch_size=0, steps=1)
    prof = profile_graph(graph, algorithm="pagerank", max_iters=1, dense=False,
                         mappings="edge-balanced")
    assert prof["mappings"] == ["edge-balanced"] and "mean_utilization" in prof["simt"]


@pytest.mark.parametrize("bad", ["x", 1.5, True])
def test_step_and_launch_counts_that_are_no_integers_are_one_line(graph, bad):
    """``steps="x"`` and ``ncu_launch_count="x"`` raised a TypeError from ``<``; 1.5 and
    True passed (as a batch limit, and as ncu's --launch-count)."""
    from graphsys.analysis import profile_graph
    from graphsys.analysis.gnn_workload import profile_gnn
    from graphsys.errors import ParameterError

    for profile in (W.profile_embed, profile_gnn):
        with pytest.raises(ParameterError, match="^steps must be a positive integer, got "):
            profile(graph, recorder=_recorder(), steps=bad)
    with pytest.raises(ParameterError, match="^ncu_launch_count must be a positive integer"):
        profile_graph(graph, algorithm="pagerank", ncu_launch_count=bad)
