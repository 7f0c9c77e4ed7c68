"""Negative predictive value, Hamming distance, Jaccard index and exact match, and the shared counts of a collection.

Oracles: scikit-learn (``hamming_loss``, ``jaccard_score``, ``accuracy_score``, the confusion counts of
``multilabel_confusion_matrix`` for NPV) and TorchMetrics 1.9 for every class; random data in random
uneven shards with empty ranks (``check_sharded``), and a small subset in real gloo processes.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
import torch
from shards import assert_close, check_sharded
from sklearn.metrics import accuracy_score, confusion_matrix, hamming_loss, jaccard_score, multilabel_confusion_matrix

import scopedmetrics as sm
import scopedmetrics.classification as smc
from scopedmetrics.classification import stat_scores as stat_scores_module

N, C, L = 90, 4, 3
AVERAGES = ["micro", "macro", "weighted", "none"]

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # sklearn's and TorchMetrics' notes on empty classes


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def binary(seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    r = rng(seed)
    y = r.integers(0, 2, N)
    prob = r.random(N).astype(np.float32)
    return torch.tensor(prob), torch.tensor(y), (prob > 0.5).astype(int), y


def multiclass(seed: int, k: int = C) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    r = rng(seed)
    y = r.integers(0, k, N)
    scores = r.normal(size=(N, k)).astype(np.float32) * 2
    return torch.tensor(scores), torch.tensor(y), scores.argmax(1), y


def multilabel(seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, np.ndarray]:
    r = rng(seed)
    y = r.integers(0, 2, (N, L))
    prob = r.random((N, L)).astype(np.float32)
    return torch.tensor(prob), torch.tensor(y), (prob > 0.5).astype(int), y


def divide(a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.where(b != 0, a / np.where(b != 0, b, 1), 0.0)


def npv_oracle(y: np.ndarray, p: np.ndarray, average: str, k: int = 0, multilabel: bool = False) -> Any:
    """TorchMetrics' negative predictive value from scikit-learn's per-class confusion counts."""
    labels = None if multilabel else list(range(k))
    cm = multilabel_confusion_matrix(y, p, labels=labels)  # per class [[tn, fp], [fn, tp]]
    tn, fp, fn, tp = cm[:, 0, 0], cm[:, 0, 1], cm[:, 1, 0], cm[:, 1, 1]
    if average == "micro":
        return divide(tn.sum(), tn.sum() + fn.sum())
    score = divide(tn, tn + fn)
    if average == "none":
        return score
    if average == "weighted":
        w = (tp + fn).astype(float)
    else:
        w = np.ones(len(score)) if multilabel else (tp + fp + fn > 0).astype(float)
    return np.sum(w * score) / w.sum() if w.sum() else 0.0


def recall_oracle(y: np.ndarray, p: np.ndarray, k: int, average: str) -> Any:
    cm = multilabel_confusion_matrix(y, p, labels=list(range(k)))
    fp, fn, tp = cm[:, 0, 1], cm[:, 1, 0], cm[:, 1, 1]
    if average == "micro":
        return divide(tp.sum(), tp.sum() + fn.sum())
    score = divide(tp, tp + fn)
    if average == "none":
        return score
    w = (tp + fn).astype(float) if average == "weighted" else (tp + fp + fn > 0).astype(float)
    return np.sum(w * score) / w.sum()


# -- against scikit-learn, sharded (simulate) -------------------------------------------------


def test_binary_against_sklearn() -> None:
    preds, target, p, y = binary(1)
    check_sharded(smc.BinaryHammingDistance(), [preds, target], hamming_loss(y, p), seed=2)
    check_sharded(smc.BinaryJaccardIndex(), [preds, target], jaccard_score(y, p), seed=3)
    (tn, fp), (fn, tp) = confusion_matrix(y, p)
    check_sharded(smc.BinaryNegativePredictiveValue(), [preds, target], tn / (tn + fn), seed=4)
    drop = rng(5).random(N) < 0.3
    ignored = target.clone()
    ignored[torch.tensor(drop)] = -1
    keep = ~drop
    check_sharded(smc.BinaryHammingDistance(ignore_index=-1), [preds, ignored], hamming_loss(y[keep], p[keep]),
                  seed=6, world_sizes=(1, 3))
    check_sharded(smc.BinaryJaccardIndex(ignore_index=-1), [preds, ignored], jaccard_score(y[keep], p[keep]),
                  seed=7, world_sizes=(1, 3))


@pytest.mark.parametrize("average", AVERAGES)
def test_multiclass_against_sklearn(average: str) -> None:
    preds, target, p, y = multiclass(10)
    avg = None if average == "none" else average
    labels = list(range(C)) if average == "none" else None
    check_sharded(smc.MulticlassJaccardIndex(C, average=average), [preds, target],
                  jaccard_score(y, p, average=avg, labels=labels, zero_division=0), seed=11, world_sizes=(1, 2, 4))
    check_sharded(smc.MulticlassNegativePredictiveValue(C, average=average), [preds, target],
                  npv_oracle(y, p, average, k=C), seed=12, world_sizes=(1, 2, 4))
    expected = hamming_loss(y, p) if average == "micro" else 1 - recall_oracle(y, p, C, average)
    check_sharded(smc.MulticlassHammingDistance(C, average=average), [preds, target], expected, seed=13,
                  world_sizes=(1, 2, 4))


def test_multiclass_exact_match_and_absent_classes() -> None:
    r = rng(14)
    target = torch.tensor(r.integers(0, 3, (N, 2)))  # class 3 of 4 never present
    preds = torch.where(torch.tensor(r.random((N, 2)) < 0.7), target, torch.tensor(r.integers(0, 3, (N, 2))))
    y, p = target.numpy(), preds.numpy()
    check_sharded(smc.MulticlassExactMatch(C), [preds, target], np.mean((y == p).all(1)), seed=15)
    check_sharded(smc.MulticlassJaccardIndex(C), [preds, target],
                  jaccard_score(y.ravel(), p.ravel(), average="macro"), seed=16)
    ignored = target.clone()
    ignored[:, 1][torch.tensor(r.random(N) < 0.5)] = -1
    match = ((y == p) | (ignored.numpy() == -1)).all(1)
    check_sharded(smc.MulticlassExactMatch(C, ignore_index=-1), [preds, ignored], match.mean(), seed=17)


@pytest.mark.parametrize("average", AVERAGES)
def test_multilabel_against_sklearn(average: str) -> None:
    preds, target, p, y = multilabel(20)
    avg = None if average == "none" else average
    check_sharded(smc.MultilabelJaccardIndex(L, average=average), [preds, target],
                  jaccard_score(y, p, average=avg, zero_division=0), seed=21)
    check_sharded(smc.MultilabelNegativePredictiveValue(L, average=average), [preds, target],
                  npv_oracle(y, p, average, multilabel=True), seed=22)
    per_label = np.array([hamming_loss(y[:, j], p[:, j]) for j in range(L)])
    if average == "micro":
        expected: Any = hamming_loss(y, p)
    elif average == "weighted":
        expected = np.sum(per_label * y.sum(0)) / y.sum()
    else:
        expected = per_label if average == "none" else per_label.mean()
    check_sharded(smc.MultilabelHammingDistance(L, average=average), [preds, target], expected, seed=23)
    if average == "micro":
        check_sharded(smc.MultilabelExactMatch(L), [preds, target], accuracy_score(y, p), seed=24)


def test_world_subset(world) -> None:
    """A few of the new metrics under simulate and under real gloo processes, ignored rows included."""
    preds, target, p, y = multiclass(30)
    target = target.clone()
    target[:9] = -1
    check_sharded(smc.MulticlassJaccardIndex(C, average="weighted", ignore_index=-1), [preds, target],
                  jaccard_score(y[9:], p[9:], average="weighted"), seed=31, world=world, world_sizes=(1, 3))
    mpreds, mtarget, mp, my = multilabel(32)
    check_sharded(smc.MultilabelExactMatch(L), [mpreds, mtarget], accuracy_score(my, mp), seed=33, world=world,
                  world_sizes=(1, 3))


# -- against TorchMetrics, every class ---------------------------------------------------------------


def _tm_cases(name: str) -> list[tuple[dict[str, Any], torch.Tensor, torch.Tensor]]:
    r = rng(40)
    if name.startswith("Binary"):
        logits = torch.tensor(r.normal(size=60).astype(np.float32) * 3)
        probs = torch.tensor(r.random(60).astype(np.float32))
        return [({}, logits, torch.tensor(r.integers(0, 2, 60))),
                ({"threshold": 0.3, "ignore_index": -1}, probs, torch.tensor(r.integers(-1, 2, 60))),
                ({"ignore_index": -1}, logits, torch.tensor(r.integers(-1, 2, 60)))]
    if name.startswith("Multiclass"):
        scores = torch.tensor(r.normal(size=(60, 5, 2)).astype(np.float32))
        target = torch.tensor(r.integers(0, 5, (60, 2)))
        options: list[dict[str, Any]] = [{"ignore_index": None}, {"ignore_index": 0}, {"ignore_index": -1}]
        if "ExactMatch" not in name:
            options = [{"average": a, **o} for a in AVERAGES for o in options]
        if name in ("MulticlassNegativePredictiveValue", "MulticlassHammingDistance"):
            options += [{"average": "macro", "top_k": 2}, {"average": "weighted", "top_k": 3}]
        ignored = target.clone()
        ignored[:5, 0] = -1
        out = []
        for o in options:
            t = ignored if o.get("ignore_index") == -1 else target
            out.append(({"num_classes": 5, **o}, scores, t))
            if o.get("top_k", 1) == 1:
                out.append(({"num_classes": 5, **o}, scores.argmax(1), t))
        return out
    preds = torch.tensor(r.normal(size=(60, 3, 2)).astype(np.float32))
    target = torch.tensor(r.integers(-1, 2, (60, 3, 2)))
    averages = [{}] if "ExactMatch" in name else [{"average": a} for a in AVERAGES]
    return [({"num_labels": 3, "ignore_index": -1, **a}, preds, target) for a in averages]


EXTRAS = [f"{task}{n}" for task in ("Binary", "Multiclass", "Multilabel")
          for n in ("NegativePredictiveValue", "HammingDistance", "JaccardIndex")]
EXTRAS += ["MulticlassExactMatch", "MultilabelExactMatch"]


@pytest.mark.parametrize("name", EXTRAS)
def test_agrees_with_torchmetrics(name: str) -> None:
    tm = pytest.importorskip("torchmetrics.classification")
    for kwargs, preds, target in _tm_cases(name):
        ours = getattr(smc, name)(**kwargs).update(preds[:25], target[:25]).update(preds[25:], target[25:])
        theirs = getattr(tm, name)(**kwargs)
        theirs.update(preds[:25], target[:25])
        theirs.update(preds[25:], target[25:])
        assert_close(ours.compute(), theirs.compute())


@pytest.mark.parametrize("name", EXTRAS)
def test_positional_order_is_torchmetrics(name: str) -> None:
    import inspect

    tm = pytest.importorskip("torchmetrics.classification")
    params = inspect.signature(getattr(smc, name)).parameters.values()
    ours = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    theirs = [p.name for p in inspect.signature(getattr(tm, name).__init__).parameters.values()
              if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
    assert ours == theirs


def test_jaccard_nan_where_torchmetrics_has_nan() -> None:
    """A weighted mean over no support is NaN in TorchMetrics 1.9, and here (loud, not a made-up 0)."""
    m = smc.MultilabelJaccardIndex(2, average="weighted").update(torch.tensor([[1, 0]]), torch.tensor([[0, 0]]))
    assert torch.isnan(m.compute())


def test_bad_configuration_names_metric_and_argument() -> None:
    for make, message in [
        (lambda: smc.MulticlassJaccardIndex(3, average="samples"), "MulticlassJaccardIndex: argument `average`"),
        (lambda: smc.BinaryJaccardIndex(zero_division=0.5), "BinaryJaccardIndex: argument `zero_division`"),
        (lambda: smc.MulticlassExactMatch(1), "MulticlassExactMatch: argument `num_classes` must be at least 2"),
        (lambda: smc.MultilabelExactMatch(3, multidim_average="samplewise"), "MultilabelExactMatch: argument"),
        (lambda: smc.MulticlassNegativePredictiveValue(None, average="micro"), "MulticlassNegativePredictiveValue"),
        (lambda: smc.MulticlassHammingDistance(3, top_k=4), "MulticlassHammingDistance: argument `top_k`"),
    ]:
        with pytest.raises((ValueError, TypeError)) as info:
            make()
        assert str(info.value).startswith(message), str(info.value)
    assert smc.MulticlassHammingDistance(None, average="micro").update(
        torch.tensor([0, 1, 2]), torch.tensor([0, 1, 1])).compute() == pytest.approx(1 / 3)


# -- dispatchers -----------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_exact_match_dispatcher(task: str) -> None:
    tm = pytest.importorskip("torchmetrics")
    count = {"num_classes": C} if task == "multiclass" else {"num_labels": L}
    preds, target, _, _ = multiclass(50) if task == "multiclass" else multilabel(50)
    ours = smc.ExactMatch(task, **count)
    assert type(ours) is getattr(smc, f"{task.capitalize()}ExactMatch")
    assert ours._config() == type(ours)(**count)._config()
    assert_close(ours.update(preds, target).compute(), tm.ExactMatch(task=task, **count)(preds, target))
    with pytest.raises(ValueError, match="has no metric class"):
        smc.ExactMatch("binary")


# -- one count for many scores (a collection's shared nested counts) ----------------------------------


FIVE = {"acc": "Accuracy", "p": "Precision", "r": "Recall", "f1": "F1Score", "spec": "Specificity"}


def _five() -> sm.Collection:
    return sm.Collection({k: getattr(smc, f"Multiclass{v}")(5) for k, v in FIVE.items()})


def test_a_collection_of_five_scores_counts_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = stat_scores_module.MulticlassCounts.update

    @functools.wraps(original)
    def counting(self, preds, target):
        calls.append(1)
        return original(self, preds, target)

    monkeypatch.setattr(stat_scores_module.MulticlassCounts, "update", counting)
    batches = [multiclass(60 + i, k=5)[:2] for i in range(3)]
    c = _five()
    for preds, target in batches:
        c = c.update(preds, target)
    assert len(calls) == 3  # once per batch, for all five members
    alone = {}
    for k, v in FIVE.items():
        m = getattr(smc, f"Multiclass{v}")(5)
        for preds, target in batches:
            m = m.update(preds, target)
        alone[k] = m.compute()
    assert_close(c.compute(), alone)
    assert_close(sm.simulate(lambda rank: c.compute(), 2)[0], alone)  # twice the counts: the same ratios

    # Unequal states loaded into the members: they stop sharing, and each goes on from its own state.
    sd = c.state_dict()
    sd["p.stats.counts"] = torch.zeros_like(sd["p.stats.counts"])
    restored = c.load_state_dict(sd)
    calls.clear()
    preds, target = multiclass(70, k=5)[:2]
    again = restored.update(preds, target)
    assert len(calls) == 2  # p on its own; the four others loaded one tensor back, so they still hold one
    assert again["p"].stats is not again["r"].stats and again["r"].stats is again["acc"].stats
    fresh_p = smc.MulticlassPrecision(5).update(preds, target).compute()
    assert_close(again.compute()["p"], fresh_p)
    assert_close(again.compute()["r"], c["r"].update(preds, target).compute())

    calls.clear()
    again.reset().update(preds, target)  # reset: equal (empty) counts share again
    assert len(calls) == 1


def test_bad_batch_in_a_collection_and_alone_is_named() -> None:
    c = _five()
    with pytest.raises(ValueError, match=r"^MulticlassCounts\.update: argument `target`"):
        c.update(torch.tensor([0, 1]), torch.tensor([0, 7]))
    with pytest.raises(ValueError, match=r"^MulticlassRecall\.update: argument `target`"):
        smc.MulticlassRecall(5).update(torch.tensor([0, 1]), torch.tensor([0, 7]))
    with pytest.raises(ValueError, match=r"^MulticlassJaccardIndex\.update: argument `target`"):
        smc.MulticlassJaccardIndex(5).update(torch.tensor([0, 1]), torch.tensor([0, 7]))


def test_jaccard_shares_the_stat_counts_layout_with_confusion_metrics() -> None:
    c = sm.Collection(j=smc.MultilabelJaccardIndex(L), cm=smc.MultilabelConfusionMatrix(L),
                      mcc=smc.MultilabelMatthewsCorrCoef(L))
    preds, target, p, y = multilabel(80)
    c = c.update(preds, target)
    assert c["j"].matrix is c["cm"].matrix and c["cm"].matrix is c["mcc"].matrix
    assert list(c["j"].state_dict()) == ["matrix.confmat"]
    assert_close(c.compute()["j"], jaccard_score(y, p, average="macro"))
