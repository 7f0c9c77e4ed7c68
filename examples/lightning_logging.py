"""Logging scopedmetrics from a Lightning module: compute once per epoch, log the dict.

    python examples/lightning_logging.py            # needs: pip install lightning

The metrics are plain attributes of the module (they are values, not
``nn.Module``s): ``validation_step`` replaces them with their updated
versions, and ``on_validation_epoch_end`` computes them and logs the result.
Under DDP (``Trainer(strategy="ddp", devices=N)``) Lightning initializes
``torch.distributed``, so ``compute()`` reduces over every rank by default
and each rank logs the same, global values — no ``sync_dist`` needed, and
uneven last batches are counted exactly once.
"""

from __future__ import annotations

from typing import Any

import lightning as L  # noqa: N812 - Lightning's own convention
import torch
import torch.nn.functional as F  # noqa: N812 - PyTorch's convention
from torch.utils.data import DataLoader, TensorDataset

import scopedmetrics as sm

NUM_CLASSES = 3
FEATURES = 8


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


class Classifier(L.LightningModule):
    """A linear classifier whose validation metrics are scopedmetrics."""

    def __init__(self) -> None:
        super().__init__()
        self.model = torch.nn.Linear(FEATURES, NUM_CLASSES)
        self.val_metrics = make_metrics()  # a plain attribute: not a submodule, not in the checkpoint
        self.val_loss = sm.Mean()

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
        """Start every validation epoch from empty metrics, on the module's device."""
        self.val_metrics = self.val_metrics.reset().to(self.device)
        self.val_loss = self.val_loss.reset().to(self.device)

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        """Fold the batch in: the metrics are replaced, never mutated."""
        x, y = batch
        logits = self(x)
        self.val_metrics = self.val_metrics.update(logits, y)
        self.val_loss = self.val_loss.update(F.cross_entropy(logits, y, reduction="none"))

    def on_validation_epoch_end(self) -> None:
        """Compute once (reduced across ranks under DDP) and log the values."""
        # One bucketed reduction for both; a collective under DDP, so every rank calls it.
        values = sm.compute({"loss": self.val_loss, "metrics": self.val_metrics})
        logged = {"val/loss": values["loss"]}
        for name, value in values["metrics"].items():
            if value.ndim == 0:
                logged[f"val/{name}"] = value
            else:  # per-class values: one scalar each
                logged.update({f"val/{name}_{c}": v for c, v in enumerate(value)})
        self.log_dict(logged)  # already global: every rank holds the same values


def run(max_epochs: int = 2, **trainer_kwargs: Any) -> tuple[Classifier, dict[str, torch.Tensor]]:
    """Train briefly, validating every epoch; returns the module and the last logged values."""
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
    trainer.fit(model, make_loader(512, seed=0), make_loader(200, seed=1, batch_size=48))
    return model, dict(trainer.callback_metrics)


if __name__ == "__main__":
    _, metrics = run()
    for key, value in sorted(metrics.items()):
        print(f"{key:>18}: {float(value):.4f}")
