"""``graphsys profile``: kernel invocations, transfers, SIMT lane utilization and load balance
of a BSP algorithm (``graphsys profile ALGO DIR``) or a training workload (``graphsys profile
--workload embed|gnn|mining DIR``), as a self-contained HTML report plus JSON. ``--workload
mining`` profiles a triangle count (``graphsys mine triangles``) and tells how its
intersection work spreads over vertices and threads. ``--workload embed``
profiles your embedding config (``--config``, ``--set``), ``--workload gnn`` your ``gnn train``
setup (``--model``, ``--set hidden=128``, ``--set fanouts=15,10``): ``graphsys gnn train``
itself, one epoch unless ``--set epochs=N``, evaluation and checkpoints included.
A BSP algorithm runs as ``graphsys run`` runs it (same ``--backend``, ``--schedule``,
``--threads``, ``--mode`` and their defaults); the first line says which path it took.

The measured section splits the wall time, from the process's start, into named parts:
start-up and imports, graph open, preparation, JIT compilation, setup (layout build,
index mapping), each numba kernel and torch operator with its invocation count, transfers,
the engine's Python between kernels, I/O waits, sampling, evaluation, checkpoints.
The other threads (sampler and loader workers, bucket readers, native pools) get a line
each: their CPU time beside that wall time and what they spent it on. The profiler's own
cost (its seconds outside the run, the events it analysed, the process's peak RSS) is
stated last. A GNN profile records the first 10 training steps, then 3 of every 40
(``torch.profiler``'s wait / warm-up / active cycle, each cycle's records read and
dropped) and everything outside the steps; the recorded steps' operator times and counts
are scaled to every step by wall time and count, and the summary says from how many
steps. ``--all-steps`` (or ``--trace``) records every step.

The report's "what to change" section is derived from the measured figures and names the
flag or config key that acts on each item. The modelled SIMT / SM / warp figures are
labelled "modelled for GPU X" and shown for a CUDA run or with ``--model-gpu``. On a
machine with a CUDA GPU and Nsight Compute, ``--ncu`` also runs the algorithm
on CUDA under ``ncu`` and compares the measured threads per warp instruction of the engine's
edge kernels with the edge-balanced model (the report's "Model vs Nsight Compute" section).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from graphsys.commands._common import (
    add_quiet_arg,
    add_trace_arg,
    emit_json,
    show_progress,
    trace_path,
    typed_ids,
)
from graphsys.errors import GraphsysError, check_count
from graphsys.plugins import ALGORITHMS


def register(subparsers) -> None:
    p = subparsers.add_parser("profile", help="profile a workload: kernels, SIMT, balance",
                              description=__doc__)
    p.add_argument("targets", nargs="+", metavar="[ALGO] DIR",
                   help=f"a BSP algorithm ({', '.join(ALGORITHMS.names())}) and a graph "
                        f"directory; only DIR "
                        "with --workload embed|gnn|mining")
    p.add_argument("--workload", choices=("bsp", "embed", "gnn", "mining"), default="bsp",
                   help="what to profile (default: the BSP algorithm ALGO); mining: a "
                        "triangle count and its intersection work per vertex and thread")
    p.add_argument("--mapping", action="append", metavar="NAME",
                   help="vertex-to-thread mapping(s), repeatable or comma-separated: "
                        "thread-per-vertex, warp-per-vertex, cta-per-vertex, edge-balanced "
                        "(merge-path); default: all four")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    p.add_argument("--backend", default="auto",
                   help="BSP backend, as graphsys run: auto (default: numba on CPU, torch on "
                        "CUDA), numba or torch (on CPU: the GPU code path)")
    p.add_argument("--mode", default="auto",
                   help="BSP mode, as graphsys run: auto (default: memory for a run from "
                        "scratch), memory or out-of-core")
    p.add_argument("--schedule", default="auto",
                   help="BSP schedule, as graphsys run: auto (default), sync or async")
    p.add_argument("--threads", type=int, help="numba / out-of-core worker threads, as "
                                               "graphsys run (default: numba's)")
    p.add_argument("--damping", type=float, help="PageRank damping (0.85)")
    p.add_argument("--tol", type=float, metavar="X", help="PageRank / HITS tolerance")
    p.add_argument("--sum-dtype", choices=("auto", "float64", "float32"),
                   help="PageRank sum dtype on CPU, as graphsys run (default auto)")
    p.add_argument("--no-store-index", action="store_true",
                   help="pagerank, ppr: leave the graph directory untouched, as graphsys run "
                        "--no-store-index (by default an in-memory run without a push index, "
                        "where pushing pays, stores one there)")
    p.add_argument("--gpu", help="GPU the SM model assumes: H100 (132 SMs), H200, A100, V100, "
                                 "L4, T4, RTX4090, B200 or auto (default: present GPU, else H100)")
    p.add_argument("--model-gpu", metavar="GPU", nargs="?", const="auto",
                   help="also advise from the modelled SIMT / SM / warp figures, labelled "
                        "'modelled for GPU' (default: only for a run on CUDA); GPU as --gpu")
    add_quiet_arg(p)
    p.add_argument("--block-size", type=int, default=256, help="threads per CTA (default 256)")
    p.add_argument("--items-per-thread", type=int, default=4,
                   help="merge-path items per thread (default 4)")
    p.add_argument("--max-iters", type=int, metavar="N", help="most supersteps")
    p.add_argument("--source", metavar="ID", help="source node id (bfs, sssp, ppr)")
    p.add_argument("--edges", metavar="SET",
                   help="edge set; several read as one joined by commas (default,day2), "
                        "or all (default: the graph's default view, which includes the edge "
                        "sets appended to it)")
    p.add_argument("--ranks", type=int, default=1,
                   help="also report the balance of this many distributed ranks: their "
                        "partitions' nodes and edges, and (BSP) every superstep's active "
                        "edges per rank")
    p.add_argument("--steps", type=int,
                   help="at most N training batches: of the embedding epoch (default: all) "
                        "/ of each GNN epoch (default: all; 5 synthetic steps on a graph "
                        "without labels)")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="--workload embed: the embedding config to profile (TOML/JSON, or a "
                        "PyTorch-BigGraph .py), as graphsys embed train reads it")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="KEY=VALUE",
                   help="override a config key: --workload embed: the embedding config's; "
                        "--workload gnn: gnn train's (model, fanouts=10,5, hidden, heads, "
                        "dropout, lr, weight_decay, batch_size, seed; default GraphSAGE, "
                        "fanouts 10,5, hidden 64, lr 0.01)")
    p.add_argument("--model", metavar="MODEL",
                   help="--workload gnn: pinsage, sage, gcn, gat, gin or module:Factory, as "
                        "graphsys gnn train --model (same as --set model=MODEL)")
    p.add_argument("--batch-size", type=int, help="embed positives / GNN seeds per batch")
    p.add_argument("--no-dense", action="store_true", help="skip the dense MLP reference")
    p.add_argument("--all-steps", action="store_true",
                   help="record every training step of the gnn workload (default: the "
                        "first 10, then 3 of every 40, scaled to all; more time and memory)")
    p.add_argument("--ncu", action="store_true",
                   help="validate the SIMT model: run the algorithm on CUDA under Nsight "
                        "Compute and compare the measured threads per warp instruction of "
                        "the engine's edge kernels with the edge-balanced mapping (added to "
                        "--mapping); needs a CUDA GPU and ncu")
    p.add_argument("--ncu-path", metavar="PATH",
                   help="the ncu executable (default: ncu on PATH)")
    p.add_argument("--ncu-launch-count", type=int, metavar="N",
                   help="profile only the first N kernel launches under ncu (default: all)")
    p.add_argument("--report", type=Path, metavar="OUT.html",
                   help="write the HTML report here and its JSON beside it (OUT.json)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing report or trace")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    add_trace_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from graphsys.analysis.timing import process_start

    started = process_start()
    from graphsys.analysis.profile import (
        profile_graph,
        report_paths,
        write_report,
    )
    from graphsys.outputs import check_outputs, check_parent

    algo, graph = _targets(args)
    html = page_json = None
    if args.report is not None:
        if args.report.suffix.lower() not in (".html", ".htm"):
            raise GraphsysError(f"--report {args.report}: expected an .html file name")
        check_parent(args.report, f"--report {args.report}")
        # the page and its JSON, checked before the run so that no profile is thrown away
        html, page_json = report_paths(args.report, overwrite=args.overwrite)
    trace = trace_path(args)
    check_outputs([("--report", html, "file"), ("--report's JSON", page_json, "file"),
                   ("--trace", args.trace, "file")], overwrite=args.overwrite)
    mappings = _check_flags(args)
    embed_config = gnn_config = None
    if args.workload == "embed" and (args.config is not None or args.overrides):
        from graphsys.embed import load_config

        embed_config = load_config(args.config, args.overrides, graph=graph)
    if args.workload == "gnn":
        from graphsys.analysis.gnn_workload import GNN_DEFAULTS
        from graphsys.gnn.overrides import train_config_from_overrides

        model = [] if args.model is None else [f"model={args.model}"]
        gnn_config = train_config_from_overrides(model + args.overrides, GNN_DEFAULTS)
    source = None
    if args.source is not None:
        from graphsys.storage.graph import open_graph

        graph = open_graph(graph)
        source = typed_ids(graph, [args.source], "--source")[0]
    _check_bsp_flags(args)
    from graphsys.memory import PeakMemory

    with PeakMemory() as peak:
        prof = profile_graph(graph, algorithm=algo, workload=args.workload, mappings=mappings,
                             device=args.device, backend=args.backend, mode=args.mode,
                             schedule=args.schedule, threads=args.threads, damping=args.damping,
                             tol=args.tol, sum_dtype=args.sum_dtype,
                             store_index=False if args.no_store_index else None,
                             model_gpu=True if args.model_gpu is not None else None,
                             started=started, progress=show_progress(args),
                             gpu=args.gpu, block_size=args.block_size,
                             items_per_thread=args.items_per_thread, max_iters=args.max_iters,
                             source=source, edge_set=args.edges, ranks=args.ranks,
                             dense=not args.no_dense, steps=args.steps,
                             batch_size=args.batch_size, ncu=args.ncu, ncu_path=args.ncu_path,
                             ncu_launch_count=args.ncu_launch_count, trace=trace,
                             embed_config=embed_config, gnn_config=gnn_config,
                             step_schedule=None if args.all_steps else "auto")
    prof.update(peak.to_json())  # the process's peak while profiling, total and anonymous
    paths = None
    t_report = time.perf_counter()
    if args.report is not None:
        paths = write_report(prof, args.report, overwrite=args.overwrite)
    t_report = time.perf_counter() - t_report
    if args.json:
        emit_json(prof)
        return 0
    _print_summary(prof, t_report, started, paths)
    return 0


def _targets(args) -> tuple[str | None, Path]:
    """``(algorithm, graph directory)`` of the positional targets (ALGO DIR for a BSP
    algorithm, DIR for the other workloads), refused in one line where they do not fit."""
    t = args.targets
    if args.workload == "bsp":
        if len(t) != 2:
            raise GraphsysError("give ALGO DIR, or --workload embed|gnn|mining DIR (see graphsys "
                                "profile --help)")
        algo, graph = t[0], Path(t[1])
        ALGORITHMS.get(algo).check_source(args.source)
        from graphsys.commands.run import _FLAGGED, _taking

        for name, given in (("tol", args.tol), ("damping", args.damping),
                            ("sum_dtype", args.sum_dtype),
                            ("store_index", args.no_store_index or None)):
            if given is not None and name not in ALGORITHMS.get(algo).parameters:
                raise GraphsysError(f"{_FLAGGED[name]} applies to {_taking(name)}, not "
                                    f"{algo}")
    else:
        if len(t) != 1:
            raise GraphsysError(f"--workload {args.workload} takes only DIR")
        algo, graph = None, Path(t[0])
    return algo, graph


def _check_flags(args) -> list[str] | None:
    """The one-line refusals of flags that do not fit the workload; returns the
    ``--mapping`` names (None: the default mappings)."""
    if args.max_iters is not None:
        check_count("max_iters", args.max_iters)
    if not args.ncu and (args.ncu_path is not None or args.ncu_launch_count is not None):
        raise GraphsysError("--ncu-path and --ncu-launch-count apply with --ncu only")
    mappings = None
    if args.mapping:
        mappings = [m.strip() for x in args.mapping for m in x.split(",") if m.strip()]
        if not mappings:        # '--mapping ,' named none: not the default of all four
            raise GraphsysError(f"--mapping names no mapping (got {args.mapping[0]!r}); "
                                f"leave it out for all four")
    if args.steps is not None:
        check_count("steps", args.steps)
    if args.model is not None and args.workload != "gnn":
        raise GraphsysError("--model applies to --workload gnn")
    if args.all_steps and args.workload != "gnn":
        raise GraphsysError("--all-steps applies to --workload gnn (the other workloads "
                            "record every step)")
    if args.config is not None and args.workload != "embed":
        raise GraphsysError("--config applies to --workload embed")
    if args.overrides and args.workload in ("bsp", "mining"):
        raise GraphsysError("--set applies to --workload embed|gnn")
    return mappings


def _check_bsp_flags(args) -> None:
    """Refuse a BSP algorithm's flag given to another workload, and ``--model-gpu`` naming
    a GPU other than ``--gpu`` (``--model-gpu NAME`` becomes ``--gpu NAME``)."""
    if args.threads is not None and args.threads < 1:
        raise GraphsysError(f"--threads must be positive, got {args.threads}")
    if args.workload != "bsp":
        for flag, given in (("--schedule", args.schedule != "auto"),
                            ("--threads", args.threads is not None
                             and args.workload != "mining"),
                            ("--backend", args.backend != "auto"),
                            ("--tol", args.tol is not None),
                            ("--damping", args.damping is not None),
                            ("--sum-dtype", args.sum_dtype is not None),
                            ("--no-store-index", args.no_store_index)):
            if given:
                raise GraphsysError(f"{flag} applies to a BSP algorithm, not --workload "
                                    f"{args.workload}")
    if args.model_gpu is not None and args.model_gpu != "auto":
        if args.gpu is not None and args.gpu.lower() != args.model_gpu.lower():
            raise GraphsysError(f"--model-gpu {args.model_gpu} and --gpu {args.gpu} differ")
        args.gpu = args.model_gpu


def _print_summary(prof: dict, t_report: float, started: float, paths) -> None:
    """The profile's text summary: the time's parts, invocations, the SIMT model and the
    advice."""
    from graphsys.analysis.profile import key_figures

    figs = key_figures(prof)
    w = prof["workload"]
    if w.get("path"):
        print(f"profiled: {w['path']}")
    tm = prof["time"]
    print(f"wall {tm['wall_seconds']:.3f} s (from {tm['from']}), named parts "
          f"{tm['attributed_share']:.1%}:")
    if tm.get("sampled"):
        print(f"  ({tm['sampled']['note']})")
    for part in tm["parts"][:12]:
        count = f" x{part['count']:,}" if part["count"] else ""
        print(f"  {part['seconds']:>9.4f} s {part['share']:>6.1%}  {part['name']}{count}")
    if len(tm["parts"]) > 12:
        rest = tm["parts"][12:]
        print(f"  {sum(p['seconds'] for p in rest):>9.4f} s "
              f"{sum(p['share'] for p in rest):>6.1%}  {len(rest)} smaller parts (see --json "
              f"or --report)")
    for line in thread_lines(tm.get("threads", [])):
        print(line)
    print(overhead_line(tm["overhead"], t_report, started))
    k = prof["kernels"]
    print(f"invocations: {k['invocations_per_step']:.3g} per step, "
          + (f"{k['invocations_per_edge']:.3g} per edge, " if k.get("invocations_per_edge")
             else "")
          + (f"dense MLP of equal FLOPs {k['dense_invocations_per_step']:.3g} per step "
             f"(ratio {k['invocations_per_step_over_dense']:.3g})"
             if k.get("dense_invocations_per_step") else "no dense reference"))
    print(f"{prof['workload'].get('algorithm', prof['workload']['kind'])}: "
          f"{figs['invocations']:,} {prof['kernels']['unit']} "
          f"({_f(figs['mean_per_step'])} per step; "
          f"dense reference {_f(figs['dense_mean_per_step'])}), "
          f"{figs['transfers']} transfers ({figs['transfer_bytes']:,} bytes)")
    if prof["model_gpu"]:
        print(f"modelled for GPU {prof['gpu']} (not measured):")
    for m, s in figs["simt"].items() if prof["model_gpu"] else ():
        print(f"  {m:>18}: utilization {_f(s['mean_utilization'])}, warps by band "
              f"{s['warps_by_band']}, SM max/mean {s['sm_max_over_mean']:.3f}, SM CV "
              f"{s['sm_cv']:.3f}, warp CV {s['warp_cv']:.3f}")
    n = prof.get("ncu")
    if n:
        print(f"  ncu: measured utilization {_f(n['measured_utilization'])} over "
              f"{n['edge_launches']:,} edge-kernel launches (of {n['launches']:,}), model "
              f"({n['mapping']}) {_f(n['model_utilization'])}, |difference| "
              f"{_f(n['abs_difference'])}")
    for a in prof["modelled"]:
        print(f"  - {a}")
    if w["kind"] == "mining":
        b = w["balance"]
        print(f"triangles: {w['triangles']:,} from the {w['kernel']} vertex, "
              f"{b['total']:,} probes")
        if b["per_vertex"]:
            pv, st, ts = b["per_vertex"], b["static_split"], b["task_split"]
            print(f"  per vertex: max/mean {pv['max_over_mean']:.3g}, CV {pv['cv']:.3g}, "
                  f"heaviest 1% {pv['top_1pct_share']:.1%} of the work")
            print(f"  {st['threads']} threads: static ranges max/mean "
                  f"{st['max_over_mean']:.3f}, equal-work tasks ({ts['tasks']:,}) "
                  f"{ts['max_over_mean']:.3f} (bound {ts['bound']:.3f})")
    print("what to change:")
    for a in prof["advice"]:
        print(f"  - {a}")
    if paths:
        print(f"wrote {paths[0]} and {paths[1]}", file=sys.stderr)


def thread_lines(threads: list[dict], rows: int = 6) -> list[str]:
    """The other threads' lines of the summary: CPU seconds (beside the wall time above,
    not part of it) and what each spent them on."""
    if not threads:
        return []
    out = ["other threads (CPU time while the run ran, beside its wall time):"]
    for t in threads[:rows]:
        spent = ", ".join(f"{s['what']} {s['share']:.0%}" for s in t["spent_on"][:3])
        many = f" ({t['threads']} threads)" if t["threads"] > 1 else ""
        out.append(f"  {t['cpu_seconds']:>9.4f} s CPU  {t['thread']}{many}"
                   + (f": {spent}" if spent else " (no Python frames)"))
    if len(threads) > rows:
        out.append(f"  {sum(t['cpu_seconds'] for t in threads[rows:]):>9.4f} s CPU  "
                   f"{len(threads) - rows} more threads (see --json or --report)")
    return out


def overhead_line(o: dict, report_seconds: float, started: float | None) -> str:
    """The profiler's own cost in one line: its seconds outside the run (and the
    report's), the process's seconds so far and its peak resident memory."""
    from graphsys.memory import lifetime_peak_rss

    own = o["profiler_seconds"] + report_seconds
    total = (time.perf_counter() - started if started is not None
             else o["total_seconds"] + report_seconds)
    gb = 1e9
    return (f"profiler's own cost: {own:.2f} s of the process's {total:.2f} s "
            f"({own / total:.0%}: start, stop, analysis of {o['events']:,} events, model"
            + (", report" if report_seconds > 0.0005 else "") + "); peak RSS "
            f"{lifetime_peak_rss() / gb:.2f} GB, {o['peak_rss_run_bytes'] / gb:.2f} GB by "
            f"the end of the run")


def _f(v) -> str:
    return "-" if v is None else f"{v:.3g}"
