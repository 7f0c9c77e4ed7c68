"""Confusion matrices, and the scores made of them: Matthews correlation and Cohen's kappa.

The state is one int64 ``"sum"`` matrix (rows: target, columns: prediction),
``(2, 2)``, ``(C, C)`` or ``(L, 2, 2)``. ``normalize`` and ``weights`` change only
``compute``: the matrix, its ``update`` and every option ``update`` reads live on
one private class per task. Constructor arguments come in TorchMetrics'
positional order. As in TorchMetrics, binary scores on rows whose target is
``ignore_index`` do not take part in the choice between probabilities and
logits (multilabel ones do).
"""

from __future__ import annotations

from typing import TypeVar

import torch

from scopedmetrics.classification.inputs import (
    binary_labels,
    bincount,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    check_threshold,
    multiclass_labels,
    multilabel_labels,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.classification.stat_scores import safe_divide
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)

NORMALIZE = ("true", "pred", "all", "none", None)
WEIGHTS = ("linear", "quadratic", "none", None)


def _normalized(confmat: torch.Tensor, normalize: str | None) -> torch.Tensor:
    """``confmat`` divided by its rows (``true``), columns (``pred``) or total (``all``); 0 where empty."""
    if normalize in ("none", None):
        return confmat
    if normalize == "true":
        return safe_divide(confmat, confmat.sum(-1, keepdim=True))
    if normalize == "pred":
        return safe_divide(confmat, confmat.sum(-2, keepdim=True))
    return safe_divide(confmat, confmat.sum((-2, -1), keepdim=True))


def matthews_corrcoef(confmat: torch.Tensor) -> torch.Tensor:
    """Matthews correlation of a ``(C, C)`` confusion matrix; 0 where undefined, as scikit-learn.

    Examples:
        >>> import torch
        >>> matthews_corrcoef(torch.tensor([[2, 1], [0, 3]]))
        tensor(0.7071)
    """
    cm = confmat.double()
    t, p, n = cm.sum(1), cm.sum(0), cm.sum()
    cov_tp = cm.trace() * n - (t * p).sum()
    den = (n * n - (p * p).sum()) * (n * n - (t * t).sum())
    return torch.where(den > 0, cov_tp / den.clamp_min(1e-300).sqrt(), 0.0).float()


def cohen_kappa(confmat: torch.Tensor, weights: str | None = None) -> torch.Tensor:
    """Cohen's kappa of a ``(C, C)`` confusion matrix; NaN where undefined, as scikit-learn.

    Examples:
        >>> import torch
        >>> cohen_kappa(torch.tensor([[2, 1], [0, 3]]))
        tensor(0.6667)
    """
    cm = confmat.double()
    expected = torch.outer(cm.sum(1), cm.sum(0)) / cm.sum()
    i = torch.arange(cm.shape[0], dtype=cm.dtype, device=cm.device)
    diff = i[:, None] - i[None, :]
    if weights == "linear":
        w = diff.abs()
    elif weights == "quadratic":
        w = diff * diff
    else:
        w = (diff != 0).to(cm.dtype)
    return (1 - (w * cm).sum() / (w * expected).sum()).float()


# -- binary ------------------------------------------------------------------


class _BinaryConfusion(Metric):
    """The ``(2, 2)`` confusion matrix of a binary task, and the options ``update`` reads."""

    confmat: torch.Tensor = state("sum", default=lambda: torch.zeros(2, 2, dtype=torch.long))
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        check_threshold(self)
        check_ignore_index(self)
        check_bool(self, "validate_args")

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, ...)``."""
        p, t, keep = binary_labels(self, preds, target, kept_only=True)
        counts = bincount(t.long() * 2 + p, 4, keep)
        return self.replace(confmat=self.confmat + counts.view(2, 2))  # type: ignore[attr-defined]


@positional("threshold", "ignore_index", "normalize", "validate_args")
class BinaryConfusionMatrix(_BinaryConfusion):
    """Confusion matrix ``[[tn, fp], [fn, tp]]`` of a binary task, optionally normalized.

    ``normalize``: ``None``/``"none"`` (counts), ``"true"`` (rows), ``"pred"`` (columns) or ``"all"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryConfusionMatrix
        >>> BinaryConfusionMatrix().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor([[1, 1],
                [0, 2]])
    """

    normalize: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "normalize", NORMALIZE)

    def compute(self) -> torch.Tensor:
        return _normalized(self.confmat, self.normalize)


@positional("threshold", "ignore_index", "validate_args")
class BinaryMatthewsCorrCoef(_BinaryConfusion):
    """Matthews correlation coefficient of a binary task (0 where undefined, as scikit-learn).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryMatthewsCorrCoef
        >>> BinaryMatthewsCorrCoef().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5774)
    """

    def compute(self) -> torch.Tensor:
        return matthews_corrcoef(self.confmat)


@positional("threshold", "ignore_index", "weights", "validate_args")
class BinaryCohenKappa(_BinaryConfusion):
    """Cohen's kappa of a binary task; ``weights`` is ``None``, ``"linear"`` or ``"quadratic"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryCohenKappa
        >>> BinaryCohenKappa().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """

    weights: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "weights", WEIGHTS)

    def compute(self) -> torch.Tensor:
        return cohen_kappa(self.confmat, self.weights)


# -- multiclass --------------------------------------------------------------


class _MulticlassConfusion(Metric):
    """The ``(C, C)`` confusion matrix of a multiclass task, and the options ``update`` reads."""

    num_classes: int = static()
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    confmat: torch.Tensor = state("sum", default=0)  # shaped in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "num_classes", 2)
        check_ignore_index(self)
        check_bool(self, "validate_args")
        object.__setattr__(self, "confmat", torch.zeros(self.num_classes, self.num_classes, dtype=torch.long))

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``.

        Scores become labels by argmax (see ``multiclass_labels`` for ``top_k``).
        """
        c = self.num_classes  # type: ignore[attr-defined]
        p, t, keep = multiclass_labels(self, preds, target)
        counts = bincount(torch.add(p, t, alpha=c), c * c, keep).view(c, c)  # index t * c + p
        return self.replace(confmat=self.confmat + counts)  # type: ignore[attr-defined]


@positional("num_classes", "ignore_index", "normalize", "validate_args")
class MulticlassConfusionMatrix(_MulticlassConfusion):
    """Confusion matrix of a multiclass task (rows: target, columns: prediction), optionally normalized.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassConfusionMatrix
        >>> m = MulticlassConfusionMatrix(3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([[1, 1, 0],
                [0, 1, 0],
                [0, 0, 1]])
        >>> normalized = MulticlassConfusionMatrix(3, None, "true")  # TorchMetrics' order: ignore_index, normalize
        >>> normalized.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([[0.5000, 0.5000, 0.0000],
                [0.0000, 1.0000, 0.0000],
                [0.0000, 0.0000, 1.0000]])
    """

    normalize: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "normalize", NORMALIZE)

    def compute(self) -> torch.Tensor:
        return _normalized(self.confmat, self.normalize)


@positional("num_classes", "ignore_index", "validate_args")
class MulticlassMatthewsCorrCoef(_MulticlassConfusion):
    """Matthews correlation coefficient of a multiclass task (0 where undefined, as scikit-learn).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassMatthewsCorrCoef
        >>> m = MulticlassMatthewsCorrCoef(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7000)
    """

    def compute(self) -> torch.Tensor:
        return matthews_corrcoef(self.confmat)


@positional("num_classes", "ignore_index", "weights", "validate_args")
class MulticlassCohenKappa(_MulticlassConfusion):
    """Cohen's kappa of a multiclass task; ``weights`` is ``None``, ``"linear"`` or ``"quadratic"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassCohenKappa
        >>> m = MulticlassCohenKappa(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.6364)
    """

    weights: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "weights", WEIGHTS)

    def compute(self) -> torch.Tensor:
        return cohen_kappa(self.confmat, self.weights)


# -- multilabel --------------------------------------------------------------


class _MultilabelConfusion(Metric):
    """One ``(2, 2)`` confusion matrix per label, shape ``(L, 2, 2)``, and the options ``update`` reads."""

    num_labels: int = static()
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    confmat: torch.Tensor = state("sum", default=0)  # shaped in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "num_labels", 2)
        check_threshold(self)
        check_ignore_index(self)
        check_bool(self, "validate_args")
        object.__setattr__(self, "confmat", torch.zeros(self.num_labels, 2, 2, dtype=torch.long))

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, L, ...)``."""
        n = self.num_labels  # type: ignore[attr-defined]
        p, t, keep = multilabel_labels(self, preds, target)
        label = torch.arange(n, device=p.device) * 4
        counts = bincount(label + t.long() * 2 + p, 4 * n, keep)
        return self.replace(confmat=self.confmat + counts.view(n, 2, 2))  # type: ignore[attr-defined]


@positional("num_labels", "threshold", "ignore_index", "normalize", "validate_args")
class MultilabelConfusionMatrix(_MultilabelConfusion):
    """One confusion matrix ``[[tn, fp], [fn, tp]]`` per label, shape ``(L, 2, 2)``, optionally normalized.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelConfusionMatrix
        >>> m = MultilabelConfusionMatrix(num_labels=2)
        >>> m.update(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 0], [0, 1]])).compute()
        tensor([[[0, 1],
                 [0, 1]],
        <BLANKLINE>
                [[1, 0],
                 [0, 1]]])
    """

    normalize: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "normalize", NORMALIZE)

    def compute(self) -> torch.Tensor:
        return _normalized(self.confmat, self.normalize)


@positional("num_labels", "threshold", "ignore_index", "validate_args")
class MultilabelMatthewsCorrCoef(_MultilabelConfusion):
    """Matthews correlation of a multilabel task: of the labels' confusion matrices summed, as TorchMetrics.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelMatthewsCorrCoef
        >>> m = MultilabelMatthewsCorrCoef(num_labels=2)
        >>> m.update(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 0], [0, 1]])).compute()
        tensor(0.5774)
    """

    def compute(self) -> torch.Tensor:
        return matthews_corrcoef(self.confmat.sum(0))
