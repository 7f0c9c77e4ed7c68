"""PyTorch-Ignite, 2 gloo processes under ``idist.Parallel``: the evaluator's values equal one process's.

The processes are spawned by Ignite from ``tests/integration/ignite_gloo.py``
(its own ``__main__``), run here under ``subprocess``. It runs whenever
pytorch-ignite is installed (CI installs it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from integration.launch import ROOT, launch, load
from worlds import free_port

import scopedmetrics as sm

SCRIPT = ROOT / "tests" / "integration" / "ignite_gloo.py"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ignite") is None, reason="pytorch-ignite is not installed (CI installs it)"
)


def test_idist_parallel_evaluation_gives_the_one_process_value(tmp_path: Path) -> None:
    launch(SCRIPT, str(tmp_path), str(free_port()))
    ex = load(SCRIPT)
    with sm.use_reducer(sm.local()):
        truth = {k: float(v) for k, v in ex.make_metrics().update(*ex.make_data().tensors).compute().items()}
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for report in reports:
        assert report["world"] == 2 and report["shuffled"]
        assert report["naive"] == 102.0 and report["counted"] == 101.0  # the sampler's repeat, left out
        assert report["metrics"] == pytest.approx(truth, rel=1e-6, abs=1e-7)
    assert torch.tensor(reports[0]["metrics"]["acc"]) == torch.tensor(reports[1]["metrics"]["acc"])
