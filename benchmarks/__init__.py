"""graphsys's benchmarks: one folder per area, one harness (:mod:`benchmarks.harness`).

See ``benchmarks/README.md``: how to run each benchmark and how to add one.
"""
