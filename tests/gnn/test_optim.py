"""The GNN trainers' Adam: fused where torch fuses it for the parameters' device, torch's
own update elsewhere, the same steps either way."""

from __future__ import annotations

import torch

from graphsys.gnn.optim import fused_adam


def _params():
    torch.manual_seed(0)
    return [torch.nn.Parameter(torch.randn(7, 5)), torch.nn.Parameter(torch.randn(5))]


def test_fused_where_torch_fuses_and_the_same_steps():
    fused, plain = _params(), _params()
    a = fused_adam([{"params": fused[:1], "weight_decay": 0.1},
                    {"params": fused[1:], "weight_decay": 0.0}], lr=0.01)
    b = torch.optim.Adam([{"params": plain[:1], "weight_decay": 0.1},
                          {"params": plain[1:], "weight_decay": 0.0}], lr=0.01)
    assert a.defaults["fused"] and not b.defaults["fused"]
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        grads = [torch.randn(p.shape, generator=gen) for p in fused]
        for opt, ps in ((a, fused), (b, plain)):
            for p, g in zip(ps, grads):
                p.grad = g.clone()
            opt.step()
    for p, q in zip(fused, plain):            # the last bit may round differently
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)


def test_a_device_torch_does_not_fuse_for_gets_torchs_update():
    """torch checks the device at the first step: a parameter it cannot fuse for (here
    on the meta device) gets torch's own update from the start, not an error then."""
    w = torch.nn.Parameter(torch.ones(3, device="meta"))
    opt = fused_adam([w], lr=0.1)
    assert not opt.defaults["fused"]
    w.grad = torch.ones(3, device="meta")
    opt.step()


def test_a_small_cpu_model_steps_on_one_thread_and_keeps_the_closures_threads():
    """A small CPU model's step runs on one intra-op thread, restored after it; a closure
    (the model's forward and backward) runs before it on every thread, and its loss is
    returned, as torch's Adam returns it."""
    params = _params()
    opt = fused_adam(params, lr=0.01)
    before = torch.get_num_threads()
    seen = []

    def closure():
        seen.append(torch.get_num_threads())
        opt.zero_grad()
        loss = sum((p ** 2).sum() for p in params)
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert seen == [before] and torch.get_num_threads() == before
    assert float(loss) > 0 and all(p.grad is not None for p in params)
