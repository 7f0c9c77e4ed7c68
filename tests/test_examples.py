"""The scripts in examples/ run: torchrun with gloo processes always; Lightning and Ignite when installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

import scopedmetrics as sm

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def load(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_torchrun_eval_with_two_gloo_processes() -> None:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(EXAMPLES / "torchrun_eval.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "2 ranks, shard sizes [667, 333]" in out
    # overall, two single-rank tasks, one node: each matches one process on the same rows
    assert out.count("[matches one process]") == 4, out
    assert out.rstrip().endswith("PASS"), out


def test_the_device_check_script_passes_on_two_gloo_processes() -> None:
    """``benchmarks/device_check.py`` (run on a GPU with NCCL when one is lent) keeps working: its CPU run."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         str(ROOT / "benchmarks" / "device_check.py"), "--device", "cpu", "--repeat", "3", "--no-save"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for check in ("sync", "async", "root", "subgroup"):
        assert f"{check}: ok" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("PASS"), done.stdout


def test_torchrun_eval_shards_cover_the_data_once() -> None:
    ex = load("torchrun_eval")
    for world in (1, 2, 3, 4, 7):
        bounds = [ex.shard_bounds(r, world) for r in range(world)]
        assert bounds[0][0] == 0 and bounds[-1][1] == ex.SAMPLES
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        if world >= 3:
            assert bounds[-1][0] == bounds[-1][1], "the last rank gets no data"


def test_per_language_asr_with_four_gloo_processes() -> None:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
         str(EXAMPLES / "per_language_asr.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "4 ranks (gloo processes), shard sizes [40, 80, 120, 160]" in out, out
    assert out.count("[matches one process]") == 4, out  # every language, each seen by only some ranks
    assert out.rstrip().endswith("PASS"), out


def test_per_language_asr_in_a_simulated_world() -> None:
    ex = load("per_language_asr")
    data = ex.make_data()
    values = sm.simulate(lambda rank: ex.rank_values(data, rank, ex.WORLD), world_size=ex.WORLD)
    assert all(v == values[0] for v in values)
    assert set(values[0]) == set(ex.LANGUAGES)
    langs = data["lang"].tolist()
    bounds = [ex.shard_bounds(r, ex.WORLD) for r in range(ex.WORLD)]
    assert any(any(k not in langs[lo:hi] for lo, hi in bounds) for k in range(len(ex.LANGUAGES)))  # a rank lacks one
    for lang, got in values[0].items():
        truth = ex.one_process(data, lang)
        assert got == pytest.approx(truth, rel=1e-5), lang
    assert values[0]["sw"]["wer"] > values[0]["en"]["wer"]  # the toy recogniser is worse on sw, as set up


_LIGHTNING = any(importlib.util.find_spec(name) is not None for name in ("lightning", "pytorch_lightning"))
needs_lightning = pytest.mark.skipif(not _LIGHTNING, reason="neither lightning nor pytorch_lightning is installed")
needs_ignite = pytest.mark.skipif(importlib.util.find_spec("ignite") is None, reason="pytorch-ignite is not installed")


def run_script(name: str, *args: str) -> str:
    """Run ``examples/<name>.py`` (it starts its own processes); its output, which must end with PASS."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_PORT", "MASTER_ADDR", "RANK", "WORLD_SIZE")}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=path, MASTER_ADDR="127.0.0.1")
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("PASS"), done.stdout + done.stderr
    return done.stdout + done.stderr


@needs_lightning
def test_lightning_logs_the_computed_dict() -> None:
    ex = load("lightning_logging")
    model, logged, _ = ex.run(max_epochs=1)
    assert {"val/loss", "val/accuracy", "val/macro_f1", "val/recall_0", "val/recall_2"} <= logged.keys()
    # what was logged is the metric of the whole validation set under the final weights
    truth = ex.one_process(model)
    for key, value in truth.items():
        assert float(logged[key]) == pytest.approx(value, rel=1e-6, abs=1e-7), key


@needs_lightning
def test_lightning_ddp_with_two_processes_logs_the_one_process_value() -> None:
    out = run_script("lightning_logging", "--devices", "2", "--max-epochs", "1")
    assert "2 processes, 201 validation samples" in out
    assert out.count(" ok") == 6 and "MISMATCH" not in out, out
    assert "sync_dist=True" not in out  # the value is global already: the notice is silenced on purpose


@needs_ignite
def test_ignite_engine_fills_state_metrics() -> None:
    ex = load("ignite_engine")
    model = ex.make_model()
    batches = ex.make_batches()
    state = ex.make_evaluator(model).run(batches, max_epochs=2)  # the second epoch starts from a reset
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    assert torch.allclose(state.metrics["accuracy"], (pred == y).float().mean())
    assert int(state.metrics["confusion"].sum()) == len(y)


@needs_ignite
def test_ignite_engine_under_idist_parallel_with_two_gloo_processes() -> None:
    from worlds import free_port

    out = run_script("ignite_engine", "--nproc", "2", "--port", str(free_port()))
    assert "2 processes, 301 of 301 samples counted once" in out, out
    assert out.count("[matches one process]") == 3, out
