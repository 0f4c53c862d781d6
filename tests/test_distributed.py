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


#: A process that wraps a model in DistributedDataParallel over a one-rank gloo group,
#: destroys the group, then runs ``graphsys datasets list`` as the graphsys program.
AFTER_DDP = ("import atexit, os, sys, torch, torch.distributed as dist\n"
             "from graphsys import distributed\n"
             "dist.init_process_group('gloo', store=dist.HashStore(), rank=0, world_size=1)\n"
             "torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))\n"
             "distributed.destroy()\n"
             "names = [open(f'/proc/self/task/{t}/comm').read().strip()\n"
             "         for t in os.listdir('/proc/self/task')]\n"
             "print('gloo threads after destroy:', 'pt_gloo_runloop' in names, flush=True)\n"
             "class Teardown:\n"
             "    def __del__(self):\n"
             "        print('teardown ran', flush=True)\n"
             "marker = Teardown()\n"
             "atexit.register(lambda: print('atexit ran', flush=True))\n"
             "sys.argv = ['graphsys', 'datasets', 'list']\n"
             "from graphsys.cli import program\n"
             "program()\n")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads listed by /proc")
def test_a_rank_that_destroyed_its_group_leaves_without_teardown():
    """The group outlives destroy() once DistributedDataParallel wrapped a model (its gloo
    threads still run); the graphsys program then ends after its exit handlers and
    without the interpreter's teardown (a module's objects are never finalised)."""
    out = subprocess.run([sys.executable, "-c", AFTER_DDP], capture_output=True, text=True,
                         timeout=180, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "gloo threads after destroy: True"
    assert lines[-1] == "atexit ran" and "teardown ran" not in lines


def test_a_peer_gone_while_the_ranks_connect_is_one_line(monkeypatch):
    """A backend error raised while the process group forms (a peer that died before the
    full mesh connected, a store that timed out) becomes the one-line peer error naming
    this rank, not a traceback."""
    import torch
    import torch.distributed as dist

    from graphsys import distributed
    from graphsys.errors import GraphsysError

    def fail(*args, **kwargs):
        raise RuntimeError("Gloo connectFullMesh failed with [pair.cc:553] Connection closed "
                           "by peer\nsecond line")

    monkeypatch.setattr(distributed, "initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", fail)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", LOCALHOST)
    monkeypatch.setenv("MASTER_PORT", "29500")
    with pytest.raises(GraphsysError) as err:
        distributed.init_from_env(torch.device("cpu"))
    message = str(err.value)
    assert message.startswith("rank 0: a peer rank died") and "\n" not in message
    assert "Connection closed by peer" in message


@pytest.mark.parametrize("env, message", [
    ({"WORLD_SIZE": "abc"}, "WORLD_SIZE='abc': must be a positive integer"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE='0': must be a positive integer"),
    ({"WORLD_SIZE": "2"}, "RANK unset: must be an integer from 0 to 1"),
    ({"WORLD_SIZE": "2", "RANK": "x"}, "RANK='x': must be an integer from 0 to 1"),
    ({"WORLD_SIZE": "2", "RANK": "2"}, "RANK='2': must be an integer from 0 to 1"),
    ({"WORLD_SIZE": "2", "RANK": "-1"}, "RANK='-1': must be an integer from 0 to 1"),
    ({"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "-1"}, "LOCAL_RANK='-1': must be a non"),
    ({"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": ""}, "MASTER_ADDR unset or empty"),
    ({"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "port"}, "MASTER_PORT='port': must be a "
                                                             "port, 1 to 65535"),
    ({"WORLD_SIZE": "2", "RANK": "1", "MASTER_PORT": "65536"}, "MASTER_PORT='65536'"),
])
def test_a_bad_launch_environment_is_refused_in_one_line(monkeypatch, env, message):
    """WORLD_SIZE=abc was a ValueError traceback, RANK=5 of 2 waited for the store's
    timeout, WORLD_SIZE=0 ran as one process: every variable is checked where it is read,
    before any connection, and refused in one line naming it."""
    import torch

    from graphsys import distributed
    from graphsys.errors import GraphsysError

    base = {"MASTER_ADDR": LOCALHOST, "MASTER_PORT": "29500"}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**base, **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(distributed, "initialized", lambda: False)
    with pytest.raises(GraphsysError) as err:
        distributed.init_from_env(torch.device("cpu"))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_the_launch_environment_read_once(monkeypatch):
    from graphsys.distributed import launch_environment

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert launch_environment() == (0, 1, None)
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "7")   # one process: the other variables are not read
    assert launch_environment() == (0, 1, None)
    env = {"WORLD_SIZE": "3", "RANK": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "node0",
           "MASTER_PORT": "29500"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert launch_environment() == (2, 3, 0)
