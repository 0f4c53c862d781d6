"""Memory sampling: the background sampler's cycle and PeakMemory's peaks."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from graphsys.memory import BackgroundSampler, PeakMemory, current_memory


class _Count(BackgroundSampler):
    thread_name = "test-sampler"

    def __init__(self):
        super().__init__(0.001)
        self.threads = []

    def sample(self):
        self.threads.append(threading.current_thread().name)


def test_sampler_samples_on_its_thread_and_once_more_on_exit():
    with _Count() as s:
        while "test-sampler" not in s.threads:
            threading.Event().wait(0.001)
    assert s.threads[-1] == threading.current_thread().name  # the closing reading
    assert not s._thread.is_alive()


def test_peak_memory_sees_an_array_held_in_the_block():
    before = current_memory().anon
    with PeakMemory(interval=0.002) as pm:
        block = np.ones(64 << 20, np.uint8)  # 64 MiB, touched
        for _ in range(5000):  # until the sampler has read it (a loaded machine: late)
            if not before or pm.peak_anon >= before + (48 << 20):
                break
            threading.Event().wait(0.001)
        del block
    if before:  # /proc available
        assert pm.peak_anon >= before + (48 << 20)
        assert pm.peak_total >= pm.peak_anon
    assert set(pm.to_json()) == {"peak_rss_bytes", "peak_rss_anon_bytes",
                                 "peak_rss_file_bytes"}


def test_sampler_without_a_reading_is_refused():
    """The base class has no reading of its own: it cannot be made without one."""
    with pytest.raises(TypeError):
        BackgroundSampler(0.01)


def test_trim_heap_releases_arrow_and_c_heap_pages(monkeypatch):
    """trim_heap asks Arrow's pool (when pyarrow is loaded) and glibc to hand back free
    pages, and is harmless to call again."""
    import pyarrow as pa

    from graphsys import memory

    released = []
    pool = pa.default_memory_pool()
    monkeypatch.setattr(pa, "default_memory_pool",
                        lambda: type("Pool", (), {"release_unused": lambda self: released.append(
                            pool.backend_name)})())
    memory.trim_heap()
    memory.trim_heap()
    assert len(released) == 2
