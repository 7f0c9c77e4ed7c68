"""Image metrics against TorchMetrics 1.9, scikit-image and scipy, on any split of the images."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np
import pytest
import scipy.linalg
import torch
from catalogue import assert_same_state, state_of
from shards import assert_close, check_sharded
from skimage.metrics import peak_signal_noise_ratio as sk_psnr
from skimage.metrics import structural_similarity as sk_ssim

import scopedmetrics as sm
from scopedmetrics.image import (
    FrechetInceptionDistance,
    KernelInceptionDistance,
    MultiScaleStructuralSimilarityIndexMeasure,
    PeakSignalNoiseRatio,
    StructuralSimilarityIndexMeasure,
)
from scopedmetrics.image.inception import frechet_distance

tmi = pytest.importorskip("torchmetrics.image")
from torchmetrics.image.fid import FrechetInceptionDistance as TMFrechet  # noqa: E402  (without torch-fidelity,
from torchmetrics.image.kid import KernelInceptionDistance as TMKernel  # noqa: E402  torchmetrics.image omits them)

TM = {"FrechetInceptionDistance": TMFrechet, "KernelInceptionDistance": TMKernel}


def images(n: int = 12, shape: tuple[int, ...] = (3, 24, 24), seed: int = 0, noise: float = 0.1) -> Any:
    g = torch.Generator().manual_seed(seed)
    target = torch.rand(n, *shape, generator=g)
    preds = (target + noise * torch.randn(n, *shape, generator=g)).clamp(0, 1)
    return preds, target


def tm(metric: Any, p: torch.Tensor, t: torch.Tensor, one_at_a_time: bool = False) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(p.shape[0]) if one_at_a_time else [None]:
            metric.update(p[i : i + 1], t[i : i + 1]) if i is not None else metric.update(p, t)
        return metric.compute()


# -- PSNR ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {}, {"base": 2.0}, {"dim": (1, 2, 3)}, {"dim": (1, 2, 3), "reduction": "sum"},
    {"dim": (2, 3), "reduction": "none"}, {"dim": -1, "reduction": None}, {"data_range": (0.2, 0.8)},
    {"data_range": (0.2, 0.8), "dim": (1, 2, 3), "reduction": "none"},
], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "default")
def test_psnr_equals_torchmetrics(kwargs: dict[str, Any]) -> None:
    p, t = images()
    kwargs = {"data_range": 1.0, **kwargs}
    ours = PeakSignalNoiseRatio(**kwargs).update(p[:5], t[:5]).update(p[5:], t[5:]).compute()
    assert_close(ours, tm(tmi.PeakSignalNoiseRatio(**kwargs), p, t))


def test_psnr_equals_scikit_image() -> None:
    p, t = images()
    ours = PeakSignalNoiseRatio(1.0).update(p, t).compute()
    assert_close(ours, sk_psnr(t.numpy(), p.numpy(), data_range=1.0))
    per_image = PeakSignalNoiseRatio(1.0, dim=(1, 2, 3), reduction="none").update(p, t).compute()
    assert_close(per_image, np.array([sk_psnr(t[i].numpy(), p[i].numpy(), data_range=1.0) for i in range(len(p))]))


def test_psnr_refuses_the_batch_dimension() -> None:
    with pytest.raises(ValueError, match="PeakSignalNoiseRatio: argument `dim` must not include the batch"):
        PeakSignalNoiseRatio(1.0, dim=(0, 1))
    p, t = images(n=2)
    with pytest.raises(ValueError, match="PeakSignalNoiseRatio.update: argument `dim` -4 includes the batch"):
        PeakSignalNoiseRatio(1.0, dim=-4).update(p, t)
    for empty in ((), []):  # torch summed over every dimension and divided by 1: 3.01 dB for 9.03
        with pytest.raises(ValueError, match=r"PeakSignalNoiseRatio: argument `dim` must name at least one dim"):
            PeakSignalNoiseRatio(1.0, dim=empty)


# -- SSIM -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {}, {"gaussian_kernel": False, "kernel_size": 7}, {"sigma": (1.0, 2.0)}, {"reduction": "sum"},
    {"reduction": "none", "k1": 0.02}, {"data_range": (0.1, 0.9)}, {"return_full_image": True},
    {"return_contrast_sensitivity": True, "reduction": None},
], ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "default")
def test_ssim_equals_torchmetrics(kwargs: dict[str, Any]) -> None:
    p, t = images()
    kwargs = {"data_range": 1.0, **kwargs}
    ours = StructuralSimilarityIndexMeasure(**kwargs).update(p[:7], t[:7]).update(p[7:], t[7:]).compute()
    assert_close(ours, tm(tmi.StructuralSimilarityIndexMeasure(**kwargs), p, t))


def test_ssim_without_data_range_equals_torchmetrics_fed_one_image_at_a_time() -> None:
    p, t = images(seed=1)
    p[3] *= 0.5  # images of different ranges: TorchMetrics' batch range would mix them
    ours = StructuralSimilarityIndexMeasure().update(p, t).compute()
    assert_close(ours, tm(tmi.StructuralSimilarityIndexMeasure(), p, t, one_at_a_time=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_images_give_the_values_of_the_same_pixels_in_float32(dtype: torch.dtype) -> None:
    # an 8-bit image's SSIM window sums overflow float16: the value was NaN (TorchMetrics gives NaN too)
    g = torch.Generator().manual_seed(4)
    a = torch.randint(0, 256, (2, 3, 48, 48), generator=g).float()
    b = (a + torch.randn(a.shape, generator=g) * 20).clamp(0, 255).round()
    makes = [lambda: PeakSignalNoiseRatio(data_range=255.0), lambda: StructuralSimilarityIndexMeasure(data_range=255.0),
             lambda: MultiScaleStructuralSimilarityIndexMeasure(data_range=255.0, betas=(0.5, 0.5))]
    for make in makes:
        narrow = make().update(a.to(dtype), b.to(dtype)).compute()
        assert torch.isfinite(narrow)
        assert_close(narrow, make().update(a, b).compute())  # 8-bit pixels are exact in either dtype


def test_ssim_of_volumes_equals_torchmetrics() -> None:
    p, t = images(n=3, shape=(1, 12, 13, 14), seed=2)
    for kwargs in ({"sigma": 0.8, "kernel_size": 5}, {"gaussian_kernel": False, "kernel_size": (3, 5, 7)}):
        ours = StructuralSimilarityIndexMeasure(data_range=1.0, **kwargs).update(p, t).compute()
        assert_close(ours, tm(tmi.StructuralSimilarityIndexMeasure(data_range=1.0, **kwargs), p, t))


def test_ssim_map_equals_scikit_image_away_from_the_border() -> None:
    """scikit-image leaves out the border (where padding decides); inside it the maps agree."""
    p, t = images(n=2, shape=(3, 32, 32), seed=3)
    _, full = StructuralSimilarityIndexMeasure(data_range=1.0, return_full_image=True).update(p, t).compute()
    pad = 5
    for i in range(2):
        mean, sk_map = sk_ssim(t[i].numpy(), p[i].numpy(), data_range=1.0, channel_axis=0, gaussian_weights=True,
                               sigma=1.5, use_sample_covariance=False, full=True)
        inner = (slice(None), slice(pad, -pad), slice(pad, -pad))
        assert_close(full[i][inner], sk_map[inner], atol=1e-4)
        assert_close(full[i][inner].mean(), mean, atol=1e-5)


@pytest.mark.parametrize("kwargs", [
    {}, {"normalize": "simple", "reduction": "none"}, {"normalize": None, "gaussian_kernel": False},
    {"kernel_size": 5, "sigma": 0.5, "betas": (0.3, 0.3, 0.4), "reduction": "sum"},
], ids=["default", "simple-none", "uniform", "three-scales"])
def test_ms_ssim_equals_torchmetrics(kwargs: dict[str, Any]) -> None:
    shape = (1, 24, 24) if "betas" in kwargs else (2, 180, 180)
    p, t = images(n=3, shape=shape, seed=4)
    kwargs = {"data_range": 1.0, **kwargs}
    ours = MultiScaleStructuralSimilarityIndexMeasure(**kwargs).update(p[:1], t[:1]).update(p[1:], t[1:]).compute()
    assert_close(ours, tm(tmi.MultiScaleStructuralSimilarityIndexMeasure(**kwargs), p, t))


def test_ms_ssim_without_data_range_equals_torchmetrics_one_image_at_a_time() -> None:
    p, t = images(n=3, shape=(1, 24, 24), seed=5)
    kwargs = {"kernel_size": 5, "sigma": 0.5, "betas": (0.3, 0.3, 0.4)}
    ours = MultiScaleStructuralSimilarityIndexMeasure(**kwargs).update(p, t).compute()
    assert_close(ours, tm(tmi.MultiScaleStructuralSimilarityIndexMeasure(**kwargs), p, t, one_at_a_time=True))


# -- FID and KID ------------------------------------------------------------------------------------------


def extractor(seed: int = 0, d: int = 6) -> torch.nn.Module:
    """A small seeded feature extractor: conv, pool, linear; declares num_features as TorchMetrics reads it."""
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(16, d))
    for prm in net.parameters():
        prm.data = torch.randn(prm.shape, generator=g)
    net.num_features = d  # type: ignore[assignment]
    return net.eval()


def real_fake(n: int = 40, seed: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    imgs = torch.rand(n, 3, 8, 8, generator=g)
    real = torch.arange(n) % 3 != 0
    imgs[~real] = imgs[~real] * 0.7 + 0.2
    return imgs, real


def test_fid_equals_torchmetrics_and_scipy_sqrtm() -> None:
    imgs, real = real_fake()
    net = extractor()
    ours = FrechetInceptionDistance(net).update(imgs[real], True).update(imgs[~real], False).compute()
    theirs = TMFrechet(feature=net)
    theirs.update(imgs[real], real=True)
    theirs.update(imgs[~real], real=False)
    assert ours.dtype == torch.float32
    assert_close(ours, theirs.compute(), rtol=1e-4)
    with torch.no_grad():
        fr, ff = net(imgs[real]).double().numpy(), net(imgs[~real]).double().numpy()
    mu1, mu2 = fr.mean(0), ff.mean(0)
    s1, s2 = np.cov(fr, rowvar=False), np.cov(ff, rowvar=False)
    root = scipy.linalg.sqrtm(s1 @ s2).real
    expected = ((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * root)
    assert_close(ours, expected, rtol=1e-5)


def test_frechet_distance_matches_sqrtm_on_ill_conditioned_covariances() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 20)) @ np.diag(np.logspace(-4, 2, 20))
    b = rng.normal(size=(60, 20)) @ np.diag(np.logspace(2, -3, 20))
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    mu1, mu2 = a.mean(0), b.mean(0)
    expected = ((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * scipy.linalg.sqrtm(s1 @ s2).real)
    got = frechet_distance(*(torch.from_numpy(x) for x in (mu1, s1, mu2, s2)))
    assert got.dtype == torch.float64
    assert_close(got, expected, rtol=1e-8)


def test_fid_keeps_sums_never_features_and_takes_a_per_image_real_flag() -> None:
    imgs, real = real_fake()
    m = FrechetInceptionDistance(extractor()).update(imgs, real)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {
        "real_features_sum": (6,), "real_features_cov_sum": (6, 6), "real_features_num_samples": (),
        "fake_features_sum": (6,), "fake_features_cov_sum": (6, 6), "fake_features_num_samples": ()}
    split = FrechetInceptionDistance(extractor()).update(imgs[real], True).update(imgs[~real], False)
    assert_close(m.compute(), split.compute())


def test_kid_equals_torchmetrics_when_each_subset_is_every_image() -> None:
    imgs, real = real_fake(n=30)
    net = extractor()
    n_fake = int((~real).sum())
    ours = KernelInceptionDistance(net, subsets=3, subset_size=n_fake).update(imgs[real][:n_fake], True)
    ours = ours.update(imgs[~real], False).compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = TMKernel(feature=net, subsets=3, subset_size=n_fake)
    theirs.update(imgs[real][:n_fake], real=True)
    theirs.update(imgs[~real], real=False)
    mean, _ = theirs.compute()
    assert_close(ours[0], mean, rtol=1e-4, atol=1e-6)
    assert float(ours[1]) < 1e-6  # every subset is the whole set (TorchMetrics' float32 sums wobble by ~1e-2)


def test_kid_does_not_depend_on_the_order_of_the_images() -> None:
    imgs, real = real_fake()
    kid = KernelInceptionDistance(extractor(), subsets=7, subset_size=5, degree=2, gamma=0.5, coef=2.0)
    order = torch.randperm(len(imgs), generator=torch.Generator().manual_seed(1))
    assert_close(kid.update(imgs, real).compute(), kid.update(imgs[order], real[order]).compute(), atol=0, rtol=0)


def test_the_extractor_is_configuration_compared_by_its_weights() -> None:
    a, b = FrechetInceptionDistance(extractor(0)), FrechetInceptionDistance(extractor(1))
    assert a.merge(FrechetInceptionDistance(extractor(0))).real_features_num_samples == 0
    with pytest.raises(ValueError, match="FrechetInceptionDistance.merge: configurations differ"):
        a.merge(b)
    back = pickle.loads(pickle.dumps(a.update(*real_fake())))
    assert_close(back.compute(), a.update(*real_fake()).compute())
    assert back.inception is not a.inception and isinstance(back.inception, torch.nn.Sequential)


def test_the_dummy_image_finds_the_width_and_leaves_the_module_as_it_was() -> None:
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.BatchNorm1d(12), torch.nn.Linear(12, 5))
    before = {k: v.clone() for k, v in net.state_dict().items()}
    fid = FrechetInceptionDistance(net, normalize=True, input_img_size=(3, 2, 2))
    assert fid.real_features_sum.shape == (5,) and net.training
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


# -- any split, empty shards included -------------------------------------------------------------------

SHARDED: list[tuple[str, Any, str]] = [
    ("psnr", lambda: PeakSignalNoiseRatio(1.0), "pairs"),
    ("psnr-per-image", lambda: PeakSignalNoiseRatio(1.0, dim=(1, 2, 3)), "pairs"),
    ("psnr-none", lambda: PeakSignalNoiseRatio((0.0, 1.0), reduction="none", dim=(1, 2, 3)), "pairs"),
    ("ssim", lambda: StructuralSimilarityIndexMeasure(), "pairs"),
    ("ssim-none-full", lambda: StructuralSimilarityIndexMeasure(reduction="none", return_full_image=True), "pairs"),
    ("ms-ssim", lambda: MultiScaleStructuralSimilarityIndexMeasure(kernel_size=5, sigma=0.5,
                                                                   betas=(0.3, 0.3, 0.4)), "pairs"),
    ("fid", lambda: FrechetInceptionDistance(extractor()), "features"),
    ("kid", lambda: KernelInceptionDistance(extractor(), subsets=5, subset_size=4), "features"),
]


def data_of(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    return images(n=14, shape=(1, 24, 24), seed=7) if kind == "pairs" else real_fake(n=30)


@pytest.mark.parametrize(("name", "make", "kind"), SHARDED, ids=[s[0] for s in SHARDED])
def test_any_split_gives_the_single_process_value(name: str, make: Any, kind: str) -> None:
    arrays = data_of(kind)
    expected = make().update(*arrays).compute()
    check_sharded(make(), arrays, expected, seed=2)


def test_any_split_in_gloo(world: Any) -> None:
    p, t = images(n=10, shape=(1, 16, 16), seed=8)
    metric = sm.Collection(psnr=PeakSignalNoiseRatio(1.0), ssim=StructuralSimilarityIndexMeasure(data_range=1.0))
    check_sharded(metric, (p, t), metric.update(p, t).compute(), seed=4, world_sizes=(2,), world=world)


def test_fid_in_gloo(world: Any) -> None:
    imgs, real = real_fake(n=24)
    fid = FrechetInceptionDistance(extractor())
    check_sharded(fid, (imgs, real), fid.update(imgs, real).compute(), seed=5, world_sizes=(2,), world=world)


def test_ranks_with_different_extractors_refuse_to_reduce() -> None:
    def rank_fn(rank: int) -> Any:
        return FrechetInceptionDistance(extractor(rank)).update(*real_fake(n=6)).compute()

    with pytest.raises(sm.SyncError):
        sm.simulate(rank_fn, 2)


def test_mask_leaves_images_out() -> None:
    p, t = images(n=8)
    keep = torch.tensor([True, False] * 4)
    for m in (PeakSignalNoiseRatio(1.0), StructuralSimilarityIndexMeasure()):
        assert_close(m.update(p, t, mask=keep).compute(), m.update(p[keep], t[keep]).compute())
    imgs, real = real_fake(n=12)
    keep = torch.arange(12) < 9
    fid = FrechetInceptionDistance(extractor())
    assert_close(fid.update(imgs, real, mask=keep).compute(), fid.update(imgs[keep], real[keep]).compute())


def test_empty_and_too_small_states() -> None:
    for m in (PeakSignalNoiseRatio(1.0), StructuralSimilarityIndexMeasure(), FrechetInceptionDistance(extractor())):
        with pytest.warns(UserWarning, match=type(m).__name__):
            assert torch.isnan(m.compute())
    imgs, real = real_fake(n=6)
    with pytest.warns(UserWarning, match="needs at least 2 real and 2 fake"):
        assert torch.isnan(FrechetInceptionDistance(extractor()).update(imgs[:3], True).compute())
    with pytest.raises(ValueError, match="KernelInceptionDistance.compute: argument `subset_size`"):
        KernelInceptionDistance(extractor(), subset_size=10).update(imgs, real).compute()
    with pytest.raises(ValueError, match="KernelInceptionDistance: argument `subset_size` must be at least 2"):
        KernelInceptionDistance(extractor(), subset_size=1)  # the unbiased MMD of 1 sample is 0 / 0 (was NaN)


# -- bad input -------------------------------------------------------------------------------------------

BAD = [
    ("preds_list", lambda p, t: (p.tolist(), t), TypeError, "preds"),
    ("target_none", lambda p, t: (p, None), TypeError, "target"),
    ("complex", lambda p, t: (p.to(torch.complex64), t), TypeError, "preds"),
    ("shape_mismatch", lambda p, t: (p[:, :, :20], t), ValueError, "preds"),
    ("nan", lambda p, t: (p.masked_fill(p > 0.9, float("nan")), t), ValueError, "preds"),
    ("inf_target", lambda p, t: (p, t.masked_fill(t > 0.9, float("inf"))), ValueError, "target"),
]


@pytest.mark.parametrize(("name", "bad", "error", "arg"), BAD, ids=[b[0] for b in BAD])
def test_bad_images_are_refused_and_leave_the_metric_unchanged(name: str, bad: Any, error: type, arg: str) -> None:
    p, t = images(n=3)
    for make in (lambda: PeakSignalNoiseRatio(1.0), StructuralSimilarityIndexMeasure,
                 lambda: MultiScaleStructuralSimilarityIndexMeasure(kernel_size=5, sigma=0.5, betas=(0.3, 0.7))):
        m = make().update(p, t)
        before = state_of(m)
        with pytest.raises(error) as info:
            m.update(*bad(p, t))
        assert type(m).__name__ in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
        assert_same_state(before, state_of(m))


def test_ssim_refuses_what_it_cannot_window() -> None:
    p, t = images(n=2)
    with pytest.raises(ValueError, match=r"StructuralSimilarityIndexMeasure.update: argument `preds` must have shape"):
        StructuralSimilarityIndexMeasure().update(p[:, 0], t[:, 0])
    with pytest.raises(ValueError, match="too small for a window"):
        StructuralSimilarityIndexMeasure().update(p[..., :4, :4], t[..., :4, :4])
    with pytest.raises(ValueError, match="MultiScaleStructuralSimilarityIndexMeasure.update: argument `preds`"):
        MultiScaleStructuralSimilarityIndexMeasure().update(p, t)


def test_fid_refuses_bad_images_and_flags() -> None:
    imgs, real = real_fake(n=4)
    m = FrechetInceptionDistance(extractor()).update(imgs, real)
    before = state_of(m)
    for args, error, needle in [
        ((imgs.tolist(), True), TypeError, "`imgs`"),
        ((imgs, "yes"), TypeError, "`real` must be a bool"),
        ((imgs, real[:2]), TypeError, "`real` must be a bool, or a 1-d bool tensor"),
        ((imgs[:, :2], True), ValueError, "the feature extractor failed on argument `imgs`"),  # 2 channels
        ((imgs.masked_fill(imgs > 0.5, float("nan")), True), ValueError, "`imgs` must be finite"),
    ]:
        with pytest.raises(error, match=needle):
            m.update(*args)
        assert_same_state(before, state_of(m))


@pytest.mark.parametrize(("make", "error", "needle"), [
    (lambda: PeakSignalNoiseRatio(-1.0), ValueError, "PeakSignalNoiseRatio: argument `data_range` must be positive"),
    (lambda: PeakSignalNoiseRatio((1.0, 0.0)), ValueError, "min < max"),
    (lambda: PeakSignalNoiseRatio("1"), TypeError, "`data_range` must be a number"),
    (lambda: PeakSignalNoiseRatio(1.0, base=1.0), ValueError, "`base`"),
    (lambda: PeakSignalNoiseRatio(1.0, reduction="mean"), ValueError, "`reduction` must be one of"),
    (lambda: PeakSignalNoiseRatio(1.0, dim="1"), TypeError, "`dim` must be an int"),
    (lambda: StructuralSimilarityIndexMeasure(kernel_size=4), ValueError, "`kernel_size` must hold odd"),
    (lambda: StructuralSimilarityIndexMeasure(sigma=-1.0), ValueError, "`sigma` must hold positive"),
    (lambda: StructuralSimilarityIndexMeasure(return_full_image=True, return_contrast_sensitivity=True),
     ValueError, "mutually exclusive"),
    (lambda: MultiScaleStructuralSimilarityIndexMeasure(betas=[0.5, 0.5]), TypeError, "`betas` must be a tuple"),
    (lambda: MultiScaleStructuralSimilarityIndexMeasure(normalize="clip"), ValueError, "`normalize`"),
    (lambda: FrechetInceptionDistance(2048), TypeError, "downloads no weights"),
    (lambda: FrechetInceptionDistance(extractor(), False), ValueError, "`reset_real_features=False` is not needed"),
    (lambda: FrechetInceptionDistance(extractor(), feature_extractor_weights_path="w.pt"), ValueError, "weights"),
    (lambda: KernelInceptionDistance(extractor(), subsets=0), ValueError, "`subsets` must be at least 1"),
    (lambda: KernelInceptionDistance("logits_unbiased"), TypeError, "downloads no weights"),
], ids=["negative_range", "bad_pair", "string_range", "base", "reduction", "dim", "even_kernel", "sigma",
        "both_returns", "betas", "normalize", "fid_int", "reset_real", "weights_path", "subsets", "kid_str"])
def test_bad_configuration_is_refused(make: Any, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle):
        make()


def test_positional_arguments_follow_torchmetrics() -> None:
    import inspect

    for cls in (PeakSignalNoiseRatio, StructuralSimilarityIndexMeasure, MultiScaleStructuralSimilarityIndexMeasure,
                FrechetInceptionDistance, KernelInceptionDistance):
        theirs = [n for n in inspect.signature(TM.get(cls.__name__) or getattr(tmi, cls.__name__)).parameters
                  if n not in ("self", "kwargs")]
        ours = list(inspect.signature(cls.__init__).parameters)[1:]
        assert ours[: len(theirs)] == theirs, (cls.__name__, ours, theirs)


def test_an_extractor_that_cannot_take_the_images_fails_naming_the_metric() -> None:
    # float16 images into float32 weights raised torch's own "mat1 and mat2 must have the same dtype"
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 5))
    fid = FrechetInceptionDistance(net, normalize=True, input_img_size=(3, 4, 4))
    with pytest.raises(ValueError, match=r"FrechetInceptionDistance.update: the feature extractor failed on "
                                         r"argument `imgs` \(torch.float16"):
        fid.update(torch.rand(6, 3, 4, 4).half(), real=True)
