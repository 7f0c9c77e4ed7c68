"""Retrieval metrics, named and called as in TorchMetrics: ``update(preds, target, indexes=query_ids)``.

The grouped metrics keep every document's row (``cat`` states) and rank each
query whole in ``compute``, after the reduction, so a query's documents may be
split across participants and batches. ``RetrievalAtK`` takes a dense score
matrix per batch (every query's documents at once) and keeps per-k sums, in
constant memory.
"""

from scopedmetrics.retrieval.dense import RetrievalAtK as RetrievalAtK
from scopedmetrics.retrieval.grouped import RetrievalFallOut as RetrievalFallOut
from scopedmetrics.retrieval.grouped import RetrievalHitRate as RetrievalHitRate
from scopedmetrics.retrieval.grouped import RetrievalMAP as RetrievalMAP
from scopedmetrics.retrieval.grouped import RetrievalMRR as RetrievalMRR
from scopedmetrics.retrieval.grouped import RetrievalNormalizedDCG as RetrievalNormalizedDCG
from scopedmetrics.retrieval.grouped import RetrievalPrecision as RetrievalPrecision
from scopedmetrics.retrieval.grouped import RetrievalRecall as RetrievalRecall
from scopedmetrics.retrieval.grouped import RetrievalRPrecision as RetrievalRPrecision

__all__ = [
    "RetrievalAtK",
    "RetrievalFallOut",
    "RetrievalHitRate",
    "RetrievalMAP",
    "RetrievalMRR",
    "RetrievalNormalizedDCG",
    "RetrievalPrecision",
    "RetrievalRPrecision",
    "RetrievalRecall",
]
