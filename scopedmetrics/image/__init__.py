"""Image quality metrics, named and called as in TorchMetrics.

Per-image values (SSIM, MS-SSIM, PSNR over ``dim``) are computed in ``update``
and summed; pooled PSNR keeps a float64 sum of squared errors and an int64
count; FID keeps float64 sums of features and of their outer products, never
the features. KID needs the features themselves (a ``cat`` state). Nothing
here downloads weights: FID and KID run the feature extractor you pass.
"""

from scopedmetrics.image.inception import FrechetInceptionDistance as FrechetInceptionDistance
from scopedmetrics.image.inception import KernelInceptionDistance as KernelInceptionDistance
from scopedmetrics.image.psnr import PeakSignalNoiseRatio as PeakSignalNoiseRatio
from scopedmetrics.image.ssim import (
    MultiScaleStructuralSimilarityIndexMeasure as MultiScaleStructuralSimilarityIndexMeasure,
)
from scopedmetrics.image.ssim import StructuralSimilarityIndexMeasure as StructuralSimilarityIndexMeasure

__all__ = [
    "FrechetInceptionDistance",
    "KernelInceptionDistance",
    "MultiScaleStructuralSimilarityIndexMeasure",
    "PeakSignalNoiseRatio",
    "StructuralSimilarityIndexMeasure",
]
