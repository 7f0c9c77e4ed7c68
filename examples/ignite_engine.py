"""Driving scopedmetrics from a PyTorch-Ignite ``Engine`` with three event handlers.

    python examples/ignite_engine.py               # needs: pip install pytorch-ignite

Ignite's own metrics mutate themselves on ``Events``; scopedmetrics' metrics
are values, so ``attach`` keeps the current one in a holder and replaces it:
``EPOCH_STARTED`` resets it, ``ITERATION_COMPLETED`` folds the engine's
output in, and ``EPOCH_COMPLETED`` computes it into ``engine.state.metrics``,
where Ignite's handlers and loggers look for metric values. Under
``idist.Parallel(backend="gloo")`` (or NCCL) ``torch.distributed`` is
initialized, so ``compute()`` reduces over every process by default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from ignite.engine import Engine, Events

import scopedmetrics as sm

NUM_CLASSES = 3


def attach(
    engine: Engine,
    metric: sm.Metric,
    name: str = "metrics",
    output_transform: Callable[[Any], tuple[Any, ...]] = lambda output: output,
) -> Callable[[], sm.Metric]:
    """Reset, update and compute ``metric`` on ``engine``'s epochs; returns a getter of the current metric.

    A ``Collection`` writes each member under its own key of
    ``engine.state.metrics`` (and nested collections as ``"outer.inner"``);
    any other metric writes its value under ``name``.
    """
    held = {"metric": metric}

    def reset(engine: Engine) -> None:
        held["metric"] = held["metric"].reset()

    def update(engine: Engine) -> None:
        held["metric"] = held["metric"].update(*output_transform(engine.state.output))

    def compute(engine: Engine) -> None:
        value = held["metric"].compute()  # a collective under torch.distributed: every process calls it
        if isinstance(value, dict):
            engine.state.metrics.update(_flat(value))
        else:
            engine.state.metrics[name] = value

    engine.add_event_handler(Events.EPOCH_STARTED, reset)
    engine.add_event_handler(Events.ITERATION_COMPLETED, update)
    engine.add_event_handler(Events.EPOCH_COMPLETED, compute)
    return lambda: held["metric"]


def _flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def make_batches(n: int = 300, batch: int = 64, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Features and labels of a toy 3-class task."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, :NUM_CLASSES] + 0.5 * torch.randn(n, NUM_CLASSES, generator=g)).argmax(dim=1)
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def make_evaluator(model: torch.nn.Module) -> Engine:
    """An evaluator whose output is ``(logits, labels)``, with scopedmetrics attached."""

    @torch.no_grad()
    def step(engine: Engine, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = batch
        return model(x), y

    evaluator = Engine(step)
    attach(
        evaluator,
        sm.Collection(
            accuracy=sm.MulticlassAccuracy(NUM_CLASSES, average="micro"),
            macro_f1=sm.MulticlassF1Score(NUM_CLASSES),
            confusion=sm.MulticlassConfusionMatrix(NUM_CLASSES),
        ),
    )
    return evaluator


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.nn.Linear(4, NUM_CLASSES)
    state = make_evaluator(model).run(make_batches(), max_epochs=1)
    for key, value in state.metrics.items():
        print(f"{key}: {value}")
