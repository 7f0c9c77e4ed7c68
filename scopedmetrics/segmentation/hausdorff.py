"""Hausdorff distance of semantic segmentation, per sample and class, averaged as TorchMetrics 1.9 averages it.

TorchMetrics' ``HausdorffDistance`` computes one distance per (sample, class)
pair, between the *edges* of the predicted and the target mask (foreground
pixels with a background 4-neighbour, or 6-neighbour in a volume, the image
border counting as background), and returns the mean over every pair it saw.
The state here is, per class, the sum of those distances (float64) and the
number of pairs (int64), both reduced with ``"sum"``: any split of the samples
across processes gives the value of one process.

Distances are exact: the nearest-edge search compares edge points directly
(in chunks, so memory stays bounded), in float64, rather than through
TorchMetrics' distance transform of every pixel to every target edge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.segmentation._inputs import check_config, masks, out_classes
from scopedmetrics.state import state, static

_F64 = torch.float64
_NORM = {"euclidean": 2.0, "taxicab": 1.0, "chessboard": math.inf}
_CHUNK = 1 << 22  # distances held at once by the nearest-edge search (32 MiB of float64)


def edges(x: torch.Tensor) -> torch.Tensor:
    """The edge pixels of bool masks ``(N, C, ...)``: foreground pixels with a background neighbour along an axis.

    Outside the image counts as background (TorchMetrics pads the mask with zeros and erodes it with a cross).

    Examples:
        >>> import torch
        >>> x = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
        >>> x[0, 0, :3, :3] = True
        >>> edges(x)[0, 0].int()
        tensor([[1, 1, 1, 0],
                [1, 0, 1, 0],
                [1, 1, 1, 0],
                [0, 0, 0, 0]], dtype=torch.int32)
    """
    inner = x.clone()
    for axis in range(2, x.ndim):
        n = x.shape[axis]
        if n <= 1:  # every pixel touches the border along this axis
            inner.zero_()
            break
        inner.narrow(axis, 0, n - 1).logical_and_(x.narrow(axis, 1, n - 1))
        inner.narrow(axis, 1, n - 1).logical_and_(x.narrow(axis, 0, n - 1))
        inner.narrow(axis, 0, 1).zero_()
        inner.narrow(axis, n - 1, 1).zero_()
    return x & ~inner


def _farthest_nearest(a: torch.Tensor, b: torch.Tensor, p: float, both: bool) -> float:
    """``max_a min_b d(a, b)`` (and the same from ``b`` when ``both``, the larger of the two) over point sets."""
    step = max(1, _CHUNK // b.shape[0])
    worst = 0.0
    nearest_a = torch.full((b.shape[0],), math.inf, dtype=_F64, device=b.device) if both else None
    for i in range(0, a.shape[0], step):
        d = torch.cdist(a[i : i + step], b, p=p, compute_mode="donot_use_mm_for_euclid_dist")
        worst = max(worst, float(d.amin(1).max()))
        if nearest_a is not None:
            nearest_a = torch.minimum(nearest_a, d.amin(0))
    if nearest_a is not None:
        worst = max(worst, float(nearest_a.max()))
    return worst


class HausdorffDistance(Metric):
    """Hausdorff distance between predicted and target mask edges, as TorchMetrics 1.9 computes it.

    Inputs as for :class:`MeanIoU` (``input_format`` ``"one-hot"``, ``"index"``
    or ``"mixed"``). For every sample and class the distance is the largest
    distance from an edge pixel of one mask to the nearest edge pixel of the
    other (``directed=True``: from the prediction's edges to the target's
    only), measured with ``distance_metric`` (``"euclidean"``, ``"chessboard"``
    or ``"taxicab"``) in units of ``spacing`` (one number per pixel
    dimension; 1 when not given). The value is the mean over every (sample,
    class) pair; a class present in only one of the two masks is infinitely
    far, as in TorchMetrics. A class in neither mask of a sample has no
    distance and is left out (TorchMetrics raises there). Images and volumes
    of any shape work.

    Examples:
        >>> import torch
        >>> from scopedmetrics.segmentation import HausdorffDistance
        >>> target = torch.zeros(2, 6, 6, dtype=torch.long)
        >>> target[:, 1:4, 1:4] = 1
        >>> preds = target.clone()
        >>> preds[0, 4, 4] = 1          # one stray pixel, a diagonal step off the square's corner
        >>> preds[1] = 0                # class 1 missed altogether in the second image
        >>> m = HausdorffDistance(2, input_format="index")
        >>> m.update(preds[:1], target[:1]).compute()
        tensor(1.4142)
        >>> taxicab = HausdorffDistance(2, distance_metric="taxicab", input_format="index")
        >>> taxicab.update(preds[:1], target[:1]).compute()
        tensor(2.)
        >>> m.update(preds, target).compute()
        tensor(inf)
        >>> m.update(preds, target).count    # per class: the (sample, class) pairs folded in
        tensor([2])
    """

    num_classes: int = static()
    include_background: bool = static(default=False)
    distance_metric: str = static(default="euclidean")
    spacing: tuple[float, ...] | None = static(default=None)
    directed: bool = static(default=False)
    input_format: str = static(default="one-hot")
    score: torch.Tensor = state("sum", init=lambda m: torch.zeros(m._classes(), dtype=_F64))
    count: torch.Tensor = state("sum", init=lambda m: torch.zeros(m._classes(), dtype=torch.int64))

    def __post_init__(self) -> None:
        check_config(self)
        _checks.check_choice(self, "distance_metric", tuple(_NORM))
        _checks.check_bool(self, "directed")
        object.__setattr__(self, "spacing", _spacing(self, self.spacing))  # frozen: one canonical form

    def _classes(self) -> int:
        return out_classes(self.num_classes, self.include_background)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> HausdorffDistance:
        """Fold in a batch of segmentations; ``self`` is unchanged."""
        ph, th = masks(self, preds, target)
        dims = ph.ndim - 2
        if self.spacing is not None and len(self.spacing) != dims:
            raise ValueError(
                f"{_checks.where(self)}: argument `spacing` gives {len(self.spacing)} values for inputs with {dims} "
                f"pixel dimensions (shapes {tuple(ph.shape)} as one-hot)"
            )
        scale = torch.tensor(self.spacing or (1.0,) * dims, dtype=_F64, device=ph.device)
        ep, et = edges(ph), edges(th)
        has_p, has_t = ep.flatten(2).any(-1), et.flatten(2).any(-1)  # an edge exactly when the mask is not empty
        seen = has_p | has_t
        dist = torch.where(seen, math.inf, 0.0).to(_F64)  # a mask missed altogether: infinitely far
        p = _NORM[self.distance_metric]
        for n, c in (has_p & has_t).nonzero().tolist():
            a = ep[n, c].nonzero().to(_F64) * scale
            b = et[n, c].nonzero().to(_F64) * scale
            dist[n, c] = _farthest_nearest(a, b, p, both=not self.directed)
        device = self.score.device
        return self.replace(score=self.score + dist.sum(0).to(device), count=self.count + seen.sum(0).to(device))

    def compute(self) -> torch.Tensor:
        """The mean distance over the (sample, class) pairs seen; ``inf`` if a class was missed anywhere."""
        return (self.score.sum() / self.count.sum().to(_F64)).float()


def _spacing(owner: HausdorffDistance, value: object) -> tuple[float, ...] | None:
    """``spacing`` as a tuple of positive finite floats (from a list, tuple or 1-d tensor), or ``None``."""
    if value is None:
        return None
    name = type(owner).__name__
    if isinstance(value, torch.Tensor):
        if value.ndim != 1 or value.is_complex() or value.dtype == torch.bool:
            raise ValueError(f"{name}: argument `spacing` must be a 1-d real tensor, got {value.dtype} of shape "
                             f"{tuple(value.shape)}")
        value = value.tolist()
    if not isinstance(value, Sequence) or isinstance(value, str) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    ):
        raise TypeError(f"{name}: argument `spacing` must be a list, tuple or tensor of numbers, got {value!r}")
    out = tuple(float(v) for v in value)
    if not out or not all(math.isfinite(v) and v > 0 for v in out):
        raise ValueError(f"{name}: argument `spacing` must hold positive finite numbers, one per pixel dimension, "
                         f"got {value!r}")
    return out
