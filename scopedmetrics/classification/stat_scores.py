"""Stat-score metrics: true/false positive/negative counts, and the scores made of them.

Names, positional order, arguments and input conventions follow TorchMetrics
(``BinaryStatScores``, ``MulticlassPrecision``, ...), with
``multidim_average="global"`` only. The state is int64 ``"sum"`` counts:
``tp``, ``fp``, ``tn``, ``fn`` (binary, and per label), or per class one
``(3, C)`` leaf of ``tp``, ``fp`` and support, so any split of the data reduces
to the same counts. ``average`` and the other compute-only options (``beta``,
``zero_division``) only change ``compute``. Every class takes ``zero_division``,
as in TorchMetrics, where only precision, recall, F-beta and F1 use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import Any, ClassVar, TypeVar

import torch

from scopedmetrics.classification.inputs import (
    binary_labels,
    bincount,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    check_threshold,
    config_error,
    input_error,
    multiclass_labels,
    multilabel_labels,
    ones,
    tally,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)
_Score = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

AVERAGES = ("micro", "macro", "weighted", "none", None)


def safe_divide(num: torch.Tensor, den: torch.Tensor, zero_division: float = 0.0) -> torch.Tensor:
    """``num / den`` as float, with ``zero_division`` where ``den == 0``.

    Examples:
        >>> import torch
        >>> safe_divide(torch.tensor([1, 1]), torch.tensor([2, 0]))
        tensor([0.5000, 0.0000])
    """
    num, den = num.float(), den.float()
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), float(zero_division))


def _check_zero_division(m: Metric) -> None:
    """Refuse a ``zero_division`` other than 0 or 1; store it as a float, so ``0`` and ``0.0`` configure alike."""
    check_one_of(m, "zero_division", (0, 1))
    object.__setattr__(m, "zero_division", float(m.zero_division))  # type: ignore[attr-defined]


def _check_multidim_average(m: Metric) -> None:
    """Refuse a ``multidim_average`` other than ``"global"`` (no per-sample scores here)."""
    if m.multidim_average != "global":  # type: ignore[attr-defined]
        raise config_error(m, "multidim_average", "'global' (per-sample 'samplewise' scores are not supported)")


def _check_common(m: Metric) -> None:
    """The options every stat score takes besides the task's own."""
    _check_multidim_average(m)
    check_ignore_index(m)
    check_bool(m, "validate_args")
    _check_zero_division(m)


def _check_beta(m: Any) -> None:
    b = m.beta
    if isinstance(b, bool) or not isinstance(b, (int, float)) or not b > 0:
        raise config_error(m, "beta", "a number > 0")


def _fbeta(beta: float, zero_division: float) -> _Score:
    b2 = beta * beta
    return lambda tp, fp, tn, fn: safe_divide((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, zero_division)


def _accuracy(tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
    return safe_divide(tp + tn, tp + fp + tn + fn)


def _specificity(tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
    return safe_divide(tn, tn + fp)


def _precision(zero_division: float) -> _Score:
    return lambda tp, fp, tn, fn: safe_divide(tp, tp + fp, zero_division)


def _recall(zero_division: float) -> _Score:
    return lambda tp, fp, tn, fn: safe_divide(tp, tp + fn, zero_division)


def _averaged(m: Any, score: _Score, multilabel: bool, top_k_support: bool = False) -> torch.Tensor:
    """``score`` of the per-class counts of ``m``, averaged as ``m.average`` says.

    ``micro`` scores the summed counts; ``macro`` averages the per-class
    scores, leaving out (multiclass only) classes that were neither predicted
    nor present, as scikit-learn does; ``weighted`` weights them by support.
    ``top_k_support``: with ``top_k > 1``, ``macro`` leaves out the classes
    without support instead (TorchMetrics' rule for accuracy, precision, recall).
    """
    tp, fp, tn, fn = m.tp, m.fp, m.tn, m.fn
    if m.average == "micro":
        return score(tp.sum(), fp.sum(), tn.sum(), fn.sum())
    per_class = score(tp, fp, tn, fn)
    if m.average in ("none", None):
        return per_class
    if m.average == "weighted":
        weights = (tp + fn).float()
    elif multilabel:
        weights = torch.ones_like(per_class)
    elif top_k_support and m.top_k > 1:
        weights = (tp + fn != 0).float()
    else:
        weights = (tp + fp + fn != 0).float()
    return safe_divide((weights * per_class).sum(), weights.sum())


def _stack(m: Any) -> torch.Tensor:
    """``[tp, fp, tn, fn, support]`` along the last dim, averaged over classes as ``m.average`` says."""
    res = torch.stack([m.tp, m.fp, m.tn, m.fn, m.tp + m.fn], dim=-1)
    if m.average == "micro":
        return res.sum(0)
    if m.average == "macro":
        return res.float().mean(0)
    if m.average == "weighted":
        weights = safe_divide(m.tp + m.fn, (m.tp + m.fn).sum())
        return (res * weights[:, None]).sum(0)
    return res


def _zeros(m: Metric, size: int) -> None:
    for name in ("tp", "fp", "tn", "fn"):
        object.__setattr__(m, name, torch.zeros(size, dtype=torch.long))


# TorchMetrics' positional orders (1.9); F1 and F-beta add ``zero_division``, F-beta starts with ``beta``.
_BINARY = ("threshold", "multidim_average", "ignore_index", "validate_args")
_MULTICLASS = ("num_classes", "top_k", "average", "multidim_average", "ignore_index", "validate_args")
_MULTILABEL = ("num_labels", "threshold", "average", "multidim_average", "ignore_index", "validate_args")


# -- binary ------------------------------------------------------------------


@positional(*_BINARY)
class BinaryStatScores(Metric):
    """Counts ``[tp, fp, tn, fn, support]`` of a binary task.

    ``preds`` are labels in {0, 1}, or probabilities/logits thresholded at ``threshold``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryStatScores
        >>> m = BinaryStatScores().update(torch.tensor([0.1, 0.9, 0.8, 0.3]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor([1, 1, 1, 1, 2])
    """

    tp: torch.Tensor = state("sum", default=0)
    fp: torch.Tensor = state("sum", default=0)
    tn: torch.Tensor = state("sum", default=0)
    fn: torch.Tensor = state("sum", default=0)
    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        check_threshold(self)
        _check_common(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, ...)``."""
        p, t, keep = binary_labels(self, preds, target)
        # one bincount of 2 * (not predicted) + (missed): 0 tp, 1 fp, 2 tn, 3 fn; 4 drops an ignored sample
        index = (~p).long() * 2 + (p != t)
        counts = bincount(index, 4, keep)
        old = torch.stack([self.tp, self.fp, self.tn, self.fn])  # type: ignore[attr-defined]
        tp, fp, tn, fn = (old + counts).unbind(0)
        return self.replace(tp=tp, fp=fp, tn=tn, fn=fn)

    def compute(self) -> torch.Tensor:
        return torch.stack([self.tp, self.fp, self.tn, self.fn, self.tp + self.fn])


@positional(*_BINARY)
class BinaryAccuracy(BinaryStatScores):
    """Accuracy of a binary task: ``(tp + tn) / (tp + fp + tn + fn)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> BinaryAccuracy().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.7500)
    """

    def compute(self) -> torch.Tensor:
        return _accuracy(self.tp, self.fp, self.tn, self.fn)


@positional(*_BINARY)
class BinaryPrecision(BinaryStatScores):
    """Precision of a binary task: ``tp / (tp + fp)``, ``zero_division`` when nothing is predicted positive.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryPrecision
        >>> BinaryPrecision().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _precision(self.zero_division)(self.tp, self.fp, self.tn, self.fn)


@positional(*_BINARY)
class BinaryRecall(BinaryStatScores):
    """Recall (sensitivity) of a binary task: ``tp / (tp + fn)``, ``zero_division`` without positives.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryRecall
        >>> BinaryRecall().update(torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """

    def compute(self) -> torch.Tensor:
        return _recall(self.zero_division)(self.tp, self.fp, self.tn, self.fn)


@positional("beta", *_BINARY, "zero_division")
class BinaryFBetaScore(BinaryStatScores):
    """F-beta score of a binary task: ``(1 + b²) tp / ((1 + b²) tp + b² fn + fp)``; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryFBetaScore
        >>> m = BinaryFBetaScore(2.0).update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor(0.9091)
    """

    _: KW_ONLY
    beta: float = static()  # required, as in TorchMetrics

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)

    def compute(self) -> torch.Tensor:
        return _fbeta(self.beta, self.zero_division)(self.tp, self.fp, self.tn, self.fn)


@positional(*_BINARY, "zero_division")
class BinaryF1Score(BinaryStatScores):
    """F1 score of a binary task: the harmonic mean of precision and recall.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryF1Score
        >>> BinaryF1Score().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.8000)
    """

    def compute(self) -> torch.Tensor:
        return _fbeta(1.0, self.zero_division)(self.tp, self.fp, self.tn, self.fn)


@positional(*_BINARY)
class BinarySpecificity(BinaryStatScores):
    """Specificity of a binary task: ``tn / (tn + fp)`` (0 without negatives; ``zero_division`` is unused).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinarySpecificity
        >>> BinarySpecificity().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """

    def compute(self) -> torch.Tensor:
        return _specificity(self.tp, self.fp, self.tn, self.fn)


# -- multiclass --------------------------------------------------------------


class _MulticlassCounts(Metric):
    """Per-class counts of a multiclass task: the state, and the options ``update`` reads.

    Every public multiclass stat-score metric inherits ``update`` from here.
    The state is one ``(3, C)`` int64 ``counts``: per class ``tp``, ``fp`` and
    the support (``tp + fn``); ``fn`` and ``tn`` follow from them, since every
    sample has exactly one target. One leaf instead of four is what keeps
    a small-batch update to a few tensor ops. With ``num_classes=None``
    (micro averages only) ``counts`` is ``(3, 1)``: the hits, the misses and
    the samples, summed over whatever classes the data holds.
    """

    num_classes: int | None = static(default=None)
    top_k: int = static(default=1)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)
    counts: torch.Tensor = state("sum", default=0)  # shaped (3, C) in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "top_k", 1)
        if self.num_classes is None:
            if self.top_k > 1:
                raise config_error(self, "top_k", "1 when num_classes is None")
        else:
            check_int(self, "num_classes", 2)
            if self.top_k > self.num_classes:
                raise config_error(self, "top_k", f"<= num_classes={self.num_classes}")
        _check_common(self)
        width = 1 if self.num_classes is None else self.num_classes
        object.__setattr__(self, "counts", torch.zeros(3, width, dtype=torch.long))

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``.

        Scores become labels by argmax (see ``multiclass_labels`` for ``top_k``).
        """
        c = self.num_classes  # type: ignore[attr-defined]
        p, t, keep = multiclass_labels(self, preds, target)
        if c is None:
            return self.replace(counts=_micro_counts(self.counts, p, t, keep))  # type: ignore[attr-defined]
        try:
            counts = _class_counts(self.counts, p, t, keep, c)  # type: ignore[attr-defined]
        except IndexError:  # only reachable with validate_args=False
            raise input_error(self, "preds` or `target", f"holds a label outside [0, {c})") from None
        return self.replace(counts=counts)

    @property
    def tp(self) -> torch.Tensor:
        """True positives per class."""
        return self.counts[0]

    @property
    def fp(self) -> torch.Tensor:
        """False positives per class."""
        return self.counts[1]

    @property
    def fn(self) -> torch.Tensor:
        """False negatives per class: support minus true positives."""
        return self.counts[2] - self.counts[0]

    @property
    def tn(self) -> torch.Tensor:
        """True negatives per class: the samples neither labelled nor predicted as the class."""
        support = self.counts[2]
        return support.sum() - support - self.counts[1]


def _micro_counts(counts: torch.Tensor, p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """``(3, 1)`` counts (hits, misses, samples) plus those of a batch of labels, for ``num_classes=None``.

    Examples:
        >>> import torch
        >>> _micro_counts(torch.zeros(3, 1, dtype=torch.long), torch.tensor([7, 1, 0]), torch.tensor([7, 2, 0]), None)
        tensor([[2],
                [1],
                [3]])
    """
    hits, misses = bincount((p != t).long(), 2, keep).unbind(0)
    return counts + torch.stack([hits, misses, hits + misses]).view(3, 1)


def _class_counts(
    counts: torch.Tensor,
    p: torch.Tensor,
    t: torch.Tensor,
    keep: torch.Tensor | None,
    c: int,
    index_add: bool | None = None,
) -> torch.Tensor:
    """``counts`` (rows: tp, fp, support) plus those of a batch of labels.

    Each sample adds one to its prediction's ``tp`` (hit) or ``fp`` (miss) row
    and one to its target's support. On the CPU that is two ``index_add`` of
    ones, which raise ``IndexError`` on a label out of range; small batches pay
    per tensor op (1-2 µs each), so fewer ops is what makes this fast. A batch
    of at least ``c * c`` samples counts the confusion matrix instead (one
    pass), and other devices, where an out-of-range ``index_add`` is a
    device-side assert, ``tally`` both rows at once, which takes a ``bincount``
    there (``index_add=None`` picks by device).

    Examples:
        >>> import torch
        >>> zero = torch.zeros(3, 3, dtype=torch.long)
        >>> p, t = torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])
        >>> _class_counts(zero, p, t, None, 3)
        tensor([[1, 1, 1],
                [0, 1, 0],
                [2, 1, 1]])
        >>> torch.equal(_class_counts(zero, p, t, None, 3, index_add=False), _class_counts(zero, p, t, None, 3))
        True
    """
    if c * c <= p.shape[0]:
        cm = bincount(torch.add(p, t, alpha=c), c * c, keep).view(c, c)  # index t * c + p
        hits = cm.diagonal()
        return counts + torch.stack([hits, cm.sum(0) - hits, cm.sum(1)])
    rows = torch.add(p, p != t, alpha=c)  # p on a hit (tp row), c + p on a miss (fp row)
    if not (counts.is_cpu if index_add is None else index_add):  # both rows in one tally (a bincount there)
        return tally(counts, torch.cat([rows, t + 2 * c]), None if keep is None else keep.repeat(2))
    if keep is None:
        one = ones(p.shape[0], counts.dtype, p.device)
    else:
        one, t, rows = keep.to(counts.dtype), t.where(keep, 0), rows.where(keep, 0)
    new = counts.view(-1).index_add(0, rows, one).view(3, c)
    new[2].index_add_(0, t, one)
    return new


@positional(*_MULTICLASS)
class MulticlassStatScores(_MulticlassCounts):
    """Counts ``[tp, fp, tn, fn, support]`` per class, averaged over classes as ``average`` says.

    ``average="none"`` gives shape ``(C, 5)``; the others shape ``(5,)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassStatScores
        >>> m = MulticlassStatScores(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([[1, 0, 2, 1, 2],
                [1, 1, 2, 0, 1],
                [1, 0, 3, 0, 1]])
    """

    average: str | None = static(default="macro")

    # Whether num_classes=None (with average="micro") gives the value: not when it needs true negatives.
    _micro_without_classes: ClassVar[bool] = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", AVERAGES)
        if self.num_classes is None and not self._micro_without_classes:
            raise config_error(self, "num_classes", "an integer >= 2 (true negatives need the number of classes)")
        if self.num_classes is None and self.average != "micro":
            raise config_error(self, "num_classes", "an integer >= 2 unless average='micro'")

    def compute(self) -> torch.Tensor:
        return _stack(self)


@positional(*_MULTICLASS)
class MulticlassAccuracy(MulticlassStatScores):
    """Accuracy of a multiclass task: per class ``tp / (tp + fn)``; ``micro`` is the fraction correct.

    With ``top_k > 1`` a sample counts as correct when its target is among the ``top_k`` scores.
    ``num_classes=None`` works with ``average="micro"``, as in TorchMetrics.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassAccuracy
        >>> preds, target = torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])
        >>> MulticlassAccuracy(3, average="micro").update(preds, target).compute()
        tensor(0.7500)
        >>> MulticlassAccuracy(3, 1, None).update(preds, target).compute()   # average=None: per class
        tensor([0.5000, 1.0000, 1.0000])
        >>> MulticlassAccuracy(average="micro").update(preds, target).compute()
        tensor(0.7500)
    """

    _micro_without_classes = True

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(0.0), multilabel=False, top_k_support=True)


@positional(*_MULTICLASS)
class MulticlassPrecision(MulticlassStatScores):
    """Precision of a multiclass task, per class ``tp / (tp + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassPrecision
        >>> m = MulticlassPrecision(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.5000, 1.0000])
    """

    _micro_without_classes = True

    def compute(self) -> torch.Tensor:
        return _averaged(self, _precision(self.zero_division), multilabel=False, top_k_support=True)


@positional(*_MULTICLASS)
class MulticlassRecall(MulticlassStatScores):
    """Recall of a multiclass task, per class ``tp / (tp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassRecall
        >>> m = MulticlassRecall(3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.8333)
    """

    _micro_without_classes = True

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(self.zero_division), multilabel=False, top_k_support=True)


@positional("beta", *_MULTICLASS, "zero_division")
class MulticlassFBetaScore(MulticlassStatScores):
    """F-beta score of a multiclass task, per class, averaged as ``average`` says; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassFBetaScore
        >>> m = MulticlassFBetaScore(2.0, 3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7963)
    """

    _: KW_ONLY
    beta: float = static()  # required, as in TorchMetrics

    _micro_without_classes = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(self.beta, self.zero_division), multilabel=False)


@positional(*_MULTICLASS, "zero_division")
class MulticlassF1Score(MulticlassStatScores):
    """F1 score of a multiclass task, per class, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassF1Score
        >>> m = MulticlassF1Score(3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7778)
    """

    _micro_without_classes = True

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(1.0, self.zero_division), multilabel=False)


@positional(*_MULTICLASS)
class MulticlassSpecificity(MulticlassStatScores):
    """Specificity of a multiclass task, per class ``tn / (tn + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassSpecificity
        >>> m = MulticlassSpecificity(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.6667, 1.0000])
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _specificity, multilabel=False)


# -- multilabel --------------------------------------------------------------


class _MultilabelCounts(Metric):
    """Per-label counts of a multilabel task: the state, and the options ``update`` reads.

    Every public multilabel stat-score metric inherits ``update`` from here.
    """

    num_labels: int = static()
    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)
    tp: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    fp: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    tn: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    fn: torch.Tensor = state("sum", default=0)  # shaped in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "num_labels", 2)
        check_threshold(self)
        _check_common(self)
        _zeros(self, self.num_labels)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, L, ...)``."""
        p, t, keep = multilabel_labels(self, preds, target)
        pos, neg = (t, ~t) if keep is None else (keep & t, keep & ~t)
        return self.replace(
            tp=self.tp + (pos & p).sum(0),  # type: ignore[attr-defined]
            fp=self.fp + (neg & p).sum(0),  # type: ignore[attr-defined]
            tn=self.tn + (neg & ~p).sum(0),  # type: ignore[attr-defined]
            fn=self.fn + (pos & ~p).sum(0),  # type: ignore[attr-defined]
        )


@positional(*_MULTILABEL)
class MultilabelStatScores(_MultilabelCounts):
    """Counts ``[tp, fp, tn, fn, support]`` per label, averaged over labels as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelStatScores
        >>> m = MultilabelStatScores(3, average="none")
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor([[1, 0, 1, 0, 1],
                [1, 0, 1, 0, 1],
                [0, 1, 0, 1, 1]])
    """

    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", AVERAGES)

    def compute(self) -> torch.Tensor:
        return _stack(self)


@positional(*_MULTILABEL)
class MultilabelAccuracy(MultilabelStatScores):
    """Accuracy of a multilabel task, per label ``(tp + tn) / all``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAccuracy
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelAccuracy(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _accuracy, multilabel=True)


@positional(*_MULTILABEL)
class MultilabelPrecision(MultilabelStatScores):
    """Precision of a multilabel task, per label ``tp / (tp + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelPrecision
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelPrecision(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _precision(self.zero_division), multilabel=True)


@positional(*_MULTILABEL)
class MultilabelRecall(MultilabelStatScores):
    """Recall of a multilabel task, per label ``tp / (tp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRecall
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelRecall(3, average="micro")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(self.zero_division), multilabel=True)


@positional("beta", *_MULTILABEL, "zero_division")
class MultilabelFBetaScore(MultilabelStatScores):
    """F-beta score of a multilabel task, per label, averaged as ``average`` says; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelFBetaScore
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelFBetaScore(0.5, 3, average="none")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor([1., 1., 0.])
    """

    _: KW_ONLY
    beta: float = static()  # required, as in TorchMetrics

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(self.beta, self.zero_division), multilabel=True)


@positional(*_MULTILABEL, "zero_division")
class MultilabelF1Score(MultilabelStatScores):
    """F1 score of a multilabel task, per label, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelF1Score
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelF1Score(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(1.0, self.zero_division), multilabel=True)


@positional(*_MULTILABEL)
class MultilabelSpecificity(MultilabelStatScores):
    """Specificity of a multilabel task, per label ``tn / (tn + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelSpecificity
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelSpecificity(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _specificity, multilabel=True)
