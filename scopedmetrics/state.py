"""State and static field declarations, and the algebra of the reduce ops.

A state field is a tensor (or a pytree of tensors) annotated with the op that
combines it across participants; a static field is configuration and lives in
the pytree's structure. Each op is associative with the empty state as its
identity, which is what makes any split of the data reduce to the same value.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, Final, Literal, cast

import torch

NAMESPACE: Final = "scopedmetrics"
"""The optree namespace every metric is registered under."""

Op = Literal["sum", "max", "min", "prod", "cat"]
OPS: Final[tuple[str, ...]] = ("sum", "max", "min", "prod", "cat")

_KEY: Final = "scopedmetrics"


@dataclasses.dataclass(frozen=True)
class StateSpec:
    """Metadata of a state field: its reduce op (``None`` for whole-state merge).

    ``any_rows``: a ``cat`` state declared without a default or ``init``, whose empty
    start says nothing of its rows, so it takes rows of any dtype and shape (a checkpoint's too).
    """

    op: str | None
    any_rows: bool = False


@dataclasses.dataclass(frozen=True)
class StaticSpec:
    """Metadata of a static (configuration) field."""


def identity(op: str | None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The empty state of ``op``: merging it with any state is a no-op."""
    if op == "cat":
        return torch.empty(0, dtype=dtype)
    if op == "sum" or op is None:
        return torch.zeros((), dtype=dtype)
    if op == "prod":
        return torch.ones((), dtype=dtype)
    if dtype.is_floating_point:
        return torch.tensor(float("-inf") if op == "max" else float("inf"), dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.tensor(info.min if op == "max" else info.max, dtype=dtype)


def _factory(op: str | None, default: Any) -> Callable[[], Any]:
    if default is dataclasses.MISSING:
        return lambda: identity(op)
    if getattr(type(default), "_is_metric", False):  # a nested metric: immutable, so one instance serves all
        return lambda: default
    if callable(default) and not isinstance(default, torch.Tensor):
        return cast(Callable[[], Any], default)
    if isinstance(default, torch.Tensor):
        frozen = default.detach().clone()
        return lambda: frozen.clone()
    if isinstance(default, (bool, int, float)):
        return lambda: torch.tensor(default)
    raise TypeError(
        f"state default must be a number, a tensor or a zero-argument factory, got {type(default).__name__}"
    )


class Shaped:
    """A state's starting value that depends on the configuration: ``init(metric)``, called once built."""

    __slots__ = ("init",)

    def __init__(self, init: Callable[[Any], Any]) -> None:
        self.init = init


def state(
    op: str | None = None, *, default: Any = dataclasses.MISSING, init: Callable[[Any], Any] | None = None
) -> Any:
    """Declare a state field reduced across participants with ``op``.

    ``default`` is a number (dtype as ``torch.tensor`` gives it), a tensor or a
    zero-argument factory; without it the field starts at the op's identity.
    ``init`` instead shapes the state from the configuration: it is called with
    the metric once its static fields are set (``init=lambda m: torch.zeros(m.num_classes)``).

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> class Total(sm.Metric):
        ...     total: torch.Tensor = sm.state("sum", default=0.0)
        ...     def update(self, x): return self.replace(total=self.total + x.sum())
        ...     def compute(self): return self.total
        >>> Total().update(torch.ones(3)).compute()
        tensor(3.)
        >>> class PerClass(sm.Metric):
        ...     hits: torch.Tensor = sm.state("sum", init=lambda m: torch.zeros(m.num_classes, dtype=torch.long))
        ...     num_classes: int = sm.static(default=2)
        >>> PerClass(num_classes=4).hits
        tensor([0, 0, 0, 0])
    """
    if op is not None and op not in OPS:
        raise ValueError(f"unknown reduce op {op!r}; expected one of {OPS}")
    if init is not None and default is not dataclasses.MISSING:
        raise TypeError("state: give default or init, not both")
    shaped = Shaped(init) if init is not None else None
    factory = (lambda: shaped) if shaped is not None else _factory(op, default)
    return dataclasses.field(  # keyword-only: states never take a constructor position
        default_factory=factory,
        metadata={_KEY: StateSpec(op, op == "cat" and default is dataclasses.MISSING and init is None)},
        kw_only=True,
    )


def static(*, default: Any = dataclasses.MISSING) -> Any:
    """Declare a configuration field; it is part of the pytree's structure.

    Examples:
        >>> import scopedmetrics as sm
        >>> class Top(sm.Metric):
        ...     k: int = sm.static(default=5)
        ...     def compute(self): return self.k
        >>> Top(k=3).k
        3
    """
    return dataclasses.field(default=default, metadata={_KEY: StaticSpec()})


def spec_of(field: dataclasses.Field[Any]) -> StateSpec | StaticSpec:
    """The declaration of a dataclass field; undeclared fields are static."""
    spec: StateSpec | StaticSpec = field.metadata.get(_KEY, StaticSpec())
    return spec


def is_empty_cat(x: torch.Tensor) -> bool:
    """Whether ``x`` is an empty ``cat`` leaf (length 0 along dim 0, or 0-d)."""
    return x.ndim == 0 or x.shape[0] == 0


def combine(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Combine two leaves with ``op``; the local twin of the collective."""
    if op == "sum":
        return a + b
    if op == "max":
        return torch.maximum(a, b)
    if op == "min":
        return torch.minimum(a, b)
    if op == "prod":
        return a * b
    if op == "cat":
        if is_empty_cat(b):
            return a
        return b if is_empty_cat(a) else append(a, b)
    raise ValueError(f"unknown reduce op {op!r}")


def concat(parts: list[torch.Tensor]) -> torch.Tensor:
    """Concatenate ``cat`` leaves along dim 0; empty leaves adopt the others' shape."""
    full = [p for p in parts if not is_empty_cat(p)]
    if not full:
        return parts[0] if parts else torch.empty(0)
    if len(full) == 1:
        return full[0]
    return torch.cat(full)


_CLAIM = threading.Lock()
_GROWTH = 1.5
_compiling: Callable[[], bool] = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


def append(rows: torch.Tensor, batch: torch.Tensor, *, cast: bool = False) -> torch.Tensor:
    """``rows`` with ``batch`` appended along dim 0: how every ``cat`` state grows.

    Amortized: ``rows`` is a prefix view of a buffer with spare capacity, and
    the first append to a given prefix writes into that capacity in place. No
    existing view can see those rows, so every metric stays immutable; a second
    append to the same prefix (a branch) copies. Capacity grows by 1.5x. A
    batch of a wider dtype (float64 after float32, floats after integers)
    widens the rows, as ``torch.cat`` promotes; a narrower one is cast up.
    ``cast=True`` keeps ``rows``' dtype whatever the batch's (as
    ``batch.to(rows.dtype)`` would, in the same copy): for rows whose dtype is
    part of what they mean, such as 0/1 labels kept as uint8.

    Examples:
        >>> from scopedmetrics.state import append
        >>> a = append(torch.empty(0), torch.tensor([1.0, 2.0]))
        >>> b = append(a, torch.tensor([3.0]))
        >>> a.tolist(), b.tolist()
        ([1.0, 2.0], [1.0, 2.0, 3.0])
        >>> append(torch.tensor([1, 2]), torch.tensor([0.5])).tolist()
        [1.0, 2.0, 0.5]
        >>> append(torch.tensor([1], dtype=torch.uint8), torch.tensor([0, 1]), cast=True)
        tensor([1, 0, 1], dtype=torch.uint8)
    """
    batch = _rows_of(rows, batch)
    return rows if batch.shape[0] == 0 else _extend(rows, batch, cast)


def _rows_of(rows: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
    """``batch`` as rows that may follow ``rows``: detached, at least 1-d, of the same row shape."""
    if _compiling():
        raise RuntimeError(
            "a cat state grows with the data and cannot be traced by torch.compile; "
            "keep this update outside the compiled region, or use a constant-memory state (e.g. thresholds=N)"
        )
    if batch.requires_grad:
        batch = batch.detach()
    if batch.ndim == 1 and rows.ndim == 1:  # the common case: 1-d rows after 1-d rows need no shape check
        return batch
    if batch.ndim == 0:
        batch = batch.reshape(1)
    if batch.shape[0] and not is_empty_cat(rows) and batch.shape[1:] != rows.shape[1:]:
        raise ValueError(
            f"cannot append rows of shape {tuple(batch.shape[1:])} to rows of shape {tuple(rows.shape[1:])}"
        )
    return batch


def _extend(rows: torch.Tensor, batch: torch.Tensor, cast: bool) -> torch.Tensor:
    """``rows`` followed by ``batch``, in ``rows``' spare capacity when this prefix still owns it."""
    n, k = rows.shape[0] if rows.ndim else 0, batch.shape[0]
    if n == 0:
        return _grow(batch[:0], batch, rows.dtype if cast else batch.dtype)
    if rows.dtype != batch.dtype and not cast:
        wider = torch.promote_types(rows.dtype, batch.dtype)
        if wider != rows.dtype:  # a wider batch widens the rows, as torch.cat would: nothing is rounded on the way in
            return _grow(rows, batch, wider)
    base = rows._base
    if base is None:
        base = rows.__dict__.get("_sm_buffer")  # an inference tensor's buffer (``_prefix``)
    if (
        base is not None
        and rows.data_ptr() == base.data_ptr()
        and base.device == batch.device
        and (not base.is_inference() or torch.is_inference_mode_enabled())  # else it cannot be written to
    ):
        with _CLAIM:
            mine = getattr(base, "_sm_used", -1) == n and base.shape[0] >= n + k
            if mine:
                base._sm_used = n + k  # type: ignore[attr-defined]
        if mine:
            base[n : n + k] = batch
            return _prefix(base, n + k)
    return _grow(rows, batch, rows.dtype)


def _grow(rows: torch.Tensor, batch: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A new buffer with 1.5x the room, holding ``rows`` then ``batch`` (copied: nothing is kept by reference)."""
    n, total = rows.shape[0], rows.shape[0] + batch.shape[0]
    base = torch.empty((max(int(total * _GROWTH), 16), *batch.shape[1:]), dtype=dtype, device=batch.device)
    base[:n] = rows
    base[n:total] = batch
    base._sm_used = total  # type: ignore[attr-defined]
    return _prefix(base, total)


def _prefix(base: torch.Tensor, n: int) -> torch.Tensor:
    """The first ``n`` rows of a growing buffer, as a view that can find the buffer again."""
    view = base[:n]
    if view._base is None:  # inference tensors (torch.inference_mode) track no views: keep the buffer ourselves
        view._sm_buffer = base  # type: ignore[attr-defined]
    return view


def compact(t: torch.Tensor) -> torch.Tensor:
    """``t`` alone, without the spare capacity of the buffer it may view (for saving)."""
    if t.untyped_storage().nbytes() > t.numel() * t.element_size():
        return t.clone()
    return t
