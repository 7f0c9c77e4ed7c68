"""``torch.compile(fullgraph=True)`` traces the core updates, checks included, and matches eager."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics.classification import BinaryAUROC, MulticlassAccuracy
from scopedmetrics.regression import MeanSquaredError

g = torch.Generator().manual_seed(0)
LOGITS, LABELS = torch.randn(32, 5, generator=g), torch.randint(0, 5, (32,), generator=g)
X, Y = torch.randn(32, generator=g), torch.randn(32, generator=g)
PROBS, BINARY = torch.rand(32, generator=g), torch.randint(0, 2, (32,), generator=g)

CASES = [
    (MulticlassAccuracy(num_classes=5), (LOGITS, LABELS), (LOGITS, torch.full((32,), 7)), "`target` has values"),
    (MeanSquaredError(), (X, Y), (X, torch.full((32,), float("nan"))), "`target` contains non-finite"),
    (BinaryAUROC(thresholds=10), (PROBS, BINARY), (PROBS, torch.full((32,), 3)), "`target` has values outside"),
    (BinaryAUROC(thresholds=10), (X * 3, BINARY), (X.clone().fill_(float("nan")), BINARY), "`preds` contains NaN"),
    (sm.Mean(nan_strategy="disable"), (X,), None, ""),
]


def _compiled(m: sm.Metric) -> Any:
    torch._dynamo.reset()
    return torch.compile(m.update, fullgraph=True, backend="eager")


@pytest.mark.parametrize(("metric", "good", "bad", "message"), CASES, ids=lambda c: type(c).__name__)
def test_update_traces_whole_and_matches_eager(metric: sm.Metric, good: Any, bad: Any, message: str) -> None:
    compiled = _compiled(metric)
    traced, eager = compiled(*good), metric.update(*good)
    for key, value in eager.state_dict().items():
        assert torch.allclose(traced.state_dict()[key].double(), value.double()), key
    if bad is not None:  # the checks still run, as asynchronous asserts that name the metric and the argument
        with pytest.raises(RuntimeError, match=f"{type(metric).__name__}.update: argument {message}"):
            compiled(*bad)


def test_logits_or_probabilities_is_decided_per_batch_when_traced() -> None:
    m = BinaryAUROC(thresholds=10)
    compiled = _compiled(m)
    for scores in (PROBS, X * 3):  # probabilities stay, logits go through the sigmoid
        assert torch.equal(compiled(scores, BINARY).counts, m.update(scores, BINARY).counts)
