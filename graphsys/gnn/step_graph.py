"""A node-classification training step as one CUDA graph: sample, gather, forward, backward
and update replayed in one launch, with no host read.

A minibatch step of :class:`~graphsys.gnn.NodeLoader` reads the sizes of its sample once
(the blocks' shapes depend on it), so the host waits for the device every step and issues
the step's few dozen kernels one by one. :class:`NodeStepGraph` draws the batch in padded
shapes fixed by the batch size (:meth:`DeviceNeighborSampler.padded_blocks
<graphsys.sampling.DeviceNeighborSampler.padded_blocks>`), so that the whole step (the
sampler's draw, the feature and label gathers, the model, the loss, the backward pass and
the optimiser's update) has static shapes and no host read, and records it once as a CUDA
graph that each step replays. An epoch uploads its batches' seeds and stream keys in one
copy and reads its loss and accuracy once, at its end.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.nn.functional as F

from graphsys.device import note_launch
from graphsys.errors import GraphsysError, check_count
from graphsys.gnn.model import GNN
from graphsys.sampling._util import as_seed_array, derive_seed, seed_entropy
from graphsys.sampling.device import (
    DeviceNeighborSampler,
    _in_process_group,
    as_int64,
)
from graphsys.sampling.neighbor import NeighborSampler
from graphsys.trace import trace_range
from graphsys.units import format_size

#: The label of a padding row: ``F.cross_entropy``'s ``ignore_index``
PAD_LABEL = -100
#: Eager steps run before the graph is recorded (torch's lazy initialisations, the
#: optimiser's state, the sampler's kept ranges): real steps of the first batches
WARMUP_STEPS = 3
_GOLDEN = 0x9E3779B97F4A7C15


def table_bytes(shape: tuple[int, ...], num_nodes: int) -> int:
    """Bytes of the device tables of :class:`NodeStepGraph` for features of ``shape``:
    float32 features and int64 labels, a padding row included."""
    width = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (num_nodes + 1) * (4 * width + 8)


def fits_device(shape: tuple[int, ...], num_nodes: int, device: torch.device,
                share: float = 1.0) -> bool:
    """Whether :class:`NodeStepGraph`'s tables (:func:`table_bytes`) fit ``share`` of
    ``device``'s free memory now (always, off CUDA)."""
    return device.type != "cuda" or table_bytes(shape, num_nodes) <= \
        share * torch.cuda.mem_get_info(device)[0]


class NodeStepGraph:
    """Training steps of a node classifier (GraphSAGE, GCN, GAT or GIN), each one replay of
    a CUDA graph.

    Each batch is the one :class:`~graphsys.gnn.NodeLoader` makes of the same seeds,
    ``batch_size`` and ``seed`` (shuffled by ``derive_seed(seed, epoch)``, sampled with
    ``rng_seed = derive_seed(seed, epoch, i)``), drawn by a
    :class:`~graphsys.sampling.DeviceNeighborSampler` as padded blocks
    (:class:`~graphsys.sampling.PaddedBlock`: the same picks, in shapes fixed by the batch
    size; a last, smaller batch is padded to it). The step's loss is the cross-entropy of
    the batch's real seeds, its update ``optimizer.step()`` on gradients set (not
    accumulated) by the backward pass. On CUDA the step runs eagerly for
    :data:`WARMUP_STEPS` batches and is then recorded once as a CUDA graph: per step one
    copy on the device (the batch's seeds and keys into the graph's input) and one
    replay, no transfer and no host synchronisation. Elsewhere the same operators run
    eagerly.

    Parameters
    ----------
    model : GNN
        A ``GNN`` whose layers take padded blocks (their ``takes_padded``: the builtin
        ``"sage"``, ``"gcn"``, ``"gat"`` and ``"gin"``), one layer per fanout, on the device
        the steps run on.
    optimizer : torch.optim.Optimizer
        Its parameters' optimiser; its groups are made ``capturable`` when the graph is
        recorded (the step counts kept on the device), which torch's Adam, AdamW and SGD
        support. Its learning rate is read then too.
    sampler : DeviceNeighborSampler or NeighborSampler
        Fixed fanouts; a NeighborSampler is drawn on the model's device. The neighbour ids
        on the device or read through UVA (not ``csr="staged"``).
    features : tensor or array (N, F)
        Every node's input row, copied once to the device (float32, with a zero row for
        the padding node); refused where it and the labels do not fit the device's free
        memory.
    labels : int tensor or array (N,)
        Every node's class, copied once to the device.
    batch_size : int
        Seeds a step.
    seed : int, optional
        The batches' seed (default 0), as NodeLoader's.
    cuda_graph : bool or None, optional
        Record the step as a CUDA graph (default None: on CUDA). True elsewhere is
        refused. A recording that fails is reported in one warning and the steps run
        eagerly (:attr:`captured` stays False).

    Attributes
    ----------
    captured : bool
        The steps replay a recorded graph.
    steps : int
        Steps taken.

    Raises
    ------
    GraphsysError
        A model whose layers do not take padded blocks, a layer count other than the
        sampler's, a fanout of -1, ``csr="staged"``, features or labels of another node
        count (or beyond the device's free memory), a ``torch.distributed`` process group,
        or ``cuda_graph=True`` off CUDA; in :meth:`epoch`, seeds repeated, outside the graph
        or labelled outside the model's classes.

    See Also
    --------
    graphsys.gnn.NodeLoader : the same batches as exact blocks, for any model.

    Notes
    -----
    The input dropout and the hidden layers' are the model's (torch's on CUDA, whose
    random stream a replayed graph advances), so a step's masks differ from those of a
    NodeLoader whose workers apply the input dropout. A padded batch computes the
    padding rows too: at most ``size * (k + 1)`` rows for a layer of ``size`` destination
    rows and fanout ``k``, where an exact block holds its distinct sources only.
    ``tests/gnn/test_step_graph.py`` pins a step's launches, transfers and
    synchronisations (:mod:`graphsys.analysis.device_counts`).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.gnn import GNN, NodeStepGraph
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> rng = np.random.default_rng(0)
    >>> src, dst = rng.integers(0, 200, 2000), rng.integers(0, 200, 2000)
    >>> adj = from_coo(np.r_[src, dst], np.r_[dst, src], 200, 200)
    >>> x = torch.randn(200, 8)
    >>> y = (x[:, 0] > 0).long()                     # a class the features tell
    >>> _ = torch.manual_seed(0)
    >>> model = GNN("sage", 8, 16, 2, num_layers=2, dropout=0.0)
    >>> opt = torch.optim.Adam(model.parameters(), lr=0.05)
    >>> steps = NodeStepGraph(model, opt, NeighborSampler(adj, [5, 5]), x, y, batch_size=50)
    >>> first = steps.epoch(np.arange(200), 0)
    >>> for epoch in range(1, 10):
    ...     last = steps.epoch(np.arange(200), epoch)
    >>> first["steps"], last["loss"] < first["loss"], last["accuracy"] > 0.8
    (4, True, True)
    """

    def __init__(self, model: GNN, optimizer: torch.optim.Optimizer, sampler, features,
                 labels, batch_size: int, *, seed: int = 0, cuda_graph: bool | None = None):
        if not isinstance(model, GNN) or not all(getattr(c, "takes_padded", False)
                                                 for c in model.convs):
            raise GraphsysError(f"NodeStepGraph trains a GNN whose layers take padded blocks "
                                f"(sage, gcn, gat, gin); got {type(model).__name__}"
                                + (f"({model.model!r})" if isinstance(model, GNN) else ""))
        self.batch_size = check_count("batch_size", batch_size)
        seed_entropy(seed, "seed")              # a float, a bool or a string: one line
        self.seed = int(seed)
        self.model, self.optimizer = model, optimizer
        self.device = next(model.parameters()).device
        if isinstance(sampler, NeighborSampler):
            sampler = DeviceNeighborSampler(sampler, device=self.device)
        if not isinstance(sampler, DeviceNeighborSampler):
            raise GraphsysError(f"NodeStepGraph draws its batches with a NeighborSampler or "
                                f"DeviceNeighborSampler, got {type(sampler).__name__}")
        if sampler.num_layers != model.num_layers:
            raise GraphsysError(f"{model.num_layers}-layer model given a sampler of "
                                f"{sampler.num_layers} fanouts")
        if min(sampler.fanouts) < 0 or sampler.csr in ("staged", "host"):
            raise GraphsysError("NodeStepGraph needs fanouts of fixed size and the sampler's "
                                "CSR on the device or read through UVA (a layer of fanout -1 "
                                "and csr='staged' read sizes or positions on the host)")
        if sampler.sample_device != self.device:
            raise GraphsysError(f"the sampler draws on {sampler.sample_device}, the model is "
                                f"on {self.device}")
        if _in_process_group():
            raise GraphsysError("NodeStepGraph trains in one process (a torch.distributed "
                                "group's collectives are not recorded here)")
        self.sampler = sampler
        n = sampler.num_nodes
        shape = tuple(features.shape) if hasattr(features, "shape") else np.shape(features)
        if not fits_device(shape, n, self.device):
            raise GraphsysError(f"NodeStepGraph holds the features and labels on {self.device}:"
                                f" {format_size(table_bytes(shape, n))}, more than its free "
                                f"memory (NodeLoader reads a larger table through a "
                                f"DeviceFeatureCache)")
        self.features = _table(features, n, torch.float32, 0, self.device, "features")
        self.labels = _table(labels, n, torch.int64, PAD_LABEL, self.device, "labels")
        self._classes = self.labels[:n].cpu().numpy()      # checked per epoch, on the host
        on_cuda = self.device.type == "cuda"
        if cuda_graph and not on_cuda:
            raise GraphsysError(f"cuda_graph needs the model on CUDA, not {self.device}")
        self.cuda_graph = on_cuda if cuda_graph is None else bool(cuda_graph)
        self.steps, self._eager = 0, 0
        self._graph, self._kept = None, ()
        self._input: torch.Tensor | None = None
        #: summed over the epoch's steps on the device: loss x seeds, right, seeds
        self._totals = torch.zeros(3, dtype=torch.float64, device=self.device)

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def batches(self, seeds, epoch: int) -> np.ndarray:
        """int64 (steps, layers + size): per batch of epoch ``epoch`` its layers' stream
        keys and its seeds, padded with the padding node to ``size = min(batch_size,
        len(seeds))``: the rows an epoch uploads in one copy."""
        ids = as_seed_array(seeds, self.sampler.num_nodes)
        if len(np.unique(ids)) != len(ids):
            raise GraphsysError("seed ids must be unique (each a training node once an epoch)")
        classes = self._classes[ids]
        if len(ids) and (classes.min() < 0 or classes.max() >= self.model.out_dim):
            bad = int(ids[(classes < 0) | (classes >= self.model.out_dim)][0])
            raise GraphsysError(f"seed {bad} has label {int(self._classes[bad])}, outside the "
                                f"model's classes 0..{self.model.out_dim - 1}")
        gen = torch.Generator().manual_seed(derive_seed(self.seed, epoch))
        order = ids[torch.randperm(len(ids), generator=gen).numpy()]
        size, layers = min(self.batch_size, len(ids)), self.sampler.num_layers
        steps = -(-len(ids) // self.batch_size)
        rows = np.full((steps, layers + size), self.sampler.num_nodes, np.int64)
        for i in range(steps):
            part = order[i * self.batch_size:(i + 1) * self.batch_size]
            rows[i, layers:layers + len(part)] = part
            rows[i, :layers] = [as_int64(derive_seed(derive_seed(self.seed, epoch, i), layer)
                                         * _GOLDEN) for layer in range(layers)]
        return rows

    def epoch(self, seeds, epoch: int) -> dict:
        """Train one epoch on ``seeds`` (unique node ids with labels): its batches uploaded
        in one copy, one step each, the totals read once at the end. Returns ``{"loss":
        mean cross-entropy over the seeds, "accuracy": the training predictions' share
        right, "steps", "seeds", "captured"}``."""
        rows = self.batches(seeds, epoch)
        if not len(rows):
            return {"loss": float("nan"), "accuracy": float("nan"), "steps": 0, "seeds": 0,
                    "captured": self.captured}
        plan = torch.from_numpy(rows)
        plan = (plan.pin_memory().to(self.device, non_blocking=True)
                if self.device.type == "cuda" else plan.to(self.device, copy=True))
        self._totals.zero_()
        self.model.train()
        for row in plan:
            self.step(row)
        loss, right, seen = self._totals.tolist()                             # the read
        return {"loss": loss / max(seen, 1.0), "accuracy": right / max(seen, 1.0),
                "steps": len(rows), "seeds": int(seen), "captured": self.captured}

    def step(self, packed: torch.Tensor) -> None:
        """One training step on ``packed``, a row of :meth:`batches` on the device: copied
        into the graph's input and replayed, or (before the graph is recorded, or without
        one) run eagerly on that input."""
        if self._input is None or self._input.shape != packed.shape:
            # batches of another size (a new seed count): recorded again after the warm-up
            self._graph, self._eager = None, 0
            self._input = torch.empty(packed.shape, dtype=packed.dtype, device=packed.device)
        with trace_range("gnn.step"):  # the sample is drawn inside the step
            self._input.copy_(packed)
            if self._graph is not None:
                self._replay()
            elif self.cuda_graph and self._eager >= WARMUP_STEPS:
                self._record()
                if self._graph is not None:
                    self._replay()
                else:
                    self._run()
            else:
                self._run()
        self.steps += 1

    def _run(self) -> None:
        """The step, eagerly (on CUDA before the recording, on a side stream as torch asks
        of the work a graph will record)."""
        self.optimizer.zero_grad(set_to_none=True)
        if self.cuda_graph:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                self._compute(self._input)
            torch.cuda.current_stream(self.device).wait_stream(side)
        else:
            self._compute(self._input)
        self._eager += 1

    def _record(self) -> None:
        """Record :meth:`_compute` of the input buffer as a CUDA graph (not run: the next
        replay runs it); on failure, one warning and eager steps from then on."""
        self.optimizer.zero_grad(set_to_none=True)
        # the optimiser's step counts on the device, where a replay advances them
        before = [group.get("capturable", False) for group in self.optimizer.param_groups]
        for group in self.optimizer.param_groups:
            group["capturable"] = True
        for p, state in self.optimizer.state.items():
            if torch.is_tensor(state.get("step")):
                state["step"] = state["step"].to(p.device)
        try:
            graph = self._capture()
        except (RuntimeError, TypeError) as exc:
            warnings.warn(f"NodeStepGraph: recording the step as a CUDA graph failed "
                          f"({str(exc).splitlines()[0][:200]}); its steps run eagerly",
                          RuntimeWarning, 2)
            self.cuda_graph = False
            for group, flag in zip(self.optimizer.param_groups, before):
                group["capturable"] = flag
            torch.cuda.synchronize(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            return
        # the sampler's kept ranges as recorded: one grown later (a larger batch of another
        # loader) is a new tensor, and the graph reads the memory of these
        self._graph, self._kept = graph, tuple(self.sampler._ranges.values())

    def _capture(self) -> torch.cuda.CUDAGraph:
        """The CUDA graph of :meth:`_compute` on the input buffer (recorded, not run)."""
        graph = torch.cuda.CUDAGraph()
        # thread-local: another thread's CUDA calls (a loader's worker) do not void it
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self._compute(self._input)
        return graph

    def reset(self) -> None:
        """Drop the recorded graph: the next steps warm up and record it again. Needed after
        the optimiser's tensors are replaced (``optimizer.load_state_dict``); the model's
        parameters may be loaded in place (``load_state_dict`` copies into them)."""
        self._graph, self._eager = None, 0

    def _replay(self) -> None:
        self._graph.replay()
        note_launch("cuda_graph")

    def _compute(self, packed: torch.Tensor) -> None:
        """The step's operators on ``packed`` (keys, then seeds padded with the padding
        node): the padded sample, the gathers, the model, the loss of the real seeds, its
        backward pass, the update, and the epoch's totals; no host read."""
        blocks = self.sampler.draw_padded(packed)
        seeds = packed[self.sampler.num_layers:]
        x = self.features.index_select(0, blocks[0].src_nodes)
        y = self.labels.index_select(0, seeds)
        logits = self.model(blocks, x)[:len(seeds)]
        real = (y != PAD_LABEL).sum()
        loss = F.cross_entropy(logits, y, ignore_index=PAD_LABEL)
        loss.backward()
        self.optimizer.step()
        with torch.no_grad():
            right = (logits.argmax(1) == y).sum()
            self._totals.add_(torch.stack([loss.detach() * real, right, real]))

    def __repr__(self) -> str:
        return (f"NodeStepGraph(batch_size={self.batch_size}, fanouts={self.sampler.fanouts}, "
                f"device={self.device}, cuda_graph={self.cuda_graph}, "
                f"captured={self.captured})")


def _table(values, n: int, dtype: torch.dtype, pad, device: torch.device, name: str
           ) -> torch.Tensor:
    """``values`` (n rows) as ``dtype`` on ``device`` with one more row of ``pad`` (the
    padding node's)."""
    t = torch.as_tensor(np.asarray(values) if not torch.is_tensor(values) else values)
    if t.shape[0] != n or (t.dim() != (2 if name == "features" else 1)):
        want = f"({n}, F)" if name == "features" else f"({n},)"
        raise GraphsysError(f"{name} of shape {tuple(t.shape)}, expected {want} (the sampler's "
                            f"nodes)")
    if dtype == torch.int64 and (t.is_floating_point() or t.dtype == torch.bool):
        raise GraphsysError(f"labels must be integers, got dtype {t.dtype}")
    out = torch.full((n + 1, *t.shape[1:]), pad, dtype=dtype, device=device)
    out[:n] = t.to(device=device, dtype=dtype)
    return out
