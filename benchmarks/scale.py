"""Reduction at scale: collective calls, bytes and host tensor operations per rank, measured and modelled.

Four cases, each as a scopedmetrics tree and as its TorchMetrics equivalent:

- **A** the 10-metric collection of ``benchmarks/sync.py`` (per-class counts, a
  confusion matrix, sums and means, an exact BinaryAUROC of 10,000 samples per rank);
- **B** 100 small metrics (Sum, Mean, Max, Min, MeanSquaredError), each fed its own data;
- **C** one 1,000-class confusion matrix (8 MB of int64 counts);
- **D** one binned BinaryAUROC with 10,000 thresholds.

Measured: every ``torch.distributed`` call is wrapped and its input bytes
recorded (real gloo processes on 127.0.0.1), and every torch operation of one
``compute()`` on rank 0 is counted (``TorchFunctionMode``; attribute reads
left out). In ``sm.simulate`` the same is measured for scopedmetrics at sizes
gloo cannot reach on this machine (TorchMetrics cannot be simulated).

Modelled (assumptions written in ``NETWORKS``): each measured call costs
``steps * alpha + bytes * beta`` with ring or tree schedules, plus host work
at ``HOST_OP_US`` per counted operation; TorchMetrics' host operations are
fitted as ``a + b * P`` over the measured sizes (it trims every peer's tensor
in Python), ours are taken at the largest size measured (they do not grow).
A count of operations misses the Python around them (and charges a storage
pointer read like a kernel), so ours are also modelled with the host time
``loopback_host`` measures: rank 0 of a world of P alone in one process, its
thread CPU time outside the collectives (threads of ``simulate`` and processes
of gloo share this machine's two cores, which inflates theirs).

Run: ``python benchmarks/scale.py`` (``--quick``: gloo at 2 and 4 only).
Prints Markdown tables and writes ``benchmarks/results/scale.json``.
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import _common
import sync as sync_bench
import torch

SMALL = 100
CLASSES = 1000
THRESHOLDS = 10_000
HOST_OP_US = 2.0  # microseconds per host tensor operation (dispatch of a small op on a recent CPU)
HOST_REPEAT = 7  # computes whose host time ``loopback_host`` measures (median)

NETWORKS = {
    # alpha: seconds per message step; beta: seconds per byte on the slowest link of the schedule.
    "intra-node (NVLink, 8 GPUs)": {"alpha": 2e-6, "beta": 1 / 150e9},
    "inter-node (InfiniBand 200 Gb/s per GPU)": {"alpha": 6e-6, "beta": 1 / 25e9},
}


# -- the four cases -----------------------------------------------------------------


def sm_case(case: str, rank: int) -> Any:
    """The scopedmetrics tree of ``case`` updated with ``rank``'s data."""
    import scopedmetrics as sm
    from scopedmetrics import classification as smc
    from scopedmetrics import regression as smr

    g = torch.Generator().manual_seed(99 + rank)
    if case == "A":
        return sync_bench._sm_collection(sync_bench._data(rank))
    if case == "B":
        kinds = (sm.Sum, sm.Mean, sm.Max, sm.Min)
        out: dict[str, Any] = {}
        for i in range(SMALL):
            x = torch.randn(8, generator=g)
            out[f"m{i}"] = smr.MeanSquaredError().update(x, x * 0.5) if i % 5 == 4 else kinds[i % 5]().update(x)
        return out
    if case == "C":
        labels = torch.randint(0, CLASSES, (4096,), generator=g)
        return smc.MulticlassConfusionMatrix(CLASSES).update(torch.randint(0, CLASSES, (4096,), generator=g), labels)
    scores = torch.rand(4096, generator=g)
    return smc.BinaryAUROC(thresholds=THRESHOLDS).update(scores, torch.randint(0, 2, (4096,), generator=g))


def tm_case(case: str, rank: int) -> list[Any]:
    """The TorchMetrics metrics of ``case`` (a list; a MetricCollection for A), updated alike."""
    import torchmetrics
    from torchmetrics import classification as tmc

    g = torch.Generator().manual_seed(99 + rank)
    if case == "A":
        return [sync_bench._tm_collection(sync_bench._data(rank))]
    if case == "B":
        kinds = (torchmetrics.SumMetric, torchmetrics.MeanMetric, torchmetrics.MaxMetric, torchmetrics.MinMetric)
        out = []
        for i in range(SMALL):
            x = torch.randn(8, generator=g)
            m = torchmetrics.MeanSquaredError() if i % 5 == 4 else kinds[i % 5]()
            m.update(x, x * 0.5) if i % 5 == 4 else m.update(x)
            out.append(m)
        return out
    if case == "C":
        labels = torch.randint(0, CLASSES, (4096,), generator=g)
        m = tmc.MulticlassConfusionMatrix(CLASSES)
        m.update(torch.randint(0, CLASSES, (4096,), generator=g), labels)
        return [m]
    m = tmc.BinaryAUROC(thresholds=THRESHOLDS)
    m.update(torch.rand(4096, generator=g), torch.randint(0, 2, (4096,), generator=g))
    return [m]


def sm_compute(tree: Any) -> Any:
    import scopedmetrics as sm

    return sm.compute(tree)


def tm_compute(ms: list[Any]) -> Any:
    out = []
    for m in ms:
        if hasattr(m, "values"):
            out.append(sync_bench._tm_compute(m))
        else:
            m._computed = None
            out.append(m.compute())
    return out


# -- counting ------------------------------------------------------------------------


class HostOps:
    """Counts torch operations (attribute reads aside) while active, in this thread."""

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode

        counter = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                counter.n += getattr(func, "__name__", "") != "__get__"
                return func(*args, **(kwargs or {}))

        self.n = 0
        self.mode = Mode()

    def count(self, fn: Any) -> int:
        self.n = 0
        with self.mode:
            fn()
        return self.n


class CommLog:
    """A simulated rank's communicator that logs its calls as ``sync.Counting`` does."""

    def __init__(self, inner: Any, log: list[tuple[str, int]]) -> None:
        from scopedmetrics.comm import Comm

        class Logged(Comm):
            rank, size, timeout = inner.rank, inner.size, inner.timeout

            def all_gather(self, t: torch.Tensor) -> list[torch.Tensor]:
                log.append(("all_gather", t.numel() * t.element_size()))
                return inner.all_gather(t)

            def all_gather_into(self, t: torch.Tensor) -> torch.Tensor:
                log.append(("all_gather", t.numel() * t.element_size()))
                return inner.all_gather_into(t)

            def all_reduce(self, t: torch.Tensor, op: str) -> torch.Tensor:
                log.append(("all_reduce", t.numel() * t.element_size()))
                return inner.all_reduce(t, op)

            def subcomm(self, members: list[int]) -> Comm:
                return inner.subcomm(members)

        self.comm = Logged()


def loopback_host(size: int, case: str) -> float:
    """Rank 0's host seconds of one ``compute()`` of ``case`` in a world of ``size``, alone in this process.

    The communicator echoes: every peer holds rank 0's state, gathers stack copies of it
    and reductions return it, so the exchange takes the plan of ``size`` ranks (fingerprints
    agree) with no other process or thread on the CPU. Host time is this thread's CPU time
    less the time inside the echoing calls (median of ``HOST_REPEAT`` computes); unlike a
    count of operations it includes the Python around them.
    """
    import scopedmetrics as sm
    from scopedmetrics.comm import Comm
    from scopedmetrics.reducers import Collective

    inside = [0.0]

    def timed(call: Callable[[], Any]) -> Any:
        start = time.thread_time()
        try:
            return call()
        finally:
            inside[0] += time.thread_time() - start

    class Echo(Comm):
        rank, timeout = 0, 60.0

        def __init__(self) -> None:
            self.size = size

        def all_gather(self, t: torch.Tensor) -> list[torch.Tensor]:
            return timed(lambda: [t.clone() for _ in range(size)])

        def all_gather_into(self, t: torch.Tensor) -> torch.Tensor:
            return timed(lambda: t.unsqueeze(0).repeat(size, *([1] * t.ndim)))

        def all_reduce(self, t: torch.Tensor, op: str) -> torch.Tensor:
            return timed(lambda: t.clone())

        def subcomm(self, members: list[int]) -> Comm:
            raise NotImplementedError

    tree = sm_case(case, 0)
    with sm.use_reducer(Collective(Echo())):
        sm_compute(tree)  # warm
        samples = []
        for _ in range(HOST_REPEAT):
            spent, start = inside[0], time.thread_time()
            sm_compute(tree)
            samples.append(time.thread_time() - start - (inside[0] - spent))
    return statistics.median(samples)


def sent_bytes(log: list[tuple[str, int]], p: int) -> float:
    """Bytes one rank sends for ``log`` under ring schedules (all_gather: (P-1)n; all_reduce: 2(P-1)/P n)."""
    total = 0.0
    for kind, n in log:
        total += (p - 1) * n if kind == "all_gather" else 2 * (p - 1) / p * n if kind == "all_reduce" else n
    return total


# -- measuring -------------------------------------------------------------------------


def _gloo_rank(rank: int, size: int, cases: list[str]) -> dict[str, Any]:
    calls = sync_bench.Counting()
    ops = HostOps()
    out: dict[str, Any] = {}
    for case in cases:
        ours, theirs = sm_case(case, rank), tm_case(case, rank)
        sm_compute(ours), tm_compute(theirs)  # warm: groups, caches
        run_sm, run_tm = functools.partial(sm_compute, ours), functools.partial(tm_compute, theirs)
        out[case] = {
            "sm_calls": calls.record(run_sm),
            "tm_calls": calls.record(run_tm),
            "sm_ops": ops.count(run_sm),
            "tm_ops": ops.count(run_tm),
        }
    return out


def gloo(size: int, cases: list[str]) -> dict[str, Any]:
    """Rank 0's measurements in a real gloo world of ``size`` processes."""
    return sync_bench.run_world(size, _gloo_rank, cases, timeout=900)[0]


def simulated(size: int, case: str) -> dict[str, Any]:
    """scopedmetrics alone in ``sm.simulate``: rank 0's calls and host operations."""
    import scopedmetrics as sm
    from scopedmetrics.reducers import Collective

    def body(rank: int) -> Any:
        tree = sm_case(case, rank)
        log: list[tuple[str, int]] = []
        with sm.use_reducer(Collective(CommLog(sm.get_reducer().comm, log).comm)):
            sm_compute(tree)
            log.clear()
            if rank:
                sm_compute(tree)
                sm_compute(tree)
                return None
            sm_compute(tree)
            calls = list(log)
            ops = HostOps().count(lambda: sm_compute(tree))
        return {"sm_calls": calls, "sm_ops": ops}

    return sm.simulate(body, size, timeout=600)[0]


# -- the model -------------------------------------------------------------------------


def call_seconds(kind: str, nbytes: int, p: int, net: dict[str, float], schedule: str) -> float:
    """One call's modelled latency: ring or tree all_reduce, ring all_gather (what NCCL offers)."""
    a, b = net["alpha"], net["beta"]
    if kind == "all_reduce":
        if schedule == "tree":
            return 2 * math.ceil(math.log2(max(p, 2))) * a + 2 * nbytes * b
        return 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes * b
    return (p - 1) * a + (p - 1) * nbytes * b


def modelled(log: list[tuple[str, int]], ops: float, p: int, net: dict[str, float], schedule: str) -> float:
    return sum(call_seconds(k, n, p, net, schedule) for k, n in log) + ops * HOST_OP_US * 1e-6


def fit_linear(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares ``a + b * P`` through (P, value) points."""
    n = len(points)
    mx = sum(p for p, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((p - mx) ** 2 for p, _ in points)
    b = sum((p - mx) * (v - my) for p, v in points) / var if var else 0.0
    return my - b * mx, b


def main() -> None:
    p = _common.parser(__doc__)
    p.add_argument("--gloo", default="2,4,8,16", help="gloo world sizes, comma-separated (default 2,4,8,16)")
    p.add_argument("--simulate", default="4,16,32,64,256", help="simulated sizes for case B (A, C, D up to 64)")
    args = p.parse_args()
    _common.setup(args)
    cases = ["A", "B", "C", "D"]
    gloo_sizes = [2, 4] if args.quick else [int(s) for s in args.gloo.split(",")]
    sim_sizes = [4, 32] if args.quick else [int(s) for s in args.simulate.split(",")]
    measured: dict[int, Any] = {}
    for size in gloo_sizes:
        print(f"gloo world of {size} ...", flush=True)
        measured[size] = gloo(size, cases)
    sims: dict[tuple[int, str], Any] = {}
    for size in sim_sizes:
        for case in cases:
            if case == "B" or size <= 64:
                print(f"simulate {size}, case {case} ...", flush=True)
                sims[size, case] = simulated(size, case)

    hosts = {(size, case): loopback_host(size, case) for (size, case) in sims}
    rows = []
    for size in gloo_sizes:
        for case in cases:
            r = measured[size][case]
            rows.append(
                [
                    f"gloo {size}",
                    case,
                    len(r["sm_calls"]),
                    len(r["tm_calls"]),
                    sent_bytes(r["sm_calls"], size) / 1e3,
                    sent_bytes(r["tm_calls"], size) / 1e3,
                    r["sm_ops"],
                    r["tm_ops"],
                    "-",
                ]
            )
    for (size, case), r in sims.items():
        rows.append(
            [
                f"simulate {size}",
                case,
                len(r["sm_calls"]),
                "-",
                sent_bytes(r["sm_calls"], size) / 1e3,
                "-",
                r["sm_ops"],
                "-",
                hosts[size, case] * 1e3,
            ]
        )
    print()
    print("Measured (rank 0 of one compute(); bytes sent per rank under ring schedules; host ms: loopback_host):")
    print(
        _common.table(
            ["world", "case", "sm calls", "tm calls", "sm kB sent", "tm kB sent", "sm host ops", "tm host ops",
             "sm host ms"],
            rows,
            digits=[0, 0, 0, 0, 1, 1, 0, 0, 2],
        )
    )

    big = max(gloo_sizes)
    sim_big = max(s for s, c in sims if c == "B")
    model_rows = []
    for case in cases:
        at = max(s for s, c in sims if c == case)
        ours = sims.get((at, case))
        ours_log = ours["sm_calls"] if ours else measured[big][case]["sm_calls"]
        ours_ops = ours["sm_ops"] if ours else measured[big][case]["sm_ops"]
        ours_host = hosts[at, case]
        theirs_log = measured[big][case]["tm_calls"]
        a, b = fit_linear([(s, measured[s][case]["tm_ops"]) for s in gloo_sizes])
        for world in (64, 1024, 4096, 16384):
            for net_name, net in NETWORKS.items():
                if world > 8 and net_name.startswith("intra"):
                    continue
                sched = "tree"
                t_sm = modelled(ours_log, ours_ops, world, net, sched)
                t_tm = modelled(theirs_log, a + b * world, world, net, sched)
                t_host = modelled(ours_log, 0, world, net, sched) + ours_host
                model_rows.append(
                    [
                        case,
                        world,
                        net_name.split(" (")[0],
                        t_sm * 1e3,
                        t_tm * 1e3,
                        _common.ratio(t_sm * 1e3, t_tm * 1e3),
                        t_host * 1e3,
                    ]
                )
    print()
    print(
        f"Modelled (calls as measured: ours in the reduce plan at P={sim_big} simulated, TorchMetrics at gloo "
        f"P={big}; tree all_reduce, ring all_gather; {HOST_OP_US} us per host op; last column: ours with the "
        "host time measured by loopback_host instead):"
    )
    print(
        _common.table(
            ["case", "P", "network", "sm ms", "tm ms", "sm/tm", "sm ms, measured host"],
            model_rows,
            digits=[0, 0, 0, 3, 1, 4, 3],
        )
    )
    _common.save(
        "scale",
        {
            "machine": _common.machine(),
            "config": {
                "gloo_sizes": gloo_sizes,
                "simulated_sizes": sim_sizes,
                "networks": NETWORKS,
                "host_op_us": HOST_OP_US,
                "host_repeat": HOST_REPEAT,
                "small_metrics": SMALL,
                "classes": CLASSES,
                "thresholds": THRESHOLDS,
            },
            "measured_gloo": {str(k): v for k, v in measured.items()},
            "measured_simulate": {f"{k[0]}:{k[1]}": v for k, v in sims.items()},
            "loopback_host_s": {f"{k[0]}:{k[1]}": v for k, v in hosts.items()},
            "model": model_rows,
        },
        args,
    )


if __name__ == "__main__":
    sys.exit(main())
