"""graphsys.gnn.config: the defaults TrainConfig's docstring states are the ones it fills."""

from __future__ import annotations

import re

import pytest

from graphsys.gnn import TrainConfig

#: A name of the docstring's default lists -> the TrainConfig that name stands for.
CASES = {"node": {}, "gat": {"model": "gat"}, "link": {"task": "link"},
         "rgcn": {"task": "link", "model": "rgcn"}, "temporal-link": {"task": "temporal-link"}}


@pytest.mark.parametrize("field", ["epochs", "lr", "weight_decay", "dropout", "batch_size",
                                   "patience"])
def test_the_documented_task_defaults_are_filled(field):
    """Each ``(name value, ...)`` default the field's entry lists is what TrainConfig takes;
    the entries once named only the node and link tasks (temporal-link's 10 epochs, lr
    0.001, dropout 0.1, batches of 200 events and patience 3 were in no docstring)."""
    doc = re.sub(r"\s+", " ", TrainConfig.__doc__)
    entry = re.search(rf" {field} : .*?\((node [0-9][^)]*)\)", doc).group(1)
    pairs = re.findall(r"(temporal-link|node|link|gat|rgcn) ([0-9.e-]+)", entry)
    assert {name for name, _ in pairs} >= {"node", "link", "temporal-link"}, entry
    for name, value in pairs:
        assert getattr(TrainConfig(**CASES[name]), field) == pytest.approx(float(value)), name


def test_the_task_entry_names_every_task():
    doc = re.sub(r"\s+", " ", TrainConfig.__doc__)
    assert 'task : {"node", "link", "temporal-link"}' in doc
