"""Every query's ranking at once: the gathered rows sorted by (query, -score), and segment sums over queries.

The retrieval metrics keep every ``(index, score, target)`` row (``cat``
states), because one query's documents may be split across participants and
batches. ``compute`` sorts all rows once, by query id, then score descending,
then target ascending (one sort of a packed int64 key, exact for float64
scores), so each query is a contiguous segment in rank order; a per-query
quantity is then a segment sum (``index_add_``) or a segment minimum
(``scatter_reduce_``), with no Python loop over queries.

Ties in score are ranked relevant-last (pessimistically), which depends only
on the rows, not on their order or on the split; TorchMetrics leaves the order
of tied documents to ``torch.topk``. (NDCG averages over ties, as TorchMetrics
does, so it does not depend on this.)
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The rows of every query, contiguous per query and in rank order.

    ``query[i]`` is row ``i``'s query as ``0..count-1`` (in increasing query
    id), ``rank[i]`` its 0-based position within the query, ``size[q]`` the
    number of documents of query ``q``.
    """

    query: torch.Tensor
    rank: torch.Tensor
    preds: torch.Tensor
    target: torch.Tensor
    size: torch.Tensor
    first: torch.Tensor  # (count,) the row where each query starts

    @property
    def count(self) -> int:
        """The number of queries."""
        return int(self.size.numel())

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """Per query, the sum of ``x`` over its rows, in float64."""
        out = torch.zeros(self.count, dtype=torch.float64, device=x.device)
        return out.index_add_(0, self.query, x.to(torch.float64))

    def within(self, k: int | torch.Tensor | None) -> torch.Tensor:
        """Whether each row is among its query's top ``k`` (a number, or one per query; ``None``: all)."""
        if k is None:
            return torch.ones_like(self.rank, dtype=torch.bool)
        if isinstance(k, torch.Tensor):
            return self.rank < k[self.query]
        return self.rank < k

    def cumsum(self, x: torch.Tensor) -> torch.Tensor:
        """Per row, the sum of ``x`` over its query's rows up to and including it."""
        total = torch.cumsum(x.to(torch.float64), 0)
        before = (total - x.to(torch.float64))[self.first]  # what earlier queries contributed
        return total - before[self.query]

    def first_rank(self, hit: torch.Tensor) -> torch.Tensor:
        """Per query, the smallest rank of a row where ``hit`` (``inf`` where none)."""
        out = torch.full((self.count,), float("inf"), dtype=torch.float64, device=hit.device)
        return out.scatter_reduce_(0, self.query[hit], self.rank[hit].to(torch.float64), "amin")

    def ideal_target(self) -> torch.Tensor:
        """Each query's targets sorted descending, row for row (the ideal ranking's gains)."""
        return self.target[_lexsort(self.query, self.target, None)]

    def ties(self) -> tuple[torch.Tensor, int]:
        """Per row, the id of its block of equal scores within its query, and the number of blocks."""
        new = torch.ones_like(self.query, dtype=torch.bool)
        new[1:] = (self.query[1:] != self.query[:-1]) | (self.preds[1:] != self.preds[:-1])
        block = torch.cumsum(new.to(torch.int64), 0) - 1
        return block, int(block[-1]) + 1 if block.numel() else 0


_SHIFT = 33  # a key is (group << 33) | (descending score key << 1) | tie bit: 30 + 32 + 1 bits, positive
_KEYS = 2**32  # score keys are in [0, _KEYS)


def _descending(x: torch.Tensor) -> torch.Tensor:
    """An int64 key per score, ordered as the scores descending (-0.0 as 0.0), equal only for equal scores.

    Rounding can create no false tie: scores that float32 holds exactly (every
    float16, bfloat16 and float32 score) key on their float32 bits, in
    ``[0, 2**32)``; float64 scores that float32 would round (``0.30000001``
    and ``0.3``, integers above 2**24) key on their rank among the distinct
    scores, in ``[0, 2**32)`` for fewer than 2**32 scores (``_lexsort`` checks).
    """
    x = x + 0.0  # -0.0 as 0.0
    narrow = x.to(torch.float32)
    if x.dtype != torch.float64 or bool((narrow.to(torch.float64) == x).all()):
        return _descending_bits(narrow)
    inverse: torch.Tensor = torch.unique(x, return_inverse=True)[1]  # each score's rank among the distinct, ascending
    return int(inverse.max()) - inverse


def _descending_bits(x: torch.Tensor) -> torch.Tensor:
    """An int64 key in ``[0, 2**32)`` per float32 value, ordered as the values descending (no -0.0 given)."""
    bits = x.view(torch.int32).to(torch.int64)
    ascending = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # negative floats: flip magnitude bits
    return (2**31 - 1) - ascending


def _lexsort(group: torch.Tensor, score: torch.Tensor, tie: torch.Tensor | None) -> torch.Tensor:
    """The order of rows by (``group`` ascending, ``score`` descending, ``tie`` ascending), stable.

    One int64 sort of a packed key when the groups span fewer than 2**30
    ids and there are fewer than 2**32 rows (the usual case); three stable
    sorts otherwise. ``tie`` is 0/1.
    """
    low = group.min() if group.numel() else group.new_zeros(())
    # the span in Python ints: ``max - min`` in int64 wraps negative for ids 2**63 or more apart (hashed ids)
    if group.numel() == 0 or (int(group.max()) - int(low) < 2**30 and group.numel() < _KEYS):
        key = ((group - low) << _SHIFT) | (_descending(score) << 1)
        if tie is not None:
            key = key | tie.to(torch.int64)
        return torch.argsort(key)  # keys are unique up to equal rows, whose order does not matter
    order = torch.arange(group.numel(), device=group.device)
    if tie is not None:
        order = torch.argsort(tie, stable=True)
    order = order[torch.argsort(score[order], descending=True, stable=True)]
    return order[torch.argsort(group[order], stable=True)]


def rank(indexes: torch.Tensor, preds: torch.Tensor, target: torch.Tensor, graded: bool = False) -> Ranking:
    """Sort the rows by (query id, score descending, target ascending) and find each query's segment.

    With ``graded`` targets the order of tied scores is left as it falls (the
    caller averages over ties).
    """
    order = _lexsort(indexes, preds, None if graded else target)
    idx, p, t = indexes[order], preds[order], target[order]
    n = idx.numel()
    start = torch.ones(n, dtype=torch.bool, device=idx.device)
    start[1:] = idx[1:] != idx[:-1]
    query = torch.cumsum(start.to(torch.int64), 0) - 1
    first = start.nonzero().flatten()
    size = torch.diff(first, append=torch.tensor([n], device=idx.device))
    rank_ = torch.arange(n, device=idx.device) - first[query]
    return Ranking(query=query, rank=rank_, preds=p, target=t, size=size, first=first)
