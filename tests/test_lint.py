"""The code checks CI enforces: ruff on everything, mypy --strict on the package."""

from __future__ import annotations

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
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "scopedmetrics"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
