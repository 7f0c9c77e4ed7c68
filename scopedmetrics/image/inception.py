"""Fréchet and kernel inception distances over a feature extractor the caller passes.

Nothing here downloads weights: ``feature`` is an ``nn.Module`` (an Inception
network loaded by the caller, any torchvision or timm backbone, or a small
model of one's own) that maps a batch of images to ``(N, d)`` features.

The extractor is configuration, compared across processes like any other: by
its class and a digest of its parameters and buffers, taken once when the
metric is built (two ranks that built differently initialised extractors
would pool incomparable features, so they raise ``SyncError`` instead). The
module itself never travels; each process runs its own copy.

FID keeps, per distribution, the count, the float64 sum of features and the
float64 sum of their outer products: ``d + d*d`` numbers however many images
(TorchMetrics' states too). KID needs the features themselves to draw its
subsets, so it keeps them (a ``cat`` state), and draws the subsets with a
fixed seed from the features sorted into a canonical order, so its value does
not depend on the order the processes held them in.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric, module_digest
from scopedmetrics.state import state, static

_F64 = torch.float64


class _Extractor:
    """An ``nn.Module`` as configuration, with what one dummy forward told about it.

    It compares (``__canonical__``) by the module's class and the digest of its
    parameters and buffers taken when the metric was built, so a ``reset``
    metric, which gets this object back, does not hash the weights again.
    """

    def __init__(self, module: torch.nn.Module, num_features: int, dtype: torch.dtype,
                 digest: str | None = None) -> None:
        self.module, self.num_features, self.dtype = module, num_features, dtype
        self.digest = digest if digest is not None else module_digest(module)

    def __canonical__(self) -> tuple[str, str, int, str]:
        name = f"{type(self.module).__module__}.{type(self.module).__qualname__}"
        return (name, self.digest, self.num_features, str(self.dtype))

    def __repr__(self) -> str:
        return f"{type(self.module).__qualname__}(digest={self.digest[:12]}, num_features={self.num_features})"


def _extractor(owner: Any) -> _Extractor:
    """``owner.feature`` checked and wrapped (once: ``reset`` passes the wrapper back)."""
    name = type(owner).__name__
    f = owner.feature
    if isinstance(f, _Extractor):
        return f
    if isinstance(f, (int, str)) and not isinstance(f, bool):
        raise TypeError(
            f"{name}: argument `feature` must be an nn.Module: scopedmetrics downloads no weights, so it has no "
            f"built-in Inception network for feature={f!r}; load the extractor yourself and pass it "
            "(see docs/image.md)"
        )
    if not isinstance(f, torch.nn.Module):
        raise TypeError(f"{name}: argument `feature` must be an nn.Module, got {type(f).__name__}")
    digest = module_digest(f)
    declared = getattr(f, "num_features", None)
    if isinstance(declared, torch.Tensor):
        declared = int(declared.item())
    if isinstance(declared, int) and not isinstance(declared, bool):
        return _Extractor(f, declared, torch.float32, digest)
    # as TorchMetrics: run one dummy image of input_img_size through it (zeros: no global RNG drawn; eval mode,
    # so that no running statistics move)
    size = tuple(getattr(owner, "input_img_size", (3, 299, 299)))
    first: torch.Tensor | None = next(iter(f.parameters()), None)
    if first is None:
        first = next(iter(f.buffers()), None)
    device = first.device if first is not None else torch.device("cpu")
    dtype = torch.float32 if owner.normalize else torch.uint8
    was = f.training
    f.eval()
    try:
        with torch.no_grad():
            out = f(torch.zeros((1, *size), dtype=dtype, device=device))
    finally:
        f.train(was)
    if not isinstance(out, torch.Tensor) or out.ndim not in (1, 2):
        raise ValueError(f"{name}: argument `feature` must return (N, d) features, got "
                         f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    return _Extractor(f, int(out.shape[-1]), out.dtype if out.is_floating_point() else torch.float32, digest)


def _check_reset_real(owner: Any) -> None:
    _checks.check_bool(owner, "reset_real_features")
    if not owner.reset_real_features:
        raise ValueError(
            f"{type(owner).__name__}: argument `reset_real_features=False` is not needed here: metrics are "
            "immutable, so keep the metric that holds the real images and start each evaluation from it "
            "(real = m.update(real_images, real=True); then real.update(fakes, real=False)); reset() always "
            "empties every state"
        )


def _features(owner: Any, imgs: Any, real: Any) -> tuple[torch.Tensor, torch.Tensor | bool]:
    """The extractor's float64 features of ``imgs`` (``(N, d)``) and ``real`` as a bool or a row mask."""
    x = _checks.tensor(owner, "imgs", imgs)
    if isinstance(real, torch.Tensor):
        if real.dtype != torch.bool or real.ndim != 1 or real.shape[0] != x.shape[0]:
            raise TypeError(f"{_checks.where(owner)}: argument `real` must be a bool, or a 1-d bool tensor over the "
                            f"batch, got {real.dtype} tensor of shape {tuple(real.shape)}")
    elif not isinstance(real, bool):
        raise TypeError(f"{_checks.where(owner)}: argument `real` must be a bool, got {type(real).__name__}")
    ex: _Extractor = owner.feature
    try:
        feats = ex.module(x)
    except RuntimeError as err:  # a dtype, device or shape the extractor does not take: name the metric and the input
        raise ValueError(
            f"{_checks.where(owner)}: the feature extractor failed on argument `imgs` ({x.dtype}, shape "
            f"{tuple(x.shape)}, {x.device}), which it is given as they are: {err}"
        ) from err
    if not isinstance(feats, torch.Tensor):
        raise TypeError(f"{_checks.where(owner)}: the feature extractor returned {type(feats).__name__}, not a tensor")
    if feats.ndim == 1:
        feats = feats.unsqueeze(0)
    if feats.ndim != 2 or feats.shape[1] != ex.num_features or feats.shape[0] != x.shape[0]:
        raise ValueError(
            f"{_checks.where(owner)}: the feature extractor must map argument `imgs` of shape {tuple(x.shape)} to "
            f"({x.shape[0]}, {ex.num_features}) features, got {tuple(feats.shape)}"
        )
    feats = feats.detach()
    _checks.finite(owner, "imgs", feats)
    return feats, real


def _split(feats: torch.Tensor, real: torch.Tensor | bool) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(real, bool):
        return (feats, feats[:0]) if real else (feats[:0], feats)
    real = real.to(feats.device)
    return feats[real], feats[~real]


def frechet_distance(mu1: torch.Tensor, cov1: torch.Tensor, mu2: torch.Tensor, cov2: torch.Tensor) -> torch.Tensor:
    """``|mu1 - mu2|^2 + tr(cov1 + cov2 - 2 (cov1 cov2)^(1/2))`` in float64.

    ``tr((cov1 cov2)^(1/2))`` is the sum of square roots of the eigenvalues of
    the symmetric ``cov1^(1/2) cov2 cov1^(1/2)`` (same spectrum), computed with
    ``eigh``: real and non-negative up to rounding, which is clamped.

    Examples:
        >>> import torch
        >>> eye = torch.eye(2, dtype=torch.float64)
        >>> frechet_distance(torch.zeros(2, dtype=torch.float64), eye, torch.ones(2, dtype=torch.float64), 4 * eye)
        tensor(4., dtype=torch.float64)
    """
    w, v = torch.linalg.eigh(cov1)
    root1 = (v * w.clamp(min=0).sqrt()) @ v.T
    m = root1 @ cov2 @ root1
    tr_root = torch.linalg.eigvalsh((m + m.T) / 2).clamp(min=0).sqrt().sum()
    diff = mu1 - mu2
    distance: torch.Tensor = diff.dot(diff) + cov1.trace() + cov2.trace() - 2 * tr_root
    return distance


class FrechetInceptionDistance(Metric):
    """Fréchet inception distance between the features of real and generated images.

    ``update(imgs, real)`` runs ``feature`` (an ``nn.Module``; nothing is
    downloaded) on ``imgs`` as given, and adds the features to the real
    (``real=True``) or fake statistics; ``real`` may also be a bool tensor over
    the batch. ``compute`` fits a Gaussian to each and returns their Fréchet
    distance, in float64 (cast to the extractor's output dtype), NaN (with a
    warning) until each side has two images. ``normalize`` and
    ``input_img_size`` only shape the dummy image that finds ``d`` when the
    module has no ``num_features``; ``antialias`` and
    ``feature_extractor_weights_path`` belong to TorchMetrics' built-in
    Inception, which scopedmetrics does not have.

    Examples:
        >>> import torch
        >>> from scopedmetrics.image import FrechetInceptionDistance
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> extractor = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 16))
        >>> fid = FrechetInceptionDistance(extractor, input_img_size=(3, 8, 8), normalize=True)
        >>> fid = fid.update(torch.rand(32, 3, 8, 8), real=True)
        >>> fid = fid.update(torch.rand(32, 3, 8, 8) * 0.5, real=False)
        >>> round(fid.compute().item(), 3)
        0.441
    """

    feature: Any = static()
    reset_real_features: bool = static(default=True)
    normalize: bool = static(default=False)
    input_img_size: tuple[int, ...] = static(default=(3, 299, 299))
    feature_extractor_weights_path: str | None = static(default=None)
    antialias: bool = static(default=True)
    real_features_sum: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.feature.num_features, dtype=_F64))
    real_features_cov_sum: torch.Tensor = state("sum", init=lambda m: m._square())
    real_features_num_samples: torch.Tensor = state("sum", default=0)
    fake_features_sum: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.feature.num_features, dtype=_F64))
    fake_features_cov_sum: torch.Tensor = state("sum", init=lambda m: m._square())
    fake_features_num_samples: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        _check_reset_real(self)
        _checks.check_bool(self, "normalize")
        _checks.check_bool(self, "antialias")
        if self.feature_extractor_weights_path is not None:
            raise ValueError(
                "FrechetInceptionDistance: argument `feature_extractor_weights_path` is for TorchMetrics' built-in "
                "Inception; load the weights into your module and pass it as `feature`"
            )
        object.__setattr__(self, "feature", _extractor(self))

    def _square(self) -> torch.Tensor:
        d = self.feature.num_features
        return torch.zeros((d, d), dtype=_F64)

    @property
    def inception(self) -> torch.nn.Module:
        """The feature extractor (TorchMetrics' name for it)."""
        return self.feature.module  # type: ignore[no-any-return]

    def update(self, imgs: torch.Tensor, real: bool | torch.Tensor) -> FrechetInceptionDistance:
        """Fold in the features of a batch of real or fake images; ``self`` is unchanged."""
        feats, flags = _features(self, imgs, real)
        feats = feats.to(device=self.real_features_sum.device, dtype=_F64)
        r, f = _split(feats, flags)
        return self.replace(
            real_features_sum=self.real_features_sum + r.sum(0),
            real_features_cov_sum=self.real_features_cov_sum + r.T @ r,
            real_features_num_samples=self.real_features_num_samples + r.shape[0],
            fake_features_sum=self.fake_features_sum + f.sum(0),
            fake_features_cov_sum=self.fake_features_cov_sum + f.T @ f,
            fake_features_num_samples=self.fake_features_num_samples + f.shape[0],
        )

    def compute(self) -> torch.Tensor:
        """The Fréchet distance between the real and fake feature Gaussians."""
        nr, nf = int(self.real_features_num_samples), int(self.fake_features_num_samples)
        if nr < 2 or nf < 2:
            if nr or nf:
                warnings.warn(f"FrechetInceptionDistance.compute: needs at least 2 real and 2 fake images, has "
                              f"{nr} and {nf}; the value is NaN", UserWarning, stacklevel=3)
            return torch.tensor(float("nan"), dtype=self.feature.dtype)
        stats = []
        for s, ss, n in ((self.real_features_sum, self.real_features_cov_sum, nr),
                         (self.fake_features_sum, self.fake_features_cov_sum, nf)):
            mu = s / n
            stats += [mu, (ss - n * torch.outer(mu, mu)) / (n - 1)]
        return frechet_distance(*stats).to(self.feature.dtype)


def _canonical_rows(x: torch.Tensor) -> torch.Tensor:
    """``x``'s rows in lexicographic order: an order that depends only on the set of rows."""
    if x.shape[0] <= 1:
        return x
    a = x.detach().cpu().to(_F64).numpy()
    order = np.lexsort(a.T[::-1])  # lexsort's last key is the primary one: column 0
    return x[torch.from_numpy(order).to(x.device)]


def _poly_mmd(fr: torch.Tensor, ff: torch.Tensor, degree: int, gamma: float | None, coef: float) -> torch.Tensor:
    """Unbiased squared MMD of two equal-size feature sets under the polynomial kernel."""
    g = 1.0 / fr.shape[1] if gamma is None else gamma
    kxx = (fr @ fr.T * g + coef) ** degree
    kyy = (ff @ ff.T * g + coef) ** degree
    kxy = (fr @ ff.T * g + coef) ** degree
    m = fr.shape[0]
    within = (kxx.sum() - kxx.diagonal().sum() + kyy.sum() - kyy.diagonal().sum()) / (m * (m - 1))
    return within - 2 * kxy.sum() / (m * m)


class KernelInceptionDistance(Metric):
    """Kernel inception distance: the polynomial-kernel MMD between real and fake features, over subsets.

    ``update(imgs, real)`` as for :class:`FrechetInceptionDistance`. ``compute``
    draws ``subsets`` pairs of ``subset_size`` real and fake features and
    returns the mean and (biased) standard deviation of their unbiased MMD²,
    with kernel ``(gamma <x, y> + coef) ** degree`` (``gamma=None``: ``1 / d``).
    The features are kept (a ``cat`` state: ``d`` numbers per image, as in
    TorchMetrics). Their width ``d`` is the module's ``num_features``, or read
    from a dummy image of ``input_img_size`` (our keyword, as FID's). The
    subsets are drawn with a generator seeded with ``seed`` from the features
    in lexicographic order, so the value is the same on any
    split of the images and in every run; TorchMetrics draws from the global
    random generator.

    Examples:
        >>> import torch
        >>> from scopedmetrics.image import KernelInceptionDistance
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> extractor = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 16))
        >>> kid = KernelInceptionDistance(extractor, subsets=10, subset_size=16, normalize=True,
        ...                               input_img_size=(3, 8, 8))
        >>> kid = kid.update(torch.rand(32, 3, 8, 8), real=True).update(torch.rand(32, 3, 8, 8) * 0.5, real=False)
        >>> mean, std = kid.compute()
        >>> mean > 0
        tensor(True)
    """

    feature: Any = static()
    subsets: int = static(default=100)
    subset_size: int = static(default=1000)
    degree: int = static(default=3)
    gamma: float | None = static(default=None)
    coef: float = static(default=1.0)
    reset_real_features: bool = static(default=True)
    normalize: bool = static(default=False)
    input_img_size: tuple[int, ...] = static(default=(3, 299, 299))
    seed: int = static(default=0)
    real_features: torch.Tensor = state("cat", init=lambda m: m._rows())
    fake_features: torch.Tensor = state("cat", init=lambda m: m._rows())

    def __post_init__(self) -> None:
        _checks.check_int(self, "subsets", 1)
        _checks.check_int(self, "subset_size", 2)  # the unbiased MMD divides by m * (m - 1): 1 gives NaN
        _checks.check_int(self, "degree", 1)
        if self.gamma is not None:
            _checks.check_number(self, "gamma")
            if not self.gamma > 0:
                raise ValueError(f"KernelInceptionDistance: argument `gamma` must be positive, got {self.gamma!r}")
        _checks.check_number(self, "coef")
        if not self.coef > 0:
            raise ValueError(f"KernelInceptionDistance: argument `coef` must be positive, got {self.coef!r}")
        _check_reset_real(self)
        _checks.check_bool(self, "normalize")
        _checks.check_int(self, "seed", 0)
        object.__setattr__(self, "feature", _extractor(self))

    def _rows(self) -> torch.Tensor:
        return torch.zeros((0, self.feature.num_features), dtype=self.feature.dtype)

    @property
    def inception(self) -> torch.nn.Module:
        """The feature extractor (TorchMetrics' name for it)."""
        return self.feature.module  # type: ignore[no-any-return]

    def update(self, imgs: torch.Tensor, real: bool | torch.Tensor) -> KernelInceptionDistance:
        """Fold in the features of a batch of real or fake images; ``self`` is unchanged."""
        feats, flags = _features(self, imgs, real)
        r, f = _split(feats.to(device=self.real_features.device, dtype=self.real_features.dtype), flags)
        return self.append(real_features=r, fake_features=f)

    def compute(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean and standard deviation of the MMD² over the subsets."""
        real, fake = self.real_features, self.fake_features
        dtype = self.feature.dtype
        if real.shape[0] == 0 and fake.shape[0] == 0:
            nan = torch.tensor(float("nan"), dtype=dtype)
            return nan, nan
        for side, x in (("real", real), ("fake", fake)):
            if x.shape[0] < self.subset_size:
                raise ValueError(
                    f"KernelInceptionDistance.compute: argument `subset_size` ({self.subset_size}) must not exceed "
                    f"the number of {side} images ({x.shape[0]})"
                )
        real, fake = _canonical_rows(real).to(_F64), _canonical_rows(fake).to(_F64)
        g = torch.Generator().manual_seed(self.seed)
        scores = []
        for _ in range(self.subsets):
            r = real[torch.randperm(real.shape[0], generator=g)[: self.subset_size].to(real.device)]
            f = fake[torch.randperm(fake.shape[0], generator=g)[: self.subset_size].to(fake.device)]
            scores.append(_poly_mmd(r, f, self.degree, self.gamma, self.coef))
        s = torch.stack(scores)
        return s.mean().to(dtype), s.std(unbiased=False).to(dtype)
