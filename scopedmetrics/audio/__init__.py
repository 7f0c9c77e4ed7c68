"""Audio metrics, named and called as in TorchMetrics: SNR, SI-SNR, SI-SDR and permutation invariant training.

Each keeps a float64 sum of per-signal (or per-sample) values and an int64
count, reduced with ``"sum"``, so any split gives the single-process mean.
The per-signal functions are in ``scopedmetrics.audio.snr``.
"""

from scopedmetrics.audio.pit import PermutationInvariantTraining as PermutationInvariantTraining
from scopedmetrics.audio.snr import ScaleInvariantSignalDistortionRatio as ScaleInvariantSignalDistortionRatio
from scopedmetrics.audio.snr import ScaleInvariantSignalNoiseRatio as ScaleInvariantSignalNoiseRatio
from scopedmetrics.audio.snr import SignalNoiseRatio as SignalNoiseRatio

__all__ = [
    "PermutationInvariantTraining",
    "ScaleInvariantSignalDistortionRatio",
    "ScaleInvariantSignalNoiseRatio",
    "SignalNoiseRatio",
]
