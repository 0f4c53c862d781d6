"""Compile the kernels of every registered vertex algorithm ahead of a first run.

:func:`warmup` (``graphsys warmup``; ``graphsys demo`` runs it for the everyday
algorithms) runs every algorithm of :data:`graphsys.plugins.ALGORITHMS` on small generated
graphs, in the ways a default run takes them, so that their kernels are in the cache
(:mod:`graphsys.jit`) before a user's first call: in memory on an R-MAT graph and on a
ring lattice, with the ``auto`` and ``sync`` schedules; on the R-MAT graph with stored CSR,
CSC and push indexes, in memory and out of core (its frontier supersteps read the senders'
index rows); out of core; and weighted, in memory and out of core. PageRank's
linear solve has its kernels called directly on a small layout
(:func:`~graphsys.bsp.algorithms.pagerank_krylov.warm_kernels`); the sampled-source
algorithms search from :data:`SAMPLED_SOURCES` sources. With ``jobs`` above 1 the
algorithms are split into groups of about equal compile time (:func:`balanced`), each
warmed in a fresh process (:func:`in_workers`). Kernels that only graphs beyond the
last-level cache or of 2**31 nodes and more reach are compiled on their first use.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: The generated graphs' sizes: large enough for every layout rule to pick the path a
#: default run of its shape takes, small enough that the runs themselves take milliseconds.
RMAT_NODES, RMAT_EDGES = 1 << 10, 1 << 14
RING_NODES = 1 << 11
#: Sources of the algorithms that search from sampled sources (``k``: betweenness,
#: closeness, harmonic): two batches of the vector programs' searches, the same kernels as
#: every source would compile, in a fraction of the time
SAMPLED_SOURCES = 32

#: Seconds of compiling each algorithm's kernels into an empty cache, on one core, as
#: :func:`warmup` runs them in order (an algorithm left out: 1): the weights that
#: :func:`balanced` splits the algorithms by.
COMPILE_SECONDS = {"betweenness": 12, "bfs": 12, "closeness": 5, "hits": 4, "kcore": 2,
                   "leiden": 8, "louvain": 2, "lpa": 4, "pagerank": 17, "scc": 3, "wcc": 4}
#: The algorithms whose kernels are mostly another's (run after it, they compile next to
#: nothing): they are warmed in that one's process.
FOLLOWS = {"ppr": "pagerank", "sssp": "bfs", "harmonic": "closeness", "louvain": "leiden"}


def _graphs(work: Path, seed: int) -> list[tuple[str, Any, str]]:
    """(label, graph, mode) of each run every algorithm gets."""
    from graphsys.generators import rmat_edges
    from graphsys.interop import from_numpy
    from graphsys.storage.adjacency_index import build_index

    chunks = list(rmat_edges(RMAT_NODES, RMAT_EDGES, seed=seed))
    src = np.concatenate([c["src"] for c in chunks])
    dst = np.concatenate([c["dst"] for c in chunks])
    rmat = from_numpy(src, dst, work / "rmat", partitions=2, seed=seed)
    indexed = from_numpy(src, dst, work / "rmat-indexed", partitions=2, seed=seed)
    build_index(indexed, ("csr", "csc", "push"))
    weight = np.random.default_rng(seed).random(len(src))
    weighted = from_numpy(src, dst, work / "rmat-weighted", partitions=2, seed=seed,
                          weight=weight)
    ring = np.arange(RING_NODES)
    lattice = from_numpy(np.concatenate([ring, ring]),
                         np.concatenate([(ring + 1) % RING_NODES, (ring + 2) % RING_NODES]),
                         work / "ring", partitions=2, seed=seed)
    return [("R-MAT, in memory", rmat, "memory"), ("R-MAT, indexed", indexed, "memory"),
            ("ring lattice, in memory", lattice, "memory"),
            ("R-MAT, out of core", rmat, "out-of-core"),
            ("R-MAT, indexed, out of core", indexed, "out-of-core"),
            ("weighted R-MAT, in memory", weighted, "memory"),
            ("weighted R-MAT, out of core", weighted, "out-of-core")]


def warmup(algorithms: list[str] | None = None, *, seed: int = 0,
           progress: Callable[[str], None] | None = None, jobs: int = 1) -> dict[str, Any]:
    """Run each algorithm on small generated graphs so that its kernels are compiled and
    cached (see the module docstring); a second call loads them all.

    Parameters
    ----------
    algorithms : list of str, optional
        Names in :data:`graphsys.plugins.ALGORITHMS` (default: every registered one).
    seed : int, default 0
        Seed of the generated graphs.
    progress : callable, optional
        Called with one line per algorithm as it finishes.
    jobs : int, default 1
        Processes that compile at once: above 1 (and more than one algorithm), the
        algorithms are split into up to ``jobs`` groups, each warmed in a fresh process
        (:func:`in_workers`); 1 warms them in this process.

    Returns
    -------
    dict
        ``cache`` (the kernel cache directory, :func:`graphsys.jit.cache_location`),
        ``seconds``, ``compiled`` and ``loaded`` (kernel
        signatures compiled and loaded from the cache), and per algorithm the same three
        figures under ``algorithms`` (and ``skipped``: the runs an algorithm refused, such
        as a graph shape or schedule it does not take, each with its one-line reason).

    Raises
    ------
    GraphsysError
        An algorithm name that is not registered.
    ParameterError
        A negative or non-integer ``seed``, or ``jobs`` below 1.

    Examples
    --------
    >>> from graphsys.bsp.warmup import warmup
    >>> report = warmup(["wcc"])
    >>> sorted(report["algorithms"]), sorted(report["algorithms"]["wcc"])
    (['wcc'], ['compiled', 'loaded', 'seconds'])
    """
    from graphsys import jit
    from graphsys.errors import GraphsysError, check_count
    from graphsys.plugins import ALGORITHMS

    check_count("seed", seed, minimum=0)
    names = list(algorithms) if algorithms is not None else ALGORITHMS.names()
    specs = {name: ALGORITHMS.get(name) for name in names}  # unknown names fail here
    t_all = time.perf_counter()
    if check_count("jobs", jobs) > 1 and len(names) > 1:
        reports = in_workers(warmup, balanced(names, jobs, COMPILE_SECONDS, FOLLOWS), progress,
                             seed=seed)
        return {**merged(reports, t_all),
                "algorithms": {n: r["algorithms"][n] for r in reports for n in r["algorithms"]}}
    before_all = jit.cache_counts()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="graphsys-warmup-") as tmp:
        runs = _graphs(Path(tmp), seed)
        for name, spec in specs.items():
            t0 = time.perf_counter()
            before = jit.cache_counts()
            skipped = []
            sampled = {"k": SAMPLED_SOURCES} if "k" in spec.parameters else {}
            for label, graph, mode in runs:
                source = graph.to_original(np.zeros(1, np.int64))[0].item()
                # "auto": the CLI's and the whole-graph front-ends' default (bfs, wcc);
                # "sync": the others'
                for schedule in ("auto", "sync") if mode == "memory" else ("sync",):
                    try:
                        spec.run(graph, source if spec.needs_source else None, mode=mode,
                                 schedule=schedule, **sampled)
                    except GraphsysError as exc:  # not for this graph or schedule
                        skipped.append(f"{label}, {schedule}: {str(exc).splitlines()[0]}")
            if name in ("pagerank", "ppr"):  # its linear solve starts past these sizes
                from graphsys.bsp.algorithms.pagerank_krylov import warm_kernels

                warm_kernels()
            after = jit.cache_counts()
            out[name] = {"seconds": round(time.perf_counter() - t0, 3),
                         "compiled": after["compiled"] - before["compiled"],
                         "loaded": after["loaded"] - before["loaded"]}
            if skipped:
                out[name]["skipped"] = skipped
            if progress is not None:
                progress(f"{name}: {out[name]['compiled']} kernel signatures compiled, "
                         f"{out[name]['loaded']} loaded ({out[name]['seconds']:.2f} s)")
    after_all = jit.cache_counts()
    return {"cache": jit.cache_location(), "seconds": round(time.perf_counter() - t_all, 3),
            "compiled": after_all["compiled"] - before_all["compiled"],
            "loaded": after_all["loaded"] - before_all["loaded"], "algorithms": out}


def balanced(units: list[str], jobs: int, seconds: dict[str, float],
             follows: dict[str, str]) -> list[list[str]]:
    """``units`` in at most ``jobs`` groups of about equal total ``seconds`` (a unit left
    out: 1), the costliest placed first, each into the group of least total; a unit that
    ``follows`` another of ``units`` goes into that one's group; each group keeps the
    order of ``units``.

    Examples
    --------
    >>> balanced(["a", "b", "c", "d"], 2, {"a": 5, "b": 3, "c": 2}, {"d": "a"})
    [['a', 'd'], ['b', 'c']]
    """
    lead = {u: follows[u] if follows.get(u) in units else u for u in units}
    groups: list[list[str]] = [[] for _ in range(min(jobs, len(set(lead.values()))))]
    for unit in sorted(set(lead.values()), key=lambda u: (-seconds.get(u, 1), units.index(u))):
        min(groups, key=lambda g: sum(seconds.get(u, 1) for u in g)).append(unit)
    return [[u for u in units if lead[u] in g] for g in groups]


def merged(reports: list[dict], t0: float) -> dict[str, Any]:
    """The figures of :func:`in_workers`' reports together: the first one's ``cache``, the
    seconds since ``t0`` and the sums of ``compiled`` and ``loaded``."""
    return {"cache": reports[0]["cache"], "seconds": round(time.perf_counter() - t0, 3),
            "compiled": sum(r["compiled"] for r in reports),
            "loaded": sum(r["loaded"] for r in reports)}


#: Seconds a worker that reported may take to exit before it is ended.
EXIT_SECONDS = 30.0


def in_workers(target: Callable[..., dict], groups: list[list[str]],
               progress: Callable[[str], None] | None, **kwargs) -> list[dict]:
    """``target(group, progress=..., **kwargs)`` for every group at once, each in a fresh
    spawned process, all writing the one kernel cache (:mod:`graphsys.jit_cache` makes
    that safe). ``target`` is a module-level function; its reports and arguments are plain
    data.

    Returns
    -------
    list of dict
        Each group's report, in the order of ``groups``; the progress lines the groups
        give are passed to ``progress`` here as they come.

    Raises
    ------
    GraphsysError
        A group whose call raised, or whose process ended without a report: the other
        processes are ended, and the message names the group and the error's first line.
    """
    import multiprocessing
    import queue

    from graphsys.errors import GraphsysError

    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    workers = [context.Process(target=_worker, args=(target, k, group, messages, kwargs),
                               daemon=True) for k, group in enumerate(groups)]
    reports: dict[int, dict] = {}
    try:
        for w in workers:
            w.start()
        while len(reports) < len(workers):
            try:
                kind, k, value = messages.get(timeout=1.0)
            except queue.Empty:  # a process that ended (killed, crashed) sends nothing
                ended = [k for k, w in enumerate(workers) if k not in reports and w.exitcode]
                if not ended:
                    continue
                kind, k = "error", ended[0]
                value = f"its process ended with exit code {workers[k].exitcode}"
            if kind == "error":
                raise GraphsysError(f"warm-up of {', '.join(groups[k])}: {value}")
            if kind == "done":
                reports[k] = value
            elif progress is not None:
                progress(value)
    finally:
        # a process that reported exits on its own: ended mid-exit it would leave what it
        # registered (a semaphore) to the resource tracker's warnings; the others are ended
        done = len(reports) == len(workers)
        for w in workers:
            w.join(EXIT_SECONDS if done else 0)
            if w.is_alive():
                w.kill()
                w.join()
    return [reports[k] for k in range(len(groups))]


def _worker(target, k: int, group: list[str], messages, kwargs: dict) -> None:
    """One process of :func:`in_workers`: its group's report, or its error's first line."""
    try:
        report = target(group, progress=lambda line: messages.put(("line", k, line)),
                        **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the parent fails with it, in one line
        first = (str(exc).splitlines() or [""])[0]
        messages.put(("error", k, f"{type(exc).__name__}: {first}"))
    else:
        messages.put(("done", k, report))
