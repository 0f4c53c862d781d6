"""graphsys.ranking, the one rank rule of every metric, against brute-force loops: ties
count half, a NaN candidate never outranks, a NaN positive ranks last; AUC as the
Mann-Whitney count over every pair under the same rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphsys.errors import ParameterError
from graphsys.ranking import auc, protocol, ranks

NAN, INF = float("nan"), float("inf")


def naive_rank(p: float, candidates) -> float:
    """1 + one per candidate above, a half per candidate tied; a NaN positive is below
    every candidate, a NaN candidate below every positive with a number."""
    r = 1.0
    for c in candidates:
        if math.isnan(p):
            r += 1.0
        elif math.isnan(c):
            continue
        elif c > p:
            r += 1.0
        elif c == p:
            r += 0.5
    return r


def naive_auc(pos, neg) -> float:
    """The share of pairs won by the positive (ties half) under the same rule."""
    won = 0.0
    for p in pos:
        for n in neg:
            if math.isnan(p):
                continue
            won += 1.0 if math.isnan(n) or p > n else 0.5 if p == n else 0.0
    return won / (len(pos) * len(neg))


def _scores(rng, shape):
    """Small integers (many ties) with NaN and infinities sprinkled in."""
    x = rng.integers(0, 5, shape).astype(np.float64)
    x[rng.random(shape) < 0.1] = NAN
    x[rng.random(shape) < 0.05] = -INF
    x[rng.random(shape) < 0.05] = INF
    return x


@pytest.mark.parametrize("seed", range(5))
def test_ranks_match_a_loop_with_ties_nans_and_masks(seed):
    rng = np.random.default_rng(seed)
    pos, scores = _scores(rng, 80), _scores(rng, (80, 25))
    valid = rng.random((80, 25)) < 0.7
    want = [naive_rank(pos[i], scores[i][valid[i]]) for i in range(80)]
    assert ranks(pos, scores, valid).tolist() == want
    assert ranks(pos, scores).tolist() == [naive_rank(pos[i], scores[i]) for i in range(80)]
    # tensors of another float type give the same ranks (scores as a model returns them)
    got = ranks(torch.from_numpy(pos).float(), torch.from_numpy(scores).float(),
                torch.from_numpy(valid))
    assert got.dtype == np.float64 and got.tolist() == want


def test_a_constant_model_ranks_in_the_middle_and_nan_last():
    """A model that scores everything the same is no perfect model: the middle rank, so
    hits@10 and MRR among 100 candidates are far from 1; a NaN positive is last even
    among NaN candidates, a NaN candidate never beats a positive."""
    r = ranks(np.zeros(7), np.zeros((7, 99)))
    assert r.tolist() == [50.5] * 7
    assert ranks([NAN, NAN], [[NAN, NAN, NAN], [1.0, -INF, 2.0]]).tolist() == [4.0, 4.0]
    assert ranks([0.0], [[NAN, NAN, -1.0]]).tolist() == [1.0]


def test_auc_matches_every_pair():
    rng = np.random.default_rng(7)
    pos, neg = _scores(rng, 40), _scores(rng, 55)
    assert auc(pos, neg) == pytest.approx(naive_auc(pos, neg))
    assert auc(torch.tensor(pos), torch.tensor(neg)) == pytest.approx(naive_auc(pos, neg))
    assert auc([NAN], [0.1, 0.2]) == 0.0         # a NaN positive never wins
    assert auc([NAN, NAN], [NAN]) == 0.0
    assert auc([0.0], [NAN]) == 1.0
    assert auc([1.0, 1.0], [1.0]) == 0.5


def test_protocol_names_the_candidates():
    assert protocol() == "full, filtered"
    assert protocol(1000) == "sampled@1000, filtered"
    assert protocol(filtered=False, both_sides=True) == "full, raw, both sides"
    assert protocol(np.int64(50)) == "sampled@50, filtered"
    for bad in (0, 1.5, "x", math.inf, True):  # 1.5 was 'sampled@1'; "x", inf raised int()'s
        with pytest.raises(ParameterError, match="^negatives must be a positive integer, got "):
            protocol(bad)


def test_bad_shapes_are_one_line_errors():
    with pytest.raises(ParameterError, match="^scores must have shape"):
        ranks([1.0, 2.0], [[1.0]])
    with pytest.raises(ParameterError, match="^valid must have the shape"):
        ranks([1.0], [[1.0, 2.0]], [[True]])


def test_every_engine_summarises_ranks_with_the_one_mrr_and_hits_rule():
    """MRR / Hits@k are written once (graphsys.ranking) and every engine's summary gives
    the same figures, NaN for no ranks (0.0 would pass for a measured score)."""
    from graphsys import ranking
    from graphsys.gnn.recommendation import ranking_metrics as rec_metrics

    r = np.array([1.0, 2.5, 4.0, 11.0])
    want = {"mrr": float(np.mean(1 / r)), "hits@1": 0.25, "hits@3": 0.5, "hits@10": 0.75}
    assert ranking.rank_metrics(r, (1, 3, 10)) == pytest.approx(want)
    assert ranking.rank_metrics(r, (1, 3, 10), mean=True) == \
        pytest.approx({**want, "mean_rank": 4.625})
    rec = rec_metrics(np.zeros((1, 4)), [np.zeros(0, int)], [np.zeros(0, int)], ks=[1])
    assert rec["users"] == 0 and all(math.isnan(rec[k]) for k in ("mrr", "hits@1", "recall@1"))
    with pytest.raises(ParameterError, match="k"):
        ranking.hits_at_k(r, 0)
    # 1.5 counted the tie at rank 1.5 as a hit, True read as 1, NaN and "3" raised raw errors
    for k in (1.5, True, float("nan"), "3"):
        with pytest.raises(ParameterError, match="^k must be a positive integer"):
            ranking.hits_at_k(r, k)
        with pytest.raises(ParameterError, match="^k must be a positive integer"):
            ranking.recall_at_k(r, [0, 0, 1, 1], k)
    assert ranking.hits_at_k(r, np.int64(3)) == 0.5


EMPTY = np.zeros(0)
#: Every metric of graphsys.ranking on no input, and whether it warns that it answered
#: otherwise before (0.0) or raised (the AUC).
EMPTY_CALLS = {
    "mrr": (lambda m: m.mrr(EMPTY), False),
    "hits_at_k": (lambda m: m.hits_at_k(EMPTY, 3), False),
    "mean_rank": (lambda m: m.mean_rank(EMPTY), False),
    "recall_at_k": (lambda m: m.recall_at_k(EMPTY, EMPTY, 3), False),
    "auc (no positive)": (lambda m: m.auc(EMPTY, [0.5]), False),
    "auc (no negative)": (lambda m: m.auc([0.5], EMPTY), False),
    "average_precision": (lambda m: m.average_precision(EMPTY, [0.5]), True),
    "macro_f1": (lambda m: m.macro_f1(EMPTY, EMPTY), True),
    "class_f1": (lambda m: m.class_f1([0, 0], [0, 0], [0, 0]), False),
}


@pytest.mark.parametrize("name", sorted(EMPTY_CALLS))
def test_every_metric_of_no_input_is_nan(name):
    """The one documented rule for no input (graphsys.ranking's docstring): NaN, with a
    DeprecationWarning where a public function answered 0.0 before."""
    from graphsys import ranking

    call, warns = EMPTY_CALLS[name]
    if warns:
        with pytest.warns(DeprecationWarning, match="is NaN now"):
            assert math.isnan(call(ranking))
    else:
        assert math.isnan(call(ranking))


def test_every_engines_summary_of_no_input_is_nan():
    """The engines' records built on graphsys.ranking keep its rule: each figure NaN."""
    from graphsys import ranking
    from graphsys.gnn.link import LinkData, evaluate_scores
    from graphsys.gnn.temporal_eval import held_out_metrics

    assert all(math.isnan(v) for v in ranking.rank_metrics(EMPTY, (1, 3), mean=True).values())
    assert ranking.group_positions(EMPTY, EMPTY, EMPTY).shape == (0,)
    with pytest.warns(DeprecationWarning):
        m = held_out_metrics(EMPTY, np.zeros((0, 3)), EMPTY, [1])
    assert all(math.isnan(m[k]) for k in ("mrr", "hits@1", "ap", "auc"))
    data = LinkData.__new__(LinkData)
    data.head = data.tail = np.zeros(0, np.int64)
    data.tails = (0, 4)
    m = evaluate_scores(None, None, data, np.zeros(0, bool), 5, [1, 3], 0)
    assert all(math.isnan(v) for v in m.values()) and set(m) == {
        "mrr", "hits@1", "hits@3", "recall@1", "recall@3", "auc"}


def test_gnn_metrics_is_deprecated_with_its_figures():
    """graphsys.gnn.metrics, merged into graphsys.ranking, stays one release with a warning."""
    import importlib
    import sys

    from graphsys import ranking

    r = np.array([1.0, 3.0])
    sys.modules.pop("graphsys.gnn.metrics", None)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        mod = importlib.import_module("graphsys.gnn.metrics")
    assert mod.ranking_metrics(r, r, [0, 0], [1]) == {
        "mrr": ranking.mrr(r), "hits@1": 0.5, "recall@1": 0.5}
    assert mod.macro_f1 is ranking.macro_f1


def test_average_precision_ties_infinities_and_nan_at_one_threshold():
    # tied infinities and all-NaN scores gave 1.0 (the positives first), a perfect score
    # for a diverged model; a tie is one threshold, NaN one last threshold below every number
    inf, nan = float("inf"), float("nan")
    from graphsys.ranking import average_precision as ap
    assert ap([inf], [inf]) == ap([-inf], [-inf]) == ap([1.0], [1.0]) == 0.5
    assert ap([nan], [nan]) == 0.5 and ap([nan, nan], [nan, nan, 0.5]) == pytest.approx(0.4)
    assert ap([nan], [0.1]) == 0.5 and ap([-inf], [nan]) == 1.0
