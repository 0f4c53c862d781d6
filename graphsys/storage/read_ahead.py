"""Decoding ahead of the consumer: :func:`read_ahead` iterates a reader's batches on a
helper thread within a byte budget, so that decoding (pyarrow releases the GIL) overlaps
the consumer's work (validating, spilling, collecting ids)."""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator
from typing import Any


class ReadAhead:
    """The consumer's side of :func:`read_ahead`: its helper thread runs from the start."""

    def __init__(self, batches: Iterator[Any], max_bytes: int):
        self._queue = _AheadQueue(max_bytes)
        self._helper = threading.Thread(target=self._queue.produce, args=(batches,),
                                        name="graphsys-read-ahead", daemon=True)
        self._helper.start()

    def __iter__(self) -> ReadAhead:
        return self

    def __next__(self) -> Any:
        try:
            batch = self._queue.take()
        except BaseException:
            self.close()
            raise
        if batch is _AheadQueue.END:
            self.close()  # (later calls find the queue stopped and empty: END again)
            raise StopIteration
        return batch

    def close(self) -> None:
        """Stop the helper (it closes the batches) and wait for it."""
        self._queue.stop()
        if self._helper.is_alive() and self._helper is not threading.current_thread():
            self._helper.join()

    __del__ = close


class _AheadQueue:
    """The batches decoded and not yet taken, at most ``max_bytes`` of them (always at least
    one batch), between the helper and the consumer. The helper holds no reference to the
    consumer, so a consumer dropped unclosed is collected, and closes."""

    END = object()

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.ahead: collections.deque = collections.deque()  # (batch, bytes, exception)
        self.held = 0
        self.cond = threading.Condition()
        self.stopped = False

    def put(self, item, nbytes: int = 0, exc: BaseException | None = None) -> bool:
        with self.cond:
            while self.ahead and self.held + nbytes > self.max_bytes and not self.stopped:
                self.cond.wait()
            if self.stopped:
                return False
            self.ahead.append((item, nbytes, exc))
            self.held += nbytes
            self.cond.notify_all()
            return True

    def produce(self, batches: Iterator[Any]) -> None:
        try:
            for batch in batches:
                if not self.put(batch, sum(c.nbytes for c in batch.columns.values())):
                    return
            self.put(self.END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self.put(None, exc=exc)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    def take(self):
        """The next batch, or :data:`END` once the consumer closed (after the end or an
        error was handed over, or early: the batches left are dropped)."""
        with self.cond:
            while not self.ahead or self.stopped:
                if self.stopped:
                    self.ahead.clear()
                    self.held = 0
                    return self.END
                self.cond.wait()
            batch, nbytes, exc = self.ahead.popleft()
            self.held -= nbytes
            self.cond.notify_all()
        if exc is not None:
            raise exc
        return batch

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def read_ahead(batches: Iterator[Any], max_bytes: int) -> Iterator[Any]:
    """Iterate ``batches`` on a helper thread that decodes ahead of the consumer while the
    decoded batches not yet taken hold at most ``max_bytes`` (Arrow buffer bytes; always at
    least one batch), so that decoding (pyarrow releases the GIL) overlaps the consumer's
    work. An exception of ``batches`` is raised here, in its place; closing this iterator
    early (or dropping it: the consumer raised) stops the helper and closes ``batches``.
    Batches read ahead already (:func:`read_table`'s, taken over from
    :func:`start_table_read`) are returned as they are."""
    if isinstance(batches, ReadAhead):
        return batches
    return ReadAhead(batches, max_bytes)
