"""Plain twins of the kernels: one Python loop over the samples (or rows), nothing clever.

They define what the kernels must return; ``tests/test_kernels.py`` compares
every path of every kernel with them on random inputs. Never used by metrics.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def bincount(index: torch.Tensor, size: int, keep: torch.Tensor | None = None) -> torch.Tensor:
    """int64 counts of each value in ``[0, size)``; values ``>= size`` and entries not in ``keep`` are dropped."""
    out = [0] * size
    kept = [True] * index.numel() if keep is None else keep.reshape(-1).tolist()
    for i, k in zip(index.reshape(-1).tolist(), kept):
        if k and i < size:
            out[i] += 1
    return torch.tensor(out, dtype=torch.long)


def tally(counts: torch.Tensor, index: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """``counts`` plus one at each flat position in ``index`` (where ``keep``)."""
    flat = counts.flatten().tolist()
    kept = [True] * index.numel() if keep is None else keep.reshape(-1).tolist()
    for i, k in zip(index.reshape(-1).tolist(), kept):
        if k:
            flat[i] += 1
    return torch.tensor(flat, dtype=counts.dtype).view_as(counts)


def class_counts(
    counts: torch.Tensor, p: torch.Tensor, t: torch.Tensor, keep: torch.Tensor | None, c: int
) -> torch.Tensor:
    """``counts`` (``(C, 3)``: tp, fp, support per class) plus one batch of labels ``p`` (predicted), ``t`` (true)."""
    rows = counts.tolist()
    kept = [True] * p.numel() if keep is None else keep.tolist()
    for pi, ti, k in zip(p.tolist(), t.tolist(), kept):
        if k:
            rows[pi][0 if pi == ti else 1] += 1
            rows[ti][2] += 1
    return torch.tensor(rows, dtype=counts.dtype)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Each row of a 2-d ``x`` as ``exp(x - max) / sum(exp(x - max))``, in Python floats (float64)."""
    out = []
    for row in x.tolist():
        top = max(row)
        e = [math.exp(v - top) for v in row]
        out.append([v / math.fsum(e) for v in e])
    return torch.tensor(out, dtype=x.dtype).reshape(x.shape)


def pairwise_fold(states: list[Any]) -> Any:
    """Merge ``states`` pairwise, ``(0, 1), (2, 3), ...``, then the results likewise; an odd last one waits."""
    while len(states) > 1:
        merged = [states[i].merge(states[i + 1]) for i in range(0, len(states) - 1, 2)]
        states = merged + states[len(states) - len(states) % 2 :]
    return states[0]


def descending(scores: torch.Tensor) -> torch.Tensor:
    """Indices that order each column of ``scores`` high to low (ties by position), by Python's sort."""
    n, width = scores.shape[0], scores[:1].numel()
    cols = scores.reshape(n, width).T.tolist()
    order = [sorted(range(n), key=column.__getitem__, reverse=True) for column in cols]
    return torch.tensor(order, dtype=torch.int64).reshape(width, n).T.reshape(scores.shape)


def ranked(
    scores: torch.Tensor, positive: torch.Tensor, valid: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Each column of ``scores`` (N, C) sorted high to low by Python's sort: scores, ``positive``, ``valid``."""
    order = descending(scores)
    kept = None if valid is None else valid.gather(0, order).to(torch.int64)
    return scores.gather(0, order), positive.gather(0, order).to(torch.int64), kept
