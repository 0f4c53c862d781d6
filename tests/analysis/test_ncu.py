"""``graphsys profile --ncu``: the SIMT model against Nsight Compute's measured threads per
warp instruction. A fake ``ncu`` stands in for Nsight Compute; the last test runs the real
one where a GPU and ncu are present.

Where the fake's output format comes from (the real tool could not be run here: no GPU):

* Options and channels - Nsight Compute CLI documentation, v2026.1.0
  (https://docs.nvidia.com/nsight-compute/NsightComputeCli/index.html): ``--log-file``
  "Send all tool output to the specified file"; ``--csv`` "Implies --print-units base by
  default"; ``--print-kernel-base`` default ``demangled``; ``--kernel-name-base`` sets the
  basis of the ``--kernel-name`` / ``--kernel-id`` filters only; ``--rename-kernels``
  (default on) simplifies demangled names; "Each output from the compute profiler starts
  with ==PROF=="; the quickstart's ``==PROF== Connected to process 5268``, ``==PROF==
  Profiling "vectorAdd_A" - 0: 0%....50%....100% - 46 passes``, ``==PROF== Disconnected
  from process 5268``.
* ``==PROF== Connected to process 3300 (/usr/bin/python3.10)``, ``==PROF== Target process
  3323 terminated before first instrumented API call.`` and the process name
  ``python3.10@127.0.0.1`` - a real ncu run of a PyTorch script with ``--target-processes
  all`` (pasted in a public README; found with the code search).
* Details-page CSV header ``"ID","Process ID","Process Name","Host Name","Kernel Name",
  "Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name",
  "Metric Unit","Metric Value"`` (+ ``"Rule Name","Rule Type","Rule Description",
  "Estimated Speedup Type","Estimated Speedup"`` in releases with rule columns), every cell
  quoted, section ``"Command line profiler metrics"`` for ``--metrics``: as the public
  parsers of ``ncu --csv`` output expect it; the 2020 form ``"ID","Process ID","Process
  Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric
  Name","Metric Unit","Metric Value"`` with ungrouped values (``"772656250"``) - a logged
  2020 run quoted in a public README (:data:`HEADER_2020`).
* Values grouped by thousands with ``,`` (``"1,234,567"``): public parsers of real ncu CSV
  strip them (NERSC's roofline postprocessing: ``str.replace(',', '')``; CASIO's
  ``ncu_raw.py``: ``pd.read_csv(..., thousands=',')`` on ncu 2022.2.1 output) and ncu's
  console tables print ``524,288``; under a German locale ncu printed ``2.508.800`` and
  ``65,77`` (two independent public reports) - why ncu runs with ``LC_ALL=C``.
* Kernel names as NVIDIA's demangler prints them (``Kernel Name`` of ncu CSV, same as
  Nsight Systems): the constants below are copied from public ncu/nsys outputs of PyTorch
  kernels, except where a comment says "composed" (a copy was truncated).
* ``==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU
  Performance Counters on the target device 0.``: a real run's message.
* The ratio metric is Nsight Compute's "Avg. Active Threads Per Warp": printed with two
  decimals, or as an integer (``32``) when whole; the unit column is empty.
* ``ncu --version``: ``NVIDIA (R) Nsight Compute Command Line Profiler`` / ``Copyright (c)
  2018-2025 NVIDIA Corporation`` / ``Version 2025.1.1.0 (build 35528883)
  (public-release)``, and that release's ``--help`` lists ``--rename-kernels`` (a real
  session pasted in public notes); scripts for several releases pass ``--rename-kernels
  off`` / ``0``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys

import pytest
import torch

from graphsys import cli, device
from graphsys.analysis import ncu as N
from graphsys.analysis.ncu_target import run_target, target_command
from graphsys.errors import GraphsysError

# x[src]: gather through index (composed from the captured prefix "void
# at::native::index_elementwise_kernel<(int)128, (int)4, void at::native::gpu_index_kernel<void
# at::native::index_kernel_impl<at::native::OpaqueType<(int)2>>" and IDX_PUT's tail)
IDX = ("void at::native::index_elementwise_kernel<(int)128, (int)4, void "
       "at::native::gpu_index_kernel<void at::native::index_kernel_impl<at::native::OpaqueType"
       "<(int)8>>(at::TensorIteratorBase &, c10::ArrayRef<long>, c10::ArrayRef<long>)::"
       "[lambda(char *, const char *, long) (instance 1)]>(at::TensorIteratorBase &, "
       "c10::ArrayRef<long>, c10::ArrayRef<long>, const T1 &, bool)::[lambda(int) (instance 1)]"
       ">(long, T3)")
# received[index] = True: index_put (copied)
IDX_PUT = ("void at::native::index_elementwise_kernel<(int)128, (int)4, void "
           "at::native::gpu_index_kernel<void at::native::index_put_kernel_impl<"
           "at::native::OpaqueType<(int)4>>(at::TensorIterator &, c10::ArrayRef<long>, "
           "c10::ArrayRef<long>)::[lambda(char *, const char *, long) (instance 1)]>("
           "at::TensorIteratorBase &, c10::ArrayRef<long>, c10::ArrayRef<long>, const T1 &, "
           "bool)::[lambda(int) (instance 1)]>(long, T3)")
# scatter_add / scatter_reduce (copied)
SCATTER = ("void at::native::_scatter_gather_elementwise_kernel<(int)128, (int)4, void "
           "at::native::_cuda_scatter_gather_internal_kernel<(bool)1, float>::operator ()<"
           "at::native::ReduceAdd>(at::TensorIterator &, long, long, long, const T1 &)::"
           "[lambda(int) (instance 1)]>(int, T3)")
FILL = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<int>, "
        "std::array<char *, (unsigned long)1>>(int, T2, T3)")  # copied
SELECT = ("void at::native::<unnamed>::indexSelectLargeIndex<float, long, unsigned int, (int)2, "
          "(int)2, (int)-2, (bool)1>(at::cuda::detail::TensorInfo<T1, T3>, "
          "at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<T2, T3>, int, "
          "int, T3, T3, long)")  # copied
REDUCE = ("void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, "
          "at::native::ArgMaxOps<float>, unsigned int, long, (int)4, (int)4>>(T3)")  # copied
GATHER = ("void at::native::vectorized_gather_kernel<(int)16, long>(char *, char *, T2 *, int, "
          "long, long, long, long, bool)")  # copied
# index_add_ (composed: the copy ends after "(at::cuda::detail::TensorInfo<T1, T3>, a")
INDEX_ADD = ("void at::native::indexFuncLargeIndex<c10::BFloat16, long, unsigned int, (int)2, "
             "(int)2, (int)-2, (bool)1, at::native::<unnamed>::ReduceAdd>("
             "at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<T1, T3>, "
             "at::cuda::detail::TensorInfo<T2, T3>, int, int, T3, T3, long, T1)")
# a CUB kernel (composed: the copy ends inside the template arguments)
CUB = ("void at_cuda_detail::cub::DeviceSelectSweepKernel<at_cuda_detail::cub::detail::"
       "device_select_policy_hub<long, bool, int, (bool)0, (bool)0>::Policy900, long *>(T2)")
# an anonymous-namespace kernel at the top level (copied)
SOFTMAX = ("void <unnamed>::softmax_warp_forward<float, float, float, (int)7, (bool)0>(T2 *, "
           "const T1 *, int, int, int)")

#: (ID, kernel, threads per warp instruction or None (n/a), warp instructions, CTAs, block)
LAUNCHES = [
    (0, IDX, 31.5, 1_200_000, 2_344, 128),
    (1, FILL, 32.0, 50_000, 1_563, 128),
    (2, SCATTER, 28.0, 400_000, 2_344, 128),
    (3, SELECT, 16.0, 1_000, 40, 128),
    (4, IDX_PUT, 30.0, 800_000, 1_563, 128),
    (5, REDUCE, None, 9_000, 1, 512),
]
# by hand: edge kernels are launches 0, 2, 3, 4
EDGE_THREAD_INST = 31.5 * 1_200_000 + 28.0 * 400_000 + 16.0 * 1_000 + 30.0 * 800_000
EDGE_WARP_INST = 1_200_000 + 400_000 + 1_000 + 800_000
MEASURED = EDGE_THREAD_INST / (32 * EDGE_WARP_INST)  # 73,016,000 / 76,832,000

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
          "Metric Unit", "Metric Value"]
RULES = ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
         "Estimated Speedup"]
HEADER_2020 = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
               "Context", "Stream", "Section Name", "Metric Name", "Metric Unit",
               "Metric Value"]


def _ratio(v: float | None) -> str:
    """The ratio as ncu prints it: ``n/a``, ``32`` when whole, else two decimals."""
    if v is None:
        return "n/a"
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.2f}"


def report(launches=LAUNCHES, *, rules: bool = False, metrics: bool = True,
           header: list[str] = HEADER, group: bool = True) -> str:
    """ncu's log file: ``==PROF==`` lines, then the details page as CSV (every cell quoted),
    one row per launch and metric; ``group``: values with ``,`` thousands groups."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    cols = header + (RULES if rules else [])
    w.writerow(cols)
    num = "{:,}".format if group else str
    for lid, name, ratio, inst, grid, block in launches:
        values = [(N.RATIO, "", _ratio(ratio)), (N.INSTRUCTIONS, "inst", num(inst))]
        if metrics:
            values += [(N.GRID, "", num(grid)), (N.BLOCK, "", num(block))]
        for metric, unit, value in values:
            cell = {"ID": str(lid), "Process ID": "4242", "Process Name": "python3.11",
                    "Host Name": "127.0.0.1", "Kernel Name": name, "Context": "1",
                    "Stream": "7", "Block Size": f"({block}, 1, 1)",
                    "Grid Size": f"({grid}, 1, 1)", "Device": "0", "CC": "9.0",
                    "Kernel Time": "2026-Nov-23 04:00:05",
                    "Section Name": "Command line profiler metrics", "Metric Name": metric,
                    "Metric Unit": unit, "Metric Value": value}
            w.writerow([cell.get(c, "") for c in cols])
    prof = "".join(f'==PROF== Profiling "{N.short_name(name).rsplit("::", 1)[-1]}" - {lid}: '
                   f"0%....50%....100% - 1 pass\n" for lid, name, *_ in launches)
    return ("==PROF== Connected to process 4242 (/usr/bin/python3.11)\n"
            "==PROF== Target process 4250 terminated before first instrumented API call.\n"
            + prof + "==PROF== Disconnected from process 4242\n" + buf.getvalue())


VERSION = ("NVIDIA (R) Nsight Compute Command Line Profiler\n"
           "Copyright (c) 2018-2026 NVIDIA Corporation\n"
           "Version 2026.1.0.0 (build 36700000) (public-release)\n")


def fake_ncu(directory, *, log: str, rc: int = 0, stderr: str = "", rename: bool = True,
             version_rc: int = 0):
    """An executable ``directory/ncu``. ``--version`` prints :data:`VERSION` (exit
    ``version_rc``); ``--help`` lists ``--rename-kernels`` when ``rename``; a profiling call
    records its arguments and ``LC_ALL`` in ``directory/argv.json`` / ``env.json``, writes
    ``log`` to its ``--log-file``, prints the application's JSON line on stdout (the
    application's output is not in the log) and ``stderr``, and exits with ``rc``."""
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "ncu"
    helptext = ("usage: ncu [options] [program] [program-arguments]\n"
                "  --print-kernel-base arg (=demangled)  Set the basis for kernel name "
                "output.\n" + ("  --rename-kernels arg (=on)  Perform simplification on "
                               "the kernel demangled names.\n" if rename else ""))
    exe.write_text("\n".join([
        f"#!{sys.executable}",
        "import json, os, sys",
        "args = sys.argv[1:]",
        "if args == ['--version']:",
        f"    sys.stdout.write({VERSION!r}); sys.exit({version_rc})",
        "if args == ['--help']:",
        f"    sys.stdout.write({helptext!r}); sys.exit(0)",
        f"json.dump(args, open({str(directory / 'argv.json')!r}, 'w'))",
        f"json.dump({{'LC_ALL': os.environ.get('LC_ALL')}}, "
        f"open({str(directory / 'env.json')!r}, 'w'))",
        "open(args[args.index('--log-file') + 1], 'w').write(" + repr(log) + ")",
        "print('{\"ok\": true}')",
        f"sys.stderr.write({stderr!r})",
        f"sys.exit({rc})", ""]))
    exe.chmod(0o755)
    return exe


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory):
    from tests.conftest import hub_graph_dir

    return hub_graph_dir(tmp_path_factory.mktemp("ncu"), hubs=5, hub_edges=600,
                         nodes=400, edges=1500, partitions=4, seed=0)


@pytest.fixture
def gpu(monkeypatch):
    """graphsys.device's resolver reports a CUDA device for ``cuda`` (the profile itself
    still runs on the CPU)."""
    real = device.resolve_device

    def resolve(name):
        return torch.device("cuda") if str(name).startswith("cuda") else real(name)

    monkeypatch.setattr(device, "resolve_device", resolve)


# ---------------------------------------------------------------------------------------------
# names, parsing, aggregation


def test_short_names_and_edge_rule():
    assert N.short_name(IDX) == "at::native::index_elementwise_kernel"
    assert N.short_name(IDX_PUT) == "at::native::index_elementwise_kernel"
    assert N.short_name(SELECT) == "at::native::indexSelectLargeIndex"
    assert N.short_name(FILL) == "at::native::vectorized_elementwise_kernel"
    assert N.short_name(SOFTMAX) == "softmax_warp_forward"
    assert N.short_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    # c++filt spells the anonymous namespace differently (torch.profiler's names)
    assert N.short_name("void at::native::(anonymous namespace)::indexSelectLargeIndex<double"
                        ", long>(int)") == "at::native::indexSelectLargeIndex"
    edge = [IDX, IDX_PUT, SCATTER, SELECT, GATHER, INDEX_ADD,
            "void at::native::segment_reduce_forward_kernel<double, long>(long, double*)"]
    assert all(N.is_edge_kernel(k) for k in edge)
    assert not any(N.is_edge_kernel(k) for k in (FILL, REDUCE, CUB, SOFTMAX))


@pytest.mark.parametrize("rules", [False, True])
def test_parse_details_csv(rules):
    launches = N.parse_csv(report(rules=rules))
    assert [k.id for k in launches] == [0, 1, 2, 3, 4, 5]
    first = launches[0]
    assert (first.name, first.threads_per_instruction, first.instructions, first.ctas,
            first.block) == (IDX, 31.5, 1_200_000, 2_344, 128)
    assert launches[1].threads_per_instruction == 32.0  # printed "32"
    assert launches[5].threads_per_instruction is None and launches[5].instructions == 9_000
    assert launches[5].block == 512


def test_parse_2020_layout_ungrouped():
    """The 2020 column set (Kernel Time, no Block/Grid Size columns), values ungrouped."""
    text = report(header=HEADER_2020, group=False)
    assert '"1200000"' in text and "Grid Size" not in text
    assert N.parse_csv(text) == N.parse_csv(report())


def test_grid_and_block_fall_back_on_columns():
    launches = N.parse_csv(report(metrics=False))
    assert (launches[0].ctas, launches[0].block) == (2_344, 128)


def test_other_rows_are_ignored():
    """Rule rows (no metric name) and metrics not asked for may carry any text."""
    extra = ('"0","4242","python3.11","127.0.0.1","k","1","7","(128, 1, 1)","(1, 1, 1)","0",'
             '"9.0","Command line profiler metrics","device__attribute_display_name","",'
             '"NVIDIA H100 80GB HBM3"\n'
             '"0","4242","python3.11","127.0.0.1","k","1","7","(128, 1, 1)","(1, 1, 1)","0",'
             '"9.0","Command line profiler metrics","","","see the Warp State section"\n')
    assert N.parse_csv(report() + extra) == N.parse_csv(report())


def test_parse_errors_are_one_line():
    assert N.parse_csv("==PROF== Connected to process 1\n==WARNING== No kernels were "
                       "profiled.\n") == []
    with pytest.raises(GraphsysError, match="'Metric Name'"):
        N.parse_csv('"ID","Kernel Name","Metric Value"\n"0","k","1"\n')
    one = report([(0, IDX, 31.5, 1_000, 1, 128)])
    with pytest.raises(GraphsysError, match="not a number"):
        N.parse_csv(one.replace('"31.50"', '"lots"'))
    # another locale's formatting is refused, not misread (65,77 is not 6577)
    for other in ('"31,50"', '"3.150.000"'):
        with pytest.raises(GraphsysError, match="not a number in the C locale"):
            N.parse_csv(one.replace('"31.50"', other))
    with pytest.raises(GraphsysError, match="not a number in the C locale"):
        N.parse_csv(one.replace('"1,000"', '"1.000.000"'))
    with pytest.raises(GraphsysError, match="outside 0..32"):
        N.parse_csv(report([(0, IDX, 40.0, 1_000, 1, 128)]))


def test_aggregation_by_hand():
    s = N.summarize(N.parse_csv(report()))
    assert s["measured_utilization"] == pytest.approx(MEASURED, rel=1e-12)
    assert s["measured_utilization"] == pytest.approx(73_016_000 / 76_832_000)
    assert s["measured_threads_per_warp_instruction"] == pytest.approx(
        EDGE_THREAD_INST / EDGE_WARP_INST)
    assert (s["launches"], s["edge_launches"], s["unmeasured_launches"]) == (6, 4, 1)
    assert s["edge_warp_instructions"] == EDGE_WARP_INST
    names = [k["name"] for k in s["kernels"]]
    assert names == ["at::native::index_elementwise_kernel",
                     "at::native::_scatter_gather_elementwise_kernel",
                     "at::native::vectorized_elementwise_kernel",
                     "at::native::indexSelectLargeIndex", "at::native::reduce_kernel"]
    idx, fill, red = s["kernels"][0], s["kernels"][2], s["kernels"][4]
    assert (idx["launches"], idx["warp_instructions"], idx["ctas"]) == (2, 2_000_000, 3_907)
    assert idx["threads_per_warp_instruction"] == pytest.approx(30.9)
    assert idx["utilization"] == pytest.approx(30.9 / 32) and idx["edge"]
    assert not fill["edge"] and fill["utilization"] == 1.0
    assert red["measured_launches"] == 0 and red["utilization"] is None
    assert red["block_sizes"] == [512]
    none = N.summarize(N.parse_csv(report([(0, FILL, 32.0, 10, 1, 128)])))
    assert none["measured_utilization"] is None and none["edge_launches"] == 0


def test_command_line(graph_dir, tmp_path):
    app = target_command(graph_dir, "bfs", device="cuda:0", mode="out-of-core", max_iters=3,
                         source=7, edge_set="train")
    cmd = N.ncu_command("/opt/ncu", app, log_file=tmp_path / "log.csv", launch_count=50,
                        rename_off=True)
    assert cmd[0] == "/opt/ncu"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics == ["smsp__thread_inst_executed_per_inst_executed.ratio",
                       "smsp__inst_executed.sum", "launch__grid_size", "launch__block_size"]
    pairs = {cmd[i]: cmd[i + 1] for i in range(1, cmd.index(app[0]) - 1)
             if cmd[i].startswith("--") and not cmd[i + 1].startswith("--")}
    assert pairs["--page"] == "details" and pairs["--print-units"] == "base"
    assert pairs["--print-kernel-base"] == "demangled"
    assert pairs["--rename-kernels"] == "off"
    # no --kernel-name filter, so no --kernel-name-base (the filter's basis) either
    assert "--kernel-name-base" not in cmd and "--kernel-name" not in cmd
    assert pairs["--target-processes"] == "all" and pairs["--launch-count"] == "50"
    assert pairs["--log-file"] == str(tmp_path / "log.csv") and "--csv" in cmd
    # the application: this Python running the library's target module (not the CLI) with
    # the run's keyword arguments as one JSON spec
    assert cmd[-len(app):] == app
    assert app[:3] == [sys.executable, "-m", "graphsys.analysis.ncu_target"] and len(app) == 4
    assert json.loads(app[3]) == {"graph": str(graph_dir), "algorithm": "bfs",
                                  "device": "cuda:0", "mode": "out-of-core", "max_iters": 3,
                                  "source": 7, "edge_set": "train"}
    plain = N.ncu_command("ncu", app, log_file="x")
    assert "--launch-count" not in plain and "--rename-kernels" not in plain


def test_target_process_runs_the_library(graph_dir):
    """The process ncu profiles runs the algorithm through the library (here on the CPU, the
    same torch-backend code path) and prints its statistics as one JSON line; a bad spec or
    a bad argument is one ``error:`` line and a non-zero status."""
    import subprocess

    from graphsys import bsp, open_graph

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    app = target_command(graph_dir, "pagerank", device="cpu", max_iters=3)
    proc = subprocess.run(app, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    ref = bsp.pagerank(open_graph(graph_dir), max_iters=3, backend="torch").stats.to_dict()
    assert doc["ok"] and doc["backend"] == "torch" and doc["device"] == "cpu"
    assert doc["num_supersteps"] == ref["num_supersteps"] == 3
    assert [s["edges_scanned"] for s in doc["supersteps"]] == [
        s["edges_scanned"] for s in ref["supersteps"]]
    assert run_target(str(graph_dir), "bfs", device="cpu", source=3)["backend"] == "torch"
    with pytest.raises(GraphsysError, match="^source is needed by bfs"):
        run_target(str(graph_dir), "bfs", device="cpu")
    bad = subprocess.run([*app[:3], "{\"graph\": 1}"], capture_output=True, text=True,
                         env=env, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ncu target: the spec")


def test_probe_reads_version_and_options(tmp_path):
    exe = fake_ncu(tmp_path / "a", log="")
    assert N.probe(str(exe)) == ("Version 2026.1.0.0 (build 36700000) (public-release)", True)
    older = fake_ncu(tmp_path / "b", log="", rename=False)
    assert N.probe(str(older))[1] is False
    broken = fake_ncu(tmp_path / "c", log="", version_rc=3)
    with pytest.raises(GraphsysError, match="--version exited with status 3"):
        N.probe(str(broken))


# ---------------------------------------------------------------------------------------------
# graphsys profile --ncu


def test_profile_with_fake_ncu(graph_dir, tmp_path, gpu, capsys):
    exe = fake_ncu(tmp_path / "bin", log=report())
    html = tmp_path / "r.html"
    rc = cli.main(["profile", "pagerank", str(graph_dir), "--mapping", "thread-per-vertex",
                   "--max-iters", "2", "--no-dense", "--ncu", "--ncu-path", str(exe),
                   "--report", str(html), "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["mappings"] == ["thread-per-vertex", "edge-balanced"]
    n = doc["ncu"]
    model = doc["simt"]["edge-balanced"]["mean_utilization"]
    assert 0.9 < model <= 1.0
    assert n["model_utilization"] == model
    assert n["measured_utilization"] == pytest.approx(MEASURED)
    assert n["abs_difference"] == pytest.approx(abs(MEASURED - model))
    assert n["mapping"] == "edge-balanced" and n["device"] == "cuda"
    assert n["version"] == "Version 2026.1.0.0 (build 36700000) (public-release)"
    assert n["kernels"][0]["name"] == "at::native::index_elementwise_kernel"
    assert n["command"][0] == str(exe)
    argv = json.loads((tmp_path / "bin" / "argv.json").read_text())
    assert argv == n["command"][1:]
    assert argv[argv.index("--rename-kernels") + 1] == "off"
    # numbers are formatted in the C locale
    assert json.loads((tmp_path / "bin" / "env.json").read_text()) == {"LC_ALL": "C"}
    app = argv[argv.index(sys.executable):]
    assert app[1:3] == ["-m", "graphsys.analysis.ncu_target"]
    spec = json.loads(app[3])
    assert (spec["algorithm"], spec["graph"], spec["device"], spec["max_iters"]) == (
        "pagerank", str(graph_dir.resolve()), "cuda", 2)
    on_disk = json.loads(html.with_suffix(".json").read_text())
    assert on_disk["ncu"]["measured_utilization"] == n["measured_utilization"]
    page = html.read_text()
    assert "<h2>Model vs Nsight Compute</h2>" in page
    assert f"<td>{MEASURED:.4g}</td>" in page and f"<td>{model:.4g}</td>" in page
    assert "index_elementwise_kernel" in page and "model (edge-balanced)" in page
    assert "Nsight Compute Version 2026.1.0.0" in page


def test_ncu_found_on_path(graph_dir, tmp_path, gpu, monkeypatch, capsys):
    exe = fake_ncu(tmp_path / "bin", log=report(), rename=False)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    rc = cli.main(["profile", "pagerank", str(graph_dir), "--mapping", "edge-balanced",
                   "--max-iters", "1", "--no-dense", "--ncu", "--ncu-launch-count", "6"])
    assert rc == 0
    out = capsys.readouterr().out
    assert f"ncu: measured utilization {MEASURED:.3g} over 4 edge-kernel launches (of 6)" in out
    argv = json.loads((tmp_path / "bin" / "argv.json").read_text())
    assert argv[argv.index("--launch-count") + 1] == "6"
    assert "--rename-kernels" not in argv  # a release without the option


def _fails(argv, capsys, message, *paths):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert rc != 0
    assert err.startswith("error:") and message in err and "\n" not in err
    for p in paths:  # no partial report
        assert not p.exists()


def test_no_gpu(graph_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    exe = fake_ncu(tmp_path / "bin", log=report())
    html = tmp_path / "r.html"
    _fails(["profile", "pagerank", str(graph_dir), "--ncu", "--ncu-path", str(exe),
            "--report", str(html)], capsys, "--ncu needs a CUDA GPU: device cuda: no CUDA "
           "device is available", html, html.with_suffix(".json"))
    assert not (tmp_path / "bin" / "argv.json").exists()


def test_no_ncu(graph_dir, tmp_path, gpu, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    html = tmp_path / "r.html"
    _fails(["profile", "pagerank", str(graph_dir), "--ncu", "--report", str(html)], capsys,
           "ncu is not on PATH", html, html.with_suffix(".json"))
    _fails(["profile", "pagerank", str(graph_dir), "--ncu", "--ncu-path",
            str(tmp_path / "nope"), "--report", str(html)], capsys, "not an executable",
           html)


CONNECTED = "==PROF== Connected to process 4242 (/usr/bin/python3.11)\n"
NO_PERMISSION = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                 "NVIDIA GPU Performance Counters on the target device 0.\n")
NO_KERNELS = ("==PROF== Disconnected from process 4242\n"
              "==WARNING== No kernels were profiled.\n")
# a metric this ncu/GPU does not know (the message of a real run, quoted publicly)
NO_METRIC = ("==ERROR== Failed to find metric "
             "regex:^flop_count_sp\\.(sum|min|max|avg|pct|ratio|max_rate)$\n")


@pytest.mark.parametrize("log, rc, stderr, message", [
    (CONNECTED + NO_PERMISSION, 1, "", "status 1: ==ERROR== ERR_NVGPUCTRPERM"),
    (CONNECTED, 2, "error: graph directory is corrupt\n",
     "status 2: error: graph directory is corrupt"),
    (CONNECTED + NO_KERNELS, 0, "", "no kernel metrics: ==WARNING== No kernels were profiled."),
    (CONNECTED + NO_METRIC, 1, "", "status 1: ==ERROR== Failed to find metric regex:^flop"),
])
def test_failed_ncu_run(graph_dir, tmp_path, gpu, capsys, log, rc, stderr, message):
    exe = fake_ncu(tmp_path / "bin", log=log, rc=rc, stderr=stderr)
    html = tmp_path / "r.html"
    _fails(["profile", "pagerank", str(graph_dir), "--max-iters", "1", "--no-dense",
            "--mapping", "edge-balanced", "--ncu", "--ncu-path", str(exe), "--report",
            str(html)], capsys, message, html, html.with_suffix(".json"))


@pytest.mark.parametrize("extra, message", [
    (["--ncu-path", "ncu"], "apply with --ncu only"),
    (["--ncu-launch-count", "3"], "apply with --ncu only"),
    (["--ncu", "--ncu-launch-count", "0"], "positive integer"),
])
def test_option_errors(graph_dir, capsys, gpu, extra, message):
    _fails(["profile", "pagerank", str(graph_dir), *extra], capsys, message)


def test_training_workloads_are_refused(graph_dir, capsys, gpu):
    _fails(["profile", "--workload", "gnn", str(graph_dir), "--ncu"], capsys,
           "validates the BSP engine")


# ---------------------------------------------------------------------------------------------
# the real thing


@pytest.mark.skipif(not torch.cuda.is_available() or shutil.which("ncu") is None,
                    reason="needs a CUDA GPU and Nsight Compute's ncu on PATH")
def test_real_ncu_end_to_end(graph_dir, tmp_path):
    """PageRank's CUDA kernels under the real ncu: edge kernels found, figures in range."""
    from graphsys.analysis import profile_graph, write_report

    prof = profile_graph(graph_dir, algorithm="pagerank", max_iters=2, device="cuda",
                         mappings=["edge-balanced"], dense=False, ncu=True)
    n = prof["ncu"]
    assert n["launches"] > 0 and n["edge_launches"] > 0
    assert any(k["edge"] and k["warp_instructions"] > 0 for k in n["kernels"])
    assert 0 < n["measured_utilization"] <= 1 and 0 < n["model_utilization"] <= 1
    assert n["abs_difference"] == pytest.approx(
        abs(n["measured_utilization"] - n["model_utilization"]))
    page, _ = write_report(prof, tmp_path / "r.html")
    assert "Model vs Nsight Compute" in page.read_text()
