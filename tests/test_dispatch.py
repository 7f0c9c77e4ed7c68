"""The task dispatchers (``Accuracy(task=...)`` and siblings): the task class's metric, TorchMetrics' values."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch
from shards import assert_close, check_sharded

import scopedmetrics as sm
import scopedmetrics.classification as smc
from scopedmetrics.classification import dispatch

torchmetrics = pytest.importorskip("torchmetrics")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

C, L, N = 4, 3, 80
STAT = ("StatScores", "Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity")
EXTRA_STAT = ("NegativePredictiveValue", "HammingDistance")  # dispatchers that average "micro" too
NAMES = (*STAT, *EXTRA_STAT, "JaccardIndex", "ConfusionMatrix", "MatthewsCorrCoef", "CohenKappa", "CalibrationError",
         "AUROC", "AveragePrecision", "ROC", "PrecisionRecallCurve")
NO_MULTILABEL = {"CohenKappa", "CalibrationError"}
CASES = [(n, t) for n in NAMES for t in dispatch.TASKS if not (t == "multilabel" and n in NO_MULTILABEL)]

# options beyond the defaults, by dispatcher: each is passed to ours and TorchMetrics' dispatcher alike
OPTIONS: dict[str, list[dict[str, Any]]] = {
    **{n: [{"average": "macro"}, {"average": "none", "ignore_index": 0}, {"threshold": 0.3, "average": "weighted"}]
       for n in (*STAT, *EXTRA_STAT)},
    "NegativePredictiveValue": [{"average": "macro", "top_k": 2}, {"average": "none", "ignore_index": 0}],
    "HammingDistance": [{"average": "weighted", "top_k": 2}, {"average": "none", "ignore_index": 0}],
    "JaccardIndex": [{"average": "micro"}, {"average": "none", "ignore_index": 0}, {"threshold": 0.3}],
    "Accuracy": [{"average": "macro", "top_k": 2}, {"zero_division": 1.0, "average": "none"}],
    "ConfusionMatrix": [{"normalize": "true"}, {"ignore_index": 1, "normalize": "all"}],
    "MatthewsCorrCoef": [{"threshold": 0.7}],
    "CohenKappa": [{"weights": "quadratic"}, {"weights": "linear", "ignore_index": 1}],
    "CalibrationError": [{"n_bins": 5, "norm": "max"}, {"norm": "l2"}],
    "AUROC": [{"thresholds": 7}, {"average": "weighted"}, {"max_fpr": 0.5}],
    "AveragePrecision": [{"thresholds": [0.2, 0.5, 0.8]}, {"average": "none"}],
    "ROC": [{"thresholds": 5}],
    "PrecisionRecallCurve": [{"thresholds": 5}, {"ignore_index": 0}],
}
OPTIONS["FBetaScore"] = [{"beta": 2.0, **o} for o in [{}, *OPTIONS["FBetaScore"]]]


def counts(task: str) -> dict[str, int]:
    return {"multiclass": {"num_classes": C}, "multilabel": {"num_labels": L}}.get(task, {})


def data(task: str, seed: int, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    if task == "multiclass":
        target = torch.cat([torch.arange(C), torch.randint(0, C, (n - C,), generator=g)])
        return torch.randn(n, C, generator=g).softmax(1), target
    shape = (n, L) if task == "multilabel" else (n,)
    target = torch.randint(0, 2, shape, generator=g)
    target[:2] = torch.tensor([0, 1]).view(2, *([1] * (len(shape) - 1)))
    return torch.rand(shape, generator=g), target


def task_class(name: str, task: str) -> type[sm.Metric]:
    return getattr(smc, f"{task.capitalize()}{name}")  # type: ignore[no-any-return]


def dispatcher_defaults(name: str, task: str) -> dict[str, Any]:
    """What TorchMetrics' dispatcher passes beyond the task class's own defaults."""
    if name in (*STAT, *EXTRA_STAT) and task != "binary":
        return {"average": "micro"}
    return {}


def options(name: str, task: str) -> list[dict[str, Any]]:
    out = [{"beta": 1.0}] if name == "FBetaScore" else [{}]
    for o in OPTIONS.get(name, []):
        o = dict(o)
        if task == "binary":
            o.pop("average", None)
            o.pop("top_k", None)
        if task != "binary":
            o.pop("max_fpr", None)
        if task == "multilabel":
            o.pop("top_k", None)
        if name == "PrecisionRecallCurve" and task == "multiclass" and "ignore_index" in o:
            continue  # a class with no positive left: TorchMetrics' recall is NaN, ours 1 (the class's own choice)
        if o not in out:
            out.append(o)
    return out


def value(m: sm.Metric, preds: torch.Tensor, target: torch.Tensor) -> Any:
    with sm.use_reducer(sm.local()):
        return m.update(preds, target).compute()


@pytest.mark.parametrize(("name", "task"), CASES)
def test_dispatcher_gives_the_task_class_and_torchmetrics_values(name: str, task: str) -> None:
    preds, target = data(task, hash((name, task)) % 1000)
    for opts in options(name, task):
        kwargs = {**counts(task), **opts}
        ours = getattr(smc, name)(task=task, **kwargs)
        cls = task_class(name, task)
        assert type(ours) is cls
        direct_args = {k: v for k, v in {**dispatcher_defaults(name, task), **kwargs}.items()
                       if k in inspect.signature(cls).parameters}
        direct = cls(**direct_args)
        assert ours._config() == direct._config(), (name, task, opts)
        theirs = getattr(torchmetrics, name)(task=task, **kwargs)
        theirs.update(preds, target)
        got = value(ours, preds, target)
        assert_close(got, value(direct, preds, target))
        assert_close(got, theirs.compute())


@pytest.mark.parametrize("name", NAMES)
def test_positional_order_is_torchmetrics(name: str) -> None:
    ours = [p.name for p in inspect.signature(getattr(smc, name)).parameters.values()]
    theirs = [p.name for p in inspect.signature(getattr(torchmetrics, name).__new__).parameters.values()][1:]
    assert ours == theirs


def test_positional_call_means_the_same() -> None:
    m = smc.FBetaScore("multiclass", 0.5, 0.5, 3, None, "macro")
    assert type(m) is smc.MulticlassFBetaScore and m.beta == 0.5 and m.num_classes == 3 and m.average == "macro"
    m = smc.Accuracy("multilabel", 0.3, None, 2)
    assert type(m) is smc.MultilabelAccuracy and m.threshold == 0.3 and m.num_labels == 2 and m.average == "micro"


@pytest.mark.parametrize("name", NAMES)
def test_unknown_task_lists_the_valid_ones(name: str) -> None:
    valid = ("binary", "multiclass") if name in NO_MULTILABEL else dispatch.TASKS
    with pytest.raises(ValueError, match=rf"{name}: argument `task` must be one of {re_tuple(valid)}, got 'multi'"):
        getattr(smc, name)(task="multi", num_classes=3)
    with pytest.raises(TypeError, match=rf"{name}: argument `task` must be a string"):
        getattr(smc, name)(task=None)


def re_tuple(t: tuple[str, ...]) -> str:
    return "\\(" + ", ".join(f"'{x}'" for x in t) + "\\)"


@pytest.mark.parametrize("name", sorted(NO_MULTILABEL))
def test_a_task_without_a_class_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="has no metric class"):
        getattr(smc, name)(task="multilabel", num_labels=3)
    with pytest.raises(ValueError):  # TorchMetrics refuses it as well
        getattr(torchmetrics, name)(task="multilabel", num_labels=3)


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_count_is_required(task: str) -> None:
    arg = "num_classes" if task == "multiclass" else "num_labels"
    with pytest.raises(ValueError, match=rf"Accuracy: argument `{arg}` must be an int when `task` is '{task}'"):
        smc.Accuracy(task=task)


def test_extra_keywords_reach_the_task_class() -> None:
    assert smc.Accuracy("binary", zero_division=1.0).zero_division == 1.0
    assert smc.AUROC("binary", normalization=None).normalization is None
    with pytest.raises(TypeError):
        smc.Accuracy("binary", not_an_argument=1)
    with pytest.raises(TypeError, match="multiple values"):
        smc.ConfusionMatrix("binary", 0.5, **{"threshold": 0.4})  # type: ignore[misc]


def test_option_errors_come_from_the_task_class() -> None:
    with pytest.raises(ValueError, match="MulticlassAccuracy: argument `average`"):
        smc.Accuracy("multiclass", num_classes=3, average="bogus")


@pytest.mark.parametrize(("name", "task"), [("Accuracy", "multiclass"), ("F1Score", "multilabel"),
                                            ("AUROC", "binary"), ("CohenKappa", "multiclass"),
                                            ("PrecisionRecallCurve", "multiclass"), ("CalibrationError", "binary")])
def test_sharded(name: str, task: str) -> None:
    preds, target = data(task, 7, n=60)
    theirs = getattr(torchmetrics, name)(task=task, **counts(task))
    theirs.update(preds, target)
    check_sharded(getattr(smc, name)(task=task, **counts(task)), (preds, target), theirs.compute(), seed=3)
