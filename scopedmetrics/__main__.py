"""``python -m scopedmetrics`` (or the ``scopedmetrics`` console script): the command line."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import metadata


def _prog() -> str:
    """How the user called us: ``scopedmetrics`` for the console script, else ``python -m scopedmetrics``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "scopedmetrics" if name == "scopedmetrics" else "python -m scopedmetrics"


def _version() -> str:
    try:
        return metadata.version("scopedmetrics")
    except metadata.PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown (not installed)"


def parser() -> argparse.ArgumentParser:
    """The top-level parser: ``--version`` and the sub-commands."""
    prog = _prog()
    top = argparse.ArgumentParser(prog=prog, description="scopedmetrics: metrics reduced across processes.")
    top.add_argument("--version", action="version", version=f"scopedmetrics {_version()}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="a small end-to-end evaluation over uneven ranks, checked against one process",
        add_help=False,  # the demo parses its own options (and --help)
    )
    return top


def main(argv: list[str] | None = None) -> int:
    """Dispatch the sub-command; an unknown one is an error that lists the known ones."""
    args = sys.argv[1:] if argv is None else list(argv)
    top = parser()
    if args and args[0] == "demo":
        from scopedmetrics.demo import main as demo

        return demo(args[1:], prog=f"{_prog()} demo")
    if not args:
        top.print_help()
        return 2
    try:
        top.parse_args(args)  # --help and --version exit here
    except SystemExit as done:
        return int(done.code or 0)
    return 2


if __name__ == "__main__":
    sys.exit(main())
