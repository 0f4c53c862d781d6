"""The run directory of :func:`graphsys.gnn.train` (``out=RUN``): one run, one writer.

Layout::

    RUN/run.json        what run the directory holds (written before anything else)
    RUN/metrics.jsonl   one JSON record per evaluation
    RUN/checkpoint/     the best model (:mod:`graphsys.gnn.checkpoint`)
    RUN/last/           the state after the last epoch, to resume from

``run.json`` records the task, the :class:`~graphsys.gnn.config.TrainConfig`, the world
size and the graph (its path and :func:`~graphsys.distributed.graph_digest`: partitioning,
edge sets and every node and bucket file). :func:`run_directory` is entered before any
training and checks, in this order, refusing in one line with nothing written:

* ``RUN`` is not, and does not lie inside, a graph, checkpoint or embedding directory
  (:func:`graphsys.outputs.check_own_directory`): a run never writes into those;
* ``RUN`` holds only directories and regular files
  (:func:`graphsys.storage.file_rules.check_tree`): no symlink a write would follow out,
  no FIFO a write would block on;
* no other process holds ``RUN``: the run takes the directory's writer lock
  (:func:`graphsys.storage.lock.writer_lock`, as graph writers do) for its whole length, so
  two runs at once never interleave ``metrics.jsonl`` or mix checkpoints (the second is
  refused at once; the kernel releases the lock of a killed run);
* ``RUN`` holds no other run: an existing ``run.json`` must record the same task, world
  size, graph (digest) and settings; a rerun may change only
  :data:`~graphsys.gnn.loop.RESUMABLE_CHANGES` (``epochs``, ``patience``, ``sampler``) and
  resumes from ``last/`` (:mod:`graphsys.gnn.fit`). Run files without a ``run.json``
  (another tool's, or an older graphsys's) are refused too.

A new run that ends in an error before it has written anything but ``run.json`` (a setting
refused once the graph is read, an interrupt during setup) removes ``run.json``, and the
directory where the run created it: a failed start does not claim the directory.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphsys.distributed import graph_digest
from graphsys.errors import FormatError, GraphsysError
from graphsys.gnn.config import TrainConfig
from graphsys.gnn.loop import RESUMABLE_CHANGES, config_json
from graphsys.outputs import check_own_directory
from graphsys.storage import file_rules
from graphsys.storage.atomic import make_directory, write_bytes_atomic
from graphsys.storage.graph import Graph
from graphsys.storage.lock import LOCK_FILE, writer_lock

#: The record of the run a directory holds.
RUN_FILE = "run.json"
#: Its ``format`` tag.
RUN_FORMAT = "graphsys-gnn-run"
#: What a run writes in its directory.
RUN_ENTRIES = (RUN_FILE, "metrics.jsonl", "checkpoint", "last")


def run_record(graph: Graph, cfg: TrainConfig, world_size: int) -> dict[str, Any]:
    """``run.json`` of a run of ``cfg`` on ``graph`` with ``world_size`` ranks."""
    return {"format": RUN_FORMAT, "version": 1, "task": cfg.task,
            "train_config": config_json(cfg), "world_size": int(world_size),
            "graph": str(graph.path), "graph_digest": graph_digest(graph)}


def check_place(out: str | Path) -> None:
    """Refuse, in one line, a run directory that is, or lies inside, a graph, checkpoint
    or embedding directory (:func:`graphsys.outputs.check_own_directory`)."""
    check_own_directory(out, what="a run")


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """What makes the run recorded as ``old`` another run than ``new``, in a few words
    (None: the same run, or one that may resume with ``new``)."""
    if old.get("task") != new["task"]:
        return f"a {old.get('task')}-task run, this one is a {new['task']}-task run"
    if old.get("world_size") != new["world_size"]:
        return f"world size {old.get('world_size')}, this run has {new['world_size']}"
    if old.get("graph_digest") != new["graph_digest"]:
        return (f"trained on another graph ({old.get('graph')}), this run's is "
                f"{new['graph']}, whose nodes, edges or partitions differ")
    before, now = old.get("train_config"), new["train_config"]
    if not isinstance(before, dict):
        return "no settings recorded"
    for key in sorted(set(before) | set(now)):
        if key not in RESUMABLE_CHANGES and before.get(key) != now.get(key):
            return f"other settings: {key}={before.get(key)!r}, this run has " \
                   f"{key}={now.get(key)!r}"
    return None


def check_run(out: Path, record: dict[str, Any]) -> None:
    """Refuse, in one line, a run directory ``out`` that holds another run than
    ``record`` (:func:`run_record`), or run files without a record (see the module
    docstring)."""
    names = {p.name for p in out.iterdir()} - {LOCK_FILE}
    if RUN_FILE in names:
        old = file_rules.read_json(out, RUN_FILE, max_bytes=1 << 20)
        if not isinstance(old, dict) or old.get("format") != RUN_FORMAT:
            raise FormatError(f"{out / RUN_FILE}: not a {RUN_FORMAT} record")
        diff = _difference(old, record)
        if diff is not None:
            raise GraphsysError(f"{out}: holds another run ({diff}): choose a new output "
                                f"directory, or remove this one")
        return
    ours = sorted(names & set(RUN_ENTRIES))
    metrics = out / "metrics.jsonl"
    if ours and (ours != ["metrics.jsonl"] or file_rules.file_size(out, metrics) > 0):
        raise GraphsysError(f"{out}: holds run files ({', '.join(ours)}) but no {RUN_FILE} "
                            f"(another tool's run, or an older graphsys's): choose a new "
                            f"output directory, or remove this one")


@contextlib.contextmanager
def run_directory(out: str | Path | None, graph: Graph, cfg: TrainConfig, world_size: int,
                  *, lead: bool = True) -> Iterator[Path | None]:
    """Enter the run directory ``out`` of a run of ``cfg`` on ``graph``: checked, locked
    and recorded (``run.json``) as the module docstring says, held until the block ends;
    yields ``out`` (created if missing; None: a run without one). ``lead``: this process
    writes ``out`` (rank 0 of a data-parallel run of ``world_size`` ranks); the others
    check only its place.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.gnn import TrainConfig
    >>> from graphsys.gnn.run_dir import run_directory
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy([0, 1, 2], [1, 2, 0], work + "/g")
    >>> cfg = TrainConfig(task="link", epochs=1)
    >>> with run_directory(work + "/run", g, cfg, 1) as run:
    ...     sorted(p.name for p in run.iterdir())
    ['.lock', 'run.json']
    >>> with run_directory(work + "/run", g, TrainConfig(task="link", lr=0.1), 1):
    ...     pass  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    graphsys.errors.GraphsysError: .../run: holds another run (other settings: lr=0.003, ...
    """
    if out is None:
        yield None
        return
    out = Path(out)
    check_place(out)
    if not lead:
        yield out
        return
    existed = out.exists()
    make_directory(out, "the run directory")
    file_rules.check_tree(out, what="run directory")
    with writer_lock(out):
        record = run_record(graph, cfg, world_size)
        check_run(out, record)
        fresh = not (out / RUN_FILE).exists()
        write_bytes_atomic(out / RUN_FILE, json.dumps(record, indent=1).encode() + b"\n")
        error = None
        try:
            yield out
        except BaseException as exc:
            if not (fresh and _unclaim(out)):
                raise
            error = exc
    if error is not None:
        if not existed:
            with contextlib.suppress(OSError):
                out.rmdir()                     # empty now: the lock file went with the lock
        raise error


def _unclaim(out: Path) -> bool:
    """After a new run failed: remove its ``run.json`` where it wrote nothing else (no
    evaluation, checkpoint or ``last/``), so that the directory takes another run, as it
    did before this one; whether it was removed."""
    names = {p.name for p in out.iterdir()} - {LOCK_FILE}
    metrics = out / "metrics.jsonl"
    if not names <= {RUN_FILE, metrics.name} or (
            metrics.name in names and file_rules.file_size(out, metrics) > 0):
        return False
    for name in names:
        (out / name).unlink()
    return True
