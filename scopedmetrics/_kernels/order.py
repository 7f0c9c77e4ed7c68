"""The sort of the exact curves: numpy on the CPU from ``NUMPY_MIN`` rows (packed keys for float32), torch otherwise."""

from __future__ import annotations

import torch

try:
    import numpy as np
except ImportError:  # numpy is optional: torch sorts alone
    np = None  # type: ignore[assignment]

NUMPY_MIN = 6000
"""Rows from which numpy sorts CPU scores: 1.8x torch's speed at 6,000, 2.2x at 40,000, 1.8-2.3x at 10^6; below
about 4,096 rows torch is as fast or faster (one thread, CPU torch 2.13, this project's 2-vCPU machine)."""


def descending(scores: torch.Tensor) -> torch.Tensor:
    """Indices that order ``scores`` high to low along dim 0, column by column; ties in no particular order.

    The exact curves read every tie group whole (each member carries the
    counts at the group's end), so any order of ties gives the same curve.
    On the CPU, float32 and float64 scores of at least ``NUMPY_MIN`` rows
    without NaN are sorted by numpy (the negated scores, ascending); anything
    else, NaN included (torch puts it first), by ``torch.argsort``.

    Examples:
        >>> descending(torch.tensor([0.2, 0.9, 0.5]))
        tensor([1, 2, 0])
    """
    if (
        np is not None
        and scores.shape[0] >= NUMPY_MIN
        and scores.device.type == "cpu"
        and scores.dtype in (torch.float32, torch.float64)
        and not torch.compiler.is_compiling()
    ):
        a = scores.detach().numpy()
        if not np.isnan(a).any():
            return torch.from_numpy(np.argsort(-a, axis=0)).to(torch.int64)
    return scores.argsort(dim=0, descending=True)


def ranked(scores: torch.Tensor, positive: torch.Tensor, valid: torch.Tensor | None, values: bool = False
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Each column of ``scores`` ((N,) or (N, C)) sorted high to low: ``(ties, positive, valid)`` in that order.

    ``ties`` is equal between neighbours exactly where their scores are equal
    (the sorted scores themselves with ``values``, -0.0 then read as 0.0);
    ``positive`` and ``valid`` go in as bool masks (each is one bit of the
    packed key) and come out as int64 0/1. Ties come in no particular
    order. On the CPU, float32 scores of at least ``NUMPY_MIN`` rows without
    NaN sort as one int64 key per row, the score's order-preserving bits with
    ``valid`` and ``positive`` as its two low bits, by numpy's sort of values:
    no argsort and no gathers (about even at 40,000 rows, 1.4-2.2x at 10^6,
    1.7x at 4 * 10^6; README.md). Anything else takes ``descending`` and
    gathers.

    Examples:
        >>> s, p, v = ranked(torch.tensor([[0.2], [0.9], [0.2]]), torch.tensor([[True], [False], [False]]), None)
        >>> p.reshape(-1).tolist(), bool(s[1] == s[2]), v
        ([0, 1, 0], True, None)
    """
    masks = positive.dtype == torch.bool and (valid is None or valid.dtype == torch.bool)  # one bit each
    if masks and _packs(scores):
        a = scores.detach().numpy() + 0.0  # -0.0 as 0.0
        if not np.isnan(a).any():
            bits = a.view(np.int32)
            key = (bits ^ ((bits >> 31) & 0x7FFFFFFF)).astype(np.int64)  # negative floats: magnitude bits flipped
            key <<= 2
            key |= positive.numpy()
            if valid is not None:
                key |= valid.numpy().astype(np.int64) << 1
            np.negative(key, out=key)  # one values-only sort, ascending, of the negated keys: descending
            key.sort(axis=0)
            down = torch.from_numpy(np.negative(key, out=key))
            ties = _floats(down >> 2) if values else down >> 2
            return ties, down & 1, None if valid is None else (down >> 1) & 1
    order = descending(scores)
    return (take(scores, order), take(positive, order).to(torch.int64),
            None if valid is None else take(valid, order).to(torch.int64))


def _floats(keys: torch.Tensor) -> torch.Tensor:
    """The float32 values of the order-preserving keys ``ranked`` sorted (the sign flip is its own inverse)."""
    bits = keys.to(torch.int32)
    return (bits ^ ((bits >> 31) & 0x7FFFFFFF)).view(torch.float32)


def _packs(scores: torch.Tensor) -> bool:
    return (
        np is not None
        and scores.shape[0] >= NUMPY_MIN
        and scores.device.type == "cpu"
        and scores.dtype == torch.float32
        and not torch.compiler.is_compiling()
    )


def take(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x.gather(0, index)``; one column by ``index_select`` of the flat column (2-4x faster on the CPU)."""
    if x.ndim == 2 and x.shape[1] == 1:
        return x.view(-1).index_select(0, index.view(-1)).view(-1, 1)
    return x.gather(0, index)
