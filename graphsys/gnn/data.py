"""Graph sources of ``graphsys gnn``: a registry dataset (fetched and ingested into the
cache once) or a graph directory, plus device selection."""

from __future__ import annotations

import fcntl
from pathlib import Path

from graphsys.errors import GraphsysError
from graphsys.storage.graph import Graph, open_graph


def open_source(dataset: str | None = None, graph: str | Path | None = None, *,
                mirror: str | Path | None = None, cache: str | Path | None = None,
                partitions: int = 2, split: str | None = None, log=None) -> Graph:
    """Open ``graph``, or fetch + ingest the registry ``dataset`` with ``split`` (``public``
    or ``random``; None = public where the dataset has it) into
    ``<cache>/graphs/<name>-<split>-p<partitions>`` (``<name>-p<partitions>`` for a dataset
    whose split is not stored in the graph, as a temporal one) (reused when present) and
    open that."""
    if (dataset is None) == (graph is None):
        raise GraphsysError("give exactly one graph source: dataset (a registry name) or "
                            "graph (a directory)")
    if graph is not None:
        if split is not None:
            raise GraphsysError("a split is chosen with a registry dataset, not a graph "
                                "directory (whose masks are stored)")
        return open_graph(graph)
    from graphsys.datasets.fetch import cache_dir, fetch
    from graphsys.datasets.loaders import SPLITS, default_split, ingest_dataset
    from graphsys.datasets.registry import get_dataset
    from graphsys.storage.ingest import IngestOptions

    ds = get_dataset(dataset)
    split = split or default_split(ds)
    if split not in SPLITS:
        raise GraphsysError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    # the split names the graph only where it changes what is stored (a dataset without a
    # stored split, e.g. a temporal one split by time in training, is one graph)
    named = split != "random" or ds.split.get("method") == "per-class-random"
    name = f"{ds.name}-{split}" if named else ds.name
    out = cache_dir(cache) / "graphs" / f"{name}-p{partitions}"
    if not (out / "manifest.json").is_file():
        # the ranks of a torchrun job (or any processes) given the same dataset: the first
        # to take the lock fetches and ingests it, the others wait for it and open its graph
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f".{out.name}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / "manifest.json").is_file():
                fetched = fetch(ds, cache=cache, mirror=mirror, log=log)
                ingest_dataset(fetched, out, IngestOptions(partitions=partitions), split)
    return open_graph(out)
