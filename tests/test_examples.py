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


def test_torchrun_eval_shards_cover_the_data_once() -> None:
    ex = load("torchrun_eval")
    for world in (1, 2, 3, 4, 7):
        bounds = [ex.shard_bounds(r, world) for r in range(world)]
        assert bounds[0][0] == 0 and bounds[-1][1] == ex.SAMPLES
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
        if world >= 3:
            assert bounds[-1][0] == bounds[-1][1], "the last rank gets no data"


def test_lightning_logs_the_computed_dict() -> None:
    pytest.importorskip("lightning", reason="lightning is not installed (an optional example)")
    ex = load("lightning_logging")
    model, logged = ex.run(max_epochs=1)
    assert {"val/loss", "val/accuracy", "val/macro_f1", "val/recall_0", "val/recall_2"} <= logged.keys()
    # what was logged is the metric of the whole validation set under the final weights
    x = torch.cat([b[0] for b in ex.make_loader(200, seed=1)])
    y = torch.cat([b[1] for b in ex.make_loader(200, seed=1)])
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean()
    assert torch.allclose(logged["val/accuracy"], accuracy)


def test_ignite_engine_fills_state_metrics() -> None:
    pytest.importorskip("ignite", reason="pytorch-ignite is not installed (an optional example)")
    ex = load("ignite_engine")
    torch.manual_seed(0)
    model = torch.nn.Linear(4, ex.NUM_CLASSES)
    batches = ex.make_batches()
    state = ex.make_evaluator(model).run(batches, max_epochs=2)  # the second epoch starts from a reset
    x = torch.cat([b[0] for b in batches])
    y = torch.cat([b[1] for b in batches])
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    assert torch.allclose(state.metrics["accuracy"], (pred == y).float().mean())
    assert int(state.metrics["confusion"].sum()) == len(y)
