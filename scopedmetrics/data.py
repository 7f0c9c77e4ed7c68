"""Exactly once under padded samplers: which of a rank's samples are repeats.

``torch.utils.data.DistributedSampler`` (and Lightning's and Ignite's, which
use it) pads the data set so every rank gets as many samples: position ``p``
of the padded order is a repeat when ``p >= len(dataset)``, and rank ``r``
holds positions ``r, r + W, r + 2W, ...`` (``W`` ranks). Every rank keeps
running the same number of steps, as FSDP and per-step collectives need, and
the metrics leave the repeats out through ``update(..., mask=keep)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import optree
import torch
from torch.utils.data import DistributedSampler


def _check(sampler: Any, who: str) -> DistributedSampler[Any]:
    if not isinstance(sampler, DistributedSampler):
        raise TypeError(
            f"sm.data.{who} needs a torch.utils.data.DistributedSampler (or a subclass, as Lightning's and "
            f"Ignite's are), got {type(sampler).__name__}; without one there are no repeats to leave out"
        )
    return sampler


def _positions(sampler: DistributedSampler[Any], start: int, stop: int) -> torch.Tensor:
    """Positions in the padded global order of this rank's samples ``start:stop``."""
    return sampler.rank + sampler.num_replicas * torch.arange(start, stop)


def repeated(sampler: DistributedSampler[Any]) -> int:
    """How many of this rank's samples in one epoch repeat another's (0 with ``drop_last`` or an even split).

    Examples:
        >>> from torch.utils.data import DistributedSampler
        >>> [repeated(DistributedSampler(range(10), num_replicas=4, rank=r)) for r in range(4)]
        [0, 0, 1, 1]
    """
    sampler = _check(sampler, "repeated")
    return int((_positions(sampler, 0, sampler.num_samples) >= len(sampler.dataset)).sum())  # type: ignore[arg-type]


def keep_mask(sampler: DistributedSampler[Any], batch_idx: int, batch_size: int) -> torch.Tensor:
    """The ``keep`` mask of batch ``batch_idx`` (``False`` for repeats), for code that does not own the loop.

    ``batch_size`` is the loader's; the last batch of an epoch may be shorter,
    and so is its mask.

    Examples:
        >>> from torch.utils.data import DistributedSampler
        >>> keep_mask(DistributedSampler(range(10), num_replicas=4, rank=3), batch_idx=1, batch_size=2)
        tensor([False])
    """
    sampler = _check(sampler, "keep_mask")
    if batch_idx < 0 or batch_size < 1:
        raise ValueError(f"sm.data.keep_mask: need batch_idx >= 0 and batch_size >= 1, got {batch_idx}, {batch_size}")
    start = batch_idx * batch_size
    stop = min(start + batch_size, sampler.num_samples)
    return _positions(sampler, start, max(start, stop)) < len(sampler.dataset)  # type: ignore[arg-type,no-any-return]


def _sampler_of(loader: Any) -> DistributedSampler[Any]:
    for s in (getattr(loader, "sampler", None), getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if isinstance(s, DistributedSampler):
            return s
    raise TypeError(
        f"sm.data.exact needs a DataLoader whose sampler (or batch sampler's sampler) is a DistributedSampler, "
        f"got {type(loader).__name__} with sampler {type(getattr(loader, 'sampler', None)).__name__}; "
        "pass DataLoader(dataset, sampler=DistributedSampler(dataset), ...)"
    )


def _rows(batch: Any) -> int:
    """The length of a batch's first dimension: that of its first tensor."""
    for leaf in optree.tree_leaves(batch):
        if isinstance(leaf, torch.Tensor) and leaf.ndim > 0:
            return int(leaf.shape[0])
    if isinstance(batch, (list, tuple)):
        return len(batch)
    raise TypeError(f"sm.data.exact: cannot tell how many samples a batch of {type(batch).__name__} holds")


def exact(loader: Any) -> Iterator[tuple[Any, torch.Tensor]]:
    """Iterate ``loader`` as ``(batch, keep)``; ``keep`` is ``False`` exactly for the sampler's repeats.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> from torch.utils.data import DataLoader, DistributedSampler
        >>> data = torch.arange(10.0)
        >>> sampler = DistributedSampler(data, num_replicas=4, rank=3, shuffle=False)
        >>> loader = DataLoader(data, batch_size=2, sampler=sampler)
        >>> [(b.tolist(), k.tolist()) for b, k in sm.data.exact(loader)]
        [([3.0, 7.0], [True, True]), ([1.0], [False])]
    """
    sampler = _sampler_of(loader)
    if getattr(loader, "batch_sampler", True) is None:  # DataLoader(batch_size=None): each item is one sample
        raise ValueError(
            "sm.data.exact needs a batching DataLoader: with batch_size=None it yields single samples, whose first "
            "dimension is no batch; pass batch_size=1 or more"
        )
    seen = 0
    for batch in loader:
        n = _rows(batch)
        if seen + n > sampler.num_samples:
            raise ValueError(
                f"sm.data.exact: the loader gave {seen + n} samples this epoch but its sampler holds "
                f"{sampler.num_samples}; a batch sampler that repeats or reorders samples is not supported"
            )
        yield batch, _positions(sampler, seen, seen + n) < len(sampler.dataset)  # type: ignore[arg-type]
        seen += n
