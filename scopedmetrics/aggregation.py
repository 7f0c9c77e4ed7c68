"""Aggregation metrics: running sum, mean, max, min and concatenation of values.

Names and arguments follow TorchMetrics' ``SumMetric``, ``MeanMetric``, ...;
``nan_strategy`` is ``"error"``, ``"warn"`` (drop with a warning), ``"ignore"``
(drop), ``"disable"`` (keep NaNs) or a float to replace them with. NaNs are
handled element by element, as TorchMetrics does: ``Sum`` of
``[[1, nan, 10], [4, 5, 6]]`` is 26, and ``Cat`` keeps the other elements,
flattened. A value is a tensor, a number, or a (nested) list of numbers.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, cast

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric, _mask_of, _masked
from scopedmetrics.state import append, state, static

_STRATEGIES = ("error", "warn", "ignore", "disable")


def _real(
    owner: Metric, value: Any, name: str, dtype: torch.dtype | None = None, device: torch.device | None = None
) -> torch.Tensor:
    """``value`` as a real tensor, cast to ``dtype`` when given.

    A tensor keeps its device; a number, or a (nested) list, tuple or array of
    numbers, as TorchMetrics takes them, becomes a tensor on ``device``.
    """
    metric = type(owner).__name__
    what = f"{metric}.update: {name} must be a tensor, a number or a (nested) list of numbers"
    if isinstance(value, torch.Tensor):
        x = value
    elif isinstance(value, (bool, int, float)):
        x = torch.tensor(value, device=device)
    elif isinstance(value, (list, tuple)) or hasattr(value, "__array__"):
        try:
            x = torch.as_tensor(value, device=device)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{what} of one shape, got {_short(value)}") from None
    else:
        raise TypeError(f"{what}, got {type(value).__name__}")
    if x.is_complex():
        raise TypeError(f"{metric}.update: {name} must be real, got {x.dtype}")
    return x if dtype is None else x.to(dtype)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _without_nan(
    owner: Metric, value: torch.Tensor, weight: torch.Tensor | None = None, stacklevel: int = 4
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``value`` (and ``weight``, of its shape) with NaNs handled per ``nan_strategy``, element by element.

    As TorchMetrics' aggregators: dropping keeps the other elements, flattened
    (a value goes with its weight), and a float strategy replaces a value where
    it or its weight is NaN, with weight 1 there. ``stacklevel`` points the
    warning of ``"warn"`` at the caller of ``update``.
    """
    metric, strategy = type(owner).__name__, getattr(owner, "nan_strategy", "disable")
    if strategy == "disable":
        return value, weight
    named = {"value": value} if weight is None else {"value": value, "weight": weight}
    nans = {n: torch.isnan(t) for n, t in named.items() if t.is_floating_point()}
    found = [n for n, m in nans.items() if bool(m.any())]
    if not found:
        return value, weight
    if strategy == "error":
        raise ValueError(f"{metric}.update: {found[0]} contains NaN (nan_strategy='error')")
    bad = nans[found[0]] if len(found) == 1 else nans["value"] | nans["weight"]
    if isinstance(strategy, float):
        filled = value.masked_fill(bad, strategy)
        return filled, None if weight is None else weight.masked_fill(bad, 1.0)
    if strategy == "warn":
        warnings.warn(
            f"{metric}.update: dropping NaN values from {', '.join(found)}", UserWarning, stacklevel=stacklevel
        )
    keep = ~bad
    return value[keep], None if weight is None else weight[keep]


def _values(owner: Metric, value: Any, state: torch.Tensor, exact: bool = False) -> torch.Tensor:
    """``value`` as a real tensor of ``state``'s dtype (``exact``: widened so that no value rounds), NaNs handled."""
    x = _real(owner, value, "value", None, state.device)
    x = x.to(_checks.batch_dtype(state, x) if exact else state.dtype)
    return _without_nan(owner, x, stacklevel=5)[0]


def _check_strategy(owner: Metric) -> None:
    s = owner.nan_strategy  # type: ignore[attr-defined]
    if not (isinstance(s, float) or s in _STRATEGIES):
        raise ValueError(f"{type(owner).__name__}: nan_strategy must be one of {_STRATEGIES} or a float, got {s!r}")


class Sum(Metric):
    """Running sum of every value seen.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.Sum().update(torch.tensor([1.0, 2.0])).update(3.0).compute()
        tensor(6.)
        >>> sm.Sum(nan_strategy="ignore").update([[1, float("nan"), 10], [4, 5, 6]]).compute()
        tensor(26.)
    """

    sum_value: torch.Tensor = state("sum", default=0.0)
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Sum:
        x = _values(self, value, self.sum_value, exact=True)  # summed in its own precision, added in the state's
        return self.replace(sum_value=_checks.folded(self.sum_value, x.sum()))

    def compute(self) -> torch.Tensor:
        return self.sum_value


class Max(Metric):
    """Largest value seen (``-inf`` before any).

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.Max().update(torch.tensor([1.0, 7.0, 3.0])).compute()
        tensor(7.)
    """

    max_value: torch.Tensor = state("max")
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Max:
        x = _values(self, value, self.max_value)
        if x.numel() == 0:
            return self.replace()
        return self.replace(max_value=torch.maximum(self.max_value, x.max()))

    def compute(self) -> torch.Tensor:
        return self.max_value


class Min(Metric):
    """Smallest value seen (``+inf`` before any).

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.Min().update(torch.tensor([4.0, -2.0])).compute()
        tensor(-2.)
    """

    min_value: torch.Tensor = state("min")
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Min:
        x = _values(self, value, self.min_value)
        if x.numel() == 0:
            return self.replace()
        return self.replace(min_value=torch.minimum(self.min_value, x.min()))

    def compute(self) -> torch.Tensor:
        return self.min_value


def _broadcast(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``Mean``'s weight ``w`` broadcast to the values ``x``."""
    if w.shape == x.shape:
        return w
    try:
        return torch.broadcast_to(w, x.shape)
    except RuntimeError:
        raise ValueError(
            f"Mean.update: weight of shape {tuple(w.shape)} does not broadcast to value {tuple(x.shape)}"
        ) from None


class Mean(Metric):
    """Weighted mean of every value seen: ``sum(w * x) / sum(w)``.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.Mean().update(torch.tensor([1.0, 3.0])).update(5.0, weight=2.0).compute()
        tensor(3.5000)
    """

    mean_value: torch.Tensor = state("sum", default=0.0)
    weight: torch.Tensor = state("sum", default=0.0)
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any, weight: Any = 1.0, mask: Any = None) -> Mean:
        """Fold in ``value`` weighted by ``weight`` (broadcast to ``value``); ``mask`` keeps rows of ``value``.

        The weight is broadcast before ``mask`` leaves rows out: a ``(d,)`` weight of
        ``(N, d)`` values weighs columns, and its dim 0 is no row.
        """
        if mask is not None:
            keep = _mask_of(self, mask)
            x = _real(self, value, "value", None, self.mean_value.device)
            (value, weight), _ = _masked(self, keep, (x, _broadcast(_real(self, weight, "weight", None, x.device), x)),
                                         {})
            if not bool(keep.any()):
                return self  # nothing kept: exactly as if the batch had never been passed
        fast = self._unweighted(value, weight)
        if fast is not None:
            return fast
        state = self.mean_value
        x = _real(self, value, "value", None, state.device)
        w = _real(self, weight, "weight", None, state.device)
        dtype = _checks.batch_dtype(state, x, w)  # the weighted sum in the inputs' precision, added in the state's
        x, w = x.to(dtype), _broadcast(w.to(dtype), x)
        x, kept = _without_nan(self, x, w)
        w = cast(torch.Tensor, kept)
        if bool((w < 0).any()):
            raise ValueError("Mean.update: weight must be non-negative")
        return self.replace(mean_value=_checks.folded(self.mean_value, (x * w).sum()),
                            weight=_checks.folded(self.weight, w.sum()))

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


def _narrowed(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` as ``dtype`` rows; refused when the cast would change a value beyond rounding.

    ``torch.can_cast`` compares kinds only: 300 into int8 rows wraps to 44,
    and 1e5 (a float, or an integer) into float16 rows is ``inf``. Where
    ``dtype`` may not hold the values (the only case that reads them), integers
    into integer rows must come back equal and finite numbers must stay finite
    in float rows; float64 into float32 rows rounds, as the rows' precision is,
    and so do integers beyond 2**24 into float32 rows.
    """
    y, wide = x.to(dtype), torch.promote_types(x.dtype, dtype)
    if wide == dtype and (x.is_floating_point() or not dtype.is_floating_point):
        return y  # a widening: promotion puts integers below every float dtype, so 1e5 into float16 is checked
    lost = (y.isinf() & x.isfinite()) if dtype.is_floating_point else (y.to(wide) != x.to(wide))
    if bool(lost.any()):
        raise ValueError(
            f"Cat.update: value holds numbers that {dtype} rows (the dtype of the earlier values) cannot hold; "
            "start from values of a wider dtype"
        )
    return y


class Cat(Metric):
    """Every value seen, concatenated along dim 0 in rank order.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.Cat().update(torch.tensor([1.0, 2.0])).update(3.0).compute()
        tensor([1., 2., 3.])
    """

    value: torch.Tensor = state("cat")
    nan_strategy: Any = static(default="warn")

    def __post_init__(self) -> None:
        _check_strategy(self)

    def update(self, value: Any) -> Cat:
        rows = self.value
        held = bool(rows.numel() or rows.shape[0])  # earlier values fix the dtype and the row shape
        x = _real(self, value, "value", device=rows.device)
        if not (held or isinstance(value, torch.Tensor)):
            x = x.to(torch.float32)  # numbers and lists of them are float32 rows, as in TorchMetrics
        x = _without_nan(self, x.reshape(1) if x.ndim == 0 else x)[0]
        if held:
            if x.dtype != rows.dtype and not torch.can_cast(x.dtype, rows.dtype):
                raise TypeError(f"Cat.update: value has dtype {x.dtype}, earlier values are {rows.dtype}")
            if x.shape[1:] != rows.shape[1:]:
                raise ValueError(
                    f"Cat.update: value has rows of shape {tuple(x.shape[1:])}, "
                    f"earlier values have rows of shape {tuple(rows.shape[1:])}"
                )
            x = _narrowed(x, rows.dtype)
        return self.replace(value=append(rows, x))

    def compute(self) -> torch.Tensor:
        return self.value
