"""Curve metrics: ROC and precision-recall curves, AUROC and average precision.

Class names, arguments (in TorchMetrics' positional order), input conventions
and return values follow TorchMetrics. ``thresholds`` picks one of two state
layouts, fixed by the configuration alone:

* exact (``thresholds=None``): the scores and labels themselves, in the ``cat``
  states ``preds`` (float32) and ``target`` (uint8 0/1 labels for binary, int8
  for multilabel with -1 for ignored entries, int64 class indices for
  multiclass). Memory grows with the
  samples. Curves step over every distinct score and a group of tied scores is
  one step, as in scikit-learn.
* binned (an int ``n`` for ``linspace(0, 1, n)``, or a non-decreasing list or
  1-d tensor of ``T`` thresholds): ``counts``, an int64 ``sum`` state of shape
  ``(T + 1, 2)`` (binary) or ``(C, T + 1, 2)``: ``counts[..., k, y]`` counts the
  samples of label ``y`` whose score reaches (``>=``) exactly ``k`` thresholds.
  Memory is constant; ``update`` is one ``bincount`` and ``compute`` turns the
  counts into per-threshold confusion counts with a reversed cumulative sum.

The layout not in use stays empty (``counts`` of shape ``(0,)``, or ``preds``
and ``target`` with no rows), so both modes have the same fields and every rank
holds the same dtypes and trailing shapes whatever its data.
Both layouts are declared at the fields (``state(..., init=...)``, shaped once
the configuration is checked); ``thresholds`` itself is checked and normalized
(a list or tensor becomes a tuple of floats) on its way into the constructor,
so the frozen metric is never written after it is built.

Degenerate data gets TorchMetrics' values, never an error: with only one class
present (or no samples at all) AUROC is 0, since the missing rate is taken as
0; with no positives AP is 0 and an exact PR curve has recall 1; ROC rates with
a zero denominator are 0; binned precision and recall with a zero denominator
are NaN (AP counts them as 0). Per-class values of multiclass and multilabel
metrics follow the same rules (one-vs-rest), so an absent class scores 0 and
counts in a macro average. Scores are cast to float32, and ``preds`` outside
[0, 1] anywhere in a batch are taken for logits (sigmoid, or softmax over dim 1
for multiclass), decided per batch like TorchMetrics: binary and multiclass
curves decide on the samples they keep (``ignore_index`` excluded), multilabel
curves on the whole batch. Binary curves take TorchMetrics' ``normalization``:
``"sigmoid"`` (that rule, the default) or ``None`` (scores used as given).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import Any, TypeVar, Union

import torch
from torch import Tensor

from scopedmetrics._kernels import ranked, take, tally
from scopedmetrics.classification.inputs import (
    _binary_checks,
    _multiclass_checks,
    _multilabel_checks,
    _no_nan,
    _probabilities,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    config_error,
    finite_scores,
    not_ignored,
    widened,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import append, state, static

Curve = tuple[Tensor, Tensor, Tensor]
B = TypeVar("B", bound="_BinaryCurve")
MC = TypeVar("MC", bound="_MulticlassCurve")
ML = TypeVar("ML", bound="_MultilabelCurve")
Curves = Union[Curve, tuple[list[Tensor], list[Tensor], list[Tensor]]]  # noqa: UP007 (a runtime alias)
ColumnFn = Callable[[Tensor, Tensor, Union[Tensor, None]], Tensor]  # noqa: UP007 (a runtime alias)


# -- configuration -------------------------------------------------------------


def _normalized_thresholds(name: str, t: Any) -> int | tuple[float, ...] | None:
    """``thresholds`` as the static it is stored as: ``None``, an int, or a tuple of floats; bad values refused.

    A tuple of floats compares with ``==`` and pickles, as a static field must,
    so a list and a tensor of the same values make the same configuration.
    """
    what = f"{name}: argument `thresholds` must be None, an integer >= 2, or a non-empty 1-d list or tensor"
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, (int, list, tuple, Tensor)):
        raise TypeError(f"{what}, got {type(t).__name__}")
    if isinstance(t, int):
        if t < 2:
            raise ValueError(f"{what}, got {t}")
        return t
    if isinstance(t, Tensor):
        values = t.detach().cpu()
    else:
        try:
            values = torch.tensor(t, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{what} of numbers, got {t!r}") from None
    if values.ndim != 1 or values.numel() == 0:
        raise ValueError(f"{what}, got shape {tuple(values.shape)}")
    if values.is_complex() or values.dtype == torch.bool:
        raise TypeError(f"{what} of real numbers, got {values.dtype}")
    values = values.to(torch.float64)
    if not bool(torch.isfinite(values).all()):
        raise ValueError(f"{name}: argument `thresholds` must be finite, got {values.tolist()}")
    used = values.to(torch.float32)  # what the scores are compared with
    if bool((used[1:] < used[:-1]).any()):
        raise ValueError(f"{name}: argument `thresholds` must be sorted in increasing order, got {values.tolist()}")
    return tuple(values.tolist())


def _normalizing_thresholds(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a curve class's ``__init__``: ``thresholds`` is checked and normalized before the frozen instance is built.

    The argument is converted on its way in (``thresholds`` is keyword-only in
    every curve class), so the dataclass stores the normalized value once and
    nothing is written into the instance after it is built.
    """

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        if "thresholds" in kwargs:
            kwargs["thresholds"] = _normalized_thresholds(type(self).__name__, kwargs["thresholds"])
        init(self, *args, **kwargs)

    return wrapper


def _check_config(owner: Any, width: str | None) -> None:
    """Check the configuration every curve shares (``thresholds`` is checked on its way in)."""
    if width is not None:
        check_int(owner, width, 2)
    check_ignore_index(owner)
    check_bool(owner, "validate_args")


def _rows(m: Any) -> tuple[int, ...]:
    """The per-sample width of a curve's states: ``(C,)`` or ``(L,)``, ``()`` for binary."""
    width = getattr(m, "num_classes", None) or getattr(m, "num_labels", None)
    return () if width is None else (width,)


def _empty_preds(m: Any) -> Tensor:
    """The exact ``preds`` state with no rows: float32 scores ``(0, ...)``."""
    return torch.empty(0, *_rows(m), dtype=torch.float32)


def _empty_counts(m: Any) -> Tensor:
    """The binned ``counts`` state, all zeros: ``(..., T + 1, 2)``, or ``(0,)`` when exact."""
    if m.thresholds is None:
        return torch.zeros(0, dtype=torch.int64)
    return torch.zeros(*_rows(m), _num_thresholds(m.thresholds) + 1, 2, dtype=torch.int64)


def _num_thresholds(thresholds: int | tuple[float, ...]) -> int:
    return thresholds if isinstance(thresholds, int) else len(thresholds)


def _threshold_values(thresholds: int | tuple[float, ...], device: torch.device) -> Tensor:
    """Make the thresholds a float32 tensor, ``linspace(0, 1, n)`` for an int like TorchMetrics."""
    if isinstance(thresholds, int):
        return torch.linspace(0, 1, thresholds, dtype=torch.float32, device=device)
    return torch.tensor(thresholds, dtype=torch.float32, device=device)


def _thr(m: Any) -> Tensor:
    """Return a binned metric's thresholds, on the device of its state."""
    return _threshold_values(m.thresholds, m.counts.device)


# -- update --------------------------------------------------------------------


def _scores(preds: Tensor, normalize: str | None, extremes: tuple[float, float] | None = None,
            keep: Tensor | None = None) -> Tensor:
    """Probabilities in at least float32 (logits go through sigmoid/softmax first), float64 kept.

    float64 stays float64: saturated probabilities (a sigmoid of logits beyond
    about 17) that float64 tells apart are one value in float32, and the exact
    curves would read them as ties. ``normalize=None`` keeps the scores as
    they are (TorchMetrics' ``normalization=None``). ``extremes`` are
    ``preds``' minimum and maximum when the caller has them already; ``keep``
    limits the choice between probabilities and logits to the kept entries.
    """
    p = widened(preds) if preds.is_floating_point() else preds.float()
    return p if normalize is None else _probabilities(p, normalize, extremes, keep)


@functools.lru_cache(maxsize=64)
def _bin_edges(thresholds: int | tuple[float, ...], device: torch.device) -> Tensor:
    """The thresholds ``update`` compares with, made once per configuration and device (never handed out)."""
    return _threshold_values(thresholds, device)


def _binned(counts: Tensor, scores: Tensor, positive: Tensor, thresholds: Any, keep: Tensor | None = None) -> Tensor:
    """``counts`` plus the batch counted by (column, number of thresholds reached, label): one ``tally``."""
    compiling = torch.compiler.is_compiling()  # a traced function makes them itself: Dynamo skips lru_cache
    thr = _threshold_values(thresholds, scores.device) if compiling else _bin_edges(thresholds, scores.device)
    index = torch.add(positive, torch.bucketize(scores.to(thr.dtype).contiguous(), thr, right=True), alpha=2)
    if scores.ndim == 2:
        index = index + torch.arange(scores.shape[1], device=scores.device) * (2 * (len(thr) + 1))
    return tally(counts, index, keep)


# -- compute: exact ------------------------------------------------------------


def _wide(x: Tensor) -> Tensor:
    """``x`` as float64 for accumulating areas (float32 where the device has no float64)."""
    return x.to(torch.float32 if x.device.type == "mps" else torch.float64)


def _distinct(scores: Tensor, positive: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Count false and true positives at each distinct score, highest first: a tie group is one step."""
    s, y, _ = ranked(scores, positive, None, values=True)
    ends = torch.nonzero(s[1:] != s[:-1]).reshape(-1)  # last row of each tie group but the final one
    if len(s):
        ends = torch.cat([ends, ends.new_tensor([len(s) - 1])])
    tps = y.cumsum(0)[ends]
    return ends + 1 - tps, tps, s[ends]


def _roc(scores: Tensor, positive: Tensor) -> Curve:
    """Exact ROC ``(fpr, tpr, thresholds)``, from the point (0, 0) at threshold 1."""
    fps, tps, thr = _distinct(scores, positive)
    zero = fps.new_zeros(1)
    fps, tps = torch.cat([zero, fps]), torch.cat([zero, tps])
    thr = torch.cat([thr.new_ones(1), thr])
    return fps / fps[-1].clamp(min=1), tps / tps[-1].clamp(min=1), thr


def _pr(scores: Tensor, positive: Tensor) -> Curve:
    """Exact ``(precision, recall, thresholds)``, thresholds increasing, ending at (1, 0)."""
    fps, tps, thr = _distinct(scores, positive)
    precision = tps / (tps + fps)
    if bool(positive.any()):
        recall = tps / tps[-1]
    else:  # no positives: recall is taken as 1, as TorchMetrics and scikit-learn do
        recall = torch.ones_like(precision)
    precision = torch.cat([precision.flip(0), precision.new_ones(1)])
    recall = torch.cat([recall.flip(0), recall.new_zeros(1)])
    return precision, recall, thr.flip(0)


def _ranked(scores: Tensor, positive: Tensor, valid: Tensor | None) -> tuple[Tensor, Tensor]:
    """Per column, cumulative true and false positives down the scores sorted high to low.

    Every member of a tie group carries the counts at the group's end, so that
    the curve through all rows is the curve through the distinct scores, with
    repeated points that add no area. The last row holds each column's totals.
    """
    n = scores.shape[0]
    s, hit, v = ranked(scores, positive, valid)
    if v is not None:
        hit = hit * v
    last = torch.ones_like(s, dtype=torch.bool)
    last[:-1] = s[1:] != s[:-1]
    rows = torch.arange(n, device=s.device).unsqueeze(1).expand_as(s)
    end = torch.where(last, rows, n).flip(0).cummin(0).values.flip(0)
    tps = take(hit.cumsum(0), end)
    seen = end + 1 if v is None else take(v.cumsum(0), end)  # rows counted down to each group's end
    return tps, seen - tps


def _by_columns(fn: ColumnFn) -> ColumnFn:
    """Run a per-column ``fn(scores, positive, valid)`` on blocks of columns, bounding the sort's memory."""

    def blocks(scores: Tensor, positive: Tensor, valid: Tensor | None) -> Tensor:
        step = max(1, _BLOCK // max(len(scores), 1))
        if scores.shape[1] <= step:
            return fn(scores, positive, valid)
        parts = []
        for i in range(0, scores.shape[1], step):
            cols = slice(i, i + step)
            parts.append(fn(scores[:, cols], positive[:, cols], None if valid is None else valid[:, cols]))
        return torch.cat(parts)

    return blocks


_BLOCK = 1 << 22  # scores sorted at once by the exact per-column metrics


@_by_columns
def _exact_auroc(scores: Tensor, positive: Tensor, valid: Tensor | None) -> Tensor:
    """Exact AUROC of every column of ``scores`` (N, C); 0 where a column lacks a class."""
    tps, fps = _ranked(scores, positive, valid)
    tpr = _wide(tps) / tps[-1:].clamp(min=1)  # the last row holds the totals
    fpr = _wide(fps) / fps[-1:].clamp(min=1)
    zero = tpr.new_zeros(1, scores.shape[1])
    return torch.trapezoid(torch.cat([zero, tpr]), torch.cat([zero, fpr]), dim=0).float()


@_by_columns
def _exact_ap(scores: Tensor, positive: Tensor, valid: Tensor | None) -> Tensor:
    """Exact average precision of every column of ``scores`` (N, C); 0 where it has no positives."""
    tps, fps = _ranked(scores, positive, valid)
    recall = _wide(tps) / tps[-1:].clamp(min=1)  # the last row holds the positives
    precision = _wide(tps) / (tps + fps).clamp(min=1)
    before = torch.cat([recall.new_zeros(1, scores.shape[1]), recall[:-1]])
    return ((recall - before) * precision).sum(0).float()


# -- compute: binned -----------------------------------------------------------


def _confusion(counts: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per threshold ``(tp, fp)`` of shape (..., T), and the positives and negatives (...)."""
    tail = counts.flip(-2).cumsum(-2).flip(-2)  # tail[k]: samples reaching at least k thresholds
    return tail[..., 1:, 1], tail[..., 1:, 0], tail[..., 0, 1], tail[..., 0, 0]


def _binned_roc(counts: Tensor, thr: Tensor) -> Curve:
    """Binned ``(fpr, tpr, thresholds)``, thresholds decreasing; a zero denominator gives 0."""
    tp, fp, pos, neg = _confusion(counts)
    tpr = tp / pos.clamp(min=1).unsqueeze(-1)
    fpr = fp / neg.clamp(min=1).unsqueeze(-1)
    return fpr.flip(-1), tpr.flip(-1), thr.flip(0)


def _binned_pr(counts: Tensor, thr: Tensor) -> Curve:
    """Binned ``(precision, recall, thresholds)``, ending at (1, 0); 0 / 0 gives NaN."""
    tp, fp, pos, _ = _confusion(counts)
    precision, recall = tp / (tp + fp), tp / pos.unsqueeze(-1)
    end = precision.new_ones(*precision.shape[:-1], 1)
    return torch.cat([precision, end], -1), torch.cat([recall, end * 0], -1), thr


def _binned_auroc(counts: Tensor) -> Tensor:
    fpr, tpr, _ = _binned_roc(_wide(counts), counts.new_zeros(0))
    fpr, tpr = _from_origin(fpr, tpr)
    return torch.trapezoid(tpr, fpr, dim=-1).float()


def _from_origin(fpr: Tensor, tpr: Tensor) -> tuple[Tensor, Tensor]:
    """The ROC curve from (0, 0), as the area under it is taken.

    A binned curve has one point per threshold: with negatives scored at or above
    the highest one (scores of 1.0) it starts at a false positive rate above 0, and
    the area left of that point was dropped (0.375 for 0.5, however many thresholds).
    A curve that starts at the origin gains a segment of no width.
    """
    zero = fpr.new_zeros(*fpr.shape[:-1], 1)
    return torch.cat([zero, fpr], -1), torch.cat([zero, tpr], -1)


def _binned_ap(counts: Tensor) -> Tensor:
    precision, recall, _ = _binned_pr(_wide(counts), counts.new_zeros(0))
    precision, recall = precision.nan_to_num(0.0), recall.nan_to_num(0.0)
    return -((recall[..., 1:] - recall[..., :-1]) * precision[..., :-1]).sum(-1).float()


# -- compute: reductions ---------------------------------------------------------


def _partial_auc(fpr: Tensor, tpr: Tensor, max_fpr: float | None) -> Tensor:
    """Area under the ROC curve (from the origin: ``_from_origin``) up to ``max_fpr``, McClish-standardized."""
    fpr, tpr = _from_origin(fpr, tpr)
    if max_fpr is None or max_fpr == 1 or not bool(fpr.any()) or not bool(tpr.any()):
        return torch.trapezoid(tpr, fpr).float()
    limit = torch.tensor(max_fpr, dtype=fpr.dtype, device=fpr.device)
    stop = int(torch.searchsorted(fpr, limit, right=True))  # at least 1: the curve starts at fpr 0
    if stop < len(fpr):  # interpolate the curve's height at max_fpr
        w = (limit - fpr[stop - 1]) / (fpr[stop] - fpr[stop - 1])
        height = torch.lerp(tpr[stop - 1], tpr[stop], w)
    else:  # a binned curve may end before max_fpr: extend it flat
        height = tpr[-1]
    area = torch.trapezoid(torch.cat([tpr[:stop], height.view(1)]), torch.cat([fpr[:stop], limit.view(1)]))
    low = 0.5 * limit**2
    return (0.5 * (1 + (area - low) / (limit - low))).float()


def _average(values: Tensor, average: str | None, support: Tensor) -> Tensor:
    """Per-class ``values`` averaged as asked; NaN classes (only from unchecked input) are skipped."""
    if average in (None, "none"):
        return values
    keep = ~values.isnan()
    values, support = values[keep], support[keep].to(values.dtype)
    if average == "macro":
        return values.mean()
    total = support.sum()
    return (values * support).sum() / total if bool(total > 0) else values.new_zeros(())


def _interp(x: Tensor, xp: Tensor, fp: Tensor) -> Tensor:
    """Piecewise-linear ``fp(xp)`` at ``x``, on the segment after the last ``xp`` not above ``x``.

    Like TorchMetrics' ``interp``, which macro-averaged curves use, ``xp`` need
    not be sorted: the segment is chosen by how many ``xp`` are ``<= x``.
    """
    if len(xp) < 2:
        return fp[:1].expand_as(x).clone() if len(xp) else torch.zeros_like(x)
    rise, run = fp[1:] - fp[:-1], xp[1:] - xp[:-1]
    slope = torch.where(run != 0, rise / run, torch.zeros_like(rise))
    start = fp[:-1] - slope * xp[:-1]
    below = torch.searchsorted(xp.nan_to_num(float("inf")).sort().values, x.contiguous(), right=True)
    seg = torch.where(x.isnan(), 0, below - 1).clamp(0, len(slope) - 1)
    return slope[seg] * x + start[seg]


def _macro(xs: list[Tensor], ys: list[Tensor], thrs: list[Tensor], descending: bool) -> Curve:
    """Curves averaged over classes: every class's ``y`` interpolated at all classes' ``x``."""
    grid = torch.cat(xs).sort().values
    mean = sum(_interp(grid, x, y) for x, y in zip(xs, ys, strict=True)) / len(xs)
    return grid, mean, torch.cat(thrs).sort(descending=descending).values  # type: ignore[return-value]


# -- the shared states -----------------------------------------------------------


class _Curve(Metric):
    """What every curve class shares: ``thresholds`` normalized on its way into each subclass's constructor."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)  # makes cls a dataclass with its own __init__
        cls.__init__ = _normalizing_thresholds(cls.__init__)  # type: ignore[method-assign]


class _BinaryCurve(_Curve):
    """Scores and 0/1 labels of a binary task, exact or binned; the update every binary curve shares."""

    _: KW_ONLY
    preds: Tensor = state("cat", init=_empty_preds)
    target: Tensor = state("cat", init=lambda m: torch.empty(0, dtype=torch.uint8))  # 0/1 labels
    counts: Tensor = state("sum", init=_empty_counts)
    thresholds: Any = static(default=None)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    normalization: str | None = static(default="sigmoid")

    def __post_init__(self) -> None:
        _check_config(self, None)
        if self.normalization == "softmax":
            raise config_error(self, "normalization", "'sigmoid' or None (a softmax needs a class dimension)")
        check_one_of(self, "normalization", ("sigmoid", None))

    def update(self: B, preds: Tensor, target: Tensor) -> B:
        """Fold in scores ``preds`` (N, ...) and 0/1 labels ``target`` of the same shape."""
        extremes = None
        if self.validate_args:
            _binary_checks(self, preds, target, scores_only=True, nan=False)
            extremes = finite_scores(self, preds)  # NaN, then infinities, as the checks above would go on
        if preds.ndim != 1:
            preds, target = preds.reshape(-1), target.reshape(-1)
        keep = not_ignored(target, self.ignore_index)
        if self.thresholds is not None:  # fixed-size counts: ignored samples masked, no data-dependent shape
            scores = _scores(preds, self.normalization, extremes if keep is None else None, keep)
            return self.replace(counts=_binned(self.counts, scores, target.long(), self.thresholds, keep))
        if keep is not None:
            preds, target, extremes = preds[keep], target[keep], None
        scores = _scores(preds, self.normalization, extremes)  # the labels become uint8 in the copy itself
        return self._rebuild({"preds": append(self.preds, scores), "target": append(self.target, target, cast=True)})

    def _columns(self) -> tuple[Tensor, Tensor, None]:
        return self.preds.unsqueeze(1), (self.target == 1).unsqueeze(1), None


class _MulticlassCurve(_Curve):
    """Class scores (N, C, ...) and labels (N, ...), exact or binned one-vs-rest; the shared update."""

    num_classes: int = static()
    _: KW_ONLY
    preds: Tensor = state("cat", init=_empty_preds)
    target: Tensor = state("cat", init=lambda m: torch.empty(0, dtype=torch.int64))  # class indices
    counts: Tensor = state("sum", init=_empty_counts)
    thresholds: Any = static(default=None)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check_config(self, "num_classes")

    def update(self: MC, preds: Tensor, target: Tensor) -> MC:
        """Fold in scores ``preds`` (N, C, ...) and class labels ``target`` (N, ...)."""
        extremes = None
        if self.validate_args:
            _multiclass_checks(self, preds, target, scores_only=True, nan=False)
            extremes = finite_scores(self, preds)  # NaN, then infinities, as the checks above would go on
        if preds.ndim != 2:
            preds = preds.movedim(1, -1).reshape(-1, self.num_classes)
            target = target.reshape(-1)
        target = target.long()
        keep = not_ignored(target, self.ignore_index)
        if self.thresholds is not None:  # fixed-size counts: ignored rows masked, no data-dependent shape
            rows = None if keep is None else keep.unsqueeze(1)
            scores = _scores(preds, "softmax", extremes if keep is None else None, rows)
            one_hot = target.unsqueeze(1) == torch.arange(self.num_classes, device=target.device)
            kept = None if rows is None else rows.expand_as(one_hot)
            return self.replace(counts=_binned(self.counts, scores, one_hot, self.thresholds, kept))
        if keep is not None:
            preds, target, extremes = preds[keep], target[keep], None
        return self.append(preds=_scores(preds, "softmax", extremes), target=target)

    def _columns(self) -> tuple[Tensor, Tensor, Tensor | None]:
        classes = torch.arange(self.num_classes, device=self.target.device)
        return self.preds, self.target.unsqueeze(1) == classes, None

    def _column(self, c: int) -> tuple[Tensor, Tensor]:
        return self.preds[:, c], self.target == c

    def _support(self) -> Tensor:
        if self.thresholds is None:
            return torch.bincount(self.target, minlength=self.num_classes)
        return self.counts[..., 1].sum(-1)


class _MultilabelCurve(_Curve):
    """Label scores and 0/1 targets (N, L, ...), exact or binned per label; the shared update."""

    num_labels: int = static()
    _: KW_ONLY
    preds: Tensor = state("cat", init=_empty_preds)
    target: Tensor = state("cat", init=lambda m: torch.empty(0, m.num_labels, dtype=torch.int8))  # -1: ignored
    counts: Tensor = state("sum", init=_empty_counts)
    thresholds: Any = static(default=None)
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check_config(self, "num_labels")

    def update(self: ML, preds: Tensor, target: Tensor) -> ML:
        """Fold in scores ``preds`` and 0/1 labels ``target``, both (N, L, ...); ignored labels are -1."""
        if self.validate_args:
            _multilabel_checks(self, preds, target)
            if not preds.is_floating_point():
                raise TypeError(
                    f"{type(self).__name__}.update: argument `preds` must hold float probabilities "
                    f"or logits, got {preds.dtype}"
                )
            _no_nan(self, preds, finite=True)
        preds = preds.movedim(1, -1).reshape(-1, self.num_labels)
        target = target.movedim(1, -1).reshape(-1, self.num_labels).long()
        scores = _scores(preds, "sigmoid")
        keep = not_ignored(target, self.ignore_index)
        if self.thresholds is None:
            if keep is not None:  # rows stay whole, so ignored entries are marked, not dropped
                target = torch.where(keep, target, -1)
            return self.append(preds=scores, target=target.to(torch.int8))
        return self.replace(counts=_binned(self.counts, scores, target == 1, self.thresholds, keep))

    def _columns(self) -> tuple[Tensor, Tensor, Tensor | None]:
        return self.preds, self.target == 1, self.target >= 0

    def _column(self, c: int) -> tuple[Tensor, Tensor]:
        valid = self.target[:, c] >= 0
        return self.preds[valid, c], self.target[valid, c] == 1

    def _flat(self) -> tuple[Tensor, Tensor]:
        valid = self.target >= 0
        return self.preds[valid], self.target[valid] == 1

    def _support(self) -> Tensor:
        if self.thresholds is None:
            return (self.target == 1).sum(0)
        return self.counts[..., 1].sum(-1)


def _binary_curve(m: Any, pr: bool) -> Curve:
    """A binary metric's precision-recall (``pr``) or ROC curve, exact or binned."""
    if m.thresholds is None:
        return (_pr if pr else _roc)(m.preds, m.target == 1)
    return (_binned_pr if pr else _binned_roc)(m.counts, _thr(m))


def _per_class(m: Any, auroc: bool) -> Tensor:
    """AUROC or AP of every class (one-vs-rest) or label, exact or binned."""
    if m.thresholds is None:
        return (_exact_auroc if auroc else _exact_ap)(*m._columns())
    return (_binned_auroc if auroc else _binned_ap)(m.counts)


def _class_curves(m: Any, exact: Any, binned: Any) -> Curves:
    """Per-class curves: lists of tensors (exact, lengths differ) or stacked tensors (binned)."""
    if m.thresholds is not None:
        return binned(m.counts, _thr(m))  # type: ignore[no-any-return]
    width = m.num_classes if isinstance(m, _MulticlassCurve) else m.num_labels
    parts = [exact(*m._column(c)) for c in range(width)]
    return [p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts]


def _averaged_curve(m: Any, exact: Any, binned: Any, descending: bool) -> Curves:
    """Compute a multiclass curve per class (``average=None``), pooled ("micro") or interpolated ("macro")."""
    if m.average == "micro":
        if m.thresholds is not None:
            return binned(m.counts.sum(0), _thr(m))  # type: ignore[no-any-return]
        scores, positive, _ = m._columns()
        return exact(scores.reshape(-1), positive.reshape(-1))  # type: ignore[no-any-return]
    curves: Any = _class_curves(m, exact, binned)
    if m.average is None:
        return curves  # type: ignore[no-any-return]
    xs, ys, thrs = curves
    if m.thresholds is not None:  # rows of (C, T) tensors, one threshold vector for all
        return _macro(list(xs), list(ys), [thrs] * m.num_classes, descending)
    return _macro(xs, ys, thrs, descending)


# -- binary ----------------------------------------------------------------------


@positional("thresholds", "ignore_index", "validate_args", "normalization")
class BinaryROC(_BinaryCurve):
    """Receiver operating characteristic of a binary task: ``(fpr, tpr, thresholds)``.

    Exact, the curve starts at (0, 0) with threshold 1 and has a point per
    distinct score; binned, it has a point per threshold, decreasing.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryROC
        >>> preds, target = torch.tensor([0.1, 0.4, 0.4, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> fpr, tpr, thresholds = BinaryROC().update(preds, target).compute()
        >>> fpr, tpr
        (tensor([0.0000, 0.0000, 0.5000, 1.0000]), tensor([0.0000, 0.5000, 1.0000, 1.0000]))
        >>> thresholds
        tensor([1.0000, 0.8000, 0.4000, 0.1000])
        >>> BinaryROC(thresholds=3).update(preds, target).compute()
        (tensor([0., 0., 1.]), tensor([0.0000, 0.5000, 1.0000]), tensor([1.0000, 0.5000, 0.0000]))

    """

    def compute(self) -> Curve:
        """Return the curve over every sample seen."""
        return _binary_curve(self, pr=False)


@positional("thresholds", "ignore_index", "validate_args", "normalization")
class BinaryPrecisionRecallCurve(_BinaryCurve):
    """Precision-recall curve of a binary task: ``(precision, recall, thresholds)``, thresholds increasing.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryPrecisionRecallCurve
        >>> preds, target = torch.tensor([0.1, 0.4, 0.4, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> precision, recall, thresholds = BinaryPrecisionRecallCurve().update(preds, target).compute()
        >>> precision, recall
        (tensor([0.5000, 0.6667, 1.0000, 1.0000]), tensor([1.0000, 1.0000, 0.5000, 0.0000]))
        >>> thresholds
        tensor([0.1000, 0.4000, 0.8000])

    """

    def compute(self) -> Curve:
        """Return the curve over every sample seen."""
        return _binary_curve(self, pr=True)


@positional("max_fpr", "thresholds", "ignore_index", "validate_args")
class BinaryAUROC(_BinaryCurve):
    """Area under the ROC curve of a binary task, optionally standardized up to ``max_fpr``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAUROC
        >>> preds, target = torch.tensor([0.1, 0.4, 0.4, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinaryAUROC().update(preds, target).compute()
        tensor(0.8750)
        >>> BinaryAUROC(max_fpr=0.5).update(preds, target).compute()
        tensor(0.8333)

    """

    _: KW_ONLY
    max_fpr: float | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        f = self.max_fpr
        if f is not None and (isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1):
            raise ValueError(f"BinaryAUROC: argument `max_fpr` must be None or a number in (0, 1], got {f!r}")

    def compute(self) -> Tensor:
        """Return the area over every sample seen."""
        if self.max_fpr is None:
            return _per_class(self, auroc=True).reshape(())
        fpr, tpr, _ = _binary_curve(self, pr=False)
        return _partial_auc(_wide(fpr), _wide(tpr), float(self.max_fpr))


@positional("thresholds", "ignore_index", "validate_args", "normalization")
class BinaryAveragePrecision(_BinaryCurve):
    """Average precision of a binary task: the precision-weighted sum of recall steps.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAveragePrecision
        >>> preds, target = torch.tensor([0.1, 0.4, 0.4, 0.8]), torch.tensor([0, 1, 0, 1])
        >>> BinaryAveragePrecision().update(preds, target).compute()
        tensor(0.8333)

    """

    def compute(self) -> Tensor:
        """Return the average precision over every sample seen."""
        return _per_class(self, auroc=False).reshape(())


# -- multiclass ------------------------------------------------------------------

_SCALAR_AVERAGES = ("macro", "weighted", "none", None)
_CURVE_AVERAGES = (None, "micro", "macro")


@positional("num_classes", "thresholds", "average", "ignore_index", "validate_args")
class MulticlassROC(_MulticlassCurve):
    """One-vs-rest ROC curves of a multiclass task, per class or averaged (``"micro"``, ``"macro"``).

    Exact and ``average=None``: lists of per-class tensors; binned: tensors of shape (C, T).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassROC
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> fpr, tpr, thr = MulticlassROC(3).update(preds, torch.tensor([0, 1, 2, 2])).compute()
        >>> fpr[2], tpr[2]
        (tensor([0.0000, 0.0000, 0.5000, 1.0000]), tensor([0.0000, 0.5000, 1.0000, 1.0000]))

    """

    _: KW_ONLY
    average: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _CURVE_AVERAGES)

    def compute(self) -> Curves:
        """Return the per-class or averaged curves over every sample seen."""
        return _averaged_curve(self, _roc, _binned_roc, descending=True)


@positional("num_classes", "thresholds", "average", "ignore_index", "validate_args")
class MulticlassPrecisionRecallCurve(_MulticlassCurve):
    """One-vs-rest precision-recall curves of a multiclass task, per class or averaged.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassPrecisionRecallCurve
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> m = MulticlassPrecisionRecallCurve(3, thresholds=[0.25, 0.5])
        >>> precision, recall, thr = m.update(preds, torch.tensor([0, 1, 2, 2])).compute()
        >>> precision
        tensor([[0.5000, 1.0000, 1.0000],
                [0.3333, 1.0000, 1.0000],
                [0.6667, 1.0000, 1.0000]])

    """

    _: KW_ONLY
    average: str | None = static(default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _CURVE_AVERAGES)

    def compute(self) -> Curves:
        """Return the per-class or averaged curves over every sample seen."""
        return _averaged_curve(self, _pr, _binned_pr, descending=False)


@positional("num_classes", "average", "thresholds", "ignore_index", "validate_args")
class MulticlassAUROC(_MulticlassCurve):
    """One-vs-rest area under the ROC curve of a multiclass task, averaged over classes.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassAUROC
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> target = torch.tensor([0, 1, 2, 2])
        >>> MulticlassAUROC(3).update(preds, target).compute()
        tensor(0.9583)
        >>> MulticlassAUROC(3, average="none").update(preds, target).compute()
        tensor([1.0000, 1.0000, 0.8750])

    """

    _: KW_ONLY
    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _SCALAR_AVERAGES)

    def compute(self) -> Tensor:
        """Return the per-class or averaged areas over every sample seen."""
        return _average(_per_class(self, auroc=True), self.average, self._support())


@positional("num_classes", "average", "thresholds", "ignore_index", "validate_args")
class MulticlassAveragePrecision(_MulticlassCurve):
    """One-vs-rest average precision of a multiclass task, averaged over classes.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassAveragePrecision
        >>> preds = torch.tensor([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.4, 0.3]])
        >>> m = MulticlassAveragePrecision(3, average="weighted")
        >>> m.update(preds, torch.tensor([0, 1, 2, 2])).compute()
        tensor(0.9167)

    """

    _: KW_ONLY
    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _SCALAR_AVERAGES)

    def compute(self) -> Tensor:
        """Return the per-class or averaged average precision over every sample seen."""
        return _average(_per_class(self, auroc=False), self.average, self._support())


# -- multilabel ------------------------------------------------------------------

_MULTILABEL_AVERAGES = ("micro", "macro", "weighted", "none", None)


@positional("num_labels", "thresholds", "ignore_index", "validate_args")
class MultilabelROC(_MultilabelCurve):
    """ROC curve of every label of a multilabel task.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelROC
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> fpr, tpr, thr = MultilabelROC(2).update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        >>> fpr[0], tpr[0]
        (tensor([0.0000, 0.0000, 0.5000, 1.0000]), tensor([0., 1., 1., 1.]))
        >>> thr[0]
        tensor([1.0000, 0.8000, 0.6000, 0.3000])

    """

    def compute(self) -> Curves:
        """Return the per-label curves over every sample seen."""
        return _class_curves(self, _roc, _binned_roc)


@positional("num_labels", "thresholds", "ignore_index", "validate_args")
class MultilabelPrecisionRecallCurve(_MultilabelCurve):
    """Precision-recall curve of every label of a multilabel task.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelPrecisionRecallCurve
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelPrecisionRecallCurve(2, thresholds=[0.5])
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        (tensor([[0.5000, 1.0000],
                [1.0000, 1.0000]]), tensor([[1., 0.],
                [1., 0.]]), tensor([0.5000]))

    """

    def compute(self) -> Curves:
        """Return the per-label curves over every sample seen."""
        return _class_curves(self, _pr, _binned_pr)


@positional("num_labels", "average", "thresholds", "ignore_index", "validate_args")
class MultilabelAUROC(_MultilabelCurve):
    """Area under the ROC curve of a multilabel task, per label or averaged (``"micro"`` pools all labels).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAUROC
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> MultilabelAUROC(2, average="none").update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        tensor([1., 1.])

    """

    _: KW_ONLY
    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _MULTILABEL_AVERAGES)

    def compute(self) -> Tensor:
        """Return the per-label, averaged or pooled areas over every sample seen."""
        if self.average != "micro":
            return _average(_per_class(self, auroc=True), self.average, self._support())
        if self.thresholds is not None:
            return _binned_auroc(self.counts.sum(0))
        scores, positive = self._flat()
        return _exact_auroc(scores.unsqueeze(1), positive.unsqueeze(1), None).reshape(())


@positional("num_labels", "average", "thresholds", "ignore_index", "validate_args")
class MultilabelAveragePrecision(_MultilabelCurve):
    """Average precision of a multilabel task, per label or averaged (``"micro"`` pools all labels).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAveragePrecision
        >>> preds = torch.tensor([[0.8, 0.2], [0.3, 0.6], [0.6, 0.1]])
        >>> m = MultilabelAveragePrecision(2, average="micro")
        >>> m.update(preds, torch.tensor([[1, 0], [0, 1], [0, 0]])).compute()
        tensor(0.8333)

    """

    _: KW_ONLY
    average: str | None = static(default="macro")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_one_of(self, "average", _MULTILABEL_AVERAGES)

    def compute(self) -> Tensor:
        """Return the per-label, averaged or pooled average precision over every sample seen."""
        if self.average != "micro":
            return _average(_per_class(self, auroc=False), self.average, self._support())
        if self.thresholds is not None:
            return _binned_ap(self.counts.sum(0))
        scores, positive = self._flat()
        return _exact_ap(scores.unsqueeze(1), positive.unsqueeze(1), None).reshape(())
