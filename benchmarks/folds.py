"""Whole-state merges at scale: the pairwise tree fold against the rank-order fold, and TorchMetrics.

Case E: four metrics that merge their whole state (Chan's moments):
``PearsonCorrCoef(num_outputs=2)``, ``R2Score``, ``ExplainedVariance`` and
``ConcordanceCorrCoef``, each rank with 64 rows of its own. One ``compute()``
of the four, on rank 0:

- in ``sm.simulate`` at P = 4 ... 256 (the rank-order fold to 64): host tensor operations (counted by
  ``TorchFunctionMode``) and the thread's CPU milliseconds, with the tree
  (``_kernels.folds``, from ``TREE_MIN`` ranks: states read from the gathered
  buffer by one indexing operation, ``ceil(log2 P)`` stacked merges) and with
  the fold it replaced (``TREE_MIN`` set past P: every peer's state unpacked
  and merged in rank order);
- in real gloo processes at P = 8: the same two, and TorchMetrics' four
  metrics (host operations and wall milliseconds per compute, median of 5).

Run: ``python benchmarks/folds.py`` (``--quick``: simulate to 64 only).
Prints Markdown tables and writes ``benchmarks/results/folds.json``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import _common
import torch
from scale import HostOps

ROWS = 64


def sm_tree(rank: int) -> dict[str, Any]:
    import scopedmetrics as sm

    g = torch.Generator().manual_seed(7 + rank)
    x = torch.randn(ROWS, 2, generator=g) * 3 + 50
    y = x * 0.5 + torch.randn(ROWS, 2, generator=g)
    return {"pearson": sm.PearsonCorrCoef(num_outputs=2).update(x, y), "r2": sm.R2Score().update(x[:, 0], y[:, 0]),
            "ev": sm.ExplainedVariance().update(x[:, 1], y[:, 1]),
            "ccc": sm.ConcordanceCorrCoef().update(x[:, 0], y[:, 1])}


def tm_metrics(rank: int) -> list[Any]:
    import torchmetrics.regression as tmr

    g = torch.Generator().manual_seed(7 + rank)
    x = torch.randn(ROWS, 2, generator=g) * 3 + 50
    y = x * 0.5 + torch.randn(ROWS, 2, generator=g)
    ms = [tmr.PearsonCorrCoef(num_outputs=2), tmr.R2Score(), tmr.ExplainedVariance(), tmr.ConcordanceCorrCoef()]
    for m, args in zip(ms, [(x, y), (x[:, 0], y[:, 0]), (x[:, 1], y[:, 1]), (x[:, 0], y[:, 1])]):
        m.update(*args)
    return ms


def _values(out: Any) -> list[float]:
    return [float(v) for v in torch.cat([torch.as_tensor(t).reshape(-1) for t in out])]


def _sm_compute(tree: dict[str, Any]) -> list[float]:
    import scopedmetrics as sm

    values = sm.compute(tree)
    return _values([values[k] for k in ("pearson", "r2", "ev", "ccc")])


def _tm_compute(ms: list[Any]) -> list[float]:
    out = []
    for m in ms:
        m._computed = None
        out.append(m.compute())
    return _values(out)


def _in_rank_order(on: bool) -> None:
    from scopedmetrics._kernels import folds

    folds.TREE_MIN = 1 << 30 if on else 8


def simulated(size: int, rank_order: bool) -> dict[str, Any]:
    import scopedmetrics as sm

    def body(rank: int) -> Any:
        tree = sm_tree(rank)
        _sm_compute(tree)  # warm
        if rank:
            _sm_compute(tree)
            _sm_compute(tree)
            return None
        start = time.thread_time()
        values = _sm_compute(tree)
        cpu = time.thread_time() - start
        ops = HostOps().count(lambda: _sm_compute(tree))
        return {"ops": ops, "cpu_ms": cpu * 1e3, "values": values}

    _in_rank_order(rank_order)
    try:
        return sm.simulate(body, size, timeout=900)[0]
    finally:
        _in_rank_order(False)


def _gloo_rank(rank: int, size: int) -> dict[str, Any]:
    import torch.distributed as dist

    _common.setup()
    out: dict[str, Any] = {}
    tree, theirs = sm_tree(rank), tm_metrics(rank)
    for name, fn in (("sm tree", lambda: _sm_compute(tree)), ("sm rank order", lambda: _sm_compute(tree)),
                     ("tm", lambda: _tm_compute(theirs))):
        _in_rank_order(name == "sm rank order")
        fn()
        ops = HostOps().count(fn)
        times = []
        for _ in range(5):
            dist.barrier()
            start = time.perf_counter()
            values = fn()
            times.append(time.perf_counter() - start)
        out[name] = {"ops": ops, "ms": 1e3 * statistics.median(times), "values": values}
    _in_rank_order(False)
    return out


def main() -> None:
    p = _common.parser(__doc__, repeat=1)
    p.add_argument("--gloo", type=int, default=8, help="gloo world size (default 8)")
    p.add_argument("--simulate", default="4,8,16,64,256", help="simulated sizes, comma-separated ('' for none)")
    p.add_argument("--rank-order-max", type=int, default=64,
                   help="largest simulated P for the rank-order fold (default 64: at 256 it takes minutes)")
    args = p.parse_args()
    _common.setup(args)
    sizes = [4, 8, 16, 64] if args.quick else [int(x) for x in args.simulate.split(",") if x]
    sims = {}
    for size in sizes:
        print(f"simulate {size} ...", flush=True)
        sims[size] = {"tree": simulated(size, False)}
        if size <= args.rank_order_max:
            sims[size]["rank order"] = simulated(size, True)
    rows = []
    for size, r in sims.items():
        tree, plain = r["tree"], r.get("rank order")
        if plain is None:
            rows.append([size, tree["ops"], "-", tree["cpu_ms"], "-", "-"])
            continue
        worst = max(abs(a - b) for a, b in zip(tree["values"], plain["values"]))
        rows.append([size, tree["ops"], plain["ops"], tree["cpu_ms"], plain["cpu_ms"], worst])
    print("\nsimulate, rank 0 of one compute() of case E:")
    print(_common.table(["P", "tree host ops", "rank-order host ops", "tree CPU ms", "rank-order CPU ms",
                         "largest value difference"], rows, digits=[0, 0, 0, 2, 2, 8]))

    from sync import run_world

    print(f"\ngloo {args.gloo} ...", flush=True)
    gloo = run_world(args.gloo, _gloo_rank, timeout=900)
    for r in gloo:
        for name in ("sm rank order", "tm"):
            worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(r["sm tree"]["values"], r[name]["values"]))
            if worst > 1e-3:  # TorchMetrics sums squares in float32: its R2 here is off by ~3e-4
                raise AssertionError(f"{name} differs from the tree fold by {worst}")
    r0 = gloo[0]
    body = [[name, r0[name]["ops"], max(r[name]["ms"] for r in gloo),
             _common.ratio(max(r[name]["ms"] for r in gloo), max(r["tm"]["ms"] for r in gloo))]
            for name in ("sm tree", "sm rank order", "tm")]
    print(f"\ngloo {args.gloo} processes, one compute() of case E (host ops on rank 0, ms: slowest rank's median):")
    print(_common.table(["case", "host ops", "ms", "/ tm"], body, digits=[0, 0, 2, 3]))
    _common.save(f"folds{'' if sims else '_gloo'}", {
        "machine": _common.machine(), "config": {"rows": ROWS, "simulated": sizes, "gloo": args.gloo},
        "simulate": {str(k): v for k, v in sims.items()}, "gloo": gloo}, args)


if __name__ == "__main__":
    main()
