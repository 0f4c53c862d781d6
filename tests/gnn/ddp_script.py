"""One rank of a data-parallel node-task run for tests/gnn/test_distributed.py: trains
``argv[1]`` (a graph directory) with the TrainConfig JSON ``argv[2]`` under the torchrun
environment (``distributed=None``; ``out=argv[4]`` if given, ``A|B``: A on rank 0, B on
rank 1) and, on rank 0, writes the
final parameters and the result to ``argv[3]`` (``.npz``) and ``argv[3] + ".json"``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from graphsys.errors import GraphsysError
from graphsys.gnn import TrainConfig, train

if __name__ == "__main__":
    graph, cfg, dest = sys.argv[1], TrainConfig(**json.loads(sys.argv[2])), sys.argv[3]
    try:
        res = train(graph, cfg, distributed=None,
                    out=(sys.argv[4].split("|") * 2)[int(os.environ["RANK"])]
                    if len(sys.argv) > 4 else None,
                    device=os.environ.get("GRAPHSYS_TEST_DDP_DEVICE", "cpu"))
    except GraphsysError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    if res.extra["rank"] == 0:
        np.savez(dest, **{k: v.cpu().numpy() for k, v in res.model.state_dict().items()})
        with open(dest + ".json", "w") as f:
            json.dump({"metrics": res.metrics, "history": res.history,
                       "world_size": res.extra["world_size"], "ranks": res.extra["ranks"]}, f)
    # the group's gloo threads outlive it (graphsys.distributed.destroy: the model was
    # wrapped in DistributedDataParallel): leave as the graphsys program does, flushed and
    # without the interpreter's teardown, which such a thread can abort
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
