"""Wrappers: ``Sliced`` updates at 10 / 100 / 1,000 slices, and the collectives of sliced and bootstrapped metrics.

Per-update cost (batch 1,024, one intra-op thread) of ``Sliced(metric, n)``
against one unsliced ``update`` of the same metric, and against TorchMetrics'
closest equivalent: a metric per group, each updated on its group's rows (the
batch sorted by group once, then split), and ``BinaryGroupStatRates`` for the
binary stat scores. Families: stat scores (binary and 10-class accuracy), mean
(``Mean``), regression (``MeanSquaredError``). The values are checked equal
first.

Runtime keys: ``Sliced(Mean(), slices=None)`` fed 100 keys (strings, and ints in a
tensor) in batches of 1,024, every key already seen (the steady state), against
the fixed ``Sliced(Mean(), 100)`` fed the same slices as ids.

Collectives: one ``compute()`` of ``Sliced(metric, 1000)`` against the metric
alone, counted with a counting communicator in ``sm.simulate`` (world 2); and
one ``compute()`` of ``BootStrapper(MeanSquaredError(), num_bootstraps=100)``
against TorchMetrics' ``BootStrapper`` (which syncs each of its 100 copies'
states), counted by wrapping the ``torch.distributed`` functions in two real
gloo processes, with the latency of that ``compute()``.

Run: ``python benchmarks/wrappers.py`` (``--quick`` for a noisier, faster pass).
Prints Markdown tables and writes ``benchmarks/results/wrappers.json``.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import queue
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

import _common
import torch

BATCH = 1024
SLICES = (10, 100, 1000)
C = 10
BOOTSTRAPS = 100


# -- update cost --------------------------------------------------------------------------------


def _inputs(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "prob": torch.rand(BATCH, generator=g),
        "bin": torch.randint(0, 2, (BATCH,), generator=g),
        "scores": torch.rand(BATCH, C, generator=g),
        "labels": torch.randint(0, C, (BATCH,), generator=g),
        "x": torch.randn(BATCH, generator=g),
        "y": torch.randn(BATCH, generator=g),
    }


def _families() -> list[tuple[str, str, Any, Any, tuple[str, ...]]]:
    """(family, row name, sm metric, TorchMetrics factory, input names)."""
    import torchmetrics
    from torchmetrics import classification as tmc

    import scopedmetrics as sm

    return [
        ("stat scores", "BinaryAccuracy", sm.BinaryAccuracy(), tmc.BinaryAccuracy, ("prob", "bin")),
        ("stat scores", f"MulticlassAccuracy({C})", sm.MulticlassAccuracy(C), lambda: tmc.MulticlassAccuracy(C),
         ("scores", "labels")),
        ("mean", "Mean", sm.Mean(), torchmetrics.MeanMetric, ("x",)),
        ("regression", "MeanSquaredError", sm.MeanSquaredError(), torchmetrics.MeanSquaredError, ("x", "y")),
    ]


class PerGroup:
    """TorchMetrics' way to slice: one metric per group, each updated with its group's rows."""

    def __init__(self, factory: Callable[[], Any], n: int) -> None:
        self.metrics = [factory() for _ in range(n)]
        self.n = n

    def update(self, ids: torch.Tensor, *args: torch.Tensor) -> None:
        order = torch.argsort(ids, stable=True)
        sizes = torch.bincount(ids, minlength=self.n).tolist()
        parts = [a[order].split(sizes) for a in args]
        for k, size in enumerate(sizes):
            if size:
                self.metrics[k].update(*(p[k] for p in parts))

    def values(self) -> dict[int, torch.Tensor]:
        return {k: m.compute() for k, m in enumerate(self.metrics) if m.update_count}


def _check(ours: dict[Any, torch.Tensor], theirs: dict[Any, torch.Tensor], what: str) -> None:
    if ours.keys() != theirs.keys():
        raise AssertionError(f"{what}: slices differ: {sorted(ours)[:5]} vs {sorted(theirs)[:5]}")
    for k in ours:
        if not torch.allclose(ours[k].double(), theirs[k].double(), rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{what}: slice {k} differs: {ours[k]} vs {theirs[k]}")


def _timed(fns: dict[str, Callable[[], Any]], number: int, repeat: int) -> dict[str, dict[str, float]]:
    """``_common.compare`` with garbage collection collected before and paused during the timing."""
    gc.collect()
    gc.disable()
    try:
        return _common.compare(fns, number=number, repeat=repeat)
    finally:
        gc.enable()


def update_rows(args: Any) -> list[dict[str, Any]]:
    from torchmetrics import classification as tmc

    from scopedmetrics.wrappers import Sliced

    d = _inputs()
    rows = []
    for family, name, metric, factory, names in _families():
        if args.only and args.only not in name:
            continue
        batch = [d[k] for k in names]
        for n in SLICES:
            ids = torch.randint(0, n, (BATCH,), generator=torch.Generator().manual_seed(n))
            sliced = Sliced(metric, n)
            per_group = PerGroup(factory, n)
            per_group.update(ids, *batch)
            _check(sliced.update(*batch, slice_ids=ids).compute(), per_group.values(), f"{name}, {n} slices")
            ours: dict[str, Callable[[], Any]] = {
                "sm unsliced": lambda m=metric, b=batch: m.update(*b),
                "sm Sliced": lambda s=sliced, i=ids, b=batch: s.update(*b, slice_ids=i),
            }
            theirs: dict[str, Callable[[], Any]] = {
                "tm metric per group": lambda p=per_group, i=ids, b=batch: p.update(i, *b),
            }
            if name == "BinaryAccuracy":
                rates = tmc.BinaryGroupStatRates(num_groups=n)
                theirs["tm BinaryGroupStatRates"] = lambda r=rates, i=ids, b=batch: r.update(*b, i)
            # ours round-robin with each other, TorchMetrics' (100-1000x slower) in its own table: its many
            # small objects would otherwise charge garbage collection to whichever call follows
            timed = _timed(ours, 150 // (3 if args.quick else 1), args.repeat)
            tm_number = {10: 30, 100: 6, 1000: 2}[n] // (3 if args.quick else 1)
            timed.update(_timed(theirs, max(tm_number, 1), args.repeat))
            base = timed["sm unsliced"]["median_us"]
            for impl, t in timed.items():
                rows.append({"family": family, "metric": name, "slices": n, "impl": impl, **t,
                             "x_unsliced": _common.ratio(t["median_us"], base)})
            print(f"  {name}, {n} slices: done", flush=True)
    return rows


KEYS = 100


def keyed_rows(args: Any) -> list[dict[str, Any]]:
    """``Sliced(Mean(), slices=None)`` against ``Sliced(Mean(), 100)``: the cost of looking keys up."""
    import scopedmetrics as sm
    from scopedmetrics.wrappers import Sliced

    x = _inputs()["x"]
    ids = torch.randint(0, KEYS, (BATCH,), generator=torch.Generator().manual_seed(KEYS))
    names = [f"lang{i:02d}" for i in range(KEYS)]
    keys = [names[i] for i in ids.tolist()]
    fixed = Sliced(sm.Mean(), names)
    keyed = Sliced(sm.Mean()).update(x, slice_keys=keys)  # every key seen once: the steady state
    keyed_int = Sliced(sm.Mean()).update(x, slice_keys=ids)
    want = fixed.update(x, slice_ids=ids).compute()
    _check(keyed.compute(), want, "Sliced(slices=None), str keys")
    _check({names[k]: v for k, v in keyed_int.compute().items()}, want, "Sliced(slices=None), int tensor keys")
    fns: dict[str, Callable[[], Any]] = {
        f"Sliced(slices={KEYS})": lambda: fixed.update(x, slice_ids=ids),
        "Sliced(slices=None), str keys": lambda: keyed.update(x, slice_keys=keys),
        "Sliced(slices=None), int tensor keys": lambda: keyed_int.update(x, slice_keys=ids),
    }
    timed = _timed(fns, 150 // (3 if args.quick else 1), args.repeat)
    base = timed[f"Sliced(slices={KEYS})"]["median_us"]
    return [{"metric": "Mean", "keys": KEYS, "impl": impl, **t, "x_fixed": _common.ratio(t["median_us"], base)}
            for impl, t in timed.items()]


# -- collectives -----------------------------------------------------------------------------------


def _counting(inner: Any) -> Any:
    """A communicator that counts the collectives it issues (as tests/worlds.py's CountingComm)."""
    from scopedmetrics.comm import Comm

    class CountingComm(Comm):
        def __init__(self) -> None:
            self.calls: list[str] = []

        rank = property(lambda self: inner.rank)  # type: ignore[assignment]
        size = property(lambda self: inner.size)  # type: ignore[assignment]
        timeout = property(lambda self: inner.timeout)  # type: ignore[assignment]

        def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
            self.calls.append("all_gather")
            return inner.all_gather(tensor)

        def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
            self.calls.append(f"all_reduce:{op}")
            return inner.all_reduce(tensor, op)

        def subcomm(self, members: list[int]) -> Comm:
            return inner.subcomm(members)

    return CountingComm()


def sliced_collectives() -> list[dict[str, Any]]:
    import scopedmetrics as sm
    from scopedmetrics.reducers import Collective
    from scopedmetrics.wrappers import Sliced

    d = _inputs()
    rows = []
    for _, name, metric, _, names in _families():
        def body(rank: int, wrap: bool, metric: Any = metric, names: tuple[str, ...] = names) -> list[str]:
            batch = [d[k][rank::2] for k in names]
            m = Sliced(metric, 1000) if wrap else metric
            kw = {"slice_ids": torch.arange(batch[0].shape[0]) % 1000} if wrap else {}
            m = m.update(*batch, **kw)
            counting = _counting(sm.get_reducer().comm)  # type: ignore[union-attr]
            with sm.use_reducer(Collective(counting)):
                m.compute()
            return list(counting.calls)

        one = sm.simulate(lambda r: body(r, False), 2)[0]
        many = sm.simulate(lambda r: body(r, True), 2)[0]
        state = sum(t.numel() * t.element_size() for t in Sliced(metric, 1000).state_dict().values())
        rows.append({"metric": name, "one_metric": len(one), "sliced_1000": len(many), "calls_1000": many,
                     "sliced_state_bytes": state})
    return rows


def _bootstrap_worker(rank: int, port: int, iters: int, out: Any) -> None:
    try:
        import os

        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import sync  # the torch.distributed call counter of benchmarks/sync.py
        import torch.distributed as dist
        import torchmetrics

        import scopedmetrics as sm
        from scopedmetrics.wrappers import BootStrapper

        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
        counting = sync.Counting()
        d = _inputs(seed=rank)
        torch.manual_seed(rank)
        ours = BootStrapper(sm.MeanSquaredError(), num_bootstraps=BOOTSTRAPS).update(
            d["x"], d["y"], sample_ids=torch.arange(BATCH) + rank * BATCH)
        theirs = torchmetrics.wrappers.BootStrapper(torchmetrics.MeanSquaredError(), num_bootstraps=BOOTSTRAPS)
        theirs.update(d["x"], d["y"])

        def tm_compute() -> Any:
            theirs._computed = None
            for m in theirs.metrics:
                m._computed = None
            return theirs.compute()

        times: dict[str, list[float]] = {"sm": [], "tm": []}
        calls: dict[str, dict[str, int]] = {}
        for i in range(iters + 1):
            for impl, fn in (("sm", ours.compute), ("tm", tm_compute)):
                dist.barrier()
                elapsed, used, _ = counting.measure(fn)
                if i:
                    times[impl].append(elapsed)
                calls[impl] = used
        out.put((rank, True, {"times": times, "calls": calls}))
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - reported by the parent
        out.put((rank, False, traceback.format_exc()))


def bootstrap_collectives(iters: int) -> list[dict[str, Any]]:
    import sync

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = sync._free_port()
    procs = [ctx.Process(target=_bootstrap_worker, args=(r, port, iters, out), daemon=True) for r in range(2)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    try:
        while len(results) < 2:
            rank, ok, value = out.get(timeout=300)
            if not ok:
                raise RuntimeError(f"rank {rank} failed:\n{value}")
            results[rank] = value
    except queue.Empty:
        raise TimeoutError("bootstrap world hung") from None
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    rows = []
    for impl in ("sm", "tm"):
        slowest = [max(a, b) for a, b in zip(results[0]["times"][impl], results[1]["times"][impl])]
        calls = results[0]["calls"][impl]
        rows.append({"impl": impl, "collectives": sum(calls.values()), "by_kind": calls,
                     "median_ms": statistics.median(slowest) * 1e3, "iterations": len(slowest)})
    return rows


# -- main -------------------------------------------------------------------------------------------


def main() -> None:
    args = _common.parser(__doc__, repeat=7).parse_args()
    _common.setup(args)
    start = time.perf_counter()
    print(f"wrappers: batch {BATCH}, slices {SLICES}, median of {args.repeat} repeats", flush=True)
    updates = update_rows(args)
    print()
    body = [[r["metric"], r["slices"], r["impl"], r["median_us"], r["x_unsliced"]] for r in updates]
    print(_common.table(["metric", "slices", "implementation", "median µs / update", "x unsliced sm"], body,
                        digits=[0, 0, 0, 1, 2]))
    keyed = keyed_rows(args) if not args.only or args.only in "Mean" else []
    if keyed:
        print()
        print(_common.table(["metric", "keys", "implementation", "median µs / update", "x fixed slices"],
                            [[r["metric"], r["keys"], r["impl"], r["median_us"], r["x_fixed"]] for r in keyed],
                            digits=[0, 0, 0, 1, 2]))
    sliced = sliced_collectives()
    print()
    print(_common.table(
        ["metric", "collectives, one metric", "collectives, Sliced(1000)", "Sliced(1000) state bytes"],
        [[r["metric"], r["one_metric"], r["sliced_1000"], r["sliced_state_bytes"]] for r in sliced],
        digits=[0, 0, 0, 0]))
    print("\nBootStrapper(MeanSquaredError(), num_bootstraps=100): one compute() in 2 gloo processes", flush=True)
    boot = bootstrap_collectives(iters=3 if args.quick else 10)
    print(_common.table(["implementation", "collectives", "which", "median ms"],
                        [[r["impl"], r["collectives"], ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items())),
                          r["median_ms"]] for r in boot], digits=[0, 0, 0, 2]))
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if args.only:
        args.no_save = True  # a partial table must not overwrite the full results
    _common.save("wrappers", {
        "machine": _common.machine(),
        "config": {"batch": BATCH, "slices": SLICES, "classes": C, "bootstraps": BOOTSTRAPS, "repeat": args.repeat,
                   "quick": args.quick},
        "updates": updates,
        "keyed_updates": keyed,
        "sliced_collectives": sliced,
        "bootstrap_collectives": boot,
    }, args)


if __name__ == "__main__":
    main()
