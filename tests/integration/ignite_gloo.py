"""PyTorch-Ignite under ``idist.Parallel(backend="gloo", nproc_per_node=2)``: 101 samples, counted once.

    python tests/integration/ignite_gloo.py OUT PORT

``idist.auto_dataloader`` gives each process a shuffled ``DistributedSampler``
(Ignite's default), which repeats one of the 101 samples; the engine runs over
``sm.data.exact(loader)``, so its step gets ``(batch, keep)`` and the metrics,
held in an ``sm.Stateful``, leave the repeat out. Each process writes
``OUT/rank<r>.json`` with the values in ``engine.state.metrics`` and how many
samples the global state counted; ``tests/test_ignite.py`` compares them with
one process's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ignite.distributed as idist
import torch
from ignite.engine import Engine, Events
from torch.utils.data import DataLoader, TensorDataset

import scopedmetrics as sm

SAMPLES, BATCH = 101, 16  # 8 a process


def make_data() -> TensorDataset:
    """Scores and binary labels (identical in every process)."""
    g = torch.Generator().manual_seed(3)
    scores = torch.rand(SAMPLES, generator=g)
    labels = (torch.rand(SAMPLES, generator=g) < scores).long()
    return TensorDataset(scores, labels)


def make_metrics() -> sm.Collection:
    """Counts and cat states."""
    return sm.Collection(acc=sm.BinaryAccuracy(), auroc=sm.BinaryAUROC(), ap=sm.BinaryAveragePrecision())


class Exact:
    """``sm.data.exact(loader)`` as data for ``Engine.run``: re-iterable each epoch, with a length."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[Any, torch.Tensor]]:
        return sm.data.exact(self.loader)


def evaluate(local_rank: int, out: str) -> None:
    """One process: evaluate with the metrics in a module, write what this process holds."""
    torch.set_num_threads(1)
    loader = idist.auto_dataloader(make_data(), batch_size=BATCH)  # shuffle=True: Ignite's default
    metrics = sm.Stateful(make_metrics())
    counted = sm.Stateful(sm.Sum())
    naive = sm.Stateful(sm.Sum())

    def step(engine: Engine, item: tuple[Any, torch.Tensor]) -> None:
        (scores, labels), keep = item
        metrics.update(scores, labels, mask=keep)
        counted.update(torch.ones(len(labels)), mask=keep)
        naive.update(torch.ones(len(labels)))  # what the sampler fed: the repeat included

    engine = Engine(step)

    @engine.on(Events.EPOCH_COMPLETED)
    def _compute(engine: Engine) -> None:
        engine.state.metrics.update(metrics.compute())  # a collective: every process calls it

    state = engine.run(Exact(loader), max_epochs=1)
    report = {
        "rank": idist.get_rank(),
        "world": idist.get_world_size(),
        "metrics": {k: float(v) for k, v in state.metrics.items()},
        "counted": float(counted.compute()),
        "naive": float(naive.compute()),
        "shuffled": bool(loader.sampler.shuffle),
    }
    Path(out, f"rank{idist.get_rank()}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with idist.Parallel(backend="gloo", nproc_per_node=2, master_addr="127.0.0.1", master_port=int(sys.argv[2])) as p:
        p.run(evaluate, sys.argv[1])
