"""Streaming inference: every node's final representation, one layer over all nodes at a
time and partition by partition (PinSage's MapReduce-style inference, which computes each
node's layer-``l`` state once instead of once per neighbourhood it appears in), and the
Arrow embedding files it writes.

Output layout (:class:`EmbeddingWriter`; :data:`graphsys.embed.embeddings.ARROW_FORMAT`)::

    <out>/embeddings.json            {"format": "graphsys-gnn-embeddings", "entity_type",
                                      "dimension", "num_nodes", "partitions": [file, ...],
                                      "graph", "meta"}
    <out>/<entity_type>/part-<p>.arrow   Arrow IPC file: id (original ids), embedding
                                      fixed_size_list<float32>[dimension]

:meth:`graphsys.embed.Embeddings.load` reads it back (``vector``, ``vectors``, ``to_numpy``,
``nearest`` by cosine or dot, the exports).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as paipc
import torch
from tqdm import tqdm

from graphsys.embed.embeddings import ARROW_FORMAT, ARROW_INDEX
from graphsys.errors import GraphsysError
from graphsys.gnn.model import GNN
from graphsys.sampling.block import Block
from graphsys.storage.atomic import atomic_path, write_bytes_atomic
from graphsys.storage.graph import Graph

#: Destination nodes per inference step inside a partition.
CHUNK_ROWS = 1 << 14


def _chunks(ranges: list[tuple[int, int]], rows: int):
    for lo, hi in ranges:
        for a in range(lo, hi, rows):
            yield a, min(hi, a + rows)


@torch.no_grad()
def layerwise_inference(model: GNN, inputs: Callable[[torch.Tensor], torch.Tensor],
                        num_nodes: int, block_fn: Callable[[np.ndarray, int], Block],
                        ranges: list[tuple[int, int]], *, device: str | torch.device = "cpu",
                        on_partition: Callable[[int, torch.Tensor], None] | None = None,
                        chunk_rows: int = CHUNK_ROWS, progress: bool = False) -> torch.Tensor:
    """Final outputs of ``model`` for nodes ``0..num_nodes-1``, float32 (num_nodes, out_dim)
    on the CPU.

    Args:
        inputs: node ids int64 (n,) on ``device`` -> layer-0 features (n, in_dim).
        block_fn: ``(dst_nodes int64 (n,), layer) -> Block`` with those destinations
            (full neighbourhoods, or a fixed-seed sample).
        ranges: ``(lo, hi)`` node ranges covering all nodes, one per storage partition.
        on_partition: called as ``(k, outputs of range k)`` when a range's final outputs
            are ready (to stream them to disk).
        progress: show a tqdm bar (on stderr) over layers x nodes.
    Layer ``l`` is computed for every node before layer ``l+1`` starts; the states of one
    layer (num_nodes x width floats) are held in CPU memory.
    """
    model.eval()
    device = torch.device(device)
    prev: torch.Tensor | None = None
    bar = (tqdm(total=model.num_layers * num_nodes, unit="node", unit_scale=True,
                dynamic_ncols=True, desc="embed") if progress else nullcontext())
    with bar:
        for layer in range(model.num_layers):
            if progress:
                bar.set_description(f"embed layer {layer + 1}/{model.num_layers}")
            last = layer == model.num_layers - 1
            out: torch.Tensor | None = None
            for k, (lo, hi) in enumerate(ranges):
                parts = []
                for a, b in _chunks([(lo, hi)], chunk_rows):
                    block = block_fn(np.arange(a, b, dtype=np.int64), layer).to(device)
                    src = block.src_nodes
                    x = inputs(src) if prev is None else prev.index_select(
                        0, src.cpu()).to(device)
                    parts.append(model.layer(layer, x, block).float().cpu())
                    if progress:
                        bar.update(b - a)
                h = torch.cat(parts) if parts else torch.zeros(0, model.out_dim)
                if out is None:
                    out = torch.empty(num_nodes, h.shape[1])
                out[lo:hi] = h
                if last and on_partition is not None:
                    on_partition(k, h)
            prev = out
    return prev


def partition_ranges(graph: Graph, entity_type: str) -> list[tuple[int, int]]:
    """Type-local node range of each storage partition of ``entity_type``."""
    off = graph.partition_offsets(entity_type)
    return [(int(off[p]), int(off[p + 1])) for p in range(len(off) - 1)]


class EmbeddingWriter:
    """Writes one Arrow file per partition as inference finishes it, then the JSON index."""

    def __init__(self, out: str | Path, graph: Graph, entity_type: str):
        self.out = Path(out)
        if (self.out / ARROW_INDEX).exists():
            raise GraphsysError(f"{self.out}: already holds embeddings (choose a new output "
                                f"directory)")
        (self.out / entity_type).mkdir(parents=True, exist_ok=True)
        self.graph, self.etype = graph, entity_type
        self.files: list[str] = []
        self.dim = None

    def __call__(self, partition: int, emb: torch.Tensor) -> None:
        arr = emb.numpy().astype(np.float32, copy=False)
        self.dim = arr.shape[1]
        ids = self.graph.node_ids(self.etype, partition)
        col = pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1), pa.float32()),
                                                arr.shape[1])
        table = pa.table({"id": ids, "embedding": col})
        rel = f"{self.etype}/part-{partition}.arrow"
        with atomic_path(self.out / rel, overwrite=True) as tmp:
            with paipc.new_file(str(tmp), table.schema) as w:
                w.write_table(table)
        self.files.append(rel)

    def finish(self, meta: dict | None = None) -> Path:
        header = {"format": ARROW_FORMAT, "entity_type": self.etype, "dimension": self.dim,
                  "num_nodes": self.graph.num_nodes(self.etype), "partitions": self.files,
                  "graph": str(self.graph.path), "meta": meta or {}}
        write_bytes_atomic(self.out / ARROW_INDEX, json.dumps(header, indent=1).encode())
        return self.out

