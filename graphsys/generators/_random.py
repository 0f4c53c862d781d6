"""Seeded random streams, a table-free id permutation and re-chunking, shared by the generators.

Determinism contract: each generator cuts its output into fixed-size *RNG blocks* (a
constant of that generator, independent of the caller's ``chunk_*`` argument). Block ``k``
of stream ``tag`` draws only from ``Generator(PCG64(SeedSequence([seed, tag, k])))``, and
output chunks are re-cut from the blocks by :func:`rechunk`. The same seed therefore gives
the same rows in the same order whatever the chunk size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

#: A chunk of rows: column name -> array, all of the same length (axis 0).
Chunk = dict[str, np.ndarray]


def block_rng(seed: int, tag: int, block: int) -> np.random.Generator:
    """The generator of RNG block ``block`` of stream ``tag`` for ``seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, tag, block])))


class IdPermutation:
    """A seeded bijection of ``[0, n)`` computed on the fly, with no ``O(n)`` table.

    On ``L = ceil(log2 n)``-bit integers it applies 3 rounds of ``x = (x + k) * m mod 2**L;
    x ^= x >> s`` (random keys ``k``, random odd multipliers ``m``, ``s = ceil(L/2)``), each
    step a bijection of ``[0, 2**L)``, plus cycle-walking: a value that lands at or beyond
    ``n`` is mapped again until it falls inside, which keeps the whole a bijection of
    ``[0, n)`` (fewer than 2 walks expected). Works for ``n`` up to ``2**62``. It scatters
    structure over ids well enough for synthetic data; it is not a cryptographic permutation.
    """

    ROUNDS = 3

    def __init__(self, n: int, seed: int, tag: int):
        self.n = int(n)
        bits = max(1, (self.n - 1).bit_length())
        self._bits = bits
        self._mask = np.uint64((1 << bits) - 1)
        self._shift = np.uint64((bits + 1) // 2)
        state = np.random.SeedSequence([seed, tag]).generate_state(2 * self.ROUNDS, np.uint64)
        self._keys = [np.uint64(int(k) & ((1 << bits) - 1)) for k in state[: self.ROUNDS]]
        self._mults = [int(m) | 1 for m in state[self.ROUNDS:]]
        self._inverse_mults = [np.uint64(pow(m, -1, 1 << 64)) for m in self._mults]
        self._mults = [np.uint64(m) for m in self._mults]

    def forward(self, x: np.ndarray) -> np.ndarray:
        """``perm(x)`` for int array ``x`` with values in ``[0, n)``; int64, same shape."""
        return self._walk(x, self._mix)

    def inverse(self, y: np.ndarray) -> np.ndarray:
        """``perm^-1(y)`` for int array ``y`` with values in ``[0, n)``; int64, same shape."""
        return self._walk(y, self._unmix)

    def _walk(self, x: np.ndarray, step) -> np.ndarray:
        out = step(np.array(x, dtype=np.uint64))
        n = np.uint64(self.n)
        todo = np.flatnonzero(out >= n)
        while todo.size:
            out[todo] = step(out[todo])
            todo = todo[out[todo] >= n]
        return out.view(np.int64)

    def _mix(self, x: np.ndarray) -> np.ndarray:
        """One pass of the bijection of ``[0, 2**L)``; modifies and returns ``x``."""
        for key, mult in zip(self._keys, self._mults):
            x += key
            x *= mult
            x &= self._mask
            x ^= x >> self._shift
        return x

    def _unmix(self, x: np.ndarray) -> np.ndarray:
        for key, inverse_mult in zip(reversed(self._keys), reversed(self._inverse_mults)):
            shift = int(self._shift)
            while shift < self._bits:  # y ^ y>>s ^ y>>2s ^ ... inverts x ^= x >> s
                x ^= x >> np.uint64(shift)
                shift *= 2
            x *= inverse_mult
            x -= key
            x &= self._mask
        return x


def num_rows(chunk: Chunk) -> int:
    """Rows in ``chunk`` (length of its first column)."""
    return len(next(iter(chunk.values())))


def rechunk(blocks: Iterable[Chunk], rows: int) -> Iterator[Chunk]:
    """Re-cut a stream of chunks into chunks of exactly ``rows`` rows (the last may be short)."""
    pending: list[Chunk] = []
    have = 0
    for block in blocks:
        n = num_rows(block)
        if n == 0:
            continue
        pending.append(block)
        have += n
        while have >= rows:
            merged = pending[0] if len(pending) == 1 else concat(pending)
            yield {k: v[:rows] for k, v in merged.items()}
            have -= rows
            pending = [{k: v[rows:] for k, v in merged.items()}] if have else []
    if have:
        yield pending[0] if len(pending) == 1 else concat(pending)


def concat(chunks: list[Chunk]) -> Chunk:
    """Concatenate chunks with the same columns along axis 0."""
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def stratified_quota(take: int, universe: int, before: int, upto: int) -> int:
    """How many of ``take`` items, spread evenly over a universe of ``universe`` slots, fall in
    slots ``[before, upto)``. Summed over consecutive ranges this is exactly ``take``, and
    each range's quota is at most its size when ``take <= universe``."""
    return take * upto // universe - take * before // universe


def largest_remainder(weights: np.ndarray, total: int) -> np.ndarray:
    """Split the integer ``total`` in proportion to ``weights`` (int64, sums to ``total``)."""
    weights = np.asarray(weights, dtype=np.float64)
    if total == 0 or weights.sum() == 0:
        return np.zeros(len(weights), dtype=np.int64)
    exact = weights * (total / weights.sum())
    out = np.floor(exact).astype(np.int64)
    short = total - int(out.sum())
    if short > 0:
        order = np.argsort(-(exact - out), kind="stable")
        out[order[:short]] += 1
    return out
