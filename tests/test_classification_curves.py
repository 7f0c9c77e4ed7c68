"""Curve metrics against scikit-learn, a direct numpy count and TorchMetrics, sharded over worlds."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sklearn.metrics as skm
import torch
import torchmetrics.classification as tmc
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded

import scopedmetrics as sm
from scopedmetrics.classification import (
    BinaryAUROC,
    BinaryAveragePrecision,
    BinaryPrecisionRecallCurve,
    BinaryROC,
    MulticlassAUROC,
    MulticlassAveragePrecision,
    MulticlassPrecisionRecallCurve,
    MulticlassROC,
    MultilabelAUROC,
    MultilabelAveragePrecision,
    MultilabelPrecisionRecallCurve,
    MultilabelROC,
)

N, C = 90, 4
IGNORE = -1


# -- data: scores on a coarse grid, so that ties are everywhere -------------------


def binary_data(seed: int, n: int = N, levels: int = 8, ignore: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, levels + 1, (n,), generator=g).float() / levels
    target = torch.randint(0, 2, (n,), generator=g)
    if ignore:
        target[torch.rand(n, generator=g) < 0.15] = IGNORE
    return preds, target


def multiclass_data(seed: int, n: int = N, ignore: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 3, (n, C), generator=g).float().softmax(1)  # 81 distinct rows: ties
    target = torch.randint(0, C, (n,), generator=g)
    target[:C] = torch.arange(C)  # every class present, as scikit-learn's one-vs-rest requires
    if ignore:
        target[C:][torch.rand(n - C, generator=g) < 0.15] = IGNORE
    return preds, target


def multilabel_data(seed: int, n: int = N, ignore: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 6, (n, C), generator=g).float() / 5
    target = torch.randint(0, 2, (n, C), generator=g)
    target[:2] = torch.tensor([[0] * C, [1] * C])  # both labels present in every column
    if ignore:
        target[2:][torch.rand(n - 2, C, generator=g) < 0.15] = IGNORE
    return preds, target


def np_(x: torch.Tensor) -> np.ndarray:
    return x.double().numpy()


# -- scikit-learn oracles --------------------------------------------------------


def sk_roc(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
    thr[0] = 1.0  # scikit-learn starts at +inf, TorchMetrics (and we) at 1
    return fpr, tpr, thr


def sk_pr(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.ascontiguousarray(x) for x in skm.precision_recall_curve(y, s))


def columns(preds: torch.Tensor, target: torch.Tensor, multiclass: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per class (one-vs-rest) or label: the non-ignored ``(y, scores)``."""
    out = []
    for c in range(preds.shape[1]):
        if multiclass:
            keep = target != IGNORE
            y = (target[keep] == c).long()
        else:
            keep = target[:, c] != IGNORE
            y = target[keep, c]
        out.append((np_(y), np_(preds[keep, c])))
    return out


def sk_scalar(
    score: Callable[..., float],
    preds: torch.Tensor,
    target: torch.Tensor,
    average: str | None,
    multiclass: bool,
) -> Any:
    """AUROC or AP per column, averaged by the column's positives like TorchMetrics and scikit-learn."""
    cols = columns(preds, target, multiclass)
    if average == "micro":
        return score(np.concatenate([y for y, _ in cols]), np.concatenate([s for _, s in cols]))
    values = np.array([score(y, s) for y, s in cols])
    if average in ("none", None):
        return values
    if average == "macro":
        return values.mean()
    support = np.array([y.sum() for y, _ in cols])
    return (values * support).sum() / support.sum()


# -- exact metrics against scikit-learn, over uneven shards ------------------------


def test_sklearn_oracles_agree_with_its_own_averages() -> None:
    preds, target = multiclass_data(0)
    onehot = np.eye(C)[target.numpy()]
    for avg in ("macro", "weighted"):
        assert np.isclose(
            sk_scalar(skm.roc_auc_score, preds, target, avg, True),
            skm.roc_auc_score(target.numpy(), np_(preds), multi_class="ovr", average=avg),
        )
        assert np.isclose(
            sk_scalar(skm.average_precision_score, preds, target, avg, True),
            skm.average_precision_score(onehot, np_(preds), average=avg),
        )
    preds, target = multilabel_data(0)
    for avg in ("micro", "macro", "weighted"):
        assert np.isclose(
            sk_scalar(skm.roc_auc_score, preds, target, avg, False),
            skm.roc_auc_score(target.numpy(), np_(preds), average=avg),
        )


@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("max_fpr", [None, 0.3, 1.0])
def test_binary_auroc_exact(ignore: bool, max_fpr: float | None) -> None:
    preds, target = binary_data(1, ignore=ignore)
    keep = target != IGNORE
    expected = skm.roc_auc_score(np_(target[keep]), np_(preds[keep]), max_fpr=max_fpr)
    metric = BinaryAUROC(max_fpr=max_fpr, ignore_index=IGNORE if ignore else None)
    check_sharded(metric, (preds, target), np.float64(expected), seed=11)


@pytest.mark.parametrize("ignore", [False, True])
def test_binary_average_precision_exact(ignore: bool) -> None:
    preds, target = binary_data(2, ignore=ignore)
    keep = target != IGNORE
    expected = skm.average_precision_score(np_(target[keep]), np_(preds[keep]))
    check_sharded(
        BinaryAveragePrecision(ignore_index=IGNORE if ignore else None),
        (preds, target),
        np.float64(expected),
        seed=12,
    )


def test_float64_scores_that_float32_would_merge_stay_apart() -> None:
    # sigmoids of logits beyond ~17 are distinct in float64 and one value in float32: the state rounded them, and
    # AP read 0.92498 where scikit-learn and TorchMetrics read 0.92554
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2000, dtype=torch.float64, generator=g) * 15
    target = (torch.rand(2000, dtype=torch.float64, generator=g) < torch.sigmoid(logits / 5)).long()
    probs = torch.sigmoid(logits)
    assert probs.float().unique().numel() < probs.unique().numel()  # the case: float32 merges some scores
    y, p = target.numpy(), probs.numpy()
    for preds in (probs, logits):  # logits go through the sigmoid in float64
        auroc = BinaryAUROC().update(preds, target)
        assert auroc.preds.dtype == torch.float64
        assert_close(auroc.compute(), torch.tensor(skm.roc_auc_score(y, p), dtype=torch.float32), rtol=1e-6, atol=0)
        assert_close(BinaryAveragePrecision().update(preds, target).compute(),
                     torch.tensor(skm.average_precision_score(y, p), dtype=torch.float32), rtol=1e-6, atol=0)
    fpr, tpr, thr = BinaryROC().update(probs, target).compute()
    want = skm.roc_curve(y, p, drop_intermediate=False)
    assert len(thr) == len(want[2])  # every distinct float64 score is a threshold


@pytest.mark.parametrize("kind", ["binary", "multiclass", "multilabel"])
def test_exact_scalars_above_the_numpy_sort_threshold(kind: str) -> None:
    """From ``order.NUMPY_MIN`` rows the CPU sorts packed int64 keys (score bits, valid, positive) by value."""
    from scopedmetrics._kernels import order

    n = 2 * order.NUMPY_MIN  # above it after the ignored rows go
    if kind == "binary":
        preds, target = binary_data(21, n=n, ignore=True)
        keep = target != IGNORE
        want = [skm.roc_auc_score(np_(target[keep]), np_(preds[keep])),
                skm.average_precision_score(np_(target[keep]), np_(preds[keep]))]
        made = [BinaryAUROC(ignore_index=IGNORE), BinaryAveragePrecision(ignore_index=IGNORE)]
    else:
        multiclass = kind == "multiclass"
        preds, target = (multiclass_data if multiclass else multilabel_data)(22, n=n, ignore=not multiclass)
        want = [sk_scalar(score, preds, target, "weighted", multiclass)
                for score in (skm.roc_auc_score, skm.average_precision_score)]
        pair = ((MulticlassAUROC, MulticlassAveragePrecision) if multiclass
                else (MultilabelAUROC, MultilabelAveragePrecision))
        made = [cls(C, average="weighted", ignore_index=None if multiclass else IGNORE) for cls in pair]
    for metric, value in zip(made, want):
        assert_close(metric.update(preds, target).compute(), torch.tensor(value, dtype=torch.float32))
    if kind == "binary":  # the curves read the sorted scores back from the keys: their thresholds
        for cls, oracle in ((BinaryROC, sk_roc), (BinaryPrecisionRecallCurve, sk_pr)):
            got = cls(ignore_index=IGNORE).update(preds, target).compute()
            for a, b in zip(got, oracle(np_(target[keep]), np_(preds[keep]))):
                assert_close(a, torch.as_tensor(b, dtype=a.dtype))


@pytest.mark.parametrize(("cls", "oracle"), [(BinaryROC, sk_roc), (BinaryPrecisionRecallCurve, sk_pr)])
def test_binary_curves_exact(cls: type, oracle: Callable[..., Any]) -> None:
    preds, target = binary_data(3, ignore=True)
    keep = target != IGNORE
    expected = oracle(np_(target[keep]), np_(preds[keep]))
    check_sharded(cls(ignore_index=IGNORE), (preds, target), expected, seed=13)


@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("average", ["macro", "weighted", "none"])
@pytest.mark.parametrize(
    ("cls", "score"),
    [(MulticlassAUROC, skm.roc_auc_score), (MulticlassAveragePrecision, skm.average_precision_score)],
)
def test_multiclass_scalars_exact(cls: type, score: Callable[..., float], average: str, ignore: bool) -> None:
    preds, target = multiclass_data(4, ignore=ignore)
    expected = sk_scalar(score, preds, target, average, multiclass=True)
    metric = cls(C, average=average, ignore_index=IGNORE if ignore else None)
    check_sharded(metric, (preds, target), expected, seed=14)


@pytest.mark.parametrize("ignore", [False, True])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none"])
@pytest.mark.parametrize(
    ("cls", "score"),
    [(MultilabelAUROC, skm.roc_auc_score), (MultilabelAveragePrecision, skm.average_precision_score)],
)
def test_multilabel_scalars_exact(cls: type, score: Callable[..., float], average: str, ignore: bool) -> None:
    preds, target = multilabel_data(5, ignore=ignore)
    expected = sk_scalar(score, preds, target, average, multiclass=False)
    metric = cls(C, average=average, ignore_index=IGNORE if ignore else None)
    check_sharded(metric, (preds, target), expected, seed=15)


@pytest.mark.parametrize(
    ("cls", "oracle", "multiclass"),
    [
        (MulticlassROC, sk_roc, True),
        (MulticlassPrecisionRecallCurve, sk_pr, True),
        (MultilabelROC, sk_roc, False),
        (MultilabelPrecisionRecallCurve, sk_pr, False),
    ],
)
def test_per_class_curves_exact(cls: type, oracle: Callable[..., Any], multiclass: bool) -> None:
    preds, target = (multiclass_data if multiclass else multilabel_data)(6, ignore=True)
    curves = [oracle(y, s) for y, s in columns(preds, target, multiclass)]
    expected = tuple([c[i] for c in curves] for i in range(3))  # TorchMetrics' layout: three lists
    check_sharded(cls(C, ignore_index=IGNORE), (preds, target), expected, seed=16, world_sizes=(1, 3))


@pytest.mark.parametrize(("cls", "oracle"), [(MulticlassROC, sk_roc), (MulticlassPrecisionRecallCurve, sk_pr)])
def test_multiclass_micro_curve_is_the_pooled_one_vs_rest_curve(cls: type, oracle: Callable[..., Any]) -> None:
    preds, target = multiclass_data(7)
    expected = oracle(np.eye(C)[target.numpy()].ravel(), np_(preds).ravel())
    check_sharded(cls(C, average="micro"), (preds, target), expected, seed=17, world_sizes=(1, 2))


@pytest.mark.parametrize("thresholds", [None, 9])
@pytest.mark.parametrize("cls", [MulticlassROC, MulticlassPrecisionRecallCurve])
def test_multiclass_macro_curve_matches_torchmetrics(cls: type, thresholds: int | None) -> None:
    preds, target = multiclass_data(8)
    ref = getattr(tmc, cls.__name__)(C, thresholds=thresholds, average="macro")
    ref.update(preds, target)
    check_sharded(
        cls(C, average="macro", thresholds=thresholds),
        (preds, target),
        ref.compute(),
        seed=18,
        world_sizes=(1, 3),
    )


# -- binned metrics against a direct count on the same thresholds ------------------


def np_confusion(y: np.ndarray, s: np.ndarray, thr: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per threshold, true and false positives (score >= threshold in float32); positives; negatives."""
    hit = s.astype(np.float32)[:, None] >= thr.astype(np.float32)[None, :]
    tp = (hit & (y[:, None] == 1)).sum(0).astype(float)
    fp = (hit & (y[:, None] == 0)).sum(0).astype(float)
    return tp, fp, float((y == 1).sum()), float((y == 0).sum())


def np_binned(kind: str, y: np.ndarray, s: np.ndarray, thr: np.ndarray) -> Any:
    tp, fp, pos, neg = np_confusion(y, s, thr)
    tpr, fpr = tp / max(pos, 1), fp / max(neg, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.append(tp / (tp + fp), 1.0)
        recall = np.append(tp / pos if pos else np.full_like(tp, np.nan), 0.0)
    if kind == "roc":
        return fpr[::-1].copy(), tpr[::-1].copy(), thr[::-1].copy()
    if kind == "pr":
        return precision, recall, thr
    if kind == "auroc":  # the area from the origin: a binned curve may start at a false positive rate above 0
        return np.trapezoid(np.append(0.0, tpr[::-1]), np.append(0.0, fpr[::-1]))
    p, r = np.nan_to_num(precision), np.nan_to_num(recall)
    return -np.sum((r[1:] - r[:-1]) * p[:-1])


THRESHOLDS = [5, [0.0, 0.1, 0.35, 0.5, 0.51, 0.9], torch.tensor([0.2, 0.4, 0.4, 0.6, 1.0])]


def thr_array(thresholds: Any) -> np.ndarray:
    if isinstance(thresholds, int):
        return torch.linspace(0, 1, thresholds).double().numpy()
    return torch.as_tensor(thresholds, dtype=torch.float32).double().numpy()


@pytest.mark.parametrize("thresholds", THRESHOLDS, ids=["int", "list", "tensor"])
@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        (BinaryROC, "roc"),
        (BinaryPrecisionRecallCurve, "pr"),
        (BinaryAUROC, "auroc"),
        (BinaryAveragePrecision, "ap"),
    ],
)
def test_binary_binned(cls: type, kind: str, thresholds: Any) -> None:
    preds, target = binary_data(20, ignore=True)
    keep = target != IGNORE
    expected = np_binned(kind, np_(target[keep]), np_(preds[keep]), thr_array(thresholds))
    check_sharded(cls(thresholds=thresholds, ignore_index=IGNORE), (preds, target), expected, seed=21)


def per_column(kind: str, preds: torch.Tensor, target: torch.Tensor, thr: np.ndarray, multiclass: bool) -> list:
    return [np_binned(kind, y, s, thr) for y, s in columns(preds, target, multiclass)]


@pytest.mark.parametrize("multiclass", [True, False], ids=["multiclass", "multilabel"])
@pytest.mark.parametrize("kind", ["roc", "pr"])
def test_per_class_binned_curves(kind: str, multiclass: bool) -> None:
    preds, target = (multiclass_data if multiclass else multilabel_data)(22, ignore=True)
    thr = thr_array(THRESHOLDS[1])
    curves = per_column(kind, preds, target, thr, multiclass)
    expected = (np.stack([c[0] for c in curves]), np.stack([c[1] for c in curves]), curves[0][2])
    cls = {
        ("roc", True): MulticlassROC,
        ("pr", True): MulticlassPrecisionRecallCurve,
        ("roc", False): MultilabelROC,
        ("pr", False): MultilabelPrecisionRecallCurve,
    }[kind, multiclass]
    check_sharded(
        cls(C, thresholds=THRESHOLDS[1], ignore_index=IGNORE),
        (preds, target),
        expected,
        seed=23,
        world_sizes=(1, 3),
    )


SCALAR_CASES = [  # TorchMetrics' multiclass AUROC and AP have no micro average
    (kind, multiclass, average)
    for kind in ("auroc", "ap")
    for multiclass in (True, False)
    for average in ("macro", "weighted", "none", "micro")
    if not (multiclass and average == "micro")
]


@pytest.mark.parametrize(("kind", "multiclass", "average"), SCALAR_CASES)
def test_per_class_binned_scalars(kind: str, multiclass: bool, average: str) -> None:
    preds, target = (multiclass_data if multiclass else multilabel_data)(24, ignore=True)
    thr = thr_array(7)
    values = np.array(per_column(kind, preds, target, thr, multiclass))
    cols = columns(preds, target, multiclass)
    support = np.array([y.sum() for y, _ in cols])
    expected = {
        "none": values,
        "macro": values.mean(),
        "weighted": (values * support).sum() / support.sum(),
        "micro": np_binned(kind, np.concatenate([y for y, _ in cols]), np.concatenate([s for _, s in cols]), thr),
    }[average]
    cls = {
        ("auroc", True): MulticlassAUROC,
        ("ap", True): MulticlassAveragePrecision,
        ("auroc", False): MultilabelAUROC,
        ("ap", False): MultilabelAveragePrecision,
    }[kind, multiclass]
    check_sharded(
        cls(C, average=average, thresholds=7, ignore_index=IGNORE),
        (preds, target),
        expected,
        seed=25,
        world_sizes=(1, 2),
    )


@pytest.mark.parametrize("kind", ["roc", "pr"])
def test_multiclass_binned_micro_curve_pools_classes(kind: str) -> None:
    preds, target = multiclass_data(26)
    thr = thr_array(6)
    expected = np_binned(kind, np.eye(C)[target.numpy()].ravel(), np_(preds).ravel(), thr)
    cls = MulticlassROC if kind == "roc" else MulticlassPrecisionRecallCurve
    check_sharded(cls(C, thresholds=6, average="micro"), (preds, target), expected, seed=27, world_sizes=(1, 2))


def test_binned_max_fpr_matches_torchmetrics() -> None:
    preds, target = binary_data(28)
    want = torchmetrics_value(BinaryAUROC, {"max_fpr": 0.4, "thresholds": 11}, (preds, target))
    check_sharded(BinaryAUROC(max_fpr=0.4, thresholds=11), (preds, target), want, seed=29, world_sizes=(1, 2))


@pytest.mark.parametrize("max_fpr", [None, 0.25, 0.5, 0.75])
def test_binned_auroc_of_scores_at_the_top_threshold_is_the_exact_value(max_fpr: float | None) -> None:
    # negatives scored 1.0 start a binned curve above fpr 0, and the area left of it was dropped: 0.375 for 0.5,
    # 0.81 for 0.85 with hard predictions, however many thresholds (TorchMetrics too)
    target = torch.tensor([1] * 10 + [0] * 10)
    preds = torch.tensor([1.0] * 8 + [0.0] * 2 + [1.0] + [0.0] * 9)  # hard predictions: TPR 0.8, FPR 0.1
    want = skm.roc_auc_score(target.numpy(), preds.numpy(), max_fpr=max_fpr)
    for thresholds in (2, 100, 2001):
        got = BinaryAUROC(max_fpr=max_fpr, thresholds=thresholds).update(preds, target).compute()
        assert got.item() == pytest.approx(want, abs=1e-6), thresholds
    both = torch.stack([preds, preds.flip(0)], 1), torch.stack([target, target.flip(0)], 1)
    got = MultilabelAUROC(2, thresholds=3, average="micro").update(*both).compute()
    assert got.item() == pytest.approx(skm.roc_auc_score(both[1].reshape(-1), both[0].reshape(-1)), abs=1e-6)


@pytest.mark.parametrize(
    ("binned", "exact"),
    [
        (BinaryAUROC(thresholds=2001), BinaryAUROC()),
        (BinaryAveragePrecision(thresholds=2001), BinaryAveragePrecision()),
        (MulticlassAUROC(C, thresholds=2001), MulticlassAUROC(C)),
        (MultilabelAveragePrecision(C, thresholds=2001), MultilabelAveragePrecision(C)),
    ],
    ids=lambda m: type(m).__name__,
)
def test_many_thresholds_approach_the_exact_value(binned: sm.Metric, exact: sm.Metric) -> None:
    g = torch.Generator().manual_seed(30)
    n = 400
    if isinstance(binned, MulticlassAUROC):
        preds, target = torch.randn(n, C, generator=g).softmax(1), torch.randint(0, C, (n,), generator=g)
    elif isinstance(binned, MultilabelAveragePrecision):
        preds, target = torch.rand(n, C, generator=g), torch.randint(0, 2, (n, C), generator=g)
    else:
        preds, target = torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)
    preds = (preds + 0.3 * target).clamp(0, 1) if preds.shape == target.shape else preds
    with sm.use_reducer(sm.local()):
        b = binned.update(preds, target).compute()
        e = exact.update(preds, target).compute()
    assert abs(float(b) - float(e)) < 5e-3


# -- every variant against TorchMetrics, exact and binned --------------------------


VARIANTS = [
    (BinaryAUROC, {}, "binary"),
    (BinaryAUROC, {"max_fpr": 0.25}, "binary"),
    (BinaryAveragePrecision, {}, "binary"),
    (BinaryROC, {}, "binary"),
    (BinaryPrecisionRecallCurve, {}, "binary"),
    (MulticlassAUROC, {"num_classes": C, "average": "weighted"}, "multiclass"),
    (MulticlassAveragePrecision, {"num_classes": C}, "multiclass"),
    (MulticlassROC, {"num_classes": C}, "multiclass"),
    (MulticlassPrecisionRecallCurve, {"num_classes": C, "average": "macro"}, "multiclass"),
    (MultilabelAUROC, {"num_labels": C, "average": "micro"}, "multilabel"),
    (MultilabelAveragePrecision, {"num_labels": C, "average": "none"}, "multilabel"),
    (MultilabelROC, {"num_labels": C}, "multilabel"),
    (MultilabelPrecisionRecallCurve, {"num_labels": C}, "multilabel"),
]
DATA = {"binary": binary_data, "multiclass": multiclass_data, "multilabel": multilabel_data}


def partial_auc(fpr: np.ndarray, tpr: np.ndarray, max_fpr: float | None) -> float:
    """scikit-learn's (McClish-standardized) area under an ROC curve given as points, taken from the origin."""
    fpr, tpr = np.append(0.0, fpr), np.append(0.0, tpr)
    if max_fpr is None:
        return float(np.trapezoid(tpr, fpr))
    stop = np.searchsorted(fpr, max_fpr, "right")
    tpr = np.append(tpr[:stop], np.interp(max_fpr, fpr[stop - 1 : stop + 1], tpr[stop - 1 : stop + 1]))
    fpr = np.append(fpr[:stop], max_fpr)
    low = 0.5 * max_fpr**2
    return 0.5 * (1 + (float(np.trapezoid(tpr, fpr)) - low) / (max_fpr - low))


def torchmetrics_value(cls: type, kwargs: dict[str, Any], *batches: tuple[torch.Tensor, torch.Tensor]) -> Any:
    if cls in (BinaryAUROC, MultilabelAUROC) and kwargs.get("thresholds") is not None:
        # TorchMetrics' binned AUROC integrates from its first threshold's point, not the origin, and drops the
        # area left of it when negatives score at or above the highest threshold: its binned ROC curve, from (0, 0)
        roc = tmc.BinaryROC(thresholds=kwargs["thresholds"], ignore_index=kwargs.get("ignore_index"))
        for p, t in batches:
            roc.update(p.reshape(-1), t.reshape(-1))  # multilabel: micro, the flattened labels
        fpr, tpr, _ = roc.compute()
        return torch.tensor(partial_auc(fpr.double().numpy(), tpr.double().numpy(), kwargs.get("max_fpr")))
    ref = getattr(tmc, cls.__name__)(**kwargs)
    for p, t in batches:
        ref.update(p, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ref.compute()


def same_as_torchmetrics(mine: Any, theirs: Any) -> None:
    """Equal values; TorchMetrics squeezes a one-threshold exact curve to 0-d, we keep it 1-d."""
    if isinstance(mine, tuple):
        pairs = zip(mine, theirs, strict=True)
        theirs = tuple(t.reshape(m.shape) if t.ndim == 0 and m.ndim == 1 else t for m, t in pairs)
    assert_close(mine, theirs)


@pytest.mark.parametrize("thresholds", [None, 6, [0.1, 0.3, 0.5, 0.5, 0.8]], ids=["exact", "int", "list"])
@pytest.mark.parametrize(("cls", "kwargs", "task"), VARIANTS, ids=lambda v: getattr(v, "__name__", None))
def test_matches_torchmetrics(cls: type, kwargs: dict[str, Any], task: str, thresholds: Any) -> None:
    kwargs = {**kwargs, "thresholds": thresholds, "ignore_index": IGNORE}
    a, b = DATA[task](31, ignore=True), DATA[task](32, n=17, ignore=True)
    with sm.use_reducer(sm.local()):
        mine = cls(**kwargs).update(*a).update(*b).compute()
    assert_close(mine, torchmetrics_value(cls, kwargs, a, b))


def test_logits_go_through_sigmoid_and_softmax() -> None:
    logits = torch.randn(40, generator=torch.Generator().manual_seed(33)) * 4
    target = (torch.arange(40) % 3 == 0).long()
    assert_close(
        BinaryROC(thresholds=9).update(logits, target).compute(),
        BinaryROC(thresholds=9).update(logits.sigmoid(), target).compute(),
    )
    scores = logits.reshape(10, 4)
    labels = torch.arange(10) % 4
    assert_close(
        MulticlassAUROC(4, thresholds=9).update(scores, labels).compute(),
        MulticlassAUROC(4, thresholds=9).update(scores.softmax(1), labels).compute(),
    )
    assert_close(
        MultilabelAveragePrecision(4).update(scores, (scores > 0).long()).compute(),
        MultilabelAveragePrecision(4).update(scores.sigmoid(), (scores > 0).long()).compute(),
    )


# -- distributed: one exact and one binned metric in simulated and gloo worlds ------


def test_exact_metric_in_worlds(world: Any) -> None:
    preds, target = multiclass_data(40)
    expected = skm.roc_auc_score(target.numpy(), np_(preds), multi_class="ovr", average="weighted")
    check_sharded(
        MulticlassAUROC(C, average="weighted"),
        (preds, target),
        np.float64(expected),
        seed=41,
        world_sizes=(2, 3),
        world=world,
    )


def test_binned_metric_in_worlds(world: Any) -> None:
    preds, target = binary_data(42, ignore=True)
    keep = target != IGNORE
    thr = thr_array(THRESHOLDS[1])
    expected = np_binned("pr", np_(target[keep]), np_(preds[keep]), thr)
    check_sharded(
        BinaryPrecisionRecallCurve(thresholds=THRESHOLDS[1], ignore_index=IGNORE),
        (preds, target),
        expected,
        seed=43,
        world_sizes=(2, 3),
        world=world,
    )


# -- states: layout fixed by configuration, memory, sharing, persistence ------------


ALL = [
    BinaryAUROC(),
    BinaryAUROC(thresholds=5),
    BinaryAveragePrecision(),
    BinaryROC(thresholds=[0.5]),
    BinaryPrecisionRecallCurve(),
    MulticlassAUROC(3),
    MulticlassAveragePrecision(3, thresholds=4),
    MulticlassROC(3, average="macro"),
    MulticlassPrecisionRecallCurve(3, thresholds=4, average="micro"),
    MultilabelAUROC(3, thresholds=4),
    MultilabelAveragePrecision(3, average="micro"),
    MultilabelROC(3),
    MultilabelPrecisionRecallCurve(3, thresholds=4),
]


def batch_for(m: sm.Metric, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if hasattr(m, "num_classes"):
        return torch.rand(n, m.num_classes, generator=g).softmax(1), torch.randint(0, m.num_classes, (n,), generator=g)
    if hasattr(m, "num_labels"):
        return torch.rand(n, m.num_labels, generator=g), torch.randint(0, 2, (n, m.num_labels), generator=g)
    return torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)


def layout(m: sm.Metric) -> dict[str, tuple[torch.dtype, tuple[int, ...]]]:
    """dtype and shape of every state, dim 0 of the exact (cat) states left out."""
    d = m.state_dict()
    return {k: (v.dtype, tuple(v.shape[1:]) if k in ("preds", "target") else tuple(v.shape)) for k, v in d.items()}


@pytest.mark.parametrize("m", ALL, ids=lambda m: type(m).__name__)
def test_state_layout_depends_on_configuration_only(m: sm.Metric) -> None:
    assert layout(m) == layout(m.update(*batch_for(m, 7))) == layout(m.update(*batch_for(m, 0)))
    labels = {"Binary": torch.uint8, "Multilabel": torch.int8, "Multiclass": torch.int64}
    expected = next(d for prefix, d in labels.items() if type(m).__name__.startswith(prefix))
    assert m.preds.dtype == torch.float32 and m.target.dtype == expected and m.counts.dtype == torch.int64


@pytest.mark.parametrize("m", [m for m in ALL if m.thresholds is not None], ids=lambda m: type(m).__name__)
def test_binned_memory_does_not_grow_with_samples(m: sm.Metric) -> None:
    small = m.update(*batch_for(m, 10))
    big = small
    for seed in range(3):
        big = big.update(*batch_for(m, 5000, seed))
    assert {k: v.shape for k, v in big.state_dict().items()} == {k: v.shape for k, v in small.state_dict().items()}
    assert sum(v.numel() for v in big.state_dict().values()) == sum(v.numel() for v in m.state_dict().values())
    assert int(big.counts.sum()) == (10 + 15000) * (3 if m.counts.ndim == 3 else 1)  # every entry counted once


def test_exact_memory_grows_with_samples() -> None:
    m = BinaryAUROC().update(torch.rand(10), torch.ones(10, dtype=torch.long))
    assert m.preds.shape == (10,) and m.counts.numel() == 0


@pytest.mark.parametrize("m", ALL, ids=lambda m: type(m).__name__)
def test_state_dict_pickle_and_merge_round_trip(m: sm.Metric) -> None:
    a, b = m.update(*batch_for(m, 12, 1)), m.update(*batch_for(m, 5, 2))
    buf = io.BytesIO()
    torch.save(a, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    with sm.use_reducer(sm.local()):
        assert_close(loaded.compute(), a.compute())
        assert_close(m.load_state_dict(a.state_dict()).compute(), a.compute())
        assert_close(a.merge(b).compute(), m.update(*batch_for(m, 12, 1)).update(*batch_for(m, 5, 2)).compute())
        assert_close(a.merge(m.reset()).compute(), a.compute())


def test_collection_shares_the_update_of_equal_configurations() -> None:
    c = sm.Collection(
        auroc=BinaryAUROC(thresholds=5, max_fpr=0.5),
        twin=BinaryAUROC(thresholds=5, max_fpr=0.5),
        ap=BinaryAveragePrecision(thresholds=5),
        roc=BinaryROC(thresholds=6),
    )
    preds, target = batch_for(BinaryAUROC(), 30)
    c = c.update(preds, target)
    # one type and configuration share an update; other types update apart, to the same counts
    assert c["auroc"].counts is c["twin"].counts and torch.equal(c["auroc"].counts, c["ap"].counts)
    assert c["roc"].counts.shape != c["ap"].counts.shape
    mc = sm.Collection(a=MulticlassAUROC(3, average="macro"), b=MulticlassAUROC(3, average="macro"))
    mc = mc.update(*batch_for(MulticlassAUROC(3), 20))
    assert mc["a"].preds is mc["b"].preds
    values = c.compute()
    with sm.use_reducer(sm.local()):
        assert_close(values["auroc"], BinaryAUROC(thresholds=5, max_fpr=0.5).update(preds, target).compute())
        assert_close(values["ap"], BinaryAveragePrecision(thresholds=5).update(preds, target).compute())


def test_thresholds_are_normalized_to_comparable_statics() -> None:
    a = BinaryAUROC(thresholds=torch.tensor([0.25, 0.5]))
    b = BinaryAUROC(thresholds=[0.25, 0.5])
    assert a.thresholds == b.thresholds == (0.25, 0.5)
    assert a.reset().thresholds == (0.25, 0.5)
    a.merge(b)  # equal configurations merge
    assert BinaryAUROC(thresholds=3).thresholds == 3


# -- edge cases -------------------------------------------------------------------


EMPTY_VALUES = [
    (BinaryAUROC(), 0.0),
    (BinaryAUROC(thresholds=5), 0.0),
    (BinaryAUROC(max_fpr=0.5), 0.0),
    (BinaryAveragePrecision(), 0.0),
    (BinaryAveragePrecision(thresholds=5), 0.0),
    (MulticlassAUROC(3), 0.0),
    (MulticlassAveragePrecision(3, thresholds=5, average="weighted"), 0.0),
    (MultilabelAUROC(3, average="micro"), 0.0),
    (MultilabelAveragePrecision(3, thresholds=5), 0.0),
]


@pytest.mark.parametrize(("m", "value"), EMPTY_VALUES, ids=lambda v: type(v).__name__)
def test_empty_state_computes_zero(m: sm.Metric, value: float) -> None:
    assert float(m.compute()) == value
    assert sm.simulate(lambda r: float(m.compute()), 3) == [value] * 3


def test_empty_curves_are_degenerate_not_errors() -> None:
    assert_close(BinaryROC().compute(), (torch.zeros(1), torch.zeros(1), torch.ones(1)))
    assert_close(BinaryPrecisionRecallCurve().compute(), (torch.ones(1), torch.zeros(1), torch.zeros(0)))
    fpr, tpr, thr = MulticlassROC(3).compute()
    assert len(fpr) == 3 and all(x.shape == (1,) for x in fpr)
    nan = float("nan")
    assert_close(
        BinaryPrecisionRecallCurve(thresholds=2).compute(),
        (torch.tensor([nan, nan, 1.0]), torch.tensor([nan, nan, 0.0]), torch.tensor([0.0, 1.0])),
    )
    assert_close(MulticlassROC(3, average="macro").compute()[0], torch.zeros(3))


settings_ = settings(max_examples=30, deadline=None)


@settings_
@given(n=st.integers(1, 12), label=st.integers(0, 1), thresholds=st.sampled_from([None, 5]), data=st.data())
def test_one_class_only_gives_torchmetrics_values(n: int, label: int, thresholds: int | None, data: Any) -> None:
    preds = torch.tensor(data.draw(st.lists(st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]), min_size=n, max_size=n)))
    target = torch.full((n,), label)
    for cls in (BinaryAUROC, BinaryAveragePrecision, BinaryROC, BinaryPrecisionRecallCurve):
        mine = cls(thresholds=thresholds).update(preds, target).compute()
        same_as_torchmetrics(mine, torchmetrics_value(cls, {"thresholds": thresholds}, (preds, target)))
    assert float(BinaryAUROC(thresholds=thresholds).update(preds, target).compute()) == 0.0


@settings_
@given(value=st.floats(0, 1, width=32), label=st.integers(0, 1), thresholds=st.sampled_from([None, 4, [0.5]]))
def test_single_sample(value: float, label: int, thresholds: Any) -> None:
    preds, target = torch.tensor([value]), torch.tensor([label])
    for cls in (BinaryAUROC, BinaryAveragePrecision, BinaryROC, BinaryPrecisionRecallCurve):
        mine = cls(thresholds=thresholds).update(preds, target).compute()
        same_as_torchmetrics(mine, torchmetrics_value(cls, {"thresholds": thresholds}, (preds, target)))
    assert float(BinaryAveragePrecision(thresholds=thresholds).update(preds, target).compute()) in (0.0, 1.0)


@settings_
@given(value=st.floats(0, 1, width=32), labels=st.lists(st.integers(0, 1), min_size=2, max_size=30))
def test_all_tied_scores(value: float, labels: list[int]) -> None:
    target = torch.tensor(labels)
    preds = torch.full((len(labels),), value)
    auroc = float(BinaryAUROC().update(preds, target).compute())
    ap = float(BinaryAveragePrecision().update(preds, target).compute())
    if 0 < sum(labels) < len(labels):
        assert auroc == pytest.approx(skm.roc_auc_score(labels, preds.numpy())) == pytest.approx(0.5)
    else:
        assert auroc == 0.0
    assert ap == pytest.approx(sum(labels) / len(labels))
    fpr, tpr, thr = BinaryROC().update(preds, target).compute()
    assert len(fpr) == 2 and float(thr[1]) == value  # one step for the whole tie group


@settings_
@given(
    n=st.integers(1, 8),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    thresholds=st.sampled_from([None, 5]),
)
def test_extra_dimensions_flatten_into_the_batch(n: int, k: int, seed: int, thresholds: int | None) -> None:
    g = torch.Generator().manual_seed(seed)
    p2, t2 = torch.randint(0, 5, (n, k), generator=g).float() / 4, torch.randint(0, 2, (n, k), generator=g)
    assert_close(
        BinaryAUROC(thresholds=thresholds).update(p2, t2).compute(),
        BinaryAUROC(thresholds=thresholds).update(p2.reshape(-1), t2.reshape(-1)).compute(),
    )
    pc, tc = torch.rand(n, 3, k, generator=g).softmax(1), torch.randint(0, 3, (n, k), generator=g)
    flat = pc.movedim(1, -1).reshape(-1, 3), tc.reshape(-1)
    assert_close(
        MulticlassAveragePrecision(3, thresholds=thresholds, average="none").update(pc, tc).compute(),
        MulticlassAveragePrecision(3, thresholds=thresholds, average="none").update(*flat).compute(),
    )
    pl, tl = torch.rand(n, 3, k, generator=g), torch.randint(0, 2, (n, 3, k), generator=g)
    flat = pl.movedim(1, -1).reshape(-1, 3), tl.movedim(1, -1).reshape(-1, 3)
    assert_close(
        MultilabelROC(3, thresholds=thresholds).update(pl, tl).compute(),
        MultilabelROC(3, thresholds=thresholds).update(*flat).compute(),
    )


def test_validate_args_false_gives_the_same_values() -> None:
    preds, target = multiclass_data(50)
    for thresholds in (None, 5):
        assert_close(
            MulticlassAUROC(C, thresholds=thresholds, validate_args=False).update(preds, target).compute(),
            MulticlassAUROC(C, thresholds=thresholds).update(preds, target).compute(),
        )


# -- bad input -------------------------------------------------------------------

F, L = torch.tensor([0.2, 0.7]), torch.tensor([0, 1])
BAD_UPDATES = [
    (BinaryAUROC(), (F, torch.tensor([0, 2])), ValueError, "target"),
    (BinaryAUROC(thresholds=3), (F, torch.tensor([0.0, 0.5])), TypeError, "target"),
    (BinaryAveragePrecision(), (torch.tensor([0, 1]), L), TypeError, "preds"),
    (BinaryROC(), (F, torch.tensor([0, 1, 1])), ValueError, "preds"),
    (BinaryROC(), ([0.2, 0.7], L), TypeError, "preds"),
    (BinaryPrecisionRecallCurve(), (torch.tensor([0.2, float("nan")]), L), ValueError, "preds"),
    (BinaryAUROC(thresholds=4), (torch.tensor([0.2, float("inf")]), L), ValueError, "preds"),
    (MulticlassAUROC(3), (torch.rand(2, 4), L), ValueError, "preds"),
    (MulticlassAUROC(3), (torch.rand(2, 3), torch.tensor([0, 3])), ValueError, "target"),
    (MulticlassROC(3, thresholds=4), (torch.rand(2), L), ValueError, "preds"),
    (MulticlassAveragePrecision(3), (torch.tensor([[0.1, 0.2, float("inf")]] * 2), L), ValueError, "preds"),
    (MultilabelAUROC(2), (torch.rand(2, 3), torch.ones(2, 3, dtype=torch.long)), ValueError, "preds"),
    (MultilabelROC(2), (torch.rand(2, 2), torch.tensor([[0, 1], [2, 0]])), ValueError, "target"),
    (
        MultilabelPrecisionRecallCurve(2),
        (torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2, dtype=torch.long)),
        TypeError,
        "preds",
    ),
    (
        MultilabelAveragePrecision(2, thresholds=3),
        (torch.full((2, 2), float("nan")), torch.ones(2, 2).long()),
        ValueError,
        "preds",
    ),
]


@pytest.mark.parametrize(("m", "args", "error", "arg"), BAD_UPDATES, ids=lambda v: getattr(type(v), "__name__", None))
def test_bad_updates_name_metric_and_argument_and_leave_state(m: sm.Metric, args: tuple, error: type, arg: str) -> None:
    m = m.update(*batch_for(m, 4))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(error) as info:
        m.update(*args)
    assert type(m).__name__ in str(info.value) and f"`{arg}`" in str(info.value)
    after = m.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


BAD_CONFIGS: list[tuple[type, dict[str, Any], type, str]] = [
    (BinaryAUROC, {"thresholds": 1}, ValueError, "thresholds"),
    (BinaryAUROC, {"thresholds": True}, TypeError, "thresholds"),
    (BinaryROC, {"thresholds": "ten"}, TypeError, "thresholds"),
    (BinaryROC, {"thresholds": ["a"]}, TypeError, "thresholds"),
    (BinaryROC, {"thresholds": []}, ValueError, "thresholds"),
    (BinaryROC, {"thresholds": torch.ones(2, 2)}, ValueError, "thresholds"),
    (BinaryROC, {"thresholds": [0.5, 0.2]}, ValueError, "thresholds"),
    (BinaryROC, {"thresholds": [0.5, float("nan")]}, ValueError, "thresholds"),
    (BinaryAUROC, {"max_fpr": 0.0}, ValueError, "max_fpr"),
    (BinaryAUROC, {"max_fpr": 1.5}, ValueError, "max_fpr"),
    (BinaryAveragePrecision, {"ignore_index": 0.5}, TypeError, "ignore_index"),
    (BinaryAveragePrecision, {"validate_args": "yes"}, TypeError, "validate_args"),
    (MulticlassAUROC, {"num_classes": 1}, ValueError, "num_classes"),
    (MulticlassAUROC, {"num_classes": 3, "average": "micro"}, ValueError, "average"),
    (MulticlassROC, {"num_classes": 3, "average": "weighted"}, ValueError, "average"),
    (MulticlassPrecisionRecallCurve, {"num_classes": 3, "thresholds": 2.5}, TypeError, "thresholds"),
    (MultilabelAveragePrecision, {"num_labels": 2, "average": "mean"}, ValueError, "average"),
    (MultilabelROC, {"num_labels": 0}, ValueError, "num_labels"),
]


@pytest.mark.parametrize(("cls", "kwargs", "error", "arg"), BAD_CONFIGS, ids=lambda v: getattr(v, "__name__", None))
def test_bad_configuration_names_metric_and_argument(cls: type, kwargs: dict[str, Any], error: type, arg: str) -> None:
    with pytest.raises(error) as info:
        cls(**kwargs)
    assert str(info.value).startswith(f"{cls.__name__}: ") and f"`{arg}`" in str(info.value)


def test_arguments_come_in_torchmetrics_positional_order() -> None:
    assert MulticlassAUROC(3, "weighted").average == "weighted"
    assert MulticlassROC(3, 5).thresholds == 5
    assert BinaryAUROC(0.5).max_fpr == 0.5
    assert BinaryROC(5, None, True, None).normalization is None
    assert MultilabelROC(2).num_labels == 2
    with pytest.raises(TypeError, match="takes 4 positional arguments but 5"):
        BinaryAUROC(0.5, None, None, True, "extra")  # type: ignore[call-arg]


def test_forward_returns_the_batch_value_and_folds_the_batch_in() -> None:
    first, second = binary_data(60), binary_data(61)
    for m in (BinaryAveragePrecision(), BinaryAveragePrecision(thresholds=7)):
        m = m.update(*first)
        m, batch_value = m.forward(*second)
        with sm.use_reducer(sm.local()):
            assert_close(batch_value, m.reset().update(*second).compute())
            assert_close(m.compute(), m.reset().update(*first).update(*second).compute())
