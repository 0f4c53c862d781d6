"""The typed, validated embedding config (TOML or JSON; never executed). A PyTorch-BigGraph
``.py`` config is read by :func:`graphsys.embed.load_config` (through the PBG interop).

Key names follow PyTorch-BigGraph's where PBG has one. Every field has a ``help`` text
(``graphsys embed train --help`` prints them) and a validator; an unknown key or a bad
value raises :class:`ConfigError` naming the key, e.g. ``relations[0].operator: unknown
operator 'foo' (known: affine, complex_diagonal, ...)``. Relations are always reciprocal
(``docs/embed.md``, "The model"). Relations default to every relation type of the graph with
the top-level ``operator``; ``[[relations]]`` entries (``name``, ``operator``, ``weight``)
override single relations, and the ``lhs`` / ``rhs`` types an entry states are checked
against the graph. ``datasets/configs/fb15k-237-complex-n3.toml`` is the shipped
FB15k-237 config (ComplEx-N3 with relation prediction).
"""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphsys.config_values import check_type, parse_value, plain, read_config_file
from graphsys.device import DEVICES
from graphsys.embed.model import COMPARATORS, LOSSES, OPERATORS
from graphsys.errors import ConfigError, GraphsysError, ParameterError, check_count, check_real
from graphsys.units import parse_size

BUCKET_ORDERS = ("inside_out", "outside_in", "random", "affinity", "buffer")
EMBEDDING_ADAGRADS = ("row", "element")


def _h(text: str, **kw: Any) -> Any:
    return field(metadata={"help": text}, **kw)


@dataclass
class RelationConfig:
    """Per-relation settings; ``name`` must be a relation type of the graph."""

    name: str = _h("relation type name (as in the graph's relation_types)")
    lhs: str | None = _h("entity type of its heads (PBG's lhs; optional, must match the "
                         "graph's)", default=None)
    rhs: str | None = _h("entity type of its tails (PBG's rhs; optional, must match the "
                         "graph's)", default=None)
    operator: str | None = _h("operator of this relation (default: the top-level operator)",
                              default=None)
    weight: float = _h("multiplier of this relation's loss", default=1.0)


@dataclass
class EntityConfig:
    """Per-entity-type settings; checked against the stored graph."""

    num_partitions: int = _h("partitions of this entity type (must equal the graph's)")


@dataclass
class EmbedConfig:
    """The settings of an embedding model and its training, validated.

    Build one with :func:`graphsys.embed.load_config` (a TOML / JSON / PyTorch-BigGraph
    file, keyword values, ``key=value`` overrides) or directly; every value is checked
    when it is built, and a bad one raises :class:`~graphsys.errors.ConfigError` naming
    its key. Key names follow PyTorch-BigGraph's [1]_ where it has one.

    A triple ``(h, r, t)`` is scored ``comparator(op_r(h), t)``: ``operator``
    ``translation`` with comparator ``l2`` is TransE [2]_, ``diagonal`` with ``dot``
    DistMult [3]_, ``complex_diagonal`` with ``dot`` ComplEx [4]_ (with
    ``regularization_coef`` its N3-regularised form [5]_). Every relation also has a
    reciprocal operator for the reversed edges (see :mod:`graphsys.embed.config`).

    Parameters
    ----------
    (the fields, generated from their help texts: see ``_fields_doc``)

    See Also
    --------
    graphsys.embed.load_config : read a config file with overrides.
    graphsys.embed.train : train one.

    Examples
    --------
    >>> from graphsys.embed import EmbedConfig
    >>> cfg = EmbedConfig(dimension=16, operator="complex_diagonal", comparator="dot",
    ...                   loss_fn="softmax", lr=0.1)
    >>> cfg.num_epochs, cfg.batch_size, cfg.relation_learning_rate
    (1, 1000, 0.1)
    >>> EmbedConfig(dimension=15, operator="complex_diagonal")
    Traceback (most recent call last):
    ...
    graphsys.errors.ConfigError: dimension: complex_diagonal needs an even dimension, got 15

    References
    ----------
    .. [1] A. Lerer, L. Wu, J. Shen, T. Lacroix, L. Wehrstedt, A. Bose, A. Peysakhovich,
       "PyTorch-BigGraph: A Large-scale Graph Embedding System", SysML 2019.
    .. [2] A. Bordes, N. Usunier, A. Garcia-Duran, J. Weston, O. Yakhnenko, "Translating
       Embeddings for Modeling Multi-relational Data", NeurIPS 2013.
    .. [3] B. Yang, W. Yih, X. He, J. Gao, L. Deng, "Embedding Entities and Relations for
       Learning and Inference in Knowledge Bases", ICLR 2015.
    .. [4] T. Trouillon, J. Welbl, S. Riedel, E. Gaussier, G. Bouchard, "Complex
       Embeddings for Simple Link Prediction", ICML 2016.
    .. [5] T. Lacroix, N. Usunier, G. Obozinski, "Canonical Tensor Decomposition for
       Knowledge Base Completion", ICML 2018.
    """

    # -- data (PBG: entity_path / edge_paths / checkpoint_path) --------------------------------
    graph: str | None = _h("graph directory (CLI: --graph)", default=None)
    edges: str | None = _h("training edge set (CLI: --edges; default: train or the only one)",
                           default=None)
    checkpoint_path: str | None = _h("checkpoint directory (CLI: --out)", default=None)
    entities: dict[str, EntityConfig] = _h("per entity type: num_partitions (checked)",
                                           default_factory=dict)
    relations: list[RelationConfig] = _h("per-relation overrides: name, operator, weight",
                                         default_factory=list)
    num_partitions: int | None = _h("partitions P (checked against the graph if given)",
                                    default=None)
    # -- model ------------------------------------------------------------------------------
    dimension: int = _h("embedding dimension d", default=100)
    operator: str = _h("default relation operator: " + ", ".join(OPERATORS.names()),
                       default="none")
    comparator: str = _h("comparator: " + ", ".join(COMPARATORS.names()), default="cos")
    loss_fn: str = _h("loss: " + ", ".join(LOSSES.names()), default="ranking")
    margin: float = _h("margin of the ranking loss", default=0.1)
    init_scale: float = _h("std of the N(0, init_scale) embedding init", default=1e-3)
    max_norm: float | None = _h("clip updated embedding rows to this L2 norm", default=None)
    regularization_coef: float = _h(
        "weight lambda of the N3 regulariser (0 = off; Lacroix et al. 2018, as PBG's): each "
        "training edge (h, r, t), scored in both directions, adds lambda * (2 ‖h‖³ + 2 ‖t‖³ + "
        "‖r_rhs‖³ + ‖r_lhs‖³) to the summed loss, ‖.‖³ the sum of cubed magnitudes of "
        "the coordinates (complex_diagonal: of the complex coordinates' moduli; r: the "
        "operator's parameters)", default=0.0)
    relation_prediction_weight: float = _h(
        "weight of relation prediction, an auxiliary objective (0 = off; Chen et al. 2021, "
        "their w_rel): each training edge (h, r, t) adds this times the cross-entropy of "
        "predicting r from (h, t) and r^-1 from (t, h) among all 2R relations of both sides "
        "(scores <op_r'(h), t>) to the summed loss; needs the dot comparator. diagonal and "
        "complex_diagonal score every relation in one matmul, other operators take one pass "
        "per relation", default=0.0)
    # -- optimisation -----------------------------------------------------------------------
    lr: float = _h("learning rate of the Adagrad on embeddings", default=0.01)
    embedding_adagrad: str = _h(
        "Adagrad state of the embeddings: 'row' (PBG's RowAdagrad, one float32 accumulator "
        "per row, summing the mean squared gradient) or 'element' (torch.optim.Adagrad's, one "
        "per coordinate, as Lacroix et al. train ComplEx-N3: d times the optimizer memory)",
        default="row")
    relation_lr: float | None = _h("Adagrad learning rate of relation params (default: lr)",
                                   default=None)
    num_epochs: int = _h("passes over the training edges", default=1)
    batch_size: int = _h("positive edges per batch", default=1000)
    num_batch_negs: int = _h("negatives taken from the other edges of a chunk of this size",
                             default=50)
    batches_per_step: int = _h(
        "train this many batches of batch_size edges as one step: each batch keeps its own "
        "num_uniform_negs negatives and in-batch chunks (its loss is unchanged), but the "
        "embeddings and relations take one Adagrad step per group, with the group's summed "
        "gradients; fewer launches per edge on a GPU. Needs the dot comparator, the softmax "
        "loss, in-batch negatives without all_negs, and batch_size a multiple of "
        "num_batch_negs", default=1)
    num_uniform_negs: int = _h("negatives sampled from the candidate partition, shared by the "
                               "batch", default=50)
    all_negs: bool = _h(
        "score every edge against every entity of the candidate partition (1-vs-all: the "
        "softmax is the full cross-entropy over the partition, one (B, d) @ (d, n) matmul "
        "per side; the true candidate is the target, counted once); num_uniform_negs and "
        "num_batch_negs are then unused (degree_neg_fraction is refused). PBG's "
        "relations[].all_negs, here for every relation", default=False)
    degree_neg_fraction: float = _h("fraction of the sampled negatives drawn proportionally "
                                    "to training degree (0 = uniform, as PBG)", default=0.0)
    # -- scheduling -------------------------------------------------------------------------
    bucket_order: str = _h("bucket order: " + ", ".join(BUCKET_ORDERS), default="inside_out")
    buffer_partitions: int | None = _h("partitions held in memory (default: all; never more "
                                       "than memory_budget, or without it the RAM available, "
                                       "allows); others are swapped to disk", default=None)
    memory_budget: str | int | None = _h("bytes for resident embeddings + Adagrad state, "
                                         "e.g. '2GB'", default=None)
    prefetch: bool = _h("load the next bucket's partitions and write back evicted ones in the "
                        "background (with 3 <= buffer < partitions the bucket order and plan "
                        "keep one buffer slot free for the prefetch)", default=True)
    checkpoint_buckets: bool = _h(
        "also commit a checkpoint after every bucket (distributed: every round), so a killed "
        "run resumes from the last finished bucket instead of the epoch start; each commit "
        "writes the changed partitions (n_p x (d + 1) x 4 bytes each) and the relation "
        "parameters, and hard-links the other files", default=False)
    workers: int = _h("HOGWILD worker threads over shared embeddings (the CPU loop; a GPU "
                      "trains one stream of batches and refuses more than 1)", default=1)
    cuda_graphs: bool | None = _h(
        "on CUDA, capture a training step as a CUDA graph and replay it for every step of "
        "the same shape (one launch instead of one per operator); the same model as without. "
        "Unset: on for a CUDA device; false: off. A step that cannot be captured (not the "
        "closed form of the dot comparator and softmax loss, relations of several operators, "
        "freeze_old) runs eagerly, with one logged line; the CPU never uses it",
        default=None)
    device: str = _h("cpu, cuda, cuda:k or auto", default="cpu")
    seed: int = _h("seed of init, shuffling, negatives and bucket order (below 2**32)",
                   default=0)
    # -- growing a trained model (graphsys.embed.grow) -------------------------------------
    init_from: str | None = _h(
        "checkpoint of this model trained before new entities were appended to the graph: "
        "old rows start from it, new ones from their trained neighbours' mean (else random)",
        default=None)
    freeze_old: bool = _h("with init_from: train only the new entities (old ones and the "
                          "relation parameters stay as trained)", default=False)
    # -- evaluation -------------------------------------------------------------------------
    eval_num_uniform_negs: int = _h("sampled candidates per test edge when the full ranking "
                                    "is too large", default=1000)
    eval_full_max_candidates: int = _h("rank against all entities up to this many per type",
                                       default=2_000_000)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def relation_operators(self, relation_types) -> list[str]:
        """The operator of each of the graph's ``relation_types`` (objects with a ``name``),
        in their order: its ``relations`` entry's, else the top-level ``operator``."""
        ops = {r.name: r.operator for r in self.relations if r.operator}
        return [ops.get(r.name, self.operator) for r in relation_types]

    def relation_weights(self, relation_types) -> list[float]:
        """The loss weight of each of the graph's ``relation_types`` (default 1)."""
        weights = {r.name: r.weight for r in self.relations}
        return [weights.get(r.name, 1.0) for r in relation_types]

    @property
    def relation_learning_rate(self) -> float:
        return self.lr if self.relation_lr is None else self.relation_lr

    def adagrad_state_shape(self, rows: int) -> tuple[int, ...]:
        """Shape of the float32 Adagrad state of an embedding partition of ``rows`` rows:
        ``(rows,)`` row-wise, ``(rows, dimension)`` element-wise."""
        return (rows,) if self.embedding_adagrad == "row" else (rows, self.dimension)

    def budget_bytes(self) -> int | None:
        if self.memory_budget is None:
            return None
        return parse_size(self.memory_budget, field="memory_budget")

    # -- validation -------------------------------------------------------------------------
    def __post_init__(self) -> None:
        # nested entries given as tables (EmbedConfig(relations=[{"name": "r0"}])) are read
        # as config_from_dict reads them; they raised a raw AttributeError in validate
        if not isinstance(self.relations, list):
            raise ConfigError(f"relations: must be a list of tables, got {self.relations!r}")
        if not isinstance(self.entities, dict):
            raise ConfigError(f"entities: must be a table, got {self.entities!r}")
        self.relations = [r if isinstance(r, RelationConfig) else
                          _sub(RelationConfig, f"relations[{k}]", r)
                          for k, r in enumerate(self.relations)]
        self.entities = {n: e if isinstance(e, EntityConfig) else
                         _sub(EntityConfig, f"entities.{n}", e)
                         for n, e in self.entities.items()}
        self.validate()

    def _check_grouping(self) -> None:
        """``batches_per_step > 1``: batches whose scores are the closed form's, and whose
        in-batch chunks do not straddle two batches."""
        if self.batches_per_step == 1:
            return
        if self.comparator != "dot" or self.loss_fn != "softmax" or self.all_negs or \
                self.num_batch_negs == 0:
            raise ConfigError("batches_per_step: needs comparator = 'dot', loss_fn = "
                              "'softmax', num_batch_negs > 0 and all_negs = false")
        if self.batch_size % min(self.num_batch_negs, self.batch_size):
            raise ConfigError(f"batches_per_step: batch_size {self.batch_size} must be a "
                              f"multiple of num_batch_negs {self.num_batch_negs}")

    def check_trainable(self) -> None:
        """Refuse settings that a new run would silently not apply (checked when training,
        not when a stored config.json is read: checkpoints trained with them still load)."""
        if self.degree_neg_fraction and (self.all_negs or not self.num_uniform_negs):
            raise ConfigError("degree_neg_fraction: applies to the sampled negatives; with "
                              "all_negs = true or num_uniform_negs = 0 none are sampled")
        if self.seed >= 2 ** 32:   # stream_seed keeps 32 bits: seed 2**32 trained seed 0's
            raise ConfigError(f"seed: must be below 2**32, got {self.seed}")

    def validate(self) -> None:
        for f in dataclasses.fields(self):  # as config_from_dict reads them: np.int32(8) is 8
            setattr(self, f.name, check_type(f.name, getattr(self, f.name), str(f.type)))

        def number(key: str, value: Any, *, allow_zero=False, integer=False, **bounds) -> None:
            # infinity too: lr or margin inf diverged in the first batch, not here
            try:
                if integer:
                    check_count(key, value, minimum=0 if allow_zero else 1)
                else:
                    check_real(key, value, low=0, low_open=not allow_zero, **bounds)
            except ParameterError as exc:
                raise ConfigError(f"{key}: {exc.message}") from None

        for key in ("dimension", "num_epochs", "batch_size", "workers", "batches_per_step",
                    "eval_num_uniform_negs", "eval_full_max_candidates"):
            number(key, getattr(self, key), integer=True)
        for key in ("num_batch_negs", "num_uniform_negs", "seed"):
            number(key, getattr(self, key), allow_zero=True, integer=True)
        for key in ("num_partitions", "buffer_partitions"):
            if getattr(self, key) is not None:
                number(key, getattr(self, key), integer=True)
        for key in ("lr", "init_scale"):
            number(key, getattr(self, key))
        for key in ("margin", "regularization_coef", "relation_prediction_weight"):
            number(key, getattr(self, key), allow_zero=True)
        for key in ("relation_lr", "max_norm"):
            if getattr(self, key) is not None:
                number(key, getattr(self, key))
        number("degree_neg_fraction", self.degree_neg_fraction, allow_zero=True, high=1)
        for key, reg in (("operator", OPERATORS), ("comparator", COMPARATORS),
                         ("loss_fn", LOSSES)):
            value = getattr(self, key)
            if not isinstance(value, str) or value not in reg:   # a list: raw TypeError
                raise ConfigError(f"{key}: unknown {reg.kind} {value!r} (known: "
                                  f"{', '.join(reg.names())})")
        for key, choices in (("bucket_order", BUCKET_ORDERS), ("device", DEVICES),
                             ("embedding_adagrad", EMBEDDING_ADAGRADS)):
            if key == "device" and re.fullmatch(r"cuda:\d+", str(self.device)):
                continue  # GPU k of several
            if getattr(self, key) not in choices:
                raise ConfigError(f"{key}: must be one of {', '.join(choices)}, got "
                                  f"{getattr(self, key)!r}")
        self._check_grouping()
        if self.memory_budget is not None:
            try:
                self.budget_bytes()
            except GraphsysError as exc:
                raise ConfigError(str(exc)) from None
        seen = set()
        for k, rel in enumerate(self.relations):
            where = f"relations[{k}]"
            if not isinstance(rel.name, str) or not rel.name:
                raise ConfigError(f"{where}.name: must be a non-empty string, got {rel.name!r}")
            if rel.name in seen:
                raise ConfigError(f"{where}.name: relation {rel.name!r} listed twice")
            seen.add(rel.name)
            for side in ("lhs", "rhs"):
                value = getattr(rel, side)
                if value is not None and (not isinstance(value, str) or not value):
                    raise ConfigError(f"{where}.{side}: must be a non-empty string, got "
                                      f"{value!r}")
            if rel.operator is not None and rel.operator not in OPERATORS:
                raise ConfigError(f"{where}.operator: unknown operator {rel.operator!r} "
                                  f"(known: {', '.join(OPERATORS.names())})")
            number(f"{where}.weight", rel.weight, allow_zero=True)
        for name, ent in self.entities.items():
            number(f"entities.{name}.num_partitions", ent.num_partitions, integer=True)
        ops = {self.operator} | {r.operator for r in self.relations if r.operator}
        if "complex_diagonal" in ops and self.dimension % 2:
            raise ConfigError(f"dimension: complex_diagonal needs an even dimension, got "
                              f"{self.dimension}")
        if self.relation_prediction_weight > 0 and self.comparator != "dot":
            raise ConfigError(f"relation_prediction_weight: relation prediction needs the dot "
                              f"comparator, got {self.comparator!r}")
        if self.num_batch_negs == 0 and self.num_uniform_negs == 0 and not self.all_negs:
            raise ConfigError("num_uniform_negs: num_batch_negs and num_uniform_negs are both "
                              "0 and all_negs is false, so there are no negatives")


def _fields_doc() -> str:
    """The numpydoc ``Parameters`` entries of :class:`EmbedConfig`, one per field from its
    type, default and ``help`` text (the one description ``--help`` prints too), without
    the command-line flags some of them name."""
    lines = []
    for f in dataclasses.fields(EmbedConfig):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        text = re.sub(r"CLI: --[\w-]+(; )?", "", f.metadata.get("help", "")).replace(" ()", "")
        lines.append(f"    {f.name} : {f.type.replace(' | ', ' or ')}, default {default!r}")
        lines.extend(textwrap.wrap(text[:1].upper() + text[1:] + ".", 88,
                                   initial_indent=" " * 8, subsequent_indent=" " * 8,
                                   break_on_hyphens=False))
    return "\n".join(lines) + "\n"


if EmbedConfig.__doc__:  # None under python -OO
    EmbedConfig.__doc__ = EmbedConfig.__doc__.replace(
        "    (the fields, generated from their help texts: see ``_fields_doc``)\n",
        _fields_doc())


# =============================================================================================
# Parsing


def _sub(cls, key: str, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: must be a table/object, got {raw!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for k, v in raw.items():
        if k not in fields:
            raise ConfigError(f"{key}.{k}: unknown key (known: {', '.join(fields)})")
        kwargs[k] = check_type(f"{key}.{k}", v, str(fields[k].type))
    missing = [n for n, f in fields.items() if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and n not in kwargs]
    if missing:
        raise ConfigError(f"{key}.{missing[0]}: required")
    return cls(**kwargs)


def config_from_dict(raw: dict[str, Any]) -> EmbedConfig:
    """Build and validate a config from plain data; unknown keys raise :class:`ConfigError`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"config: must be a table/object, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(EmbedConfig)}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields:
            close = [n for n in fields if n.replace("_", "") == key.replace("_", "").lower()]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{key}: unknown key{hint}; the keys are listed by "
                              f"`graphsys embed train -h`")
        kwargs[key] = check_type(key, value, str(fields[key].type))  # nested: __post_init__
    return EmbedConfig(**kwargs)


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key=value`` overrides (a list of them, or one string); dotted keys reach into
    ``entities.T.num_partitions`` and ``relations.K.field`` or ``relations[K].field`` (K = list
    index or relation name: ``relations[1]`` is always the index, ``relations.1`` the entry
    named ``1`` when there is one, else the index)."""
    if isinstance(overrides, str):   # one override: it was read character by character
        overrides = [overrides]
    if not isinstance(overrides, (list, tuple)) or not all(isinstance(x, str) for x in overrides):
        raise ParameterError("overrides", f"must be a list of 'key=value' strings, got "
                                          f"{overrides!r}")
    out = json.loads(json.dumps(raw, default=plain))  # NumPy's scalars as numbers
    for item in overrides:
        if "=" not in item:
            raise ParameterError("overrides", f"{item!r}: expected key=value")
        key, text = item.split("=", 1)
        # relations[K].field, as the errors name the key, reads as relations.K.field; a
        # bracketed K of digits is an index, never a relation's name
        index = re.match(r"^relations\[(\d+)\]\.", key.strip())
        key = re.sub(r"^relations\[([^\]]+)\]\.", r"relations.\1.", key.strip())
        value = parse_value(text.strip())
        parts = key.split(".")
        if len(parts) == 1:
            out[key] = value
        elif parts[0] == "entities" and len(parts) == 3:
            ents = _table_of(out, "entities", dict)
            _table_of(ents, parts[1], dict, f"entities.{parts[1]}")[parts[2]] = value
        elif parts[0] == "relations" and len(parts) == 3:
            rels = _table_of(out, "relations", list)
            for k, entry in enumerate(rels):   # a string entry raised a raw AttributeError
                if not isinstance(entry, dict):
                    raise ConfigError(f"relations[{k}]: must be a table/object, got {entry!r}")
            named = [k for k, r in enumerate(rels) if r.get("name") == parts[1]]
            if parts[1].isdigit() and (index or not named):   # relations.1: the entry named
                k = int(parts[1])                              # "1" if there is one
                if k >= len(rels):
                    raise ConfigError(f"{key}: there are only {len(rels)} relations entries")
                rels[k][parts[2]] = value
            else:
                entry = rels[named[0]] if named else None
                if entry is None:
                    entry = {"name": parts[1]}
                    rels.append(entry)
                entry[parts[2]] = value
        else:
            raise ConfigError(f"{key}: unknown key")
    return out


def _table_of(raw: dict[str, Any], key: str, kind: type, where: str | None = None):
    """``raw[key]``, made an empty ``kind`` (dict or list) when missing, refused in one
    line when it is something else (an override reaching into it raised a raw error)."""
    value = raw.setdefault(key, kind())
    if not isinstance(value, kind):
        raise ConfigError(f"{where or key}: must be a {'table' if kind is dict else 'list'}, "
                          f"got {value!r}")
    return value


def load_config(path: str | Path | None = None, overrides: list[str] | None = None, *,
                raw: dict[str, Any] | None = None, **values: Any) -> EmbedConfig:
    """Config from a ``.toml`` / ``.json`` file (or ``raw`` plain data, or nothing), then
    ``values`` (``None`` ones skipped), then ``key=value`` overrides.

    A PyTorch-BigGraph ``.py`` config needs the graph to match its entity types and
    relations: :func:`graphsys.embed.load_config` reads it (this layer never imports
    the PBG interop).
    """
    if path is not None and Path(path).suffix.lower() == ".py":
        raise ConfigError(f"{path}: a PyTorch-BigGraph config; read it with "
                          f"graphsys.embed.load_config (it is matched to the graph)")
    base = dict(raw) if raw is not None else read_config_file(path) if path is not None else {}
    base.update({k: v for k, v in values.items() if v is not None})
    return config_from_dict(apply_overrides(base, overrides or []))


def config_help() -> str:
    """One line per key: name, default and help (for ``--help``)."""
    lines = []
    for f in dataclasses.fields(EmbedConfig):
        default = (f.default if f.default is not dataclasses.MISSING else
                   f.default_factory() if f.default_factory is not dataclasses.MISSING else "")
        lines.append(f"  {f.name} (default {default!r}): {f.metadata.get('help', '')}")
    return "\n".join(lines)
