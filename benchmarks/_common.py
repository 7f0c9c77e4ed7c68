"""Shared helpers of the benchmark scripts: timing, tables, JSON results, machine description.

Every timing is the median over ``repeat`` repeats of ``number`` calls, after a
warm-up, with one intra-op thread. Implementations compared in one table are
timed round-robin within each repeat (starting with a different one each
repeat), so a burst of load from another process on the machine hits all of
them alike instead of one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def setup(args: argparse.Namespace | None = None) -> None:
    """One intra-op thread everywhere, as the tables say; the clock the arguments ask for."""
    global CLOCK
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    if args is not None and getattr(args, "cpu_clock", False):
        CLOCK = time.process_time


def parser(doc: str | None, repeat: int = 9) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=repeat,
                   help=f"repeats per measurement (median taken; default {repeat})")
    p.add_argument("--quick", action="store_true", help="fewer calls per repeat, for development (noisier)")
    p.add_argument("--only", default="", help="run only the rows whose metric name contains this text")
    p.add_argument("--cpu-clock", action="store_true",
                   help="time with process CPU time instead of perf_counter (for noisy shared machines)")
    p.add_argument("--no-save", action="store_true", help="print only; do not write results/*.json")
    return p


CLOCK = time.perf_counter  # --cpu-clock switches to process CPU time (less sensitive to other load)


def time_calls(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call of ``fn`` over ``number`` calls."""
    clock = CLOCK
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def compare(
    fns: dict[str, Callable[[], Any]],
    number: int,
    repeat: int,
    warmup: int | None = None,
    before: dict[str, Callable[[], Any]] | None = None,
) -> dict[str, dict[str, float]]:
    """Median, min and max µs per call of each ``fn``, timed round-robin over ``repeat`` repeats.

    ``before[name]``, when given, runs (untimed) before each timed block of that name,
    e.g. to reset a growing state.
    """
    warmup = max(1, number // 5) if warmup is None else warmup
    before = before or {}
    for name, fn in fns.items():
        if name in before:
            before[name]()
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(repeat):
        for name in names[r % len(names):] + names[: r % len(names)]:  # rotate, so no one always goes first
            fn = fns[name]
            if name in before:
                before[name]()
            samples[name].append(time_calls(fn, number) * 1e6)
    return {
        name: {"median_us": statistics.median(s), "min_us": min(s), "max_us": max(s), "repeats": len(s)}
        for name, s in samples.items()
    }


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }
    try:
        import torchmetrics

        info["torchmetrics"] = torchmetrics.__version__
    except ImportError:  # pragma: no cover - the comparison needs it
        info["torchmetrics"] = None
    try:
        info["loadavg_at_start"] = os.getloadavg()
    except OSError:  # pragma: no cover - not on every platform
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def fmt(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if x != x:
            return "nan"
        return f"{x:.{digits}f}"
    return str(x)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: Sequence[int] | None = None) -> str:
    """A Markdown table (so the README can take it as printed)."""
    digits = digits or [1] * len(headers)
    cells = [[fmt(v, d) for v, d in zip(row, digits)] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    rule = "|" + "|".join(("-" * (w + 2)) for w in widths) + "|"
    text = [all(isinstance(row[i], (str, bool)) or row[i] is None for row in rows) for i in range(len(headers))]
    body = ["| " + " | ".join(c.ljust(w) if text[i] else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"
            for r in cells]
    return "\n".join([line, rule, *body])


def save(name: str, payload: dict[str, Any], args: argparse.Namespace | None = None) -> None:
    """Write ``results/<name>.json`` (unless ``--no-save``)."""
    if args is not None and args.no_save:
        return
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    tmp.replace(path)
    print(f"\nwrote {path.relative_to(RESULTS.parent.parent)}")


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b
