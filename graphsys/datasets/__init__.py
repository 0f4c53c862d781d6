"""The dataset registry and its fetch/ingest pipeline.

:func:`load_dataset` is the one call that turns a dataset name into a graph: it fetches
the files (cache, local mirror or the publisher, each verified by sha256) and ingests them
as the registry entry says. Underneath, :mod:`graphsys.datasets.registry` reads the TOML
entries (``<repo>/datasets/*.toml``; :func:`load_registry`, :func:`get_dataset`),
:mod:`graphsys.datasets.fetch` gets and verifies their files
(:func:`graphsys.datasets.fetch.fetch`), and
:mod:`graphsys.datasets.loaders` turns the files into ingest inputs and ingests them.

Examples
--------
>>> from graphsys.datasets import get_dataset, load_registry
>>> "cora" in load_registry()
True
>>> cora = get_dataset("cora")
>>> cora.kind, cora.stats["nodes"], cora.licence.redistribute
('homogeneous', 2708, True)
"""

from graphsys.datasets.loaders import load_dataset
from graphsys.datasets.registry import Dataset, get_dataset, load_registry

__all__ = ["Dataset", "get_dataset", "load_dataset", "load_registry"]
