"""Memory of BinaryAUROC over 10^7 samples (exact and binned), and the cost of a growing ``cat`` state.

Part 1 feeds 10^7 samples in batches of 10^5 to exact and binned BinaryAUROC
(scopedmetrics and TorchMetrics), each case in a fresh subprocess:

* retained: bytes of the state's storages after the last update (the storages
  the state tensors view, spare capacity of a growing buffer included);
* peak: the rise of the process's peak RSS (``resource.getrusage`` max RSS,
  reset through ``/proc/self/clear_refs`` where Linux allows it) above its RSS
  before the first update, once after the updates and once after ``compute()``;
* kept inputs: the bytes of the inputs an exact state must keep (float32
  scores and int64 labels: 12 bytes a sample), the yardstick for the ratio.

Part 2 times one update of 32 samples while a ``cat`` state already holds
10^3, 10^5 and 10^7 rows: scopedmetrics' ``append`` (amortized growth into
spare capacity), a whole ``BinaryAUROC.update``, TorchMetrics' list append,
and a naive ``torch.cat`` of the whole state (what growth costs without
amortization).

Run: ``python benchmarks/memory.py`` (``--quick``: part 2 with fewer calls).
Prints Markdown tables and writes ``benchmarks/results/memory.json``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import _common
import torch

SAMPLES = 10_000_000
BATCH = 100_000
THRESHOLDS = 100
ROWS_KEPT = (1_000, 100_000, 10_000_000)
APPEND = 32

CASES = ("sm-exact", "sm-binned", "sm-binned-1e5", "tm-exact", "tm-binned", "floor-exact")


# -- part 1: one case per subprocess ---------------------------------------------------


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # pragma: no cover - not Linux


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _storage_bytes(tensors: list[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def _case(name: str) -> dict[str, Any]:
    import optree
    import torchmetrics.classification as tmc

    import scopedmetrics as sm
    from scopedmetrics.classification import BinaryAUROC

    _common.setup()
    lib, mode, *small = name.split("-")
    samples = 100_000 if small else SAMPLES
    thresholds = None if mode == "exact" else THRESHOLDS
    if lib == "sm":
        metric: Any = BinaryAUROC(thresholds=thresholds)
    elif lib == "tm":
        metric = tmc.BinaryAUROC(thresholds=thresholds)
    else:
        metric = None
    g = torch.Generator().manual_seed(0)
    # warm up kernels and allocator paths on a tiny batch, then start from an empty state
    warm = (torch.rand(64, generator=g), torch.randint(0, 2, (64,), generator=g))
    if lib == "sm":
        metric.update(*warm).compute()
    elif lib == "tm":
        metric.update(*warm)
        metric.compute()
        metric.reset()
    del warm
    exact_reset = _reset_peak()
    base = _rss_kb()
    if lib == "floor":  # the kept inputs, preallocated: no growth, no copies
        preds = torch.empty(samples)
        target = torch.empty(samples, dtype=torch.long)
    for i in range(samples // BATCH):
        p = torch.rand(BATCH, generator=g)
        t = torch.randint(0, 2, (BATCH,), generator=g)
        if lib == "sm":
            metric = metric.update(p, t)
        elif lib == "tm":
            metric.update(p, t)
        else:
            preds[i * BATCH : (i + 1) * BATCH] = p
            target[i * BATCH : (i + 1) * BATCH] = t
    del p, t
    peak_update = _peak_kb() - base
    if lib == "sm":
        state = optree.tree_leaves(metric, namespace=sm.NAMESPACE)
    elif lib == "tm":
        state = []
        for attr in metric._defaults:
            v = getattr(metric, attr)
            state += list(v) if isinstance(v, list) else [v]
    else:
        state = [preds, target]
    retained = _storage_bytes(state)
    live = sum(t.numel() * t.element_size() for t in state)
    if lib == "floor":
        value = None
    else:
        value = float(metric.compute())
    peak_compute = _peak_kb() - base
    return {
        "case": name,
        "samples": samples,
        "batch": BATCH,
        "retained_bytes": retained,
        "state_bytes_in_use": live,
        "kept_input_bytes": samples * (4 + 8) if mode == "exact" else 0,
        "peak_update_bytes": peak_update * 1024,
        "peak_compute_bytes": peak_compute * 1024,
        "peak_reset_exact": exact_reset,
        "value": value,
    }


def part1() -> list[dict[str, Any]]:
    rows = []
    for name in CASES:
        print(f"  {name}: fresh subprocess, samples in batches of {BATCH:.0e} ...", flush=True)
        out = subprocess.run(
            [sys.executable, __file__, "--case", name], capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise RuntimeError(f"case {name} failed:\n{out.stderr}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


# -- part 2: the cost of one append as the state grows ------------------------------------


def part2(number: int, repeat: int) -> list[dict[str, Any]]:
    g = torch.Generator().manual_seed(1)
    p32 = torch.rand(APPEND, generator=g)
    t32 = torch.randint(0, 2, (APPEND,), generator=g)
    rows = []
    for kept in ROWS_KEPT:
        row = _growth(kept, torch.rand(kept, generator=g), torch.randint(0, 2, (kept,), generator=g), p32, t32,
                      number, repeat)
        rows.append(row)
        print(f"  {kept:>10} rows kept: " + ", ".join(f"{k} {row[k]:.1f} µs" for k in _GROWTH_KEYS), flush=True)
    return rows


_GROWTH_KEYS = ("sm append", "sm BinaryAUROC.update", "tm BinaryAUROC.update", "naive torch.cat")


def _growth(kept: int, big_p: torch.Tensor, big_t: torch.Tensor, p32: torch.Tensor, t32: torch.Tensor,
            number: int, repeat: int) -> dict[str, Any]:
    """µs per update of 32 samples while the state holds ``kept`` rows (refilled before each timed block)."""
    import torchmetrics.classification as tmc

    from scopedmetrics.classification import BinaryAUROC
    from scopedmetrics.state import append

    box: dict[str, Any] = {}

    def fresh_append() -> None:
        box["rows"] = append(torch.empty(0), big_p)  # a grown state: spare capacity 0.5x

    def fresh_sm() -> None:
        box["m"] = BinaryAUROC(validate_args=False).update(big_p, big_t)

    def fresh_tm() -> None:
        box["tm"] = tmc.BinaryAUROC(validate_args=False)
        box["tm"].update(big_p, big_t)

    def fresh_naive() -> None:
        box["naive"] = big_p.clone()

    def sm_append() -> None:
        box["rows"] = append(box["rows"], p32)

    def sm_update() -> None:
        box["m"] = box["m"].update(p32, t32)

    def naive() -> None:
        box["naive"] = torch.cat([box["naive"], p32])

    def tm_update() -> None:
        box["tm"].update(p32, t32)

    fns = {"sm append": sm_append, "sm BinaryAUROC.update": sm_update, "tm BinaryAUROC.update": tm_update}
    before = {"sm append": fresh_append, "sm BinaryAUROC.update": fresh_sm, "tm BinaryAUROC.update": fresh_tm}
    stats = _common.compare(fns, number, repeat, warmup=0, before=before)
    naive_n = max(3, min(number, 20_000_000 // max(kept, 1)))
    stats.update(_common.compare({"naive torch.cat": naive}, naive_n, repeat, warmup=0,
                                 before={"naive torch.cat": fresh_naive}))
    row: dict[str, Any] = {"rows_kept": kept, "appends_per_repeat": number, "naive_appends_per_repeat": naive_n}
    row.update({k: v["median_us"] for k, v in stats.items()})
    return row


def main() -> None:
    p = _common.parser(__doc__, repeat=7)
    p.add_argument("--case", choices=CASES, help=argparse_hidden())
    args = p.parse_args()
    if args.case:
        print(json.dumps(_case(args.case)))
        return
    _common.setup(args)
    print("part 1: BinaryAUROC memory over 10^7 samples")
    mem = part1()
    print("part 2: per-update cost of a growing cat state")
    grow = part2(300 if args.quick else 2000, args.repeat)
    body = []
    for r in mem:
        kept = r["kept_input_bytes"]
        body.append([r["case"], f"{r['samples']:.0e}", _size(r["retained_bytes"]), _size(r["state_bytes_in_use"]),
                     _size(kept) if kept else "-",
                     _common.ratio(r["retained_bytes"], kept) if kept else None,
                     _size(r["peak_update_bytes"]), _size(r["peak_compute_bytes"])])
    print()
    print(_common.table(["case", "samples", "retained", "in use", "kept inputs", "retained/kept",
                         "peak rise (updates)", "peak rise (+compute)"], body, digits=[0, 0, 0, 0, 0, 2, 0, 0]))
    print()
    keys = list(_GROWTH_KEYS)
    print(_common.table(["rows kept", *(f"{k} µs" for k in keys)],
                        [[r["rows_kept"], *(r[k] for k in keys)] for r in grow], digits=[0, 1, 1, 1, 1]))
    _common.save("memory", {
        "machine": _common.machine(),
        "config": {"samples": SAMPLES, "batch": BATCH, "thresholds": THRESHOLDS, "rows_kept": ROWS_KEPT,
                   "append_batch": APPEND, "repeat": args.repeat},
        "auroc_memory": mem,
        "cat_growth": grow,
    }, args)


def _size(n: float) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
