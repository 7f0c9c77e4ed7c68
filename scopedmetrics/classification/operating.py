"""Operating points: the best value of one rate where another reaches a floor, and the threshold that gives it.

``RecallAtFixedPrecision`` (``min_precision``), ``PrecisionAtFixedRecall``
(``min_recall``), ``SensitivityAtSpecificity`` (``min_specificity``) and
``SpecificityAtSensitivity`` (``min_sensitivity``), for the binary, multiclass
(one-vs-rest, per class) and multilabel (per label) tasks. Each holds the
state of its task's curve (``curves``: exact ``cat`` states of scores and
labels with ``thresholds=None``, or binned ``counts`` otherwise), so every
split of the data reduces to the same curve, and ``compute`` reads the point
off the curve exactly as TorchMetrics does:

* at fixed precision: the largest recall among curve points whose precision
  reaches ``min_precision``, ties broken by the larger precision, then the
  larger threshold; no such point, or a best recall of 0, gives threshold NaN;
* at fixed recall: the largest precision among points whose recall reaches
  ``min_recall``, ties broken by recall, then threshold; precision 0 (or no
  point) gives threshold NaN;
* sensitivity at specificity / specificity at sensitivity: on the ROC curve,
  the largest sensitivity (specificity) among points whose specificity
  (sensitivity) reaches the floor, the first such point in the curve's
  order; no such point gives ``(0, 1e6)``.

``compute`` returns ``(value, threshold)``: 0-d tensors for binary, ``(C,)``
or ``(L,)`` tensors otherwise. Where TorchMetrics raises instead (a binned
precision-recall curve of a column without positives, whose recall is NaN,
asked for a recall at a precision floor that some point reaches), the value
and threshold are NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import Any, ClassVar

import torch
from torch import Tensor

from scopedmetrics.classification.curves import (
    _binary_curve,
    _BinaryCurve,
    _binned_pr,
    _binned_roc,
    _MulticlassCurve,
    _MultilabelCurve,
    _pr,
    _roc,
    _thr,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.state import static

Point = tuple[Tensor, Tensor]
Reduce = Callable[[Tensor, Tensor, Tensor, float], Point]


def _check_floor(owner: Any, arg: str) -> None:
    """Refuse a floor (``min_precision`` ...) that is not a number in [0, 1]."""
    v = getattr(owner, arg)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be a number in [0, 1], got {v!r}")
    if not 0 <= v <= 1:
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must be a number in [0, 1], got {v!r}")


def _lexmax(keys: tuple[Tensor, ...], ok: Tensor) -> int | None:
    """The first index where ``ok`` of the lexicographic maximum of ``keys`` (TorchMetrics' ``_lexargmax``)."""
    idx = ok.nonzero().reshape(-1)
    if idx.numel() == 0:
        return None
    for key in keys:
        col = key[idx]
        idx = idx[col == col.max()]
        if idx.numel() < 2:
            break
    return int(idx[0])


def _recall_at_precision(precision: Tensor, recall: Tensor, thresholds: Tensor, floor: float) -> Point:
    """Largest recall where precision ``>= floor`` (then largest precision, then threshold)."""
    n = min(len(precision), len(recall), len(thresholds))
    p, r, t = precision[:n], recall[:n], thresholds[:n]
    ok = p >= floor  # NaN precision (no predicted positive, binned) never qualifies
    nan = torch.tensor(float("nan"), dtype=thresholds.dtype, device=thresholds.device)
    if bool(r[ok].isnan().any()):  # binned, no positives: recall is undefined (TorchMetrics raises)
        return recall.new_tensor(float("nan")), nan
    best = _lexmax((r, p, t), ok)
    if best is None or float(r[best]) == 0.0:
        return recall.new_zeros(()) if best is None else r[best], nan
    return r[best], t[best]


def _precision_at_recall(precision: Tensor, recall: Tensor, thresholds: Tensor, floor: float) -> Point:
    """Largest precision where recall ``>= floor`` (then largest recall, then threshold)."""
    n = min(len(precision), len(recall), len(thresholds))
    p, r, t = precision[:n], recall[:n], thresholds[:n]
    ok = (r >= floor) & ~p.isnan()  # TorchMetrics' max over tuples never picks a NaN precision after a number
    nan = torch.tensor(float("nan"), dtype=thresholds.dtype, device=thresholds.device)
    best = _lexmax((p, r, t), ok)
    if best is None or float(p[best]) == 0.0:
        return precision.new_zeros(()) if best is None else p[best], nan
    return p[best], t[best]


def _at_floor(value: Tensor, other: Tensor, thresholds: Tensor, floor: float) -> Point:
    """Largest ``value`` where ``other >= floor``, the first in curve order; ``(0, 1e6)`` when none qualifies."""
    ok = other >= floor
    if not bool(ok.any()):
        return value.new_zeros(()), torch.tensor(1e6, dtype=thresholds.dtype, device=thresholds.device)
    value, thresholds = value[ok], thresholds[ok]
    best = int(value.argmax())
    return value[best], thresholds[best]


def _sensitivity_at_specificity(fpr: Tensor, tpr: Tensor, thresholds: Tensor, floor: float) -> Point:
    return _at_floor(tpr, 1 - fpr, thresholds, floor)


def _specificity_at_sensitivity(fpr: Tensor, tpr: Tensor, thresholds: Tensor, floor: float) -> Point:
    return _at_floor(1 - fpr, tpr, thresholds, floor)


def _per_column_point(m: Any, pr: bool, reduce: Reduce, floor: float) -> Point:
    """The point of every class (one-vs-rest) or label, stacked into two ``(C,)`` tensors."""
    if m.thresholds is None:
        curve = _pr if pr else _roc
        width = m.num_classes if isinstance(m, _MulticlassCurve) else m.num_labels
        points = [reduce(*curve(*m._column(c)), floor) for c in range(width)]
    else:
        x, y, thr = (_binned_pr if pr else _binned_roc)(m.counts, _thr(m))
        points = [reduce(a, b, thr, floor) for a, b in zip(x, y)]
    return torch.stack([p[0] for p in points]), torch.stack([p[1] for p in points])


class _Floor:
    """What an operating point class names in ``_point``: its floor field, its curve, the rule.

    The curve is the precision-recall curve for ``True``, else the ROC; the
    rule reads the point off the curve at the floor. ``compute`` lives here,
    for the three tasks: a metric class that inherits it wraps it as its own
    (reduce first), like any ``compute`` its bases bring.
    """

    _point: ClassVar[tuple[str, bool, Reduce]]

    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[misc]  # the curve's, next in the metric's MRO
        _check_floor(self, self._point[0])

    def compute(self) -> Point:
        """Return ``(value, threshold)`` over every sample seen: 0-d for binary, else per class or label."""
        floor, pr, rule = self._point
        if isinstance(self, _BinaryCurve):
            return rule(*_binary_curve(self, pr), getattr(self, floor))
        return _per_column_point(self, pr, rule, getattr(self, floor))


class _BinaryPoint(_Floor, _BinaryCurve):
    pass


class _MulticlassPoint(_Floor, _MulticlassCurve):
    pass


class _MultilabelPoint(_Floor, _MultilabelCurve):
    pass


# -- recall at fixed precision ---------------------------------------------------


@positional("min_precision", "thresholds", "ignore_index", "validate_args")
class BinaryRecallAtFixedPrecision(_BinaryPoint):
    """Highest recall of a binary task at precision ``>= min_precision``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryRecallAtFixedPrecision
        >>> preds, target = torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinaryRecallAtFixedPrecision(0.6).update(preds, target).compute()
        (tensor(1.), tensor(0.4000))
        >>> BinaryRecallAtFixedPrecision(0.6, thresholds=5).update(preds, target).compute()
        (tensor(1.), tensor(0.2500))
    """

    _: KW_ONLY
    min_precision: float = static()
    _point = ("min_precision", True, _recall_at_precision)


@positional("num_classes", "min_precision", "thresholds", "ignore_index", "validate_args")
class MulticlassRecallAtFixedPrecision(_MulticlassPoint):
    """Highest recall of each class (one-vs-rest) at precision ``>= min_precision``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassRecallAtFixedPrecision
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> MulticlassRecallAtFixedPrecision(3, 0.5).update(preds, torch.tensor([0, 1, 2, 2])).compute()
        (tensor([1., 1., 1.]), tensor([0.7000, 0.5000, 0.3000]))
    """

    _: KW_ONLY
    min_precision: float = static()
    _point = ("min_precision", True, _recall_at_precision)


@positional("num_labels", "min_precision", "thresholds", "ignore_index", "validate_args")
class MultilabelRecallAtFixedPrecision(_MultilabelPoint):
    """Highest recall of each label at precision ``>= min_precision``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRecallAtFixedPrecision
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelRecallAtFixedPrecision(2, 0.9)
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        (tensor([1., 1.]), tensor([0.8000, 0.6000]))
    """

    _: KW_ONLY
    min_precision: float = static()
    _point = ("min_precision", True, _recall_at_precision)


# -- precision at fixed recall ---------------------------------------------------


@positional("min_recall", "thresholds", "ignore_index", "validate_args")
class BinaryPrecisionAtFixedRecall(_BinaryPoint):
    """Highest precision of a binary task at recall ``>= min_recall``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryPrecisionAtFixedRecall
        >>> preds, target = torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinaryPrecisionAtFixedRecall(0.5).update(preds, target).compute()
        (tensor(1.), tensor(0.8000))
    """

    _: KW_ONLY
    min_recall: float = static()
    _point = ("min_recall", True, _precision_at_recall)


@positional("num_classes", "min_recall", "thresholds", "ignore_index", "validate_args")
class MulticlassPrecisionAtFixedRecall(_MulticlassPoint):
    """Highest precision of each class (one-vs-rest) at recall ``>= min_recall``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassPrecisionAtFixedRecall
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> MulticlassPrecisionAtFixedRecall(3, 1.0).update(preds, torch.tensor([0, 1, 2, 2])).compute()
        (tensor([1.0000, 1.0000, 0.6667]), tensor([0.7000, 0.5000, 0.3000]))
    """

    _: KW_ONLY
    min_recall: float = static()
    _point = ("min_recall", True, _precision_at_recall)


@positional("num_labels", "min_recall", "thresholds", "ignore_index", "validate_args")
class MultilabelPrecisionAtFixedRecall(_MultilabelPoint):
    """Highest precision of each label at recall ``>= min_recall``, and its threshold.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelPrecisionAtFixedRecall
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelPrecisionAtFixedRecall(2, 0.5, thresholds=[0.25, 0.5, 0.75])
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        (tensor([1., 1.]), tensor([0.7500, 0.5000]))
    """

    _: KW_ONLY
    min_recall: float = static()
    _point = ("min_recall", True, _precision_at_recall)


# -- sensitivity at specificity --------------------------------------------------


@positional("min_specificity", "thresholds", "ignore_index", "validate_args")
class BinarySensitivityAtSpecificity(_BinaryPoint):
    """Highest sensitivity (true positive rate) of a binary task at specificity ``>= min_specificity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinarySensitivityAtSpecificity
        >>> preds, target = torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinarySensitivityAtSpecificity(0.5).update(preds, target).compute()
        (tensor(1.), tensor(0.4000))
    """

    _: KW_ONLY
    min_specificity: float = static()
    _point = ("min_specificity", False, _sensitivity_at_specificity)


@positional("num_classes", "min_specificity", "thresholds", "ignore_index", "validate_args")
class MulticlassSensitivityAtSpecificity(_MulticlassPoint):
    """Highest sensitivity of each class (one-vs-rest) at specificity ``>= min_specificity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassSensitivityAtSpecificity
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> MulticlassSensitivityAtSpecificity(3, 0.9).update(preds, torch.tensor([0, 1, 2, 2])).compute()
        (tensor([1.0000, 1.0000, 0.5000]), tensor([0.7000, 0.5000, 0.6000]))
    """

    _: KW_ONLY
    min_specificity: float = static()
    _point = ("min_specificity", False, _sensitivity_at_specificity)


@positional("num_labels", "min_specificity", "thresholds", "ignore_index", "validate_args")
class MultilabelSensitivityAtSpecificity(_MultilabelPoint):
    """Highest sensitivity of each label at specificity ``>= min_specificity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelSensitivityAtSpecificity
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelSensitivityAtSpecificity(2, 0.5)
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        (tensor([1., 1.]), tensor([0.8000, 0.6000]))
    """

    _: KW_ONLY
    min_specificity: float = static()
    _point = ("min_specificity", False, _sensitivity_at_specificity)


# -- specificity at sensitivity --------------------------------------------------


@positional("min_sensitivity", "thresholds", "ignore_index", "validate_args")
class BinarySpecificityAtSensitivity(_BinaryPoint):
    """Highest specificity (true negative rate) of a binary task at sensitivity ``>= min_sensitivity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinarySpecificityAtSensitivity
        >>> preds, target = torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinarySpecificityAtSensitivity(0.5).update(preds, target).compute()
        (tensor(1.), tensor(0.8000))
    """

    _: KW_ONLY
    min_sensitivity: float = static()
    _point = ("min_sensitivity", False, _specificity_at_sensitivity)


@positional("num_classes", "min_sensitivity", "thresholds", "ignore_index", "validate_args")
class MulticlassSpecificityAtSensitivity(_MulticlassPoint):
    """Highest specificity of each class (one-vs-rest) at sensitivity ``>= min_sensitivity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassSpecificityAtSensitivity
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> MulticlassSpecificityAtSensitivity(3, 1.0).update(preds, torch.tensor([0, 1, 2, 2])).compute()
        (tensor([1.0000, 1.0000, 0.5000]), tensor([0.7000, 0.5000, 0.3000]))
    """

    _: KW_ONLY
    min_sensitivity: float = static()
    _point = ("min_sensitivity", False, _specificity_at_sensitivity)


@positional("num_labels", "min_sensitivity", "thresholds", "ignore_index", "validate_args")
class MultilabelSpecificityAtSensitivity(_MultilabelPoint):
    """Highest specificity of each label at sensitivity ``>= min_sensitivity``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelSpecificityAtSensitivity
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelSpecificityAtSensitivity(2, 1.0)
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        (tensor([1., 1.]), tensor([0.8000, 0.6000]))
    """

    _: KW_ONLY
    min_sensitivity: float = static()
    _point = ("min_sensitivity", False, _specificity_at_sensitivity)
