"""The README's ten-line custom metric, shared by the tests that need a user-written metric."""

from __future__ import annotations

import torch

import scopedmetrics as sm


class MeanSquaredError(sm.Metric):
    sum_sq: torch.Tensor = sm.state("sum", default=0.0)
    count: torch.Tensor = sm.state("sum", default=0)
    squared: bool = sm.static(default=True)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> MeanSquaredError:
        diff = preds - target
        return self.replace(sum_sq=self.sum_sq + (diff * diff).sum(), count=self.count + diff.numel())

    def compute(self) -> torch.Tensor:
        mse = self.sum_sq / self.count
        return mse if self.squared else mse.sqrt()
