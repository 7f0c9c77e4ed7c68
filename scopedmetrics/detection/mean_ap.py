"""Mean average precision and recall of object detection, exactly as COCO's evaluation (pycocotools) computes them.

COCO matches detections to ground truth per image and class, which needs
nothing but that image: so ``update`` does the matching and keeps, per
detection, a compact row: its class, score, rank among its image's
detections of that class, and a match code per (IoU threshold, area range)
(0 false positive, 1 true positive, 2 ignored). Per update and class it keeps
the number of ground-truth objects that count per area range. These are
``cat`` states of small integers and ``"sum"``-free counts, a few dozen bytes
per detection; boxes and masks are never kept. ``compute`` sorts the rows by
score and accumulates precision and recall as ``COCOeval.accumulate`` does,
so any split of the images across processes gives the single-process value.

What ``update`` does for one image, class, area range and IoU threshold is
``COCOeval.evaluateImg``: detections sorted by score (stable) and cut to the
largest ``max_detection_thresholds``; ground truth that is crowd or outside
the area range is *ignored*; each detection in turn takes the unmatched
ground truth of highest IoU at or above the threshold, preferring ground
truth that counts over ignored ground truth (ties: the last in input order);
crowd ground truth may be taken any number of times and overlaps as
intersection over the detection's area; a detection matched to ignored
ground truth, or unmatched and outside the area range, is ignored. The
smaller maxDets only take the first detections of each image and class,
which is why the rank is kept: COCO's ``maxDets`` limit applies per image
*and class*, not per image.

Only the overlaps and areas depend on ``iou_type``: boxes (``"bbox"``) overlap
as pycocotools' ``bbIou`` and measure ``w * h``; masks (``"segm"``) overlap as
``maskUtils.iou`` (pixel intersections by a matmul, in the batch's update)
and measure their pixel count. With both, the rows share label, score and
rank and keep one match code per type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from scopedmetrics import _checks
from scopedmetrics.detection import _boxes
from scopedmetrics.metric import Metric
from scopedmetrics.state import append, state, static

_F64 = torch.float64
IOU_TYPES = ("bbox", "segm")
_GEOMETRY = {"bbox": "boxes", "segm": "masks"}  # the input key each iou_type reads
AREAS = ((0.0, 1e5**2), (0.0, 32.0**2), (32.0**2, 96.0**2), (96.0**2, 1e5**2))  # all, small, medium, large
FP, TP, IGNORED = 0, 1, 2
_EPS = float(torch.finfo(torch.float64).eps)  # np.spacing(1), as COCOeval.accumulate


def _linspace(start: float, stop: float, num: int) -> list[float]:
    """``numpy.linspace(start, stop, num)`` in Python floats, bit for bit: COCOeval's own thresholds.

    TorchMetrics hands COCOeval float32 steps instead (0.6 as 0.6000000238...),
    so a recall of exactly 0.6 (3 of 5) misses that threshold there.
    """
    step = (stop - start) / (num - 1)
    return [i * step + start for i in range(num - 1)] + [stop]


def _default_iou() -> list[float]:
    return _linspace(0.5, 0.95, 10)


def _default_rec() -> list[float]:
    return _linspace(0.0, 1.0, 101)


def _coco_iou(d: torch.Tensor, g: torch.Tensor, crowd: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU of xywh float64 boxes ``(..., D, 4)`` and ``(..., G, 4)`` as pycocotools' ``bbIou``."""
    dx, dy, dw, dh = (d[..., :, None, k] for k in range(4))
    gx, gy, gw, gh = (g[..., None, :, k] for k in range(4))
    w = torch.minimum(dx + dw, gx + gw) - torch.maximum(dx, gx)
    h = torch.minimum(dy + dh, gy + gh) - torch.maximum(dy, gy)
    inter = w * h
    da, ga = dw * dh, gw * gh
    union = torch.where(crowd[..., None, :], da, da + ga - inter)
    return torch.where((w > 0) & (h > 0), inter / union, 0.0)


def _padded(group: torch.Tensor, groups: int, *values: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Scatter rows sorted by ``group`` into ``(groups, longest, ...)``; also return the validity mask."""
    counts = torch.bincount(group, minlength=groups)
    longest = int(counts.max()) if counts.numel() else 0
    start = torch.cumsum(counts, 0) - counts
    pos = torch.arange(group.shape[0]) - start[group]
    valid = torch.zeros((groups, longest), dtype=torch.bool)
    valid[group, pos] = True
    out = []
    for v in values:
        full = torch.zeros((groups, longest, *v.shape[1:]), dtype=v.dtype)
        full[group, pos] = v
        out.append(full)
    return valid, out


PairIou = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``pair_iou(d, g)``: IoU ``(P, D, G)`` of detections ``d`` ``(P, D)`` and ground truth ``g`` ``(P, G)`` (indices)."""


def match(det_group: torch.Tensor, det_area: torch.Tensor, gt_group: torch.Tensor, gt_area: torch.Tensor,
          gt_crowd: torch.Tensor, groups: int, thresholds: torch.Tensor, pair_iou: PairIou) -> torch.Tensor:
    """COCO's greedy matching in every (image, class) group at once: a code ``(D, T, A)`` per detection.

    Detections come sorted by group and, within a group, by descending score;
    ground truth sorted by group, in input order within it. ``pair_iou`` is
    called once, with indices into these arrays padded per group (the padding's
    entries are never read), so boxes and masks share the matching.
    """
    t_count, a_count = thresholds.shape[0], len(AREAS)
    codes = torch.zeros((det_group.shape[0], t_count, a_count), dtype=torch.int8)
    if det_group.shape[0] == 0:
        return codes
    dv, (da, d_index) = _padded(det_group, groups, det_area, torch.arange(det_group.shape[0]))
    gv, (ga, gc, g_index) = _padded(gt_group, groups, gt_area, gt_crowd, torch.arange(gt_group.shape[0]))
    g_count = ga.shape[1]
    lo = torch.tensor([a[0] for a in AREAS], dtype=_F64)
    hi = torch.tensor([a[1] for a in AREAS], dtype=_F64)
    g_out = (ga[..., None] < lo) | (ga[..., None] > hi)  # (P, G, A)
    g_ignored = (gc[..., None] | g_out)[:, None]  # (P, 1, G, A): the same for every threshold
    g_crowd = gc[:, None, :, None]
    g_valid = gv[:, None, :, None]
    d_out = (da[..., None] < lo) | (da[..., None] > hi)  # (P, D, A)
    iou = pair_iou(d_index, g_index) if g_count else torch.zeros((*da.shape[:2], 0), dtype=_F64)
    # COCO accepts iou >= min(t, 1 - 1e-10)
    limit = thresholds.clamp(max=1 - 1e-10)[None, :, None, None]  # (1, T, 1, 1)
    taken = torch.zeros((groups, t_count, g_count, a_count), dtype=torch.bool)
    flip = torch.arange(g_count - 1, -1, -1)
    for j in range(da.shape[1]):
        live = dv[:, j]
        if not bool(live.any()):
            continue
        ious = iou[:, j][:, None, :, None]  # (P, 1, G, 1)
        ok = g_valid & (ious >= limit) & (~taken | g_crowd)  # (P, T, G, A)
        regular = ok & ~g_ignored
        pool = torch.where(regular.any(2, keepdim=True), regular, ok)  # ignored ground truth only as a fallback
        score = torch.where(pool, ious, -1.0)
        best = flip[score.flip(2).argmax(2)] if g_count else torch.zeros((groups, t_count, a_count),
                                                                              dtype=torch.int64)
        matched = pool.any(2) & live[:, None, None]  # (P, T, A)
        hit_ignored = torch.gather(g_ignored.expand(-1, t_count, -1, -1), 2, best[:, :, None]).squeeze(2) \
            if g_count else matched
        code = torch.where(matched, torch.where(hit_ignored, IGNORED, TP),
                           torch.where(d_out[:, j][:, None, :], IGNORED, FP)).to(torch.int8)
        rows = d_index[live, j]
        codes[rows] = code[live]
        if g_count:
            taken.scatter_(2, best[:, :, None], matched[:, :, None] | torch.gather(taken, 2, best[:, :, None]))
    return codes


class Overlaps(NamedTuple):
    """What the matching needs of one ``iou_type``: areas (float64) and the pairwise IoU of a batch's objects."""

    det_area: torch.Tensor  # (D,)
    gt_area: torch.Tensor  # (G,): ``area`` where given and positive, else the box's or mask's
    pair_iou: PairIou  # indices into the batch's detections and ground truth


def _box_overlaps(p: _boxes.Batch, t: _boxes.Batch, crowd: torch.Tensor, given: torch.Tensor,
                  box_format: str) -> Overlaps:
    """Boxes in xywh float64, as TorchMetrics hands them to COCOeval; areas ``w * h``."""
    det = _boxes.to_xywh(p.boxes.to(_F64), box_format).cpu()  # float64 first: COCOeval's boxes are float64
    gt = _boxes.to_xywh(t.boxes.to(_F64), box_format).cpu()

    def pair_iou(d: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return _coco_iou(det[d], gt[g], crowd[g])

    return Overlaps(det[:, 2] * det[:, 3], torch.where(given > 0, given, gt[:, 2] * gt[:, 3]), pair_iou)


def _mask_overlaps(p: _boxes.Batch, t: _boxes.Batch, crowd: torch.Tensor, given: torch.Tensor) -> Overlaps:
    """Masks: per image, the ``(D_i, G_i)`` IoU table (pycocotools' ``maskUtils.iou``), all flattened into one.

    Areas are pixel counts (pycocotools' ``maskUtils.area``). No mask outlives this batch.
    """
    p_img, t_img = p.image.cpu(), t.image.cpu()
    d_count = torch.bincount(p_img, minlength=p.images)
    g_count = torch.bincount(t_img, minlength=t.images)
    d_start, g_start = torch.cumsum(d_count, 0) - d_count, torch.cumsum(g_count, 0) - g_count
    sizes = d_count * g_count
    offset = torch.cumsum(sizes, 0) - sizes
    flat = torch.cat([torch.zeros(0, dtype=_F64)] + [
        _boxes.mask_iou(dm, gm, crowd[int(g_start[i]): int(g_start[i]) + gm.shape[0]]).flatten()
        for i, (dm, gm) in enumerate(zip(p.masks, t.masks)) if int(sizes[i])])

    def pair_iou(d: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        if flat.numel() == 0:
            return torch.zeros((*d.shape, g.shape[-1]), dtype=_F64)
        di, gi = p_img[d], t_img[g]  # a group's objects share one image; the padding may not
        same = di[:, :, None] == gi[:, None, :]
        index = (offset[di] + (d - d_start[di]) * g_count[di])[:, :, None] + (g - g_start[gi])[:, None, :]
        return torch.where(same, flat[index.clamp(max=flat.numel() - 1)], 0.0)

    det_area = torch.cat([torch.zeros(0, dtype=_F64)] + [_boxes.mask_area(m) for m in p.masks])
    gt_area = torch.cat([torch.zeros(0, dtype=_F64)] + [_boxes.mask_area(m) for m in t.masks])
    return Overlaps(det_area, torch.where(given > 0, given, gt_area), pair_iou)


def _reindexed(pair_iou: PairIou, det_order: torch.Tensor, gt_order: torch.Tensor) -> PairIou:
    """``pair_iou`` of indices into the sorted arrays, ``det_order`` and ``gt_order`` mapping them back."""
    return lambda d, g: pair_iou(det_order[d], gt_order[g])


class MeanAveragePrecision(Metric):
    """COCO mean average precision and recall of boxes or masks, with TorchMetrics 1.9's arguments and output.

    ``preds`` and ``target`` are lists with one dict per image: for
    ``iou_type="bbox"`` ``boxes`` ``(K, 4)`` in ``box_format``, for ``"segm"``
    ``masks``, a bool ``(K, H, W)`` tensor (uint8 of 0 and 1 accepted; an
    image's predicted and target masks share ``H, W``), for both types both;
    integer ``labels`` ``(K,)``, for predictions ``scores`` ``(K,)``, for
    targets optionally ``iscrowd`` ``(K,)`` (crowd regions: matched without
    penalty, never counted) and ``area`` ``(K,)`` (used for the small, medium
    and large ranges where positive; else the box's area, or the mask's pixel
    count). ``compute`` returns the dict TorchMetrics returns: ``map``,
    ``map_50``, ``map_75``, ``map_small``, ``map_medium``, ``map_large``,
    ``mar_{m}`` for each of ``max_detection_thresholds``, ``mar_small``,
    ``mar_medium``, ``mar_large``, ``map_per_class`` and
    ``mar_{max}_per_class`` (``-1`` unless ``class_metrics``) and ``classes``;
    ``-1`` where there is nothing to average. With ``iou_type=("bbox",
    "segm")`` every key but ``classes`` comes once per type, prefixed
    ``bbox_`` and ``segm_`` (``bbox_map``, ..., ``segm_map``, ...), in the
    order of ``iou_type``. ``average="micro"`` pools the classes into one.
    ``extended_summary=True`` adds COCO's ``precision`` ``(T, R, K, A, M)``,
    ``recall`` ``(T, K, A, M)`` and ``scores`` arrays (TorchMetrics also
    returns every IoU matrix, which is not kept here). ``backend`` is
    accepted and changes nothing. Masks, like boxes, are used in ``update``
    and dropped: the state holds only the match rows.

    Examples:
        >>> import torch
        >>> from scopedmetrics.detection import MeanAveragePrecision
        >>> preds = [{"boxes": torch.tensor([[258.0, 41.0, 606.0, 285.0]]), "scores": torch.tensor([0.536]),
        ...           "labels": torch.tensor([0])}]
        >>> target = [{"boxes": torch.tensor([[214.0, 41.0, 562.0, 285.0]]), "labels": torch.tensor([0])}]
        >>> result = MeanAveragePrecision().update(preds, target).compute()
        >>> {k: round(float(v), 4) for k, v in result.items() if k in ("map", "map_50", "map_75", "mar_100")}
        {'map': 0.6, 'map_50': 1.0, 'map_75': 1.0, 'mar_100': 0.6}

        Masks (an IoU of 0.74: a match at the thresholds 0.5 to 0.7):

        >>> mask = torch.zeros(1, 10, 12, dtype=torch.bool)
        >>> mask[0, 2:8, 2:9] = True
        >>> guess = torch.zeros(1, 10, 12, dtype=torch.bool)
        >>> guess[0, 3:8, 2:10] = True
        >>> preds = [{"masks": guess, "scores": torch.tensor([0.8]), "labels": torch.tensor([0])}]
        >>> target = [{"masks": mask, "labels": torch.tensor([0])}]
        >>> result = MeanAveragePrecision(iou_type="segm").update(preds, target).compute()
        >>> {k: round(float(v), 4) for k, v in result.items() if k in ("map", "map_50", "map_75", "mar_100")}
        {'map': 0.5, 'map_50': 1.0, 'map_75': 0.0, 'mar_100': 0.5}
    """

    box_format: str = static(default="xyxy")
    iou_type: Any = static(default="bbox")
    iou_thresholds: list[float] | None = static(default=None)
    rec_thresholds: list[float] | None = static(default=None)
    max_detection_thresholds: list[int] | None = static(default=None)
    class_metrics: bool = static(default=False)
    extended_summary: bool = static(default=False)
    average: str = static(default="macro")
    backend: str = static(default="pycocotools")
    images: torch.Tensor = state("sum", default=0)
    classes: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.int64))
    detections: dict[str, torch.Tensor] = state("cat", init=lambda m: m._detection_rows())
    ground_truth: dict[str, torch.Tensor] = state("cat", init=lambda m: m._ground_truth_rows())

    def __post_init__(self) -> None:
        name = "MeanAveragePrecision"
        _checks.check_choice(self, "box_format", _boxes.BOX_FORMATS)
        t = self.iou_type
        kinds = (t,) if isinstance(t, str) else tuple(t) if isinstance(t, (tuple, list)) else ()
        if not kinds or any(k not in IOU_TYPES for k in kinds) or len(set(kinds)) != len(kinds):
            raise ValueError(f"{name}: argument `iou_type` must be 'bbox', 'segm' or a tuple of both, "
                             f"got {t!r}")
        for arg in ("iou_thresholds", "rec_thresholds"):
            v = getattr(self, arg)
            if v is not None and (not isinstance(v, list) or not v or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in v)):
                raise ValueError(f"{name}: argument `{arg}` must be None or a non-empty list of numbers in [0, 1], "
                                 f"got {v!r}")
        m = self.max_detection_thresholds
        if m is not None and (not isinstance(m, list) or len(m) != 3 or not all(
                isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in m)):
            raise ValueError(f"{name}: argument `max_detection_thresholds` must be None or a list of 3 positive "
                             f"ints, got {m!r}")
        _checks.check_bool(self, "class_metrics")
        _checks.check_bool(self, "extended_summary")
        _checks.check_choice(self, "average", ("macro", "micro"))
        _checks.check_choice(self, "backend", ("pycocotools", "faster_coco_eval"))

    # -- configuration, resolved ---------------------------------------------------------------------

    @property
    def _ious(self) -> list[float]:
        return list(self.iou_thresholds) if self.iou_thresholds is not None else _default_iou()

    @property
    def _recs(self) -> list[float]:
        return list(self.rec_thresholds) if self.rec_thresholds is not None else _default_rec()

    @property
    def _max_dets(self) -> list[int]:
        return sorted(self.max_detection_thresholds or [1, 10, 100])

    @property
    def _types(self) -> tuple[str, ...]:
        """``iou_type`` as a tuple: the kinds of overlap evaluated, in output order."""
        return (self.iou_type,) if isinstance(self.iou_type, str) else tuple(self.iou_type)

    def _prefix(self, kind: str) -> str:
        """TorchMetrics' key prefix: none for one ``iou_type``, ``"bbox_"`` / ``"segm_"`` for both."""
        return "" if len(self._types) == 1 else f"{kind}_"

    def _modes(self) -> tuple[str, ...]:
        """The matchings kept: per class (for macro or per-class values) and pooled (micro)."""
        out = []
        if self.average == "macro" or self.class_metrics:
            out.append("macro")
        if self.average == "micro":
            out.append("micro")
        return tuple(out)

    def _detection_rows(self) -> dict[str, torch.Tensor]:
        width = len(self._ious) * len(AREAS)
        rows = {}
        for mode in ("macro", "micro"):
            rows.update({f"{mode}_label": torch.zeros(0, dtype=torch.int64),
                         f"{mode}_score": torch.zeros(0, dtype=_F64),
                         f"{mode}_rank": torch.zeros(0, dtype=torch.int32)})
            rows.update({f"{mode}_{self._prefix(k)}match": torch.zeros((0, width), dtype=torch.int8)
                         for k in self._types})
        return rows

    def _ground_truth_rows(self) -> dict[str, torch.Tensor]:
        rows = {}
        for mode in ("macro", "micro"):
            rows[f"{mode}_label"] = torch.zeros(0, dtype=torch.int64)
            rows.update({f"{mode}_{self._prefix(k)}count": torch.zeros((0, len(AREAS)), dtype=torch.int64)
                         for k in self._types})
        return rows

    # -- update: COCOeval.evaluateImg per image and class -----------------------------------------------------

    def update(
        self, preds: list[dict[str, torch.Tensor]], target: list[dict[str, torch.Tensor]]
    ) -> MeanAveragePrecision:
        """Match a batch of images' detections to their ground truth and keep the rows; ``self`` is unchanged.

        Boxes or masks are read here and dropped: only the rows reach the state.
        """
        geometry = [_GEOMETRY[k] for k in self._types]
        p = _boxes.flatten(self, "preds", preds, ("scores",), geometry=geometry)
        t = _boxes.flatten(self, "target", target, (), ("iscrowd", "area"), geometry=geometry)
        _boxes.same_images(self, p, t)
        if "segm" in self._types:
            _boxes.same_sizes(self, p, t)
        if p.images == 0:
            return self
        crowd = t.extra["iscrowd"].cpu().bool() if "iscrowd" in t.extra else torch.zeros(t.labels.shape[0],
                                                                                         dtype=torch.bool)
        given = t.extra["area"].cpu().to(_F64) if "area" in t.extra else torch.zeros(t.labels.shape[0], dtype=_F64)
        overlaps = {k: _box_overlaps(p, t, crowd, given, self.box_format) if k == "bbox"
                    else _mask_overlaps(p, t, crowd, given) for k in self._types}
        scores = p.extra["scores"].cpu().to(_F64)
        p_img, p_lab, t_img, t_lab = p.image.cpu(), p.labels.cpu(), t.image.cpu(), t.labels.cpu()
        det_rows, gt_rows = dict(self.detections), dict(self.ground_truth)
        thresholds = torch.tensor(self._ious, dtype=_F64)
        lo = torch.tensor([a[0] for a in AREAS], dtype=_F64)
        hi = torch.tensor([a[1] for a in AREAS], dtype=_F64)
        for mode in self._modes():
            dl = p_lab if mode == "macro" else torch.zeros_like(p_lab)
            gl = t_lab if mode == "macro" else torch.zeros_like(t_lab)
            keys, inverse = torch.unique(torch.stack([torch.cat([p_img, t_img]), torch.cat([dl, gl])], 1), dim=0,
                                         return_inverse=True)
            d_group, g_group = inverse[: p_img.shape[0]], inverse[p_img.shape[0]:]
            # detections by group, then descending score (stable: ties keep their input order)
            order = torch.sort(-scores, stable=True).indices
            order = order[torch.sort(d_group[order], stable=True).indices]
            dg = d_group[order]
            counts = torch.bincount(dg, minlength=keys.shape[0])
            rank = torch.arange(dg.shape[0]) - (torch.cumsum(counts, 0) - counts)[dg]
            keep = rank < self._max_dets[-1]
            order, dg, rank = order[keep], dg[keep], rank[keep]
            g_order = torch.sort(g_group, stable=True).indices
            det_rows[f"{mode}_label"] = append(det_rows[f"{mode}_label"], dl[order])
            det_rows[f"{mode}_score"] = append(det_rows[f"{mode}_score"], scores[order])
            det_rows[f"{mode}_rank"] = append(det_rows[f"{mode}_rank"], rank.to(torch.int32))
            labels, where = torch.unique(gl, return_inverse=True)
            gt_rows[f"{mode}_label"] = append(gt_rows[f"{mode}_label"], labels)
            for kind, ov in overlaps.items():
                pre = self._prefix(kind)
                codes = match(dg, ov.det_area[order], g_group[g_order], ov.gt_area[g_order], crowd[g_order],
                              keys.shape[0], thresholds, _reindexed(ov.pair_iou, order, g_order))
                det_rows[f"{mode}_{pre}match"] = append(det_rows[f"{mode}_{pre}match"], codes.flatten(1))
                # ground truth that counts, per label and area range
                counted = ~crowd[:, None] & (ov.gt_area[:, None] >= lo) & (ov.gt_area[:, None] <= hi)
                per_label = torch.zeros((labels.shape[0], len(AREAS)), dtype=torch.int64).index_add_(
                    0, where, counted.long())
                gt_rows[f"{mode}_{pre}count"] = append(gt_rows[f"{mode}_{pre}count"], per_label)
        seen = torch.unique(torch.cat([p_lab, t_lab]))
        return self.replace(images=self.images + p.images, classes=append(self.classes, seen),
                            detections=det_rows, ground_truth=gt_rows)

    # -- compute: COCOeval.accumulate and summarize ----------------------------------------------------------

    def _accumulate(self, mode: str, classes: torch.Tensor,
                    pre: str = "") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """COCO's precision ``(T, R, K, A, M)``, recall ``(T, K, A, M)`` and scores over ``classes``.

        ``pre`` picks the ``iou_type``'s match codes and ground-truth counts.
        """
        t_count, r_count, a_count = len(self._ious), len(self._recs), len(AREAS)
        max_dets = self._max_dets
        k_count, m_count = classes.shape[0], len(max_dets)
        precision = torch.full((t_count, r_count, k_count, a_count, m_count), -1.0, dtype=_F64)
        recall = torch.full((t_count, k_count, a_count, m_count), -1.0, dtype=_F64)
        scores_out = torch.full_like(precision, -1.0)
        rows, gts = self.detections, self.ground_truth
        gt_k = torch.searchsorted(classes, gts[f"{mode}_label"])
        npig = torch.zeros((k_count, a_count), dtype=torch.int64).index_add_(0, gt_k, gts[f"{mode}_{pre}count"])
        det_k = torch.searchsorted(classes, rows[f"{mode}_label"])
        score = rows[f"{mode}_score"]
        # rows are in image order; a stable sort by descending score, then by class, is COCO's order
        order = torch.sort(-score, stable=True).indices
        order = order[torch.sort(det_k[order], stable=True).indices]
        det_k, score = det_k[order], score[order]
        rank = rows[f"{mode}_rank"][order]
        codes = rows[f"{mode}_{pre}match"][order].view(-1, t_count, a_count)
        bounds = torch.searchsorted(det_k, torch.arange(k_count + 1))
        recs = torch.tensor(self._recs, dtype=_F64)
        for k in range(k_count):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            counted = npig[k]  # (A,)
            for mi, m in enumerate(max_dets):
                sel = rank[lo:hi] < m
                c = codes[lo:hi][sel]  # (L, T, A)
                s = score[lo:hi][sel]
                n = c.shape[0]
                tp = torch.cumsum((c == TP).to(_F64), 0)
                fp = torch.cumsum((c == FP).to(_F64), 0)
                rc = tp / counted.clamp(min=1).to(_F64)
                pr = tp / (fp + tp + _EPS)
                pr = pr.flip(0).cummax(0).values.flip(0)  # the precision envelope
                rec_k = rc[-1] if n else torch.zeros((t_count, a_count), dtype=_F64)
                q = torch.zeros((t_count, r_count, a_count), dtype=_F64)
                qs = torch.zeros_like(q)
                if n:
                    seq = rc.permute(1, 2, 0).reshape(-1, n).contiguous()  # (T*A, L)
                    idx = torch.searchsorted(seq, recs.expand(seq.shape[0], -1).contiguous())  # side="left"
                    ok = idx < n
                    safe = idx.clamp(max=n - 1)
                    prs = torch.gather(pr.permute(1, 2, 0).reshape(-1, n), 1, safe)
                    q = torch.where(ok, prs, 0.0).view(t_count, a_count, r_count).permute(0, 2, 1)
                    qs = torch.where(ok, s[safe], 0.0).view(t_count, a_count, r_count).permute(0, 2, 1)
                has = counted > 0  # COCO skips a class with no ground truth that counts: its values stay -1
                precision[:, :, k, :, mi] = torch.where(has, q, -1.0)
                scores_out[:, :, k, :, mi] = torch.where(has, qs, -1.0)
                recall[:, k, :, mi] = torch.where(has, rec_k, -1.0)
        return precision, recall, scores_out

    def _summarize(self, precision: torch.Tensor, recall: torch.Tensor) -> list[float]:
        """``COCOeval.stats``: the 12 means over valid entries (-1 where none)."""
        ious, max_dets = self._ious, self._max_dets

        def mean(ap: bool, area: int, m: int, thr: float | None = None) -> float:
            ms = [i for i, x in enumerate(max_dets) if x == m]
            ts = [i for i, x in enumerate(ious) if x == thr] if thr is not None else list(range(len(ious)))
            if ap:
                s = precision[ts][:, :, :, area][..., ms]
            else:
                s = recall[ts][:, :, area][..., ms]
            s = s[s > -1]
            return float(s.mean()) if s.numel() else -1.0

        big = max_dets[2]
        # pycocotools' stats[0] asks for maxDets=100 whatever the thresholds are (-1 when 100 is not one of them)
        return [mean(True, 0, 100), mean(True, 0, big, 0.5), mean(True, 0, big, 0.75), mean(True, 1, big),
                mean(True, 2, big), mean(True, 3, big), mean(False, 0, max_dets[0]), mean(False, 0, max_dets[1]),
                mean(False, 0, big), mean(False, 1, big), mean(False, 2, big), mean(False, 3, big)]

    def _stat_keys(self) -> list[str]:
        md = self._max_dets
        return ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", f"mar_{md[0]}", f"mar_{md[1]}",
                f"mar_{md[2]}", "mar_small", "mar_medium", "mar_large"]

    def _results(self, kind: str, classes: torch.Tensor) -> dict[str, torch.Tensor]:
        """One ``iou_type``'s keys, in TorchMetrics' order, prefixed as TorchMetrics prefixes them."""
        md, pre = self._max_dets, self._prefix(kind)
        mode = "micro" if self.average == "micro" else "macro"
        pooled = torch.zeros(1, dtype=torch.int64) if mode == "micro" else classes
        precision, recall, scores = self._accumulate(mode, pooled, pre)
        stats = self._summarize(precision, recall)
        out = {f"{pre}{k}": torch.tensor(v, dtype=torch.float32) for k, v in zip(self._stat_keys(), stats)}
        if self.extended_summary:
            out.update({f"{pre}precision": precision, f"{pre}recall": recall, f"{pre}scores": scores})
        if self.class_metrics:
            if mode != "macro":
                precision, recall, _ = self._accumulate("macro", classes, pre)
            maps, mars = [], []
            at_100 = [i for i, x in enumerate(md) if x == 100]  # TorchMetrics takes stats[0]: maxDets=100
            for k in range(classes.shape[0]):
                s = precision[:, :, k, 0][..., at_100]
                s = s[s > -1]
                maps.append(float(s.mean()) if s.numel() else -1.0)
                r = recall[:, k, 0][..., [i for i, x in enumerate(md) if x == md[2]]]
                r = r[r > -1]
                mars.append(float(r.mean()) if r.numel() else -1.0)
            out[f"{pre}map_per_class"] = torch.tensor(maps, dtype=torch.float32)
            out[f"{pre}mar_{md[2]}_per_class"] = torch.tensor(mars, dtype=torch.float32)
        else:
            out[f"{pre}map_per_class"] = torch.tensor(-1.0)
            out[f"{pre}mar_{md[2]}_per_class"] = torch.tensor(-1.0)
        return out

    def compute(self) -> dict[str, torch.Tensor]:
        """COCO's mAP and mAR summary (and per-class values with ``class_metrics``), per ``iou_type``."""
        classes = torch.unique(self.classes)
        if int(self.images) == 0:  # TorchMetrics: no image at all
            out = {f"{self._prefix(kind)}{k}": torch.tensor(-1.0) for kind in self._types for k in self._stat_keys()}
            out["classes"] = classes.to(torch.int32)
            return out
        out = {}
        for kind in self._types:
            out.update(self._results(kind, classes))
        out["classes"] = classes.to(torch.int32)
        return {k: v.squeeze() if v.numel() == 1 else v for k, v in out.items()}  # as TorchMetrics
