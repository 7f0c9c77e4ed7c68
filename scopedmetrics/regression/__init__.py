"""Regression metrics, named and called as in TorchMetrics.

Sums (``"sum"``) where the value is a ratio of sums, running moments merged
with Chan's formula (a whole-state ``merge``) where it needs variances, and
``cat`` states only where every sample is needed (Spearman, per-row values).
"""

from scopedmetrics.regression.correlation import ConcordanceCorrCoef as ConcordanceCorrCoef
from scopedmetrics.regression.correlation import PearsonCorrCoef as PearsonCorrCoef
from scopedmetrics.regression.correlation import SpearmanCorrCoef as SpearmanCorrCoef
from scopedmetrics.regression.divergence import KLDivergence as KLDivergence
from scopedmetrics.regression.error import MeanAbsoluteError as MeanAbsoluteError
from scopedmetrics.regression.error import MeanAbsolutePercentageError as MeanAbsolutePercentageError
from scopedmetrics.regression.error import MeanSquaredError as MeanSquaredError
from scopedmetrics.regression.similarity import CosineSimilarity as CosineSimilarity
from scopedmetrics.regression.variance import ExplainedVariance as ExplainedVariance
from scopedmetrics.regression.variance import R2Score as R2Score

__all__ = [
    "ConcordanceCorrCoef",
    "CosineSimilarity",
    "ExplainedVariance",
    "KLDivergence",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "PearsonCorrCoef",
    "R2Score",
    "SpearmanCorrCoef",
]
