"""``key=value`` overrides of the GNN training config
(:class:`~graphsys.gnn.TrainConfig`), as ``graphsys profile --workload gnn --set``
takes them."""

from __future__ import annotations

import dataclasses
from typing import Any

from graphsys.config_values import check_type, parse_value
from graphsys.errors import GraphsysError
from graphsys.gnn.config import TrainConfig
from graphsys.sampling.neighbor import parse_fanouts


def train_config_from_overrides(overrides: list[str], base: dict[str, Any] | None = None
                                ) -> TrainConfig:
    """A :class:`TrainConfig` from ``base`` (field values) and ``key=value`` items (values
    are TOML literals or text; ``fanouts`` and ``hard_band`` take ``10,5``). An unknown key or
    a value of the wrong type raises one line naming the key."""
    fields = {f.name: str(f.type) for f in dataclasses.fields(TrainConfig)}
    kwargs = dict(base or {})
    for item in overrides:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq:
            raise GraphsysError(f"{item!r}: expected key=value")
        if key not in fields:
            raise GraphsysError(f"{key}: unknown GNN training key (known: {', '.join(fields)})")
        value = parse_value(text.strip())
        if key in ("fanouts", "hard_band"):
            value = parse_fanouts(value if isinstance(value, list) else str(value), key)
            if key == "hard_band" and len(value) != 2:
                raise GraphsysError(f"hard_band: expected two ranks like 50,300, got {text!r}")
            value = tuple(value) if key == "hard_band" else value
        else:
            value = check_type(key, value, fields[key])
        kwargs[key] = value
    return TrainConfig(**kwargs)
