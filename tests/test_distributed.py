"""The rendezvous of ranks launched on this machine (graphsys.distributed.local_store): the
port is the launcher's from the moment it is picked, and groups launched at once each meet
their own ranks."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys

import pytest

from graphsys.distributed import LOCALHOST, local_store, rank_environment

#: One rank: joins its group from the torchrun environment and prints the GROUP of every
#: rank it met.
RANK = ("import os, torch, torch.distributed as dist\n"
        "from graphsys.distributed import destroy, init_from_env\n"
        "init_from_env(torch.device('cpu'))\n"
        "mine = torch.tensor([int(os.environ['GROUP'])])\n"
        "met = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]\n"
        "dist.all_gather(met, mine)\n"
        "print(sorted(int(t) for t in met))\n"
        "destroy()\n")


def test_the_store_holds_its_port_until_it_is_dropped():
    store = local_store()
    with socket.socket() as s, pytest.raises(OSError) as exc:
        s.bind((LOCALHOST, store.port))
    assert exc.value.errno == errno.EADDRINUSE
    assert local_store().port != store.port


def test_groups_launched_at_once_meet_their_own_ranks():
    """Two 2-rank groups started together, each on its launcher's store: every rank
    gathers its own group's number from both ranks (no rank joins the other group)."""
    stores = [local_store(), local_store()]
    procs = [subprocess.Popen([sys.executable, "-c", RANK], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "GROUP": str(g),
                                   "PYTHONPATH": os.pathsep.join(sys.path),
                                   **rank_environment(stores[g], r, 2)})
             for g in (0, 1) for r in (0, 1)]
    try:
        outs = [p.communicate(timeout=180) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * 4, [err[-2000:] for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["[0, 0]", "[0, 0]", "[1, 1]", "[1, 1]"]
