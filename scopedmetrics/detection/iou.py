"""Box overlap metrics: the mean IoU (or GIoU, DIoU, CIoU) of predicted and ground-truth boxes.

As in TorchMetrics 1.9, every image gives a matrix of overlaps between its
predicted and its ground-truth boxes; pairs below ``iou_threshold`` and, with
``respect_labels``, pairs of different labels are invalid (set to the invalid
value); the value is the mean of the valid entries over all images. The
state is that mean's float64 sum and int64 count, plus, with
``class_metrics``, one row ``(label, sum, count)`` per class and update (a
``cat`` state): no matrix is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.detection import _boxes
from scopedmetrics.metric import Metric
from scopedmetrics.state import append, state, static

_F64 = torch.float64


def _rows() -> dict[str, torch.Tensor]:
    return {"label": torch.zeros(0, dtype=torch.int64), "sum": torch.zeros(0, dtype=_F64),
            "count": torch.zeros(0, dtype=torch.int64)}


class IntersectionOverUnion(Metric):
    """Mean intersection over union of predicted and ground-truth boxes, as TorchMetrics 1.9 computes it.

    ``preds`` and ``target`` are lists with one dict per image: ``boxes``
    ``(K, 4)`` in ``box_format`` and integer ``labels`` ``(K,)``. Per image the
    ``(predictions, targets)`` overlap matrix is computed; entries below
    ``iou_threshold`` or (``respect_labels``) between different labels are
    left out, and the value is the mean of the rest over all images (0 when
    none is left). An image without predictions (or without targets) adds, as
    in TorchMetrics, a zero for every target (or prediction).
    ``class_metrics=True`` adds ``"iou/cl_{label}"``: the mean over the entries
    of the targets of that label (0 for a label with none).

    Examples:
        >>> import torch
        >>> from scopedmetrics.detection import IntersectionOverUnion
        >>> preds = [{"boxes": torch.tensor([[296.55, 93.96, 314.97, 152.79], [328.94, 97.05, 342.49, 122.98]]),
        ...           "labels": torch.tensor([4, 5])}]
        >>> target = [{"boxes": torch.tensor([[300.00, 100.00, 315.00, 150.00], [330.00, 100.00, 350.00, 125.00]]),
        ...            "labels": torch.tensor([4, 5])}]
        >>> IntersectionOverUnion(class_metrics=True).update(preds, target).compute()
        {'iou': tensor(0.5992), 'iou/cl_4': tensor(0.6898), 'iou/cl_5': tensor(0.5086)}
    """

    box_format: str = static(default="xyxy")
    iou_threshold: float | None = static(default=None)
    class_metrics: bool = static(default=False)
    respect_labels: bool = static(default=True)
    total: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=_F64))
    count: torch.Tensor = state("sum", default=0)
    rows: dict[str, torch.Tensor] = state("cat", default=_rows)

    key: ClassVar[str] = "iou"
    invalid: ClassVar[float] = -1.0
    pairwise: ClassVar[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = staticmethod(_boxes.box_iou)

    def __post_init__(self) -> None:
        _checks.check_choice(self, "box_format", _boxes.BOX_FORMATS)
        if self.iou_threshold is not None:
            _checks.check_number(self, "iou_threshold")
        _checks.check_bool(self, "class_metrics")
        _checks.check_bool(self, "respect_labels")

    def _matrix(self, det: torch.Tensor, dl: torch.Tensor, gt: torch.Tensor, gl: torch.Tensor) -> torch.Tensor:
        """One image's overlap matrix with invalid entries set to the invalid value (TorchMetrics' rules)."""
        if det.shape[0] == 0 or gt.shape[0] == 0:  # TorchMetrics: a square of zeros, the diagonal valid
            k = gt.shape[0] if det.shape[0] == 0 else det.shape[0]
            mat = torch.zeros((k, k), dtype=torch.float32, device=det.device)
            if self.respect_labels:
                mat[~torch.eye(k, dtype=torch.bool, device=det.device)] = self.invalid
            return mat
        mat = type(self).pairwise(det, gt)
        if self.iou_threshold is not None:
            mat = torch.where(mat < self.iou_threshold, self.invalid, mat)
        if self.respect_labels:
            mat = torch.where(dl[:, None] == gl[None, :], mat, self.invalid)
        return mat

    def update(self, preds: list[dict[str, torch.Tensor]], target: list[dict[str, torch.Tensor]]) -> Self:
        """Fold in a batch of images' predicted and ground-truth boxes; ``self`` is unchanged."""
        p = _boxes.flatten(self, "preds", preds, ())
        t = _boxes.flatten(self, "target", target, ())
        _boxes.same_images(self, p, t)
        # upcast before the format conversion: xywh -> xyxy adds coordinates, which half precision rounds
        pb = _boxes.to_xyxy(_checks.widened(p.boxes), self.box_format)
        tb = _boxes.to_xyxy(_checks.widened(t.boxes), self.box_format)
        total, count = torch.zeros((), dtype=_F64), torch.zeros((), dtype=torch.int64)
        labels, sums, counts = [p.labels, t.labels], [], []
        for i in range(p.images):
            di, gi = p.image == i, t.image == i
            gl = t.labels[gi]
            mat = self._matrix(pb[di], p.labels[di], tb[gi], gl)
            valid = mat != self.invalid
            total = total + mat[valid].sum(dtype=_F64)
            count = count + valid.sum()
            if self.class_metrics and gl.numel() and mat.shape[1] == gl.shape[0]:
                # per target column: its label, and the sum and count of its valid entries
                labels.append(gl)
                sums.append(torch.where(valid, mat, 0).sum(0, dtype=_F64))
                counts.append(valid.sum(0))
        if bool(total.isnan()):
            self._refuse_undefined(p, t, pb, tb)
        new = self.replace(total=self.total + total, count=self.count + count)
        if not self.class_metrics:
            return new
        # one row per label seen in the batch (predicted or target): the class list and the per-class sums
        every = torch.cat(labels)
        col_labels = torch.cat(labels[2:]) if sums else every[:0]
        classes, where = torch.unique(torch.cat([every, col_labels]), return_inverse=True)
        at = where[every.shape[0]:]
        s = torch.zeros(classes.shape[0], dtype=_F64)
        c = torch.zeros(classes.shape[0], dtype=torch.int64)
        if sums:
            s.index_add_(0, at, torch.cat(sums))
            c.index_add_(0, at, torch.cat(counts))
        rows = new.rows
        return new.replace(rows={"label": append(rows["label"], classes), "sum": append(rows["sum"], s),
                                 "count": append(rows["count"], c)})

    def _refuse_undefined(self, p: Any, t: Any, pb: torch.Tensor, tb: torch.Tensor) -> None:
        """Raise for the first image with an overlap that is 0/0 (boxes of zero area), naming it."""
        for i in range(p.images):
            di, gi = p.image == i, t.image == i
            if bool(self._matrix(pb[di], p.labels[di], tb[gi], t.labels[gi]).isnan().any()):
                raise ValueError(
                    f"{type(self).__name__}.update: argument `boxes` of image {i}: a predicted and a target box "
                    f"have a {self.key} of 0/0 (boxes of zero area: no union, no enclosing box or no aspect "
                    "ratio); drop boxes of zero area (mAP, as COCO, counts such a pair as no overlap)"
                )

    def compute(self) -> dict[str, torch.Tensor]:
        """The mean overlap (and, with ``class_metrics``, one per target label)."""
        value = (self.total / self.count).float() if int(self.count) else torch.tensor(0.0)
        out = {self.key: value}
        if self.class_metrics:
            classes, where = torch.unique(self.rows["label"], return_inverse=True)
            s = torch.zeros(classes.shape[0], dtype=_F64).index_add_(0, where, self.rows["sum"])
            c = torch.zeros(classes.shape[0], dtype=torch.int64).index_add_(0, where, self.rows["count"])
            for k in range(classes.shape[0]):
                cv = int(c[k])
                out[f"{self.key}/cl_{int(classes[k])}"] = (s[k] / cv).float() if cv else torch.tensor(0.0)
        return out


class GeneralizedIntersectionOverUnion(IntersectionOverUnion):
    """As :class:`IntersectionOverUnion` with the generalized IoU (Rezatofighi et al., 2019), key ``"giou"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.detection import GeneralizedIntersectionOverUnion
        >>> preds = [{"boxes": torch.tensor([[0.0, 0.0, 2.0, 2.0]]), "labels": torch.tensor([1])}]
        >>> target = [{"boxes": torch.tensor([[1.0, 1.0, 3.0, 3.0]]), "labels": torch.tensor([1])}]
        >>> GeneralizedIntersectionOverUnion().update(preds, target).compute()
        {'giou': tensor(-0.0794)}
    """

    key: ClassVar[str] = "giou"
    pairwise: ClassVar[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = staticmethod(
        _boxes.generalized_box_iou)


class DistanceIntersectionOverUnion(IntersectionOverUnion):
    """As :class:`IntersectionOverUnion` with the distance IoU (Zheng et al., 2020), key ``"diou"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.detection import DistanceIntersectionOverUnion
        >>> preds = [{"boxes": torch.tensor([[0.0, 0.0, 2.0, 2.0]]), "labels": torch.tensor([1])}]
        >>> target = [{"boxes": torch.tensor([[1.0, 1.0, 3.0, 3.0]]), "labels": torch.tensor([1])}]
        >>> DistanceIntersectionOverUnion().update(preds, target).compute()
        {'diou': tensor(0.0317)}
    """

    key: ClassVar[str] = "diou"
    pairwise: ClassVar[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = staticmethod(_boxes.distance_box_iou)


class CompleteIntersectionOverUnion(IntersectionOverUnion):
    """As :class:`IntersectionOverUnion` with the complete IoU (Zheng et al., 2020), key ``"ciou"``.

    Its invalid value is -2, as in TorchMetrics (CIoU can reach -1).

    Examples:
        >>> import torch
        >>> from scopedmetrics.detection import CompleteIntersectionOverUnion
        >>> preds = [{"boxes": torch.tensor([[0.0, 0.0, 2.0, 3.0]]), "labels": torch.tensor([1])}]
        >>> target = [{"boxes": torch.tensor([[1.0, 1.0, 3.0, 3.0]]), "labels": torch.tensor([1])}]
        >>> CompleteIntersectionOverUnion().update(preds, target).compute()
        {'ciou': tensor(0.1802)}
    """

    key: ClassVar[str] = "ciou"
    invalid: ClassVar[float] = -2.0
    pairwise: ClassVar[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = staticmethod(_boxes.complete_box_iou)
