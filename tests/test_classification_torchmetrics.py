"""What TorchMetrics accepts, the classification catalogue accepts, with TorchMetrics' values on random data.

The arguments and input forms of the "exact or loud" issue: ``multidim_average="global"``
spelled out, ``zero_division`` on every stat score, ``normalization`` on binary
curves, ``num_classes=None`` with micro averages, float ``0.``/``1.`` targets,
and scores on ignored rows, which must not decide between probabilities and
logits where TorchMetrics drops those rows first.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch
from shards import assert_close

import scopedmetrics as sm
import scopedmetrics.classification as smc

tmc = pytest.importorskip("torchmetrics.classification")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # TorchMetrics' notes on memory and empty classes

C, L, N = 3, 3, 64
STAT_SCORES = ["StatScores", "Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity"]
TASKS = ["Binary", "Multiclass", "Multilabel"]
ALL = [n for n in smc.__all__ if n not in smc.dispatch.__all__]  # the task dispatchers: tests/test_dispatch.py


def make(name: str, **kwargs: Any) -> tuple[sm.Metric, Any]:
    """Ours and TorchMetrics' metric ``name``, built with the same keyword arguments."""
    base: dict[str, Any] = {}
    if name.startswith("Multiclass"):
        base["num_classes"] = C
    elif name.startswith("Multilabel"):
        base["num_labels"] = L
    if "FBeta" in name:
        base["beta"] = 2.0
    for floor in ("min_precision", "min_recall", "min_specificity", "min_sensitivity"):  # operating points
        if floor in inspect.signature(getattr(smc, name)).parameters:
            base[floor] = 0.5
    base.update(kwargs)
    return getattr(smc, name)(**base), getattr(tmc, name)(**base)


def data(name: str, seed: int, logits: bool = False, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    """A random batch for ``name``'s task: probabilities (or logits) and integer labels."""
    g = torch.Generator().manual_seed(seed)
    if name.startswith("Multiclass"):
        target = torch.cat([torch.arange(C), torch.randint(0, C, (n - C,), generator=g)])  # every class present
        scores = torch.randn(n, C, generator=g) * 2
        return (scores if logits else scores.softmax(1)), target
    shape = (n, L) if name.startswith("Multilabel") else (n,)
    target = torch.randint(0, 2, shape, generator=g)
    target[:2] = torch.tensor([0, 1]).view(2, *([1] * (len(shape) - 1)))  # both labels present
    scores = torch.randn(shape, generator=g) * 2
    return (scores if logits else scores.sigmoid()), target


def both(ours: sm.Metric, theirs: Any, preds: torch.Tensor, target: torch.Tensor, ours_target: Any = None) -> None:
    """Ours (fed ``ours_target`` if given) and TorchMetrics' values on one batch agree."""
    theirs.update(preds, target)
    with sm.use_reducer(sm.local()):
        value = ours.update(preds, target if ours_target is None else ours_target).compute()
    assert_close(value, theirs.compute())


def stat_score_names() -> list[str]:
    return [task + name for task in TASKS for name in STAT_SCORES]


# -- multidim_average -------------------------------------------------------------------


@pytest.mark.parametrize("name", stat_score_names())
def test_multidim_average_global_spelled_out(name: str) -> None:
    ours, theirs = make(name, multidim_average="global")
    both(ours, theirs, *data(name, 1, logits=True))
    with pytest.raises(ValueError, match=rf"{name}: argument `multidim_average` must be 'global'"):
        make(name, multidim_average="samplewise")


# -- zero_division ----------------------------------------------------------------------


def degenerate(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels with zero denominators: nothing predicted positive, one class or label never present."""
    if name.startswith("Multiclass"):
        return torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 1, 1])
    if name.startswith("Multilabel"):
        return torch.tensor([[0, 0, 1], [0, 1, 1]]), torch.tensor([[1, 0, 1], [0, 0, 1]])
    return torch.tensor([0, 0, 0]), torch.tensor([0, 1, 0])


ZERO_DIVISION_CASES = [
    (name, average)
    for name in stat_score_names()
    for average in ([None] if name.startswith("Binary") else ["micro", "macro", "weighted", "none"])
]


@pytest.mark.parametrize("zero_division", [0, 1])
@pytest.mark.parametrize(("name", "average"), ZERO_DIVISION_CASES)
def test_zero_division_is_taken_by_every_stat_score(name: str, average: str | None, zero_division: int) -> None:
    kwargs: dict[str, Any] = {"zero_division": zero_division}
    if average is not None:  # binary metrics have no average
        kwargs["average"] = average
    ours, theirs = make(name, **kwargs)
    both(ours, theirs, *degenerate(name))
    ours, theirs = make(name, **kwargs)
    both(ours, theirs, *data(name, 2))


def test_zero_division_one_and_one_point_zero_configure_alike() -> None:
    a = smc.BinaryPrecision(zero_division=1).update(*data("Binary", 3))
    b = smc.BinaryPrecision(zero_division=1.0).update(*data("Binary", 4))
    assert a.merge(b).zero_division == 1.0


# -- top_k > 1 with macro averages ------------------------------------------------------


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity"])
def test_top_k_macro_leaves_out_classes_as_torchmetrics(name: str) -> None:
    g = torch.Generator().manual_seed(5)
    scores, target = torch.randn(12, 5, generator=g), torch.randint(0, 3, (12,), generator=g)  # classes 3, 4 absent
    ours, theirs = make("Multiclass" + name, num_classes=5, top_k=2, average="macro")
    both(ours, theirs, scores, target)


# -- num_classes=None -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Accuracy", "Precision", "Recall", "F1Score", "FBetaScore"])
@pytest.mark.parametrize("form", ["scores", "labels", "ignore_index", "extra_dims"])
def test_num_classes_none_with_micro(name: str, form: str) -> None:
    kwargs: dict[str, Any] = {"num_classes": None, "average": "micro"}
    preds, target = data("Multiclass", 6, logits=True)
    if form == "labels":
        preds = preds.argmax(1)
    elif form == "ignore_index":
        kwargs["ignore_index"] = 1
    elif form == "extra_dims":
        preds, target = preds.reshape(16, 4, C).transpose(1, 2), target.reshape(16, 4)
    ours, theirs = make("Multiclass" + name, **kwargs)
    both(ours, theirs, preds, target)
    with_classes, _ = make("Multiclass" + name, **{**kwargs, "num_classes": C})
    with sm.use_reducer(sm.local()):
        assert_close(with_classes.update(preds, target).compute(), ours.update(preds, target).compute())


def test_num_classes_none_reduces_and_merges_like_any_state() -> None:
    preds, target = data("Multiclass", 7)
    m = smc.MulticlassAccuracy(None, average="micro")
    parts = [m.update(preds[i::3], target[i::3]) for i in range(3)]
    expected = m.update(preds, target)
    assert_close(parts[0].merge(parts[1]).merge(parts[2]).stats.counts, expected.stats.counts)
    values = sm.simulate(lambda rank: parts[rank].compute(), 3)
    assert all(torch.equal(v, values[0]) for v in values)
    assert_close(values[0], (preds.argmax(1) == target).float().mean())


@pytest.mark.parametrize(
    ("make_metric", "message"),
    [
        (lambda: smc.MulticlassAccuracy(None), "must be an integer >= 2 unless average='micro', got None"),
        (lambda: smc.MulticlassStatScores(None, average="micro"), "true negatives need the number of classes"),
        (lambda: smc.MulticlassSpecificity(None, average="micro"), "true negatives need the number of classes"),
        (lambda: smc.MulticlassRecall(None, 2, "micro"), "argument `top_k` must be 1 when num_classes is None"),
    ],
)
def test_num_classes_none_elsewhere_is_refused(make_metric: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_metric()


def test_num_classes_none_refuses_negative_labels() -> None:
    m = smc.MulticlassAccuracy(None, average="micro")
    with pytest.raises(ValueError, match="MulticlassAccuracy.update: argument `target` has negative values"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, -2]))


# -- float 0./1. targets ----------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_float_targets_are_labels(name: str) -> None:
    preds, target = data(name, 8)
    ours, theirs = make(name)
    both(ours, theirs, preds, target, ours_target=target.float())
    ours, _ = make(name)
    with pytest.raises(TypeError, match=rf"{name}.update: argument `target` must hold integer labels"):
        ours.update(preds, target.float() + 0.5)


# -- normalization on binary curves -----------------------------------------------------

BINARY_CURVES = ["BinaryROC", "BinaryPrecisionRecallCurve", "BinaryAveragePrecision", "BinaryAUROC"]


@pytest.mark.parametrize("thresholds", [None, 7])
@pytest.mark.parametrize("normalization", ["sigmoid", None])
@pytest.mark.parametrize("name", BINARY_CURVES)
def test_binary_curve_normalization(name: str, normalization: str | None, thresholds: int | None) -> None:
    preds, target = data(name, 9, logits=True)
    if normalization is None and thresholds is not None:
        preds = preds.sigmoid() ** 2  # unnormalized scores, binned between 0 and 1
    ours, theirs = make(name, normalization=normalization, thresholds=thresholds)
    both(ours, theirs, preds, target)


def test_binary_curve_normalization_softmax_is_refused() -> None:
    with pytest.raises(ValueError, match="BinaryROC: argument `normalization` must be 'sigmoid' or None"):
        smc.BinaryROC(normalization="softmax")


# -- ignored rows and the logits decision ------------------------------------------------


def with_ignored_logit(name: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Probabilities everywhere but one ignored entry (target -1), whose score is 5: outside [0, 1]."""
    preds, target = data(name, seed)
    preds, target = preds.clone(), target.clone()
    if name.startswith("Multilabel"):
        preds[0, 0], target[0, 0] = 5.0, -1
    elif name.startswith("Multiclass"):
        preds[0], target[0] = torch.tensor([5.0, 0.0, 0.0]), -1
    else:
        preds[0], target[0] = 5.0, -1
    return preds, target


# TorchMetrics' label ranking metrics keep an ignored label, scored below every other, in the sample's ranking;
# ours leave it out of the sample (docs/classification.md): their values differ by design wherever a label is ignored.
RANKING = ("MultilabelCoverageError", "MultilabelRankingAveragePrecision", "MultilabelRankingLoss")


@pytest.mark.parametrize("name", [n for n in ALL if n not in RANKING])
def test_an_ignored_score_decides_logits_only_where_torchmetrics_lets_it(name: str) -> None:
    """Confusion matrices, MCC, kappa, calibration and binary/multiclass curves drop ignored rows first."""
    # threshold 0.6: sigmoids of probabilities (all above 0.5) split too, so no count is degenerate
    kwargs = {"threshold": 0.6} if "threshold" in inspect.signature(getattr(smc, name)).parameters else {}
    ours, theirs = make(name, ignore_index=-1, **kwargs)
    both(ours, theirs, *with_ignored_logit(name, 10))


@pytest.mark.parametrize(
    "name", ["BinaryConfusionMatrix", "BinaryMatthewsCorrCoef", "BinaryCohenKappa", "BinaryCalibrationError"]
)
def test_binary_scores_of_ignored_rows_leave_the_probabilities_alone(name: str) -> None:
    preds, target = with_ignored_logit(name, 11)
    ours, _ = make(name, ignore_index=-1)
    kept = target != -1
    with sm.use_reducer(sm.local()):
        assert_close(ours.update(preds, target).compute(), ours.update(preds[kept], target[kept]).compute())


def test_multiclass_calibration_ignores_an_ignored_logit_row() -> None:
    preds, target = with_ignored_logit("Multiclass", 12)
    m = smc.MulticlassCalibrationError(C, ignore_index=-1)
    kept = target != -1
    with sm.use_reducer(sm.local()):
        assert_close(m.update(preds, target).compute(), m.update(preds[kept], target[kept]).compute())
