"""Issue 13, defect 1: a diverged or corrupted model never scores as a good one.

Training stops with one line at the first non-finite loss or parameter and keeps the last
good checkpoint; every file of a checkpoint carries a sha256 checked on load and resume;
eval / nearest / score / export refuse non-finite embeddings; ranking puts NaN last."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from graphsys import open_graph
from graphsys.embed import Embeddings, evaluate, load_config, train
from graphsys.embed.checkpoint import CheckpointStorage
from graphsys.errors import FormatError, GraphsysError
from graphsys.ranking import ranks


def _train(kg, small, out, *extra, epochs=2):
    return train(kg, load_config(None, small + [f"num_epochs={epochs}", *extra]),
                 edges="train", out=out).embeddings


def test_divergence_stops_training_and_keeps_the_last_good_version(kg4, small, tmp_path):
    out = tmp_path / "ck"
    with pytest.raises(GraphsysError, match=r"training diverged: ") as exc:
        _train(kg4, small, out, "lr=1e30", "checkpoint_buckets=true", epochs=3)
    message = str(exc.value)
    assert "\n" not in message and ("bucket (" in message or "partition" in message)
    meta = json.loads((out / "checkpoint.json").read_text())
    assert f"keeps version {meta['version']}," in message
    emb = Embeddings.load(out)  # the last good version loads, checksums and all
    assert np.isfinite(emb.to_numpy()).all()
    versions = {int(p.name.split(".v")[1][:6]) for p in out.rglob("*.npy")}
    assert versions == {meta["version"]}  # no orphan files of the failed version


def test_divergence_from_scratch_commits_nothing_non_finite(kg1, small, tmp_path):
    out = tmp_path / "ck"
    with pytest.raises(GraphsysError, match="training diverged"):
        _train(kg1, small, out, "lr=1e30", "init_scale=1e10", epochs=2)
    assert json.loads((out / "checkpoint.json").read_text())["version"] == 0
    assert {int(p.name.split(".v")[1][:6]) for p in out.rglob("*.npy")} == {0}   # no orphans


def _flip_to_nan(path):
    """Overwrite the first float32 of an .npy file's data with NaN (4 bytes)."""
    raw = bytearray(path.read_bytes())
    header = raw.index(b"\n") + 1  # the .npy header ends with a newline
    raw[header:header + 4] = np.float32(np.nan).tobytes()
    path.write_bytes(bytes(raw))


@pytest.fixture(scope="module")
def trained(kg1, tmp_path_factory):
    from .conftest import SMALL

    out = tmp_path_factory.mktemp("trained") / "ck"
    train(kg1, load_config(None, SMALL + ["num_epochs=2"]), edges="train", out=out)
    return out


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_flipped_embedding_byte_is_refused_on_load_and_resume(trained, kg1, small, tmp_path):
    ck = _copy(trained, tmp_path / "ck")
    st = CheckpointStorage(ck)
    version = json.loads((ck / "checkpoint.json").read_text())["version"]
    _flip_to_nan(st.emb_path("node", 0, version))
    with pytest.raises(FormatError, match=r"part-00000.*sha256 mismatch"):
        Embeddings.load(ck)
    with pytest.raises(FormatError, match="sha256 mismatch"):
        _train(kg1, small, ck, epochs=3)  # resume


def test_a_huge_file_is_refused_before_it_is_hashed(trained, tmp_path):
    """A sparse terabyte in place of an optimiser file was hashed through (hours) before
    its sha256 refused it; its .npy header is read first."""
    ck = _copy(trained, tmp_path / "ck")
    version = json.loads((ck / "checkpoint.json").read_text())["version"]
    f = CheckpointStorage(ck).optim_path("node", 0, version)
    with open(f, "r+b") as out:
        out.truncate(1 << 40)
    with pytest.raises(FormatError, match=r"part-00000.*1,099,511,627,776 bytes, its header"):
        Embeddings.load(ck)


def test_non_finite_embeddings_are_refused_even_with_matching_hashes(trained, tmp_path):
    ck = _copy(trained, tmp_path / "ck")
    st = CheckpointStorage(ck)
    meta = st.read_meta()
    _flip_to_nan(st.emb_path("node", 0, meta["version"]))
    st.write_meta({k: v for k, v in meta.items() if k not in ("format", "format_version")})
    emb = Embeddings.load(ck)
    for call in (lambda: evaluate(emb, open_graph(emb.meta["graph"]), "test"),
                 lambda: emb.nearest("e1", k=3),
                 lambda: emb.score("e1", "r0", "e2"),
                 lambda: emb.export_tsv(tmp_path / "e.tsv"),
                 lambda: emb.export_numpy(tmp_path / "np")):
        with pytest.raises(FormatError, match="non-finite embedding"):
            call()
    assert not (tmp_path / "e.tsv").exists()


@pytest.mark.parametrize("table, edit, match", [
    ("", lambda a: np.zeros((a.shape[0], a.shape[1] + 1), np.float32),
     r"\(4, 17\), expected float32 \(4, 16\)"),
    ("", lambda a: np.ones((a.shape[0] + 3, a.shape[1]), np.float32), r"\(7, 16\), expected"),
    ("", lambda a: a.astype(np.float64), "float64"),
    ("", lambda a: a.ravel(), r"float32 \(\d+,\), expected"),
    (".adagrad", lambda a: -np.ones_like(a), "negative Adagrad sum"),
])
def test_relation_tables_of_another_shape_are_refused_even_with_matching_hashes(
        trained, kg1, small, tmp_path, table, edit, match):
    # a wider, shorter or 1-D table raised raw torch errors when scoring, an extra row was
    # read silently, float64 failed in training, a negative Adagrad sum made the step NaN
    ck = _copy(trained, tmp_path / "ck")
    st = CheckpointStorage(ck)
    meta = st.read_meta()
    path = st.model_path(f"lhs.g0.real{table}", meta["version"])
    arr = edit(np.load(path))
    path.unlink()
    np.save(path, arr)
    st.write_meta({k: v for k, v in meta.items() if k not in ("format", "format_version")})
    calls = [lambda: _train(kg1, small, ck, epochs=3)]   # resume reads the Adagrad sums
    if not table:
        calls.append(lambda: Embeddings.load(ck))
    for call in calls:
        with pytest.raises(FormatError, match=f"lhs.g0.real{table}.*{match}"):
            call()


@pytest.mark.parametrize("value", [-1.0, float("nan")])
def test_entity_adagrad_sums_negative_or_nan_are_refused_on_resume(trained, kg1, small,
                                                                   tmp_path, value):
    # with the checksum rewritten, sums of -1 resumed and trained a finite, wrong model
    # (the numba step takes the square root of the sum), and NaN sums were reported as a
    # divergence of the run ('lower lr or init_scale?')
    ck = _copy(trained, tmp_path / "ck")
    st = CheckpointStorage(ck)
    meta = st.read_meta()
    path = st.optim_path("node", 0, meta["version"])
    arr = np.load(path)
    arr[0] = value
    path.unlink()
    np.save(path, arr)
    st.write_meta({k: v for k, v in meta.items() if k not in ("format", "format_version")})
    with pytest.raises(FormatError, match="part-00000.*: a negative or NaN Adagrad sum"):
        _train(kg1, small, ck, epochs=3)


def test_non_finite_embeddings_are_refused_on_resume(trained, kg1, small, tmp_path):
    # with the checksum rewritten, the resumed run stopped as its own divergence ('lower lr
    # or init_scale?') and called the version holding the NaN 'the last good one'
    ck = _copy(trained, tmp_path / "ck")
    st = CheckpointStorage(ck)
    meta = st.read_meta()
    _flip_to_nan(st.emb_path("node", 0, meta["version"]))
    st.write_meta({k: v for k, v in meta.items() if k not in ("format", "format_version")})
    with pytest.raises(FormatError, match="part-00000.*: a non-finite embedding"):
        _train(kg1, small, ck, epochs=3)


def test_missing_checksums_are_refused(trained, tmp_path):
    ck = _copy(trained, tmp_path / "ck")
    meta = json.loads((ck / "checkpoint.json").read_text())
    del meta["files"]
    (ck / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(FormatError, match="no file checksums"):
        Embeddings.load(ck)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.pop("epochs_done"), "field 'epochs_done' must be a JSON integer"),
    (lambda m: m.update(dimension=m["dimension"] + 1), r"part-00000.*float32 \(\d+, \d+\)"),
    (lambda m: m.update(dimension=m["dimension"] + 2), "do not match a model|"
                                                       r"part-00000.*float32 \(\d+, \d+\)"),
    (lambda m: m["stats"][0]["ranks"][0].update(bytes_writuen=1), "field 'stats' is malformed"),
    (lambda m: m["entity_types"]["node"].update(partition_sizes="12"),
     "field 'entity_types.node.partition_sizes' must be a list of node counts"),
    (lambda m: m.update(relations=[{"name": 3}]), r"field 'relations\[0\]'"),
    (lambda m: m.pop("relations"), "checkpoint.json: its model fields.*'relations'"),
    # every graph has a relation type: [] passed the load and evaluate raised IndexError
    (lambda m: m.update(relations=[]), "checkpoint.json: its model fields.*no relations"),
    # found by a field-by-field sweep: a KeyError, NumPy's 'negative dimensions' error and
    # a 3.6 TiB allocation from the claimed dimension, each before any check
    (lambda m: m.pop("graph"), "checkpoint.json: field 'graph' is missing"),
    (lambda m: m.update(dimension=-1), "field 'dimension' must be a positive integer"),
    (lambda m: m.update(dimension=10 ** 12), r"part-00000.*float32 \(\d+, 1000000000000\)"),
    # read by a resumed run only, and unchecked: TypeError or ValueError there
    (lambda m: m.update(progress={"stats": m["stats"][0], "buckets_done": [[0, 0, 1]]}),
     r"field 'progress' is malformed \(buckets_done must be a list of \[i, j\] buckets\)"),
    (lambda m: m.update(progress=3), "field 'progress' is malformed"),
    (lambda m: m.update(grown_from={"version": 1}), "field 'grown_from' must give"),
])
def test_edited_checkpoint_json_is_refused_in_one_line(trained, tmp_path, edit, match):
    """checkpoint.json has no checksum of its own: an edited (or fuzzed) field a reader
    indexes is refused naming the file, not a KeyError, TypeError or shape error deep in a
    reader (found by fuzzing with fresh random cases)."""
    ck = _copy(trained, tmp_path / "ck")
    meta = json.loads((ck / "checkpoint.json").read_text())
    edit(meta)
    (ck / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(FormatError, match=match) as exc:
        Embeddings.load(ck).nearest("e1", k=3)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("name, edit, match", [
    ("checkpoint.json", lambda m: m.update(comparator="cos"),
     "comparator is 'cos', its config.json says 'dot'"),
    ("config.json", lambda m: m.update(comparator="cos"),
     "comparator is 'dot', its config.json says 'cos'"),
    ("config.json", lambda m: m.update(relations=[{"name": "r1", "operator": "diagonal"}]),
     r"relations\[\]\.operator is \['complex_diagonal', .*'diagonal'"),
])
def test_model_fields_of_checkpoint_and_config_json_must_agree(trained, kg1, small, tmp_path,
                                                               name, edit, match):
    """checkpoint.json's comparator was edited to cos: evaluate scored by cos and reported
    MRR 0.087 for a model trained with dot (0.097), while a resumed run trained with
    config.json's dot. The two files' model fields are checked against each other."""
    ck = _copy(trained, tmp_path / "ck")
    raw = json.loads((ck / name).read_text())
    edit(raw)
    (ck / name).write_text(json.dumps(raw))
    with pytest.raises(FormatError, match=match):
        Embeddings.load(ck)
    with pytest.raises(FormatError, match=match):
        _train(kg1, small, ck, epochs=3)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m["stats"][0].update(seconds="x"), r"field 'stats' is malformed \(seconds is"),
    (lambda m: m["stats"][0]["ranks"][0].update(wait_seconds=None),
     r"field 'stats' is malformed \(wait_seconds is None, not a number\)"),
    (lambda m: m.update(stats=None), None),
    (lambda m: m.update(history=None), None),
])
def test_edited_stats_and_history_resume_or_are_refused_in_one_line(trained, kg1, small,
                                                                    tmp_path, edit, match):
    """A figure of ``stats`` that is not a number passed the load checks and broke the
    resumed run's commit (TypeError in round()); ``stats`` or ``history`` null broke its
    start (TypeError: not iterable). A field-by-field sweep found both."""
    ck = _copy(trained, tmp_path / "ck")
    meta = json.loads((ck / "checkpoint.json").read_text())
    edit(meta)
    (ck / "checkpoint.json").write_text(json.dumps(meta))
    if match is None:       # null: read as absent
        _train(kg1, small, ck, epochs=3)
        return
    with pytest.raises(FormatError, match=match) as exc:
        _train(kg1, small, ck, epochs=3)
    assert "\n" not in str(exc.value)


def test_nan_ranks_worst_never_best():
    scores = torch.tensor([[0.5, 0.2, float("nan")], [float("nan")] * 3])
    pos = torch.tensor([0.3, float("nan")])
    got = ranks(pos, scores)
    assert got[0] == 2.0  # only 0.5 is better; the NaN candidate is below everything
    assert got[1] == 4.0  # a NaN positive is last among 3 candidates, not first
