"""The device-resident training loop (issue 69): per-batch launches, transfers and host
synchronisations pinned with :class:`~graphsys.analysis.device_counts.DeviceWorkCounter`
(the device emulated on the CPU), and the loop's answers against the host loop's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys import open_graph
from graphsys.analysis.device_counts import DeviceWorkCounter
from graphsys.embed import Embeddings, dot_softmax, evaluate, load_config, train
from graphsys.embed.kernels import sparse_adagrad
from graphsys.embed.model import OPERATORS
from graphsys.embed.relations import RelationModel
from graphsys.embed.step import device_adagrad
from graphsys.embed.trainer import Trainer
from graphsys.errors import ConfigError

#: FB15k-237's PBG settings (ComplEx, dot, softmax, uniform + in-batch negatives), with a
#: small dimension: the counts do not depend on it.
PBG_SHAPED = ["dimension=32", 'operator="complex_diagonal"', 'comparator="dot"',
              'loss_fn="softmax"', "lr=0.1", "num_epochs=1", "batch_size=500",
              "num_uniform_negs=500", "num_batch_negs=50"]
#: Per batch of the resident loop: operators launched (none of them on the host), and no
#: transfer or synchronisation.
LAUNCHES_PER_BATCH = 103


class _Counted(Trainer):
    """Counts each bucket's device work, with a mark at every batch."""

    resident = True

    def __init__(self, *args, **kwargs):
        self.marks: list[dict] = []
        super().__init__(*args, on_batch=self._mark, **kwargs)

    def _mark(self):
        self.marks.append({**self.counter.summary(), "host_ops": sum(
            self.counter.host_ops.values())})

    def _train_bucket(self, *args):
        dev = [t for slot in self.buffer.resident.values() for pair in slot.values()
               for t in pair]
        for tables in (self.relmodel.params, self.relmodel.state):
            dev += [v for side in tables.values() for g in side for v in g.values()]
        with DeviceWorkCounter(device_tensors=dev) as self.counter:
            out = super()._train_bucket(*args)
            self._mark()
        return out


def test_a_batch_makes_no_transfer_and_no_sync(kg1, tmp_path):
    """A batch of the resident loop (FB15k-237's PBG settings): no host<->device transfer,
    no synchronisation, no operator on the host, ``LAUNCHES_PER_BATCH`` launches; the
    bucket's edges go up in one transfer and its loss comes down in one read."""
    tr = _Counted(load_config(None, PBG_SHAPED), open_graph(kg1), tmp_path / "ck")
    tr.run()
    marks = tr.marks
    assert len(marks) == 6 + 1   # 2,700 edges: 5 full batches and one of 200, the end
    steps = [{k: b[k] - a[k] for k in b} for a, b in zip(marks[:5], marks[1:6])]
    assert steps == [{"launches": LAUNCHES_PER_BATCH, "transfers": 0, "syncs": 0,
                      "host_ops": 0}] * 5
    assert marks[0]["transfers"] == 1 and marks[0]["syncs"] == 0      # the edges' upload
    last = {k: marks[-1][k] - marks[-2][k] for k in marks[-1]}
    assert last["transfers"] == 1 and last["syncs"] == 1              # the loss, read once
    assert tr.counter.records[0] == ("h2d", 3 * 8 * 2700)


def test_the_cpu_keeps_the_host_loop(kg1, tmp_path):
    """The CPU's default stays the host loop with its numba kernels."""
    tr = Trainer(load_config(None, PBG_SHAPED), open_graph(kg1), tmp_path / "ck")
    assert tr.resident is False and not tr.torch_ops and not tr.relmodel.whole_tables


def _mrr(kg, out):
    cfg = load_config(None, PBG_SHAPED[:-4] + [
        "num_epochs=6", "batch_size=100", "num_uniform_negs=50", "num_batch_negs=10"])
    emb = train(kg, cfg, edges="train", out=out).embeddings
    return evaluate(emb, open_graph(kg), "test", filtered=True)["mrr"], emb


def test_resident_loop_on_the_cpu_matches_the_host_loop(kg1, tmp_path, monkeypatch):
    """The device path run on the CPU draws the host loop's random numbers (same
    generator, same order): the same model to float32 rounding, the same MRR."""
    mrr_host, host = _mrr(kg1, tmp_path / "host")
    monkeypatch.setattr(Trainer, "resident", True)
    mrr_dev, dev = _mrr(kg1, tmp_path / "dev")
    assert mrr_host > 0.85 and abs(mrr_dev - mrr_host) < 0.01, (mrr_host, mrr_dev)
    a, b = host.to_numpy(), dev.to_numpy()
    assert np.abs(a - b).max() < 1e-2 * np.abs(a).max()


@pytest.mark.parametrize("element", [False, True], ids=["row-wise", "element-wise"])
@pytest.mark.parametrize("max_norm", [None, 0.5])
def test_device_adagrad_matches_the_kernel(element, max_norm):
    """The sync-free torch step equals the numba kernel's, repeated rows included."""
    rng = np.random.default_rng(1)
    emb = rng.standard_normal((50, 16)).astype(np.float32)
    state = rng.random((50, 16) if element else (50,)).astype(np.float32)
    idx = rng.integers(0, 50, 300)
    grad = rng.standard_normal((300, 16)).astype(np.float32)
    e_t, s_t = torch.from_numpy(emb.copy()), torch.from_numpy(state.copy())
    device_adagrad(e_t, s_t, torch.from_numpy(idx), torch.from_numpy(grad), 0.1, max_norm)
    sparse_adagrad(emb, state.reshape(50, -1), idx, grad, 0.1, 1e-10, max_norm or 0.0)
    np.testing.assert_allclose(s_t.numpy(), state, rtol=1e-5)
    np.testing.assert_allclose(e_t.numpy(), emb, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["diagonal", "complex_diagonal"])
def test_whole_table_relation_step_is_the_gathered_one(op):
    """``whole_tables``: one leaf per table and a dense Adagrad step give the gathered
    rows' step (untouched relations keep their parameters and sums): bit for bit with
    autograd's operator, to rounding with ComplEx's closed-form backward."""
    out = []
    for whole in (False, True):
        torch.manual_seed(0)
        rm = RelationModel([op] * 6, 8)
        rm.whole_tables = whole
        x = torch.randn(20, 8)
        rel = torch.tensor([0, 2, 2, 5] * 5)
        for _ in range(3):
            leaves: list = []
            (rm.apply("rhs", x, rel, leaves).pow(2).sum()
             + rm.relation_logits(x, x, leaves).sum()).backward()
            rm.step(leaves, 0.1)
        out.append([v.clone() for side in (rm.params, rm.state) for s in side.values()
                    for g in s for v in g.values()])
    if op == "diagonal":
        assert all(torch.equal(a, b) for a, b in zip(*out))
    for a, b in zip(*out):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_complex_product_backward_is_autograd_of_the_forward():
    """ComplEx's closed-form backward (``forward_tables``, ``closed_form``) against
    autograd of ``forward``, float64, repeated relations included; and torch's
    gradcheck."""
    op = OPERATORS.get_class("complex_diagonal")(6)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(7, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    real = torch.randn(4, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    imag = torch.randn(4, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    idx = torch.tensor([0, 3, 3, 1, 0, 3, 2])
    dy = torch.randn(7, 6, dtype=torch.float64, generator=gen)
    ref = torch.autograd.grad(op.forward(x, {"real": real, "imag": imag}, idx), (x, real, imag),
                              dy)
    params = {"real": real, "imag": imag}
    y = op.forward_tables(x, params, idx)
    torch.testing.assert_close(y, op.forward(x, params, idx))
    for got, want in zip(torch.autograd.grad(y, (x, real, imag), dy), ref):
        torch.testing.assert_close(got, want)
    with torch.no_grad():
        y2, back = op.closed_form(x, params, idx)
        dx, grads = back(dy)
    torch.testing.assert_close(y2, y.detach())
    for got, want in zip((dx, grads["real"], grads["imag"]), ref):
        torch.testing.assert_close(got, want)
    assert torch.autograd.gradcheck(lambda a, b, c: op.forward_tables(
        a, {"real": b, "imag": c}, idx), (x, real, imag))


@pytest.mark.parametrize("identity", [False, True])
@pytest.mark.parametrize("kernels", [False, True], ids=["torch", "numba"])
def test_grouped_batches_score_as_separate_batches(identity, kernels):
    """``groups``: one call over 3 batches, each with its own pool, gives the 3 separate
    calls' loss and gradients (the gradient rows in the grouped layout)."""
    gen = torch.Generator().manual_seed(5)
    K, b, u, d, nb = 3, 20, 7, 8, 5

    def rand(*shape):
        return torch.randn(*shape, generator=gen)

    ql, qr, xl, xr = rand(K * b, d), rand(K * b, d), rand(K * b, d), rand(K * b, d)
    if identity:
        ql, qr = xl, xr
    pl, pr, w = rand(K * u, d), rand(K * u, d), torch.rand(K * b, generator=gen)
    loss, gl, gr, dxl, dxr = dot_softmax.both_sides(ql, qr, xl, xr, pl, pr, nb, w, identity,
                                                    kernels=kernels, groups=K)
    total = 0.0
    for g in range(K):
        rows, pool = slice(g * b, (g + 1) * b), slice(g * u, (g + 1) * u)
        lo, hl, hr, ex_l, ex_r = dot_softmax.both_sides(
            ql[rows], qr[rows], xl[rows], xr[rows], pl[pool], pr[pool], nb, w[rows],
            identity, kernels=kernels)
        total += float(lo)
        for got, want in ((gl[:K * b][rows], hl[:b]), (gr[:K * b][rows], hr[:b]),
                          (gl[K * b:][pool], hl[b:]), (gr[K * b:][pool], hr[b:])):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        assert (dxl is None) == (ex_l is None) and (dxr is None) == (ex_r is None)
    assert abs(float(loss) - total) < 1e-4 * abs(total)


@pytest.mark.parametrize("resident", [False, True], ids=["host", "resident"])
def test_batches_per_step_learns_the_planted_kg(kg1, tmp_path, monkeypatch, resident):
    """``batches_per_step = 3``: the same batches and negatives, one Adagrad step per 3
    batches (the last step's whole batches, then the partial one): the planted KG still
    learned by both loops."""
    monkeypatch.setattr(Trainer, "resident", resident)
    cfg = load_config(None, PBG_SHAPED[:-4] + [
        "num_epochs=6", "batch_size=100", "num_uniform_negs=50", "num_batch_negs=10",
        "batches_per_step=3"])
    steps = []
    Trainer(cfg, open_graph(kg1), tmp_path / "k", on_batch=lambda: steps.append(1)).run()
    assert len(steps) == 6 * 9            # 2,700 edges: 27 batches, 9 steps of 3
    emb = Embeddings.load(tmp_path / "k")
    assert evaluate(emb, open_graph(kg1), "test", filtered=True)["mrr"] > 0.85


def test_a_step_of_batches_costs_the_launches_of_one(kg1, tmp_path):
    """``batches_per_step = 5`` (5 batches of the PBG-shaped config): one step makes the
    launches of one batch, no transfer, no synchronisation."""
    cfg = load_config(None, PBG_SHAPED + ["batches_per_step=5", "batch_size=100",
                                          "num_uniform_negs=100"])
    tr = _Counted(cfg, open_graph(kg1), tmp_path / "ck")
    tr.run()
    steps = [{k: b[k] - a[k] for k in b} for a, b in zip(tr.marks[:4], tr.marks[1:5])]
    assert steps == [{"launches": LAUNCHES_PER_BATCH, "transfers": 0, "syncs": 0,
                      "host_ops": 0}] * 4


@pytest.mark.parametrize("extra, match", [
    (['loss_fn="ranking"'], "comparator = 'dot'"),
    (["all_negs=true"], "all_negs = false"),
    (["num_batch_negs=30"], "multiple of num_batch_negs"),
])
def test_batches_per_step_refuses_what_it_cannot_group(extra, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, PBG_SHAPED + ["batches_per_step=2", *extra])


@pytest.mark.device
def test_cuda_graphs_learn_the_same_model(kg1, tmp_path, device):
    """``cuda_graphs``: on CUDA each bucket's full steps are replayed from one captured
    step (a new draw of negatives each replay); the planted KG is learned as well as
    without, and the last partial batch still trains. Elsewhere the key changes
    nothing (the same embeddings bit for bit)."""
    if device == "lazy":
        pytest.skip("torch's lazy backend mistypes a float32 gradient copy as float64")
    base = PBG_SHAPED[:-4] + [f'device="{device}"', "num_epochs=6", "batch_size=100",
                              "num_uniform_negs=50", "num_batch_negs=10"]
    out = {}
    for graphs in (False, True):
        cfg = load_config(None, base + [f"cuda_graphs={str(graphs).lower()}"])
        emb = train(kg1, cfg, edges="train", out=tmp_path / str(graphs)).embeddings
        out[graphs] = (evaluate(emb, open_graph(kg1), "test", filtered=True)["mrr"],
                       emb.to_numpy())
    assert out[True][0] > 0.85 and abs(out[True][0] - out[False][0]) < 0.02, out
    if not device.startswith("cuda"):
        assert np.array_equal(out[True][1], out[False][1])


def test_cuda_graphs_default_on_cuda_only(kg1, tmp_path, monkeypatch):
    """``cuda_graphs`` unset: off on the CPU, on for a CUDA device where the config's step
    can be captured; false turns it off there; a step that cannot be captured runs eagerly,
    with one logged line (decided from the config, before any step)."""
    from graphsys.embed import graphs

    class Capturing:  # a torch whose CUDA graphs replay a generator's draws
        def register_generator_state(self, gen):
            pass

    monkeypatch.setattr(graphs.torch.cuda, "CUDAGraph", Capturing)
    g, runs = open_graph(kg1), iter(range(100))

    def resolve(extra: list[str], device: str) -> tuple[bool, list[str]]:
        notes: list[str] = []
        t = Trainer(load_config(None, PBG_SHAPED + extra), g, tmp_path / str(next(runs)),
                    log=notes.append)
        assert t.cuda_graphs is False  # built on the CPU
        t.device = torch.device(device)  # as a CUDA device would give it
        return t._use_cuda_graphs(), notes

    assert load_config(None, PBG_SHAPED).cuda_graphs is None
    assert resolve([], "cpu") == (False, [])
    assert resolve(["cuda_graphs=true"], "cpu") == (False, [])
    assert resolve([], "cuda") == (True, [])
    assert resolve(["cuda_graphs=true"], "cuda") == (True, [])
    assert resolve(["cuda_graphs=false"], "cuda") == (False, [])
    on, notes = resolve(['comparator="cos"'], "cuda")
    assert not on and len(notes) == 1 and notes[0].startswith("cuda_graphs: off, only the")
    monkeypatch.setattr(graphs.torch.cuda, "CUDAGraph", object)  # an older torch
    on, notes = resolve(["cuda_graphs=true"], "cuda")
    assert not on and len(notes) == 1 and "generator" in notes[0]


@pytest.mark.parametrize("extra, operators, refused", [
    ([], ["complex_diagonal"], None),
    (["all_negs=true"], ["diagonal"], None),
    (['loss_fn="ranking"'], ["diagonal"], "only the closed-form step"),
    (["num_batch_negs=0"], ["diagonal"], "only the closed-form step"),
    ([], ["diagonal", "complex_diagonal"], "2 operators"),
    (["dimension=32"], ["linear"], None),  # 500 x 32 x 32: one bmm
    (["dimension=100"], ["affine"], "affine operator reads"),
])
def test_capture_refusal_by_config(extra, operators, refused, monkeypatch):
    from graphsys.embed import graphs

    monkeypatch.setattr(graphs.torch.cuda, "CUDAGraph", type(
        "Capturing", (), {"register_generator_state": lambda self, gen: None}))
    why = graphs.capture_refusal(load_config(None, PBG_SHAPED + extra), operators)
    assert why is None if refused is None else refused in why


class _FakeCuda:
    """torch.cuda's graph API as the CPU sees it: a capture records the step instead of
    running it, a replay runs the recorded step on the static buffer."""

    def __init__(self):
        self.capturing, self.recorded, self.registered = False, None, []
        fake = self

        class Graph:
            def register_generator_state(self, gen):
                fake.registered.append(gen)

            def replay(self):
                fake.recorded()

        class Capture:
            def __init__(self, graph, **kwargs):
                assert kwargs == {"capture_error_mode": "thread_local"}

            def __enter__(self):
                fake.capturing = True

            def __exit__(self, *exc):
                fake.capturing = False

        class Stream:
            def __init__(self, device=None):
                pass

            def wait_stream(self, other):
                pass

        self.CUDAGraph, self.graph, self.Stream = Graph, Capture, Stream
        self.current_stream = lambda device=None: Stream()
        self.stream = self.device = lambda s: _NullContext()


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_step_graph_runs_every_batch_once(monkeypatch):
    """StepGraph: the first step runs eagerly, the second is captured (not run) and
    replayed, the later ones copy their batch into the static buffer and replay: each
    batch trains exactly once, the generator registered with the graph."""
    from graphsys.embed import graphs

    fake = _FakeCuda()
    monkeypatch.setattr(graphs.torch, "cuda", fake)
    done = []

    def body(idx):
        if fake.capturing:
            fake.recorded = lambda: done.append(idx.tolist())
        else:
            done.append(idx.tolist())

    gen = torch.Generator()
    g = graphs.StepGraph(gen)
    batches = [torch.tensor([k, k + 1]) for k in range(0, 10, 2)]
    for b in batches:
        g.run(b, body)
    assert done == [b.tolist() for b in batches] and fake.registered == [gen]


def test_a_bucket_too_big_for_the_device_trains_by_the_host_loop(kg1, tmp_path, monkeypatch):
    """Edges that do not fit in the device's memory: the bucket trains by the host loop
    (its batches uploaded one by one), with a note, and the run completes."""
    def no_room(self, i, j):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(Trainer, "resident", True)
    monkeypatch.setattr(Trainer, "_device_edges", no_room)
    notes: list[str] = []
    cfg = load_config(None, PBG_SHAPED)
    stats = Trainer(cfg, open_graph(kg1), tmp_path / "ck", log=notes.append).run()
    assert stats[0].edges == 2700 and any("do not fit" in n for n in notes)
