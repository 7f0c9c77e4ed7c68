"""Kullback-Leibler divergence between rows of two distributions.

As for cosine similarity, each row's divergence is final once seen:
``"mean"`` and ``"sum"`` keep a running sum and count, ``"none"`` keeps one
value per row in a ``cat`` state.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_choice, pair, where
from scopedmetrics.regression.similarity import REDUCTIONS, reduce_rows
from scopedmetrics.state import append, state, static


class KLDivergence(Metric):
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

    def _check_domain(self, p: torch.Tensor, q: torch.Tensor) -> None:
        for name, x in (("p", p), ("q", q)):
            if self.log_prob:
                if bool((torch.isnan(x) | (x == float("inf"))).any()):
                    raise ValueError(
                        f"{where(self)}: argument `{name}` contains NaN or +inf log-probabilities"
                    )
                continue
            if not bool(torch.isfinite(x).all()):
                raise ValueError(f"{where(self)}: argument `{name}` contains non-finite values (NaN or inf)")
            if bool((x < 0).any()):
                raise ValueError(f"{where(self)}: argument `{name}` has negative probabilities")
            if bool((x.sum(1) <= 0).any()):
                raise ValueError(f"{where(self)}: argument `{name}` has a row that sums to 0")

    def update(self, p: Any, q: Any) -> KLDivergence:
        """Fold in one batch of distributions ``p`` and ``q``; ``self`` is unchanged."""
        p, q = pair(self, p, q, self.sum_divergence, "rows", names=("p", "q"), finite=False)
        if self.validate_args:
            self._check_domain(p, q)
        zero = torch.zeros((), dtype=p.dtype, device=p.device)
        if self.log_prob:
            terms = torch.where(p == float("-inf"), zero, p.exp() * (p - q))
        else:
            p = p / p.sum(1, keepdim=True)
            q = q / q.sum(1, keepdim=True)
            terms = torch.where(p > 0, p * (p / q).log(), zero)
        kl = terms.sum(1)
        if self.reduction in ("none", None):
            return self.replace(divergence=append(self.divergence, kl), total=self.total + kl.shape[0])
        return self.replace(sum_divergence=self.sum_divergence + kl.sum(), total=self.total + kl.shape[0])

    def compute(self) -> torch.Tensor:
        """Reduce the per-row divergences as ``reduction`` says."""
        return reduce_rows(self, self.sum_divergence, self.divergence)
