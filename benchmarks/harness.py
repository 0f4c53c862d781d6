"""The one harness of graphsys's benchmarks: what every benchmark in ``benchmarks/<area>/``
shares.

A benchmark measures graphsys beside its peer in the same run and prints **one JSON line**
(:class:`Run`): the figures, the machine, the load average at the start and the end, the
peak RSS and peak anonymous RSS of the run (:class:`graphsys.memory.PeakMemory`), and the
inputs it could not find (``missing``: a row it cannot measure is named, on stderr and in
the line, never skipped in silence). ``--record FILE`` appends that line, with the command
and the date, to a results file from which ``tools/render_results.py`` renders the results
page (docs/benchmarks.md).

* Arguments: :func:`parser` (``--record`` included), counts and sizes as the CLI reads them
  (:func:`count`, :func:`size`: ``10M``, ``32Mi``, ``2GB``, through :mod:`graphsys.units`).
* Timing: :func:`alternate` runs the sides in turns (graphsys, peer, graphsys, ...) so a
  drift of the machine's speed falls on both; :func:`spread` and :func:`median` summarise,
  :func:`pair_ratios` compares turn by turn.
* Memory: :func:`peak_memory` for a block of this process, :func:`run_child` for a child
  process (the peak sampled from outside, so it works for a peer in another environment).
* Peers: :data:`PEERS` names the environments of the peers that cannot share graphsys's
  (DGL 2.1 needs torch 2.2; PyTorch-BigGraph 1.0.0); :func:`peer_python` makes or checks
  one, :func:`peer_environment` is the environment a peer runs in (its own OpenMP
  defaults).
* Inputs: :func:`mirror` (the dataset mirror), :func:`dataset` (a registry dataset as a
  graph), :func:`rmat_graph` and :func:`rmat_arrays` (seeded R-MAT through
  :mod:`graphsys.generators`).

This module imports only the standard library at import time: a benchmark re-runs itself
in a peer's environment (which has no graphsys) and still imports it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

#: The repository root (benchmarks/ is one level below it).
REPO = Path(__file__).resolve().parents[1]
T = TypeVar("T")

# -- arguments ----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """A benchmark's parser: ``--help`` gives every option's default (the README says so),
    added to an option's help unless the help already names it (``default`` or a value in
    parentheses at its end)."""

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        text = action.help or ""
        if (action.default not in (None, False, True, "", argparse.SUPPRESS)
                and "default" not in text and not re.search(r"\([^()]*\)\s*$", text)):
            action.help = f"{text} (default %(default)s)" if text else "default %(default)s"
        return action


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser for a benchmark whose module docstring is ``doc``: the first
    paragraph is its description, the rest its epilog; ``--record FILE`` is added, and
    ``--help`` shows every option's default."""
    head, _, rest = (doc or "").strip().partition("\n\n")
    ap = _Parser(description=head, epilog=rest or None,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_record_argument(ap)
    return ap


def add_record_argument(ap: argparse.ArgumentParser) -> None:
    """Give a parser the ``--record FILE`` option (:func:`emit` appends to FILE)."""
    ap.add_argument("--record", metavar="FILE", type=Path, default=None,
                    help="also append the printed JSON line, with the command line and "
                         "the date (measured_on), to this jsonl file")


def _argument(parse: str, text: str) -> int:
    """``graphsys.units.<parse>(text)``, its error as argparse's (one line, exit 2)."""
    import graphsys.units
    from graphsys.errors import GraphsysError

    try:
        return getattr(graphsys.units, parse)(text)
    except GraphsysError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(text: str) -> int:
    """An argparse ``type``: a count such as ``10M``, ``32Mi``, ``1e6``
    (:func:`graphsys.units.parse_count`)."""
    return _argument("parse_count", text)


def counts(text: str) -> list[int]:
    """An argparse ``type``: comma-separated counts (``1M,10M,100M``)."""
    return [count(x) for x in text.split(",") if x.strip()]


def size(text: str) -> int:
    """An argparse ``type``: a byte size such as ``2GB``, ``512MiB``
    (:func:`graphsys.units.parse_size`)."""
    return _argument("parse_size", text)


def log(message: str) -> None:
    """A progress line on stderr (stdout holds only the JSON line)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the JSON line ------------------------------------------------------------------------------


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The machine a figure was measured on: ``cpu`` (model, cores, last-level cache, as
    the results page's machine column names it), ``cpus``, ``python``, ``platform``."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cache = ""
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"))
    try:
        level = (caches[-1].parent / "level").read_text().strip()
        kib = int(caches[-1].read_text().strip().rstrip("K"))
        cache = (f", {kib // 1024} MiB L{level}" if kib % 1024 == 0 else
                 f", {kib} KiB L{level}")
    except (IndexError, OSError, ValueError):
        cache = ""
    return {"cpu": f"{model}, {os.cpu_count()} cores{cache}", "cpus": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform()}


def source() -> dict[str, Any]:
    """Which graphsys was measured: the directory it was imported from, its git commit and
    the files changed since (``git status``), where git can tell."""
    root = REPO
    try:
        import graphsys

        root = Path(graphsys.__file__).resolve().parents[1]
    except ImportError:
        pass
    info: dict[str, Any] = {"path": str(root)}
    try:
        git = ["git", "-C", str(root)]
        info["commit"] = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True,
                                        check=True).stdout.strip()
        status = subprocess.run(git + ["status", "--porcelain", "--", "graphsys"],
                                capture_output=True, text=True, check=True).stdout
        info["uncommitted"] = sorted(ln[3:] for ln in status.splitlines() if ln.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


def emit(line: Mapping[str, Any], record: Path | None = None) -> None:
    """Print one JSON line on stdout; with ``record``, also append it to that jsonl file as
    a results record: ``{"measured_on", "machine", "command", "raw": line}``. A record
    becomes a results-page row once the row fields (``workload``, ``peer``, figures,
    ``ratio``, ``unit``) are added (``tools/render_results.py``)."""
    text = json.dumps(line)
    print(text, flush=True)
    if record is None:
        return
    entry = {"measured_on": datetime.datetime.now(datetime.UTC).date().isoformat(),
             "machine": f"{platform.machine()}, {platform.python_implementation()} "
                        f"{platform.python_version()}",
             "command": shlex.join(["python", *sys.argv]),
             "raw": json.loads(text)}
    with Path(record).open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


class Run:
    """One benchmark run and its JSON line.

    Created at the start of the measurement: it records the date, the machine, the
    graphsys measured (``source``: :func:`source`) and the load average, and samples this
    process's peak RSS and peak anonymous RSS (:class:`graphsys.memory.PeakMemory`) until
    :meth:`emit`. :meth:`missing` names an input (a dataset, a peer) without which some rows
    cannot be measured; the line lists them under ``missing`` and each is said on stderr as
    it is found.

    Parameters
    ----------
    bench : str
        The benchmark's name, ``area/name`` (``"bsp/pagerank_bfs_wcc"``).
    record : Path, optional
        The ``--record`` file.
    memory : bool, default True
        Sample this process's memory (off for a parent that only starts children).
    """

    def __init__(self, bench: str, record: Path | None = None, *, memory: bool = True):
        self.record = record
        self.line: dict[str, Any] = {
            "bench": bench,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **machine(), "source": source(), "load_avg_start": load_average()}
        self._peak = None
        if memory:
            from graphsys.memory import PeakMemory

            # ten samples a second: a whole run's peak is long-lived, and a timed loop
            # should share its cores with as little sampling as possible
            self._peak = PeakMemory(interval=0.1)
            self._peak.__enter__()

    def missing(self, what: str, reason: str) -> None:
        """Name an input that is missing and what it costs: ``what`` (``"luxembourg-osm
        road-graph rows"``) is not measured because ``reason``."""
        print(f"{self.line['bench']}: not measured: {what}: {reason}", file=sys.stderr,
              flush=True)
        self.line.setdefault("missing", []).append({"rows": what, "reason": reason})

    def __setitem__(self, key: str, value: Any) -> None:
        self.line[key] = value

    def __getitem__(self, key: str) -> Any:
        return self.line[key]

    def emit(self, **fields: Any) -> dict[str, Any]:
        """Add ``fields``, the end load average and the peaks; print (and record) the line;
        return it."""
        self.line.update(fields)
        self.line["load_avg_end"] = load_average()
        if self._peak is not None:
            from graphsys.memory import lifetime_peak_rss

            self._peak.__exit__(None, None, None)
            # the kernel's exact total peak where it is higher than the samples'
            self.line["peak_rss_bytes"] = max(self._peak.peak_total, lifetime_peak_rss())
            self.line["peak_rss_anon_bytes"] = self._peak.peak_anon
            self._peak = None
        emit(self.line, self.record)
        return self.line


# -- alternation and medians --------------------------------------------------------------------


def alternate(sides: Mapping[str, Callable[[], T]], turns: int) -> dict[str, list[T]]:
    """Call every side once per turn, in the mapping's order (A, B, A, B, ... for
    ``turns`` turns): a change of the machine's speed during the run then falls on every
    side. Returns each side's results in turn order. A side mapped to ``None`` is left out
    (a peer that is missing)."""
    out: dict[str, list[T]] = {name: [] for name, fn in sides.items() if fn is not None}
    for _ in range(turns):
        for name, fn in sides.items():
            if fn is not None:
                out[name].append(fn())
    return out


def median(values: Iterable[float]) -> float:
    """The median of ``values`` as a float."""
    return float(statistics.median(list(values)))


def spread(values: Sequence[float]) -> dict[str, float]:
    """``{"median", "min", "max"}`` of ``values`` (the turns of one side)."""
    return {"median": median(values), "min": min(values), "max": max(values)}


def spread_by_key(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per numeric field of the runs (the first run's fields): its :func:`spread`."""
    keys = [k for k, v in runs[0].items() if isinstance(v, int | float)
            and not isinstance(v, bool)]
    return {k: spread([r[k] for r in runs if k in r]) for k in keys}


def pair_ratios(numerators: Sequence[float], denominators: Sequence[float],
                digits: int = 3) -> dict[str, Any]:
    """Turn-by-turn ratios ``numerators[i] / denominators[i]`` and their median: the ratio
    a row quotes (peer time over graphsys time, graphsys rate over peer rate)."""
    r = [n / d for n, d in zip(numerators, denominators, strict=True) if d]
    return {"ratios": [round(x, digits) for x in r],
            "median": round(median(r), digits) if r else None}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """The wall seconds of one call of ``fn`` and its result."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def median_seconds(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The median wall seconds of ``repeats`` calls of ``fn`` and the last call's result."""
    times, out = [], None
    for _ in range(max(1, repeats)):
        seconds, out = timed(fn)
        times.append(seconds)
    return median(times), out


# -- memory ---------------------------------------------------------------------------------------


def peak_memory(interval: float = 0.02):
    """A :class:`graphsys.memory.PeakMemory` for a block of this process: ``with
    peak_memory() as peak: ...`` then ``peak.to_json()`` (``peak_rss_bytes``,
    ``peak_rss_anon_bytes``, ``peak_rss_file_bytes``)."""
    from graphsys.memory import PeakMemory

    return PeakMemory(interval)


@dataclass
class Child:
    """A finished child process: its last JSON line (``None`` if it printed none), its
    peaks (sampled from outside, so they include its imports), its wall seconds, its
    output."""

    json: Any
    peak_rss_bytes: int
    peak_rss_anon_bytes: int
    seconds: float
    returncode: int
    timed_out: bool = False
    stdout: str = ""
    stderr: str = field(default="", repr=False)

    def peaks(self) -> dict[str, int]:
        return {"peak_rss_bytes": self.peak_rss_bytes,
                "peak_rss_anon_bytes": self.peak_rss_anon_bytes}


def run_child(cmd: Sequence[str | os.PathLike], *, env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike | None = None, timeout: float | None = None,
              stream_stderr: bool = False, check: bool = True, interval: float = 0.02,
              started: Callable[[int], None] | None = None) -> Child:
    """Run ``cmd`` to its end, sampling its resident memory (``VmRSS``, ``RssAnon``)
    every ``interval`` seconds from this process.

    Its last stdout line that parses as JSON is :attr:`Child.json`. With
    ``stream_stderr`` its stderr is copied to ours as it comes (progress of a long run).
    ``check``: a non-zero exit raises ``SystemExit`` with the command and the tail of its
    stderr. ``timeout`` stops the child's whole process group (its worker processes too)
    and returns what it printed, with ``timed_out`` set. The peaks are the child's own
    process's (not its workers'). ``started(pid)`` is called once the child runs (the child
    leads a process group of its own: a benchmark can watch its workers).
    """
    from graphsys.memory import PeakMemory

    t0 = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env=None if env is None else dict(env), start_new_session=True)
    sampler = PeakMemory(interval, pid=proc.pid)
    sampler.__enter__()
    if started is not None:
        started(proc.pid)
    err: list[str] = []

    def pump() -> None:
        for line in proc.stderr:
            err.append(line)
            if stream_stderr:
                sys.stderr.write("    " + line)
                sys.stderr.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    out_chunks: list[str] = []
    out_reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()),
                                  daemon=True)
    out_reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, 9)
        proc.wait()
    out_reader.join()
    reader.join()
    sampler.__exit__(None, None, None)
    stdout, stderr = "".join(out_chunks), "".join(err)
    if check and proc.returncode and not timed_out:
        raise SystemExit(f"{shlex.join(str(c) for c in cmd)[:300]} exited "
                         f"{proc.returncode}:\n{stderr[-3000:]}")
    parsed = None
    for line in reversed(stdout.strip().splitlines()):
        try:
            parsed = json.loads(line)
            break
        except json.JSONDecodeError:
            continue
    return Child(parsed, sampler.peak_total, sampler.peak_anon, time.perf_counter() - t0,
                 proc.returncode, timed_out, stdout, stderr)


# -- peers in their own environments ------------------------------------------------------------


@dataclass(frozen=True)
class Peer:
    """A peer library that runs in a virtual environment of its own.

    ``installs``: the ``pip install`` argument lists, run in order in a new venv (torch
    first where pip must take a particular build); ``probe``: Python code that exits 0
    when the environment works and prints its versions; ``prelude``: code a benchmark
    runs first in every child of that environment (a compatibility patch)."""

    name: str
    installs: tuple[tuple[str, ...], ...]
    probe: str
    prelude: str = ""


#: PyTorch-BigGraph 1.0.0 tests ``type_ is Optional[arg]`` in ``unpack_optional``, which is
#: false on Python >= 3.11; an equality test works. Run first in every PBG child.
_PBG_PY311_PATCH = """
import typing
import torchbiggraph.schema as pbg_schema

def unpack_optional(type_):
    args = getattr(type_, "__args__", None)
    if not args or type_ != typing.Optional[args[0]]:
        raise TypeError("Not an optional type")
    return args[0]

pbg_schema.unpack_optional = unpack_optional
"""

PEERS: dict[str, Peer] = {
    # DGL 2.1.0 ships graphbolt for torch 2.0.0-2.2.1 only and imports torchdata.datapipes
    # (gone after torchdata 0.7); pyproject.toml's `dgl` extra says the same
    "dgl": Peer("dgl", (("torch==2.2.1", "dgl==2.1.0", "numpy<2", "torchdata==0.7.1",
                         "pandas<2.3", "pydantic", "pyyaml"),),
                "import dgl, torch; print(dgl.__version__, torch.__version__)"),
    # torch first, pinned, so that pip takes the local CPU build; setuptools<81 keeps the
    # pkg_resources PBG imports
    "pbg": Peer("pbg", (("torch==2.13.0",), ("setuptools<81", "torchbiggraph==1.0.0")),
                "import torchbiggraph, torch; print('torchbiggraph 1.0.0', torch.__version__)",
                prelude=_PBG_PY311_PATCH),
}


def add_peer_argument(ap: argparse.ArgumentParser, peer: str) -> None:
    """``--PEER-python PATH`` (the python of an existing environment of ``peer``) and
    ``--skip-PEER``."""
    ap.add_argument(f"--{peer}-python", type=Path, default=None,
                    help=f"python of an environment with {peer} (checked, never installed "
                         f"into; default: a venv made in the work directory)")
    ap.add_argument(f"--skip-{peer}", action="store_true", help=f"do not run {peer}")


def peer_python(peer: str, work: Path, given: Path | None = None,
                skip: bool = False) -> tuple[Path | None, str | None]:
    """The python of ``peer``'s environment and ``None``, or ``None`` and why there is
    none (to pass to :meth:`Run.missing`).

    ``given``: an existing interpreter, only checked. Otherwise ``work/PEER-venv`` is
    reused when it works, else made with pip (from PyPI: minutes, once)."""
    spec = PEERS[peer]
    if skip:
        return None, f"--skip-{peer}"
    if given is not None:
        r = subprocess.run([str(given), "-c", spec.probe], capture_output=True, text=True,
                           check=False)
        if r.returncode:
            return None, f"{given}: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
        return Path(given), None
    py = Path(work) / f"{peer}-venv" / "bin" / "python"
    probe = [str(py), "-c", spec.probe]
    if py.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return py, None
    log(f"making {peer}'s environment in {py.parents[1]} (pip, from PyPI)")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(py.parents[1])], check=True,
                       capture_output=True)
        for packages in spec.installs:
            r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", *packages],
                               capture_output=True, text=True, timeout=3600, check=False)
            if r.returncode:
                tail = [x for x in r.stderr.splitlines() if x.strip()][-2:]
                return None, f"pip install {' '.join(packages)} failed: {' | '.join(tail)}"
        r = subprocess.run(probe, capture_output=True, text=True, check=False)
        if r.returncode:
            return None, f"{peer} does not import: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"could not make {peer}'s environment: {exc}"
    return py, None


def peer_environment(**extra: str) -> dict[str, str]:
    """The environment a peer runs in: ours without the OpenMP settings graphsys's wait
    policy exported (:func:`graphsys.openmp.peer_environment`: the peer keeps its own
    defaults), plus ``extra``."""
    try:
        from graphsys.openmp import peer_environment as graphsys_peer_environment

        env = graphsys_peer_environment()
    except ImportError:
        env = dict(os.environ)
    return {**env, **extra}


# -- inputs -------------------------------------------------------------------------------------


def mirror() -> Path | None:
    """The local dataset mirror: ``$GRAPHSYS_MIRROR``, else ``../shared/datasets`` beside
    the repository, else ``None``."""
    env = os.environ.get("GRAPHSYS_MIRROR")
    for candidate in ([Path(env)] if env else []) + [REPO.parent / "shared" / "datasets"]:
        if candidate.is_dir():
            return candidate
    return None


def add_mirror_argument(ap: argparse.ArgumentParser) -> None:
    """``--mirror DIR``: the dataset mirror for this run (:func:`use_mirror` applies it)."""
    ap.add_argument("--mirror", type=Path, default=None,
                    help="dataset mirror (default: $GRAPHSYS_MIRROR, else ../shared/datasets "
                         "beside the repository)")


def use_mirror(path: str | os.PathLike | None) -> Path | None:
    """Make ``path`` (when given) the dataset mirror of this process and its children
    (``GRAPHSYS_MIRROR``); return the mirror in use (:func:`mirror`)."""
    if path:
        os.environ["GRAPHSYS_MIRROR"] = str(Path(path).absolute())
    return mirror()


def dataset(run: Run | None, name: str, out: Path, **kwargs: Any):
    """The registry dataset ``name`` as a graph at ``out`` (opened when already there, else
    fetched from :func:`mirror` or its publisher and ingested with
    :func:`graphsys.datasets.load_dataset`'s ``kwargs``), or ``None`` after
    ``run.missing(...)`` when it cannot be had."""
    from graphsys.errors import GraphsysError

    out = Path(out)
    try:
        if (out / "manifest.json").is_file():
            from graphsys import open_graph

            return open_graph(out)
        from graphsys.datasets import load_dataset

        kwargs.setdefault("mirror", mirror())
        kwargs.setdefault("cache", out.parent / "cache")
        return load_dataset(name, out, **kwargs)
    except (GraphsysError, OSError) as exc:
        return _missing_dataset(run, name, exc)


def _missing_dataset(run: Run | None, name: str, exc: Exception) -> None:
    why = (str(exc).splitlines() or [type(exc).__name__])[0]
    if mirror() is None:
        why += " (no dataset mirror: set GRAPHSYS_MIRROR)"
    if run is None:
        raise SystemExit(f"dataset {name}: {why}") from None
    run.missing(f"{name} rows", why)


def work_dataset(run: Run | None, work: Path, name: str) -> tuple[Path, Any]:
    """The work directory (resolved, created) and the registry dataset ``name`` in it
    (:func:`dataset`: None when it cannot be had)."""
    work = Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    return work, dataset(run, name, work / name)


def dataset_files(run: Run | None, name: str, cache: Path):
    """The fetched files of registry dataset ``name`` (:func:`graphsys.datasets.fetch.fetch`,
    from :func:`mirror` or the publisher; ``.path(file)`` names each), or ``None`` after
    ``run.missing(...)``."""
    from graphsys.datasets.fetch import fetch
    from graphsys.datasets.registry import get_dataset
    from graphsys.errors import GraphsysError

    try:
        return fetch(get_dataset(name), cache=Path(cache), mirror=mirror())
    except (GraphsysError, OSError) as exc:
        return _missing_dataset(run, name, exc)


def rmat_arrays(nodes: int, edges: int, seed: int = 0):
    """``(src, dst)`` int64 arrays of ``edges`` seeded R-MAT edges over ``nodes`` ids
    (:func:`graphsys.generators.rmat_edges`: Graph500's a, b, c; self-loops and duplicates
    kept; ids permuted)."""
    import numpy as np

    from graphsys.generators import rmat_edges

    chunks = list(rmat_edges(nodes, edges, seed=seed))
    return (np.concatenate([c["src"] for c in chunks]),
            np.concatenate([c["dst"] for c in chunks]))


def rmat_graph(work: Path, edges: int, nodes: int, *, partitions: int, seed: int = 1,
               partition_seed: int | None = None,
               memory_limit: int | str = "2GB") -> tuple[Path, dict[str, Any]]:
    """A seeded R-MAT graph stored under ``work`` (``rmat-E-N-sS-pP``): generated to
    Parquet (:func:`graphsys.generators.rmat_edges`, ``seed``), ingested with
    ``partitions`` partitions (hash partitioner seeded with ``partition_seed``, default
    ``seed``) and the Parquet file removed; reused when its manifest is there. Returns the
    directory and how it was built (seconds, or ``reused``)."""
    import graphsys
    from graphsys.generators import rmat_edges, write_edges

    partition_seed = seed if partition_seed is None else partition_seed
    graph = Path(work) / (f"rmat-{edges}-{nodes}-s{seed}-p{partitions}"
                          + ("" if partition_seed == seed else f"-ps{partition_seed}"))
    if (graph / "manifest.json").is_file():
        return graph, {"reused": True}
    Path(work).mkdir(parents=True, exist_ok=True)
    edge_file = Path(work) / f"{graph.name}.parquet"
    log(f"generating R-MAT: {edges:,} edges over {nodes:,} ids, seed {seed}")
    t0 = time.perf_counter()
    write_edges(rmat_edges(nodes, edges, seed=seed), edge_file, overwrite=True)
    t1 = time.perf_counter()
    log(f"ingesting into {partitions} partitions")
    graphsys.ingest(edge_file, graph, partitions=partitions, seed=partition_seed,
                    memory_limit=memory_limit)
    edge_file.unlink()
    return graph, {"generate_seconds": round(t1 - t0, 1),
                   "ingest_seconds": round(time.perf_counter() - t1, 1), "reused": False}


def csr_keeping_duplicates(rows, cols, num_rows: int, num_cols: int):
    """A :class:`graphsys.sampling.Adjacency` of the edges ``rows -> cols`` that keeps
    parallel edges (as DGL's graphs do; :func:`graphsys.sampling.adjacency.from_coo` merges
    them)."""
    import numpy as np

    from graphsys.sampling import Adjacency

    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(num_rows + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=num_rows), out=indptr[1:])
    return Adjacency(indptr, np.ascontiguousarray(cols[order]), num_cols)
