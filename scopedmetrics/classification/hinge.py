"""Hinge loss of binary and multiclass tasks, as TorchMetrics computes it: the mean of per-sample margins.

The state is two ``"sum"`` tensors, so any split of the data reduces to the
same value: ``measures``, the sum of the per-sample losses (float64, a scalar,
or one entry per class for ``multiclass_mode="one-vs-all"``), and ``total``,
the number of samples (int64). As in TorchMetrics the scores are
probabilities, or logits (any kept value outside [0, 1], decided per batch)
that go through a sigmoid (binary) or a softmax over dim 1 (multiclass);
entries whose target is ``ignore_index`` are dropped first. Scores must be
finite (TorchMetrics takes infinite binary logits as probabilities 0 and 1).
With no sample seen the loss is NaN (0 / 0), as in TorchMetrics.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from torch import Tensor

from scopedmetrics.classification.inputs import (
    _binary_checks,
    _multiclass_checks,
    _probabilities,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    finite_scores,
    not_ignored,
    widened,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)

MODES = ("crammer-singer", "one-vs-all")


def _check(m: Any) -> None:
    check_bool(m, "squared")
    check_ignore_index(m)
    check_bool(m, "validate_args")


def _scores(preds: Tensor, normalize: str, keep: Tensor | None, extremes: tuple[float, float] | None) -> Tensor:
    """Probabilities in at least float32 (logits through sigmoid/softmax, decided on the kept rows).

    ``extremes`` are ``preds``' minimum and maximum when the checks read them already (and nothing is ignored).
    """
    return _probabilities(widened(preds), normalize, extremes if keep is None else None, keep)


def _folded(m: _M, margin: Tensor, keep: Tensor | None) -> _M:
    """``m`` with the losses ``max(0, 1 - margin)`` (squared if asked) of the kept rows added (all without ``keep``).

    Ignored rows are masked, not dropped, so the state grows without a data-dependent shape.
    """
    loss = (1 - margin).clamp(min=0)
    if m.squared:  # type: ignore[attr-defined]
        loss = loss * loss
    rows: Tensor | int = margin.shape[0]
    if keep is not None:
        loss, rows = loss.where(keep.view(-1, *(1,) * (loss.ndim - 1)), 0), keep.sum()
    measures = m.measures  # type: ignore[attr-defined]
    return m.replace(measures=measures + loss.sum(0).to(measures.dtype), total=m.total + rows)  # type: ignore[attr-defined]


@positional("squared", "ignore_index", "validate_args")
class BinaryHingeLoss(Metric):
    """Mean hinge loss of a binary task: ``max(0, 1 - y * p)`` with ``y`` in {-1, +1}, or its square.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryHingeLoss
        >>> preds, target = torch.tensor([0.25, 0.25, 0.55, 0.75, 0.75]), torch.tensor([0, 0, 1, 1, 1])
        >>> BinaryHingeLoss().update(preds, target).compute()
        tensor(0.6900)
        >>> BinaryHingeLoss(squared=True).update(preds, target).compute()
        tensor(0.6905)
    """

    measures: Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    total: Tensor = state("sum", default=0)
    squared: bool = static(default=False)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check(self)

    def update(self, preds: Tensor, target: Tensor) -> BinaryHingeLoss:
        """Fold in float scores ``preds`` (N, ...) and 0/1 labels ``target`` of the same shape."""
        extremes = None
        if self.validate_args:
            _binary_checks(self, preds, target, scores_only=True, nan=False)
            extremes = finite_scores(self, preds)
        preds, target = preds.reshape(-1), target.reshape(-1)
        keep = not_ignored(target, self.ignore_index)
        p = _scores(preds, "sigmoid", keep, extremes)
        return _folded(self, torch.where(target == 1, p, -p), keep)

    def compute(self) -> Tensor:
        """Return the mean loss over every sample seen."""
        return (self.measures / self.total).float()


@positional("num_classes", "squared", "multiclass_mode", "ignore_index", "validate_args")
class MulticlassHingeLoss(Metric):
    """Mean hinge loss of a multiclass task, Crammer-Singer (a scalar) or one-vs-all (one loss per class).

    Crammer-Singer: ``max(0, 1 - p_y + max_{i != y} p_i)``; one-vs-all: the
    binary loss of every class against the rest.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassHingeLoss
        >>> preds = torch.tensor([[0.25, 0.20, 0.55], [0.55, 0.05, 0.40], [0.10, 0.30, 0.60], [0.90, 0.05, 0.05]])
        >>> target = torch.tensor([0, 1, 2, 0])
        >>> MulticlassHingeLoss(3).update(preds, target).compute()
        tensor(0.9125)
        >>> MulticlassHingeLoss(3, multiclass_mode="one-vs-all").update(preds, target).compute()
        tensor([0.8750, 1.1250, 1.1000])
    """

    num_classes: int = static()
    squared: bool = static(default=False)
    multiclass_mode: str = static(default="crammer-singer")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    measures: Tensor = state(
        "sum",
        init=lambda m: torch.zeros(() if m.multiclass_mode == "crammer-singer" else m.num_classes, dtype=torch.float64),
    )
    total: Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_int(self, "num_classes", 2)
        check_one_of(self, "multiclass_mode", MODES)
        _check(self)

    def update(self, preds: Tensor, target: Tensor) -> MulticlassHingeLoss:
        """Fold in float scores ``preds`` (N, C, ...) and class labels ``target`` (N, ...)."""
        extremes = None
        if self.validate_args:
            _multiclass_checks(self, preds, target, scores_only=True, nan=False)
            extremes = finite_scores(self, preds)  # NaN, then infinities, as the checks above would go on
        preds = preds.movedim(1, -1).reshape(-1, preds.shape[1]) if preds.ndim > 1 else preds.reshape(-1, 1)
        target = target.reshape(-1).long()
        keep = not_ignored(target, self.ignore_index)
        if keep is not None:
            target = target.where(keep, 0)  # any class: the row's loss is masked
        p = _scores(preds, "softmax", None if keep is None else keep.unsqueeze(1), extremes)
        hot = target.unsqueeze(1) == torch.arange(p.shape[1], device=p.device)
        if self.multiclass_mode == "crammer-singer":
            rival = p.masked_fill(hot, float("-inf")).amax(1) if len(p) else p.new_zeros(0)
            margin = p.gather(1, target.unsqueeze(1)).squeeze(1) - rival
        else:
            margin = torch.where(hot, p, -p)
        return _folded(self, margin, keep)

    def compute(self) -> Tensor:
        """Return the mean loss (per class for one-vs-all) over every sample seen."""
        return (self.measures / self.total).float()
