"""RGCNConv vs a dense per-relation reference and vs PyG's RGCNConv; HeteroConv and
TypedInput."""

from __future__ import annotations

import copy

import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn import HeteroConv, RGCNConv, SAGEConv, TypedInput
from graphsys.gnn.conv.rgcn import relation_norm
from graphsys.sampling import HeteroBlock, TypedBlock


def random_block(n_src=12, n_dst=5, num_edges=40, num_rel=4, seed=0) -> TypedBlock:
    g = torch.Generator().manual_seed(seed)
    return TypedBlock(torch.arange(n_src), n_dst,
                      torch.randint(0, n_src, (num_edges,), generator=g),
                      torch.randint(0, n_dst, (num_edges,), generator=g),
                      edge_type=torch.randint(0, num_rel, (num_edges,), generator=g))


def dense_reference(conv: RGCNConv, x: torch.Tensor, block: TypedBlock) -> torch.Tensor:
    """h'_i = W_0 h_i + sum_r sum_{j in N_i^r} W_r h_j / c_{i,r} + b, node by node."""
    n = block.num_dst_nodes
    out = torch.zeros(n, conv.out_dim, dtype=torch.float64)
    xs = x.double()
    for i in range(n):
        acc = xs[i] @ conv.root.double() if conv.root is not None else 0
        for r in range(conv.num_relations):
            sel = (block.edge_dst == i) & (block.edge_type == r)
            if not sel.any():
                continue
            w = conv.relation_weight(r).double()
            msgs = xs[block.edge_src[sel]] @ w
            acc = acc + (msgs.mean(0) if conv.aggr == "mean" else msgs.sum(0))
        out[i] = acc + (conv.bias.double() if conv.bias is not None else 0)
    return out


@pytest.mark.parametrize("kw", [{}, {"num_bases": 3}, {"num_blocks": 2},
                                {"num_blocks": 4, "aggr": "sum"},
                                {"num_bases": 2, "root_weight": False, "bias": False}])
def test_dense_reference(kw, device):
    """On the test device, against the dense reference on the CPU (1e-5: GPU sums run in
    any order)."""
    torch.manual_seed(0)
    conv = RGCNConv(8, 4, 4, **kw)
    with torch.no_grad():
        if conv.bias is not None:
            conv.bias.normal_()
    block = random_block()
    x = torch.randn(block.num_src_nodes, 8)
    if device == "lazy" and not kw.get("num_bases"):
        pytest.skip("torch's lazy backend puts a bmm of a transposed view on the CPU and "
                    "loses the views unbind and split return")
    got = copy.deepcopy(conv).to(device)(x.to(device), block.to(device)).cpu()
    assert got.shape == (5, 4)
    torch.testing.assert_close(got.double(), dense_reference(conv, x, block),
                               rtol=1e-5, atol=1e-5)


def test_block_diagonal_weight_is_block_diagonal():
    conv = RGCNConv(6, 9, 2, num_blocks=3)
    w = conv.relation_weight(1)
    assert w.shape == (6, 9)
    assert torch.count_nonzero(w[:2, 3:]) == 0 and torch.count_nonzero(w[2:4, :3]) == 0


@pytest.mark.parametrize("kw", [{}, {"num_bases": 3}, {"num_blocks": 2}])
def test_matches_pyg_rgcnconv(kw):
    pyg_nn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(1)
    ours = RGCNConv(8, 4, 4, **kw)
    theirs = pyg_nn.RGCNConv(8, 4, 4, **kw)
    with torch.no_grad():
        ours.bias.normal_()
        theirs.weight.copy_(ours.weight)
        if ours.comp is not None:
            theirs.comp.copy_(ours.comp)
        theirs.root.copy_(ours.root)
        theirs.bias.copy_(ours.bias)
    block = random_block(seed=3)
    x = torch.randn(block.num_src_nodes, 8)
    expect = theirs((x, x[:block.num_dst_nodes]), block.edge_index, block.edge_type)
    torch.testing.assert_close(ours(x, block), expect, rtol=1e-5, atol=1e-5)


def test_gradients_reach_every_used_relation():
    conv = RGCNConv(4, 4, 3, num_blocks=2)
    block = random_block(num_rel=3, n_src=8, n_dst=8)
    conv(torch.randn(8, 4), block).sum().backward()
    used = torch.unique(block.edge_type)
    assert all(conv.weight.grad[r].abs().sum() > 0 for r in used.tolist())


def test_bad_input():
    conv = RGCNConv(4, 4, 2)
    block = random_block(num_rel=3)
    with pytest.raises(GraphsysError, match="relation ids must lie in 0..1"):
        conv(torch.randn(block.num_src_nodes, 4), block)
    with pytest.raises(GraphsysError, match="needs each edge's relation"):
        plain = TypedBlock(block.src_nodes, 5, block.edge_src, block.edge_dst)
        conv(torch.randn(block.num_src_nodes, 4), plain)
    with pytest.raises(GraphsysError, match="must divide"):
        RGCNConv(6, 4, 2, num_blocks=4)
    with pytest.raises(GraphsysError, match="not both"):
        RGCNConv(4, 4, 2, num_blocks=2, num_bases=2)


def test_no_edges_gives_root_and_bias():
    conv = RGCNConv(3, 2, 2)
    block = TypedBlock(torch.arange(3), 2, torch.zeros(0, dtype=torch.long),
                       torch.zeros(0, dtype=torch.long), edge_type=torch.zeros(0, dtype=torch.long))
    x = torch.randn(3, 3)
    torch.testing.assert_close(conv(x, block), x[:2] @ conv.root + conv.bias)


def test_typed_block_to_hetero_roundtrip():
    # users are global 0..2, items 3..4
    blk = TypedBlock(torch.tensor([4, 0, 1, 3]), 2, torch.tensor([1, 2, 3, 0]),
                     torch.tensor([0, 0, 1, 1]), edge_type=torch.tensor([0, 0, 1, 1]))
    rels = [("user", "rates", "item"), ("item", "rev_rates", "user")]
    hb = blk.to_hetero({"user": 0, "item": 3}, rels)
    assert hb.src_nodes["user"].tolist() == [0, 1] and hb.num_dst_nodes["user"] == 1
    assert hb.src_nodes["item"].tolist() == [1, 0] and hb.num_dst_nodes["item"] == 1
    es, ed = hb.edges[("user", "rates", "item")]
    assert es.tolist() == [0, 1] and ed.tolist() == [0, 0]       # users 0, 1 -> item 1
    es, ed = hb.edges[("item", "rev_rates", "user")]
    assert es.tolist() == [1, 0] and ed.tolist() == [0, 0]       # items 0, 1 -> user 0


def test_heteroconv_sums_relations_like_separate_convs():
    torch.manual_seed(2)
    r1, r2 = ("user", "rates", "item"), ("item", "similar", "item")
    hb = HeteroBlock({"user": torch.tensor([0, 1, 2]), "item": torch.tensor([5, 6, 7])},
                     {"user": 0, "item": 2},
                     {r1: (torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1])),
                      r2: (torch.tensor([2, 0]), torch.tensor([0, 1]))})
    c1, c2 = SAGEConv(3, 2), SAGEConv(3, 2)
    x = {"user": torch.randn(3, 3), "item": torch.randn(3, 3)}
    out = HeteroConv({r1: c1, r2: c2}, aggr="sum")(x, hb)
    assert set(out) == {"item"}
    # reference: SAGE by hand per relation
    def sage(conv, xs, xd, es, ed):
        mean = torch.zeros(2, 3).index_add_(0, ed, xs[es])
        deg = torch.zeros(2).index_add_(0, ed, torch.ones(len(ed))).clamp(min=1)
        return conv.lin_self(xd) + conv.lin_neigh(mean / deg[:, None])
    ref = (sage(c1, x["user"], x["item"][:2], *hb.edges[r1])
           + sage(c2, x["item"], x["item"][:2], *hb.edges[r2]))
    torch.testing.assert_close(out["item"], ref)
    mean = HeteroConv({r1: c1, r2: c2}, aggr="mean")(x, hb)["item"]
    torch.testing.assert_close(mean, ref / 2)


def test_heteroconv_with_pyg_conv():
    pyg_nn = pytest.importorskip("torch_geometric.nn")
    rel = ("user", "rates", "item")
    hb = HeteroBlock({"user": torch.tensor([0, 1]), "item": torch.tensor([3])},
                     {"user": 0, "item": 1}, {rel: (torch.tensor([0, 1]), torch.tensor([0, 0]))})
    conv = pyg_nn.SAGEConv((4, 4), 2)
    x = {"user": torch.randn(2, 4), "item": torch.randn(1, 4)}
    out = HeteroConv({rel: conv})(x, hb)
    torch.testing.assert_close(out["item"], conv((x["user"], x["item"]), hb.edge_index(rel)))


def test_typed_input():
    feats = torch.randn(2, 5)
    inp = TypedInput({"user": 3, "item": 2}, 4, features={"item": feats})
    nodes = torch.tensor([4, 0, 3, 2])
    out = inp(nodes)
    torch.testing.assert_close(out[0], inp.proj["item"](feats[1]))
    torch.testing.assert_close(out[2], inp.proj["item"](feats[0]))
    torch.testing.assert_close(out[1], inp.emb["user"].weight[0])
    torch.testing.assert_close(out[3], inp.emb["user"].weight[2])
    with pytest.raises(GraphsysError, match="unknown node type"):
        TypedInput({"user": 3}, 4, features={"item": feats})


def test_relation_norm_counts_edges_of_destination_and_relation():
    """1 / c_{i,r} against counting the (destination, relation) pairs one by one."""
    block = random_block(num_edges=200, num_rel=3, seed=4)
    dst, et = block.edge_dst.tolist(), block.edge_type.tolist()
    want = [1.0 / sum(1 for d, r in zip(dst, et, strict=True) if (d, r) == (dd, rr))
            for dd, rr in zip(dst, et, strict=True)]
    got = relation_norm(block.edge_dst, block.edge_type, 3)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, torch.tensor(want))


def test_given_edge_norm_and_unvalidated_ids(monkeypatch):
    """``edge_norm`` replaces aggr's factors (all ones: the sum); ``validate=False`` takes
    the block as it is, with no host read of the relation ids (on a GPU's path)."""
    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.gnn.conv import rgcn

    monkeypatch.setattr(rgcn, "BLOCKS_PER_RELATION", frozenset())
    torch.manual_seed(0)
    block = random_block()
    x = torch.randn(block.num_src_nodes, 8)
    summed = RGCNConv(8, 4, 4, num_blocks=2, aggr="sum")
    mean = RGCNConv(8, 4, 4, num_blocks=2)
    mean.load_state_dict(summed.state_dict())
    ones = torch.ones(block.num_edges)
    torch.testing.assert_close(mean(x, block, edge_norm=ones), summed(x, block))
    with DeviceWorkCounter(device_tensors=[x, *mean.parameters(), block.edge_src,
                                           block.edge_dst, block.edge_type]) as c:
        mean(x, block, validate=False)
    assert c.syncs == 0 and c.transfers == 0
    with DeviceWorkCounter(device_tensors=[x, block.edge_type]) as c:
        mean(x, block)
    assert c.syncs == 2                           # the range check reads min and max


def test_typed_input_of_one_type_reads_nothing_on_the_host():
    from graphsys.analysis.device_counts import DeviceWorkCounter

    ti = TypedInput({"node": 10}, 4)
    nodes = torch.tensor([3, 1, 7])
    with DeviceWorkCounter(device_tensors=[nodes, *ti.parameters(), *ti.buffers()]) as c:
        out = ti(nodes)
    assert c.syncs == 0
    torch.testing.assert_close(out, ti.emb["node"].weight[nodes])


def test_block_messages_in_chunks_match_one_product(monkeypatch):
    """A graph whose gathered relation blocks exceed BLOCK_GATHER is processed in edge
    chunks, with the same output and gradients."""
    from graphsys.gnn.conv import rgcn

    monkeypatch.setattr(rgcn, "BLOCKS_PER_RELATION", frozenset())  # the gather on the CPU
    torch.manual_seed(0)
    conv = RGCNConv(8, 4, 4, num_blocks=2)
    block = random_block(num_edges=50)
    x = torch.randn(block.num_src_nodes, 8, requires_grad=True)
    outs = []
    for limit in (rgcn.BLOCK_GATHER, 7 * conv.weight[0].numel()):   # 1 chunk, 8 chunks
        monkeypatch.setattr(rgcn, "BLOCK_GATHER", limit)
        out = conv(x, block)
        (gx,) = torch.autograd.grad(out.square().sum(), x)
        outs.append((out.detach(), gx))
    torch.testing.assert_close(outs[0][0], outs[1][0])
    torch.testing.assert_close(outs[0][1], outs[1][1])


@pytest.mark.parametrize("kw", [{"num_blocks": 2}, {"num_blocks": 4, "aggr": "sum"}])
def test_block_messages_per_relation_match_the_gather(monkeypatch, kw):
    """Blocks multiplied one relation at a time (the CPU's way) and gathered per edge (the
    other devices'): the same output and gradients, both equal to the dense reference."""
    from graphsys.gnn.conv import rgcn

    torch.manual_seed(0)
    conv = RGCNConv(8, 4, 4, **kw)
    block = random_block(num_edges=60)
    x = torch.randn(block.num_src_nodes, 8, requires_grad=True)
    got = []
    for per_relation in (frozenset({"cpu"}), frozenset()):
        monkeypatch.setattr(rgcn, "BLOCKS_PER_RELATION", per_relation)
        out = conv(x, block)
        grads = torch.autograd.grad(out.square().sum(), [x, conv.weight])
        got.append((out.detach(), *grads))
    for a, b in zip(*got):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(got[0][0].double(), dense_reference(conv, x.detach(), block),
                               rtol=1e-5, atol=1e-5)


def test_type_names_with_dots_and_shared_module_keys():
    # stored type names may hold "."; nn.ModuleDict refuses it (written "#", as PyG does)
    rel = ("b.c", "r.1", "a")
    hb = HeteroBlock({"b.c": torch.tensor([0, 1]), "a": torch.tensor([3])},
                     {"b.c": 0, "a": 1}, {rel: (torch.tensor([0, 1]), torch.tensor([0, 0]))})
    conv = SAGEConv(4, 2)
    x = {"b.c": torch.randn(2, 4), "a": torch.randn(1, 4)}
    out = HeteroConv({rel: conv})(x, hb)["a"]
    plain = HeteroBlock({"u": hb.src_nodes["b.c"], "a": hb.src_nodes["a"]}, {"u": 0, "a": 1},
                        {("u", "r", "a"): hb.edges[rel]})
    ref = HeteroConv({("u", "r", "a"): conv})({"u": x["b.c"], "a": x["a"]}, plain)["a"]
    torch.testing.assert_close(out, ref)
    feats = torch.randn(2, 5)
    inp = TypedInput({"x.y": 3, "item": 2}, 4, features={"item": feats})
    inp2 = TypedInput({"x.y": 3, "v.w": 2}, 4, features={"v.w": feats})
    assert inp(torch.tensor([1])).shape == inp2(torch.tensor([4])).shape == (1, 4)
    # two relations whose keys would coincide would share one conv's weights: refused
    with pytest.raises(GraphsysError, match="one module key"):
        HeteroConv({("a__b", "r", "c"): SAGEConv(3, 2), ("a", "b__r", "c"): SAGEConv(3, 2)})
    with pytest.raises(GraphsysError, match="one module key"):
        TypedInput({"a.b": 1, "a#b": 1}, 2)
    # a type named as a ModuleDict attribute (a user-items graph) raised torch's KeyError
    inp = TypedInput({"user": 2, "items": 3, "train": 1}, 4, features={"items": feats[:, :2]
                                                                       .repeat(2, 1)[:3]})
    out = inp(torch.tensor([0, 4, 5]))
    torch.testing.assert_close(out[1], inp.proj["<items>"](getattr(inp, "feat_<items>")[2]))
    torch.testing.assert_close(out[2], inp.emb["<train>"].weight[0])
    rel = ("user", "rates", "items")
    assert set(HeteroConv({rel: SAGEConv(3, 2), ("items", "keys", "user"): SAGEConv(3, 2)})
               .convs) == {"user__rates__items", "items__keys__user"}
