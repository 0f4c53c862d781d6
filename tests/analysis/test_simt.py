"""The SIMT model against a brute-force per-lane simulation, and load balance by hand."""

from __future__ import annotations

import numpy as np
import pytest

from graphsys.analysis.simt import GPU, MAPPINGS, SimtAccumulator, simt_model
from graphsys.errors import GraphsysError

W = 32


def brute(deg, mapping, B, K, num_sms):
    """Per-lane simulation: lists every warp's active-lane count per loop iteration."""
    deg = [int(x) for x in deg]
    n = len(deg)
    warps = []  # one list per launched warp: active lanes at each iteration
    cta_of = []
    if mapping == "thread-per-vertex":
        threads = -(-n // B) * B
        for w in range(threads // W):
            lanes = [deg[t] if t < n else 0 for t in range(w * W, w * W + W)]
            it, acts = 0, []
            while True:
                a = sum(1 for x in lanes if x > it)
                if a == 0:
                    break
                acts.append(a)
                it += 1
            warps.append(acts)
            cta_of.append(w // (B // W))
    elif mapping == "warp-per-vertex":
        wpc = B // W
        for v in range(-(-n // wpc) * wpc):
            d = deg[v] if v < n else 0
            acts, e = [], 0
            while e < d:  # for (e = lane; e < d; e += 32)
                acts.append(sum(1 for lane in range(W) if e + lane < d))
                e += W
            warps.append(acts)
            cta_of.append(v // wpc)
    elif mapping == "cta-per-vertex":
        for v, d in enumerate(deg):
            for w in range(B // W):
                acts, k = [], 0
                while True:  # for (e = tid; e < d; e += B)
                    a = sum(1 for lane in range(W) if k * B + w * W + lane < d)
                    if a == 0:
                        break
                    acts.append(a)
                    k += 1
                warps.append(acts)
                cta_of.append(v)
    else:
        items = n + sum(deg)
        threads = -(-items // K)
        ctas = -(-threads // B)
        for w in range(ctas * B // W):
            cnt = [max(0, min(K, items - (w * W + j) * K)) for j in range(W)]
            acts = [sum(1 for c in cnt if c > k) for k in range(max(cnt))]
            warps.append(acts)
            cta_of.append(w // (B // W))
    iters = np.array([len(a) for a in warps])
    active = np.array([sum(a) for a in warps])
    flat = [a for acts in warps for a in acts]
    busy = iters > 0
    u = active[busy] / (W * iters[busy])
    warp_hist = [int(((u > b / 4) & (u <= (b + 1) / 4)).sum()) for b in range(4)]
    fl = np.array(flat) / W
    iter_hist = [int(((fl > b / 4) & (fl <= (b + 1) / 4)).sum()) for b in range(4)]
    cta_of = np.array(cta_of)
    ctas = cta_of.max() + 1 if len(cta_of) else 0
    cta_work = np.bincount(cta_of, weights=iters, minlength=ctas)
    sm = np.bincount(np.arange(ctas) % num_sms, weights=cta_work, minlength=num_sms)
    cvs = []
    for c in range(ctas):
        ww = iters[cta_of == c].astype(float)
        if ww.mean() > 0:
            cvs.append(ww.std() / ww.mean())
    return {"util": active.sum() / (W * iters.sum()) if iters.sum() else None,
            "warp_hist": warp_hist, "iter_hist": iter_hist, "warps": len(warps),
            "iters": int(iters.sum()), "active": int(active.sum()), "sm": sm, "ctas": int(ctas),
            "cta_cv": cta_work.std() / cta_work.mean() if cta_work.mean() > 0 else 0.0,
            "warp_cv": float(np.mean(cvs)) if cvs else 0.0}


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize("seed", range(6))
def test_model_matches_brute_force(mapping, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))
    kind = seed % 3
    if kind == 0:
        deg = rng.integers(0, 8, n)
    elif kind == 1:
        deg = np.minimum(rng.zipf(1.8, n), 700)
    else:
        deg = rng.integers(0, 300, n) * (rng.random(n) < 0.3)
    B, K, sms = (64, 3, 5) if seed % 2 else (128, 4, 7)
    gpu = GPU("test", sms, 2048, 32)
    # small chunks exercise the carry across chunks
    acc = SimtAccumulator(mapping, B, K, gpu, chunk=int(rng.integers(1, 5)) * B)
    for part in np.array_split(deg, 4):
        acc.add(part)
    r = acc.result()
    b = brute(deg, mapping, B, K, sms)
    assert r["warps"] == b["warps"] and r["ctas"] == b["ctas"]
    assert r["warp_iterations"] == b["iters"]
    assert r["active_lane_iterations"] == b["active"]
    assert r["mean_utilization"] == pytest.approx(b["util"], rel=1e-12)
    assert 0 < r["mean_utilization"] <= 1
    assert r["histogram"]["warps"] == b["warp_hist"]
    assert r["histogram"]["warp_iterations"] == b["iter_hist"]
    lb = r["load_balance"]
    assert lb["sm"]["work"] == b["sm"].astype(int).tolist()
    assert lb["cta"]["cv"] == pytest.approx(b["cta_cv"], rel=1e-9, abs=1e-12)
    assert lb["warp"]["cv"] == pytest.approx(b["warp_cv"], rel=1e-9, abs=1e-12)


def test_hand_computed_thread_per_vertex():
    # one warp: degrees 32 (lane 0) and 0 elsewhere: 32 iterations with 1 lane = 1/32
    deg = np.zeros(32, np.int64)
    deg[0] = 32
    r = simt_model(deg, "thread-per-vertex", block_size=32, gpu=GPU("x", 2))
    assert r["mean_utilization"] == pytest.approx(1 / 32)
    assert r["histogram"]["warps"] == [1, 0, 0, 0]
    assert r["histogram"]["warp_iterations"] == [32, 0, 0, 0]
    # all lanes degree 5: perfect
    r = simt_model(np.full(64, 5), "thread-per-vertex", block_size=32, gpu=GPU("x", 2))
    assert r["mean_utilization"] == 1.0 and r["histogram"]["warps"] == [0, 0, 0, 2]


def test_band_edges_are_exact():
    # warp-per-vertex, degree 8 -> 8/32 = 25 % (band 0-25); 9 -> band 25-50; 24 -> 75 %
    r = simt_model(np.array([8, 9, 16, 17, 24, 25, 32]), "warp-per-vertex", block_size=32)
    assert r["histogram"]["warps"] == [1, 2, 2, 2]


def test_load_balance_hand_computed():
    # warp-per-vertex, B = 32 (one warp per CTA), 4 SMs; degrees 32, 64, 0, 96, 32
    # CTA work (iterations): 1, 2, 0, 3, 1 -> SMs (round robin): 1+1, 2, 0, 3 = 2, 2, 0, 3
    r = simt_model(np.array([32, 64, 0, 96, 32]), "warp-per-vertex", block_size=32,
                   gpu=GPU("four", 4, 2048, 32))
    sm = r["load_balance"]["sm"]
    assert sm["work"] == [2, 2, 0, 3]
    assert sm["max_over_mean"] == pytest.approx(3 / 1.75)
    assert sm["cv"] == pytest.approx(np.std([2, 2, 0, 3]) / 1.75)
    assert r["load_balance"]["cta"]["cv"] == pytest.approx(np.std([1, 2, 0, 3, 1]) / 1.4)
    assert r["load_balance"]["warp"]["cv"] == 0.0  # one warp per CTA
    assert r["idle_warps"] == 1
    assert r["load_balance"]["waves"] == 1
    # cta-per-vertex, B = 64 (2 warps): degree 40 -> warps 1 and 1 iterations (32 + 8
    # lanes); degree 10 -> warp 0 one iteration, warp 1 idle: within-CTA CVs 0 and 1
    r = simt_model(np.array([40, 10]), "cta-per-vertex", block_size=64, gpu=GPU("x", 2))
    assert r["load_balance"]["warp"]["cv"] == pytest.approx(0.5)
    assert r["mean_utilization"] == pytest.approx(50 / (32 * 3))


def test_kernels_add_up_and_validation():
    a = SimtAccumulator("thread-per-vertex", 64, gpu=GPU("x", 3))
    a.add_kernel(np.array([1, 2, 3]))
    a.add_kernel(np.array([4]))
    r = a.result()
    assert r["kernels"] == 2 and r["edges"] == 10 and r["vertices"] == 4
    assert r["load_balance"]["sm"]["work"] == [3 + 4, 0, 0]
    with pytest.raises(GraphsysError):
        SimtAccumulator("nope")
    with pytest.raises(GraphsysError):
        SimtAccumulator("warp-per-vertex", block_size=48)
    # figures of another items_per_thread or GPU were merged and reported as this one's
    for other in (SimtAccumulator("edge-balanced", 64, 8, GPU("x", 3)),
                  SimtAccumulator("edge-balanced", 64, 4, GPU("y", 3, 1024, 16))):
        with pytest.raises(GraphsysError, match="different configurations"):
            SimtAccumulator("edge-balanced", 64, 4, GPU("x", 3)).merge(
                other.add_kernel(np.array([5])))
    same = SimtAccumulator("edge-balanced", 64, 4, GPU("x", 3))
    assert same.merge(SimtAccumulator("edge-balanced", 64, 4, GPU("x", 3)).add_kernel(
        np.array([5]))).result()["kernels"] == 1
    with pytest.raises(GraphsysError):
        simt_model(np.array([-1]), "warp-per-vertex")


def test_degrees_as_a_list_and_non_integer_degrees():
    """A list, tuple or range of degrees is one kernel's array (each int was taken for a
    chunk: 'must be one-dimensional, got shape ()'); fractional degrees are refused (1.5
    was modelled as 1); an integer block size of any integer type is a block size."""
    want = simt_model(np.array([0, 1, 2, 3, 4]), "thread-per-vertex")
    for degrees in ([0, 1, 2, 3, 4], (0, 1, 2, 3, 4), range(5), np.arange(5.0)):
        assert simt_model(degrees, "thread-per-vertex") == want
    chunks = simt_model([np.array([0, 1]), np.array([2, 3, 4])], "thread-per-vertex")
    assert chunks == want  # a list of arrays stays a list of chunks
    for bad in (np.array([1.5, 2.0]), np.array([np.nan])):
        with pytest.raises(GraphsysError, match="whole numbers"):
            simt_model(bad, "warp-per-vertex")
    assert simt_model([1], "tpv", block_size=np.int64(64))["block_size"] == 64
    for bad in (0, True):  # True was read as a chunk of 1
        with pytest.raises(GraphsysError, match="chunk must be a positive integer"):
            simt_model(np.array([1]), "tpv", chunk=bad)
    with pytest.raises(GraphsysError, match=r"^items_per_thread must be a positive integer "
                                            r"<= 64, got 65$"):
        simt_model(np.array([1]), "tpv", items_per_thread=65)


def test_large_stream_is_chunked():
    rng = np.random.default_rng(0)
    deg = np.minimum(rng.zipf(2.0, 3_000_000), 10_000)
    whole = simt_model(deg, "thread-per-vertex", chunk=1 << 20)
    parts = SimtAccumulator("thread-per-vertex", chunk=1 << 16)
    for p in np.array_split(deg, 7):
        parts.add(p)
    r = parts.result()
    assert r["warp_iterations"] == whole["warp_iterations"]
    assert r["histogram"] == whole["histogram"]


def test_auto_gpu_takes_the_cta_limit_of_its_compute_capability(monkeypatch):
    # 1,536 threads an SM is 16 resident CTAs on 8.6 (A10, RTX 30xx) but 24 on 8.9 (L4)
    import types

    import torch

    from graphsys.analysis.simt import resolve_gpu

    def props(major, minor, threads=1536):
        return types.SimpleNamespace(name=f"sm_{major}{minor}", multi_processor_count=72,
                                     max_threads_per_multi_processor=threads,
                                     major=major, minor=minor)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for (major, minor, threads), ctas in {(8, 6, 1536): 16, (8, 9, 1536): 24,
                                          (9, 0, 2048): 32, (7, 5, 1024): 16}.items():
        monkeypatch.setattr(torch.cuda, "get_device_properties",
                            lambda _, a=major, b=minor, t=threads: props(a, b, t))
        gpu = resolve_gpu("auto")
        assert (gpu.num_sms, gpu.max_threads_per_sm, gpu.max_ctas_per_sm) == (72, threads, ctas)
