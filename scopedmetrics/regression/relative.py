"""Errors relative to the target's scale: normalized RMSE and relative squared error.

Both keep, per output, float64 sums of the squared error, the target and the
target's square, and a row count (NRMSE also the target's extremes), all
reduced with ``"sum"``, ``"min"`` or ``"max"``, so any split of the data gives
the same state up to the order of float64 additions. The spread of the target
is ``Σt² - (Σt)²/n``; in float64 that keeps about 8 significant digits for
data around 1e4 with unit variance (float32 would keep none). Values are
returned in float32, as TorchMetrics returns them.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression import _moments
from scopedmetrics.regression._inputs import (
    check_bool,
    check_choice,
    check_positive_int,
    check_result,
    outputs_layout,
    pair,
    per_output,
    squared_error_sum,
)
from scopedmetrics.state import state, static

NORMALIZATIONS = ("mean", "range", "std", "l2")
_EPS32 = torch.finfo(torch.float32).eps  # TorchMetrics' floor of the target's spread (its states are float32)


def _per_output_64(m: Metric, fill: float = 0.0) -> torch.Tensor:
    return torch.full((m.num_outputs,), fill, dtype=torch.float64)  # type: ignore[attr-defined]


def _sums(p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per output: the squared error, the target and the target squared, summed over rows of ``(N, d)`` inputs.

    A large batch takes fused kernels (``mse_loss``, and for one float64 output
    ``dot``: ``_moments.row_dots``), which make no temporary of its size; a
    small one the plain ops, which cost fewer µs of dispatch.
    """
    if t.shape[0] < _moments.LARGE:
        diff = p - t
        return (diff * diff).sum(0), t.sum(0), (t * t).sum(0)
    squares = _moments.row_dots(t.t(), t.t()) if t.shape[1] == 1 else (t * t).sum(0)
    return squared_error_sum(p, t), t.sum(0), squares


class NormalizedRootMeanSquaredError(Metric):
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

    normalization: str = static(default="mean")
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    sum_squared_error: torch.Tensor = state("sum", init=_per_output_64)
    sum_target: torch.Tensor = state("sum", init=_per_output_64)
    sum_target_squared: torch.Tensor = state("sum", init=_per_output_64)
    min_target: torch.Tensor = state("min", init=lambda m: _per_output_64(m, float("inf")))
    max_target: torch.Tensor = state("max", init=lambda m: _per_output_64(m, -float("inf")))
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_choice(self, "normalization", NORMALIZATIONS)
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> NormalizedRootMeanSquaredError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_squared_error, outputs_layout(self), finite=False)
        p, t = p.reshape(-1, self.num_outputs), t.reshape(-1, self.num_outputs)
        sse, s, s2 = _sums(p, t)
        check_result(self, sse, (("preds", p), ("target", t)))
        if t.shape[0] == 0:
            return self.replace()
        low, high = _moments.extremes(t.t())
        return self.replace(
            sum_squared_error=self.sum_squared_error + sse,
            sum_target=self.sum_target + s,
            sum_target_squared=self.sum_target_squared + s2,
            min_target=torch.minimum(self.min_target, low),
            max_target=torch.maximum(self.max_target, high),
            total=self.total + t.shape[0],
        )

    def compute(self) -> torch.Tensor:
        """``sqrt(SSE / n) / normalizer`` per output; NaN with no samples, ``inf`` for a zero normalizer."""
        n = self.total.to(torch.float64)
        rmse = (self.sum_squared_error / n).sqrt()
        mean = self.sum_target / n
        if self.normalization == "mean":
            denom = mean
        elif self.normalization == "range":
            denom = self.max_target - self.min_target
        elif self.normalization == "std":
            denom = (self.sum_target_squared / n - mean * mean).clamp(min=0).sqrt()
        else:
            denom = self.sum_target_squared.sqrt()
        return per_output(self, (rmse / denom).float())


class RelativeSquaredError(Metric):
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
    sum_squared_error: torch.Tensor = state("sum", init=_per_output_64)
    sum_target: torch.Tensor = state("sum", init=_per_output_64)
    sum_target_squared: torch.Tensor = state("sum", init=_per_output_64)
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "squared")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> RelativeSquaredError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_squared_error, "outputs", finite=False)
        sse, s, s2 = _sums(p, t)
        check_result(self, sse, (("preds", p), ("target", t)))
        return self.replace(
            sum_squared_error=self.sum_squared_error + sse,
            sum_target=self.sum_target + s,
            sum_target_squared=self.sum_target_squared + s2,
            total=self.total + t.shape[0],
        )

    def compute(self) -> torch.Tensor:
        """``SSE / (Σt² - (Σt)²/n)`` per output (rooted if not ``squared``), averaged; NaN with no samples."""
        n = self.total.to(torch.float64)
        spread = self.sum_target_squared - self.sum_target * self.sum_target / n
        rse = self.sum_squared_error / spread.clamp(min=_EPS32)
        if not self.squared:
            rse = rse.sqrt()
        return rse.mean().float()
