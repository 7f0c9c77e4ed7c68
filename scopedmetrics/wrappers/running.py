"""``Running`` (the value over the last updates) and ``MultioutputWrapper`` (one metric per output column)."""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics import tree
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.wrappers._groups import (
    check_count,
    check_flag,
    check_template,
    combine_rows,
    count,
    group,
    groups_of,
    leaf_ops,
)

_ALONG: dict[str, Any] = {"sum": torch.sum, "prod": torch.prod, "max": torch.amax, "min": torch.amin}


class Running(Metric):
    """The wrapped metric over the last ``window`` updates: a ring of ``window`` states and a position.

    Each slot holds the state of one ``update`` alone; a new update overwrites
    the oldest slot. "The last ``window`` updates" are each participant's own:
    ``compute()`` reduces every rank's ring together, so the value covers the
    last ``window`` updates of every participant (ranks that updated less
    contribute fewer). A fully masked batch (``mask=`` all ``False``) is not an
    update and does not advance the ring.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import Running
        >>> m = Running(sm.Sum(), window=2)
        >>> for x in [1.0, 2.0, 3.0]:
        ...     m = m.update(torch.tensor([x]))
        >>> m.compute()
        tensor(5.)
    """

    metric: Metric = static()
    window: int = static(default=5)
    # the op is never used: every leaf below belongs to a nested metric, which brings its own ops
    ring: Any = state("sum", init=lambda m: groups_of(m.metric, m.window))
    position: torch.Tensor = state("max", default=0)  # updates folded in here; max, so a merge keeps a valid slot

    _homomorphic = False  # update overwrites a slot: groups of Running are never stacked (see _groups.stackable)

    def __post_init__(self) -> None:
        check_template(self)
        check_count(self, "window")

    def update(self, *args: Any, **kwargs: Any) -> Running:
        """Fold a batch in as the newest slot, replacing the oldest."""
        slot = int(self.position) % self.window
        part = self.metric.update(*args, **kwargs)
        if isinstance(self.ring, Metric):
            ring: Any = combine_rows(self, self.ring, {slot: part}, replace=True)
        else:
            ring = (*self.ring[:slot], part, *self.ring[slot + 1 :])
        return self.replace(ring=ring, position=self.position + 1)

    def compute(self) -> Any:
        """The wrapped metric's value over every slot."""
        if isinstance(self.ring, Metric):
            leaves, _ = tree.flatten(self.ring)
            folded = [_ALONG[op](leaf, 0) for leaf, op in zip(leaves, leaf_ops(self.ring))]
            spec = tree.structure(self.metric)
            return tree.unflatten(spec, folded)._with_mark(True).compute()
        w = self.window  # oldest slot first (the next one overwritten), so rows keep the order they came in
        slots = [self.ring[(int(self.position) + i) % w]._with_mark(False) for i in range(w)]  # reduced already
        acc = slots[0]
        for m in slots[1:]:
            acc = acc.merge(m)
        return acc._with_mark(True).compute()


class MultioutputWrapper(Metric):
    """One metric per output: tensor arguments are split along ``output_dim`` and each output updates its own.

    As TorchMetrics: with ``remove_nans`` a sample is left out of an output
    when any of that output's arguments holds a NaN in its row; with
    ``squeeze_outputs`` the selected dimension is squeezed away. Arguments that
    are not tensors go to every output unchanged. ``compute()`` stacks the
    outputs' values along dim 0.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import MultioutputWrapper
        >>> m = MultioutputWrapper(sm.MeanAbsoluteError(), num_outputs=2)
        >>> preds = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
        >>> m.update(preds, torch.tensor([[0.0, 0.0], [0.0, 0.0]])).compute()
        tensor([2., 2.])
    """

    metric: Metric = static()
    num_outputs: int = static()
    output_dim: int = static(default=-1)
    remove_nans: bool = static(default=True)
    squeeze_outputs: bool = static(default=True)
    # the op is never used: every leaf below belongs to a nested metric, which brings its own ops
    outputs: Any = state("sum", init=lambda m: groups_of(m.metric, m.num_outputs))

    def __post_init__(self) -> None:
        check_template(self)
        check_count(self, "num_outputs")
        check_count(self, "output_dim", minimum=-(1 << 31))
        check_flag(self, "remove_nans")
        check_flag(self, "squeeze_outputs")

    def _select(self, i: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Output ``i``'s arguments (TorchMetrics' ``_get_args_kwargs_by_output``)."""
        dim = self.output_dim
        where = f"{type(self).__name__}.update"

        def pick(name: str, x: Any) -> Any:
            if not isinstance(x, torch.Tensor):
                return x
            if x.ndim == 0 or not -x.ndim <= dim < x.ndim or x.shape[dim] != self.num_outputs:
                raise ValueError(
                    f"{where}: argument {name} must have {self.num_outputs} outputs along dim {dim}, "
                    f"got shape {tuple(x.shape)}"
                )
            return x.index_select(dim, torch.tensor([i], device=x.device))

        sel = [pick(f"{k}", a) for k, a in enumerate(args)]
        sel_kw = {k: pick(f"`{k}`", v) for k, v in kwargs.items()}
        tensors = [x for x in (*sel, *sel_kw.values()) if isinstance(x, torch.Tensor)]
        if self.remove_nans and tensors:
            bad = torch.zeros(tensors[0].shape[0], dtype=torch.bool, device=tensors[0].device)
            for t in tensors:
                if t.is_floating_point():
                    bad |= torch.isnan(t.flatten(start_dim=1)).any(1)
            if bool(bad.any()):
                keep = ~bad
                sel = [x[keep] if isinstance(x, torch.Tensor) else x for x in sel]
                sel_kw = {k: v[keep] if isinstance(v, torch.Tensor) else v for k, v in sel_kw.items()}
        if self.squeeze_outputs:
            sel = [x.squeeze(dim) if isinstance(x, torch.Tensor) else x for x in sel]
            sel_kw = {k: v.squeeze(dim) if isinstance(v, torch.Tensor) else v for k, v in sel_kw.items()}
        return sel, sel_kw

    def update(self, *args: Any, **kwargs: Any) -> MultioutputWrapper:
        """Fold output ``i`` of the batch into metric ``i``, for every output.

        Each output is an update of its own, so what a metric decides from its
        batch (probabilities or logits) it decides per output, as TorchMetrics
        does. (Folding the outputs as groups of one batch decided over all of
        them: one column of logits put every column through a sigmoid.)
        """
        per = [self._select(i, args, kwargs) for i in range(self.num_outputs)]
        outputs: Any
        if isinstance(self.outputs, Metric):
            parts = {i: self.metric.update(*a, **kw) for i, (a, kw) in enumerate(per)}
            outputs = combine_rows(self, self.outputs, parts)
        else:
            outputs = tuple(m.update(*a, **kw) for m, (a, kw) in zip(self.outputs, per))
        return self.replace(outputs=outputs)

    def compute(self) -> torch.Tensor:
        """The outputs' values, stacked along dim 0."""
        return torch.stack([group(self.outputs, i).compute() for i in range(count(self.outputs))], 0)
