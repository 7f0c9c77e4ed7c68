"""Exact ``cat`` metrics over 4 gloo processes: compute everywhere, or on one rank and broadcast.

Each rank holds an exact ``BinaryAUROC`` and a ``RetrievalMAP`` over ``--rows``
of its own scores (default 500,000). Three ways to get the values on every
rank, each in a fresh world of processes: ``sm.compute(tree)`` (every rank
gathers and sorts all rows), ``sm.compute(tree, root=0)`` (rank 0 alone does),
and TorchMetrics' ``compute()`` (every rank gathers). Per rank: the rise of
peak RSS during the compute above the RSS before it, and the compute's
seconds; the values of the three are checked equal.

Run: ``python benchmarks/rooted.py`` (``--quick``: 100,000 rows).
Prints a Markdown table and writes ``benchmarks/results/rooted.json``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import _common

WORLD = 4
CASES = ("sm everywhere", "sm root=0", "tm")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _rank(rank: int, size: int, case: str, rows: int) -> dict[str, Any]:
    import torch

    _common.setup()
    g = torch.Generator().manual_seed(rank)
    scores, labels = torch.rand(rows, generator=g), torch.randint(0, 2, (rows,), generator=g)
    queries = torch.randint(0, rows // 50, (rows,), generator=g)
    if case == "tm":
        import torchmetrics.classification as tmc
        import torchmetrics.retrieval as tmr

        auroc, rmap = tmc.BinaryAUROC(), tmr.RetrievalMAP()
        auroc.update(scores, labels)
        rmap.update(scores, labels, indexes=queries)

        def compute() -> list[float]:
            return [float(auroc.compute()), float(rmap.compute())]
    else:
        import scopedmetrics as sm
        import scopedmetrics.retrieval as smr

        tree = [sm.BinaryAUROC().update(scores, labels), smr.RetrievalMAP().update(scores, labels, indexes=queries)]
        root = 0 if case == "sm root=0" else None

        def compute() -> list[float]:
            return [float(v) for v in sm.compute(tree, root=root)]

    import torch.distributed as dist

    dist.barrier()
    Path("/proc/self/clear_refs").write_text("5")  # peak RSS from here
    before = _status_kb("VmRSS")
    start = time.perf_counter()
    values = compute()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rise_mb": (_status_kb("VmHWM") - before) / 1024, "values": values}


def main() -> None:
    p = _common.parser(__doc__, repeat=1)
    p.add_argument("--rows", type=int, default=0, help="scores per rank (default 500,000; --quick 100,000)")
    args = p.parse_args()
    rows = args.rows or (100_000 if args.quick else 500_000)
    from sync import run_world

    results = {case: run_world(WORLD, _rank, case, rows, timeout=900) for case in CASES}
    ref = results["sm everywhere"][0]["values"]
    for case, per_rank in results.items():
        for r in per_rank:
            if any(abs(a - b) > 1e-6 for a, b in zip(r["values"], ref)):
                raise AssertionError(f"{case}: {r['values']} vs {ref}")
    body = []
    for case, per_rank in results.items():
        body.append([case, max(r["seconds"] for r in per_rank), per_rank[0]["peak_rise_mb"],
                     max(r["peak_rise_mb"] for r in per_rank[1:])])
    print(f"rooted: exact BinaryAUROC + RetrievalMAP, {rows:,} rows per rank, {WORLD} gloo ranks; values {ref}")
    print(_common.table(["case", "compute s (slowest rank)", "rank 0 peak rise MB", "other ranks' peak rise MB"],
                        body, digits=[0, 2, 0, 0]))
    _common.save("rooted", {"machine": _common.machine(), "config": {"world": WORLD, "rows": rows},
                            "results": results}, args)


if __name__ == "__main__":
    main()
