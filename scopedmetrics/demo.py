"""The end-to-end demo: a sharded evaluation whose reduced values match one process.

Four ranks (threads, or real gloo processes) get uneven shards of a generated
data set, one of them empty; each evaluates a collection of classification
and regression metrics, overall and per node (a ``subgroup``), and the values
are checked against the same metrics computed in one process on all the data.
With ``rich`` installed the results are a table, and the gloo start-up shows
a progress bar; ``--plain`` (or no ``rich``) prints plain text.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing as mp
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

import scopedmetrics as sm
from scopedmetrics.classification import MulticlassAccuracy, MulticlassAUROC, MulticlassF1Score
from scopedmetrics.regression import MeanSquaredError, PearsonCorrCoef, R2Score

NUM_CLASSES = 5
SHARDS = (700, 0, 420, 180)  # rank 1 sees no data


def make_data(seed: int, n: int) -> dict[str, torch.Tensor]:
    """A classification and a regression task over the same ``n`` samples."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    logits = torch.randn(n, NUM_CLASSES, generator=g) + 1.5 * torch.nn.functional.one_hot(target, NUM_CLASSES)
    y = torch.randn(n, generator=g) * 2 + 10
    y_hat = y + torch.randn(n, generator=g) * (0.3 + 0.3 * target.float())  # harder classes, noisier regression
    return {"logits": logits, "target": target, "y_hat": y_hat, "y": y}


def make_metrics() -> dict[str, sm.Collection]:
    """What each rank evaluates: two collections fed different inputs."""
    return {
        "cls": sm.Collection(
            accuracy=MulticlassAccuracy(num_classes=NUM_CLASSES),
            macro_f1=MulticlassF1Score(num_classes=NUM_CLASSES, average="macro"),
            auroc=MulticlassAUROC(num_classes=NUM_CLASSES),
        ),
        "reg": sm.Collection(rmse=MeanSquaredError(squared=False), r2=R2Score(), pearson=PearsonCorrCoef()),
    }


def evaluate(metrics: dict[str, sm.Collection], data: dict[str, torch.Tensor], batch: int = 64) -> dict[str, Any]:
    """Fold a shard in, batch by batch."""
    cls, reg = metrics["cls"], metrics["reg"]
    for i in range(0, data["target"].shape[0], batch):
        sl = slice(i, i + batch)
        cls = cls.update(data["logits"][sl], data["target"][sl])
        reg = reg.update(data["y_hat"][sl], data["y"][sl])
    return {"cls": cls, "reg": reg}


def bounds(rank: int) -> slice:
    """The rows of rank ``rank``'s shard."""
    start = sum(SHARDS[:rank])
    return slice(start, start + SHARDS[rank])


def node_of(rank: int) -> str:
    """The node of rank ``rank``: two ranks per node."""
    return "node0" if rank < 2 else "node1"


def rank_body(rank: int, seed: int) -> dict[str, Any]:
    """What every rank runs: evaluate its shard, reduce overall and per node."""
    data = make_data(seed, sum(SHARDS))
    shard = {k: v[bounds(rank)] for k, v in data.items()}
    metrics = evaluate(make_metrics(), shard)
    with sm.use_reducer(sm.local()):
        mine = float(metrics["reg"]["rmse"].compute()) if SHARDS[rank] else math.nan
    overall = sm.compute(metrics)  # every metric of both collections in one bucketed pass
    with sm.use_reducer(sm.subgroup(node_of(rank))):
        per_node = sm.compute(metrics)
    return {"overall": _floats(overall), "node": _floats(per_node), "rank_rmse": mine}


def _floats(values: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update(_floats(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = float(v)
    return out


def single_process(seed: int, ranks: list[int]) -> dict[str, float]:
    """The same metrics on the union of ``ranks``' shards, in one process."""
    data = make_data(seed, sum(SHARDS))
    rows = torch.cat([torch.arange(sum(SHARDS))[bounds(r)] for r in ranks])
    with sm.use_reducer(sm.local()):
        return _floats(sm.compute(evaluate(make_metrics(), {k: v[rows] for k, v in data.items()}, batch=10_000)))


def _gloo_worker(rank: int, world: int, port: int, seed: int, out: Any) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    out.put(("started", rank, None))  # the imports are done: the slow part of start-up
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        out.put(("joined", rank, None))
        out.put(("done", rank, rank_body(rank, seed)))
    finally:
        dist.destroy_process_group()


def run_gloo(world: int, seed: int, on_event: Callable[[str, int], None] | None = None) -> list[dict[str, Any]]:
    """``rank_body`` in ``world`` real processes joined by gloo on 127.0.0.1.

    ``on_event(kind, rank)`` is told when a rank's process has ``"started"``
    (imported torch: most of the wait), ``"joined"`` the process group, and is
    ``"done"``.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_gloo_worker, args=(r, world, port, seed, out)) for r in range(world)]
    for p in procs:
        p.start()
    results: dict[int, dict[str, Any]] = {}
    while len(results) < world:
        kind, rank, payload = out.get(timeout=300)
        if kind == "done":
            results[rank] = payload
        if on_event is not None:
            on_event(kind, rank)
    for p in procs:
        p.join()
    return [results[r] for r in range(world)]


Row = tuple[str, str, float, float, bool]  # scope, metric, reduced, one process, match


class _Plain:
    """Plain-text output: what the demo prints without ``rich``, or with ``--plain``."""

    def line(self, text: str = "", style: str | None = None) -> None:
        print(text, flush=True)

    @contextlib.contextmanager
    def progress(self, world: int) -> Iterator[Callable[[str, int], None]]:
        started = time.perf_counter()
        counts = {"started": 0, "joined": 0, "done": 0}

        def event(kind: str, rank: int) -> None:
            counts[kind] += 1
            if counts[kind] == world:
                print(f"  all {world} {kind} ({time.perf_counter() - started:.1f}s)", flush=True)

        print(f"starting {world} gloo processes on 127.0.0.1 ...", flush=True)
        yield event

    def table(self, rows: list[Row]) -> None:
        print(f"\n{'scope':<10} {'metric':<18} {'reduced':>10} {'one process':>12}  match")
        for scope, name, value, truth, ok in rows:
            print(f"{scope:<10} {name:<18} {value:>10.4f} {truth:>12.4f}  {'yes' if ok else 'NO'}")


class _Rich:
    """The same output through ``rich``: a table, and a progress bar while gloo starts."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(highlight=False)

    def line(self, text: str = "", style: str | None = None) -> None:
        self.console.print(text, style=style, markup=False, soft_wrap=True)

    @contextlib.contextmanager
    def progress(self, world: int) -> Iterator[Callable[[str, int], None]]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        counts = {"started": 0, "joined": 0, "done": 0}

        def describe() -> str:
            return f"gloo processes: {', '.join(f'{n} {k}' for k, n in counts.items())}"

        with Progress(*columns, console=self.console, transient=True) as bar:
            task = bar.add_task(describe(), total=3 * world)

            def event(kind: str, rank: int) -> None:
                counts[kind] += 1
                bar.update(task, advance=1, description=describe())

            yield event
        self.console.print(f"{world} gloo processes started, joined and evaluated", markup=False)

    def table(self, rows: list[Row]) -> None:
        from rich.table import Table

        table = Table(title="reduced across ranks vs one process on the same data", title_justify="left")
        table.add_column("scope")
        table.add_column("metric")
        table.add_column("reduced", justify="right")
        table.add_column("one process", justify="right")
        table.add_column("match", justify="center")
        for i, (scope, name, value, truth, ok) in enumerate(rows):
            first = i == 0 or rows[i - 1][0] != scope
            table.add_row(scope if first else "", name, f"{value:.4f}", f"{truth:.4f}",
                          "[green]yes[/green]" if ok else "[bold red]NO[/bold red]", end_section=(
                              i + 1 < len(rows) and rows[i + 1][0] != scope))
        self.console.print()
        self.console.print(table)


def _output(plain: bool) -> _Plain | _Rich:
    if not plain:
        try:
            return _Rich()
        except ImportError:
            pass
    return _Plain()


def main(argv: list[str] | None = None, prog: str = "python -m scopedmetrics demo") -> int:
    """Run the demo; exit status 0 when every reduced value matches one process."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument(
        "--backend",
        choices=["threads", "gloo"],
        default="threads",
        help="threads: one process, ranks as threads (sm.simulate); gloo: real processes on 127.0.0.1",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data set (default 0)")
    parser.add_argument("--plain", action="store_true", help="plain text output even when rich is installed")
    args = parser.parse_args(argv)
    out = _output(args.plain)
    world = len(SHARDS)
    started = time.perf_counter()
    out.line(f"scopedmetrics demo: {world} ranks ({args.backend}), shards of {list(SHARDS)} samples, "
             f"nodes {{0,1}} and {{2,3}}")
    if args.backend == "gloo":
        with out.progress(world) as event:
            results = run_gloo(world, args.seed, event)
    else:
        results = sm.simulate(lambda r: rank_body(r, args.seed), world)
    checks = [("all ranks", list(range(world)), results[0]["overall"])]
    for node in ("node0", "node1"):
        members = [r for r in range(world) if node_of(r) == node]
        checks.append((node, members, results[members[0]]["node"]))
    rows: list[Row] = []
    for scope, members, reduced in checks:
        truth = single_process(args.seed, members)
        for name, value in reduced.items():
            ok = math.isclose(value, truth[name], rel_tol=1e-4, abs_tol=1e-5)
            rows.append((scope, name, value, truth[name], ok))
    out.table(rows)
    failures = sum(not r[4] for r in rows)
    agree = all(r["overall"] == results[0]["overall"] for r in results)
    failures += not agree
    per_rank = [r["rank_rmse"] for r in results if not math.isnan(r["rank_rmse"])]
    out.line()
    out.line(f"mean of per-rank RMSEs (the usual mistake): {sum(per_rank) / len(per_rank):.4f}; "
             f"reduced RMSE: {results[0]['overall']['reg.rmse']:.4f}")
    out.line(f"every rank holds the same overall values: {'yes' if agree else 'NO'}")
    verdict = "PASS" if failures == 0 else f"FAIL ({failures} mismatches)"
    out.line(f"{verdict}: {len(rows)} values checked in {time.perf_counter() - started:.1f}s",
             style="bold green" if failures == 0 else "bold red")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
