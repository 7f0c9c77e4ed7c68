"""Driving scopedmetrics from a PyTorch-Ignite ``Engine`` with three event handlers, exactly once.

    python examples/ignite_engine.py               # one process; needs: pip install pytorch-ignite
    python examples/ignite_engine.py --nproc 2     # idist.Parallel(backend="gloo", nproc_per_node=2)

Ignite's own metrics mutate themselves on ``Events``; scopedmetrics' metrics
are values, so ``attach`` keeps the current one in a holder and replaces it:
``EPOCH_STARTED`` resets it, ``ITERATION_COMPLETED`` folds the engine's
output in, and ``EPOCH_COMPLETED`` computes it into ``engine.state.metrics``,
where Ignite's handlers and loggers look for metric values. Under
``idist.Parallel`` ``torch.distributed`` is initialized, so ``compute()``
reduces over every process by default. ``idist.auto_dataloader`` gives each
process a ``DistributedSampler``, which repeats samples so every process gets
as many (301 samples on 2 processes run as 302); the evaluator's step passes
``sm.data.keep_mask`` on as ``mask=``, so the repeat is left out. With
``--nproc 2`` rank 0 checks the values against one process and prints PASS.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

import ignite.distributed as idist
import torch
from ignite.engine import Engine, Events
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import scopedmetrics as sm

NUM_CLASSES = 3
SAMPLES = 301  # odd: on two processes the sampler repeats one


def attach(
    engine: Engine,
    metric: sm.Metric,
    name: str = "metrics",
    output_transform: Callable[[Any], tuple[Any, ...]] = lambda output: output,
) -> Callable[[], sm.Metric]:
    """Reset, update and compute ``metric`` on ``engine``'s epochs; returns a getter of the current metric.

    ``output_transform`` maps the engine's output to ``update``'s positional
    arguments, optionally followed by a dict of keyword arguments (Ignite's
    ``(y_pred, y, kwargs)`` convention), such as ``{"mask": keep}``. A
    ``Collection`` writes each member under its own key of
    ``engine.state.metrics`` (and nested collections as ``"outer.inner"``);
    any other metric writes its value under ``name``.
    """
    held = {"metric": metric}

    def reset(engine: Engine) -> None:
        held["metric"] = held["metric"].reset()

    def update(engine: Engine) -> None:
        *args, last = output_transform(engine.state.output)
        if isinstance(last, Mapping):
            held["metric"] = held["metric"].update(*args, **last)
        else:
            held["metric"] = held["metric"].update(*args, last)

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


def make_dataset(n: int = SAMPLES, seed: int = 0) -> TensorDataset:
    """Features and labels of a toy 3-class task (the same in every process)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, :NUM_CLASSES] + 0.5 * torch.randn(n, NUM_CLASSES, generator=g)).argmax(dim=1)
    return TensorDataset(x, y)


def make_batches(n: int = SAMPLES, batch: int = 64, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The data set as a plain list of batches (one process, no sampler)."""
    x, y = make_dataset(n, seed).tensors
    return [(x[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def make_metrics() -> sm.Collection:
    """What the evaluator reports."""
    return sm.Collection(
        accuracy=sm.MulticlassAccuracy(NUM_CLASSES, average="micro"),
        macro_f1=sm.MulticlassF1Score(NUM_CLASSES),
        confusion=sm.MulticlassConfusionMatrix(NUM_CLASSES),
    )


def make_evaluator(model: torch.nn.Module, loader: DataLoader | None = None) -> Engine:
    """An evaluator whose output is ``(logits, labels, {"mask": keep})``, with scopedmetrics attached.

    ``loader`` is the data loader the evaluator will run: with a
    ``DistributedSampler`` (as ``idist.auto_dataloader`` makes) its repeats are
    masked out; without one (or no loader) nothing is.
    """
    sampler = getattr(loader, "sampler", None)

    @torch.no_grad()
    def step(engine: Engine, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[Any, ...]:
        x, y = batch
        keep = None
        if isinstance(sampler, DistributedSampler):
            assert loader is not None and loader.batch_size is not None
            batch_idx = (engine.state.iteration - 1) % engine.state.epoch_length  # this epoch's batch
            keep = sm.data.keep_mask(sampler, batch_idx, loader.batch_size)
        return model(x), y, {"mask": keep}

    evaluator = Engine(step)
    attach(evaluator, make_metrics())
    return evaluator


def make_model() -> torch.nn.Module:
    """The same weights in every process."""
    torch.manual_seed(0)
    return torch.nn.Linear(4, NUM_CLASSES)


def evaluate(local_rank: int) -> None:
    """One process's run (``idist.Parallel`` calls it in each): evaluate; rank 0 checks, raising on a mismatch."""
    torch.set_num_threads(1)
    model = make_model()
    loader = idist.auto_dataloader(make_dataset(), batch_size=64, shuffle=False)  # 32 a process under 2
    state = make_evaluator(model, loader).run(loader, max_epochs=1)
    failures = _check(model, state) if idist.get_rank() == 0 else 0
    idist.barrier()  # leave together: a gloo rank whose peers tear their connections down first may abort
    if failures:
        raise SystemExit(1)


def _check(model: torch.nn.Module, state: Any) -> int:
    """Rank 0: print each value beside one process's; the number that differ."""
    x, y = make_dataset().tensors
    with torch.no_grad(), sm.use_reducer(sm.local()):
        truth = _flat(make_metrics().update(model(x), y).compute())
    failures = 0
    for key, value in state.metrics.items():
        ok = bool(torch.allclose(value.double(), truth[key].double(), rtol=1e-5, atol=1e-6))
        failures += not ok
        shown = f"{float(value):.6f}" if value.ndim == 0 else str(value.tolist())
        print(f"{key:>10}: {shown}  [{'matches one process' if ok else 'MISMATCH'}]")
    samples = int(state.metrics["confusion"].sum())
    print(f"{idist.get_world_size()} processes, {samples} of {SAMPLES} samples counted once")
    failures += samples != SAMPLES or not math.isfinite(float(state.metrics["accuracy"]))
    print("PASS" if failures == 0 else f"FAIL: {failures} value(s) differ from one process", flush=True)
    return int(failures)


def main() -> int:
    """Evaluate on ``--nproc`` processes (gloo when more than one)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--nproc", type=int, default=1)
    parser.add_argument("--port", type=int, default=None, help="the gloo rendezvous port (default: Ignite's)")
    args = parser.parse_args()
    if args.nproc == 1:
        evaluate(0)
        return 0
    with idist.Parallel(backend="gloo", nproc_per_node=args.nproc, master_port=args.port) as parallel:
        parallel.run(evaluate)  # a failing process makes run() raise here
    return 0


if __name__ == "__main__":
    sys.exit(main())
