"""Stat-score metrics: true/false positive/negative counts, and the scores made of them.

Names, arguments and input conventions follow TorchMetrics (``BinaryStatScores``,
``MulticlassPrecision``, ...), with ``multidim_average="global"`` only. The state
is int64 ``"sum"`` counts: ``tp``, ``fp``, ``tn``, ``fn`` (binary, and per label),
or per class one ``(3, C)`` leaf of ``tp``, ``fp`` and support, so any split of the
data reduces to the same counts. ``average`` and the other
compute-only options (``beta``, ``zero_division``) live on the public classes,
while the state and every option ``update`` reads live on the class that
defines ``update``; a ``Collection`` of, say, precision, recall and F1 with the
same input options therefore updates the counts once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

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
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)
_Score = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

AVERAGES = ("micro", "macro", "weighted", "none", None)


def safe_divide(num: torch.Tensor, den: torch.Tensor, zero_division: float = 0.0) -> torch.Tensor:
    """``num / den`` as float, with ``zero_division`` where ``den == 0``.

    Example:
        >>> import torch
        >>> safe_divide(torch.tensor([1, 1]), torch.tensor([2, 0]))
        tensor([0.5000, 0.0000])
    """
    num, den = num.float(), den.float()
    return torch.where(den != 0, num / torch.where(den != 0, den, 1.0), float(zero_division))


def _check_zero_division(m: Metric) -> None:
    check_one_of(m, "zero_division", (0, 1))


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


def _averaged(m: Any, score: _Score, multilabel: bool) -> torch.Tensor:
    """``score`` of the per-class counts of ``m``, averaged as ``m.average`` says.

    ``micro`` scores the summed counts; ``macro`` averages the per-class
    scores, leaving out (multiclass only) classes that were neither predicted
    nor present, as scikit-learn does; ``weighted`` weights them by support.
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


# -- binary ------------------------------------------------------------------


class BinaryStatScores(Metric):
    """Counts ``[tp, fp, tn, fn, support]`` of a binary task.

    ``preds`` are labels in {0, 1}, or probabilities/logits thresholded at ``threshold``.

    Example:
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
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        check_threshold(self)
        check_ignore_index(self)
        check_bool(self, "validate_args")

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


class BinaryAccuracy(BinaryStatScores):
    """Accuracy of a binary task: ``(tp + tn) / (tp + fp + tn + fn)``.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> BinaryAccuracy().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.7500)
    """

    def compute(self) -> torch.Tensor:
        return _accuracy(self.tp, self.fp, self.tn, self.fn)


class BinaryPrecision(BinaryStatScores):
    """Precision of a binary task: ``tp / (tp + fp)``, ``zero_division`` when nothing is predicted positive.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryPrecision
        >>> BinaryPrecision().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.6667)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _precision(self.zero_division)(self.tp, self.fp, self.tn, self.fn)


class BinaryRecall(BinaryStatScores):
    """Recall (sensitivity) of a binary task: ``tp / (tp + fn)``, ``zero_division`` without positives.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryRecall
        >>> BinaryRecall().update(torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _recall(self.zero_division)(self.tp, self.fp, self.tn, self.fn)


class BinaryFBetaScore(BinaryStatScores):
    """F-beta score of a binary task: ``(1 + b²) tp / ((1 + b²) tp + b² fn + fp)``.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryFBetaScore
        >>> m = BinaryFBetaScore(beta=2.0).update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor(0.9091)
    """

    beta: float = static(default=1.0)
    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _fbeta(self.beta, self.zero_division)(self.tp, self.fp, self.tn, self.fn)


class BinaryF1Score(BinaryStatScores):
    """F1 score of a binary task: the harmonic mean of precision and recall.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryF1Score
        >>> BinaryF1Score().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.8000)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _fbeta(1.0, self.zero_division)(self.tp, self.fp, self.tn, self.fn)


class BinarySpecificity(BinaryStatScores):
    """Specificity of a binary task: ``tn / (tn + fp)``.

    Example:
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

    Every public multiclass stat-score metric inherits ``update`` from here, so
    metrics differing only in ``average``, ``beta`` or ``zero_division`` share it.
    The state is one ``(3, C)`` int64 ``counts``: per class ``tp``, ``fp`` and
    the support (``tp + fn``); ``fn`` and ``tn`` follow from them, since every
    sample has exactly one target. One leaf instead of four is what keeps
    a small-batch update to a few tensor ops.
    """

    num_classes: int = static()
    top_k: int = static(default=1)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    counts: torch.Tensor = state("sum", default=0)  # shaped (3, C) in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "num_classes", 2)
        check_int(self, "top_k", 1)
        if self.top_k > self.num_classes:
            raise config_error(self, "top_k", f"<= num_classes={self.num_classes}")
        check_ignore_index(self)
        check_bool(self, "validate_args")
        object.__setattr__(self, "counts", torch.zeros(3, self.num_classes, dtype=torch.long))

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``.

        Scores become labels by argmax (see ``multiclass_labels`` for ``top_k``).
        """
        c = self.num_classes  # type: ignore[attr-defined]
        p, t, keep = multiclass_labels(self, preds, target)
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


def _class_counts(
    counts: torch.Tensor, p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor | None, c: int,
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

    Example:
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


class MulticlassStatScores(_MulticlassCounts):
    """Counts ``[tp, fp, tn, fn, support]`` per class, averaged over classes as ``average`` says.

    ``average="none"`` gives shape ``(C, 5)``; the others shape ``(5,)``.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassStatScores
        >>> m = MulticlassStatScores(num_classes=3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([[1, 0, 2, 1, 2],
                [1, 1, 2, 0, 1],
                [1, 0, 3, 0, 1]])
    """

    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", AVERAGES)

    def compute(self) -> torch.Tensor:
        return _stack(self)


class MulticlassAccuracy(MulticlassStatScores):
    """Accuracy of a multiclass task: per class ``tp / (tp + fn)``; ``micro`` is the fraction correct.

    With ``top_k > 1`` a sample counts as correct when its target is among the ``top_k`` scores.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassAccuracy
        >>> m = MulticlassAccuracy(num_classes=3, average="micro")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7500)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(0.0), multilabel=False)


class MulticlassPrecision(MulticlassStatScores):
    """Precision of a multiclass task, per class ``tp / (tp + fp)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassPrecision
        >>> m = MulticlassPrecision(num_classes=3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.5000, 1.0000])
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _precision(self.zero_division), multilabel=False)


class MulticlassRecall(MulticlassStatScores):
    """Recall of a multiclass task, per class ``tp / (tp + fn)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassRecall
        >>> m = MulticlassRecall(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.8333)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(self.zero_division), multilabel=False)


class MulticlassFBetaScore(MulticlassStatScores):
    """F-beta score of a multiclass task, per class, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassFBetaScore
        >>> m = MulticlassFBetaScore(num_classes=3, beta=2.0)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7963)
    """

    beta: float = static(default=1.0)
    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(self.beta, self.zero_division), multilabel=False)


class MulticlassF1Score(MulticlassStatScores):
    """F1 score of a multiclass task, per class, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassF1Score
        >>> m = MulticlassF1Score(num_classes=3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7778)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(1.0, self.zero_division), multilabel=False)


class MulticlassSpecificity(MulticlassStatScores):
    """Specificity of a multiclass task, per class ``tn / (tn + fp)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassSpecificity
        >>> m = MulticlassSpecificity(num_classes=3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.6667, 1.0000])
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _specificity, multilabel=False)


# -- multilabel --------------------------------------------------------------


class _MultilabelCounts(Metric):
    """Per-label counts of a multilabel task: the state, and the options ``update`` reads.

    Every public multilabel stat-score metric inherits ``update`` from here, so
    metrics differing only in ``average``, ``beta`` or ``zero_division`` share it.
    """

    num_labels: int = static()
    threshold: float = static(default=0.5)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    tp: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    fp: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    tn: torch.Tensor = state("sum", default=0)  # shaped in __post_init__
    fn: torch.Tensor = state("sum", default=0)  # shaped in __post_init__

    def __post_init__(self) -> None:
        check_int(self, "num_labels", 2)
        check_threshold(self)
        check_ignore_index(self)
        check_bool(self, "validate_args")
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


class MultilabelStatScores(_MultilabelCounts):
    """Counts ``[tp, fp, tn, fn, support]`` per label, averaged over labels as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelStatScores
        >>> m = MultilabelStatScores(num_labels=3, average="none")
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


class MultilabelAccuracy(MultilabelStatScores):
    """Accuracy of a multilabel task, per label ``(tp + tn) / all``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAccuracy
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelAccuracy(num_labels=3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _accuracy, multilabel=True)


class MultilabelPrecision(MultilabelStatScores):
    """Precision of a multilabel task, per label ``tp / (tp + fp)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelPrecision
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelPrecision(num_labels=3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _precision(self.zero_division), multilabel=True)


class MultilabelRecall(MultilabelStatScores):
    """Recall of a multilabel task, per label ``tp / (tp + fn)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRecall
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelRecall(num_labels=3, average="micro")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _recall(self.zero_division), multilabel=True)


class MultilabelFBetaScore(MultilabelStatScores):
    """F-beta score of a multilabel task, per label, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelFBetaScore
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelFBetaScore(num_labels=3, beta=0.5, average="none")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor([1., 1., 0.])
    """

    beta: float = static(default=1.0)
    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_beta(self)
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(self.beta, self.zero_division), multilabel=True)


class MultilabelF1Score(MultilabelStatScores):
    """F1 score of a multilabel task, per label, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelF1Score
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelF1Score(num_labels=3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    zero_division: float = static(default=0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_zero_division(self)

    def compute(self) -> torch.Tensor:
        return _averaged(self, _fbeta(1.0, self.zero_division), multilabel=True)


class MultilabelSpecificity(MultilabelStatScores):
    """Specificity of a multilabel task, per label ``tn / (tn + fp)``, averaged as ``average`` says.

    Example:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelSpecificity
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelSpecificity(num_labels=3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        return _averaged(self, _specificity, multilabel=True)
