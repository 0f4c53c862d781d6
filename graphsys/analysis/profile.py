"""``profile_graph``: run a workload, the SIMT model and the balance figures, and assemble the
report dictionary (the JSON of ``graphsys profile``); :func:`write_report` writes the HTML
page and JSON atomically; :func:`demo_step` is the ``graphsys demo`` step.

JSON layout (every figure a plain number, list or string):

* ``kernels``: ``invocations`` (int), ``per_step`` (list of int), ``mean_per_step``,
  ``per_second``, ``mean_us_per_invocation``, ``flops_per_invocation``, ``syncs``, ``top``;
* ``transfers``: ``count``, ``bytes``, ``seconds``, ``h2d``/``d2h``/``d2d``, ``histogram``;
* ``dense_reference``: the same two sections for the MLP reference, plus ``model``;
* ``simt``: ``mean_utilization`` (0..1), ``histogram`` (``bands``, ``warps``,
  ``warp_iterations``), ``per_step`` ... - keyed by mapping when several mappings are asked;
* ``load_balance``: ``sm`` (``max_over_mean``, ``cv``, ``work``), ``cta`` (``cv``), ``warp``
  (``cv``: mean within-CTA CV) - keyed by mapping likewise - and ``storage`` (partition and
  bucket balance, edge-cut, per-rank split; for a BSP run with ``ranks`` > 1 also
  ``storage.ranks.supersteps``: every superstep's active edges per rank, their totals'
  max/mean and CV, and ``superstep_max_over_mean``, see
  :class:`graphsys.analysis.balance.RankWork`);
* ``ncu`` (with ``ncu=True``, see :mod:`graphsys.analysis.ncu`): ``model_utilization``
  (the ``edge-balanced`` mapping's), ``measured_utilization`` (Nsight Compute, edge
  kernels), ``abs_difference``, ``kernels`` (every profiled kernel grouped by function
  name), launch counts, the ``command`` that ran and the ncu ``version``;
* ``advice``: list of strings; ``mappings``; ``graph``; ``workload``; ``seconds``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from graphsys.analysis.simt import (
    DEFAULT_BLOCK,
    DEFAULT_ITEMS_PER_THREAD,
    MAPPINGS,
    check_block_size,
    resolve_gpu,
    resolve_mapping,
)
from graphsys.errors import GraphsysError, ParameterError

WORKLOADS = ("bsp", "embed", "gnn")


def profile_graph(graph, *, algorithm: str | None = None, workload: str = "bsp",
                  mappings: list[str] | None = None, device: str = "cpu",
                  backend: str = "torch", mode: str = "memory", gpu: str | None = None,
                  block_size: int = DEFAULT_BLOCK,
                  items_per_thread: int = DEFAULT_ITEMS_PER_THREAD,
                  max_iters: int | None = None, source=None, edge_set: str | None = None,
                  ranks: int = 1, dense: bool = True, steps: int | None = None,
                  batch_size: int | None = None,
                  dimension: int = 32, ncu: bool = False, ncu_path: str | None = None,
                  ncu_launch_count: int | None = None, trace=None,
                  embed_config=None, gnn_config=None) -> dict[str, Any]:
    """Profile one workload on ``graph`` (an opened Graph or a directory); see the module
    docstring for the result. ``device``: cpu/cuda/auto; ``gpu``: the GPU the SIMT and SM
    model assumes (default: the one present, else H100).

    ``ncu``: also run the BSP algorithm on CUDA under Nsight Compute (``ncu_path``, default
    ``ncu`` on PATH; every kernel launch, or the first ``ncu_launch_count``) and compare
    the measured threads per warp instruction with the ``edge-balanced`` model, which is
    added to ``mappings`` (:mod:`graphsys.analysis.ncu`). The GPU and ncu are checked before
    anything runs. ``trace``: write the profiled run's Chrome trace (with the engines' named
    ranges, :mod:`graphsys.trace`) there; the path is checked first. ``embed_config``: the
    user's :class:`~graphsys.embed.config.EmbedConfig` for ``workload="embed"`` (else a
    default model of ``dimension``); ``steps`` bounds its batches (default
    :data:`~graphsys.analysis.workloads.EMBED_STEPS`) and the GNN steps (default 5).
    ``gnn_config``: the user's :class:`~graphsys.gnn.train.TrainConfig` for
    ``workload="gnn"`` (else :data:`~graphsys.analysis.workloads.GNN_DEFAULTS`)."""
    from graphsys.analysis.balance import (
        RankWork,
        rank_bounds,
        rank_split,
        storage_balance,
    )
    from graphsys.analysis.kernels import dense_reference
    from graphsys.analysis.ncu import (
        ENGINE_MAPPING,
        measure,
        preflight,
        validation,
    )
    from graphsys.analysis.ncu_target import target_command
    from graphsys.analysis.report import advice
    from graphsys.analysis.workloads import (
        SimtRecorder,
        profile_bsp,
        profile_embed,
        profile_gnn,
    )
    from graphsys.device import resolve_device
    from graphsys.storage.graph import Graph, open_graph

    t0 = time.perf_counter()
    if workload not in WORKLOADS:
        raise GraphsysError(f"unknown workload {workload!r} (choose from embed, gnn, or a BSP "
                            f"algorithm)")
    if embed_config is not None and workload != "embed":
        raise GraphsysError("embed_config applies to the embed workload")
    if gnn_config is not None and workload != "gnn":
        raise GraphsysError("gnn_config applies to the gnn workload")
    if ncu and workload != "bsp":
        raise ParameterError("ncu", "validates the BSP engine's kernels: name a BSP "
                                    "algorithm, not the embed or gnn workload")
    if ncu_launch_count is not None and ncu_launch_count < 1:
        raise ParameterError("ncu_launch_count", f"must be a positive integer, got "
                                                 f"{ncu_launch_count}")
    if trace is not None:
        from graphsys.trace import check_trace_path

        trace = check_trace_path(trace)
    g = graph if isinstance(graph, Graph) else open_graph(graph)
    rank_split(g.num_partitions, ranks)  # bad ranks fail before anything runs
    maps = list(dict.fromkeys(resolve_mapping(m) for m in (mappings or MAPPINGS)))
    if ncu and ENGINE_MAPPING not in maps:
        maps.append(ENGINE_MAPPING)
    check_block_size(block_size)
    dev = str(resolve_device(device))
    setup = preflight(device, ncu_path) if ncu else None
    gpu_spec = resolve_gpu(gpu)
    rec = SimtRecorder(maps, block_size, items_per_thread, gpu_spec)
    ranked = None
    if workload == "bsp":
        if algorithm is None:
            raise ParameterError("algorithm", "is needed by the bsp workload: name a BSP "
                                              "algorithm (e.g. pagerank), or profile the "
                                              "embed or gnn workload")
        ranked = RankWork(rank_bounds(g, ranks)) if ranks > 1 else None
        w = profile_bsp(g, algorithm, recorder=rec, source=source, device=dev,
                        backend=backend, mode=mode, max_iters=max_iters, edge_set=edge_set,
                        rank_work=ranked, trace=trace)
    elif workload == "embed":
        w = profile_embed(g, recorder=rec, device=dev, dimension=dimension,
                          batch_size=batch_size, edge_set=edge_set, trace=trace,
                          config=embed_config, steps=steps)
    else:
        w = profile_gnn(g, recorder=rec, device=dev, steps=steps or 5, config=gnn_config,
                        batch_size=batch_size, trace=trace)
    d = w["stats"].to_dict()
    if d["kernels"].get("steps", 0) == 0:
        d["kernels"]["steps"] = w["steps"]
    es = g.edge_set(edge_set)
    out: dict[str, Any] = {
        "graph": {"path": str(g.path), "nodes": g.num_nodes(), "edges": es.num_edges,
                  "edge_set": es.name, "num_partitions": g.num_partitions},
        "workload": w["workload"], "mappings": maps,
        "kernels": d["kernels"], "transfers": d["transfers"],
    }
    if dense:
        fps = w["flops"] / max(w["steps"], 1)
        out["dense_reference"] = dense_reference(fps, min(max(w["steps"], 1), 50), device=dev)
    simt = rec.result()
    sims, lbs = {}, {}
    for m, r in simt.items():
        lbs[m] = r.pop("load_balance")
        sims[m] = r
    if len(maps) == 1:
        out["simt"] = sims[maps[0]]
        out["load_balance"] = dict(lbs[maps[0]])
    else:
        out["simt"] = sims
        out["load_balance"] = dict(lbs)
    out["storage"] = storage_balance(g, es.name, ranks)
    if ranked is not None:
        out["storage"]["ranks"]["supersteps"] = ranked.result()
    out["load_balance"]["storage"] = out["storage"]
    if ncu:
        app = target_command(g.location.uri, algorithm, device=setup.device, mode=mode,
                             max_iters=max_iters, source=source, edge_set=edge_set)
        cmd, launches, secs = measure(setup, app, launch_count=ncu_launch_count)
        out["ncu"] = validation(cmd, launches, secs, sims[ENGINE_MAPPING]["mean_utilization"],
                                setup)
    out["advice"] = advice(out)
    out["seconds"] = time.perf_counter() - t0
    return out


def report_paths(html_path: str | Path, *, overwrite: bool = False,
                 json_path: str | Path | None = None) -> tuple[Path, Path]:
    """The HTML page's and its JSON's paths (default JSON: ``html_path`` with suffix
    ``.json``), refused with one line when either exists (unless ``overwrite``) or its
    directory does not, or lies in a graph or checkpoint directory
    (:func:`graphsys.outputs.check_output`): callers check before a run, so a profile is
    never thrown away."""
    from graphsys.outputs import check_output

    html_path = Path(html_path)
    jpath = Path(json_path) if json_path else html_path.with_suffix(".json")
    for p in (html_path, jpath):
        if not p.parent.is_dir():
            raise GraphsysError(f"{p}: directory {p.parent} does not exist")
        check_output(p, overwrite=overwrite, name="report")
    return html_path, jpath


def write_report(profile: dict[str, Any], html_path: str | Path, *, overwrite: bool = False,
                 json_path: str | Path | None = None) -> tuple[Path, Path]:
    """Write the HTML page and its JSON (default: ``html_path`` with suffix ``.json``),
    each atomically. Returns both paths."""
    from graphsys.analysis.report import render_html
    from graphsys.storage.atomic import write_bytes_atomic

    html_path, jpath = report_paths(html_path, overwrite=overwrite, json_path=json_path)
    page = render_html(profile)
    write_bytes_atomic(jpath, json.dumps(profile, default=str, indent=1).encode())
    write_bytes_atomic(html_path, page.encode())
    return html_path, jpath


def key_figures(profile: dict[str, Any]) -> dict[str, Any]:
    """A one-line summary: invocations, transfers, and per mapping utilization and balance."""
    maps = profile["mappings"]
    simt = profile["simt"] if len(maps) > 1 else {maps[0]: profile["simt"]}
    lb = profile["load_balance"] if len(maps) > 1 else {maps[0]: profile["load_balance"]}
    ref = profile.get("dense_reference")
    return {
        "invocations": profile["kernels"]["invocations"],
        "mean_per_step": profile["kernels"].get("mean_per_step"),
        "dense_mean_per_step": ref["kernels"].get("mean_per_step") if ref else None,
        "transfers": profile["transfers"]["count"],
        "transfer_bytes": profile["transfers"]["bytes"],
        "simt": {m: {"mean_utilization": simt[m]["mean_utilization"],
                     "warps_by_band": simt[m]["histogram"]["warps"],
                     "sm_max_over_mean": lb[m]["sm"]["max_over_mean"],
                     "sm_cv": lb[m]["sm"]["cv"], "warp_cv": lb[m]["warp"]["cv"]}
                 for m in maps},
    }


def demo_step(graph_dir: str | Path, out_dir: str | Path) -> dict[str, Any]:
    """Profile PageRank (5 supersteps, every mapping) on ``graph_dir`` and write
    ``out_dir/profile.html`` and ``profile.json``; returns the paths and key figures."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prof = profile_graph(graph_dir, algorithm="pagerank", max_iters=5)
    html_path, json_path = write_report(prof, out_dir / "profile.html", overwrite=True)
    return {"report": str(html_path), "json": str(json_path), "seconds": prof["seconds"],
            **key_figures(prof), "advice": prof["advice"]}
