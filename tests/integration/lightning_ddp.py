"""Lightning DDP on CPU (gloo), 2 processes: validation over 101 samples, counted exactly once, and resumed.

    python tests/integration/lightning_ddp.py OUT run       # validate; checkpoint mid-epoch (rank 0 writes)
    python tests/integration/lightning_ddp.py OUT resume    # validate(ckpt_path=OUT/mid.ckpt)

``strategy="ddp"`` launches the second process by running this script again
(Lightning's subprocess launcher), so it needs its own ``__main__`` and runs
under ``subprocess`` from pytest. Each rank writes ``OUT/<mode>_rank<r>.json``
with the values it logged; ``tests/test_lightning.py`` compares them with one
process's.

The mid-epoch checkpoint: a callback saves after validation batch ``CUT``
(every rank calls ``trainer.save_checkpoint``; rank 0 writes the file).
``on_save_checkpoint`` runs on every rank, and there ``sm.nn.reduce_state_dict``
puts the global state into the checkpoint; on resume ``on_load_checkpoint``
calls ``sm.nn.resume_state_dict``, so rank 0 starts from the global state and
rank 1 from an empty one, and the batches the checkpoint already counted are
skipped. The resumed value equals the uninterrupted one.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning.pytorch as pl
except ModuleNotFoundError:
    import pytorch_lightning as pl  # type: ignore[no-redef]

import scopedmetrics as sm

SAMPLES, BATCH, CUT = 101, 8, 4  # 101 on 2 ranks: one sample repeated; checkpoint after 4 of 7 batches

# The logged value is already global (compute() reduced it), so sync_dist stays False; silence only this notice.
warnings.filterwarnings("ignore", message=r".*when logging on epoch level in distributed setting")
# Lightning recommends devices=1 for validation because its sampler repeats samples: keep_mask drops them.
warnings.filterwarnings("ignore", message=r"Using `DistributedSampler` with the dataloaders")


def make_data() -> TensorDataset:
    """101 samples of a noisy binary task (identical in every process)."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, 4, generator=g)
    y = ((x[:, 0] + 0.7 * torch.randn(SAMPLES, generator=g)) > 0).long()
    return TensorDataset(x, y)


def make_net() -> torch.nn.Linear:
    """The same weights in every process."""
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)


def make_metrics() -> sm.Collection:
    """Counts, cat states and a mean: each kind of state."""
    return sm.Collection(acc=sm.BinaryAccuracy(), auroc=sm.BinaryAUROC(), f1=sm.BinaryF1Score())


class Evaluated(pl.LightningModule):
    """Validation metrics as ``sm.Stateful`` submodules, counted exactly once under DDP."""

    def __init__(self) -> None:
        super().__init__()
        self.net = make_net()
        self.val_metrics = sm.Stateful(make_metrics())
        self.val_loss = sm.Stateful(sm.Mean())
        self.done = 0  # validation batches folded in this epoch
        self.resumed_at: int | None = None  # batches the loaded checkpoint already counted

    def on_validation_epoch_start(self) -> None:
        if self.resumed_at is None:  # a resumed epoch starts from the checkpoint's state, not empty
            self.val_metrics.reset()
            self.val_loss.reset()
            self.done = 0

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        if self.resumed_at is not None and batch_idx < self.resumed_at:
            return  # counted in the checkpoint
        x, y = batch
        scores = self.net(x).squeeze(1).sigmoid()
        keep = sm.data.keep_mask(self.trainer.val_dataloaders.sampler, batch_idx, BATCH)  # False for repeats
        self.val_metrics.update(scores, y, mask=keep)
        self.val_loss.update(torch.nn.functional.binary_cross_entropy(scores, y.float(), reduction="none"), mask=keep)
        self.done = batch_idx + 1

    def on_validation_epoch_end(self) -> None:
        # one bucketed reduction for both; a collective under DDP, so every rank calls it
        values = sm.compute({"loss": self.val_loss.metric, "metrics": self.val_metrics.metric})
        values = {"loss": values["loss"], **values["metrics"]}
        self.log_dict({f"val/{k}": v for k, v in values.items()})  # global already: sync_dist=False

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        sm.nn.reduce_state_dict(self, checkpoint["state_dict"])  # every rank runs this hook: a collective
        checkpoint["val_batches_done"] = self.done

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        sm.nn.resume_state_dict(self, checkpoint["state_dict"])  # rank 0 keeps the global state, others start empty
        self.resumed_at = checkpoint["val_batches_done"]


class MidEpochCheckpoint(pl.Callback):
    """Save after validation batch ``CUT`` (every rank calls; rank 0 writes), as a preempted job would have."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_validation_batch_end(self, trainer: pl.Trainer, module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:  # fmt: skip
        if batch_idx == CUT - 1:
            trainer.save_checkpoint(self.path)


def main(out: Path, mode: str) -> None:
    """Validate in ``mode`` (``run`` or ``resume``) and write what this rank logged."""
    torch.set_num_threads(1)
    ckpt = out / "mid.ckpt"
    trainer = pl.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, callbacks=[] if mode == "resume" else
        [MidEpochCheckpoint(ckpt)],
    )  # fmt: skip
    loader = DataLoader(make_data(), batch_size=BATCH)  # Lightning adds the DistributedSampler
    model = Evaluated()
    trainer.validate(model, loader, ckpt_path=ckpt if mode == "resume" else None, verbose=False)
    sampler = trainer.val_dataloaders.sampler
    logged = {k: float(v) for k, v in trainer.callback_metrics.items()}
    counted = float(model.val_loss.metric.reduce().weight)  # samples in the global state: a collective
    report = {"rank": trainer.global_rank, "world": trainer.world_size, "logged": logged, "counted": counted,
              "repeated": sm.data.repeated(sampler), "resumed_at": model.resumed_at}  # fmt: skip
    (out / f"{mode}_rank{trainer.global_rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(Path(sys.argv[1]), sys.argv[2])
