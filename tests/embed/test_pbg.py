"""PyTorch-BigGraph import: configs (JSON and literal-only .py) and checkpoints (HDF5).

The fixture writer below reproduces PBG 1.0.0's ``FileCheckpointStorage`` layout as checked
against real checkpoints trained by PBG 1.0.0 (attrs, dataset paths and shapes, the
optimizer blob as a ``|V1`` dataset, entity name/count files with PBG's JSON indent). The
embeddings files' optimizer blob is made by ``torch.save`` of a RowAdagrad state dict, as PBG
writes it (a zip: ``archive/data.pkl``, ``archive/byteorder``, one storage
``archive/data/0`` of n float32); the model file's is bytes that are not a pickle at all.
"""

from __future__ import annotations

import io
import json
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from graphsys import open_graph
from graphsys.embed import Embeddings, load_config, train
from graphsys.embed.interop.pbg_checkpoint import import_pbg_checkpoint
from graphsys.embed.interop.pbg_config import import_pbg_config
from graphsys.errors import ConfigError, FormatError, GraphsysError
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

h5py = pytest.importorskip("h5py")

# =============================================================================================
# A PBG 1.0.0 checkpoint writer (the layout of torchbiggraph.checkpoint_storage)


def pbg_config(**kw) -> dict:
    """A config as PBG 1.0.0 dumps it into ``config.json`` (every key, PBG's defaults)."""
    cfg = {
        "entities": {"all": {"num_partitions": 1, "featurized": False}},
        "relations": [{"name": "all_edges", "lhs": "all", "rhs": "all", "weight": 1.0,
                       "operator": "complex_diagonal", "all_negs": False}],
        "dimension": 16, "init_scale": 0.001, "max_norm": None, "global_emb": False,
        "comparator": "dot", "bias": False, "loss_fn": "softmax", "margin": 0.1,
        "entity_path": "/data/pbg", "edge_paths": ["/data/pbg-edges/train"],
        "checkpoint_path": "/data/pbg-ckpt", "init_path": None,
        "checkpoint_preservation_interval": None, "num_epochs": 2, "num_edge_chunks": None,
        "max_edges_per_chunk": 1000000000, "bucket_order": "inside_out", "workers": 1,
        "batch_size": 100, "num_batch_negs": 10, "num_uniform_negs": 20,
        "disable_lhs_negs": False, "disable_rhs_negs": False, "lr": 0.1, "relation_lr": None,
        "eval_fraction": 0.0, "eval_num_batch_negs": 1000, "eval_num_uniform_negs": 1000,
        "background_io": False, "verbose": 0, "hogwild_delay": 2.0, "dynamic_relations": True,
        "num_machines": 1, "num_partition_servers": -1, "distributed_init_method": None,
        "distributed_tree_init_order": True,
    }
    cfg.update(kw)
    return cfg


def _attrs(hf, config: dict, epoch_idx: int) -> None:
    hf.attrs["format_version"] = 1
    hf.attrs["config/json"] = json.dumps(config, indent=4)
    hf.attrs["iteration/epoch_idx"] = epoch_idx
    hf.attrs["iteration/edge_path_idx"] = 0
    hf.attrs["iteration/edge_path"] = config["edge_paths"][0]
    hf.attrs["iteration/num_edge_paths"] = 1
    hf.attrs["iteration/edge_chunk_idx"] = 0
    hf.attrs["iteration/num_edge_chunks"] = 1
    hf.attrs["iteration/num_epochs"] = config["num_epochs"]


GARBAGE = b"\x80\x04PBG optimizer state: graphsys must never unpickle this"


def _opaque(hf, blob: bytes = GARBAGE) -> None:
    """An ``optimizer/state_dict`` dataset as PBG writes it (``np.frombuffer(.., "V1")``);
    by default bytes that are not a pickle at all."""
    hf.create_dataset("optimizer/state_dict", data=np.frombuffer(blob, dtype=np.dtype("V1")))


def torch_save(obj) -> bytes:
    """``torchbiggraph.checkpoint_manager.serialize_optim_state``."""
    import torch

    bf = io.BytesIO()
    torch.save(obj, bf)
    return bf.getvalue()


def row_adagrad_blob(sums: np.ndarray) -> bytes:
    """The blob PBG 1.0.0 saves for one partition: ``RowAdagrad(...).state_dict()``."""
    import torch

    return torch_save({"state": {0: {"step": 0, "sum": torch.from_numpy(
                           np.asarray(sums, np.float32).copy())}},
                       "param_groups": [{"lr": 0.1, "lr_decay": 0, "weight_decay": 0,
                                         "params": [0]}]})


def default_sums(emb: np.ndarray) -> np.ndarray:
    """Adagrad sums of a fixture partition (distinct, positive, deterministic)."""
    return (emb.astype(np.float64) ** 2).mean(1).astype(np.float32) + 0.5


def write_pbg(root: Path, config: dict, names: dict[str, list[list[str]]],
              embeddings: dict[str, list[np.ndarray]], params: dict[str, np.ndarray],
              *, version: int = 2, dynamic_names: list[str] | None = None,
              sums: dict[str, list[np.ndarray]] | None = None) -> tuple[Path, Path]:
    """PBG checkpoint ``root/ckpt`` and entity path ``root/data``. ``params``: public model
    names (``relations/0/operator/lhs/real``, ``entities/all/global_embedding``) -> arrays.
    ``sums``: each partition's RowAdagrad sums (default :func:`default_sums`)."""
    ckpt, data = root / "ckpt", root / "data"
    ckpt.mkdir(parents=True)
    data.mkdir(parents=True)
    (ckpt / "checkpoint_version.txt").write_text(f"{version}\n")
    (ckpt / "config.json").write_text(json.dumps(config, indent=4))
    for ent, parts in names.items():
        for p, part in enumerate(parts):
            (data / f"entity_count_{ent}_{p}.txt").write_text(f"{len(part)}\n")
            (data / f"entity_names_{ent}_{p}.json").write_text(json.dumps(part, indent=4))
            with h5py.File(ckpt / f"embeddings_{ent}_{p}.v{version}.h5", "w") as hf:
                _attrs(hf, config, version - 1)
                hf.create_dataset("embeddings", data=embeddings[ent][p].astype(np.float32))
                part_sums = (sums[ent][p] if sums is not None
                             else default_sums(embeddings[ent][p]))
                _opaque(hf, row_adagrad_blob(part_sums))
    if dynamic_names is not None:
        (data / "dynamic_rel_count.txt").write_text(str(len(dynamic_names)))
        (data / "dynamic_rel_names.json").write_text(json.dumps(dynamic_names, indent=4))
    with h5py.File(ckpt / f"model.v{version}.h5", "w") as hf:
        _attrs(hf, config, version - 1)
        g = hf.create_group("model", track_order=True)
        for public, arr in params.items():
            ds = g.create_dataset(public, data=arr.astype(np.float32))
            ds.attrs["state_dict_key"] = public.replace("relations/", "").replace("/", ".")
        _opaque(hf)
    return ckpt, data


def _complex(x: np.ndarray, re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """PBG's ComplexDiagonal(Dynamic)Operator on ``x`` = [real | imag] halves."""
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return np.concatenate([a * re - b * im, a * im + b * re], axis=-1)


# =============================================================================================
# Configs

PY_CONFIG = '''#!/usr/bin/env python3
"""A PBG config in the style of torchbiggraph/examples/configs/fb15k_config.py."""
raise RuntimeError("module code must never run")


def get_torchbiggraph_config():
    """Docstring."""
    entities = {"all": {"num_partitions": 1}}
    config = dict(
        # I/O data
        entity_path="data/FB15k",
        edge_paths=["data/FB15k/train_partitioned", "data/FB15k/valid_partitioned"],
        checkpoint_path="model/fb15k",
        entities=entities,
        relations=[{"name": "all_edges", "lhs": "all", "rhs": "all",
                    "operator": "complex_diagonal"}],
        dynamic_relations=True,
        dimension=400,
        global_emb=False,
        comparator="dot",
        num_epochs=50,
        num_uniform_negs=1000,
        loss_fn="softmax",
        lr=0.1,
        margin=-0.0,
        eval_fraction=0,
    )
    return config
'''


def test_config_from_py_literal_and_json_agree(tmp_path):
    py = tmp_path / "fb15k_config.py"
    py.write_text(PY_CONFIG)
    a = import_pbg_config(py)
    c = a.config
    assert (c.dimension, c.operator, c.comparator, c.loss_fn, c.lr, c.num_epochs) == \
        (400, "complex_diagonal", "dot", "softmax", 0.1, 50)
    # absent keys take PBG's defaults, not graphsys's
    assert (c.num_uniform_negs, c.num_batch_negs, c.batch_size, c.init_scale) == \
        (1000, 50, 1000, 1e-3)
    assert a.dynamic_relations and not a.global_emb and c.relations == []
    assert set(a.ignored) == {"entity_path", "edge_paths", "checkpoint_path", "eval_fraction"}
    js = tmp_path / "config.json"
    # PBG's dump of the same config: every key, PBG's defaults for the absent ones
    js.write_text(json.dumps(pbg_config(**{**a.raw, "batch_size": 1000, "num_batch_negs": 50,
                                           "workers": None})))
    b = import_pbg_config(js)
    assert b.config.to_json() == c.to_json()
    assert "eval_num_batch_negs" in b.ignored and "hogwild_delay" in b.ignored


def test_static_config_maps_relations_and_reports(tmp_path):
    js = tmp_path / "c.json"
    js.write_text(json.dumps({
        "entities": {"user": {"num_partitions": 4}, "item": {"num_partitions": 4}},
        "relations": [{"name": "buys", "lhs": "user", "rhs": "item", "operator": "translation"},
                      {"name": "views", "lhs": "user", "rhs": "item", "operator": "translation",
                       "weight": 0.5},
                      {"name": "likes", "lhs": "user", "rhs": "item", "operator": "diagonal",
                       "all_negs": True}],
        "dimension": 32, "workers": None, "disable_rhs_negs": True}))
    a = import_pbg_config(js)
    assert a.config.operator == "translation"          # the most common operator
    assert [(r.name, r.operator, r.weight) for r in a.config.relations] == [
        ("buys", "translation", 1.0), ("views", "translation", 0.5), ("likes", "diagonal", 1.0)]
    assert a.config.entities["user"].num_partitions == 4
    assert a.config.workers == 1 and a.config.comparator == "cos"
    text = " ".join(a.warnings)
    assert "relations[2].all_negs" in text and "disable_rhs_negs" in text
    assert "global_emb" in text and "dynamic_relations" in text


@pytest.mark.parametrize("body, line, what", [
    ("    import os\n    return {}\n", 2, "Import statement"),
    ("    return dict(lr=compute())\n", 2, "'compute()' is not a literal"),
    ("    config = {'dimension': 8}\n    config['lr'] = 0.1\n    return config\n", 3,
     "assignment to config['lr']"),
    ("    return {'entity_path': os.environ['X']}\n", 2, "is not a literal"),
    ("    return {'entity_path': f'{1}'}\n", 2, "is not a literal"),
    ("    for k in range(3):\n        pass\n    return {}\n", 2, "For statement"),
    ("    return {**base}\n", 2, "dict unpacking"),
    ("    return [1, 2]\n", 2, "returns a list, not a dict"),
    ("    x = 1\n", 1, "no return statement"),
])
def test_py_config_with_code_is_refused_naming_the_line(tmp_path, body, line, what):
    py = tmp_path / "cfg.py"
    py.write_text("def get_torchbiggraph_config():\n" + body)
    with pytest.raises(ConfigError) as err:
        import_pbg_config(py)
    msg = str(err.value)
    assert msg.startswith(f"{py}:{line}: ") and what in msg and "\n" not in msg


def test_a_fifo_config_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "cfg.py")                       # read_text waited forever
    with pytest.raises(ConfigError, match="cannot read PBG config .not a regular file"):
        import_pbg_config(tmp_path / "cfg.py")
    with open(tmp_path / "huge.json", "wb") as f:        # read whole before it was parsed
        f.truncate(1 << 40)
    with pytest.raises(ConfigError, match="huge.json: cannot read PBG config .1,099,511,627,776"):
        import_pbg_config(tmp_path / "huge.json")


def test_py_config_without_the_function(tmp_path):
    py = tmp_path / "cfg.py"
    py.write_text("CONFIG = {'dimension': 8}\n")
    with pytest.raises(ConfigError, match="no get_torchbiggraph_config"):
        import_pbg_config(py)
    py.write_text("def get_torchbiggraph_config(:\n")
    with pytest.raises(ConfigError, match=r"cfg.py:1: invalid Python"):
        import_pbg_config(py)


@pytest.mark.parametrize("change, match", [
    ({"dimensoin": 8}, r"dimensoin: unknown PBG config key \(did you mean 'dimension'\?\)"),
    ({"lr": "fast"}, r"c.json: lr: must be a number, got 'fast'"),
    ({"comparator": "manhattan"}, r"comparator: unknown comparator 'manhattan'"),
    ({"dimension": 15}, r"dimension: complex_diagonal needs an even dimension"),
    ({"bias": True}, r"^.*c.json: bias: .*not supported"),
    ({"global_emb": "yes"}, r"global_emb: must be true or false"),
    ({"bucket_order": "sideways"}, r"bucket_order: must be one of"),
    ({"entities": {"all": {"num_partitions": 1, "featurized": True}}},
     r"entities.all.featurized: featurized entities are not supported"),
    ({"entities": {"all": {"num_partitions": 0}}}, r"entities.all.num_partitions: must be"),
    ({"relations": [{"name": "x", "lhs": "all", "rhs": "nope"}]},
     r"relations\[0\].rhs: unknown entity type 'nope'"),
    ({"relations": [{"name": "x", "lhs": "all", "rhs": "all", "operator": "rotate"}]},
     r"operator: unknown operator 'rotate'"),
    ({"relations": [{"name": "x", "lhs": "all", "rhs": "all", "wieght": 2}]},
     r"relations\[0\].wieght: unknown PBG relation key \(did you mean 'weight'\?\)"),
])
def test_unknown_and_bad_keys_name_the_key(tmp_path, change, match):
    js = tmp_path / "c.json"
    js.write_text(json.dumps(pbg_config(**change)))
    with pytest.raises(ConfigError, match=match):
        import_pbg_config(js)


def test_missing_dimension_and_bad_json(tmp_path):
    js = tmp_path / "c.json"
    raw = pbg_config()
    del raw["dimension"]
    js.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="dimension: required"):
        import_pbg_config(js)
    js.write_text("{\n  \"dimension\": ,\n}")
    with pytest.raises(ConfigError, match=r"c.json:2: invalid JSON"):
        import_pbg_config(js)


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_json_nested_past_the_stack_is_one_line(tmp_path, suffix):
    """A PBG config, a names file or a settings file nested 200,000 arrays deep raised
    RecursionError with a traceback; each is now one line naming the file."""
    from graphsys.config_values import read_config_file
    from graphsys.embed.interop.pbg_files import read_names

    deep = "[" * 200_000 + "]" * 200_000
    f = tmp_path / f"c{suffix}"
    f.write_text(deep if suffix == ".json" else f"a = {deep}")
    with pytest.raises(ConfigError, match=f"c\\{suffix}: invalid"):
        read_config_file(f)
    if suffix == ".json":
        with pytest.raises(ConfigError, match="c.json: invalid JSON"):
            import_pbg_config(f)
        with pytest.raises(FormatError, match="c.json: invalid JSON"):
            read_names(f, 100)


# =============================================================================================
# Checkpoints

DIM = 16
GONE = {"e5", "e17"}                           # graph entities PBG never saw
GHOSTS = ["ghost0", "ghost1"]                  # PBG entities the graph lacks
DYN_NAMES = ["r2", "r0", "r3", "ghostrel"]     # r1 missing in PBG; ghostrel not in the graph


def _split_names(seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    names = [f"e{i}" for i in range(200) if f"e{i}" not in GONE] + GHOSTS
    rng.shuffle(names)
    return [names[:90], names[90:]]


@pytest.fixture
def dyn_pbg(tmp_path):
    """A dynamic-relations ComplEx / dot PBG checkpoint over the planted KG's names."""
    rng = np.random.default_rng(1)
    names = _split_names(0)
    embs = [rng.normal(0, 0.5, (len(p), DIM)).astype(np.float32) for p in names]
    R, h = len(DYN_NAMES), DIM // 2
    params = {f"relations/0/operator/{side}/{k}": rng.normal(1 if k == "real" else 0, 0.5,
                                                            (R, h))
              for side in ("lhs", "rhs") for k in ("imag", "real")}
    cfg = pbg_config(entities={"all": {"num_partitions": 2, "featurized": False}})
    sums = [rng.uniform(0.1, 50, len(p)).astype(np.float32) for p in names]
    ckpt, data = write_pbg(tmp_path / "pbg", cfg, {"all": names}, {"all": embs}, params,
                           dynamic_names=DYN_NAMES, sums={"all": sums})
    return ckpt, data, names, embs, params, sums


def _row(names, embs, name):
    for part, e in zip(names, embs):
        if name in part:
            return e[part.index(name)]
    raise KeyError(name)


def _no_unpickling(monkeypatch) -> None:
    """Make every way to unpickle (pickle's and torch.load) fail the test."""
    import torch

    def no_unpickling(*a, **k):
        raise AssertionError("the importer unpickled something")

    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(pickle, "Unpickler", no_unpickling)
    monkeypatch.setattr(torch, "load", no_unpickling)
    monkeypatch.setattr(torch.serialization, "load", no_unpickling)


def _adagrad_by_id(out: Path, graph, version: int = 2) -> dict:
    """Node id -> the graphsys checkpoint's row-wise Adagrad sum (partitions in order)."""
    g = open_graph(graph)
    ids = g.node_ids("node")
    ids = ids.to_pylist() if hasattr(ids, "to_pylist") else list(ids)
    parts = sorted((out / "optim" / "node").glob(f"part-*.v{version:06d}.npy"))
    vals = np.concatenate([np.load(f, allow_pickle=False) for f in parts])
    assert len(vals) == len(ids)
    return dict(zip(ids, vals.tolist()))


def test_import_dynamic_checkpoint_vectors_and_scores(kg4, dyn_pbg, tmp_path, monkeypatch):
    ckpt, data, names, embs, params, _ = dyn_pbg
    _no_unpickling(monkeypatch)
    out = tmp_path / "gs"
    rep = import_pbg_checkpoint(ckpt, data, kg4, out)
    st = rep.entities["node"]
    assert (st["pbg_type"], st["graph_nodes"], st["imported"], st["fresh_init"]) == \
        ("all", 200, 198, 2)
    assert (st["pbg_rows"], st["pbg_not_in_graph"]) == (200, 2)
    assert (st["adagrad_recovered"], st["adagrad_restarted"]) == (2, 0)
    assert sorted(st["examples_not_in_graph"]) == GHOSTS
    assert rep.relations["fresh_init"] == ["r1"]
    assert rep.relations["pbg_not_in_graph"] == ["ghostrel"]
    assert rep.epochs_done == 2 and rep.pbg_version == 2
    assert "entity_path" in rep.ignored_keys and "optimizer" not in rep.ignored_keys
    meta = json.loads((out / "checkpoint.json").read_text())
    assert meta["version"] == meta["epochs_done"] == 2

    emb = Embeddings.load(out)
    ids = [f"e{i}" for i in range(200) if f"e{i}" not in GONE]
    want = np.stack([_row(names, embs, n) for n in ids])
    np.testing.assert_array_equal(emb.vectors(ids), want)
    fresh = emb.vectors(sorted(GONE))
    assert np.abs(fresh).max() < 0.01              # N(0, init_scale) rows

    # tail scores = PBG's c(lhs_op_r(u), v); head scores = c(u, rhs_op_r(v))
    import torch

    triples = [("e1", "r0", "e9"), ("e40", "r2", "e77"), ("e199", "r3", "e0"),
               ("e3", "r0", "e150")]
    for h, r, t in triples:
        k = DYN_NAMES.index(r)
        u, v = _row(names, embs, h), _row(names, embs, t)
        lhs = _complex(u, params["relations/0/operator/lhs/real"][k],
                       params["relations/0/operator/lhs/imag"][k])
        assert emb.score(h, r, t) == pytest.approx(float(lhs @ v), rel=1e-5, abs=1e-5)
        rhs = _complex(v, params["relations/0/operator/rhs/real"][k],
                       params["relations/0/operator/rhs/imag"][k])
        q = emb.relmodel.apply("lhs", torch.from_numpy(v[None]),
                               torch.tensor([emb.relation_names.index(r)]))
        assert float(q[0] @ torch.from_numpy(u)) == pytest.approx(float(u @ rhs), rel=1e-5,
                                                                  abs=1e-5)
    # r1 was not in PBG: identity ComplEx params
    p = emb.relmodel.relation_params(emb.relation_names.index("r1"))
    assert np.all(p["rhs"]["real"] == 1) and np.all(p["rhs"]["imag"] == 0)


def test_adagrad_sums_recovered_row_by_row_without_unpickling(kg4, dyn_pbg, tmp_path,
                                                              monkeypatch):
    """PBG's RowAdagrad sums (mean of squared grads, as graphsys's) land on the same rows as
    the embeddings, across the differing partitionings; nodes PBG lacks start at 0."""
    ckpt, data, names, _, _, sums = dyn_pbg
    _no_unpickling(monkeypatch)
    out = tmp_path / "gs"
    rep = import_pbg_checkpoint(ckpt, data, kg4, out)
    got = _adagrad_by_id(out, kg4)
    want = {n: float(v) for part, s in zip(names, sums) for n, v in zip(part, s)}
    for node, value in got.items():
        assert value == (want[node] if node not in GONE else 0.0), node
    assert rep.optimizer_state.startswith("of entities recovered for 2 of 2 PBG partitions")
    assert "restarted" not in rep.optimizer_state
    assert not any("Adagrad" in w for w in rep.warnings)


def _rewrite_blob(path: Path, blob: bytes | None) -> None:
    with h5py.File(path, "r+") as hf:
        del hf["optimizer/state_dict"]
        if blob is not None:
            _opaque(hf, blob)


def _big_endian(blob: bytes) -> bytes:
    """The same torch.save archive with its byteorder record saying ``big``."""
    src, dst = zipfile.ZipFile(io.BytesIO(blob)), io.BytesIO()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zf:
        for info in src.infolist():
            data = src.read(info)
            zf.writestr(info, b"big" if info.filename.endswith("/byteorder") else data)
    return dst.getvalue()


def _blob_case(case: str, sums: np.ndarray) -> bytes | None:
    import torch

    t = torch.from_numpy(sums.copy())
    group = [{"lr": 0.1, "lr_decay": 0, "weight_decay": 0, "params": [0]}]
    if case == "two storages":      # e.g. torch's elementwise Adagrad: step + sum tensors
        return torch_save({"state": {0: {"step": torch.tensor(3.0), "sum": t}},
                           "param_groups": group})
    if case == "wrong size":        # one storage, but not n float32
        return row_adagrad_blob(np.concatenate([sums, sums[:1]]))
    if case == "float64":
        return torch_save({"state": {0: {"step": 0, "sum": t.double()}},
                           "param_groups": group})
    if case == "big endian":
        return _big_endian(row_adagrad_blob(sums))
    if case == "garbage":
        return GARBAGE
    if case == "truncated zip":
        return row_adagrad_blob(sums)[:-40]
    assert case == "absent"
    return None


@pytest.mark.parametrize("case, why", [
    ("two storages", "has 2 tensor storages, expected 1"),
    ("wrong size", "has 444 bytes, expected 440 (float32 x 110 rows)"),
    ("float64", "has 880 bytes, expected 440"),
    ("big endian", "byte order 'big', expected 'little'"),
    ("garbage", "not a torch.save zip archive"),
    ("truncated zip", "not a torch.save zip archive"),
    ("absent", "no optimizer/state_dict dataset"),
])
def test_ambiguous_adagrad_state_restarts_at_zero_and_is_reported(kg4, dyn_pbg, tmp_path,
                                                                  monkeypatch, case, why):
    ckpt, data, names, _, _, sums = dyn_pbg
    _rewrite_blob(ckpt / "embeddings_all_1.v2.h5", _blob_case(case, sums[1]))
    _no_unpickling(monkeypatch)
    out = tmp_path / "gs"
    rep = import_pbg_checkpoint(ckpt, data, kg4, out)
    st = rep.entities["node"]
    assert (st["adagrad_recovered"], st["adagrad_restarted"]) == (1, 1)
    assert st["imported"] == 198                       # the embeddings are still imported
    msgs = [w for w in rep.warnings if w.startswith("embeddings_all_1.v2.h5: ")]
    assert len(msgs) == 1 and why in msgs[0] and msgs[0].endswith("restart at 0"), msgs
    assert "recovered for 1 of 2 PBG partitions" in rep.optimizer_state
    assert "1 restarted at 0" in rep.optimizer_state
    got = _adagrad_by_id(out, kg4)
    for n, v in zip(names[0], sums[0]):
        if n not in GHOSTS:
            assert got[n] == float(v)
    assert all(got[n] == 0.0 for n in names[1] if n not in GHOSTS)


def test_import_static_relations_with_global_embedding(kg1, tmp_path):
    """Static PBG relations score c(u + g, f_r(v + g)) for both sides."""
    rng = np.random.default_rng(2)
    names = [[f"e{i}" for i in range(200)]]
    embs = [rng.normal(0, 0.5, (200, DIM)).astype(np.float32)]
    glob = rng.normal(0, 0.5, DIM).astype(np.float32)
    rels = [{"name": "r0", "lhs": "all", "rhs": "all", "weight": 1.0,
             "operator": "complex_diagonal", "all_negs": False},
            {"name": "r1", "lhs": "all", "rhs": "all", "weight": 2.0,
             "operator": "diagonal", "all_negs": False},
            {"name": "r2", "lhs": "all", "rhs": "all", "weight": 1.0,
             "operator": "translation", "all_negs": False},
            {"name": "r3", "lhs": "all", "rhs": "all", "weight": 1.0,
             "operator": "linear", "all_negs": False}]
    h = DIM // 2
    params = {"entities/all/global_embedding": glob,
              "relations/0/operator/rhs/imag": rng.normal(0, 0.5, h),
              "relations/0/operator/rhs/real": rng.normal(1, 0.5, h),
              "relations/1/operator/rhs/diagonal": rng.normal(1, 0.5, DIM),
              "relations/2/operator/rhs/translation": rng.normal(0, 0.5, DIM),
              "relations/3/operator/rhs/linear_transformation": rng.normal(0, 0.5, (DIM, DIM))}
    cfg = pbg_config(relations=rels, dynamic_relations=False, global_emb=True)
    ckpt, data = write_pbg(tmp_path / "pbg", cfg, {"all": names}, {"all": embs}, params)
    out = tmp_path / "gs"
    rep = import_pbg_checkpoint(ckpt, data, kg1, out)
    assert rep.relations["tail_scores"] == {"r0": "exact", "r1": "exact", "r2": "ranks",
                                            "r3": "exact"}
    saved = load_config(out / "config.json")
    assert sorted((r.name, r.operator, r.weight) for r in saved.relations) == [
        ("r1", "diagonal", 2.0), ("r2", "translation", 1.0), ("r3", "linear", 1.0)]
    emb = Embeddings.load(out)
    np.testing.assert_allclose(emb.vectors(["e7"])[0], embs[0][7] + glob, rtol=1e-6)

    import torch

    def f(r, v):
        if r == "r0":
            return _complex(v, params["relations/0/operator/rhs/real"],
                            params["relations/0/operator/rhs/imag"])
        if r == "r1":
            return v * params["relations/1/operator/rhs/diagonal"]
        if r == "r2":
            return v + params["relations/2/operator/rhs/translation"]
        return params["relations/3/operator/rhs/linear_transformation"] @ v

    for r in ("r0", "r1", "r2", "r3"):
        u, v, w = (embs[0][i] + glob for i in (3, 50, 121))
        pbg_uv, pbg_uw = float(u @ f(r, v)), float(u @ f(r, w))
        ours_uv, ours_uw = emb.score(["e3", "e3"], r, ["e50", "e121"])
        if r == "r2":  # tail ranking exact; scores offset by <u, t> per query
            assert ours_uv - ours_uw == pytest.approx(pbg_uv - pbg_uw, rel=1e-4, abs=1e-4)
        else:
            assert (ours_uv, ours_uw) == pytest.approx((pbg_uv, pbg_uw), rel=1e-4, abs=1e-4)
        q = emb.relmodel.apply("lhs", torch.from_numpy(v[None].astype(np.float32)),
                               torch.tensor([emb.relation_names.index(r)]))
        assert float(q[0] @ torch.from_numpy(u)) == pytest.approx(pbg_uv, rel=1e-4, abs=1e-4)


def test_cli_import_then_eval_and_continue_training(kg4, dyn_pbg, tmp_path, capsys):
    from graphsys.cli import main

    ckpt, data, *_ = dyn_pbg
    out = tmp_path / "gs"
    assert main(["embed", "import-pbg", str(ckpt), "--entity-path", str(data), "--graph",
                 str(kg4), "--out", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rep["epochs_done"] == 2 and rep["entities"]["node"]["imported"] == 198
    assert main(["embed", "eval", str(out), "--edges", "test", "--filtered", "--json"]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 0 < res["mrr"] <= 1 and res["count"] == 300
    before = Embeddings.load(out).to_numpy()
    sums_before = _adagrad_by_id(out, kg4, 2)
    # continue: the imported config with one more epoch resumes after PBG's 2 epochs
    emb = train(kg4, load_config(out / "config.json", ["num_epochs=3"]),
                out=out).embeddings
    assert emb.meta["epochs_done"] == 3 and len(emb.meta["stats"]) == 1
    assert emb.meta["stats"][0]["edges"] == open_graph(kg4).num_edges("train")
    after = emb.to_numpy()
    assert after.shape == before.shape and not np.allclose(after, before)
    # training continued from PBG's Adagrad sums: they only grow
    sums_after = _adagrad_by_id(out, kg4, 3)
    assert min(v for k, v in sums_before.items() if k not in GONE) > 0
    assert all(sums_after[k] >= v for k, v in sums_before.items())
    assert any(sums_after[k] > v for k, v in sums_before.items())
    # a second import onto a used --out is refused
    assert main(["embed", "import-pbg", str(ckpt), "--entity-path", str(data), "--graph",
                 str(kg4), "--out", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err


def test_integer_ids_single_relation_and_cos(tmp_path):
    """Int64 graph ids match PBG's string names; the only relation / type map by position."""
    tsv = tmp_path / "e.tsv"
    tsv.write_text("".join(f"{i}\t{(i * 7 + 1) % 50}\n" for i in range(50)))
    g = tmp_path / "g"
    ingest_sources([EdgeSource([tsv], edge_set="train", src_col=0, dst_col=1)], g,
                   IngestOptions(partitions=2))
    rng = np.random.default_rng(3)
    names = [[str(i) for i in range(0, 50, 2)] + ["alice"], [str(i) for i in range(1, 50, 2)]]
    embs = [rng.normal(0, 1, (len(p), 8)).astype(np.float32) for p in names]
    cfg = pbg_config(entities={"user": {"num_partitions": 2, "featurized": False}},
                     relations=[{"name": "follow", "lhs": "user", "rhs": "user",
                                 "weight": 1.0, "operator": "none", "all_negs": False}],
                     dimension=8, comparator="cos", dynamic_relations=False, global_emb=False)
    ckpt, data = write_pbg(tmp_path / "pbg", cfg, {"user": names}, {"user": embs}, {})
    rep = import_pbg_checkpoint(ckpt, data, g, tmp_path / "gs")
    st = rep.entities["node"]
    assert (st["imported"], st["fresh_init"], st["pbg_not_in_graph"]) == (50, 0, 1)
    assert rep.relations["tail_scores"] == {"default": "exact"}
    assert any("'default' taken as PBG's only 'follow'" in w for w in rep.warnings)
    emb = Embeddings.load(tmp_path / "gs")
    np.testing.assert_array_equal(emb.vectors([7])[0], embs[1][3])
    u, v = embs[0][1], embs[1][0]      # ids 2 and 1
    cos = float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    assert emb.score(2, "default", 1) == pytest.approx(cos, abs=1e-5)


def test_missing_h5py_is_a_clear_error(dyn_pbg, kg1, tmp_path, monkeypatch):
    ckpt, data, *_ = dyn_pbg
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(GraphsysError, match=r"needs h5py: pip install 'graphsys\[pbg\]'"):
        import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "gs")
    assert not (tmp_path / "gs").exists()


def test_broken_pbg_checkpoints_name_the_file(dyn_pbg, kg1, tmp_path):
    ckpt, data, names, *_ = dyn_pbg
    (data / "entity_count_all_1.txt").write_text("7\n")
    with pytest.raises(FormatError, match=r"entity_count_all_1.txt: says 7, "
                                          r"entity_names_all_1.json has 110 names"):
        import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "a")
    (data / "entity_count_all_1.txt").write_text(f"{len(names[1])}\n")
    with h5py.File(ckpt / "embeddings_all_0.v2.h5", "r+") as hf:
        del hf["embeddings"]
        hf.create_dataset("embeddings", data=np.zeros((90, 12), np.float32))
    with pytest.raises(FormatError, match=r"embeddings_all_0.v2.h5: embeddings have shape "
                                          r"\(90, 12\), expected \(90, 16\)"):
        import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "b")
    assert not (tmp_path / "b").exists()   # nothing half-written
    (ckpt / "checkpoint_version.txt").unlink()
    with pytest.raises(FormatError, match="not a PBG checkpoint"):
        import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "c")


@pytest.mark.parametrize("name", ["entity_names_all_1.json", "dynamic_rel_names.json",
                                  "no count file"])
def test_a_huge_sparse_names_file_is_refused_before_it_is_read(dyn_pbg, kg1, tmp_path, name):
    """A names file was read whole up to 1 TB (a sparse one filled memory): its limit is
    now the names it holds (the count file's, else the embeddings' rows) times a bound on
    one name's bytes, and a larger file is refused by its size."""
    from graphsys.embed.interop.pbg_files import MAX_NAME_BYTES

    ckpt, data, names, *_ = dyn_pbg
    if name == "no count file":
        (data / "entity_count_all_1.txt").unlink()
        name = "entity_names_all_1.json"
    count = len(DYN_NAMES) if name.startswith("dynamic") else len(names[1])
    with open(data / name, "wb") as f:
        f.truncate(1 << 40)
    with pytest.raises(FormatError, match=f"{name}: 1,099,511,627,776 bytes, more than the "
                                          f"{4096 + count * MAX_NAME_BYTES:,} "):
        import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "a")


def test_partition_count_mismatch_is_reported(dyn_pbg, kg1, tmp_path):
    ckpt, data, *_ = dyn_pbg
    cfg = json.loads((ckpt / "config.json").read_text())
    cfg["entities"]["all"]["num_partitions"] = 1
    (ckpt / "config.json").write_text(json.dumps(cfg))
    rep = import_pbg_checkpoint(ckpt, data, kg1, tmp_path / "gs")
    assert rep.entities["node"]["imported"] == 89          # the 90 names of part 0, minus a ghost
    assert any("config says 1 partitions but entity_names_all_1.json exists" in w
               for w in rep.warnings)


def test_import_writes_through_the_checkpoint_manager(kg4, dyn_pbg, tmp_path):
    """The imported checkpoint's config.json and checkpoint.json are what a
    CheckpointManager of the imported config writes (plus ``imported_from``), nothing is
    left beside it, and the files are checked on load."""
    from graphsys.embed.checkpoint import CheckpointManager, CheckpointStorage

    ckpt, data, *_ = dyn_pbg
    out = tmp_path / "gs"
    import_pbg_checkpoint(ckpt, data, kg4, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gs", "pbg"]
    cfg = load_config(out / "config.json")
    g = open_graph(kg4)
    m = CheckpointManager(out, cfg, g, cfg.edges)
    assert json.loads((out / "config.json").read_text()) == m.config_json()
    meta = CheckpointStorage(out).read_meta()
    assert meta["imported_from"] == {"format": "pytorch-biggraph",
                                     "path": str(ckpt.absolute()), "version": 2}
    want = m.meta(2, 2, [])
    assert {k: v for k, v in meta.items() if k in want} == want
    assert list(meta) == ["format", "format_version", *want, "imported_from", "files"]


def test_import_errors_name_the_parameter_and_the_cli_flag(kg4, dyn_pbg, tmp_path, capsys):
    from graphsys.cli import main
    from graphsys.errors import ParameterError

    ckpt, data, *_ = dyn_pbg
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ParameterError, match=r"^out .*full exists and is not empty"):
        import_pbg_checkpoint(ckpt, data, kg4, tmp_path / "full")
    assert main(["embed", "import-pbg", str(ckpt), "--entity-path", str(data), "--graph",
                 str(kg4), "--out", str(tmp_path / "full")]) == 2
    assert "error: --out " in capsys.readouterr().err
    cfg = json.loads((ckpt / "config.json").read_text())
    del cfg["entity_path"]
    with pytest.raises(ParameterError, match="^entity_path not given, and the PBG config"):
        import_pbg_checkpoint(ckpt, None, kg4, tmp_path / "a", config=cfg)


def test_all_negs_on_every_relation_maps_to_all_negs(tmp_path):
    js = tmp_path / "c.json"
    js.write_text(json.dumps({
        "entities": {"all": {"num_partitions": 1}},
        "relations": [{"name": "all_edges", "lhs": "all", "rhs": "all",
                       "operator": "complex_diagonal", "all_negs": True}],
        "dynamic_relations": True, "dimension": 8}))
    a = import_pbg_config(js)
    assert a.config.all_negs is True
    assert not any("all_negs" in w for w in a.warnings)
