"""Shared fixtures: the local dataset mirror, small edge-list writers and the guides' runner."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
# Off a terminal, long loops print a progress line every GRAPHSYS_PROGRESS_SECONDS: far
# apart in the test run, so that a slow machine does not add lines to captured stderr (the
# tests of progress itself set their own interval).
os.environ.setdefault("GRAPHSYS_PROGRESS_SECONDS", "3600")


@pytest.fixture(autouse=True)
def _global_rngs_seeded():
    """Each test starts from the same global RNG states (NumPy's legacy one, and torch's
    where torch is imported: a test of an import that loads no torch must not load it): a
    model or array a test draws outside a seeded call otherwise takes what the tests run
    before it in the same worker drew, and passes or fails with the order."""
    np.random.seed(0)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


def hub_graph_dir(tmp: Path, *, hubs: int, hub_edges: int, nodes: int, edges: int,
                  partitions: int, seed: int) -> Path:
    """A seeded graph with skewed out-degrees ingested from a TSV file into ``tmp / "g"``:
    ``hub_edges`` edges leave nodes ``0..hubs-1``, the other ``edges - hub_edges`` any of
    ``nodes`` nodes (the profiling tests' load-balance inputs). Returns the directory."""
    import numpy as np

    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    rng = np.random.default_rng(seed)
    src = np.concatenate([rng.integers(0, hubs, hub_edges),
                          rng.integers(0, nodes, edges - hub_edges)])
    dst = rng.integers(0, nodes, len(src))
    f = tmp / "e.tsv"
    f.write_text("".join(f"{s}\t{d}\n" for s, d in zip(src, dst)))
    ingest_sources([EdgeSource([f])], tmp / "g", IngestOptions(partitions=partitions))
    return tmp / "g"


def mirror_dir() -> Path | None:
    """The local dataset mirror: $GRAPHSYS_MIRROR, else ../shared/datasets beside the repo."""
    env = os.environ.get("GRAPHSYS_MIRROR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "datasets")
    return next((c for c in candidates if c.is_dir()), None)


@pytest.fixture
def mirror() -> Path:
    path = mirror_dir()
    if path is None:
        pytest.skip("dataset mirror not found (set GRAPHSYS_MIRROR)")
    return path


@pytest.fixture
def fsynced(monkeypatch) -> list[Path]:
    """The paths ``os.fsync`` is called on while the test runs, in call order (each open
    file's path as ``/proc/self/fd`` names it: the name it had when it was opened)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd")
    paths: list[Path] = []
    real = os.fsync

    def record(fd):
        fd = fd if isinstance(fd, int) else fd.fileno()
        paths.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return paths


def guide_blocks(name: str) -> list[str]:
    """The fenced ``python`` blocks of the guide ``docs/NAME``, in order."""
    text = (REPO / "docs" / name).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.fixture(scope="session")
def run_guide():
    """``run_guide(name, before=None)``: execute the guide ``docs/NAME``'s ``python`` blocks
    in order in one namespace, as a reader would, and return that namespace; ``before(i,
    block, ns)`` is called before block ``i`` runs (to look at the state a later block
    changes)."""

    def run(name: str, before=None) -> dict:
        ns: dict = {}
        for i, block in enumerate(guide_blocks(name)):
            if before is not None:
                before(i, block, ns)
            exec(compile(block, f"{name} python block {i + 1}", "exec"), ns)
        return ns

    return run


# ---- the test device -------------------------------------------------------------------
# ``pytest --device cuda`` (or GRAPHSYS_TEST_DEVICE=cuda) runs every test that takes the
# ``device`` fixture on that device, each against the same CPU reference it uses on CPU;
# ``pytest -m device`` selects those tests. The default is ``cpu``: the suite as it always
# ran. ``lazy`` runs them on torch's lazy-tensor backend (TorchScript, on the CPU): a
# device that is not the CPU, so a tensor left on the host, mixed into a device op or read
# through NumPy fails there as it would on CUDA; no GPU needed to check device discipline.
# It is slow (TorchScript graphs per step) and has holes of its own, which the tests that
# meet them skip on it: a bmm of a transposed view comes back on the CPU, views fail under
# a TorchDispatchMode (the profiler's transfer counter), a float32 gradient copy is typed
# float64; and it lets a few mixed-device ops pass that CUDA refuses (torch.where).
# Folders and files whose device tests skip there, marked at collection (before a module's
# fixtures train on the device):
LAZY_SKIPS = {
    # a bucket's steps are one graph until its loss is read at the bucket's end (more
    # memory than a test machine has), and the views unbind returns come back invalid
    "tests/embed/": "the embedding trainer does not run on torch's lazy backend",
    # whole training runs: over 300 s a file there, or over 9 GB of memory (test_train)
    **{f"tests/gnn/{name}.py": "a whole GNN training run is too slow on torch's lazy backend"
       for name in ("test_train", "test_custom", "test_full_graph", "test_link_prediction")},
}


def pytest_addoption(parser):
    parser.addoption("--device", default=None, metavar="NAME",
                     help="device of the tests marked 'device': cpu (default), cuda, cuda:k "
                          "or lazy (torch's lazy tensors on the CPU); or GRAPHSYS_TEST_DEVICE")
    parser.addoption("--slow", default="", metavar="TIER", choices=("", *SLOW_TIERS),
                     help="also run the tests marked slow up to this tier: "
                          + "; ".join(f"{t}: {why}" for t, why in SLOW_TIERS.items()))


# ---- slow tiers ------------------------------------------------------------------------
# ``@pytest.mark.slow("ci")`` or ``@pytest.mark.slow("full")`` (the marker is registered in
# pyproject.toml): a test of tens of seconds or more. A plain ``pytest`` skips both tiers;
# ``--slow ci`` runs the ``ci`` tier (CI runs it: .ci/run), ``--slow full`` both tiers.
# ``-m slow`` with ``--slow full`` runs the slow tests alone.

#: Tier -> what its tests are, in the order ``--slow`` includes them.
SLOW_TIERS = {
    "ci": "work CI runs (multi-process runs, every analysis after warmup --all)",
    "full": "run by hand: a reference library on a real graph, every kernel compiled cold",
}


def _slow_skip(config, item):
    """The skip marker of a test marked slow beyond ``--slow``'s tier (None: it runs); a
    marker without a known tier is a usage error."""
    mark = item.get_closest_marker("slow")
    if mark is None:
        return None
    tier = mark.args[0] if mark.args else None
    if tier not in SLOW_TIERS:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow takes a tier, one of "
                                f"{', '.join(SLOW_TIERS)}; got {tier!r}")
    chosen = config.getoption("--slow")
    order = list(SLOW_TIERS)
    if chosen and order.index(tier) <= order.index(chosen):
        return None
    return pytest.mark.skip(reason=f"slow ({SLOW_TIERS[tier]}): run with --slow {tier}")


def chosen_device(config) -> str:
    """The test device: ``--device``, else $GRAPHSYS_TEST_DEVICE, else ``cpu``."""
    return (config.getoption("--device") or os.environ.get("GRAPHSYS_TEST_DEVICE")
            or "cpu").strip()


def _device_unavailable(name: str) -> str | None:
    """Why ``name`` cannot run here (None: it can)."""
    import torch

    if name == "cpu":
        return None
    if name == "lazy":
        try:
            import torch._lazy.ts_backend  # noqa: F401
        except ImportError as e:
            return f"torch {torch.__version__} has no lazy-tensor backend ({e})"
        return None
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            return f"no CUDA device (torch {torch.__version__}, CUDA {torch.version.cuda})"
        index = torch.device(name).index
        if index is not None and index >= torch.cuda.device_count():
            return f"only {torch.cuda.device_count()} CUDA device(s)"
        return None
    return f"unknown test device {name!r} (choose from cpu, cuda, cuda:k, lazy)"


def _emulate_lazy_device() -> None:
    """Let graphsys resolve ``lazy`` as a device: the library's resolver accepts cpu, cuda
    and auto, so the resolver every module bound is wrapped (tests only)."""
    import sys

    import torch
    import torch._lazy.ts_backend

    import graphsys.device

    real = graphsys.device.resolve_device
    if getattr(real, "_lazy_wrapper", False):
        return
    torch._lazy.ts_backend.init()

    def resolve_device(device):
        return torch.device("lazy") if str(device) == "lazy" else real(device)

    resolve_device._lazy_wrapper = True
    names = graphsys.device.DEVICES
    import graphsys.embed.config  # noqa: F401  (validates device names against DEVICES)

    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("graphsys"):
            continue
        if getattr(mod, "resolve_device", None) is real:
            mod.resolve_device = resolve_device
        if getattr(mod, "DEVICES", None) is names:
            mod.DEVICES = (*names, "lazy")


def pytest_configure(config):
    config.addinivalue_line("markers", "device: runs on the test device (--device, "
                                       "GRAPHSYS_TEST_DEVICE; cpu by default)")
    config.addinivalue_line("markers", "host: a row of a device test that runs on the CPU "
                                       "whatever the test device (the numba backend)")
    config.addinivalue_line("markers", "multi_gpu: needs 2 or more CUDA devices (NCCL)")
    if chosen_device(config) == "lazy" and _device_unavailable("lazy") is None:
        _emulate_lazy_device()
    if chosen_device(config).startswith("cuda"):
        # cuBLAS's deterministic workspace: needed by the tests that compare two GPU runs
        # bit for bit (set before the first cuBLAS handle)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def pytest_report_header(config):
    name = chosen_device(config)
    why = _device_unavailable(name)
    extra = f" (not available: {why}; its tests skip)" if why else ""
    if why is None and name.startswith("cuda"):
        import torch

        extra = f" ({torch.cuda.get_device_name(torch.device(name))})"
    return f"graphsys test device: {name}{extra}"


def pytest_collection_modifyitems(config, items):
    lazy = chosen_device(config) == "lazy"
    for item in items:
        skip = _slow_skip(config, item)
        if skip is not None:
            item.add_marker(skip)
        uses = set(getattr(item, "fixturenames", ()))
        if uses & {"device", "session_device", "multi_gpu"} and \
                item.get_closest_marker("host") is None:
            item.add_marker(pytest.mark.device)
        if lazy and item.get_closest_marker("device") is not None:
            why = next((w for d, w in LAZY_SKIPS.items() if item.nodeid.startswith(d)), None)
            if why is not None:
                item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture
def device(request) -> str:
    """The device this test runs on: the test device for tests marked ``device`` (every
    test taking this fixture, except rows marked ``host``), ``cpu`` otherwise; the test
    skips where the test device is not available."""
    if request.node.get_closest_marker("host") is not None:
        return "cpu"
    name = chosen_device(request.config)
    why = _device_unavailable(name)
    if why:
        pytest.skip(f"test device {name}: {why}")
    if name == "lazy":
        _emulate_lazy_device()  # modules imported since configure bound the real resolver
    return name


@pytest.fixture(scope="session")
def session_device(request) -> str:
    """The test device, for session- and module-scoped fixtures that train a model once
    (the tests using them are marked ``device``); skips where it is not available."""
    name = chosen_device(request.config)
    why = _device_unavailable(name)
    if why:
        pytest.skip(f"test device {name}: {why}")
    if name == "lazy":
        _emulate_lazy_device()
    return name


@pytest.fixture
def deterministic(device):
    """Deterministic CUDA kernels for this test (index_add_, scatter_add_ and the sum
    scatter_reduce without float atomics; warnings, not errors, for kernels that have no
    such variant), so that two runs on the GPU agree bit for bit as on the CPU."""
    import torch

    if not device.startswith("cuda"):
        yield
        return
    before, warn = (torch.are_deterministic_algorithms_enabled(),
                    torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)


@pytest.fixture
def multi_gpu() -> int:
    """The number of CUDA devices, for a data-parallel test over NCCL (skips below 2)."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        pytest.skip(f"needs 2 or more CUDA devices for NCCL ({count} here)")
    return count
