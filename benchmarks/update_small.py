"""Per-update cost on small batches (32 samples, 10 classes): scopedmetrics vs TorchMetrics vs the torch floor.

Run: ``python benchmarks/update_small.py`` (``--quick`` for a noisier, faster pass).
Prints a Markdown table and writes ``benchmarks/results/update_small.json``.
"""

from __future__ import annotations

import _common
import _updates

BATCH = 32


def main() -> None:
    args = _common.parser(__doc__).parse_args()
    _common.setup(args)
    number = 300 if args.quick else 1500
    print(f"update_small: batch {BATCH}, {number} updates per repeat, median of {args.repeat} repeats")
    rows = _updates.run(BATCH, number, args.repeat, args.only)
    print()
    print(_updates.render(rows))
    if args.only:
        args.no_save = True  # a partial table must not overwrite the full results
    _common.save("update_small", {
        "machine": _common.machine(),
        "config": {"batch": BATCH, "classes": _updates.C, "thresholds": _updates.T, "number": number,
                   "repeat": args.repeat},
        "rows": rows,
    }, args)


if __name__ == "__main__":
    main()
