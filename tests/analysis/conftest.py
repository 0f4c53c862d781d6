"""Shared fixtures of the workload-profiling tests."""

from __future__ import annotations

import pytest

from graphsys.storage.graph import open_graph


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A seeded 300-node, 1,000-edge graph in 3 partitions whose first 300 edges leave
    nodes 0..3 (hubs: skewed out-degrees for the load-balance models), ingested from a
    TSV file."""
    from tests.conftest import hub_graph_dir

    return open_graph(hub_graph_dir(tmp_path_factory.mktemp("workloads"), hubs=4,
                                    hub_edges=300, nodes=300, edges=1000, partitions=3,
                                    seed=3))
