"""GNN workload profiling: the trainer's model and sampler, block degrees read after the
profiled run."""

from __future__ import annotations

import pytest

from graphsys.analysis import gnn_workload as G
from graphsys.analysis.simt import GPUS
from graphsys.analysis.workloads import SimtRecorder


def _recorder():
    return SimtRecorder(["thread-per-vertex", "edge-balanced"], 64, 4, GPUS["h100"])


def test_gnn_reads_block_degrees_after_the_profiled_run(graph, monkeypatch):
    """``Tensor.numpy()`` dispatches operators (detach, resolve_conj, ...): the block
    degrees the SIMT model needs are read after the profiled steps, not inside them."""
    inside = {"now": False, "reads": [], "blocks": 0}
    real_call, real_degrees = G.profile_call, G.block_in_degrees

    def profiled(fn, **kw):
        def wrapped(marker):
            inside["now"] = True
            try:
                return fn(marker)
            finally:
                inside["now"] = False
        return real_call(wrapped, **kw)

    def degrees(edge_dst, num_dst):
        inside["reads"].append(inside["now"])
        return real_degrees(edge_dst, num_dst)

    monkeypatch.setattr(G, "profile_call", profiled)
    monkeypatch.setattr(G, "block_in_degrees", degrees)
    rec = _recorder()
    G.profile_gnn(graph, recorder=rec, steps=2, batch_size=16)
    assert inside["reads"] == [False] * 4  # 2 steps x 2 blocks, all after the run
    assert rec.totals["thread-per-vertex"].kernels == 4


def test_gnn_profiles_a_factory_model_from_the_config(graph, tmp_path, monkeypatch):
    """A ``module:Factory`` model is built as the trainer builds it (the factory gets the
    config's hidden width and dropout, the graph's layers) and is the model profiled."""
    import sys

    from graphsys.gnn.overrides import train_config_from_overrides

    (tmp_path / "prof_models.py").write_text(
        "from graphsys.gnn import GNN\n"
        "SEEN = []\n"
        "def Gin(**dims):\n    SEEN.append(dims)\n    return GNN('gin', **dims)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = train_config_from_overrides(["model=prof_models:Gin", "hidden=24", "dropout=0.1"],
                                      G.GNN_DEFAULTS)
    out = G.profile_gnn(graph, recorder=_recorder(), steps=1, batch_size=8, config=cfg)
    import prof_models

    assert [(d["hidden_dim"], d["dropout"], d["num_layers"]) for d in prof_models.SEEN] == \
        [(24, 0.1, 2)]
    assert out["workload"]["model"] == "prof_models:Gin"
    assert any(24 in shape for shape in out["workload"]["parameters"].values())
    sys.modules.pop("prof_models", None)


@pytest.mark.parametrize("item, message", [
    ("lr=-1", "lr must be a finite number > 0"), ("heads=0", "heads must be a positive integer"),
    ("batch_size=2.5", "batch_size: must be an integer"), ("fanouts", "expected key=value"),
    ("task=link", "task: the GNN profile runs the node task"),
    ("hard_band=a,b", "^hard_band must be comma-separated"),  # was named fanouts
])
def test_gnn_config_errors_name_the_key_not_a_flag(graph, item, message):
    from graphsys.errors import GraphsysError
    from graphsys.gnn.overrides import train_config_from_overrides

    with pytest.raises(GraphsysError, match=message) as err:
        cfg = train_config_from_overrides([item], G.GNN_DEFAULTS)
        G.profile_gnn(graph, recorder=_recorder(), steps=1, config=cfg)
    assert "--" not in str(err.value) and "\n" not in str(err.value)


def test_gnn_profiling_leaves_the_caller_s_generator_alone(graph):
    """The synthetic steps called torch.manual_seed(seed): a profile reset the caller's
    global generator. Their batches' samples were seeded seed + k (seed 0's second step
    drew seed 1's first): now derive_seed(seed, k)."""
    import torch

    from graphsys.gnn.overrides import train_config_from_overrides

    cfg = train_config_from_overrides(["batch_size=16"], G.GNN_DEFAULTS)
    torch.manual_seed(5)
    before = torch.get_rng_state()
    steps = G._SyntheticSteps(graph, cfg, 2, "cpu")
    assert torch.equal(torch.get_rng_state(), before)
    again = G._SyntheticSteps(graph, cfg, 2, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(steps.model.state_dict().values(),
                                                 again.model.state_dict().values()))
