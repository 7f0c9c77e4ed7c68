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


def counts(owner: Any, preds: Any, target: Any) -> Counts:
    """Check ``preds`` and ``target`` as ``owner.input_format`` says and count pixels per sample and class."""
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
    pi = _read(owner, "preds", p, p_kind, num_classes)
    ti = _read(owner, "target", t, t_kind, num_classes)
    ps, ts = _spatial(pi, p_kind), _spatial(ti, t_kind)
    if pi.shape[0] != ti.shape[0] or ps != ts:
        raise ValueError(
            f"{_checks.where(owner)}: arguments `preds` and `target` must cover the same samples and pixels, "
            f"got shapes {tuple(p.shape)} and {tuple(t.shape)}"
        )
    if p_kind == "index" and t_kind == "index":
        c = _index_counts(pi, ti, num_classes)
    else:
        ph = pi if p_kind == "one-hot" else _one_hot(pi, num_classes)
        th = ti if t_kind == "one-hot" else _one_hot(ti, num_classes)
        dims = tuple(range(2, ph.ndim))
        c = Counts(
            (ph & th).sum(dims, dtype=torch.int64) if dims else (ph & th).long(),
            ph.sum(dims, dtype=torch.int64) if dims else ph.long(),
            th.sum(dims, dtype=torch.int64) if dims else th.long(),
        )
    if not owner.include_background and num_classes > 1:
        c = Counts(c.inter[:, 1:], c.pred[:, 1:], c.target[:, 1:])
    return c


def _spatial(x: torch.Tensor, kind: str) -> tuple[int, ...]:
    return tuple(x.shape[2:]) if kind == "one-hot" else tuple(x.shape[1:])


def _read(owner: Any, arg: str, x: torch.Tensor, kind: str, num_classes: int) -> torch.Tensor:
    """``x`` as int64 labels ``(N, ...)`` (index) or bool one-hot ``(N, C, ...)``; float one-hot becomes labels."""
    if kind == "index":
        _checks.ndim(owner, arg, x, range(2, 16), "(N, ...) of class indices, with at least one pixel dimension")
        _checks.labels(owner, arg, x, num_classes)
        return x.long()
    _checks.ndim(owner, arg, x, range(3, 17), f"(N, C, ...) one-hot over C={num_classes} classes")
    if x.shape[1] != num_classes:
        raise ValueError(
            f"{_checks.where(owner)}: argument `{arg}` must have {num_classes} classes along dim 1, "
            f"got shape {tuple(x.shape)}"
        )
    if x.is_floating_point():  # scores or probabilities: the most likely class per pixel, as TorchMetrics
        _checks.finite(owner, arg, x)
        return _one_hot(x.argmax(1), num_classes)
    if x.dtype != torch.bool:
        if x.numel() and not bool(((x == 0) | (x == 1)).all()):
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` one-hot values must be 0 or 1")
        x = x.bool()
    return x


def _one_hot(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(labels, num_classes).movedim(-1, 1).bool()


def _index_counts(p: torch.Tensor, t: torch.Tensor, num_classes: int) -> Counts:
    """Per-sample confusion matrices from one ``bincount`` of ``(n * C + t) * C + p``."""
    n, c = p.shape[0], num_classes
    base = torch.arange(n, device=p.device).view(-1, *([1] * (p.ndim - 1))) * (c * c)
    cm = torch.bincount((base + t * c + p).reshape(-1), minlength=n * c * c).view(n, c, c)
    return Counts(cm.diagonal(dim1=1, dim2=2), cm.sum(1), cm.sum(2))
