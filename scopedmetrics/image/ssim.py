"""Structural similarity (SSIM) and its multi-scale variant (MS-SSIM), per image, summed over images.

Each image's value is computed in ``update``; the state is their float64 sum
and an int64 count (or, with ``reduction="none"``, the values themselves as a
``cat`` state). TorchMetrics reads a missing ``data_range`` from the range of
the whole *batch*, which makes its value depend on how the images were
batched; here it is read from each image (the larger of the prediction's and
the target's range), so the value equals TorchMetrics fed one image at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from scopedmetrics import _checks
from scopedmetrics.image._inputs import REDUCTIONS, check_data_range, clamp_to_range, image_pair, range_width
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_F64 = torch.float64


def _per_dim(value: Any, n: int) -> list[Any]:
    return list(value) if isinstance(value, Sequence) else [value] * n


def _check_window(owner: Any) -> None:
    """``kernel_size``: odd positive ints (2 or 3 of them, or one); ``sigma``: positive numbers."""
    name = type(owner).__name__
    ks, sigma = owner.kernel_size, owner.sigma
    sizes = list(ks) if isinstance(ks, (tuple, list)) else [ks]
    if not sizes or len(sizes) > 3 or not all(isinstance(k, int) and not isinstance(k, bool) for k in sizes):
        raise TypeError(f"{name}: argument `kernel_size` must be an int or a sequence of 2 or 3 ints, got {ks!r}")
    if any(k <= 0 or k % 2 == 0 for k in sizes):
        raise ValueError(f"{name}: argument `kernel_size` must hold odd positive numbers, got {ks!r}")
    sigmas = list(sigma) if isinstance(sigma, (tuple, list)) else [sigma]
    if not sigmas or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in sigmas):
        raise TypeError(f"{name}: argument `sigma` must be a number or a sequence of numbers, got {sigma!r}")
    if any(s <= 0 for s in sigmas):
        raise ValueError(f"{name}: argument `sigma` must hold positive numbers, got {sigma!r}")
    _checks.check_bool(owner, "gaussian_kernel")
    _checks.check_number(owner, "k1", 0)
    _checks.check_number(owner, "k2", 0)
    _checks.check_choice(owner, "reduction", REDUCTIONS)
    check_data_range(owner, optional=True)


def _gauss_1d(size: int, sigma: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    x = torch.arange(size, dtype=dtype, device=device) - (size - 1) / 2
    g = torch.exp(-0.5 * (x / sigma) ** 2)
    return g / g.sum()


def _window(owner: Any, p: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
    """The ``(C, 1, *k)`` averaging window for ``p`` and the reflection padding per spatial dimension."""
    spatial = p.ndim - 2
    name = type(owner).__name__
    ks = _per_dim(owner.kernel_size, spatial)
    sigma = _per_dim(owner.sigma, spatial)
    if len(ks) != spatial or len(sigma) != spatial:
        raise ValueError(
            f"{name}.update: arguments `kernel_size` and `sigma` must give one value per spatial dimension of "
            f"`preds` ({spatial}), got kernel_size={owner.kernel_size!r}, sigma={owner.sigma!r}"
        )
    if owner.gaussian_kernel:
        sizes = [int(3.5 * s + 0.5) * 2 + 1 for s in sigma]  # the window TorchMetrics derives from sigma
        axes = [_gauss_1d(k, float(s), p.dtype, p.device) for k, s in zip(sizes, sigma)]
        kernel = axes[0]
        for a in axes[1:]:
            kernel = kernel[..., None] * a
        pads = [(k - 1) // 2 for k in sizes]
        if spatial == 3:  # TorchMetrics pads the depth by kernel_size, whatever sigma says
            pads[2] = (ks[2] - 1) // 2
    else:
        kernel = torch.ones(ks, dtype=p.dtype, device=p.device) / math.prod(ks)
        pads = [(k - 1) // 2 for k in ks]
    for d, pad in enumerate(pads):
        if pad >= p.shape[2 + d]:
            raise ValueError(
                f"{name}.update: argument `preds` of shape {tuple(p.shape)} is too small for a window of "
                f"{2 * pad + 1} pixels along spatial dimension {d}"
            )
    return kernel.expand(p.shape[1], 1, *kernel.shape).contiguous(), pads


def _ssim(owner: Any, p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per image: SSIM ``(N,)``, the full SSIM map, and the mean contrast-sensitivity term ``(N,)``."""
    p, t = clamp_to_range(owner, p, t)
    width = range_width(owner)
    n = p.shape[0]
    lead = (n,) + (1,) * (p.ndim - 1)
    if width is None:  # each image's own range (TorchMetrics: the batch's)
        dr = torch.maximum(p.flatten(1).amax(1) - p.flatten(1).amin(1), t.flatten(1).amax(1) - t.flatten(1).amin(1))
        dr = dr.view(lead)
    else:
        dr = torch.full(lead, width, dtype=p.dtype, device=p.device)
    c1 = (owner.k1 * dr) ** 2
    c2 = (owner.k2 * dr) ** 2
    kernel, pads = _window(owner, p)
    flat_pad = [x for pad in reversed(pads) for x in (pad, pad)]
    p_, t_ = F.pad(p, flat_pad, mode="reflect"), F.pad(t, flat_pad, mode="reflect")
    conv = F.conv3d if p.ndim == 5 else F.conv2d
    out = conv(torch.cat((p_, t_, p_ * p_, t_ * t_, p_ * t_)), kernel, groups=p.shape[1]).chunk(5)
    mu_p_sq, mu_t_sq, mu_pt = out[0].pow(2), out[1].pow(2), out[0] * out[1]
    var_p = (out[2] - mu_p_sq).clamp(min=0.0)
    var_t = (out[3] - mu_t_sq).clamp(min=0.0)
    cov = out[4] - mu_pt
    upper = 2 * cov + c2
    lower = var_p + var_t + c2
    full = ((2 * mu_pt + c1) * upper) / ((mu_p_sq + mu_t_sq + c1) * lower)
    cs = upper / lower
    inner = (slice(None), slice(None), *(slice(pad, -pad) if pad else slice(None) for pad in pads))
    cs = cs[inner]
    return full.flatten(1).mean(1), full, cs.flatten(1).mean(1)


def _reduced(m: Any) -> torch.Tensor:
    value: torch.Tensor
    if m.reduction in ("none", None):
        value = m.similarity_values
    elif m.reduction == "sum":
        value = m.similarity.float()
    else:
        value = (m.similarity / m.total).float()
    return value


class StructuralSimilarityIndexMeasure(Metric):
    """Structural similarity index (Wang et al., 2004) of image pairs ``(N, C, H, W)`` or volumes ``(N, C, D, H, W)``.

    The mean over images of each image's mean SSIM map (the sum with
    ``reduction="sum"``, every image's value with ``"none"``), with TorchMetrics'
    window (a Gaussian of ``sigma``, or a uniform ``kernel_size`` box) and
    reflection padding. ``data_range=None`` reads the range from each image
    pair; TorchMetrics reads it from the batch. ``return_full_image`` or
    ``return_contrast_sensitivity`` also return the SSIM maps or the per-image
    contrast terms (kept as ``cat`` states).

    Examples:
        >>> import torch
        >>> from scopedmetrics.image import StructuralSimilarityIndexMeasure
        >>> g = torch.Generator().manual_seed(0)
        >>> target = torch.rand(4, 3, 32, 32, generator=g)
        >>> preds = (target + 0.1 * torch.randn(4, 3, 32, 32, generator=g)).clamp(0, 1)
        >>> StructuralSimilarityIndexMeasure(data_range=1.0).update(preds, target).compute()
        tensor(0.9453)
    """

    gaussian_kernel: bool = static(default=True)
    sigma: Any = static(default=1.5)
    kernel_size: Any = static(default=11)
    reduction: str | None = static(default="elementwise_mean")
    data_range: Any = static(default=None)
    k1: float = static(default=0.01)
    k2: float = static(default=0.03)
    return_full_image: bool = static(default=False)
    return_contrast_sensitivity: bool = static(default=False)
    similarity: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=_F64))
    total: torch.Tensor = state("sum", default=0)
    similarity_values: torch.Tensor = state("cat", default=lambda: torch.zeros(0))
    image_return: torch.Tensor = state("cat", default=lambda: torch.zeros(0))

    def __post_init__(self) -> None:
        _check_window(self)
        _checks.check_bool(self, "return_full_image")
        _checks.check_bool(self, "return_contrast_sensitivity")
        if self.return_full_image and self.return_contrast_sensitivity:
            raise ValueError(
                "StructuralSimilarityIndexMeasure: arguments `return_full_image` and `return_contrast_sensitivity` "
                "are mutually exclusive"
            )

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> StructuralSimilarityIndexMeasure:
        """Fold in a batch of image pairs; ``self`` is unchanged."""
        p, t = image_pair(self, preds, target, (4, 5), "(N, C, H, W) or (N, C, D, H, W)")
        if p.shape[0] == 0:
            return self
        sim, full, cs = _ssim(self, p, t)
        new = self
        if self.return_full_image:
            new = new.append(image_return=full)
        elif self.return_contrast_sensitivity:
            new = new.append(image_return=cs)
        if self.reduction in ("none", None):
            return new.append(similarity_values=sim)
        return new.replace(similarity=new.similarity + sim.sum(dtype=_F64), total=new.total + p.shape[0])

    def compute(self) -> Any:
        """The SSIM (and the maps or contrast terms when asked)."""
        value = _reduced(self)
        if self.return_full_image or self.return_contrast_sensitivity:
            return value, self.image_return
        return value


class MultiScaleStructuralSimilarityIndexMeasure(Metric):
    """Multi-scale SSIM (Wang et al., 2003): contrast terms at ``len(betas)`` scales and SSIM at the coarsest.

    Per image, ``Π_s cs_s**beta_s`` over scales halved by 2x2 average pooling,
    with SSIM in place of the last contrast term, as TorchMetrics computes it
    (``normalize="relu"`` clips negative terms, ``"simple"`` maps them to
    ``(x + 1) / 2``). Images must be large enough for every scale: at least
    ``(kernel_size - 1) * max(1, len(betas) - 1) ** 2`` pixels plus one per side.
    ``data_range=None`` is read from each image at each scale.

    Examples:
        >>> import torch
        >>> from scopedmetrics.image import MultiScaleStructuralSimilarityIndexMeasure
        >>> g = torch.Generator().manual_seed(0)
        >>> target = torch.rand(2, 1, 64, 64, generator=g)
        >>> preds = (target + 0.1 * torch.randn(2, 1, 64, 64, generator=g)).clamp(0, 1)
        >>> m = MultiScaleStructuralSimilarityIndexMeasure(kernel_size=5, sigma=0.5, data_range=1.0,
        ...                                                betas=(0.3, 0.3, 0.4))
        >>> m.update(preds, target).compute()
        tensor(0.9252)
    """

    gaussian_kernel: bool = static(default=True)
    kernel_size: Any = static(default=11)
    sigma: Any = static(default=1.5)
    reduction: str | None = static(default="elementwise_mean")
    data_range: Any = static(default=None)
    k1: float = static(default=0.01)
    k2: float = static(default=0.03)
    betas: tuple[float, ...] = static(default=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333))
    normalize: str | None = static(default="relu")
    similarity: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=_F64))
    total: torch.Tensor = state("sum", default=0)
    similarity_values: torch.Tensor = state("cat", default=lambda: torch.zeros(0))

    def __post_init__(self) -> None:
        _check_window(self)
        b = self.betas
        if not isinstance(b, tuple) or not b or not all(isinstance(x, float) for x in b):
            raise TypeError(f"MultiScaleStructuralSimilarityIndexMeasure: argument `betas` must be a tuple of "
                            f"floats, got {b!r}")
        _checks.check_choice(self, "normalize", ("relu", "simple", None))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> MultiScaleStructuralSimilarityIndexMeasure:
        """Fold in a batch of image pairs; ``self`` is unchanged."""
        p, t = image_pair(self, preds, target, (4, 5), "(N, C, H, W) or (N, C, D, H, W)")
        self._check_size(p)
        if p.shape[0] == 0:
            return self
        terms = []
        pool = F.avg_pool3d if p.ndim == 5 else F.avg_pool2d
        sim = p.new_zeros(0)
        for _ in self.betas:
            sim, _full, cs = _ssim(self, p, t)
            if self.normalize == "relu":
                sim, cs = sim.relu(), cs.relu()
            terms.append(cs)
            p, t = pool(p, 2), pool(t, 2)
        terms[-1] = sim
        stack = torch.stack(terms)
        if self.normalize == "simple":
            stack = (stack + 1) / 2
        betas = torch.tensor(self.betas, dtype=stack.dtype, device=stack.device).view(-1, 1)
        value = (stack**betas).prod(0)
        if self.reduction in ("none", None):
            return self.append(similarity_values=value)
        return self.replace(similarity=self.similarity + value.sum(dtype=_F64), total=self.total + value.shape[0])

    def _check_size(self, p: torch.Tensor) -> None:
        name = "MultiScaleStructuralSimilarityIndexMeasure.update"
        scales = len(self.betas)
        ks = _per_dim(self.kernel_size, p.ndim - 2)
        div = max(1, scales - 1) ** 2
        if p.shape[-1] < 2**scales or p.shape[-2] < 2**scales:
            raise ValueError(f"{name}: argument `preds` must be at least {2 ** scales} pixels high and wide for "
                             f"{scales} scales, got shape {tuple(p.shape)}")
        for axis, k in ((-2, ks[0]), (-1, ks[1])):
            if p.shape[axis] // div <= k - 1:
                raise ValueError(f"{name}: argument `preds` of shape {tuple(p.shape)} is too small for {scales} "
                                 f"scales and kernel size {k}: it must be larger than {(k - 1) * div} pixels")

    def compute(self) -> torch.Tensor:
        """The MS-SSIM (mean, sum or every image's value, as ``reduction`` says)."""
        return _reduced(self)
