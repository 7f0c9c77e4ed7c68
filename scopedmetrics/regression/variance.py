"""Fractions of explained variance: R² and explained variance.

Both need the variance of the target (and explained variance that of the
error), so their states are running moments merged with Chan's formula (see
``_moments``), not raw sums of squares: a target around 1e4 with unit spread
stays accurate in float32. The whole state is merged by ``merge``, which the
library also uses to fold the participants' states in rank order.
``TargetMoments`` is R²'s state; the relative errors (``relative.py``) hold it too.

Degenerate cases follow scikit-learn (``force_finite=True``): a constant
target scores 1.0 if predicted exactly, else 0.0. With no samples both are
NaN; R² is also NaN for a single sample (TorchMetrics raises instead), while
explained variance of one sample is 1.0, as in scikit-learn.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression import _moments
from scopedmetrics.regression._inputs import (
    check_bool,
    check_choice,
    check_positive_int,
    outputs_layout,
    pair,
    squared_error_sum,
)
from scopedmetrics.state import state, static

MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")
_T = TypeVar("_T", bound="TargetMoments")


def _fraction(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """``1 - numerator / denominator`` per output, finite where the denominator is 0 (as scikit-learn)."""
    score = 1 - numerator / torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    one, zero = torch.ones_like(score), torch.zeros_like(score)
    return torch.where(denominator == 0, torch.where(numerator == 0, one, zero), score)


def _average(scores: torch.Tensor, weights: torch.Tensor, multioutput: str, single: bool) -> torch.Tensor:
    """Scores combined over outputs as ``multioutput`` says; 0-d for a single output."""
    if single:
        return scores.squeeze(0)
    if multioutput == "raw_values":
        return scores
    if multioutput == "variance_weighted" and bool(weights.sum() > 0):
        return (scores * weights).sum() / weights.sum()
    return scores.mean()  # uniform, also the fallback when every target is constant


class TargetMoments(Metric):
    """Per output, the target's moments (Chan-merged, float64) and the residual sum of squares ``rss``.

    The state of R² and of the errors relative to the target's spread
    (``RelativeSquaredError``, ``NormalizedRootMeanSquaredError``): the spread
    is ``m2``, never ``Σt² - (Σt)²/n``, which cancels to nothing for data far
    from zero (a target around 1e6 with spread 1e-2 gave an RSE of 8.6e6 for 1.01).
    Subclasses declare ``num_outputs`` and ``validate_args``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import R2Score, RelativeSquaredError
        >>> t = 1e6 + torch.tensor([0.0, 0.01, 0.02, 0.03], dtype=torch.float64)
        >>> p = t + torch.tensor([0.001, -0.001, 0.002, 0.0], dtype=torch.float64)
        >>> r2, rse = R2Score().update(p, t), RelativeSquaredError().update(p, t)
        >>> round(float(rse.compute()), 4), round(1 - float(r2.compute()), 4), rse.m2.item() == r2.m2.item()
        (0.012, 0.012, True)
    """

    _merge_stacks = True
    _any_shape = False  # True: with one output, inputs of any (equal) shape are flattened, as MeanSquaredError's
    total: torch.Tensor = state(default=0)
    # float64 moments: a float32 mean of data near 1e6 is off by up to 0.06, which merges read as spread
    mean: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    m2: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    low: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    high: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    rss: torch.Tensor = state(init=lambda m: torch.zeros(m.num_outputs, dtype=torch.float64))

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")
        _moments.init(self, (self.num_outputs,))  # type: ignore[attr-defined]  # moments of the target

    def update(self: _T, preds: Any, target: Any) -> _T:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.mean, outputs_layout(self) if self._any_shape else "outputs", exact=False)
        if t.ndim == 1:  # one output, flattened from any shape
            p, t = p.reshape(-1, 1), t.reshape(-1, 1)
        if t.shape[0] == 0:
            return self.replace()
        fields, _ = _moments.of_batch(self, t.t())
        return self.merge(self.replace(**fields, rss=squared_error_sum(p, t)))

    def merge(self: _T, other: _T) -> _T:
        """Chan's merge of the target moments; residual sums add. ``m.merge(m.reset())`` is a no-op."""
        fields, _, _ = _moments.chan(self, other)
        return self.replace(**fields, rss=self.rss + other.rss)


class R2Score(TargetMoments):
    """Coefficient of determination R², optionally adjusted for ``adjusted`` regressors.

    ``preds`` and ``target`` have shape ``(N,)`` or ``(N, 1)``, or
    ``(N, num_outputs)``. ``multioutput`` is ``"uniform_average"``,
    ``"raw_values"`` or ``"variance_weighted"``. With ``adjusted >= N - 1``
    the plain R² is returned with a warning, as TorchMetrics does.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import R2Score
        >>> R2Score().update(torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])).compute()
        tensor(0.9486)
        >>> target = torch.tensor([[0.5, 1], [-1, 1], [7, -6]])
        >>> preds = torch.tensor([[0.0, 2], [-1, 2], [8, -5]])
        >>> R2Score(num_outputs=2, multioutput="raw_values").update(preds, target).compute()
        tensor([0.9654, 0.9082])

    """

    adjusted: int = static(default=0)
    multioutput: str = static(default="uniform_average")
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        if isinstance(self.adjusted, bool) or not isinstance(self.adjusted, int) or self.adjusted < 0:
            raise ValueError(f"R2Score: argument `adjusted` must be an int >= 0, got {self.adjusted!r}")
        check_choice(self, "multioutput", MULTIOUTPUT)
        super().__post_init__()

    def compute(self) -> torch.Tensor:
        """``1 - RSS / TSS`` per output, combined and adjusted as configured (float32, from float64 moments)."""
        return self._score().float()

    def _score(self) -> torch.Tensor:
        tss, _ = _moments.exact_m2(self)
        scores = _fraction(self.rss, tss)
        r2 = _average(scores, tss, self.multioutput, self.num_outputs == 1)
        n = int(self.total)
        if n < 2:
            return torch.full_like(r2, float("nan"))
        if self.adjusted == 0:
            return r2
        if self.adjusted >= n - 1:
            warnings.warn(
                f"R2Score: adjusted={self.adjusted} needs more than {self.adjusted + 1} samples, got {n}; "
                "returning the unadjusted score",
                UserWarning,
                stacklevel=2,
            )
            return r2
        return 1 - (1 - r2) * (n - 1) / (n - self.adjusted - 1)


class ExplainedVariance(Metric):
    """Explained variance, ``1 - Var(target - preds) / Var(target)``.

    Inputs and ``multioutput`` as for :class:`R2Score`.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import ExplainedVariance
        >>> preds, target = torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])
        >>> ExplainedVariance().update(preds, target).compute()
        tensor(0.9572)
        >>> target = torch.tensor([[0.5, 1], [-1, 1], [7, -6]])
        >>> preds = torch.tensor([[0.0, 2], [-1, 2], [8, -5]])
        >>> ExplainedVariance(multioutput="raw_values", num_outputs=2).update(preds, target).compute()
        tensor([0.9677, 1.0000])

    """

    _merge_stacks = True
    multioutput: str = static(default="uniform_average")
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    total: torch.Tensor = state(default=0)
    # float64 moments: a float32 mean of data near 1e6 is off by up to 0.06, which merges read as spread
    mean: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    m2: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    low: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    high: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))

    def __post_init__(self) -> None:
        check_choice(self, "multioutput", MULTIOUTPUT)
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")
        _moments.init(self, (2, self.num_outputs))  # row 0: the error target - preds, row 1: the target

    def update(self, preds: Any, target: Any) -> ExplainedVariance:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.mean, "outputs", exact=False)
        if t.shape[0] == 0:
            return self.replace()
        fields, _ = _moments.of_batch(self, (t - p).t(), t.t())  # moments (2, num_outputs)
        return self.merge(self.replace(**fields))

    def merge(self, other: ExplainedVariance) -> ExplainedVariance:
        """Chan's merge of the error and target moments. ``m.merge(m.reset())`` is a no-op."""
        fields, _, _ = _moments.chan(self, other)
        return self.replace(**fields)

    def compute(self) -> torch.Tensor:
        """``1 - Var(error) / Var(target)`` per output, combined as configured."""
        m2, _ = _moments.exact_m2(self)
        scores = _fraction(m2[0], m2[1])
        value = _average(scores, m2[1], self.multioutput, self.num_outputs == 1)
        return (value if int(self.total) > 0 else torch.full_like(value, float("nan"))).float()
