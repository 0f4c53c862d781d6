"""Relation parameters of both sides (lhs = head prediction, rhs = tail prediction).

Relations are grouped by operator; group ``g`` holds ``(R_g, ...)`` parameter tensors and
their Adagrad sums. :meth:`RelationModel.apply` gathers only the slices of the relations in
the batch as autograd leaves, and :meth:`RelationModel.step` applies Adagrad to those rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from graphsys.embed.checkpoint_files import CheckpointStorage, load_npy, save_npy
from graphsys.embed.model import OPERATORS, Operator
from graphsys.errors import FormatError

SIDES = ("lhs", "rhs")
ADAGRAD_EPS = 1e-10
#: PyTorch-BigGraph's dynamic-operator parameter names -> graphsys's (= PBG's static ones);
#: ``rotations`` is older PBG's (the transpose of ``linear_transformations``).
PBG_PARAM = {"diagonals": "diagonal", "translations": "translation",
             "linear_transformations": "linear_transformation", "real": "real",
             "imag": "imag", "rotations": "rotation"}
#: graphsys parameter name -> PBG's dynamic operators' name of it.
PBG_DYNAMIC_NAME = {g: d for d, g in PBG_PARAM.items() if d != "rotations"}


def pbg_side(side: str) -> str:
    """PBG's name of graphsys's operator side ``side`` (and the other way round): graphsys
    names the side an operator predicts (``rhs``: tails, applied to heads), PBG the side
    whose entities it transforms (``lhs``: applied to heads, used to rank tails)."""
    return {"lhs": "rhs", "rhs": "lhs"}[side]


@dataclass
class _Leaf:
    param: torch.Tensor   # (R_g, ...) the stored parameter
    state: torch.Tensor   # (R_g, ...) Adagrad sums
    rows: torch.Tensor | None  # int64 (K,) rows gathered; None: the whole table
    leaf: torch.Tensor | None  # (K, ...) the gathered slice (requires grad)
    grad: torch.Tensor | None = None  # its gradient, where computed without autograd


class RelationModel:
    """Operator params per side and operator group.

    ``operators``: operator name of each relation (global relation index order).
    Tensors live on ``device``; all float32.

    ``whole_tables`` (default False): training makes each parameter table one autograd
    leaf and :meth:`step` updates the whole table (the rows of relations not in the batch
    have a zero gradient, which leaves them and their Adagrad sums exactly as they were),
    instead of gathering the batch's relations (a ``unique``, a host synchronisation on a
    GPU). The device-resident training loop sets it; the two give the same numbers.
    """

    whole_tables = False

    def __init__(self, operators: list[str], dimension: int, device: torch.device | str = "cpu"):
        self.dimension = dimension
        self.device = torch.device(device)
        self.operators = list(operators)
        names = sorted(set(operators))
        self.groups: list[tuple[str, Operator, np.ndarray]] = []
        self.group_of = np.zeros(len(operators), np.int64)
        self.local_of = np.zeros(len(operators), np.int64)
        for g, name in enumerate(names):
            members = np.array([r for r, o in enumerate(operators) if o == name], np.int64)
            self.group_of[members] = g
            self.local_of[members] = np.arange(len(members))
            self.groups.append((name, OPERATORS.get_class(name)(dimension), members))
        self._group_t = torch.from_numpy(self.group_of).to(self.device)
        self._local_t = torch.from_numpy(self.local_of).to(self.device)
        # column of relation r (then of r + R) among the groups' concatenated scores
        offset = np.cumsum([0] + [len(m) for _, _, m in self.groups])[:-1]
        column = offset[self.group_of] + self.local_of
        self._relation_column = torch.from_numpy(
            np.concatenate([column, column + len(operators)])).to(self.device)
        self.params: dict[str, list[dict[str, torch.Tensor]]] = {}
        self.state: dict[str, list[dict[str, torch.Tensor]]] = {}
        for side in SIDES:
            self.params[side] = [{k: v.to(self.device) for k, v in
                                  op.init_params(len(members)).items()}
                                 for _, op, members in self.groups]
            self.state[side] = [{k: torch.zeros_like(v) for k, v in ps.items()}
                                for ps in self.params[side]]

    @property
    def is_identity(self) -> bool:
        """Whether every relation's operator is ``none`` (no parameters, ``x`` unchanged)."""
        return all(name == "none" for name, _, _ in self.groups)

    # -- forward ----------------------------------------------------------------------------
    def apply(self, side: str, x: torch.Tensor, rel: torch.Tensor,
              leaves: list[_Leaf] | None = None,
              n3: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> torch.Tensor:
        """Transform ``x`` ``(B, d)`` by relation ``rel`` (int64 ``(B,)``) on ``side``.

        With ``leaves`` (training), the gathered parameter slices require grad and are
        appended there for :meth:`step`; without, parameters are used as they are. With
        ``n3`` (a list), each operator group of the batch appends its N3 factors ``(sum
        |x_b|^3, sum |params_{rel_b}|^3)`` over its rows (0-d tensors, differentiable;
        :meth:`graphsys.embed.model.Operator.n3_rows` / ``n3_params``).
        """
        if len(self.groups) == 1:  # one group: a relation's row is its index
            return self._apply_group(side, 0, x, rel, leaves, n3)
        out = torch.empty_like(x) if leaves is None else None
        group = self._group_t[rel]
        parts = []
        for g in range(len(self.groups)):
            rows = torch.nonzero(group == g).squeeze(1)
            if len(rows) == 0:
                continue
            y = self._apply_group(side, g, x[rows], self._local_t[rel[rows]], leaves, n3)
            parts.append((rows, y))
        rows = torch.cat([p[0] for p in parts])
        vals = torch.cat([p[1] for p in parts])
        if out is not None:
            out[rows] = vals.to(out.dtype)
            return out
        return torch.zeros_like(x).index_copy(0, rows, vals)

    def apply_closed(self, side: str, x: torch.Tensor, rel: torch.Tensor, leaves: list
                     ) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]] | None:
        """:meth:`apply` for training by the operator's closed form
        (:attr:`~graphsys.embed.model.Operator.closed_form`), without autograd: ``(y,
        backward)``, where ``backward(dy)`` returns ``dx`` and appends the whole tables'
        gradients to ``leaves`` for :meth:`step`. None where there is no closed form (an
        operator without one, or several operator groups)."""
        if len(self.groups) != 1 or self.groups[0][1].closed_form is None:
            return None
        op, params, state = self.groups[0][1], self.params[side][0], self.state[side][0]
        y, back = op.closed_form(x, params, rel)

        def backward(dy: torch.Tensor) -> torch.Tensor:
            dx, grads = back(dy)
            for k, g in grads.items():
                leaves.append(_Leaf(params[k], state[k], None, None, g))
            return dx
        return y, backward

    def _apply_group(self, side, g, x, local, leaves, n3=None):
        _, op, _ = self.groups[g]
        params = self.params[side][g]
        if leaves is None or not params:
            used = {k: v.to(x.dtype) for k, v in params.items()}
            if n3 is not None:
                n3.append((op.n3_rows(x), op.n3_params(used, local)))
            return op.forward(x, used, local)
        if self.whole_tables:
            whole = {}
            for k, v in params.items():
                whole[k] = v.detach().requires_grad_(True)
                leaves.append(_Leaf(v, self.state[side][g][k], None, whole[k]))
            if n3 is not None:
                n3.append((op.n3_rows(x), op.n3_params(whole, local)))
            return op.forward_tables(x, whole, local)
        uniq, inv = torch.unique(local, return_inverse=True)
        gathered = {}
        for k, v in params.items():
            leaf = v[uniq].detach().requires_grad_(True)
            leaves.append(_Leaf(v, self.state[side][g][k], uniq, leaf))
            gathered[k] = leaf
        if n3 is not None:
            n3.append((op.n3_rows(x), op.n3_params(gathered, inv)))
        return op.forward(x, gathered, inv)

    def relation_logits(self, x: torch.Tensor, y: torch.Tensor,
                        leaves: list[_Leaf] | None = None) -> torch.Tensor:
        """Scores of every relation of both sides for the pairs ``(x_b, y_b)`` (``(B, d)``
        each): ``(B, 2R)``, column ``r`` ``<op_r^rhs(x_b), y_b>`` and column ``R + r``
        ``<op_r^lhs(x_b), y_b>`` (``r`` in global relation order), the logits of relation
        prediction (Chen et al. 2021; their 2R relations are ``r`` and its reciprocal, i.e.
        graphsys's rhs and lhs operators). With ``leaves`` (training) the whole parameter
        tables are autograd leaves, appended there for :meth:`step`. Each operator group
        scores its relations with :meth:`~graphsys.embed.model.Operator.relation_scores`."""
        blocks = []
        for side in ("rhs", "lhs"):
            for g, (_, op, members) in enumerate(self.groups):
                table = {}
                for k, v in self.params[side][g].items():
                    table[k] = v.to(x.dtype)
                    if leaves is not None:
                        table[k] = v.detach().clone().requires_grad_(True)
                        rows = None if self.whole_tables else torch.arange(
                            len(members), device=v.device)
                        leaves.append(_Leaf(v, self.state[side][g][k], rows, table[k]))
                blocks.append(op.relation_scores(x, y, table, len(members)))
        scores = torch.cat(blocks, dim=1)
        return scores if len(self.groups) == 1 else scores.index_select(1, self._relation_column)

    # -- update -----------------------------------------------------------------------------
    @staticmethod
    def step(leaves: list[_Leaf], lr: float) -> None:
        """Adagrad on the gathered rows: ``s += g^2; p -= lr * g / (sqrt(s) + eps)``. Leaves
        of the same parameter (a batch's operator rows and relation prediction's whole table)
        are summed first, in ``leaves`` order, so each row takes one step with its whole
        gradient."""
        with torch.no_grad():
            merged: dict[int, tuple[_Leaf, list, list]] = {}
            for lf in leaves:
                grad = lf.grad if lf.leaf is None else lf.leaf.grad
                if grad is not None:
                    _, rows, grads = merged.setdefault(id(lf.param), (lf, [], []))
                    rows.append(lf.rows)
                    grads.append(grad)
            whole = [(lf, grads) for lf, rows, grads in merged.values()
                     if all(r is None for r in rows)]
            if whole:
                RelationModel._dense_step(whole, lr)
            for lf, rows, grads in merged.values():
                if all(r is None for r in rows):
                    continue
                rows = [torch.arange(len(lf.param), device=lf.param.device) if r is None
                        else r for r in rows]
                if len(rows) == 1:
                    r, g = rows[0], grads[0]
                else:
                    r, inv = torch.unique(torch.cat(rows), return_inverse=True)
                    g = grads[0].new_zeros((len(r),) + grads[0].shape[1:])
                    g.index_add_(0, inv, torch.cat(grads))
                s = lf.state[r] + g * g
                lf.state[r] = s
                lf.param[r] = lf.param[r] - lr * g / (s.sqrt() + ADAGRAD_EPS)

    @staticmethod
    def _dense_step(tables: list[tuple[_Leaf, list[torch.Tensor]]], lr: float) -> None:
        """:meth:`step` of whole tables ``(leaf, [grads])``, every table at once (torch's
        ``_foreach`` operators: one launch per operation on a GPU); the same arithmetic,
        where a zero gradient leaves a row and its sum as they were."""
        gs = [sum(grads[1:], grads[0]) for _, grads in tables]   # (g0 + g1) + ..., in order
        states = [lf.state for lf, _ in tables]
        torch._foreach_add_(states, torch._foreach_mul(gs, gs))
        den = torch._foreach_sqrt(states)
        torch._foreach_add_(den, ADAGRAD_EPS)
        upd = torch._foreach_mul(gs, lr)
        torch._foreach_div_(upd, den)
        torch._foreach_sub_([lf.param for lf, _ in tables], upd)

    # -- persistence ------------------------------------------------------------------------
    def keys(self):
        for side in SIDES:
            for g, ps in enumerate(self.params[side]):
                for k in ps:
                    yield side, g, k

    def save(self, storage: CheckpointStorage, version: int) -> int:
        written = 0
        for side, g, k in self.keys():
            written += save_npy(storage.model_path(f"{side}.g{g}.{k}", version),
                                self.params[side][g][k].cpu().numpy())
            written += save_npy(storage.model_path(f"{side}.g{g}.{k}.adagrad", version),
                                self.state[side][g][k].cpu().numpy())
        return written

    def load(self, storage: CheckpointStorage, version: int, *, with_state: bool = True) -> None:
        """Read every table (and with ``with_state`` its Adagrad sums) of checkpoint
        ``version``; a file that is not float32 of the table's shape (its operator's, for
        the relations of its group and the dimension), or that holds a non-finite value or
        a negative Adagrad sum, is refused in one :class:`FormatError` naming it (a wider,
        shorter or float64 table failed later in torch, an extra row was read silently)."""
        for side, g, k in self.keys():
            shape = tuple(self.params[side][g][k].shape)
            for key, table in ((k, self.params), (f"{k}.adagrad", self.state))[:1 + with_state]:
                path = storage.model_path(f"{side}.g{g}.{key}", version)
                arr = load_npy(path, root=storage.root)
                if arr.dtype != np.float32 or arr.shape != shape:
                    raise FormatError(f"{path}: {arr.dtype} {arr.shape}, expected float32 "
                                      f"{shape}")
                if not np.isfinite(arr).all() or (table is self.state and (arr < 0).any()):
                    raise FormatError(f"{path}: a non-finite value (NaN or infinity)"
                                      + (" or a negative Adagrad sum" if table is self.state
                                         else ""))
                table[side][g][k] = torch.from_numpy(np.array(arr)).to(self.device)

    def relation_params(self, rel: int) -> dict[str, dict[str, np.ndarray]]:
        """``{side: {param: array}}`` of one relation (for export)."""
        g, local = int(self.group_of[rel]), int(self.local_of[rel])
        return {side: {k: v[local].cpu().numpy() for k, v in self.params[side][g].items()}
                for side in SIDES}
