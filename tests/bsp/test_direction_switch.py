"""A program whose direction changes between supersteps (HITS) gives the same answer in
memory, out of core and on 2 ranks, equal to an independent scipy iteration (issue 13:
out of core used to ignore the change and still report success)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphsys import bsp
from graphsys.errors import GraphsysError

from .conftest import torchrun
from .hits_program import HITS, reference

STEPS = 12


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_hits_direction_switch(graphs, mode):
    tg = graphs["directed-p3"]
    a_ref, h_ref = reference(tg.count, STEPS)
    for which, ref in (("a", a_ref), ("h", h_ref)):
        res = bsp.run(tg.graph, HITS(which), mode=mode, max_iters=STEPS)
        np.testing.assert_allclose(res.values, ref, rtol=1e-12, atol=1e-15, err_msg=which)
    assert res.stats.num_supersteps == STEPS


def test_hits_two_ranks(graphs, tmp_path):
    tg = graphs["directed-p3"]
    out = tmp_path / "hits"
    torchrun(Path(__file__).with_name("hits_program.py"), tg.path, out, STEPS)
    a_ref, h_ref = reference(tg.count, STEPS)
    np.testing.assert_allclose(np.load(f"{out}.a.npy"), a_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.load(f"{out}.h.npy"), h_ref, rtol=1e-12, atol=1e-15)


def test_bad_direction_mid_run_is_one_line(graphs):
    class Broken(HITS):
        @property
        def direction(self):
            return "out" if self.step == 0 else "sideways"

    with pytest.raises(GraphsysError, match="direction must be one of"):
        bsp.run(graphs["directed-p3"].graph, Broken(), mode="out-of-core", max_iters=3)
