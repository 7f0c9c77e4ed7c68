"""Peak signal-to-noise ratio."""

from __future__ import annotations

import math
from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics.image._inputs import REDUCTIONS, check_data_range, clamp_to_range, image_pair, range_width
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_F64 = torch.float64


class PeakSignalNoiseRatio(Metric):
    """Peak signal-to-noise ratio, ``10 log10(data_range**2 / MSE)`` (in ``base`` rather than 10 if asked).

    ``preds`` and ``target`` have one shape, any. With ``dim=None`` the MSE is
    pooled over every value of the data set (a sum of squared errors in
    float64 and an int64 count); with ``dim`` one PSNR per slice of the
    other dimensions (per image with ``dim=(1, 2, 3)``), combined by
    ``reduction``: their mean, their sum (a float64 sum and a count), or all of
    them (``"none"``, a ``cat`` state, in the order seen; across processes in
    rank order). ``dim`` may not include the batch dimension 0: that value
    would depend on how the data was batched. A ``(min, max)`` ``data_range``
    clamps both images to it first, as in TorchMetrics.

    Examples:
        >>> import torch
        >>> from scopedmetrics.image import PeakSignalNoiseRatio
        >>> preds = torch.tensor([[0.0, 1.0], [2.0, 3.0]])
        >>> target = torch.tensor([[3.0, 2.0], [1.0, 0.0]])
        >>> PeakSignalNoiseRatio(data_range=3.0).update(preds, target).compute()
        tensor(2.5527)
        >>> PeakSignalNoiseRatio(3.0, reduction="none", dim=1).update(preds, target).compute()
        tensor([2.5527, 2.5527])
    """

    data_range: Any = static()
    base: float = static(default=10.0)
    reduction: str | None = static(default="elementwise_mean")
    dim: Any = static(default=None)
    sum_squared_error: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=_F64))
    value_sum: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=_F64))  # of per-slice PSNRs
    total: torch.Tensor = state("sum", default=0)
    values: torch.Tensor = state("cat", default=lambda: torch.zeros(0))

    def __post_init__(self) -> None:
        check_data_range(self, optional=False)
        _checks.check_number(self, "base")
        if not self.base > 0 or self.base == 1:
            raise ValueError(f"PeakSignalNoiseRatio: argument `base` must be positive and not 1, got {self.base!r}")
        _checks.check_choice(self, "reduction", REDUCTIONS)
        dims = self._dims()
        if dims == ():  # torch sums an empty dim list over every dimension, the batch's too
            raise ValueError(
                "PeakSignalNoiseRatio: argument `dim` must name at least one dimension, got (); dim=None gives the "
                "PSNR of all the data"
            )
        if dims is not None and 0 in dims:
            raise ValueError(
                "PeakSignalNoiseRatio: argument `dim` must not include the batch dimension 0: that value would "
                "depend on how the data was batched"
            )

    def _dims(self) -> tuple[int, ...] | None:
        d = self.dim
        if d is None:
            return None
        dims = (d,) if isinstance(d, int) and not isinstance(d, bool) else d
        if not isinstance(dims, (tuple, list)) or not all(isinstance(x, int) and not isinstance(x, bool)
                                                         for x in dims):
            raise TypeError(f"PeakSignalNoiseRatio: argument `dim` must be an int or a tuple of ints, got {d!r}")
        return tuple(dims)

    def _psnr(self, sse: torch.Tensor, n: torch.Tensor | int) -> torch.Tensor:
        """PSNR in ``base`` of squared-error sums over ``n`` values, in float64."""
        width = range_width(self)
        assert width is not None
        return (2 * math.log(width) - torch.log(sse / n)) * (10 / math.log(self.base))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> PeakSignalNoiseRatio:
        """Fold in a batch of images (or signals); ``self`` is unchanged."""
        p, t = image_pair(self, preds, target)
        p, t = clamp_to_range(self, p, t)
        diff = p - t
        sq = diff * diff
        dims = self._dims()
        if dims is None:
            return self.replace(sum_squared_error=self.sum_squared_error + sq.sum(dtype=_F64),
                                total=self.total + p.numel())
        if not p.ndim or any(d >= p.ndim or d < -p.ndim for d in dims):
            raise ValueError(f"PeakSignalNoiseRatio.update: argument `dim` {self.dim!r} is out of range for "
                             f"`preds` of shape {tuple(p.shape)}")
        axes = sorted({d % p.ndim for d in dims})
        if 0 in axes:
            raise ValueError(f"PeakSignalNoiseRatio.update: argument `dim` {self.dim!r} includes the batch "
                             "dimension 0, so the value would depend on how the data was batched")
        n = math.prod(p.shape[a] for a in axes)
        values = self._psnr(sq.sum(axes, dtype=_F64).flatten(), n)
        if self.reduction in ("none", None):
            return self.append(values=values.float())
        return self.replace(value_sum=self.value_sum + values.sum(), total=self.total + values.numel())

    def compute(self) -> torch.Tensor:
        """The PSNR (pooled, or the mean, sum or list of the per-slice values)."""
        if self.dim is None:
            return self._psnr(self.sum_squared_error, self.total).float()
        if self.reduction in ("none", None):
            return self.values
        if self.reduction == "sum":
            return self.value_sum.float()
        return (self.value_sum / self.total).float()
