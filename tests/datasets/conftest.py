"""Fixtures of the dataset-registry tests: the local mirror, datasets fetched from it into
a shared cache, and a loopback HTTP server."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

from graphsys.datasets.fetch import fetch
from graphsys.datasets.registry import get_dataset, load_registry

REPO = Path(__file__).resolve().parents[2]


#: The local dataset mirror, ``$GRAPHSYS_MIRROR`` else ``<repo>/../shared/datasets``;
#: located once, before any test clears ``GRAPHSYS_MIRROR``.
MIRROR = Path(os.environ.get("GRAPHSYS_MIRROR") or REPO.parent / "shared" / "datasets")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Tests name their mirror explicitly (no mirror = download), read no registry
    override and never write to ~/.cache."""
    for var in ("GRAPHSYS_REGISTRY", "GRAPHSYS_MIRROR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRAPHSYS_DATA", str(tmp_path / "default-cache"))


@pytest.fixture(scope="session")
def mirror() -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"dataset mirror not found: set GRAPHSYS_MIRROR or provide {MIRROR}")
    return MIRROR


@pytest.fixture(scope="session")
def registry():
    return load_registry(REPO / "datasets")


@pytest.fixture(scope="session")
def mirror_cache(tmp_path_factory, mirror) -> Path:
    """One cache directory shared by the tests that only read fetched files."""
    return tmp_path_factory.mktemp("mirror-cache")


@pytest.fixture(scope="session")
def fetched(mirror, mirror_cache):
    """``fetched(name)``: the :class:`FetchResult` of a registry dataset from the mirror."""

    @functools.cache
    def get(name: str):
        return fetch(get_dataset(name, REPO / "datasets"), cache=mirror_cache, mirror=mirror)

    return get


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def http_root(tmp_path):
    """``(base_url, root)``: an HTTP server on 127.0.0.1 (port 0) serving ``root``."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
