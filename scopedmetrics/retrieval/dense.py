"""Retrieval metrics at several cut-offs from a dense score matrix, in constant memory.

For embedding retrieval every batch holds whole queries: a ``(queries,
documents)`` score matrix and, per query, its gold document (or a relevance
matrix). Each query's values at every cut-off ``k`` are computed in
``update`` and summed, so the state is a few sums per ``k`` (float64) and a
query count, whatever the number of queries; the value is their mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.retrieval._ranking import _descending
from scopedmetrics.state import state, static

NAMES = ("hit_rate", "recall", "precision", "mrr", "ndcg", "map")
"""The metrics ``RetrievalAtK.compute`` returns at each cut-off, in the rows of its ``sums`` state."""


class RetrievalAtK(Metric):
    """Hit rate, recall, precision, MRR, NDCG and MAP at every cut-off in ``k``, from dense scores.

    ``update(preds, target)``: ``preds`` is a ``(queries, documents)`` float
    score matrix; ``target`` either the gold document of each query
    (``(queries,)`` integers in ``[0, documents)``) or a ``(queries,
    documents)`` 0/1 (or bool) relevance matrix. ``compute()`` returns
    ``{"recall@5": value, ...}`` for every name in ``NAMES`` and every ``k``.

    Each value equals the grouped metric of the same name with ``top_k=k``
    (``RetrievalHitRate``, ``RetrievalRecall``, ``RetrievalPrecision``,
    ``RetrievalMRR``, ``RetrievalNormalizedDCG``, ``RetrievalMAP``) on the same
    rows, when scores are positive and untied: here no score is too low to
    count, and tied scores rank relevant-last (NDCG does not average them).
    ``empty_target_action`` (``"neg"``, ``"pos"``, ``"skip"``, ``"error"``)
    scores a query without a relevant document, as in the grouped metrics.
    Every query must come whole in one batch: for documents split across
    participants, use the grouped metrics.

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalAtK
        >>> scores = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.3, 0.8]])
        >>> gold = torch.tensor([2, 2])
        >>> values = RetrievalAtK(k=(1, 2)).update(scores, gold).compute()
        >>> values["recall@1"], values["recall@2"], values["mrr@2"]
        (tensor(0.5000), tensor(1.), tensor(0.7500))
    """

    k: Sequence[int] = static(default=(1, 5, 10))
    empty_target_action: str = static(default="neg")
    sums: torch.Tensor = state("sum", init=lambda m: torch.zeros(len(NAMES), len(m.k), dtype=torch.float64))
    queries: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        ks = self.k
        ints = isinstance(ks, Sequence) and all(isinstance(x, int) and not isinstance(x, bool) for x in ks)
        if not ints or not ks:
            raise TypeError(f"{type(self).__name__}: argument `k` must be a non-empty sequence of ints, got {ks!r}")
        if min(ks) < 1:
            raise ValueError(f"{type(self).__name__}: argument `k` must hold cut-offs of at least 1, got {ks!r}")
        object.__setattr__(self, "k", tuple(ks))  # frozen: one canonical form
        _checks.check_choice(self, "empty_target_action", ("neg", "pos", "skip", "error"))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> RetrievalAtK:
        """Fold in a ``(queries, documents)`` score matrix and each query's gold document or relevance row."""
        p = _checks.tensor(self, "preds", preds)
        t = _checks.tensor(self, "target", target)
        _checks.floating(self, "preds", p)
        _checks.ndim(self, "preds", p, (2,), "(queries, documents)")
        if bool(torch.isnan(p).any()):
            raise ValueError(f"{_checks.where(self)}: argument `preds` holds NaN scores")
        queries, docs = p.shape
        if t.ndim == 1:
            if t.shape[0] != queries:
                raise ValueError(
                    f"{_checks.where(self)}: argument `target` must hold one gold document per query "
                    f"({queries}), got {t.shape[0]}"
                )
            _checks.labels(self, "target", t, docs)
            relevant = torch.zeros(p.shape, dtype=torch.bool, device=p.device)
            if queries and docs:
                relevant[torch.arange(queries, device=p.device), t.to(p.device, torch.int64)] = True
        else:
            _checks.same_shape(self, "target", t, "preds", p)
            if t.is_complex() or (t.is_floating_point() and bool(torch.isnan(t).any())):
                raise ValueError(f"{_checks.where(self)}: argument `target` must hold 0/1 relevance")
            if t.numel() and bool(((t != 0) & (t != 1)).any()):
                raise ValueError(f"{_checks.where(self)}: argument `target` must hold 0/1 relevance")
            relevant = t.to(p.device) != 0
        if queries == 0 or docs == 0:
            return self
        values, empty = _at_k(p, relevant, self.k)  # (names, ks, queries), (queries,)
        if bool(empty.any()):
            if self.empty_target_action == "error":
                raise ValueError(
                    f"{_checks.where(self)}: argument `target` gives a query no relevant document "
                    "(empty_target_action='error')"
                )
            if self.empty_target_action == "skip":
                values = values[..., ~empty]
            else:
                values[..., empty] = 1.0 if self.empty_target_action == "pos" else 0.0
        where = self.sums.device
        return self.replace(sums=self.sums + values.sum(-1).to(where), queries=self.queries + values.shape[-1])

    def compute(self) -> dict[str, torch.Tensor]:
        """``{"<name>@<k>": mean over queries}`` (float32); NaN before any query."""
        means = (self.sums / self.queries).float()
        return {f"{name}@{k}": means[i, j] for i, name in enumerate(NAMES) for j, k in enumerate(self.k)}


def _at_k(preds: torch.Tensor, relevant: torch.Tensor, ks: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per query the values of ``NAMES`` at every cut-off (float64 ``(names, ks, queries)``), and emptiness."""
    docs = preds.shape[1]
    depth = min(max(ks), docs)
    key = (_descending(preds) << 1) | relevant.to(torch.int64)  # score descending, then relevant last
    top = key.topk(depth, dim=1, largest=False, sorted=True).values
    hit = (top & 1).to(torch.float64)  # (Q, depth): relevance in rank order
    total = relevant.sum(1).to(torch.float64)
    found = hit.cumsum(1)
    ranks = torch.arange(1, depth + 1, dtype=torch.float64, device=preds.device)
    discount = 1.0 / torch.log2(ranks + 1.0)
    ideal = torch.cumsum(discount, 0)
    first = torch.where(hit.any(1), hit.argmax(1).to(torch.float64), torch.full_like(total, float("inf")))
    precision_at = found / ranks * hit
    out = []
    for k in ks:
        c = min(k, depth)
        hits = found[:, c - 1]
        safe_total = total.clamp(min=1.0)
        ndcg = (hit[:, :c] * discount[:c]).sum(1) / ideal[(total.clamp(min=1.0, max=c) - 1).to(torch.int64)]
        ap = torch.where(hits > 0, precision_at[:, :c].sum(1) / hits.clamp(min=1.0), torch.zeros_like(hits))
        rr = torch.where(first < c, 1.0 / (first + 1.0), torch.zeros_like(first))
        out.append(torch.stack([(hits > 0).to(torch.float64), hits / safe_total, hits / k, rr, ndcg, ap]))
    return torch.stack(out, 1), total == 0
