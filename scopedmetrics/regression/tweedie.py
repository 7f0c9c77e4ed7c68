"""Tweedie deviance: the mean unit deviance of a Tweedie distribution with a given ``power``.

The state is a float64 sum of per-element deviances and a count, both
reduced with ``"sum"``. Float64 because a deviance is a difference of terms
of the scale of the data: for predictions within 1% of the target, float32
would keep about three digits of it. The value is returned in float32.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_finite, check_values, folded, pair
from scopedmetrics.state import state, static


def deviance(p: torch.Tensor, t: torch.Tensor, power: float) -> torch.Tensor:
    """The unit deviance of each prediction ``p`` for target ``t`` (TorchMetrics' and scikit-learn's formulas)."""
    if power == 0:
        return (t - p) ** 2
    if power == 1:  # Poisson
        return 2 * (torch.xlogy(t, t / p) + p - t)
    if power == 2:  # Gamma
        return 2 * (torch.log(p / t) + t / p - 1)
    first = t.clamp(min=0) ** (2 - power) / ((1 - power) * (2 - power))
    second = t * p ** (1 - power) / (1 - power)
    third = p ** (2 - power) / (2 - power)
    return 2 * (first - second + third)


class TweedieDevianceScore(Metric):
    """Mean Tweedie deviance of ``preds`` for ``targets``, with the distribution's ``power``.

    ``power`` 0 is the squared error (normal), 1 Poisson, 2 Gamma, 3 inverse
    Gaussian; between 0 and 1 the deviance is undefined and refused. The
    inputs' domains depend on it, as in TorchMetrics: ``power < 0`` needs
    ``preds > 0``; ``1 <= power < 2`` needs ``preds > 0`` and ``targets >= 0``;
    ``power >= 2`` needs both positive. Inputs have any equal shape.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import TweedieDevianceScore
        >>> targets, preds = torch.tensor([1.0, 2, 3, 4]), torch.tensor([4.0, 3, 2, 1])
        >>> TweedieDevianceScore(2.0).update(preds, targets).compute()
        tensor(1.2083)
        >>> TweedieDevianceScore().update(preds, targets).compute()  # power 0: the mean squared error
        tensor(5.)

    """

    power: float = static(default=0.0)
    validate_args: bool = static(default=True)
    sum_deviance_score: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    num_observations: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        _checks.check_number(self, "power")
        if 0 < self.power < 1:
            raise ValueError(
                f"TweedieDevianceScore: argument `power` must not lie in (0, 1), where the deviance is "
                f"undefined, got {self.power!r}"
            )
        check_bool(self, "validate_args")

    def _check_domain(self, p: torch.Tensor, t: torch.Tensor) -> None:
        check_finite(self, "preds", p)
        check_finite(self, "targets", t)
        power = self.power
        if power < 0 or power >= 1:
            check_values(self, "preds", p > 0, f"strictly positive for power={power}")
        if 1 <= power < 2:
            check_values(self, "targets", t >= 0, f"non-negative for power={power}")
        elif power >= 2:
            check_values(self, "targets", t > 0, f"strictly positive for power={power}")

    def update(self, preds: Any, targets: Any) -> TweedieDevianceScore:
        """Fold in one batch of ``preds`` and ``targets``; ``self`` is unchanged."""
        p, t = pair(self, preds, targets, self.sum_deviance_score, "flat", names=("preds", "targets"), finite=False)
        if self.validate_args:
            self._check_domain(p, t)
        total = deviance(p, t, self.power).sum()
        return self.replace(sum_deviance_score=folded(self.sum_deviance_score, total),
                            num_observations=self.num_observations + p.numel())

    def compute(self) -> torch.Tensor:
        """Total deviance over the number of elements (float32); NaN with no samples."""
        return (self.sum_deviance_score / self.num_observations).float()
