"""Minkowski distance between predictions and targets over the whole data set.

The state is the sum of ``|preds - targets| ** p`` and the element count (reduced with ``"sum"``);
the ``p``-th root is taken after the reduction, so the distance over several
ranks is that of the concatenated data, not a combination of per-rank distances.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_result, folded, pair
from scopedmetrics.state import state, static


class MinkowskiDistance(Metric):
    """Minkowski distance ``(Σ |preds - targets|^p)^(1/p)`` of order ``p >= 1`` (required, as in TorchMetrics).

    ``p = 1`` is the total absolute error, ``p = 2`` the Euclidean distance.
    Inputs have any equal shape; with no samples the distance is 0.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import MinkowskiDistance
        >>> preds, targets = torch.tensor([1.0, 2.8, 3.5, 4.5]), torch.tensor([6.1, 2.11, 3.1, 5.6])
        >>> MinkowskiDistance(3).update(preds, targets).compute()
        tensor(5.1220)

    """

    p: float = static()  # required, as in TorchMetrics
    validate_args: bool = static(default=True)
    minkowski_dist_sum: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)  # elements seen: perfect predictions are not an empty state

    def __post_init__(self) -> None:
        _checks.check_number(self, "p")
        if self.p < 1:
            raise ValueError(f"MinkowskiDistance: argument `p` must be at least 1, got {self.p!r}")
        check_bool(self, "validate_args")

    def update(self, preds: Any, targets: Any) -> MinkowskiDistance:
        """Fold in one batch of ``preds`` and ``targets``; ``self`` is unchanged."""
        a, b = pair(self, preds, targets, self.minkowski_dist_sum, "flat", names=("preds", "targets"), finite=False)
        total = ((a - b).abs() ** self.p).sum()
        check_result(self, total, (("preds", a), ("targets", b)))
        return self.replace(minkowski_dist_sum=folded(self.minkowski_dist_sum, total), total=self.total + a.numel())

    def compute(self) -> torch.Tensor:
        """The ``p``-th root of the total."""
        return self.minkowski_dist_sum ** (1.0 / self.p)
