"""Numba kernels that more than one engine runs, written once: breadth-first search
(:mod:`graphsys.kernels.bfs`), connected components (:mod:`graphsys.kernels.components`),
core numbers (:mod:`graphsys.kernels.cores`), eigenvector/Katz centrality's weighted pull
product and square clustering's counts (:mod:`graphsys.kernels.centrality`), the atomic
add of parallel loops (:mod:`graphsys.kernels.atomic`) and the read-only views an engine
hands its kernels (:mod:`graphsys.kernels.arrays`). This layer sits directly above storage;
the views and the engines (bsp, measures, mining, ...) import it, it imports neither."""
