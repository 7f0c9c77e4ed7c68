"""Error metrics: mean squared, mean absolute and (symmetric, weighted) mean absolute percentage error.

Each keeps a running sum of errors and a row count (WMAPE: also the sum of
``|target|``), reduced with ``"sum"``; the ratio (and, for RMSE, its
square root) is taken only after the reduction, so RMSE over several ranks is
``sqrt(total SSE / total count)``, not an average of per-rank RMSEs. With no
samples anywhere the value is NaN (WMAPE: 0, as TorchMetrics).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import (
    check_bool,
    check_positive_int,
    check_result,
    folded,
    outputs_layout,
    pair,
    per_output,
    squared_error_sum,
)
from scopedmetrics.state import state, static

_P = TypeVar("_P", bound="_PercentageError")


class MeanSquaredError(Metric):
    """Mean squared error, or its root with ``squared=False``.

    ``preds`` and ``target`` have any (equal) shape when ``num_outputs == 1``,
    else shape ``(N, num_outputs)``; the value is 0-d, or ``(num_outputs,)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import MeanSquaredError
        >>> MeanSquaredError().update(torch.tensor([0.0, 1, 2, 3]), torch.tensor([0.0, 1, 2, 2])).compute()
        tensor(0.2500)
        >>> MeanSquaredError(squared=False).update(torch.tensor([3.0]), torch.tensor([0.0])).compute()
        tensor(3.)

    """

    squared: bool = static(default=True)
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    sum_squared_error: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_outputs))
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_bool(self, "squared")
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> MeanSquaredError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_squared_error, outputs_layout(self), finite=False)
        sse = squared_error_sum(p, t)  # flat (N,) for one output, else (N, num_outputs)
        check_result(self, sse, (("preds", p), ("target", t)))
        return self.replace(sum_squared_error=folded(self.sum_squared_error, sse), total=self.total + p.shape[0])

    def compute(self) -> torch.Tensor:
        """Total squared error over total count, or its square root; NaN with no samples."""
        mse = self.sum_squared_error / self.total
        return per_output(self, mse if self.squared else mse.sqrt())


class MeanAbsoluteError(Metric):
    """Mean absolute error.

    Inputs as for :class:`MeanSquaredError`.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import MeanAbsoluteError
        >>> preds, target = torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])
        >>> MeanAbsoluteError().update(preds, target).compute()
        tensor(0.5000)

    """

    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    sum_abs_error: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_outputs))
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> MeanAbsoluteError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_abs_error, outputs_layout(self), finite=False)
        sae = (p - t).abs().sum(0)  # flat (N,) for one output, else (N, num_outputs)
        check_result(self, sae, (("preds", p), ("target", t)))
        return self.replace(sum_abs_error=folded(self.sum_abs_error, sae), total=self.total + p.shape[0])

    def compute(self) -> torch.Tensor:
        """Total absolute error over total count; NaN with no samples."""
        return per_output(self, self.sum_abs_error / self.total)


class _PercentageError(Metric):
    """A running sum of relative errors (``_errors``) and a count of entries: their ratio after the reduction."""

    validate_args: bool = static(default=True)
    sum_abs_per_error: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)

    epsilon = 1.17e-06

    def __post_init__(self) -> None:
        check_bool(self, "validate_args")

    def _errors(self, p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Each entry's relative error of checked, flat inputs."""
        raise NotImplementedError

    def update(self: _P, preds: Any, target: Any) -> _P:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_abs_per_error, "flat", finite=False)
        err = self._errors(p, t).sum()
        check_result(self, err, (("preds", p), ("target", t)))
        return self.replace(sum_abs_per_error=folded(self.sum_abs_per_error, err), total=self.total + p.numel())

    def compute(self) -> torch.Tensor:
        """Total relative error over total count; NaN with no samples."""
        return self.sum_abs_per_error / self.total


class MeanAbsolutePercentageError(_PercentageError):
    """Mean absolute percentage error, ``mean(|preds - target| / max(|target|, epsilon))``.

    As in TorchMetrics, ``|target|`` is clamped below at ``epsilon = 1.17e-06``
    so a zero target gives a large, finite error. Inputs have any equal shape.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import MeanAbsolutePercentageError
        >>> m = MeanAbsolutePercentageError()
        >>> m.update(torch.tensor([0.9, 15, 1.2e6]), torch.tensor([1.0, 10, 1e6])).compute()
        tensor(0.2667)

    """

    def _errors(self, p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return (p - t).abs() / t.abs().clamp(min=self.epsilon)


class SymmetricMeanAbsolutePercentageError(_PercentageError):
    """Symmetric MAPE, ``mean(2 |preds - target| / max(|preds| + |target|, epsilon))``.

    As in TorchMetrics, the denominator is clamped below at ``epsilon = 1.17e-06``;
    the value lies in ``[0, 2]``. Inputs have any equal shape.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import SymmetricMeanAbsolutePercentageError
        >>> m = SymmetricMeanAbsolutePercentageError()
        >>> m.update(torch.tensor([1.0, 10, 1e6]), torch.tensor([0.9, 15, 1.2e6])).compute()
        tensor(0.2290)

    """

    def _errors(self, p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return 2 * ((p - t).abs() / (p.abs() + t.abs()).clamp(min=self.epsilon))


class WeightedMeanAbsolutePercentageError(Metric):
    """Weighted MAPE, ``sum |preds - target| / max(sum |target|, epsilon)`` over the whole data set.

    Both sums are states, so the ratio is of the data set's totals, never an
    average of per-batch ratios. With no samples the value is 0 (``0 / epsilon``),
    as in TorchMetrics. Inputs have any equal shape.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import WeightedMeanAbsolutePercentageError
        >>> m = WeightedMeanAbsolutePercentageError()
        >>> m.update(torch.tensor([1.0, 12, 3]), torch.tensor([2.0, 10, 4])).compute()
        tensor(0.2500)

    """

    validate_args: bool = static(default=True)
    sum_abs_error: torch.Tensor = state("sum", default=0.0)
    sum_scale: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)  # elements seen: exact predictions of zeros are not an empty state

    epsilon = 1.17e-06

    def __post_init__(self) -> None:
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> WeightedMeanAbsolutePercentageError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_abs_error, "flat", finite=False)
        err = (p - t).abs().sum()
        check_result(self, err, (("preds", p), ("target", t)))
        return self.replace(
            sum_abs_error=folded(self.sum_abs_error, err),
            sum_scale=folded(self.sum_scale, t.abs().sum()),
            total=self.total + t.numel(),
        )

    def compute(self) -> torch.Tensor:
        """Total absolute error over the total absolute target, clamped below at ``epsilon``."""
        return self.sum_abs_error / self.sum_scale.clamp(min=self.epsilon)
