"""Detection inputs (lists of per-image dicts) checked and flattened, box formats, pairwise box overlaps.

Everything here is plain torch (torchvision's box operations, written out):
box format conversions follow ``torchvision.ops.box_convert`` step for step
(``cxcywh`` and ``xywh`` go through ``xyxy``), so the boxes match what
TorchMetrics hands to its backends bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from scopedmetrics import _checks

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


class Batch(NamedTuple):
    """A batch of images flattened: per box, its image (an index into the batch) and its fields."""

    images: int
    image: torch.Tensor  # (K,) int64
    boxes: torch.Tensor  # (K, 4), the input dtype (float)
    labels: torch.Tensor  # (K,) int64
    extra: dict[str, torch.Tensor]  # scores, iscrowd, area: (K,)


def to_xyxy(boxes: torch.Tensor, fmt: str) -> torch.Tensor:
    """``boxes`` in ``(x1, y1, x2, y2)``, as ``torchvision.ops.box_convert(boxes, fmt, "xyxy")``."""
    if fmt == "xyxy":
        return boxes
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return torch.stack((a, b, a + c, b + d), -1)
    return torch.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), -1)


def to_xywh(boxes: torch.Tensor, fmt: str) -> torch.Tensor:
    """``boxes`` in ``(x, y, w, h)``, as ``torchvision.ops.box_convert(boxes, fmt, "xywh")``."""
    if fmt == "xywh":
        return boxes
    x1, y1, x2, y2 = to_xyxy(boxes, fmt).unbind(-1)
    return torch.stack((x1, y1, x2 - x1, y2 - y1), -1)


def _tensor_field(owner: Any, arg: str, i: int, key: str, value: Any) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` item {i} {key!r} must be a tensor, "
                        f"got {type(value).__name__}")
    if value.is_complex():
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` item {i} {key!r} must be real, got {value.dtype}")
    return value


def flatten(owner: Any, arg: str, items: Any, required: Sequence[str], optional: Sequence[str] = ()) -> Batch:
    """Check a list of per-image dicts (``boxes`` ``(K, 4)``, ``labels`` ``(K,)``, ...) and concatenate them."""
    if isinstance(items, (Mapping, str, bytes, torch.Tensor)) or not isinstance(items, Sequence):
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` must be a list of dicts (one per image), "
                        f"got {type(items).__name__}")
    fields: dict[str, list[torch.Tensor]] = {k: [] for k in ("boxes", "labels", *required, *optional)}
    image: list[torch.Tensor] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"{_checks.where(owner)}: argument `{arg}` item {i} must be a dict, "
                            f"got {type(item).__name__}")
        missing = [k for k in ("boxes", "labels", *required) if k not in item]
        if missing:
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} lacks the key(s) {missing}")
        boxes = _tensor_field(owner, arg, i, "boxes", item["boxes"])
        if boxes.numel() == 0:
            boxes = boxes.reshape(0, 4)
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} 'boxes' must have shape (K, 4), "
                             f"got {tuple(boxes.shape)}")
        k = boxes.shape[0]
        fields["boxes"].append(boxes)
        for key in ("labels", *required, *optional):
            if key not in item:
                continue
            v = _tensor_field(owner, arg, i, key, item[key]).reshape(-1)
            if v.shape[0] != k:
                raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} has {k} boxes but "
                                 f"{v.shape[0]} {key!r}")
            fields[key].append(v)
        image.append(torch.full((k,), i, dtype=torch.int64, device=boxes.device))
    n = len(items)
    boxes = torch.cat(fields["boxes"]) if n else torch.zeros((0, 4))
    if not boxes.is_floating_point():
        boxes = boxes.double()
    _checks.finite(owner, arg, boxes)
    labels = torch.cat(fields["labels"]) if n else torch.zeros(0, dtype=torch.int64)
    if labels.is_floating_point() or labels.dtype == torch.bool:
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` 'labels' must be integer class ids, "
                        f"got {labels.dtype}")
    extra = {}
    for key in required:
        extra[key] = torch.cat(fields[key]) if n else torch.zeros(0)
    for key in optional:  # absent from an image: zeros there (TorchMetrics' default for iscrowd and area)
        if fields[key]:
            parts = [item[key].reshape(-1) if key in item else torch.zeros(b.shape[0], device=b.device)
                     for item, b in zip(items, fields["boxes"])]
            extra[key] = torch.cat(parts)
    if "scores" in extra:
        if not extra["scores"].is_floating_point():
            raise TypeError(f"{_checks.where(owner)}: argument `{arg}` 'scores' must be floating point, "
                            f"got {extra['scores'].dtype}")
        _checks.finite(owner, arg, extra["scores"])
    return Batch(n, torch.cat(image) if n else torch.zeros(0, dtype=torch.int64), boxes, labels.long(), extra)


def same_images(owner: Any, preds: Batch, target: Batch) -> None:
    if preds.images != target.images:
        raise ValueError(f"{_checks.where(owner)}: arguments `preds` and `target` must hold as many images, "
                         f"got {preds.images} and {target.images}")


# -- pairwise overlaps of xyxy boxes, as torchvision.ops computes them ---------------------------------------


def _inter_union(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area_a[:, None] + area_b - inter


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU ``(len(a), len(b))``."""
    inter, union = _inter_union(a, b)
    return inter / union


def _enclosing_wh(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    lt = torch.min(a[:, None, :2], b[:, :2])
    rb = torch.max(a[:, None, 2:], b[:, 2:])
    return (rb - lt).clamp(min=0)


def generalized_box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pairwise generalized IoU: IoU minus the share of the enclosing box outside the union."""
    inter, union = _inter_union(a, b)
    iou = inter / union
    wh = _enclosing_wh(a, b)
    area = wh[..., 0] * wh[..., 1]
    return iou - (area - union) / area


def _diou_terms(a: torch.Tensor, b: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    iou = box_iou(a, b)
    wh = _enclosing_wh(a, b)
    diagonal = wh[..., 0] ** 2 + wh[..., 1] ** 2 + eps
    xa, ya = (a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2
    xb, yb = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    centres = (xa[:, None] - xb[None, :]) ** 2 + (ya[:, None] - yb[None, :]) ** 2
    return iou, iou - centres / diagonal


def distance_box_iou(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """Pairwise distance IoU: IoU minus the squared centre distance over the enclosing diagonal squared."""
    return _diou_terms(a, b, eps)[1]


def complete_box_iou(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-7) -> torch.Tensor:
    """Pairwise complete IoU: distance IoU minus an aspect-ratio consistency term."""
    iou, diou = _diou_terms(a, b, eps)
    wa, ha = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    wb, hb = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    v = (4 / math.pi**2) * (torch.atan(wb / hb)[None, :] - torch.atan(wa / ha)[:, None]) ** 2
    alpha = v / (1 - iou + v + eps)
    return diou - alpha * v
