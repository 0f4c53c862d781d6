"""Each plug-in kind of graphsys.plugins is extended by one new file plus one registration
line: a test per kind writes the file (a module in tmp_path), registers it as a built-in
would (``register_lazy``) and finds it in the CLI's choices and help, in the profiler or in
the loader, with no other file edited."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphsys import cli, plugins
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    """``plugin_module(name, source)``: writes ``name.py`` on ``sys.path``; registrations made
    through ``register`` are removed after the test."""
    registered = []

    def write(name: str, source: str) -> None:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))

    def register(registry, name: str, target: str) -> None:
        registry.register_lazy(name, target)
        registered.append((registry, name))

    monkeypatch.syspath_prepend(str(tmp_path))
    write.register = register
    yield write
    for registry, name in registered:
        registry.unregister(name)


def _help(command: list[str]) -> str:
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if a.dest == "command").choices[command[0]]
    for word in command[1:]:
        sub = next(a for a in sub._actions if a.dest and a.choices and word in a.choices
                   ).choices[word]
    return " ".join(sub.format_help().split())


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A directed path 0 -> 1 -> 2 -> 3 and an isolated edge 7 -> 8."""
    tmp = tmp_path_factory.mktemp("plugins")
    f = tmp / "e.tsv"
    f.write_text("0\t1\n1\t2\n2\t3\n7\t8\n")
    ingest_sources([EdgeSource([f])], tmp / "g", IngestOptions())
    return tmp / "g"


def test_vertex_algorithm(plugin_module, chain, tmp_path, capsys):
    plugin_module("my_reach", """
        from graphsys.bsp.algorithms import BFS, AlgorithmSpec
        from graphsys.bsp.algorithms.common import source_index


        def program(graph, *, source, edge_set=None):
            return BFS(source_index(graph, source))


        REACH = AlgorithmSpec("reach", program, lambda n: 2 * n, needs_source=True)
    """)
    plugin_module.register(plugins.ALGORITHMS, "reach", "my_reach:REACH")
    assert "reach" in _help(["run"]) and "reach" in _help(["profile"])
    out = tmp_path / "r.parquet"
    assert cli.main(["run", "reach", str(chain), "--source", "1", "--out", str(out)]) == 0
    import pyarrow.parquet as pq

    values = dict(zip(*(pq.read_table(out).column(c).to_pylist() for c in ("node", "value"))))
    assert values == {0: np.inf, 1: 0.0, 2: 1.0, 3: 2.0, 7: np.inf, 8: np.inf}
    assert cli.main(["run", "reach", str(chain)]) == 2
    assert "reach needs --source" in capsys.readouterr().err

    from graphsys.analysis.workloads import make_program
    from graphsys.bsp.algorithms import BFS
    from graphsys.registry import UnknownPluginError
    from graphsys.storage.graph import open_graph

    prog, limit = make_program(open_graph(chain), "reach", source=1)
    assert isinstance(prog, BFS) and limit == 12
    with pytest.raises(UnknownPluginError, match=r"unknown algorithm 'nope' \(known: .*reach"):
        make_program(open_graph(chain), "nope")          # no silent k-core


def test_partitioner(plugin_module, chain, tmp_path):
    plugin_module("my_parity", """
        import numpy as np

        from partitioners.base import Partitioner


        class ParityPartitioner(Partitioner):
            name = "parity"

            def assign(self, ctx):
                return (np.arange(ctx.num_nodes) % self.num_partitions).astype(np.int32)
    """)
    plugin_module.register(plugins.PARTITIONERS, "parity", "my_parity:ParityPartitioner")
    assert "parity" in _help(["ingest"])
    f = tmp_path / "e.tsv"
    f.write_text("0\t1\n1\t2\n2\t3\n")
    rep = ingest_sources([EdgeSource([f])], tmp_path / "g",
                         IngestOptions(partitions=2, partitioner="parity"))
    assert rep.partitioner["name"] == "parity"
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["partitioner"]["name"] == "parity"


def test_gnn_model(plugin_module, tmp_path):
    plugin_module("my_conv", """
        import torch
        from torch import nn
        from torch.nn import functional as F

        from graphsys.gnn.conv._base import scatter_sum
        from graphsys.gnn.conv.spec import ModelSpec, stacked


        class SumConv(nn.Module):
            \"\"\"h'_v = W (h_v + sum of the neighbours' h_u).\"\"\"

            def __init__(self, in_dim, out_dim):
                super().__init__()
                self.lin = nn.Linear(in_dim, out_dim)

            def forward(self, x, block):
                agg = scatter_sum(x.index_select(0, block.edge_src), block.edge_dst,
                                  block.num_dst_nodes)
                return self.lin(x[: block.num_dst_nodes] + agg)


        SUM_MODEL = ModelSpec(stacked(SumConv), F.relu)
    """)
    plugin_module.register(plugins.GNN_MODELS, "sum", "my_conv:SUM_MODEL")
    assert "sum" in _help(["gnn", "train"])
    from graphsys.gnn import GNN, TrainConfig, train
    from tests.gnn.conftest import sbm_graph

    model = GNN("sum", in_dim=8, hidden_dim=16, out_dim=4, num_layers=2)
    assert [type(c).__name__ for c in model.convs] == ["SumConv", "SumConv"]
    res = train(sbm_graph(tmp_path), TrainConfig(model="sum", fanouts=[5, 5], hidden=16,
                                                 epochs=20, batch_size=16, patience=20,
                                                 seed=1))
    assert res.metrics["test_accuracy"] >= 0.6


def test_dataset_loader(plugin_module, tmp_path, mirror):
    plugin_module("my_loader", """
        import dataclasses

        from graphsys.datasets.loaders import EDGE_LIST, load_edge_list
        from graphsys.datasets.registry import DatasetLoader


        def load_reversed(fetched):
            \"\"\"ca-grqc's edge list, every edge the other way round.\"\"\"
            plan = load_edge_list(fetched)
            edges = [dataclasses.replace(e, src_col=e.dst_col, dst_col=e.src_col)
                     for e in plan.edges]
            return dataclasses.replace(plan, edges=edges)


        REVERSED = DatasetLoader(load_reversed, EDGE_LIST.graph_keys)
    """)
    plugin_module.register(plugins.DATASET_LOADERS, "reversed", "my_loader:REVERSED")
    from graphsys.datasets.fetch import fetch
    from graphsys.datasets.loaders import plan_ingest
    from graphsys.datasets.registry import get_dataset

    registry = tmp_path / "registry"
    registry.mkdir()
    toml = (REPO / "datasets" / "ca-grqc.toml").read_text()
    assert 'loader = "edge_list"' in toml
    (registry / "ca-grqc.toml").write_text(toml.replace('loader = "edge_list"',
                                                        'loader = "reversed"'))
    ds = get_dataset("ca-grqc", registry)                  # the registry accepts the name
    assert ds.loader == "reversed"
    plan = plan_ingest(fetch(ds, cache=tmp_path / "cache", mirror=mirror), "random")
    source = plan.edges[0]
    assert (source.src_col, source.dst_col) == (1, 0)


def test_input_format(plugin_module, tmp_path):
    plugin_module("my_format", """
        import json

        import pyarrow as pa

        from graphsys.storage.formats import InputFormat
        from graphsys.storage.readers import RawEdgeBatch


        def read_jsonl(path, roles, *, progress, **_):
            \"\"\"One JSON object per line, {"from": id, "to": id}.\"\"\"
            rows = [json.loads(line) for line in path.read_text().splitlines() if line]
            yield RawEdgeBatch({"src": pa.array([r["from"] for r in rows]),
                                "dst": pa.array([r["to"] for r in rows])},
                               lambda i: i + 1, path.stat().st_size)


        JSONL = InputFormat(read_jsonl, suffixes=(".jsonl",))
    """)
    plugin_module.register(plugins.INPUT_FORMATS, "jsonl", "my_format:JSONL")
    assert "jsonl" in _help(["ingest"])
    f = tmp_path / "e.jsonl"
    f.write_text('{"from": 5, "to": 6}\n{"from": 6, "to": 7}\n')
    for fmt in ("auto", "jsonl"):
        rep = ingest_sources([EdgeSource([f], format=fmt)], tmp_path / fmt, IngestOptions())
        assert rep.edges == {"default": 2} and rep.nodes == {"node": 3}
    shutil.rmtree(tmp_path / "auto")
    out = tmp_path / "cli"
    assert cli.main(["ingest", str(f), "--out", str(out), "--format", "jsonl"]) == 0
    from graphsys.storage.graph import open_graph

    assert open_graph(out).num_edges() == 2
