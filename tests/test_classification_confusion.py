"""Confusion matrices, MCC and Cohen's kappa against scikit-learn, calibration error against numpy."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded
from sklearn.metrics import (
    cohen_kappa_score,
    confusion_matrix,
    jaccard_score,
    matthews_corrcoef,
    multilabel_confusion_matrix,
)

import scopedmetrics as sm
import scopedmetrics.classification as sm_classification
from scopedmetrics.classification import (
    BinaryCalibrationError,
    BinaryCohenKappa,
    BinaryConfusionMatrix,
    BinaryMatthewsCorrCoef,
    MulticlassCalibrationError,
    MulticlassCohenKappa,
    MulticlassConfusionMatrix,
    MulticlassJaccardIndex,
    MulticlassMatthewsCorrCoef,
    MultilabelConfusionMatrix,
    MultilabelMatthewsCorrCoef,
)
from scopedmetrics.classification import calibration as calibration_module
from scopedmetrics.classification import confusion as confusion_module

N = 90
C = 4
L = 3


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def binary_probs(seed: int, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    r = rng(seed)
    return torch.tensor(r.random(n).astype(np.float32)), torch.tensor(r.integers(0, 2, n))


def multiclass_scores(seed: int, k: int = C, n: int = N, probs: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    r = rng(seed)
    scores = torch.tensor(r.normal(size=(n, k)).astype(np.float32) * 2)
    return (scores.softmax(1) if probs else scores), torch.tensor(r.integers(0, k, n))


def quiet(fn, *args, **kwargs):
    """Call a scikit-learn metric without its warnings about undefined values and single labels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def sk_kappa(y: np.ndarray, p: np.ndarray, weights: str | None, k: int = 2) -> float:
    """scikit-learn's kappa over all ``k`` classes: weights follow class distance, absent classes too."""
    return quiet(cohen_kappa_score, y, p, weights=weights, labels=list(range(k)))


# -- confusion matrices ------------------------------------------------------


@pytest.mark.parametrize("normalize", [None, "true", "pred", "all"])
def test_binary_confusion_matrix(normalize: str | None) -> None:
    preds, target = binary_probs(1)
    p = (preds.numpy() > 0.5).astype(int)
    expected = confusion_matrix(target.numpy(), p, labels=[0, 1], normalize=normalize)
    check_sharded(BinaryConfusionMatrix(normalize=normalize), [preds, target], expected, seed=2)


@pytest.mark.parametrize("normalize", [None, "true", "pred", "all"])
def test_multiclass_confusion_matrix(normalize: str | None) -> None:
    preds, target = multiclass_scores(3, k=5)
    target[target == 4] = 3  # class 4 never in target: its normalized row is 0, as scikit-learn
    p = preds.argmax(1).numpy()
    expected = confusion_matrix(target.numpy(), p, labels=range(5), normalize=normalize)
    check_sharded(MulticlassConfusionMatrix(num_classes=5, normalize=normalize), [preds, target], expected, seed=4)


def test_multiclass_confusion_matrix_labels_extra_dims_and_ignore_index() -> None:
    r = rng(5)
    preds = torch.tensor(r.integers(0, C, (40, 3)))
    target = torch.tensor(r.integers(0, C, (40, 3)))
    target[torch.tensor(r.random((40, 3)) < 0.25)] = 255
    y, p = target.numpy().ravel(), preds.numpy().ravel()
    keep = y != 255
    expected = confusion_matrix(y[keep], p[keep], labels=range(C))
    check_sharded(MulticlassConfusionMatrix(num_classes=C, ignore_index=255), [preds, target], expected, seed=6)


@pytest.mark.parametrize("normalize", [None, "true"])
def test_multilabel_confusion_matrix(normalize: str | None) -> None:
    r = rng(7)
    preds = torch.tensor(r.normal(size=(N, L)).astype(np.float32) * 3)  # logits
    target = torch.tensor(r.integers(0, 2, (N, L)))
    p = (preds > 0).long().numpy()
    expected = multilabel_confusion_matrix(target.numpy(), p).astype(float)
    if normalize == "true":
        expected = expected / expected.sum(-1, keepdims=True)
    check_sharded(MultilabelConfusionMatrix(num_labels=L, normalize=normalize), [preds, target], expected, seed=8)


# -- Matthews correlation and Cohen's kappa ----------------------------------------


def test_binary_and_multilabel_mcc() -> None:
    preds, target = binary_probs(9)
    p = (preds.numpy() > 0.5).astype(int)
    check_sharded(BinaryMatthewsCorrCoef(), [preds, target], matthews_corrcoef(target.numpy(), p), seed=10)
    r = rng(11)
    mpreds, mtarget = (
        torch.tensor(r.random((N, L)).astype(np.float32)),
        torch.tensor(r.integers(0, 2, (N, L))),
    )
    mp = (mpreds.numpy() > 0.5).astype(int)
    check_sharded(
        MultilabelMatthewsCorrCoef(num_labels=L),
        [mpreds, mtarget],
        matthews_corrcoef(mtarget.numpy().ravel(), mp.ravel()),
        seed=12,
    )


@pytest.mark.parametrize("kind", ["labels", "scores"])
def test_multiclass_mcc(kind: str) -> None:
    preds, target = multiclass_scores(13, probs=True)
    p = preds.argmax(1)
    inputs = [p if kind == "labels" else preds, target]
    check_sharded(
        MulticlassMatthewsCorrCoef(num_classes=C),
        inputs,
        matthews_corrcoef(target.numpy(), p.numpy()),
        seed=14,
    )


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa(weights: str | None) -> None:
    preds, target = binary_probs(15)
    p = (preds.numpy() > 0.5).astype(int)
    check_sharded(BinaryCohenKappa(weights=weights), [preds, target], sk_kappa(target.numpy(), p, weights), seed=16)
    r = rng(17)
    target = torch.tensor(r.integers(0, 5, N))
    preds = torch.clamp(target + torch.tensor(r.integers(-1, 2, N)), 0, 4)  # mostly near the target
    check_sharded(
        MulticlassCohenKappa(num_classes=5, weights=weights),
        [preds, target],
        sk_kappa(target.numpy(), preds.numpy(), weights, 5),
        seed=18,
        world_sizes=(1, 2, 4),
    )


def test_kappa_and_mcc_ignore_index() -> None:
    preds, target = multiclass_scores(19)
    target[:12] = -1
    p, y = preds.argmax(1).numpy()[12:], target.numpy()[12:]
    check_sharded(
        MulticlassCohenKappa(num_classes=C, ignore_index=-1),
        [preds, target],
        sk_kappa(y, p, None, C),
        seed=20,
        world_sizes=(1, 3),
    )
    check_sharded(
        MulticlassMatthewsCorrCoef(num_classes=C, ignore_index=-1),
        [preds, target],
        matthews_corrcoef(y, p),
        seed=21,
        world_sizes=(1, 3),
    )


@st.composite
def label_pairs(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, int]:
    """Tiny label sets: one sample, one class everywhere, a class never predicted."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(1, 10))
    true_classes = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    pred_classes = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    y = np.array(draw(st.lists(st.sampled_from(true_classes), min_size=n, max_size=n)))
    p = np.array(draw(st.lists(st.sampled_from(pred_classes), min_size=n, max_size=n)))
    return k, y, p, draw(st.integers(0, n))


def split_fold(metric: sm.Metric, preds: torch.Tensor, target: torch.Tensor, split: int) -> torch.Tensor:
    a = metric.update(preds[:split], target[:split])
    b = metric.reset().update(preds[split:], target[split:])
    with sm.use_reducer(sm.local()):
        return a.merge(b).compute()


@settings(max_examples=60, deadline=None)
@given(label_pairs(), st.sampled_from([None, "linear", "quadratic"]))
def test_edge_cases_against_sklearn(case, weights: str | None) -> None:
    """Undefined values follow scikit-learn: MCC 0, kappa NaN."""
    k, y, p, split = case
    preds, target = torch.tensor(p), torch.tensor(y)
    assert_close(
        split_fold(MulticlassMatthewsCorrCoef(num_classes=k), preds, target, split),
        quiet(matthews_corrcoef, y, p),
    )
    assert_close(
        split_fold(MulticlassCohenKappa(num_classes=k, weights=weights), preds, target, split),
        sk_kappa(y, p, weights, k),
    )
    assert_close(
        split_fold(MulticlassConfusionMatrix(num_classes=k, normalize="pred"), preds, target, split),
        quiet(confusion_matrix, y, p, labels=range(k), normalize="pred"),
    )
    yb, pb = y % 2, p % 2
    assert_close(
        split_fold(BinaryMatthewsCorrCoef(), torch.tensor(pb), torch.tensor(yb), split),
        quiet(matthews_corrcoef, yb, pb),
    )
    assert_close(
        split_fold(BinaryCohenKappa(weights=weights), torch.tensor(pb), torch.tensor(yb), split),
        sk_kappa(yb, pb, weights),
    )


def test_empty_values() -> None:
    assert_close(BinaryMatthewsCorrCoef().compute(), 0.0)
    assert torch.isnan(MulticlassCohenKappa(num_classes=3).compute())
    assert_close(MulticlassConfusionMatrix(num_classes=3, normalize="true").compute(), np.zeros((3, 3)))
    assert_close(BinaryCalibrationError().compute(), 0.0)


# -- calibration error -------------------------------------------------------


def calibration_oracle(conf: np.ndarray, correct: np.ndarray, n_bins: int, norm: str) -> float:
    """Equal-width bins of [0, 1], the last one closed; numpy only."""
    edges = np.linspace(0, 1, n_bins + 1, dtype=np.float32)
    idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    count = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore"):
        conf_mean = np.nan_to_num(np.bincount(idx, weights=conf, minlength=n_bins) / count)
        acc_mean = np.nan_to_num(np.bincount(idx, weights=correct.astype(float), minlength=n_bins) / count)
    gap = np.abs(acc_mean - conf_mean)
    prop = count / count.sum()
    if norm == "l1":
        return float(np.sum(gap * prop))
    if norm == "l2":
        return float(np.sqrt(np.sum(gap**2 * prop)))
    return float(np.max(gap[count > 0]))


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [1, 10])
def test_binary_calibration_error(norm: str, n_bins: int) -> None:
    r = rng(22)
    conf = r.beta(2, 2, N).astype(np.float32)
    target = (r.random(N) < conf**1.5).astype(int)  # miscalibrated on purpose
    expected = calibration_oracle(conf, target == 1, n_bins, norm)
    check_sharded(
        BinaryCalibrationError(n_bins=n_bins, norm=norm),
        [torch.tensor(conf), torch.tensor(target)],
        expected,
        seed=23,
    )


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_multiclass_calibration_error(norm: str) -> None:
    preds, target = multiclass_scores(24)  # logits: softmax applied
    probs = preds.softmax(1).numpy()
    expected = calibration_oracle(probs.max(1), probs.argmax(1) == target.numpy(), 15, norm)
    check_sharded(MulticlassCalibrationError(num_classes=C, norm=norm), [preds, target], expected, seed=25)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_calibration_of_half_precision_scores_is_that_of_the_same_values_in_float32(dtype: torch.dtype) -> None:
    # the bins were summed in the scores' dtype: float16 overflowed to inf, bfloat16 drifted 12x, without an error
    g = torch.Generator().manual_seed(27)
    p = (torch.rand(200_000, generator=g) * 0.5 + 0.5).to(dtype)
    t = (torch.rand(200_000, generator=g) < p.float()).long()
    want = BinaryCalibrationError(n_bins=2).update(p.float(), t).compute()
    assert_close(BinaryCalibrationError(n_bins=2).update(p, t).compute(), want)
    logits, labels = (torch.randn(5_000, 3, generator=g) * 4).to(dtype), torch.randint(0, 3, (5_000,), generator=g)
    want = MulticlassCalibrationError(num_classes=3).update(logits.float(), labels).compute()
    assert_close(MulticlassCalibrationError(num_classes=3).update(logits, labels).compute(), want)


def test_calibration_of_millions_of_samples_does_not_drift_with_the_split() -> None:
    # float32 bin sums stopped taking each confidence exactly from about 10^6 samples: a perfectly calibrated
    # 2,000,000 gave 0.0053 in one process and 0.0015 over four ranks (TorchMetrics 0.0053); float64: 1.2e-8
    n = 2_000_000
    preds, target = torch.full((n,), 0.7), (torch.arange(n) % 10 < 7).long()
    want = abs(0.7 - float(torch.tensor(0.7)))  # the float32 confidence against the 70 % positive rate

    def run(lo: int, hi: int) -> torch.Tensor:
        m = BinaryCalibrationError()
        for i in range(lo, hi, 50_000):
            m = m.update(preds[i : min(i + 50_000, hi)], target[i : min(i + 50_000, hi)])
        return m.compute()

    assert run(0, n).item() == pytest.approx(want, abs=1e-12)
    for got in sm.simulate(lambda r: run(r * n // 4, (r + 1) * n // 4), 4):
        assert got.item() == pytest.approx(want, abs=1e-12)


def test_calibration_logits_ignore_index_and_the_closed_last_bin() -> None:
    r = rng(26)
    logits = torch.tensor((r.normal(size=N) * 3).astype(np.float32))
    logits[0] = 5.0  # every batch holding it is read as logits
    target = torch.tensor(r.integers(0, 2, N))
    target[torch.tensor(r.random(N) < 0.2)] = -1
    keep = target.numpy() != -1
    conf = logits.sigmoid().numpy()
    for sl in (slice(0, N), slice(0, 1)):
        m = BinaryCalibrationError(n_bins=5, ignore_index=-1).update(logits[sl], target[sl])
        k = keep[sl]
        assert_close(m.compute(), calibration_oracle(conf[sl][k], target.numpy()[sl][k] == 1, 5, "l1"))
    ones = BinaryCalibrationError(n_bins=4).update(torch.tensor([1.0, 0.0]), torch.tensor([1, 0]))
    assert ones.bin_count.tolist() == [1, 0, 0, 1]
    assert_close(ones.compute(), 0.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 100])
def test_calibration_bins_every_edge_and_its_neighbours_as_the_closed_equal_width_bins_do(
    n_bins: int, dtype: torch.dtype
) -> None:
    # each confidence is binned by counting inner edges at or below it; at an edge and one step either side
    # of it, in the confidences' dtype, that is the searchsorted rule of the oracle (the last bin closed)
    edges = torch.linspace(0, 1, n_bins + 1, dtype=dtype)
    conf = torch.cat([edges, torch.nextafter(edges, edges + 1), torch.nextafter(edges, edges - 1)]).clamp(0, 1)
    correct = torch.arange(conf.shape[0]) % 2 == 0
    m = BinaryCalibrationError(n_bins=n_bins)
    got = calibration_module._binned(m, conf, correct, None)
    idx = np.clip(np.searchsorted(edges.numpy(), conf.numpy(), side="right") - 1, 0, n_bins - 1)
    assert got.bin_count.tolist() == np.bincount(idx, minlength=n_bins).tolist()
    assert got.bin_correct.tolist() == np.bincount(idx[correct.numpy()], minlength=n_bins).tolist()
    want = np.bincount(idx, weights=conf.numpy().astype(np.float64), minlength=n_bins)
    assert_close(got.bin_confidence.double(), torch.tensor(want), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("BinaryConfusionMatrix", {"normalize": "true", "ignore_index": -1}),
        ("BinaryMatthewsCorrCoef", {"threshold": 0.3}),
        ("BinaryCohenKappa", {"weights": "linear"}),
        ("BinaryCalibrationError", {"n_bins": 7, "norm": "l2", "ignore_index": -1}),
        ("MulticlassConfusionMatrix", {"num_classes": 4, "normalize": "pred", "ignore_index": 0}),
        ("MulticlassMatthewsCorrCoef", {"num_classes": 4}),
        ("MulticlassCohenKappa", {"num_classes": 4, "weights": "quadratic"}),
        ("MulticlassCalibrationError", {"num_classes": 4, "norm": "max"}),
        ("MultilabelConfusionMatrix", {"num_labels": 4, "normalize": "all", "ignore_index": -1}),
        ("MultilabelMatthewsCorrCoef", {"num_labels": 4}),
    ],
)
def test_agrees_with_torchmetrics(name: str, kwargs: dict) -> None:
    """Same class name, same arguments, same value, on logits with extra dims."""
    tm = pytest.importorskip("torchmetrics.classification")
    r = rng(40)
    logits = torch.tensor(r.normal(size=(50, 4, 3)).astype(np.float32) * 2)
    if name.startswith("Binary"):
        preds, target = logits[:, 0], torch.tensor(r.integers(-1, 2, (50, 3)))
        if "ignore_index" not in kwargs:
            target = target.abs()
    elif name.startswith("Multiclass"):
        preds, target = logits, torch.tensor(r.integers(0, 4, (50, 3)))
    else:
        preds, target = logits, torch.tensor(r.integers(-1, 2, (50, 4, 3)))
        if "ignore_index" not in kwargs:
            target = target.abs()
    ours = getattr(sm_classification, name)(**kwargs).update(preds, target).compute()
    assert_close(ours, getattr(tm, name)(**kwargs)(preds, target))


# -- simulate and gloo ---------------------------------------------------------


def test_world_subset(world) -> None:
    """A float-state binary metric and a multiclass matrix under simulate and real gloo processes."""
    r = rng(27)
    conf = r.random(N).astype(np.float32)
    target = r.integers(0, 2, N)
    check_sharded(
        BinaryCalibrationError(norm="l2"),
        [torch.tensor(conf), torch.tensor(target)],
        calibration_oracle(conf, target == 1, 15, "l2"),
        seed=28,
        world=world,
        world_sizes=(1, 3),
    )
    preds, mtarget = multiclass_scores(29)
    check_sharded(
        MulticlassConfusionMatrix(num_classes=C, normalize="true"),
        [preds, mtarget],
        confusion_matrix(mtarget.numpy(), preds.argmax(1).numpy(), normalize="true"),
        seed=30,
        world=world,
        world_sizes=(1, 3),
    )


# -- collections -----------------------------------------------------------------


def test_collection_shares_the_confusion_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = confusion_module.MulticlassConfusion.update

    @functools.wraps(original)
    def counting(self, preds, target):
        calls.append(type(self).__name__)
        return original(self, preds, target)

    monkeypatch.setattr(confusion_module.MulticlassConfusion, "update", counting)
    c = sm.Collection(
        cm=MulticlassConfusionMatrix(num_classes=C, normalize="all"),
        mcc=MulticlassMatthewsCorrCoef(num_classes=C),
        kappa=MulticlassCohenKappa(num_classes=C, weights="quadratic"),
        jaccard=MulticlassJaccardIndex(num_classes=C, average="weighted"),
    )
    preds, target = multiclass_scores(31)
    c = c.update(preds, target)
    # Every member holds its matrix as a nested MulticlassConfusion of one configuration, and delegates its
    # update to it (sm.delegate): the collection counts the batch once for all four.
    assert calls == ["MulticlassConfusion"]
    assert c["cm"].matrix is c["mcc"].matrix and c["mcc"].matrix is c["kappa"].matrix
    assert c["kappa"].matrix is c["jaccard"].matrix
    p, y = preds.argmax(1).numpy(), target.numpy()
    values = c.compute()
    assert_close(values["mcc"], matthews_corrcoef(y, p))
    assert_close(values["kappa"], sk_kappa(y, p, "quadratic", C))
    assert_close(values["jaccard"], jaccard_score(y, p, average="weighted"))
    b = sm.Collection(cm=BinaryConfusionMatrix(), mcc=BinaryMatthewsCorrCoef(), other=BinaryCohenKappa(threshold=0.3))
    b = b.update(*binary_probs(32))
    assert torch.equal(b["cm"].confmat, b["mcc"].confmat) and not torch.equal(b["other"].confmat, b["cm"].confmat)
    twins = sm.Collection(a=BinaryMatthewsCorrCoef(), b=BinaryMatthewsCorrCoef()).update(*binary_probs(32))
    assert twins["a"].confmat is twins["b"].confmat  # one type, one configuration: one update


def test_calibration_norms_in_one_collection() -> None:
    preds, target = multiclass_scores(33, probs=True)
    c = sm.Collection(
        ece=MulticlassCalibrationError(num_classes=C),
        mce=MulticlassCalibrationError(num_classes=C, norm="max"),
    )
    values = c.update(preds, target).compute()
    probs = preds.numpy()
    correct = probs.argmax(1) == target.numpy()
    assert_close(
        values,
        {
            "ece": calibration_oracle(probs.max(1), correct, 15, "l1"),
            "mce": calibration_oracle(probs.max(1), correct, 15, "max"),
        },
    )


# -- bad input -----------------------------------------------------------------


BAD_UPDATES = [
    (
        BinaryConfusionMatrix(),
        torch.tensor([0.2, 0.8]),
        torch.tensor([0, 3]),
        ValueError,
        "`target` has values outside [0, 1]: [3]",
    ),
    (
        BinaryMatthewsCorrCoef(),
        torch.tensor([0.2]),
        torch.tensor([0, 1]),
        ValueError,
        "`preds` has shape (1,)",
    ),
    (
        MulticlassConfusionMatrix(num_classes=3),
        torch.tensor([0, 5]),
        torch.tensor([0, 1]),
        ValueError,
        "`preds` has values outside [0, 2]: [5]",
    ),
    (
        MulticlassCohenKappa(num_classes=3),
        torch.tensor([0, 1]),
        torch.tensor([0.0, 1.5]),  # whole-number float targets are labels, as in TorchMetrics
        TypeError,
        "`target` must hold integer labels",
    ),
    (
        MultilabelConfusionMatrix(num_labels=2),
        torch.rand(2, 3),
        torch.ones(2, 3, dtype=torch.long),
        ValueError,
        "`preds` must have shape (N, 2, ...)",
    ),
    (
        BinaryCalibrationError(),
        torch.tensor([0, 1]),
        torch.tensor([0, 1]),
        TypeError,
        "`preds` must hold float probabilities or logits",
    ),
    (
        MulticlassCalibrationError(num_classes=2),
        torch.tensor([[0.0, float("inf")]]),
        torch.tensor([0]),
        ValueError,
        "`preds` contains non-finite values",
    ),
    (
        MulticlassCalibrationError(num_classes=2),
        torch.tensor([1, 0]),
        torch.tensor([0, 1]),
        TypeError,
        "`preds` must hold float probabilities or logits",
    ),
]


def good_batch(metric: sm.Metric) -> tuple[torch.Tensor, torch.Tensor]:
    name = type(metric).__name__
    if name.startswith("Binary"):
        return torch.tensor([0.9, 0.1]), torch.tensor([1, 0])
    if name.startswith("Multilabel"):
        return torch.full((2, metric.num_labels), 0.9), torch.ones(2, metric.num_labels, dtype=torch.long)
    return torch.rand(2, metric.num_classes), torch.tensor([1, 0])


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
    (lambda: BinaryConfusionMatrix(normalize="rows"), "BinaryConfusionMatrix: argument `normalize`"),
    (
        lambda: MulticlassCohenKappa(num_classes=3, weights="cubic"),
        "MulticlassCohenKappa: argument `weights`",
    ),
    (lambda: MulticlassMatthewsCorrCoef(num_classes=0), "MulticlassMatthewsCorrCoef: argument `num_classes`"),
    (
        lambda: MultilabelMatthewsCorrCoef(num_labels=2, threshold=7),
        "MultilabelMatthewsCorrCoef: argument `threshold`",
    ),
    (
        lambda: BinaryCalibrationError(n_bins=0),
        "BinaryCalibrationError: argument `n_bins` must be at least 1",
    ),
    (
        lambda: MulticlassCalibrationError(num_classes=3, norm="l3"),
        "MulticlassCalibrationError: argument `norm`",
    ),
]


@pytest.mark.parametrize("make, message", BAD_CONFIGS)
def test_bad_configuration_names_metric_and_argument(make, message) -> None:
    with pytest.raises(ValueError) as info:
        make()
    assert str(info.value).startswith(message), str(info.value)


def test_states_have_fixed_shapes_and_dtypes() -> None:
    shapes = {
        "BinaryConfusionMatrix": {"matrix.confmat": (torch.int64, (2, 2))},
        "MulticlassCohenKappa": {"matrix.confmat": (torch.int64, (5, 5))},
        "MultilabelMatthewsCorrCoef": {"matrix.confmat": (torch.int64, (3, 2, 2))},
        "MulticlassCalibrationError": {
            "bin_count": (torch.int64, (7,)),
            "bin_confidence": (torch.float64, (7,)),
            "bin_correct": (torch.int64, (7,)),
        },
    }
    metrics = [
        BinaryConfusionMatrix(),
        MulticlassCohenKappa(num_classes=5),
        MultilabelMatthewsCorrCoef(num_labels=3),
        MulticlassCalibrationError(num_classes=3, n_bins=7),
    ]
    for m in metrics:
        got = {k: (v.dtype, tuple(v.shape)) for k, v in m.state_dict().items()}
        assert got == shapes[type(m).__name__]
