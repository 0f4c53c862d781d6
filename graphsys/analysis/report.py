"""Self-contained HTML reports (matplotlib plots embedded as base64 PNG) and the
"what to change" advice derived from a profile's figures."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

#: Below this mean utilization a mapping is flagged (the issue's rule of thumb).
LOW_UTILIZATION = 0.5
#: SM / partition imbalance (max/mean) above which a change is suggested.
IMBALANCE = 1.2
#: What to do when the warps of a CTA do unequal work, per mapping (edge-balanced warps
#: are equal by construction).
WARP_CV_REMEDY = {
    "thread-per-vertex": "a warp runs as long as its highest-degree lane: group vertices of "
                         "similar degree (degree-bucketed frontiers), or give hubs a warp "
                         "each (warp-per-vertex for hubs).",
    "warp-per-vertex": "each warp's work is its vertex's degree / 32: group vertices of "
                       "similar degree in a CTA (degree-bucketed frontiers), or give hubs a "
                       "CTA each (cta-per-vertex for hubs).",
    "cta-per-vertex": "vertices with fewer edges than the CTA has threads leave its later "
                      "warps idle: run low-degree vertices with warp- or thread-per-vertex "
                      "(degree-bucketed frontiers) and keep cta-per-vertex for hubs.",
}


def _per_mapping(section: dict[str, Any], mappings: list[str]) -> dict[str, dict]:
    return {m: section[m] for m in mappings} if len(mappings) > 1 else {mappings[0]: section}


#: Share of the wall time above which a measured part is worth a change.
SIGNIFICANT = 0.2


def _share(profile: dict[str, Any], *names: str, kind: str | None = None) -> tuple[float, float]:
    """Seconds and share of the wall time of the ``time`` parts whose name starts with one
    of ``names`` (or, with ``kind``, of that kind)."""
    tm = profile.get("time") or {}
    wall = tm.get("wall_seconds") or 0.0
    secs = sum(p["seconds"] for p in tm.get("parts", [])
               if (kind is not None and p["kind"] == kind)
               or (names and p["name"].startswith(names)))
    return secs, (secs / wall if wall else 0.0)


def _jit_advice(profile: dict[str, Any]) -> str | None:
    """The JIT item of :func:`advice`, when compiling or loading kernels took a significant
    share of the run. The advice depends on what happened (``profile["jit"]``: kernel
    signatures compiled and loaded, the cache directory): a compilation into a writable
    cache is paid once per install (later runs load it; ``graphsys warmup`` pays it ahead);
    ``NUMBA_CACHE_DIR`` is advised only where the cache directory cannot be written, so
    every run compiles again."""
    import os

    secs, share = _share(profile, kind="jit")
    if share <= SIGNIFICANT:
        return None
    head = f"JIT: numba compiled or loaded kernels for {secs:.2f} s ({share:.0%} of the run)"
    info = profile.get("jit")
    if not info:  # a profile without the counts: what it can say
        return f"{head}; give one process more work (a longer run amortises it)."
    compiled, cache = info.get("compiled", 0), info.get("cache")
    if compiled and (cache is None or not os.access(cache, os.W_OK)):
        return (f"{head}: {compiled} kernel signatures were compiled and {cache or 'no'} "
                f"cache directory is writable, so every run compiles them again: point the "
                f"NUMBA_CACHE_DIR environment variable at a persistent, writable directory.")
    if compiled:
        return (f"{head}: {compiled} kernel signatures were compiled on their first use "
                f"here and cached in {cache}; later runs load them (graphsys warmup "
                f"compiles every algorithm's kernels ahead of a first run).")
    return (f"{head}: {info.get('loaded', 0)} kernel signatures were loaded from the cache; "
            f"give one process more work (a longer run amortises the loading).")


def advice(profile: dict[str, Any]) -> list[str]:
    """What the run can change, from its measured figures: each item quotes the numbers it
    comes from and names the flag or config key that acts on it. The modelled GPU figures
    are not advice here (:func:`modelled_notes`)."""
    import os

    out: list[str] = []
    w = profile["workload"]
    kind = w.get("kind", "bsp")
    cuda = str(w.get("device", "cpu")).startswith("cuda")
    k = profile["kernels"]
    jit_advice = _jit_advice(profile)
    if jit_advice:
        out.append(jit_advice)
    cores = os.cpu_count() or 1
    if kind == "bsp":
        if w.get("backend") == "torch" and not cuda:
            out.append(f"The run took the torch backend on the CPU (torch operators on CPU "
                       f"tensors, {k.get('invocations_per_step', 0):.0f} invocations per "
                       f"superstep): --backend auto runs the numba kernels.")
        setup, setup_share = _share(profile, "setup:", "graph open")
        have = set(w.get("adjacency_index") or ())
        if setup_share > SIGNIFICANT and w.get("mode") == "memory" and not have & {"csr",
                                                                                   "csc"}:
            out.append(f"Graph open and layout build take {setup:.2f} s ({setup_share:.0%} "
                       f"of the run) and the graph has no adjacency index: graphsys index "
                       f"DIR stores it once (graphsys index --push also the push layout), "
                       f"so that runs map it instead of building it.")
        if (w.get("method") == "supersteps" and w.get("schedule") == "sync"
                and w.get("algorithm") in ("bfs", "sssp", "wcc") and w.get("mode") == "memory"
                and not cuda):
            out.append(f"{w['algorithm']} ran BSP supersteps ({w.get('supersteps')}): "
                       f"--schedule auto (its whole-graph algorithm) or --schedule async "
                       f"(a work list) reaches the same result with less work.")
        threads = w.get("threads")
        if threads and threads < cores and not cuda:
            out.append(f"The run used {threads} of {cores} cores: --threads {cores}.")
    elif kind == "gnn":
        samp, samp_share = _share(profile, "sampling", "waiting for the sampler",
                                  "feature gather")
        if samp_share > SIGNIFICANT:
            out.append(f"Sampling and feature gather take {samp:.2f} s ({samp_share:.0%} of "
                       f"the run): more sampler threads (--set num_workers=N, now "
                       f"{w.get('num_workers')}) or smaller fanouts (--set fanouts=..., now "
                       f"{w.get('fanouts')}).")
        ev, ev_share = _share(profile, "evaluation")
        if ev_share > SIGNIFICANT:
            out.append(f"Evaluation takes {ev:.2f} s ({ev_share:.0%} of the run): evaluate "
                       f"less often (--set eval_every=N, now {w.get('eval_every')}).")
    elif kind == "embed":
        io, io_share = _share(profile, "I/O wait")
        if io_share > SIGNIFICANT:
            out.append(f"Partition and bucket I/O takes {io:.2f} s ({io_share:.0%} of the "
                       f"run): --set prefetch=true (now {w.get('prefetch')}) overlaps it "
                       f"with training; more resident partitions (--set buffer_partitions=N, "
                       f"now {w.get('buffer_partitions')}) avoid reloads.")
        if (w.get("workers") or 1) < cores:
            out.append(f"Training used {w.get('workers') or 1} worker thread(s) of {cores} "
                       f"cores: --set workers={cores} (HOGWILD threads over the embeddings).")
    ref = profile.get("dense_reference")
    if kind != "bsp" and ref and k.get("invocations_per_step_over_dense", 0) and k[
            "invocations_per_step_over_dense"] > 2:
        out.append(f"Each step makes {k['invocations_per_step']:.0f} kernel invocations vs "
                   f"{k['dense_invocations_per_step']:.0f} for a dense MLP step of equal "
                   f"FLOPs: a larger batch (--set batch_size=N, now {w.get('batch_size')}) "
                   f"spreads the per-invocation cost over more work.")
    t = profile["transfers"]
    if cuda and t["count"] and t["mean_bytes"] < 64 * 1024:
        out.append(f"{t['count']} host<->device copies averaging {t['mean_bytes']:.0f} bytes: "
                   f"keep the graph resident on the device (--mode memory) and copy "
                   f"per batch, not per item.")
    steps = k.get("steps") or 0
    if cuda and steps and k.get("syncs", 0) > 2 * steps:
        out.append(f"{k['syncs']} synchronising scalar reads ({k['syncs'] / steps:.1f} per "
                   f"step): each waits for the GPU; fewer convergence checks (--tol, "
                   f"--max-iters) or a larger batch (--set batch_size=N) cut them.")
    st = profile.get("storage")
    if st:
        part = st["partitions"]
        if st["num_partitions"] > 1 and part["edge_max_over_mean"] > IMBALANCE:
            out.append(f"Partitions are unbalanced in edges (max/mean "
                       f"{part['edge_max_over_mean']:.2f}, CV {part['edge_cv']:.2f}): "
                       f"re-ingest with another partitioner (graphsys ingest "
                       f"--partitioner).")
        if (st["num_partitions"] > 1 and st["edge_cut"] > 0.5
                and (w.get("mode") == "out-of-core" or st.get("ranks"))):
            out.append(f"Edge-cut {st['edge_cut']:.0%}: most edges cross partitions; a "
                       f"locality-aware partitioner (graphsys ingest --partitioner) cuts "
                       f"out-of-core and distributed traffic.")
        r = st.get("ranks")
        if r and r["edge_max_over_mean"] > IMBALANCE:
            out.append(f"With {r['world_size']} ranks the slowest rank holds "
                       f"{r['edge_max_over_mean']:.2f}x the mean edges: a partition count "
                       f"that is a multiple of the rank count (graphsys ingest --partitions), "
                       f"or another partitioner (--partitioner).")
        ss = (r or {}).get("supersteps")
        if ss and ss["superstep_max_over_mean"] > IMBALANCE:
            out.append(f"With {r['world_size']} ranks each superstep waits for its busiest "
                       f"rank: {ss['superstep_max_over_mean']:.2f}x the work of perfectly "
                       f"balanced ranks (active edges per rank and superstep; totals max/mean "
                       f"{ss['max_over_mean']:.2f}): more partitions than ranks (graphsys "
                       f"ingest --partitions) or a partitioner that spreads high-degree "
                       f"vertices (--partitioner).")
    if not out:
        out.append("No change indicated by the measured figures (JIT, setup, sampling, I/O "
                   "and evaluation each under 20 % of the run; partitions balanced).")
    return out


def modelled_notes(profile: dict[str, Any]) -> list[str]:
    """What the SIMT / SM / warp model says of the BSP kernels on the modelled GPU, each
    note prefixed "Modelled for GPU <name>". Not advice for the run measured (the mapping is
    the GPU kernels' design; nothing in a CPU run acts on it)."""
    out: list[str] = []
    maps = profile["mappings"]
    simt = _per_mapping(profile["simt"], maps)
    lb = _per_mapping(profile["load_balance"], maps)
    pre = f"Modelled for GPU {lb[maps[0]].get('gpu', '?')}: "
    util = {m: simt[m]["mean_utilization"] for m in maps
            if simt[m]["mean_utilization"] is not None}
    # the vertex-to-thread mapping is a choice of the BSP engine's kernels only: embedding
    # and GNN workloads run library operators whose thread mapping their users cannot pick
    if not util or profile["workload"].get("kind", "bsp") != "bsp":
        return out
    best = max(util, key=lambda m: (util[m], -lb[m]["sm"]["max_over_mean"]))
    for m in maps:
        u = util.get(m)
        if u is not None and u < LOW_UTILIZATION and m != best:
            out.append(f"{pre}{m} would reach SIMT utilization {u:.0%} < "
                       f"{LOW_UTILIZATION:.0%} (the {best} mapping {util[best]:.0%}); "
                       f"low-degree vertices leave most lanes idle.")
    small = [m for m in maps if simt[m]["kernels"] and
             simt[m]["ctas"] / simt[m]["kernels"] < lb[m]["num_sms"]]
    if small:
        out.append(f"{pre}the grid is smaller than the GPU ({', '.join(small)}: fewer CTAs "
                   f"per kernel than the {lb[small[0]]['num_sms']} SMs), so SM balance "
                   f"mostly reflects idle SMs: the graph or frontier is too small to fill "
                   f"the GPU.")
    for m in maps:
        sm = lb[m]["sm"]
        if sm["max_over_mean"] > IMBALANCE and m not in small:
            out.append(f"{pre}{m}: SMs unbalanced (max/mean work {sm['max_over_mean']:.2f}, "
                       f"CV {sm['cv']:.2f})"
                       + ("; the last wave leaves SMs idle." if m == "edge-balanced" else
                          "; high-degree vertices concentrate work in a few CTAs."))
        wcv = lb[m]["warp"]["cv"]
        if wcv > 0.5 and m in WARP_CV_REMEDY:
            out.append(f"{pre}{m}: warps within a CTA differ strongly (mean CV {wcv:.2f}); "
                       f"{WARP_CV_REMEDY[m]}")
    return out


# ---------------------------------------------------------------------------------------------
# plots

#: Figure size (inches) and resolution of every plot: 720 x 340 px at 100 dpi.
FIGSIZE = (7.2, 3.4)
DPI = 100


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _legend_below(ax, handles=None, labels=None) -> None:
    """A legend under the axes (below the x label), one row, so it never covers data."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                  ncol=min(len(handles), 5), fontsize=9, frameon=False)


def _timeline(ranges: list[list], plt) -> str | None:
    """A Gantt chart of the measured named ranges (one row per range name, ``#<k>``
    suffixes merged), base64 PNG; ``None`` without ranges."""
    if not ranges:
        return None
    rows: dict[str, list[tuple[float, float]]] = {}
    for name, start, dur in ranges:
        rows.setdefault(name.split("#")[0], []).append((start, max(dur, 1e-6)))
    names = sorted(rows, key=lambda n: rows[n][0][0])
    fig, ax = plt.subplots(figsize=(FIGSIZE[0], 0.5 + 0.35 * len(names)))
    for y, n in enumerate(names):
        ax.broken_barh(rows[n], (y - 0.4, 0.8), color=f"C{y % 10}")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first range (measured, torch.profiler)")
    ax.set_title("Timeline of the named ranges (open the trace file in Perfetto for detail)")
    return _png(fig)


def plots(profile: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, base64 PNG) pairs: the measured timeline of the named ranges, then the
    modelled warps by utilization band, utilization per step (when there are several
    steps), work per SM, then measured invocations per step, transfers by size."""
    try:
        import matplotlib
    except ImportError:
        from graphsys.errors import GraphsysError

        raise GraphsysError("the HTML report's plots need matplotlib: "
                            "pip install 'graphsys[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    maps = profile["mappings"]
    simt = _per_mapping(profile["simt"], maps)
    lb = _per_mapping(profile["load_balance"], maps)
    out = []
    tl = _timeline(profile["kernels"].get("ranges") or [], plt)
    if tl is not None:
        out.append(("Measured: timeline of the named ranges", tl))

    # the modelled plots only where the model is shown (a CUDA run, or asked for): each
    # costs a figure and a PNG
    if profile.get("model_gpu", True):
        fig, ax = plt.subplots(figsize=FIGSIZE)
        width = 0.8 / len(maps)
        for i, m in enumerate(maps):
            h = np.asarray(simt[m]["histogram"]["warps"], float)
            ax.bar(np.arange(4) + i * width, h / max(h.sum(), 1), width, label=m)
        ax.set_xticks(np.arange(4) + 0.4 - width / 2, [f"{b} %" for b in simt[maps[0]][
            "histogram"]["bands"]])
        ax.set(ylim=(0, 1.05), ylabel="share of non-idle warps",
               xlabel="warp's SIMT lane utilization (active lane-iterations / 32 x iterations)",
               title="Modelled: warps by SIMT lane utilization")
        _legend_below(ax)
        out.append(("Modelled: warp utilization histogram", _png(fig)))

        steps = simt[maps[0]].get("per_step") or []
        if len(steps) > 1:
            fig, ax = plt.subplots(figsize=FIGSIZE)
            for m in maps:
                ps = simt[m]["per_step"]
                ax.plot([p["step"] for p in ps], [p["mean_utilization"] if p["mean_utilization"]
                                                   is not None else np.nan for p in ps],
                        marker="o", ms=3, label=m)
            ax.set(ylim=(0, 1.05), xlabel="superstep / step", ylabel="mean utilization (0-1)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax2 = ax.twinx()
            ax2.plot([p["step"] for p in steps], [p["active"] for p in steps], "k:",
                     label="active vertices (right axis)")
            # headroom: an all-active run's line would sit on the utilization-1 line
            ax2.set(ylim=(0, 1.25 * max([p["active"] for p in steps] + [1])),
                    ylabel="active vertices")
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            _legend_below(ax, h1 + h2, l1 + l2)
            ax.set_title("Modelled: utilization per step")
            out.append(("Modelled: utilization per step", _png(fig)))

        fig, ax = plt.subplots(figsize=FIGSIZE)
        for m in maps:
            w = np.asarray(lb[m]["sm"].get("work", []), float)
            if w.size and w.mean() > 0:
                ax.plot(np.arange(w.size), w / w.mean(), lw=1, label=m)
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.set_ylim(bottom=0)
        ax.set(xlabel="SM index (CTAs assigned round-robin)", ylabel="work / mean work",
               title=f"Modelled: work per SM, loop iterations over the mean "
                     f"({lb[maps[0]]['gpu']}, {lb[maps[0]]['num_sms']} SMs)")
        _legend_below(ax)
        out.append(("Modelled: work per SM", _png(fig)))

    k, ref = profile["kernels"], profile.get("dense_reference")
    fig, ax = plt.subplots(figsize=FIGSIZE)
    top = [0.0]
    if k.get("per_step"):
        xs = (k["sampling"]["recorded"] if k.get("sampling")
              and len(k["sampling"]["recorded"]) == len(k["per_step"])
              else range(len(k["per_step"])))
        ax.plot(list(xs), k["per_step"], "C0", marker="o", ms=3,
                label="graph workload" + (" (recorded steps)" if k.get("sampling") else ""))
        top += k["per_step"]
    elif k.get("mean_per_step"):  # one profiler range over the epoch: its mean per step
        ax.axhline(k["mean_per_step"], color="C0", label="graph workload (mean per step)")
        top.append(k["mean_per_step"])
    if ref and ref["kernels"].get("per_step"):
        ax.plot(ref["kernels"]["per_step"], "C1", marker="s", ms=3,
                label="dense MLP reference")
        top += ref["kernels"]["per_step"]
    ax.set_ylim(0, 1.1 * max(top) or 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="step", ylabel="invocations",
           title=f"Measured: invocations per step ({k['unit']})")
    _legend_below(ax)
    out.append(("Measured: invocations per step", _png(fig)))

    t = profile["transfers"]
    fig, ax = plt.subplots(figsize=(FIGSIZE[0], 3.0))
    labels = list(t["histogram"])
    ax.bar(labels, [t["histogram"][x] for x in labels])
    ax.set(xlabel="copy size", ylabel="copies")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(bottom=0)
    if not t["count"]:
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "no host<->device copies in this run"
                + ("" if t.get("counted", "").startswith("every") else
                   " (CPU only: nothing to copy)"),
                transform=ax.transAxes, ha="center", va="center", color="#555")
    ax.set_title(f"Measured: host<->device copies by size ({t['count']:,} copies, "
                 f"{t['bytes']:,} bytes)")
    out.append(("Measured: transfer sizes", _png(fig)))
    return out


# ---------------------------------------------------------------------------------------------
# HTML

_CSS = """body{font-family:sans-serif;max-width:980px;margin:1em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 8px;
text-align:right}th{background:#eee}td:first-child{text-align:left;white-space:nowrap}
img{max-width:100%;display:block;margin:.5em 0}li{margin:.3em 0}.note{color:#555;font-size:90%}"""


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return html.escape(str(v))


def _table(header: list[str], rows: list[list]) -> str:
    h = "".join(f"<th>{html.escape(x)}</th>" for x in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _ncu_section(n: dict[str, Any]) -> str:
    """The model-vs-Nsight-Compute comparison (the ``ncu`` section of a profile)."""
    model, measured, diff = (n["model_utilization"], n["measured_utilization"],
                             n["abs_difference"])

    def times32(v):
        return None if v is None else 32 * v

    out = ["<h2>Model vs Nsight Compute</h2>", _table(
        ["figure", f"model ({n['mapping']})", "measured (ncu, edge kernels)", "|difference|"],
        [["SIMT lane utilization", model, measured, diff],
         ["threads per warp instruction", times32(model),
          n["measured_threads_per_warp_instruction"], times32(diff)]])]
    out.append(f"<p class='note'>Measured: {html.escape(n['metric'])} weighted by "
               f"{html.escape(n['weight'])} over {n['edge_launches']:,} edge-kernel launches "
               f"of {n['launches']:,} profiled on {html.escape(str(n['device']))} with "
               f"Nsight Compute {html.escape(str(n.get('version') or '(version unknown)'))} "
               f"({n['unmeasured_launches']:,} without both metrics); edge kernels: "
               f"{html.escape(n['edge_kernel_rule'])}. Model: the {html.escape(n['mapping'])} "
               f"mapping, the engine's edge-parallel gather/scatter. Command: "
               f"<code>{html.escape(' '.join(n['command']))}</code></p>")
    out.append(_table(
        ["kernel", "edge kernel", "launches", "warp instructions",
         "threads / warp instruction", "utilization", "CTAs", "block sizes"],
        [[k["name"], "yes" if k["edge"] else "no", k["launches"], k["warp_instructions"],
          k["threads_per_warp_instruction"], k["utilization"], k["ctas"],
          ", ".join(str(b) for b in k["block_sizes"])] for k in n["kernels"]]))
    return "\n".join(out)


def render_html(profile: dict[str, Any]) -> str:
    """The whole report as one HTML string (no external assets)."""
    maps = profile["mappings"]
    simt = _per_mapping(profile["simt"], maps)
    lb = _per_mapping(profile["load_balance"], maps)
    k, t = profile["kernels"], profile["transfers"]
    ref = profile.get("dense_reference")
    w = profile["workload"]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>graphsys profile: "
             f"{html.escape(str(w.get('algorithm', w['kind'])))}</title><style>{_CSS}</style>"
             f"</head><body>",
             f"<h1>graphsys profile: {html.escape(str(w.get('algorithm', w['kind'])))}</h1>",
             f"<p>Graph <code>{html.escape(profile['graph']['path'])}</code>: "
             f"{profile['graph']['nodes']:,} nodes, {profile['graph']['edges']:,} edges, "
             f"{profile['graph']['num_partitions']} partitions.</p>",
             _table(["workload", ""], [[k_.replace("_", " "), v] for k_, v in w.items()]),
             "<h2>What to change</h2><ul>"
             + "".join(f"<li>{html.escape(a)}</li>" for a in profile["advice"]) + "</ul>",
             _time_html(profile.get("time")),
             "<h2>Measured: kernels and transfers</h2>",
             "<p class='note'>Measured in this run by torch.profiler (and a dispatch-mode "
             "copy counter); the SIMT and SM figures further down are modelled.</p>"]
    rk, rt = (ref["kernels"], ref["transfers"]) if ref else ({}, {})
    rows = [[label, ours.get(key), theirs.get(key)] for label, ours, theirs, key in (
        ("invocations", k, rk, "invocations"), ("unit", k, rk, "unit"),
        ("steps", k, rk, "steps"), ("mean per step", k, rk, "mean_per_step"),
        ("invocations per second", k, rk, "per_second"),
        ("mean µs per invocation", k, rk, "mean_us_per_invocation"),
        ("FLOPs per invocation", k, rk, "flops_per_invocation"),
        ("synchronisations", k, rk, "syncs"), ("transfers", t, rt, "count"),
        ("transfer bytes", t, rt, "bytes"), ("transfer seconds", t, rt, "seconds"))]
    parts.append(_table(["figure", "graph workload", "dense reference (MLP)"], rows))
    if k.get("sampling"):
        parts.append(f"<p class='note'>The profiler recorded {k['sampling']['recorded_steps']}"
                     f" of the {k['sampling']['steps']} steps (and everything outside the "
                     f"steps): {html.escape(k['sampling']['note'])}; invocations per step "
                     f"are the recorded steps'.</p>")
    what = "kernel" if k["unit"] == "CUDA kernels" else "operator"
    if k.get("self_time"):
        parts.append(f"<h3>{what.capitalize()}s by self time</h3>")
        parts.append(_table([what, "count", "self seconds", "total seconds"],
                            [[x["name"], x["count"], x["self_seconds"], x["total_seconds"]]
                             for x in k["self_time"]]))
    parts.append(f"<h3>Top-level {what}s by time</h3>")
    parts.append(_table([f"top {what}", "count", "seconds"],
                        [[x["name"], x["count"], x["seconds"]] for x in k.get("top", [])]))
    first = lb[maps[0]]
    if not profile.get("model_gpu", True):
        parts.append("<h2>Modelled GPU figures</h2><p class='note'>Not shown for a CPU run "
                     "(the SIMT / SM / warp model describes GPU kernels this run did not "
                     "launch); they are in the JSON, and graphsys profile --model-gpu GPU "
                     "shows them here.</p>")
        return _close(parts, profile)
    parts.append(f"<h2>Modelled for GPU {html.escape(str(first['gpu']))}: SIMT lane "
                 f"utilization and load balance</h2>")
    if profile.get("modelled"):
        parts.append("<ul>" + "".join(f"<li>{html.escape(a)}</li>"
                                      for a in profile["modelled"]) + "</ul>")
    parts.append(f"<p class='note'>Modelled for {html.escape(str(first['gpu']))} from the "
                 f"{html.escape(str(w.get('simt_source', 'degrees')))}, not measured"
                 + (" (a CUDA run's measured kernel times are in the table above)."
                    if k["unit"] == "CUDA kernels" else
                    "; this run was on the CPU, so no GPU kernel was measured.")
                 + "</p>")
    parts.append(_table(
        ["mapping", "mean utilization", "warps 0-25 %", "25-50 %", "50-75 %", "75-100 %",
         "idle warps", "SM max/mean", "SM CV", "CTA CV", "warp CV (in CTA)"],
        [[m, simt[m]["mean_utilization"], *simt[m]["histogram"]["warps"],
          simt[m]["idle_warps"], lb[m]["sm"]["max_over_mean"], lb[m]["sm"]["cv"],
          lb[m]["cta"]["cv"], lb[m]["warp"]["cv"]] for m in maps]))
    parts.append(f"<p class='note'>Warp size 32, CTA {simt[maps[0]]['block_size']} threads, "
                 f"{html.escape(str(first['gpu']))} with {first['num_sms']} SMs, "
                 f"{first['resident_ctas_per_sm']} resident CTAs per SM; utilization = "
                 f"active lane-iterations / (32 x warp-iterations), weighted per warp "
                 f"instruction as Nsight Compute's threads per warp instruction.</p>")
    if profile.get("ncu"):
        parts.append(_ncu_section(profile["ncu"]))
    return _close(parts, profile)


def _time_html(tm: dict[str, Any] | None) -> str:
    """The measured split of the wall time (the ``time`` section) as a table."""
    if not tm:
        return ""
    rows = [[p["name"], p["seconds"], p["share"], p["count"] or None] for p in tm["parts"]]
    rows.append(["sum of the named parts", tm["attributed_seconds"], tm["attributed_share"],
                 None])
    prof = "; ".join(f"{html.escape(p['name'])} {p['seconds']:.3f} s"
                     for p in tm.get("profiler", []))
    phases = [[p["name"], p["seconds"], p["share"]] for p in tm.get("phases", [])]
    return (f"<h2>Measured: where the {tm['wall_seconds']:.3f} s went</h2>"
            f"<p class='note'>Wall time from the {html.escape(tm['from'])} to the end of the "
            f"profiled run, split into exclusive parts (a range's own time, without the "
            f"kernels, operators and ranges inside it)"
            + (f"; {html.escape(tm['sampled']['note'])}" if tm.get("sampled") else "")
            + ".</p>"
            + _table(["part", "seconds", "share of wall", "invocations"], rows)
            + ("<h3>By phase</h3><p class='note'>The same wall time, each named range with "
               "the kernels and operators inside it.</p>"
               + _table(["phase", "seconds", "share of wall"], phases) if phases else "")
            + (f"<p class='note'>The profiler's own work, not part of the run: {prof}.</p>"
               if prof else "")
            + _threads_html(tm.get("threads", [])) + _overhead_html(tm.get("overhead")))


def _threads_html(threads: list[dict[str, Any]]) -> str:
    """The other threads' CPU time and what each spent it on, as a table."""
    if not threads:
        return ""
    rows = [[t["thread"] + (f" ({t['threads']} threads)" if t["threads"] > 1 else ""),
             t["cpu_seconds"],
             "; ".join(f"{s['what']} {s['share']:.0%}" for s in t["spent_on"])
             or "(no Python frames: a native pool)"] for t in threads]
    return ("<h3>Other threads</h3><p class='note'>CPU time of the threads beside the "
            "profiled one while the run ran (sampler and loader workers, prefetch and "
            "bucket readers, native pools): beside the wall time above, not part of it. "
            "What each spent it on: shares of its Python stack samples by innermost "
            "graphsys function.</p>"
            + _table(["thread", "CPU seconds", "spent on"], rows))


def _overhead_html(o: dict[str, Any] | None) -> str:
    """The profiler's own cost: seconds outside the run and peak memory."""
    if not o:
        return ""
    gb = 1e9
    return (f"<p class='note'><b>The profiler's own cost</b>: {o['profiler_seconds']:.3f} s "
            f"of {o['total_seconds']:.3f} s ({o['share']:.0%}) outside the run (start, "
            f"stop, analysis of {o['events']:,} events, model and advice); peak RSS "
            f"{o['peak_rss_bytes'] / gb:.3f} GB, {o['peak_rss_run_bytes'] / gb:.3f} GB by "
            f"the end of the run (the run and the profiler's records). Recording also "
            f"slows the run itself: compare with the plain command.</p>")


def _close(parts: list[str], profile: dict[str, Any]) -> str:
    """The storage, plots and JSON sections after the kernels' (and model's) sections."""
    st = profile.get("storage")
    if st:
        parts.append("<h2>Partitions and buckets</h2>")
        rows = [["partition nodes max/mean", st["partitions"]["node_max_over_mean"]],
                ["partition nodes CV", st["partitions"]["node_cv"]],
                ["partition edges max/mean", st["partitions"]["edge_max_over_mean"]],
                ["partition edges CV", st["partitions"]["edge_cv"]],
                ["bucket max/mean", st["buckets"]["max_over_mean"]],
                ["bucket CV", st["buckets"]["cv"]], ["edge-cut", st["edge_cut"]]]
        if "ranks" in st:
            rows += [[f"rank edges max/mean ({st['ranks']['world_size']} ranks)",
                      st["ranks"]["edge_max_over_mean"]],
                     ["rank edges CV", st["ranks"]["edge_cv"]]]
            ss = st["ranks"].get("supersteps")
            if ss:
                rows += [["rank active edges, run total, max/mean", ss["max_over_mean"]],
                         ["rank active edges, run total, CV", ss["cv"]],
                         ["superstep busiest rank / mean rank (sum over supersteps)",
                          ss["superstep_max_over_mean"]]]
        parts.append(_table(["figure", "value"], rows))
    parts.append("<h2>Plots</h2>")
    for title, b64 in plots(profile):
        parts.append(f"<h3>{html.escape(title)}</h3><img alt='{html.escape(title)}' "
                     f"src='data:image/png;base64,{b64}'>")
    parts.append("<h2>JSON</h2><p class='note'>The same figures are in the JSON file written "
                 "beside this page.</p></body></html>")
    return "\n".join(parts)
