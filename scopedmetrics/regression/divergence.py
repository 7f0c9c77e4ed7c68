"""Kullback-Leibler and Jensen-Shannon divergences between rows of two distributions.

As for cosine similarity, each row's divergence is final once seen:
``"mean"`` and ``"sum"`` keep a running sum and count, ``"none"`` keeps one
value per row in a ``cat`` state.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import torch

from scopedmetrics._checks import require
from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_choice, folded, pair, where
from scopedmetrics.regression.similarity import REDUCTIONS, reduce_rows
from scopedmetrics.state import append, state, static

_D = TypeVar("_D", bound="_Divergence")


def check_distributions(owner: Metric, p: torch.Tensor, q: torch.Tensor) -> None:
    """Refuse rows that are not distributions: non-negative weights with a positive sum, or log-probabilities.

    With ``owner.log_prob`` the values may be ``-inf`` (probability 0), never NaN or ``+inf``.
    One ``aminmax`` per input reads the values (NaN propagates to both extremes;
    see ``_checks.all_finite``).
    """
    for name, x in (("p", p), ("q", q)):
        if x.numel() == 0:  # no rows, or rows of no entries (which sum to 0)
            require(f"{where(owner)}: argument `{name}` has a row that sums to 0", owner.log_prob or not x.shape[0])  # type: ignore[attr-defined]
            continue
        low, high = torch.aminmax(x)
        if owner.log_prob:  # type: ignore[attr-defined]
            bad = torch.isnan(high) | (high == float("inf"))
            require(f"{where(owner)}: argument `{name}` contains NaN or +inf log-probabilities", ~bad)
            continue
        finite = torch.isfinite(low) & torch.isfinite(high)  # _checks.all_finite, whose extremes serve below
        require(f"{where(owner)}: argument `{name}` contains non-finite values (NaN or inf)", finite)
        require(f"{where(owner)}: argument `{name}` has negative probabilities", low >= 0)
        require(f"{where(owner)}: argument `{name}` has a row that sums to 0", x.sum(1).amin() > 0)


def _kl_terms(p: torch.Tensor, q: torch.Tensor, log_prob: bool) -> torch.Tensor:
    """Per row, ``KL(p || q)`` of normalized probabilities, or of log-probabilities (``-inf`` is 0)."""
    zero = torch.zeros((), dtype=p.dtype, device=p.device)
    if log_prob:
        return torch.where(p == float("-inf"), zero, p.exp() * (p - q)).sum(1)
    return torch.where(p > 0, p * (p / q).log(), zero).sum(1)


class _Divergence(Metric):
    """A divergence of each row of ``p`` from the same row of ``q`` (``_rows``), then reduced as ``reduction`` says."""

    log_prob: bool = static(default=False)
    reduction: str | None = static(default="mean")
    validate_args: bool = static(default=True)
    sum_divergence: torch.Tensor = state("sum", default=0.0)
    total: torch.Tensor = state("sum", default=0)
    divergence: torch.Tensor = state("cat", default=torch.empty(0))

    def __post_init__(self) -> None:
        check_bool(self, "log_prob")
        check_choice(self, "reduction", REDUCTIONS)
        check_bool(self, "validate_args")

    def _rows(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Each row's divergence of checked ``(N, D)`` inputs."""
        raise NotImplementedError

    def update(self: _D, p: Any, q: Any) -> _D:
        """Fold in one batch of distributions ``p`` and ``q``; ``self`` is unchanged."""
        p, q = pair(self, p, q, self.sum_divergence, "rows", names=("p", "q"), finite=False)
        if self.validate_args:
            check_distributions(self, p, q)
        rows = self._rows(p, q)
        if self.reduction in ("none", None):
            return self.replace(divergence=append(self.divergence, rows), total=self.total + rows.shape[0])
        return self.replace(sum_divergence=folded(self.sum_divergence, rows.sum()), total=self.total + rows.shape[0])

    def compute(self) -> torch.Tensor:
        """Reduce the per-row divergences as ``reduction`` says."""
        return reduce_rows(self, self.sum_divergence, self.divergence)


def _normalised(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum(1, keepdim=True)


class KLDivergence(_Divergence):
    """KL divergence ``D_KL(p || q)`` of each row of ``p`` from the same row of ``q``, then reduced.

    ``p`` and ``q`` have shape ``(N, D)``. With ``log_prob=False`` they are
    non-negative weights, each row normalised to sum to 1 (a row summing to
    0 is refused); with ``log_prob=True`` they are log-probabilities, used as
    given (``-inf`` is probability 0). Where ``q`` is 0 and ``p`` is not the
    divergence is ``inf``. ``reduction`` is ``"mean"`` (NaN with no rows),
    ``"sum"`` or ``"none"``/``None``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import KLDivergence
        >>> p = torch.tensor([[0.36, 0.48, 0.16]])
        >>> q = torch.tensor([[1 / 3, 1 / 3, 1 / 3]])
        >>> KLDivergence().update(p, q).compute()
        tensor(0.0853)
        >>> KLDivergence(log_prob=True).update(p.log(), q.log()).compute()
        tensor(0.0853)

    """

    def _rows(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        if not self.log_prob:
            p, q = _normalised(p), _normalised(q)
        return _kl_terms(p, q, self.log_prob)


class JensenShannonDivergence(_Divergence):
    """Jensen-Shannon divergence ``(KL(p || m) + KL(q || m)) / 2``, ``m = (p + q) / 2``, of each row, then reduced.

    Inputs, ``log_prob`` and ``reduction`` as for :class:`KLDivergence`; the
    divergence is symmetric and lies in ``[0, log 2]`` (natural logarithm), so
    it is finite even where one distribution is 0 and the other is not.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import JensenShannonDivergence
        >>> p = torch.tensor([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]])
        >>> q = torch.tensor([[0.3, 0.7], [0.4, 0.6], [0.5, 0.5]])
        >>> JensenShannonDivergence().update(p, q).compute()
        tensor(0.0259)
        >>> JensenShannonDivergence(log_prob=True, reduction="sum").update(p.log(), q.log()).compute()
        tensor(0.0776)

    """

    def _rows(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        if self.log_prob:
            m = torch.logaddexp(p, q) - math.log(2.0)
        else:
            p, q = _normalised(p), _normalised(q)
            m = (p + q) / 2
        return (_kl_terms(p, m, self.log_prob) + _kl_terms(q, m, self.log_prob)) / 2
