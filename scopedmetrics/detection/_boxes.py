"""Detection inputs (lists of per-image dicts) checked and flattened, box formats, pairwise box and mask overlaps.

Everything here is plain torch (torchvision's box operations, written out):
box format conversions follow ``torchvision.ops.box_convert`` step for step
(``cxcywh`` and ``xywh`` go through ``xyxy``), so the boxes match what
TorchMetrics hands to its backends bit for bit. Mask overlaps are
pycocotools' ``maskUtils.iou`` computed on the pixels themselves (exact
integer counts), with no run-length encoding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from scopedmetrics import _checks

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


GEOMETRY = ("boxes", "masks")


class Batch(NamedTuple):
    """A batch of images flattened: per object, its image (an index into the batch) and its fields.

    ``boxes`` is ``(K, 4)`` zeros when boxes were not asked for; ``masks`` holds
    one bool ``(K_i, H_i, W_i)`` tensor per image (images differ in size, so
    they are not concatenated), empty when masks were not asked for.
    """

    images: int
    image: torch.Tensor  # (K,) int64
    boxes: torch.Tensor  # (K, 4), the input dtype (float)
    labels: torch.Tensor  # (K,) int64
    extra: dict[str, torch.Tensor]  # scores, iscrowd, area: (K,)
    masks: tuple[torch.Tensor, ...] = ()


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


def _boxes_field(owner: Any, arg: str, i: int, value: Any) -> torch.Tensor:
    boxes = _tensor_field(owner, arg, i, "boxes", value)
    if boxes.numel() == 0:
        boxes = boxes.reshape(0, 4)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} 'boxes' must have shape (K, 4), "
                         f"got {tuple(boxes.shape)}")
    return boxes


def _masks_field(owner: Any, arg: str, i: int, value: Any) -> torch.Tensor:
    """One image's masks as bool ``(K, H, W)``: bool, or uint8 of 0 and 1 (what TorchMetrics' ``coco_to_tm`` gives).

    An empty tensor (``torch.zeros(0)``, ``(0, H, W)``), of any dtype, is no masks: its size then matters to nothing.
    """
    masks = _tensor_field(owner, arg, i, "masks", value)
    if masks.numel() == 0 and masks.ndim != 3 and masks.shape[0] == 0:
        return torch.zeros((0, 0, 0), dtype=torch.bool, device=masks.device)
    if masks.numel() == 0 and masks.ndim == 3:
        return masks.bool()
    if masks.dtype not in (torch.bool, torch.uint8):
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` item {i} 'masks' must be a bool tensor "
                        f"(N, H, W) (or uint8 of 0 and 1), got {masks.dtype}; threshold soft masks first")
    if masks.ndim != 3:
        raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} 'masks' must have shape (N, H, W), "
                         f"got {tuple(masks.shape)}")
    if masks.dtype == torch.uint8:
        if bool((masks > 1).any()):
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} 'masks' of dtype uint8 must hold "
                             f"only 0 and 1; pass `masks > 0` if any nonzero pixel is in the mask")
        masks = masks.bool()
    return masks


def flatten(owner: Any, arg: str, items: Any, required: Sequence[str], optional: Sequence[str] = (),
            geometry: Sequence[str] = ("boxes",)) -> Batch:
    """Check a list of per-image dicts (``boxes`` ``(K, 4)``, ``labels`` ``(K,)``, ...) and concatenate them.

    ``geometry`` names which of ``boxes`` and ``masks`` ``(K, H, W)`` each dict must hold; the first one named
    sets each image's object count ``K``.
    """
    if isinstance(items, (Mapping, str, bytes, torch.Tensor)) or not isinstance(items, Sequence):
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` must be a list of dicts (one per image), "
                        f"got {type(items).__name__}")
    geometry = [g for g in GEOMETRY if g in geometry]
    fields: dict[str, list[torch.Tensor]] = {k: [] for k in ("boxes", "masks", "labels", *required, *optional)}
    image: list[torch.Tensor] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TypeError(f"{_checks.where(owner)}: argument `{arg}` item {i} must be a dict, "
                            f"got {type(item).__name__}")
        missing = [k for k in (*geometry, "labels", *required) if k not in item]
        if missing:
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} lacks the key(s) {missing}")
        shapes = {"boxes": _boxes_field, "masks": _masks_field}
        geo = {g: shapes[g](owner, arg, i, item[g]) for g in geometry}
        first = geometry[0]
        k = geo[first].shape[0]
        for key in geometry[1:]:
            if geo[key].shape[0] != k:
                raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} has {k} {first} but "
                                 f"{geo[key].shape[0]} {key!r}")
        device = geo[first].device
        fields["boxes"].append(geo["boxes"] if "boxes" in geo else torch.zeros((k, 4), device=device))
        if "masks" in geo:
            fields["masks"].append(geo["masks"])
        for key in ("labels", *required, *optional):
            if key not in item:
                continue
            v = _tensor_field(owner, arg, i, key, item[key]).reshape(-1)
            if v.shape[0] != k:
                raise ValueError(f"{_checks.where(owner)}: argument `{arg}` item {i} has {k} {first} but "
                                 f"{v.shape[0]} {key!r}")
            fields[key].append(v)
        image.append(torch.full((k,), i, dtype=torch.int64, device=device))
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
    return Batch(n, torch.cat(image) if n else torch.zeros(0, dtype=torch.int64), boxes, labels.long(), extra,
                 tuple(fields["masks"]))


def same_images(owner: Any, preds: Batch, target: Batch) -> None:
    """``preds`` and ``target`` describe the same number of images."""
    if preds.images != target.images:
        raise ValueError(f"{_checks.where(owner)}: arguments `preds` and `target` must hold as many images, "
                         f"got {preds.images} and {target.images}")


def same_sizes(owner: Any, preds: Batch, target: Batch) -> None:
    """Each image's predicted and target masks have one height and width (where both sides hold masks)."""
    for i, (p, t) in enumerate(zip(preds.masks, target.masks)):
        if p.shape[0] and t.shape[0] and p.shape[1:] != t.shape[1:]:
            raise ValueError(f"{_checks.where(owner)}: arguments `preds` and `target` item {i} 'masks' must have "
                             f"the same height and width, got {tuple(p.shape[1:])} and {tuple(t.shape[1:])}")


# -- pairwise overlaps of masks, as pycocotools' maskUtils.iou computes them ----------------------------------

_EXACT_F32 = 2**24  # integer sums up to this are exact in float32
_CHUNK = 2**25  # mask pixels converted to float at once (128 MiB of float32)


def mask_area(masks: torch.Tensor) -> torch.Tensor:
    """Pixel count of each bool mask ``(K, H, W)`` as float64 on the CPU: pycocotools' ``maskUtils.area``."""
    return masks.flatten(1).sum(1).cpu().to(torch.float64)


def mask_iou(d: torch.Tensor, g: torch.Tensor, crowd: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU ``(D, G)`` (float64, CPU) of bool masks ``(D, H, W)`` and ``(G, H, W)``, as ``maskUtils.iou``.

    Intersections are a matmul of the flattened masks in float, exact (float32
    while a mask has at most 2**24 pixels, float64 beyond), on the masks'
    device, a chunk of detections at a time; a crowd ground truth overlaps as
    intersection over the detection's area; no intersection is 0.
    """
    if d.shape[0] == 0 or g.shape[0] == 0:
        return torch.zeros((d.shape[0], g.shape[0]), dtype=torch.float64)
    pixels = d.shape[1] * d.shape[2]
    dtype = torch.float32 if pixels <= _EXACT_F32 else torch.float64
    gf = g.flatten(1).to(device=d.device, dtype=dtype)
    step = max(1, _CHUNK // max(pixels, 1))
    inter = torch.cat([d[s: s + step].flatten(1).to(dtype) @ gf.T for s in range(0, d.shape[0], step)])
    inter = inter.cpu().to(torch.float64)
    da, ga = mask_area(d), mask_area(g)
    union = torch.where(crowd[None, :].cpu(), da[:, None], da[:, None] + ga[None, :] - inter)
    return torch.where(inter > 0, inter / union.clamp(min=1), 0.0)


# -- pairwise overlaps of xyxy boxes, as torchvision.ops computes them ---------------------------------------
# (of boxes in float32 or float64: IntersectionOverUnion.update upcasts half-precision boxes where they enter)

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
