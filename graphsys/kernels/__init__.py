"""Numba kernels that more than one engine runs, written once: breadth-first search
(:mod:`graphsys.kernels.bfs`), connected components (:mod:`graphsys.kernels.components`)
and core numbers (:mod:`graphsys.kernels.cores`). This
layer sits directly above storage; the engines (bsp, measures, mining, ...) import it, it
imports no engine."""
