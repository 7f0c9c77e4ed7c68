"""Cosine similarity between rows of ``preds`` and ``target``.

The similarity of each row is final as soon as the row is seen, so
``"sum"`` and ``"mean"`` keep a running sum and count (``"sum"`` ops) and
only ``reduction="none"`` keeps every row's value (a ``cat`` state), not the
inputs themselves as TorchMetrics does.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_choice, folded, pair
from scopedmetrics.state import append, state, static

REDUCTIONS = ("sum", "mean", "none", None)


def reduce_rows(m: Metric, total_value: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Reduce per-row values as ``m.reduction`` says: ``"sum"``, ``"mean"`` (NaN if empty) or none."""
    reduction = m.reduction  # type: ignore[attr-defined]
    if reduction == "sum":
        return total_value
    if reduction == "mean":
        count: torch.Tensor = m.total  # type: ignore[attr-defined]
        return total_value / count
    return rows


class CosineSimilarity(Metric):
    """Cosine similarity of each row of ``preds`` with the same row of ``target``, then reduced.

    Inputs have shape ``(N, D)``. ``reduction`` is ``"sum"`` (0 with no
    rows), ``"mean"`` (NaN with no rows) or ``"none"``/``None`` (one value per
    row, in rank order). A row with zero norm has similarity NaN.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import CosineSimilarity
        >>> target = torch.tensor([[1.0, 2, 3, 4], [1, 2, 3, 4]])
        >>> preds = torch.tensor([[1.0, 2, 3, 4], [-1, -2, -3, -4]])
        >>> CosineSimilarity(reduction="none").update(preds, target).compute()
        tensor([ 1.0000, -1.0000])
        >>> CosineSimilarity(reduction="mean").update(preds, target).compute()
        tensor(0.)

    """

    reduction: str | None = static(default="sum")
    validate_args: bool = static(default=True)
    sum_similarity: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)
    similarity: torch.Tensor = state("cat", default=torch.empty(0))

    def __post_init__(self) -> None:
        check_choice(self, "reduction", REDUCTIONS)
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> CosineSimilarity:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_similarity, "rows")
        sim = (p * t).sum(1) / (p.norm(dim=1) * t.norm(dim=1))
        if self.reduction in ("none", None):
            return self.replace(similarity=append(self.similarity, sim), total=self.total + sim.shape[0])
        return self.replace(sum_similarity=folded(self.sum_similarity, sim.sum()), total=self.total + sim.shape[0])

    def compute(self) -> torch.Tensor:
        """Reduce the per-row similarities as ``reduction`` says."""
        return reduce_rows(self, self.sum_similarity, self.similarity)
