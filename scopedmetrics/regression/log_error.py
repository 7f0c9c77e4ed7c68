"""Errors of logarithms: mean squared log error and log-cosh error.

Both keep a running sum of per-element errors and a count, reduced with
``"sum"``; the mean is taken after the reduction. With no samples the value
is NaN.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_positive_int, check_result, folded, pair, per_output
from scopedmetrics.state import state, static


class MeanSquaredLogError(Metric):
    """Mean squared logarithmic error, ``mean((log1p(preds) - log1p(target))²)``.

    Inputs have any equal shape, with values above -1 (TorchMetrics does not
    check; scikit-learn asks for non-negative values). A value at or below -1
    is refused: its ``log1p`` is ``-inf`` or NaN.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import MeanSquaredLogError
        >>> MeanSquaredLogError().update(torch.tensor([0.0, 1, 2, 3]), torch.tensor([0.0, 1, 2, 2])).compute()
        tensor(0.0207)

    """

    validate_args: bool = static(default=True)
    sum_squared_log_error: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> MeanSquaredLogError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_squared_log_error, "flat", finite=False)
        # in float64: log1p(p) - log1p(t) of float32 values near 1e4 cancels to 3e-3 of the difference
        diff = torch.log1p(p.double()) - torch.log1p(t.double())
        sse = (diff * diff).sum()
        # any value <= -1 makes the sum -inf, inf or NaN: a finite sum clears every input without reading it
        check_result(self, sse, (("preds", p), ("target", t)), (lambda x: x > -1, "greater than -1"))
        return self.replace(sum_squared_log_error=folded(self.sum_squared_log_error, sse), total=self.total + p.numel())

    def compute(self) -> torch.Tensor:
        """Total squared log error over total count; NaN with no samples."""
        return self.sum_squared_log_error / self.total


def log_cosh(x: torch.Tensor) -> torch.Tensor:
    """``log(cosh(x))`` without overflow or cancellation.

    Up to ``|x| = 40`` it is ``log1p(2 sinh²(x/2))``, written
    ``log1p(-expm1(x) expm1(-x) / 2)``: near 0 that keeps its digits, where
    ``|x| + log1p(exp(-2|x|)) - log 2`` subtracts numbers near ``log 2`` (0 for
    ``x = 1e-4`` in float32, whose value is 5e-9). Beyond, where ``expm1``
    would overflow, it is the latter, in which nothing cancels there.
    TorchMetrics' ``log((exp(x) + exp(-x)) / 2)`` is ``inf`` beyond ``|x| ≈ 89``
    in float32 and cancels near 0 too.
    """
    a = x.abs()
    small = torch.log1p(torch.expm1(a) * torch.expm1(-a) / -2)
    return torch.where(a < 40, small, a + torch.log1p(torch.exp(-2 * a)) - math.log(2.0))


class LogCoshError(Metric):
    """Log-cosh error, ``mean(log(cosh(preds - target)))``, per output.

    ``preds`` and ``target`` have shape ``(N,)`` or ``(N, 1)``, or
    ``(N, num_outputs)``; the value is 0-d, or ``(num_outputs,)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import LogCoshError
        >>> LogCoshError().update(torch.tensor([3.0, 5, 2.5, 7]), torch.tensor([2.5, 5, 4, 8])).compute()
        tensor(0.3523)
        >>> preds = torch.tensor([[3.0, 5, 1.2], [-2.1, 2.5, 7]])
        >>> target = torch.tensor([[2.5, 5, 1.3], [0.3, 4, 8]])
        >>> LogCoshError(num_outputs=3).update(preds, target).compute()
        tensor([0.9176, 0.4277, 0.2194])

    """

    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    sum_log_cosh_error: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.num_outputs))
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> LogCoshError:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.sum_log_cosh_error, "outputs", finite=False)
        err = log_cosh(p - t).sum(0)
        check_result(self, err, (("preds", p), ("target", t)))
        return self.replace(sum_log_cosh_error=folded(self.sum_log_cosh_error, err), total=self.total + p.shape[0])

    def compute(self) -> torch.Tensor:
        """Total log-cosh error over total count, per output; NaN with no samples."""
        return per_output(self, self.sum_log_cosh_error / self.total)
