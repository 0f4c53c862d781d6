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
    """One superstep.

    ``active``: vertices in the sending frontier (global); ``direction``: ``push``, ``pull``
    or ``stream`` (out-of-core / distributed bucket pass); ``edges_scanned``: edges whose
    entries were read; ``messages_sent``: messages produced on edges (before combining);
    ``messages_combined``: targets receiving at least one message after combining;
    ``messages_exchanged``: (index, value) pairs sent to other processes; ``bytes_read``:
    bucket bytes streamed from the mapped files; ``disk_read_bytes``: bytes the kernel read
    from storage for this process (``/proc/self/io``, 0 where unavailable);
    ``bytes_h2d``: bytes copied host -> device; ``fused``: run inside one multi-superstep
kernel call (its ``seconds`` are that call's time split by work: frontier + edges; a
fused pull does not read, nor count as receivers, targets already at or below the
superstep's smallest message); ``seconds``: per phase (see :data:`PHASES`).
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
    """A whole run: configuration, setup cost (seconds to build CSR/CSC or open buckets),
    supersteps, and whether the program converged (halted before ``max_iters``).

    ``method`` names what ran: ``supersteps`` (the BSP loop), ``async`` (a work list), or
    the whole-graph algorithm a program declared (:meth:`VertexProgram.solve_in_memory`:
    ``fused-pagerank``, ``direction-optimizing-bfs``, ``afforest``, ``union-find``).
    ``setup_bytes_h2d``: bytes copied host -> device before the first superstep (the
    CSR/CSC a memory-mode GPU run uploads once; each superstep's ``bytes_h2d`` counts its
    own copies)."""

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

    @property
    def num_supersteps(self) -> int:
        return len(self.supersteps)

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
        d = asdict(self)
        d["num_supersteps"] = self.num_supersteps
        d["totals"] = self.totals()
        return d

    def to_table(self) -> pa.Table:
        """One row per superstep; ``seconds`` flattened to ``seconds_<phase>`` columns."""
        rows = []
        for s in self.supersteps:
            row = {k: v for k, v in asdict(s).items() if k != "seconds"}
            row.update({f"seconds_{ph}": float(s.seconds.get(ph, 0.0)) for ph in PHASES})
            rows.append(row)
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
