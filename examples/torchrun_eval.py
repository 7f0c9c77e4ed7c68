"""A sharded evaluation under torchrun: overall, per-task and per-node metrics, printed on rank 0.

Run it with four processes on one machine (CPU, gloo):

    torchrun --nproc-per-node 4 examples/torchrun_eval.py

(add ``--standalone`` if port 29500 is taken). Every rank generates the same
data set, takes an uneven shard of it (with three ranks or more, the last one
gets nothing), and folds its shard into a collection of metrics.
``compute()`` then reduces the state across the ranks — over every rank, over
the ranks that share a task (``sm.subgroup``), and over the ranks of a node —
so each value is the metric of the data those ranks saw together, not an
average of per-rank values. Rank 0 prints them next to the same metrics
computed in one process on the same data, and the script exits non-zero if
any differs.
"""

from __future__ import annotations

import math
import os
import sys

import torch
import torch.distributed as dist

import scopedmetrics as sm

NUM_CLASSES = 4
SAMPLES = 1000
TASKS = ("en", "de")


def make_data(seed: int = 0) -> dict[str, torch.Tensor]:
    """A classification task and a regression task over the same samples (identical on every rank)."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, NUM_CLASSES, (SAMPLES,), generator=g)
    logits = torch.randn(SAMPLES, NUM_CLASSES, generator=g) + 2 * torch.nn.functional.one_hot(target, NUM_CLASSES)
    y = torch.randn(SAMPLES, generator=g) * 2 + 5
    y_hat = y + torch.randn(SAMPLES, generator=g) * (0.5 + 0.2 * target.float())
    return {"logits": logits, "target": target, "y_hat": y_hat, "y": y}


def shard_bounds(rank: int, world: int) -> tuple[int, int]:
    """Uneven shards: rank r's share is proportional to ``world - r``; from 3 ranks on, the last gets none."""
    weights = [world - r for r in range(world)]
    if world >= 3:
        weights[-1] = 0
    total = sum(weights)
    edges = [round(SAMPLES * sum(weights[:r]) / total) for r in range(world + 1)]
    return edges[rank], edges[rank + 1]


def task_of(rank: int) -> str:
    """Which task a rank evaluated (ranks alternate between tasks)."""
    return TASKS[rank % len(TASKS)]


def node_of() -> str:
    """The node this process runs on: torchrun's GROUP_RANK (all ranks share node 0 on one machine)."""
    return f"node{os.environ.get('GROUP_RANK', '0')}"


def make_metrics() -> dict[str, sm.Collection]:
    """Two collections: they take different inputs, and are reduced together by ``sm.compute``."""
    return {
        "cls": sm.Collection(
            accuracy=sm.MulticlassAccuracy(NUM_CLASSES, average="micro"),
            macro_f1=sm.MulticlassF1Score(NUM_CLASSES),
            auroc=sm.MulticlassAUROC(NUM_CLASSES, thresholds=101),
        ),
        "reg": sm.Collection(rmse=sm.MeanSquaredError(squared=False), r2=sm.R2Score()),
    }


def evaluate(data: dict[str, torch.Tensor], lo: int, hi: int, batch: int = 64) -> dict[str, sm.Collection]:
    """Fold rows ``lo:hi`` of ``data`` in, batch by batch."""
    metrics = make_metrics()
    cls, reg = metrics["cls"], metrics["reg"]
    for start in range(lo, hi, batch):
        rows = slice(start, min(start + batch, hi))
        cls = cls.update(data["logits"][rows], data["target"][rows])
        reg = reg.update(data["y_hat"][rows], data["y"][rows])
    return {"cls": cls, "reg": reg}


def flat(values: dict, prefix: str = "") -> dict[str, float]:
    """Nested dicts of tensors as ``{"cls.accuracy": 0.91, ...}``."""
    out: dict[str, float] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = float(v)
    return out


def same(a: float, b: float) -> bool:
    """Equal to float32 rounding; NaN (a group with no data) equals NaN."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def one_process(data: dict[str, torch.Tensor], ranks: list[int], world: int) -> dict[str, float]:
    """The same metrics on the union of ``ranks``' shards, in this process alone."""
    rows = torch.cat([torch.arange(*shard_bounds(r, world)) for r in ranks])
    subset = {k: v[rows] for k, v in data.items()}
    with sm.use_reducer(sm.local()):
        return flat(sm.compute(evaluate(subset, 0, len(rows), batch=len(rows) or 1)))


def main() -> int:
    """Evaluate this rank's shard, reduce in three scopes, print and check on rank 0."""
    dist.init_process_group("gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        data = make_data()
        lo, hi = shard_bounds(rank, world)
        metrics = evaluate(data, lo, hi)

        overall = flat(sm.compute(metrics))            # the default reducer: every rank
        with sm.use_reducer(sm.subgroup(task_of(rank))):
            per_task = flat(sm.compute(metrics))       # only the ranks that evaluated this task
        with sm.use_reducer(sm.subgroup(node_of())):
            per_node = flat(sm.compute(metrics))       # only the ranks of this node

        # Rank 0 prints every group's values, so gather them (a plain object gather, for the report).
        reports: list = [None] * world
        dist.all_gather_object(reports, (rank, hi - lo, task_of(rank), node_of(), per_task, per_node))
        code = report(data, world, reports, overall) if rank == 0 else 0
        dist.barrier()  # leave together: a gloo rank whose peers tear their connections down first may abort
        return code
    finally:
        dist.destroy_process_group()


def report(data: dict[str, torch.Tensor], world: int, reports: list, overall: dict) -> int:
    """Rank 0: print every scope's values beside one process's, and whether they match (0) or not (1)."""
    failures = 0
    print(f"{world} ranks, shard sizes {[r[1] for r in reports]}")
    scopes = [("all ranks", list(range(world)), overall)]
    for task in sorted({r[2] for r in reports}):
        members = [r[0] for r in reports if r[2] == task]
        scopes.append((f"task {task}", members, reports[members[0]][4]))
    for node in sorted({r[3] for r in reports}):
        members = [r[0] for r in reports if r[3] == node]
        scopes.append((node, members, reports[members[0]][5]))
    for name, members, values in scopes:
        truth = one_process(data, members, world)
        ok = all(same(values[k], truth[k]) for k in truth)
        failures += not ok
        shown = ", ".join(f"{k.split('.')[-1]} {v:.4f}" for k, v in values.items())
        print(f"{name:>10} (ranks {members}): {shown}  [{'matches one process' if ok else 'MISMATCH'}]")
    print("PASS" if failures == 0 else f"FAIL: {failures} scope(s) differ from one process")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
