"""Vision metrics: COCO mAP over many images, and MeanIoU updates on 512x512 label maps.

Part 1, ``MeanAveragePrecision`` over ``--images`` images (default 5,000) with
20 ground-truth boxes and 20 detections each (10 classes, scores uniform,
detections jittered copies of the boxes and strays, 10% crowds), fed in
batches of 50. Each case runs in a fresh subprocess and reports update time
(all batches), compute time, the rise of peak RSS above the RSS before the
first update, and the bytes of state kept per image:

* sm: ``scopedmetrics.detection.MeanAveragePrecision``;
* tm: TorchMetrics' ``MeanAveragePrecision`` with its fastest backend,
  ``faster_coco_eval``. TorchMetrics imports torchvision only for
  ``box_convert``; torchvision's wheels do not load against this CPU torch,
  so a stand-in module with that one function (a few tensor ops) is
  installed first;
* pycocotools: COCO's own ``COCOeval`` on the same data (its "update" is
  building the COCO dicts), the reference every value is checked against
  (the three must give the same 12 statistics, checked here).

Part 2 times one ``MeanIoU`` update of 8 images of 512x512 with 21 classes
(index labels) against the floor, a bare ``torch.bincount`` of
``target * 21 + pred`` (one dataset confusion matrix), and TorchMetrics'
``MeanIoU``; round-robin, median of ``--repeat``. Part 3 does the same at
8 x 256x256, for index labels and bool one-hot masks, with TorchMetrics in the
same round-robin and every row also as a ratio to it (``--seg``: parts 2 and 3 only).

Run: ``python benchmarks/vision.py`` (``--quick``: 1,000 images, fewer calls).
Prints Markdown tables and writes ``benchmarks/results/vision.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _common
import torch

BOXES = 20
CLASSES = 10
BATCH = 50
CASES = ("sm", "tm-faster_coco_eval", "pycocotools")
SIDE, SEG_CLASSES, SEG_BATCH = 512, 21, 8


def scene(n: int) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    g = torch.Generator().manual_seed(0)
    preds, target = [], []
    for _ in range(n):
        xy = torch.rand(BOXES, 2, generator=g) * 500
        wh = 8 + torch.rand(BOXES, 2, generator=g) * 150
        gt = torch.cat([xy, xy + wh], 1)
        labels = torch.randint(0, CLASSES, (BOXES,), generator=g)
        hit = BOXES * 3 // 4
        det = torch.cat([gt[:hit] + torch.randn(hit, 4, generator=g) * 0.1 * wh[:hit].repeat(1, 2),
                         torch.cat([xy[hit:], xy[hit:] + wh[hit:]], 1) + 40])
        det = torch.cat([det[:, :2], torch.maximum(det[:, 2:], det[:, :2] + 1)], 1)
        d_labels = torch.where(torch.rand(BOXES, generator=g) < 0.9, labels, torch.randint(0, CLASSES, (BOXES,),
                                                                                          generator=g))
        target.append({"boxes": gt, "labels": labels, "iscrowd": (torch.rand(BOXES, generator=g) < 0.1).long()})
        preds.append({"boxes": det, "scores": torch.rand(BOXES, generator=g), "labels": d_labels})
    return preds, target


# -- part 1: one case per subprocess -----------------------------------------------------------------


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _peak_kb() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _stand_in_torchvision() -> None:
    import types

    import torchmetrics.detection.mean_ap as tm_map  # before the stand-in: torchmetrics probes for the package

    def box_convert(boxes: torch.Tensor, in_fmt: str, out_fmt: str) -> torch.Tensor:
        assert in_fmt == "xyxy" and out_fmt == "xywh"
        return torch.cat([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], 1)

    ops = types.ModuleType("torchvision.ops")
    ops.box_convert = box_convert  # type: ignore[attr-defined]
    tv = types.ModuleType("torchvision")
    tv.ops = ops  # type: ignore[attr-defined]
    sys.modules["torchvision"], sys.modules["torchvision.ops"] = tv, ops
    tm_map._TORCHVISION_AVAILABLE = True


def _coco_stats(preds: list[Any], target: list[Any]) -> Any:
    import contextlib
    import io

    import numpy as np
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def anns(items: list[Any], scored: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            b = item["boxes"]
            xywh = torch.cat([b[:, :2], b[:, 2:] - b[:, :2]], 1).tolist()
            labels = item["labels"].tolist()
            crowd = item["iscrowd"].tolist() if "iscrowd" in item else [0] * len(labels)
            scores = item["scores"].tolist() if scored else None
            for k, box in enumerate(xywh):
                ann = {"id": len(out) + 1, "image_id": i, "bbox": box, "area": box[2] * box[3],
                       "category_id": labels[k], "iscrowd": crowd[k]}
                if scores is not None:
                    ann["score"] = scores[k]
                out.append(ann)
        return out

    with contextlib.redirect_stdout(io.StringIO()):
        images = [{"id": i} for i in range(len(target))]
        cats = [{"id": c} for c in range(CLASSES)]
        gt, dt = COCO(), COCO()
        gt.dataset = {"images": images, "annotations": anns(target, False), "categories": cats}
        dt.dataset = {"images": images, "annotations": anns(preds, True), "categories": cats}
        gt.createIndex()
        dt.createIndex()
        built = time.perf_counter()
        e = COCOeval(gt, dt, "bbox")
        e.params.iouThrs = np.array(torch.linspace(0.5, 0.95, 10).tolist())
        e.params.recThrs = np.array(torch.linspace(0.0, 1.0, 101).tolist())
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e.stats, built


def _storage_bytes(tensors: list[torch.Tensor]) -> int:
    seen, total = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


def _case(name: str, n: int) -> dict[str, Any]:
    _common.setup()
    preds, target = scene(n)
    if name == "tm-faster_coco_eval":
        _stand_in_torchvision()
    import warnings

    warnings.simplefilter("ignore")
    _reset_peak()
    base = _rss_kb()
    start = time.perf_counter()
    if name == "pycocotools":
        stats, built = _coco_stats(preds, target)
        update_s, compute_s = built - start, time.perf_counter() - built
        state, peak_update = None, None
    else:
        if name == "sm":
            from scopedmetrics.detection import MeanAveragePrecision

            m: Any = MeanAveragePrecision()
            for i in range(0, n, BATCH):
                m = m.update(preds[i:i + BATCH], target[i:i + BATCH])
            tensors = list(m.state_dict().values())
        else:
            from torchmetrics.detection.mean_ap import MeanAveragePrecision as TorchMetricsMAP

            m = TorchMetricsMAP(backend="faster_coco_eval")
            for i in range(0, n, BATCH):
                m.update(preds[i:i + BATCH], target[i:i + BATCH])
            tensors = [t for k in m._defaults for t in getattr(m, k)]
        mid = time.perf_counter()
        peak_update = _peak_kb() - base
        state = _storage_bytes(tensors)
        result = m.compute()
        update_s, compute_s = mid - start, time.perf_counter() - mid
        keys = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
                "mar_small", "mar_medium", "mar_large"]
        stats = [float(result[k]) for k in keys]
    peak = _peak_kb() - base
    return {"case": name, "images": n, "update_s": update_s, "compute_s": compute_s,
            "peak_rise_bytes": max(peak, 0) * 1024,
            "peak_rise_after_updates_bytes": None if peak_update is None else max(peak_update, 0) * 1024,
            "state_bytes_per_image": state / n if state else None,
            "stats": [float(x) for x in stats]}


def part1(n: int) -> list[dict[str, Any]]:
    rows = []
    for name in CASES:
        out = subprocess.run([sys.executable, __file__, "--case", name, "--images", str(n)], capture_output=True,
                             text=True, check=True, timeout=900)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    ref = rows[-1]["stats"]
    for r in rows:
        r["equals_pycocotools"] = all(abs(a - b) < 1e-6 for a, b in zip(r["stats"], ref))
    return rows


# -- part 2: MeanIoU update ---------------------------------------------------------------------------


def part2(number: int, repeat: int) -> list[dict[str, Any]]:
    import warnings

    import torchmetrics.segmentation as tms

    from scopedmetrics.segmentation import MeanIoU

    g = torch.Generator().manual_seed(1)
    target = torch.randint(0, SEG_CLASSES, (SEG_BATCH, SIDE, SIDE), generator=g)
    preds = torch.where(torch.rand(target.shape, generator=g) < 0.8, target,
                        torch.randint(0, SEG_CLASSES, target.shape, generator=g))
    c = SEG_CLASSES
    floor_state = torch.zeros(c * c, dtype=torch.int64)
    cm = torch.bincount((target * c + preds).flatten(), minlength=c * c)
    check = MeanIoU(c, input_format="index", aggregation_level="global").update(preds, target)
    inter = cm.view(c, c).diagonal()
    assert torch.equal(check.sums["inter"], inter)  # the floor's state holds the same counts
    holder: dict[str, Any] = {
        "sm": MeanIoU(c, input_format="index"),
        "sm-global": MeanIoU(c, input_format="index", aggregation_level="global"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = tms.MeanIoU(c, input_format="index")

    def floor() -> None:
        floor_state.add_(torch.bincount((target * c + preds).flatten(), minlength=c * c))

    def sm_update() -> None:
        holder["sm"] = holder["sm"].update(preds, target)

    def sm_global() -> None:
        holder["sm-global"] = holder["sm-global"].update(preds, target)

    def tm_update() -> None:
        tm.update(preds, target)

    res = _common.compare({"floor": floor, "sm": sm_update, "sm-global": sm_global, "tm": tm_update},
                          number=number, repeat=repeat)
    return [{"impl": k, **v, "ratio_to_floor": v["median_us"] / res["floor"]["median_us"]} for k, v in res.items()]


# -- part 3: MeanIoU update at 256x256, index and one-hot, ratios beside TorchMetrics ---------------------------

SIDE3 = 256


def part3(number: int, repeat: int) -> list[dict[str, Any]]:
    """MeanIoU update of 8 x 256x256 maps, 21 classes, as index labels and as bool one-hot masks.

    Floors: for both forms the bare ``bincount`` of ``target * 21 + pred`` on the index labels (the issue's
    target: at most 1.2x of it), and for one-hot the bare per-sample sums ``(p & t)``, ``p``, ``t`` over the
    pixels (what any metric must read from a multi-hot mask), in their fastest bare form.
    """
    import warnings

    import torchmetrics.segmentation as tms

    from scopedmetrics.segmentation import MeanIoU
    from scopedmetrics.segmentation._inputs import Counts, _index_counts

    g = torch.Generator().manual_seed(3)
    c = SEG_CLASSES
    target = torch.randint(0, c, (SEG_BATCH, SIDE3, SIDE3), generator=g)
    preds = torch.where(torch.rand(target.shape, generator=g) < 0.8, target,
                        torch.randint(0, c, target.shape, generator=g))
    p_hot = torch.nn.functional.one_hot(preds, c).movedim(-1, 1).bool().contiguous()  # (N, C, H, W), as a
    t_hot = torch.nn.functional.one_hot(target, c).movedim(-1, 1).bool().contiguous()  # network's masks come
    floor_state = torch.zeros(c * c, dtype=torch.int64)
    hot_state = torch.zeros(3, SEG_BATCH, c, dtype=torch.int64)
    cm = torch.bincount((target * c + preds).flatten(), minlength=c * c).view(c, c)
    for fmt, (pp, tt) in (("index", (preds, target)), ("one-hot", (p_hot, t_hot))):
        check = MeanIoU(c, input_format=fmt, aggregation_level="global").update(pp, tt)
        assert torch.equal(check.sums["inter"], cm.diagonal())  # the floor's state holds the same counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = {"index": tms.MeanIoU(c, input_format="index"), "one-hot": tms.MeanIoU(c, input_format="one-hot")}
        assert torch.allclose(MeanIoU(c, input_format="index").update(preds, target).compute(),
                              tms.MeanIoU(c, input_format="index")(preds, target).float().squeeze(), atol=1e-6)
    holder: dict[str, Any] = {"index": MeanIoU(c, input_format="index"), "one-hot": MeanIoU(c)}
    counted: dict[str, Any] = {}

    def floor() -> None:
        floor_state.add_(torch.bincount((target * c + preds).flatten(), minlength=c * c))

    blocks = SIDE3 * SIDE3 // 2**14

    def bare(x: torch.Tensor) -> torch.Tensor:  # bytes summed in int16 by blocks of 2^14 pixels (a plain sum of
        # bools or int64 does not vectorise: 10x slower)
        return x.view(torch.uint8).view(SEG_BATCH, c, blocks, 2**14).sum(-1, dtype=torch.int16).sum(-1)

    def floor_hot() -> None:
        hot_state[0].add_(bare(p_hot & t_hot))
        hot_state[1].add_(bare(p_hot))
        hot_state[2].add_(bare(t_hot))

    def sm_index() -> None:
        holder["index"] = holder["index"].update(preds, target)

    def sm_counts_unchecked() -> None:  # the counting alone, without reading the inputs' types and label ranges
        k: Counts = _index_counts(preds, target, c)
        counted["c"] = k

    def sm_hot() -> None:
        holder["one-hot"] = holder["one-hot"].update(p_hot, t_hot)

    def tm_index() -> None:
        tm["index"].update(preds, target)

    def tm_hot() -> None:
        tm["one-hot"].update(p_hot, t_hot)

    fns = {"floor (index bincount)": floor, "floor (one-hot sums)": floor_hot, "sm index": sm_index,
           "sm index, counting only": sm_counts_unchecked, "sm one-hot": sm_hot, "tm index": tm_index,
           "tm one-hot": tm_hot}
    res = _common.compare(fns, number=number, repeat=repeat)
    fl, fh = res["floor (index bincount)"]["median_us"], res["floor (one-hot sums)"]["median_us"]
    tm_of = {"index": res["tm index"]["median_us"], "one-hot": res["tm one-hot"]["median_us"]}
    rows = []
    for k, v in res.items():
        form = "one-hot" if "one-hot" in k else "index"
        rows.append({"impl": k, **v, "ratio_to_floor": v["median_us"] / fl,
                     "ratio_to_one_hot_floor": v["median_us"] / fh if form == "one-hot" else None,
                     "ratio_to_tm": v["median_us"] / tm_of[form] if k.startswith("sm") else None})
    return rows


def main() -> None:
    p = _common.parser(__doc__, repeat=7)
    p.add_argument("--case", default="", help=argparse_hidden())
    p.add_argument("--images", type=int, default=0, help="images for part 1 (default 5000; --quick 1000)")
    p.add_argument("--seg", action="store_true", help="only the MeanIoU parts (2 and 3); does not save")
    args = p.parse_args()
    if args.case:
        print(json.dumps(_case(args.case, args.images)))
        return
    _common.setup(args)
    if args.seg:
        _print_seg(args)
        return
    n = args.images or (1000 if args.quick else 5000)
    print(f"vision part 1: MeanAveragePrecision, {n} images x {BOXES} boxes and {BOXES} detections, "
          f"{CLASSES} classes, batches of {BATCH}")
    rows = part1(n)
    sm_row = rows[0]
    body = []
    for r in rows:
        body.append([r["case"], r["update_s"], r["compute_s"], r["update_s"] + r["compute_s"],
                     (r["update_s"] + r["compute_s"]) / (sm_row["update_s"] + sm_row["compute_s"]),
                     r["peak_rise_bytes"] / 2**20, r["state_bytes_per_image"], r["equals_pycocotools"]])
    print()
    print(_common.table(["case", "update s", "compute s", "total s", "total / sm", "peak rise MiB",
                         "state B/image", "= pycocotools"], body, digits=[0, 2, 2, 2, 2, 1, 0, 0]))
    number, seg, seg3 = _print_seg(args)
    _common.save("vision", {"machine": _common.machine(),
                            "config": {"images": n, "boxes": BOXES, "classes": CLASSES, "batch": BATCH,
                                       "seg": [SEG_BATCH, SIDE, SIDE, SEG_CLASSES],
                                       "seg3": [SEG_BATCH, SIDE3, SIDE3, SEG_CLASSES], "number": number,
                                       "repeat": args.repeat},
                            "map": rows, "mean_iou": seg, "mean_iou_256": seg3}, args)


def _print_seg(args: Any) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """Parts 2 and 3, printed as tables."""
    number = 1 if args.quick else 3  # TorchMetrics takes about 1.5 s an update here
    print(f"\nvision part 2: MeanIoU update, {SEG_BATCH} x {SIDE}x{SIDE}, {SEG_CLASSES} classes, "
          f"{number} updates per repeat, median of {args.repeat}")
    seg = part2(number, args.repeat)
    print()
    print(_common.table(["impl", "median ms", "min ms", "max ms", "x floor"],
                        [[r["impl"], r["median_us"] / 1e3, r["min_us"] / 1e3, r["max_us"] / 1e3,
                          r["ratio_to_floor"]] for r in seg], digits=[0, 2, 2, 2, 2]))
    print(f"\nvision part 3: MeanIoU update, {SEG_BATCH} x {SIDE3}x{SIDE3}, {SEG_CLASSES} classes, index and "
          f"bool one-hot, {number} updates per repeat, median of {args.repeat}")
    seg3 = part3(number, args.repeat)
    print()
    print(_common.table(["impl", "median ms", "min ms", "max ms", "x index floor", "x one-hot floor", "x tm"],
                        [[r["impl"], r["median_us"] / 1e3, r["min_us"] / 1e3, r["max_us"] / 1e3,
                          r["ratio_to_floor"], r["ratio_to_one_hot_floor"], r["ratio_to_tm"]] for r in seg3],
                        digits=[0, 2, 2, 2, 2, 2, 3]))
    return number, seg, seg3


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
