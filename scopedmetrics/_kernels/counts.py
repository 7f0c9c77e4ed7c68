"""The kernels count states grow by. Each has a plain twin in ``reference``; see README.md.

On the CPU every tensor op costs 1-2 µs, so for the small batches of an
evaluation loop the number of ops decides the speed: ``index_add`` of cached
ones (one op) beats ``bincount`` plus an add. Past about 64k samples
``bincount`` is the faster pass, and on other devices an out-of-range
``index_add`` is a device-side assert rather than an ``IndexError``, so
there the kernels take ``bincount``, which drops positions past the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

INDEX_ADD_MAX = 1 << 16  # above this many samples ``tally`` takes one bincount pass on the CPU too
CONFUSION_MIN = 1 << 13  # from this many samples (and c * c) ``class_counts`` counts a confusion matrix
PAIRS_MAX = 128  # classes up to which ``class_counts`` looks a scored batch's positions up (``pairs``) ...
PAIRS_ROWS = 1 << 11  # ... below this many samples (from about here the two ``index_add`` are as fast)

_FULL: dict[tuple[int, int, torch.dtype, torch.device], torch.Tensor] = {}
_PAIRS: dict[tuple[int, torch.device], torch.Tensor] = {}


def _kept(store: dict[Any, torch.Tensor], key: Any, limit: int, make: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``store[key]``, made by ``make`` on first use and only read after; at most ``limit`` kept.

    Nothing is kept while tracing: a traced function holds no global state.
    """
    if torch.compiler.is_compiling():
        return make()
    found = store.get(key)
    if found is None:
        if len(store) >= limit:  # keys that keep changing (batch sizes): do not hoard
            store.clear()
        found = store[key] = make()
    return found


def full(n: int, value: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``n`` copies of ``value``, made once per size: read-only operands of the counting ``index_add`` calls.

    Examples:
        >>> full(3, 1, torch.long, torch.device("cpu"))
        tensor([1, 1, 1])
    """
    return _kept(_FULL, (n, value, dtype, device), 64, lambda: torch.full((n,), value, dtype=dtype, device=device))


def pairs(c: int, device: torch.device) -> torch.Tensor:
    """``(c * c, 2)`` int64: at ``t * c + p``, the flat positions ``3p + (p != t)`` and ``3t + 2`` a sample counts at.

    Made once per ``c`` (at most ``PAIRS_MAX``: 256 KiB) and only read.

    Examples:
        >>> pairs(2, torch.device("cpu"))
        tensor([[0, 2],
                [4, 2],
                [1, 5],
                [3, 5]])
    """

    def make() -> torch.Tensor:
        t, p = torch.arange(c, device=device).repeat_interleave(c), torch.arange(c, device=device).repeat(c)
        return torch.stack([torch.add(p != t, p, alpha=3), torch.add(torch.full_like(t, 2), t, alpha=3)], dim=1)

    return _kept(_PAIRS, (c, device), 16, make)


def tally(counts: torch.Tensor, index: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    """``counts`` plus one at each flat position in ``index`` (where ``keep``): how a count state grows.

    Small batches on the CPU take one ``index_add`` (a position out of range raises
    ``IndexError``), as every tensor op costs 1-2 µs there; large batches, and other
    devices (where an out-of-range ``index_add`` is a device-side assert), add a
    ``bincount``, which drops positions past the end.

    Examples:
        >>> tally(torch.zeros(2, 2, dtype=torch.long), torch.tensor([0, 3, 3]))
        tensor([[1, 0],
                [0, 2]])
    """
    flat = counts.flatten()  # these calls cost about 1 µs each: views with a torch.Size cost more
    if index.ndim != 1:
        index = index.flatten()
    if keep is not None and keep.ndim != 1:
        keep = keep.flatten()
    if not flat.is_cpu or index.shape[0] > INDEX_ADD_MAX:  # bincount is the faster pass over many samples
        return counts + bincount(index, flat.shape[0], keep).view_as(counts)
    if keep is None:
        src = full(index.shape[0], 1, flat.dtype, flat.device)
    else:
        src, index = keep.to(flat.dtype), index.where(keep, 0)
    new = flat.index_add(0, index, src)
    return new if counts.ndim == 1 else new.view_as(counts)


def bincount(index: torch.Tensor, size: int, keep: torch.Tensor | None = None) -> torch.Tensor:
    """int64 counts of each value in ``[0, size)``; values ``>= size`` and entries not in ``keep`` are dropped.

    Examples:
        >>> import torch
        >>> bincount(torch.tensor([0, 2, 2, 3]), 3)
        tensor([1, 0, 2])
        >>> bincount(torch.tensor([0, 2, 2, 1]), 3, keep=torch.tensor([True, True, False, True]))
        tensor([1, 1, 1])
    """
    if keep is not None:
        index = torch.where(keep, index, size)
    return torch.bincount(index.reshape(-1), minlength=size + 1)[:size]


def class_counts(
    counts: torch.Tensor,
    p: torch.Tensor,
    t: torch.Tensor,
    keep: torch.Tensor | None,
    c: int,
    index_add: bool | None = None,
    scored: bool = False,
) -> torch.Tensor:
    """``counts`` (``(C, 3)``: per class tp, fp, support) plus those of a batch of labels.

    Each sample adds one to its prediction's ``tp`` (hit) or ``fp`` (miss) and
    one to its target's support. The columns interleave, so class ``k``'s
    entries are the flat positions ``3k``, ``3k + 1``, ``3k + 2``: a label
    outside ``[0, c)`` lands outside ``[0, 3c)`` whichever column it adds to,
    and on the CPU the two ``index_add`` of ones raise ``IndexError`` for it
    (with the rows ``(3, C)`` a miss predicted as ``c`` would count as class
    0's support). Small batches pay per tensor op (1-2 µs each), so fewer ops
    is what makes this fast. A batch of at least ``CONFUSION_MIN`` and ``c * c``
    samples counts the confusion matrix instead (one pass, which wins from
    about 8k samples). Other devices, where an out-of-range ``index_add`` is a
    device-side assert, ``tally`` both columns at once, which takes a
    ``bincount`` there (``index_add=None`` picks by device).

    ``scored`` says every ``p`` is in ``[0, c)`` by construction: an argmax
    over at most ``c`` scores (the caller decides; over more columns than
    classes an argmax lands past the end). Then, up to ``PAIRS_MAX`` classes
    and below ``PAIRS_ROWS`` samples, without ``keep``, one lookup of
    ``t * c + p`` in ``pairs`` gives both positions of every sample and one
    ``put`` counts them at those flat positions: three ops and no views
    instead of seven ops and two views (``put`` would wrap a negative
    position, but every position ``pairs`` holds is in range). The key leaves
    ``[0, c * c)`` exactly when ``t`` leaves ``[0, c)``, and ``index_select``
    raises ``IndexError`` for it (negative keys too). Labels whose ``3t`` or
    ``c * t`` overflows int64 wrap on either path: the metrics' label checks
    (``validate_args=True``) refuse them first.

    Examples:
        >>> import torch
        >>> zero = torch.zeros(3, 3, dtype=torch.long)
        >>> p, t = torch.tensor([2, 1, 0, 1]), torch.tensor([2, 1, 0, 0])
        >>> class_counts(zero, p, t, None, 3)
        tensor([[1, 0, 2],
                [1, 1, 1],
                [1, 0, 1]])
        >>> torch.equal(class_counts(zero, p, t, None, 3, index_add=False), class_counts(zero, p, t, None, 3))
        True
        >>> torch.equal(class_counts(zero, p, t, None, 3, scored=True), class_counts(zero, p, t, None, 3))
        True
        >>> class_counts(zero, torch.tensor([3]), torch.tensor([0]), None, 3)
        Traceback (most recent call last):
        ...
        IndexError: index out of range in self
    """
    n = p.shape[0]
    cpu = counts.is_cpu if index_add is None else index_add
    if scored and cpu and keep is None and c <= PAIRS_MAX and n < PAIRS_ROWS:
        at = pairs(c, p.device).index_select(0, torch.add(p, t, alpha=c))  # IndexError for t outside [0, c)
        return counts.put(at, full(2 * n, 1, counts.dtype, p.device), accumulate=True)  # flat positions, no views
    if n >= max(c * c, CONFUSION_MIN):
        cm = bincount(torch.add(p, t, alpha=c), c * c, keep).view(c, c)  # index t * c + p
        hits = cm.diagonal()
        return counts + torch.stack([hits, cm.sum(0) - hits, cm.sum(1)], dim=1)
    rows = torch.add(p != t, p, alpha=3)  # 3p on a hit (tp), 3p + 1 on a miss (fp)
    support = torch.add(full(n, 2, t.dtype, t.device), t, alpha=3)  # 3t + 2
    if not cpu:  # both columns in one tally (a bincount there)
        return tally(counts, torch.cat([rows, support]), None if keep is None else keep.repeat(2))
    if keep is None:
        one = full(n, 1, counts.dtype, p.device)
    else:
        one, rows, support = keep.to(counts.dtype), rows.where(keep, 0), support.where(keep, 0)
    new = counts.view(-1).index_add(0, rows, one)
    new.index_add_(0, support, one)
    return new.view(c, 3)
