"""Import PyTorch-BigGraph (PBG 1.0.0) checkpoints: no pickle, no config code run.

:func:`import_pbg_checkpoint` reads PBG's ``FileCheckpointStorage`` layout (``N`` = the
committed version in ``checkpoint_version.txt``): ``config.json``,
``embeddings_{entity}_{part}.vN.h5`` (``embeddings`` float32 ``(n, d)`` and the partition's
``optimizer/state_dict`` blob), ``model.vN.h5`` (operator parameters
``model/relations/{idx}/operator/{side}/{param}``, global embeddings
``model/entities/{entity}/global_embedding``) and, in the entity path,
``entity_count_{entity}_{part}.txt`` / ``entity_names_{entity}_{part}.json`` (and
``dynamic_rel_count.txt`` / ``dynamic_rel_names.json``). Rows are matched to the graph's
nodes by name; operators are mapped to graphsys's query-side ones (exact, ranks or approx
per relation), and PBG's row-wise Adagrad sums are read as raw float32 storage from the
``torch.save`` zip (never unpickled) where its layout is unambiguous, else restarted at 0.
The mapping is described in ``docs/embed.md`` ("PyTorch-BigGraph checkpoints"). The result
is a graphsys checkpoint (:mod:`.checkpoint`) at version ``E`` = the epochs PBG completed.

``h5py`` is imported lazily (``pip install graphsys[pbg]``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from graphsys.embed.checkpoint import CheckpointManager, CheckpointStorage
from graphsys.embed.config import config_from_dict
from graphsys.embed.interop.pbg_config import (
    GraphMapping,
    PBGConfig,
    import_pbg_config,
    map_to_graph,
    pbg_config_from_dict,
)
from graphsys.embed.interop.pbg_files import (
    epochs_done,
    h5_errors,
    h5py_module,
    open_h5,
    pbg_row_adagrad,
    read_count,
    read_dataset,
    read_model,
    read_names,
    read_optim_blob,
    read_pbg_version,
)
from graphsys.embed.relations import PBG_PARAM, RelationModel, pbg_side
from graphsys.errors import ConfigError, FormatError, GraphsysError, ParameterError
from graphsys.storage.atomic import staging_directory
from graphsys.storage.graph import Graph, open_graph

_INT = re.compile(r"-?[0-9]+")


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
        gs = PBG_PARAM.get(name, name) if dynamic else name
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
    Returns an :class:`ImportReport`; see the module docstring for the mapping. The
    checkpoint is written through a :class:`~graphsys.embed.checkpoint.CheckpointManager`
    in a staging directory renamed into place.

    Parameters
    ----------
    pbg_ckpt_dir : str or Path
        PBG's checkpoint directory (needs h5py).
    entity_path : str or Path or None
        PBG's entity path (the names of each partition's rows).
    graph : str or Path or Graph
        The graph the embeddings are for; rows are matched to its nodes by name.
    out : str or Path
        The graphsys checkpoint to create (a new or empty directory).
    config : str or Path or PBGConfig or dict, optional
        The PBG config.
    edges : str, optional
        The edge set recorded for continued training.
    log : callable, optional
        Called with each progress line.

    Returns
    -------
    ImportReport
        Rows imported and freshly initialised per entity type, relations, how each
        relation's tail scores compare with PBG's, and warnings.

    Raises
    ------
    ParameterError
        ``out`` not empty, or no ``entity_path`` given or configured.
    FormatError
        A PBG file not in PBG 1.0.0's layout, named.

    Examples
    --------
    A translation / l2 checkpoint of two entities, ``"1"`` and ``"0"``, over a graph of
    nodes 0, 1, 2:

    >>> import json, tempfile, h5py, numpy as np, graphsys
    >>> from pathlib import Path
    >>> from graphsys.embed import Embeddings
    >>> d = Path(tempfile.mkdtemp())
    >>> g = graphsys.from_numpy(np.array([0, 1]), np.array([1, 2]), d / "g")
    >>> ckpt, data = d / "ckpt", d / "data"
    >>> ckpt.mkdir(), data.mkdir()
    (None, None)
    >>> cfg = {"entities": {"all": {"num_partitions": 1}}, "dimension": 2,
    ...        "relations": [{"name": "default", "lhs": "all", "rhs": "all",
    ...                       "operator": "translation"}], "comparator": "l2"}
    >>> _ = (ckpt / "config.json").write_text(json.dumps(cfg))
    >>> _ = (ckpt / "checkpoint_version.txt").write_text("1")
    >>> _ = (data / "entity_count_all_0.txt").write_text("2")
    >>> _ = (data / "entity_names_all_0.json").write_text('["1", "0"]')
    >>> for name, key, rows in (("embeddings_all_0", "embeddings", [[1, 1], [0, 0]]),
    ...                         ("model", "model/relations/0/operator/rhs/translation", [1, 0])):
    ...     with h5py.File(ckpt / f"{name}.v1.h5", "w") as f:
    ...         f.attrs["format_version"] = 1
    ...         f[key] = np.array(rows, np.float32)
    >>> report = import_pbg_checkpoint(ckpt, data, g, d / "out")
    >>> {k: report.entities["node"][k] for k in ("imported", "fresh_init")}
    {'imported': 2, 'fresh_init': 1}
    >>> report.relations["tail_scores"]
    {'default': 'exact'}
    >>> emb = Embeddings.load(d / "out")
    >>> emb.vector(1).tolist(), emb.vector(0).tolist()  # matched by name, not by row
    ([1.0, 1.0], [0.0, 0.0])
    """
    say = log or (lambda msg: None)
    pbg = _open_source(pbg_ckpt_dir)
    pcfg = _load_pbg_config(config, pbg.root, pbg.attrs)
    warnings = list(pcfg.warnings)
    epochs = epochs_done(pbg.attrs, pbg.version, warnings)
    if entity_path is None:
        if "entity_path" not in pcfg.raw:
            raise ParameterError("entity_path", "not given, and the PBG config has none")
        entity_path = pcfg.raw["entity_path"]
    pbg.entity_dir = Path(entity_path)
    if not pbg.entity_dir.is_dir():
        raise FormatError(f"{pbg.entity_dir}: not a directory (PBG entity path)")
    g = graph if isinstance(graph, Graph) else open_graph(graph)
    out = Path(out).absolute()
    if out.exists() and (CheckpointStorage(out).has_meta() or not out.is_dir()
                         or any(out.iterdir())):
        raise ParameterError("out", f"{out} exists and is not empty (choose another "
                                    f"directory)")
    pbg_rel_names = _pbg_relation_names(pcfg, pbg.entity_dir)
    m = map_to_graph(pcfg, g, pbg_rel_names, warnings)
    try:
        cfg = config_from_dict(m.settings(entities={}, graph=g.location.uri,
                                          edges=g.edge_set(edges).name,
                                          checkpoint_path=str(out)))
    except ConfigError as exc:
        raise ConfigError(f"{pcfg.source}: {exc}") from None
    report = ImportReport(out=str(out), pbg_checkpoint=str(pbg.root.absolute()),
                          pbg_version=pbg.version, epochs_done=epochs,
                          dimension=cfg.dimension, operator=cfg.operator,
                          comparator=cfg.comparator, dynamic_relations=pcfg.dynamic_relations,
                          entities={}, relations={}, ignored_keys=list(pcfg.ignored),
                          warnings=warnings)
    with staging_directory(out) as stage:
        manager = CheckpointManager(stage, cfg, g, cfg.edges, location=out)
        for ti, etype in enumerate(manager.sizes):
            report.entities[etype] = _import_entity_type(pbg, pcfg, m, manager, ti, etype,
                                                         epochs, say, warnings)
        report.optimizer_state = _optimizer_summary(report.entities)
        relmodel = RelationModel(manager.rel_ops, cfg.dimension)
        report.relations = _import_relations(pbg, pcfg, m, relmodel, pbg_rel_names, warnings)
        relmodel.save(manager.storage, epochs)
        unused_types = sorted(set(pcfg.entities) - set(m.entities.values()))
        if unused_types:
            warnings.append(f"PBG entity types not in the graph: {', '.join(unused_types)}")
        manager.write_config()
        manager.storage.sync(manager.storage.version_files(epochs))
        manager.storage.sync_dirs()
        manager.commit(epochs, epochs, [], imported_from={
            "format": "pytorch-biggraph", "path": str(pbg.root.absolute()),
            "version": pbg.version})
    say(f"wrote {out} (version {epochs})")
    return report


@dataclass
class _PBGSource:
    """An opened PBG checkpoint: its directory, committed ``version``, model file, operator
    ``params`` and ``global_embs`` (:func:`read_model`), the model file's ``attrs`` and
    (once known) the ``entity_dir`` of its entity names."""

    h5py: Any
    root: Path
    version: int
    model_path: Path
    params: dict[tuple[int, str, str], np.ndarray]
    global_embs: dict[str, np.ndarray]
    attrs: dict[str, Any]
    entity_dir: Path = Path()


def _open_source(pbg_ckpt_dir: str | Path) -> _PBGSource:
    h5py = h5py_module()
    src = Path(pbg_ckpt_dir)
    if not src.is_dir():
        raise FormatError(f"{src}: not a directory (PBG checkpoint)")
    version = read_pbg_version(src)
    model_path = src / f"model.v{version}.h5"
    params, global_embs, attrs = read_model(h5py, model_path)
    return _PBGSource(h5py, src, version, model_path, params, global_embs, attrs)


def _pbg_relation_names(pcfg: PBGConfig, ent_dir: Path) -> list[str]:
    """The name of each PBG relation index: the dynamic relations' names file, or the
    config's relation entries."""
    if not pcfg.dynamic_relations:
        return [r["name"] for r in pcfg.relations]
    count = read_count(ent_dir / "dynamic_rel_count.txt")
    names = read_names(ent_dir / "dynamic_rel_names.json", count)
    if len(names) != count:
        raise FormatError(f"{ent_dir / 'dynamic_rel_names.json'}: {len(names)} "
                          f"names, dynamic_rel_count.txt says {count}")
    return names


def _import_entity_type(pbg: _PBGSource, pcfg: PBGConfig, m: GraphMapping,
                        manager: CheckpointManager, ti: int, etype: str, version: int,
                        say: Callable[[str], None], warnings: list[str]) -> dict[str, Any]:
    """Write version ``version`` of every partition of graph entity type ``etype`` (the
    ``ti``-th): rows PBG has copied by name (plus its global embedding), the others
    initialised as training would; returns the type's :attr:`ImportReport.entities`."""
    dim, st = manager.cfg.dimension, manager.storage
    sizes = manager.sizes[etype]
    ptype = m.entities.get(etype)
    glob = None
    if ptype is not None and pcfg.global_emb:
        glob = pbg.global_embs.get(ptype)
        if glob is not None and glob.shape != (dim,):
            raise FormatError(f"{pbg.model_path}: model/entities/{ptype}/global_embedding "
                              f"has shape {glob.shape}, expected ({dim},)")
    arrays, states = [], []
    for p, n in enumerate(sizes):
        emb = manager.initial_embeddings(ti, p, n)
        if glob is not None:
            emb += glob
        arrays.append(_new_array(st.emb_path(etype, p, version), emb))
        states.append(_new_array(st.optim_path(etype, p, version), np.zeros(n, np.float32)))
    stats = {"pbg_type": ptype, "graph_nodes": int(sum(sizes)), "imported": 0,
             "fresh_init": int(sum(sizes)), "pbg_rows": 0, "pbg_not_in_graph": 0,
             "examples_not_in_graph": [], "adagrad_recovered": 0,
             "adagrad_restarted": 0}
    if ptype is not None:
        say(f"importing entity type {etype!r} from PBG's {ptype!r}")
        _fill_entities(pbg.h5py, pbg.root, pbg.entity_dir, pbg.version, ptype,
                       pcfg.entities[ptype]["num_partitions"], manager.graph, etype, sizes,
                       arrays, states, dim, glob, stats, warnings)
    for mm in (*arrays, *states):
        if isinstance(mm, np.memmap):
            mm.flush()
    return stats


def _new_array(path: Path, init: np.ndarray) -> np.ndarray:
    """``init`` written to the new ``.npy`` ``path``, returned as a writable memory map
    (an empty array as a plain array); written in place, as the staging directory makes
    the whole import atomic."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not len(init):
        np.save(path, init, allow_pickle=False)
        return init
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=init.shape)
    if init.any():
        mm[:] = init
    return mm


def _optimizer_summary(entities: dict[str, dict[str, Any]]) -> str:
    recovered = sum(e["adagrad_recovered"] for e in entities.values())
    restarted = sum(e["adagrad_restarted"] for e in entities.values())
    return (f"of entities recovered for {recovered} of {recovered + restarted} PBG partitions "
            f"(row-wise Adagrad sums read as raw float32 storage from PBG's torch.save "
            f"archive; nothing unpickled)"
            + (f", {restarted} restarted at 0 (see warnings)" if restarted else "")
            + "; relation operators' Adagrad sums start at 0")


def _import_relations(pbg: _PBGSource, pcfg: PBGConfig, m: GraphMapping,
                      relmodel: RelationModel, pbg_rel_names: list[str],
                      warnings: list[str]) -> dict[str, Any]:
    """Copy PBG's operator parameters of every mapped graph relation into ``relmodel``;
    returns :attr:`ImportReport.relations`."""
    model_path, cmp = pbg.model_path, m.pcfg.settings["comparator"]
    pbg_rel_index = {n: i for i, n in enumerate(pbg_rel_names)}
    graph_rels = m.graph.relation_types
    quality: dict[str, str] = {}
    for r, rel in enumerate(graph_rels):
        if rel.name not in m.relations:
            continue
        idx = pbg_rel_index[m.relations[rel.name]]
        if pcfg.dynamic_relations:
            for pside in ("lhs", "rhs"):
                vals = _pbg_op_params(pbg.params, 0, pside, True, idx, model_path)
                _set_relation(relmodel, pbg_side(pside), r, vals,
                              f"{model_path}: model/relations/0/operator/{pside}")
        else:
            vals = _pbg_op_params(pbg.params, idx, "rhs", False, None, model_path)
            where = f"{model_path}: model/relations/{idx}/operator/rhs"
            _set_relation(relmodel, "lhs", r, vals, where)
            adj, quality[rel.name] = _adjoint(m.operators[rel.name], cmp, vals)
            _set_relation(relmodel, "rhs", r, adj, where)
    approx = [n for n, q in quality.items() if q == "approx"]
    if approx:
        warnings.append(f"tail-prediction scores of {len(approx)} static relation(s) "
                        f"(e.g. {approx[0]!r}) approximate PBG's c(u, f_r(v)) with "
                        f"comparator {cmp!r}; head prediction is exact")
    return {"imported": len(m.relations),
            "fresh_init": [r.name for r in graph_rels if r.name not in m.relations],
            "pbg_not_in_graph": sorted(set(pbg_rel_names) - set(m.relations.values())),
            "tail_scores": quality}


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
        raise ParameterError("config", f"not given, and {src} has no config.json nor one "
                                       f"stored in its model file")
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:   # nested past the stack
        raise FormatError(f"{src}: model file's config/json is invalid "
                          f"({getattr(exc, 'msg', 'nested too deeply')})") from None
    return pbg_config_from_dict(raw, source=f"{src}/model.h5:config/json")


def _embedding_rows(h5py, path: Path) -> int:
    """The row count of the ``embeddings`` dataset of ``path`` (its shape, nothing read)."""
    with open_h5(h5py, path) as hf, h5_errors(path):
        ds = hf.get("embeddings")
        if not isinstance(ds, h5py.Dataset) or ds.ndim != 2:
            raise FormatError(f"{path}: no 'embeddings' dataset (names x dimension)")
        return ds.shape[0]


def _fill_entities(h5py, src: Path, ent_dir: Path, version: int, ptype: str, pparts: int,
                   g: Graph, etype: str, sizes: list[int], arrays: list[np.ndarray],
                   states: list[np.ndarray], dim: int, glob: np.ndarray | None,
                   stats: dict[str, Any], warnings: list[str]) -> None:
    """Copy PBG rows of ``ptype`` into the graph partitions ``arrays`` of ``etype`` by name,
    and their RowAdagrad sums into ``states`` (zeros) where PBG's are recovered."""
    names: list[str] = []
    part_start = [0]
    for q in range(pparts):
        count_file = ent_dir / f"entity_count_{ptype}_{q}.txt"
        # the names file's size is bounded by the count file's count, else by the rows of
        # the partition's embeddings (whose shape is checked against the names below)
        count = (read_count(count_file) if count_file.is_file() else
                 _embedding_rows(h5py, src / f"embeddings_{ptype}_{q}.v{version}.h5"))
        part_names = read_names(ent_dir / f"entity_names_{ptype}_{q}.json", count)
        if len(part_names) != count and count_file.is_file():
            raise FormatError(f"{count_file}: says {count}, "
                              f"entity_names_{ptype}_{q}.json has {len(part_names)} names")
        names.extend(part_names)
        part_start.append(len(names))
    if (ent_dir / f"entity_names_{ptype}_{pparts}.json").is_file():
        warnings.append(f"PBG entity type {ptype!r}: the config says {pparts} partitions but "
                        f"entity_names_{ptype}_{pparts}.json exists; only {pparts} were read")
    pbg_ids = _pbg_ids(names, g.manifest.entity_types[etype].id_type == "int64")
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
        with open_h5(h5py, path) as hf, h5_errors(path):
            if "embeddings" not in hf:
                raise FormatError(f"{path}: no 'embeddings' dataset")
            ds = hf["embeddings"]
            n_q = part_start[q + 1] - part_start[q]
            if not isinstance(ds, h5py.Dataset) or ds.shape != (n_q, dim):
                raise FormatError(f"{path}: embeddings have shape "
                                  f"{getattr(ds, 'shape', None)}, expected ({n_q}, {dim}) "
                                  f"(names x dimension)")
            data = read_dataset(h5py, ds, path, "embeddings")
            sums, why = pbg_row_adagrad(read_optim_blob(h5py, hf), n_q)
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
