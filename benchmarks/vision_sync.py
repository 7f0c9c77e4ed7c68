"""One ``compute()`` of five vision metrics over 4 gloo processes: collectives counted, time taken.

Each rank holds ``MeanAveragePrecision`` (bbox, the scene of ``vision.py``),
``MeanIoU`` and ``DiceScore`` (21 classes, 64x64 label maps), and
``PeakSignalNoiseRatio`` and ``StructuralSimilarityIndexMeasure`` (3x64x64
images) over its share of the images. scopedmetrics reduces all five in one
``sm.compute`` of a dict; TorchMetrics syncs each metric in its own
``compute()``. The ``torch.distributed`` calls of one compute are counted
(``sync.Counting``), both libraries' values are checked against each other,
and the slowest rank's time is the median over iterations.

Two splits: even shards (TorchMetrics' mAP gathers its per-image lists one
list element at a time, so it needs equal image counts on every rank), and,
for scopedmetrics alone, uneven shards with an empty rank (40/30/20/0 % of
the images, plus 10 % left out).

Run: ``python benchmarks/vision_sync.py`` (``--quick``: fewer iterations).
Prints Markdown tables and writes ``benchmarks/results/vision_sync.json``.
"""

from __future__ import annotations

import statistics
from typing import Any

import _common
import torch

WORLD = 4
IMAGES = 200  # over all ranks
EVEN, UNEVEN = (1, 1, 1, 1), (4, 3, 2, 0)
SIDE, CLASSES = 64, 21


def _share(rank: int, shares: tuple[int, ...]) -> slice:
    total = sum(shares) + (1 if shares == UNEVEN else 0)  # the uneven split leaves a tenth of the images out
    edges = [IMAGES * sum(shares[:r]) // total for r in range(len(shares) + 1)]
    return slice(edges[rank], edges[rank + 1])


def _data(rank: int, shares: tuple[int, ...]) -> dict[str, Any]:
    from vision import scene

    preds, target = scene(IMAGES)
    g = torch.Generator().manual_seed(7)
    labels_t = torch.randint(0, CLASSES, (IMAGES, SIDE, SIDE), generator=g)
    labels_p = torch.where(torch.rand(IMAGES, SIDE, SIDE, generator=g) < 0.7, labels_t,
                           torch.randint(0, CLASSES, (IMAGES, SIDE, SIDE), generator=g))
    clean = torch.rand(IMAGES, 3, SIDE, SIDE, generator=g)
    noisy = (clean + 0.05 * torch.randn(IMAGES, 3, SIDE, SIDE, generator=g)).clamp(0, 1)
    mine = _share(rank, shares)
    return {"boxes": (preds[mine], target[mine]), "labels": (labels_p[mine], labels_t[mine]),
            "images": (noisy[mine], clean[mine])}


def _ours(d: dict[str, Any]) -> dict[str, Any]:
    import scopedmetrics as sm
    from scopedmetrics.detection import MeanAveragePrecision
    from scopedmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure
    from scopedmetrics.segmentation import DiceScore, MeanIoU

    metrics: dict[str, Any] = {
        "map": MeanAveragePrecision(), "miou": MeanIoU(num_classes=CLASSES, input_format="index"),
        "dice": DiceScore(num_classes=CLASSES, input_format="index"),
        "psnr": PeakSignalNoiseRatio(data_range=1.0), "ssim": StructuralSimilarityIndexMeasure(data_range=1.0),
    }
    inputs = {"map": d["boxes"], "miou": d["labels"], "dice": d["labels"], "psnr": d["images"],
              "ssim": d["images"]}
    for name, (p, t) in inputs.items():
        if len(p):  # an empty rank folds nothing in
            metrics[name] = metrics[name].update(p, t)
    return {"metrics": metrics, "compute": lambda: _values(sm.compute(metrics))}


def _theirs(d: dict[str, Any]) -> dict[str, Any]:
    from vision import _stand_in_torchvision

    _stand_in_torchvision()
    from torchmetrics.detection.mean_ap import MeanAveragePrecision
    from torchmetrics.image import PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure
    from torchmetrics.segmentation import DiceScore, MeanIoU

    metrics: dict[str, Any] = {
        "map": MeanAveragePrecision(backend="faster_coco_eval"),
        "miou": MeanIoU(num_classes=CLASSES, input_format="index"),
        "dice": DiceScore(num_classes=CLASSES, input_format="index"),
        "psnr": PeakSignalNoiseRatio(data_range=1.0), "ssim": StructuralSimilarityIndexMeasure(data_range=1.0),
    }
    inputs = {"map": d["boxes"], "miou": d["labels"], "dice": d["labels"], "psnr": d["images"],
              "ssim": d["images"]}
    for name, (p, t) in inputs.items():
        metrics[name].update(p, t)

    def compute() -> dict[str, float]:
        out = {}
        for name, m in metrics.items():
            m._computed = None  # TorchMetrics caches compute() until the next update
            out[name] = m.compute()
        return _values(out)

    return {"metrics": metrics, "compute": compute}


def _values(out: dict[str, Any]) -> dict[str, float]:
    return {k: float(v["map"] if isinstance(v, dict) else v.float().mean()) for k, v in out.items()}


def _rank(rank: int, size: int, shares: tuple[int, ...], iters: int, with_tm: bool) -> dict[str, Any]:
    import torch.distributed as dist
    from sync import Counting

    _common.setup()
    counting = Counting()  # before scopedmetrics is imported, so that its bindings are the counted functions
    d = _data(rank, shares)
    impls = {"sm": _ours(d)["compute"]}
    if with_tm:
        impls["tm"] = _theirs(d)["compute"]
    values = {name: fn() for name, fn in impls.items()}
    if with_tm and any(abs(values["sm"][k] - values["tm"][k]) > 1e-4 for k in values["sm"]):
        raise AssertionError(f"rank {rank}: scopedmetrics {values['sm']} vs torchmetrics {values['tm']}")
    times: dict[str, list[float]] = {k: [] for k in impls}
    calls: dict[str, dict[str, int]] = {}
    for _ in range(iters):
        for name, fn in impls.items():
            dist.barrier()
            elapsed, used, _ = counting.measure(fn)
            times[name].append(elapsed)
            calls[name] = used
    return {"times": times, "calls": calls, "values": values["sm"]}


def world(shares: tuple[int, ...], iters: int, with_tm: bool) -> dict[str, Any]:
    from sync import run_world

    per_rank = run_world(WORLD, _rank, shares, iters, with_tm, timeout=900)
    rows = {}
    for name in per_rank[0]["times"]:
        slowest = [max(ts) for ts in zip(*(r["times"][name] for r in per_rank))]
        kinds = per_rank[0]["calls"][name]
        rows[name] = {"collectives": sum(kinds.values()), "by_kind": kinds,
                      "median_ms": statistics.median(slowest) * 1e3, "min_ms": min(slowest) * 1e3,
                      "max_ms": max(slowest) * 1e3}
    return {"shares": shares, "rows": rows, "values": per_rank[0]["values"]}


def main() -> None:
    p = _common.parser(__doc__, repeat=7)
    args = p.parse_args()
    iters = 3 if args.quick else args.repeat
    even, uneven = world(EVEN, iters, with_tm=True), world(UNEVEN, iters, with_tm=False)
    body = []
    for label, result in (("even 25/25/25/25 %", even), ("uneven 40/30/20/0 %", uneven)):
        for name, r in result["rows"].items():
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items()))
            body.append([label, name, r["collectives"], kinds, r["median_ms"], r["min_ms"], r["max_ms"]])
    print(f"vision_sync: one compute() of mAP, MeanIoU, Dice, PSNR, SSIM over {WORLD} gloo ranks, {IMAGES} images")
    print(_common.table(["split", "impl", "collectives", "by kind", "median ms", "min ms", "max ms"], body,
                        digits=[0, 0, 0, 0, 1, 1, 1]))
    print(f"values (sm, even): {even['values']}")
    _common.save("vision_sync", {"machine": _common.machine(), "config": {"world": WORLD, "images": IMAGES,
                                 "side": SIDE, "classes": CLASSES, "iterations": iters},
                                 "even": even, "uneven": uneven}, args)


if __name__ == "__main__":
    main()
