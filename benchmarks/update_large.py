"""Per-update cost on large batches (10^6 samples; multiclass scores are 10^6 x 10): ratio to the torch floor.

Run: ``python benchmarks/update_large.py`` (``--quick`` for a noisier, faster pass).
Prints a Markdown table and writes ``benchmarks/results/update_large.json``.
"""

from __future__ import annotations

import _common
import _updates

BATCH = 1_000_000


def main() -> None:
    args = _common.parser(__doc__, repeat=9).parse_args()
    _common.setup(args)
    number = 1 if args.quick else 3
    print(f"update_large: batch {BATCH}, {number} updates per repeat, median of {args.repeat} repeats")
    rows = _updates.run(BATCH, number, args.repeat, args.only)
    for r in rows:  # milliseconds read better here
        for k in ("floor", "sm", "tm"):
            r[f"{k}_ms"] = r[f"{k}_us"] / 1000
    print()
    print(_updates.render(rows))
    if args.only:
        args.no_save = True  # a partial table must not overwrite the full results
    _common.save("update_large", {
        "machine": _common.machine(),
        "config": {"batch": BATCH, "classes": _updates.C, "thresholds": _updates.T, "number": number,
                   "repeat": args.repeat},
        "rows": rows,
    }, args)


if __name__ == "__main__":
    main()
