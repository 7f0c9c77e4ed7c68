"""Association between two nominal variables, and agreement among raters, named and called as in TorchMetrics.

``CramersV``, ``TschuprowsT``, ``PearsonsContingencyCoefficient`` and
``TheilsU`` keep one int64 ``"sum"`` state, the ``(num_classes, num_classes)``
contingency table (rows: ``target``, columns: ``preds``), so any split of the
data reduces to the table of all of it, exactly. ``compute`` drops empty rows
and columns and does TorchMetrics' math in float64. ``FleissKappa`` keeps the
sums its formula needs (see its docstring), not the rows of every subject.
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

import torch

from scopedmetrics import _checks
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound="_Table")

NAN_STRATEGIES = ("replace", "drop")


def _drop_empty(table: torch.Tensor) -> torch.Tensor:
    table = table[table.sum(1) != 0]
    return table[:, table.sum(0) != 0]


def chi_squared(table: torch.Tensor, correction: bool) -> torch.Tensor:
    """Pearson's chi-squared statistic of a float table; Yates' correction where one degree of freedom and asked.

    Examples:
        >>> import torch
        >>> chi_squared(torch.tensor([[10.0, 20.0], [30.0, 40.0]]), correction=False)
        tensor(0.7937, dtype=torch.float64)
    """
    table = table.double()
    expected = torch.outer(table.sum(1), table.sum(0)) / table.sum()
    dof = expected.numel() - sum(expected.shape) + expected.ndim - 1
    if dof == 0:
        return torch.zeros((), dtype=torch.float64, device=table.device)
    if dof == 1 and correction:
        diff = expected - table
        direction = diff.sign()
        table = table + direction * torch.clamp(diff.abs(), max=0.5)  # scipy's Yates: never past the expectation
    return ((table - expected) ** 2 / expected).sum()


class _Table(Metric):
    """The ``(num_classes, num_classes)`` int64 table of (target, preds) and the options ``update`` reads."""

    num_classes: int = static()
    confmat: torch.Tensor = state(
        "sum", init=lambda m: torch.zeros(m.num_classes, m.num_classes, dtype=torch.long))
    nan_strategy: str = static(default="replace")
    nan_replace_value: float | None = static(default=0.0)

    def __post_init__(self) -> None:
        _checks.check_int(self, "num_classes", 1)
        _checks.check_choice(self, "nan_strategy", NAN_STRATEGIES)
        if self.nan_strategy == "replace":
            _checks.check_number(self, "nan_replace_value")
        elif self.nan_replace_value is not None:
            _checks.check_number(self, "nan_replace_value")

    def update(self: _M, preds: torch.Tensor, target: torch.Tensor) -> _M:
        """Fold in a batch: ``preds`` and ``target`` categories ``(N,)``, or scores ``(N, C)`` (their argmax)."""
        preds, target = _checks.tensor(self, "preds", preds), _checks.tensor(self, "target", target)
        for name, x in (("preds", preds), ("target", target)):
            _checks.ndim(self, name, x, (1, 2), "(N,) or (N, C)")
            if x.dtype == torch.bool:
                raise TypeError(f"{_checks.where(self)}: argument `{name}` must hold categories, got {x.dtype}")
        preds = preds.argmax(1) if preds.ndim == 2 else preds
        target = target.argmax(1) if target.ndim == 2 else target
        _checks.same_shape(self, "preds", preds, "target", target)
        if self.nan_strategy == "replace":
            value = float(self.nan_replace_value)  # type: ignore[arg-type]
            preds, target = preds.nan_to_num(value), target.nan_to_num(value)
        elif preds.is_floating_point() or target.is_floating_point():
            keep = ~(preds.isnan() | target.isnan())
            preds, target = preds[keep], target[keep]
        _checks.labels(self, "preds", preds, self.num_classes)
        _checks.labels(self, "target", target, self.num_classes)
        c = self.num_classes
        flat = target.long().to(self.confmat.device) * c + preds.long().to(self.confmat.device)
        counts = torch.bincount(flat, minlength=c * c).view(c, c)
        return self.replace(confmat=self.confmat + counts)

    def _table(self) -> torch.Tensor | None:
        table = _drop_empty(self.confmat.double())
        return table if table.sum() > 0 else None


def _nan(like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(float("nan"), device=like.device)


def _bias_corrected(owner: Any, table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """Bergsma's corrected phi squared, rows and columns; ``None`` (with a warning) where they are undefined."""
    n = table.sum()
    rows, cols = table.shape
    phi2 = chi_squared(table, True) / n
    phi2 = torch.clamp(phi2 - (rows - 1) * (cols - 1) / (n - 1), min=0.0)
    rows_c = rows - (rows - 1) ** 2 / (n - 1)
    cols_c = cols - (cols - 1) ** 2 / (n - 1)
    if torch.minimum(rows_c, cols_c) == 1:
        warnings.warn(f"{type(owner).__name__}.compute: bias correction is undefined for this table; "
                      "consider bias_correction=False", UserWarning, stacklevel=4)
        return None
    return phi2, rows_c, cols_c



@positional("num_classes", "bias_correction", "nan_strategy", "nan_replace_value")
class CramersV(_Table):
    """Cramér's V between two nominal variables, in ``[0, 1]``; with Bergsma's ``bias_correction`` by default.

    ``nan_strategy``: ``"replace"`` NaN with ``nan_replace_value`` or ``"drop"`` the rows holding one.

    Examples:
        >>> import torch
        >>> from scopedmetrics.nominal import CramersV
        >>> preds, target = torch.tensor([0, 1, 2, 2, 1, 0, 0, 1]), torch.tensor([0, 1, 2, 1, 1, 0, 2, 1])
        >>> CramersV(3, bias_correction=False).update(preds, target).compute()
        tensor(0.6922)
    """

    bias_correction: bool = static(default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        _checks.check_bool(self, "bias_correction")

    def compute(self) -> torch.Tensor:
        """The statistic of the reduced table, empty rows and columns dropped; NaN when it is empty."""
        table = self._table()
        if table is None:
            return _nan(self.confmat)
        rows, cols = table.shape
        if self.bias_correction:
            corrected = _bias_corrected(self, table)
            if corrected is None:
                return _nan(self.confmat)
            phi2, rows_c, cols_c = corrected
            value = (phi2 / torch.minimum(rows_c - 1, cols_c - 1)).sqrt()
        else:
            value = (chi_squared(table, False) / table.sum() / min(rows - 1, cols - 1)).sqrt()
        return value.clamp(0.0, 1.0).float()


@positional("num_classes", "bias_correction", "nan_strategy", "nan_replace_value")
class TschuprowsT(_Table):
    """Tschuprow's T between two nominal variables, in ``[0, 1]``; with Bergsma's ``bias_correction`` by default.

    Examples:
        >>> import torch
        >>> from scopedmetrics.nominal import TschuprowsT
        >>> preds, target = torch.tensor([0, 1, 2, 2, 1, 0, 0, 1]), torch.tensor([0, 1, 2, 1, 1, 0, 2, 1])
        >>> TschuprowsT(3, bias_correction=False).update(preds, target).compute()
        tensor(0.6922)
    """

    bias_correction: bool = static(default=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        _checks.check_bool(self, "bias_correction")

    def compute(self) -> torch.Tensor:
        """The statistic of the reduced table, empty rows and columns dropped; NaN when it is empty."""
        table = self._table()
        if table is None:
            return _nan(self.confmat)
        rows, cols = table.shape
        if self.bias_correction:
            corrected = _bias_corrected(self, table)
            if corrected is None:
                return _nan(self.confmat)
            phi2, rows_c, cols_c = corrected
            value = (phi2 / ((rows_c - 1) * (cols_c - 1)).sqrt()).sqrt()
        else:
            phi2 = chi_squared(table, False) / table.sum()
            value = (phi2 / ((rows - 1) * (cols - 1)) ** 0.5).sqrt()
        return value.clamp(0.0, 1.0).float()


@positional("num_classes", "nan_strategy", "nan_replace_value")
class PearsonsContingencyCoefficient(_Table):
    """Pearson's contingency coefficient ``sqrt(phi² / (1 + phi²))`` between two nominal variables.

    Examples:
        >>> import torch
        >>> from scopedmetrics.nominal import PearsonsContingencyCoefficient
        >>> preds, target = torch.tensor([0, 1, 2, 2, 1, 0, 0, 1]), torch.tensor([0, 1, 2, 1, 1, 0, 2, 1])
        >>> PearsonsContingencyCoefficient(3).update(preds, target).compute()
        tensor(0.6995)
    """

    def compute(self) -> torch.Tensor:
        """The statistic of the reduced table, empty rows and columns dropped; NaN when it is empty."""
        table = self._table()
        if table is None:
            return _nan(self.confmat)
        phi2 = chi_squared(table, False) / table.sum()
        return (phi2 / (1 + phi2)).sqrt().clamp(0.0, 1.0).float()


@positional("num_classes", "nan_strategy", "nan_replace_value")
class TheilsU(_Table):
    """Theil's uncertainty coefficient U(preds | target): the share of the entropy of ``preds`` that ``target`` gives.

    Examples:
        >>> import torch
        >>> from scopedmetrics.nominal import TheilsU
        >>> preds, target = torch.tensor([0, 1, 2, 2, 1, 0, 0, 1]), torch.tensor([0, 1, 2, 1, 1, 0, 2, 1])
        >>> TheilsU(3).update(preds, target).compute()
        tensor(0.5801)
    """

    def compute(self) -> torch.Tensor:
        """The statistic of the reduced table, empty rows and columns dropped; NaN when it is empty."""
        table = self._table()
        if table is None:
            return _nan(self.confmat)
        n = table.sum()
        p_xy = table / n
        p_y = (table.sum(1, keepdim=True) / n).expand_as(table)
        nz = p_xy > 0
        s_xy = (p_xy[nz] * (p_y[nz] / p_xy[nz]).log()).sum()
        p_x = table.sum(0) / n
        s_x = -(p_x * p_x.log()).sum()
        if s_x == 0:
            return torch.zeros((), device=self.confmat.device)
        return ((s_x - s_xy) / s_x).float()


class FleissKappa(Metric):
    """Fleiss' kappa: agreement among raters beyond chance, over subjects each rated by the same number of raters.

    ``mode="counts"``: ``ratings`` ``(N, categories)`` integer, how many raters
    put each subject in each category; ``mode="probs"``: ``ratings``
    ``(N, categories, raters)`` float scores, each rater's argmax its category.
    Every subject must have the same number of raters, at least 2 (TorchMetrics
    takes any and gives a kappa that means nothing). The state is the number of
    subjects, the sum of squared counts and the number of raters of a subject
    (int64 ``"sum"``/``"max"``), and the
    per-category totals: a ``"cat"`` state of at most one row per participant
    (``update`` adds into it), since the number of categories is not given up front.

    Examples:
        >>> import torch
        >>> from scopedmetrics.nominal import FleissKappa
        >>> ratings = torch.tensor([[3, 0, 0], [0, 3, 0], [1, 2, 0], [0, 0, 3]])
        >>> FleissKappa().update(ratings).compute()
        tensor(0.7447)
    """

    subjects: torch.Tensor = state("sum", default=0)
    squares: torch.Tensor = state("sum", default=0)
    raters: torch.Tensor = state("max", default=0)
    totals: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.long))
    mode: str = static(default="counts")

    _rows_of_any_kind = True  # the empty ``totals`` loads rows of any number of categories

    def __post_init__(self) -> None:
        _checks.check_choice(self, "mode", ("counts", "probs"))

    def update(self, ratings: torch.Tensor) -> FleissKappa:
        """Fold in a batch of subjects' ratings (see the class docstring for the two layouts)."""
        ratings = _checks.tensor(self, "ratings", ratings)
        if self.mode == "probs":
            _checks.ndim(self, "ratings", ratings, (3,), "(N, categories, raters)")
            _checks.floating(self, "ratings", ratings)
            _checks.finite(self, "ratings", ratings)
            k = ratings.shape[1]
            counts = torch.nn.functional.one_hot(ratings.argmax(1), k).sum(1)
        else:
            _checks.ndim(self, "ratings", ratings, (2,), "(N, categories)")
            if ratings.is_floating_point() or ratings.dtype == torch.bool or ratings.is_complex():
                raise TypeError(f"{_checks.where(self)}: argument `ratings` must hold integer counts, got "
                                f"{ratings.dtype}")
            _checks.labels(self, "ratings", ratings)
            counts = ratings.long()
        counts = counts.to(self.squares.device)
        width = counts.shape[1]
        if self.totals.ndim == 2 and self.totals.shape[1] != width:
            raise ValueError(f"{_checks.where(self)}: argument `ratings` must keep {self.totals.shape[1]} categories, "
                             f"got {width}")
        top = self.raters
        if counts.shape[0]:
            low, high = (int(x) for x in torch.aminmax(counts.sum(1)))
            if low != high or int(self.raters) not in (0, high) or high < 2:
                seen = f"{low}" if low == high else f"{low} to {high}"
                before = f" after subjects of {int(self.raters)}" if int(self.raters) not in (0, high) else ""
                raise ValueError(
                    f"{_checks.where(self)}: argument `ratings` must give every subject the same number of raters, "
                    f"at least 2; got {seen} per subject{before}"
                )
            top = torch.tensor(high, dtype=self.raters.dtype, device=self.raters.device)
        totals = counts.sum(0, keepdim=True)
        if self.totals.shape[0]:
            totals = totals + self.totals.sum(0, keepdim=True)
        return self.replace(subjects=self.subjects + counts.shape[0], squares=self.squares + (counts * counts).sum(),
                            raters=top, totals=totals)

    def compute(self) -> torch.Tensor:
        """Kappa of the reduced sums; NaN when no subject was rated."""
        if self.totals.ndim != 2 or self.subjects == 0:
            return _nan(self.subjects)
        if int(self.totals.sum()) != int(self.subjects) * int(self.raters):  # ranks rated by different numbers
            raise ValueError(
                f"{type(self).__name__}.compute: every subject must have the same number of raters, but the "
                f"participants' subjects had different numbers (at most {int(self.raters)})"
            )
        n = self.raters.double()
        subjects = self.subjects.double()
        p_i = self.totals.sum(0).double() / (subjects * n)
        p_bar = (self.squares.double() / subjects - n) / (n * (n - 1))
        pe_bar = (p_i * p_i).sum()
        return ((p_bar - pe_bar) / (1 - pe_bar + 1e-5)).float()
