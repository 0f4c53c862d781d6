"""One training step of fixed shapes captured as a CUDA graph and replayed (``cuda_graphs``).

The device-resident loop (:meth:`graphsys.embed.trainer.Trainer._train_resident`) makes no
host synchronisation inside a step, so :class:`StepGraph` runs a bucket's first step eagerly
on a side stream (the warm-up), captures the second into a graph (its batch read from a
static buffer, its negatives drawn from the loop's generator, registered with the graph so
each replay draws new numbers) and replays it for every later step of that shape; a step of
another shape runs eagerly. :func:`capture_refusal` says, from the config alone, why a run's
steps would not be captured; the trainer then runs them eagerly, with one logged line.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from graphsys.embed.model import BMM_MAX_ELEMENTS


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
        graph.register_generator_state(self.generator)
        self.static = idx.clone()
        # the capture stream is the current device's: make it the batch's (a cuda:k run)
        with torch.cuda.device(idx.device), \
                torch.cuda.graph(graph, capture_error_mode="thread_local"):  # prefetch thread
            body(self.static)
        graph.replay()
        self.graph = graph


def capture_refusal(cfg, operators: list[str]) -> str | None:
    """Why the steps of a run of ``cfg`` (an :class:`~graphsys.embed.config.EmbedConfig`)
    over relations of ``operators`` (each relation's) would not be captured, or None. The
    step captured is the closed form's (the dot comparator, the softmax loss, in-batch or
    all negatives: :mod:`graphsys.embed.dot_softmax`) with one operator for every relation
    and every row trainable: relations of several operators are split by a mask, and
    ``freeze_old`` drops rows by one, each a size read on the host; a linear or affine
    operator reads its relations on the host beyond ``BMM_MAX_ELEMENTS``.

    Examples
    --------
    >>> from graphsys.embed import load_config
    >>> cfg = load_config(dimension=16, comparator="dot", loss_fn="softmax")
    >>> capture_refusal(cfg, ["diagonal", "translation"])
    'relations of 2 operators are split by a mask (a host read)'
    >>> capture_refusal(load_config(comparator="cos"), ["diagonal"])[:37]
    'only the closed-form step is captured'
    """
    full = cfg.batch_size * cfg.batches_per_step
    if cfg.comparator != "dot" or cfg.loss_fn != "softmax" or not (
            cfg.all_negs or (cfg.num_batch_negs > 0 and full >= 2)):
        return ("only the closed-form step is captured (comparator 'dot', loss_fn "
                "'softmax', in-batch or all negatives)")
    kinds = sorted(set(operators))
    if len(kinds) > 1:
        return f"relations of {len(kinds)} operators are split by a mask (a host read)"
    if kinds and kinds[0] in ("linear", "affine") and full * cfg.dimension ** 2 > \
            BMM_MAX_ELEMENTS:
        return (f"the {kinds[0]} operator reads a batch's relations on the host beyond "
                f"{BMM_MAX_ELEMENTS} batch x d x d elements")
    if cfg.freeze_old:
        return "freeze_old drops the frozen rows by a mask (a host read)"
    if not hasattr(torch.cuda.CUDAGraph, "register_generator_state"):
        return f"torch {torch.__version__} cannot replay a generator's draws in a CUDA graph"
    return None
