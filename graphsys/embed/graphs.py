"""One training step of fixed shapes captured as a CUDA graph and replayed (``cuda_graphs``).

The device-resident loop (:meth:`graphsys.embed.trainer.Trainer._train_resident`) makes no
host synchronisation inside a step, so a step can be captured: its hundred-odd kernel
launches then cost one graph launch. :class:`StepGraph` runs the first step of a bucket
eagerly on a side stream (the warm-up that creates cuBLAS handles, workspaces and the
tensors made once, such as a degree table's device copy), captures the second into a graph
(reading its batch from a static buffer, drawing its negatives from the loop's generator,
registered with the graph so that each replay draws new numbers) and replays it for every
later step of the same shape; a step of another shape (the bucket's last) runs eagerly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from graphsys.errors import ConfigError


class StepGraph:
    """Capture and replay of one bucket's steps of one shape (see the module docstring).

    Parameters
    ----------
    generator : torch.Generator
        The CUDA generator the step draws from.
    """

    def __init__(self, generator: torch.Generator):
        self.generator = generator
        self.graph: torch.cuda.CUDAGraph | None = None
        self.static: torch.Tensor | None = None
        self.warm = False

    def run(self, idx: torch.Tensor, body: Callable[[torch.Tensor], None]) -> None:
        """Run ``body(idx)`` (a step that writes its results in place): eagerly the first
        time, captured the second, replayed on a copy of ``idx`` after."""
        if self.graph is not None:
            self.static.copy_(idx)
            self.graph.replay()
            return
        current = torch.cuda.current_stream(idx.device)
        if not self.warm:
            side = torch.cuda.Stream(device=idx.device)
            side.wait_stream(current)
            with torch.cuda.stream(side):
                body(idx)
            current.wait_stream(side)
            self.warm = True
            return
        graph = torch.cuda.CUDAGraph()
        if not hasattr(graph, "register_generator_state"):
            raise ConfigError(f"cuda_graphs: torch {torch.__version__} cannot capture a "
                              f"generator's draws in a CUDA graph (set cuda_graphs = false)")
        graph.register_generator_state(self.generator)
        self.static = idx.clone()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):  # prefetch thread
            body(self.static)
        graph.replay()
        self.graph = graph
