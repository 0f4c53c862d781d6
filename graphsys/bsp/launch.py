"""Launching distributed BSP runs from Python.

:func:`spawn` runs algorithms in ``W`` local processes over gloo on ``127.0.0.1`` (tests,
quick experiments) and returns rank 0's values. From the command line, a distributed run is
the ``graphsys run`` command under torchrun, ``torchrun --nproc-per-node W -m graphsys run
ALGO DIR [options]`` (each rank initialises the process group from the torchrun environment;
rank 0 writes ``--out``).
"""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import numpy as np


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world_size: int, port: int, graph_dir: str,
            jobs: list[tuple[str, tuple, dict]], out_dir: str) -> None:
    import torch.distributed as dist

    from graphsys import bsp, open_graph

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    try:
        graph = open_graph(graph_dir)
        for k, (name, args, kwargs) in enumerate(jobs):
            result = getattr(bsp, name)(graph, *args, distributed=True, **kwargs)
            if rank == 0:
                np.save(Path(out_dir) / f"{k}.npy", result.values)
                Path(out_dir, f"{k}.json").write_text(_json(result.stats.to_dict()))
    finally:
        dist.destroy_process_group()


def _json(obj) -> str:
    import json

    return json.dumps(obj, default=str)


def spawn(graph_dir: str | Path, jobs: list[tuple[str, tuple, dict]],
          world_size: int = 2) -> list[tuple[np.ndarray, dict]]:
    """Run each job ``(function name in graphsys.bsp, args, kwargs)`` in ``world_size``
    gloo processes (one process group for all jobs); returns ``(values float64 (N,),
    stats dict)`` per job, as seen by rank 0."""
    import json

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(world_size, free_port(), str(graph_dir), jobs, tmp),
                 nprocs=world_size, join=True)
        return [(np.load(Path(tmp) / f"{k}.npy"),
                 json.loads(Path(tmp, f"{k}.json").read_text())) for k in range(len(jobs))]

