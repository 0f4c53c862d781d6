from __future__ import annotations

import json

import pytest

from graphsys.embed.api import load_config
from graphsys.embed.config import EmbedConfig, config_from_dict
from graphsys.errors import ConfigError, ParameterError


def test_toml_file_and_overrides(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('dimension = 40\noperator = "translation"\n[[relations]]\nname = "r1"\n'
                 'weight = 2.0\n[entities.node]\nnum_partitions = 4\n')
    cfg = load_config(f, ["lr=0.5", "relations.r1.operator=diagonal", "bucket_order=affinity"])
    assert cfg.dimension == 40 and cfg.lr == 0.5 and cfg.bucket_order == "affinity"
    assert cfg.relations[0].operator == "diagonal" and cfg.relations[0].weight == 2.0
    assert cfg.entities["node"].num_partitions == 4


def test_json_file(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"dimension": 8, "loss_fn": "logistic"}))
    assert load_config(f).loss_fn == "logistic"


@pytest.mark.parametrize("raw, key", [
    ({"dimention": 10}, "dimention"),
    ({"lr": -1}, "lr"),
    ({"lr": "fast"}, "lr"),
    ({"operator": "rotate"}, "operator"),
    ({"comparator": "manhattan"}, "comparator"),
    ({"loss_fn": "hinge"}, "loss_fn"),
    ({"bucket_order": "zigzag"}, "bucket_order"),
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 1.5}, "batch_size"),
    ({"workers": True}, "workers"),
    ({"dimension": 5, "operator": "complex_diagonal"}, "dimension"),
    ({"relations": [{"name": "r", "operator": "nope"}]}, r"relations\[0\].operator"),
    ({"relations": [{"name": "r", "colour": 1}]}, r"relations\[0\].colour"),
    ({"entities": {"node": {"num_partitions": -2}}}, "entities.node.num_partitions"),
    ({"memory_budget": "lots"}, "memory_budget"),
    ({"degree_neg_fraction": 2.0}, "degree_neg_fraction"),
    ({"num_uniform_negs": 0, "num_batch_negs": 0}, "num_uniform_negs"),
    ({"all_negs": "yes"}, "all_negs"),
    ({"all_negs": 1}, "all_negs"),
    ({"regularization_coef": -0.05}, "regularization_coef"),
    ({"regularization_coef": "strong"}, "regularization_coef"),
    ({"relation_prediction_weight": -1}, "relation_prediction_weight"),
    ({"relation_prediction_weight": 4, "operator": "complex_diagonal"},
     "relation_prediction_weight: relation prediction needs the dot comparator, got 'cos'"),
])
def test_errors_name_the_key(raw, key):
    with pytest.raises(ConfigError, match=f"^{key}"):
        config_from_dict(raw)


def test_numpy_integers_are_integers():
    """config_from_dict refused a seed (any integer setting) made by NumPy: 'seed: must be
    an integer, got np.int64(3)'; a NumPy bool is still no integer."""
    import numpy as np

    cfg = config_from_dict({"seed": np.int64(3), "dimension": np.uint16(8)})
    assert (cfg.seed, cfg.dimension) == (3, 8) and type(cfg.seed) is int
    with pytest.raises(ConfigError, match="^seed: must be an integer"):
        config_from_dict({"seed": np.True_})


@pytest.mark.parametrize("kw, key", [
    ({"lr": float("inf")}, "lr"),                     # diverged in the first batch
    ({"margin": float("inf")}, "margin"),
    ({"relation_lr": float("inf")}, "relation_lr"),
    ({"max_norm": float("nan")}, "max_norm"),
    ({"freeze_old": "no"}, "freeze_old"),             # was read as True
    ({"operator": ["diagonal"]}, "operator"),         # raw TypeError: unhashable
])
def test_direct_config_refuses_in_one_line(kw, key):
    from graphsys.embed.config import EmbedConfig
    with pytest.raises(ConfigError, match=f"^{key}"):
        EmbedConfig(**kw)


def test_bad_override_and_file(tmp_path):
    with pytest.raises(ParameterError, match="^overrides 'lr': expected key=value"):
        load_config(None, ["lr"])
    bad = tmp_path / "bad.toml"
    bad.write_text("dimension = = 3")
    with pytest.raises(ConfigError, match="bad.toml: invalid toml"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")

    # raw UnicodeDecodeError / AttributeError before: a non-UTF-8 file, a JSON list
    (tmp_path / "latin.toml").write_bytes(b'operator = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="latin.toml: cannot read the config"):
        load_config(tmp_path / "latin.toml")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="list.json: a config is a table of settings"):
        load_config(tmp_path / "list.json")
    # a FIFO blocked 'embed train --config' and 'gnn train --config' forever
    import os

    os.mkfifo(tmp_path / "fifo.toml")
    for special in (tmp_path / "fifo.toml", tmp_path):
        with pytest.raises(ConfigError, match="cannot read the config .not a regular file"):
            load_config(special)
    # a sparse 1 TB file was read whole before it was parsed (filling memory)
    with open(tmp_path / "huge.toml", "wb") as f:
        f.truncate(1 << 40)
    with pytest.raises(ConfigError, match="huge.toml: cannot read the config .1,099,511,627,776 "
                                          "bytes, more than"):
        load_config(tmp_path / "huge.toml")


@pytest.mark.parametrize("raw, override, message", [
    ({"relations": "x"}, "relations.0.weight=2", "^relations: must be a list"),
    ({"relations": ["x"]}, "relations.r0.weight=2", r"^relations\[0\]: must be a table"),
    ({"entities": "x"}, "entities.node.num_partitions=2", "^entities: must be a table"),
    ({"entities": {"node": 4}}, "entities.node.num_partitions=2",
     "^entities.node: must be a table"),
])
def test_an_override_into_a_malformed_table_is_refused_in_one_line(raw, override, message):
    # each raised a raw TypeError or AttributeError while the override was applied
    with pytest.raises(ConfigError, match=message):
        load_config(raw=raw, overrides=[override])


def test_graph_mismatch_names_the_key(kg4, tmp_path):
    from graphsys.embed import train

    with pytest.raises(ConfigError, match="^num_partitions"):
        train(kg4, {"num_partitions": 2}, out=tmp_path / "c")
    with pytest.raises(ConfigError, match=r"^relations\[0\].name"):
        train(kg4, {"relations": [{"name": "nope"}]}, out=tmp_path / "c")


def test_relation_lhs_rhs_are_checked_against_the_graph(kg4, tmp_path):
    """PBG configs name each relation's lhs / rhs entity types: accepted when they match the
    graph, an error naming the key when they do not."""
    from graphsys.embed import train

    cfg = config_from_dict({"relations": [{"name": "r1", "lhs": "node", "rhs": "node"}]})
    assert (cfg.relations[0].lhs, cfg.relations[0].rhs) == ("node", "node")
    with pytest.raises(ConfigError, match=r"^relations\[0\].rhs: config says 'user'"):
        train(kg4, {"relations": [{"name": "r1", "lhs": "node", "rhs": "user"}]},
              out=tmp_path / "c")
    assert not (tmp_path / "c").exists()
    with pytest.raises(ConfigError, match=r"^relations\[0\].lhs: must be a non-empty string"):
        config_from_dict({"relations": [{"name": "r1", "lhs": ""}]})


PBG_PY = '''def get_torchbiggraph_config():
    config = dict(
        entity_path="data/FB15k",
        edge_paths=["data/FB15k/train_partitioned"],
        checkpoint_path="model/fb15k",
        entities={"all": {"num_partitions": %(parts)d}},
        relations=%(relations)s,
        dynamic_relations=%(dynamic)s,
        dimension=16,
        global_emb=False,
        comparator="dot",
        num_epochs=1,
        batch_size=100,
        num_uniform_negs=20,
        loss_fn="softmax",
        lr=0.1,
    )
    return config
'''
DYNAMIC = '[{"name": "all_edges", "lhs": "all", "rhs": "all", "operator": "complex_diagonal"}]'


def _pbg_py(tmp_path, parts=1, relations=DYNAMIC, dynamic=True):
    py = tmp_path / "pbg_config.py"
    py.write_text(PBG_PY % {"parts": parts, "relations": relations, "dynamic": dynamic})
    return py


def test_pbg_py_config_trains_on_the_graph(kg1, tmp_path, capsys):
    """A PyTorch-BigGraph .py config (parsed, never run) trains with PBG's settings; its only
    entity type is matched to the graph's only one, and what is ignored is said."""
    from graphsys import cli
    from graphsys.embed import train

    py = _pbg_py(tmp_path)
    notes: list[str] = []
    cfg = load_config(py, ["lr=0.05"], graph=kg1, log=notes.append)
    assert (cfg.dimension, cfg.operator, cfg.comparator, cfg.loss_fn, cfg.lr) == \
        (16, "complex_diagonal", "dot", "softmax", 0.05)
    assert cfg.entities["node"].num_partitions == 1 and cfg.relations == []
    text = "\n".join(notes)
    assert "ignored PBG keys" in text and "entity_path" in text
    assert "the graph's only 'node' taken as PBG's only 'all'" in text
    emb = train(kg1, py, out=tmp_path / "api").embeddings
    assert emb.config.operator == "complex_diagonal" and emb.meta["epochs_done"] == 1
    assert cli.main(["embed", "train", "--graph", str(kg1), "--config", str(py), "--out",
                     str(tmp_path / "cli"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epochs"] == 1
    with pytest.raises(ConfigError, match="pbg_config.py: a PyTorch-BigGraph config needs "
                                          "the graph"):
        load_config(py)


def test_pbg_py_config_partitions_and_static_relations(kg1, kg4, tmp_path):
    from graphsys.embed import train

    with pytest.raises(ConfigError, match="^entities.node.num_partitions: config says 1, "
                                          "the graph has 4"):
        train(kg4, _pbg_py(tmp_path), out=tmp_path / "x")
    rels = ('[{"name": "r0", "lhs": "all", "rhs": "all", "operator": "translation"}'
            + "".join(f', {{"name": "r{r}", "lhs": "all", "rhs": "all", "operator": '
                      f'"translation"}}' for r in (1, 2))
            + ', {"name": "r3", "lhs": "all", "rhs": "all", "operator": "diagonal", '
              '"weight": 0.5}, {"name": "r9", "lhs": "all", "rhs": "all"}]')
    notes: list[str] = []
    cfg = load_config(_pbg_py(tmp_path, relations=rels, dynamic=False), graph=kg1,
                      log=notes.append)
    assert cfg.operator == "translation"
    assert [(r.name, r.operator, r.weight) for r in cfg.relations] == [("r3", "diagonal", 0.5)]
    assert any("PBG relations not in the graph: r9" in n for n in notes)


def test_all_negs_needs_no_sampled_negatives():
    cfg = config_from_dict({"all_negs": True, "num_uniform_negs": 0, "num_batch_negs": 0})
    assert cfg.all_negs and cfg.num_uniform_negs == 0
    assert config_from_dict({}).all_negs is False


def test_shipped_fb15k_237_config_loads():
    """The shipped ComplEx + N3 config (docs/benchmarks.md, issue 16) is a valid config."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "datasets/configs/fb15k-237-complex-n3.toml"
    cfg = load_config(path)
    assert cfg.operator == "complex_diagonal" and cfg.regularization_coef > 0
    assert cfg.comparator == "dot" and cfg.loss_fn == "softmax"
    assert cfg.all_negs and cfg.embedding_adagrad == "element"


def test_nested_entries_given_as_tables_to_the_dataclass():
    # EmbedConfig(relations=[{...}]) raised a raw AttributeError ('dict' object has no
    # attribute 'name'); it now reads them as config_from_dict does, and round-trips
    from graphsys.embed import EmbedConfig
    from graphsys.embed.config import EntityConfig, RelationConfig
    cfg = EmbedConfig(relations=[{"name": "r0", "weight": 2}],
                      entities={"node": {"num_partitions": 4}})
    assert cfg.relations == [RelationConfig(name="r0", weight=2.0)]
    assert cfg.entities == {"node": EntityConfig(num_partitions=4)}
    assert EmbedConfig(**cfg.to_json()) == cfg
    for kw, message in ((dict(relations="r0"), "^relations: must be a list"),
                        (dict(entities={"node": 4}), "^entities.node: must be a table"),
                        (dict(entities=["node"]), "^entities: must be a table"),
                        (dict(relations=[{"name": "r0", "zz": 1}]), r"^relations\[0\].zz"),
                        (dict(init_from=3), "^init_from: must be a string")):  # was accepted
        with pytest.raises(ConfigError, match=message):
            EmbedConfig(**kw)


def test_override_forms():
    # the documented 'relations[0].weight=2' (the form errors name keys in) was refused as an
    # unknown key; one string was read character by character ("overrides 'l': expected
    # key=value"); a list of ints raised a raw TypeError
    raw = {"relations": [{"name": "r0"}]}
    assert load_config(raw=raw, overrides=["relations[0].weight=2"]).relations[0].weight == 2
    assert load_config(raw=raw, overrides=["relations.0.weight=3"]).relations[0].weight == 3
    assert load_config(None, "lr=0.5").lr == 0.5
    for bad in ([1], {"lr": 1}):
        with pytest.raises(ParameterError, match="^overrides must be a list of 'key=value'"):
            load_config(None, bad)


def test_dotted_override_of_a_numeric_relation_name_reaches_that_relation():
    # relations named by numbers (an ingest of FB15k-style numeric ids): 'relations.0.weight=2'
    # set entry 0, the relation named "5", and left the relation named "0" at weight 1
    raw = {"relations": [{"name": "5"}, {"name": "0"}]}
    cfg = load_config(raw=raw, overrides=["relations.0.weight=2"])
    assert [(r.name, r.weight) for r in cfg.relations] == [("5", 1.0), ("0", 2.0)]
    # the bracketed form is the index, as the errors name entries
    cfg = load_config(raw=raw, overrides=["relations[0].weight=3"])
    assert [(r.name, r.weight) for r in cfg.relations] == [("5", 3.0), ("0", 1.0)]
    # digits naming no entry stay an index
    cfg = load_config(raw=raw, overrides=["relations.1.weight=4"])
    assert [(r.name, r.weight) for r in cfg.relations] == [("5", 1.0), ("0", 4.0)]


@pytest.mark.parametrize("raw, message", [
    # no sampled negatives: the fraction was silently unused
    ({"degree_neg_fraction": 0.5, "all_negs": True}, "degree_neg_fraction: applies to the s"),
    ({"degree_neg_fraction": 0.5, "num_uniform_negs": 0}, "degree_neg_fraction: applies"),
    ({"seed": 2 ** 32}, r"seed: must be below 2\*\*32"),   # trained seed 0's model
])
def test_settings_a_run_would_not_apply_are_refused_by_training_only(kg1, tmp_path, raw,
                                                                     message):
    # refused when training; a stored config.json with them (an older checkpoint) still reads
    from graphsys.embed.trainer import Trainer
    from graphsys.storage.graph import open_graph
    cfg = config_from_dict({"dimension": 8, **raw})
    with pytest.raises(ConfigError, match=f"^{message}"):
        Trainer(cfg, open_graph(kg1), tmp_path / "ck")


def test_numpy_and_torch_scalars_are_read_as_the_numbers_they_hold():
    """``load_config(dimension=np.int32(8))`` failed in ``json.dumps`` ("Object of type
    int32 is not JSON serializable") and ``EmbedConfig(dimension=np.int32(8))`` was refused
    as no integer; each is now the int 8, as a config file's 8 is."""
    import numpy as np
    import torch

    from graphsys.embed.config import EmbedConfig

    for value in (np.int32(8), np.uint8(8), torch.tensor(8), np.float64(8.0)):
        c = load_config(dimension=value, lr=np.float32(0.5))
        assert (c.dimension, type(c.dimension), type(c.lr)) == (8, int, float)
        assert load_config(raw={"dimension": value}).dimension == 8
    c = EmbedConfig(dimension=np.int64(8), seed=np.uint16(3), all_negs=np.True_)
    assert (type(c.dimension), type(c.seed), c.all_negs) == (int, int, True)
    with pytest.raises(ConfigError, match="^dimension: must be an integer"):
        EmbedConfig(dimension=np.float64(2.5))
    with pytest.raises(ConfigError, match="^config: .* is no plain value"):
        load_config(dimension=object())


@pytest.mark.parametrize("key, value, message", [
    ("prefetch", "yes", "prefetch: must be true or false, got 'yes'"),
    ("graph", 3, "graph: must be a string, got 3"),
    ("dimension", "8", "dimension: must be an integer, got '8'"),
])
def test_validate_type_checks_a_config_changed_after_it_was_built(key, value, message):
    cfg = EmbedConfig()
    setattr(cfg, key, value)
    with pytest.raises(ConfigError, match=f"^{message}$"):
        cfg.validate()
