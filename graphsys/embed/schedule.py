"""Bucket orders and the partition-buffer plan (which partitions to load / evict, and when).

A *bucket* ``(i, j)`` holds the edges from lhs partition ``i`` to rhs partition ``j``;
training it needs partitions ``i`` and ``j`` resident. Orders (:func:`bucket_order`):
``random``; ``affinity`` (greedy: each bucket shares as many partitions with the previous
one as it can, PBG); ``outside_in`` (L-shaped layers ``min(i, j) = 0, 1, ...``, random
inside a layer, each bucket next to its transpose, PBG); ``inside_out`` (the same layers
reversed, PBG's default); ``buffer`` (Marius's BETA ordering for ``c`` resident partitions:
keep ``c - 1`` fixed, stream the others through the last slot, retire the fixed set,
repeat). :func:`plan_buffer` simulates the buffer with Belady's eviction; the trainer runs
exactly that plan. :func:`plan_rounds` splits an order into rounds of buckets with
disjoint partitions, one per rank.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

Bucket = tuple[int, int]


def _layer(p: int, k: int, rng: random.Random) -> list[Bucket]:
    pairs = [[(k, k)]]
    for q in range(k + 1, p):
        pair = [(q, k), (k, q)]
        rng.shuffle(pair)
        pairs.append(pair)
    rng.shuffle(pairs)
    return [b for pair in pairs for b in pair]


def _affinity(p: int, rng: random.Random) -> list[Bucket]:
    remaining = [(i, j) for i in range(p) for j in range(p)]
    rng.shuffle(remaining)
    order = [remaining.pop()]
    while remaining:
        i, j = order[-1]
        best, best_score = None, -1
        for k, (a, b) in enumerate(remaining):
            score = (a in (i, j)) + (b in (i, j))
            if score > best_score:
                best, best_score = k, score
                if score == 2:
                    break
        order.append(remaining.pop(best))
    return order


def _buffer_order(p: int, c: int, rng: random.Random) -> list[Bucket]:
    parts = list(range(p))
    rng.shuffle(parts)
    if c >= p:
        return [(i, j) for i in parts for j in parts]
    done: set[Bucket] = set()
    order: list[Bucket] = []

    def emit(group: list[int]) -> None:
        for a in group:
            for b in group:
                if (a, b) not in done:
                    done.add((a, b))
                    order.append((a, b))

    unretired = parts
    last: int | None = None
    while unretired:
        if len(unretired) <= c:
            emit(unretired)
            break
        if last is not None and last in unretired:
            fixed = [last] + [q for q in unretired if q != last][: c - 2]
        else:
            fixed = unretired[: c - 1]
        stream = [q for q in unretired if q not in fixed]
        if last is not None:  # stream the partitions still resident from the last round first
            stream.sort(key=lambda q: q != last)
        for s in stream:
            emit(fixed + [s])
        last = stream[-1]
        unretired = [q for q in unretired if q not in fixed]
        # reverse so that the next round starts with the partition left in the buffer
        unretired = [last] + [q for q in reversed(unretired) if q != last]
    return order


def bucket_order(name: str, num_partitions: int, *, seed: int, buffer: int | None = None
                 ) -> list[Bucket]:
    """Every bucket ``(i, j)`` of a ``P x P`` grid exactly once, in the order ``name``.

    ``buffer`` is the number of resident partitions ``c`` (used by ``buffer``; default P).
    Deterministic in ``seed``.
    """
    p = num_partitions
    rng = random.Random(seed)
    if name == "random":
        order = [(i, j) for i in range(p) for j in range(p)]
        rng.shuffle(order)
        return order
    if name == "affinity":
        return _affinity(p, rng)
    if name in ("inside_out", "outside_in"):
        layers = [_layer(p, k, rng) for k in range(p)]
        if name == "inside_out":
            layers.reverse()
        return [b for layer in layers for b in layer]
    if name == "buffer":
        return _buffer_order(p, max(2, min(buffer or p, p)), rng)
    raise ValueError(f"unknown bucket order {name!r}")


def min_swaps(p: int, c: int) -> int:
    """Marius's lower bound on partition loads after the buffer is first filled:
    ``ceil((p(p-1)/2 - c(c-1)/2) / (c-1))`` for a buffer of ``c < p`` partitions."""
    if c >= p:
        return 0
    pairs = p * (p - 1) // 2 - c * (c - 1) // 2
    return -(-pairs // (c - 1))


@dataclass
class Step:
    """What to do before training ``bucket``: write back and drop ``evict``, then ``load``."""

    bucket: Bucket
    evict: list[int] = field(default_factory=list)
    load: list[int] = field(default_factory=list)


@dataclass
class BufferPlan:
    steps: list[Step]
    resident_after: list[int]
    loads: int
    evictions: int

    @property
    def swaps(self) -> int:
        """Loads that needed an eviction first (the buffer was full)."""
        return self.evictions


def plan_buffer(order: list[Bucket], capacity: int, resident: list[int] | None = None
                ) -> BufferPlan:
    """Belady plan for ``order`` with ``capacity`` slots (>= 2 unless every bucket is
    ``(p, p)``) starting from ``resident``."""
    if capacity < 2 and any(i != j for i, j in order):
        raise ValueError("a buffer needs at least 2 partitions")
    resident_set = list(resident or [])
    uses: dict[int, list[int]] = {}
    for k, (i, j) in enumerate(order):
        for q in {i, j}:
            uses.setdefault(q, []).append(k)

    def next_use(q: int, k: int) -> float:
        lst = uses.get(q, [])
        pos = bisect.bisect_left(lst, k)
        return lst[pos] if pos < len(lst) else float("inf")

    steps, loads, evictions = [], 0, 0
    for k, (i, j) in enumerate(order):
        need = [i] if i == j else [i, j]
        step = Step((i, j))
        for q in need:
            if q in resident_set:
                continue
            if len(resident_set) >= capacity:
                victims = [r for r in resident_set if r not in need]
                victim = max(victims, key=lambda r: (next_use(r, k), r))
                resident_set.remove(victim)
                step.evict.append(victim)
                evictions += 1
            resident_set.append(q)
            step.load.append(q)
            loads += 1
        steps.append(step)
    return BufferPlan(steps, resident_set, loads, evictions)


def plan_rounds(order: list[Bucket], ranks: int) -> list[list[Bucket | None]]:
    """Rounds of a distributed epoch: ``rounds[n][r]`` is the bucket rank ``r`` trains in
    round ``n``, or ``None`` (the rank idles that round).

    Greedy matching in ``order``: a round takes, in order, every remaining bucket whose
    partitions are disjoint from those already taken, up to ``ranks`` buckets, so no
    partition is in two buckets of one round and every bucket is in exactly one round. A
    taken bucket goes to the free rank whose bucket of the previous round shares the most
    partitions with it (it keeps them resident), ties to the lowest rank. Deterministic.
    """
    if ranks < 1:
        raise ValueError("plan_rounds needs at least one rank")
    remaining = list(order)
    last: list[set[int]] = [set() for _ in range(ranks)]
    rounds: list[list[Bucket | None]] = []
    while remaining:
        picked: list[int] = []  # positions in remaining
        used: set[int] = set()
        for k, b in enumerate(remaining):
            if not used & set(b):
                picked.append(k)
                used |= set(b)
                if len(picked) == ranks:
                    break
        taken = [remaining[k] for k in picked]
        for k in reversed(picked):
            del remaining[k]
        assign: list[Bucket | None] = [None] * ranks
        for b in taken:
            free = [r for r in range(ranks) if assign[r] is None]
            assign[max(free, key=lambda r: (len(last[r] & set(b)), -r))] = b
        last = [set(b) if b is not None else set() for b in assign]
        rounds.append(assign)
    return rounds
