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


def _values(owner: Metric, value: Any, dtype: torch.dtype, name: str = "value") -> torch.Tensor:
    """``value`` as a tensor of the state's dtype, with NaNs handled per ``nan_strategy``."""
    metric = type(owner).__name__
    if not isinstance(value, (torch.Tensor, int, float)):
        raise TypeError(f"{metric}.update: {name} must be a tensor or a number, got {type(value).__name__}")
    x = torch.as_tensor(value)
    if x.is_complex():
        raise TypeError(f"{metric}.update: {name} must be real, got {x.dtype}")
    x = x.to(dtype)
    strategy = getattr(owner, "nan_strategy", "disable")
    if strategy == "disable" or not x.is_floating_point():
        return x
    nan = torch.isnan(x)
    if not bool(nan.any()):
        return x
    if strategy == "error":
        raise ValueError(f"{metric}.update: {name} contains NaN (nan_strategy='error')")
    if isinstance(strategy, float):
        return torch.where(nan, torch.tensor(strategy, dtype=dtype), x)
    if strategy == "warn":
        warnings.warn(f"{metric}.update: dropping NaN values from {name}", UserWarning, stacklevel=3)
    return x[~nan]


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
        x = _values(self, value, self.mean_value.dtype)
        w = torch.as_tensor(weight, dtype=self.weight.dtype)
        if w.shape != x.shape:
            try:
                w = torch.broadcast_to(w, x.shape)
            except RuntimeError:
                raise ValueError(
                    f"Mean.update: weight of shape {tuple(w.shape)} does not broadcast to value {tuple(x.shape)}"
                ) from None
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

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Cat:
        x = torch.as_tensor(value)
        x = _values(self, x, x.dtype if isinstance(value, torch.Tensor) else self.value.dtype)
        return self.replace(value=append(self.value, x.reshape(-1) if x.ndim == 0 else x))

    def compute(self) -> torch.Tensor:
        return self.value
