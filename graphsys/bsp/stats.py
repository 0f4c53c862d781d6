"""Superstep statistics recorded for every BSP run, in a form the analysis module can read.

:class:`RunStats` holds run-level facts and one :class:`SuperstepStats` per superstep;
``to_dict()`` is JSON-ready and ``to_table()`` gives a pyarrow Table with one row per
superstep (columns = the :class:`SuperstepStats` fields, ``seconds_*`` per phase).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

#: Phases timed in every superstep (seconds, wall clock).
PHASES = ("aggregate", "edges", "communicate", "update")


@dataclass
class SuperstepStats:
    """The counters and phase times of one superstep.

    Attributes
    ----------
    superstep : int
        The superstep's number (0-based); for a declared whole-graph algorithm, its first
        level or iteration.
    active : int
        Vertices in the sending frontier, over all processes.
    direction : str
        ``push``, ``pull``, ``stream`` (out-of-core / distributed bucket pass),
        ``active`` or ``active-pull`` (out of core, the senders' or the accepting
        targets' index rows alone: :mod:`~graphsys.bsp.active_edges`), or the name of the
        whole-graph step (``async``, ``afforest``, ...).
    edges_scanned : int
        Edges whose entries were read.
    messages_sent : int
        Messages produced on edges (before combining).
    messages_combined : int
        Targets receiving at least one message after combining.
    messages_exchanged : int
        (index, value) pairs sent to other processes.
    bytes_read : int
        Bucket bytes streamed from the mapped files.
    disk_read_bytes : int
        Bytes the kernel read from storage for this process (``/proc/self/io``; 0 where
        unavailable).
    bytes_h2d : int
        Bytes copied host -> device.
    fused : bool
        Run inside one multi-superstep kernel call: its ``seconds`` are that call's time
        split by work (frontier + edges); a fused pull does not read, nor count as
        receivers, targets already at or below the superstep's smallest message.
    seconds : dict of str to float
        Wall-clock seconds per phase (see :data:`PHASES`).

    Examples
    --------
    A run's supersteps, in ``result.stats.supersteps``:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 2, 3, 4], [2, 3, 4, 5], tempfile.mkdtemp() + "/g")
    >>> result = bsp.run(g, bsp.BFS(0))
    >>> [(step.superstep, step.active, step.edges_scanned) for step in result.stats.supersteps]
    [(0, 1, 4), (1, 1, 3), (2, 1, 2), (3, 1, 1), (4, 1, 0)]
    """

    superstep: int
    active: int
    direction: str
    edges_scanned: int = 0
    messages_sent: int = 0
    messages_combined: int = 0
    messages_exchanged: int = 0
    bytes_read: int = 0
    disk_read_bytes: int = 0
    bytes_h2d: int = 0
    fused: bool = False
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))


@dataclass
class RunStats:
    """Statistics of a whole run: configuration, setup cost, supersteps, convergence.

    ``repr(stats)`` and ``str(stats)`` are one screen: the method, the number of
    supersteps, the time, whether the run converged, and totals over the supersteps;
    the per-superstep records stay in :attr:`supersteps` (one row each with
    :meth:`to_table`).

    Attributes
    ----------
    algorithm : str
        The program's name (``pagerank``, ``bfs``, a user program's ``name``).
    mode : str
        ``memory``, ``out-of-core`` or ``distributed``.
    device, backend : str
        Where and with which kernels the run executed.
    world_size : int
        Processes in the run (1 unless distributed).
    num_nodes, num_edges : int
        Size of the graph and of the edge set that carried messages.
    setup_seconds : float
        Seconds before the first superstep (CSR/CSC built, buckets opened, layouts).
    setup_bytes_h2d : int
        Bytes copied host -> device before the first superstep (the CSR/CSC a memory-mode
        GPU run uploads once; each superstep's ``bytes_h2d`` counts its own copies).
    seconds : float
        Total seconds of the run, setup included.
    converged : bool
        Whether the program halted (or its frontier emptied) before ``max_iters``.
    method : str
        What ran: ``supersteps`` (the BSP loop), ``async`` (a work list), or the
        whole-graph algorithm a program declared
        (:meth:`~graphsys.bsp.program.VertexProgram.solve_in_memory`:
        ``fused-pagerank``, ``direction-optimizing-bfs``, ``afforest``, ``union-find``,
        ``pivot-tarjan``, ``level-peel``, ``fused-hits``, ``brandes``,
        ``parallel-searches``, ``louvain``, ``leiden``, ``semi-synchronous``).
    supersteps : list of SuperstepStats
        One record per superstep, in order.
    weighted : bool
        Whether edge weights entered the messages (a weighted PageRank, HITS or SSSP on an
        edge set with weights); False where every edge counted as 1.
    scores : dict of str to float
        Scores of the answer that a program reports in its ``scores`` attribute (Louvain
        and Leiden: ``modularity``, ``communities``); empty for most.
    start : str or None
        How a run given a previous result (``init``) started: ``delta`` (the residual of
        the changed edges pushed, :mod:`graphsys.bsp.incremental_pagerank`), ``warm`` (the
        iteration started from the previous values), ``repair`` (WCC, BFS, SSSP: the
        previous answer repaired where the changed edges reach it,
        :mod:`graphsys.bsp.incremental_changes`) or ``scratch`` (the previous result
        set aside, e.g. too much changed); None for a run without one.
    residual : float or None
        A bound on the L1 change one more power-iteration step would make to the result
        (PageRank after a delta push, which stops on it); None where the run does not
        know one.
    resident_bytes : int
        Out of core on the torch backend: bytes of edge batches kept in device memory
        after the first superstep (``device_budget``); the supersteps after it copy only
        the other batches (their ``bytes_h2d``). Where a solver on the device built its
        layout from the buckets, the bytes of that layout. 0 elsewhere.
    pass_replays : int
        Out of core on CUDA: supersteps whose streamed pass (PageRank's all-active one, or
        a frontier program's over buckets it read before) replayed the pass recorded as
        one CUDA graph (:mod:`graphsys.bsp.recorded_pass`) rather than running batch by
        batch. 0 elsewhere.

    Examples
    --------
    >>> from graphsys.bsp.stats import RunStats, SuperstepStats
    >>> stats = RunStats("pagerank", "memory", "cpu", "numba", 1, num_nodes=4, num_edges=5,
    ...                  converged=True,
    ...                  supersteps=[SuperstepStats(s, 4, "pull", edges_scanned=5)
    ...                              for s in range(3)])
    >>> print(stats)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    RunStats(pagerank: supersteps, 3 supersteps, converged, ... (setup ...)
      memory, device cpu, backend numba, 1 process; 4 nodes, 5 edges
      edges scanned 15, messages sent 0, receivers 0, exchanged 0
      bytes read 0, disk 0, host->device 0
      phase seconds: aggregate ..., edges ..., communicate ..., update ...
      per superstep: .supersteps (3 records), .to_table())
    """

    algorithm: str
    mode: str
    device: str
    backend: str
    world_size: int
    num_nodes: int
    num_edges: int
    setup_seconds: float = 0.0
    setup_bytes_h2d: int = 0
    seconds: float = 0.0
    converged: bool = False
    method: str = "supersteps"
    supersteps: list[SuperstepStats] = field(default_factory=list)
    weighted: bool = False
    scores: dict[str, float] = field(default_factory=dict)
    start: str | None = None
    residual: float | None = None
    resident_bytes: int = 0
    pass_replays: int = 0

    @property
    def num_supersteps(self) -> int:
        """Supersteps recorded (``len(self.supersteps)``)."""
        return len(self.supersteps)

    def __repr__(self) -> str:
        t = self.totals()
        procs = f"{self.world_size} process{'es' if self.world_size != 1 else ''}"
        return (
            f"RunStats({self.algorithm}: {self.method}, {self.num_supersteps} supersteps, "
            f"{'converged' if self.converged else 'NOT converged (stopped at max_iters)'}, "
            f"{self.seconds:.3f} s (setup {self.setup_seconds:.3f} s)\n"
            f"  {self.mode}, device {self.device}, backend {self.backend}, {procs}; "
            f"{self.num_nodes:,} nodes, {self.num_edges:,} edges\n"
            f"  edges scanned {t['edges_scanned']:,}, messages sent {t['messages_sent']:,}, "
            f"receivers {t['messages_combined']:,}, exchanged {t['messages_exchanged']:,}\n"
            f"  bytes read {t['bytes_read']:,}, disk {t['disk_read_bytes']:,}, "
            f"host->device {t['bytes_h2d'] + self.setup_bytes_h2d:,}\n"
            f"  phase seconds: "
            + ", ".join(f"{ph} {t[f'seconds_{ph}']:.3f}" for ph in PHASES)
            + f"\n  per superstep: .supersteps ({self.num_supersteps} records), .to_table())")

    __str__ = __repr__

    def totals(self) -> dict[str, int | float]:
        """Sums over supersteps of every counter and phase time."""
        out: dict[str, int | float] = {}
        for k in ("edges_scanned", "messages_sent", "messages_combined", "messages_exchanged",
                  "bytes_read", "disk_read_bytes", "bytes_h2d"):
            out[k] = int(sum(getattr(s, k) for s in self.supersteps))
        for ph in PHASES:
            out[f"seconds_{ph}"] = float(sum(s.seconds.get(ph, 0.0) for s in self.supersteps))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Every field (supersteps as dicts), ``num_supersteps`` and :meth:`totals`;
        JSON-ready."""
        return {**asdict(self), "num_supersteps": self.num_supersteps, "totals": self.totals()}

    def to_table(self) -> pa.Table:
        """One row per superstep; ``seconds`` flattened to ``seconds_<phase>`` columns."""
        rows = [{**{k: v for k, v in asdict(s).items() if k != "seconds"},
                 **{f"seconds_{ph}": float(s.seconds.get(ph, 0.0)) for ph in PHASES}}
                for s in self.supersteps]
        if not rows:
            return pa.table({"superstep": pa.array([], pa.int64())})
        return pa.Table.from_pylist(rows)


def disk_read_bytes() -> int:
    """Bytes this process has caused to be read from storage (Linux ``read_bytes``)."""
    try:
        with open(f"/proc/{os.getpid()}/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
