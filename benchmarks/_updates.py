"""The per-update comparison shared by ``update_small.py`` and ``update_large.py``.

Three implementations of each metric's ``update`` on the same batch:

* floor: the least torch math that produces an equivalent state, accumulated in
  place into preallocated tensors (no checks, no objects);
* sm: scopedmetrics, chaining ``m = m.update(...)`` (a new immutable metric each time);
* tm: TorchMetrics, ``m.update(...)`` mutating the module.

Before timing, each case checks that the floor's state carries the same numbers
as the scopedmetrics state after one update, so a floor cannot be "fast" by
doing less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torchmetrics
import torchmetrics.classification as tmc
from _common import compare, ratio, table

import scopedmetrics as sm
import scopedmetrics.classification as sm_classification
from scopedmetrics.classification import (
    BinaryAUROC,
    MulticlassAccuracy,
    MulticlassCalibrationError,
    MulticlassF1Score,
)
from scopedmetrics.regression import MeanSquaredError, PearsonCorrCoef, R2Score

C = 10  # classes
_MSE = torch.ops.aten.mse_loss.default  # (input, target, reduction): 2 is sum
T = 100  # thresholds of the binned AUROC


@dataclass
class Impl:
    """One implementation: a step (one update) and what to run before each timed block."""

    step: Callable[[], Any]
    before: Callable[[], Any] | None = None


@dataclass
class Case:
    metric: str
    setting: str
    impls: dict[str, Impl] = field(default_factory=dict)
    note: str = ""


def _inputs(n: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "logits": torch.randn(n, C, generator=g),
        "labels": torch.randint(0, C, (n,), generator=g),
        "x": torch.randn(n, generator=g),
        "y": torch.randn(n, generator=g),
        "scores": torch.rand(n, generator=g),
        "binary": torch.randint(0, 2, (n,), generator=g),
    }


def _sm(metric: sm.Metric, *args: Any, growing: bool = False) -> Impl:
    box = [metric]

    def step() -> None:
        box[0] = box[0].update(*args)

    def reset() -> None:
        box[0] = metric

    return Impl(step, reset if growing else None)


def _tm(metric: Any, *args: Any, growing: bool = False) -> Impl:
    return Impl(lambda: metric.update(*args), metric.reset if growing else None)


# -- floors ------------------------------------------------------------------------


def _floor_multiclass(logits: torch.Tensor, labels: torch.Tensor) -> tuple[Impl, Callable[[], torch.Tensor]]:
    """argmax + one bincount of ``target * C + pred``: the confusion matrix, which holds tp/fp/tn/fn.

    The argmax is ``argmax(1)`` on small batches and ``max(1).indices`` on large ones,
    whichever is faster on the CPU (same indices).
    """
    cm = torch.zeros(C * C, dtype=torch.long)
    large = logits.shape[0] >= 1024

    def step() -> None:
        pred = logits.max(1).indices if large else logits.argmax(1)
        cm.add_(torch.bincount(torch.add(pred, labels, alpha=C), minlength=C * C))

    return Impl(step), lambda: cm.view(C, C)


def _floor_mse(x: torch.Tensor, y: torch.Tensor) -> tuple[Impl, Callable[[], tuple[torch.Tensor, ...]]]:
    sse = torch.zeros(())
    total = torch.zeros((), dtype=torch.long)

    def step() -> None:
        sse.add_(_MSE(x, y, 2))  # aten's fused (x - y) ** 2 summed; F.mse_loss adds a Python wrapper
        total.add_(x.numel())

    return Impl(step), lambda: (sse, total)


def _floor_moments(x: torch.Tensor, y: torch.Tensor, co: bool) -> tuple[Impl, Callable[[], dict[str, torch.Tensor]]]:
    """float64 raw sums, extremes and (R2) the residual sum of squares, or (Pearson) the cross sum.

    Raw sums of squares are the least work (one ``dot`` each), not the most accurate: the
    metrics keep centred moments, which stay exact for data far from zero.
    """
    z = {k: torch.zeros((), dtype=torch.float64) for k in ("n", "t", "tt", "rss", "p", "pp", "pt")}
    ext = {k: torch.full((), v, dtype=torch.float64) for k, v in
           (("tlo", float("inf")), ("thi", -float("inf")), ("plo", float("inf")), ("phi", -float("inf")))}

    def extremes(v: torch.Tensor, lo: str, hi: str) -> None:
        a, b = torch.aminmax(v)
        torch.minimum(ext[lo], a, out=ext[lo])
        torch.maximum(ext[hi], b, out=ext[hi])

    def step() -> None:
        p, t = x.double(), y.double()
        z["n"].add_(t.shape[0])
        z["t"].add_(t.sum())
        z["tt"].add_(t.dot(t))
        extremes(t, "tlo", "thi")
        if not co:
            z["rss"].add_(_MSE(p, t, 2))
            return
        z["p"].add_(p.sum())
        z["pp"].add_(p.dot(p))
        z["pt"].add_(p.dot(t))
        extremes(p, "plo", "phi")

    def state() -> dict[str, torch.Tensor]:
        n = z["n"]
        m2t = z["tt"] - z["t"] * z["t"] / n
        if not co:
            return {"mean": z["t"] / n, "m2": m2t, "low": ext["tlo"], "high": ext["thi"], "rss": z["rss"]}
        return {"mean": torch.stack([z["p"], z["t"]]) / n, "m2": torch.stack([z["pp"] - z["p"] * z["p"] / n, m2t]),
                "low": torch.stack([ext["plo"], ext["tlo"]]), "high": torch.stack([ext["phi"], ext["thi"]]),
                "comoment": z["pt"] - z["p"] * z["t"] / n}

    return Impl(step), state


def _agree_moments(m: sm.Metric, floor: Impl, state: Callable[[], dict[str, torch.Tensor]]) -> None:
    floor.step()
    for f, want in state().items():
        got = getattr(m, f).reshape(want.shape)
        if not torch.allclose(got, want, rtol=1e-9, atol=1e-9):
            raise AssertionError(f"floor disagrees with {type(m).__name__}.{f}: {want} vs {got}")


def _floor_mean(x: torch.Tensor) -> tuple[Impl, Callable[[], tuple[torch.Tensor, ...]]]:
    total = torch.zeros(())
    weight = torch.zeros(())

    def step() -> None:
        total.add_(x.sum())
        weight.add_(x.numel())

    return Impl(step), lambda: (total, weight)


def _floor_exact(scores: torch.Tensor, target: torch.Tensor, capacity: int) -> tuple[Impl, Callable[[], Any]]:
    """The samples copied into preallocated buffers (what a cat state must hold, no growth)."""
    n = scores.shape[0]
    preds = torch.empty(capacity * n)
    labels = torch.empty(capacity * n, dtype=torch.long)
    at = [0]

    def step() -> None:
        i = at[0]
        preds.narrow(0, i, n).copy_(scores)
        labels.narrow(0, i, n).copy_(target)
        at[0] = i + n

    def reset() -> None:
        at[0] = 0

    return Impl(step, reset), lambda: (preds[: at[0]], labels[: at[0]])


def _floor_binned(scores: torch.Tensor, target: torch.Tensor) -> tuple[Impl, Callable[[], torch.Tensor]]:
    """bucketize + one bincount of ``2 * bucket + label``."""
    thr = torch.linspace(0, 1, T)
    counts = torch.zeros(2 * (T + 1), dtype=torch.long)

    def step() -> None:
        index = torch.add(target, torch.bucketize(scores, thr, right=True), alpha=2)
        counts.add_(torch.bincount(index, minlength=2 * (T + 1)))

    return Impl(step), lambda: counts.view(T + 1, 2)


def _floor_calibration(logits: torch.Tensor, labels: torch.Tensor,
                       bins: int) -> tuple[Impl, Callable[[], tuple[torch.Tensor, ...]]]:
    """torch's softmax, the top-1 probability, bucketize, two bincounts and one bincount of confidences."""
    edges = torch.linspace(0, 1, bins + 1)
    count, correct = torch.zeros(bins, dtype=torch.long), torch.zeros(bins, dtype=torch.long)
    conf_sum = torch.zeros(bins)

    def step() -> None:
        conf, label = logits.softmax(1).max(1)
        idx = (torch.bucketize(conf, edges, right=True) - 1).clamp_(0, bins - 1)
        count.add_(torch.bincount(idx, minlength=bins))
        correct.add_(torch.bincount(idx[label == labels], minlength=bins))
        conf_sum.add_(torch.bincount(idx, weights=conf, minlength=bins))

    return Impl(step), lambda: (count, correct, conf_sum)


# -- cases -------------------------------------------------------------------------


def cases(n: int, number: int, repeat: int) -> list[Case]:
    """Every (metric, setting) row at batch size ``n``; ``number`` updates per timed block, ``repeat`` blocks."""
    d = _inputs(n)
    logits, labels, x, y, scores, binary = (d[k] for k in ("logits", "labels", "x", "y", "scores", "binary"))
    out = []
    for validate in (True, False):
        setting = f"validate_args={validate}"
        for name, sm_cls, tm_cls in (
            ("MulticlassAccuracy", MulticlassAccuracy, tmc.MulticlassAccuracy),
            ("MulticlassF1Score", MulticlassF1Score, tmc.MulticlassF1Score),
        ):
            floor, floor_state = _floor_multiclass(logits, labels)
            m = sm_cls(num_classes=C, average="macro", validate_args=validate)
            _agree_multiclass(m.update(logits, labels), floor, floor_state)
            out.append(Case(name, setting + ", macro", {
                "floor": floor,
                "sm": _sm(m, logits, labels),
                "tm": _tm(tm_cls(num_classes=C, average="macro", validate_args=validate), logits, labels),
            }))
        floor, floor_state = _floor_multiclass(logits, labels)
        five = sm.Collection(_five(sm_classification, validate))
        _agree_multiclass(five.update(logits, labels)["f1"], floor, floor_state)
        tm_five = torchmetrics.MetricCollection(_five(tmc, validate), compute_groups=True)
        tm_five.update(logits, labels)  # the first update finds the compute group (one, here)
        tm_five.reset()
        out.append(Case("Collection of 5 multiclass", setting + ", macro", {
            "floor": floor, "sm": _sm(five, logits, labels), "tm": _tm(tm_five, logits, labels),
        }, note="accuracy, precision, recall, F1, specificity; tm: MetricCollection(compute_groups=True)"))
        floor, floor_state = _floor_mse(x, y)
        m = MeanSquaredError(validate_args=validate)
        _agree(m.update(x, y), ("sum_squared_error", "total"), floor, floor_state)
        out.append(Case("MeanSquaredError", setting, {
            "floor": floor, "sm": _sm(m, x, y), "tm": _tm(torchmetrics.MeanSquaredError(), x, y),
        }, note="" if validate else "TorchMetrics has no validate_args here: its default"))
        strategy = "warn" if validate else "disable"
        for cls, tm_cls, co in ((R2Score, torchmetrics.R2Score, False),
                                (PearsonCorrCoef, torchmetrics.PearsonCorrCoef, True)):
            floor, moments = _floor_moments(x, y, co)
            m = cls(validate_args=validate)
            _agree_moments(m.update(x, y), floor, moments)
            floor, _ = _floor_moments(x, y, co)
            out.append(Case(cls.__name__, setting, {
                "floor": floor, "sm": _sm(m, x, y), "tm": _tm(tm_cls(), x, y),
            }, note="float64 moments (sm centred, floor raw sums); tm: float32 raw sums, no validate_args"))
        floor, floor_state = _floor_mean(x)
        m = sm.Mean(nan_strategy=strategy)
        _agree(m.update(x), ("mean_value", "weight"), floor, floor_state)
        out.append(Case("Mean / MeanMetric", f"nan_strategy={strategy!r}", {
            "floor": floor, "sm": _sm(m, x), "tm": _tm(torchmetrics.MeanMetric(nan_strategy=strategy), x),
        }))
        # sm and tm keep every sample of every timed call, so growth is part of their cost;
        # the floor rewrites one preallocated buffer (reset before each timed block)
        floor, floor_state = _floor_exact(scores, binary, capacity=number)
        m = BinaryAUROC(validate_args=validate)
        _agree_exact(m.update(scores, binary), floor, floor_state)
        out.append(Case("BinaryAUROC exact", setting, {
            "floor": floor,
            "sm": _sm(m, scores, binary),
            "tm": _tm(tmc.BinaryAUROC(validate_args=validate), scores, binary),
        }, note="sm/tm states keep growing across repeats; the floor writes into one preallocated buffer"))
        floor, floor_state = _floor_binned(scores, binary)
        m = BinaryAUROC(thresholds=T, validate_args=validate)
        _agree(m.update(scores, binary), ("counts",), floor, lambda fs=floor_state: (fs(),))
        out.append(Case(f"BinaryAUROC thresholds={T}", setting, {
            "floor": floor,
            "sm": _sm(m, scores, binary),
            "tm": _tm(tmc.BinaryAUROC(thresholds=T, validate_args=validate), scores, binary),
        }))
        floor, floor_state = _floor_calibration(logits, labels, bins=15)
        m = MulticlassCalibrationError(num_classes=C, validate_args=validate)
        _agree(m.update(logits, labels), ("bin_count", "bin_correct", "bin_confidence"), floor, floor_state)
        out.append(Case("MulticlassCalibrationError", setting + ", logits", {
            "floor": floor,
            "sm": _sm(m, logits, labels),
            "tm": _tm(tmc.MulticlassCalibrationError(num_classes=C, validate_args=validate), logits, labels),
        }, note="the floor's torch.softmax takes a slow path on the CPU for rows shorter than a vector register "
                "(sm takes five ops there: _kernels/softmax.py)"))
    return out


def _five(module: Any, validate: bool) -> dict[str, Any]:
    """Accuracy, precision, recall, F1 and specificity of ``module`` (ours or TorchMetrics'), by member name."""
    names = {"acc": "Accuracy", "p": "Precision", "r": "Recall", "f1": "F1Score", "spec": "Specificity"}
    return {k: getattr(module, f"Multiclass{v}")(num_classes=C, average="macro", validate_args=validate)
            for k, v in names.items()}


def _agree(m: sm.Metric, fields: tuple[str, ...], floor: Impl, state: Callable[[], tuple[torch.Tensor, ...]]) -> None:
    if floor.before:
        floor.before()
    floor.step()
    for f, want in zip(fields, state()):
        got = getattr(m, f)
        if not torch.allclose(got.double().reshape(want.shape), want.double(), rtol=1e-5, atol=1e-4):
            raise AssertionError(f"floor disagrees with {type(m).__name__}.{f}: {want} vs {got}")
    _reset_floor(floor, state)


def _agree_multiclass(m: Any, floor: Impl, state: Callable[[], torch.Tensor]) -> None:
    floor.step()
    cm = state()
    tp = cm.diag()
    want = (tp, cm.sum(0) - tp, cm.sum() - cm.sum(0) - cm.sum(1) + tp, cm.sum(1) - tp)
    for f, w in zip(("tp", "fp", "tn", "fn"), want):
        if not torch.equal(getattr(m, f), w):
            raise AssertionError(f"floor disagrees with {type(m).__name__}.{f}")
    cm.zero_()


def _agree_exact(m: Any, floor: Impl, state: Callable[[], tuple[torch.Tensor, torch.Tensor]]) -> None:
    assert floor.before is not None
    floor.before()
    floor.step()
    p, t = state()
    if not (torch.equal(m.preds, p) and torch.equal(m.target, t)):
        raise AssertionError("floor disagrees with BinaryAUROC's samples")
    floor.before()


def _reset_floor(floor: Impl, state: Callable[[], tuple[torch.Tensor, ...]]) -> None:
    for t in state():
        t.zero_()


def run(n: int, number: int, repeat: int, only: str = "") -> list[dict[str, Any]]:
    """Time every case (or those whose metric name contains ``only``); rows of medians and ratios."""
    rows = []
    for case in cases(n, number, repeat):
        if only not in case.metric:
            continue
        before = {k: v.before for k, v in case.impls.items() if v.before is not None}
        stats = compare({k: v.step for k, v in case.impls.items()}, number, repeat, before=before)
        f, s, t = (stats[k]["median_us"] for k in ("floor", "sm", "tm"))
        rows.append({
            "metric": case.metric,
            "setting": case.setting,
            "batch": n,
            "floor_us": f,
            "sm_us": s,
            "tm_us": t,
            "sm_over_tm": ratio(s, t),
            "sm_over_floor": ratio(s, f),
            "tm_over_floor": ratio(t, f),
            "spread": {k: [v["min_us"], v["max_us"]] for k, v in stats.items()},
            "note": case.note,
        })
        print(f"  {case.metric:<28} {case.setting:<36} floor {f:10.1f}  sm {s:10.1f}  tm {t:10.1f}", flush=True)
    return rows


HEADERS = ["metric", "setting", "floor µs", "sm µs", "tm µs", "sm/tm", "sm/floor", "tm/floor"]


def render(rows: list[dict[str, Any]]) -> str:
    body = [
        [r["metric"], r["setting"], r["floor_us"], r["sm_us"], r["tm_us"], r["sm_over_tm"], r["sm_over_floor"],
         r["tm_over_floor"]]
        for r in rows
    ]
    return table(HEADERS, body, digits=[0, 0, 1, 1, 1, 2, 2, 2])
