"""Segmentation inputs read into per-sample, per-class pixel counts.

Every segmentation metric needs, per sample and class, three integers: the
pixels where prediction and target agree on the class (``inter``), the pixels
predicted as the class and the pixels labelled as it. Index inputs take one
``bincount`` of ``(sample, target, pred)`` triples (a confusion matrix per
sample), never a one-hot copy of the images; float one-hot inputs (scores) are
reduced to indices by ``argmax`` over the class dimension first, as
TorchMetrics does; binary one-hot inputs are summed directly.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

from scopedmetrics import _checks

FORMATS = ("one-hot", "index", "mixed")


class Counts(NamedTuple):
    """Per-sample, per-class pixel counts, each ``(N, C)`` int64 (background dropped when asked)."""

    inter: torch.Tensor
    pred: torch.Tensor
    target: torch.Tensor


def check_config(owner: Any, num_classes_optional: bool = False) -> None:
    """The configuration every segmentation metric shares: ``num_classes``, ``include_background``, ``input_format``."""
    _checks.check_int(owner, "num_classes", 1, optional=num_classes_optional)
    _checks.check_bool(owner, "include_background")
    _checks.check_choice(owner, "input_format", FORMATS)
    if owner.num_classes is None and owner.input_format == "index":
        raise ValueError(f"{type(owner).__name__}: argument `num_classes` must be given when input_format='index'")


def out_classes(num_classes: int, include_background: bool) -> int:
    """How many classes the values cover: class 0 is dropped without background (unless it is the only one)."""
    return num_classes - 1 if not include_background and num_classes > 1 else num_classes


class Pair(NamedTuple):
    """``preds`` and ``target`` read: int64 labels ``(N, ...)`` or bool one-hot ``(N, C, ...)``, as ``*_kind`` says."""

    preds: torch.Tensor
    p_kind: str
    target: torch.Tensor
    t_kind: str
    num_classes: int


def pair(owner: Any, preds: Any, target: Any) -> Pair:
    """Check ``preds`` and ``target`` as ``owner.input_format`` says; float one-hot scores become bool one-hot."""
    p = _checks.tensor(owner, "preds", preds)
    t = _checks.tensor(owner, "target", target)
    fmt = owner.input_format
    if fmt == "mixed":
        if p.ndim == t.ndim + 1:
            p_kind, t_kind = "one-hot", "index"
        elif t.ndim == p.ndim + 1:
            p_kind, t_kind = "index", "one-hot"
        else:
            raise ValueError(
                f"{_checks.where(owner)}: with input_format='mixed' one of arguments `preds` and `target` must be "
                f"one-hot (N, C, ...) and the other index (N, ...), got shapes {tuple(p.shape)} and {tuple(t.shape)}"
            )
    else:
        p_kind = t_kind = fmt
    num_classes = owner.num_classes
    if num_classes is None:  # one-hot (or mixed): the class dimension says how many
        num_classes = (p if p_kind == "one-hot" else t).shape[1] if max(p.ndim, t.ndim) >= 2 else 0
    pi, p_kind = _read(owner, "preds", p, p_kind, num_classes)
    ti, t_kind = _read(owner, "target", t, t_kind, num_classes)
    ps, ts = _spatial(pi, p_kind), _spatial(ti, t_kind)
    if pi.shape[0] != ti.shape[0] or ps != ts:
        raise ValueError(
            f"{_checks.where(owner)}: arguments `preds` and `target` must cover the same samples and pixels, "
            f"got shapes {tuple(p.shape)} and {tuple(t.shape)}"
        )
    return Pair(pi, p_kind, ti, t_kind, num_classes)


def masks(owner: Any, preds: Any, target: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``preds`` and ``target`` checked, as bool one-hot masks ``(N, C', ...)`` (background dropped when asked)."""
    r = pair(owner, preds, target)
    ph = r.preds if r.p_kind == "one-hot" else _one_hot(r.preds, r.num_classes)
    th = r.target if r.t_kind == "one-hot" else _one_hot(r.target, r.num_classes)
    if not owner.include_background and r.num_classes > 1:
        ph, th = ph[:, 1:], th[:, 1:]
    return ph, th


def counts(owner: Any, preds: Any, target: Any, per_sample: bool = True) -> Counts:
    """Check ``preds`` and ``target`` as ``owner.input_format`` says and count pixels per sample and class.

    With ``per_sample=False`` the counts may come as one row for the whole batch (dataset-level values only
    need their sums over the samples).
    """
    pi, p_kind, ti, t_kind, num_classes = pair(owner, preds, target)
    if p_kind == "index" and t_kind == "index":
        c = _index_counts(pi, ti, num_classes, per_sample)
    else:
        ph = pi if p_kind == "one-hot" else _one_hot(pi, num_classes)
        th = ti if t_kind == "one-hot" else _one_hot(ti, num_classes)
        c = Counts(_pixels(ph & th), _pixels(ph), _pixels(th))
    if not owner.include_background and num_classes > 1:
        c = Counts(c.inter[:, 1:], c.pred[:, 1:], c.target[:, 1:])
    return c


def _spatial(x: torch.Tensor, kind: str) -> tuple[int, ...]:
    return tuple(x.shape[2:]) if kind == "one-hot" else tuple(x.shape[1:])


def _read(owner: Any, arg: str, x: torch.Tensor, kind: str, num_classes: int) -> tuple[torch.Tensor, str]:
    """``x`` as int64 labels ``(N, ...)`` (``"index"``) or bool one-hot ``(N, C, ...)``, and which of the two.

    Float one-hot scores become labels (their ``argmax`` over dim 1, as TorchMetrics), so they count as index
    inputs do, without a one-hot copy.
    """
    if kind == "index":
        _checks.ndim(owner, arg, x, range(2, 16), "(N, ...) of class indices, with at least one pixel dimension")
        _labels(owner, arg, x, num_classes)
        return (x if x.dtype in (torch.int32, torch.int64) else x.long()), "index"
    _checks.ndim(owner, arg, x, range(3, 17), f"(N, C, ...) one-hot over C={num_classes} classes")
    if x.shape[1] != num_classes:
        raise ValueError(
            f"{_checks.where(owner)}: argument `{arg}` must have {num_classes} classes along dim 1, "
            f"got shape {tuple(x.shape)}"
        )
    if x.is_floating_point():  # scores or probabilities: the most likely class per pixel, as TorchMetrics
        _checks.finite(owner, arg, x)
        return x.argmax(1), "index"
    if x.dtype != torch.bool:
        if x.is_complex() or not _within(x, 0, 1):
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` one-hot values must be 0 or 1")
        x = x.bool()
    return x, "one-hot"


def _within(x: torch.Tensor, low: int, high: int) -> bool:
    """Whether every value of the integer tensor ``x`` lies in ``[low, high]``: one read of the data."""
    if x.numel() == 0:
        return True
    lo, hi = torch.aminmax(x)
    return bool((lo >= low) & (hi <= high))


def _labels(owner: Any, arg: str, x: torch.Tensor, num_classes: int) -> None:
    """``x`` holds labels in ``[0, num_classes)``: integers read once (``aminmax``), the rest as ``_checks`` does."""
    if x.dtype == torch.bool or x.is_floating_point() or x.is_complex() or _checks.asserting(x) or not x.numel():
        _checks.labels(owner, arg, x, num_classes)
        return
    lo, hi = torch.aminmax(x)
    if not bool((lo >= 0) & (hi <= _checks.clipped(x.dtype, num_classes - 1))):
        raise ValueError(
            f"{_checks.where(owner)}: argument `{arg}` must hold labels in [0, {num_classes}), "
            f"got values in [{lo.item()}, {hi.item()}]"
        )


_BLOCK = 1 << 14  # pixels summed in int16: at most 16,384 ones, so the sum cannot wrap


def _pixels(x: torch.Tensor) -> torch.Tensor:
    """The True pixels of bool masks ``(N, C, ...)`` per sample and class, ``(N, C)`` int64.

    Summed as bytes into int16 over blocks of ``_BLOCK`` pixels, then the blocks into int64: exact, and an
    order of magnitude faster on the CPU than a bool or int64 sum (which do not vectorise).
    """
    u = x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:])).view(torch.uint8)
    n, c, m = u.shape
    full = m - m % _BLOCK
    out = u[..., :full].reshape(n, c, full // _BLOCK, _BLOCK).sum(-1, dtype=torch.int16).sum(-1, dtype=torch.int64)
    if full < m:
        out += u[..., full:].sum(-1, dtype=torch.int16)
    return out


def _one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(labels.long(), num_classes).movedim(-1, 1).bool()


def _index_counts(p: torch.Tensor, t: torch.Tensor, num_classes: int, per_sample: bool = True) -> Counts:
    """Confusion matrices from one ``bincount`` of ``(n * C + t) * C + p``: per sample, or one for the batch.

    ``p`` and ``t`` are checked labels (int32 or int64) in ``[0, C)``. The key is one fused pass
    (``p + C * t``) and, per sample, one in-place add: on the CPU every pass that allocates a large tensor
    also pays for its fresh pages, so there is no other temporary.
    """
    n, c = p.shape[0], num_classes
    rows = n if per_sample else 1
    bins = rows * c * c
    if bins > 2**31 - 1:  # int32 labels: the key itself must not wrap
        p, t = p.long(), t.long()
    key = torch.add(p, t, alpha=c)
    if per_sample:
        key.add_(torch.arange(0, bins, c * c, dtype=key.dtype, device=p.device).view(-1, *([1] * (p.ndim - 1))))
    cm = torch.bincount(key.reshape(-1), minlength=bins).view(rows, c, c)  # key keeps strided inputs' layout
    return Counts(cm.diagonal(dim1=1, dim2=2), cm.sum(1), cm.sum(2))
