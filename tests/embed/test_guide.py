"""docs/embed.md runs as written: its ``python`` blocks are executed in order in one
namespace, and what they print is checked against brute force (cosine neighbours, filtered
predictions, the buffer's lower bound, the frozen rows of a grown model)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest


def _known(work) -> set[tuple[int, str, int]]:
    """Every (head, relation, tail) of the guide's train and test files."""
    out = set()
    for name in ("train", "test"):
        t = pq.read_table(work / f"{name}.parquet").to_pydict()
        out |= set(zip(t["src"], t["rel"], t["dst"]))
    return out


def _before_growth(ns: dict) -> dict:
    """Brute-force answers from the trained model before the graph grows (the append
    leaves ``g`` and ``emb`` describing the old graph): cosine neighbours of entity 0 and
    the best unknown tails of ``(0, r0, ?)``, by scoring every candidate."""
    emb, g = ns["emb"], ns["g"]
    ids = g.node_ids().tolist()
    x = emb.to_numpy().astype(np.float64)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    q = ids.index(0)
    sims = unit @ unit[q]
    sims[q] = -np.inf
    known = _known(ns["work"])
    cands = [c for c in ids if c != 0 and (0, "r0", c) not in known]
    scores = emb.score([0] * len(cands), ["r0"] * len(cands), cands)
    return {"ids": ids, "vectors": x, "known": known,
            "nearest": [ids[i] for i in np.argsort(-sims, kind="stable")[:5]],
            "tails": [cands[i] for i in np.argsort(-scores, kind="stable")[:5]]}


@pytest.fixture(scope="module")
def guide(run_guide):
    """The namespace the guide's blocks leave behind (``run_guide``: tests/conftest.py),
    with ``before_growth`` taken before the block that appends new entities."""
    pytest.importorskip("faiss", reason="the guide's serving section builds a faiss index")
    seen = {}

    def before(i, block, ns):
        if "init_from" in block:
            seen.update(_before_growth(ns))

    ns = run_guide("embed.md", before)
    assert seen, "the guide grows no model"
    ns["before_growth"] = seen
    return ns


def test_protocols_are_named_and_filtering_only_helps(guide):
    p = guide["protocols"]
    full, filt = "full, raw, both sides", "full, filtered, both sides"
    assert set(p) == {full, filt, "sampled@50, filtered, both sides"}
    assert p[filt]["mrr"] >= p[full]["mrr"]
    assert p[filt]["mean_rank"] <= p[full]["mean_rank"]
    tests = pq.read_table(guide["work"] / "test.parquet").num_rows
    assert all(m["count"] == tests for m in p.values())


def test_nearest_matches_brute_force_cosine(guide):
    assert guide["ids"] == guide["before_growth"]["nearest"]
    assert guide["exact"] == guide["ids"]


def test_filtered_tails_are_the_best_unknown_facts(guide):
    known = guide["before_growth"]["known"]
    assert not {(0, "r0", t) for t in guide["tails"]} & known
    assert guide["tails"] == guide["before_growth"]["tails"]


def test_index_agrees_with_the_exact_search(guide):
    assert guide["record"]["kind"] == "hnsw"
    assert len(set(guide["approximate"]) & set(guide["exact"])) >= 4


def test_configs_and_buffer(guide):
    from graphsys.embed.schedule import min_swaps

    assert (guide["cfg"].operator, guide["cfg"].batch_size) == ("complex_diagonal", 200)
    assert guide["pbg_cfg"].operator == "complex_diagonal"
    assert any("entity_path" in note for note in guide["notes"])
    assert guide["plan"].swaps >= min_swaps(4, 2)
    assert guide["buffered"].stats[0].swaps >= min_swaps(4, 2)


def test_exports_hold_every_entity(guide):
    work, n = guide["work"], len(guide["before_growth"]["ids"])
    assert len((work / "entities.tsv").read_text().splitlines()) == n
    assert pq.read_table(work / "embeddings.parquet").num_rows == n


def test_grown_model_keeps_old_rows_and_adds_the_new_entities(guide):
    before, grown = guide["before_growth"], guide["grown"]
    np.testing.assert_array_equal(grown.vectors(before["ids"]), before["vectors"])
    assert grown.num_entities() == len(before["ids"]) + 10
    assert np.isfinite(grown.vectors(list(range(190, 200)))).all()
