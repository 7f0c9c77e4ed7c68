"""Levenshtein distances of many token sequences at once, one torch row operation per prediction position.

The textbook dynamic programme fills ``dp[i][j]`` cell by cell in Python. Here
a whole row ``i`` of every pair in a bucket is one tensor: the cells that come
from the row above (deletion, substitution or match) are

    t[j] = min(dp[i-1][j] + 1, dp[i-1][j-1] + cost(a[i-1], b[j-1])),   t[0] = i

and the insertions along the row, ``dp[i][j] = min(t[j], dp[i][j-1] + 1)``,
unroll into ``dp[i][j] = min over l <= j of (t[l] + j - l)``: a running minimum
of ``t[l] - l`` (``torch.cummin``) plus ``j``. Pairs are padded (the two pads
never match anything) and bucketed by length, so a long sentence does not
make every pair in the batch pay for it; a pair's distance is read off the
row at its own prediction length, at its own target length.

The plain cell-by-cell twin lives in the tests (``tests/test_text.py``).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Sequence
from typing import TypeAlias

import torch

Vocabulary: TypeAlias = "collections.defaultdict[str, int]"

_BUCKET = 1024  # pairs per bucket: large enough to amortise the per-row op cost, small enough to keep pads few


def token_ids(sentences: Sequence[Sequence[str]], vocab: Vocabulary) -> tuple[torch.Tensor, list[int]]:
    """Every token of ``sentences`` as an integer id (one ``vocab`` per call), concatenated, and each length."""
    flat = [vocab[w] for s in sentences for w in s]
    return torch.tensor(flat, dtype=torch.int64), [len(s) for s in sentences]


def vocabulary() -> Vocabulary:
    """A fresh token-to-id map: an unseen token gets the next id."""
    return collections.defaultdict(itertools.count().__next__)


def char_ids(strings: Sequence[str]) -> tuple[torch.Tensor, list[int]]:
    """Every character of ``strings`` as its code point, concatenated, and each string's length."""
    joined = "".join(strings)
    if not joined:
        return torch.zeros(0, dtype=torch.int64), [len(s) for s in strings]
    # surrogatepass: a lone surrogate (from surrogateescape decoding, or a JSON escape) is a character of its own
    flat = torch.frombuffer(bytearray(joined.encode("utf-32-le", "surrogatepass")), dtype=torch.int32).to(torch.int64)
    return flat, [len(s) for s in strings]


def _padded(flat: torch.Tensor, lengths: torch.Tensor, pad: int) -> torch.Tensor:
    """Rows of ``flat`` (concatenated sequences of ``lengths``) padded with ``pad`` to the longest."""
    width = int(lengths.max()) if lengths.numel() else 0
    out = torch.full((lengths.numel(), width), pad, dtype=torch.int64)
    out[torch.arange(width) < lengths[:, None]] = flat
    return out


def distances(
    preds: tuple[torch.Tensor, list[int]], target: tuple[torch.Tensor, list[int]], substitution_cost: int = 1
) -> torch.Tensor:
    """Levenshtein distance (insertions and deletions cost 1) of every pair, as int64.

    ``preds`` and ``target`` are ``(flat ids, lengths)`` of as many sequences.
    """
    p_flat, p_len = preds
    t_flat, t_len = target
    lp = torch.tensor(p_len, dtype=torch.int64)
    lt = torch.tensor(t_len, dtype=torch.int64)
    out = torch.zeros(lp.numel(), dtype=torch.int64)
    if lp.numel() == 0:
        return out
    p_start = torch.cumsum(lp, 0) - lp
    t_start = torch.cumsum(lt, 0) - lt
    order = torch.argsort(lp * (int(lt.max()) + 1) + lt)  # similar shapes share a bucket
    for chunk in torch.split(order, _BUCKET):
        out[chunk] = _bucket(p_flat, p_start[chunk], lp[chunk], t_flat, t_start[chunk], lt[chunk], substitution_cost)
    return out


def _rows(flat: torch.Tensor, start: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """The concatenation of ``flat[start[k] : start[k] + length[k]]`` over ``k``."""
    if int(length.sum()) == 0:
        return flat[:0]
    offsets = torch.repeat_interleave(start - (torch.cumsum(length, 0) - length), length)
    return flat[torch.arange(int(length.sum())) + offsets]


def _bucket(
    p_flat: torch.Tensor,
    p_start: torch.Tensor,
    lp: torch.Tensor,
    t_flat: torch.Tensor,
    t_start: torch.Tensor,
    lt: torch.Tensor,
    cost: int,
) -> torch.Tensor:
    a = _padded(_rows(p_flat, p_start, lp), lp, -1)  # (B, P)
    b = _padded(_rows(t_flat, t_start, lt), lt, -2)  # (B, T): -1 never equals -2
    batch, width = lt.numel(), b.shape[1]
    j = torch.arange(width + 1)
    row = j.expand(batch, width + 1)  # dp[0][j] = j
    found = lt.clone()  # a pair with an empty prediction: every target token inserted
    where = lt[:, None]
    for i in range(1, a.shape[1] + 1):
        change = (a[:, i - 1 : i] != b).to(torch.int64)
        stay = torch.minimum(row[:, :-1] + change * cost, row[:, 1:] + 1)
        first = torch.full((batch, 1), i, dtype=torch.int64)
        row = torch.cummin(torch.cat([first, stay], 1) - j, 1).values + j
        done = lp == i
        if bool(done.any()):
            found = torch.where(done, row.gather(1, where).squeeze(1), found)
    return found
