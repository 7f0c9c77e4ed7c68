"""Confusion matrices, and the scores made of them: Matthews correlation, Cohen's kappa, the Jaccard index.

Every metric here holds its matrix as one nested metric, ``matrix``: a
``BinaryConfusion``, ``MulticlassConfusion`` or ``MultilabelConfusion``, whose
state is one int64 ``"sum"`` ``confmat`` (rows: target, columns: prediction),
``(2, 2)``, ``(C, C)`` or ``(L, 2, 2)``, and whose configuration is the options
``update`` reads (``threshold``, ``num_classes``, ``num_labels``,
``ignore_index``, ``validate_args``). Its ``update`` is the metric's
(``sm.delegate``), so a ``Collection`` of a confusion matrix, Matthews
correlation, Cohen's kappa and the Jaccard index of one task counts each batch
once. ``normalize``, ``weights``, ``average`` and ``zero_division`` change only
``compute``. Constructor arguments come in TorchMetrics' positional order. As
in TorchMetrics, binary scores on rows whose target is ``ignore_index`` do not
take part in the choice between probabilities and logits (multilabel ones do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch

from scopedmetrics._kernels import bincount
from scopedmetrics.classification.inputs import (
    binary_labels,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    check_threshold,
    multiclass_labels,
    multilabel_labels,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.classification.stat_scores import AVERAGES, check_zero_division, counts_of, delegated, safe_divide
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


def jaccard_index(
    confmat: torch.Tensor, average: str | None, ignore_index: int | None = None, zero_division: float = 0.0
) -> torch.Tensor:
    """Jaccard index (intersection over union) of a confusion matrix, reduced as TorchMetrics 1.9 does.

    ``average="binary"`` scores a ``(2, 2)`` matrix; otherwise per class of a
    ``(C, C)`` matrix or per label of ``(L, 2, 2)`` ones, then ``micro``,
    ``macro``, ``weighted`` or ``"none"``. A multiclass ``ignore_index`` that is
    a class leaves that class out of the micro sum and the macro mean; macro
    also leaves out classes neither present nor predicted. A mean over no
    weight is NaN, as in TorchMetrics (``weighted`` without any positive label).

    Examples:
        >>> import torch
        >>> jaccard_index(torch.tensor([[2, 1], [0, 3]]), "binary")
        tensor(0.7500)
        >>> jaccard_index(torch.tensor([[2, 1], [0, 3]]), "none")
        tensor([0.6667, 0.7500])
    """
    cm = confmat.float()
    if average == "binary":
        return safe_divide(cm[1, 1], cm[0, 1] + cm[1, 0] + cm[1, 1], zero_division)
    ignore = ignore_index is not None and 0 <= ignore_index < cm.shape[0]
    multilabel = cm.ndim == 3
    if multilabel:
        num = cm[:, 1, 1]
        den = cm[:, 1, 1] + cm[:, 0, 1] + cm[:, 1, 0]
    else:
        num = cm.diagonal()
        den = cm.sum(0) + cm.sum(1) - num
    if average == "micro":
        num, den = num.sum(), den.sum() - (den[ignore_index] if ignore else 0.0)
    jaccard = safe_divide(num, den, zero_division)
    if average in ("none", None, "micro"):
        return jaccard
    if average == "weighted":
        weights = cm[:, 1, 1] + cm[:, 1, 0] if multilabel else cm.sum(1)
    else:
        weights = torch.ones_like(jaccard)
        if ignore:
            weights[ignore_index] = 0.0
        if not multilabel:
            weights[cm.sum(1) + cm.sum(0) == 0] = 0.0
    return ((weights * jaccard) / weights.sum()).sum()


# -- the matrix of each task ---------------------------------------------------------


def _check_binary(m: Any) -> None:
    check_threshold(m)
    check_ignore_index(m)
    check_bool(m, "validate_args")


def _check_multiclass(m: Any) -> None:
    check_int(m, "num_classes", 2)
    check_ignore_index(m)
    check_bool(m, "validate_args")


def _check_multilabel(m: Any) -> None:
    check_int(m, "num_labels", 2)
    check_threshold(m)
    check_ignore_index(m)
    check_bool(m, "validate_args")


class BinaryConfusion(Metric):
    """The ``(2, 2)`` confusion matrix ``[[tn, fp], [fn, tp]]`` of a binary task: the ``matrix`` binary scores hold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.confusion import BinaryConfusion
        >>> BinaryConfusion().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).confmat
        tensor([[1, 1],
                [0, 2]])
    """

    confmat: torch.Tensor = state("sum", default=lambda: torch.zeros(2, 2, dtype=torch.long))
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check_binary(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, ...)``."""
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        p, t, keep = binary_labels(owner, preds, target, kept_only=True)
        counts = bincount(t.long() * 2 + p, 4, keep)
        return self.replace(confmat=self.confmat + counts.view(2, 2))  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return self.confmat


class MulticlassConfusion(Metric):
    """The ``(C, C)`` confusion matrix of a multiclass task: the ``matrix`` multiclass scores hold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.confusion import MulticlassConfusion
        >>> MulticlassConfusion(num_classes=2).update(torch.tensor([0, 1, 1]), torch.tensor([0, 1, 0])).confmat
        tensor([[1, 1],
                [0, 1]])
    """

    num_classes: int = static()
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    confmat: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_classes, m.num_classes, dtype=torch.long))

    def __post_init__(self) -> None:
        _check_multiclass(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``.

        Scores become labels by argmax.
        """
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        c = self.num_classes  # type: ignore[attr-defined]
        p, t, keep = multiclass_labels(owner, preds, target)
        counts = bincount(torch.add(p, t, alpha=c), c * c, keep).view(c, c)  # index t * c + p
        return self.replace(confmat=self.confmat + counts)  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return self.confmat


class MultilabelConfusion(Metric):
    """One ``(2, 2)`` confusion matrix per label, ``(L, 2, 2)``: the ``matrix`` multilabel scores hold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.confusion import MultilabelConfusion
        >>> m = MultilabelConfusion(num_labels=2).update(torch.tensor([[1, 0]]), torch.tensor([[1, 1]]))
        >>> m.confmat[:, 1]   # per label: [fn, tp]
        tensor([[0, 1],
                [1, 0]])
    """

    num_labels: int = static()
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    confmat: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_labels, 2, 2, dtype=torch.long))

    def __post_init__(self) -> None:
        _check_multilabel(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, L, ...)``."""
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        n = self.num_labels  # type: ignore[attr-defined]
        p, t, keep = multilabel_labels(owner, preds, target)
        label = torch.arange(n, device=p.device) * 4
        counts = bincount(label + t.long() * 2 + p, 4 * n, keep)
        return self.replace(confmat=self.confmat + counts.view(n, 2, 2))  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return self.confmat


# -- the scored base, the tasks and the scores ---------------------------------------------


class _FromConfusion(Metric):
    """A value of a task's confusion matrix, which it holds as the nested metric ``matrix``.

    A task class adds the options and names the matrix's class; a score class adds ``compute``.
    """

    _counts: ClassVar[type[Metric]]  # the task's confusion matrix, built by ``counts_of``

    update = delegated("matrix")

    if TYPE_CHECKING:  # a field of every task class, declared there after its options (for the field order)
        @property
        def matrix(self) -> Any: ...

    def __post_init__(self) -> None:
        """The end of the chain of checks (task classes check their options, score classes theirs)."""

    @property
    def confmat(self) -> torch.Tensor:
        """The confusion matrix counted so far (rows: target, columns: prediction)."""
        return self.matrix.confmat  # type: ignore[no-any-return]


class _Binary(_FromConfusion):
    _counts = BinaryConfusion

    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    matrix: Any = state(init=counts_of)  # a nested confusion matrix: it declares its own op

    def __post_init__(self) -> None:
        _check_binary(self)
        super().__post_init__()


class _Multiclass(_FromConfusion):
    _counts = MulticlassConfusion

    num_classes: int = static()
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    matrix: Any = state(init=counts_of)  # a nested confusion matrix: it declares its own op

    def __post_init__(self) -> None:
        _check_multiclass(self)
        super().__post_init__()


class _Multilabel(_FromConfusion):
    _counts = MultilabelConfusion

    num_labels: int = static()
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    matrix: Any = state(init=counts_of)  # a nested confusion matrix: it declares its own op

    def __post_init__(self) -> None:
        _check_multilabel(self)
        super().__post_init__()


class _Normalized(_FromConfusion):
    normalize: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "normalize", NORMALIZE)

    def compute(self) -> torch.Tensor:
        return _normalized(self.confmat, self.normalize)


class _Matthews(_FromConfusion):
    def compute(self) -> torch.Tensor:
        cm = self.confmat
        return matthews_corrcoef(cm.sum(0) if cm.ndim == 3 else cm)  # multilabel: of the labels' matrices summed


class _Kappa(_FromConfusion):
    weights: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "weights", WEIGHTS)

    def compute(self) -> torch.Tensor:
        return cohen_kappa(self.confmat, self.weights)


class _Jaccard(_FromConfusion):
    """The Jaccard index of one binary matrix (``average`` adds the multiclass and multilabel reductions)."""

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return jaccard_index(self.confmat, "binary", zero_division=self.zero_division)


class _AveragedJaccard(_Jaccard):
    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", AVERAGES)

    def compute(self) -> torch.Tensor:
        cm = self.confmat
        ignore = self.ignore_index if cm.ndim == 2 else None  # type: ignore[attr-defined]  # multilabel: none
        return jaccard_index(cm, self.average, ignore, self.zero_division)


# -- binary ------------------------------------------------------------------


@positional("threshold", "ignore_index", "normalize", "validate_args")
class BinaryConfusionMatrix(_Normalized, _Binary):
    """Confusion matrix ``[[tn, fp], [fn, tp]]`` of a binary task, optionally normalized.

    ``normalize``: ``None``/``"none"`` (counts), ``"true"`` (rows), ``"pred"`` (columns) or ``"all"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryConfusionMatrix
        >>> BinaryConfusionMatrix().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor([[1, 1],
                [0, 2]])
    """


@positional("threshold", "ignore_index", "validate_args")
class BinaryMatthewsCorrCoef(_Matthews, _Binary):
    """Matthews correlation coefficient of a binary task (0 where undefined, as scikit-learn).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryMatthewsCorrCoef
        >>> BinaryMatthewsCorrCoef().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5774)
    """


@positional("threshold", "ignore_index", "weights", "validate_args")
class BinaryCohenKappa(_Kappa, _Binary):
    """Cohen's kappa of a binary task; ``weights`` is ``None``, ``"linear"`` or ``"quadratic"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryCohenKappa
        >>> BinaryCohenKappa().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """


@positional("threshold", "ignore_index", "validate_args", "zero_division")
class BinaryJaccardIndex(_Jaccard, _Binary):
    """Jaccard index (intersection over union) of a binary task: ``tp / (tp + fp + fn)``.

    ``zero_division`` (0 or 1) where there is no positive target or prediction.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryJaccardIndex
        >>> BinaryJaccardIndex().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.6667)
    """


# -- multiclass --------------------------------------------------------------


@positional("num_classes", "ignore_index", "normalize", "validate_args")
class MulticlassConfusionMatrix(_Normalized, _Multiclass):
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


@positional("num_classes", "ignore_index", "validate_args")
class MulticlassMatthewsCorrCoef(_Matthews, _Multiclass):
    """Matthews correlation coefficient of a multiclass task (0 where undefined, as scikit-learn).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassMatthewsCorrCoef
        >>> m = MulticlassMatthewsCorrCoef(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7000)
    """


@positional("num_classes", "ignore_index", "weights", "validate_args")
class MulticlassCohenKappa(_Kappa, _Multiclass):
    """Cohen's kappa of a multiclass task; ``weights`` is ``None``, ``"linear"`` or ``"quadratic"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassCohenKappa
        >>> m = MulticlassCohenKappa(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.6364)
    """


@positional("num_classes", "average", "ignore_index", "validate_args", "zero_division")
class MulticlassJaccardIndex(_AveragedJaccard, _Multiclass):
    """Jaccard index of a multiclass task, per class ``tp / (tp + fp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassJaccardIndex
        >>> m = MulticlassJaccardIndex(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([0.5000, 0.5000, 1.0000])
    """


# -- multilabel --------------------------------------------------------------


@positional("num_labels", "threshold", "ignore_index", "normalize", "validate_args")
class MultilabelConfusionMatrix(_Normalized, _Multilabel):
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


@positional("num_labels", "threshold", "ignore_index", "validate_args")
class MultilabelMatthewsCorrCoef(_Matthews, _Multilabel):
    """Matthews correlation of a multilabel task: of the labels' confusion matrices summed, as TorchMetrics.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelMatthewsCorrCoef
        >>> m = MultilabelMatthewsCorrCoef(num_labels=2)
        >>> m.update(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 0], [0, 1]])).compute()
        tensor(0.5774)
    """


@positional("num_labels", "threshold", "average", "ignore_index", "validate_args", "zero_division")
class MultilabelJaccardIndex(_AveragedJaccard, _Multilabel):
    """Jaccard index of a multilabel task, per label ``tp / (tp + fp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelJaccardIndex
        >>> m = MultilabelJaccardIndex(2, average="none")
        >>> m.update(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 0], [0, 1]])).compute()
        tensor([0.5000, 1.0000])
    """
