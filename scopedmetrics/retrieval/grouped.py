"""Retrieval metrics over documents grouped into queries by ``indexes``, named and called as in TorchMetrics.

``update(preds, target, indexes=query_ids)`` appends every document's score
(as float64, so that no score is rounded into a tie), relevance and query id
to three ``cat`` states; ``compute`` groups the rows by
query after the reduction (``_ranking``), so a query whose documents were seen
by several participants, or in several batches, is ranked whole. Each
metric's per-query value is a vectorised segment operation, then the values
are aggregated (``"mean"`` by default) over queries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.retrieval._ranking import Ranking, rank
from scopedmetrics.state import state, static

_EMPTY_ACTIONS = ("neg", "pos", "skip", "error")
_AGGREGATIONS = ("mean", "median", "min", "max")


class _Retrieval(Metric):
    """The rows of every query seen, and what to do with a query that has nothing to find.

    Subclasses declare their configuration (in TorchMetrics' order) and
    ``_values``: per query, the metric's value and whether the query is empty
    (no relevant document; for fall-out, no irrelevant one).
    """

    indexes: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.int64))
    # float64 whatever the input: every float dtype fits exactly, no score is rounded into a false tie, and
    # every participant's rows have one dtype (a cat state's dtype must agree across participants)
    preds: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.float64))
    target: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.float32))

    _graded: ClassVar[bool] = False  # target may hold graded relevance (NDCG), not only 0/1
    _empty_means: ClassVar[str] = "no positive target"

    def __post_init__(self) -> None:
        _checks.check_choice(self, "empty_target_action", _EMPTY_ACTIONS)
        _checks.check_int(self, "ignore_index", optional=True)
        if "top_k" in self.__dict__:
            _checks.check_int(self, "top_k", 1, optional=True)
        agg = self.aggregation  # type: ignore[attr-defined]
        if not (callable(agg) or agg in _AGGREGATIONS):
            raise ValueError(
                f"{type(self).__name__}: argument `aggregation` must be one of {_AGGREGATIONS} or a function of "
                f"(values, dim), got {agg!r}"
            )

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor | None = None) -> Self:
        """Fold in documents' scores, relevance and query ids (three tensors of one shape, flattened)."""
        if indexes is None:
            raise TypeError(
                f"{_checks.where(self)}: argument `indexes` (the query id of every document) is required, got None"
            )
        p = _checks.tensor(self, "preds", preds)
        t = _checks.tensor(self, "target", target)
        i = _checks.tensor(self, "indexes", indexes)
        _checks.same_shape(self, "preds", p, "target", t)
        _checks.same_shape(self, "indexes", i, "preds", p)
        _checks.floating(self, "preds", p)
        if i.is_floating_point() or i.dtype == torch.bool:
            raise TypeError(f"{_checks.where(self)}: argument `indexes` must hold integer query ids, got {i.dtype}")
        if t.is_complex():
            raise TypeError(f"{_checks.where(self)}: argument `target` must be real, got {t.dtype}")
        p, t, i = p.reshape(-1), t.reshape(-1), i.reshape(-1)
        ignore = self.ignore_index  # type: ignore[attr-defined]
        keep = _checks.not_ignored(t, ignore)
        if keep is not None:
            p, t, i = p[keep], t[keep], i[keep]
        if bool(torch.isnan(p).any()):
            raise ValueError(f"{_checks.where(self)}: argument `preds` holds NaN scores")
        if t.is_floating_point() and bool(torch.isnan(t).any()):
            raise ValueError(f"{_checks.where(self)}: argument `target` holds NaN")
        if not self._graded and t.numel() and bool(((t != 0) & (t != 1)).any()):
            also = "" if ignore is None else f" (or the ignore_index {ignore})"
            raise ValueError(f"{_checks.where(self)}: argument `target` must hold 0/1 relevance{also}")
        if p.numel() == 0:
            return self
        where = self.preds.device
        return self.append(
            indexes=i.to(where, torch.int64), preds=p.to(where, torch.float64), target=t.to(where, torch.float32)
        )

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def compute(self) -> torch.Tensor:
        """The per-query values aggregated over queries (float32); 0 with no query left."""
        if self.preds.numel() == 0:
            return torch.tensor(0.0, device=self.preds.device)
        values, empty = self._values(rank(self.indexes, self.preds, self.target, self._graded))
        action = self.empty_target_action  # type: ignore[attr-defined]
        if bool(empty.any()):
            if action == "error":
                raise ValueError(
                    f"{type(self).__name__}.compute: a query has {self._empty_means} "
                    "(empty_target_action='error'); choose 'neg', 'pos' or 'skip' to score such queries"
                )
            if action == "skip":
                values = values[~empty]
            else:
                values = values.masked_fill(empty, 1.0 if action == "pos" else 0.0)
        if values.numel() == 0:
            return torch.tensor(0.0, device=self.preds.device)
        return _aggregate(values, self.aggregation).float()  # type: ignore[attr-defined]


def _aggregate(values: torch.Tensor, aggregation: str | Callable[..., torch.Tensor]) -> torch.Tensor:
    if aggregation == "mean":
        return values.mean()
    if aggregation == "median":
        return values.median()
    if aggregation == "min":
        return values.min()
    if aggregation == "max":
        return values.max()
    assert callable(aggregation)
    return aggregation(values, dim=None)


def _relevant(r: Ranking) -> torch.Tensor:
    return r.target > 0


def _retrieved(r: Ranking, top_k: int | None) -> torch.Tensor:
    """Relevant documents that count as retrieved: in the top ``k``, and (as TorchMetrics) scored above 0."""
    return _relevant(r) & (r.preds > 0) & r.within(top_k)


def _no_relevant(r: Ranking) -> torch.Tensor:
    return r.sum(r.target) == 0


def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a / b``, 0 where ``b`` is 0."""
    return torch.where(b > 0, a / b.clamp(min=1e-300), torch.zeros_like(a))


_DOC = """
    ``update(preds, target, indexes=...)``: ``preds`` float scores, ``target``
    relevance ({target}), ``indexes`` the integer query id of every document,
    all of one (any) shape. ``empty_target_action`` scores a query with
    {empty}: ``"neg"`` 0, ``"pos"`` 1, ``"skip"`` leaves it out, ``"error"``
    raises in ``compute``. Rows whose target is ``ignore_index`` are left
    out. ``aggregation`` ("mean", "median", "min", "max", or a function of
    ``(values, dim)``) reduces the per-query values.
"""


class RetrievalMRR(_Retrieval):
    """Mean reciprocal rank: ``1 / rank`` of each query's first relevant document in the top ``top_k``.

    As TorchMetrics, a document scored at most 0 is never counted as a hit
    (it gives 0), and a query without a relevant document in the top
    ``top_k`` gives 0.
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalMRR
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalMRR().update(preds, target, indexes=indexes).compute()
        tensor(0.7500)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        first = r.first_rank(_retrieved(r, self.top_k))
        return 1.0 / (first + 1.0), _no_relevant(r)


class RetrievalMAP(_Retrieval):
    """Mean average precision: per query, the mean of precision@i over the ranks i of its relevant documents.

    With ``top_k``, over the relevant documents in the top ``top_k`` (as
    TorchMetrics: divided by how many of them there are, not by all relevant
    documents). Documents scored at most 0 do not count as relevant hits.
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalMAP
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalMAP().update(preds, target, indexes=indexes).compute()
        tensor(0.7917)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        hit = _retrieved(r, self.top_k).to(torch.float64)
        precision_at = r.cumsum(hit) / (r.rank + 1).to(torch.float64)
        return _div(r.sum(precision_at * hit), r.sum(hit)), _no_relevant(r)


class RetrievalNormalizedDCG(_Retrieval):
    """Normalized discounted cumulative gain at ``top_k``, with graded relevance, ties averaged.

    DCG sums ``target / log2(rank + 1)`` over the top ``top_k``; documents of
    equal score share the mean gain of their block (as TorchMetrics and
    scikit-learn). Normalized by the DCG of the ideal ranking; 0 where that is 0.
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalNormalizedDCG
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalNormalizedDCG().update(preds, target, indexes=indexes).compute()
        tensor(0.8467)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    _graded: ClassVar[bool] = True

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        discount = 1.0 / torch.log2(r.rank.to(torch.float64) + 2.0)
        discount = discount * r.within(self.top_k)
        gain = r.target.to(torch.float64)
        block, blocks = r.ties()
        per_block = torch.zeros(blocks, dtype=torch.float64, device=gain.device)
        mean_gain = per_block.index_add(0, block, gain) / per_block.index_add(0, block, torch.ones_like(gain))
        dcg = r.sum(mean_gain[block] * discount)  # each row: its block's mean gain at its own discount
        ideal = r.sum(r.ideal_target().to(torch.float64) * discount)
        safe = torch.where(ideal != 0, ideal, torch.ones_like(ideal))
        return torch.where(ideal != 0, dcg / safe, torch.zeros_like(dcg)), _no_relevant(r)


class RetrievalPrecision(_Retrieval):
    """Precision at ``top_k``: relevant documents in the top ``top_k`` over ``top_k``.

    Without ``top_k``, over all of the query's documents; with
    ``adaptive_k=True``, ``top_k`` larger than a query's documents becomes
    their number. Documents scored at most 0 are not counted as retrieved
    (as TorchMetrics).
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalPrecision
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalPrecision(top_k=2).update(preds, target, indexes=indexes).compute()
        tensor(0.5000)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    adaptive_k: bool = static(default=False)
    aggregation: Any = static(default="mean")

    def __post_init__(self) -> None:
        super().__post_init__()
        _checks.check_bool(self, "adaptive_k")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        size = r.size.to(torch.float64)
        if self.top_k is None:
            k = size
        else:
            k = torch.full_like(size, float(self.top_k))
            if self.adaptive_k:
                k = torch.minimum(k, size)
        return r.sum(_retrieved(r, self.top_k)) / k, _no_relevant(r)


class RetrievalRecall(_Retrieval):
    """Recall at ``top_k``: relevant documents in the top ``top_k`` over all relevant documents of the query.

    Documents scored at most 0 are not counted as retrieved (as TorchMetrics).
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalRecall
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalRecall(top_k=2).update(preds, target, indexes=indexes).compute()
        tensor(0.7500)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        return _div(r.sum(_retrieved(r, self.top_k)), r.sum(r.target)), _no_relevant(r)


class RetrievalHitRate(_Retrieval):
    """Hit rate at ``top_k``: 1 for a query with a relevant document in its top ``top_k``, else 0.

    (Unlike MRR, MAP, precision and recall, TorchMetrics counts relevant
    documents of any score here, and so does this metric.)
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalHitRate
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([True, False, False, False, True, False, True])
        >>> RetrievalHitRate(top_k=2).update(preds, target, indexes=indexes).compute()
        tensor(0.5000)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        hits = r.sum(_relevant(r) & r.within(self.top_k))
        return (hits > 0).to(torch.float64), _no_relevant(r)


class RetrievalRPrecision(_Retrieval):
    """R-precision: precision at R, the number of relevant documents of the query.

    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalRPrecision
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalRPrecision().update(preds, target, indexes=indexes).compute()
        tensor(0.7500)
    """

    empty_target_action: str = static(default="neg")
    ignore_index: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        relevant = r.sum(r.target)
        in_r = _relevant(r) & r.within(relevant.to(torch.int64))
        return _div(r.sum(in_r), relevant), _no_relevant(r)


class RetrievalFallOut(_Retrieval):
    """Fall-out at ``top_k``: irrelevant documents in the top ``top_k`` over all irrelevant documents (lower is better).

    A query is empty when it has no *irrelevant* document; by default
    (``empty_target_action="pos"``, as TorchMetrics) it scores 1.
    {doc}

    Examples:
        >>> import torch
        >>> from scopedmetrics.retrieval import RetrievalFallOut
        >>> indexes = torch.tensor([0, 0, 0, 1, 1, 1, 1])
        >>> preds = torch.tensor([0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2])
        >>> target = torch.tensor([False, False, True, False, True, False, True])
        >>> RetrievalFallOut(top_k=2).update(preds, target, indexes=indexes).compute()
        tensor(0.5000)
    """

    empty_target_action: str = static(default="pos")
    ignore_index: int | None = static(default=None)
    top_k: int | None = static(default=None)
    aggregation: Any = static(default="mean")

    _empty_means: ClassVar[str] = "no negative target"

    def _values(self, r: Ranking) -> tuple[torch.Tensor, torch.Tensor]:
        irrelevant = ~_relevant(r)
        negatives = r.sum(irrelevant)
        return _div(r.sum(irrelevant & r.within(self.top_k)), negatives), negatives == 0


for _cls in (
    RetrievalMRR, RetrievalMAP, RetrievalNormalizedDCG, RetrievalPrecision, RetrievalRecall, RetrievalHitRate,
    RetrievalRPrecision, RetrievalFallOut,
):  # fmt: skip
    _target = "float graded relevance, or 0/1" if _cls._graded else "0/1, bool or integer"
    _empty = "no irrelevant document" if _cls is RetrievalFallOut else "no relevant document"
    _cls.__doc__ = (_cls.__doc__ or "").replace("    {doc}\n", _DOC.format(target=_target, empty=_empty))
