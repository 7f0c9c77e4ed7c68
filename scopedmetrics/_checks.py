"""Input and configuration checks shared by every metric family: one error style, one exception per mistake.

A wrong *type* (a list where a tensor is needed, a string for ``num_classes``)
is a ``TypeError``; a wrong *value* (a shape, a range, a NaN, an unknown
choice) is a ``ValueError``. Every message names the metric class and the
argument: ``"BinaryAccuracy.update: argument `target` ..."`` for a batch,
``"MeanIoU: argument `num_classes` ..."`` for configuration. Checks run before
``update`` changes anything, so a refused batch leaves the metric as it was.

Where a check reads the data (a range, a NaN) it asks ``asserting(x)`` first:
under ``torch.compile`` tracing, and for tensors off the CPU inside
``sm.device_checks()``, the check is a ``torch._assert_async`` on the device
(the same message; no host read, so no wait for queued kernels); elsewhere
it reads the data and raises at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import torch

_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
_DEVICE_CHECKS = contextvars.ContextVar("scopedmetrics_device_checks", default=False)


@contextlib.contextmanager
def device_checks(enabled: bool = True) -> Iterator[None]:
    """Run the data checks of batches on an accelerator as asynchronous asserts, inside this block.

    With ``validate_args=True`` a check reads the batch on the host (``aminmax``
    then ``.item()``), and on an accelerator that read waits for every queued
    kernel, once or twice an ``update``. Inside this block, for tensors off
    the CPU, each such check is a ``torch._assert_async`` on the device instead:
    the step does not stall, and bad data still stops the run, loudly but late
    and without recovery (on CUDA a failed assert is a device-side assert,
    which ends the process's CUDA context; the metric's message may not reach
    you). Shapes, dtypes and options are still refused at the call, and CPU
    tensors keep the checks that raise at once. Use it for a tested pipeline
    that must not stall; debug with the default. Like ``use_reducer`` it is
    local to the thread and asyncio task (``contextvars``); ``enabled=False``
    restores the host checks in a nested block.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> with sm.device_checks():  # CPU tensors: the checks still raise at the call
        ...     sm.classification.BinaryAccuracy().update(torch.tensor([0.2]), torch.tensor([3]))
        Traceback (most recent call last):
        ...
        ValueError: BinaryAccuracy.update: argument `target` has values outside [0, 1]: [3]
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"device_checks: argument `enabled` must be a bool, got {enabled!r}")
    token = _DEVICE_CHECKS.set(enabled)
    try:
        yield
    finally:
        _DEVICE_CHECKS.reset(token)


def _off_host(x: torch.Tensor) -> bool:
    return not x.is_cpu


def asserting(x: torch.Tensor) -> bool:
    """Whether a check of ``x``'s values is an asynchronous assert on its device rather than a host read.

    True while tracing (a traced function cannot branch on data) and, inside
    ``device_checks()``, for a tensor off the CPU.
    """
    return bool(_compiling()) or (_DEVICE_CHECKS.get() and _off_host(x))


def where(owner: Any, method: str = "update") -> str:
    """``"Metric.update"``: how messages about a batch begin."""
    return f"{type(owner).__name__}.{method}"


# -- configuration ----------------------------------------------------------------------


def check_int(owner: Any, arg: str, minimum: int | None = None, *, optional: bool = False) -> None:
    """``owner.arg`` is an int (not a bool), at least ``minimum``; ``None`` allowed when ``optional``.

    Examples:
        >>> import scopedmetrics as sm
        >>> check_int(sm.Sum(nan_strategy="warn"), "nan_strategy", 1)
        Traceback (most recent call last):
        ...
        TypeError: Sum: argument `nan_strategy` must be an int, got 'warn'
    """
    value = getattr(owner, arg)
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must be at least {minimum}, got {value!r}")


def check_bool(owner: Any, arg: str) -> None:
    """``owner.arg`` is a bool."""
    value = getattr(owner, arg)
    if not isinstance(value, bool):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be a bool, got {value!r}")


def check_choice(owner: Any, arg: str, allowed: Sequence[Any]) -> None:
    """``owner.arg`` is one of ``allowed``."""
    value = getattr(owner, arg)
    if value not in allowed:
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must be one of {tuple(allowed)}, got {value!r}")


def check_number(owner: Any, arg: str, low: float | None = None, high: float | None = None) -> None:
    """``owner.arg`` is a finite real number (not a bool) within ``[low, high]``."""
    value = getattr(owner, arg)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes every range test, inf most
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must be finite, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must lie in [{low}, {high}], got {value!r}")


# -- batches --------------------------------------------------------------------------


def tensor(owner: Any, arg: str, x: Any, *, real: bool = True) -> torch.Tensor:
    """``x`` itself, refused unless it is a (real, when ``real``) tensor.

    Examples:
        >>> import scopedmetrics as sm
        >>> tensor(sm.Sum(), "preds", [1.0])
        Traceback (most recent call last):
        ...
        TypeError: Sum.update: argument `preds` must be a tensor, got list
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{where(owner)}: argument `{arg}` must be a tensor, got {type(x).__name__}")
    if real and x.is_complex():
        raise TypeError(f"{where(owner)}: argument `{arg}` must be real, got {x.dtype}")
    return x


def floating(owner: Any, arg: str, x: torch.Tensor) -> None:
    """``x`` holds floating-point values (scores, images, signals)."""
    if not x.is_floating_point():
        raise TypeError(f"{where(owner)}: argument `{arg}` must be a floating-point tensor, got {x.dtype}")


def same_shape(owner: Any, a_name: str, a: torch.Tensor, b_name: str, b: torch.Tensor) -> None:
    """``a`` and ``b`` have one shape (no broadcasting between predictions and targets)."""
    if a.shape != b.shape:
        raise ValueError(
            f"{where(owner)}: arguments `{a_name}` and `{b_name}` must have the same shape, "
            f"got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def ndim(owner: Any, arg: str, x: torch.Tensor, allowed: Sequence[int], shape: str) -> None:
    """``x`` has one of the ``allowed`` numbers of dimensions; ``shape`` spells what is expected."""
    if x.ndim not in allowed:
        raise ValueError(f"{where(owner)}: argument `{arg}` must have shape {shape}, got {tuple(x.shape)}")


def require(message: str, ok: torch.Tensor | bool) -> None:
    """Raise ``ValueError(message)`` unless ``ok``; where ``asserting(ok)``, assert it on the device instead."""
    if isinstance(ok, torch.Tensor) and asserting(ok):
        torch._assert_async(ok, message)
    elif not bool(ok):
        raise ValueError(message)


def finite(owner: Any, arg: str, x: torch.Tensor) -> None:
    """``x`` holds no NaN or infinity."""
    if x.is_floating_point() or x.is_complex():
        require(f"{where(owner)}: argument `{arg}` must be finite, got NaN or infinity", all_finite(x))


def all_finite(x: torch.Tensor) -> torch.Tensor:
    """0-d bool: whether ``x`` holds no NaN or infinity.

    Real floats take one ``aminmax`` (NaN propagates to both extremes): on the
    CPU 0.2 ms at 10^6 values and 0.8 ms at 4 * 10^6, where ``isfinite(x).all()``
    took 2.6 and 16 ms.
    """
    if x.is_complex() or x.numel() == 0:
        return torch.isfinite(x).all()
    low, high = torch.aminmax(x)
    return torch.isfinite(low) & torch.isfinite(high)


def labels(owner: Any, arg: str, x: torch.Tensor, high: int | None = None, ignore: int | None = None) -> None:
    """``x`` holds integer labels in ``[0, high)`` (whole-number floats accepted), ``ignore`` excepted."""
    if x.dtype == torch.bool or x.is_complex():
        raise TypeError(f"{where(owner)}: argument `{arg}` must hold integer labels, got {x.dtype}")
    if x.is_floating_point():
        require(
            f"{where(owner)}: argument `{arg}` must hold integer labels (whole numbers if float), "
            f"got {x.dtype} with fractions or NaN",
            (x == x.round()).all(),
        )
    if x.numel() == 0:
        return
    if ignore is not None and not holds(x.dtype, ignore):
        ignore = None  # no value of x equals it (a comparison would wrap it into x's dtype)
    expected = f"[0, {high})" if high is not None else "[0, ...)"
    also = "" if ignore is None else f" or the ignore_index {ignore}"
    top = None if high is None else clipped(x.dtype, high - 1)  # the largest label, as x's dtype can hold it
    if asserting(x):  # element-wise, so nothing about the data decides a shape
        each = x >= 0 if top is None else (x >= 0) & (x <= top)
        if ignore is not None:
            each |= x == ignore
        torch._assert_async(each.all(), f"{where(owner)}: argument `{arg}` must hold labels in {expected}{also}")
        return
    kept = x if ignore is None else x[x != ignore]
    if kept.numel() == 0:
        return
    low, most = kept.min(), kept.max()
    ok = low >= 0 if top is None else (low >= 0) & (most <= top)
    if not bool(ok):
        raise ValueError(
            f"{where(owner)}: argument `{arg}` must hold labels in {expected}{also}, "
            f"got values in [{low.item()}, {most.item()}]"
        )


def strings(owner: Any, arg: str, x: Any) -> list[str]:
    """``x`` as a list of strings: one ``str`` or a sequence of them (text metrics' inputs).

    Examples:
        >>> import scopedmetrics as sm
        >>> strings(sm.Sum(), "preds", "hello there")
        ['hello there']
    """
    if isinstance(x, str):
        return [x]
    if isinstance(x, Sequence) and all(isinstance(s, str) for s in x):
        return list(x)
    got = type(x).__name__
    raise TypeError(f"{where(owner)}: argument `{arg}` must be a string or a sequence of strings, got {got}")


def same_length(owner: Any, a_name: str, a: Sequence[Any], b_name: str, b: Sequence[Any]) -> None:
    """``a`` and ``b`` hold as many items (one per sample)."""
    if len(a) != len(b):
        raise ValueError(
            f"{where(owner)}: arguments `{a_name}` and `{b_name}` must hold as many items, "
            f"got {len(a)} and {len(b)}"
        )


# -- ignore_index ---------------------------------------------------------------------


def not_ignored(target: torch.Tensor, ignore: int | None) -> torch.Tensor | None:
    """Where ``target`` is not ``ignore``; ``None`` (keep everything) without one or when no label can equal it.

    torch compares a tensor with a Python int in the tensor's dtype, so against
    uint8 labels an ``ignore_index`` of 257 wraps to 1 and drops every 1
    (TorchMetrics does so); a value the dtype cannot hold equals no label.

    Examples:
        >>> import torch
        >>> not_ignored(torch.tensor([0, 1, 257]), 257)
        tensor([ True,  True, False])
        >>> not_ignored(torch.tensor([0, 1], dtype=torch.uint8), 257) is None
        True
    """
    if ignore is None or not holds(target.dtype, ignore):
        return None
    return target != ignore


@functools.lru_cache(maxsize=256)
def holds(dtype: torch.dtype, value: int) -> bool:
    """Whether a tensor of ``dtype`` can hold the integer ``value`` exactly."""
    if dtype == torch.bool:
        return value in (0, 1)
    if dtype.is_floating_point or dtype.is_complex:
        return float(torch.tensor(float(value), dtype=torch.float64).to(dtype)) == value
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def beyond(x: torch.Tensor, threshold: float, inclusive: bool) -> torch.Tensor:
    """``x >= threshold`` (``inclusive``) or ``x > threshold``, exactly, in one comparison in ``x``'s dtype.

    torch compares with a Python number in the tensor's dtype: 300 against uint8
    values is 44, and 0.703 against bfloat16 values is 0.703125, so a score of
    0.703125 was not above 0.703. Floats compare with ``t``, the threshold as the
    dtype rounds it: no value lies strictly between the two, so ``x > threshold``
    is ``x >= t`` where ``t`` rounded up and ``x > t`` otherwise (``>=`` alike).
    Integers compare with the least integer that passes, clipped to their range.

    Examples:
        >>> beyond(torch.tensor([0.703125], dtype=torch.bfloat16), 0.703, inclusive=False)
        tensor([True])
        >>> beyond(torch.tensor([50, 200], dtype=torch.uint8), 300, inclusive=True)
        tensor([False, False])
    """
    if x.is_floating_point():
        t = _rounded(threshold, x.dtype)
        return x >= t if (t >= threshold if inclusive else t > threshold) else x > t
    if x.dtype == torch.bool:
        return x >= threshold if inclusive else x > threshold  # compared as numbers
    bound = math.ceil(threshold) if inclusive else math.floor(threshold) + 1
    info = torch.iinfo(x.dtype)
    if bound > info.max or bound <= info.min:
        return torch.full_like(x, bound <= info.min, dtype=torch.bool)
    return x >= bound


@functools.lru_cache(maxsize=256)
def _rounded(value: float, dtype: torch.dtype) -> float:
    """``value`` rounded to ``dtype`` as torch rounds it (made once per threshold and dtype)."""
    return float(torch.tensor(value, dtype=dtype))


def clipped(dtype: torch.dtype, value: int) -> int:
    """An inclusive upper bound ``value`` (``x <= value``, ``x > value``) as a tensor of ``dtype`` can be compared with.

    torch compares a tensor with a Python int in the tensor's dtype: against
    uint8 labels, ``x <= 299`` is ``x <= 43``. Every value of the dtype lies
    at or below its maximum, so a bound above it becomes the maximum and
    decides every comparison as the unbounded one would. Floating and bool
    dtypes are returned unchanged (their comparisons promote).

    Examples:
        >>> clipped(torch.uint8, 299), clipped(torch.int64, 299)
        (255, 299)
    """
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return value
    return min(value, torch.iinfo(dtype).max)


def widened(x: torch.Tensor) -> torch.Tensor:
    """A float tensor narrower than float32 (float16, bfloat16) as float32; any other tensor as it is.

    Sums, products, a sigmoid or a softmax in half precision drift or overflow
    (a 300 x 300 box's area, the squared pixel sums of an SSIM window), while
    float32 holds every half-precision value exactly: the metrics take such
    inputs in at least float32 where they enter.

    Examples:
        >>> widened(torch.ones(1, dtype=torch.float16)).dtype, widened(torch.ones(1, dtype=torch.float64)).dtype
        (torch.float32, torch.float64)
    """
    return x.float() if x.is_floating_point() and x.dtype.itemsize < 4 else x


def batch_dtype(like: torch.Tensor, *xs: torch.Tensor) -> torch.dtype:
    """The dtype a batch is computed in: the state ``like``'s, widened to hold every value of ``xs`` exactly.

    float64 inputs stay float64 against a float32 state, and 32- and 64-bit
    integers become float64 (float32 would round them); on a device without
    float64 (MPS) the state's dtype. Cast to the state first, ``1e6 + 0.01``
    and ``1e6`` are one value, and an error or a sum between them is lost.

    Examples:
        >>> state = torch.zeros(())
        >>> batch_dtype(state, torch.ones(1, dtype=torch.float64)), batch_dtype(state, torch.ones(1, dtype=torch.int16))
        (torch.float64, torch.float32)
    """
    dtype = like.dtype
    for x in xs:
        if x.is_floating_point():
            dtype = torch.promote_types(dtype, x.dtype)
        elif x.dtype.itemsize >= 4 and x.dtype != torch.bool:  # a 32- or 64-bit integer: float32 would round it
            dtype = torch.promote_types(dtype, torch.float64)
    return like.dtype if dtype == torch.float64 and like.device.type == "mps" else dtype


def folded(state: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``state + value`` in the state's own dtype: a batch computed wider (``batch_dtype``) is rounded once, here."""
    return state + (value if value.dtype == state.dtype else value.to(state.dtype))
