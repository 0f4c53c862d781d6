"""``profile_graph``: run a workload, the SIMT model and the balance figures, and assemble the
report dictionary (the JSON of ``graphsys profile``); :func:`write_report` writes the HTML
page and JSON atomically; :func:`demo_step` is the ``graphsys demo`` step.

The JSON layout is in docs/architecture.md ("The profile's JSON").
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
from graphsys.errors import GraphsysError, ParameterError, check_count

__all__ = ["demo_step", "key_figures", "profile_graph", "write_report"]

WORKLOADS = ("bsp", "embed", "gnn", "mining")


def profile_graph(graph, *, algorithm: str | None = None, workload: str = "bsp",
                  mappings: list[str] | None = None, device: str = "cpu",
                  backend: str = "auto", mode: str = "auto", gpu: str | None = None,
                  schedule: str = "auto", threads: int | None = None,
                  damping: float | None = None, tol: float | None = None,
                  sum_dtype: str | None = None, store_index: bool | None = None,
                  model_gpu: bool | None = None, started: float | None = None,
                  progress: bool = False,
                  block_size: int = DEFAULT_BLOCK,
                  items_per_thread: int = DEFAULT_ITEMS_PER_THREAD,
                  max_iters: int | None = None, source=None, edge_set: str | None = None,
                  ranks: int = 1, dense: bool = True, steps: int | None = None,
                  batch_size: int | None = None,
                  dimension: int = 32, ncu: bool = False, ncu_path: str | None = None,
                  ncu_launch_count: int | None = None, trace=None,
                  embed_config=None, gnn_config=None, step_schedule="auto") -> dict[str, Any]:
    """Profile one workload on a graph: where it would lose GPU efficiency, and why.

    Runs the workload (a BSP algorithm, an embedding model or a GNN) under
    ``torch.profiler`` and counts its kernel invocations, host-device transfers and
    synchronisations; replays every superstep's frontier (or every sampled block) through
    an exact SIMT model of the vertex-to-thread ``mappings`` (lane utilization, SM / CTA /
    warp load balance); reads partition and bucket balance from storage; and derives plain
    advice from those numbers. The result is the dictionary ``graphsys profile --json``
    prints (its layout: docs/architecture.md);
    :func:`write_report` turns it into an HTML page.

    Parameters
    ----------
    graph : Graph or str or path-like
        An opened graph, or a graph directory.
    algorithm : str, optional
        The BSP algorithm to run (``"pagerank"``, ``"bfs"``, ``"sssp"``, ...); required by
        the ``"bsp"`` workload, ignored otherwise.
    workload : {"bsp", "embed", "gnn", "mining"}, default "bsp"
        What to profile: a BSP algorithm, embedding training steps, GNN training steps or
        a triangle count (:mod:`graphsys.analysis.mining_workload`: the intersection work
        per vertex and its split over threads, in ``workload["balance"]``).
    mappings : str or list of str, optional
        Vertex-to-thread mappings the SIMT model evaluates (default: every one of
        :data:`~graphsys.analysis.simt.MAPPINGS`). With one mapping the ``simt`` and
        ``load_balance`` sections are flat; with several they are keyed by mapping.
    device : {"cpu", "cuda", "cuda:k", "auto"}, default "cpu"
        Where the workload runs (:func:`graphsys.device.resolve_device`).
    backend : {"auto", "numba", "torch"}, default "auto"
        BSP backend of the profiled run, as ``graphsys run --backend`` (``"auto"``: numba
        kernels on the CPU, torch on CUDA; ``"torch"`` on the CPU runs the GPU code path).
    mode : {"auto", "memory", "out-of-core"}, default "auto"
        BSP mode, as ``graphsys run --mode``: the whole graph in memory, or partitions
        streamed from disk; ``"auto"`` picks as the engine does
        (:func:`~graphsys.bsp.engine.choose_mode`: memory for a run from scratch).
        ``workload["mode"]`` says which ran.
    gpu : str, optional
        The GPU the SIMT and SM model assumes (its SM count); default the one present,
        else an H100.
    schedule : {"auto", "sync", "async"}, default "auto"
        BSP schedule, as ``graphsys run --schedule`` (``"auto"``: the algorithm's own
        whole-graph method where it declares one; the profile's ``workload["method"]``
        says which ran).
    threads : int, optional
        Numba / out-of-core worker threads (default: numba's thread count).
    damping, tol, sum_dtype : optional
        PageRank's parameters, as ``graphsys run`` takes them (None: the algorithm's
        default; given to an algorithm without them: refused).
    store_index : bool, optional
        PageRank's (None: True): False leaves the graph directory untouched (by default an in-memory
        run without a stored push index, where pushing pays, stores one there, as
        ``graphsys run`` does; ``graphsys run --no-store-index``).
    model_gpu : bool, optional
        Whether the modelled SIMT / SM / warp notes (``modelled``, each labelled "Modelled
        for GPU <name>") and the model's section of the HTML report are given: default
        only for a run on a CUDA device or with ``ncu``. The figures themselves are always
        in the ``simt`` and ``load_balance`` sections; ``advice`` never draws on them.
    progress : bool, default False
        Progress of the ``embed`` and ``gnn`` workloads' batches on stderr, as ``embed
        train`` and ``gnn train`` show it (:mod:`graphsys.progress`).
    started : float, optional
        The process's start as a :func:`time.perf_counter` value
        (:func:`graphsys.analysis.timing.process_start`): the ``time`` section then
        counts start-up and imports; default: it starts when this function is called.
    block_size : int, default 256
        Threads per CTA in the model: a multiple of 32 in ``[32, 1024]``.
    items_per_thread : int, default 4
        Edges a thread takes per step in the ``edge-balanced`` mapping, in ``[1, 64]``.
    max_iters : int, optional
        Superstep limit of the BSP algorithm.
    source : int or str, optional
        The source node of ``bfs`` / ``sssp`` / personalized PageRank (an original id).
    edge_set : str, optional
        The edge set to profile (default: the graph's default edge set).
    ranks : int, default 1
        Also split the partitions over this many ranks and report the per-rank work of
        every superstep (``storage.ranks``).
    dense : bool, default True
        Also profile a dense MLP with the same FLOPs per step, as a reference of what a
        GPU-friendly workload looks like (``dense_reference``).
    steps : int, optional
        At most this many training batches: of the ``embed`` workload's epoch (default:
        the whole epoch) and of each epoch of the ``gnn`` workload (default: every batch;
        5 synthetic steps on a graph without labels).
    batch_size : int, optional
        Batch size of the ``embed`` or ``gnn`` workload (default: the model's own).
    dimension : int, default 32
        Embedding dimension of the default ``embed`` model.
    ncu : bool, default False
        Also run the BSP algorithm on CUDA under Nsight Compute and compare its measured
        threads per warp instruction with the ``edge-balanced`` model (which is then
        added to ``mappings``; :mod:`graphsys.analysis.ncu`). The GPU and ``ncu`` are
        checked before anything runs.
    ncu_path : str, optional
        The ``ncu`` executable (default: ``ncu`` on ``PATH``).
    ncu_launch_count : int, optional
        Profile only the first this many kernel launches (default: every launch).
    trace : str or path-like, optional
        Also write the profiled run's Chrome trace here (``.json``, with the engines'
        named ranges, see :mod:`graphsys.trace`); the path is checked first.
    embed_config : EmbedConfig, optional
        The user's :class:`~graphsys.embed.EmbedConfig` for ``workload="embed"`` (default:
        a small model of ``dimension``).
    gnn_config : TrainConfig, optional
        The user's :class:`~graphsys.gnn.TrainConfig` for ``workload="gnn"`` (default:
        :data:`~graphsys.analysis.gnn_workload.GNN_DEFAULTS`).
    step_schedule : StepSchedule or None or "auto", default "auto"
        The training steps of the ``gnn`` workload the profiler records
        (:class:`~graphsys.analysis.sampling.StepSchedule`: the first 10, then 3 of every
        40 by default; None: every step, as with ``trace``); the others run unrecorded
        and the recorded steps' times and counts are scaled to every step
        (``time["sampled"]`` says how).

    Returns
    -------
    dict
        Plain numbers, lists and strings: ``graph``, ``workload``, ``mappings``,
        ``kernels``, ``transfers``, ``simt``, ``load_balance``, ``storage``, ``advice``,
        ``seconds``, and ``dense_reference`` / ``ncu`` when asked for.

    Raises
    ------
    ParameterError
        A value that cannot be used (``algorithm`` missing for the ``bsp`` workload, a
        block size that is not a multiple of 32, more ranks than partitions, ...).
    GraphsysError
        An unknown workload, algorithm, mapping or GPU, or a graph that cannot be opened.

    See Also
    --------
    write_report : the HTML page and JSON of a profile.
    graphsys.analysis.simt_model : the SIMT model alone, on a degree array.

    References
    ----------
    .. [1] Q. Xu, H. Jeon and M. Annavaram, "Graph processing on GPUs: Where are the
       bottlenecks?", IEEE International Symposium on Workload Characterization
       (IISWC), 2014.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.analysis import profile_graph
    >>> src, dst = np.array([0, 0, 0, 1, 2, 3]), np.array([1, 2, 3, 2, 3, 0])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> prof = profile_graph(g, algorithm="pagerank", max_iters=3,
    ...                      mappings=["thread-per-vertex", "edge-balanced"], dense=False)
    >>> prof["graph"]["nodes"], prof["graph"]["edges"], prof["workload"]["supersteps"]
    (4, 6, 3)
    >>> {m: round(s["mean_utilization"], 3) for m, s in prof["simt"].items()}
    {'thread-per-vertex': 0.094, 'edge-balanced': 0.078}
    >>> prof["workload"]["backend"], prof["workload"]["method"].split()[0]  # as graphsys run
    ('numba', 'fused-pagerank')
    >>> 0 < prof["time"]["attributed_share"] <= 1  # of the wall time, named parts
    True
    >>> prof["modelled"]  # a CPU run: the GPU model gives no advice
    []
    """
    from graphsys import jit
    from graphsys.analysis.balance import rank_split
    from graphsys.analysis.kernels import dense_reference
    from graphsys.analysis.ncu import ENGINE_MAPPING, measure, preflight, validation
    from graphsys.analysis.ncu_target import target_command
    from graphsys.analysis.report import advice, modelled_notes
    from graphsys.analysis.workloads import SimtRecorder
    from graphsys.device import resolve_device
    from graphsys.storage.graph import Graph, open_graph

    t0 = time.perf_counter()
    jit_before = jit.cache_counts()
    trace = _check_arguments(workload, embed_config=embed_config, gnn_config=gnn_config,
                             step_schedule=step_schedule, ncu=ncu,
                             ncu_launch_count=ncu_launch_count, trace=trace)
    t_open = time.perf_counter()
    g = graph if isinstance(graph, Graph) else open_graph(graph)
    stamps = {"graph open": time.perf_counter() - t_open}
    rank_split(g.num_partitions, ranks)  # bad ranks fail before anything runs
    if isinstance(mappings, str):  # one mapping ('edge-balanced' read as 'e', 'd', ...)
        mappings = [mappings]
    maps = list(dict.fromkeys(resolve_mapping(m) for m in (mappings or MAPPINGS)))
    if ncu and ENGINE_MAPPING not in maps:
        maps.append(ENGINE_MAPPING)
    check_block_size(block_size)
    dev = str(resolve_device(device))
    setup = preflight(device, ncu_path) if ncu else None
    gpu_spec = resolve_gpu(gpu)
    rec = SimtRecorder(maps, block_size, items_per_thread, gpu_spec)
    bsp = {"source": source, "backend": backend, "mode": mode, "max_iters": max_iters,
           "schedule": schedule, "damping": damping, "tol": tol, "sum_dtype": sum_dtype,
           "store_index": store_index}
    w, ranked = _run_workload(g, workload, rec, dev, algorithm=algorithm, bsp=bsp,
                              ranks=ranks, edge_set=edge_set, threads=threads, trace=trace,
                              steps=steps, batch_size=batch_size, progress=progress,
                              dimension=dimension, embed_config=embed_config,
                              gnn_config=gnn_config, step_schedule=step_schedule)
    t_run = time.perf_counter()
    out = _run_sections(g, edge_set, w, maps, jit_before)
    if dense:
        fps = w["flops"] / max(w["steps"], 1)
        out["dense_reference"] = dense_reference(fps, min(max(w["steps"], 1), 50), device=dev)
    out.update(_model_sections(rec, g, out["graph"]["edge_set"], ranks, ranked))
    if ncu:
        app = target_command(g.location.uri, algorithm, device=setup.device, mode=mode,
                             max_iters=max_iters, source=source, edge_set=edge_set)
        cmd, launches, secs = measure(setup, app, launch_count=ncu_launch_count)
        model = out["simt"] if len(maps) == 1 else out["simt"][ENGINE_MAPPING]
        out["ncu"] = validation(cmd, launches, secs, model["mean_utilization"], setup)
    start = t0 if started is None else started
    out["time"] = _time_section(w, start, t0, stamps, t_run, started is not None)
    out["kernels"].update(_invocation_rates(out, w))
    out["model_gpu"] = (dev.startswith("cuda") or ncu) if model_gpu is None else bool(
        model_gpu)
    out["gpu"] = gpu_spec.name
    out["advice"] = advice(out)
    out["modelled"] = modelled_notes(out) if out["model_gpu"] else []
    out["seconds"] = time.perf_counter() - t0
    out["time"]["profiler"].append({"name": "SIMT model, balance, dense reference and "
                                            "advice (after the run)",
                                    "seconds": time.perf_counter() - t_run})
    out["time"]["overhead"] = overhead(out["time"], start, w["stats"].timing)
    return out


def _check_arguments(workload: str, *, embed_config, gnn_config, step_schedule, ncu: bool,
                     ncu_launch_count: int | None, trace):
    """:func:`profile_graph`'s checks of the arguments that need no graph, each refusal one
    line; returns ``trace`` checked (:func:`graphsys.trace.check_trace_path`)."""
    from graphsys.trace import check_trace_path

    if workload not in WORKLOADS:
        raise GraphsysError(f"unknown workload {workload!r} (choose from embed, gnn, mining, "
                            f"or a BSP algorithm)")
    if embed_config is not None and workload != "embed":
        raise GraphsysError("embed_config applies to the embed workload")
    if gnn_config is not None and workload != "gnn":
        raise GraphsysError("gnn_config applies to the gnn workload")
    if not (isinstance(step_schedule, str) and step_schedule == "auto") and workload != "gnn":
        raise ParameterError("step_schedule", "applies to the gnn workload (the others "
                                              "record every step)")
    if ncu and workload != "bsp":
        raise ParameterError("ncu", "validates the BSP engine's kernels: name a BSP "
                                    "algorithm, not the embed, gnn or mining workload")
    if ncu_launch_count is not None:
        check_count("ncu_launch_count", ncu_launch_count)
    return None if trace is None else check_trace_path(trace)


def _run_workload(g, workload: str, recorder, device: str, *, algorithm: str | None,
                  bsp: dict[str, Any], ranks: int, edge_set: str | None, threads: int | None,
                  trace, steps: int | None, batch_size: int | None, progress: bool,
                  dimension: int, embed_config, gnn_config, step_schedule):
    """``workload`` run under the profiler with :func:`profile_graph`'s arguments (``bsp``:
    the BSP run's keywords): its figures, and the per-rank work of a BSP run's supersteps
    over several ``ranks`` (:class:`~graphsys.analysis.balance.RankWork`), else None."""
    from graphsys.analysis import workloads as W

    if workload == "bsp":
        from graphsys.analysis.balance import RankWork, rank_bounds

        if algorithm is None:
            raise ParameterError("algorithm", "is needed by the bsp workload: name a BSP "
                                              "algorithm (e.g. pagerank), or profile the "
                                              "embed or gnn workload")
        ranked = RankWork(rank_bounds(g, ranks)) if ranks > 1 else None
        return W.profile_bsp(g, algorithm, recorder=recorder, device=device,
                             edge_set=edge_set, threads=threads, rank_work=ranked,
                             trace=trace, **bsp), ranked
    if workload == "mining":
        from graphsys.analysis.mining_workload import profile_mining

        return profile_mining(g, recorder=recorder, threads=threads, edge_set=edge_set,
                              trace=trace), None
    if workload == "embed":
        return W.profile_embed(g, recorder=recorder, device=device, dimension=dimension,
                               batch_size=batch_size, edge_set=edge_set, trace=trace,
                               config=embed_config, steps=steps, progress=progress), None
    from graphsys.analysis.gnn_workload import profile_gnn
    from graphsys.analysis.sampling import DEFAULT_SCHEDULE

    return profile_gnn(g, recorder=recorder, device=device, steps=steps, config=gnn_config,
                       batch_size=batch_size, trace=trace, progress=progress,
                       schedule=DEFAULT_SCHEDULE if step_schedule == "auto"
                       else step_schedule), None


def _run_sections(g, edge_set: str | None, w: dict[str, Any], maps: list[str],
                  jit_before: dict[str, int]) -> dict[str, Any]:
    """The report's sections on the run itself: ``graph``, ``workload``, ``mappings``,
    ``kernels``, ``transfers`` and ``jit`` (the kernel signatures compiled, i.e. cache
    misses, and loaded from the kernel cache since ``jit_before``)."""
    from graphsys import jit

    jit_after = jit.cache_counts()
    d = w["stats"].to_dict()
    if d["kernels"].get("steps", 0) == 0:
        d["kernels"]["steps"] = w["steps"]
    es = g.edge_set(edge_set)
    return {"graph": {"path": str(g.path), "nodes": g.num_nodes(), "edges": es.num_edges,
                      "edge_set": es.name, "num_partitions": g.num_partitions},
            "workload": w["workload"], "mappings": maps,
            "kernels": d["kernels"], "transfers": d["transfers"],
            "jit": {k: jit_after[k] - jit_before[k] for k in jit_after} | {
                "cache": jit.cache_location()}}


def _model_sections(rec, g, edge_set: str, ranks: int, ranked) -> dict[str, Any]:
    """The SIMT model's sections: ``simt`` and ``load_balance`` of ``rec`` (flat for one
    mapping, else keyed by mapping) and ``storage`` (also in ``load_balance``), with the
    per-rank work of every superstep (``ranked``) under ``storage.ranks`` when given."""
    from graphsys.analysis.balance import storage_balance

    maps = rec.mappings
    sims = rec.result()
    lbs = {m: r.pop("load_balance") for m, r in sims.items()}
    out = {"simt": sims[maps[0]] if len(maps) == 1 else sims,
           "load_balance": dict(lbs[maps[0]] if len(maps) == 1 else lbs),
           "storage": storage_balance(g, edge_set, ranks)}
    if ranked is not None:
        out["storage"]["ranks"]["supersteps"] = ranked.result()
    out["load_balance"]["storage"] = out["storage"]
    return out


def overhead(tm: dict[str, Any], start: float, timing: dict[str, Any]) -> dict[str, Any]:
    """The profiler's own cost, as far as one run can tell it: ``profiler_seconds`` (its
    work outside the run: start, stop, event analysis, model, advice; the ``profiler``
    parts), ``total_seconds`` (from ``start`` until now), ``share`` of it, ``events``
    (records analysed), ``peak_rss_run_bytes`` (the process's peak by the end of the run:
    the run and the profiler's records), ``peak_rss_bytes`` (the peak until now) and
    ``peak_rss_after_run_bytes`` (how much the analysis raised it). Recording slows the
    run itself too (a record per operator): only a plain run of the same command
    measures that (``benchmarks/analysis/profile_overhead.py``)."""
    from graphsys.memory import lifetime_peak_rss

    own = sum(p["seconds"] for p in tm["profiler"])
    total = time.perf_counter() - start
    peak = lifetime_peak_rss()
    run_peak = int(timing.get("peak_rss_run") or 0)
    return {"profiler_seconds": own, "total_seconds": total,
            "share": own / total if total > 0 else None,
            "events": int(timing.get("events") or 0),
            "peak_rss_run_bytes": run_peak, "peak_rss_bytes": peak,
            "peak_rss_after_run_bytes": max(0, peak - run_peak)}


def _time_section(w: dict[str, Any], start: float, entry: float, stamps: dict[str, float],
                  t_run: float, process: bool) -> dict[str, Any]:
    """The ``time`` section (:func:`graphsys.analysis.timing.account`): the run's wall time
    from ``start`` (the process's start, or this call's) to the end of the profiled
    section, split into named parts."""
    from graphsys.analysis.timing import account

    tm = w["stats"].timing
    before = [("start-up and imports (interpreter, graphsys, command line)",
               entry - start)] if process else []
    before += [("graph open (manifest, partitions)", stamps["graph open"]),
               ("preparation (lazy imports of torch/numba modules, program, config, sampler, "
                "model)", tm["start"] - entry - stamps["graph open"])]
    # the profiler's start (between the preparation and the run) is not part of the run,
    # nor are its stops and restarts between sampled steps
    cycles = tm.get("cycle_seconds", 0.0)
    wall = tm["window_end"] - start - (tm["window_start"] - tm["start"]) - cycles
    after = [("profiler start", tm["window_start"] - tm["start"])]
    sampling = w["stats"].extra.get("sampling")
    if sampling:
        after.append((f"profiler stops, event reading and restarts between sampled steps "
                      f"({sampling['cycles']} cycles)", cycles))
    after += [("profiler stop", tm["stopped"] - tm["window_end"]),
              ("profiler event analysis", tm["analysis_seconds"])]
    if w.get("model_seconds"):
        after.append(("model run for the SIMT frontiers (numba, BSP supersteps)",
                      w["model_seconds"]))
    out = account(wall, before, tm["window_end"] - tm["window_start"] - cycles, tm["parts"],
                  tm["phases"], after)
    out["from"] = "process start" if process else "profile_graph call"
    if sampling:
        out["sampled"] = {k: sampling[k] for k in ("steps", "recorded_steps", "time_scale",
                                                   "count_scale", "note")}
    out["threads"] = tm.get("threads", [])
    return out


def _invocation_rates(out: dict[str, Any], w: dict[str, Any]) -> dict[str, Any]:
    """Kernel invocations (numba calls and top-level torch operators) per superstep / step
    and per edge, the graph workload's and the dense reference's side by side."""
    k = out["kernels"]
    steps = max(int(w["steps"]), 1)
    edges = out["workload"].get("edges_scanned") or out["workload"].get("edges_trained")
    # inside the steps (setup, evaluation and finish left out) where steps were marked
    inv = sum(k["per_step"]) if k.get("per_step") else k["invocations"]
    per_step = k["mean_per_step"] if k.get("mean_per_step") is not None else inv / steps
    r = {"invocations_per_step": per_step,
         "invocations_per_edge": per_step * steps / edges if edges else None,
         "edges_per_step": edges / steps if edges else None}
    ref = out.get("dense_reference")
    if ref:
        dk = ref["kernels"]
        r["dense_invocations_per_step"] = dk["invocations"] / max(int(dk.get("steps") or 1), 1)
        r["invocations_per_step_over_dense"] = (r["invocations_per_step"]
                                                / r["dense_invocations_per_step"]
                                                if dk["invocations"] else None)
    return r


def report_paths(html_path: str | Path, *, overwrite: bool = False,
                 json_path: str | Path | None = None) -> tuple[Path, Path]:
    """The HTML page's and its JSON's paths (default JSON: ``html_path`` with suffix
    ``.json``), refused with one line when either exists (unless ``overwrite``) or its
    directory does not, or lies in a graph or checkpoint directory
    (:func:`graphsys.outputs.check_output`): callers check before a run, so a profile is
    never thrown away."""
    from graphsys.outputs import check_output, check_parent

    html_path = Path(html_path)
    jpath = Path(json_path) if json_path else html_path.with_suffix(".json")
    for p in (html_path, jpath):
        check_parent(p)
        check_output(p, overwrite=overwrite, name="report")
    return html_path, jpath


def write_report(profile: dict[str, Any], html_path: str | Path, *, overwrite: bool = False,
                 json_path: str | Path | None = None) -> tuple[Path, Path]:
    """Write a profile as an HTML page (plots embedded) and as JSON.

    Both paths are checked before anything is written; each file is written atomically
    (a temporary file renamed into place), so a reader never sees half a report.

    Parameters
    ----------
    profile : dict
        A result of :func:`profile_graph`.
    html_path : str or path-like
        The page to write (``.html``); its directory must exist.
    overwrite : bool, default False
        Replace existing files; otherwise an existing page or JSON is refused.
    json_path : str or path-like, optional
        Where the JSON goes (default: ``html_path`` with the suffix ``.json``).

    Returns
    -------
    tuple of Path
        ``(html_path, json_path)``.

    Raises
    ------
    GraphsysError
        A file already exists (without ``overwrite``) or a directory does not.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.analysis import profile_graph, write_report
    >>> tmp = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]), tmp + "/g")
    >>> prof = profile_graph(g, algorithm="pagerank", max_iters=2,
    ...                      mappings=["edge-balanced"], dense=False)
    >>> html, js = write_report(prof, tmp + "/profile.html")
    >>> html.name, js.name
    ('profile.html', 'profile.json')
    """
    from graphsys.analysis.report import render_html
    from graphsys.storage.atomic import write_bytes_atomic

    html_path, jpath = report_paths(html_path, overwrite=overwrite, json_path=json_path)
    page = render_html(profile)
    write_bytes_atomic(jpath, json.dumps(profile, default=str, indent=1).encode(),
                       overwrite=overwrite)
    write_bytes_atomic(html_path, page.encode(), overwrite=overwrite)
    return html_path, jpath


def key_figures(profile: dict[str, Any]) -> dict[str, Any]:
    """The headline numbers of a profile, for a one-line summary.

    Parameters
    ----------
    profile : dict
        A result of :func:`profile_graph`.

    Returns
    -------
    dict
        ``invocations`` and ``mean_per_step`` (kernel invocations), ``dense_mean_per_step``
        (the dense reference's, or None), ``transfers`` and ``transfer_bytes``, and under
        ``simt`` per mapping: ``mean_utilization``, ``warps_by_band``,
        ``sm_max_over_mean``, ``sm_cv`` and ``warp_cv``.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.analysis import key_figures, profile_graph
    >>> g = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]),
    ...                         tempfile.mkdtemp() + "/g")
    >>> prof = profile_graph(g, algorithm="pagerank", max_iters=2,
    ...                      mappings=["edge-balanced"], dense=False)
    >>> figures = key_figures(prof)
    >>> figures["transfers"], figures["simt"]["edge-balanced"]["mean_utilization"]
    (0, 0.046875)
    """
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
    """The profiling step of ``graphsys demo``: PageRank on a graph, report written.

    Profiles five supersteps of PageRank under every mapping and writes
    ``out_dir/profile.html`` and ``out_dir/profile.json`` (replacing earlier ones).

    Parameters
    ----------
    graph_dir : str or path-like
        A graph directory.
    out_dir : str or path-like
        Where the report goes (created if missing).

    Returns
    -------
    dict
        ``report`` and ``json`` (the paths), ``seconds``, ``advice`` and the
        :func:`key_figures`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prof = profile_graph(graph_dir, algorithm="pagerank", max_iters=5)
    html_path, json_path = write_report(prof, out_dir / "profile.html", overwrite=True)
    return {"report": str(html_path), "json": str(json_path), "seconds": prof["seconds"],
            **key_figures(prof), "advice": prof["advice"]}
