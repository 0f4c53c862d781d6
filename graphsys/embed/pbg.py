"""Import PyTorch-BigGraph (PBG 1.0.0) configs and checkpoints: no pickle, no config code run.

**Config** (:func:`import_pbg_config`): PBG reads its config from a Python file defining
``get_torchbiggraph_config()``, and writes it as ``config.json`` into its checkpoint
directory. Both are read here; the ``.py`` is parsed with :mod:`ast` and never executed: the
function body may hold only a docstring, ``name = <literal>`` assignments and
``return <literal or name>``, where a literal is a str / number / bool / None, a list, tuple
or dict of literals, ``dict(key=<literal>, ...)``, or a name assigned earlier in the body (so
PBG's own example configs, ``config = dict(...); return config``, are accepted). Anything
else is an error naming the file and line. PBG keys are mapped to :class:`EmbedConfig` keys
(same names: ``dimension``, ``lr``, ``relation_lr``, ``num_epochs``, ``batch_size``,
``num_batch_negs``, ``num_uniform_negs``, ``loss_fn``, ``margin``, ``comparator``,
``init_scale``, ``max_norm``, ``bucket_order``, ``workers``, ``eval_num_uniform_negs``,
``regularization_coef``, ``entities``, ``relations[].operator/weight``); PBG's defaults apply
to absent keys. Keys without a graphsys equivalent (``entity_path``, ``edge_paths``,
``checkpoint_path``, ``eval_fraction``, ...) are returned in :attr:`PBGConfig.ignored`; an
unknown key or a bad value raises :class:`ConfigError` naming the file and key.

**Checkpoint** (:func:`import_pbg_checkpoint`), PBG's ``FileCheckpointStorage`` layout
(``N`` = the committed version)::

    PBG_CKPT/checkpoint_version.txt            "N\\n"
    PBG_CKPT/config.json                       the PBG config (JSON; also in the h5 attrs)
    PBG_CKPT/embeddings_{entity}_{part}.v{N}.h5
        attrs format_version = 1, "config/json", "iteration/..." (epoch_idx, ...)
        embeddings             float32 (n, d); row k = the entity at offset k of the part
        optimizer/state_dict   bytes (dtype |V1): torch.save of the partition's RowAdagrad
                               state dict; see "Optimizer state" below
    PBG_CKPT/model.v{N}.h5
        model/relations/{idx}/operator/{side}/{param}   float32, see below
        model/entities/{entity}/global_embedding        float32 (d,) (global_emb = true)
        optimizer/state_dict                            torch.save of a torch Adagrad; never read
    ENTITY_PATH/entity_count_{entity}_{part}.txt      "n\\n"
    ENTITY_PATH/entity_names_{entity}_{part}.json     JSON list of the n names, row order
    ENTITY_PATH/dynamic_rel_count.txt, dynamic_rel_names.json   (dynamic_relations only:
                                                      the name of each relation index)

Operator parameters: with ``dynamic_relations`` there is one config relation (``idx`` 0)
whose ``lhs`` and ``rhs`` operators hold one row per dynamic relation: ``real``/``imag``
``(R, d/2)``, ``diagonals``/``translations`` ``(R, d)``, ``linear_transformations``
``(R, d, d)``. Without it, each config relation ``idx`` has only an ``rhs`` operator with
``real``/``imag`` ``(d/2,)``, ``diagonal``/``translation`` ``(d,)``,
``linear_transformation`` ``(d, d)``. Older affine files store ``rotation(s)``
(the transpose).

Scores: PBG scores an edge ``(u, r, v)`` as ``c(lhs_op_r(u), v')`` when ranking candidate
tails ``v'`` and ``c(u', rhs_op_r(v))`` when ranking heads (dynamic relations), or
``c(u, f_r(v))`` for both (static relations; ``u``, ``v`` plus the type's global embedding).
graphsys (:mod:`.model`) transforms the *query*: tails by ``c(op^rhs_r(h), t)``, heads by
``c(op^lhs_r(t), h)``. So PBG's ``lhs`` operator becomes graphsys's ``rhs`` one and vice
versa (exact); a static relation's ``f_r`` becomes graphsys's ``lhs`` operator (exact) and
its adjoint the ``rhs`` one: exact for ``none``, for ``diagonal`` / ``complex_diagonal``
(conjugate) / ``linear`` (transpose) with ``dot``, and for ``translation`` (negated) with
``l2`` / ``squared_l2``; ``translation`` / ``affine`` with ``dot`` rank tails exactly (the
scores differ by a per-query constant); other combinations are approximations and are
reported. Global embeddings are added into the imported rows (exact).

Optimizer state: PBG trains embeddings with its ``RowAdagrad``
(``torchbiggraph/row_adagrad.py``): one float32 accumulator per row, starting at 0,
``sum += (g * g).mean(1)`` (the *mean* of the squared gradient over the dimension) and
``row -= lr * g / (sqrt(sum) + 1e-10)``; ``lr_decay`` and ``weight_decay`` are 0. That is
exactly graphsys's row-wise Adagrad (``state += g.pow(2).mean(1)``, the same eps and initial
value), so the sums are copied unchanged, row by row as the embeddings are (graph nodes PBG
lacks start at 0). The blob is ``torch.save({"state": {0: {"step": int, "sum": (n,)}},
"param_groups": [...]})``: a zip archive ``<archive>/data.pkl`` (the pickled structure),
``<archive>/byteorder`` and one raw storage file ``<archive>/data/0`` holding ``sum`` (the
``step`` count is a plain int inside the pickle). The importer never unpickles: it opens the
bytes with :mod:`zipfile` and reads only that storage, and only when the layout is
unambiguous: a zip with a ``data.pkl`` and exactly one ``data/<k>`` storage of ``4 * n``
bytes (``n`` = the partition's rows), byte order ``little`` (an archive without a
``byteorder`` file is read in this machine's order, as ``torch.load`` does), and finite,
non-negative values. Anything else (no dataset, not a zip, several storages, a wrong size)
restarts that partition's sums at 0; :attr:`ImportReport.entities` counts recovered and
restarted PBG partitions per entity type and a warning names each restarted file and why.
The relation operators' (elementwise torch ``Adagrad``) state in ``model.vN.h5`` has one
storage per parameter whose mapping is only in the pickle: it is never read, and their
Adagrad sums start at 0.

Entities are matched by name to the graph's original ids (``Graph.to_internal``'s ids): PBG
rows of names the graph lacks are reported, graph nodes PBG lacks are initialised as
``graphsys embed train`` would (and counted). The result is a normal graphsys checkpoint
(:mod:`.checkpoint`) at version ``E`` = the epochs PBG completed, written in a staging
directory with ``checkpoint.json`` last and renamed into place: ``graphsys embed eval`` reads
it, and ``graphsys embed train --config OUT/config.json --out OUT --set num_epochs=K``
continues training from epoch ``E``.

``h5py`` is imported lazily (``pip install graphsys[pbg]``).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import io
import json
import re
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from graphsys.embed.checkpoint import CheckpointStorage
from graphsys.embed.config import ConfigError, EmbedConfig, config_from_dict
from graphsys.errors import FormatError, GraphsysError
from graphsys.storage.graph import Graph, open_graph

#: PBG 1.0.0 defaults of the keys that map onto EmbedConfig keys of the same name.
PBG_DEFAULTS: dict[str, Any] = {
    "init_scale": 1e-3, "max_norm": None, "comparator": "cos", "loss_fn": "ranking",
    "margin": 0.1, "num_epochs": 1, "bucket_order": "inside_out", "workers": None,
    "batch_size": 1000, "num_batch_negs": 50, "num_uniform_negs": 50, "lr": 1e-2,
    "relation_lr": None, "eval_num_uniform_negs": 1000,
}
#: Mapped keys: PBG_DEFAULTS plus the required ``dimension`` and (later PBG)
#: ``regularization_coef``.
MAPPED_KEYS = ("dimension", *PBG_DEFAULTS, "regularization_coef")
#: Keys that shape the import (entity / relation layout, scoring) rather than map 1:1.
STRUCTURAL_KEYS = ("entities", "relations", "dynamic_relations", "global_emb", "bias")
#: PBG keys with no graphsys equivalent, and why.
IGNORED_KEYS: dict[str, str] = {
    "entity_path": "PBG's entity files (give --entity-path to import a checkpoint)",
    "edge_paths": "graphsys trains on the graph's edge sets (--graph, --edges)",
    "checkpoint_path": "graphsys writes to --out",
    "init_path": "initial embeddings: import a checkpoint instead",
    "checkpoint_preservation_interval": "no snapshots",
    "num_edge_chunks": "graphsys streams whole buckets",
    "max_edges_per_chunk": "graphsys streams whole buckets",
    "disable_lhs_negs": "graphsys always samples both sides",
    "disable_rhs_negs": "graphsys always samples both sides",
    "eval_fraction": "graphsys evaluates on a named edge set (graphsys embed eval)",
    "eval_num_batch_negs": "graphsys ranks against sampled or all candidates",
    "background_io": "graphsys prefetches partitions (prefetch)",
    "verbose": "logging",
    "hogwild_delay": "graphsys HOGWILD threads start together",
    "num_machines": "distributed training: not this trainer",
    "num_partition_servers": "distributed training: not this trainer",
    "distributed_init_method": "distributed training: not this trainer",
    "distributed_tree_init_order": "distributed training: not this trainer",
    "num_gpus": "use device",
    "num_groups_for_partition_server": "distributed training: not this trainer",
    "num_groups_per_sharded_partition_server": "distributed training: not this trainer",
    "half_precision": "graphsys trains in float32",
    "regularizer": "graphsys's regulariser is N3",
}
ENTITY_KEYS = ("num_partitions", "featurized", "dimension")
RELATION_KEYS = ("name", "lhs", "rhs", "weight", "operator", "all_negs")
#: PBG dynamic-operator parameter names -> graphsys (= PBG static) names.
_DYNAMIC_PARAM = {"diagonals": "diagonal", "translations": "translation",
                  "linear_transformations": "linear_transformation", "real": "real",
                  "imag": "imag", "rotations": "rotation"}
#: PBG side -> graphsys side (PBG names the transformed entity, graphsys the predicted one).
_SWAP = {"lhs": "rhs", "rhs": "lhs"}
#: graphsys parameter name -> PBG's dynamic operators' name of it (``rotations`` is old PBG).
PBG_DYNAMIC_NAME = {g: d for d, g in _DYNAMIC_PARAM.items() if d != "rotations"}


def pbg_side(side: str) -> str:
    """PBG's name of graphsys's operator side ``side``: graphsys names the side an operator
    predicts (``rhs``: tails, applied to heads), PBG the side whose entities it transforms
    (``lhs``: applied to heads, used to rank tails)."""
    return _SWAP[side]
_MODEL_PARAM = re.compile(r"relations/(\d+)/operator/(lhs|rhs)/([^/]+)")
_GLOBAL_EMB = re.compile(r"entities/([^/]+)/global_embedding")
_INT = re.compile(r"-?[0-9]+")
PBG_FORMAT_VERSION = 1


def _h5py():
    """The h5py module, or a one-line error saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise GraphsysError("reading PyTorch-BigGraph checkpoints needs h5py: "
                            "pip install 'graphsys[pbg]'") from None
    return h5py


# =============================================================================================
# Config


@dataclass
class PBGConfig:
    """A PBG config translated to graphsys.

    ``config``: the :class:`EmbedConfig` (PBG's defaults for absent keys). ``raw``: the PBG
    dict as read (validated). ``ignored``: PBG keys present that have no graphsys
    equivalent. ``warnings``: settings graphsys cannot reproduce (training differs).
    ``entities`` / ``relations``: PBG's entity types (``num_partitions``, ``featurized``)
    and relation entries (``name``, ``lhs``, ``rhs``, ``operator``, ``weight``,
    ``all_negs``), with PBG's defaults filled in.
    """

    config: EmbedConfig
    raw: dict[str, Any]
    source: str
    ignored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    relations: list[dict[str, Any]] = field(default_factory=list)
    dynamic_relations: bool = False
    global_emb: bool = True


def import_pbg_config(path: str | Path) -> PBGConfig:
    """Read a PBG config file (``.json``, or ``.py`` defining ``get_torchbiggraph_config``
    that returns a literal dict; never executed) and translate it; see the module docstring.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read PBG config ({exc})") from None
    if path.suffix.lower() == ".py":
        raw = _literal_config_from_py(path, text)
    elif path.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    else:
        raise ConfigError(f"{path}: a PBG config is a .py (get_torchbiggraph_config) or "
                          f".json file")
    return pbg_config_from_dict(raw, source=str(path))


class _NotLiteral(Exception):
    def __init__(self, node: ast.AST, what: str):
        super().__init__(what)
        self.node, self.what = node, what


def _literal(node: ast.expr, env: dict[str, Any]) -> Any:
    """Value of a literal expression node (see the module docstring); raises _NotLiteral."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise _NotLiteral(node, f"constant {node.value!r} is not a config value")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
            isinstance(node.operand, ast.Constant) and \
            isinstance(node.operand.value, (int, float)) and \
            not isinstance(node.operand.value, bool):
        value = node.operand.value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                raise _NotLiteral(elt, "unpacking (*) is not a literal")
        return [_literal(elt, env) for elt in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                raise _NotLiteral(value, "dict unpacking (**) is not a literal")
            k = _literal(key, env)
            if not isinstance(k, str):
                raise _NotLiteral(key, f"dict key {k!r} is not a string")
            out[k] = _literal(value, env)
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "dict" and "dict" not in env:
        if node.args:
            raise _NotLiteral(node.args[0], "dict() takes only key=value arguments here")
        out = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise _NotLiteral(kw.value, "dict unpacking (**) is not a literal")
            out[kw.arg] = _literal(kw.value, env)
        return out
    if isinstance(node, ast.Name):
        if node.id in env:
            return copy.deepcopy(env[node.id])
        raise _NotLiteral(node, f"name {node.id!r} is not a literal (only names assigned "
                                f"a literal earlier in the function)")
    text = ast.unparse(node)
    raise _NotLiteral(node, f"{text if len(text) <= 40 else text[:37] + '...'!r} is not a "
                            f"literal")


def _literal_config_from_py(path: Path, text: str) -> dict[str, Any]:
    """The dict returned by ``get_torchbiggraph_config`` in ``text``, by AST only."""
    def err(line: int, what: str) -> ConfigError:
        return ConfigError(f"{path}:{line}: {what}; graphsys never runs config code (allowed: "
                           f"name = <literal>, return <literal>)")

    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: invalid Python ({exc.msg})") from None
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.name == "get_torchbiggraph_config"]
    if not funcs:
        raise ConfigError(f"{path}: no get_torchbiggraph_config() function at module level")
    if len(funcs) > 1:
        raise err(funcs[1].lineno, "get_torchbiggraph_config is defined twice")
    fn = funcs[0]
    if isinstance(fn, ast.AsyncFunctionDef):
        raise err(fn.lineno, "get_torchbiggraph_config is async")
    if fn.decorator_list:
        raise err(fn.decorator_list[0].lineno, "get_torchbiggraph_config is decorated")
    a = fn.args
    if a.posonlyargs or a.args or a.vararg or a.kwonlyargs or a.kwarg:
        raise err(fn.lineno, "get_torchbiggraph_config takes arguments")
    env: dict[str, Any] = {}
    for k, stmt in enumerate(fn.body):
        try:
            if k == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # docstring
            if isinstance(stmt, ast.Pass):
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = _literal(stmt.value, env)
                continue
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                    stmt.value is not None:
                env[stmt.target.id] = _literal(stmt.value, env)
                continue
            if isinstance(stmt, ast.Return):
                if stmt.value is None:
                    raise err(stmt.lineno, "get_torchbiggraph_config returns nothing")
                value = _literal(stmt.value, env)
                if not isinstance(value, dict):
                    raise err(stmt.lineno, f"get_torchbiggraph_config returns a "
                                           f"{type(value).__name__}, not a dict")
                return value
        except _NotLiteral as exc:
            raise err(getattr(exc.node, "lineno", stmt.lineno), exc.what) from None
        kind = type(stmt).__name__
        if isinstance(stmt, ast.Assign):
            kind = "assignment to " + ast.unparse(stmt.targets[0])[:30]
        raise err(stmt.lineno, f"{kind} statement is not allowed")
    raise err(fn.lineno, "get_torchbiggraph_config has no return statement")


def _unknown(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: must be true or false, got {value!r}")
    return value


def _name(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def pbg_config_from_dict(raw: dict[str, Any], *, source: str = "PBG config") -> PBGConfig:
    """Translate a PBG config dict (as ``get_torchbiggraph_config`` returns or PBG's
    ``config.json`` holds); errors read ``SOURCE: key: problem``."""
    try:
        return _translate(raw, source)
    except ConfigError as exc:
        msg = str(exc)
        raise ConfigError(msg if msg.startswith(source) else f"{source}: {msg}") from None


def _translate(raw: Any, source: str) -> PBGConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"config: must be a dict, got {type(raw).__name__}")
    known = set(MAPPED_KEYS) | set(STRUCTURAL_KEYS) | set(IGNORED_KEYS)
    for key in raw:
        if key not in known:
            raise ConfigError(f"{key}: unknown PBG config key{_unknown(key, known)}")
    for key in ("entities", "relations", "dimension"):
        if key not in raw:
            raise ConfigError(f"{key}: required (PBG has no default)")
    warnings: list[str] = []
    ignored = [k for k in raw if k in IGNORED_KEYS]
    # -- entities ---------------------------------------------------------------------------
    ents = raw["entities"]
    if not isinstance(ents, dict) or not ents:
        raise ConfigError(f"entities: must be a non-empty dict of entity types, got {ents!r}")
    entities: dict[str, dict[str, Any]] = {}
    for name, ent in ents.items():
        where = f"entities.{name}"
        if not isinstance(ent, dict):
            raise ConfigError(f"{where}: must be a dict, got {ent!r}")
        for k in ent:
            if k not in ENTITY_KEYS:
                raise ConfigError(f"{where}.{k}: unknown PBG entity key"
                                  f"{_unknown(k, ENTITY_KEYS)}")
        if "num_partitions" not in ent:
            raise ConfigError(f"{where}.num_partitions: required")
        nparts = ent["num_partitions"]
        if not isinstance(nparts, int) or isinstance(nparts, bool) or nparts < 1:
            raise ConfigError(f"{where}.num_partitions: must be a positive integer, got "
                              f"{nparts!r}")
        if _bool(f"{where}.featurized", ent.get("featurized", False)):
            raise ConfigError(f"{where}.featurized: featurized entities are not supported "
                              f"by graphsys")
        dim = ent.get("dimension")
        if dim is not None and dim != raw["dimension"]:
            raise ConfigError(f"{where}.dimension: per-type dimensions ({dim!r} vs "
                              f"{raw['dimension']!r}) are not supported by graphsys")
        entities[name] = {"num_partitions": nparts, "featurized": False}
    # -- relations --------------------------------------------------------------------------
    rels = raw["relations"]
    if not isinstance(rels, list) or not rels:
        raise ConfigError(f"relations: must be a non-empty list, got {rels!r}")
    relations: list[dict[str, Any]] = []
    for k, rel in enumerate(rels):
        where = f"relations[{k}]"
        if not isinstance(rel, dict):
            raise ConfigError(f"{where}: must be a dict, got {rel!r}")
        for key in rel:
            if key not in RELATION_KEYS:
                raise ConfigError(f"{where}.{key}: unknown PBG relation key"
                                  f"{_unknown(key, RELATION_KEYS)}")
        for key in ("name", "lhs", "rhs"):
            if key not in rel:
                raise ConfigError(f"{where}.{key}: required")
            _name(f"{where}.{key}", rel[key])
        for side in ("lhs", "rhs"):
            if rel[side] not in entities:
                raise ConfigError(f"{where}.{side}: unknown entity type {rel[side]!r} "
                                  f"(entities: {', '.join(entities)})")
        entry = {"name": rel["name"], "lhs": rel["lhs"], "rhs": rel["rhs"],
                 "operator": rel.get("operator", "none"), "weight": rel.get("weight", 1.0),
                 "all_negs": _bool(f"{where}.all_negs", rel.get("all_negs", False))}
        _name(f"{where}.operator", entry["operator"])
        if entry["all_negs"]:
            warnings.append(f"{where}.all_negs: graphsys samples negatives instead")
        relations.append(entry)
    dynamic = _bool("dynamic_relations", raw.get("dynamic_relations", False))
    global_emb = _bool("global_emb", raw.get("global_emb", True))
    if _bool("bias", raw.get("bias", False)):
        raise ConfigError("bias: PBG's biased comparator is not supported by graphsys")
    if dynamic and len(relations) != 1:
        raise ConfigError(f"relations: dynamic_relations needs exactly one relation entry, "
                          f"got {len(relations)}")
    for key in ("disable_lhs_negs", "disable_rhs_negs"):
        if raw.get(key):
            warnings.append(f"{key}: ignored, graphsys samples negatives on both sides")
    if not dynamic:
        warnings.append("dynamic_relations: false in PBG; graphsys always trains separate "
                        "head and tail operators (PBG's dynamic mode)")
    if global_emb and dynamic:
        global_emb = False  # PBG refuses global embeddings with dynamic relations
    elif global_emb:
        warnings.append("global_emb: graphsys has no per-type global embedding; an imported "
                        "checkpoint adds it into every row")
    # -- mapped keys ------------------------------------------------------------------------
    out: dict[str, Any] = {k: v for k, v in PBG_DEFAULTS.items()}
    out.update({k: raw[k] for k in MAPPED_KEYS if k in raw})
    if out["workers"] is None:
        del out["workers"]  # PBG: the CPU count; graphsys: 1 thread by default
    if not out["eval_num_uniform_negs"]:  # PBG: None / 0 = the training setting
        del out["eval_num_uniform_negs"]
    if isinstance(out["bucket_order"], str):
        out["bucket_order"] = out["bucket_order"].lower()
    if dynamic:
        out["operator"] = relations[0]["operator"]
        weight = relations[0]["weight"]
        if weight != 1.0:
            warnings.append(f"relations[0].weight: {weight!r} applies to every relation "
                            f"in PBG's dynamic mode; graphsys uses 1")
    else:
        ops = [r["operator"] for r in relations]
        out["operator"] = max(dict.fromkeys(ops), key=ops.count)
        out["relations"] = [{"name": r["name"], "operator": r["operator"],
                             "weight": r["weight"]} for r in relations]
        names = [r["name"] for r in relations]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ConfigError(f"relations: name {dup!r} is used twice")
    out["entities"] = {n: {"num_partitions": e["num_partitions"]} for n, e in entities.items()}
    config = config_from_dict(out)
    return PBGConfig(config=config, raw=raw, source=source, ignored=ignored, warnings=warnings,
                     entities=entities, relations=relations, dynamic_relations=dynamic,
                     global_emb=global_emb)


# =============================================================================================
# Checkpoint


@dataclass
class ImportReport:
    """What :func:`import_pbg_checkpoint` did (``to_json`` for ``--json``).

    ``entities``: per graph entity type: ``pbg_type``, ``graph_nodes``, ``imported`` (rows
    copied from PBG), ``fresh_init`` (graph nodes PBG lacks), ``pbg_rows``,
    ``pbg_not_in_graph`` (PBG names the graph lacks) and ``examples_not_in_graph`` (up to 5).
    ``adagrad_recovered`` / ``adagrad_restarted``: how many of PBG's partitions of the type
    had their row-wise Adagrad sums recovered / restarted at 0 (a warning says why).
    ``relations``: ``imported``, ``fresh_init`` / ``pbg_not_in_graph`` (names), and
    ``tail_scores``: relation name -> exact / ranks / approx for static PBG relations.
    ``optimizer_state``: one line summing up what happened to the Adagrad state.
    """

    out: str
    pbg_checkpoint: str
    pbg_version: int
    epochs_done: int
    dimension: int
    operator: str
    comparator: str
    dynamic_relations: bool
    entities: dict[str, dict[str, Any]]
    relations: dict[str, Any]
    ignored_keys: list[str]
    warnings: list[str]
    optimizer_state: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise FormatError(f"{path}: missing ({what})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(f"{path}: unreadable ({exc})") from None


def _read_count(path: Path) -> int:
    text = _read_text(path, "PBG entity/relation count").strip()
    if not text.isdigit():
        raise FormatError(f"{path}: expected a non-negative integer, got {text[:40]!r}")
    return int(text)


def _read_names(path: Path) -> list[str]:
    try:
        names = json.loads(_read_text(path, "PBG names"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError(f"{path}: expected a JSON list of name strings")
    return names


def read_pbg_version(pbg_ckpt: Path) -> int:
    """The committed version ``N`` of a PBG checkpoint (``checkpoint_version.txt``)."""
    path = pbg_ckpt / "checkpoint_version.txt"
    if not path.is_file():
        raise FormatError(f"{pbg_ckpt}: not a PBG checkpoint (no checkpoint_version.txt)")
    text = _read_text(path, "PBG checkpoint version").strip()
    if not text.isdigit():
        raise FormatError(f"{path}: expected a version number, got {text[:40]!r}")
    return int(text)


def _open_h5(h5py, path: Path):
    if not path.is_file():
        raise FormatError(f"{path}: missing (PBG checkpoint file)")
    try:
        hf = h5py.File(path, "r")
    except OSError as exc:
        raise FormatError(f"{path}: not a readable HDF5 file ({exc})") from None
    if hf.attrs.get("format_version", None) != PBG_FORMAT_VERSION:
        hf.close()
        raise FormatError(f"{path}: PBG format_version {hf.attrs.get('format_version')!r} is "
                          f"not {PBG_FORMAT_VERSION}")
    return hf


def _read_model(h5py, path: Path):
    """Operator params ``{(idx, side, param): float32 array}`` and global embeddings
    ``{entity: float32 (d,)}`` of ``model.vN.h5``, plus its root attrs (never the
    optimizer blob)."""
    params: dict[tuple[int, str, str], np.ndarray] = {}
    globals_: dict[str, np.ndarray] = {}
    with _open_h5(h5py, path) as hf:
        attrs = {k: hf.attrs[k] for k in hf.attrs}
        if "model" in hf:
            names: list[str] = []
            hf["model"].visit(names.append)
            for name in names:
                obj = hf["model"][name]
                if not isinstance(obj, h5py.Dataset):
                    continue
                m, g = _MODEL_PARAM.fullmatch(name), _GLOBAL_EMB.fullmatch(name)
                if m:
                    params[(int(m.group(1)), m.group(2), m.group(3))] = \
                        np.asarray(obj[...], np.float32)
                elif g:
                    globals_[g.group(1)] = np.asarray(obj[...], np.float32)
                else:
                    raise FormatError(f"{path}: unknown PBG model dataset model/{name}")
    return params, globals_, attrs


_OPTIM_DATASET = "optimizer/state_dict"
_STORAGE = re.compile(r"[^/]+/data/[0-9]+")


def _read_optim_blob(h5py, hf) -> bytes | None:
    """The raw bytes of a PBG file's ``optimizer/state_dict`` dataset (None when absent)."""
    obj = hf.get(_OPTIM_DATASET)
    if not isinstance(obj, h5py.Dataset) or obj.ndim != 1:
        return None
    return obj[...].tobytes()


def pbg_row_adagrad(blob: bytes | None, n: int) -> tuple[np.ndarray | None, str]:
    """PBG's RowAdagrad sums of an ``n``-row partition from its ``torch.save`` blob.

    Reads the zip archive with :mod:`zipfile` and only its one raw storage file (float32,
    little endian); never ``data.pkl``. Returns ``(float32 (n,), "")``, or ``(None, why)``
    when the blob is absent or its layout is not unambiguously one ``n``-float storage (see
    the module docstring).
    """
    if blob is None:
        return None, "no optimizer/state_dict dataset"
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
    except (zipfile.BadZipFile, ValueError, OSError):
        return None, "optimizer state is not a torch.save zip archive"
    with zf:
        infos = zf.infolist()
        roots = {i.filename.split("/", 1)[0] for i in infos}
        if len(roots) != 1:
            return None, "optimizer state archive has no single top-level folder"
        root = roots.pop()
        names = {i.filename for i in infos}
        if f"{root}/data.pkl" not in names:
            return None, "optimizer state archive has no data.pkl (not torch.save's layout)"
        storages = [i for i in infos if _STORAGE.fullmatch(i.filename)]
        if len(storages) != 1:
            return None, (f"optimizer state archive has {len(storages)} tensor storages, "
                          f"expected 1 (RowAdagrad's per-row sums)")
        info = storages[0]
        if info.file_size != 4 * n:
            return None, (f"optimizer state storage {info.filename} has {info.file_size} "
                          f"bytes, expected {4 * n} (float32 x {n} rows)")
        order = sys.byteorder
        if f"{root}/byteorder" in names:
            if zf.getinfo(f"{root}/byteorder").file_size > 16:
                return None, "optimizer state archive has an oversized byteorder record"
            try:
                order = zf.read(f"{root}/byteorder").decode("ascii").strip()
            except (zipfile.BadZipFile, UnicodeDecodeError, OSError, ValueError):
                return None, "optimizer state archive has an unreadable byteorder"
        if order != "little":
            return None, f"optimizer state byte order {order[:20]!r}, expected 'little'"
        try:
            raw = zf.read(info)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
            return None, f"optimizer state storage {info.filename} unreadable ({exc})"
    if len(raw) != 4 * n:
        return None, f"optimizer state storage {info.filename} is truncated"
    sums = np.frombuffer(raw, "<f4").astype(np.float32)
    if not np.all(np.isfinite(sums)) or (sums < 0).any():
        return None, ("optimizer state storage holds negative or non-finite values (not "
                      "sums of squares)")
    return sums, ""


def _epochs_done(attrs: dict[str, Any], version: int, warnings: list[str]) -> int:
    """Epochs PBG completed, from the ``iteration/*`` attrs of the model file."""
    try:
        epoch = int(attrs["iteration/epoch_idx"])
        path_i = int(attrs["iteration/edge_path_idx"])
        paths = int(attrs["iteration/num_edge_paths"])
        chunk_i, chunks = (int(attrs["iteration/edge_chunk_idx"]),
                           int(attrs["iteration/num_edge_chunks"]))
    except (KeyError, TypeError, ValueError):
        return version
    if path_i == paths - 1 and chunk_i == chunks - 1:
        return epoch + 1
    warnings.append(f"PBG stopped inside epoch {epoch + 1} (edge path {path_i + 1}/{paths}, "
                    f"chunk {chunk_i + 1}/{chunks}); graphsys counts {epoch} epochs done")
    return epoch


def _match_one(names_a: list[str], names_b: list[str], what: str,
               warnings: list[str]) -> dict[str, str]:
    """``{a: b}`` by equal name; one-to-one when each side has exactly one (names differ)."""
    match = {a: a for a in names_a if a in set(names_b)}
    if not match and len(names_a) == 1 and len(names_b) == 1:
        warnings.append(f"{what}: the graph's only {names_a[0]!r} taken as PBG's only "
                        f"{names_b[0]!r}")
        match = {names_a[0]: names_b[0]}
    return match


@dataclass
class _GraphMapping:
    """A PBG config laid onto a graph: ``entities`` / ``relations`` map the graph's entity
    type / relation names to PBG's (:func:`_match_one`); ``operators`` / ``weights``: PBG's
    operator and (static relations) weight of each mapped graph relation."""

    pcfg: PBGConfig
    graph: Graph
    entities: dict[str, str]
    relations: dict[str, str]
    operators: dict[str, str]
    weights: dict[str, float]

    def config_json(self, **fields: Any) -> dict[str, Any]:
        """The graphsys config as plain data: PBG's translated settings, a ``relations``
        entry for each graph relation whose operator or weight differs from the top-level
        ones, then ``fields`` (e.g. ``entities``, ``graph``)."""
        cfg0 = self.pcfg.config
        out = cfg0.to_json()
        out.update(num_partitions=None)
        out["relations"] = [
            {"name": r.name, "operator": self.operators.get(r.name),
             "weight": self.weights.get(r.name, 1.0)}
            for r in self.graph.relation_types
            if self.operators.get(r.name, cfg0.operator) != cfg0.operator
            or self.weights.get(r.name, 1.0) != 1.0]
        out.update(fields)
        return out


def _map_to_graph(pcfg: PBGConfig, g: Graph, pbg_rel_names: list[str],
                  warnings: list[str]) -> _GraphMapping:
    """Match ``pcfg``'s entity types and relations (named ``pbg_rel_names``: the config's
    entries, or the dynamic relations' names) to ``g``'s; a graph relation whose lhs / rhs
    types map to other PBG types than its PBG relation's is a warning."""
    ent_map = _match_one(g.entity_types, list(pcfg.entities), "entity type", warnings)
    rel_map = _match_one([r.name for r in g.relation_types], pbg_rel_names, "relation",
                         warnings)
    pbg_rel_index = {n: i for i, n in enumerate(pbg_rel_names)}
    ops: dict[str, str] = {}
    weights: dict[str, float] = {}
    for r in g.relation_types:
        if r.name not in rel_map:
            continue
        pr = pcfg.relations[0 if pcfg.dynamic_relations else pbg_rel_index[rel_map[r.name]]]
        ops[r.name] = pr["operator"]
        if not pcfg.dynamic_relations:
            weights[r.name] = float(pr["weight"])
        want = (ent_map.get(r.lhs), ent_map.get(r.rhs))
        if want != (pr["lhs"], pr["rhs"]):
            warnings.append(f"relation {r.name!r}: graph types ({r.lhs}, {r.rhs}) map to "
                            f"{want}, PBG's relation has ({pr['lhs']}, {pr['rhs']})")
    return _GraphMapping(pcfg, g, ent_map, rel_map, ops, weights)


def pbg_training_config(path: str | Path, graph: str | Path | Graph,
                        log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """A PyTorch-BigGraph config file (:func:`import_pbg_config`: parsed, never run) as the
    graphsys config (plain data, before ``--set`` overrides) that trains ``graph`` afresh
    with PBG's settings.

    PBG's entity types and relations are matched to the graph's by name, or the only one
    to the only one; a matched type keeps PBG's ``num_partitions`` (checked against the
    graph when training), a static relation its operator and weight, and a graph relation
    PBG lacks trains with the most common operator. Ignored PBG keys and settings graphsys
    trains differently are passed to ``log``, one line each.
    """
    say = log or (lambda msg: None)
    pcfg = import_pbg_config(path)
    g = graph if isinstance(graph, Graph) else open_graph(graph)
    warnings = list(pcfg.warnings)
    names = ([r.name for r in g.relation_types] if pcfg.dynamic_relations
             else [r["name"] for r in pcfg.relations])
    m = _map_to_graph(pcfg, g, names, warnings)
    if not pcfg.dynamic_relations:
        lacking = [r.name for r in g.relation_types if r.name not in m.relations]
        if lacking:
            warnings.append(f"{len(lacking)} graph relation(s) not in the PBG config (e.g. "
                            f"{lacking[0]!r}) train with operator {pcfg.config.operator!r}")
        extra = sorted(set(names) - set(m.relations.values()))
        if extra:
            warnings.append(f"PBG relations not in the graph: {', '.join(extra[:5])}")
    if pcfg.ignored:
        say(f"{pcfg.source}: ignored PBG keys (no graphsys equivalent): "
            + ", ".join(pcfg.ignored))
    for w in warnings:
        say(f"{pcfg.source}: warning: {w}")
    parts = {t: {"num_partitions": pcfg.entities[p]["num_partitions"]}
             for t, p in m.entities.items()}
    return m.config_json(entities=parts)


def _adjoint(op: str, comparator: str, p: dict[str, np.ndarray]
             ) -> tuple[dict[str, np.ndarray], str]:
    """Query-side params ``g`` with ``c(g(u), v) ~ c(u, f(v))`` for a static PBG operator
    ``f`` with params ``p`` (one relation, no leading axis); returns ``(g, quality)`` with
    quality ``exact``, ``ranks`` (tail ranking exact, scores offset per query) or ``approx``.
    """
    dot, dist = comparator == "dot", comparator in ("l2", "squared_l2")
    if op == "none":
        return {}, "exact"
    if op == "diagonal":
        return {"diagonal": p["diagonal"]}, "exact" if dot else "approx"
    if op == "complex_diagonal":
        return {"real": p["real"], "imag": -p["imag"]}, "exact" if dot else "approx"
    if op == "linear":
        return ({"linear_transformation": np.ascontiguousarray(p["linear_transformation"].T)},
                "exact" if dot else "approx")
    if op == "translation":
        if dot:
            return {"translation": np.zeros_like(p["translation"])}, "ranks"
        return {"translation": -p["translation"]}, "exact" if dist else "approx"
    if op == "affine":
        at = np.ascontiguousarray(p["linear_transformation"].T)
        if dot:
            return {"linear_transformation": at,
                    "translation": np.zeros_like(p["translation"])}, "ranks"
        return {"linear_transformation": at, "translation": -(at @ p["translation"])}, "approx"
    raise GraphsysError(f"operator {op!r}: no PBG equivalent")


def _pbg_op_params(params, idx: int, side: str, dynamic: bool, row: int | None,
                   model_path: Path) -> dict[str, np.ndarray]:
    """graphsys-named params of PBG relation ``idx``'s ``side`` operator (row ``row`` of a
    dynamic operator); legacy ``rotation(s)`` become the transposed linear transformation."""
    out = {}
    for (i, s, name), arr in params.items():
        if i != idx or s != side:
            continue
        gs = _DYNAMIC_PARAM.get(name, name) if dynamic else name
        if dynamic:
            if row is None or row >= len(arr):
                raise FormatError(f"{model_path}: model/relations/{idx}/operator/{side}/{name} "
                                  f"has {len(arr)} rows, relation index {row} is missing")
            arr = arr[row]
        if gs == "rotation":
            gs, arr = "linear_transformation", np.ascontiguousarray(np.swapaxes(arr, -1, -2))
        out[gs] = arr
    return out


def _set_relation(relmodel, side: str, rel: int, values: dict[str, np.ndarray],
                  where: str) -> None:
    """Copy one relation's params into ``relmodel`` (graphsys ``side``), checking names and
    shapes against the operator."""
    g, local = int(relmodel.group_of[rel]), int(relmodel.local_of[rel])
    target = relmodel.params[side][g]
    if set(values) != set(target):
        raise FormatError(f"{where}: PBG params {sorted(values)} do not match operator "
                          f"{relmodel.groups[g][0]!r} (expects {sorted(target)})")
    for name, arr in values.items():
        if tuple(arr.shape) != tuple(target[name].shape[1:]):
            raise FormatError(f"{where}/{name}: shape {tuple(arr.shape)}, expected "
                              f"{tuple(target[name].shape[1:])}")
        target[name][local] = torch.from_numpy(np.asarray(arr, np.float32))


def _pbg_ids(names: list[str], int_ids: bool) -> pa.Array:
    """PBG names as an Arrow array comparable with the graph's ids (int64 or strings);
    names that are not integers become null for an int64 graph."""
    arr = pa.array(names, pa.large_string())
    if not int_ids:
        return arr
    try:
        return pc.cast(arr, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([int(n) if _INT.fullmatch(n) else None for n in names], pa.int64())


def import_pbg_checkpoint(pbg_ckpt_dir: str | Path, entity_path: str | Path | None,
                          graph: str | Path | Graph, out: str | Path, *,
                          config: str | Path | PBGConfig | dict | None = None,
                          edges: str | None = None,
                          log: Callable[[str], None] | None = None) -> ImportReport:
    """Convert the PBG checkpoint ``pbg_ckpt_dir`` (entity names in ``entity_path``, default
    the config's ``entity_path``) onto ``graph`` into a new graphsys checkpoint ``out``.

    ``config``: the PBG config (file, dict or :class:`PBGConfig`); default
    ``pbg_ckpt_dir/config.json``, else the one stored in ``model.vN.h5``. ``edges``: the
    edge set recorded for continued training (default: the graph's ``train`` / only one).
    Returns an :class:`ImportReport`; see the module docstring for the mapping.
    """
    h5py = _h5py()
    say = log or (lambda msg: None)
    src = Path(pbg_ckpt_dir)
    if not src.is_dir():
        raise FormatError(f"{src}: not a directory (PBG checkpoint)")
    version = read_pbg_version(src)
    model_path = src / f"model.v{version}.h5"
    params, global_embs, attrs = _read_model(h5py, model_path)
    pcfg = _load_pbg_config(config, src, attrs)
    warnings = list(pcfg.warnings)
    epochs = _epochs_done(attrs, version, warnings)
    if entity_path is None:
        if "entity_path" not in pcfg.raw:
            raise GraphsysError("--entity-path: not given and the PBG config has none")
        entity_path = pcfg.raw["entity_path"]
    ent_dir = Path(entity_path)
    if not ent_dir.is_dir():
        raise FormatError(f"{ent_dir}: not a directory (PBG entity path)")
    g = graph if isinstance(graph, Graph) else open_graph(graph)
    out = Path(out).absolute()
    if out.exists() and (CheckpointStorage(out).has_meta() or not out.is_dir()
                         or any(out.iterdir())):
        raise GraphsysError(f"{out}: exists and is not empty (choose another --out)")
    cfg0 = pcfg.config
    dim, cmp = cfg0.dimension, cfg0.comparator

    # -- entity types and relations ---------------------------------------------------------
    if pcfg.dynamic_relations:
        count = _read_count(ent_dir / "dynamic_rel_count.txt")
        pbg_rel_names = _read_names(ent_dir / "dynamic_rel_names.json")
        if len(pbg_rel_names) != count:
            raise FormatError(f"{ent_dir / 'dynamic_rel_names.json'}: {len(pbg_rel_names)} "
                              f"names, dynamic_rel_count.txt says {count}")
    else:
        pbg_rel_names = [r["name"] for r in pcfg.relations]
    graph_rels = g.relation_types
    m = _map_to_graph(pcfg, g, pbg_rel_names, warnings)
    ent_map, rel_map, ops = m.entities, m.relations, m.operators
    pbg_unused_types = sorted(set(pcfg.entities) - set(ent_map.values()))
    pbg_rel_index = {n: i for i, n in enumerate(pbg_rel_names)}

    # -- the graphsys config ----------------------------------------------------------------
    cfg_json = m.config_json(entities={}, graph=g.location.uri,
                             edges=g.edge_set(edges).name, checkpoint_path=str(out))
    try:
        cfg = config_from_dict(cfg_json)
    except ConfigError as exc:
        raise ConfigError(f"{pcfg.source}: {exc}") from None

    from graphsys.embed.model import init_embeddings
    from graphsys.embed.train import Trainer, _seed
    from graphsys.storage.atomic import staging_directory, sync_filesystem

    report = ImportReport(out=str(out), pbg_checkpoint=str(src.absolute()), pbg_version=version,
                          epochs_done=epochs, dimension=dim, operator=cfg.operator,
                          comparator=cmp, dynamic_relations=pcfg.dynamic_relations,
                          entities={}, relations={}, ignored_keys=list(pcfg.ignored),
                          warnings=warnings)
    with staging_directory(out) as stage:
        trainer = Trainer(cfg, g, stage)
        st = trainer.storage
        # -- embeddings ---------------------------------------------------------------------
        for ti, (etype, sizes) in enumerate(trainer.sizes.items()):
            ptype = ent_map.get(etype)
            glob = None
            if ptype is not None and pcfg.global_emb:
                glob = global_embs.get(ptype)
                if glob is not None and glob.shape != (dim,):
                    raise FormatError(f"{model_path}: model/entities/{ptype}/global_embedding "
                                      f"has shape {glob.shape}, expected ({dim},)")
            arrays, states = [], []
            for p, n in enumerate(sizes):
                gen = torch.Generator().manual_seed(_seed(cfg.seed, 1, ti, p))
                emb = init_embeddings(n, dim, cfg.init_scale, gen).numpy()
                if glob is not None:
                    emb += glob
                path = st.emb_path(etype, p, epochs)
                path.parent.mkdir(parents=True, exist_ok=True)
                if n:  # written in place: the staging directory makes the whole import atomic
                    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                                   shape=(n, dim))
                    mm[:] = emb
                    arrays.append(mm)
                else:
                    np.save(path, emb, allow_pickle=False)
                    arrays.append(emb)
                opt = st.optim_path(etype, p, epochs)
                opt.parent.mkdir(parents=True, exist_ok=True)
                if n:  # zeros unless PBG's sums are recovered (_fill_entities)
                    states.append(np.lib.format.open_memmap(opt, mode="w+", dtype=np.float32,
                                                            shape=(n,)))
                else:
                    np.save(opt, np.zeros(0, np.float32), allow_pickle=False)
                    states.append(np.zeros(0, np.float32))
            stats = {"pbg_type": ptype, "graph_nodes": int(sum(sizes)), "imported": 0,
                     "fresh_init": int(sum(sizes)), "pbg_rows": 0, "pbg_not_in_graph": 0,
                     "examples_not_in_graph": [], "adagrad_recovered": 0,
                     "adagrad_restarted": 0}
            if ptype is not None:
                say(f"importing entity type {etype!r} from PBG's {ptype!r}")
                _fill_entities(h5py, src, ent_dir, version, ptype,
                               pcfg.entities[ptype]["num_partitions"], g, etype, sizes,
                               arrays, states, dim, glob, stats, warnings)
            for mm in (*arrays, *states):
                if isinstance(mm, np.memmap):
                    mm.flush()
            del arrays, states
            report.entities[etype] = stats
        recovered = sum(e["adagrad_recovered"] for e in report.entities.values())
        restarted = sum(e["adagrad_restarted"] for e in report.entities.values())
        report.optimizer_state = (
            f"of entities recovered for {recovered} of {recovered + restarted} PBG partitions "
            f"(row-wise Adagrad sums read as raw float32 storage from PBG's torch.save "
            f"archive; nothing unpickled)"
            + (f", {restarted} restarted at 0 (see warnings)" if restarted else "")
            + "; relation operators' Adagrad sums start at 0")
        # -- relation operators -------------------------------------------------------------
        rm = trainer.relmodel
        quality: dict[str, str] = {}
        for r, rel in enumerate(graph_rels):
            if rel.name not in rel_map:
                continue
            idx = pbg_rel_index[rel_map[rel.name]]
            if pcfg.dynamic_relations:
                for pside in ("lhs", "rhs"):
                    vals = _pbg_op_params(params, 0, pside, True, idx, model_path)
                    _set_relation(rm, _SWAP[pside], r, vals,
                                  f"{model_path}: model/relations/0/operator/{pside}")
            else:
                vals = _pbg_op_params(params, idx, "rhs", False, None, model_path)
                where = f"{model_path}: model/relations/{idx}/operator/rhs"
                _set_relation(rm, "lhs", r, vals, where)
                adj, quality[rel.name] = _adjoint(ops[rel.name], cmp, vals)
                _set_relation(rm, "rhs", r, adj, where)
        approx = [n for n, q in quality.items() if q == "approx"]
        if approx:
            warnings.append(f"tail-prediction scores of {len(approx)} static relation(s) "
                            f"(e.g. {approx[0]!r}) approximate PBG's c(u, f_r(v)) with "
                            f"comparator {cmp!r}; head prediction is exact")
        rm.save(st, epochs)
        fresh = [r.name for r in graph_rels if r.name not in rel_map]
        report.relations = {
            "imported": len(rel_map), "fresh_init": fresh,
            "pbg_not_in_graph": sorted(set(pbg_rel_names) - set(rel_map.values())),
            "tail_scores": quality}
        if pbg_unused_types:
            warnings.append(f"PBG entity types not in the graph: {', '.join(pbg_unused_types)}")
        # -- commit -------------------------------------------------------------------------
        config_json = trainer._config_json()
        config_json["checkpoint_path"] = str(out)
        st.write_config(config_json)
        sync_filesystem(stage)
        st.sync_dirs()
        meta = trainer._meta(epochs, epochs, [])
        meta["imported_from"] = {"format": "pytorch-biggraph", "path": str(src.absolute()),
                                 "version": version}
        st.write_meta(meta)
    say(f"wrote {out} (version {epochs})")
    return report


def _load_pbg_config(config, src: Path, attrs: dict[str, Any]) -> PBGConfig:
    if isinstance(config, PBGConfig):
        return config
    if isinstance(config, dict):
        return pbg_config_from_dict(config)
    if config is not None:
        return import_pbg_config(config)
    if (src / "config.json").is_file():
        return import_pbg_config(src / "config.json")
    text = attrs.get("config/json")
    if text is None:
        raise GraphsysError(f"{src}: no config.json and none stored in the model file; pass "
                            f"--config")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{src}: model file's config/json is invalid ({exc.msg})") from None
    return pbg_config_from_dict(raw, source=f"{src}/model.h5:config/json")


def _fill_entities(h5py, src: Path, ent_dir: Path, version: int, ptype: str, pparts: int,
                   g: Graph, etype: str, sizes: list[int], arrays: list[np.ndarray],
                   states: list[np.ndarray], dim: int, glob: np.ndarray | None,
                   stats: dict[str, Any], warnings: list[str]) -> None:
    """Copy PBG rows of ``ptype`` into the graph partitions ``arrays`` of ``etype`` by name,
    and their RowAdagrad sums into ``states`` (zeros) where PBG's are recovered."""
    names: list[str] = []
    part_start = [0]
    for q in range(pparts):
        part_names = _read_names(ent_dir / f"entity_names_{ptype}_{q}.json")
        count_file = ent_dir / f"entity_count_{ptype}_{q}.txt"
        if count_file.is_file() and _read_count(count_file) != len(part_names):
            raise FormatError(f"{count_file}: says {_read_count(count_file)}, "
                              f"entity_names_{ptype}_{q}.json has {len(part_names)} names")
        names.extend(part_names)
        part_start.append(len(names))
    if (ent_dir / f"entity_names_{ptype}_{pparts}.json").is_file():
        warnings.append(f"PBG entity type {ptype!r}: the config says {pparts} partitions but "
                        f"entity_names_{ptype}_{pparts}.json exists; only {pparts} were read")
    int_ids = g.manifest.entity_types[etype].id_type == "int64"
    pbg_ids = _pbg_ids(names, int_ids)
    graph_ids = g.node_ids(etype)
    graph_ids = pa.array(graph_ids) if isinstance(graph_ids, np.ndarray) else graph_ids
    src_row = pc.fill_null(pc.index_in(graph_ids, value_set=pbg_ids), -1).to_numpy()
    src_row = src_row.astype(np.int64)
    dups = len(pbg_ids) - pbg_ids.null_count - len(pc.unique(pbg_ids.drop_null()))
    if dups:
        warnings.append(f"PBG entity type {ptype!r}: {dups} duplicate names (first row used)")
    hit = np.zeros(len(names), bool)
    hit[src_row[src_row >= 0]] = True
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    part_of = np.searchsorted(np.asarray(part_start), src_row, side="right") - 1
    for q in range(pparts):
        path = src / f"embeddings_{ptype}_{q}.v{version}.h5"
        with _open_h5(h5py, path) as hf:
            if "embeddings" not in hf:
                raise FormatError(f"{path}: no 'embeddings' dataset")
            ds = hf["embeddings"]
            n_q = part_start[q + 1] - part_start[q]
            if ds.shape != (n_q, dim):
                raise FormatError(f"{path}: embeddings have shape {ds.shape}, expected "
                                  f"({n_q}, {dim}) (names x dimension)")
            data = np.asarray(ds[...], np.float32)
            sums, why = pbg_row_adagrad(_read_optim_blob(h5py, hf), n_q)
        if sums is None:
            stats["adagrad_restarted"] += 1
            warnings.append(f"{path.name}: {why}; its Adagrad sums restart at 0")
        else:
            stats["adagrad_recovered"] += 1
        if glob is not None:
            data += glob
        for p, mm in enumerate(arrays):
            lo, hi = offsets[p], offsets[p + 1]
            rows = np.flatnonzero((src_row[lo:hi] >= 0) & (part_of[lo:hi] == q))
            if len(rows):
                mm[rows] = data[src_row[lo + rows] - part_start[q]]
                if sums is not None:
                    states[p][rows] = sums[src_row[lo + rows] - part_start[q]]
    imported = int((src_row >= 0).sum())
    missing = np.flatnonzero(~hit)
    stats.update(imported=imported, fresh_init=len(src_row) - imported,
                 pbg_rows=len(names), pbg_not_in_graph=len(missing),
                 examples_not_in_graph=[names[i] for i in missing[:5]])


__all__ = [
    "IGNORED_KEYS",
    "ImportReport",
    "PBGConfig",
    "import_pbg_checkpoint",
    "import_pbg_config",
    "pbg_config_from_dict",
    "pbg_row_adagrad",
    "read_pbg_version",
]
