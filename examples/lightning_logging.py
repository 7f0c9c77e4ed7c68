"""Logging scopedmetrics from a Lightning module: every sample counted once, the global value logged.

    python examples/lightning_logging.py               # one process
    python examples/lightning_logging.py --devices 2   # DDP on CPU (gloo): Lightning starts the second process

Needs ``pip install lightning`` (or ``pytorch-lightning``: either import works).
The metrics are ``sm.Stateful`` submodules: they move with the module, and a
checkpoint carries them. Under DDP Lightning validates through a
``DistributedSampler`` that repeats samples so every rank gets as many (201
validation samples on 2 ranks run as 202); ``sm.data.keep_mask`` leaves the
repeat out. ``compute()`` reduces over every rank, so each rank logs the same,
global value: ``sync_dist=False`` (the default) is right, and the warning that
suggests ``sync_dist=True`` is silenced below. With ``--devices 2`` rank 0
checks the logged values against the same metrics computed in one process and
prints PASS or FAIL.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - PyTorch's convention
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:
    import lightning.pytorch as L  # noqa: N812 - Lightning's own convention
except ModuleNotFoundError:
    import pytorch_lightning as L  # type: ignore[no-redef]  # noqa: N812

import scopedmetrics as sm

NUM_CLASSES = 3
FEATURES = 8
VAL_SAMPLES = 201  # odd: on two ranks the sampler repeats one

# compute() already reduced across ranks: the logged value is global, so there is nothing for sync_dist to do.
warnings.filterwarnings("ignore", message=r".*when logging on epoch level in distributed setting")
# Lightning recommends devices=1 for validation because of the repeats; keep_mask leaves them out instead.
warnings.filterwarnings("ignore", message=r"Using `DistributedSampler` with the dataloaders")


def make_loader(n: int, seed: int, batch_size: int = 32) -> DataLoader:
    """A learnable toy task: the class is the argmax of a fixed projection of the features."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.randn(FEATURES, NUM_CLASSES, generator=torch.Generator().manual_seed(1234))
    y = (x @ w).argmax(dim=1)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def make_metrics() -> sm.Collection:
    """What validation reports; the three members share one update of the per-class counts."""
    return sm.Collection(
        accuracy=sm.MulticlassAccuracy(NUM_CLASSES, average="micro"),
        macro_f1=sm.MulticlassF1Score(NUM_CLASSES),
        recall=sm.MulticlassRecall(NUM_CLASSES, average="none"),
    )


def keep_of(loader: DataLoader, batch_idx: int) -> torch.Tensor | None:
    """The batch's ``keep`` mask under a DistributedSampler (False for repeats); ``None`` without one."""
    if isinstance(loader.sampler, DistributedSampler):
        assert loader.batch_size is not None
        return sm.data.keep_mask(loader.sampler, batch_idx, loader.batch_size)
    return None


class Classifier(L.LightningModule):
    """A linear classifier whose validation metrics are scopedmetrics modules."""

    def __init__(self) -> None:
        super().__init__()
        self.model = torch.nn.Linear(FEATURES, NUM_CLASSES)
        self.val_metrics = sm.Stateful(make_metrics())  # a submodule: moves with the model, in the checkpoint
        self.val_loss = sm.Stateful(sm.Mean())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits."""
        return self.model(x)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Cross-entropy on one batch."""
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train/loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Plain SGD."""
        return torch.optim.SGD(self.parameters(), lr=0.5)

    def on_validation_epoch_start(self) -> None:
        """Start every validation epoch from empty metrics (a reset keeps the module's device and dtype)."""
        self.val_metrics.reset()
        self.val_loss.reset()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        """Fold the batch in, leaving out the samples the sampler repeated."""
        x, y = batch
        logits = self(x)
        keep = keep_of(self.trainer.val_dataloaders, batch_idx)
        self.val_metrics.update(logits, y, mask=keep)
        self.val_loss.update(F.cross_entropy(logits, y, reduction="none"), mask=keep)

    def on_validation_epoch_end(self) -> None:
        """Compute once (reduced across ranks under DDP) and log the values."""
        # One bucketed reduction for both; a collective under DDP, so every rank calls it.
        values = sm.compute({"loss": self.val_loss.metric, "metrics": self.val_metrics.metric})
        logged = {"val/loss": values["loss"]}
        for name, value in values["metrics"].items():
            if value.ndim == 0:
                logged[f"val/{name}"] = value
            else:  # per-class values: one scalar each
                logged.update({f"val/{name}_{c}": v for c, v in enumerate(value)})
        # Global already, and the same on every rank: sync_dist=False; rank_zero_only=False, so that callbacks
        # monitoring these keys (ModelCheckpoint, EarlyStopping) see the same value on every rank.
        self.log_dict(logged, sync_dist=False)


def run(max_epochs: int = 2, **trainer_kwargs: Any) -> tuple[Classifier, dict[str, torch.Tensor], L.Trainer]:
    """Train briefly, validating every epoch; returns the module, the last logged values and the trainer."""
    torch.manual_seed(0)  # the same initial weights in every process
    model = Classifier()
    options: dict[str, Any] = {
        "max_epochs": max_epochs,
        "accelerator": "cpu",
        "devices": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        **trainer_kwargs,
    }
    trainer = L.Trainer(**options)
    trainer.fit(model, make_loader(512, seed=0), make_loader(VAL_SAMPLES, seed=1, batch_size=48))
    return model, dict(trainer.callback_metrics), trainer


def one_process(model: Classifier) -> dict[str, float]:
    """The logged keys, computed in this process alone on the whole validation set."""
    loader = make_loader(VAL_SAMPLES, seed=1)
    x, y = (torch.cat(t) for t in zip(*loader))
    with torch.no_grad(), sm.use_reducer(sm.local()):
        logits = model.cpu()(x)
        values = make_metrics().update(logits, y).compute()
    out = {"val/loss": float(F.cross_entropy(logits, y))}
    for name, value in values.items():
        if value.ndim == 0:
            out[f"val/{name}"] = float(value)
        else:
            out.update({f"val/{name}_{c}": float(v) for c, v in enumerate(value)})
    return out


def main() -> int:
    """Train and validate on ``--devices`` CPU processes; rank 0 prints the values and checks them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--max-epochs", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    strategy = {"strategy": "ddp"} if args.devices > 1 else {}
    model, metrics, trainer = run(max_epochs=args.max_epochs, devices=args.devices, **strategy)
    if trainer.global_rank != 0:
        return 0
    truth = one_process(model)
    failures = 0
    for key in sorted(truth):
        ok = math.isclose(float(metrics[key]), truth[key], rel_tol=1e-5, abs_tol=1e-6)
        failures += not ok
        print(f"{key:>18}: {float(metrics[key]):.6f}  one process {truth[key]:.6f}  {'ok' if ok else 'MISMATCH'}")
    print(f"{trainer.world_size} processes, {VAL_SAMPLES} validation samples")
    print("PASS" if failures == 0 else f"FAIL: {failures} value(s) differ from one process")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
