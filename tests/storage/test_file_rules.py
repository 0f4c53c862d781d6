"""The file rules of checkpoint, run and embedding directories (graphsys.storage.file_rules):
regular files inside the directory only, sizes checked before reading, nothing blocks."""

from __future__ import annotations

import json
import os
import re
import signal

import numpy as np
import pytest

from graphsys.errors import FormatError
from graphsys.storage import file_rules
from graphsys.storage.identity import check_nodes, check_record, node_record


@pytest.fixture(autouse=True)
def _never_hangs():
    """A read that blocks (a FIFO opened without O_NONBLOCK) fails the test, not CI."""
    def stuck(*_):
        raise AssertionError("a read blocked")
    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def d(tmp_path):
    root = tmp_path / "ck"
    root.mkdir()
    np.save(root / "a.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    (root / "meta.json").write_text(json.dumps({"x": 1}))
    return root


def test_regular_files_inside_are_read(d):
    np.testing.assert_array_equal(file_rules.load_npy(d, "a.npy"),
                                  np.arange(12, dtype=np.float32).reshape(3, 4))
    mapped = file_rules.load_npy(d, d / "a.npy", mmap=True, shape=(3, 4), dtype="float32")
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable
    assert file_rules.read_json(d, "meta.json") == {"x": 1}
    os.symlink("a.npy", d / "in.npy")                # a symlink that stays inside
    assert file_rules.load_npy(d, "in.npy").shape == (3, 4)
    np.save(d / "f.npy", np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_array_equal(file_rules.load_npy(d, "f.npy"),
                                  np.arange(6.0).reshape(2, 3))
    np.save(d / "e.npy", np.zeros((0, 4), np.float32))
    assert file_rules.load_npy(d, "e.npy", mmap=True).shape == (0, 4)


def _fifo(d, name):
    os.mkfifo(d / name)


def _dev_zero(d, name):
    os.symlink("/dev/zero", d / name)


def _outside(d, name):
    # a byte-identical copy outside the directory: still refused, whatever it holds
    (d.parent / "elsewhere.npy").write_bytes((d / "a.npy").read_bytes())
    os.symlink(d.parent / "elsewhere.npy", d / name)


def _truncated(d, name):
    (d / name).write_bytes((d / "a.npy").read_bytes()[:-5])


def _extended(d, name):
    (d / name).write_bytes((d / "a.npy").read_bytes() + b"\0" * 7)


def _pickled(d, name):
    np.save(d / name, np.array([1, "a"], dtype=object), allow_pickle=True)


def _directory(d, name):
    (d / name).mkdir()


def _bad_header(d, name):
    (d / name).write_bytes(b"\x93NUMPY\x09\x00" + b"x" * 40)


@pytest.mark.parametrize("make, says", [
    (_fifo, "not a regular file (a FIFO)"),
    (_dev_zero, "resolves outside"),
    (_outside, "resolves outside"),
    (_truncated, "truncated or extended"),
    (_extended, "truncated or extended"),
    (_pickled, "never unpickled"),
    (_directory, "not a regular file (a directory)"),
    (_bad_header, "not a NumPy .npy file"),
])
def test_hostile_npy_files_are_refused_in_one_line(d, make, says):
    make(d, "x.npy")
    for mmap in (False, True):
        with pytest.raises(FormatError, match=re.escape(says)) as err:
            file_rules.load_npy(d, "x.npy", mmap=mmap)
        assert "\n" not in str(err.value) and "x.npy" in str(err.value)


@pytest.mark.parametrize("rel", ["../a.npy", "/etc/passwd", "", "a//b.npy", "./a.npy",
                                 "a\\b.npy", 7])
def test_paths_that_leave_the_directory_are_refused(d, rel):
    with pytest.raises(FormatError, match="not a path"):
        file_rules.inside(d, rel, source="meta.json", field="files")


def test_the_metadata_shape_and_dtype_are_checked_before_reading(d):
    with pytest.raises(FormatError, match=r"holds float32 \(3, 4\), its metadata says "
                                          r"float32 \(4, 3\)"):
        file_rules.load_npy(d, "a.npy", shape=(4, 3))
    with pytest.raises(FormatError, match="metadata says float64"):
        file_rules.load_npy(d, "a.npy", dtype=np.float64)
    digest = file_rules.sha256(d, "a.npy")
    assert file_rules.load_npy(d, "a.npy", sha256=digest).shape == (3, 4)
    for mmap in (False, True):
        with pytest.raises(FormatError, match="sha256 mismatch"):
            file_rules.load_npy(d, "a.npy", sha256="0" * 64, mmap=mmap)


def test_json_is_bounded_and_regular(d):
    (d / "big.json").write_text(" " * 100 + "{}")
    with pytest.raises(FormatError, match="more than the 50 such a file may hold"):
        file_rules.read_json(d, "big.json", max_bytes=50)
    _fifo(d, "fifo.json")
    with pytest.raises(FormatError, match="FIFO"):
        file_rules.read_json(d, "fifo.json")
    (d / "bad.json").write_bytes(b"\xff{")
    with pytest.raises(FormatError, match="unreadable JSON"):
        file_rules.read_json(d, "bad.json")
    with pytest.raises(file_rules.MissingFile, match="missing"):
        file_rules.read_json(d, "none.json")


def test_check_tree_refuses_what_a_writer_would_follow_or_block_on(d):
    file_rules.check_tree(d)
    file_rules.check_tree(d.parent / "missing")          # nothing there yet: fine
    os.symlink(d, d.parent / "link")                     # the directory itself may be one
    file_rules.check_tree(d.parent / "link")
    (d / "sub").mkdir()
    os.symlink("/tmp", d / "sub" / "out")
    with pytest.raises(FormatError, match=r"sub/out: a symlink in the run directory"):
        file_rules.check_tree(d, what="run directory")
    os.unlink(d / "sub" / "out")
    _fifo(d, "metrics.jsonl")
    with pytest.raises(FormatError, match="metrics.jsonl: a FIFO"):
        file_rules.check_tree(d)
    (d.parent / "file").write_text("x")
    with pytest.raises(FormatError, match="not a directory"):
        file_rules.check_tree(d.parent / "file")


def test_node_records_tell_partitionings_and_id_orders_apart(tmp_path):
    import graphsys

    src, dst = [10, 20, 30, 40, 50], [20, 30, 40, 50, 10]
    a = graphsys.from_numpy(src, dst, tmp_path / "a", partitions=2)
    same = graphsys.from_numpy(src, dst, tmp_path / "same", partitions=2)
    other = graphsys.from_numpy(src, dst, tmp_path / "other", partitions=3)
    shifted = graphsys.from_numpy([x + 3 for x in src], [x + 3 for x in dst],
                                  tmp_path / "shifted", partitions=2)
    record = node_record(a)
    assert list(shifted.partition_sizes("node")) == record["node"]["partition_sizes"]
    check_record(record, "ck")
    check_nodes(record, same, "ck")
    for g, says in ((other, "partitions"), (shifted, "other ids")):
        with pytest.raises(Exception, match=says) as err:
            check_nodes(record, g, "ck")
        assert "\n" not in str(err.value)
    with pytest.raises(FormatError, match="id_digests"):
        check_record({"node": {"partition_sizes": [1], "id_digests": []}}, "ck")
