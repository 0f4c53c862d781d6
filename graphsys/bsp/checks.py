"""Checks of what a user's :class:`~graphsys.bsp.program.VertexProgram` returns, before the
engine or a native (numba) kernel reads it.

The kernels index by vertex id without bounds checks, so every array a program hands the
engine is checked for its type, shape, dtype and device (NumPy arrays in place of tensors
where :attr:`~graphsys.bsp.program.Context.host`); a mismatch is one
:class:`~graphsys.errors.GraphsysError` naming the program, the method and what was
expected. The checks read attributes only: no copy, no reduction over the values.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np

from graphsys.device import HostDevice
from graphsys.errors import GraphsysError

if TYPE_CHECKING:
    import torch


def _is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor (False, with no torch import, where torch was
    never imported: then nothing is one)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _dtype(t) -> str:
    """The name of a tensor's or array's dtype (``float64``, ``bool``...)."""
    return str(t.dtype).removeprefix("torch.")


def _same_device(have: torch.device, want: torch.device) -> bool:
    """``have`` is ``want`` (``cuda`` without an index matches any CUDA device)."""
    return have.type == want.type and (have.index is None or want.index is None
                                       or have.index == want.index)


def _describe(value) -> str:
    if _is_tensor(value):
        return f"a {_dtype(value)} tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__module__}.{type(value).__qualname__}".replace("builtins.", "")


def _fail(program, method: str, what: str, value, expected: str) -> GraphsysError:
    return GraphsysError(f"{program.name}: {method}() returned {what} as {_describe(value)}, "
                         f"expected {expected}")


def _tensor(program, method: str, what: str, value, expected: str,
            device: torch.device) -> torch.Tensor:
    if isinstance(device, HostDevice):  # a NumPy state (Context.host)
        if not isinstance(value, np.ndarray):
            raise _fail(program, method, what, value, expected + " (a NumPy array)")
        return value
    if not _is_tensor(value):
        raise _fail(program, method, what, value, expected + " (a torch.Tensor)")
    if not _same_device(value.device, device):
        raise GraphsysError(f"{program.name}: {method}() returned {what} on {value.device}, "
                            f"expected it on the run's device {device} (ctx.device)")
    return value


def mask(program, method: str, value, num_local: int, device: torch.device,
         what: str = "the frontier") -> torch.Tensor:
    """``value`` as a contiguous bool (N_local,) tensor on ``device`` (a frontier, the
    accepted targets); GraphsysError naming ``method`` otherwise."""
    expected = f"bool ({num_local},): one flag per owned vertex"
    t = _tensor(program, method, what, value, expected, device)
    if _dtype(t) != "bool" or tuple(t.shape) != (num_local,):
        raise _fail(program, method, what, t, expected)
    return np.ascontiguousarray(t) if isinstance(t, np.ndarray) else t.contiguous()


def values(program, method: str, value, num_local: int, device: torch.device,
           what: str = "the values", width: int | None = None,
           any_width: bool = False) -> torch.Tensor:
    """``value`` as contiguous float64 (N_local,) — or (N_local, ``width``) rows; with
    ``any_width``, (N_local,) or (N_local, d) for any d — on ``device``: a real dtype is
    converted (bool, integer, float), anything else is a GraphsysError naming ``method``."""
    if any_width:
        expected = f"float64 ({num_local},) or ({num_local}, d): one value or row per owned vertex"
        ok = (lambda s: len(s) in (1, 2) and s[0] == num_local
              and (len(s) == 1 or s[1] >= 1))
    else:
        shape = (num_local,) if width is None else (num_local, width)
        expected = (f"float64 {shape}: one value per owned vertex" if width is None else
                    f"float64 {shape}: one row of width {width} per owned vertex")
        ok = (lambda s: s == shape)
    t = _tensor(program, method, what, value, expected, device)
    if _complex(t) or not ok(tuple(t.shape)):
        raise _fail(program, method, what, t, expected)
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(t, np.float64)
    import torch

    return t.to(torch.float64).contiguous()


def _complex(t) -> bool:
    return np.iscomplexobj(t) if isinstance(t, np.ndarray) else t.is_complex()


def state(program, method: str, value, num_local: int, device: torch.device) -> dict:
    """``value`` is a program's state: a dict whose tensors of one or more dimensions are
    per-vertex ((N_local, ...) on ``device``); a declared
    :attr:`~graphsys.bsp.program.VertexProgram.relax_state` entry is float64 (N_local,)
    (the fused kernels lower it in place)."""
    if not isinstance(value, dict):
        raise _fail(program, method, "the state", value, "a dict of str to per-vertex tensors")
    for name, t in value.items():
        if (_is_tensor(t) or isinstance(t, np.ndarray)) and t.ndim >= 1:
            what = f"state[{name!r}]"
            expected = f"({num_local}, ...): one entry per owned vertex"
            _tensor(program, method, what, t, expected, device)
            if t.shape[0] != num_local:
                raise _fail(program, method, what, t, expected)
    relax_state(program, method, value, num_local, device)
    return value


def relax_state(program, method: str, value: dict, num_local: int,
                device: torch.device) -> None:
    """The declared min-relaxation state entry is a float64 (N_local,) tensor."""
    name = program.relax_state
    if name is None:
        return
    if name not in value:
        raise GraphsysError(f"{program.name}: {method}() returned a state without "
                            f"{name!r}, the declared relax_state")
    t = value[name]
    expected = f"float64 ({num_local},) (the relax_state the fused supersteps lower in place)"
    _tensor(program, method, f"state[{name!r}]", t, expected, device)
    if _dtype(t) != "float64" or tuple(t.shape) != (num_local,):
        raise _fail(program, method, f"state[{name!r}]", t, expected)


def pair(program, method: str, value, first: str, second: str) -> tuple:
    """``value`` is a 2-tuple (``init``: state and frontier; ``update``: frontier and
    votes)."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        got = (f"{len(value)} values" if isinstance(value, (tuple, list))
               else _describe(value))
        raise GraphsysError(f"{program.name}: {method}() must return ({first}, {second}), got "
                            f"{got}")
    return tuple(value)


def reductions(program, method: str, parts) -> dict:
    """``parts`` (what :meth:`aggregate` or :meth:`update` returned as votes) is a dict of
    name to (number or one-element tensor, reduction)."""
    if not isinstance(parts, dict):
        raise _fail(program, method, "its reductions", parts,
                    "a dict of name to (value, 'sum' | 'min' | 'max')")
    for name, part in parts.items():
        ok = isinstance(part, (tuple, list)) and len(part) == 2
        if ok and _is_tensor(part[0]):
            ok = part[0].numel() == 1 and not part[0].is_complex()
        elif ok:
            ok = isinstance(part[0], (int, float)) or hasattr(part[0], "__float__")
        if not ok:
            raise GraphsysError(f"{program.name}: {method}() returned {name!r} as "
                                f"{_describe(part)}, expected (value, reduction) with one "
                                f"number as the value")
    return parts


def messages(program, value, expected_shape: tuple, device: torch.device) -> torch.Tensor:
    """A callable :attr:`~graphsys.bsp.program.VertexProgram.message`'s per-edge messages:
    float64 of the sent rows' shape ((E,) or (E, d)) on ``device``."""
    expected = f"float64 {expected_shape}: one message per edge"
    import torch

    t = _tensor(program, "message", "the messages", value, expected, device)
    if t.is_complex() or tuple(t.shape) != tuple(expected_shape):
        raise _fail(program, "message", "the messages", t, expected)
    return t.to(torch.float64)
