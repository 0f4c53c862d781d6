"""Numba kernels that more than one engine runs, written once: connected components
(:mod:`graphsys.kernels.components`) and core numbers (:mod:`graphsys.kernels.cores`). This
layer sits directly above storage; the engines (bsp, measures, mining, ...) import it, it
imports no engine."""
