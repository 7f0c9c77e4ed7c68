"""Extrinsic clustering metrics (predicted against true cluster ids), named and called as in TorchMetrics.

Each keeps the distinct ``(pred, target)`` id pairs with their counts as
``cat`` states, so cluster ids need not be known up front; ``compute`` builds
the contingency table after the reduction (see ``contingency``).
"""

from scopedmetrics.clustering.contingency import AdjustedMutualInfoScore as AdjustedMutualInfoScore
from scopedmetrics.clustering.contingency import AdjustedRandScore as AdjustedRandScore
from scopedmetrics.clustering.contingency import CompletenessScore as CompletenessScore
from scopedmetrics.clustering.contingency import FowlkesMallowsIndex as FowlkesMallowsIndex
from scopedmetrics.clustering.contingency import HomogeneityScore as HomogeneityScore
from scopedmetrics.clustering.contingency import MutualInfoScore as MutualInfoScore
from scopedmetrics.clustering.contingency import NormalizedMutualInfoScore as NormalizedMutualInfoScore
from scopedmetrics.clustering.contingency import RandScore as RandScore
from scopedmetrics.clustering.contingency import VMeasureScore as VMeasureScore

__all__ = [
    "AdjustedMutualInfoScore",
    "AdjustedRandScore",
    "CompletenessScore",
    "FowlkesMallowsIndex",
    "HomogeneityScore",
    "MutualInfoScore",
    "NormalizedMutualInfoScore",
    "RandScore",
    "VMeasureScore",
]
