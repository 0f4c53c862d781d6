"""Launching distributed BSP runs from Python.

:func:`spawn` runs algorithms in ``W`` local processes over gloo on ``127.0.0.1`` (tests,
quick experiments) and returns rank 0's values. From the command line, a distributed run is
the ``graphsys run`` command under torchrun, ``torchrun --nproc-per-node W -m graphsys run
ALGO DIR [options]`` (each rank initialises the process group from the torchrun environment;
rank 0 writes ``--out``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np


def _worker(rank: int, world_size: int, port: int, graph_dir: str,
            jobs: list[tuple[str, tuple, dict]], out_dir: str, device: str = "cpu") -> None:
    import torch
    import torch.distributed as dist

    from graphsys import bsp, open_graph
    from graphsys.distributed import join_local_store

    if device == "cuda":  # one GPU per rank, NCCL between them
        torch.cuda.set_device(rank)
    join_local_store(port, rank, world_size, "nccl" if device == "cuda" else "gloo")
    try:
        graph = open_graph(graph_dir)
        on = {"device": f"cuda:{rank}"} if device == "cuda" else {}
        for k, (name, args, kwargs) in enumerate(jobs):
            result = getattr(bsp, name)(graph, *args, distributed=True, **on, **kwargs)
            if rank == 0:
                np.save(Path(out_dir) / f"{k}.npy", result.values)
                Path(out_dir, f"{k}.json").write_text(json.dumps(result.stats.to_dict(),
                                                                 default=str))
    finally:
        dist.destroy_process_group()


def spawn(graph_dir: str | Path, jobs: list[tuple[str, tuple, dict]],
          world_size: int = 2, device: str = "cpu") -> list[tuple[np.ndarray, dict]]:
    """Run each job ``(function name in graphsys.bsp, args, kwargs)`` in ``world_size``
    processes (one process group for all jobs): gloo on the CPU (``device="cpu"``), or
    NCCL with rank ``r`` on GPU ``r`` (``device="cuda"``, ``world_size`` GPUs at least).
    Returns ``(values float64 (N,), stats dict)`` per job, as seen by rank 0. A
    ``world_size`` that is not a positive integer, or exceeds the graph's partitions, is
    refused before any process starts (:func:`~graphsys.bsp.distributed.rank_split`)."""
    import torch
    import torch.multiprocessing as mp

    from graphsys import open_graph
    from graphsys.bsp.distributed import rank_split
    from graphsys.errors import ParameterError

    rank_split(open_graph(graph_dir).num_partitions, world_size)

    if device not in ("cpu", "cuda"):
        raise ParameterError("device", f"{device!r}: spawn runs on cpu or cuda")
    if device == "cuda" and (not torch.cuda.is_available()
                             or torch.cuda.device_count() < world_size):
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise ParameterError("device", f"cuda: {world_size} ranks need {world_size} GPUs, "
                                       f"{count} visible")
    from graphsys.distributed import local_store

    # the ranks' rendezvous, hosted here on a port held from the moment it is picked
    store = local_store()
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(world_size, store.port, str(graph_dir), jobs, tmp, device),
                 nprocs=world_size, join=True)
        return [(np.load(Path(tmp) / f"{k}.npy"),
                 json.loads(Path(tmp, f"{k}.json").read_text())) for k in range(len(jobs))]

