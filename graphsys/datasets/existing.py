"""A graph directory that already holds a registry dataset: what
:func:`graphsys.datasets.load_dataset` opens on a second run instead of ingesting again.
The manifest's ``metadata`` (:func:`graphsys.datasets.loaders.dataset_metadata`) and
partitioning must be what the call asks for (dataset, registry files' sha256, split,
partitions, partitioner); anything else is refused in one line naming what is there.
"""

from __future__ import annotations

from pathlib import Path

from graphsys.errors import GraphsysError


def open_existing(out: str | Path, dataset, split: str, partitions: int, partitioner: str):
    """The graph at ``out`` if it holds ``dataset`` (a registry entry) as asked, None when
    ``out`` holds no graph (no ``manifest.json``: the ingest decides), else a one-line
    :class:`GraphsysError` saying what ``out`` holds instead."""
    from graphsys.storage.graph import open_graph

    out = Path(out)
    if not (out / "manifest.json").exists():
        return None
    name = dataset.name
    again = "(remove it, or choose another directory)"
    try:
        graph = open_graph(out)
    except GraphsysError as exc:
        raise GraphsysError(f"{out}: holds no readable graph, not dataset {name!r} ({exc}) "
                            f"{again}") from None
    meta = graph.manifest.metadata or {}
    held = meta.get("dataset")
    if held != name:
        what = f"dataset {held!r}" if isinstance(held, str) else "a graph of no dataset"
        raise GraphsysError(f"{out}: holds {what}, not dataset {name!r} {again}")
    registry = {f.name: f.sha256 for f in dataset.files}
    inputs = meta.get("inputs")
    if not isinstance(inputs, dict) or not inputs or any(
            not isinstance(v, dict) or registry.get(k) != v.get("sha256")
            for k, v in inputs.items()):
        raise GraphsysError(f"{out}: holds dataset {name!r} ingested from files other than "
                            f"the registry's (their sha256 differ) {again}")
    stored = meta.get("ingest_split")
    if stored is not None and stored != split:
        raise GraphsysError(f"{out}: holds dataset {name!r} with the {stored} split, not "
                            f"{split} {again}")
    m = graph.manifest
    if m.num_partitions != partitions or m.partitioner.get("name") != partitioner:
        raise GraphsysError(f"{out}: holds dataset {name!r} in {m.num_partitions} partitions "
                            f"by {m.partitioner.get('name')!r}, not {partitions} by "
                            f"{partitioner!r} {again}")
    return graph
