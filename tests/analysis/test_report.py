"""The report: advice derived from the numbers, and the HTML page's tables."""

from __future__ import annotations

import pytest

from graphsys.analysis.report import advice, modelled_notes, render_html
from graphsys.analysis.simt import MAPPINGS

MAPS = ["thread-per-vertex", "warp-per-vertex", "cta-per-vertex", "edge-balanced"]


def _profile(util: dict[str, float], warp_cv: float = 0.0, transfers: int = 0) -> dict:
    """A minimal profile (the JSON of ``graphsys profile``) with every mapping."""
    simt = {m: {"mean_utilization": util[m], "kernels": 2, "ctas": 1000, "block_size": 256,
                "idle_warps": 0, "histogram": {"bands": ["0-25", "25-50", "50-75", "75-100"],
                                               "warps": [1, 2, 3, 4]},
                "per_step": [{"step": 0, "active": 10, "mean_utilization": util[m]},
                             {"step": 1, "active": 5, "mean_utilization": util[m]}]}
            for m in MAPS}
    lb = {m: {"gpu": "H100", "num_sms": 132, "resident_ctas_per_sm": 8,
              "sm": {"max_over_mean": 1.0, "cv": 0.0, "work": [5] * 132},
              "cta": {"cv": 0.1}, "warp": {"cv": warp_cv}} for m in MAPS}
    return {
        "mappings": MAPS, "simt": simt, "load_balance": lb,
        "graph": {"path": "/g", "nodes": 10, "edges": 20, "num_partitions": 1},
        "workload": {"kind": "bsp", "algorithm": "bfs", "converged": True,
                     "seconds": 0.123456789},
        "kernels": {"invocations": 40, "unit": "top-level torch operators", "steps": 2,
                    "per_step": [20, 20], "mean_per_step": 20.0, "syncs": 0, "top": []},
        "transfers": {"count": transfers, "bytes": 8 * transfers, "seconds": 0.0,
                      "mean_bytes": 8.0 if transfers else 0.0,
                      "histogram": {"<1KiB": transfers, "1KiB-64KiB": 0},
                      "counted": "every cross-device copy (dispatch mode)"},
        "advice": ["keep it"],
    }


def test_low_utilization_note_names_the_best_mapping():
    util = {"thread-per-vertex": 0.1, "warp-per-vertex": 0.4, "cta-per-vertex": 0.45,
            "edge-balanced": 0.99}
    out = modelled_notes(_profile(util))
    assert all(a.startswith("Modelled for GPU H100: ") for a in out)
    lows = [a for a in out if "would reach SIMT utilization" in a]
    assert len(lows) == 3 and all("(the edge-balanced mapping 99%)" in a for a in lows)
    assert "thread-per-vertex would reach SIMT utilization 10% < 50%" in lows[0]
    assert not any("edge-balanced would reach" in a for a in out)


@pytest.mark.parametrize("mapping", MAPS[:3])
def test_warp_imbalance_note_never_recommends_the_same_mapping(mapping):
    util = dict.fromkeys(MAPS, 0.9)
    pre = "Modelled for GPU H100: "
    out = [a for a in modelled_notes(_profile(util, warp_cv=0.8))
           if a.startswith(f"{pre}{mapping}:")]
    assert len(out) == 1 and "mean CV 0.80" in out[0]
    # the remedy does not recommend the mapping it is about
    remedy = out[0].split(";", 1)[1]
    assert f"use {mapping}" not in remedy and f"({mapping} for hubs)" not in remedy
    assert any(m in remedy for m in MAPPINGS if m != mapping)
    assert not [a for a in modelled_notes(_profile(util, warp_cv=0.8))
                if a.startswith(f"{pre}edge-balanced: warps")]


def test_advice_never_draws_on_the_gpu_model():
    """The modelled SIMT / SM / warp figures are not advice: even a model that would
    flag every mapping leaves the advice of a CPU run without GPU terms."""
    prof = _profile({"thread-per-vertex": 0.1, "warp-per-vertex": 0.1,
                     "cta-per-vertex": 0.1, "edge-balanced": 0.2}, warp_cv=0.9)
    for m in MAPS:
        prof["load_balance"][m]["sm"]["max_over_mean"] = 5.0
    out = advice(prof)
    assert out and not any(w in a for a in out for w in ("SM", "warp", "SIMT", "GPU",
                                                          "mapping", "CTA"))


def test_small_copies_advice_on_cuda_only():
    prof = _profile(dict.fromkeys(MAPS, 0.9), transfers=12)
    assert not any("host<->device" in a for a in advice(prof))
    prof["workload"]["device"] = "cuda:0"
    assert any(a.startswith("12 host<->device copies averaging 8 bytes") for a in advice(prof))


def test_cpu_advice_names_the_flag():
    prof = _profile(dict.fromkeys(MAPS, 0.9))
    prof["workload"].update({"backend": "torch", "device": "cpu", "mode": "memory",
                             "method": "supersteps", "schedule": "sync", "supersteps": 2,
                             "adjacency_index": []})
    prof["kernels"]["invocations_per_step"] = 20.0
    prof["time"] = {"wall_seconds": 10.0, "parts": [
        {"name": "JIT compilation and cache loads (numba, first calls)", "seconds": 3.0,
         "count": 4, "kind": "jit"},
        {"name": "setup: open edges", "seconds": 4.0, "count": 0, "kind": "python"}]}
    prof["jit"] = {"compiled": 4, "loaded": 0, "cache": "/proc/no-such-cache"}
    out = advice(prof)
    assert any("NUMBA_CACHE_DIR" in a and "3.00 s (30% of the run)" in a for a in out)
    assert any("--backend auto" in a for a in out)
    assert any("graphsys index DIR" in a and "graphsys index --push" in a for a in out)
    assert any("--schedule auto" in a for a in out)


def test_jit_advice_names_the_cache_only_when_it_cannot_be_written(tmp_path):
    """A compilation into a writable cache is paid once per install: the advice says so
    and names graphsys warmup, not NUMBA_CACHE_DIR; loads alone never advise a cache."""
    prof = _profile(dict.fromkeys(MAPS, 0.9))
    prof["time"] = {"wall_seconds": 10.0, "parts": [
        {"name": "JIT compilation and cache loads (numba, first calls)", "seconds": 3.0,
         "count": 4, "kind": "jit"}]}
    prof["jit"] = {"compiled": 4, "loaded": 0, "cache": str(tmp_path)}
    (item,) = [a for a in advice(prof) if a.startswith("JIT")]
    assert "NUMBA_CACHE_DIR" not in item and "graphsys warmup" in item and str(tmp_path) in item
    prof["jit"] = {"compiled": 0, "loaded": 4, "cache": str(tmp_path)}
    (item,) = [a for a in advice(prof) if a.startswith("JIT")]
    assert "NUMBA_CACHE_DIR" not in item and "4 kernel signatures were loaded" in item
    prof["time"]["parts"][0]["seconds"] = 0.01  # negligible: no JIT item at all
    assert not [a for a in advice(prof) if a.startswith("JIT")]


def test_html_tables_are_formatted():
    page = render_html(_profile(dict.fromkeys(MAPS, 0.9)))
    # the workload is a table of formatted values, not a JSON dump
    assert "<td>converged</td><td>yes</td>" in page
    assert "<td>seconds</td><td>0.1235</td>" in page and "0.123456789" not in page
    assert "<td>transfer seconds</td>" in page
    assert page.count("data:image/png;base64,") == 5
    assert "<h2>Modelled for GPU H100: SIMT lane utilization and load balance</h2>" in page
    cpu = render_html({**_profile(dict.fromkeys(MAPS, 0.9)), "model_gpu": False})
    assert "Modelled for GPU" not in cpu and cpu.count("data:image/png;base64,") == 2
