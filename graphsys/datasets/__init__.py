"""The dataset registry and its fetch/ingest pipeline.

:mod:`graphsys.datasets.registry` reads the TOML entries (``<repo>/datasets/*.toml``),
:mod:`graphsys.datasets.fetch` gets and verifies their files, and
:mod:`graphsys.datasets.loaders` turns the files into ingest inputs and ingests them.
"""
