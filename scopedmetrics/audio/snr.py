"""Signal-to-noise ratios of estimated signals against references: SNR, SI-SNR and SI-SDR, in dB.

Each metric keeps a float64 sum of the per-signal values and an int64 count,
reduced with ``"sum"``; the value is their ratio, the mean over every signal
seen (every index of the dimensions before time), as TorchMetrics computes it.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static


def signal_noise_ratio(preds: torch.Tensor, target: torch.Tensor, zero_mean: bool = False) -> torch.Tensor:
    """SNR in dB of every signal (the last dimension is time): ``10 log10(|target|^2 / |target - preds|^2)``.

    Computed in float64; ``eps`` (the machine epsilon of ``preds``' dtype, as
    TorchMetrics) keeps silent signals finite.

    Examples:
        >>> import torch
        >>> signal_noise_ratio(torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0]))
        tensor(16.1805, dtype=torch.float64)
    """
    eps = torch.finfo(preds.dtype).eps
    p, t = preds.double(), target.double()
    if zero_mean:
        p, t = p - p.mean(-1, keepdim=True), t - t.mean(-1, keepdim=True)
    noise = t - p
    return 10 * torch.log10(((t * t).sum(-1) + eps) / ((noise * noise).sum(-1) + eps))


def scale_invariant_signal_distortion_ratio(
    preds: torch.Tensor, target: torch.Tensor, zero_mean: bool = False
) -> torch.Tensor:
    """SI-SDR in dB of every signal: the SNR of ``preds`` against its projection on ``target``.

    Examples:
        >>> import torch
        >>> p, t = torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])
        >>> scale_invariant_signal_distortion_ratio(p, t)
        tensor(18.4030, dtype=torch.float64)
    """
    eps = torch.finfo(preds.dtype).eps
    p, t = preds.double(), target.double()
    if zero_mean:
        p, t = p - p.mean(-1, keepdim=True), t - t.mean(-1, keepdim=True)
    alpha = ((p * t).sum(-1, keepdim=True) + eps) / ((t * t).sum(-1, keepdim=True) + eps)
    scaled = alpha * t
    noise = scaled - p
    return 10 * torch.log10(((scaled * scaled).sum(-1) + eps) / ((noise * noise).sum(-1) + eps))


def scale_invariant_signal_noise_ratio(preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """SI-SNR in dB of every signal: SI-SDR of the zero-mean signals.

    Examples:
        >>> import torch
        >>> p, t = torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])
        >>> scale_invariant_signal_noise_ratio(p, t)
        tensor(15.0918, dtype=torch.float64)
    """
    return scale_invariant_signal_distortion_ratio(preds, target, zero_mean=True)


_allow = getattr(torch.serialization, "add_safe_globals", None)
if _allow is not None:  # a PermutationInvariantTraining holding one of these loads under torch.load(weights_only=True)
    _allow([signal_noise_ratio, scale_invariant_signal_distortion_ratio, scale_invariant_signal_noise_ratio])


def signals(owner: Metric, preds: object, target: object) -> tuple[torch.Tensor, torch.Tensor]:
    """``preds`` and ``target``: finite float tensors of one shape ``(..., time)``."""
    p = _checks.tensor(owner, "preds", preds)
    t = _checks.tensor(owner, "target", target)
    _checks.floating(owner, "preds", p)
    _checks.floating(owner, "target", t)
    _checks.same_shape(owner, "preds", p, "target", t)
    if p.ndim == 0:
        raise ValueError(f"{_checks.where(owner)}: argument `preds` must have shape (..., time), got a 0-d tensor")
    _checks.finite(owner, "preds", p)
    _checks.finite(owner, "target", t)
    return p, t.to(p.device)


class _MeanRatio(Metric):
    """A float64 sum of per-signal values and their count; subclasses say which ratio (``_ratio``)."""

    total_value: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    total: torch.Tensor = state("sum", default=0)

    _scale_invariant: ClassVar[bool] = False

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> Self:
        """Fold in estimated and reference signals of one shape ``(..., time)``."""
        p, t = signals(self, preds, target)
        if p.shape[-1] == 0 or p.numel() == 0:
            return self
        zero_mean = getattr(self, "zero_mean", True)
        ratio = scale_invariant_signal_distortion_ratio if self._scale_invariant else signal_noise_ratio
        values = ratio(p, t, zero_mean)
        where = self.total.device
        return self.replace(
            total_value=self.total_value + values.sum().to(where), total=self.total + values.numel()
        )

    def compute(self) -> torch.Tensor:
        """The mean over every signal seen, in dB (float32); NaN before any."""
        return (self.total_value / self.total).float()


class SignalNoiseRatio(_MeanRatio):
    """Signal-to-noise ratio in dB, averaged over signals; ``zero_mean`` subtracts each signal's mean first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.audio import SignalNoiseRatio
        >>> SignalNoiseRatio().update(torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])).compute()
        tensor(16.1805)
    """

    zero_mean: bool = static(default=False)

    def __post_init__(self) -> None:
        _checks.check_bool(self, "zero_mean")


class ScaleInvariantSignalNoiseRatio(_MeanRatio):
    """Scale-invariant signal-to-noise ratio (SI-SNR) in dB, averaged over signals.

    Examples:
        >>> import torch
        >>> from scopedmetrics.audio import ScaleInvariantSignalNoiseRatio
        >>> p, t = torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])
        >>> ScaleInvariantSignalNoiseRatio().update(p, t).compute()
        tensor(15.0918)
    """

    _scale_invariant: ClassVar[bool] = True


class ScaleInvariantSignalDistortionRatio(_MeanRatio):
    """Scale-invariant signal-to-distortion ratio (SI-SDR) in dB, averaged over signals.

    Examples:
        >>> import torch
        >>> from scopedmetrics.audio import ScaleInvariantSignalDistortionRatio
        >>> p, t = torch.tensor([2.5, 0.0, 2.0, 8.0]), torch.tensor([3.0, -0.5, 2.0, 7.0])
        >>> ScaleInvariantSignalDistortionRatio().update(p, t).compute()
        tensor(18.4030)
    """

    zero_mean: bool = static(default=False)
    _scale_invariant: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _checks.check_bool(self, "zero_mean")
