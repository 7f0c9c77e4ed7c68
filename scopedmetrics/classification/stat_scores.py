"""Stat-score metrics: true/false positive/negative counts, and the scores made of them.

Names, positional order, arguments and input conventions follow TorchMetrics
(``BinaryStatScores``, ``MulticlassPrecision``, ...), with
``multidim_average="global"`` only.

Every score holds its counts as one nested metric, ``stats``: a
``BinaryCounts``, ``MulticlassCounts`` or ``MultilabelCounts`` configured with
the options ``update`` reads (``threshold``, ``num_classes``, ``top_k``,
``num_labels``, ``ignore_index``, ``multidim_average``, ``validate_args``) and
nothing else. Its ``update`` is the score's (``sm.delegate``), so accuracy,
precision, recall, F1 and the rest of one task and configuration hold equal
counts by construction, and a ``Collection`` of them counts each batch once.
The compute-only options (``average``, ``zero_division``, ``beta``) live on
the score. The counts are int64 ``"sum"`` states, so any split of the data
reduces to the same counts.

The task x score grid is thin named variants: a class per task
(``_BinaryScore``, ...: the options, the counts, what accuracy means there)
and a class per score (``_Precision``, ...: the formula), joined once per
public name. Every class takes ``zero_division``, as in TorchMetrics, where
only precision, recall, F-beta and F1 use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import torch

from scopedmetrics._kernels import bincount, class_counts
from scopedmetrics.classification.inputs import (
    binary_labels,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    check_threshold,
    config_error,
    input_error,
    multiclass_labels,
    multilabel_labels,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric, delegate
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)

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


# -- configuration checks ------------------------------------------------------------


def check_zero_division(m: Metric) -> None:
    """Refuse a ``zero_division`` other than 0 or 1; store it as a float, so ``0`` and ``0.0`` configure alike.

    Configuration is compared by exact value (``merge``, reductions), where ``0`` is not ``0.0``.
    """
    check_one_of(m, "zero_division", (0, 1))
    object.__setattr__(m, "zero_division", float(m.zero_division))  # type: ignore[attr-defined]


def _check_common(m: Any) -> None:
    """The options every task's counts take besides the task's own."""
    if m.multidim_average != "global":
        raise config_error(m, "multidim_average", "'global' (per-sample 'samplewise' scores are not supported)")
    check_ignore_index(m)
    check_bool(m, "validate_args")


def _check_binary(m: Any) -> None:
    check_threshold(m)
    _check_common(m)


def _check_multiclass(m: Any) -> None:
    check_int(m, "top_k", 1)
    if m.num_classes is None:
        if m.top_k > 1:
            raise config_error(m, "top_k", "1 when num_classes is None")
    else:
        check_int(m, "num_classes", 2)
        if m.top_k > m.num_classes:
            raise config_error(m, "top_k", f"<= num_classes={m.num_classes}")
    _check_common(m)


def _check_multilabel(m: Any) -> None:
    check_int(m, "num_labels", 2)
    check_threshold(m)
    _check_common(m)


# -- nested counts: how a metric holds the state another metric counts -------------------


def counts_of(m: Any) -> Metric:
    """The counting metric ``m`` holds (``m._counts``), configured with those options of ``m`` that it takes.

    Examples:
        >>> from scopedmetrics.classification import MulticlassF1Score
        >>> counts = counts_of(MulticlassF1Score(3, average="micro", zero_division=1))
        >>> type(counts).__name__, counts.num_classes, counts.counts.shape
        ('MulticlassCounts', 3, torch.Size([3, 3]))
    """
    cls = m._counts
    return cls(**{n: getattr(m, n) for n in cls._layout.init_statics})  # type: ignore[no-any-return]


def delegated(field: str) -> Callable[..., Any]:
    """An ``update`` that folds the batch into the counts held in state ``field``, as ``sm.delegate(field)`` does.

    It runs the counts' own update (their ``_fold``) with this metric as the
    owner of the checks, so a refusal names the metric the caller holds
    (``"MulticlassAccuracy.update: argument ..."``), also as the asynchronous
    assert of a compiled update. It carries ``sm.delegate``'s mark, so a
    ``Collection`` runs the counts' ``update`` once for every member holding
    equal counts (a refusal there names the counts, ``"MulticlassCounts.update"``).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryRecall
        >>> BinaryRecall().update(torch.tensor([0.2]), torch.tensor([3]))
        Traceback (most recent call last):
        ...
        ValueError: BinaryRecall.update: argument `target` has values outside [0, 1]: [3]
    """
    mark = delegate(field)

    def update(self: Metric, *args: Any, **kwargs: Any) -> Metric:
        return self._rebuild({field: self.__dict__[field]._fold(self, *args, **kwargs)})  # replace, unchecked

    update.__dict__.update(mark.__dict__)  # sm.delegate's mark: a Collection updates the nested counts once
    update.__doc__ = mark.__doc__
    return update


# -- the counts of each task ---------------------------------------------------------


class BinaryCounts(Metric):
    """``tp``, ``fp``, ``tn``, ``fn`` of a binary task: the ``stats`` every binary stat score holds.

    Its configuration is what ``update`` reads and nothing else, so every
    binary score of one ``threshold``, ``ignore_index`` and ``validate_args``
    holds an equal one. ``compute`` gives ``[tp, fp, tn, fn, support]``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.stat_scores import BinaryCounts
        >>> m = BinaryCounts().update(torch.tensor([0.1, 0.9, 0.8, 0.3]), torch.tensor([0, 1, 0, 1]))
        >>> m.tp, m.fp, m.tn, m.fn
        (tensor(1), tensor(1), tensor(1), tensor(1))
    """

    tp: torch.Tensor = state("sum", default=0)
    fp: torch.Tensor = state("sum", default=0)
    tn: torch.Tensor = state("sum", default=0)
    fn: torch.Tensor = state("sum", default=0)
    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check_binary(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, ...)``."""
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        p, t, keep = binary_labels(owner, preds, target)
        # one bincount of 2 * (not predicted) + (missed): 0 tp, 1 fp, 2 tn, 3 fn; 4 drops an ignored sample
        index = (~p).long() * 2 + (p != t)
        counts = bincount(index, 4, keep)
        old = torch.stack([self.tp, self.fp, self.tn, self.fn])  # type: ignore[attr-defined]
        tp, fp, tn, fn = (old + counts).unbind(0)
        return self.replace(tp=tp, fp=fp, tn=tn, fn=fn)

    def compute(self) -> torch.Tensor:
        return torch.stack([self.tp, self.fp, self.tn, self.fn, self.tp + self.fn])


class MulticlassCounts(Metric):
    """Per-class counts of a multiclass task: the ``stats`` every multiclass stat score holds.

    The state is one ``(C, 3)`` int64 ``counts``: per class ``tp``, ``fp`` and
    the support (``tp + fn``); ``fn`` and ``tn`` follow from them, since every
    sample has exactly one target. One leaf instead of four is what keeps a
    small-batch update to a few tensor ops, and a class's three counts side by
    side is what lets the counting refuse every label out of range
    (``class_counts``). With ``num_classes=None`` (micro averages only)
    ``counts`` is ``(1, 3)``: the hits, the misses and the samples, summed over
    whatever classes the data holds. ``compute`` gives ``[tp, fp, tn, fn,
    support]`` per class, ``(C, 5)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.stat_scores import MulticlassCounts
        >>> m = MulticlassCounts(num_classes=3).update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0]))
        >>> m.counts
        tensor([[1, 0, 2],
                [1, 1, 1],
                [1, 0, 1]])
        >>> m.tn
        tensor([2, 2, 3])
    """

    num_classes: int | None = static(default=None)
    top_k: int = static(default=1)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    counts: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_classes or 1, 3, dtype=torch.long))

    def __post_init__(self) -> None:
        _check_multiclass(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``.

        Scores become labels by argmax (see ``multiclass_labels`` for ``top_k``).
        """
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        c = self.num_classes  # type: ignore[attr-defined]
        p, t, keep = multiclass_labels(owner, preds, target)
        if c is None:
            return self._rebuild({"counts": _micro_counts(self.counts, p, t, keep)})  # type: ignore[attr-defined]
        scored = preds.is_floating_point() and preds.shape[1] <= c  # an argmax over at most c scores: p in [0, c)
        try:
            counts = class_counts(self.counts, p, t, keep, c, scored=scored)  # type: ignore[attr-defined]
        except IndexError:  # only reachable with validate_args=False
            raise input_error(owner, "preds` or `target", f"holds a label outside [0, {c})") from None
        return self._rebuild({"counts": counts})  # replace, unchecked

    def compute(self) -> torch.Tensor:
        if self.num_classes is None:
            raise ValueError("MulticlassCounts.compute: with num_classes=None the counts are not per class")
        return torch.stack([self.tp, self.fp, self.tn, self.fn, self.counts[:, 2]], dim=-1)

    @property
    def tp(self) -> torch.Tensor:
        """True positives per class."""
        return self.counts[:, 0]

    @property
    def fp(self) -> torch.Tensor:
        """False positives per class."""
        return self.counts[:, 1]

    @property
    def fn(self) -> torch.Tensor:
        """False negatives per class: support minus true positives."""
        return self.counts[:, 2] - self.counts[:, 0]

    @property
    def tn(self) -> torch.Tensor:
        """True negatives per class: the samples neither labelled nor predicted as the class."""
        support = self.counts[:, 2]
        return support.sum() - support - self.counts[:, 1]


def _micro_counts(counts: torch.Tensor, p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """``(1, 3)`` counts (hits, misses, samples) plus those of a batch of labels, for ``num_classes=None``.

    Examples:
        >>> import torch
        >>> _micro_counts(torch.zeros(1, 3, dtype=torch.long), torch.tensor([7, 1, 0]), torch.tensor([7, 2, 0]), None)
        tensor([[2, 1, 3]])
    """
    hits, misses = bincount((p != t).long(), 2, keep).unbind(0)
    return counts + torch.stack([hits, misses, hits + misses]).view(1, 3)


def _label_zeros(m: Any) -> torch.Tensor:
    return torch.zeros(m.num_labels, dtype=torch.long)


class MultilabelCounts(Metric):
    """Per-label ``tp``, ``fp``, ``tn``, ``fn`` of a multilabel task: the ``stats`` every multilabel score holds.

    ``compute`` gives ``[tp, fp, tn, fn, support]`` per label, ``(L, 5)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification.stat_scores import MultilabelCounts
        >>> preds, target = torch.tensor([[0.9, 0.2], [0.1, 0.7]]), torch.tensor([[1, 1], [0, 1]])
        >>> m = MultilabelCounts(num_labels=2).update(preds, target)
        >>> m.tp, m.fn
        (tensor([1, 1]), tensor([0, 1]))
    """

    num_labels: int = static()
    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    tp: torch.Tensor = state("sum", init=_label_zeros)
    fp: torch.Tensor = state("sum", init=_label_zeros)
    tn: torch.Tensor = state("sum", init=_label_zeros)
    fn: torch.Tensor = state("sum", init=_label_zeros)

    def __post_init__(self) -> None:
        _check_multilabel(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, L, ...)``."""
        return self._fold(self, preds, target)  # type: ignore[attr-defined, no-any-return]

    def _fold(self: _M, owner: Metric, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """``update``, with the checks named after ``owner`` (this, or a metric holding it, of its configuration)."""
        p, t, keep = multilabel_labels(owner, preds, target)
        pos, neg = (t, ~t) if keep is None else (keep & t, keep & ~t)
        return self.replace(
            tp=self.tp + (pos & p).sum(0),  # type: ignore[attr-defined]
            fp=self.fp + (neg & p).sum(0),  # type: ignore[attr-defined]
            tn=self.tn + (neg & ~p).sum(0),  # type: ignore[attr-defined]
            fn=self.fn + (pos & ~p).sum(0),  # type: ignore[attr-defined]
        )

    def compute(self) -> torch.Tensor:
        return torch.stack([self.tp, self.fp, self.tn, self.fn, self.tp + self.fn], dim=-1)


# -- the scored base ---------------------------------------------------------------


class _StatScore(Metric):
    """A score of a task's counts, which it holds as the nested metric ``stats``; ``update`` folds into them.

    A task class (``_BinaryScore``, ...) adds the options and names the counts;
    a score class (``_Precision``, ...) adds ``_score``, the per-class formula.
    ``compute`` scores the counts and averages over classes as ``average`` says.
    """

    _counts: ClassVar[type[Metric]]  # the task's counting metric, built by ``counts_of``
    _multilabel: ClassVar[bool] = False  # macro averages every label (none is ever left out)
    _top_k_support: ClassVar[bool] = False  # with top_k > 1, macro leaves out classes without support
    _micro_without_classes: ClassVar[bool] = False  # multiclass: num_classes=None works with average="micro"

    update = delegated("stats")

    if TYPE_CHECKING:  # fields of every task class, declared there after its options (for the field order)
        @property
        def stats(self) -> Any: ...

        @property
        def zero_division(self) -> float: ...

    def __post_init__(self) -> None:
        check_zero_division(self)

    @property
    def tp(self) -> torch.Tensor:
        """True positives (per class or label, or one count for a binary task)."""
        return self.stats.tp  # type: ignore[no-any-return]

    @property
    def fp(self) -> torch.Tensor:
        """False positives."""
        return self.stats.fp  # type: ignore[no-any-return]

    @property
    def tn(self) -> torch.Tensor:
        """True negatives."""
        return self.stats.tn  # type: ignore[no-any-return]

    @property
    def fn(self) -> torch.Tensor:
        """False negatives."""
        return self.stats.fn  # type: ignore[no-any-return]

    def _accuracy(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        """Accuracy of binary decisions, ``(tp + tn) / all`` (a multiclass task overrides it)."""
        return safe_divide(tp + tn, tp + fp + tn + fn)

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def compute(self) -> torch.Tensor:
        return _averaged(self)


def _averaged(m: _StatScore) -> torch.Tensor:
    """``m._score`` of ``m``'s counts, averaged over classes as ``m.average`` says (``"binary"``: one count).

    ``micro`` scores the summed counts; ``macro`` averages the per-class
    scores, leaving out (multiclass only) classes that were neither predicted
    nor present, as scikit-learn does; ``weighted`` weights them by support.
    With ``top_k > 1``, ``macro`` of scores marked ``_top_k_support`` leaves out
    the classes without support instead (TorchMetrics' rule for accuracy,
    precision, recall and negative predictive value).
    """
    tp, fp, tn, fn = m.tp, m.fp, m.tn, m.fn
    average = getattr(m, "average", "binary")
    if average in ("binary", "micro"):
        return m._score(tp.sum(), fp.sum(), tn.sum(), fn.sum())
    per_class = m._score(tp, fp, tn, fn)
    if average in ("none", None):
        return per_class
    if average == "weighted":
        weights = (tp + fn).float()
        if not bool(weights.sum() > 0):  # no support anywhere: the plain mean, as scikit-learn falls back to
            weights = torch.ones_like(per_class)
    elif m._multilabel:
        weights = torch.ones_like(per_class)
    elif m._top_k_support and getattr(m, "top_k", 1) > 1:
        weights = (tp + fn != 0).float()
    else:
        weights = (tp + fp + fn != 0).float()
    return safe_divide((weights * per_class).sum(), weights.sum())


def _stack(m: Any) -> torch.Tensor:
    """``[tp, fp, tn, fn, support]`` along the last dim, averaged over classes as ``m.average`` says."""
    res = torch.stack([m.tp, m.fp, m.tn, m.fn, m.tp + m.fn], dim=-1)
    average = getattr(m, "average", "binary")
    if average == "micro":
        return res.sum(0)
    if average == "macro":
        return res.float().mean(0)
    if average == "weighted":
        weights = safe_divide(m.tp + m.fn, (m.tp + m.fn).sum())
        return (res * weights[:, None]).sum(0)
    return res


# -- the tasks ---------------------------------------------------------------------


class _BinaryScore(_StatScore):
    """The options of a binary task; its counts are a ``BinaryCounts``."""

    _counts = BinaryCounts

    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)
    stats: Any = state(init=counts_of)  # a nested counting metric: it declares its own ops

    def __post_init__(self) -> None:
        _check_binary(self)
        super().__post_init__()


class _MulticlassScore(_StatScore):
    """The options of a multiclass task; its counts are a ``MulticlassCounts``; accuracy is per class recall."""

    _counts = MulticlassCounts

    num_classes: int | None = static(default=None)
    top_k: int = static(default=1)
    average: str | None = static(default="macro")
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)
    stats: Any = state(init=counts_of)  # a nested counting metric: it declares its own ops

    def __post_init__(self) -> None:
        _check_multiclass(self)
        check_one_of(self, "average", AVERAGES)
        if self.num_classes is None and not self._micro_without_classes:
            raise config_error(self, "num_classes", "an integer >= 2 (true negatives need the number of classes)")
        if self.num_classes is None and self.average != "micro":
            raise config_error(self, "num_classes", "an integer >= 2 unless average='micro'")
        super().__post_init__()

    def _accuracy(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        """Per class the fraction of its samples predicted right, ``tp / (tp + fn)``; micro: the fraction correct."""
        return safe_divide(tp, tp + fn)


class _MultilabelScore(_StatScore):
    """The options of a multilabel task; its counts are a ``MultilabelCounts``."""

    _counts = MultilabelCounts
    _multilabel = True

    num_labels: int = static()
    threshold: float = static(default=0.5)
    average: str | None = static(default="macro")
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    zero_division: float = static(default=0.0)
    stats: Any = state(init=counts_of)  # a nested counting metric: it declares its own ops

    def __post_init__(self) -> None:
        _check_multilabel(self)
        check_one_of(self, "average", AVERAGES)
        super().__post_init__()


# -- the scores --------------------------------------------------------------------


class _Counted(_StatScore):
    """The counts themselves, ``[tp, fp, tn, fn, support]``, averaged over classes (macro: a plain mean)."""

    def compute(self) -> torch.Tensor:
        return _stack(self)


class _Accuracy(_StatScore):
    _top_k_support = True
    _micro_without_classes = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return self._accuracy(tp, fp, tn, fn)


class _Hamming(_StatScore):
    _micro_without_classes = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return 1 - self._accuracy(tp, fp, tn, fn)


class _Precision(_StatScore):
    _top_k_support = True
    _micro_without_classes = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return safe_divide(tp, tp + fp, self.zero_division)


class _Recall(_StatScore):
    _top_k_support = True
    _micro_without_classes = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return safe_divide(tp, tp + fn, self.zero_division)


class _FBeta(_StatScore):
    _micro_without_classes = True

    _: KW_ONLY
    beta: float = static()  # required, as in TorchMetrics

    def __post_init__(self) -> None:
        super().__post_init__()
        b = self.beta
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not 0 < b < math.inf:
            raise config_error(self, "beta", "a finite number > 0")

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        # (1 + b²) tp / ((1 + b²) tp + b² fn + fp), divided through by 1 + b²: (1 + b²) tp overflowed float32
        # from beta = 1e19 (NaN where the value tends to the recall)
        b2 = self.beta * self.beta
        return safe_divide(tp, tp + (b2 / (1 + b2)) * fn + (1 / (1 + b2)) * fp, self.zero_division)


class _F1(_StatScore):
    _micro_without_classes = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return safe_divide(2 * tp, 2 * tp + fn + fp, self.zero_division)


class _Specificity(_StatScore):
    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return safe_divide(tn, tn + fp)


class _NegativePredictiveValue(_StatScore):
    _top_k_support = True

    def _score(self, tp: torch.Tensor, fp: torch.Tensor, tn: torch.Tensor, fn: torch.Tensor) -> torch.Tensor:
        return safe_divide(tn, tn + fn)  # TorchMetrics 1.9 takes zero_division here but does not pass it on


# TorchMetrics' positional orders (1.9); F1 and F-beta add ``zero_division``, F-beta starts with ``beta``.
_BINARY = ("threshold", "multidim_average", "ignore_index", "validate_args")
_MULTICLASS = ("num_classes", "top_k", "average", "multidim_average", "ignore_index", "validate_args")
_MULTILABEL = ("num_labels", "threshold", "average", "multidim_average", "ignore_index", "validate_args")


# -- binary ------------------------------------------------------------------


@positional(*_BINARY)
class BinaryStatScores(_Counted, _BinaryScore):
    """Counts ``[tp, fp, tn, fn, support]`` of a binary task.

    ``preds`` are labels in {0, 1}, or probabilities/logits thresholded at ``threshold``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryStatScores
        >>> m = BinaryStatScores().update(torch.tensor([0.1, 0.9, 0.8, 0.3]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor([1, 1, 1, 1, 2])
    """


@positional(*_BINARY)
class BinaryAccuracy(_Accuracy, _BinaryScore):
    """Accuracy of a binary task: ``(tp + tn) / (tp + fp + tn + fn)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> BinaryAccuracy().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.7500)
    """


@positional(*_BINARY)
class BinaryHammingDistance(_Hamming, _BinaryScore):
    """Hamming distance of a binary task: the fraction of wrong predictions, ``1 - accuracy``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryHammingDistance
        >>> BinaryHammingDistance().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.2500)
    """


@positional(*_BINARY)
class BinaryPrecision(_Precision, _BinaryScore):
    """Precision of a binary task: ``tp / (tp + fp)``, ``zero_division`` when nothing is predicted positive.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryPrecision
        >>> BinaryPrecision().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.6667)
    """


@positional(*_BINARY)
class BinaryRecall(_Recall, _BinaryScore):
    """Recall (sensitivity) of a binary task: ``tp / (tp + fn)``, ``zero_division`` without positives.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryRecall
        >>> BinaryRecall().update(torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """


@positional("beta", *_BINARY, "zero_division")
class BinaryFBetaScore(_FBeta, _BinaryScore):
    """F-beta score of a binary task: ``(1 + b²) tp / ((1 + b²) tp + b² fn + fp)``; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryFBetaScore
        >>> m = BinaryFBetaScore(2.0).update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor(0.9091)
    """


@positional(*_BINARY, "zero_division")
class BinaryF1Score(_F1, _BinaryScore):
    """F1 score of a binary task: the harmonic mean of precision and recall.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryF1Score
        >>> BinaryF1Score().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.8000)
    """


@positional(*_BINARY)
class BinarySpecificity(_Specificity, _BinaryScore):
    """Specificity of a binary task: ``tn / (tn + fp)`` (0 without negatives; ``zero_division`` is unused).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinarySpecificity
        >>> BinarySpecificity().update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
    """


@positional(*_BINARY)
class BinaryNegativePredictiveValue(_NegativePredictiveValue, _BinaryScore):
    """Negative predictive value of a binary task: ``tn / (tn + fn)`` (0 when nothing is predicted negative).

    As in TorchMetrics 1.9, ``zero_division`` is taken but unused.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryNegativePredictiveValue
        >>> m = BinaryNegativePredictiveValue().update(torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1]))
        >>> m.compute()
        tensor(0.5000)
    """


# -- multiclass --------------------------------------------------------------


@positional(*_MULTICLASS)
class MulticlassStatScores(_Counted, _MulticlassScore):
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


@positional(*_MULTICLASS)
class MulticlassAccuracy(_Accuracy, _MulticlassScore):
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


@positional(*_MULTICLASS)
class MulticlassHammingDistance(_Hamming, _MulticlassScore):
    """Hamming distance of a multiclass task: per class ``1 - tp / (tp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassHammingDistance
        >>> m = MulticlassHammingDistance(3, average="micro")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.2500)
    """


@positional(*_MULTICLASS)
class MulticlassPrecision(_Precision, _MulticlassScore):
    """Precision of a multiclass task, per class ``tp / (tp + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassPrecision
        >>> m = MulticlassPrecision(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.5000, 1.0000])
    """


@positional(*_MULTICLASS)
class MulticlassRecall(_Recall, _MulticlassScore):
    """Recall of a multiclass task, per class ``tp / (tp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassRecall
        >>> m = MulticlassRecall(3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.8333)
    """


@positional("beta", *_MULTICLASS, "zero_division")
class MulticlassFBetaScore(_FBeta, _MulticlassScore):
    """F-beta score of a multiclass task, per class, averaged as ``average`` says; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassFBetaScore
        >>> m = MulticlassFBetaScore(2.0, 3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7963)
    """


@positional(*_MULTICLASS, "zero_division")
class MulticlassF1Score(_F1, _MulticlassScore):
    """F1 score of a multiclass task, per class, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassF1Score
        >>> m = MulticlassF1Score(3)
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor(0.7778)
    """


@positional(*_MULTICLASS)
class MulticlassSpecificity(_Specificity, _MulticlassScore):
    """Specificity of a multiclass task, per class ``tn / (tn + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassSpecificity
        >>> m = MulticlassSpecificity(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([1.0000, 0.6667, 1.0000])
    """


@positional(*_MULTICLASS)
class MulticlassNegativePredictiveValue(_NegativePredictiveValue, _MulticlassScore):
    """Negative predictive value of a multiclass task, per class ``tn / (tn + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassNegativePredictiveValue
        >>> m = MulticlassNegativePredictiveValue(3, average="none")
        >>> m.update(torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])).compute()
        tensor([0.6667, 1.0000, 1.0000])
    """


# -- multilabel --------------------------------------------------------------


@positional(*_MULTILABEL)
class MultilabelStatScores(_Counted, _MultilabelScore):
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


@positional(*_MULTILABEL)
class MultilabelAccuracy(_Accuracy, _MultilabelScore):
    """Accuracy of a multilabel task, per label ``(tp + tn) / all``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAccuracy
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelAccuracy(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """


@positional(*_MULTILABEL)
class MultilabelHammingDistance(_Hamming, _MultilabelScore):
    """Hamming distance of a multilabel task: per label the fraction of wrong predictions, averaged.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelHammingDistance
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelHammingDistance(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.3333)
    """


@positional(*_MULTILABEL)
class MultilabelPrecision(_Precision, _MultilabelScore):
    """Precision of a multilabel task, per label ``tp / (tp + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelPrecision
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelPrecision(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """


@positional(*_MULTILABEL)
class MultilabelRecall(_Recall, _MultilabelScore):
    """Recall of a multilabel task, per label ``tp / (tp + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRecall
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelRecall(3, average="micro")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """


@positional("beta", *_MULTILABEL, "zero_division")
class MultilabelFBetaScore(_FBeta, _MultilabelScore):
    """F-beta score of a multilabel task, per label, averaged as ``average`` says; ``beta`` comes first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelFBetaScore
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelFBetaScore(0.5, 3, average="none")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor([1., 1., 0.])
    """


@positional(*_MULTILABEL, "zero_division")
class MultilabelF1Score(_F1, _MultilabelScore):
    """F1 score of a multilabel task, per label, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelF1Score
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelF1Score(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """


@positional(*_MULTILABEL)
class MultilabelSpecificity(_Specificity, _MultilabelScore):
    """Specificity of a multilabel task, per label ``tn / (tn + fp)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelSpecificity
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> MultilabelSpecificity(3).update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor(0.6667)
    """


@positional(*_MULTILABEL)
class MultilabelNegativePredictiveValue(_NegativePredictiveValue, _MultilabelScore):
    """Negative predictive value of a multilabel task, per label ``tn / (tn + fn)``, averaged as ``average`` says.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelNegativePredictiveValue
        >>> preds = torch.tensor([[0.9, 0.2, 0.8], [0.1, 0.7, 0.3]])
        >>> m = MultilabelNegativePredictiveValue(3, average="none")
        >>> m.update(preds, torch.tensor([[1, 0, 0], [0, 1, 1]])).compute()
        tensor([1., 1., 0.])
    """


# -- exact match -------------------------------------------------------------


@positional("num_classes", "multidim_average", "ignore_index", "validate_args")
class MulticlassExactMatch(Metric):
    """Exact match of a multiclass task: the fraction of samples whose every position ``...`` is predicted right.

    ``target`` is ``(N, ...)``, ``preds`` labels of that shape or scores ``(N, C, ...)``; a position
    whose target is ``ignore_index`` counts as right (TorchMetrics' convention), so a sample whose
    every position is ignored is a match.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassExactMatch
        >>> m = MulticlassExactMatch(3).update(torch.tensor([[0, 1], [1, 1]]), torch.tensor([[0, 1], [1, 2]]))
        >>> m.compute()
        tensor(0.5000)
    """

    num_classes: int = static()
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    correct: torch.Tensor = state("sum", default=0)
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_int(self, "num_classes", 2)
        _check_common(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``target`` labels ``(N, ...)``, ``preds`` labels or scores ``(N, C, ...)``."""
        p, t, keep = multiclass_labels(self, preds, target)
        n = target.shape[0] if target.ndim else 1
        right = p == t if keep is None else (p == t) | ~keep
        correct = right.reshape(n, right.shape[0] // n if n else 0).all(1).sum()
        return self.replace(correct=self.correct + correct, total=self.total + n)  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return safe_divide(self.correct, self.total)


@positional("num_labels", "threshold", "multidim_average", "ignore_index", "validate_args")
class MultilabelExactMatch(Metric):
    """Exact match of a multilabel task: the fraction of rows whose every label is predicted right.

    ``preds`` and ``target`` are ``(N, L, ...)``; each of the ``N x ...`` rows of ``L`` labels is
    one sample (as in TorchMetrics), and a label whose target is ``ignore_index`` counts as right.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelExactMatch
        >>> m = MultilabelExactMatch(2).update(torch.tensor([[0.1, 0.9], [0.8, 0.7]]), torch.tensor([[0, 1], [1, 0]]))
        >>> m.compute()
        tensor(0.5000)
    """

    num_labels: int = static()
    threshold: float = static(default=0.5)
    multidim_average: str = static(default="global")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    correct: torch.Tensor = state("sum", default=0)
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        _check_multilabel(self)

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` of the same shape ``(N, L, ...)``."""
        p, t, keep = multilabel_labels(self, preds, target)
        right = p == t if keep is None else (p == t) | ~keep
        total = self.total + p.shape[0]  # type: ignore[attr-defined]
        return self.replace(correct=self.correct + right.all(1).sum(), total=total)  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return safe_divide(self.correct, self.total)
