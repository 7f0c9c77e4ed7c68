"""Semantic segmentation metrics, named and called as in TorchMetrics.

Per-sample averages (TorchMetrics' ``MeanIoU``, ``DiceScore`` samplewise,
``GeneralizedDiceScore``) keep a sum of per-sample values and a count; the
dataset-level values keep int64 sums of per-class pixel counts. Either way
the state reduces with ``"sum"``, so the value does not depend on how the
samples were split across processes. ``HausdorffDistance`` keeps, per class,
the sum of per-sample distances (float64) and their count (int64).
"""

from scopedmetrics.segmentation.hausdorff import HausdorffDistance as HausdorffDistance
from scopedmetrics.segmentation.overlap import DiceScore as DiceScore
from scopedmetrics.segmentation.overlap import GeneralizedDiceScore as GeneralizedDiceScore
from scopedmetrics.segmentation.overlap import MeanIoU as MeanIoU

__all__ = ["DiceScore", "GeneralizedDiceScore", "HausdorffDistance", "MeanIoU"]
