"""``graphsys run``: a BSP algorithm over a stored graph, one output row per node.

The graph is opened once and its edges read at most once before superstep 0 (not at all
where it has an adjacency index, ``graphsys index``); unless ``--no-verify``, every file the
run reads is checked against its manifest sha256 when first read (``graphsys verify`` checks
every file, and edge order, up front).

Writes ``--out`` (Parquet: ``node`` = original id, ``value`` = float64, for hits a list
``[hub, authority]``; ``inf`` where BFS/SSSP cannot reach; a global node id as label for
wcc/lpa; kcore adds ``order``, its peeling position) atomically, and prints one line
per superstep (active vertices, messages, edges scanned, bytes, seconds). Under ``torchrun``
(``WORLD_SIZE`` > 1: ``torchrun --nproc-per-node W -m graphsys run ALGO DIR ...``) every rank
runs its partitions and rank 0 writes the output.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from graphsys.commands._common import (
    add_time_args,
    add_trace_arg,
    emit_json,
    graph_arg,
    trace_path,
    typed_ids,
)
from graphsys.errors import ConvergenceWarning, GraphsysError, check_count
from graphsys.plugins import ALGORITHMS


class _AlgorithmAndGraph(argparse.Action):
    """``ALGO DIR`` or, with ``--program``, ``DIR`` alone: sets ``algorithm`` (None when
    left out) and ``graph``; more than two is refused by :func:`run`."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.algorithm = values[0] if len(values) > 1 else None
        namespace.graph = graph_arg(values[-1])
        namespace.extra_positionals = values[2:]


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a BSP algorithm (pagerank, bfs, ...)",
                              description=__doc__,
                              usage="graphsys run [options] (ALGO | --program MODULE:CLASS) "
                                    "DIR")
    p.add_argument("positional", nargs="+", metavar="ALGO DIR", action=_AlgorithmAndGraph,
                   help=f"ALGO: one of {', '.join(ALGORITHMS.names())} (left out with "
                        f"--program); DIR: the graph directory")
    p.add_argument("--out", type=Path, metavar="FILE.parquet", help="per-node output")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out or --trace file")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (default: cpu)")
    p.add_argument("--mode", default="auto",
                   help="auto, memory or out-of-core (default: auto: memory, but a run "
                        "started from a previous result expected to end within a few "
                        "supersteps streams the edges rather than building the adjacency)")
    p.add_argument("--backend", default="auto", help="auto, numba or torch (default: auto)")
    p.add_argument("--source", metavar="ID", help="source node id (bfs, sssp, ppr)")
    p.add_argument("--max-iters", type=int, metavar="N", help="most supersteps")
    p.add_argument("--tol", type=float, metavar="X",
                   help="PageRank L1 tolerance (1e-6); HITS hub L1 change (1e-8)")
    p.add_argument("--damping", type=float, help="PageRank damping (0.85)")
    p.add_argument("--sum-dtype", choices=("auto", "float64", "float32"),
                   help="PageRank: the dtype messages are sent and summed in on CPU "
                        "(default auto: float32 sent values in memory when --tol >= 1e-6 "
                        "and unweighted, float64 otherwise; float32 halves the cache "
                        "footprint, relative error bounded by (in-degree + 1) * 2^-24 per "
                        "sum, see docs)")
    p.add_argument("--weights", dest="weighted", choices=("auto", "use", "ignore"),
                   help="pagerank, ppr, hits, louvain, leiden: follow the edge weights "
                        "(networkx's default weight='weight'): auto (default) when the edge "
                        "set has them, use (refused without them), ignore (every edge counts "
                        "1); betweenness, closeness, harmonic: weights as lengths with use "
                        "(default: hops, networkx's weight=None); the summary line and "
                        "--json's 'weighted' say which ran")
    p.add_argument("--no-store-index", action="store_true",
                   help="pagerank, ppr: leave the graph directory untouched (by default an "
                        "in-memory run on a graph without a push index, where pushing pays, "
                        "stores one and its CSC there for later runs; graphsys index --push "
                        "stores it explicitly)")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="NAME=VALUE",
                   help="an algorithm parameter, as the Python function takes it (VALUE a "
                        "TOML literal): betweenness/closeness/harmonic k=50 seed=1 "
                        "sources=[1,2] normalized=false endpoints=true wf_improved=false; "
                        "louvain/leiden resolution=0.5 seed=1 directed=false, leiden "
                        "iterations=-1 theta=0.01; kcore self_loops=refuse")
    p.add_argument("--allow-unconverged", action="store_true",
                   help="accept a run that stops at --max-iters before converging (exit 0, "
                        "a warning, the last iterate written); without it such a run exits "
                        "non-zero and writes nothing")
    p.add_argument("--edges", metavar="SET",
                   help="edge set; several read as one joined by commas (default,day2), "
                        "or all (default: the graph's default view, which includes the edge "
                        "sets appended to it)")
    add_time_args(p, "run on")
    p.add_argument("--init", default="auto", metavar="PREV.parquet|auto|none",
                   help="start from a previous result of this algorithm on an earlier "
                        "version of the edges, e.g. before an append: pagerank/ppr from its "
                        "ranks, wcc from its components and the new edges only, bfs/sssp "
                        "from its distances (also before deletions and weight updates: "
                        "wcc, bfs and sssp repairing only what they reach, or from scratch "
                        "where more than 5%% of the edges changed; pagerank/ppr by a delta "
                        "push or a warm start: the summary line and --json's start say "
                        "which); the answer is a run from scratch's (pagerank "
                        "to --tol; wcc, bfs and sssp refuse a PREV that did not converge; "
                        "every run refuses one edited since it was written, by the checksum "
                        "it records). auto (default): the --out file being replaced "
                        "(--overwrite) when it is such a converged result of the same run "
                        "that records a checksum; none: from scratch")
    p.add_argument("--threads", type=int, help="out-of-core worker threads")
    p.add_argument("--device-budget", metavar="SIZE|SHARE",
                   help="out of core on the torch backend: edge bytes kept in device memory "
                        "after the first superstep, a size (8GB; 0: every batch streamed "
                        "every superstep) or a plain number with a decimal point (0.25), a "
                        "share of the device memory free at the start (default: 0.5 on "
                        "CUDA, nothing on the CPU); refused with --mode memory or --backend "
                        "numba, and a note says when the automatic choices made it moot")
    p.add_argument("--schedule", default="auto",
                   help="auto (default: bfs and wcc in memory on CPU run their own "
                        "algorithm - direction-optimizing BFS, Afforest/union-find - else "
                        "sync), sync (BSP supersteps) or async (bfs, sssp, wcc in memory on "
                        "CPU: a work list to the same fixed point)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the sha256 check of each file the run reads (done as the run "
                        "first reads it; offsets and ids are always checked)")
    p.add_argument("--program", metavar="MODULE:CLASS",
                   help="run your own VertexProgram subclass instead of ALGO: "
                        "MODULE:CLASS is imported (MODULE from the current directory or "
                        "sys.path) and called with no arguments; see docs/programs.md")
    p.add_argument("--json", action="store_true", help="print the run statistics as JSON")
    p.add_argument("--quiet", action="store_true", help="no per-superstep lines")
    add_trace_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.extra_positionals or (args.algorithm is None) == (args.program is None):
        raise GraphsysError("give ALGO DIR, or --program MODULE:CLASS DIR (not both)")
    if args.program is None:  # an unknown name fails before anything heavy is imported
        spec = ALGORITHMS.get(args.algorithm)
        func, needs_source, parameters = spec.run, spec.needs_source, spec.parameters

    from graphsys import open_graph
    from graphsys.commands._common import parquet_out
    from graphsys.device import resolve_lazily
    from graphsys.distributed import init_from_env, peer_failures, this_rank
    from graphsys.outputs import check_outputs
    from graphsys.trace import recording
    from graphsys.views.limits import one_type

    if args.program is not None:
        func, needs_source, parameters = _user_program(args), False, ()
        args.algorithm, spec = args.program, None
    _check_flags(args, spec, needs_source, parameters)
    out = parquet_out(args.out, args.overwrite)
    trace = trace_path(args)
    check_outputs([("--out", out, "file"), ("--trace", args.trace, "file")],
                  overwrite=args.overwrite)
    device = resolve_lazily(args.device)  # the CPU without importing torch
    distributed = init_from_env(device)
    # opened once; each file the run reads is hash-checked as it is first read (buckets,
    # adjacency index, node ids), so verifying costs no pass of its own over the edges
    # a typed graph is refused before any output (the engine's own refusal came after the
    # step table's header)
    graph = one_type(open_graph(args.graph, until=args.until, since=args.since),
                     "the BSP engine")
    graph.verify_hashes = not args.no_verify
    kwargs = _engine_kwargs(args, parameters, str(device), distributed)
    source = typed_ids(graph, [args.source], "--source")[0] if needs_source else None
    init = _previous_result(args, spec, graph, source, out, kwargs)
    unread = init if isinstance(init, str) else None  # why the --out file was not read
    init = None if unread else init
    if init is not None:
        kwargs["init"] = init
    rank0 = not distributed or this_rank() == 0
    show = rank0 and not args.json and not args.quiet
    if show:
        print(f"{'step':>5} {'dir':>11} {'active':>12} {'messages':>13} {'combined':>12} "
              f"{'edges':>13} {'read MB':>9} {'seconds':>9}")

    def progress(ss) -> None:
        if show:
            print(f"{ss.superstep:>5} {ss.direction:>11} {ss.active:>12,} {ss.messages_sent:>13,}"
                  f" {ss.messages_combined:>12,} {ss.edges_scanned:>13,} "
                  f"{ss.bytes_read / 1e6:>9.1f} {ss.total_seconds:>9.4f}")

    from graphsys.jit import compile_totals

    compiled_before = compile_totals()
    try:
        with peer_failures(distributed), recording(trace, device), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # refused or warned below
            result = func(graph, source, progress=progress, **kwargs) if needs_source else func(
                graph, progress=progress, **kwargs)
    finally:
        if distributed:
            import torch.distributed as dist

            dist.destroy_process_group()
    stats = result.stats
    if unread:
        stats.start, stats.method = "scratch", f"{stats.method} (from scratch: {unread})"
    # kernels compiled inside the run (a first call on a cold cache): said apart from the
    # algorithm's own time, which the run's seconds include
    compiled_after = compile_totals()
    compiled = {k: compiled_after[k] - compiled_before[k] for k in compiled_before}
    _report(args, spec, graph, result, out, init, unread, compiled, rank0)
    return 0


def _check_flags(args, spec, needs_source: bool, parameters) -> None:
    """The one-line refusals of ``graphsys run``'s flags before the graph is opened."""
    from graphsys.bsp.engine import SCHEDULES
    from graphsys.execution import BACKENDS, MODES

    if args.init not in ("auto", "none") and (spec is None or spec.warm_start is None):
        taking = ", ".join(n for n, s in ALGORITHMS.items() if s.warm_start is not None)
        raise GraphsysError(f"--init applies to {taking}, not {args.algorithm}")
    for name, allowed in (("mode", MODES), ("backend", BACKENDS), ("schedule", SCHEDULES)):
        if getattr(args, name) not in allowed:
            raise GraphsysError(f"--{name}: unknown {name} {getattr(args, name)!r} (choose "
                                f"from {', '.join(allowed)})")
    if needs_source and args.source is None:
        raise GraphsysError(f"{args.algorithm} needs --source ID")
    if not needs_source and args.source is not None:
        raise GraphsysError(f"{args.algorithm} takes no --source (did you mean ppr?)")
    if args.tol is not None and "tol" not in parameters:
        raise GraphsysError(f"--tol applies to {_taking('tol')}, not {args.algorithm}")
    if args.max_iters is not None:
        check_count("max_iters", args.max_iters)
    if args.threads is not None and args.threads < 1:
        raise GraphsysError(f"--threads must be positive, got {args.threads}")
    if args.device_budget is not None:
        device_budget(args.device_budget)  # a bad value refused before the graph is opened
        for flag, value in (("mode", "memory"), ("backend", "numba")):
            if getattr(args, flag) == value:
                raise GraphsysError(f"--device-budget applies out of core on the torch "
                                    f"backend, not with --{flag} {value}")


def _engine_kwargs(args, parameters, device: str, distributed: bool) -> dict:
    """The keyword arguments of the algorithm's call: the run's options, the flags of the
    algorithm's own parameters (a flag it has none of refused in one line) and ``-p``."""
    import numba

    kwargs = {"mode": args.mode, "device": device, "backend": args.backend,
              "edge_set": args.edges, "distributed": distributed,
              "threads": args.threads or numba.get_num_threads(), "schedule": args.schedule}
    if args.max_iters is not None:
        kwargs["max_iters"] = args.max_iters
    if args.tol is not None:
        kwargs["tol"] = args.tol
    if args.device_budget is not None:
        kwargs["device_budget"] = device_budget(args.device_budget)
    # (flag as given: None where left out, its value, the value left out); a flag the
    # algorithm has no parameter for is refused when given, even at its default value
    flags = {"damping": (args.damping, args.damping, 0.85),
             "sum_dtype": (args.sum_dtype, args.sum_dtype, "auto"),
             "weighted": (args.weighted, _WEIGHTED.get(args.weighted), None),
             "store_index": (args.no_store_index or None, False, True)}
    for name, (flag, value, default) in flags.items():
        if name in parameters:
            kwargs[name] = default if flag is None else value
        elif flag is not None:
            raise GraphsysError(f"{_FLAGGED[name]} applies to {_taking(name)}, not "
                                f"{args.algorithm}")
    kwargs.update(_algorithm_params(args.algorithm, args.params, parameters))
    return kwargs


def device_budget(text: str) -> int | float:
    """``--device-budget``: a share in [0, 1] where written with a decimal point, else a
    size in bytes (units allowed, 0 for none); refused in one line otherwise.

    Examples
    --------
    >>> from graphsys.commands.run import device_budget
    >>> device_budget("0.25"), device_budget("2GB"), device_budget("0")
    (0.25, 2000000000, 0)
    """
    from graphsys.units import parse_size

    if "." in text and text.replace(".", "", 1).isdigit():
        share = float(text)
        if share > 1:
            raise GraphsysError(f"--device-budget {text}: a share is in [0, 1]; write a "
                                f"size with its unit (8GB) for bytes")
        return share
    return 0 if text.strip() == "0" else parse_size(text, field="--device-budget")


def _report(args, spec, graph, result, out, init, unread, compiled: dict, rank0: bool
            ) -> None:
    """Refuse an unconverged run (unless allowed), then on rank 0 write ``--out`` and print
    the summary line (or the JSON line)."""
    from graphsys.commands._common import write_parquet

    stats = result.stats
    # an unconverged run ran to its limit; a fused run records fewer rows (BFS: one per
    # phase of levels), so the count said is the limit, not stats.num_supersteps
    limit = _max_iters(args, spec, graph)
    if not stats.converged and not args.allow_unconverged:
        raise GraphsysError(f"{args.algorithm} did not converge within "
                            f"{limit:,} supersteps; nothing written (raise --max-iters"
                            + (" or --tol" if spec is not None and "tol" in spec.parameters else "")
                            + ", or keep the last iterate with --allow-unconverged)")
    if rank0:
        if args.device_budget is not None and (
                stats.mode not in ("out-of-core", "distributed") or stats.backend != "torch"):
            print(f"note: --device-budget had no effect: the run was {stats.mode} on the "
                  f"{stats.backend} backend", file=sys.stderr)
        if out is not None:
            write_parquet(out, result.to_table(), args.overwrite)
        if args.json:
            emit_json({"ok": True, "out": str(out) if out else None, **stats.to_dict(),
                       "compiled_kernels": int(compiled["kernels"]),
                       "compile_seconds": round(compiled["seconds"], 3)})
        else:
            t = stats.totals()
            print(f"{args.algorithm}: "
                  f"{stats.num_supersteps if stats.converged else limit} supersteps, "
                  f"{'converged' if stats.converged else 'NOT converged'}, "
                  f"{t['edges_scanned']:,} edges scanned, {stats.seconds:.3f} s "
                  f"(setup {stats.setup_seconds:.3f} s"
                  + (f"; compiling {int(compiled['kernels'])} kernels, once per install, "
                     f"{compiled['seconds']:.3f} s of it" if compiled["kernels"] else "")
                  + f"), mode {stats.mode}, device "
                  f"{stats.device}, backend {stats.backend}"
                  + (", weighted" if stats.weighted else "")
                  + "".join(f", {k} {v:.6g}" for k, v in stats.scores.items())
                  + (f", started from {init} ({_START[stats.start]})"
                     if init is not None and stats.start in _START else
                     f", started from {init}" if init is not None else
                     f", from scratch ({unread}; {out} not read)" if unread else "")
                  + (f", wrote {out}" if out else ""))
        if not stats.converged:
            print(f"warning: {args.algorithm} stopped at --max-iters {limit:,} "
                  f"({limit:,} supersteps) before converging", file=sys.stderr)


#: how a run given a previous result started (RunStats.start), as the summary line says it
_START = {"delta": "incremental: delta push", "warm": "incremental: warm start",
          "repair": "incremental: repaired from the changed edges",
          "scratch": "from scratch: an incremental run does not apply or pay here"}


def _max_iters(args, spec, graph) -> int:
    """The superstep limit the run had: ``--max-iters``, else the algorithm's default."""
    from graphsys.bsp.engine import DEFAULT_MAX_ITERS

    if args.max_iters is not None:
        return args.max_iters
    return spec.max_iters(graph) if spec is not None else DEFAULT_MAX_ITERS


def _previous_result(args, spec, graph, source, out, kwargs) -> Path | str | None:
    """The previous result ``--init`` names: the file given, or with ``auto`` the ``--out``
    file being replaced when it is a result of the same run on an earlier version of the
    edges read (else None: from scratch; a string: why a repair would not pay, the run
    from scratch reading none of it)."""
    if args.init == "none" or spec is None or spec.warm_start is None:
        return None
    if args.init != "auto":
        return Path(args.init)
    if out is None or not args.overwrite or not Path(out).is_file():
        return None
    from graphsys.bsp import incremental

    params = {k: kwargs[k] for k in spec.parameters if k in kwargs}
    # from its footer (the run reads its values once): of other edges, unreadable, or a
    # run that stopped at --max-iters (or does not say): from scratch, never repaired
    starts = incremental.starts_from(graph, out, spec.name, params, args.edges, source)
    return starts if isinstance(starts, str) else Path(out) if starts else None


#: --weights as the functions' ``weighted``
_WEIGHTED = {"auto": None, "use": True, "ignore": False}

#: parameters with flags of their own (not set with --set)
_FLAGGED = {"tol": "--tol", "damping": "--damping", "sum_dtype": "--sum-dtype",
            "weighted": "--weights", "store_index": "--no-store-index"}


def _algorithm_params(algorithm: str, pairs: list[str], parameters) -> dict:
    """The ``--set NAME=VALUE`` pairs as keyword parameters of ``algorithm``."""
    from graphsys.config_values import parse_value

    out = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise GraphsysError(f"--set {pair!r}: expected NAME=VALUE")
        if name in _FLAGGED:
            raise GraphsysError(f"--set {name}: use {_FLAGGED[name]}")
        if name not in parameters:
            known = [p for p in parameters if p not in _FLAGGED]
            raise GraphsysError(f"--set {name}: {algorithm} takes no parameter {name} ("
                                + (f"its parameters: {', '.join(known)})" if known else
                                   "it takes none)"))
        if name in out:
            raise GraphsysError(f"--set {name}: given twice")
        out[name] = parse_value(text)
    return out


def _taking(parameter: str) -> str:
    """The registered algorithms that take ``parameter``, for a message."""
    return ", ".join(n for n, spec in ALGORITHMS.items() if parameter in spec.parameters)


def _user_program(args):
    """``run(graph, **kwargs)`` for the VertexProgram class named by ``--program``."""
    from graphsys.bsp.engine import DEFAULT_MAX_ITERS
    from graphsys.bsp.engine import run as run_program
    from graphsys.bsp.program import VertexProgram
    from graphsys.user_code import build

    program = build(args.program, "--program")
    if not isinstance(program, VertexProgram):
        raise GraphsysError(f"--program {args.program}: built a {type(program).__name__}, "
                            f"not a graphsys.bsp.program.VertexProgram")

    def func(graph, **kwargs):
        kwargs.setdefault("max_iters", DEFAULT_MAX_ITERS)
        return run_program(graph, program, **kwargs)

    return func
