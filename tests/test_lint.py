"""The code checks CI enforces: ruff on everything, mypy --strict on the package at the lowest Python we claim."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (it is part of the dev extra)")
    done = subprocess.run(["ruff", "check", "scopedmetrics", "tests", "benchmarks", "examples"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is part of the dev extra")
    lowest = re.search(r'requires-python = ">=([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)  # type: ignore[union-attr]
    assert lowest == "3.10"  # checked as the lowest version we claim, so a 3.11-only import cannot come back
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-version", lowest, "scopedmetrics"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
