"""Scores of ensemble forecasts: the continuous ranked probability score (CRPS).

Each row's CRPS is final once the row is seen, so the state is their sum and
the row count (reduced with ``"sum"``).
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import batch_dtype, check_bool, check_result, folded, tensor_arg, where
from scopedmetrics.state import state, static


def crps(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The CRPS of each row of the ensemble ``x`` (``(N, M)``) for the observation ``y`` (``(N,)``).

    ``mean_i |x_i - y| - Σ_ij |x_i - x_j| / (2 M²)``; the pair sum is
    ``2 Σ_k (2k - M + 1) x_(k)`` over the sorted members, ``O(M log M)`` per row
    instead of TorchMetrics' ``M × M`` differences. The members are centred
    first (the weights sum to 0), so a large common offset cancels exactly.
    """
    m = x.shape[1]
    error = (x - y.unsqueeze(1)).abs().mean(1)
    ordered = x.sort(dim=1).values
    centred = ordered - ordered.mean(1, keepdim=True)
    weights = 2 * torch.arange(m, dtype=x.dtype, device=x.device) - (m - 1)
    return error - (centred * weights).sum(1) / (m * m)


class ContinuousRankedProbabilityScore(Metric):
    """Mean continuous ranked probability score of ensemble forecasts ``preds`` for observations ``target``.

    ``preds`` has shape ``(N, M)``, ``M >= 2`` ensemble members; ``target``
    has shape ``(N,)``. Lower is better; for a single-member ensemble it would be the absolute error.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import ContinuousRankedProbabilityScore
        >>> preds = torch.tensor([[0.0, 1, 2], [1, 1.5, 4]])
        >>> target = torch.tensor([1.0, 3])
        >>> ContinuousRankedProbabilityScore().update(preds, target).compute()
        tensor(0.5278)

    """

    validate_args: bool = static(default=True)
    score: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> ContinuousRankedProbabilityScore:
        """Fold in one batch of ensembles ``preds`` and observations ``target``; ``self`` is unchanged."""
        x = tensor_arg(self, "preds", preds)
        y = tensor_arg(self, "target", target)
        if x.ndim != 2:
            raise ValueError(
                f"{where(self)}: argument `preds` has shape {tuple(x.shape)}; expected (N, ensemble_members)"
            )
        if x.shape[1] < 2:
            raise ValueError(
                f"{where(self)}: argument `preds` has {x.shape[1]} ensemble member(s) (shape {tuple(x.shape)}); "
                "CRPS needs at least 2"
            )
        if y.shape != x.shape[:1]:
            raise ValueError(
                f"{where(self)}: argument `preds` has shape {tuple(x.shape)} but `target` has shape "
                f"{tuple(y.shape)}; expected target of shape ({x.shape[0]},)"
            )
        dtype = batch_dtype(self.score, x, y)  # float64 inputs are not rounded to the state's float32
        x = x.to(device=self.score.device, dtype=dtype)
        y = y.to(device=self.score.device, dtype=dtype)
        total = crps(x, y).sum()
        check_result(self, total, (("preds", x), ("target", y)))
        return self.replace(score=folded(self.score, total), total=self.total + x.shape[0])

    def compute(self) -> torch.Tensor:
        """Total CRPS over the number of rows; NaN with no rows."""
        return self.score / self.total
