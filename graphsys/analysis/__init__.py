"""Where graph workloads lose GPU efficiency (after Xu, Jeon & Annavaram, IISWC 2014).

* :mod:`~graphsys.analysis.kernels`: kernel/operator invocations, host<->device transfers and
  synchronisations through ``torch.profiler``, and a dense MLP reference workload;
* :mod:`~graphsys.analysis.simt`: an exact, vectorized SIMT lane-utilization and
  SM/CTA/warp load-balance model of vertex-to-thread mappings;
* :mod:`~graphsys.analysis.timing`: the wall time of the profiled run split into named
  parts (start-up, JIT, setup, each kernel and operator, I/O, sampling, evaluation, ...);
* :mod:`~graphsys.analysis.balance`: partition, bucket and per-rank balance from storage;
* :mod:`~graphsys.analysis.workloads`: BSP and embedding workloads to profile,
  :mod:`~graphsys.analysis.gnn_workload` the GNN one;
* :mod:`~graphsys.analysis.ncu`: the model checked against Nsight Compute's measured threads
  per warp instruction of the engine's CUDA kernels (``graphsys profile --ncu``);
* :mod:`~graphsys.analysis.report`: HTML reports (embedded plots) and advice.

Entry points: :func:`profile_graph`, :func:`write_report`, :func:`key_figures`,
:func:`simt_model`; on the command line ``graphsys profile``.
"""

from graphsys.analysis.profile import key_figures, profile_graph, write_report
from graphsys.analysis.simt import simt_model

__all__ = ["key_figures", "profile_graph", "simt_model", "write_report"]
