"""Object detection metrics, named and called as in TorchMetrics.

``MeanAveragePrecision`` matches detections (boxes or segmentation masks) to
ground truth per image in ``update`` (COCO's rules) and keeps a few bytes per
detection; the box overlap metrics keep sums. Inputs are lists with one dict
per image, so ``mask=`` leaves out images. No torchvision: the box and mask
operations are plain torch.
"""

from scopedmetrics.detection.iou import CompleteIntersectionOverUnion as CompleteIntersectionOverUnion
from scopedmetrics.detection.iou import DistanceIntersectionOverUnion as DistanceIntersectionOverUnion
from scopedmetrics.detection.iou import GeneralizedIntersectionOverUnion as GeneralizedIntersectionOverUnion
from scopedmetrics.detection.iou import IntersectionOverUnion as IntersectionOverUnion
from scopedmetrics.detection.mean_ap import MeanAveragePrecision as MeanAveragePrecision

__all__ = [
    "CompleteIntersectionOverUnion",
    "DistanceIntersectionOverUnion",
    "GeneralizedIntersectionOverUnion",
    "IntersectionOverUnion",
    "MeanAveragePrecision",
]
