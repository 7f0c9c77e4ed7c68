"""Correlation coefficients: Pearson, concordance (Lin) and Spearman.

Pearson and concordance keep, per output, the count, the means, the M2s and
the co-moment of ``preds`` and ``target``, merged with Chan's formula (see
``_moments``) through a whole-state ``merge``: raw sums of squares lose every
significant digit in float32 once the data sit far from zero. Spearman must
rank all the data, so it keeps every sample in ``cat`` states.

Undefined values are NaN: no samples, a single sample, or (Pearson,
Spearman) a constant input. TorchMetrics returns NaN for these with a
warning, except Spearman, where it returns about 0.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression import _moments
from scopedmetrics.regression._inputs import check_bool, check_positive_int, pair
from scopedmetrics.state import append, state, static

C = TypeVar("C", bound="_CoMoments")


class _CoMoments(Metric):
    """Moments of ``preds`` (row 0) and ``target`` (row 1) and their co-moment, per output."""

    _merge_stacks = True

    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    total: torch.Tensor = state(default=0)
    # float64 moments: a float32 mean of data near 1e6 is off by up to 0.06, which merges read as spread
    mean: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    m2: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    low: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    high: torch.Tensor = state(default=lambda: torch.zeros((), dtype=torch.float64))
    comoment: torch.Tensor = state(init=lambda m: torch.zeros(m.num_outputs, dtype=torch.float64))

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")
        _moments.init(self, (2, self.num_outputs))

    def update(self: C, preds: Any, target: Any) -> C:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.mean, "outputs", exact=False)
        if p.shape[0] == 0:
            return self.replace()
        fields, (cp, ct) = _moments.of_batch(self, p.t(), t.t())  # moments (2, num_outputs)
        batch = self.replace(**fields, comoment=_moments.row_dots(cp, ct))
        return self.merge(batch)

    def merge(self: C, other: C) -> C:
        """Chan's merge, co-moment included. ``m.merge(m.reset())`` is a no-op; merge is associative."""
        fields, delta, cross = _moments.chan(self, other)
        weight = cross[..., 0, :] if cross.ndim else cross  # (k, 1, 1) when states are stacked: (k, 1)
        comoment = self.comoment + other.comoment + delta[..., 0, :] * delta[..., 1, :] * weight
        return self.replace(**fields, comoment=comoment)

    def _exact(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``m2`` and ``comoment`` with constant inputs' terms set to exactly 0, and that mask."""
        m2, constant = _moments.exact_m2(self)
        either = constant.any(0)
        return m2, torch.where(either, torch.zeros_like(self.comoment), self.comoment), either

    def _per_output(self, value: torch.Tensor) -> torch.Tensor:
        return value.squeeze(0) if self.num_outputs == 1 else value


class PearsonCorrCoef(_CoMoments):
    """Pearson correlation coefficient of ``preds`` and ``target``.

    Inputs have shape ``(N,)`` or ``(N, 1)``, or ``(N, num_outputs)`` for a
    coefficient per output.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import PearsonCorrCoef
        >>> preds, target = torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])
        >>> PearsonCorrCoef().update(preds, target).compute()
        tensor(0.9849)

    """

    def compute(self) -> torch.Tensor:
        """``C_xy / sqrt(M2_x * M2_y)`` per output; NaN for fewer than two samples or a constant input."""
        m2, co, constant = self._exact()
        r = (co / (m2[0] * m2[1]).sqrt()).clamp(-1.0, 1.0)
        undefined = constant | (self.total < 2)
        return self._per_output(torch.where(undefined, torch.full_like(r, float("nan")), r)).float()


class ConcordanceCorrCoef(_CoMoments):
    """Lin's concordance correlation coefficient, with TorchMetrics' sample (``N - 1``) moments.

    ``2 s_xy / (s_x² + s_y² + (mean_x - mean_y)²)``. Inputs as for
    :class:`PearsonCorrCoef`. A constant input is well defined here (0
    unless both inputs are the same constant, which is 0/0, NaN).

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import ConcordanceCorrCoef
        >>> m = ConcordanceCorrCoef()
        >>> m.update(torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])).compute()
        tensor(0.9777)

    """

    def compute(self) -> torch.Tensor:
        """``2 C_xy / (M2_x + M2_y + (n - 1) (mean_x - mean_y)²)`` per output; NaN below two samples."""
        m2, co, _ = self._exact()
        n = self.total.to(m2.dtype)
        gap = self.mean[0] - self.mean[1]
        ccc = 2 * co / (m2[0] + m2[1] + (n - 1) * gap * gap)
        ccc = torch.where(self.total < 2, torch.full_like(ccc, float("nan")), ccc.clamp(-1.0, 1.0))
        return self._per_output(ccc).float()


def _average_ranks(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks of the 1-d ``x`` in float64, ties given the mean of their ranks."""
    values, order = torch.sort(x, stable=True)
    _, inverse, counts = torch.unique_consecutive(values, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).to(torch.float64)
    mean_rank = ends - (counts.to(torch.float64) - 1) / 2  # mean of start+1 .. end
    ranks = torch.empty_like(x, dtype=torch.float64)
    ranks[order] = mean_rank[inverse]
    return ranks


class SpearmanCorrCoef(Metric):
    """Spearman rank correlation: Pearson's of the ranks, ties given their average rank.

    Exact: every sample is kept (``cat`` states, gathered in rank order), so
    memory grows with the data. Inputs as for :class:`PearsonCorrCoef`.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import SpearmanCorrCoef
        >>> preds, target = torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 7])
        >>> SpearmanCorrCoef().update(preds, target).compute()
        tensor(1.)
        >>> SpearmanCorrCoef().update(torch.tensor([1.0, 2, 2, 3]), torch.tensor([1.0, 3, 2, 4])).compute()
        tensor(0.9487)

    """

    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    preds: torch.Tensor = state("cat", default=torch.empty(0))
    target: torch.Tensor = state("cat", default=torch.empty(0))

    def __post_init__(self) -> None:
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")
        if self.num_outputs > 1:
            object.__setattr__(self, "preds", torch.empty(0, self.num_outputs))
            object.__setattr__(self, "target", torch.empty(0, self.num_outputs))

    def update(self, preds: Any, target: Any) -> SpearmanCorrCoef:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.preds, "outputs")
        if self.num_outputs == 1:
            p, t = p.reshape(-1), t.reshape(-1)
        return self.replace(preds=append(self.preds, p), target=append(self.target, t))

    def compute(self) -> torch.Tensor:
        """Pearson's coefficient of the average ranks, per output (in float64)."""
        p = self.preds.reshape(-1, self.num_outputs)
        t = self.target.reshape(-1, self.num_outputs)
        values = []
        for j in range(self.num_outputs):
            if p.shape[0] < 2:
                values.append(torch.tensor(float("nan"), dtype=torch.float64))
                continue
            rp, rt = _average_ranks(p[:, j]), _average_ranks(t[:, j])
            rp, rt = rp - rp.mean(), rt - rt.mean()
            values.append(((rp * rt).sum() / ((rp * rp).sum() * (rt * rt).sum()).sqrt()).clamp(-1.0, 1.0))
        rho = torch.stack(values).to(self.preds.dtype)
        return rho.squeeze(0) if self.num_outputs == 1 else rho
