"""``gnn embed``: rebuild a trained model from its checkpoint and stream every node's
embedding to Arrow files (layout: :mod:`graphsys.storage.embedding_files`), which
:meth:`graphsys.embed.Embeddings.load` serves (``nearest``, ``vectors``, ``to_numpy``).

Node task: the embedding is the model's output (class scores, float32 (N, classes)).
Link task: the item embedding (float32 (N, hidden)), computed over the same training graph
(the checkpoint's seed re-derives the held-out split) with fixed-seed PinSage
neighbourhoods, as at evaluation time. R-GCN: every node's encoding over the training edge
set, as at evaluation time (a graph of one entity type).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from graphsys.device import resolve_device
from graphsys.errors import GraphsysError
from graphsys.gnn.batches import eval_blocks, link_sampler, node_sampler, walk_sampler
from graphsys.gnn.checkpoint import (
    build_to_fit,
    check_graph,
    check_task_dimensions,
    grown_rows,
    load_checkpoint,
    load_module_state,
    meta_field,
    train_config_of,
)
from graphsys.gnn.config import RGCN, TEMPORAL_MODELS, TrainConfig
from graphsys.gnn.inference import layerwise_inference, partition_ranges
from graphsys.gnn.inputs import ItemInput, NodeInput, link_input, node_task_data
from graphsys.gnn.item_task import interaction_split
from graphsys.gnn.link import link_data
from graphsys.gnn.model import GNN
from graphsys.gnn.rgcn_link import RGCNData, encodings, load_rgcn
from graphsys.gnn.time_split import pair_cut
from graphsys.plugins import GNN_MODELS
from graphsys.sampling.adjacency import from_coo, homogeneous_adjacency
from graphsys.storage.embedding_files import EmbeddingWriter
from graphsys.storage.graph import Graph, open_graph


def _held_out_edges_model(graph: Graph, cfg: TrainConfig, meta: dict, checkpoint):
    """Layer-0 input and evaluation blocks of a link checkpoint trained on held-out edges:
    the training graph re-derived from the checkpoint's seed and fractions."""
    types = meta_field(meta, "types", checkpoint, list)
    if len(types) != 1:
        raise GraphsysError(f"{checkpoint}: a link model over two entity types "
                            f"({', '.join(str(t[0]) for t in types)}); streaming inference "
                            f"embeds one entity type (train's result holds every node's "
                            f"embedding in extra['embeddings'])")
    data = link_data(graph, meta["entity_type"], cfg.link_val_fraction,
                     cfg.link_test_fraction, cfg.seed, meta["link_split"],
                     cut=pair_cut(graph, cfg.valid_from, cfg.test_from))
    inp = link_input(graph, data, cfg.hidden)
    return inp, eval_blocks(link_sampler(cfg, data.adj), cfg.seed)


def _embed_rgcn(checkpoint, out, graph: Graph | None, log) -> dict[str, Any]:
    """An R-GCN checkpoint's node encodings over its training graph (as its evaluation
    computes them), partition by partition; a graph of one entity type."""
    model, graph, cfg = load_rgcn(checkpoint, graph)
    if len(graph.entity_types) != 1:
        raise GraphsysError(f"{checkpoint}: an R-GCN model over {len(graph.entity_types)} "
                            f"entity types ({', '.join(graph.entity_types)}); an embedding "
                            f"directory holds one (train's result holds every node's "
                            f"encoding in extra['embeddings'])")
    et = graph.entity_types[0]
    z = encodings(model, RGCNData(graph, cfg))
    writer = EmbeddingWriter(out, graph, et)
    try:
        for k, (a, b) in enumerate(partition_ranges(graph, et)):
            writer(k, z[a:b])
            if log:
                log(f"partition {k}: {b - a:,} embeddings written")
        writer.finish({"checkpoint": str(checkpoint), "task": "link", "model": RGCN})
    finally:  # finished or not, the directory is released
        writer.close()
    return {"entity_type": et, "num_nodes": graph.num_nodes(et), "dimension": writer.dim,
            "out": str(out), "files": writer.files}


def embed_checkpoint(checkpoint: str | Path, out: str | Path, *, graph: Graph | None = None,
                     device: str | torch.device = "cpu", log=None,
                     progress: bool = False) -> dict[str, Any]:
    """Write every node's embedding under a trained checkpoint to Arrow files.

    Rebuilds the model that :func:`~graphsys.gnn.train` saved (``out/checkpoint``) and
    runs :func:`~graphsys.gnn.layerwise_inference` over the checkpoint's entity type,
    partition by partition, writing each partition's embeddings as soon as they are ready
    (layout: :mod:`graphsys.storage.embedding_files`). Node task: the model's outputs (class
    scores); link task: the item embeddings, on the training graph with fixed-seed PinSage
    neighbourhoods, as at evaluation time; R-GCN: the node encodings over the training
    edge set (a graph of one entity type); TGN or TGAT (task temporal-link): every node's
    embedding at the end of its training graph's events
    (:func:`~graphsys.gnn.temporal_score.embed_temporal`).

    Parameters
    ----------
    checkpoint : str or Path
        A checkpoint directory written by :func:`~graphsys.gnn.train` (``out/checkpoint``).
    out : str or Path
        The embedding directory to create.
    graph : Graph, optional
        The graph to embed (default: the one the checkpoint was trained on), or that graph
        grown by appends since: the new nodes are embedded inductively (their features and
        sampled neighbours through the trained weights; a learned per-node input gives
        them their old neighbours' mean row, :func:`~graphsys.gnn.checkpoint.grown_rows`).
        A graph whose old nodes moved is refused in one line.
    device : str or torch.device, optional
        Where inference runs (default ``"cpu"``).
    log : callable, optional
        Called with a line per partition written.
    progress : bool or callable, optional
        Progress over layers x nodes, by :func:`graphsys.progress.display`'s rule.

    Returns
    -------
    dict
        ``entity_type``, ``num_nodes``, ``dimension``, ``out``, ``files``.

    Raises
    ------
    GraphsysError
        A checkpoint of a user model (only builtin models are rebuilt), an entity type the
        graph lacks, an ``out`` that already holds embeddings.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys.embed import Embeddings
    >>> from graphsys.generators import sbm
    >>> from graphsys.gnn import TrainConfig, embed_checkpoint, train
    >>> m = sbm(200, 1000, blocks=4, features=8, train_per_class=10, num_val=40, num_test=100)
    >>> nodes, edges = next(m.nodes()), next(m.edges())
    >>> work = tempfile.mkdtemp()
    >>> g = graphsys.from_numpy(edges["src"], edges["dst"], work + "/sbm", num_nodes=200,
    ...                         undirected=True,
    ...                         node_columns={k: v for k, v in nodes.items() if k != "id"})
    >>> _ = train(g, TrainConfig(fanouts=[5, 5], hidden=16, epochs=2), out=work + "/run")
    >>> info = embed_checkpoint(work + "/run/checkpoint", work + "/emb")
    >>> info["num_nodes"], info["dimension"]                # 4 class scores per node
    (200, 4)
    >>> Embeddings.load(work + "/emb").to_numpy().shape
    (200, 4)
    """
    state, config, meta = load_checkpoint(checkpoint)
    if config.get("model") == RGCN:
        return _embed_rgcn(checkpoint, out, graph, log)
    if config.get("model") in TEMPORAL_MODELS:
        from graphsys.gnn.temporal_score import embed_temporal

        return embed_temporal(checkpoint, out, graph=graph, device=device, log=log)
    if graph is None:
        graph = open_graph(meta_field(meta, "graph", checkpoint))
    old = check_graph(meta, graph, checkpoint, grown=True)
    cfg = train_config_of(meta, checkpoint)
    device = resolve_device(device)
    et = meta_field(meta, "entity_type", checkpoint)
    task = meta_field(meta, "task", checkpoint)
    if et not in graph.entity_types:
        raise GraphsysError(f"checkpoint is for entity type {et!r}, which {graph.path} lacks")
    if config.get("model") not in GNN_MODELS:
        raise GraphsysError(f"{checkpoint}: a user model ({config.get('model')}); streaming "
                            f"inference embeds the builtin models "
                            f"({', '.join(GNN_MODELS.names())}) only")
    check_task_dimensions(checkpoint, config, cfg, state)  # before anything is sized
    model = GNN(**config).to(device)
    load_module_state(model, state, "model.", checkpoint)
    n = graph.num_nodes(et)
    if task == "node":
        features = meta.get("features")       # the node column the run was given
        if "features" in meta and features is None:
            raise GraphsysError(f"{checkpoint}: trained on features given as an array; "
                                f"streaming inference reads node columns only (store them as "
                                f"one and train with features=<column>)")
        if features is not None:
            meta_field(meta, "features", checkpoint)
        x = node_task_data(graph, et, cfg.seed, features)["x"]
        make_input = lambda: NodeInput(x, n, cfg.hidden)  # noqa: E731
        adj = homogeneous_adjacency(graph, et, symmetric=True)
        block_fn = eval_blocks(node_sampler(cfg, adj), cfg.seed)
    elif meta.get("link_split") in ("random", "time"):
        inp, block_fn = _held_out_edges_model(graph, cfg, meta, checkpoint)
        make_input = None
    else:
        other = meta_field(meta, "other_type", checkpoint)
        if other not in graph.entity_types:
            raise GraphsysError(f"checkpoint's user type {other!r} is not in {graph.path}")
        feat = (torch.from_numpy(graph.node_column("feat", et))
                if meta_field(meta, "has_features", checkpoint, bool) else None)
        make_input = lambda: ItemInput(n, feat, cfg.hidden)  # noqa: E731
        users, items, train_m, _, _ = interaction_split(graph, et, other, cfg.seed)
        fw = from_coo(items[train_m], users[train_m], n, graph.num_nodes(other))
        bw = fw.transpose()
        block_fn = eval_blocks(walk_sampler(cfg, fw, bw, cfg.fanouts or [10, 10]), cfg.seed)
    if old is not None and et in old:  # grown by appends: per-node rows of the new nodes
        state = grown_rows(state, "input.", graph, et, old[et])
    if make_input is None:
        load_module_state(inp, state, "input.", checkpoint)
    else:   # cfg.hidden is model.json's word: checked against the tensors before it is built
        inp = build_to_fit(make_input, state, "input.", checkpoint)
    inp = inp.to(device).eval()
    writer = EmbeddingWriter(out, graph, et)
    ranges = partition_ranges(graph, et)

    def on_partition(k: int, h: torch.Tensor) -> None:
        writer(k, h)
        if log:
            log(f"partition {k}: {h.shape[0]:,} embeddings written")

    try:
        layerwise_inference(model, inp, n, block_fn, ranges, device=device,
                            on_partition=on_partition, progress=progress)
        writer.finish({"checkpoint": str(checkpoint), "task": task})
    finally:  # finished or not, the directory is released
        writer.close()
    return {"entity_type": et, "num_nodes": n, "dimension": writer.dim, "out": str(out),
            "files": writer.files}
