"""Import PyTorch-BigGraph (PBG 1.0.0) configs: no config code run.

:func:`import_pbg_config` reads PBG's ``config.json`` or its ``.py`` config, parsed with
:mod:`ast` and never executed: the body of ``get_torchbiggraph_config()`` may hold only a
docstring, ``name = <literal>`` assignments and ``return <literal or name>`` (a literal: a
str / number / bool / None, a list, tuple or dict of literals, ``dict(key=<literal>, ...)``
or a name assigned earlier); anything else is an error naming the file and line. PBG keys
map to the :class:`EmbedConfig` keys of the same name (``all_negs`` when every relation sets
it), with PBG's defaults for absent keys; keys without an equivalent (``entity_path``,
``edge_paths``, ...) are returned in :attr:`PBGConfig.ignored`, and an unknown key or a bad
value raises :class:`ConfigError` naming the file and key.

:func:`pbg_training_settings` lays a translated config onto a graph (entity types and
relations matched by name) as the settings :func:`graphsys.embed.load_config` takes.
"""

from __future__ import annotations

import ast
import copy
import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphsys.config_values import read_config_text
from graphsys.embed.config import EmbedConfig, config_from_dict
from graphsys.errors import ConfigError
from graphsys.storage.graph import Graph, open_graph

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


@dataclass
class PBGConfig:
    """A PBG config translated to graphsys, once.

    ``settings``: the graphsys config keys as plain data (PBG's defaults for absent keys),
    what :func:`pbg_training_settings` and the checkpoint import build their config from;
    ``config``: the :class:`EmbedConfig` of ``settings`` alone (validated). ``raw``: the PBG
    dict as read (validated). ``ignored``: PBG keys present that have no graphsys
    equivalent. ``warnings``: settings graphsys cannot reproduce (training differs).
    ``entities`` / ``relations``: PBG's entity types (``num_partitions``, ``featurized``)
    and relation entries (``name``, ``lhs``, ``rhs``, ``operator``, ``weight``,
    ``all_negs``), with PBG's defaults filled in.
    """

    config: EmbedConfig
    raw: dict[str, Any]
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    relations: list[dict[str, Any]] = field(default_factory=list)
    dynamic_relations: bool = False
    global_emb: bool = True


def import_pbg_config(path: str | Path) -> PBGConfig:
    """Read a PBG config file (``.json``, or ``.py`` defining ``get_torchbiggraph_config``
    that returns a literal dict; never executed) and translate it; see the module docstring.

    Parameters
    ----------
    path : str or Path
        The config file.

    Returns
    -------
    PBGConfig
        The translation: ``config`` (an :class:`EmbedConfig`), PBG keys ``ignored``, and
        ``warnings`` for settings graphsys trains differently.

    Raises
    ------
    ConfigError
        Another suffix, invalid JSON, code that is not a literal, an unknown key or a bad
        value: one line naming the file (and line or key).

    Examples
    --------
    >>> import tempfile
    >>> path = tempfile.mkdtemp() + "/config.py"
    >>> _ = open(path, "w").write('''
    ... def get_torchbiggraph_config():
    ...     config = dict(entity_path="data", entities={"all": {"num_partitions": 1}},
    ...                   relations=[{"name": "r", "lhs": "all", "rhs": "all",
    ...                               "operator": "translation"}],
    ...                   dimension=16, num_epochs=3, dynamic_relations=True, global_emb=False)
    ...     return config
    ... ''')
    >>> pbg = import_pbg_config(path)
    >>> pbg.config.dimension, pbg.config.num_epochs, pbg.config.comparator, pbg.ignored
    (16, 3, 'cos', ['entity_path'])
    >>> _ = open(path, "w").write('''
    ... def get_torchbiggraph_config():
    ...     return dict(dimension=__import__("os").cpu_count())
    ... ''')
    >>> import_pbg_config(path)
    Traceback (most recent call last):
    ...
    graphsys.errors.ConfigError: ...:3: ... is not a literal; graphsys never runs config code ...
    """
    path = Path(path)
    text = read_config_text(path, "PBG config")
    if path.suffix.lower() == ".py":
        raw = _literal_config_from_py(path, text)
    elif path.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
        except RecursionError:   # nested past the stack: a traceback
            raise ConfigError(f"{path}: invalid JSON (nested too deeply)") from None
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
    entities = _translate_entities(raw["entities"], raw["dimension"])
    relations = _translate_relations(raw["relations"], entities, warnings)
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
    settings = _settings(raw, entities, relations, dynamic, warnings)
    return PBGConfig(config=config_from_dict(settings), raw=raw, source=source,
                     settings=settings, ignored=[k for k in raw if k in IGNORED_KEYS],
                     warnings=warnings, entities=entities, relations=relations,
                     dynamic_relations=dynamic, global_emb=global_emb)


def _table(where: str, value: Any, known: tuple[str, ...], what: str) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a dict of only ``known`` keys."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a dict, got {value!r}")
    for key in value:
        if key not in known:
            raise ConfigError(f"{where}.{key}: unknown PBG {what} key{_unknown(key, known)}")


def _translate_entities(ents: Any, dimension: Any) -> dict[str, dict[str, Any]]:
    """PBG's ``entities`` checked: ``{name: {"num_partitions", "featurized": False}}``."""
    if not isinstance(ents, dict) or not ents:
        raise ConfigError(f"entities: must be a non-empty dict of entity types, got {ents!r}")
    entities: dict[str, dict[str, Any]] = {}
    for name, ent in ents.items():
        where = f"entities.{name}"
        _table(where, ent, ENTITY_KEYS, "entity")
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
        if dim is not None and dim != dimension:
            raise ConfigError(f"{where}.dimension: per-type dimensions ({dim!r} vs "
                              f"{dimension!r}) are not supported by graphsys")
        entities[name] = {"num_partitions": nparts, "featurized": False}
    return entities


def _translate_relations(rels: Any, entities: dict[str, dict[str, Any]],
                         warnings: list[str]) -> list[dict[str, Any]]:
    """PBG's ``relations`` checked, with PBG's defaults (``name``, ``lhs``, ``rhs``,
    ``operator``, ``weight``, ``all_negs``)."""
    if not isinstance(rels, list) or not rels:
        raise ConfigError(f"relations: must be a non-empty list, got {rels!r}")
    relations: list[dict[str, Any]] = []
    for k, rel in enumerate(rels):
        where = f"relations[{k}]"
        _table(where, rel, RELATION_KEYS, "relation")
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
        relations.append(entry)
    if all(r["all_negs"] for r in relations):
        return relations  # graphsys's all_negs (one setting for every relation)
    for k, r in enumerate(relations):
        if r["all_negs"]:
            warnings.append(f"relations[{k}].all_negs: graphsys's all_negs is one setting "
                            f"for every relation; this one samples negatives")
    return relations


def _settings(raw: dict[str, Any], entities: dict[str, dict[str, Any]],
              relations: list[dict[str, Any]], dynamic: bool,
              warnings: list[str]) -> dict[str, Any]:
    """The graphsys config keys of a checked PBG config (plain data): the mapped keys with
    PBG's defaults, the operator(s), relation weights and entity partitions."""
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
    if all(r["all_negs"] for r in relations):
        out["all_negs"] = True
    return out


# =============================================================================================
# Onto a graph


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
class GraphMapping:
    """A PBG config laid onto a graph: ``entities`` / ``relations`` map the graph's entity
    type / relation names to PBG's (:func:`_match_one`); ``operators`` / ``weights``: PBG's
    operator and (static relations) weight of each mapped graph relation."""

    pcfg: PBGConfig
    graph: Graph
    entities: dict[str, str]
    relations: dict[str, str]
    operators: dict[str, str]
    weights: dict[str, float]

    def settings(self, **fields: Any) -> dict[str, Any]:
        """The graphsys config as plain data: PBG's translated settings
        (:attr:`PBGConfig.settings`), a ``relations`` entry for each graph relation whose
        operator or weight differs from the top-level ones, then ``fields`` (e.g.
        ``entities``, ``graph``)."""
        out = dict(self.pcfg.settings)
        operator = out["operator"]
        out.pop("num_partitions", None)
        out["relations"] = [
            {"name": r.name, "operator": self.operators.get(r.name),
             "weight": self.weights.get(r.name, 1.0)}
            for r in self.graph.relation_types
            if self.operators.get(r.name, operator) != operator
            or self.weights.get(r.name, 1.0) != 1.0]
        out.update(fields)
        return out


def map_to_graph(pcfg: PBGConfig, g: Graph, pbg_rel_names: list[str],
                  warnings: list[str]) -> GraphMapping:
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
    return GraphMapping(pcfg, g, ent_map, rel_map, ops, weights)


def pbg_training_settings(path: str | Path, graph: str | Path | Graph,
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
    m = map_to_graph(pcfg, g, names, warnings)
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
    return m.settings(entities=parts)


__all__ = [
    "IGNORED_KEYS",
    "PBGConfig",
    "import_pbg_config",
    "pbg_config_from_dict",
    "pbg_training_settings",
]
