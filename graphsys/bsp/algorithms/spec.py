"""What the registry knows of a vertex algorithm: :class:`AlgorithmSpec`.

``graphsys run ALGO``, ``graphsys profile ALGO`` and the Python front-ends
(:func:`~graphsys.bsp.algorithms.pagerank.pagerank`, ...) all build their program and their
default superstep limit from the spec registered under ``ALGO`` in
:data:`graphsys.plugins.ALGORITHMS`; the rules live here once.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphsys import openmp
from graphsys.bsp import incremental
from graphsys.bsp.algorithms.common import open_if_path
from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.program import VertexProgram
from graphsys.errors import ConvergenceWarning, GraphsysError, ParameterError
from graphsys.execution import FIELDS, Execution
from graphsys.threads import numba_threads


@dataclass(frozen=True)
class AlgorithmSpec:
    """A vertex algorithm as the CLI, the profiler and the front-ends see it.

    Attributes
    ----------
    name : str
        The registry name (``"pagerank"``).
    program : callable
        ``program(graph, source=, edge_set=, **params) -> VertexProgram``: the program a
        run executes and the profiler profiles; ``source`` is the original id of the
        source node (None when :attr:`needs_source` is false), ``params`` are among
        :attr:`parameters` (left out: the program's defaults).
    default_max_iters : callable
        ``default_max_iters(num_nodes) -> int``, the superstep limit when the caller gives
        none.
    needs_source : bool
        Whether the algorithm starts from one source node.
    parameters : tuple of str
        The algorithm's tunable keyword parameters besides ``max_iters``
        (``("damping", "tol")``); the CLI refuses the others' flags.
    finish : callable, optional
        ``finish(result) -> Result`` applied to the engine's result (e.g. HITS normalises
        its scores); not part of what the profiler measures.
    warm_start : callable, optional
        ``warm_start(spec, graph, previous, source=, params=, max_iters=, execution=,
        **engine_options) -> Result``: the run started from a stored result of an earlier
        version of the edges (:mod:`graphsys.bsp.incremental`), for :meth:`run`'s
        ``init``; None: the algorithm takes no ``init``.
    """

    name: str
    program: Callable[..., VertexProgram]
    default_max_iters: Callable[[int], int]
    needs_source: bool = False
    parameters: tuple[str, ...] = ()
    finish: Callable[[Result], Result] | None = None
    warm_start: Callable[..., Result] | None = None

    def max_iters(self, graph, max_iters: int | None = None) -> int:
        """``max_iters`` when given, else the default limit for ``graph``."""
        return max_iters if max_iters is not None else self.default_max_iters(
            graph.num_nodes())

    def check_source(self, source) -> None:
        """ParameterError when a source is missing or given where none is taken."""
        if self.needs_source and source is None:
            raise ParameterError("source", f"is needed by {self.name}: give a node id")
        if not self.needs_source and source is not None:
            raise ParameterError("source", f"does not apply to {self.name}")

    def warn_unconverged(self, result: Result, limit: int, stacklevel: int = 3) -> None:
        """A :class:`ConvergenceWarning` where ``result`` stopped at ``limit`` supersteps
        before converging (``stacklevel`` counted from this call)."""
        if not result.stats.converged:
            warnings.warn(f"{self.name} did not converge within {limit:,} supersteps (its "
                          f"max_iters): the values are the last iterate",
                          ConvergenceWarning, stacklevel=stacklevel)

    def make(self, graph, *, source=None, edge_set: str | None = None,
             **params: Any) -> VertexProgram:
        """The program for ``graph``: ``params`` outside :attr:`parameters` are refused and
        None values left to the program's defaults."""
        unknown = sorted(set(params) - set(self.parameters))
        if unknown:
            raise GraphsysError(f"{self.name} takes no parameter {', '.join(unknown)}")
        given = {k: v for k, v in params.items() if v is not None}
        graph = open_if_path(graph)   # one entity type, before a source is looked up
        if self.needs_source:
            return self.program(graph, source=source, edge_set=edge_set, **given)
        return self.program(graph, edge_set=edge_set, **given)

    def run(self, graph, source=None, *, max_iters: int | None = None, init=None,
            execution: Execution | None = None, **kwargs: Any) -> Result:
        """Run on ``graph`` (an opened Graph or a directory): ``kwargs`` among
        :attr:`parameters` configure the program, those among :data:`~graphsys.execution.
        FIELDS` (or ``execution``) make the run's :class:`~graphsys.execution.Execution`,
        the rest go to :func:`graphsys.bsp.engine.run` (edge_set, fuse, ...); ``init``
        (a previous result: a Parquet file, a table or a Result) starts the run from it
        (:attr:`warm_start`). The result records its :attr:`Result.provenance
        <graphsys.bsp.result.Result.provenance>`. A run that stops at ``max_iters`` before
        converging issues a :class:`ConvergenceWarning` (its ``result.stats.converged`` is
        False)."""
        openmp.apply_wait_policy()
        graph = open_if_path(graph)
        params = {k: kwargs.pop(k) for k in self.parameters if k in kwargs}
        ex = kwargs["execution"] = Execution.of(execution, **{k: kwargs.pop(k) for k in FIELDS
                                                              if k in kwargs})
        self.check_source(source)
        edge_set = kwargs.get("edge_set")
        if init is not None and self.warm_start is None:
            raise ParameterError("init", f"{self.name} does not start from a previous result")
        with numba_threads(ex.threads):
            graph.edge_set(edge_set)  # refused first: an unknown name, a change set alone
            limit = self.max_iters(graph, max_iters)
            if init is not None:
                previous = incremental.read_previous(graph, init, self.name, edge_set, source)
                result = self.warm_start(self, graph, previous, source=source, params={
                    k: v for k, v in params.items() if v is not None}, max_iters=max_iters,
                    **kwargs)
            else:  # the engine's own thread setting is this one: its body called directly
                prog = self.make(graph, source=source, edge_set=edge_set, **params)
                result = run_program.__wrapped__(graph, prog, max_iters=limit, **kwargs)
            self.warn_unconverged(result, limit, stacklevel=4)
            result = self.finish(result) if self.finish is not None else result
            result.provenance = incremental.provenance(
                self.name, graph, edge_set, source, params, result.stats.num_supersteps,
                result.stats.converged, result.stats.residual)
        return result
