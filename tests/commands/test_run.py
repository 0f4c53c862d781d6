"""``graphsys run``: output file, summary, JSON statistics, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from graphsys import bsp
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory):
    """Weighted directed graph with ids 10..15 in two pieces, plus a negative-weight one."""
    tmp = tmp_path_factory.mktemp("run-cli")
    f = tmp / "e.tsv"
    f.write_text("10\t11\t1.0\n11\t12\t2.5\n12\t10\t1.0\n10\t13\t4.0\n14\t15\t1.0\n")
    ingest_sources([EdgeSource([f], weight_col=2)], tmp / "g", IngestOptions(partitions=2))
    neg = tmp / "neg.tsv"
    neg.write_text("1\t2\t1.0\n2\t3\t-0.5\n")
    ingest_sources([EdgeSource([neg], weight_col=2)], tmp / "neg", IngestOptions())
    return tmp


def read_out(path):
    t = pq.read_table(path)
    assert t.column_names == ["node", "value"]
    assert str(t.schema.field("value").type) == "double"
    return dict(zip(t.column("node").to_pylist(), t.column("value").to_pylist()))


def test_sssp_writes_one_row_per_node(main, graph_dir, tmp_path, capsys):
    out = tmp_path / "d.parquet"
    assert main(["run", "sssp", str(graph_dir / "g"), "--source", "10", "--out", str(out)]) == 0
    assert read_out(out) == {10: 0.0, 11: 1.0, 12: 3.5, 13: 4.0, 14: np.inf, 15: np.inf}
    text = capsys.readouterr().out
    assert "step" in text and "active" in text and "sssp: " in text and "converged" in text
    assert not list(tmp_path.glob(".*tmp*"))


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_pagerank_json_matches_api(main, graph_dir, tmp_path, capsys, mode):
    out = tmp_path / "pr.parquet"
    argv = ["run", "pagerank", str(graph_dir / "g"), "--out", str(out), "--json", "--mode", mode,
            "--tol", "1e-12", "--max-iters", "500"]
    assert main(argv) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert stats["ok"] and stats["algorithm"] == "pagerank" and stats["converged"]
    assert stats["mode"] == mode and stats["num_supersteps"] == len(stats["supersteps"])
    ref = bsp.pagerank(graph_dir / "g", tol=1e-12, max_iters=500)
    got = read_out(out)
    ids = ref.graph.node_ids()
    assert sum(abs(got[int(i)] - v) for i, v in zip(ids, ref.values)) < 1e-9


def test_wcc_and_bfs_labels(main, graph_dir, tmp_path):
    out = tmp_path / "c.parquet"
    assert main(["run", "wcc", str(graph_dir / "g"), "--out", str(out)]) == 0
    labels = read_out(out)
    assert labels[10] == labels[11] == labels[12] == labels[13] != labels[14] == labels[15]
    out2 = tmp_path / "b.parquet"
    assert main(["run", "bfs", str(graph_dir / "g"), "--source", "14", "--out", str(out2),
                 "--mode", "out-of-core"]) == 0
    assert read_out(out2) == {10: np.inf, 11: np.inf, 12: np.inf, 13: np.inf, 14: 0.0, 15: 1.0}
    out3 = tmp_path / "a.parquet"
    assert main(["run", "wcc", str(graph_dir / "g"), "--out", str(out3),
                 "--schedule", "async"]) == 0
    assert read_out(out3) == labels


def test_existing_output_needs_overwrite(main, graph_dir, tmp_path, capsys):
    out = tmp_path / "x.parquet"
    out.write_bytes(b"keep")
    assert main(["run", "wcc", str(graph_dir / "g"), "--out", str(out)]) != 0
    assert "already exists" in capsys.readouterr().err
    assert out.read_bytes() == b"keep"
    assert main(["run", "wcc", str(graph_dir / "g"), "--out", str(out), "--overwrite"]) == 0
    assert len(read_out(out)) == 6


def corrupt_copy(graph_dir, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(graph_dir / "g", bad)
    bucket = next(p for p in bad.rglob("*") if p.is_file() and "edges" in str(p.relative_to(bad))
                  and p.stat().st_size > 64)
    data = bytearray(bucket.read_bytes())
    data[-40] ^= 0xFF  # same size, different bytes: only the hash check sees it
    bucket.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize("case", ["unknown-algo", "unknown-source", "negative-weights",
                                  "corrupt-graph", "cuda", "missing-source", "bad-mode",
                                  "not-a-graph", "bad-schedule", "async-pagerank"])
def test_bad_input_is_one_line_error(main, graph_dir, tmp_path, capsys, case):
    g = str(graph_dir / "g")
    out = tmp_path / "o.parquet"
    argv = {
        "unknown-algo": ["run", "pagerankk", g],
        "unknown-source": ["run", "bfs", g, "--source", "999"],
        "negative-weights": ["run", "sssp", str(graph_dir / "neg"), "--source", "1"],
        "corrupt-graph": ["run", "pagerank", str(corrupt_copy(graph_dir, tmp_path))],
        "cuda": ["run", "pagerank", g, "--device", "cuda"],
        "missing-source": ["run", "sssp", g],
        "bad-mode": ["run", "wcc", g, "--mode", "disk"],
        "not-a-graph": ["run", "wcc", str(tmp_path)],
        "bad-schedule": ["run", "wcc", g, "--schedule", "later"],
        "async-pagerank": ["run", "pagerank", g, "--schedule", "async"],
    }[case]
    if case == "cuda" and torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code = main(argv + ["--out", str(out)])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error: ") and err.count("\n") == 1, err
    expected = {"unknown-algo": "unknown algorithm 'pagerankk'",
                "unknown-source": "node id 999 is not in the graph",
                "negative-weights": "non-negative", "corrupt-graph": "sha256 mismatch",
                "cuda": "no CUDA device", "missing-source": "needs --source",
                "bad-mode": "unknown mode", "not-a-graph": "manifest",
                "bad-schedule": "unknown schedule", "async-pagerank": "min-relaxation"}[case]
    assert expected in err
    assert not out.exists() and not list(tmp_path.glob(".o.parquet*"))


def test_a_typed_graph_is_refused_before_any_output(main, tmp_path, capsys):
    """run on a graph of several entity types printed the step table's header, then the
    engine's refusal; the refusal now comes first and alone."""
    from graphsys.storage.format import RelationType
    from graphsys.storage.ingest import NodeSource

    ingest_sources([EdgeSource(table=pa.table({"src": [0], "dst": [1]}), relation="r")],
                   tmp_path / "g", IngestOptions(relation_types=[RelationType("r", "u", "i")]),
                   nodes=[NodeSource(pa.table({"id": [0]}), "u"),
                          NodeSource(pa.table({"id": [0, 1]}), "i")])
    for argv in (["pagerank"], ["bfs", "--source", "0"]):
        assert main(["run", argv[0], str(tmp_path / "g"), *argv[1:]]) == 2
        got = capsys.readouterr()
        assert got.out == "" and got.err == (
            f"error: the BSP engine needs a graph of one entity type; {tmp_path / 'g'} has "
            "2 (u, i)\n")


def test_distributed_run_is_the_command_under_torchrun(graph_dir, tmp_path):
    """``torchrun -m graphsys run``: both ranks run the command, rank 0 writes --out, each
    rank closes its process group (the library's launch module no longer wraps the CLI)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "k.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node",
                           "2", "--standalone", "-m", "graphsys", "run",
                           "kcore", str(graph_dir / "g"), "--out", str(out), "--json"],
                          env=env, timeout=300, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert read_out(out) == {10: 2.0, 11: 2.0, 12: 2.0, 13: 1.0, 14: 1.0, 15: 1.0}


def test_cli_algorithm_choices_come_from_the_registry():
    from graphsys.cli import build_parser
    from graphsys.plugins import ALGORITHMS

    help_text = build_parser(["run"])._subparsers._group_actions[0].choices["run"].format_help()
    assert f"one of {', '.join(ALGORITHMS.names())}" in " ".join(help_text.split())


def test_user_program(main, graph_dir, tmp_path, monkeypatch, capsys):
    """--program MODULE:CLASS runs the user's VertexProgram: a PageRank subclass defined
    outside graphsys gives the builtin's ranks; bad names are one-line errors."""
    (tmp_path / "user_progs.py").write_text(
        "from graphsys.bsp.algorithms import PageRank\n"
        "class MyRank(PageRank):\n    name = 'myrank'\n"
        "class NotAProgram:\n    pass\n"
        "class Sized(PageRank):\n    def __init__(self, size):\n        super().__init__()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    g = str(graph_dir / "g")
    # a PageRank subclass built with no arguments ignores weights (weighted=False)
    assert main(["run", "pagerank", g, "--weights", "ignore",
                 "--out", str(tmp_path / "a.parquet")]) == 0
    assert main(["run", "--program", "user_progs:MyRank", g, "--out",
                 str(tmp_path / "b.parquet")]) == 0
    a, b = (pq.read_table(tmp_path / f"{x}.parquet").to_pydict() for x in "ab")
    assert a["node"] == b["node"] and np.allclose(a["value"], b["value"])
    capsys.readouterr()
    for argv, msg in [(["--program", "user_progs:NotAProgram", g], "not a graphsys.bsp"),
                      (["--program", "user_progs:Nope", g], "has no 'Nope'"),
                      (["--program", "user_progs:Sized", g], "cannot be called with no argu"),
                      (["--program", "graphsys.bsp:VertexProgram", g],
                       "VertexProgram is abstract (it leaves init, result, send, update"),
                      (["--program", "user_progs:MyRank", "pagerank", g], "not both"),
                      ([g], "give ALGO DIR"),
                      (["--program", "user_progs:MyRank", g, "--damping", "0.5"],
                       "--damping applies")]:
        assert main(["run", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err


def test_hits_writes_hub_and_authority_rows(main, graph_dir, tmp_path):
    """A (N, 2) result is one fixed-size list column: [hub, authority] per node."""
    out = tmp_path / "h.parquet"
    assert main(["run", "hits", str(graph_dir / "g"), "--out", str(out), "--tol", "1e-10",
                 "--mode", "out-of-core"]) == 0
    t = pq.read_table(out)
    assert t.schema.field("value").type == pa.list_(pa.float64(), 2)
    got = np.array(t.column("value").to_pylist())
    np.testing.assert_allclose(got, bsp.hits(graph_dir / "g", tol=1e-10).values, rtol=1e-12)
    np.testing.assert_allclose(got.sum(axis=0), [1.0, 1.0])


@pytest.mark.parametrize("indexed", [False, True], ids=["no-index", "index"])
@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
@pytest.mark.parametrize("weights", ["use", "ignore"])
def test_pagerank_opens_the_graph_once_and_reads_each_bucket_once(
        main, graph_dir, tmp_path, monkeypatch, capsys, mode, indexed, weights):
    """Before superstep 0 a run opens the graph once and reads each bucket at most once
    (none with an adjacency index: in memory the run reads no bucket at all); out of core
    the supersteps stream from the buckets the degree pass opened. Counted by wrapping the
    bucket reader (``Bucket.batches``) and ``open_graph``."""
    import shutil

    import graphsys
    from graphsys.bsp import engine
    from graphsys.bsp.algorithms.pagerank import PageRank
    from graphsys.storage import edges as edges_module
    from graphsys.storage.adjacency_index import build_index

    g = tmp_path / "g"
    shutil.copytree(graph_dir / "g", g)
    if indexed:
        build_index(graphsys.open_graph(g))
    buckets = sorted(graphsys.open_graph(g).edge_set().buckets)
    reads: list[tuple[int, int]] = []
    opens: list[object] = []
    at_superstep_0: list[int] = []
    batches, open_graph, loop = (edges_module.Bucket.batches, graphsys.open_graph,
                                 engine._Supersteps.run)

    def counting_batches(self):
        reads.append((self.i, self.j))
        return batches(self)

    def counting_open(path, **kwargs):
        opens.append(path)
        return open_graph(path, **kwargs)

    def first_superstep(self, *args, **kwargs):
        at_superstep_0.append(len(reads))
        return loop(self, *args, **kwargs)

    monkeypatch.setattr(edges_module.Bucket, "batches", counting_batches)
    monkeypatch.setattr(graphsys, "open_graph", counting_open)
    monkeypatch.setattr(engine._Supersteps, "run", first_superstep)
    solve = PageRank.solve_in_memory

    def first_solve(*args, **kwargs):  # PageRank's declared in-memory loop
        at_superstep_0.append(len(reads))
        return solve(*args, **kwargs)

    monkeypatch.setattr(PageRank, "solve_in_memory", first_solve)
    out = tmp_path / "pr.parquet"
    assert main(["run", "pagerank", str(g), "--mode", mode, "--out", str(out),
                 "--weights", weights]) == 0
    capsys.readouterr()
    assert len(buckets) >= 3 and len(opens) == 1
    # a weighted run in memory declines the fused loop: the supersteps follow it
    assert at_superstep_0 == [0 if indexed else len(buckets)] * (
        2 if weights == "use" and mode == "memory" else 1)
    # each bucket once in the whole run; in memory with an index, never
    assert sorted(reads) == ([] if indexed and mode == "memory" else buckets)
    ranks = read_out(out)
    assert abs(sum(ranks.values()) - 1.0) < 1e-9


def test_sum_dtype_flag(main, graph_dir, tmp_path, capsys):
    """``--sum-dtype float32`` reaches PageRank (ranks within float32 rounding of the
    float64 ones, out of core too); another algorithm refuses it in one line."""
    g = str(graph_dir / "g")
    for mode in ("memory", "out-of-core"):
        a, b = tmp_path / f"a-{mode}.parquet", tmp_path / f"b-{mode}.parquet"
        assert main(["run", "pagerank", g, "--mode", mode, "--weights", "ignore", "--out",
                     str(a)]) == 0
        assert main(["run", "pagerank", g, "--mode", mode, "--sum-dtype", "float32",
                     "--weights", "ignore", "--out", str(b)]) == 0
        ra, rb = read_out(a), read_out(b)
        assert ra.keys() == rb.keys()
        assert all(abs(rb[k] / ra[k] - 1) < 1e-5 for k in ra)
    capsys.readouterr()
    assert main(["run", "bfs", g, "--source", "10", "--sum-dtype", "float32"]) == 2
    err = capsys.readouterr().err
    assert "--sum-dtype applies to" in err and err.count("\n") == 1, err


def test_no_store_index_flag(main, push_twins, tree_bytes, capsys):
    """``--no-store-index`` leaves the graph directory byte for byte as it was, where a
    plain run stores the push index; other algorithms and ``--set`` refuse it in one line."""
    g, stored = push_twins
    before = tree_bytes(g)
    assert main(["run", "pagerank", str(g), "--no-store-index", "--quiet"]) == 0
    assert main(["run", "ppr", str(g), "--source", "3", "--no-store-index", "--quiet"]) == 0
    assert tree_bytes(g) == before
    assert main(["run", "pagerank", str(stored), "--quiet"]) == 0
    assert "push" in json.loads((stored / "manifest.json").read_text())["indexes"]["default"]
    capsys.readouterr()
    for argv, message in ((["run", "bfs", str(g), "--source", "3",
                            "--no-store-index"], "--no-store-index applies to pagerank, ppr"),
                          (["run", "pagerank", str(g), "--set",
                            "store_index=false"], "--set store_index: use --no-store-index")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


MAXLABEL = '''
import torch
from graphsys.bsp import VertexProgram


class MaxLabel(VertexProgram):
    name = "maxlabel"
    message, combiner, direction = "copy", "max", "both"

    def init(self, ctx):
        label = ctx.node_range().to(torch.float64)
        return {"label": label}, torch.ones(ctx.num_local, dtype=torch.bool)

    def send(self, ctx, state):
        return state["label"]

    def update(self, ctx, state, combined, received):
        grew = received & (combined > state["label"])
        state["label"] = torch.where(grew, combined, state["label"])
        return grew, {}

    def result(self, ctx, state):
        return state["label"]
'''


@pytest.mark.parametrize("in_process", [True, False])
def test_user_program_from_working_directory(main, graph_dir, tmp_path, monkeypatch, capsys,
                                             in_process):
    """``--program maxlabel:MaxLabel`` imports ``./maxlabel.py`` from the working directory
    without PYTHONPATH: in process (pytest's path lacks the directory) and as a separate
    process that, like the ``graphsys`` console script, does not put it on ``sys.path``
    (``python -P``)."""
    import os
    import subprocess
    import sys

    (tmp_path / "maxlabel.py").write_text(MAXLABEL)
    out = tmp_path / "labels.parquet"
    argv = ["run", "--program", "maxlabel:MaxLabel", str(graph_dir / "g"), "--out", str(out)]
    if in_process:
        monkeypatch.chdir(tmp_path)
        assert str(tmp_path) not in sys.path
        assert main(argv) == 0
        capsys.readouterr()
        assert str(tmp_path) not in sys.path  # the lookup leaves the path as it was
        sys.modules.pop("maxlabel", None)
    else:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "PYTHONPATH": root}
        done = subprocess.run([sys.executable, "-P", "-m", "graphsys", *argv], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    labels = read_out(out)
    # ids 10..13 form one weak component, 14..15 another: each ends with its largest label
    first, second = ({labels[i] for i in (10, 11, 12, 13)}, {labels[i] for i in (14, 15)})
    assert len(first) == 1 and len(second) == 1 and first != second


def test_weights_flag_and_non_convergence(main, tmp_path, capsys):
    """Issue 43's reproducer: on a weighted edge set pagerank follows the weights
    (networkx's default), --weights ignore gives networkx's weight=None answer, --json
    records which ran; a run that stops at --max-iters exits non-zero in one line and
    writes nothing unless --allow-unconverged."""
    import networkx as nx

    import graphsys

    src, dst, w = [1, 1, 2, 3], [2, 3, 3, 1], [5.0, 1.0, 2.0, 1.0]
    g = tmp_path / "g"
    graphsys.from_numpy(np.array(src), np.array(dst), g, weight=np.array(w))
    G = nx.DiGraph()
    G.add_weighted_edges_from(zip(src, dst, w))
    for weights, ref, flag in (("auto", nx.pagerank(G, tol=1e-12), True),
                               ("ignore", nx.pagerank(G, tol=1e-12, weight=None), False)):
        out = tmp_path / f"{weights}.parquet"
        assert main(["run", "pagerank", str(g), "--weights", weights, "--tol", "1e-12",
                     "--max-iters", "1000",
                     "--out", str(out), "--json"]) == 0
        assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["weighted"] is flag
        got = read_out(out)
        assert all(abs(got[k] - ref[k]) < 1e-9 for k in ref)
    assert round(read_out(tmp_path / "auto.parquet")[2], 3) == 0.298
    assert round(read_out(tmp_path / "ignore.parquet")[2], 3) == 0.215
    for algorithm in ("pagerank", "hits"):
        out = tmp_path / f"short-{algorithm}.parquet"
        assert main(["run", algorithm, str(g), "--max-iters", "2", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "did not converge within 2 supersteps" in err[0], err
        assert "raise --max-iters or --tol" in err[0]
        assert not out.exists()
        assert main(["run", algorithm, str(g), "--max-iters", "2", "--out", str(out),
                     "--allow-unconverged"]) == 0
        assert out.exists() and "before converging" in capsys.readouterr().err
    graphsys.from_numpy(np.array(src), np.array(dst), tmp_path / "plain")
    assert main(["run", "hits", str(tmp_path / "plain"), "--weights", "use"]) == 2
    assert "--weights is True but edge set" in capsys.readouterr().err
    assert main(["run", "bfs", str(g), "--source", "1", "--weights", "ignore"]) == 2
    assert "--weights applies to" in capsys.readouterr().err


def test_analytics_take_parameters_with_set(main, graph_dir, tmp_path, capsys):
    """scc, betweenness, closeness, harmonic, louvain, leiden run through the registry;
    --set passes an algorithm's parameters as the Python function takes them."""
    g = str(graph_dir / "g")
    out = tmp_path / "s.parquet"
    assert main(["run", "scc", g, "--out", str(out)]) == 0
    assert read_out(out) == bsp.scc(g).to_dict()
    assert main(["run", "betweenness", g, "--out", str(out), "--overwrite", "--set", "k=3",
                 "--set", "seed=2", "--set", "normalized=false"]) == 0
    assert read_out(out) == bsp.betweenness(g, k=3, seed=2, normalized=False).to_dict()
    assert main(["run", "closeness", g, "--out", str(out), "--overwrite", "--set",
                 "sources=[10, 14]", "--weights", "use"]) == 0
    assert read_out(out) == bsp.closeness(g, sources=[10, 14], weighted=True).to_dict()
    capsys.readouterr()
    assert main(["run", "louvain", g, "--out", str(out), "--overwrite", "--set",
                 "resolution=0.5", "--set", "directed=false", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    ref = bsp.louvain(g, resolution=0.5, directed=False)
    assert read_out(out) == ref.to_dict()
    assert stats["scores"]["modularity"] == ref.stats.scores["modularity"]
    assert main(["run", "leiden", g, "--quiet"]) == 0
    summary = capsys.readouterr().out
    assert summary.startswith("leiden: ") and ", modularity 0." in summary


@pytest.mark.parametrize("argv,message", [
    (["kcore", "--set", "self_loops=count"], "self_loops must be one of ignore, refuse"),
    (["kcore", "--set", "nope=1"], "--set nope: kcore takes no parameter nope (its "
                                   "parameters: self_loops)"),
    (["wcc", "--set", "k=1"], "--set k: wcc takes no parameter k (it takes none)"),
    (["betweenness", "--set", "tol=1"], "--set tol: use --tol"),
    (["betweenness", "--set", "k"], "--set 'k': expected NAME=VALUE"),
    (["betweenness", "--set", "k=0"], "k must be an integer from 1 to the 6 nodes"),
    (["betweenness", "--set", "k=2", "--set", "k=3"], "--set k: given twice"),  # (k=3 ran)
    (["louvain", "--mode", "out-of-core"], "louvain runs in memory on the CPU"),
    (["lpa", "--tol", "1e-3"], "--tol applies to hits, pagerank, ppr, not lpa"),
    # a flag given at its default value is still given: it was silently ignored
    (["wcc", "--damping", "0.85"], "--damping applies to pagerank, ppr, not wcc"),
    (["kcore", "--sum-dtype", "auto"], "--sum-dtype applies to pagerank, ppr, not kcore"),
    (["scc", "--weights", "auto"], "--weights applies to betweenness, closeness, harmonic, "
                                   "hits, leiden, louvain, pagerank, ppr, not scc"),
    # a pass cut by --max-iters is unconverged (it was written as converged)
    (["louvain", "--max-iters", "1"], "louvain did not converge within 1 supersteps"),
])
def test_analytics_errors_are_one_line(main, graph_dir, capsys, argv, message):
    assert main(["run", argv[0], str(graph_dir / "g"), *argv[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_an_unconverged_fused_bfs_says_the_supersteps_it_ran(main, tmp_path, capsys):
    """Issue 71: direction-optimizing BFS records one row per phase of levels, so a run
    stopped at --max-iters 3 said "(1 supersteps)" while its distances reached 3."""
    import graphsys

    g = tmp_path / "g"
    graphsys.from_numpy(np.arange(8), np.arange(1, 9), g)   # a path 0 -> 1 -> ... -> 8
    out = tmp_path / "bfs.parquet"
    assert main(["run", "bfs", str(g), "--source", "0", "--max-iters", "3",
                 "--allow-unconverged", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert max(v for v in read_out(out).values() if np.isfinite(v)) == 3
    assert cap.err.strip() == "warning: bfs stopped at --max-iters 3 (3 supersteps) before " \
                              "converging"
    assert "bfs: 3 supersteps, NOT converged" in cap.out
    assert main(["run", "bfs", str(g), "--source", "0", "--max-iters", "3"]) == 2
    err = capsys.readouterr().err   # bfs refuses --tol: the advice does not name it
    assert "did not converge within 3 supersteps" in err and "--tol" not in err


def test_summary_says_apart_what_compiling_took(main, graph_dir, monkeypatch, capsys):
    """Kernels compiled inside the run (a cold cache) are said apart from the algorithm's
    time in the summary and in --json; a warm run says nothing of compiling."""
    import graphsys.jit as jit

    totals = iter([{"kernels": 0, "seconds": 0.0}, {"kernels": 3, "seconds": 7.25}])
    monkeypatch.setattr(jit, "compile_totals", lambda: next(totals))
    assert main(["run", "wcc", str(graph_dir / "g")]) == 0
    assert "compiling 3 kernels, once per install, 7.250 s of it" in capsys.readouterr().out
    totals = iter([{"kernels": 3, "seconds": 7.25}, {"kernels": 5, "seconds": 9.5}])
    assert main(["run", "wcc", str(graph_dir / "g"), "--json"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (line["compiled_kernels"], line["compile_seconds"]) == (2, 2.25)
    monkeypatch.undo()
    assert main(["run", "wcc", str(graph_dir / "g")]) == 0
    assert "compiling" not in capsys.readouterr().out


def test_cpu_runs_of_builtin_algorithms_import_no_torch(tmp_path):
    """``graphsys run`` of bfs, pagerank and wcc on the CPU (in memory, numba; PageRank
    streamed too) computes with NumPy and numba alone: the whole command, output file
    included, imports no torch; a run whose program needs the superstep loop (sssp) still
    gets it."""
    import os
    import subprocess
    import sys

    import graphsys

    g = graphsys.from_numpy(np.array([1, 2, 3, 1, 5, 6]), np.array([2, 3, 4, 3, 1, 5]),
                            tmp_path / "g")
    del g
    graph = str(tmp_path / "g")
    cpu = [["run", name, graph, *extra, "--out", str(tmp_path / f"{name}.parquet"), "--quiet"]
           for name, extra in [("bfs", ["--source", "1"]), ("pagerank", []), ("wcc", []),
                               ("betweenness", []), ("closeness", [])]]
    # streamed on the CPU, PageRank's supersteps take NumPy state too
    cpu.append(["run", "pagerank", graph, "--mode", "out-of-core", "--out",
                str(tmp_path / "streamed.parquet"), "--quiet"])
    loop = ["run", "sssp", graph, "--source", "1", "--quiet"]  # supersteps: tensors
    code = ("import sys\nfrom graphsys.cli import main\n"
            f"assert [main(argv) for argv in {cpu!r}] == [0] * {len(cpu)}\n"
            "print('torch after cpu runs:', 'torch' in sys.modules)\n"
            f"assert main({loop!r}) == 0\n"
            "print('torch after sssp:', 'torch' in sys.modules)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": root},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("torch after")]
    assert said == ["torch after cpu runs: False", "torch after sssp: True"]
    assert read_out(tmp_path / "bfs.parquet") == {1: 0.0, 2: 1.0, 3: 1.0, 4: 2.0, 5: np.inf,
                                                  6: np.inf}
    assert len(set(read_out(tmp_path / "wcc.parquet").values())) == 1
    streamed, pulled = read_out(tmp_path / "streamed.parquet"), read_out(
        tmp_path / "pagerank.parquet")
    assert sum(abs(streamed[v] - pulled[v]) for v in pulled) < 1e-5


@pytest.mark.parametrize("algo", ["pagerank", "bfs", "sssp", "wcc", "kcore"])
def test_device_budget_keeps_edges_on_the_device(main, graph_dir, tmp_path, capsys, algo):
    """``--device-budget`` reaches the engine: out of core on the torch backend a size
    keeps the batches on the device after the first superstep (the CPU here), 0 streams
    them every superstep; the answer is the same."""
    source = ["--source", "10"] if algo in ("bfs", "sssp") else []
    outs = []
    for budget in ("1MB", "0"):
        out = tmp_path / f"{algo}-{budget}.parquet"
        assert main(["run", algo, str(graph_dir / "g"), *source, "--mode", "out-of-core",
                     "--backend", "torch", "--device-budget", budget, "--out", str(out),
                     "--json"]) == 0
        stats = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert (stats["resident_bytes"] > 0) == (budget != "0")
        outs.append(read_out(out))
    assert outs[0] == pytest.approx(outs[1], rel=1e-12)


@pytest.mark.parametrize("value,flags,message", [
    ("2.5", [], "^--device-budget 2.5: a share is in \\[0, 1\\]; write a size with its unit"),
    ("lots", [], "^--device-budget: cannot parse size 'lots'"),
    ("1GB", ["--mode", "memory"], "^--device-budget applies out of core on the torch "
                                  "backend, not with --mode memory"),
    ("1GB", ["--backend", "numba"], "^--device-budget applies out of core on the torch "
                                    "backend, not with --backend numba")])
def test_device_budget_refused_in_one_line(main, graph_dir, capsys, value, flags, message):
    import re

    assert main(["run", "wcc", str(graph_dir / "g"), "--device-budget", value, *flags]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0].removeprefix("graphsys: error: ")
                                       .removeprefix("error: ")), err


def test_device_budget_without_effect_says_so(main, graph_dir, capsys):
    """A run the automatic choices kept in memory (or on numba) names the budget it did
    not use, on stderr; the answer is written as without it."""
    assert main(["run", "wcc", str(graph_dir / "g"), "--device-budget", "1GB"]) == 0
    err = capsys.readouterr().err
    assert "note: --device-budget had no effect: the run was memory on the numba backend" in err
