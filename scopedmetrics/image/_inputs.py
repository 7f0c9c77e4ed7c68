"""Checks shared by the image metrics: image pairs, data ranges, reductions."""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics import _checks

REDUCTIONS = ("elementwise_mean", "sum", "none", None)


def image_pair(owner: Any, preds: Any, target: Any, ndims: tuple[int, ...] | None = None,
               shape: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """``preds`` and ``target`` as float tensors of one shape (integers and half precision become float32), finite."""
    p = _checks.tensor(owner, "preds", preds)
    t = _checks.tensor(owner, "target", target)
    _checks.same_shape(owner, "preds", p, "target", t)
    if ndims is not None:
        _checks.ndim(owner, "preds", p, ndims, shape)
    p = _checks.widened(p) if p.is_floating_point() else p.float()  # half-precision SSIM windows overflow
    t = t.to(p.dtype)  # as TorchMetrics: the target takes the predictions' dtype
    _checks.finite(owner, "preds", p)
    _checks.finite(owner, "target", t)
    return p, t


def check_data_range(owner: Any, optional: bool) -> None:
    """``data_range``: a positive number, a ``(min, max)`` pair with ``min < max``, or ``None`` when ``optional``."""
    value = owner.data_range
    name = type(owner).__name__
    if value is None and optional:
        return
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise TypeError(f"{name}: argument `data_range` must be a number or a (min, max) pair, got {value!r}")
        if not value[0] < value[1]:
            raise ValueError(f"{name}: argument `data_range` (min, max) must have min < max, got {value!r}")
        return
    _checks.check_number(owner, "data_range")
    if not value > 0:
        raise ValueError(f"{name}: argument `data_range` must be positive, got {value!r}")


def clamp_to_range(owner: Any, p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """With a ``(min, max)`` data range, both images clamped to it (as TorchMetrics)."""
    dr = owner.data_range
    if isinstance(dr, (tuple, list)):
        return p.clamp(dr[0], dr[1]), t.clamp(dr[0], dr[1])
    return p, t


def range_width(owner: Any) -> float | None:
    """The width of the data range, or ``None`` when it is read from each image."""
    dr = owner.data_range
    if dr is None:
        return None
    return float(dr[1] - dr[0]) if isinstance(dr, (tuple, list)) else float(dr)
