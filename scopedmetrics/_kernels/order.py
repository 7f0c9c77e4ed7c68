"""The sort order of the exact curves: numpy's argsort on the CPU from ``NUMPY_MIN`` rows, torch's otherwise."""

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
