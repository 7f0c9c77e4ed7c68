"""Lightning DDP, 2 CPU processes over gloo: validation of 101 samples is counted once, and resumes exactly.

``Trainer(strategy="ddp")`` launches its other process by running the script
again, so the Lightning side lives in ``tests/integration/lightning_ddp.py``
(its own ``__main__``) and runs here under ``subprocess``. It runs when
``lightning`` or ``pytorch_lightning`` is installed (CI installs it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from integration.launch import ROOT, launch, load

import scopedmetrics as sm

SCRIPT = ROOT / "tests" / "integration" / "lightning_ddp.py"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lightning") is None and importlib.util.find_spec("pytorch_lightning") is None,
    reason="neither lightning nor pytorch_lightning is installed (CI installs pytorch-lightning)",
)

def reports(out: Path, mode: str) -> list[dict[str, Any]]:
    return [json.loads((out / f"{mode}_rank{r}.json").read_text()) for r in range(2)]


def one_process() -> dict[str, float]:
    """The same metrics over the 101 samples in this process alone."""
    ex = load(SCRIPT)
    x, y = ex.make_data().tensors
    with torch.no_grad():
        scores = ex.make_net()(x).squeeze(1).sigmoid()
    with sm.use_reducer(sm.local()):
        values = ex.make_metrics().update(scores, y).compute()
    values["loss"] = torch.nn.functional.binary_cross_entropy(scores, y.float())
    return {f"val/{k}": float(v) for k, v in values.items()}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("lightning")
    done = launch(SCRIPT, str(out), "run")
    return out, done.stdout + done.stderr


def test_ddp_validation_logs_the_one_process_value(uninterrupted: tuple[Path, str]) -> None:
    out, log = uninterrupted
    truth = one_process()
    for report in reports(out, "run"):
        assert report["world"] == 2
        assert report["counted"] == 101.0  # 102 samples ran, the repeat was left out
        assert report["logged"].keys() == truth.keys()
        for key, value in truth.items():
            assert report["logged"][key] == pytest.approx(value, rel=1e-6, abs=1e-7), key
    assert [r["repeated"] for r in reports(out, "run")] == [0, 1]  # the sampler did pad rank 1
    assert "sync_dist=True" not in log  # the value is global: the notice is silenced, not obeyed
    assert (out / "mid.ckpt").exists()


def test_a_mid_epoch_checkpoint_written_by_rank_zero_resumes_exactly(uninterrupted: tuple[Path, str]) -> None:
    out, _ = uninterrupted
    checkpoint = torch.load(out / "mid.ckpt", weights_only=True)
    assert checkpoint["val_batches_done"] == 4
    assert 0 < int(checkpoint["state_dict"]["val_loss.weight"]) < 101  # the global state at the checkpoint
    launch(SCRIPT, str(out), "resume")
    before = reports(out, "run")
    for report, full in zip(reports(out, "resume"), before):
        assert report["resumed_at"] == 4 and report["counted"] == 101.0
        assert report["logged"] == pytest.approx(full["logged"], rel=1e-6)  # the uninterrupted value
