"""What a training run measures: per-rank figures (:class:`RankStats`) and per-epoch totals
(:class:`EpochStats`), as recorded in ``checkpoint.json``'s ``stats`` and printed by
``graphsys embed train --json``. Seconds are wall-clock seconds, sizes bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any


def _numbers(cls, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a ``checkpoint.json`` record of ``cls``, which carries no checksum) with
    every integer and real field checked: a TypeError naming the first that is not a
    finite number of its kind (a bool is none), for the reader to report."""
    if not isinstance(data, dict):
        raise TypeError(f"a {cls.__name__} record must be an object, got {data!r}")
    for f in fields(cls):
        if f.name in data and f.type in ("int", "float"):
            v = data[f.name]
            kinds = (int,) if f.type == "int" else (int, float)
            if isinstance(v, bool) or not isinstance(v, kinds) or not math.isfinite(v):
                what = "an integer" if f.type == "int" else "a number"
                raise TypeError(f"{f.name} is {v!r}, not {what}")
    return data


@dataclass
class RankStats:
    """One rank's share of an epoch (the only one in a single-process run).

    ``edges`` and ``buckets`` trained; ``idle_rounds``: distributed rounds with no bucket for
    this rank; ``loss_sum``: sum of its batch losses; ``train_seconds``: seconds training
    buckets; ``wait_seconds``: seconds in each round's collectives (partition lock and
    relation sync: waiting for the slowest rank); ``loads`` / ``evictions``: partitions read
    into / written out of its buffer and their ``bytes_read`` / ``bytes_written``;
    ``checkpoint_bytes``: bytes its commits wrote; ``io_wait_seconds``: seconds the training
    thread waited for partition loads and write-backs (I/O the pipeline did not hide).
    """

    rank: int
    edges: int = 0
    buckets: int = 0
    idle_rounds: int = 0
    loss_sum: float = 0.0
    train_seconds: float = 0.0
    wait_seconds: float = 0.0
    loads: int = 0
    evictions: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    checkpoint_bytes: int = 0
    io_wait_seconds: float = 0.0

    def figures(self) -> list[float]:
        """Every field but ``rank``, in field order, as floats (exact below 2**53)."""
        return [float(getattr(self, f.name)) for f in fields(self)[1:]]

    def set_figures(self, values: list[float]) -> None:
        """Set the fields from :meth:`figures` of the same rank."""
        for f, v in zip(fields(self)[1:], values):
            setattr(self, f.name, v if f.type == "float" else int(v))

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for k in ("train_seconds", "wait_seconds", "io_wait_seconds"):
            out[k] = round(out[k], 3)
        return out


@dataclass
class EpochStats:
    """One epoch (all ranks): edges trained, wall seconds without the commits, mean loss
    per edge, partition loads and swaps (evictions), buffer traffic and commit writes
    (bytes), commit seconds; ``ranks``: the per-rank figures (:class:`RankStats`, by rank);
    ``held`` (distributed): per round, the partitions each rank held, ``held[n][r]``."""

    epoch: int
    edges: int = 0
    seconds: float = 0.0
    loss: float = 0.0
    loads: int = 0
    swaps: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    checkpoint_bytes: int = 0
    checkpoint_seconds: float = 0.0
    world_size: int = 1
    ranks: list[RankStats] = field(default_factory=list)
    held: list[list[list[int]]] = field(default_factory=list)

    @property
    def edges_per_s(self) -> float:
        return self.edges / self.seconds if self.seconds else 0.0

    def total(self) -> None:
        """Set the epoch totals from :attr:`ranks`."""
        rs = self.ranks
        self.edges = sum(r.edges for r in rs)
        self.loss = sum(r.loss_sum for r in rs) / max(self.edges, 1)
        self.loads = sum(r.loads for r in rs)
        self.swaps = sum(r.evictions for r in rs)
        self.bytes_read = sum(r.bytes_read for r in rs)
        self.bytes_written = sum(r.bytes_written for r in rs)
        self.checkpoint_bytes = sum(r.checkpoint_bytes for r in rs)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["edges_per_s"] = round(self.edges_per_s, 1)
        out["seconds"] = round(self.seconds, 3)
        out["checkpoint_seconds"] = round(self.checkpoint_seconds, 3)
        out["ranks"] = [r.to_json() for r in self.ranks]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpochStats:
        kw = {k: v for k, v in _numbers(cls, data).items() if k not in ("edges_per_s", "ranks")}
        ranks = data.get("ranks", [])
        if not isinstance(ranks, list):
            raise TypeError(f"ranks is {ranks!r}, not a list")
        return cls(**kw, ranks=[RankStats(**_numbers(RankStats, r)) for r in ranks])
