"""HausdorffDistance against TorchMetrics 1.9, SciPy and scikit-image, on any split of the samples."""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from catalogue import assert_same_state, state_of
from scipy import ndimage
from scipy.spatial.distance import cdist, directed_hausdorff
from shards import assert_close, check_sharded

import scopedmetrics as sm
from scopedmetrics.segmentation import HausdorffDistance

tms = pytest.importorskip("torchmetrics.segmentation")
tmf = pytest.importorskip("torchmetrics.functional.segmentation")

C = 4
N = 12
METRICS = ["euclidean", "chessboard", "taxicab"]


def blobs(n: int = N, seed: int = 0, shape: tuple[int, ...] = (12, 12), present: float = 0.8, missed: float = 0.0,
          every_class: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Index label maps of boxes per class; preds are jittered boxes plus strays.

    ``present``: how often a class paints a box in a target; ``missed``: how often preds leave a target's class
    out altogether (an infinite distance); ``every_class``: every class in every mask (TorchMetrics raises on a
    class in neither mask).
    """
    g = torch.Generator().manual_seed(seed)
    target = torch.zeros((n, *shape), dtype=torch.long)
    preds = torch.zeros_like(target)

    def box(x: torch.Tensor, i: int, c: int, lo: list[int], hi: list[int]) -> None:
        x[(i, *(slice(a, b) for a, b in zip(lo, hi)))] = c

    for i in range(n):
        for c in range(1, C):
            if float(torch.rand((), generator=g)) >= present:
                continue
            lo = [int(torch.randint(0, max(1, s - 1), (), generator=g)) for s in shape]
            hi = [min(s, a + 1 + int(torch.randint(1, max(2, s // 2), (), generator=g))) for a, s in zip(lo, shape)]
            box(target, i, c, lo, hi)
            if float(torch.rand((), generator=g)) < missed:
                continue
            jl = [max(0, a + int(torch.randint(-2, 3, (), generator=g))) for a in lo]
            jh = [min(s, max(a + 1, b + int(torch.randint(-2, 3, (), generator=g)))) for a, b, s in zip(jl, hi, shape)]
            box(preds, i, c, jl, jh)
        stray, source = (tuple(int(torch.randint(0, s, (), generator=g)) for s in shape) for _ in range(2))
        preds[(i, *stray)] = target[(i, *source)]  # a stray pixel of a class the target holds
        while missed == 0:  # a box of preds overwritten where the target's was not: give the class back
            lost = [c for c in range(C) if bool((target[i] == c).any()) != bool((preds[i] == c).any())]
            if not lost:
                break
            c = lost[0]
            if bool((target[i] == c).any()):
                preds[i][target[i] == c] = c
            else:
                preds[i][preds[i] == c] = target[i][preds[i] == c]
    if every_class:
        for c in range(C):  # one pixel of each class, in a corner row of every mask
            for x in (preds, target):
                x[(slice(None), *([0] * (len(shape) - 1)), c)] = c
    return preds, target


def one_hot(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(x, C).movedim(-1, 1)


def inputs(fmt: str, p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if fmt == "index":
        return p, t
    if fmt == "one-hot":
        return one_hot(p), one_hot(t).bool()
    g = torch.Generator().manual_seed(1)
    scores = torch.rand(one_hot(p).shape, generator=g) + 2.0 * one_hot(p)
    return (scores, one_hot(t)) if fmt == "scores" else (scores, t)  # mixed: scores and index


def tm_value(p: torch.Tensor, t: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    fmt = kwargs.get("input_format", "one-hot")
    kwargs["input_format"] = "one-hot" if fmt == "scores" else fmt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = tms.HausdorffDistance(**kwargs)
        m.update(p, t)
        return m.compute()


# -- an independent oracle: SciPy's erosion and distances, per sample and class ---------------------------------

_SCIPY = {"euclidean": "euclidean", "chessboard": "chebyshev", "taxicab": "cityblock"}


def _edge_points(mask: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    structure = ndimage.generate_binary_structure(mask.ndim, 1)
    inner = ndimage.binary_erosion(mask, structure=structure, border_value=0)
    return np.argwhere(mask & ~inner) * spacing


def oracle_pairs(p: torch.Tensor, t: torch.Tensor, *, include_background: bool = False,
                 distance_metric: str = "euclidean", spacing: Any = None, directed: bool = False) -> list[float]:
    """Every (sample, class) distance, from index label maps; pairs where the class is in neither mask left out."""
    out = []
    dims = p.ndim - 1
    sp = np.ones(dims) if spacing is None else np.asarray(spacing, dtype=float)
    for i in range(p.shape[0]):
        for c in range(0 if include_background else 1, C):
            a = _edge_points((p[i] == c).numpy(), sp)
            b = _edge_points((t[i] == c).numpy(), sp)
            if not len(a) and not len(b):
                continue
            if not len(a) or not len(b):
                out.append(math.inf)
                continue
            if distance_metric == "euclidean":  # SciPy's own Hausdorff search
                d = directed_hausdorff(a, b)[0] if directed else max(directed_hausdorff(a, b)[0],
                                                                      directed_hausdorff(b, a)[0])
            else:
                m = cdist(a, b, metric=_SCIPY[distance_metric])
                d = m.min(1).max() if directed else max(m.min(1).max(), m.min(0).max())
            out.append(float(d))
    return out


def oracle(p: torch.Tensor, t: torch.Tensor, **kwargs: Any) -> float:
    pairs = oracle_pairs(p, t, **kwargs)
    return float(np.mean(pairs)) if pairs else math.nan


# -- TorchMetrics' values ------------------------------------------------------------------------------------


@pytest.mark.parametrize("distance_metric", METRICS)
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("include_background", [False, True])
def test_equals_torchmetrics(distance_metric: str, directed: bool, include_background: bool) -> None:
    p, t = blobs(seed=1, every_class=True)
    kwargs = dict(num_classes=C, include_background=include_background, distance_metric=distance_metric,
                  directed=directed, input_format="index")
    ours = HausdorffDistance(**kwargs).update(p[:5], t[:5]).update(p[5:], t[5:]).compute()
    assert ours.dtype == torch.float32
    assert_close(ours, tm_value(p, t, **kwargs))
    assert_close(ours, oracle(p, t, include_background=include_background, distance_metric=distance_metric,
                              directed=directed))


@pytest.mark.parametrize("fmt", ["index", "one-hot", "scores", "mixed"])
def test_input_formats_equal_torchmetrics(fmt: str) -> None:
    p, t = blobs(seed=2, every_class=True)
    pp, tt = inputs(fmt, p, t)
    kwargs = dict(num_classes=C, input_format="one-hot" if fmt == "scores" else fmt)
    assert_close(HausdorffDistance(**kwargs).update(pp, tt).compute(), tm_value(pp, tt, **kwargs))


@pytest.mark.parametrize("distance_metric", METRICS)
@pytest.mark.parametrize("spacing", [[0.5, 2.0], torch.tensor([3.0, 1.0]), (2, 2)])
def test_spacing_equals_torchmetrics(distance_metric: str, spacing: Any) -> None:
    p, t = blobs(seed=3, every_class=True)
    listed = spacing.tolist() if isinstance(spacing, torch.Tensor) else list(spacing)  # TorchMetrics: lists only
    ours = HausdorffDistance(C, False, distance_metric, spacing, input_format="index").update(p, t).compute()
    assert_close(ours, tm_value(p, t, num_classes=C, distance_metric=distance_metric, spacing=listed,
                                input_format="index"))
    assert_close(ours, oracle(p, t, distance_metric=distance_metric, spacing=listed))


def test_a_class_missed_on_one_side_is_infinitely_far_as_in_torchmetrics() -> None:
    p, t = blobs(seed=4, every_class=True)
    p[3][p[3] == 2] = 0  # sample 3 predicts no class 2
    t[5][t[5] == 1] = 0  # sample 5 has no class 1, but predicts it
    for directed in (False, True):
        ours = HausdorffDistance(C, directed=directed, input_format="index").update(p, t).compute()
        assert ours.item() == math.inf
        assert tm_value(p, t, num_classes=C, directed=directed, input_format="index").item() == math.inf
        per_pair = tmf.hausdorff_distance(p, t, C, directed=directed, input_format="index")
        assert per_pair.isinf().sum().item() == 2


def test_a_class_in_neither_mask_is_left_out_where_torchmetrics_raises() -> None:
    p, t = blobs(seed=5, every_class=True)
    p[2][p[2] == 3] = 0
    t[2][t[2] == 3] = 0
    with warnings.catch_warnings(), pytest.raises(RuntimeError):
        warnings.simplefilter("ignore")
        tmf.hausdorff_distance(p, t, C, input_format="index")
    m = HausdorffDistance(C, input_format="index").update(p, t)
    assert m.count.tolist() == [N, N, N - 1]
    rest = torch.arange(N) != 2
    per_pair = tmf.hausdorff_distance(p[rest], t[rest], C, input_format="index")
    first = tmf.hausdorff_distance(p[2:3], t[2:3], 3, input_format="index")  # classes 1 and 2 of sample 2
    expected = (per_pair.sum() + first.sum()) / (per_pair.numel() + first.numel())
    assert_close(m.compute(), expected)


# -- SciPy and scikit-image: where TorchMetrics cannot go (non-square images, volumes, empty masks) ------------


def test_scikit_image_agrees_on_one_pair() -> None:
    skm = pytest.importorskip("skimage.metrics")
    p, t = blobs(n=1, seed=6, present=1.0, every_class=True)
    structure = ndimage.generate_binary_structure(2, 1)
    edge = [m & ~ndimage.binary_erosion(m, structure=structure, border_value=0) for m in
            ((p[0] == 2).numpy(), (t[0] == 2).numpy())]
    ours = HausdorffDistance(C, input_format="index").update((p == 2).long(), (t == 2).long()).compute()
    assert_close(ours, skm.hausdorff_distance(*edge))


@pytest.mark.parametrize("shape", [(9, 14), (15, 6), (5, 6, 7), (1, 10), (20,)])
@pytest.mark.parametrize("distance_metric", METRICS)
def test_any_shape_equals_scipy(shape: tuple[int, ...], distance_metric: str) -> None:
    p, t = blobs(seed=7, shape=shape, present=0.7)
    for directed in (False, True):
        for spacing in (None, [0.5 + k for k in range(len(shape))]):
            ours = HausdorffDistance(C, True, distance_metric, spacing, directed, "index").update(p, t).compute()
            assert_close(ours, oracle(p, t, include_background=True, distance_metric=distance_metric,
                                      spacing=spacing, directed=directed))


def test_torchmetrics_is_wrong_on_non_square_images_and_we_are_not() -> None:
    p = torch.zeros(1, 4, 7, dtype=torch.long)
    t = torch.zeros_like(p)
    p[0, 0, 0], t[0, 3, 6] = 1, 1
    theirs = tmf.hausdorff_distance(p, t, 2, input_format="index")
    ours = HausdorffDistance(2, input_format="index").update(p, t).compute()
    assert_close(ours, math.hypot(3, 6))
    assert not torch.isclose(theirs.flatten()[0], ours)


def test_empty_masks_against_the_oracle() -> None:
    p, t = blobs(seed=8, present=0.5)  # many classes in neither mask of a sample
    pairs = oracle_pairs(p, t)
    assert len(pairs) < N * (C - 1) and all(math.isfinite(d) for d in pairs)
    m = HausdorffDistance(C, input_format="index").update(p, t)
    assert int(m.count.sum()) == len(pairs)
    assert_close(m.compute(), float(np.mean(pairs)))


# -- any split of the samples, empty shards and empty masks included ------------------------------------------

SHARDED = [
    ("euclidean", lambda: HausdorffDistance(C, input_format="index"), dict(present=0.6)),
    ("chessboard-directed-bg", lambda: HausdorffDistance(C, True, "chessboard", None, True, "index"),
     dict(present=0.6)),
    ("taxicab-spacing-onehot", lambda: HausdorffDistance(C, False, "taxicab", [0.5, 1.5]), dict(present=0.9)),
    ("missed-inf", lambda: HausdorffDistance(C, input_format="index"), dict(present=0.8, missed=0.1)),
]


@pytest.mark.parametrize(("name", "make", "data"), SHARDED, ids=[s[0] for s in SHARDED])
def test_any_split_gives_the_single_process_value(name: str, make: Any, data: dict[str, Any]) -> None:
    p, t = blobs(n=16, seed=9, **data)
    m = make()
    expected = oracle(p, t, include_background=m.include_background, distance_metric=m.distance_metric,
                      spacing=m.spacing, directed=m.directed)
    assert math.isinf(expected) == (name == "missed-inf")
    if m.input_format == "one-hot":
        p, t = one_hot(p), one_hot(t)
    for seed in (0, 1):
        check_sharded(m, (p, t), expected, seed=seed)


def test_any_split_in_gloo(world: Any) -> None:
    p, t = blobs(n=10, seed=10, present=0.6)
    metric = sm.Collection(hd=HausdorffDistance(C, input_format="index"),
                           hd_directed=HausdorffDistance(C, True, "taxicab", directed=True, input_format="index"))
    expected = metric.update(p, t).compute()
    assert_close(expected["hd"], oracle(p, t))
    check_sharded(metric, (p, t), expected, seed=3, world_sizes=(2,), world=world)


def test_mask_leaves_samples_out() -> None:
    p, t = blobs(seed=11)
    keep = torch.arange(N) % 3 != 0
    m = HausdorffDistance(C, input_format="index")
    assert_close(m.update(p, t, mask=keep).compute(), m.update(p[keep], t[keep]).compute())


def test_state_and_empty_value() -> None:
    m = HausdorffDistance(5, include_background=True)
    assert {k: (v.dtype, tuple(v.shape)) for k, v in m.state_dict().items()} == {
        "score": (torch.float64, (5,)), "count": (torch.int64, (5,))}
    with pytest.warns(UserWarning, match="HausdorffDistance"):
        assert torch.isnan(m.compute())
    assert HausdorffDistance(1).score.shape == (1,)  # background kept when it is the only class, as TorchMetrics


# -- bad input ------------------------------------------------------------------------------------------------

BAD = [
    ("preds_list", lambda p, t: (p.tolist(), t), TypeError, "preds"),
    ("label_out_of_range", lambda p, t: (p, t.clone().fill_(C)), ValueError, "target"),
    ("negative_label", lambda p, t: (p.clone().fill_(-1), t), ValueError, "preds"),
    ("fractional_label", lambda p, t: (p.float() + 0.5, t), ValueError, "preds"),
    ("shape_mismatch", lambda p, t: (p[:, :3], t), ValueError, "preds"),
    ("volume_for_2d_spacing", lambda p, t: (p[..., None], t[..., None]), ValueError, "spacing"),
]


@pytest.mark.parametrize(("name", "bad", "error", "arg"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_and_leaves_the_metric_unchanged(name: str, bad: Any, error: type, arg: str) -> None:
    p, t = blobs(n=4, seed=12)
    m = HausdorffDistance(C, spacing=[1.0, 2.0], input_format="index").update(p, t)
    before = state_of(m)
    with pytest.raises(error) as info:
        m.update(*bad(p, t))
    assert "HausdorffDistance" in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))


def test_bad_one_hot_is_refused() -> None:
    p, t = inputs("one-hot", *blobs(n=4, seed=13))
    with pytest.raises(ValueError, match="HausdorffDistance.update: argument `preds` one-hot values must be 0 or 1"):
        HausdorffDistance(C).update(p * 2, t)


@pytest.mark.parametrize(("make", "error", "needle"), [
    (lambda: HausdorffDistance(0), ValueError, "argument `num_classes` must be at least 1"),
    (lambda: HausdorffDistance(2.0), TypeError, "argument `num_classes` must be an int"),
    (lambda: HausdorffDistance(3, distance_metric="cosine"), ValueError, "argument `distance_metric` must be one of"),
    (lambda: HausdorffDistance(3, directed=1), TypeError, "argument `directed` must be a bool"),
    (lambda: HausdorffDistance(3, spacing=[1.0, 0.0]), ValueError, "argument `spacing` must hold positive finite"),
    (lambda: HausdorffDistance(3, spacing=[]), ValueError, "argument `spacing` must hold positive finite"),
    (lambda: HausdorffDistance(3, spacing=1.0), TypeError, "argument `spacing` must be a list, tuple or tensor"),
    (lambda: HausdorffDistance(3, spacing=["a"]), TypeError, "argument `spacing` must be a list, tuple or tensor"),
    (lambda: HausdorffDistance(3, spacing=torch.ones(2, 2)), ValueError, "argument `spacing` must be a 1-d"),
    (lambda: HausdorffDistance(3, input_format="onehot"), ValueError, "argument `input_format` must be one of"),
], ids=["zero", "float", "metric", "directed", "zero_spacing", "empty_spacing", "scalar_spacing", "str_spacing",
        "2d_spacing", "format"])
def test_bad_configuration_is_refused(make: Any, error: type, needle: str) -> None:
    with pytest.raises(error, match="HausdorffDistance: " + needle):
        make()


def test_configuration_is_one_canonical_form() -> None:
    a = HausdorffDistance(C, spacing=[1, 2])
    b = HausdorffDistance(C, spacing=torch.tensor([1.0, 2.0]))
    assert a.spacing == b.spacing == (1.0, 2.0)
    p, t = blobs(n=4, seed=14)
    a.replace(input_format="index").update(p, t).merge(b.replace(input_format="index").update(p, t))
    assert a.reset().spacing == (1.0, 2.0)


def test_positional_arguments_follow_torchmetrics() -> None:
    theirs = [n for n in inspect.signature(tms.HausdorffDistance.__init__).parameters if n not in ("self", "kwargs")]
    ours = list(inspect.signature(HausdorffDistance.__init__).parameters)[1:]
    assert ours[: len(theirs)] == theirs
