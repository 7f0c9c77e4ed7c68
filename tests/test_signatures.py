"""Migration is a rename: every catalogue class takes its TorchMetrics namesake's arguments, in its positional order.

For every public class of ``scopedmetrics.classification``, ``scopedmetrics.regression``
and the aggregation metrics, the TorchMetrics class of the same name (``SumMetric``
for ``Sum``, ...) is found and the two ``__init__`` signatures compared: our
positional parameters must begin with TorchMetrics' positional parameters, in
order (TorchMetrics' ``**kwargs`` aside), and every argument TorchMetrics names
must be one we take. A positional call then binds the same names in both
libraries, or fails loudly here when it passes more than we take.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import scopedmetrics as sm
from scopedmetrics import aggregation, classification, regression

tm = pytest.importorskip("torchmetrics")
import torchmetrics.aggregation  # noqa: E402
import torchmetrics.classification  # noqa: E402
import torchmetrics.regression  # noqa: E402

AGGREGATION = {"Sum": "SumMetric", "Mean": "MeanMetric", "Max": "MaxMetric", "Min": "MinMetric", "Cat": "CatMetric"}

# TorchMetrics arguments we do not take, with the reason: (class name, argument) -> why. A positional one
# ends our positional list there, so that a positional call passing it fails instead of shifting the rest.
UNSUPPORTED: dict[tuple[str, str], str] = {}

# Arguments TorchMetrics takes through ``**kwargs`` (popped there, so absent from its signature).
STAT_SCORES = ("StatScores", "Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity")
KWARGS: dict[str, tuple[str, ...]] = {
    **{f"{task}{name}": ("zero_division",) for task in ("Binary", "Multiclass", "Multilabel") for name in STAT_SCORES},
    "BinaryAUROC": ("normalization",),  # passed on to BinaryPrecisionRecallCurve
}


def pairs() -> list[tuple[str, type, type]]:
    out = []
    for ours, theirs in ((classification, torchmetrics.classification), (regression, torchmetrics.regression)):
        for name in ours.__all__:
            if name in getattr(getattr(ours, "dispatch", None), "__all__", ()):
                continue  # task dispatchers return a task class: their signatures are tests/test_dispatch.py's
            assert hasattr(theirs, name), f"{ours.__name__}.{name} has no TorchMetrics namesake"
            out.append((name, getattr(ours, name), getattr(theirs, name)))
    for name, theirs_name in AGGREGATION.items():
        out.append((name, getattr(aggregation, name), getattr(torchmetrics.aggregation, theirs_name)))
    return out


PAIRS = pairs()
IDS = [name for name, _, _ in PAIRS]


def parameters(cls: type) -> list[inspect.Parameter]:
    """The named parameters of ``cls.__init__`` (``self``, ``*args`` and ``**kwargs`` left out)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def positional(cls: type) -> list[str]:
    return [p.name for p in parameters(cls) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def expected_positional(name: str, theirs: type) -> list[str]:
    """TorchMetrics' positional names, up to the first one we do not support."""
    out = []
    for n in positional(theirs):
        if (name, n) in UNSUPPORTED:
            break
        out.append(n)
    return out


def test_every_public_class_is_compared() -> None:
    names = set(IDS)
    dispatchers = set(classification.dispatch.__all__)
    assert (set(classification.__all__) - dispatchers) | set(regression.__all__) | set(AGGREGATION) == names
    assert len(PAIRS) >= 58  # the catalogue as of this test: 43 classification, 10 regression, 5 aggregation
    for name in AGGREGATION:
        assert getattr(sm, name) is getattr(aggregation, name)


@pytest.mark.parametrize(("name", "ours", "theirs"), PAIRS, ids=IDS)
def test_positional_parameters_follow_torchmetrics(name: str, ours: type, theirs: type) -> None:
    want, got = expected_positional(name, theirs), positional(ours)
    assert got[: len(want)] == want, f"{name}: ours {got}, TorchMetrics {positional(theirs)}"


@pytest.mark.parametrize(("name", "ours", "theirs"), PAIRS, ids=IDS)
def test_every_torchmetrics_argument_is_taken(name: str, ours: type, theirs: type) -> None:
    mine = {p.name for p in parameters(ours)}
    theirs_names = [p.name for p in parameters(theirs)] + list(KWARGS.get(name, ()))
    missing = [n for n in theirs_names if n not in mine and (name, n) not in UNSUPPORTED]
    assert not missing, f"{name} does not take TorchMetrics' {missing}"


def test_unsupported_arguments_are_few_and_explained() -> None:
    assert len(UNSUPPORTED) <= 3
    assert all(reason.strip() for reason in UNSUPPORTED.values())


# -- a positional call binds the same names in both libraries ---------------------------

# A value per argument name, away from the defaults, valid for every class taking it (overrides below).
SAMPLE: dict[str, Any] = {
    "power": 1.5,
    "p": 3,
    "variant": "c",
    "t_test": True,
    "alternative": "less",
    "keep_sequence_dim": 1,
    "threshold": 0.3,
    "multidim_average": "global",
    "ignore_index": -1,
    "validate_args": False,
    "zero_division": 1,
    "beta": 2.0,
    "num_classes": 3,
    "num_labels": 3,
    "top_k": 2,
    "average": "micro",
    "normalize": "true",
    "weights": "linear",
    "n_bins": 7,
    "norm": "l2",
    "max_fpr": 0.5,
    "thresholds": 5,
    "normalization": None,
    "num_outputs": 2,
    "squared": False,
    "multioutput": "raw_values",
    "adjusted": 1,
    "reduction": "none",
    "log_prob": True,
    "nan_strategy": "ignore",
    "min_precision": 0.25,
    "min_recall": 0.25,
    "min_specificity": 0.25,
    "min_sensitivity": 0.25,
    "multiclass_mode": "one-vs-all",
}
OVERRIDES: dict[tuple[str, str], Any] = {
    ("NormalizedRootMeanSquaredError", "normalization"): "std",
    ("MulticlassAUROC", "average"): "weighted",
    ("MulticlassAveragePrecision", "average"): "weighted",
    ("MulticlassROC", "average"): "macro",
    ("MulticlassPrecisionRecallCurve", "average"): "macro",
}


@pytest.mark.filterwarnings("ignore:Metric `SpearmanCorrcoef` will save all targets")
@pytest.mark.parametrize(("name", "ours", "theirs"), PAIRS, ids=IDS)
def test_a_positional_call_sets_the_same_arguments(name: str, ours: type, theirs: type) -> None:
    names = expected_positional(name, theirs)
    args = [OVERRIDES.get((name, n), SAMPLE[n]) for n in names]
    theirs(*args)  # a valid call in TorchMetrics
    metric = ours(*args)
    for n, value in zip(names, args):
        assert getattr(metric, n) == value, f"{name}({', '.join(map(repr, args))}).{n} is {getattr(metric, n)!r}"


def test_the_issue_examples_give_torchmetrics_values() -> None:
    import torch

    preds, target = torch.tensor([0, 1, 1, 1, 0, 1]), torch.tensor([0, 1, 0, 1, 1, 1])
    ours = classification.BinaryFBetaScore(0.5).update(preds, target).compute()
    theirs = torchmetrics.classification.BinaryFBetaScore(0.5)(preds, target)
    assert torch.allclose(ours, theirs)
    preds, target = torch.tensor([0, 1, 2, 3, 1, 1]), torch.tensor([0, 1, 2, 2, 3, 1])
    ours = classification.MulticlassAccuracy(4, 1, None).update(preds, target).compute()
    theirs = torchmetrics.classification.MulticlassAccuracy(4, 1, None)(preds, target)
    assert ours.shape == (4,) and torch.allclose(ours, theirs)


def test_too_many_positional_arguments_fail_loudly() -> None:
    with pytest.raises(TypeError, match="takes 4 positional arguments but 5 were given"):
        classification.BinaryAccuracy(0.5, "global", None, True, 0)
    with pytest.raises(TypeError, match="multiple values for argument 'threshold'"):
        classification.BinaryAccuracy(0.5, threshold=0.4)
    with pytest.raises(TypeError, match="beta"):
        classification.BinaryFBetaScore()  # type: ignore[call-arg]  # beta is required, as in TorchMetrics
