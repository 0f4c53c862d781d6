"""Issue 13, defect 7 (downloads): an answer larger than the registry expects is refused,
a trickling server cannot hold a fetch past its deadline, and no ``.part`` file is left,
including those of a fetch killed earlier."""

from __future__ import annotations

import http.server
import threading
import time

import pytest

import graphsys.datasets.fetch as fetch_mod
from graphsys.datasets.fetch import fetch
from graphsys.datasets.registry import load_entry
from graphsys.errors import GraphsysError

from .test_dataset_fetch import EDGES, leftovers, tiny_entry


class _Hostile(http.server.BaseHTTPRequestHandler):
    """``/big``: 60x the expected bytes (``/big-announced`` says so in Content-Length);
    ``/trickle``: one byte every 0.2 s, forever."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        body = EDGES * 60_000
        if self.path == "/big-announced":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if self.path.startswith("/big"):
                self.wfile.write(body)
                return
            while True:
                self.wfile.write(b"1")
                self.wfile.flush()
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def hostile():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _entry(tmp_path, url):
    return load_entry(tiny_entry(tmp_path, [dict(
        name="edges", path="tiny/tiny.txt", data=EDGES, url=url, unpack="none",
        dpath="tiny/tiny.txt", ddata=EDGES)]))


@pytest.mark.parametrize("path, message", [("big", "stopped: more than"),
                                           ("big-announced", "refused: .* bytes announced")])
def test_oversized_answer_is_refused(hostile, tmp_path, path, message):
    with pytest.raises(GraphsysError, match=message):
        fetch(_entry(tmp_path, f"{hostile}/{path}"), cache=tmp_path / "cache")
    assert leftovers(tmp_path / "cache") == []


def test_trickling_server_hits_the_deadline(hostile, tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_mod, "DOWNLOAD_DEADLINE", 1.5)
    t0 = time.monotonic()
    with pytest.raises(GraphsysError, match=r"stopped: not done after 2 s"):
        fetch(_entry(tmp_path, f"{hostile}/trickle"), cache=tmp_path / "cache")
    assert time.monotonic() - t0 < 30
    assert leftovers(tmp_path / "cache") == []


def test_part_files_of_a_dead_fetch_are_removed(hostile, tmp_path):
    stale = tmp_path / "cache" / ".downloads" / "999999999-0123456789abcdef.part"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half")
    with pytest.raises(GraphsysError):
        fetch(_entry(tmp_path, f"{hostile}/big"), cache=tmp_path / "cache")
    assert not stale.exists()
