"""Cross-process ``compute()`` of 10 metrics in real gloo processes: collective calls and latency.

The same 10 metrics (per-class counts, a confusion matrix, scalar sums and
means, and one exact BinaryAUROC holding 10,000 samples per rank) are held as a
``sm.Collection`` and as a TorchMetrics ``MetricCollection``. Each rank updates
them with its own shard, then ``compute()`` is timed. The floor is the least
communication that could produce the reduced states: one ``all_reduce`` of every
``sum`` state packed into one float64 buffer, and one ``all_gather`` of the AUROC
samples (scores and labels packed into one float32 buffer, equal lengths assumed).

Collective calls are counted by wrapping the ``torch.distributed`` functions;
latency is per ``compute()``, each preceded by a barrier, and the value per
iteration is the slowest rank's.

Run: ``python benchmarks/sync.py`` (``--quick`` for fewer iterations).
Prints a Markdown table and writes ``benchmarks/results/sync.json``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import statistics
import sys
import time
import traceback
from collections import Counter
from typing import Any

import _common

WORLD_SIZES = (2, 4)
AUROC_SAMPLES = 10_000
BATCH = 2_000
C = 10

_COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_single", "all_gather_object", "broadcast",
    "broadcast_object_list", "barrier", "reduce", "gather", "gather_object", "scatter", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
    "monitored_barrier",
)  # fmt: skip


class Counting:
    """Counts calls of every ``torch.distributed`` collective while ``on``, and logs each call's kind and input bytes.

    The log names every gather of tensors ``all_gather`` (``all_gather_into_tensor`` ...), as the byte model
    of ``scale.py`` reads it.
    """

    def __init__(self) -> None:
        import torch.distributed as dist

        self.on = False
        self.calls: Counter[str] = Counter()
        self.log: list[tuple[str, int]] = []
        for name in _COLLECTIVES:
            fn = getattr(dist, name, None)
            if fn is not None:
                setattr(dist, name, self._wrap(name, fn))

    def _wrap(self, name: str, fn: Any) -> Any:
        import torch

        at = 1 if name in ("all_gather", "all_gather_single", "all_gather_into_tensor") else 0  # the input tensor
        kind = "all_gather" if "gather" in name and name not in ("all_gather_object", "gather_object") else name

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.calls[name] += 1
                tensor = args[at] if len(args) > at else None
                size = tensor.numel() * tensor.element_size() if isinstance(tensor, torch.Tensor) else 0
                self.log.append((kind, size))
            return fn(*args, **kwargs)

        return counted

    def record(self, fn: Any) -> list[tuple[str, int]]:
        """The ``(kind, input bytes)`` of every collective one ``fn()`` issued."""
        self.log = []
        self.on = True
        try:
            fn()
        finally:
            self.on = False
        return self.log

    def measure(self, fn: Any) -> tuple[float, dict[str, int], Any]:
        """Seconds of one ``fn()``, the collectives it issued, and its value."""
        self.calls = Counter()
        self.on = True
        start = time.perf_counter()
        value = fn()
        elapsed = time.perf_counter() - start
        self.on = False
        return elapsed, dict(self.calls), value


def _data(rank: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(1234 + rank)
    return {
        "logits": torch.randn(BATCH, C, generator=g),
        "labels": torch.randint(0, C, (BATCH,), generator=g),
        "x": torch.randn(BATCH, generator=g),
        "y": torch.randn(BATCH, generator=g),
        "scores": torch.rand(AUROC_SAMPLES, generator=g),
        "binary": torch.randint(0, 2, (AUROC_SAMPLES,), generator=g),
    }


def _sm_collection(d: dict[str, Any]) -> Any:
    import scopedmetrics as sm
    from scopedmetrics import classification as smc
    from scopedmetrics import regression as smr

    cls = sm.Collection(
        accuracy=smc.MulticlassAccuracy(num_classes=C),
        precision=smc.MulticlassPrecision(num_classes=C),
        recall=smc.MulticlassRecall(num_classes=C),
        f1=smc.MulticlassF1Score(num_classes=C),
        confmat=smc.MulticlassConfusionMatrix(num_classes=C),
    ).update(d["logits"], d["labels"])
    members = {k: cls[k] for k in cls}
    members.update(
        mse=smr.MeanSquaredError().update(d["x"], d["y"]),
        mae=smr.MeanAbsoluteError().update(d["x"], d["y"]),
        mean=sm.Mean().update(d["x"]),
        total=sm.Sum().update(d["x"]),
        auroc=smc.BinaryAUROC().update(d["scores"], d["binary"]),
    )
    return sm.Collection(**members)


def _tm_collection(d: dict[str, Any]) -> Any:
    import torchmetrics
    from torchmetrics import classification as tmc

    members = {
        "accuracy": tmc.MulticlassAccuracy(num_classes=C),
        "precision": tmc.MulticlassPrecision(num_classes=C),
        "recall": tmc.MulticlassRecall(num_classes=C),
        "f1": tmc.MulticlassF1Score(num_classes=C),
        "confmat": tmc.MulticlassConfusionMatrix(num_classes=C),
        "mse": torchmetrics.MeanSquaredError(),
        "mae": torchmetrics.MeanAbsoluteError(),
        "mean": torchmetrics.MeanMetric(),
        "total": torchmetrics.SumMetric(),
        "auroc": tmc.BinaryAUROC(),
    }
    for name in ("accuracy", "precision", "recall", "f1", "confmat"):
        members[name].update(d["logits"], d["labels"])
    for name in ("mse", "mae"):
        members[name].update(d["x"], d["y"])
    members["mean"].update(d["x"])
    members["total"].update(d["x"])
    members["auroc"].update(d["scores"], d["binary"])
    return torchmetrics.MetricCollection(members)


def _tm_compute(coll: Any) -> Any:
    for m in coll.values():  # TorchMetrics caches compute() until the next update: time a fresh one each time
        m._computed = None
    return coll.compute()


def _floor_buffers(smc: Any) -> tuple[Any, Any]:
    """The sum states as one float64 buffer, the AUROC samples as one float32 buffer."""
    import optree
    import torch

    import scopedmetrics as sm

    sums = []
    for name in smc:
        if name == "auroc":
            continue
        sums += [t.reshape(-1) for t in optree.tree_leaves(smc[name], namespace=sm.NAMESPACE)]
    auroc = smc["auroc"]
    return torch.cat(sums).double(), torch.cat([auroc.preds, auroc.target.float()])


def _floor_compute(sums: Any, samples: Any, size: int) -> Any:
    import torch
    import torch.distributed as dist

    flat = sums.clone()
    dist.all_reduce(flat)
    parts = [torch.empty_like(samples) for _ in range(size)]
    dist.all_gather(parts, samples)
    return flat, parts


def _bench(rank: int, size: int, iters: int, warmup: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    counting = Counting()
    d = _data(rank)
    smc, tmc_ = _sm_collection(d), _tm_collection(d)
    sums, samples = _floor_buffers(smc)
    ours = smc.compute()
    theirs = _tm_compute(tmc_)
    for k in ours:  # the two libraries must agree before their speed means anything
        a, b = ours[k], theirs[k]
        if not torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-5):
            raise AssertionError(f"rank {rank}: {k} differs: scopedmetrics {a} vs torchmetrics {b}")
    impls = {
        "floor": lambda: _floor_compute(sums, samples, size),
        "sm": smc.compute,
        "tm": lambda: _tm_compute(tmc_),
    }
    local = {
        "sm": lambda: _with_local(smc),
        "tm": lambda: _tm_local(tmc_),
    }
    times: dict[str, list[float]] = {k: [] for k in [*impls, *(f"{k}_local" for k in local)]}
    calls: dict[str, dict[str, int]] = {}
    for i in range(warmup + iters):
        for name, fn in impls.items():  # round-robin, so load bursts hit all alike
            dist.barrier()
            elapsed, used, _ = counting.measure(fn)
            if i >= warmup:
                times[name].append(elapsed)
                calls[name] = used
        for name, fn in local.items():
            elapsed, _, _ = counting.measure(fn)
            if i >= warmup:
                times[f"{name}_local"].append(elapsed)
    return {"times": times, "calls": calls}


def _with_local(c: Any) -> Any:
    import scopedmetrics as sm

    with sm.use_reducer(sm.local()):
        return c.compute()


def _tm_local(coll: Any) -> Any:
    for m in coll.values():
        m._computed = None
        m._to_sync = False
    try:
        return coll.compute()
    finally:
        for m in coll.values():
            m._to_sync = True


# -- the process pool (as tests/worlds.py) -------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, size: int, port: int, fn: Any, args: tuple[Any, ...], out: Any) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size)
        out.put((rank, True, fn(rank, size, *args)))
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - reported by the parent
        out.put((rank, False, traceback.format_exc()))


def run_world(size: int, fn: Any, *args: Any, timeout: float = 300) -> list[Any]:
    """``fn(rank, size, *args)`` on every rank of a fresh gloo world of ``size`` processes; results in rank order.

    ``fn`` must be a module-level function (the processes are spawned).
    """
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, size, port, fn, args, out), daemon=True) for r in range(size)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    try:
        while len(results) < size:
            rank, ok, value = out.get(timeout=timeout)
            if not ok:
                raise RuntimeError(f"rank {rank} failed:\n{value}")
            results[rank] = value
    except queue.Empty:
        raise TimeoutError(f"world of {size} hung") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return [results[r] for r in range(size)]


def summarize(size: int, per_rank: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for name in per_rank[0]["times"]:
        slowest = [max(ts) for ts in zip(*(r["times"][name] for r in per_rank))]
        calls = per_rank[0]["calls"].get(name.removesuffix("_local")) if not name.endswith("_local") else {}
        rows.append({
            "world_size": size,
            "impl": name,
            "collectives": sum(calls.values()) if calls is not None else None,
            "by_kind": calls,
            "median_ms": statistics.median(slowest) * 1e3,
            "min_ms": min(slowest) * 1e3,
            "max_ms": max(slowest) * 1e3,
            "iterations": len(slowest),
        })
    return rows


def main() -> None:
    args = _common.parser(__doc__, repeat=25).parse_args()
    _common.setup(args)
    iters = 7 if args.quick else max(args.repeat, 7)
    warmup = 2 if args.quick else 5
    rows = []
    for size in WORLD_SIZES:
        print(f"world size {size}: spawning gloo processes ...", flush=True)
        rows += summarize(size, run_world(size, _bench, iters, warmup))
    by = {(r["world_size"], r["impl"]): r for r in rows}
    body = []
    for size in WORLD_SIZES:
        floor, ours, theirs = by[size, "floor"], by[size, "sm"], by[size, "tm"]
        for r in (floor, ours, theirs, by[size, "sm_local"], by[size, "tm_local"]):
            label = {"floor": "floor (all_reduce + all_gather)", "sm": "scopedmetrics Collection",
                     "tm": "TorchMetrics MetricCollection", "sm_local": "  sm, math only (local())",
                     "tm_local": "  tm, math only (no sync)"}[r["impl"]]
            kinds = ", ".join(f"{k} {v}" for k, v in sorted((r["by_kind"] or {}).items()))
            body.append([size, label, r["collectives"] if not r["impl"].endswith("_local") else "-", kinds,
                         r["median_ms"], _common.ratio(r["median_ms"], theirs["median_ms"]),
                         _common.ratio(r["median_ms"], floor["median_ms"])])
    print()
    print(_common.table(["world", "implementation", "collectives", "which", "median ms", "/tm", "/floor"],
                        body, digits=[0, 0, 0, 0, 2, 3, 2]))
    _common.save("sync", {
        "machine": _common.machine(),
        "config": {"world_sizes": WORLD_SIZES, "auroc_samples_per_rank": AUROC_SAMPLES, "batch": BATCH,
                   "classes": C, "iterations": iters, "warmup": warmup, "backend": "gloo (127.0.0.1)"},
        "rows": rows,
    }, args)


if __name__ == "__main__":
    sys.exit(main())
