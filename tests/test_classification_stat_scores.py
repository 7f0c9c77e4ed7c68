"""Stat-score metrics against scikit-learn (and a numpy formula for specificity), sharded and merged."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded
from sklearn.metrics import accuracy_score, precision_recall_fscore_support, top_k_accuracy_score

import scopedmetrics as sm
import scopedmetrics.classification as sm_classification
from scopedmetrics.classification import (
    BinaryAccuracy,
    BinaryF1Score,
    BinaryFBetaScore,
    BinaryPrecision,
    BinaryRecall,
    BinarySpecificity,
    BinaryStatScores,
    MulticlassAccuracy,
    MulticlassF1Score,
    MulticlassFBetaScore,
    MulticlassPrecision,
    MulticlassRecall,
    MulticlassSpecificity,
    MulticlassStatScores,
    MultilabelAccuracy,
    MultilabelF1Score,
    MultilabelFBetaScore,
    MultilabelPrecision,
    MultilabelRecall,
    MultilabelSpecificity,
    MultilabelStatScores,
)
from scopedmetrics.classification import stat_scores as stat_scores_module

N = 90
C = 4
L = 3
AVERAGES = ["micro", "macro", "weighted", "none"]


# -- oracles -----------------------------------------------------------------


def counts(y: np.ndarray, p: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """Per-class tp, fp, tn, fn of label arrays."""
    tp = np.array([np.sum((y == c) & (p == c)) for c in range(k)])
    fp = np.array([np.sum((y != c) & (p == c)) for c in range(k)])
    fn = np.array([np.sum((y == c) & (p != c)) for c in range(k)])
    tn = len(y) - tp - fp - fn
    return tp, fp, tn, fn


def averaged(
    score: np.ndarray, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, average: str, multilabel: bool
) -> np.ndarray:
    """TorchMetrics' averaging of per-class scores (macro leaves out classes absent everywhere)."""
    if average == "none":
        return score
    if average == "weighted":
        w = (tp + fn).astype(float)
    else:
        w = np.ones(len(score)) if multilabel else (tp + fp + fn > 0).astype(float)
    return np.sum(w * score) / w.sum() if w.sum() else np.float64(0.0)


def divide(a: np.ndarray, b: np.ndarray, zero: float = 0.0) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.where(b != 0, a / np.where(b != 0, b, 1), zero)


def sk_multiclass(
    kind: str,
    y: np.ndarray,
    p: np.ndarray,
    average: str,
    zero_division: float = 0.0,
    beta: float = 1.0,
    k: int = C,
) -> np.ndarray:
    """The multiclass oracle: scikit-learn, except specificity (numpy formula)."""
    labels = list(range(k)) if average == "none" else None
    avg = None if average == "none" else average
    if kind == "specificity":
        tp, fp, tn, fn = counts(y, p, k)
        if average == "micro":
            return divide(tn.sum(), tn.sum() + fp.sum())
        return averaged(divide(tn, tn + fp), tp, fp, fn, average, multilabel=False)
    if kind == "accuracy":
        if average == "micro":
            return np.float64(accuracy_score(y, p))
        kind, zero_division = "recall", 0.0
    prec, rec, f, _ = precision_recall_fscore_support(
        y, p, beta=beta, labels=labels, average=avg, zero_division=zero_division
    )
    return {"precision": prec, "recall": rec, "fbeta": f}[kind]


def sk_multilabel(
    kind: str, y: np.ndarray, p: np.ndarray, average: str, zero_division: float = 0.0, beta: float = 1.0
) -> np.ndarray:
    """The multilabel oracle over indicator matrices: scikit-learn, accuracy and specificity per column."""
    avg = None if average == "none" else average
    if kind in ("accuracy", "specificity"):
        tp = np.sum((y == 1) & (p == 1), 0)
        fp = np.sum((y == 0) & (p == 1), 0)
        fn = np.sum((y == 1) & (p == 0), 0)
        tn = np.sum((y == 0) & (p == 0), 0)
        if kind == "accuracy":
            if average == "micro":
                return np.float64(accuracy_score(y.ravel(), p.ravel()))
            score = np.array([accuracy_score(y[:, j], p[:, j]) for j in range(y.shape[1])])
        else:
            if average == "micro":
                return divide(tn.sum(), tn.sum() + fp.sum())
            score = divide(tn, tn + fp)
        return averaged(score, tp, fp, fn, average, multilabel=True)
    prec, rec, f, _ = precision_recall_fscore_support(y, p, beta=beta, average=avg, zero_division=zero_division)
    return {"precision": prec, "recall": rec, "fbeta": f}[kind]


def sk_binary(kind: str, y: np.ndarray, p: np.ndarray, zero_division: float = 0.0, beta: float = 1.0) -> float:
    if kind == "accuracy":
        return accuracy_score(y, p)
    if kind == "specificity":
        tn, fp = np.sum((y == 0) & (p == 0)), np.sum((y == 0) & (p == 1))
        return float(divide(tn, tn + fp))
    prec, rec, f, _ = precision_recall_fscore_support(y, p, beta=beta, average="binary", zero_division=zero_division)
    return {"precision": prec, "recall": rec, "fbeta": f}[kind]


BINARY = {
    "accuracy": BinaryAccuracy,
    "precision": BinaryPrecision,
    "recall": BinaryRecall,
    "f1": BinaryF1Score,
    "fbeta": functools.partial(BinaryFBetaScore, beta=0.5),
    "specificity": BinarySpecificity,
}
MULTICLASS = {
    "accuracy": MulticlassAccuracy,
    "precision": MulticlassPrecision,
    "recall": MulticlassRecall,
    "f1": MulticlassF1Score,
    "fbeta": functools.partial(MulticlassFBetaScore, beta=2.0),
    "specificity": MulticlassSpecificity,
}
MULTILABEL = {
    "accuracy": MultilabelAccuracy,
    "precision": MultilabelPrecision,
    "recall": MultilabelRecall,
    "f1": MultilabelF1Score,
    "fbeta": functools.partial(MultilabelFBetaScore, beta=2.0),
    "specificity": MultilabelSpecificity,
}


def oracle_kind(name: str) -> tuple[str, dict]:
    """The oracle's metric name and keyword arguments for a metric key."""
    if name == "f1":
        return "fbeta", {"beta": 1.0}
    if name == "fbeta":
        return "fbeta", {}
    return name, {}


# -- data --------------------------------------------------------------------


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def binary_data(seed: int, kind: str) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    """``(preds, target, oracle preds, oracle target)``; logits never fall in [0, 1], so batches agree."""
    r = rng(seed)
    y = r.integers(0, 2, N)
    if kind == "labels":
        p = r.integers(0, 2, N)
        return torch.tensor(p), torch.tensor(y), p, y
    prob = r.random(N).astype(np.float32)
    if kind == "probs":
        return torch.tensor(prob), torch.tensor(y), (prob > 0.5).astype(int), y
    logits = np.where(r.random(N) < 0.5, -1.0, 1.0) * (1.0 + 3 * r.random(N))
    logits = logits.astype(np.float32)
    return torch.tensor(logits), torch.tensor(y), (logits > 0).astype(int), y


def multiclass_data(seed: int, kind: str, k: int = C) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    r = rng(seed)
    y = r.integers(0, k, N)
    if kind == "labels":
        p = r.integers(0, k, N)
        return torch.tensor(p), torch.tensor(y), p, y
    scores = r.normal(size=(N, k)).astype(np.float32) * 2
    if kind == "probs":
        scores = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
    return torch.tensor(scores), torch.tensor(y), scores.argmax(1), y


def multilabel_data(seed: int, kind: str) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    r = rng(seed)
    y = r.integers(0, 2, (N, L))
    if kind == "labels":
        p = r.integers(0, 2, (N, L))
        return torch.tensor(p), torch.tensor(y), p, y
    prob = r.random((N, L)).astype(np.float32)
    return torch.tensor(prob), torch.tensor(y), (prob > 0.5).astype(int), y


# -- against scikit-learn, sharded -----------------------------------------------


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("kind", ["labels", "probs", "logits"])
def test_binary(name: str, kind: str) -> None:
    preds, target, p, y = binary_data(1, kind)
    sk_name, kw = oracle_kind(name)
    metric = BINARY[name]()
    expected = sk_binary(sk_name, y, p, beta=kw.get("beta", getattr(metric, "beta", 1.0)))
    check_sharded(metric, [preds, target], expected, seed=3)


def test_binary_threshold_and_stat_scores() -> None:
    preds, target, _, y = binary_data(2, "probs")
    p = (preds.numpy() > 0.3).astype(int)
    tp, fp, tn, fn = (np.sum((y == a) & (p == b)) for a, b in [(1, 1), (0, 1), (0, 0), (1, 0)])
    check_sharded(BinaryStatScores(threshold=0.3), [preds, target], np.array([tp, fp, tn, fn, tp + fn]), seed=4)
    check_sharded(BinaryRecall(threshold=0.3), [preds, target], tp / (tp + fn), seed=5)


@pytest.mark.parametrize("ignore_index", [-1, 0, 255])
def test_binary_ignore_index(ignore_index: int) -> None:
    preds, target, p, y = binary_data(3, "probs")
    drop = rng(7).random(N) < 0.3
    target = target.clone()
    target[torch.tensor(drop)] = ignore_index
    keep = ~drop if ignore_index != 0 else target.numpy() != 0
    for name, cls in BINARY.items():
        sk_name, kw = oracle_kind(name)
        m = cls(ignore_index=ignore_index)
        expected = sk_binary(sk_name, y[keep], p[keep], beta=kw.get("beta", getattr(m, "beta", 1.0)))
        check_sharded(m, [preds, target], expected, seed=11, world_sizes=(1, 3))


@pytest.mark.parametrize("name", list(MULTICLASS))
@pytest.mark.parametrize("average", AVERAGES)
@pytest.mark.parametrize("kind", ["labels", "logits"])
def test_multiclass(name: str, average: str, kind: str) -> None:
    preds, target, p, y = multiclass_data(10, kind)
    sk_name, kw = oracle_kind(name)
    metric = MULTICLASS[name](num_classes=C, average=average)
    expected = sk_multiclass(sk_name, y, p, average, beta=kw.get("beta", getattr(metric, "beta", 1.0)))
    check_sharded(metric, [preds, target], expected, seed=5, world_sizes=(1, 2, 4))


@pytest.mark.parametrize("average", AVERAGES)
def test_multiclass_stat_scores(average: str) -> None:
    preds, target, p, y = multiclass_data(12, "probs")
    tp, fp, tn, fn = counts(y, p, C)
    res = np.stack([tp, fp, tn, fn, tp + fn], 1)
    expected = {
        "micro": res.sum(0),
        "macro": res.mean(0),
        "weighted": (res * ((tp + fn) / (tp + fn).sum())[:, None]).sum(0),
        "none": res,
    }[average]
    check_sharded(MulticlassStatScores(num_classes=C, average=average), [preds, target], expected, seed=6)


def test_multiclass_extra_dims_are_flattened() -> None:
    r = rng(13)
    scores = torch.tensor(r.normal(size=(30, C, 5)).astype(np.float32))
    target = torch.tensor(r.integers(0, C, (30, 5)))
    p = scores.argmax(1).numpy().ravel()
    y = target.numpy().ravel()
    check_sharded(
        MulticlassPrecision(num_classes=C, average="macro"),
        [scores, target],
        sk_multiclass("precision", y, p, "macro"),
        seed=7,
    )
    labels = scores.argmax(1)
    check_sharded(
        MulticlassRecall(num_classes=C, average="none"),
        [labels, target],
        sk_multiclass("recall", y, p, "none"),
        seed=8,
    )


@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_multiclass_ignore_index(ignore_index: int) -> None:
    preds, target, p, y = multiclass_data(14, "labels")
    if ignore_index == 1:
        keep = y != 1
    else:
        keep = rng(15).random(N) > 0.3
        target = target.clone()
        target[torch.tensor(~keep)] = ignore_index
    for name, cls in MULTICLASS.items():
        sk_name, kw = oracle_kind(name)
        m = cls(num_classes=C, average="macro", ignore_index=ignore_index)
        expected = sk_multiclass(sk_name, y[keep], p[keep], "macro", beta=kw.get("beta", getattr(m, "beta", 1.0)))
        check_sharded(m, [preds, target], expected, seed=16, world_sizes=(1, 3))


@pytest.mark.parametrize("top_k", [2, 3])
def test_multiclass_top_k(top_k: int) -> None:
    preds, target, _, y = multiclass_data(17, "logits", k=5)
    scores = preds.numpy()
    top = np.argsort(-scores, 1)[:, :top_k]
    hit = (top == y[:, None]).any(1)
    p = np.where(hit, y, scores.argmax(1))  # a hit predicts the target, a miss the argmax
    check_sharded(
        MulticlassAccuracy(num_classes=5, top_k=top_k, average="micro"),
        [preds, target],
        top_k_accuracy_score(y, scores, k=top_k, labels=range(5)),
        seed=18,
    )
    for name in ("precision", "recall", "f1"):
        sk_name, kw = oracle_kind(name)
        m = MULTICLASS[name](num_classes=5, top_k=top_k, average="weighted")
        check_sharded(
            m,
            [preds, target],
            sk_multiclass(sk_name, y, p, "weighted", k=5, **kw),
            seed=19,
            world_sizes=(1, 2),
        )


@pytest.mark.parametrize("name", list(MULTILABEL))
@pytest.mark.parametrize("average", AVERAGES)
def test_multilabel(name: str, average: str) -> None:
    preds, target, p, y = multilabel_data(20, "probs" if name != "accuracy" else "labels")
    sk_name, kw = oracle_kind(name)
    metric = MULTILABEL[name](num_labels=L, average=average)
    expected = sk_multilabel(sk_name, y, p, average, beta=kw.get("beta", getattr(metric, "beta", 1.0)))
    check_sharded(metric, [preds, target], expected, seed=21, world_sizes=(1, 2, 4))


def test_multilabel_ignore_index_and_extra_dims() -> None:
    r = rng(22)
    preds = torch.tensor(r.normal(size=(40, L, 3)).astype(np.float32) * 3)  # logits
    target = torch.tensor(r.integers(0, 2, (40, L, 3)))
    target[torch.tensor(r.random((40, L, 3)) < 0.2)] = -1
    p = (preds.sigmoid() > 0.5).long().movedim(1, -1).reshape(-1, L).numpy()
    y = target.movedim(1, -1).reshape(-1, L).numpy()
    keep = y != -1
    tp = ((y == 1) & (p == 1) & keep).sum(0)
    fp = ((y == 0) & (p == 1) & keep).sum(0)
    tn = ((y == 0) & (p == 0) & keep).sum(0)
    fn = ((y == 1) & (p == 0) & keep).sum(0)
    check_sharded(
        MultilabelStatScores(num_labels=L, average="none", ignore_index=-1),
        [preds, target],
        np.stack([tp, fp, tn, fn, tp + fn], 1),
        seed=23,
    )
    per_label = [
        precision_recall_fscore_support(y[keep[:, j], j], p[keep[:, j], j], average="binary", zero_division=0)[0]
        for j in range(L)
    ]
    check_sharded(MultilabelPrecision(num_labels=L, ignore_index=-1), [preds, target], np.mean(per_label), seed=24)


def test_world_subset(world) -> None:
    """One multiclass and one binary metric under simulate and under real gloo processes."""
    preds, target, p, y = multiclass_data(30, "logits")
    target = target.clone()
    target[:7] = -1
    check_sharded(
        MulticlassF1Score(num_classes=C, ignore_index=-1),
        [preds, target],
        sk_multiclass("fbeta", y[7:], p[7:], "macro"),
        seed=31,
        world=world,
        world_sizes=(1, 3),
    )
    bpreds, btarget, bp, by = binary_data(32, "logits")
    check_sharded(
        BinaryPrecision(),
        [bpreds, btarget],
        sk_binary("precision", by, bp),
        seed=33,
        world=world,
        world_sizes=(1, 3),
    )


@pytest.mark.parametrize("family", ["Binary", "Multiclass", "Multilabel"])
@pytest.mark.parametrize(
    "metric", ["StatScores", "Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity"]
)
def test_agrees_with_torchmetrics(family: str, metric: str) -> None:
    """Same class name, same arguments, same value: logits, top_k and ignore_index conventions included."""
    tm = pytest.importorskip("torchmetrics.classification")
    r = rng(50)
    beta = {"beta": 0.5} if metric == "FBetaScore" else {}
    if family == "Binary":
        cases = [
            ({}, torch.tensor(r.normal(size=60).astype(np.float32) * 3), torch.tensor(r.integers(0, 2, 60))),
            (
                {"threshold": 0.3, "ignore_index": -1},
                torch.tensor(r.random(60).astype(np.float32)),
                torch.tensor(r.integers(-1, 2, 60)),
            ),
        ]
    elif family == "Multiclass":
        scores = torch.tensor(r.normal(size=(60, 5, 2)).astype(np.float32))
        target = torch.tensor(r.integers(0, 5, (60, 2)))
        cases = [
            ({"num_classes": 5, "average": a, "top_k": k, "ignore_index": i}, scores, target)
            for a, k, i in [("macro", 1, None), ("weighted", 2, 0), ("none", 3, None), ("micro", 2, None)]
        ]
    else:
        preds = torch.tensor(r.normal(size=(60, 3, 2)).astype(np.float32))
        target = torch.tensor(r.integers(-1, 2, (60, 3, 2)))
        cases = [
            ({"num_labels": 3, "average": a, "ignore_index": -1}, preds, target)
            for a in ["macro", "weighted", "none", "micro"]
        ]
    for kwargs, preds, target in cases:
        ours = getattr(sm_classification, family + metric)(**kwargs, **beta)
        theirs = getattr(tm, family + metric)(**kwargs, **beta)
        assert_close(ours.update(preds, target).compute(), theirs(preds, target))


# -- edge cases --------------------------------------------------------------


@st.composite
def multiclass_case(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Small label sets: one sample, one class everywhere, classes never predicted or never present."""
    k = draw(st.integers(2, 5))
    n = draw(st.integers(1, 12))
    true_classes = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    pred_classes = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    y = np.array(draw(st.lists(st.sampled_from(true_classes), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(pred_classes), min_size=n, max_size=n)))
    split = draw(st.integers(0, n))
    return k, y, p, split


def split_fold(metric: sm.Metric, preds: torch.Tensor, target: torch.Tensor, split: int) -> torch.Tensor:
    """Two shards (either possibly empty) merged, computed locally."""
    a = metric.update(preds[:split], target[:split])
    b = metric.reset().update(preds[split:], target[split:])
    with sm.use_reducer(sm.local()):
        return a.merge(b).compute()


@settings(max_examples=60, deadline=None)
@given(multiclass_case(), st.sampled_from(list(MULTICLASS)), st.sampled_from(AVERAGES), st.sampled_from([0, 1]))
def test_multiclass_edge_cases(case, name: str, average: str, zero_division: int) -> None:
    k, y, p, split = case
    sk_name, kw = oracle_kind(name)
    kwargs = {} if name in ("accuracy", "specificity") else {"zero_division": zero_division}
    metric = MULTICLASS[name](num_classes=k, average=average, **kwargs)
    got = split_fold(metric, torch.tensor(p), torch.tensor(y), split)
    expected = sk_multiclass(
        sk_name,
        y,
        p,
        average,
        k=k,
        beta=kw.get("beta", getattr(metric, "beta", 1.0)),
        zero_division=kwargs.get("zero_division", 0),
    )
    assert_close(got, expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.integers(0, 1)), min_size=1, max_size=12),
    st.sampled_from(list(BINARY)),
    st.sampled_from([0, 1]),
    st.data(),
)
def test_binary_edge_cases(rows, name: str, zero_division: int, data) -> None:
    """Ties at the threshold (0.5 is negative), single samples, all one class, zero_division."""
    probs = np.array([r[0] for r in rows], dtype=np.float32)
    y = np.array([r[1] for r in rows])
    p = (probs > 0.5).astype(int)
    sk_name, kw = oracle_kind(name)
    kwargs = {} if name in ("accuracy", "specificity") else {"zero_division": zero_division}
    metric = BINARY[name](**kwargs)
    split = data.draw(st.integers(0, len(rows)))
    got = split_fold(metric, torch.tensor(probs), torch.tensor(y), split)
    expected = sk_binary(
        sk_name,
        y,
        p,
        beta=kw.get("beta", getattr(metric, "beta", 1.0)),
        zero_division=kwargs.get("zero_division", 0),
    )
    assert_close(got, expected)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4), st.integers(1, 8), st.data())
def test_multiclass_score_ties_pick_the_first_class(k: int, n: int, data) -> None:
    """Tied scores resolve to the lowest class index, as numpy's argmax."""
    scores = np.array(
        data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=k, max_size=k), min_size=n, max_size=n)),
        dtype=np.float32,
    )
    y = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    m = MulticlassAccuracy(num_classes=k, average="micro").update(torch.tensor(scores), torch.tensor(y))
    assert_close(m.compute(), accuracy_score(y, scores.argmax(1)))


def test_zero_division_values() -> None:
    """No positive predictions: precision is zero_division; no positives at all: recall too."""
    preds, target = torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long)
    for zd in (0, 1):
        assert BinaryPrecision(zero_division=zd).update(preds, target).compute() == zd
        assert BinaryRecall(zero_division=zd).update(preds, target).compute() == zd
        assert BinaryF1Score(zero_division=zd).update(preds, target).compute() == zd
    empty = MulticlassPrecision(num_classes=3, average="none", zero_division=1)
    assert_close(empty.compute(), np.ones(3))
    assert_close(MulticlassAccuracy(num_classes=3).compute(), 0.0)


def test_empty_batches_and_forward() -> None:
    m = MulticlassF1Score(num_classes=3)
    same = m.update(torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long))
    assert_close(same.state_dict(), m.state_dict())
    same = m.update(torch.empty(0, 3), torch.empty(0, dtype=torch.long))
    assert_close(same.state_dict(), m.state_dict())
    preds, target, p, y = multiclass_data(40, "labels", k=3)
    m, batch_value = m.forward(preds[:30], target[:30])
    assert_close(batch_value, sk_multiclass("fbeta", y[:30], p[:30], "macro", k=3))
    m, _ = m.forward(preds[30:], target[30:])
    assert_close(m.compute(), sk_multiclass("fbeta", y, p, "macro", k=3))


def test_state_is_per_class_int64_whatever_the_average() -> None:
    for average in AVERAGES:
        m = MulticlassPrecision(num_classes=5, average=average)
        state = {k: (v.dtype, tuple(v.shape)) for k, v in m.state_dict().items()}
        assert state == {"stats.counts": (torch.int64, (5, 3))}
    assert list(BinaryF1Score().state_dict()) == ["stats.tp", "stats.fp", "stats.tn", "stats.fn"]
    assert all(v.shape == () and v.dtype == torch.int64 for v in BinaryF1Score().state_dict().values())
    assert all(v.shape == (3,) for v in MultilabelRecall(num_labels=3).state_dict().values())


def test_counts_give_tn_and_fn_per_class() -> None:
    preds, target, p, y = multiclass_data(46, "labels")
    m = MulticlassStatScores(num_classes=C, average="none").update(preds, target)
    for j in range(C):
        assert int(m.tp[j]) == int(((p == j) & (y == j)).sum())
        assert int(m.fp[j]) == int(((p == j) & (y != j)).sum())
        assert int(m.fn[j]) == int(((p != j) & (y == j)).sum())
        assert int(m.tn[j]) == int(((p != j) & (y != j)).sum())


@pytest.mark.parametrize("ignore_index", [None, -100])  # -100: the masked path, nothing ignored
@pytest.mark.parametrize(("preds", "target"), [
    ([0, 1], [0, 3]), ([0, 1], [-1, 0]),  # a target out of range
    ([0, 3], [0, 1]), ([0, 4], [0, 2]), ([0, 5], [0, 0]),  # a miss predicted past the end
    ([0, -1], [0, 2]), ([0, -3], [0, 0]),  # a negative prediction
    ([0, 3], [0, 3]),  # a hit out of range
])
def test_validate_args_false_out_of_range_label_names_the_metric(
    preds: list[int], target: list[int], ignore_index: int | None
) -> None:
    # the rows used to be (3, C) side by side: a miss predicted as 3 counted as class 0's support, without an error
    m = MulticlassAccuracy(num_classes=3, validate_args=False, ignore_index=ignore_index)
    with pytest.raises(ValueError, match=r"MulticlassAccuracy.*`preds` or `target`.*outside \[0, 3\)"):
        m.update(torch.tensor(preds), torch.tensor(target))
    assert int(m.stats.counts.sum()) == 0


@pytest.mark.parametrize("ignore_index", [None, -100])
@pytest.mark.parametrize(("columns", "target"), [
    (3, [0, 3]), (3, [0, -1]), (3, [0, 2**40]),  # a target out of range
    (4, [0, 0]), (5, [0, 1]),  # more score columns than classes: the argmax lands past the end (4 = 1 * 3 + 1)
])
def test_validate_args_false_scores_out_of_range_name_the_metric(
    columns: int, target: list[int], ignore_index: int | None
) -> None:
    preds = torch.zeros(2, columns)
    preds[:, -1] = 1.0  # every argmax is the last column
    m = MulticlassAccuracy(num_classes=3, validate_args=False, ignore_index=ignore_index, average="micro")
    with pytest.raises(ValueError, match=r"MulticlassAccuracy.*`preds` or `target`.*outside \[0, 3\)"):
        m.update(preds, torch.tensor(target))
    assert int(m.stats.counts.sum()) == 0


def test_validate_args_false_gives_the_same_values_and_skips_checks() -> None:
    preds, target, _, _ = multiclass_data(41, "logits")
    on = MulticlassRecall(num_classes=C).update(preds, target).compute()
    off = MulticlassRecall(num_classes=C, validate_args=False).update(preds, target).compute()
    assert_close(off, on)
    BinaryAccuracy(validate_args=False).update(torch.tensor([0, 1]), torch.tensor([0, 2]))  # no check, no error


# -- collections share one update ------------------------------------------------


def test_collection_shares_one_update_between_equal_members(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = stat_scores_module.MulticlassCounts.update

    @functools.wraps(original)
    def counting(self, preds, target):
        calls.append(self.top_k)
        return original(self, preds, target)

    monkeypatch.setattr(stat_scores_module.MulticlassCounts, "update", counting)
    c = sm.Collection(
        precision=MulticlassPrecision(num_classes=C),
        again=MulticlassPrecision(num_classes=C),
        recall=MulticlassRecall(num_classes=C, average="micro"),
        f1=MulticlassF1Score(num_classes=C, zero_division=1),
        top2=MulticlassAccuracy(num_classes=C, top_k=2),
    )
    preds, target, p, y = multiclass_data(42, "logits")
    c = c.update(preds, target)
    # Members hold nested counts configured by what update reads: compute-only options (average,
    # zero_division) do not split them, top_k does.
    assert sorted(calls) == [1, 2]
    assert c["precision"].stats is c["again"].stats and c["again"].stats is c["recall"].stats
    assert c["recall"].stats is c["f1"].stats and c["top2"].stats is not c["f1"].stats
    values = c.compute()
    assert_close(values["precision"], sk_multiclass("precision", y, p, "macro"))
    assert_close(values["again"], values["precision"])
    assert_close(values["recall"], sk_multiclass("recall", y, p, "micro"))
    assert_close(values["f1"], sk_multiclass("fbeta", y, p, "macro", zero_division=1))


def test_collection_of_multilabel_and_binary_members_share() -> None:
    c = sm.Collection(
        p=MultilabelPrecision(num_labels=L),
        q=MultilabelPrecision(num_labels=L),
        other=MultilabelPrecision(num_labels=L, threshold=0.7),
    )
    preds, target, _, _ = multilabel_data(43, "probs")
    c = c.update(preds, target)
    assert c["p"].tp is c["q"].tp and c["other"].tp is not c["p"].tp
    b = sm.Collection(p=BinaryPrecision(), q=BinaryPrecision(), s=BinaryStatScores()).update(
        *binary_data(44, "probs")[:2]
    )
    assert b["p"].tp is b["q"].tp and torch.equal(b["p"].tp, b["s"].tp)


# -- bad input -----------------------------------------------------------------


def _ints(*values: int) -> torch.Tensor:
    return torch.tensor(values)


def good_batch(metric: sm.Metric) -> tuple[torch.Tensor, torch.Tensor]:
    name = type(metric).__name__
    if name.startswith("Binary"):
        return torch.tensor([0.9, 0.1]), _ints(1, 1)
    if name.startswith("Multilabel"):
        return torch.full((2, metric.num_labels), 0.9), torch.ones(2, metric.num_labels, dtype=torch.long)
    return torch.rand(2, metric.num_classes), _ints(1, 1)


BAD_UPDATES = [
    (BinaryAccuracy(), [0.1, 0.2], _ints(0, 1), TypeError, "`preds` must be a torch.Tensor"),
    (
        BinaryAccuracy(),
        torch.tensor([0.1, 0.2]),
        torch.tensor([0.5, 1.0]),  # float 0./1. targets are labels (as in TorchMetrics); 0.5 is none
        TypeError,
        "`target` must hold integer",
    ),
    (BinaryPrecision(), torch.tensor([0.1, 0.2, 0.3]), _ints(0, 1), ValueError, "`preds` has shape (3,)"),
    (
        BinaryRecall(),
        torch.tensor([0.1, 0.2]),
        _ints(0, 2),
        ValueError,
        "`target` has values outside [0, 1]: [2]",
    ),
    (
        BinaryRecall(ignore_index=-1),
        torch.tensor([0.1, 0.2]),
        _ints(-2, 1),
        ValueError,
        "`target` has values outside [0, 1] other than ignore_index=-1",
    ),
    (BinaryF1Score(), _ints(0, 3), _ints(0, 1), ValueError, "`preds` has values outside [0, 1]: [3]"),
    (BinarySpecificity(), torch.tensor([float("nan"), 0.2]), _ints(0, 1), ValueError, "`preds` contains NaN"),
    (
        MulticlassAccuracy(num_classes=10),
        _ints(0, 1),
        _ints(0, 10),
        ValueError,
        "`target` has values outside [0, 9]: [10]",
    ),
    (
        MulticlassAccuracy(num_classes=3),
        _ints(0, 3),
        _ints(0, 1),
        ValueError,
        "`preds` has values outside [0, 2]",
    ),
    (
        MulticlassPrecision(num_classes=3),
        torch.rand(2, 4),
        _ints(0, 1),
        ValueError,
        "`preds` has 4 scores in dim 1, expected num_classes=3",
    ),
    (MulticlassRecall(num_classes=3), torch.rand(2, 3), _ints(0, 1, 2), ValueError, "`preds` holds scores"),
    (
        MulticlassF1Score(num_classes=3),
        torch.tensor([0.0, 1.0]),
        _ints(0, 1),
        ValueError,
        "`preds` holds scores",
    ),
    (
        MulticlassFBetaScore(beta=1.0, num_classes=3, top_k=2),
        _ints(0, 1),
        _ints(0, 1),
        ValueError,
        "`preds` holds labels, but top_k=2",
    ),
    (
        MulticlassSpecificity(num_classes=3),
        _ints(0, 1),
        torch.tensor([0, 1], dtype=torch.complex64),
        TypeError,
        "`target` must be real",
    ),
    (MulticlassStatScores(num_classes=3), _ints(0, 1), "0, 1", TypeError, "`target` must be a torch.Tensor"),
    (
        MultilabelAccuracy(num_labels=3),
        torch.rand(2, 2),
        torch.ones(2, 2, dtype=torch.long),
        ValueError,
        "`preds` must have shape (N, 3, ...)",
    ),
    (
        MultilabelPrecision(num_labels=2),
        torch.rand(2, 2),
        _ints(0, 1).repeat(2, 1) * 3,
        ValueError,
        "`target` has values outside [0, 1]",
    ),
]


@pytest.mark.parametrize(
    "metric, preds, target, exc, fragment",
    BAD_UPDATES,
    ids=[f"{type(c[0]).__name__}-{i}" for i, c in enumerate(BAD_UPDATES)],
)
def test_bad_update_names_metric_and_argument(metric, preds, target, exc, fragment) -> None:
    m = metric.update(*good_batch(metric))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(exc) as info:
        m.update(preds, target)
    message = str(info.value)
    assert message.startswith(f"{type(metric).__name__}.update: argument `"), message
    assert fragment in message, message
    assert_close(m.state_dict(), before)


BAD_CONFIGS = [
    (
        lambda: MulticlassAccuracy(num_classes=1),
        "MulticlassAccuracy: argument `num_classes` must be at least 2",
    ),
    (lambda: MulticlassAccuracy(num_classes=3.0), "MulticlassAccuracy: argument `num_classes`"),
    (
        lambda: MulticlassRecall(num_classes=3, top_k=4),
        "MulticlassRecall: argument `top_k` must be <= num_classes=3",
    ),
    (
        lambda: MulticlassRecall(num_classes=3, top_k=0),
        "MulticlassRecall: argument `top_k` must be at least 1",
    ),
    (
        lambda: MulticlassPrecision(num_classes=3, average="samples"),
        "MulticlassPrecision: argument `average`",
    ),
    (
        lambda: MulticlassPrecision(num_classes=3, zero_division=0.5),
        "MulticlassPrecision: argument `zero_division`",
    ),
    (lambda: MultilabelF1Score(num_labels=3, threshold=-0.1), "MultilabelF1Score: argument `threshold`"),
    (
        lambda: MultilabelFBetaScore(num_labels=3, beta=0.0),
        "MultilabelFBetaScore: argument `beta` must be a finite number > 0",
    ),
    (lambda: MultilabelStatScores(num_labels=1), "MultilabelStatScores: argument `num_labels`"),
    (lambda: BinaryAccuracy(threshold=True), "BinaryAccuracy: argument `threshold`"),
    (lambda: BinaryStatScores(ignore_index="x"), "BinaryStatScores: argument `ignore_index`"),
    (lambda: BinaryFBetaScore(beta=1.0, validate_args=1), "BinaryFBetaScore: argument `validate_args` must be a bool"),
]


@pytest.mark.parametrize("make, message", BAD_CONFIGS)
def test_bad_configuration_names_metric_and_argument(make, message) -> None:
    with pytest.raises((ValueError, TypeError)) as info:  # a wrong type is a TypeError (_checks)
        make()
    assert str(info.value).startswith(message), str(info.value)


def test_merge_refuses_other_configurations() -> None:
    with pytest.raises(ValueError, match="num_classes"):
        MulticlassRecall(num_classes=3).merge(MulticlassRecall(num_classes=4))
    with pytest.raises(TypeError):
        MulticlassRecall(num_classes=3).merge(MulticlassPrecision(num_classes=3))


def test_pickle_state_dict_reset_round_trip() -> None:
    preds, target, p, y = multiclass_data(45, "logits")
    m = MulticlassFBetaScore(num_classes=C, beta=2.0, average="weighted", ignore_index=-1)
    m = m.update(preds, target)
    expected = sk_multiclass("fbeta", y, p, "weighted", beta=2.0)
    assert_close(pickle.loads(pickle.dumps(m)).compute(), expected)
    fresh = m.reset()
    assert (fresh.num_classes, fresh.beta, fresh.average, fresh.ignore_index) == (C, 2.0, "weighted", -1)
    assert_close(fresh.state_dict(), {"stats.counts": torch.zeros(C, 3, dtype=torch.long)})
    assert_close(fresh.load_state_dict(m.state_dict()).compute(), expected)
    assert_close(m.to(torch.float64).compute(), expected)


_NARROW = {
    "BinaryAccuracy": (lambda **kw: sm_classification.BinaryAccuracy(**kw), (8,)),
    "MultilabelF1Score": (lambda **kw: sm_classification.MultilabelF1Score(num_labels=2, **kw), (8, 2)),
    "BinaryAUROC": (lambda **kw: sm_classification.BinaryAUROC(**kw), (8,)),
    "BinaryAUROC binned": (lambda **kw: sm_classification.BinaryAUROC(thresholds=5, **kw), (8,)),
    "BinaryHingeLoss": (lambda **kw: sm_classification.BinaryHingeLoss(**kw), (8,)),
    "MultilabelRankingLoss": (lambda **kw: sm_classification.MultilabelRankingLoss(num_labels=2, **kw), (8, 2)),
}


@pytest.mark.parametrize("name", list(_NARROW))
def test_an_ignore_index_a_narrow_target_dtype_cannot_hold_ignores_nothing(name: str) -> None:
    # torch compares in the tensor's dtype: 257 against uint8 labels was 1, so every positive was dropped silently
    make, shape = _NARROW[name]
    g = torch.Generator().manual_seed(5)
    preds = torch.rand(shape, generator=g)
    target = torch.arange(preds.numel()).reshape(shape) % 3 % 2  # both labels in every column
    want = make().update(preds, target).compute()
    assert_close(make(ignore_index=257).update(preds, target.to(torch.uint8)).compute(), want)
    with pytest.raises(ValueError, match="argument `target` has values outside"):  # 255 is no int8: -1 is bad
        make(ignore_index=255).update(preds, torch.where(target == 1, -1, 0).to(torch.int8))


def test_scores_compare_with_the_threshold_exactly_in_any_precision() -> None:
    # torch rounded the threshold to the scores' dtype: bfloat16 0.703125 was not above 0.703, and a bfloat16
    # logit of 0.005 went through a bfloat16 sigmoid to exactly 0.5 (a negative)
    p, t = torch.tensor([0.703125, 0.703125], dtype=torch.bfloat16), torch.tensor([1, 1])
    assert sm_classification.BinaryRecall(threshold=0.703).update(p, t).compute().item() == 1.0
    h = torch.tensor([[0.30004883, 0.9]], dtype=torch.float16)
    got = sm_classification.MultilabelRecall(2, threshold=0.30003, average="none").update(h, torch.ones(1, 2))
    assert got.compute().tolist() == [1.0, 1.0]
    logits = torch.tensor([-2.0, 0.005], dtype=torch.bfloat16)
    assert sm_classification.BinaryStatScores().update(logits, torch.tensor([0, 1])).compute().tolist()[:4] == [
        1, 0, 1, 0]
    exact = torch.tensor([0.5, 0.5000001], dtype=torch.float64)  # at the threshold: negative; above: positive
    assert sm_classification.BinaryStatScores().update(exact, torch.tensor([0, 1])).compute().tolist()[:4] == [
        1, 0, 1, 0]


def test_weighted_average_without_support_and_a_huge_beta_follow_scikit_learn() -> None:
    # no positives anywhere: the weights are all 0, and scikit-learn averages plainly (recall 1.0 with
    # zero_division=1, where 0 was given); F-beta overflowed float32 from beta = 1e19 (NaN for the recall)
    target, preds = torch.zeros(4, 3, dtype=torch.long), torch.tensor([[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0]])
    for cls, want in ((sm_classification.MultilabelRecall, 1.0), (sm_classification.MultilabelPrecision, 1 / 3)):
        got = cls(3, average="weighted", zero_division=1).update(preds, target).compute().item()
        theirs = precision_recall_fscore_support(target.numpy(), preds.numpy(), average="weighted", zero_division=1)
        assert got == pytest.approx(want) and got == pytest.approx(theirs[1 if "Recall" in cls.__name__ else 0])
    p, t = torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 1])
    assert sm_classification.BinaryFBetaScore(1e20).update(p, t).compute().item() == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="argument `beta` must be a finite number > 0, got inf"):
        sm_classification.BinaryFBetaScore(float("inf"))
