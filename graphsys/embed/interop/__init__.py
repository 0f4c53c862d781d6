"""Interop with other embedding systems, as a leaf: nothing in :mod:`graphsys.embed`'s core
imports it (:mod:`graphsys.embed.api` and :mod:`graphsys.commands` do).

- :mod:`.pbg_config`: PyTorch-BigGraph configs (``.py``, parsed and never run, or JSON)
  translated to graphsys settings and matched to a graph
- :mod:`.pbg_checkpoint`: PyTorch-BigGraph checkpoints imported into graphsys checkpoints
  (written through :class:`~graphsys.embed.checkpoint.CheckpointManager`)
- :mod:`.pbg_files`: reading PBG's checkpoint files (HDF5, names, optimizer blobs)
"""
