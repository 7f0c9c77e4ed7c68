"""Vectorised grouped updates of the catalogue's common families: one scatter by group id per batch.

Each hook runs the metric's own input checks with the empty ``template`` (so
errors name the metric and the argument), then sums every row's contribution
per group with one ``bincount``/``index_add`` and adds the sums to the stacked
state once, as the metric adds its batch's sum (``_group_sums``).
A batch a hook does not handle exactly (NaNs to drop, weights to refuse, labels
out of range with ``validate_args=False``) returns ``None``, and the general
path runs the metric's own ``update`` per group, which does what the metric does.
The reference twin of every hook is that general path: the tests compare them.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import torch

from scopedmetrics import _checks
from scopedmetrics._kernels import bincount, class_counts
from scopedmetrics.aggregation import Max, Mean, Min, Sum
from scopedmetrics.classification.confusion import (
    BinaryConfusion,
    MulticlassConfusion,
    MultilabelConfusion,
    _FromConfusion,
)
from scopedmetrics.classification.inputs import binary_labels, multiclass_labels, multilabel_labels
from scopedmetrics.classification.stat_scores import (
    BinaryCounts,
    MulticlassCounts,
    MultilabelCounts,
    _StatScore,
)
from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import _SQUARED_ERROR, check_result, pair
from scopedmetrics.regression.error import MeanAbsoluteError, MeanSquaredError
from scopedmetrics.wrappers._groups import GroupIds, _call_hook, hook_for, per_element, register_sliced_update

M = TypeVar("M", bound=Metric)


def _values(x: Any, like: torch.Tensor, exact: bool = False) -> torch.Tensor | None:
    """A batch-first value tensor cast like the state (``exact``: widened, as the metric sums it), or ``None``."""
    if not isinstance(x, torch.Tensor) or x.ndim == 0 or x.is_complex():
        return None
    dtype = _checks.batch_dtype(like, x) if exact else like.dtype
    return x if x.dtype == dtype and x.device == like.device else x.to(like.device, dtype)


def _nan_free(template: Any, total: torch.Tensor) -> bool:
    """Whether NaN handling can be skipped: the strategy keeps NaNs, or the batch's sum shows there is none.

    A sum that is not NaN proves no element is (as ``Mean``'s own fast path reads it); a NaN sum
    (NaNs, or opposite infinities) leaves the batch to the metric's update.
    """
    return template.nan_strategy == "disable" or not math.isnan(total.sum().item())


def _group_sums(state: torch.Tensor, ids: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Each group's sum of ``rows`` (row ``i`` in group ``ids[i]``), from zero, shaped like the stacked ``state``.

    ``rows`` is ``(N, *state.shape[1:])``, or ``(N,)`` for one value per group. The state then adds these
    once, as a metric's ``update`` adds its batch's sum. Both passes below add the rows one at a time,
    so float rows are added in float64: in float32 each addition rounds (10^7 rows of 0.1 in one group
    summed to 1,087,937, where ``x.sum()``, pairwise, gives 999,999.56). One value per row on the CPU
    is one weighted ``bincount``, the faster pass there (on CUDA it has no deterministic kernel);
    otherwise ``index_add_`` into zeros. Shape and dtype calls cost about as much as the pass, so each
    is made only when needed.
    """
    if rows.is_floating_point() and rows.dtype != torch.float64:
        rows = rows.double()
    if rows.ndim == 1 and rows.is_cpu:
        sums = torch.bincount(ids, weights=rows, minlength=state.shape[0])
        if sums.dtype != state.dtype:  # float64 weights keep theirs; others give float64
            sums = sums.to(state.dtype)
        return sums if state.ndim == 1 else sums.unsqueeze(1)
    wide = rows.dtype if rows.is_floating_point() else state.dtype  # float rows: float64, above
    sums = torch.zeros(state.shape, dtype=wide, device=state.device)
    sums.index_add_(0, ids, (rows if rows.ndim == state.ndim else rows.unsqueeze(1)).to(wide))
    return sums if sums.dtype == state.dtype else sums.to(state.dtype)


# -- aggregation ---------------------------------------------------------------------------


@register_sliced_update(Sum)
def _sum(stacked: Sum, template: Sum, g: GroupIds, value: Any) -> Sum | None:
    ids = g.ids
    x = _values(value, stacked.sum_value, exact=True)
    if x is None:
        return None
    sums = _group_sums(stacked.sum_value, ids, x if x.shape == ids.shape else x.reshape(ids.shape[0], -1).sum(1))
    if not _nan_free(template, sums):
        return None
    return stacked.replace(sum_value=stacked.sum_value + sums)


@register_sliced_update(Mean)
def _mean(stacked: Mean, template: Mean, g: GroupIds, value: Any, weight: Any = 1.0) -> Mean | None:
    x = _values(value, stacked.mean_value, exact=True)
    if x is None:
        return None
    if isinstance(weight, torch.Tensor):
        return _weighted_mean(stacked, template, g, x, weight)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
        return None  # the metric's own update takes it, or refuses it (negative or NaN)
    ids = g.ids
    rows = ids.shape[0]
    if weight != 1:
        x = x * weight  # each value, as the metric weighs them
    sums = _group_sums(stacked.mean_value, ids, x if x.shape == ids.shape else x.reshape(rows, -1).sum(1))
    if not _nan_free(template, sums):
        return None
    scale = x.numel() // rows * weight  # the weight each row adds
    weights = stacked.weight + g.sizes if scale == 1 else stacked.weight.add(g.sizes, alpha=scale)
    return stacked.replace(mean_value=stacked.mean_value + sums, weight=weights)


def _weighted_mean(stacked: Mean, template: Mean, g: GroupIds, x: torch.Tensor, weight: torch.Tensor) -> Mean | None:
    if weight.is_complex():
        return None
    dtype = _checks.batch_dtype(stacked.weight, x, weight)
    x, w = x.to(dtype), weight.to(x.device, dtype)
    try:
        w = torch.broadcast_to(w, x.shape)
    except RuntimeError:
        return None
    if template.nan_strategy != "disable" and (bool(torch.isnan(x).any()) or bool(torch.isnan(w).any())):
        return None
    if bool((w < 0).any()):
        return None
    rows = g.ids.shape[0]
    sx = (x * w).reshape(rows, -1).sum(1)
    sw = w.reshape(rows, -1).sum(1)
    return stacked.replace(
        mean_value=stacked.mean_value + _group_sums(stacked.mean_value, g.ids, sx),
        weight=stacked.weight + _group_sums(stacked.weight, g.ids, sw),
    )


def _extreme(field: str, reduce: str) -> Any:
    def hook(stacked: M, template: M, g: GroupIds, value: Any) -> M | None:
        ids = g.ids
        state = getattr(stacked, field)
        x = _values(value, state)
        if x is None or x[0].numel() == 0 or (x.is_floating_point() and bool(torch.isnan(x).any())):
            return None  # a NaN is dropped or propagates: the metric decides
        per_row = x.reshape(ids.shape[0], -1)
        per_row = per_row.amax(1) if reduce == "amax" else per_row.amin(1)
        return stacked.replace(**{field: state.scatter_reduce(0, ids, per_row, reduce, include_self=True)})

    return hook


register_sliced_update(Max)(_extreme("max_value", "amax"))
register_sliced_update(Min)(_extreme("min_value", "amin"))


# -- regression ------------------------------------------------------------------------------


def _error(field: str, squared: bool) -> Any:
    def hook(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
        ids, rows = g.ids, g.ids.shape[0]
        outputs = template.num_outputs  # type: ignore[attr-defined]
        p, t = pair(template, preds, target, getattr(template, field), "flat" if outputs == 1 else "outputs",
                    finite=False)
        err = _SQUARED_ERROR(p, t, 0) if squared else (p - t).abs()  # (M,) flat, or (rows, outputs)
        each = 1  # entries per row, as the metric counts them
        if outputs == 1:
            if err.shape[0] != rows:  # inputs of any shape, flattened: sum each row's entries
                if err.shape[0] % max(rows, 1):
                    return None
                each = err.shape[0] // rows
                err = err.view(rows, each).sum(1)
        state = getattr(stacked, field)
        sums = _group_sums(state, ids, err)  # (groups, outputs)
        check_result(template, sums.sum(), (("preds", p), ("target", t)))
        total = stacked.total  # type: ignore[attr-defined]
        return stacked.replace(**{field: state + sums, "total": total + (g.sizes if each == 1 else g.sizes * each)})

    return hook


register_sliced_update(MeanSquaredError)(_error("sum_squared_error", squared=True))
register_sliced_update(MeanAbsoluteError)(_error("sum_abs_error", squared=False))


# -- classification: stat scores -------------------------------------------------------------


@register_sliced_update(BinaryCounts)
def _binary_stat_scores(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    p, t, keep = binary_labels(template, preds, target)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    index = group * 4 + (~p).long() * 2 + (p != t)  # 0 tp, 1 fp, 2 tn, 3 fn, as BinaryCounts.update
    counts = bincount(index, 4 * n, keep).view(n, 4)
    s: Any = stacked
    return stacked.replace(tp=s.tp + counts[:, 0], fp=s.fp + counts[:, 1], tn=s.tn + counts[:, 2],
                           fn=s.fn + counts[:, 3])


def _labels_in_range(p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor | None, c: int) -> bool:
    """Whether every kept label lies in ``[0, c)`` (checked only when the metric does not validate)."""
    if p.numel() == 0:
        return True
    both = torch.cat([p, t]) if keep is None else torch.cat([p.where(keep, 0), t.where(keep, 0)])
    low, high = torch.aminmax(both)
    return bool(low.item() >= 0 and high.item() < c)


@register_sliced_update(MulticlassCounts)
def _multiclass_counts(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    c = template.num_classes  # type: ignore[attr-defined]
    p, t, keep = multiclass_labels(template, preds, target)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    counts: torch.Tensor = stacked.counts  # type: ignore[attr-defined]
    if c is None:  # (1, 3): hits, misses, samples
        hm = bincount(group * 2 + (p != t), 2 * n, keep).view(n, 2)
        return stacked.replace(counts=counts + torch.stack([hm[:, 0], hm[:, 1], hm.sum(1)], 1).view(n, 1, 3))
    if not template.validate_args and not _labels_in_range(p, t, keep, c):  # type: ignore[attr-defined]
        return None  # the metric's own update names the bad label
    offset = group * c  # slice k's class j is class k * c + j of one (n * c, 3) count
    summed = class_counts(counts.view(n * c, 3), p + offset, t + offset, keep, n * c)
    return stacked.replace(counts=summed.view(n, c, 3))


@register_sliced_update(MultilabelCounts)
def _multilabel_counts(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    size = template.num_labels  # type: ignore[attr-defined]
    p, t, keep = multilabel_labels(template, preds, target)  # (M, L)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    label = torch.arange(size, device=p.device) * 4
    index = group[:, None] * (4 * size) + label + (~p).long() * 2 + (p != t)
    counts = bincount(index, 4 * size * n, keep).view(n, size, 4)
    s: Any = stacked
    return stacked.replace(tp=s.tp + counts[..., 0], fp=s.fp + counts[..., 1], tn=s.tn + counts[..., 2],
                           fn=s.fn + counts[..., 3])


# -- classification: confusion matrices -----------------------------------------------------------


@register_sliced_update(BinaryConfusion)
def _binary_confusion(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    p, t, keep = binary_labels(template, preds, target, kept_only=True)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    counts = bincount(group * 4 + t.long() * 2 + p, 4 * n, keep).view(n, 2, 2)
    return stacked.replace(confmat=stacked.confmat + counts)  # type: ignore[attr-defined]


@register_sliced_update(MulticlassConfusion)
def _multiclass_confusion(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    c = template.num_classes  # type: ignore[attr-defined]
    p, t, keep = multiclass_labels(template, preds, target)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    if not template.validate_args and not _labels_in_range(p, t, keep, c):  # type: ignore[attr-defined]
        return None
    counts = bincount(group * (c * c) + t * c + p, c * c * n, keep).view(n, c, c)
    return stacked.replace(confmat=stacked.confmat + counts)  # type: ignore[attr-defined]


@register_sliced_update(MultilabelConfusion)
def _multilabel_confusion(stacked: M, template: M, g: GroupIds, preds: Any, target: Any) -> M | None:
    ids, n = g.ids, g.n
    size = template.num_labels  # type: ignore[attr-defined]
    p, t, keep = multilabel_labels(template, preds, target)
    group = per_element(ids, p.shape[0])
    if group is None:
        return None
    label = torch.arange(size, device=p.device) * 4
    index = group[:, None] * (4 * size) + label + t.long() * 2 + p
    counts = bincount(index, 4 * size * n, keep).view(n, size, 2, 2)
    return stacked.replace(confmat=stacked.confmat + counts)  # type: ignore[attr-defined]


# -- classification: scores that hold their counts as a nested metric ----------------------------------


def _renamed(err: Exception, inner: str, outer: str) -> Exception:
    """``err`` with a message that begins ``"<inner>.update:"`` made to begin ``"<outer>.update:"``."""
    message, head = str(err), f"{inner}.update:"
    if type(err) not in (TypeError, ValueError) or not message.startswith(head):
        return err
    return type(err)(f"{outer}.update:{message[len(head):]}").with_traceback(err.__traceback__)


def _nested(field: str) -> Any:
    """The hook of a metric whose ``update`` folds into the metric in state ``field`` (``sm.delegate``).

    It runs the nested metric's hook on the nested stacked state; a refusal names the outer metric,
    as its own ``update`` does.
    """

    def hook(stacked: M, template: M, g: GroupIds, *args: Any, **kwargs: Any) -> M | None:
        inner_template = getattr(template, field)
        inner = hook_for(inner_template)
        if inner is None:
            return None
        try:
            done = _call_hook(inner, getattr(stacked, field), inner_template, g, args, kwargs)
        except (TypeError, ValueError) as err:
            raise _renamed(err, type(inner_template).__name__, type(template).__name__) from None
        return None if done is None else stacked.replace(**{field: done})

    return hook


register_sliced_update(_StatScore)(_nested("stats"))
register_sliced_update(_FromConfusion)(_nested("matrix"))
