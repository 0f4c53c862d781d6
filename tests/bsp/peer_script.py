"""One rank of a 2-process gloo group (RANK, WORLD_SIZE, MASTER_* in the environment) for
the peer-failure tests: rank 1 dies (``die``) or freezes (``freeze``) before a collective
that rank 0 enters as an engine would; rank 0 prints what the CLI would print."""

from __future__ import annotations

import os
import sys
import time

import torch

from graphsys.distributed import init_from_env, peer_failures
from graphsys.errors import GraphsysError

if __name__ == "__main__":
    import torch.distributed as dist

    init_from_env(torch.device("cpu"))
    dist.barrier()
    if dist.get_rank() == 1:
        if sys.argv[1] == "die":
            os._exit(1)
        time.sleep(120)
        os._exit(0)
    try:
        with peer_failures(True):
            dist.all_reduce(torch.ones(4))
    except GraphsysError as exc:
        print(f"error: {exc}", file=sys.stderr)
        os._exit(exc.exit_code)
    os._exit(0)
