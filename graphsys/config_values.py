"""Typed values for the config dataclasses (embedding and GNN training): ``key=value``
overrides parsed as TOML literals and checked against the field's annotation, and the
config files both read (:func:`read_config_file`)."""

from __future__ import annotations

import json
import tomllib
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from graphsys.errors import ConfigError


def check_type(key: str, value: Any, annotation: str) -> Any:
    """``value`` checked (and ``int``/``float`` coerced) against a dataclass field's annotation
    text (``"int"``, ``"float | None"``, ...: the config modules use string annotations);
    a wrong type raises :class:`ConfigError` starting with ``key``."""
    base = annotation.replace(" | None", "")
    if value is None:
        if "None" in annotation:
            return None
        raise ConfigError(f"{key}: must not be null")
    if getattr(value, "dtype", None) == bool and getattr(value, "shape", None) == ():
        value = bool(value)  # NumPy's bool: a flag, never a number
    if base == "int":
        if isinstance(value, bool) or not isinstance(value, Integral):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ConfigError(f"{key}: must be an integer, got {value!r}")
        return int(value)  # NumPy's integers too
    elif base == "float":
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ConfigError(f"{key}: must be a number, got {value!r}")
        return float(value)
    elif base == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{key}: must be a string, got {value!r}")
    elif base == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {value!r}")
    elif base == "str | int":
        if isinstance(value, bool) or not isinstance(value, (str, Integral)):
            raise ConfigError(f"{key}: must be a size like '2GB' or a byte count, got {value!r}")
        return value if isinstance(value, str) else int(value)
    return value


def plain(value: Any) -> Any:
    """``json.dumps``'s ``default`` for config data: a NumPy or torch scalar as the Python
    number or bool it holds; anything else that JSON cannot hold is a one-line
    :class:`ConfigError`.

    >>> import json, numpy as np
    >>> json.dumps({"dimension": np.int32(8)}, default=plain)
    '{"dimension": 8}'
    """
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    raise ConfigError(f"config: {value!r} is no plain value (a number, string, bool, list "
                      f"or table)")


def parse_value(text: str) -> Any:
    """A ``key=value`` override's value: a TOML literal if it parses (``0.1``, ``true``,
    ``"x"``, ``[10, 5]``), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The table of settings in a ``.json`` (by its suffix) or TOML (any other) config
    file; a file that cannot be read, is not UTF-8, does not parse or holds no table raises
    a one-line :class:`ConfigError` naming it."""
    path = Path(path)
    if path.exists() and not path.is_file():      # a FIFO blocked the read forever
        raise ConfigError(f"{path}: cannot read the config (not a regular file: a directory, "
                          f"a FIFO or a device)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:   # a non-UTF-8 file raised a raw error
        raise ConfigError(f"{path}: cannot read the config ({exc})") from None
    try:
        values = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: invalid {path.suffix.lstrip('.') or 'toml'}: "
                          f"{exc if str(exc) else 'nested too deeply'}") from None
    if not isinstance(values, dict):              # a JSON list raised a raw AttributeError
        raise ConfigError(f"{path}: a config is a table of settings, got "
                          f"{type(values).__name__}")
    return values
