"""Running moments merged with Chan's parallel formula.

A moment state is ``total`` (the row count, int64) and, per variable and
output, ``mean``, ``m2`` (the sum of squared deviations from the mean),
``low`` and ``high`` (the extremes). Two states merge as

    n = n_a + n_b,  delta = mean_b - mean_a
    mean = mean_a + delta * n_b / n
    m2   = m2_a + m2_b + delta**2 * n_a * n_b / n
    co   = co_a + co_b + delta_x * delta_y * n_a * n_b / n     (co-moments)

(Chan, Golub & LeVeque, 1979). Unlike raw sums of squares, nothing here
subtracts two large, nearly equal numbers, so data far from zero with a small
spread (values around 1e4 with unit variance) keeps its precision even in
float32; the metrics keep float64 moments all the same, since a float32 mean
of data near 1e6 is off by up to 0.06, which the merges read as spread.
The empty state (``total == 0``, zero means) is an exact identity: its
weights ``n_b / n`` and ``n_a * n_b / n`` are exactly 0 or 1. The extremes make
"this variable is constant" an exact test: rounding can leave a constant
column with a tiny non-zero ``m2``, but never with ``low != high``.
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics.metric import Metric, check_compatible


def init(owner: Metric, shape: tuple[int, ...]) -> None:
    """Give a fresh metric empty moments of ``shape`` (called from ``__post_init__``)."""
    dtype = owner.mean.dtype  # type: ignore[attr-defined]
    object.__setattr__(owner, "mean", torch.zeros(shape, dtype=dtype))
    object.__setattr__(owner, "m2", torch.zeros(shape, dtype=dtype))
    object.__setattr__(owner, "low", torch.full(shape, float("inf"), dtype=dtype))
    object.__setattr__(owner, "high", torch.full(shape, float("-inf"), dtype=dtype))


LARGE = 1 << 13  # from this many samples a batch's passes cost more than its ops: no stacked copy, fused kernels


def of_batch(owner: Metric, *rows: torch.Tensor) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:
    """Moments of each ``rows`` (``(d, N)``: samples along the last dim, ``N >= 1``) for ``owner``, and each centred.

    With several ``rows`` (explained variance: the error and the target) the
    moments are stacked along a new first dim, ``(len(rows), d)``. A batch of
    ``LARGE`` samples or more is not itself stacked (a copy of its size), and
    one output takes fused kernels; a smaller one is stacked, as one pass costs
    fewer tensor ops than one per row.
    Samples lie along the last dimension so that every reduction runs over
    contiguous memory: over dim 0 of an ``(N, 2, 1)`` batch the same sums took
    2-3x as long on the CPU. The mean of rows narrower than float64 is refined
    once by the mean of the deviations from it: in float32 a plain mean of
    values near 1e4 can be off by several ulps, and ``merge`` weighs the
    difference of means. A float64 mean is already closer than any merge reads.
    """
    n = rows[0].shape[-1]
    if len(rows) > 1 and n < LARGE:  # a small batch: one pass over the rows stacked costs fewer ops
        fields, stacked = _moments_of(torch.stack(rows))
        centred = list(stacked.unbind(0))
    else:
        parts = [_moments_of(r) for r in rows]
        fields = parts[0][0] if len(parts) == 1 else {k: torch.stack([f[k] for f, _ in parts]) for k in parts[0][0]}
        centred = [c for _, c in parts]
    fields["total"] = torch.full_like(owner.total, n)  # type: ignore[attr-defined]
    return fields, centred


def _moments_of(rows: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    rows = rows.contiguous()
    mean = rows.mean(-1)
    if rows.dtype != torch.float64:
        mean = mean + (rows - mean.unsqueeze(-1)).mean(-1)
    centred = rows - mean.unsqueeze(-1)
    low, high = extremes(rows)
    return {"mean": mean, "m2": row_dots(centred, centred), "low": low, "high": high}, centred


def extremes(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of ``(d, N)`` rows, the minimum and maximum; one large row in one pass (``aminmax``).

    ``aminmax(dim=-1)`` took 3x as long as ``amin`` and ``amax`` on the CPU, so several rows take those two.
    """
    if rows.shape[0] == 1 and rows.shape[-1] >= LARGE:
        low, high = torch.aminmax(rows)
        return low.reshape(1), high.reshape(1)
    return rows.amin(-1), rows.amax(-1)


def row_dots(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(a * b).sum(-1)`` of ``(d, N)`` rows; one large float64 row by ``dot``, fused (no temporary of its size).

    Narrower rows keep the sum's pairwise accumulation, which a float32 ``dot`` does not have.
    """
    if a.shape[0] == 1 and a.shape[-1] >= LARGE and a.dtype == torch.float64:
        return a[0].dot(b[0]).reshape(1)
    return (a * b).sum(-1)


def check_mergeable(a: Metric, b: Any) -> None:
    """Refuse to merge metrics of different types, configurations or state shapes."""
    name = type(a).__name__
    check_compatible(a, b)
    for n in a._layout.states:
        x, y = getattr(a, n), getattr(b, n)
        if x.shape != y.shape or x.dtype != y.dtype:
            raise ValueError(
                f"{name}.merge: state {n!r} differs: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}"
            )


def chan(a: Metric, b: Metric) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Merge the moments of ``a`` and ``b``; also return ``delta`` and ``n_a * n_b / n`` for co-moments.

    Element-wise over any leading dimensions: ``a`` and ``b`` may be states stacked
    along dim 0 (``total`` of shape ``(k,)``), as ``_kernels.folds`` merges them.
    """
    check_mergeable(a, b)
    na, nb = a.total, b.total  # type: ignore[attr-defined]
    mean_a, mean_b = a.mean, b.mean  # type: ignore[attr-defined]
    dtype = mean_a.dtype
    n = na + nb
    frac = nb / n.clamp(min=1).to(dtype)  # int64 counts promote to dtype; exactly 0 or 1 when a side is empty
    cross = na * frac
    if na.ndim:  # stacked states (a fold over participants): one weight per state, over its entries
        frac, cross = (x.reshape(*x.shape, *[1] * (mean_a.ndim - x.ndim)) for x in (frac, cross))
    delta = mean_b - mean_a
    fields = {
        "total": n,
        "mean": mean_a + delta * frac,
        "m2": a.m2 + b.m2 + delta * delta * cross,  # type: ignore[attr-defined]
        "low": torch.minimum(a.low, b.low),  # type: ignore[attr-defined]
        "high": torch.maximum(a.high, b.high),  # type: ignore[attr-defined]
    }
    return fields, delta, cross


def exact_m2(m: Metric) -> tuple[torch.Tensor, torch.Tensor]:
    """``m2`` with constant variables set to exactly 0, and the mask of constant variables."""
    constant = m.high == m.low  # type: ignore[attr-defined]  # False when empty, True for one row
    return torch.where(constant, torch.zeros_like(m.m2), m.m2), constant  # type: ignore[attr-defined]
