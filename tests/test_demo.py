"""``python -m scopedmetrics demo``: threads in-process, and real gloo processes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scopedmetrics import demo
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
    assert "4 gloo processes" in done.stdout  # the start-up progress, plain or rich


def test_demo_runs_where_numpy_is_not_installed() -> None:
    """The package needs torch and optree only; a fresh machine's torch wheel may come without numpy."""
    code = "import sys, runpy; sys.modules['numpy'] = None; sys.argv = ['scopedmetrics', 'demo']; " \
        "runpy.run_module('scopedmetrics', run_name='__main__')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: 18 values checked" in done.stdout


def test_unknown_command_names_it_and_the_known_ones() -> None:
    done = subprocess.run([sys.executable, "-m", "scopedmetrics", "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: python -m scopedmetrics" in done.stderr
    assert "invalid choice: 'nope' (choose from 'demo')" in done.stderr


def test_version_and_help_name_the_program() -> None:
    done = subprocess.run([sys.executable, "-m", "scopedmetrics", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("scopedmetrics ")
    done = subprocess.run([sys.executable, "-m", "scopedmetrics", "demo", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--backend" in done.stdout and "real processes on 127.0.0.1" in done.stdout


def test_plain_output_is_a_text_table(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--plain"]) == 0
    out = capsys.readouterr().out
    assert "scope      metric                reduced  one process  match" in out
    assert "node1      reg.pearson" in out
    assert "PASS: 18 values checked" in out


def test_rich_output_is_a_rich_table(capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("rich")
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "┃ scope" in out and "one process" in out
    assert "PASS: 18 values checked" in out


def test_without_rich_the_demo_falls_back_to_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import rich.console now raises ImportError
    assert isinstance(demo._output(plain=False), demo._Plain)


def test_plain_progress_reports_each_phase(capsys) -> None:  # type: ignore[no-untyped-def]
    with demo._Plain().progress(2) as event:
        for kind in ("started", "joined", "done"):
            event(kind, 0)
            event(kind, 1)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "starting 2 gloo processes on 127.0.0.1 ..."
    assert [line.split(" (")[0] for line in lines[1:]] == ["  all 2 started", "  all 2 joined", "  all 2 done"]
