"""Errors relative to the target's scale: normalized RMSE and relative squared error.

Both hold R²'s state (``variance.TargetMoments``): per output the target's
float64 moments, merged by Chan's formula, and the residual sum of squares.
The target's spread is its ``m2``, so data far from zero keeps it: a raw
``Σt² - (Σt)²/n`` (TorchMetrics') keeps no digit of it for a target around
1e6 with spread 1e-2, where it gave an RSE of 8.6e6 for 1.01. Values are
returned in float32, as TorchMetrics returns them.
"""

from __future__ import annotations

import torch

from scopedmetrics.regression import _moments
from scopedmetrics.regression._inputs import check_bool, check_choice, per_output
from scopedmetrics.regression.variance import TargetMoments
from scopedmetrics.state import static

NORMALIZATIONS = ("mean", "range", "std", "l2")
_EPS32 = torch.finfo(torch.float32).eps  # TorchMetrics' floor of the target's spread (its states are float32)


class NormalizedRootMeanSquaredError(TargetMoments):
    """RMSE divided by the target's mean, range, (population) standard deviation or L2 norm.

    ``normalization`` is ``"mean"``, ``"range"``, ``"std"`` or ``"l2"``. Inputs
    as for :class:`MeanSquaredError`: any equal shape, flattened, when
    ``num_outputs == 1``, else ``(N, num_outputs)``. The normalizer is that of
    the whole data set, on every split (TorchMetrics' own cross-process merge
    of these statistics differs from its single-process value).

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import NormalizedRootMeanSquaredError
        >>> preds, target = torch.tensor([0.0, 1, 2, 3]), torch.tensor([0.0, 1, 2, 2])
        >>> [round(NormalizedRootMeanSquaredError(n).update(preds, target).compute().item(), 4)
        ...  for n in ("mean", "range", "std", "l2")]
        [0.4, 0.25, 0.603, 0.1667]
        >>> preds = torch.tensor([[0.0, 1], [2, 3], [4, 5], [6, 7]])
        >>> target = torch.tensor([[0.0, 1], [3, 3], [4, 5], [8, 9]])
        >>> NormalizedRootMeanSquaredError("range", num_outputs=2).update(preds, target).compute()
        tensor([0.1398, 0.1250])

    """

    _any_shape = True
    normalization: str = static(default="mean")
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        check_choice(self, "normalization", NORMALIZATIONS)
        super().__post_init__()

    def compute(self) -> torch.Tensor:
        """``sqrt(SSE / n) / normalizer`` per output; NaN with no samples, ``inf`` for a zero normalizer."""
        n = self.total.to(torch.float64)
        rmse = (self.rss / n).sqrt()
        m2, _ = _moments.exact_m2(self)
        if self.normalization == "mean":
            denom = self.mean
        elif self.normalization == "range":
            denom = self.high - self.low
        elif self.normalization == "std":
            denom = (m2 / n).sqrt()
        else:  # the L2 norm: sqrt(Σt²), a sum of non-negative terms, so nothing cancels
            denom = (m2 + n * self.mean * self.mean).sqrt()
        return per_output(self, (rmse / denom).float())


class RelativeSquaredError(TargetMoments):
    """Relative squared error ``Σ(t - p)² / Σ(t - mean(t))²``, or its root with ``squared=False``.

    ``preds`` and ``target`` have shape ``(N,)`` or ``(N, 1)``, or
    ``(N, num_outputs)``. As in TorchMetrics the value is 0-d: with several
    outputs, the mean of the per-output values. The spread is clamped below at
    float32's epsilon, as TorchMetrics does, so a constant target gives a large
    finite value.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import RelativeSquaredError
        >>> RelativeSquaredError().update(torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])).compute()
        tensor(0.0514)
        >>> RelativeSquaredError(squared=False).update(torch.tensor([2.5, 0.0, 2, 8]),
        ...                                            torch.tensor([3.0, -0.5, 2, 7])).compute()
        tensor(0.2267)

    """

    num_outputs: int = static(default=1)
    squared: bool = static(default=True)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        check_bool(self, "squared")
        super().__post_init__()

    def compute(self) -> torch.Tensor:
        """``SSE / Σ(t - mean(t))²`` per output (rooted if not ``squared``), averaged; NaN with no samples."""
        tss, _ = _moments.exact_m2(self)
        rse = self.rss / tss.clamp(min=_EPS32)
        if not self.squared:
            rse = rse.sqrt()
        value = rse.mean().float()
        return value if int(self.total) else torch.full_like(value, float("nan"))
