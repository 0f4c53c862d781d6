"""The workloads ``graphsys profile`` measures: a BSP algorithm, an embedding epoch, GNN steps.

Each returns the kernel/transfer figures (:mod:`graphsys.analysis.kernels`), the number of
steps, an estimate of the floating-point work (FLOPs), and the degree streams the SIMT model
runs over (:mod:`graphsys.analysis.simt`):

* **BSP** (:func:`profile_bsp`): two runs of the same program. The *profiled* run (requested
  device/backend; default ``torch``, the engine's GPU code path) is measured with
  ``torch.profiler``, one step per superstep. The *model* run (numba on CPU, same mode;
  the frontier, push/pull choices and supersteps are the same, the algorithms being
  deterministic) records each superstep's frontier and feeds the SIMT model only the active
  vertices, in the engine's order (ascending global id): push/stream supersteps use the
  frontier's out-degrees (in-degrees for ``direction = in``; both passes for ``both``), pull
  supersteps every target the program accepts with its in-degree. The model assumes each
  neighbour loop runs to the end of the list (an upper bound for BFS's early-exit pull).
* **Embedding** (:func:`profile_embed`): one epoch of :class:`graphsys.embed.Trainer` into a
  temporary checkpoint; a step is one positive batch. SIMT over the training edge set's
  out-degrees (a vertex-centric pass over the same edges).
* **GNN** (:func:`profile_gnn`): ``steps`` minibatch steps of GraphSAGE built from
  :class:`graphsys.sampling.NeighborSampler` and :class:`graphsys.gnn.model.GNN` (the
  components of :mod:`graphsys.gnn.train`), on the graph's ``feat``/``label`` node columns
  when present, else seeded random features (16 floats) and 4 random classes. SIMT over
  each block's per-destination in-degrees (the aggregation loops), one kernel per block.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graphsys.analysis.kernels import StepMarker, profile_call
from graphsys.analysis.simt import GPU, SimtAccumulator
from graphsys.errors import GraphsysError

#: Global ids per vectorized slice when compacting a frontier.
FRONTIER_CHUNK = 1 << 22


class SimtRecorder:
    """One :class:`SimtAccumulator` total per mapping plus per-step figures."""

    def __init__(self, mappings: list[str], block_size: int, items_per_thread: int,
                 gpu: GPU) -> None:
        self.mappings, self.block_size = mappings, block_size
        self.items_per_thread, self.gpu = items_per_thread, gpu
        self.totals = {m: self._new(m) for m in mappings}
        self.steps: dict[str, list[dict[str, Any]]] = {m: [] for m in mappings}
        self._cache: dict[Any, dict[str, SimtAccumulator]] = {}

    def _new(self, m: str) -> SimtAccumulator:
        return SimtAccumulator(m, self.block_size, self.items_per_thread, self.gpu)

    def step(self, info: dict[str, Any], kernels: list[Callable[[], Any]],
             cache_key: Any = None) -> None:
        """Record one step made of ``kernels``: callables yielding int64 degree chunks."""
        if cache_key is not None and cache_key in self._cache:
            accs = self._cache[cache_key]
        else:
            accs = {}
            for m in self.mappings:
                total = self._new(m)
                for make in kernels:
                    total.merge(self._new(m).add_kernel(make()))
                accs[m] = total
            if cache_key is not None:
                self._cache[cache_key] = accs
        for m, acc in accs.items():
            r = acc.result(per_sm=False)
            lb = r["load_balance"]
            self.steps[m].append({**info, "kernels": r["kernels"], "items": r["vertices"],
                                  "edges": r["edges"], "warp_iterations": r["warp_iterations"],
                                  "mean_utilization": r["mean_utilization"],
                                  "histogram": r["histogram"]["warps"],
                                  "sm_max_over_mean": lb["sm"]["max_over_mean"],
                                  "warp_cv": lb["warp"]["cv"]})
            self.totals[m].merge(acc)

    def result(self) -> dict[str, dict[str, Any]]:
        out = {}
        for m in self.mappings:
            r = self.totals[m].result()
            r["per_step"] = self.steps[m]
            out[m] = r
        return out


def _chunks_of(deg: np.ndarray, mask: np.ndarray | None):
    """Degrees ``deg`` (int64 (N,)) of the ids where ``mask`` (bool (N,) or None = all),
    ascending, in bounded chunks."""
    def gen():
        for lo in range(0, len(deg), FRONTIER_CHUNK):
            d = deg[lo:lo + FRONTIER_CHUNK]
            yield d if mask is None else d[mask[lo:lo + FRONTIER_CHUNK]]
    return gen


# ---------------------------------------------------------------------------------------------
# BSP


def make_program(graph, algorithm: str, *, source=None, damping: float = 0.85,
                 tol: float | None = None, edge_set: str | None = None):
    """The vertex program the ``graphsys run ALGO`` front-end would run, and its default
    superstep limit."""
    from graphsys.bsp import algorithms as A
    from graphsys.bsp.algorithms._common import (
        check_weights_non_negative,
        source_index,
        symmetric,
    )

    if algorithm not in A.ALGORITHMS:
        raise GraphsysError(f"unknown algorithm {algorithm!r} (choose from "
                            f"{', '.join(A.ALGORITHMS)})")
    needs_source = A.ALGORITHMS[algorithm][1]
    if needs_source and source is None:
        raise GraphsysError(f"{algorithm} needs --source ID")
    if not needs_source and source is not None:
        raise GraphsysError(f"{algorithm} takes no --source")
    n = graph.num_nodes()
    tol = 1e-6 if tol is None else tol
    if algorithm == "pagerank":
        return A.PageRank(damping, tol), 100
    if algorithm == "ppr":
        p = np.zeros(n, np.float64)
        p[source_index(graph, source)] = 1.0
        prog = A.PageRank(damping, tol, personalization=p)
        prog.name = "ppr"
        return prog, 100
    if algorithm == "bfs":
        return A.BFS(source_index(graph, source)), n + 1
    if algorithm == "sssp":
        check_weights_non_negative(graph, edge_set)
        return A.SSSP(source_index(graph, source)), n + 1
    both = not symmetric(graph, edge_set)
    if algorithm == "wcc":
        return A.WCC(both_ways=both), n + 1
    if algorithm == "lpa":
        return A.LabelPropagation(both_ways=both), 20
    return A.KCore(both_ways=both), 4 * n + 4


def _passes(direction: str, pull: bool) -> list[str]:
    """Degree directions of the kernels of one superstep."""
    out = []
    if direction in ("out", "both"):
        out.append("in" if pull else "out")
    if direction in ("in", "both"):
        out.append("out" if pull else "in")
    return out


def profile_bsp(graph, algorithm: str, *, recorder: SimtRecorder, source=None,
                device: str = "cpu", backend: str = "torch", mode: str = "memory",
                max_iters: int | None = None, edge_set: str | None = None,
                damping: float = 0.85, tol: float | None = None) -> dict[str, Any]:
    """Profile ``algorithm`` on ``graph``; fills ``recorder`` per superstep. Returns
    ``{"stats": KernelStats, "run": RunStats.to_dict(), "steps", "flops", "workload"}``."""
    from graphsys.bsp import run as bsp_run

    def program():
        return make_program(graph, algorithm, source=source, damping=damping, tol=tol,
                            edge_set=edge_set)

    prog, limit = program()
    iters = max_iters if max_iters is not None else limit
    common = {"mode": mode, "max_iters": iters, "edge_set": edge_set}

    # profiled run -----------------------------------------------------------------------
    def work(marker: StepMarker):
        inner_init = prog.init

        def init(ctx):
            out = inner_init(ctx)
            marker.step()
            return out

        prog.init = init
        res = bsp_run(graph, prog, device=device, backend=backend,
                      progress=lambda ss: marker.step(), **common)
        marker.finish()
        return res

    result, stats = profile_call(work, device=device)
    run = result.stats
    n_steps = run.num_supersteps
    stats.finish_invocations += sum(stats.per_step[n_steps:])
    stats.per_step = stats.per_step[:n_steps]
    scanned = run.totals()["edges_scanned"]
    stats.flops = 2.0 * scanned

    # model run: frontiers in engine order ---------------------------------------------------
    mprog, _ = program()
    es = graph.edge_set(edge_set).name
    degs: dict[str, np.ndarray] = {}

    def deg(direction: str) -> np.ndarray:
        if direction not in degs:
            degs[direction] = graph.degrees(es, direction)
        return degs[direction]

    state = {"frontier": None, "next": None, "accept": None}
    inner_init, inner_update, inner_accepts = mprog.init, mprog.update, mprog.accepts

    def snap(t):
        return None if t is None else t.detach().cpu().numpy().astype(bool, copy=True)

    def m_init(ctx):
        st, active = inner_init(ctx)
        state["frontier"] = snap(active)
        return st, active

    def m_update(ctx, st, combined, received):
        active, votes = inner_update(ctx, st, combined, received)
        state["next"] = snap(active)
        return active, votes

    def m_accepts(ctx, st):
        acc = inner_accepts(ctx, st)
        state["accept"] = snap(acc)
        return acc

    mprog.init, mprog.update, mprog.accepts = m_init, m_update, m_accepts

    def on_superstep(ss) -> None:
        frontier, accept = state["frontier"], state["accept"]
        direction = ss.direction
        if direction in ("push", "pull", "stream") and frontier is not None:
            pull = direction == "pull"
            mask = accept if pull else frontier
            all_items = mask is None or bool(mask.all())
            kernels = [_chunks_of(deg(d), None if all_items else mask)
                       for d in _passes(mprog.direction, pull)]
            info = {"step": ss.superstep, "direction": direction, "active": ss.active}
            recorder.step(info, kernels, cache_key=(direction, "all") if all_items else None)
        state["frontier"], state["next"], state["accept"] = state["next"], None, None

    t0 = time.perf_counter()
    bsp_run(graph, mprog, device="cpu", backend="numba", progress=on_superstep, **common)
    model_seconds = time.perf_counter() - t0
    degs.clear()
    return {"stats": stats, "run": run.to_dict(), "steps": n_steps, "flops": stats.flops,
            "model_seconds": model_seconds,
            "workload": {"kind": "bsp", "algorithm": algorithm, "mode": mode,
                         "device": run.device, "backend": run.backend,
                         "supersteps": n_steps, "converged": run.converged,
                         "edges_scanned": scanned,
                         "seconds": run.seconds, "setup_seconds": run.setup_seconds,
                         "simt_source": "frontier of every superstep (model run, numba)"}}


# ---------------------------------------------------------------------------------------------
# embedding


def profile_embed(graph, *, recorder: SimtRecorder, device: str = "cpu",
                  dimension: int = 32, batch_size: int = 1000, edge_set: str | None = None
                  ) -> dict[str, Any]:
    """One epoch of embedding training (see the module docstring)."""
    from graphsys.embed.config import config_from_dict
    from graphsys.embed.train import Trainer

    es = graph.edge_set(edge_set)
    cfg = config_from_dict({"dimension": dimension, "batch_size": batch_size,
                            "num_epochs": 1, "device": device, "edges": es.name,
                            "num_partitions": graph.num_partitions})
    batches = {"n": 0}
    with tempfile.TemporaryDirectory(prefix="graphsys-profile-embed-") as tmp:
        trainer = Trainer(cfg, graph, Path(tmp) / "ckpt")

        def work(marker: StepMarker):
            inner = trainer._batch

            def counted(*a, **k):
                batches["n"] += 1
                return inner(*a, **k)

            trainer._batch = counted
            marker.step()
            trainer.run()
            marker.finish()

        _, stats = profile_call(work, device=device)
    steps = max(batches["n"], 1)
    inv = stats.per_step[0] if stats.per_step else 0
    # one profiler range spans the epoch (batches run inside the trainer): mean per batch
    stats.per_step = []
    stats.extra.update({"steps": steps, "mean_per_step": inv / steps,
                        "per_step_unit": "mean over the epoch's batches"})
    negs = cfg.num_batch_negs + cfg.num_uniform_negs
    stats.flops = 6.0 * es.num_edges * dimension * (2 + negs)
    deg = graph.degrees(es.name, "out")
    recorder.step({"step": 0, "direction": "push", "active": len(deg)},
                  [_chunks_of(deg, None)])
    return {"stats": stats, "steps": steps, "flops": stats.flops,
            "workload": {"kind": "embed", "batches": batches["n"], "dimension": dimension,
                         "batch_size": batch_size, "edges": es.num_edges,
                         "negatives_per_positive": negs, "device": device,
                         "simt_source": "out-degrees of the training edge set"}}


# ---------------------------------------------------------------------------------------------
# GNN


def profile_gnn(graph, *, recorder: SimtRecorder, device: str = "cpu", steps: int = 5,
                batch_size: int = 256, fanouts: str = "10,5", hidden: int = 64,
                seed: int = 0) -> dict[str, Any]:
    """``steps`` GraphSAGE minibatch steps (see the module docstring)."""
    import torch

    from graphsys.gnn.model import GNN
    from graphsys.sampling import NeighborSampler

    if steps < 1 or batch_size < 1:
        raise GraphsysError("--steps and --batch-size must be positive")
    et = graph.entity_types[0] if len(graph.entity_types) == 1 else None
    if et is None:
        raise GraphsysError("--workload gnn profiles graphs with one entity type")
    n = graph.num_nodes()
    cols = graph.node_columns(et)
    rng = np.random.default_rng(seed)
    if "feat" in cols:
        feats = torch.as_tensor(graph.node_column("feat", et))
    else:
        feats = torch.as_tensor(rng.standard_normal((n, 16), dtype=np.float32))
    if "label" in cols:
        labels = torch.as_tensor(np.maximum(graph.node_column("label", et), 0))
    else:
        labels = torch.as_tensor(rng.integers(0, 4, n))
    classes = int(labels.max()) + 1 if n else 1
    sampler = NeighborSampler(graph, fanouts)
    model = GNN("sage", feats.shape[1], hidden, classes, sampler.num_layers, 0.5)
    dev = torch.device(device)
    model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    batches = [rng.choice(n, size=min(batch_size, n), replace=False) for _ in range(steps)]
    block_degrees: list[list[np.ndarray]] = []
    flops = {"v": 0.0}

    def work(marker: StepMarker):
        for k, seeds in enumerate(batches):
            marker.step()
            blocks = sampler.sample_blocks(np.sort(seeds), rng_seed=seed + k)
            block_degrees.append([np.bincount(b.edge_dst.numpy(), minlength=b.num_dst_nodes)
                                  for b in blocks])
            x = feats[blocks[0].src_nodes].to(dev)
            y = labels[blocks[-1].dst_nodes].to(dev)
            blocks = [b.to(dev) for b in blocks]
            loss = torch.nn.functional.cross_entropy(model(blocks, x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            dims = [feats.shape[1]] + [hidden] * (sampler.num_layers - 1) + [classes]
            for b, (a, c) in zip(blocks, zip(dims[:-1], dims[1:])):
                flops["v"] += 3 * (2.0 * b.num_edges * a + 4.0 * b.num_dst_nodes * a * c)
        marker.finish()

    _, stats = profile_call(work, device=device)
    stats.flops = flops["v"]
    for k, degs in enumerate(block_degrees):
        recorder.step({"step": k, "direction": "pull", "active": len(batches[k])},
                      [(lambda d=d: iter([d])) for d in degs])
    return {"stats": stats, "steps": steps, "flops": stats.flops,
            "workload": {"kind": "gnn", "model": "sage", "steps": steps,
                         "batch_size": batch_size, "fanouts": fanouts, "hidden": hidden,
                         "classes": classes, "device": device,
                         "features": "feat column" if "feat" in cols else "random (16)",
                         "simt_source": "per-destination in-degrees of every sampled block",
                         "trainer": "NeighborSampler + GNN('sage') + Adam (the components "
                                    "of graphsys.gnn.train), not train() itself"}}

