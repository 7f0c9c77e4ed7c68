"""Metric logging in a training loop on gloo: a blocking reduce every step, or one overlapped with the next step.

Each of 2 gloo processes trains a small MLP (batch 256, two 512-wide layers)
with a data-parallel gradient ``all_reduce`` each step, after a random 0-4 ms
wait of its own (a data loader's jitter), and updates seven metrics on the
step's outputs: accuracy, precision, recall, F1 and specificity (10 classes,
macro), the mean loss, and a binned multiclass AUROC (100 thresholds). The
values are logged every step:

- ``tm``: TorchMetrics' ``MetricCollection.compute()`` (compute groups on),
- ``sm blocking``: ``sm.compute(tree)``,
- ``sm async_op``: ``sm.compute(tree, async_op=True)`` at the end of a step
  (reduced and computed on a thread); the previous step's handle is waited
  for just before, so the logged values lag one step (they are checked
  bit-equal to the blocking run's values of that step).

Per rank: seconds per step, and milliseconds per step the main thread spent
in the logging calls (after the update: reduce, wait, compute); the slowest
rank is reported. Each case runs in a fresh
world.

Run: ``python benchmarks/overlap.py`` (``--quick``: fewer steps).
Prints a Markdown table and writes ``benchmarks/results/overlap.json``.
"""

from __future__ import annotations

import random
import time
from typing import Any

import _common

WORLD = 2
CASES = ("tm", "sm blocking", "sm async_op")
CLASSES = 10


def _metrics(case: str) -> Any:
    if case == "tm":
        import torchmetrics as tm
        import torchmetrics.classification as tmc

        kw: dict[str, Any] = {"num_classes": CLASSES, "average": "macro"}
        return tm.MetricCollection({
            "acc": tmc.MulticlassAccuracy(**kw), "prec": tmc.MulticlassPrecision(**kw),
            "rec": tmc.MulticlassRecall(**kw), "f1": tmc.MulticlassF1Score(**kw),
            "spec": tmc.MulticlassSpecificity(**kw), "loss": tm.MeanMetric(),
            "auroc": tmc.MulticlassAUROC(num_classes=CLASSES, thresholds=100),
        })
    import scopedmetrics as sm

    kw = {"num_classes": CLASSES, "average": "macro"}
    scores = sm.Collection(
        acc=sm.MulticlassAccuracy(**kw), prec=sm.MulticlassPrecision(**kw), rec=sm.MulticlassRecall(**kw),
        f1=sm.MulticlassF1Score(**kw), spec=sm.MulticlassSpecificity(**kw),
        auroc=sm.MulticlassAUROC(num_classes=CLASSES, thresholds=100),
    )
    return {"scores": scores, "loss": sm.Mean()}


def _row(values: dict[str, Any]) -> list[float]:
    """The logged values by name, from either library's output."""
    flat = {**values["scores"], "loss": values["loss"]} if "scores" in values else dict(values)
    return [float(flat[k]) for k in sorted(flat)]


def _rank(rank: int, size: int, case: str, steps: int, warmup: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    import scopedmetrics as sm

    _common.setup()
    g = torch.Generator().manual_seed(1234)  # the same model on every rank
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, CLASSES))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.Generator().manual_seed(rank)
    jitter = random.Random(rank)
    metrics = _metrics(case)
    pending = None
    logged: list[list[float]] = []
    in_logging = 0.0
    start = 0.0
    for step in range(warmup + steps):
        if step == warmup:
            dist.barrier()
            start, in_logging = time.perf_counter(), 0.0
        x = torch.randn(256, 512, generator=data)
        y = torch.randint(0, CLASSES, (256,), generator=data)
        time.sleep(jitter.uniform(0.0, 0.004))  # the data loader's jitter
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])  # type: ignore[union-attr]
        dist.all_reduce(flat)  # data-parallel gradients, on the default group
        at = 0
        for p in model.parameters():
            p.grad.copy_(flat[at : at + p.numel()].view_as(p) / size)  # type: ignore[union-attr]
            at += p.numel()
        opt.step()
        preds = logits.detach().softmax(-1)
        if case == "tm":
            for name, m in metrics.items():
                m.update(loss.detach()) if name == "loss" else m.update(preds, y)
            t0 = time.perf_counter()
            logged.append(_row(metrics.compute()))
        else:
            metrics = {"scores": metrics["scores"].update(preds, y), "loss": metrics["loss"].update(loss.detach())}
            t0 = time.perf_counter()
            if case == "sm blocking":
                logged.append(_row(sm.compute(metrics)))
            else:
                if pending is not None:
                    logged.append(_row(pending.wait()))
                pending = sm.compute(metrics, async_op=True)
        in_logging += time.perf_counter() - t0
    elapsed = time.perf_counter() - start
    if pending is not None:
        logged.append(_row(pending.wait()))
    return {"s_per_step": elapsed / steps, "ms_logging_per_step": 1e3 * in_logging / steps, "logged": logged}


def main() -> None:
    p = _common.parser(__doc__, repeat=1)
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 200; --quick 40)")
    args = p.parse_args()
    steps = args.steps or (40 if args.quick else 200)
    from sync import run_world

    results = {case: run_world(WORLD, _rank, case, steps, 5, timeout=900) for case in CASES}
    blocking, overlapped = results["sm blocking"], results["sm async_op"]
    for a, b in zip(blocking, overlapped):
        if a["logged"] != b["logged"]:
            raise AssertionError("async_op logged other values than the blocking reduce")
    for a, b in zip(blocking, results["tm"]):
        worst = max(abs(u - v) for ra, rb in zip(a["logged"], b["logged"]) for u, v in zip(ra, rb))
        if worst > 1e-5:
            raise AssertionError(f"TorchMetrics logged other values (by {worst})")
    body = []
    for case, per_rank in results.items():
        body.append([case, 1e3 * max(r["s_per_step"] for r in per_rank),
                     max(r["ms_logging_per_step"] for r in per_rank)])
    tm_step = body[0][1]
    for row in body:
        row.append(row[1] / tm_step)
    print(f"overlap: 7 metrics logged every step of an MLP trained on {WORLD} gloo ranks, {steps} steps")
    print(_common.table(["case", "ms per step (slowest rank)", "ms per step in logging (main thread)",
                         "step / TorchMetrics' step"], body, digits=[0, 2, 2, 2]))
    _common.save("overlap", {"machine": _common.machine(), "config": {"world": WORLD, "steps": steps},
                             "results": {c: [{k: v for k, v in r.items() if k != "logged"} for r in per_rank]
                                         for c, per_rank in results.items()}}, args)


if __name__ == "__main__":
    main()
