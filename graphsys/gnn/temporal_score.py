"""A trained temporal checkpoint (TGN, TGAT, JODIE) serving new events: scores of ``(src,
dst, t)`` and node embeddings at a time, with the memory taking the new events when asked
(the guide: docs/growing.md, "A temporal model: TGN").

:class:`TemporalScorer` loads a ``task="temporal-link"`` checkpoint on its training graph
(:func:`~graphsys.gnn.temporal_checkpoint.load_temporal`) with the state the run left: the
memory after every event of the graph, and the graph's events as the neighbour store. Its
time is that of the latest event it holds; ``at=T`` rewinds it to the events stamped before
``T`` (replayed from the memory as validation began, :data:`~graphsys.gnn.temporal_task.
TRAIN_END`; for a ``T`` inside the training events, from an empty memory). Events are
scored in batches of ``batch_size`` in time order, each from its nodes' memory and their
``fanouts[0]`` events strictly before the batch; nothing is written to the checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphsys.errors import GraphsysError, ParameterError
from graphsys.gnn.inference import partition_ranges
from graphsys.gnn.temporal_checkpoint import load_temporal, start_of_validation
from graphsys.gnn.temporal_task import event_split
from graphsys.sampling.temporal import TemporalNeighborSampler
from graphsys.storage.embedding_files import EmbeddingWriter
from graphsys.storage.graph import Graph
from graphsys.storage.temporal_index import TemporalAdjacency
from graphsys.views.rows import from_pairs

#: Nodes embedded per batch by :func:`embed_temporal`.
EMBED_BATCH = 1024


def events_adjacency(src, dst, time, eid, num_nodes: int) -> TemporalAdjacency:
    """The temporal adjacency (:mod:`graphsys.storage.temporal_index`) of events held in
    arrays: each event in its source's and its destination's row (once for a self-loop),
    rows ordered by ``(time, eid)``, as the stored index orders them."""
    loop = src == dst
    rows = np.concatenate([src, dst[~loop]])
    other = np.concatenate([dst, src[~loop]])
    t = np.concatenate([time, time[~loop]])
    e = np.concatenate([eid, eid[~loop]])
    indptr, other, t, e = from_pairs(num_nodes, rows, other, t, e, by=(e, t))
    return TemporalAdjacency(indptr, other.astype(np.int32 if num_nodes < 2**31 else np.int64),
                             t, e)


class TemporalScorer:
    """Scores and embeddings of a TGN, TGAT or JODIE checkpoint (see the module docstring).

    Parameters
    ----------
    checkpoint : str or Path
        ``out/checkpoint`` of a ``task="temporal-link"`` run.
    graph : Graph, optional
        The training graph (default: the one the checkpoint records).
    at : int, float, str or datetime, optional
        Rewind to the events stamped strictly before this time (default: every event).
    device : str or torch.device, optional
        Where the model runs (default ``"cpu"``).

    Examples
    --------
    >>> import tempfile, numpy as np, pyarrow as pa, graphsys
    >>> from graphsys.gnn import TrainConfig, train
    >>> rng = np.random.default_rng(0)
    >>> pairs = rng.integers(0, 30, (40, 2))[rng.integers(0, 40, 600)]
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_arrow(pa.table({"src": pairs[:, 0], "dst": pairs[:, 1],
    ...                                   "timestamp": np.arange(600)}), work + "/g",
    ...                         edge_columns=["timestamp"])
    >>> run = train(g, TrainConfig(task="temporal-link", hidden=8, epochs=1),
    ...             out=work + "/run")
    >>> scorer = TemporalScorer(work + "/run/checkpoint")
    >>> first = scorer.score([3, 5], [7, 9], [600, 601], update=True)
    >>> first.shape, scorer.time
    ((2,), 601)
    >>> scorer.embed([3, 5]).shape
    (2, 8)
    """

    def __init__(self, checkpoint: str | Path, graph: Graph | None = None, *, at=None,
                 device="cpu"):
        self.checkpoint = checkpoint
        self.stream, self.cfg, state, self.graph = load_temporal(checkpoint, graph,
                                                                 device=device)
        self.k = self.stream.k
        self.at = None                      # None: just after the latest event held
        if at is not None:
            self._rewind(state, at)

    @property
    def time(self):
        """The time of the latest event the scorer holds (with ``at``: that time)."""
        ev = self.stream.ev
        latest = ev.time[-1].item() if len(ev.time) else None
        return self.at.item() if self.at is not None and (
            latest is None or self.at > latest) else latest

    def _rewind(self, state, at) -> None:
        """The memory and neighbour store after the events stamped before ``at``."""
        from graphsys.storage.time_view import time_bound

        ev, stream, bs = self.stream.ev, self.stream, self.cfg.batch_size
        t = time_bound(at, ev.time.dtype, name="at", up=True)
        cut = int(np.searchsorted(ev.time, t, "left"))
        self.at = t
        if cut == len(ev.time):
            return
        train, valid, _ = event_split(ev, self.cfg)
        first_val = int(np.argmax(valid))
        first_test = first_val + int(valid.sum())
        if cut >= first_val:
            start_of_validation(stream, state, self.checkpoint)
            segments = [(first_val, min(cut, first_test)), (first_test, cut)]
        else:
            if stream.memory is not None:    # TGAT keeps no state
                stream.memory.reset()
            segments = [(0, cut)]
        stream.model.eval()
        with torch.no_grad():
            for lo, hi in segments:
                for a in range(lo, hi, bs):
                    idx = np.arange(a, min(a + bs, hi))
                    _, _, read = stream.score(idx, np.zeros((len(idx), 0), np.int64),
                                              grad=False)
                    stream.absorb(idx, read)
        for name in ("src", "dst", "time", "eid", "raw"):
            setattr(ev, name, getattr(ev, name)[:cut])
        self._reindex()

    def _reindex(self) -> None:
        """The neighbour store: every event held, in RAM."""
        ev = self.stream.ev
        adj = events_adjacency(ev.src, ev.dst, ev.time, ev.eid, ev.num_nodes)
        self.stream.sampler = TemporalNeighborSampler(adj, self.stream.sampler.fanouts,
                                                      strategy=self.cfg.temporal_strategy)

    def _nodes(self, ids, internal: bool, name: str) -> np.ndarray:
        if internal:
            out = np.asarray(ids, np.int64).reshape(-1)
            bad = (out < 0) | (out >= self.stream.ev.num_nodes)
            if bad.any():
                raise ParameterError(name, f"holds node {out[bad][0]}, outside the graph's "
                                           f"{self.stream.ev.num_nodes:,} nodes")
            return out
        return np.asarray(self.graph.to_internal(ids), np.int64).reshape(-1)

    def _raw(self, weight, n: int) -> np.ndarray:
        ev = self.stream.ev
        if ev.raw.shape[1] == 0:
            return np.zeros((n, 0), np.float32)
        r, names = ev.raw.shape[1], ", ".join(ev.columns)
        if weight is None:
            raise ParameterError("weight", f"is needed: the model reads each event's {names} "
                                           f"(its training graph's events have them)")
        w = np.asarray(weight, np.float64)
        if w.size != n * r or not np.isfinite(w).all():
            raise ParameterError("weight", f"must be {n} rows of {r} finite numbers, one per "
                                           f"event ({names})")
        return (w.reshape(n, r) / ev.scales).astype(np.float32)

    def score(self, src, dst, time, *, weight=None, update: bool = False,
              internal: bool = False) -> np.ndarray:
        """Scores (logits) of the events ``src[i] -> dst[i]`` at ``time[i]``.

        Parameters
        ----------
        src, dst : array_like
            Original node ids of the graph (``internal=True``: internal ids).
        time : array_like
            The events' times, in the graph's ``timestamp`` unit; none earlier than
            :attr:`time`.
        weight : array_like, optional
            Each event's edge weight, needed when the training graph's edges have one.
        update : bool, optional
            Take the events into the memory and the neighbour store, batch by batch after
            scoring each batch (default False: nothing changes).
        internal : bool, optional
            ``src`` and ``dst`` are internal ids.

        Returns
        -------
        numpy.ndarray
            float64 (E,), in the order given; higher is more likely.
        """
        s, d = self._nodes(src, internal, "src"), self._nodes(dst, internal, "dst")
        t = self.stream.sampler.event_times(time).reshape(-1)
        n = len(s)
        if not (len(d) == len(t) == n):
            raise ParameterError("dst", f"src, dst and time need one entry per event; got "
                                        f"{n}, {len(d)}, {len(t)}")
        now = self.time
        if n and now is not None and t.min() < now:
            raise ParameterError("time", f"{t.min()} is before {now}, the scorer's time (its "
                                         f"latest event, or at): score events in time "
                                         f"order")
        raw = self._raw(weight, n)
        order = np.argsort(t, kind="stable")
        base = self._append(s[order], d[order], t[order], raw[order])
        out = np.empty(n, np.float64)
        stream, bs = self.stream, self.cfg.batch_size
        if update:
            self._reindex()
        stream.model.eval()
        try:
            with torch.no_grad():
                for a in range(0, n, bs):
                    idx = base + np.arange(a, min(a + bs, n))
                    pos, _, read = stream.score(idx, np.zeros((len(idx), 0), np.int64),
                                                grad=False)
                    out[order[a:a + bs]] = pos.double().cpu().numpy()
                    if update:
                        stream.absorb(idx, read)
        finally:
            if not update:
                self._truncate(base)
        return out

    def _append(self, s, d, t, raw) -> int:
        """The events appended to the stream's arrays (their edge ids after every other);
        returns the position of the first."""
        ev, stream = self.stream.ev, self.stream
        base, e0 = len(ev.src), len(ev.raw_by_eid)
        ev.src, ev.dst = np.concatenate([ev.src, s]), np.concatenate([ev.dst, d])
        ev.time = np.concatenate([ev.time, t.astype(ev.time.dtype)])
        ev.eid = np.concatenate([ev.eid, e0 + np.arange(len(s), dtype=np.int64)])
        ev.raw = np.concatenate([ev.raw, raw])
        ev.raw_by_eid = np.concatenate([ev.raw_by_eid, raw])
        stream.raw_by_eid = torch.cat([stream.raw_by_eid,
                                       torch.from_numpy(raw).to(stream.raw_by_eid.device)])
        return base

    def _truncate(self, base: int) -> None:
        """Drop the events from position ``base`` on (appended by :meth:`_append`)."""
        ev, stream = self.stream.ev, self.stream
        e0 = int(ev.eid[base]) if base < len(ev.eid) else len(ev.raw_by_eid)
        for name in ("src", "dst", "time", "eid", "raw"):
            setattr(ev, name, getattr(ev, name)[:base])
        ev.raw_by_eid = ev.raw_by_eid[:e0]
        stream.raw_by_eid = stream.raw_by_eid[:e0]

    def embed(self, nodes=None, *, internal: bool = False) -> np.ndarray:
        """float32 (Q, d) embeddings of ``nodes`` (original ids; ``internal=True``:
        internal ids; default every node, in internal id order) at the scorer's time: just
        after its latest event, or at ``at``."""
        n = self.stream.ev.num_nodes
        q = np.arange(n) if nodes is None else self._nodes(nodes, internal, "nodes")
        uniq, inv = np.unique(q, return_inverse=True)
        with torch.no_grad():
            z = self.stream.embed_at(uniq, self.embed_time())[0].float().cpu().numpy()
        return z[inv.reshape(-1)]

    def embed_time(self) -> np.ndarray:
        """The query time of :meth:`embed`: ``at``, else just after the latest event."""
        ev = self.stream.ev
        if self.at is not None and (not len(ev.time) or self.at > ev.time[-1]):
            return np.asarray(self.at, ev.time.dtype)
        last = ev.time[-1]
        after = last + 1 if ev.time.dtype.kind in "iu" else np.nextafter(last, np.inf)
        return np.asarray(after, ev.time.dtype)


def embed_temporal(checkpoint: str | Path, out: str | Path, *, graph: Graph | None = None,
                   at=None, device="cpu", log=None) -> dict[str, Any]:
    """Every node's TGN, TGAT or JODIE embedding at the end of the stream, or at the time ``at``
    (see the module docstring; :class:`~graphsys.gnn.temporal_score.TemporalScorer`), written
    partition by partition as an Arrow embedding directory
    (:class:`~graphsys.storage.embedding_files.EmbeddingWriter`); what
    :func:`~graphsys.gnn.embed_checkpoint` does for a temporal checkpoint. Returns
    ``entity_type``, ``num_nodes``, ``dimension``, ``out``, ``files`` and ``as_of`` (the
    last event's time, or ``at``)."""
    scorer = TemporalScorer(checkpoint, graph, at=at, device=device)
    graph = scorer.graph
    et = graph.entity_types[0]
    as_of = scorer.time
    writer = EmbeddingWriter(out, graph, et)
    try:
        for p, (a, b) in enumerate(partition_ranges(graph, et)):
            rows = [torch.from_numpy(scorer.embed(np.arange(lo, min(lo + EMBED_BATCH, b)),
                                                  internal=True))
                    for lo in range(a, b, EMBED_BATCH)]
            writer(p, torch.cat(rows) if rows else torch.zeros(0, scorer.stream.model.dim))
            if log:
                log(f"partition {p}: {b - a:,} embeddings written")
        writer.finish({"checkpoint": str(checkpoint), "task": "temporal-link",
                       "model": scorer.stream.model.config()["model"], "as_of": as_of})
    finally:  # finished or not, the directory is released
        writer.close()
    return {"entity_type": et, "num_nodes": graph.num_nodes(et), "dimension": writer.dim,
            "out": str(out), "files": writer.files, "as_of": as_of}


#: Columns of an events file (:func:`read_events`); ``weight`` optional.
EVENT_COLUMNS = ("src", "dst", "timestamp")


def read_events(path: str | Path) -> dict[str, np.ndarray]:
    """The events of a CSV file with a header naming ``src``, ``dst``, ``timestamp`` (and
    optionally ``weight``): ``{column: array}``, node ids as the file types them (integers,
    or strings). A missing file or column, or an empty one, is refused in one line."""
    import pyarrow as pa
    from pyarrow import csv

    from graphsys.errors import FormatError

    path = Path(path)
    if not path.is_file():          # a FIFO or a directory is no file either
        raise GraphsysError(f"{path}: no such events file")
    try:
        table = csv.read_csv(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise FormatError(f"{path}: not a CSV file of events ({str(exc).splitlines()[0]})"
                          ) from None
    missing = [c for c in EVENT_COLUMNS if c not in table.column_names]
    if missing:
        raise FormatError(f"{path}: no column {missing[0]!r} (the header names "
                          f"{', '.join(EVENT_COLUMNS)}, and weight when the graph has one)")
    if table.num_rows == 0:
        raise FormatError(f"{path}: no events")
    out = {}
    for name in (*EVENT_COLUMNS, "weight"):
        if name in table.column_names:
            col = table.column(name)
            if col.null_count:
                raise FormatError(f"{path}: column {name!r} has an empty value")
            out[name] = col.to_numpy(zero_copy_only=False)
    if out["timestamp"].dtype.kind not in "iuf":
        raise FormatError(f"{path}: column 'timestamp' must hold numbers, got "
                          f"{table.schema.field('timestamp').type}")
    return out
