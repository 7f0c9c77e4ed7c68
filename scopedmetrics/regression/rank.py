"""Kendall's rank correlation (tau a, b or c), with an optional asymptotic test.

Kendall's tau compares every pair of samples, so it keeps every sample in
``cat`` states (gathered in rank order), as Spearman does. ``compute`` counts
the pairs in ``O(n log² n)`` per output (Knight's method: sort by ``preds``
then ``target``, count the inversions of ``target`` by a vectorized merge),
not with TorchMetrics' ``n`` passes over all pairs; counts are exact int64.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_choice, check_positive_int, pair
from scopedmetrics.state import append, state, static

VARIANTS = ("a", "b", "c")
ALTERNATIVES = ("two-sided", "less", "greater", None)


def _rows(m: Metric) -> torch.Tensor:
    return torch.empty(0) if m.num_outputs == 1 else torch.empty(0, m.num_outputs)  # type: ignore[attr-defined]


def _tied_pairs(counts: torch.Tensor) -> tuple[float, float, float]:
    """From the sizes ``t`` of groups of equal values: ``Σ t(t-1)/2``, ``Σ t(t-1)(t-2)``, ``Σ t(t-1)(2t+5)``."""
    t = counts.to(torch.float64)
    pairs = t * (t - 1)
    return float(pairs.sum()) / 2, float((pairs * (t - 2)).sum()), float((pairs * (2 * t + 5)).sum())


def _group_sizes(sorted_values: torch.Tensor) -> torch.Tensor:
    """The sizes of the runs of equal values (rows, for 2-d) of ``sorted_values``."""
    sizes: torch.Tensor = torch.unique_consecutive(sorted_values, return_counts=True, dim=0)[1]
    return sizes


def inversions(r: torch.Tensor) -> int:
    """The number of pairs ``i < j`` with ``r[i] > r[j]`` in the 1-d int64 ``r`` (values below ``len(r)``).

    A bottom-up merge sort, one vectorized level at a time: blocks of width
    ``w`` are already sorted, and each element of a right block counts the
    elements of its left neighbour that exceed it (``searchsorted``). The tail
    is padded with ``len(r)``, larger than every value, so it adds none.
    """
    n = r.numel()
    size = 1 << max(0, (n - 1).bit_length())
    blocks = torch.cat([r, r.new_full((size - n,), n)]).reshape(-1, 1)
    total = 0
    while blocks.shape[0] > 1:
        w = blocks.shape[1]
        halves = blocks.reshape(-1, 2, w)
        left, right = halves[:, 0].contiguous(), halves[:, 1].contiguous()
        total += int((w - torch.searchsorted(left, right, right=True)).sum())
        blocks = torch.sort(halves.reshape(-1, 2 * w), dim=1).values
    return total


def kendall(x: torch.Tensor, y: torch.Tensor, variant: str, alternative: str | None) -> tuple[float, float]:
    """Kendall's tau of the 1-d ``x`` and ``y`` with TorchMetrics' definitions, and the p-value (NaN if none).

    ``a``: ``(C - D) / (C + D)``; ``b``: ``(C - D) / sqrt((n0 - T_x)(n0 - T_y))``;
    ``c``: ``2 (C - D) / (n² (m - 1) / m)`` with ``m`` the fewer distinct values.
    The test is the normal approximation with tie corrections, as TorchMetrics'.
    """
    n = x.numel()
    nan = float("nan")
    if n < 2:
        return nan, nan
    by_y = torch.argsort(y, stable=True)
    order = by_y[torch.argsort(x[by_y], stable=True)]  # by x, then by y within ties of x
    xs, ys = x[order], y[order]
    n0 = n * (n - 1) / 2
    tx, tx1, tx2 = _tied_pairs(_group_sizes(xs))
    y_sorted = torch.sort(y).values
    ty, ty1, ty2 = _tied_pairs(_group_sizes(y_sorted))
    txy, _, _ = _tied_pairs(_group_sizes(torch.stack([xs, ys], dim=1)))
    ranks = torch.searchsorted(y_sorted, ys.contiguous())  # equal values share a rank, order kept
    discordant = inversions(ranks)
    untied = n0 - tx - ty + txy  # C + D
    diff = untied - 2 * discordant  # C - D
    if variant == "a":
        tau = diff / untied if untied else nan
    elif variant == "b":
        denom = math.sqrt((n0 - tx) * (n0 - ty))
        tau = diff / denom if denom else nan
    else:
        m = min(_group_sizes(xs).numel(), _group_sizes(y_sorted).numel())
        scale = n * n * (m - 1) / m
        tau = 2 * diff / scale if scale else nan
    tau = max(-1.0, min(1.0, tau)) if not math.isnan(tau) else tau
    if alternative is None:
        return tau, nan
    base = n * (n - 1) * (2 * n + 5)
    if variant == "a":
        z = 3 * diff / math.sqrt(base / 2)
    else:
        pairs = n * (n - 1)
        var = (base - tx2 - ty2) / 18 + 2 * tx * ty / pairs
        var += tx1 * ty1 / (9 * pairs * (n - 2)) if n > 2 else nan  # 0/0 for two samples, as TorchMetrics
        z = diff / math.sqrt(var) if var > 0 else nan
    if math.isnan(z):
        return tau, nan
    if alternative == "two-sided":
        return tau, 2 * _normal_cdf(-abs(z))
    return tau, _normal_cdf(-z if alternative == "greater" else z)


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


class KendallRankCorrCoef(Metric):
    """Kendall rank correlation coefficient, tau ``variant`` ``"a"``, ``"b"`` (default) or ``"c"``.

    With ``t_test=True`` the value is ``(tau, p_value)``, the p-value of the
    asymptotic test against the ``alternative`` ``"two-sided"``, ``"less"`` or
    ``"greater"``. Inputs have shape ``(N,)`` or ``(N, 1)``, or
    ``(N, num_outputs)`` for a coefficient per output. Exact: every sample is
    kept (``cat`` states), so memory grows with the data. Fewer than two
    samples, or a constant input (tau b, c), give NaN.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import KendallRankCorrCoef
        >>> preds, target = torch.tensor([2.5, 0.0, 2, 8]), torch.tensor([3.0, -0.5, 2, 1])
        >>> KendallRankCorrCoef().update(preds, target).compute()
        tensor(0.3333)
        >>> KendallRankCorrCoef(t_test=True).update(preds, target).compute()
        (tensor(0.3333), tensor(0.4969))

    """

    variant: str = static(default="b")
    t_test: bool = static(default=False)
    alternative: str | None = static(default="two-sided")
    num_outputs: int = static(default=1)
    validate_args: bool = static(default=True)
    preds: torch.Tensor = state("cat", init=_rows)
    target: torch.Tensor = state("cat", init=_rows)

    def __post_init__(self) -> None:
        check_choice(self, "variant", VARIANTS)
        check_bool(self, "t_test")
        check_choice(self, "alternative", ALTERNATIVES)
        if self.t_test and self.alternative is None:
            raise ValueError("KendallRankCorrCoef: argument `alternative` is required with t_test=True, got None")
        check_positive_int(self, "num_outputs")
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> KendallRankCorrCoef:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p, t = pair(self, preds, target, self.preds, "outputs")
        if self.num_outputs == 1:
            p, t = p.reshape(-1), t.reshape(-1)
        return self.replace(preds=append(self.preds, p), target=append(self.target, t))

    def compute(self) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Tau per output (and the p-values with ``t_test``), in the inputs' dtype."""
        p = self.preds.reshape(-1, self.num_outputs).cpu()
        t = self.target.reshape(-1, self.num_outputs).cpu()
        alternative = self.alternative if self.t_test else None
        values = [kendall(p[:, j], t[:, j], self.variant, alternative) for j in range(self.num_outputs)]
        like = self.preds
        tau = torch.tensor([v[0] for v in values], dtype=like.dtype, device=like.device)
        p_value = torch.tensor([v[1] for v in values], dtype=like.dtype, device=like.device)
        if self.num_outputs == 1:
            tau, p_value = tau.squeeze(0), p_value.squeeze(0)
        return (tau, p_value) if self.t_test else tau
