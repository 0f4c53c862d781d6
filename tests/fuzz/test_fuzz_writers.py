"""Fuzzing the writers and round trips (issue 43, item 8): export -> ingest gives back the
same edges (ids, weights) in TSV and Parquet; a random sequence of appends and index
builds always leaves a graph that verifies and holds every committed edge set; the flags
of ``graphsys run`` and ``graphsys gnn train`` either run or are refused in one line.
Example counts follow ``GRAPHSYS_FUZZ_EXAMPLES`` (see conftest)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import graphsys
from graphsys import cli
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.verify import verify_graph

from .conftest import FUZZ, TALLY

#: ids as text: decimal integers, hexadecimal-looking and other strings (the integer rule is
#: ``[+-]?\d+`` only); never a separator, quote or blank
IDS = st.one_of(st.integers(-50, 50).map(str),
                st.sampled_from(["0x10", "0X1F", "a", "b", "src", "dst", "n1", "1e3", "007"]))
WEIGHTS = st.integers(0, 40).map(lambda k: k / 4)  # exact in float32 and in text
EDGES = st.lists(st.tuples(IDS, IDS, WEIGHTS).filter(lambda e: e[0] != e[1]),
                 min_size=1, max_size=12)


def _quiet(argv: list[str], capsys) -> int:
    rc = cli.main(argv)
    capsys.readouterr()
    return rc


def _main(argv: list[str]) -> int:
    """cli.main's exit status, also for a usage error argparse exits on."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code)


def _exported(path: Path) -> list[tuple[str, str, float]]:
    """The rows of an export as (src, dst, weight) text ids, sorted."""
    t = pq.read_table(path) if path.suffix == ".parquet" else None
    if t is not None:
        cols = t.to_pydict()
        rows = zip(cols["src"], cols["dst"], cols["weight"], strict=True)
    else:
        lines = path.read_text().splitlines()[1:]
        rows = (line.split("\t") for line in lines)
    return sorted((str(s), str(d), float(w)) for s, d, w in rows)


def _ids_as_stored(edges) -> list[tuple[str, str, float]]:
    """The input rows as ingest stores them: an id matching ``[+-]?\\d+`` is an integer
    (``007`` -> ``7``) whatever the rest of the column holds, any other keeps its text."""
    def norm(x):
        return str(int(x)) if _is_int(x) else x

    return sorted((norm(s), norm(d), float(w)) for s, d, w in edges)


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


@FUZZ
@given(edges=EDGES, fmt=st.sampled_from(["tsv", "parquet"]))
def test_export_ingest_round_trip(edges, fmt, capsys):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        f = tmp / "in.tsv"
        f.write_text("".join(f"{s}\t{d}\t{w}\n" for s, d, w in edges))
        assert _quiet(["ingest", str(f), "--out", str(tmp / "g"), "--weight-col", "2",
                       "--header", "no"], capsys) == 0
        out = tmp / f"x.{fmt}"
        assert _quiet(["export", str(tmp / "g"), "--out", str(out)], capsys) == 0
        first = _exported(out)
        assert first == _ids_as_stored(edges)
        assert _quiet(["ingest", str(out), "--out", str(tmp / "g2"), "--weight-col",
                       "weight"], capsys) == 0
        again = tmp / f"y.{fmt}"
        assert _quiet(["export", str(tmp / "g2"), "--out", str(again)], capsys) == 0
        assert _exported(again) == first
    TALLY[("export_ingest_round_trip", "ok")] += 1


OPS = st.lists(st.one_of(st.tuples(st.just("append"), st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=6)),
    st.tuples(st.just("index"), st.sampled_from([("csr",), ("csc",), ("csr", "csc")]))),
    min_size=1, max_size=4)


@FUZZ
@given(ops=OPS)
def test_appends_and_index_builds_keep_every_edge_set(ops, capsys):
    """Each step commits or is refused as a whole; after each, the graph verifies and
    holds exactly the edge sets committed so far (their edges, in any order)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        g = tmp / "g"
        graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), g, partitions=2)
        want = {"default": 2}
        for k, (op, arg) in enumerate(ops):
            if op == "append":
                f = tmp / f"e{k}.tsv"
                f.write_text("".join(f"{s}\t{d}\n" for s, d in arg))
                assert _quiet(["ingest", str(f), "--append-to", str(g), "--edge-set",
                               f"e{k}"], capsys) == 0
                want[f"e{k}"] = len(arg)
            else:
                build_index(graphsys.open_graph(g), arg)
            verify_graph(g)
            opened = graphsys.open_graph(g)
            assert {n: opened.num_edges(n) for n in opened.edge_sets} == want
    TALLY[("appends_and_index_builds", "ok")] += 1


@pytest.fixture(scope="module")
def weighted_graph(tmp_path_factory):
    d = tmp_path_factory.mktemp("flags") / "g"
    graphsys.from_numpy(np.array([1, 2, 3, 3]), np.array([2, 3, 1, 4]), d,
                        weight=np.array([1.0, 2.0, 0.5, 1.0]))
    return d


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -1.0, 1.0, 0.5, 1e-300, 1e300]))


@FUZZ
@given(damping=NUMBERS, tol=NUMBERS, max_iters=st.integers(-3, 60),
       weights=st.sampled_from(["auto", "use", "ignore"]),
       algorithm=st.sampled_from(["pagerank", "hits"]))
def test_run_flag_values_run_or_refuse_in_one_line(weighted_graph, capsys, damping, tol,
                                                     max_iters, weights, algorithm):
    argv = ["run", algorithm, str(weighted_graph), f"--tol={tol!r}",
            f"--max-iters={max_iters}", "--weights", weights, "--json"]
    if algorithm == "pagerank":
        argv.append(f"--damping={damping!r}")
    rc = _main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    valid = (max_iters >= 1 and math.isfinite(tol) and tol > 0
             and (algorithm == "hits" or 0 < damping < 1))
    if rc == 0:
        assert valid, argv
    else:
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), (argv, err)
    TALLY[("run_flags", "ok" if rc == 0 else "refused")] += 1


@FUZZ
@given(flag=st.sampled_from(["--lr", "--weight-decay", "--dropout"]),
       value=st.one_of(st.sampled_from([math.nan, math.inf, -math.inf, -1.0, -1e-9]),
                       st.floats(1.0, 1e9)))
def test_gnn_train_bad_numbers_refused_in_one_line(weighted_graph, capsys, flag, value):
    if flag != "--dropout" and value >= 1.0:
        value = -value  # lr and weight decay take any finite non-negative value
    rc = _main(["gnn", "train", "--graph", str(weighted_graph), f"{flag}={value!r}",
                "--out", str(weighted_graph.parent / "never")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {flag} must be "), err
    assert not (weighted_graph.parent / "never").exists()
    TALLY[("gnn_train_flags", "refused")] += 1


SIZES = st.one_of(st.sampled_from(["0", "-1", "1", "1GB", "64MiB", "2gb", "nan", "1e3", "",
                                   "GB", "1.5GB", "99999999999999999999GB", "0x10"]),
                  st.integers(-2**64, 2**64).map(str))


@FUZZ
@given(memory=SIZES, kinds=st.sampled_from([[], ["--csr"], ["--push"], ["--csr", "--csc"]]))
def test_index_flag_values_run_or_refuse_in_one_line(capsys, memory, kinds):
    """``graphsys index --memory-limit`` takes any text: a build or one error line, and a
    refused build leaves the graph as it was (verifies, no index)."""
    with tempfile.TemporaryDirectory() as tmp:
        g = Path(tmp) / "g"
        graphsys.from_numpy(np.array([1, 2, 3]), np.array([2, 3, 1]), g)
        rc = _main(["index", str(g), *kinds, f"--memory-limit={memory}"])
        err = capsys.readouterr().err.strip().splitlines()
        if rc != 0:
            assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
            assert not graphsys.open_graph(g).manifest.indexes
        verify_graph(g)
    TALLY[("index_flags", "ok" if rc == 0 else "refused")] += 1


@FUZZ
@given(partitions=st.integers(-3, 12), seed=st.integers(-2**64, 2**64),
       memory=SIZES, partitioner=st.sampled_from(["hash", "range", "degree", "fennel",
                                                   "nope"]))
def test_ingest_flag_values_run_or_refuse_in_one_line(capsys, partitions, seed, memory,
                                                      partitioner):
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "e.tsv"
        f.write_text("1\t2\n2\t3\n3\t1\n4\t1\n")
        out = Path(tmp) / "g"
        rc = _main(["ingest", str(f), "--out", str(out), f"--partitions={partitions}",
                    f"--seed={seed}", f"--memory-limit={memory}",
                    f"--partitioner={partitioner}"])
        err = capsys.readouterr().err.strip().splitlines()
        if rc == 0:
            verify_graph(out)
        else:
            assert rc == 2 and len(err) == 1 and err[0].startswith("error: "), err
            assert not out.exists()
    TALLY[("ingest_flags", "ok" if rc == 0 else "refused")] += 1
