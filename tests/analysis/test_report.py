"""The report: advice derived from the numbers, and the HTML page's tables."""

from __future__ import annotations

import pytest

from graphsys.analysis.report import advice, render_html
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


def test_low_utilization_advice_names_the_best_mapping():
    util = {"thread-per-vertex": 0.1, "warp-per-vertex": 0.4, "cta-per-vertex": 0.45,
            "edge-balanced": 0.99}
    out = advice(_profile(util))
    switches = [a for a in out if a.startswith("Switch")]
    assert len(switches) == 3 and all("to edge-balanced" in a for a in switches)
    assert "SIMT utilization 10% < 50%" in switches[0]
    assert not any(a.startswith("Switch edge-balanced") for a in out)


@pytest.mark.parametrize("mapping", MAPS[:3])
def test_warp_imbalance_advice_never_recommends_the_same_mapping(mapping):
    util = dict.fromkeys(MAPS, 0.9)
    out = [a for a in advice(_profile(util, warp_cv=0.8)) if a.startswith(f"{mapping}:")]
    assert len(out) == 1 and "mean CV 0.80" in out[0]
    # the remedy does not recommend the mapping it is about
    remedy = out[0].split(";", 1)[1]
    assert f"use {mapping}" not in remedy and f"({mapping} for hubs)" not in remedy
    assert any(m in remedy for m in MAPPINGS if m != mapping)
    assert not [a for a in advice(_profile(util, warp_cv=0.8))
                if a.startswith("edge-balanced: warps")]


def test_small_copies_advice_quotes_the_numbers():
    out = advice(_profile(dict.fromkeys(MAPS, 0.9), transfers=12))
    assert any(a.startswith("12 host<->device copies averaging 8 bytes") for a in out)


def test_html_tables_are_formatted():
    page = render_html(_profile(dict.fromkeys(MAPS, 0.9)))
    # the workload is a table of formatted values, not a JSON dump
    assert "<td>converged</td><td>yes</td>" in page
    assert "<td>seconds</td><td>0.1235</td>" in page and "0.123456789" not in page
    assert "<td>transfer seconds</td>" in page
    assert page.count("data:image/png;base64,") == 5
