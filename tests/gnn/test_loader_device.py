"""NodeLoader sampling on the device: the same batches as on the host (blocks, features
with and without input dropout, labels), the choice of sampler, and the training option."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import ParameterError
from graphsys.gnn import NodeLoader, TrainConfig, train
from graphsys.gnn.dropout import feature_dropout
from graphsys.gnn.loader import device_feature_dropout, on_device
from graphsys.sampling import NeighborSampler, PinSAGESampler
from graphsys.sampling.device import DeviceNeighborSampler, as_int64
from tests.sampling.conftest import count_host_reads

from .conftest import write_sbm


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 150
    src, dst = rng.integers(0, n - 10, 700), rng.integers(0, n - 10, 700)   # 10 isolated
    cols = {"feat": rng.standard_normal((n, 7)).astype(np.float32),
            "label": rng.integers(0, 3, n)}
    return graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("ld") / "g", num_nodes=n,
                               node_columns=cols, undirected=True, partitions=2)


def _host(batch):
    return batch.to("cpu")


@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_device_sampling_gives_the_host_batches(graph, device, dropout):
    sampler = NeighborSampler(graph, [5, 3])
    kw = dict(batch_size=32, num_workers=1, input_dropout=dropout, device=device)
    torch.manual_seed(1)
    want = [_host(b) for b in NodeLoader(graph, sampler, np.arange(0, 150, 2),
                                         device_sampling=False, **kw)]
    torch.manual_seed(1)
    loader = NodeLoader(graph, sampler, np.arange(0, 150, 2), device_sampling=True, **kw)
    assert isinstance(loader.sampler, DeviceNeighborSampler)
    got = [_host(b) for b in loader]
    assert len(got) == len(want) == 3
    for a, b in zip(want, got):
        assert torch.equal(a.seeds, b.seeds) and torch.equal(a.y, b.y)
        assert torch.equal(a.x, b.x)
        for x, y in zip(a.blocks, b.blocks):
            assert torch.equal(x.src_nodes, y.src_nodes) and x.num_dst_nodes == y.num_dst_nodes
            assert torch.equal(x.edge_src, y.edge_src) and torch.equal(x.edge_dst, y.edge_dst)


def test_batches_dropped_as_read_stay_right(graph, device):
    """Batches read on the device and dropped one by one (their memory free for the next
    ones), made by two workers (on CUDA on a side stream beside the reads) or in the
    loop: the same sums, read on the host only at the end."""
    sampler = NeighborSampler(graph, [5, 3])

    def sums(workers):
        torch.manual_seed(1)
        loader = NodeLoader(graph, sampler, np.arange(150), batch_size=16, device=device,
                            num_workers=workers, input_dropout=0.3, device_sampling=True)
        out = []
        for b in loader:
            out.append(torch.stack([b.x.double().sum(), b.y.double().sum(),
                                    *(k.edge_src.double().sum() for k in b.blocks),
                                    *(k.src_nodes.double().sum() for k in b.blocks)]))
        return torch.stack(out).cpu()

    want = sums(0)
    assert want.shape == (10, 6) and torch.equal(sums(2), want)


@pytest.mark.parametrize("width", [1, 2, 5, 8])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_device_feature_dropout_is_the_host_mask(width, p):
    table = np.random.default_rng(width).standard_normal((40, width)).astype(np.float32)
    ids = torch.tensor([39, 0, 7, 7, 12])
    key = 2**63 + 12345
    want = feature_dropout(table, ids, p, key)
    assert torch.equal(device_feature_dropout(torch.from_numpy(table), ids, p, key), want)
    t64 = torch.from_numpy(table).double()
    assert torch.equal(device_feature_dropout(t64, ids, p, key),
                       feature_dropout(t64, ids, p, key))
    t16 = torch.from_numpy(table).half()
    assert torch.equal(device_feature_dropout(t16, ids, p, key),
                       feature_dropout(t16, ids, p, key))


def test_device_feature_dropout_launches():
    """The input dropout of a device batch, counted on the CPU (the device emulated): the
    gather, the stream words (2 and the 11 of a SplitMix64 finaliser), the mask (an int32
    view of the words: 2) and its application (2); it was 25."""
    from graphsys.analysis.device_counts import DeviceWorkCounter

    table, ids = torch.randn(100, 9), torch.randint(0, 100, (64,))
    device_feature_dropout(table, ids, 0.5, 7)           # the column steps made once
    with DeviceWorkCounter(device_tensors=[table, ids]) as c:
        device_feature_dropout(table, ids, 0.5, 7)
    assert c.launches == 18 and c.transfers == 0 and c.syncs == 0, c.ops


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_fused_keep_kernel_source_is_the_operators_mask(tmp_path):
    """The one-kernel mask's source (compiled by jiterator on CUDA), compiled here as C++
    for int64: the kept flags of the torch operators, bit for bit."""
    from torch.cuda.jiterator import _CodeParser

    from graphsys.gnn.loader import _KEEP_CODE, _keep_operators

    assert _CodeParser(_KEEP_CODE).function_name == "gs_feature_keep"
    (tmp_path / "keep.cpp").write_text(_KEEP_CODE + """
#include <cstdio>
int main() {
  long long id, col, key, thr, pairs;
  while (std::scanf("%lld %lld %lld %lld %lld", &id, &col, &key, &thr, &pairs) == 5)
    std::printf("%lld\\n", gs_feature_keep<long long>(id, col, key, thr, pairs));
}
""")
    subprocess.run(["g++", "-O2", "-o", str(tmp_path / "keep"), str(tmp_path / "keep.cpp")],
                   check=True)
    ids = torch.randint(0, 2**40, (97,), generator=torch.Generator().manual_seed(3))
    for width, key, thr in ((7, 2**64 - 12345, 2**31 + 77), (8, 42, 1717986918),
                            (1, 2**63, 2**32 - 1)):
        rows = [f"{i} {c} {as_int64(key)} {thr} {(width + 1) // 2}"
                for i in ids.tolist() for c in range(width)]
        out = subprocess.run([str(tmp_path / "keep")], input="\n".join(rows), text=True,
                             capture_output=True, check=True).stdout.split()
        got = torch.tensor([int(v) for v in out]).view(len(ids), width)
        assert torch.equal(got.bool(), _keep_operators(ids, width, key, thr))


def test_fused_keep_leaves_4_launches(monkeypatch):
    """With the mask one kernel (CUDA's jiterator; emulated here by the operators, unseen
    by the counter) a batch's input dropout is 4 launches: gather, mask, two products."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.gnn import loader

    def stand_in(ids, cols, key, thr, pairs):
        counters = [m for m in _get_current_dispatch_mode_stack()
                    if isinstance(m, DeviceWorkCounter)]
        for m in counters:
            m._quiet = True
        try:
            out = loader._keep_operators(ids.view(-1), cols.shape[1], key, thr).long()
        finally:
            for m in counters:
                m._quiet = False
                m._on_device[out] = True
        return out

    monkeypatch.setattr(loader, "_keep_kernel", lambda device: stand_in)
    table, ids = torch.randn(100, 9), torch.randint(0, 100, (64,))
    want = device_feature_dropout(table, ids, 0.5, 7)
    with DeviceWorkCounter(device_tensors=[table, ids]) as c:
        got = device_feature_dropout(table, ids, 0.5, 7)
    assert c.launches == 4 and c.ops["jiterator"] == 1, c.ops
    monkeypatch.undo()
    assert torch.equal(got, want) and torch.equal(got, device_feature_dropout(table, ids,
                                                                              0.5, 7))


def test_sampler_choice(graph):
    cpu = NeighborSampler(graph, [2])
    assert on_device(cpu, torch.device("cpu"), None) is cpu
    assert on_device(cpu, torch.device("cpu"), False) is cpu
    made = on_device(cpu, torch.device("cpu"), True)
    assert isinstance(made, DeviceNeighborSampler)
    assert on_device(cpu, torch.device("cpu"), True) is made      # the CSR copied once
    assert on_device(made, torch.device("cpu"), None) is made
    with pytest.raises(ParameterError, match="device_sampling"):
        on_device(PinSAGESampler.__new__(PinSAGESampler), torch.device("cpu"), True)


def test_one_device_copy_for_cuda_and_cuda_0(graph, monkeypatch):
    """The copies were keyed by torch.device as given: "cuda" and "cuda:0" (one GPU)
    each copied the CSR there. They are keyed by the device with its index filled in
    (checked on the CPU: the key function, and on_device with the copy stubbed)."""
    import graphsys.gnn.loader as loader
    from graphsys.device import device_key

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert device_key(torch.device("cuda")) == device_key(torch.device("cuda:0")) == \
        torch.device("cuda", 0) != device_key(torch.device("cuda:1"))
    assert device_key(torch.device("cpu")) == torch.device("cpu")
    made = []

    class Copy:  # records the device each copy is made on, copying nothing
        def __init__(self, sampler, device, cuda_graphs):
            made.append(device)

    monkeypatch.setattr(loader, "DeviceNeighborSampler", Copy)
    cpu = NeighborSampler(graph, [2])
    for name in ("cuda", "cuda:0", "cuda", "cuda:1"):
        on_device(cpu, torch.device(name), True)
    assert made == [torch.device("cuda", 0), torch.device("cuda", 1)]


def test_device_names_as_the_cli_takes_them(graph):
    """NodeLoader and train take ``device`` as ``--device`` does: ``"auto"`` picks one, and
    a name that is not a usable device is refused in one line before any work. They
    passed it to torch.device: "auto" raised torch's list of backends, "cuda:7" on a
    host without CUDA an AssertionError from the sampler's memory query, "meta" loaded
    empty batches."""
    sampler = NeighborSampler(graph, [2])
    loader = NodeLoader(graph, sampler, seeds=np.arange(20), batch_size=8, device="auto")
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert loader.device.type == next(iter(loader)).x.device.type == want
    # torch's own name of the CPU (str(torch.device("cpu", 0))) is the CPU
    assert NodeLoader(graph, sampler, seeds=np.arange(20), device=torch.device("cpu", 0)
                      ).device == torch.device("cpu")
    bad = ["gpu", "mps", "meta", "", "CPU", "cuda:-1", "cuda:x"]
    if not torch.cuda.is_available():
        bad.append("cuda:7")
    makers = (lambda name: NodeLoader(graph, sampler, seeds=np.arange(20), device=name),
              lambda name: DeviceNeighborSampler(sampler, device=name),
              lambda name: train(graph, TrainConfig(fanouts=[2], epochs=1), device=name))
    for name in bad:
        for make in makers:
            with pytest.raises(ParameterError, match="device") as err:
                make(name)
            assert "\n" not in str(err.value), name


def test_train_config_sampler(tmp_path):
    with pytest.raises(ParameterError, match="sampler"):
        TrainConfig(sampler="gpu")
    for task in ("link", "temporal-link"):  # another task's batches: refused, not ignored
        with pytest.raises(ParameterError, match="sampler.*node task only"):
            TrainConfig(task=task, sampler="device")
    assert TrainConfig(task="link").sampler == "auto"
    g = write_sbm(tmp_path / "sbm")
    base = dict(model="sage", fanouts=[4, 3], hidden=8, epochs=2, batch_size=16, seed=2)
    a = train(g, TrainConfig(**base, sampler="cpu"))
    b = train(g, TrainConfig(**base, sampler="device"))
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
    assert a.metrics == b.metrics


def test_one_host_read_per_loader_batch(graph):
    """Tables on the sampling device: a batch reads the device once (its blocks' sizes);
    the seeds, the gathers and the edge groupings stay there."""
    feat = torch.from_numpy(graph.node_column("feat"))
    label = torch.as_tensor(graph.node_column("label"))
    loader = NodeLoader(None, NeighborSampler(graph, [5, 3]), np.arange(150), batch_size=40,
                        features=feat, labels=label, num_workers=0, device_sampling=True)
    it = iter(loader)
    with count_host_reads() as counts:
        batches = list(it)
    assert len(batches) == 4 and counts["n"] == 4


def test_a_run_resumes_with_the_other_sampler(tmp_path):
    """Where the batches are drawn does not change them: a node run resumes with it."""
    g = write_sbm(tmp_path / "sbm")
    base = dict(model="sage", fanouts=[4, 3], hidden=8, batch_size=16, seed=2)
    whole = train(g, TrainConfig(**base, epochs=2, sampler="cpu"))
    run = tmp_path / "run"
    train(g, TrainConfig(**base, epochs=1, sampler="cpu"), out=run)
    res = train(g, TrainConfig(**base, epochs=2, sampler="device"), out=run)
    assert [h["epoch"] for h in res.history] == [1, 2]
    assert [h["loss"] for h in res.history] == [h["loss"] for h in whole.history]


def test_device_names_are_read_as_every_engine_reads_them(graph):
    """``device="auto"`` (the BSP engine's and the embeddings' name for "CUDA when there
    is one") was torch's RuntimeError listing its 20 device types in NodeLoader and
    DeviceNeighborSampler, as "gpu" was; each name now goes through resolve_device."""
    from graphsys.device import resolve_device
    from graphsys.sampling.feature_cache import DeviceFeatureCache

    s = NeighborSampler(graph, [2])
    auto = resolve_device("auto")
    assert NodeLoader(graph, s, [1, 2], device="auto").device == auto
    assert DeviceNeighborSampler(graph, [2], device="auto").device == auto
    assert DeviceFeatureCache(np.zeros((4, 2), np.float32), np.array([0]),
                              device="auto").device == auto
    for bad in ("gpu", "CPU"):
        with pytest.raises(ParameterError, match=f"^device '{bad}': unknown device"):
            NodeLoader(graph, s, [1, 2], device=bad)
        with pytest.raises(ParameterError, match=f"^device '{bad}': unknown device"):
            DeviceNeighborSampler(graph, [2], device=bad)
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="^device cuda: no CUDA device"):
            NodeLoader(graph, s, [1, 2], device="cuda")
