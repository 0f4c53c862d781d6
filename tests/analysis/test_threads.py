"""The other threads' CPU time and what each spent it on (ThreadSampler)."""

from __future__ import annotations

import threading
import time

from graphsys.analysis.threads import ThreadSampler


def _busy(seconds: float) -> int:
    end, n = time.thread_time() + seconds, 0
    while time.thread_time() < end:
        n += 1
    # CPU time is read from /proc while a thread lives: stay (asleep, using no CPU) long
    # enough for the sampler to read the burnt time however loaded the machine is
    time.sleep(0.5)
    return n


def test_a_busy_thread_gets_its_cpu_time_and_function():
    with ThreadSampler(interval=0.01) as sampler:
        worker = threading.Thread(target=_busy, args=(0.3,), name="busy-worker")
        idle = threading.Thread(target=time.sleep, args=(0.8,), name="idle-worker")
        worker.start()
        idle.start()
        worker.join()
        idle.join()
    rows = {r["thread"]: r for r in sampler.result()}
    busy = rows["busy-worker"]
    # CPU time from /proc (clock ticks): the 0.3 s the thread burnt, give or take a tick
    assert 0.2 <= busy["cpu_seconds"] <= 0.6 and busy["threads"] == 1
    assert busy["samples"] > 0
    assert busy["spent_on"][0]["what"].endswith("._busy")
    assert abs(sum(s["share"] for s in busy["spent_on"]) - 1) < 1e-9
    # a sleeping thread uses no CPU: not listed; the calling thread is never listed
    assert "idle-worker" not in rows
    assert threading.current_thread().name not in rows


def test_threads_of_one_name_are_one_row():
    with ThreadSampler(interval=0.01) as sampler:
        for _ in range(2):
            t = threading.Thread(target=_busy, args=(0.1,), name="pool_0")
            t.start()
            t.join()
    (row,) = [r for r in sampler.result() if r["thread"] == "pool_0"]
    assert row["threads"] == 2 and row["cpu_seconds"] >= 0.1
