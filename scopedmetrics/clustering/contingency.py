"""Extrinsic clustering scores, from a contingency table of (predicted, true) cluster ids.

Cluster ids are arbitrary integers, not known up front and not shared between
the two labelings, so the state cannot be a fixed-size table. It is a
``"cat"`` state of the distinct ``(pred, target)`` pairs seen, ``pairs``
``(k, 2)`` int64, with their counts, ``counts`` ``(k,)`` int64: each ``update``
compacts the rows it holds to unique pairs, so the state grows with the number
of distinct pairs, not with the number of samples. The reduction concatenates
the ranks' pairs (a pair may then appear once per rank); ``compute`` builds the
contingency table from the reduced rows, adding the counts of equal pairs, so
any split of the data gives the table of all of it, exactly (int64 counts).
The table is kept by its non-zero cells (``Cells``), never dense.

Values follow scikit-learn (natural logarithms, its conventions for
degenerate labelings such as one cluster on both sides); see
``docs/clustering.md``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, TypeVar

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound="_Contingency")

AVERAGE_METHODS = ("min", "geometric", "arithmetic", "max")


def _labels(owner: Any, arg: str, value: Any) -> torch.Tensor:
    x = _checks.tensor(owner, arg, value)
    if x.is_floating_point() or x.dtype == torch.bool:
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` must hold integer cluster ids, got {x.dtype}")
    return x


_HALF = 1 << 31  # ids in [-2**31, 2**31) pack two to an int64 key


def _compacted(pairs: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``pairs`` made unique (in row order), each with the sum of its ``counts``.

    When every id fits in 32 bits, a pair is one int64 key
    ``pred * 2**32 + (target + 2**31)``, which orders as the row does, and a
    1-d ``unique`` sorts the keys: at 10^6 pairs 39 ms on the CPU, where
    ``unique(dim=0)`` took 1.28 s. Wider ids take the row-wise ``unique``
    (``_compacted_rows``, the reference the property test compares with).
    """
    if pairs.shape[0] == 0:
        return pairs, counts
    low, high = torch.aminmax(pairs)
    if low.item() < -_HALF or high.item() >= _HALF:
        return _compacted_rows(pairs, counts)
    keys, inverse = torch.unique(pairs[:, 0] * (2 * _HALF) + (pairs[:, 1] + _HALF), return_inverse=True)
    unique = torch.stack([keys >> 32, (keys & (2 * _HALF - 1)) - _HALF], 1)
    return unique, _summed(unique.shape[0], inverse, counts)


def _compacted_rows(pairs: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``_compacted`` by the row-wise ``unique``: any int64 ids."""
    unique, inverse = torch.unique(pairs, dim=0, return_inverse=True)
    return unique, _summed(unique.shape[0], inverse, counts)


def _summed(k: int, inverse: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    return torch.zeros(k, dtype=torch.long, device=counts.device).index_add_(0, inverse, counts)


class Cells(NamedTuple):
    """A contingency table by its non-zero cells: ``nij`` at ``(row, col)``, with its margins and total.

    Rows are true classes and columns predicted clusters, in ascending id order;
    ``nij``, the row sums ``a``, the column sums ``b`` and the total ``n`` are
    float64 (exact counts to 2**53). Memory grows with the distinct pairs, not
    with classes x clusters: a dense table of 4,000 singleton ids a side took
    374 MiB to build, one of 40,000 would take about 38 GB.
    """

    nij: torch.Tensor
    row: torch.Tensor
    col: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    n: torch.Tensor

    @property
    def shape(self) -> tuple[int, int]:
        """``(classes, clusters)``: the dense table's shape."""
        return self.a.shape[0], self.b.shape[0]


def contingency_cells(pairs: torch.Tensor, counts: torch.Tensor) -> Cells:
    """The non-zero cells of the table of ``(pred, target)`` pairs with counts, equal pairs added.

    Examples:
        >>> import torch
        >>> c = contingency_cells(torch.tensor([[5, 0], [7, 0], [5, 0], [7, 9]]), torch.tensor([1, 2, 1, 1]))
        >>> c.nij.tolist(), c.row.tolist(), c.col.tolist(), c.a.tolist(), c.b.tolist()
        ([2.0, 2.0, 1.0], [0, 0, 1], [0, 1, 1], [4.0, 1.0], [2.0, 3.0])
    """
    pairs, counts = _compacted(pairs.long(), counts.long())
    cols, col = torch.unique(pairs[:, 0], return_inverse=True)
    rows, row = torch.unique(pairs[:, 1], return_inverse=True)
    nij = counts.double()
    a = torch.zeros(rows.shape[0], dtype=torch.float64, device=nij.device).index_add_(0, row, nij)
    b = torch.zeros(cols.shape[0], dtype=torch.float64, device=nij.device).index_add_(0, col, nij)
    return Cells(nij, row, col, a, b, nij.sum())


def _entropy(sizes: torch.Tensor) -> torch.Tensor:
    n = sizes.sum()
    p = sizes[sizes > 0] / n
    return -(p * p.log()).sum() if p.numel() else torch.zeros((), dtype=sizes.dtype, device=sizes.device)


def _one_cluster(cells: Cells) -> bool:
    """Whether either labeling (every class and cluster seen) holds at most one cluster.

    Such a labeling shares no information with any other: its mutual
    information, and so the expected one, is exactly 0 (scikit-learn's rule).
    Computed, the sums leave rounding of about 1e-16, and a normaliser of 0
    (the geometric or min mean with that labeling's entropy) would blow it up.
    """
    return min(cells.shape) <= 1


def _mutual_info(cells: Cells) -> torch.Tensor:
    """Mutual information (nats) of a contingency table; 0 for an empty one or one cluster on a side."""
    n, nij = cells.n, cells.nij
    if n == 0 or _one_cluster(cells):
        return torch.zeros((), dtype=torch.float64, device=nij.device)
    outer = cells.a[cells.row] * cells.b[cells.col]
    return ((nij / n) * (nij.log() + n.log() - outer.log())).sum().clamp_min(0.0)


def _generalized_mean(x: torch.Tensor, y: torch.Tensor, method: str) -> torch.Tensor:
    if method == "min":
        return torch.minimum(x, y)
    if method == "max":
        return torch.maximum(x, y)
    if method == "geometric":
        return (x * y).sqrt()
    return (x + y) / 2


def _expected_mutual_info(cells: Cells) -> torch.Tensor:
    """Expected mutual information of two random labelings with the table's marginals (Vinh et al., 2010)."""
    if _one_cluster(cells):
        return torch.zeros((), dtype=torch.float64, device=cells.n.device)
    n = float(cells.n)
    a = cells.a.tolist()
    dev = cells.n.device
    lg = torch.lgamma
    bt = cells.b
    lg_b, lg_nb = lg(bt + 1), lg(n - bt + 1)
    total = torch.zeros((), dtype=torch.float64, device=dev)
    lg_n = math.lgamma(n + 1)
    for ai in a:
        hi = torch.minimum(bt, torch.tensor(ai, dtype=torch.float64, device=dev))  # (C,)
        lo = torch.clamp(ai + bt - n, min=1.0)
        top = int(hi.max()) if hi.numel() else 0
        if top < 1:
            continue
        nij = torch.arange(1, top + 1, dtype=torch.float64, device=dev)[:, None]  # (K, 1)
        ok = (nij >= lo) & (nij <= hi)
        term = nij / n * (torch.log(n * nij) - math.log(ai) - bt.log())
        log_w = (math.lgamma(ai + 1) + lg_b + math.lgamma(n - ai + 1) + lg_nb - lg_n - lg(nij + 1)
                 - lg((ai - nij).clamp_min(0) + 1) - lg((bt - nij).clamp_min(0) + 1)
                 - lg((n - ai - bt + nij).clamp_min(0) + 1))
        total = total + torch.where(ok, term * log_w.exp(), 0.0).sum()
    return total


def _pair_counts(cells: Cells) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(both, same_target, same_pred, all)``: unordered sample pairs together in both, in target, in preds, all."""
    nij, a, b, n = cells.nij, cells.a, cells.b, cells.n
    both = (nij * (nij - 1)).sum() / 2
    return both, (a * (a - 1)).sum() / 2, (b * (b - 1)).sum() / 2, n * (n - 1) / 2


def _float(x: torch.Tensor | float, like: Cells) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float64, device=like.n.device).float()


class _Contingency(Metric):
    """The distinct ``(pred, target)`` pairs seen and their counts; subclasses compute a score of the table."""

    pairs: torch.Tensor = state("cat", default=lambda: torch.zeros(0, 2, dtype=torch.long))
    counts: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.long))

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: predicted and true cluster ids, integer tensors of one shape ``(N,)``."""
        preds, target = _labels(self, "preds", preds), _labels(self, "target", target)
        _checks.same_shape(self, "preds", preds, "target", target)
        _checks.ndim(self, "preds", preds, (1,), "(N,)")
        batch = torch.stack([preds.long(), target.long()], 1).to(self.pairs.device)
        pairs = torch.cat([self.pairs, batch])
        counts = torch.cat([self.counts, torch.ones(batch.shape[0], dtype=torch.long, device=batch.device)])
        pairs, counts = _compacted(pairs, counts)
        return self.replace(pairs=pairs, counts=counts)

    def _table(self) -> Cells:
        return contingency_cells(self.pairs, self.counts)


class MutualInfoScore(_Contingency):
    """Mutual information (in nats) between predicted and true clusterings, as ``sklearn.metrics.mutual_info_score``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import MutualInfoScore
        >>> MutualInfoScore().update(torch.tensor([2, 2, 5, 5]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.6931)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        return _float(_mutual_info(table), table)


class NormalizedMutualInfoScore(_Contingency):
    """Mutual information over a mean of the two entropies, as ``sklearn.metrics.normalized_mutual_info_score``.

    ``average_method``: ``"min"``, ``"geometric"``, ``"arithmetic"`` (default) or ``"max"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import NormalizedMutualInfoScore
        >>> m = NormalizedMutualInfoScore("max")
        >>> m.update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.6667)
    """

    average_method: str = static(default="arithmetic")

    def __post_init__(self) -> None:
        _checks.check_choice(self, "average_method", AVERAGE_METHODS)

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        r, c = table.shape
        if r == c == 1 or r == c == 0:
            return _float(1.0, table)
        mi = _mutual_info(table)
        if mi == 0:
            return _float(0.0, table)
        norm = _generalized_mean(_entropy(table.a), _entropy(table.b), self.average_method)
        return _float(mi / norm, table)


class AdjustedMutualInfoScore(_Contingency):
    """Mutual information adjusted for chance, as ``sklearn.metrics.adjusted_mutual_info_score``.

    ``average_method``: ``"min"``, ``"geometric"``, ``"arithmetic"`` (default) or ``"max"``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import AdjustedMutualInfoScore
        >>> m = AdjustedMutualInfoScore()
        >>> m.update(torch.tensor([0, 0, 1, 1, 2, 2]), torch.tensor([0, 0, 1, 1, 1, 2])).compute()
        tensor(0.5024)
    """

    average_method: str = static(default="arithmetic")

    def __post_init__(self) -> None:
        _checks.check_choice(self, "average_method", AVERAGE_METHODS)

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        r, c = table.shape
        if r == c == 1 or r == c == 0:
            return _float(1.0, table)
        if max(r, c) == int(table.n) and min(r, c) > 1:
            # one side all singletons: every table of these margins is this one relabelled, so the mutual
            # information equals its expectation exactly, and their computed difference is rounding noise
            # (0.0, 1.18, ... for identical labelings); 0/0 where the normalizer equals them too
            return _float(1.0 if r == c or self.average_method == "min" else 0.0, table)
        mi = _mutual_info(table)
        emi = _expected_mutual_info(table)
        norm = _generalized_mean(_entropy(table.a), _entropy(table.b), self.average_method)
        den = norm - emi
        eps = torch.finfo(torch.float64).eps
        den = torch.clamp(den, max=-eps) if den < 0 else torch.clamp(den, min=eps)
        return _float((mi - emi) / den, table)


class RandScore(_Contingency):
    """Rand index: the share of sample pairs on which the clusterings agree, as ``sklearn.metrics.rand_score``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import RandScore
        >>> RandScore().update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.8333)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        both, same_t, same_p, total = _pair_counts(table)
        agree = total + 2 * both - same_t - same_p
        if total == 0 or agree == total:
            return _float(1.0, table)
        return _float(agree / total, table)


class AdjustedRandScore(_Contingency):
    """Rand index adjusted for chance, as ``sklearn.metrics.adjusted_rand_score``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import AdjustedRandScore
        >>> AdjustedRandScore().update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.5714)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        both, same_t, same_p, total = _pair_counts(table)
        tp, fp, fn = both, same_p - both, same_t - both  # pairs: together in both, in preds only, in target only
        tn = total - tp - fp - fn
        if fn == 0 and fp == 0:
            return _float(1.0, table)
        return _float(2 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)), table)


def _homogeneity_completeness(table: Cells) -> tuple[torch.Tensor, torch.Tensor]:
    if table.n == 0:
        return torch.ones((), dtype=torch.float64), torch.ones((), dtype=torch.float64)
    mi = _mutual_info(table)
    h_t, h_p = _entropy(table.a), _entropy(table.b)
    one = torch.ones((), dtype=torch.float64, device=table.n.device)
    return (mi / h_t if h_t > 0 else one), (mi / h_p if h_p > 0 else one)


class HomogeneityScore(_Contingency):
    """Homogeneity: each predicted cluster holds members of one true class, as ``sklearn.metrics.homogeneity_score``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import HomogeneityScore
        >>> HomogeneityScore().update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(1.)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        return _float(_homogeneity_completeness(table)[0], table)


class CompletenessScore(_Contingency):
    """Completeness: each true class lies in one predicted cluster, as ``sklearn.metrics.completeness_score``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import CompletenessScore
        >>> CompletenessScore().update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.6667)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        return _float(_homogeneity_completeness(table)[1], table)


class VMeasureScore(_Contingency):
    """V-measure: the ``beta``-weighted harmonic mean of homogeneity and completeness (``sklearn.metrics``).

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import VMeasureScore
        >>> VMeasureScore(beta=2.0).update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.7500)
    """

    beta: float = static(default=1.0)

    def __post_init__(self) -> None:
        _checks.check_number(self, "beta", 0.0)

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        h, c = _homogeneity_completeness(table)
        if h + c == 0:
            return _float(0.0, table)
        return _float((1 + self.beta) * h * c / (self.beta * h + c), table)


class FowlkesMallowsIndex(_Contingency):
    """Fowlkes-Mallows index: geometric mean of pair precision and recall, as ``sklearn.metrics``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.clustering import FowlkesMallowsIndex
        >>> FowlkesMallowsIndex().update(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.7071)
    """

    def compute(self) -> torch.Tensor:
        """The score of the contingency table of the reduced pairs."""
        table = self._table()
        both, same_t, same_p, _ = _pair_counts(table)
        if both == 0:
            return _float(0.0, table)
        return _float((both / same_p).sqrt() * (both / same_t).sqrt(), table)
