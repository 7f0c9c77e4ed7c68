"""Argument checks shared by the regression metrics' ``update`` and ``__post_init__``.

Every message starts with ``Metric.update`` (or ``Metric``) and names the
argument, so a failing rank says which metric and which input it refused.
Shape and type checks are always made: they are free and guard the state's
shape. Checks that read the data (finite values, domains) are skipped with
``validate_args=False``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import torch

from scopedmetrics import _checks
from scopedmetrics._checks import batch_dtype as batch_dtype  # the regression modules take these from here
from scopedmetrics._checks import folded as folded
from scopedmetrics.metric import Metric

Layout = Literal["flat", "outputs", "rows"]
_SQUARED_ERROR = torch.ops.aten.mse_loss.default  # (input, target, reduction): 0 none, 2 sum


def where(owner: Metric) -> str:
    """Name where an ``update`` error comes from: ``"MeanSquaredError.update"``."""
    return _checks.where(owner)


def check_positive_int(owner: Metric, name: str) -> None:
    """Refuse a configuration value that is not a positive ``int`` (``_checks.check_int``)."""
    _checks.check_int(owner, name, 1)


check_bool = _checks.check_bool
check_choice = _checks.check_choice
tensor_arg = _checks.tensor


def check_finite(owner: Metric, name: str, x: torch.Tensor) -> None:
    """Refuse NaN and infinite values, which would poison the state for every participant.

    Where ``_checks.asserting`` says so (tracing; an accelerator in ``sm.device_checks()``) it is an
    asynchronous assert: no graph break, no host read.
    """
    if not x.is_floating_point():
        return
    message = f"{where(owner)}: argument `{name}` contains non-finite values (NaN or inf)"
    if _checks.asserting(x):
        torch._assert_async(x.isfinite().all(), message)
    elif not all_finite(x):
        raise ValueError(message)


def all_finite(x: torch.Tensor) -> bool:
    """Whether every value of float ``x`` is finite: one ``aminmax`` (NaN and infinities are extremes)."""
    if x.numel() <= 1:
        return x.numel() == 0 or math.isfinite(x.item())
    low, high = torch.aminmax(x)
    return math.isfinite(low.item()) and math.isfinite(high.item())


def check_values(owner: Metric, name: str, ok: torch.Tensor, expected: str) -> None:
    """Refuse argument ``name`` unless ``ok`` (a boolean tensor of its elements) holds everywhere.

    The message reads ``"Metric.update: argument `name` must be <expected>"``.
    Where ``_checks.asserting`` says so (tracing; an accelerator in ``sm.device_checks()``) it is an
    asynchronous assert: no graph break, no host read.
    """
    message = f"{where(owner)}: argument `{name}` must be {expected}"
    if _checks.asserting(ok):
        torch._assert_async(ok.all(), message)
    elif not bool(ok.all()):
        raise ValueError(message)


Domain = tuple[Callable[[torch.Tensor], torch.Tensor], str]
"""A domain of input values: the elementwise test, and what it asks for (``(lambda x: x > -1, "greater than -1")``)."""


def check_result(
    owner: Metric,
    result: torch.Tensor,
    inputs: tuple[tuple[str, torch.Tensor], ...],
    domain: Domain | None = None,
) -> None:
    """Refuse non-finite inputs, looking at them only when the batch's ``result`` is not finite.

    For a result that any NaN or infinite input makes NaN or infinite (a sum of
    squared or absolute errors), a finite result clears every input without
    reading it again; a non-finite one checks each input in order, and passes
    when they are finite (the result overflowed), exactly as checking them first.
    ``domain`` extends this to inputs outside the function's domain, when every
    such input makes the result non-finite (``log1p`` of values at or below -1).
    """
    if owner.validate_args and (_checks.asserting(result) or not all_finite(result)):  # type: ignore[attr-defined]
        for name, x in inputs:
            check_finite(owner, name, x)
            if domain is not None:
                check_values(owner, name, domain[0](x), domain[1])


def squared_error_sum(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``((p - t) ** 2).sum(0)`` of flat ``(N,)`` (a 0-d sum) or ``(N, d)`` inputs (a ``(d,)`` sum).

    aten's ``mse_loss`` fuses the difference and the square into one pass, with
    no temporary of the batch's size, and sums in the same order as
    ``(diff * diff).sum(0)``, bit for bit.
    """
    if p.ndim == 1:
        flat: torch.Tensor = _SQUARED_ERROR(p, t, 2)
        return flat
    if p.shape[1] == 1:
        one: torch.Tensor = _SQUARED_ERROR(p, t, 2)
        return one.reshape(1)
    per_output: torch.Tensor = _SQUARED_ERROR(p, t, 0)
    return per_output.sum(0)


def outputs_layout(m: Metric) -> Layout:
    """Any shape, flattened, for one output (as TorchMetrics); ``(N, num_outputs)`` otherwise."""
    return "flat" if m.num_outputs == 1 else "outputs"  # type: ignore[attr-defined]


def per_output(m: Metric, value: torch.Tensor) -> torch.Tensor:
    """``value`` of shape ``(num_outputs,)``, squeezed to 0-d for a single output."""
    return value.squeeze(0) if m.num_outputs == 1 else value  # type: ignore[attr-defined]


def pair(
    owner: Metric,
    first: Any,
    second: Any,
    like: torch.Tensor,
    layout: Layout,
    names: tuple[str, str] = ("preds", "target"),
    finite: bool = True,
    exact: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two equally shaped inputs, checked, on ``like``'s device and in the dtype the batch is computed in.

    That dtype is ``like``'s, widened (``exact``) so that no input is rounded
    on the way in: float64 inputs stay float64 against a float32 state, and
    32- and 64-bit integers become float64. A float32 cast first would make
    ``1e6 + 0.01`` and ``1e6`` one value, and the error between them 0. The
    caller folds what the batch adds into its state's own dtype (``folded``).
    ``exact=False`` casts to ``like``'s dtype, for states that take the batch
    as it is (the moments, which merge the batch's own).

    ``layout`` says what shape ``update`` works on: ``"flat"`` flattens any
    shape to ``(N,)``; ``"outputs"`` gives ``(N, num_outputs)`` from ``(N,)``
    or ``(N, 1)`` when ``num_outputs == 1`` and from ``(N, num_outputs)``
    otherwise; ``"rows"`` requires ``(N, D)``.
    """
    a = tensor_arg(owner, names[0], first)
    b = tensor_arg(owner, names[1], second)
    if a.shape != b.shape:
        raise ValueError(
            f"{where(owner)}: argument `{names[0]}` has shape {tuple(a.shape)} "
            f"but `{names[1]}` has shape {tuple(b.shape)}"
        )
    if layout == "flat":
        if a.ndim != 1:  # a reshape of 1-d rows is a no-op that still costs about 1 µs a tensor
            a, b = a.reshape(-1), b.reshape(-1)
    elif layout == "outputs":
        d = owner.num_outputs  # type: ignore[attr-defined]
        ok = (a.ndim == 2 and a.shape[1] == d) or (d == 1 and a.ndim == 1)
        if not ok:
            expected = "(N,) or (N, 1)" if d == 1 else f"(N, {d})"
            raise ValueError(
                f"{where(owner)}: argument `{names[0]}` has shape {tuple(a.shape)} "
                f"but num_outputs={d} expects {expected}"
            )
        if a.ndim == 1:
            a, b = a.reshape(-1, d), b.reshape(-1, d)
    elif a.ndim != 2:
        raise ValueError(f"{where(owner)}: argument `{names[0]}` has shape {tuple(a.shape)}; expected (N, D)")
    dtype = batch_dtype(like, a, b) if exact else like.dtype
    if a.dtype != dtype or a.device != like.device:
        a = a.to(device=like.device, dtype=dtype)
    if b.dtype != dtype or b.device != like.device:
        b = b.to(device=like.device, dtype=dtype)
    if finite and owner.validate_args:  # type: ignore[attr-defined]
        check_finite(owner, names[0], a)
        check_finite(owner, names[1], b)
    return a, b
