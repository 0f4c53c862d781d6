"""Validate the SIMT model against Nsight Compute: ``graphsys profile ALGO DIR --ncu``.

**Which mapping the engine uses.** On CUDA the BSP engine's edge phase
(:mod:`graphsys.bsp.edges`, torch backend, in memory and out of core) is torch gather and
scatter operators over the edge list: ``x[src]`` and ``active[src]`` gather one element per
edge, ``scatter_reduce_`` into the accumulator and ``received[index] = True`` scatter one
element per edge. These kernels are edge-parallel: thread ``t`` of a CTA of ``nt`` threads
handles elements ``t, t + nt, ...`` of the CTA's chunk of ``nt x vt`` (for example
``index_elementwise_kernel<(int)128, (int)4, ...>`` and
``_scatter_gather_elementwise_kernel<(int)128, (int)4, ...>``), whatever the degrees, so
every lane of a warp is busy except in the last, partial warp. That is the model's
``edge-balanced`` mapping (:mod:`graphsys.analysis.simt`), not a vertex-per-thread one; its
``mean_utilization`` is the model figure compared here (:data:`ENGINE_MAPPING`).

**Measurement.** ``ncu`` (Nsight Compute's CLI) runs the BSP algorithm on CUDA through the
torch backend in a process of its own, ``python -m graphsys.analysis.ncu_target SPEC``
(:func:`graphsys.analysis.ncu_target.target_command`: library calls, not the command
line; :func:`ncu_command`) and records, per kernel launch, :data:`METRICS`:

* ``smsp__thread_inst_executed_per_inst_executed.ratio``: threads per executed warp
  instruction, 0..32 (Nsight Compute's "Avg. Active Threads Per Warp"; the ``_pred_on``
  variant would leave out predicated-off threads);
* ``smsp__inst_executed.sum``: executed warp instructions (the weight);
* ``launch__grid_size`` / ``launch__block_size``: CTAs and threads per CTA.

**The real tool's output** (sources in ``tests/analysis/test_ncu.py``, whose fake ``ncu``
writes this format). ``--log-file`` receives all tool output: ``==PROF==`` progress lines,
``==WARNING==`` / ``==ERROR==`` lines, then the report (the application's own output stays
on the console). With ``--csv --page details`` the report is one header line (``"ID"``,
``"Kernel Name"``, ..., ``"Metric Name"``, ``"Metric Unit"``, ``"Metric Value"``; columns
before and after vary by release), then one quoted row per launch and metric. ``--csv``
implies ``--print-units base``, but counts are grouped as the host locale groups them -
hence :data:`NCU_ENV` and a strict :func:`_number`; a metric not collected reads ``n/a``.
``Kernel Name`` is demangled by NVIDIA's demangler (``<unnamed>`` namespaces, template
arguments as ``(int)2``); releases that simplify names by default get
``--rename-kernels off`` (:func:`probe`). :func:`parse_csv` turns the report into
:class:`KernelLaunch` records.

**Aggregation** (:func:`summarize`). Kernels are grouped by function name
(:func:`short_name`: the demangled name without return type, template arguments and
parameters). *Edge kernels* are those whose function name contains one of
:data:`EDGE_KERNELS` (torch's index/gather/scatter/index_select/index_add/segment-reduce
kernels). The measured utilization is the instruction-weighted mean over edge-kernel
launches, ``sum(ratio x instructions) / (32 x sum(instructions))``, the same weighting as the
model's active lane-iterations / (32 x warp-iterations). Other kernels that touch every edge
(the elementwise message arithmetic, ``nonzero``'s select, ``repeat_interleave``) and the
per-vertex kernels are listed, with their own figures, but not counted.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphsys.analysis.simt import WARP
from graphsys.errors import GraphsysError, ParameterError

RATIO = "smsp__thread_inst_executed_per_inst_executed.ratio"
INSTRUCTIONS = "smsp__inst_executed.sum"
GRID = "launch__grid_size"
BLOCK = "launch__block_size"
#: Metrics collected per kernel launch.
METRICS = (RATIO, INSTRUCTIONS, GRID, BLOCK)
#: The model mapping of the engine's CUDA path (see the module docstring).
ENGINE_MAPPING = "edge-balanced"
#: Substrings of the function names of torch's edge kernels (gather / scatter over the edge
#: list): index and index_put (``x[src]``, ``received[index] = True``), the dim-0 gather of
#: newer releases, scatter/gather (``scatter_reduce_``), index_select, index_add /
#: index_reduce, sort-based index_put (deterministic mode), segment_reduce.
EDGE_KERNELS = ("index_elementwise_kernel", "vectorized_gather_kernel",
                "_scatter_gather_elementwise_kernel", "indexSelectSmallIndex",
                "indexSelectLargeIndex", "indexFuncSmallIndex", "indexFuncLargeIndex",
                "indexing_backward_kernel", "segment_reduce")
#: Columns of the details-page CSV this module reads.
COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Value")
#: Environment overrides of the ncu run: ncu formats numbers through the host locale, and in
#: the C locale the decimal mark is ``.`` (a thousands separator, if any, ``,``).
NCU_ENV = {"LC_ALL": "C"}
#: Anonymous-namespace spellings: NVIDIA's demangler (ncu, nsys) and GNU c++filt.
_ANONYMOUS = ("<unnamed>::", "(anonymous namespace)::")
#: A metric value in the C locale: digits, optionally grouped by thousands with ``,``, an
#: optional fraction and exponent.
_NUMBER = re.compile(r"[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d*)?([eE][-+]?\d+)?")


@dataclass
class KernelLaunch:
    """One profiled kernel launch. ``name``: as ncu printed it (demangled);
    ``threads_per_instruction``: threads per executed warp instruction (0..32) and
    ``instructions``: executed warp instructions, None where ncu gave no value; ``ctas``:
    grid size (CTAs) and ``block``: threads per CTA, None when absent."""

    id: int
    name: str
    threads_per_instruction: float | None
    instructions: int | None
    ctas: int | None
    block: int | None


def short_name(name: str) -> str:
    """The function of a demangled kernel name: ``void at::native::<unnamed>::foo<(int)128,
    ...>(int, T2)`` -> ``at::native::foo`` (return type, anonymous namespaces - NVIDIA's
    ``<unnamed>::`` or c++filt's ``(anonymous namespace)::`` - template arguments and
    parameters dropped)."""
    s = name.strip()
    for anon in _ANONYMOUS:
        s = s.replace(anon, "")
    s = s.removeprefix("void ").strip()
    cut = re.search(r"[<(]", s)
    return (s[:cut.start()].strip() or name) if cut else s


def is_edge_kernel(name: str) -> bool:
    """Whether the kernel ``name`` (demangled or :func:`short_name`) is an edge kernel: its
    function's last component contains one of :data:`EDGE_KERNELS`."""
    base = short_name(name).rsplit("::", 1)[-1]
    return any(p in base for p in EDGE_KERNELS)


# ---------------------------------------------------------------------------------------------
# running ncu


def find_ncu(path: str | Path | None = None) -> str:
    """The ncu executable: ``path`` or ``ncu`` on PATH; a one-line :class:`ParameterError`
    naming ``ncu_path`` (a bad path) or ``ncu`` (none on PATH) when there is none."""
    if path is not None:
        p = Path(path)
        if not p.is_file() or not os.access(p, os.X_OK):
            raise ParameterError("ncu_path", f"{path}: not an executable file")
        return str(p)
    found = shutil.which("ncu")
    if found is None:
        raise ParameterError("ncu", "needs Nsight Compute, and ncu is not on PATH (install "
                                    "it, e.g. /usr/local/cuda/bin/ncu, or name the "
                                    "executable)")
    return found


@dataclass
class NcuSetup:
    """How ``ncu`` is run: ``exe`` the executable, ``device`` the CUDA device of the
    measured run, ``version`` the ``Version ...`` line of ``ncu --version`` (None when it
    printed none), ``rename_off``: whether to pass ``--rename-kernels off`` (the release
    lists the option in ``ncu --help``; it simplifies demangled names by default)."""

    exe: str
    device: str
    version: str | None = None
    rename_off: bool = False


def _run_ncu(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    """Run a short ncu query (``--version``, ``--help``) in :data:`NCU_ENV`; a one-line
    :class:`GraphsysError` when it cannot run or fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60,
                              env={**os.environ, **NCU_ENV})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GraphsysError(f"ncu: cannot run {cmd[0]} {what}: "
                            f"{getattr(exc, 'strerror', None) or exc}") from None
    if proc.returncode != 0:
        why = _last_line(proc.stderr) or _last_line(proc.stdout) or "no output"
        raise GraphsysError(f"ncu: {cmd[0]} {what} exited with status {proc.returncode}: "
                            f"{why}")
    return proc


def probe(exe: str) -> tuple[str | None, bool]:
    """``(version line, supports --rename-kernels)`` of the ncu at ``exe``, from ``ncu
    --version`` and ``ncu --help``."""
    out = _run_ncu([exe, "--version"], "--version").stdout
    version = next((x.strip() for x in out.splitlines() if x.strip().startswith("Version")),
                   None)
    return version, "--rename-kernels" in _run_ncu([exe, "--help"], "--help").stdout


def preflight(device: str, ncu_path: str | Path | None = None) -> NcuSetup:
    """How a measured run will go, checked before anything runs: the ncu executable
    (:func:`find_ncu`, then :func:`probe`) and the CUDA device - ``device`` when it names
    one (``cuda[:k]``), else ``cuda`` - resolved by :func:`graphsys.device.resolve_device`
    (no usable GPU: a one-line error)."""
    from graphsys.device import resolve_device

    name = str(device)
    try:
        dev = resolve_device(name if name.startswith("cuda") else "cuda")
    except GraphsysError as exc:
        why = str(exc).split("; use cpu")[0]
        raise ParameterError("ncu", f"needs a CUDA GPU: {why}; run it on a GPU machine or "
                                    f"profile without ncu") from None
    exe = find_ncu(ncu_path)
    version, rename = probe(exe)
    return NcuSetup(exe, str(dev), version, rename)


def ncu_command(ncu: str, app: list[str], *, log_file: str | Path,
                launch_count: int | None = None, rename_off: bool = False) -> list[str]:
    """The ncu command line profiling ``app`` (every kernel launch of every process, or the
    first ``launch_count``): :data:`METRICS` as details-page CSV in base units, demangled
    kernel names (``rename_off``: not simplified, ``--rename-kernels off``), all tool output
    to ``log_file`` (the application's own output stays apart)."""
    cmd = [ncu, "--csv", "--page", "details", "--print-units", "base",
           "--metrics", ",".join(METRICS), "--print-kernel-base", "demangled",
           "--target-processes", "all"]
    if rename_off:
        cmd += ["--rename-kernels", "off"]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    return [*cmd, "--log-file", str(log_file), *app]


def _last_line(text: str | None) -> str:
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[-1] if lines else ""


def measure(setup: NcuSetup, app: list[str], *, launch_count: int | None = None
            ) -> tuple[list[str], list[KernelLaunch], float]:
    """Run ``app`` under ncu as ``setup`` says (:func:`ncu_command`, log in a temporary
    directory, environment :data:`NCU_ENV`). Returns ``(command, launches, seconds)``; a
    failed run or a report without kernel metrics is a one-line :class:`GraphsysError`
    quoting ncu's last ``==ERROR==`` (or ``==WARNING==``) line, else the last line the run
    printed."""
    with tempfile.TemporaryDirectory(prefix="graphsys-ncu-") as tmp:
        log = Path(tmp) / "ncu.csv"
        cmd = ncu_command(setup.exe, app, log_file=log, launch_count=launch_count,
                          rename_off=setup.rename_off)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                  env={**os.environ, **NCU_ENV})
        except OSError as exc:
            raise GraphsysError(f"ncu: cannot run {setup.exe}: {exc.strerror or exc}"
                                ) from None
        seconds = time.perf_counter() - t0
        text = log.read_text(errors="replace") if log.is_file() else ""
    errors = [x.strip() for x in text.splitlines() if x.startswith("==ERROR==")]
    warnings = [x.strip() for x in text.splitlines() if x.startswith("==WARNING==")]
    if proc.returncode != 0:
        why = (errors[-1] if errors else _last_line(proc.stderr) or _last_line(proc.stdout)
               or "no output")
        raise GraphsysError(f"ncu exited with status {proc.returncode}: {why}")
    launches = parse_csv(text)
    if not launches:
        why = (errors or warnings or ["no kernel launch was profiled"])[-1]
        raise GraphsysError(f"ncu reported no kernel metrics: {why}")
    return cmd, launches, seconds


# ---------------------------------------------------------------------------------------------
# parsing and aggregation


def _number(text: str | None) -> float | None:
    """A metric value as ncu prints it in the C locale (:data:`NCU_ENV`): ``1234567``,
    ``1,234,567`` or ``31.50``; None for ``n/a`` or an empty cell. Anything else - a
    decimal comma (``65,77``), dot grouping (``2.508.800``) - is a one-line error rather
    than a misread number."""
    t = (text or "").strip()
    if not t or t.lower() == "n/a":
        return None
    if _NUMBER.fullmatch(t) is None:
        raise GraphsysError(f"ncu CSV: metric value {text!r} is not a number in the C locale "
                            f"(digits, ',' thousands groups, '.' decimal mark)")
    return float(t.replace(",", ""))


def _dims(text: str | None) -> int | None:
    """Threads or CTAs of a ``"(x, y, z)"`` cell (their product); None when empty."""
    parts = [p for p in (text or "").strip("() ").split(",") if p.strip()]
    return math.prod(int(p) for p in parts) if parts else None


def parse_csv(text: str) -> list[KernelLaunch]:
    """Kernel launches of ncu's details-page CSV ``text`` (see the module docstring), in
    report order; lines before the header and ``==`` tool lines are skipped, columns are
    found by name (their order and any others do not matter), and only rows of
    :data:`METRICS` are read (rule rows and other metrics are ignored). Launches are keyed
    by (process ID, ID); ``launch__grid_size`` / ``launch__block_size`` fall back on the
    Grid Size / Block Size columns."""
    lines = text.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith('"ID"')), None)
    if start is None:
        return []
    rows = csv.DictReader(x for x in lines[start:] if x.strip() and not x.startswith("=="))
    missing = [c for c in COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise GraphsysError(f"ncu CSV: no {missing[0]!r} column (expected the details page, "
                            f"one row per launch and metric)")
    launches: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row.get("Process ID") or "", row["ID"] or "")
        rec = launches.setdefault(key, {"name": row["Kernel Name"] or "", "metrics": {},
                                        "grid": row.get("Grid Size"),
                                        "block": row.get("Block Size")})
        metric = (row["Metric Name"] or "").strip()
        if metric in METRICS:
            rec["metrics"][metric] = _number(row["Metric Value"])
    out = []
    for (_, lid), rec in launches.items():
        m = rec["metrics"]
        ratio, inst = m.get(RATIO), m.get(INSTRUCTIONS)
        if ratio is not None and not 0.0 <= ratio <= WARP + 1e-6:
            raise GraphsysError(f"ncu CSV: launch {lid}: {RATIO} = {ratio} is outside "
                                f"0..{WARP}")
        grid, block = m.get(GRID), m.get(BLOCK)
        try:
            out.append(KernelLaunch(
                id=int(lid), name=rec["name"], threads_per_instruction=ratio,
                instructions=None if inst is None else round(inst),
                ctas=round(grid) if grid is not None else _dims(rec["grid"]),
                block=round(block) if block is not None else _dims(rec["block"])))
        except ValueError:
            raise GraphsysError(f"ncu CSV: launch {lid!r}: malformed ID, Grid Size or Block "
                                f"Size") from None
    return out


def summarize(launches: list[KernelLaunch]) -> dict[str, Any]:
    """Measured figures of ``launches``: ``measured_utilization`` (0..1, None without an
    edge-kernel launch with both metrics), ``measured_threads_per_warp_instruction``,
    launch counts, and ``kernels``: one entry per function name (:func:`short_name`), most
    warp instructions first, each with ``edge``, ``launches``, ``warp_instructions``,
    ``threads_per_warp_instruction``, ``utilization``, ``ctas`` (summed) and
    ``block_sizes``. Launches without both metrics count in ``launches`` only."""
    groups: dict[str, dict[str, Any]] = {}
    for k in launches:
        name = short_name(k.name)
        g = groups.setdefault(name, {"name": name, "edge": is_edge_kernel(name),
                                     "launches": 0, "measured_launches": 0,
                                     "warp_instructions": 0, "thread_instructions": 0.0,
                                     "ctas": 0, "block_sizes": set()})
        g["launches"] += 1
        g["ctas"] += k.ctas or 0
        if k.block is not None:
            g["block_sizes"].add(k.block)
        if k.threads_per_instruction is not None and k.instructions is not None:
            g["measured_launches"] += 1
            g["warp_instructions"] += k.instructions
            g["thread_instructions"] += k.threads_per_instruction * k.instructions
    kernels = []
    for g in sorted(groups.values(), key=lambda g: (-g["warp_instructions"], g["name"])):
        wi = g["warp_instructions"]
        tpi = g["thread_instructions"] / wi if wi else None
        kernels.append({"name": g["name"], "edge": g["edge"], "launches": g["launches"],
                        "measured_launches": g["measured_launches"],
                        "warp_instructions": wi, "threads_per_warp_instruction": tpi,
                        "utilization": tpi / WARP if tpi is not None else None,
                        "ctas": g["ctas"], "block_sizes": sorted(g["block_sizes"])})
    edge = [g for g in groups.values() if g["edge"]]
    wi = sum(g["warp_instructions"] for g in edge)
    ti = sum(g["thread_instructions"] for g in edge)
    return {"measured_utilization": ti / (WARP * wi) if wi else None,
            "measured_threads_per_warp_instruction": ti / wi if wi else None,
            "launches": len(launches),
            "edge_launches": sum(g["launches"] for g in edge),
            "unmeasured_launches": sum(g["launches"] - g["measured_launches"]
                                       for g in groups.values()),
            "edge_warp_instructions": wi, "kernels": kernels}


def validation(command: list[str], launches: list[KernelLaunch], seconds: float,
               model_utilization: float | None, setup: NcuSetup) -> dict[str, Any]:
    """The report's ``ncu`` section: :func:`summarize` of ``launches`` beside the model's
    :data:`ENGINE_MAPPING` utilization, their absolute difference, and how they were
    obtained (``command``, the ncu ``version``, ``device``, ``seconds`` the run took)."""
    s = summarize(launches)
    measured = s["measured_utilization"]
    diff = (abs(measured - model_utilization)
            if measured is not None and model_utilization is not None else None)
    return {"mapping": ENGINE_MAPPING, "metric": RATIO, "weight": INSTRUCTIONS,
            "model_utilization": model_utilization, **s, "abs_difference": diff,
            "edge_kernel_rule": "function name contains one of: " + ", ".join(EDGE_KERNELS),
            "device": setup.device, "version": setup.version, "command": command,
            "seconds": seconds}
