"""Writers: every extension round-trips through pyarrow; writes are atomic."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as paipc
import pyarrow.parquet as pq
import pytest

from graphsys.errors import GraphsysError
from graphsys.generators import (
    edge_schema,
    grid_edges,
    knowledge_graph,
    sbm,
    split_paths,
    write_edges,
    write_nodes,
    write_split_edges,
)
from graphsys.generators.writer import EXTENSIONS, node_table_path

TEXT = {".tsv": "\t", ".tsv.gz": "\t", ".csv": ",", ".csv.gz": ","}


def _read(path, names):
    ext = next(e for e in EXTENSIONS if path.name.endswith(e))
    if ext in TEXT:
        return pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=names),
                              parse_options=pacsv.ParseOptions(delimiter=TEXT[ext]))
    if ext == ".parquet":
        return pq.read_table(path)
    return paipc.open_file(pa.memory_map(str(path))).read_all()


def _grid_chunks():
    return list(grid_edges(200, 300, seed=1, chunk_edges=64))


@pytest.mark.parametrize("ext", list(EXTENSIONS))
def test_weighted_edges_round_trip(tmp_path, ext):
    chunks = _grid_chunks()
    path = tmp_path / f"g{ext}"
    assert write_edges(iter(chunks), path) == 300
    table = _read(path, ["src", "dst", "weight"])
    expected = {k: np.concatenate([c[k] for c in chunks]) for k in ("src", "dst", "weight")}
    assert table.num_rows == 300
    assert np.array_equal(table["src"].to_numpy(), expected["src"])
    assert np.array_equal(table["dst"].to_numpy(), expected["dst"])
    # text holds the shortest float32 repr, so parsing it back gives the same float32
    assert np.array_equal(table["weight"].to_numpy().astype(np.float32), expected["weight"])
    if ext in (".parquet", ".arrow", ".feather"):
        assert table.schema == edge_schema(path, weight=np.float32)
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize("ext", list(EXTENSIONS))
def test_triples_round_trip_with_relation_names(tmp_path, ext):
    model = knowledge_graph(200, 1000, relations=5, seed=2)
    path = tmp_path / f"kg{ext}"
    write_edges(model.triples(chunk_triples=300), path, rel_names=model.relation_names)
    text = ext in TEXT
    table = _read(path, ["src", "rel", "dst"] if text else None)
    if not text:
        assert table.column_names == ["src", "dst", "rel"]
        assert table.schema.field("rel").type == pa.string()
    t = {k: np.concatenate([c[k] for c in model.triples()]) for k in ("src", "rel", "dst")}
    assert np.array_equal(table["src"].to_numpy(), t["src"])
    assert np.array_equal(table["dst"].to_numpy(), t["dst"])
    assert table["rel"].to_pylist() == [f"r{r}" for r in t["rel"]]


def test_text_layout_has_no_header(tmp_path):
    write_edges(iter(_grid_chunks()), tmp_path / "g.tsv")
    first = (tmp_path / "g.tsv").read_text().splitlines()[0].split("\t")
    assert len(first) == 3 and first[0].isdigit() and first[1].isdigit()
    model = knowledge_graph(100, 50, relations=3, seed=1)
    write_edges(model.triples(), tmp_path / "k.csv", rel_names=model.relation_names)
    head, rel, tail = (tmp_path / "k.csv").read_text().splitlines()[0].split(",")
    assert rel.startswith("r") and head.isdigit() and tail.isdigit()


def test_gzip_output_is_reproducible(tmp_path):
    for name in ("a.tsv.gz", "b.tsv.gz"):
        write_edges(iter(_grid_chunks()), tmp_path / name)
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()
    assert gzip.decompress((tmp_path / "a.tsv.gz").read_bytes()).count(b"\n") == 300


def test_node_table_schema_and_values(tmp_path):
    model = sbm(500, 1000, features=8, seed=3)
    path = node_table_path(tmp_path / "s.tsv.gz")
    assert path == tmp_path / "s.nodes.parquet"
    assert write_nodes(model.nodes(chunk_nodes=128), path, features=8) == 500
    table = pq.read_table(path)
    assert table.column_names == ["id", "label", "feat", "train_mask", "val_mask", "test_mask"]
    assert table.schema.field("feat").type == pa.list_(pa.float32(), 8)
    nodes = next(model.nodes())
    feat = np.stack(table["feat"].to_numpy(zero_copy_only=False))
    assert np.array_equal(feat, nodes["feat"])
    assert np.array_equal(table["label"].to_numpy(), nodes["label"])
    assert np.array_equal(table["val_mask"].to_numpy(), nodes["val_mask"])


def test_split_files(tmp_path):
    model = knowledge_graph(300, 2000, relations=4, seed=5)
    paths = split_paths(tmp_path / "kg.parquet")
    assert [p.name for p in paths.values()] == ["kg.train.parquet", "kg.valid.parquet",
                                                "kg.test.parquet"]
    rows = write_split_edges(model.split((0.8, 0.1, 0.1)), paths,
                             edge_schema(paths["train"], rel=True), rel_names=model.relation_names)
    assert sum(rows.values()) == 2000
    assert {k: pq.read_table(p).num_rows for k, p in paths.items()} == rows


def _failing(chunks, after):
    for i, chunk in enumerate(chunks):
        if i == after:
            raise RuntimeError("generator broke")
        yield chunk


@pytest.mark.parametrize("ext", [".tsv", ".tsv.gz", ".parquet", ".arrow"])
def test_failure_leaves_no_file(tmp_path, ext):
    with pytest.raises(RuntimeError, match="generator broke"):
        write_edges(_failing(_grid_chunks(), after=3), tmp_path / f"g{ext}")
    assert os.listdir(tmp_path) == []


def test_interrupt_does_not_wait_for_a_slow_generator(tmp_path):
    # Ctrl-C while the generator is inside a long draw (a grid over many sparse RNG blocks):
    # the write is abandoned at once, not after the generator's next chunk
    import threading

    release, resumed = threading.Event(), threading.Event()

    def slow():
        yield _grid_chunks()[0]
        release.wait(30)           # the draw: ends when released, or after 30 s
        resumed.set()
        yield _grid_chunks()[1]

    def interrupt(_rows):
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            write_edges(slow(), tmp_path / "g.parquet", progress=interrupt)
        assert not resumed.is_set()  # the error came while the draw still ran
        assert os.listdir(tmp_path) == []
    finally:
        release.set()


def test_failure_keeps_the_previous_file(tmp_path):
    path = tmp_path / "g.parquet"
    write_edges(iter(_grid_chunks()), path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        write_edges(_failing(_grid_chunks(), after=2), path, overwrite=True)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["g.parquet"]


def test_a_file_another_generate_wrote_meanwhile_is_kept(tmp_path):
    """Two generates to one new --out at once: the second renamed over the first's file."""
    path = tmp_path / "g.tsv"

    def progress(rows):   # after a chunk is written (not from the generator, which a
        if not path.exists():   # thread pulls ahead, maybe before the output is checked)
            path.write_text("theirs\n")         # the other generate committed first

    with pytest.raises(GraphsysError, match="was created by another process while this one "
                                            "wrote; nothing written"):
        write_edges(iter(_grid_chunks()[:2]), path, progress=progress)
    assert path.read_text() == "theirs\n" and os.listdir(tmp_path) == ["g.tsv"]


def test_failed_split_writes_nothing(tmp_path):
    model = knowledge_graph(300, 2000, relations=4, seed=5)
    paths = split_paths(tmp_path / "kg.tsv")
    with pytest.raises(RuntimeError):
        write_split_edges(_failing(model.split((0.8, 0.1, 0.1)), after=2), paths,
                          edge_schema(paths["train"], rel=True), rel_names=model.relation_names)
    assert os.listdir(tmp_path) == []


def test_split_without_a_file_is_refused(tmp_path):
    # a chunk labelled with a split that paths does not name raised a raw KeyError
    paths = split_paths(tmp_path / "g.tsv", ("train", "test"))
    chunk = {"src": np.array([0]), "dst": np.array([1])}
    with pytest.raises(GraphsysError, match=r"split 'valid', which has no file \(splits: "
                                            r"train, test\)"):
        write_split_edges([("train", chunk), ("valid", chunk)], paths,
                          edge_schema(paths["train"]))
    assert os.listdir(tmp_path) == []


def test_refuses_to_overwrite_and_bad_paths(tmp_path):
    path = tmp_path / "g.tsv"
    write_edges(iter(_grid_chunks()), path)
    with pytest.raises(GraphsysError, match="already exists"):
        write_edges(iter(_grid_chunks()), path)
    assert write_edges(iter(_grid_chunks()[:1]), path, overwrite=True) == 64
    with pytest.raises(GraphsysError, match="unknown output extension"):
        write_edges(iter(_grid_chunks()), tmp_path / "g.txt")
    with pytest.raises(GraphsysError, match="does not exist"):
        write_edges(iter(_grid_chunks()), tmp_path / "missing" / "g.tsv")
    with pytest.raises(GraphsysError, match="unknown output extension"):
        write_edges(iter(_grid_chunks()), tmp_path / ".tsv")
