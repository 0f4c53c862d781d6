"""docs/growing.md runs as written: its ``python`` blocks are executed in order in one
namespace, then their answers are checked against brute force on the guide's events: the
view's edges, the split's sides, every sampled neighbour, the model's protocol."""

from __future__ import annotations

import datetime

import numpy as np
import pytest


@pytest.fixture(scope="module")
def guide(run_guide):
    return run_guide("growing.md")


def _unix(day: str) -> int:
    return int(datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC).timestamp())


def test_view_is_the_edges_until_the_date(guide):
    t = guide["events"]["timestamp"].to_numpy()
    assert guide["june"].num_edges() == (t <= _unix("2004-06-01")).sum()
    assert len(guide["ranks_june"].to_table()) == guide["g"].num_nodes()


def test_split_sides_by_brute_force(guide):
    t = guide["t"]
    lo, hi = _unix("2004-09-01"), _unix("2004-10-01")
    np.testing.assert_array_equal(guide["train_mask"], t < lo)
    np.testing.assert_array_equal(guide["test_mask"], t >= hi)


def test_sampled_events_are_the_latest_earlier_ones(guide):
    g, hop = guide["g"], guide["hop"]
    s, d, t = (np.concatenate(x) for x in zip(*[
        (a, b, c) for (a, b, _, _), c in zip(g.iter_edges(), g.edge_column("timestamp"))]))
    for i, (node, at) in enumerate(zip(guide["seeds"], guide["when"])):
        ids = np.flatnonzero(((s == node) | (d == node)) & (t < at))
        ids = ids[np.lexsort((ids, t[ids]))][-5:]
        np.testing.assert_array_equal(hop.eid[i, :hop.count[i]], ids)


def test_tgn_states_its_protocol_and_learns(guide):
    run = guide["tgn_run"]
    assert run.protocol == "sampled@50, raw"
    assert run.metrics["auc"] > 0.6 and run.metrics["mrr"] > 1 / 51
