"""Regression metrics, named and called as in TorchMetrics.

Sums (``"sum"``, with ``"min"``/``"max"`` for extremes) where the value is a
ratio of sums, running moments merged with Chan's formula (a whole-state
``merge``) where it needs variances, and ``cat`` states only where every
sample is needed (Spearman, Kendall, per-row or per-sample values).
"""

from scopedmetrics.regression.correlation import ConcordanceCorrCoef as ConcordanceCorrCoef
from scopedmetrics.regression.correlation import PearsonCorrCoef as PearsonCorrCoef
from scopedmetrics.regression.correlation import SpearmanCorrCoef as SpearmanCorrCoef
from scopedmetrics.regression.critical_success import CriticalSuccessIndex as CriticalSuccessIndex
from scopedmetrics.regression.distance import MinkowskiDistance as MinkowskiDistance
from scopedmetrics.regression.divergence import JensenShannonDivergence as JensenShannonDivergence
from scopedmetrics.regression.divergence import KLDivergence as KLDivergence
from scopedmetrics.regression.ensemble import ContinuousRankedProbabilityScore as ContinuousRankedProbabilityScore
from scopedmetrics.regression.error import MeanAbsoluteError as MeanAbsoluteError
from scopedmetrics.regression.error import MeanAbsolutePercentageError as MeanAbsolutePercentageError
from scopedmetrics.regression.error import MeanSquaredError as MeanSquaredError
from scopedmetrics.regression.error import (
    SymmetricMeanAbsolutePercentageError as SymmetricMeanAbsolutePercentageError,
)
from scopedmetrics.regression.error import WeightedMeanAbsolutePercentageError as WeightedMeanAbsolutePercentageError
from scopedmetrics.regression.log_error import LogCoshError as LogCoshError
from scopedmetrics.regression.log_error import MeanSquaredLogError as MeanSquaredLogError
from scopedmetrics.regression.rank import KendallRankCorrCoef as KendallRankCorrCoef
from scopedmetrics.regression.relative import NormalizedRootMeanSquaredError as NormalizedRootMeanSquaredError
from scopedmetrics.regression.relative import RelativeSquaredError as RelativeSquaredError
from scopedmetrics.regression.similarity import CosineSimilarity as CosineSimilarity
from scopedmetrics.regression.tweedie import TweedieDevianceScore as TweedieDevianceScore
from scopedmetrics.regression.variance import ExplainedVariance as ExplainedVariance
from scopedmetrics.regression.variance import R2Score as R2Score

__all__ = [
    "ConcordanceCorrCoef",
    "ContinuousRankedProbabilityScore",
    "CosineSimilarity",
    "CriticalSuccessIndex",
    "ExplainedVariance",
    "JensenShannonDivergence",
    "KLDivergence",
    "KendallRankCorrCoef",
    "LogCoshError",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "MeanSquaredLogError",
    "MinkowskiDistance",
    "NormalizedRootMeanSquaredError",
    "PearsonCorrCoef",
    "R2Score",
    "RelativeSquaredError",
    "SpearmanCorrCoef",
    "SymmetricMeanAbsolutePercentageError",
    "TweedieDevianceScore",
    "WeightedMeanAbsolutePercentageError",
]
