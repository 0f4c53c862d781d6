"""``open_source``: processes given the same registry dataset at once (the ranks of a
``torchrun`` job) share one fetch and ingest into the cache."""

import json
import subprocess
import sys

OPEN = """
import sys
from graphsys.gnn.data import open_source
g = open_source("cora", mirror=sys.argv[1], cache=sys.argv[2])
print(g.num_nodes(), g.num_edges())
"""


def test_concurrent_processes_share_one_ingest(mirror, tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", OPEN, str(mirror), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    assert len({out for out, _ in outs}) == 1
    graphs = [d for d in (tmp_path / "graphs").iterdir() if not d.name.startswith(".")]
    assert len(graphs) == 1
    assert json.loads((graphs[0] / "manifest.json").read_text())["entity_types"]


def test_cache_names_say_what_the_graph_is(mirror, tmp_path):
    """A dataset whose split is not stored in the graph (a temporal one, split by time in
    training) is cached under its name alone, not ``-random-p2``; a split that changes the
    stored masks names it."""
    from graphsys.gnn.data import open_source

    g = open_source("collegemsg", mirror=mirror, cache=tmp_path)
    assert g.path.name == "collegemsg-p2"
    assert open_source("cora", mirror=mirror, cache=tmp_path,
                       split="random").path.name == "cora-random-p2"
