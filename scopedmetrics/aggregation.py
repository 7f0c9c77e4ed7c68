"""Aggregation metrics: running sum, mean, max, min and concatenation of values.

Names and arguments follow TorchMetrics' ``SumMetric``, ``MeanMetric``, ...;
``nan_strategy`` is ``"error"``, ``"warn"`` (drop with a warning), ``"ignore"``
(drop), ``"disable"`` (keep NaNs) or a float to replace them with.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.state import append, state, static

_STRATEGIES = ("error", "warn", "ignore", "disable")


def _real(owner: Metric, value: Any, name: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``value`` (a tensor or a number) as a real tensor, cast to ``dtype`` when given."""
    metric = type(owner).__name__
    if not isinstance(value, (torch.Tensor, int, float)):
        raise TypeError(f"{metric}.update: {name} must be a tensor or a number, got {type(value).__name__}")
    x = value if isinstance(value, torch.Tensor) else torch.tensor(value)
    if x.is_complex():
        raise TypeError(f"{metric}.update: {name} must be real, got {x.dtype}")
    return x if dtype is None else x.to(dtype)


def _without_nan(owner: Metric, **named: torch.Tensor) -> list[torch.Tensor]:
    """The tensors (of one shape) with NaNs handled per ``nan_strategy``, entries dropped together.

    Dropping removes whole rows (dim 0) so that a value and its weight, or a
    row of a ``Cat``, go together.
    """
    metric, strategy = type(owner).__name__, getattr(owner, "nan_strategy", "disable")
    tensors = list(named.values())
    floats = [(n, t) for n, t in named.items() if t.is_floating_point()]
    if strategy == "disable" or not floats:
        return tensors
    nans = {n: torch.isnan(t) for n, t in floats}
    bad = [n for n, m in nans.items() if bool(m.any())]
    if not bad:
        return tensors
    if strategy == "error":
        raise ValueError(f"{metric}.update: {bad[0]} contains NaN (nan_strategy='error')")
    if isinstance(strategy, float):
        return [
            torch.where(nans[n], torch.tensor(strategy, dtype=t.dtype), t) if n in nans else t for n, t in named.items()
        ]
    if strategy == "warn":
        warnings.warn(f"{metric}.update: dropping NaN values from {', '.join(bad)}", UserWarning, stacklevel=3)
    rows = torch.zeros(tensors[0].shape[:1], dtype=torch.bool) if tensors[0].ndim else torch.zeros((), dtype=torch.bool)
    for m in nans.values():
        rows = rows | (m.reshape(m.shape[0], -1).any(1) if m.ndim > 1 else m)
    return [t[~rows] for t in tensors]


def _values(owner: Metric, value: Any, dtype: torch.dtype | None) -> torch.Tensor:
    """``value`` as a real tensor of ``dtype`` (its own when ``None``), NaNs handled."""
    return _without_nan(owner, value=_real(owner, value, "value", dtype))[0]


def _check_strategy(owner: Metric) -> None:
    s = owner.nan_strategy  # type: ignore[attr-defined]
    if not (isinstance(s, float) or s in _STRATEGIES):
        raise ValueError(f"{type(owner).__name__}: nan_strategy must be one of {_STRATEGIES} or a float, got {s!r}")


class Sum(Metric):
    """Running sum of every value seen.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.Sum().update(torch.tensor([1.0, 2.0])).update(3.0).compute()
        tensor(6.)
    """

    sum_value: torch.Tensor = state("sum", default=0.0)
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Sum:
        x = _values(self, value, self.sum_value.dtype)
        return self.replace(sum_value=self.sum_value + x.sum())

    def compute(self) -> torch.Tensor:
        return self.sum_value


class Max(Metric):
    """Largest value seen (``-inf`` before any).

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.Max().update(torch.tensor([1.0, 7.0, 3.0])).compute()
        tensor(7.)
    """

    max_value: torch.Tensor = state("max")
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Max:
        x = _values(self, value, self.max_value.dtype)
        if x.numel() == 0:
            return self.replace()
        return self.replace(max_value=torch.maximum(self.max_value, x.max()))

    def compute(self) -> torch.Tensor:
        return self.max_value


class Min(Metric):
    """Smallest value seen (``+inf`` before any).

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.Min().update(torch.tensor([4.0, -2.0])).compute()
        tensor(-2.)
    """

    min_value: torch.Tensor = state("min")
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Min:
        x = _values(self, value, self.min_value.dtype)
        if x.numel() == 0:
            return self.replace()
        return self.replace(min_value=torch.minimum(self.min_value, x.min()))

    def compute(self) -> torch.Tensor:
        return self.min_value


class Mean(Metric):
    """Weighted mean of every value seen: ``sum(w * x) / sum(w)``.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.Mean().update(torch.tensor([1.0, 3.0])).update(5.0, weight=2.0).compute()
        tensor(3.5000)
    """

    mean_value: torch.Tensor = state("sum", default=0.0)
    weight: torch.Tensor = state("sum", default=0.0)
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any, weight: Any = 1.0) -> Mean:
        fast = self._unweighted(value, weight)
        if fast is not None:
            return fast
        x = _real(self, value, "value", self.mean_value.dtype)
        w = _real(self, weight, "weight", self.weight.dtype)
        if w.shape != x.shape:
            try:
                w = torch.broadcast_to(w, x.shape)
            except RuntimeError:
                raise ValueError(
                    f"Mean.update: weight of shape {tuple(w.shape)} does not broadcast to value {tuple(x.shape)}"
                ) from None
        x, w = _without_nan(self, value=x, weight=w)
        if bool((w < 0).any()):
            raise ValueError("Mean.update: weight must be non-negative")
        return self.replace(mean_value=self.mean_value + (x * w).sum(), weight=self.weight + w.sum())

    def _unweighted(self, value: Any, weight: Any) -> Mean | None:
        """The common case in three ops: a tensor of the state's dtype, weight 1 (``None``: take the general path).

        Adding ``x.sum()`` and ``x.numel()`` is what the general path computes for
        unit weights. A sum that is not NaN proves there is no NaN to handle; a
        NaN sum (NaNs, or opposite infinities) leaves the batch to the general path.
        """
        dtype = self.mean_value.dtype
        if type(weight) not in (float, int) or weight != 1 or not isinstance(value, torch.Tensor):
            return None
        if value.dtype != dtype or value.device != self.mean_value.device:
            return None
        total = value.sum()
        if self.nan_strategy != "disable" and math.isnan(total.item()):
            return None
        return self.replace(mean_value=self.mean_value + total, weight=self.weight + value.numel())

    def compute(self) -> torch.Tensor:
        return self.mean_value / self.weight


class Cat(Metric):
    """Every value seen, concatenated along dim 0 in rank order.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.Cat().update(torch.tensor([1.0, 2.0])).update(3.0).compute()
        tensor([1., 2., 3.])
    """

    value: torch.Tensor = state("cat")
    nan_strategy: Any = static(default="warn")

    _rows_of_any_kind = True  # a generic container: its empty state loads rows of any dtype and shape

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Cat:
        x = _real(self, value, "value")
        x = x.reshape(1) if x.ndim == 0 else x
        rows = self.value
        if rows.numel() or rows.shape[0]:  # earlier values fix the dtype and the row shape
            if x.dtype != rows.dtype and not torch.can_cast(x.dtype, rows.dtype):
                raise TypeError(f"Cat.update: value has dtype {x.dtype}, earlier values are {rows.dtype}")
            if x.shape[1:] != rows.shape[1:]:
                raise ValueError(
                    f"Cat.update: value has rows of shape {tuple(x.shape[1:])}, "
                    f"earlier values have rows of shape {tuple(rows.shape[1:])}"
                )
            x = x.to(rows.dtype)
        elif not isinstance(value, torch.Tensor):
            x = x.to(rows.dtype if x.is_floating_point() else x.dtype)
        return self.replace(value=append(rows, _values(self, x, None)))

    def compute(self) -> torch.Tensor:
        return self.value
