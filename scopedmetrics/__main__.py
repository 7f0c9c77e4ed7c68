"""``python -m scopedmetrics demo``: the command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Dispatch the sub-command (only ``demo`` for now)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help") or args[0] != "demo":
        print("usage: python -m scopedmetrics demo [--backend {threads,gloo}] [--seed N]")
        return 0 if args and args[0] in ("-h", "--help") else 2
    from scopedmetrics.demo import main as demo

    return demo(args[1:])


if __name__ == "__main__":
    sys.exit(main())
