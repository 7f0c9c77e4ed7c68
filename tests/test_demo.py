"""``python -m scopedmetrics demo``: threads in-process, and real gloo processes."""

from __future__ import annotations

import subprocess
import sys

from scopedmetrics.demo import main


def test_demo_with_threads_passes(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "PASS: 18 values checked" in out
    assert "mean of per-rank RMSEs" in out


def test_demo_with_gloo_processes_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scopedmetrics", "demo", "--backend", "gloo"],
        capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: 18 values checked" in done.stdout


def test_unknown_command_prints_usage() -> None:
    done = subprocess.run([sys.executable, "-m", "scopedmetrics", "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage" in done.stdout
