"""Segmentation metrics against TorchMetrics 1.9 and scikit-learn, on any split of the samples."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from catalogue import assert_same_state, state_of
from shards import assert_close, check_sharded
from sklearn.metrics import f1_score, jaccard_score

import scopedmetrics as sm
from scopedmetrics.segmentation import DiceScore, GeneralizedDiceScore, MeanIoU

tms = pytest.importorskip("torchmetrics.segmentation")

C = 4
N = 24


def labels(n: int = N, seed: int = 0, shape: tuple[int, ...] = (6, 7)) -> tuple[torch.Tensor, torch.Tensor]:
    """Index preds and target; class 3 is rare and some samples lack some classes altogether."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, C - 1, (n, *shape), generator=g)
    target[torch.rand(target.shape, generator=g) < 0.03] = C - 1
    target[: n // 4] = target[: n // 4].clamp(max=1)  # a quarter of the samples hold classes 0 and 1 only
    noise = torch.randint(0, C, target.shape, generator=g)
    preds = torch.where(torch.rand(target.shape, generator=g) < 0.7, target, noise)
    return preds, target


def one_hot(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(x, C).movedim(-1, 1)


def scores_for(x: torch.Tensor, seed: int = 1) -> torch.Tensor:
    """Float scores whose argmax over dim 1 is ``x``."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand((x.shape[0], C, *x.shape[1:]), generator=g) + 2.0 * one_hot(x)


def inputs(fmt: str, p: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if fmt == "index":
        return p, t
    if fmt == "one-hot":
        return one_hot(p), one_hot(t)
    if fmt == "scores":
        return scores_for(p), one_hot(t)
    return scores_for(p), t  # mixed: scores and index


def fmt_arg(fmt: str) -> str:
    return {"scores": "one-hot"}.get(fmt, fmt)


def tm_value(tm_metric: Any, p: torch.Tensor, t: torch.Tensor, per_sample: bool = False) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if per_sample:
            for i in range(p.shape[0]):
                tm_metric.update(p[i : i + 1], t[i : i + 1])
        else:
            tm_metric.update(p, t)
        return tm_metric.compute()


# -- TorchMetrics' values -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["index", "one-hot", "scores", "mixed"])
@pytest.mark.parametrize("include_background", [True, False])
@pytest.mark.parametrize("per_class", [False, True])
def test_mean_iou_equals_torchmetrics(fmt: str, include_background: bool, per_class: bool) -> None:
    p, t = inputs(fmt, *labels())
    args = (C, include_background, per_class, fmt_arg(fmt))
    ours = MeanIoU(*args).update(p, t).compute()
    assert ours.dtype == torch.float32
    assert_close(ours, tm_value(tms.MeanIoU(*args), p, t))


def test_mean_iou_without_num_classes_reads_the_one_hot_width() -> None:
    p, t = inputs("one-hot", *labels())
    for per_class in (False, True):
        ours = MeanIoU(per_class=per_class).update(p[:10], t[:10]).update(p[10:], t[10:]).compute()
        assert_close(ours, tm_value(tms.MeanIoU(per_class=per_class), p, t))


@pytest.mark.parametrize("fmt", ["index", "scores", "mixed"])
@pytest.mark.parametrize("average", ["micro", "macro", "weighted", "none", None])
@pytest.mark.parametrize("aggregation_level", ["samplewise", "global"])
@pytest.mark.parametrize("include_background", [True, False])
def test_dice_equals_torchmetrics(fmt: str, average: Any, aggregation_level: str, include_background: bool) -> None:
    p, t = inputs(fmt, *labels(seed=3))
    args = (C, include_background, average, aggregation_level, fmt_arg(fmt))
    ours = DiceScore(*args).update(p[:9], t[:9]).update(p[9:], t[9:]).compute()
    assert_close(ours, tm_value(tms.DiceScore(*args), p, t))


@pytest.mark.parametrize("weight_type", ["square", "simple", "linear"])
@pytest.mark.parametrize("per_class", [False, True])
@pytest.mark.parametrize("include_background", [True, False])
def test_generalized_dice_equals_torchmetrics_fed_one_sample_at_a_time(
    weight_type: str, per_class: bool, include_background: bool
) -> None:
    p, t = labels(seed=5)
    args = (C, include_background, per_class, weight_type, "index")
    ours = GeneralizedDiceScore(*args).update(p, t).compute()
    assert_close(ours, tm_value(tms.GeneralizedDiceScore(*args), p, t, per_sample=True))


@pytest.mark.parametrize("weight_type", ["square", "simple", "linear"])
def test_generalized_dice_equals_torchmetrics_on_batches_when_every_class_is_in_every_target(weight_type: str) -> None:
    g = torch.Generator().manual_seed(6)
    t = torch.randint(0, C, (N, 8, 8), generator=g)
    t[:, 0, :C] = torch.arange(C)  # every class in every sample: no infinite weight to replace
    p = torch.where(torch.rand(t.shape, generator=g) < 0.6, t, torch.randint(0, C, t.shape, generator=g))
    for fmt in ("index", "scores"):
        pp, tt = inputs(fmt, p, t)
        args = (C, True, False, weight_type, fmt_arg(fmt))
        ours = GeneralizedDiceScore(*args).update(pp, tt).compute()
        assert_close(ours, tm_value(tms.GeneralizedDiceScore(*args), pp, tt))


def test_generalized_dice_does_not_depend_on_batching_where_torchmetrics_does() -> None:
    p, t = labels(seed=7)
    ours = [GeneralizedDiceScore(C, input_format="index").update(p[:k], t[:k]).update(p[k:], t[k:]).compute()
            for k in (1, 5, 12)]
    assert_close(ours[0], ours[1])
    assert_close(ours[0], ours[2])


def test_three_dimensional_volumes() -> None:
    p, t = labels(n=6, seed=8, shape=(3, 4, 5))
    for cls, args in ((MeanIoU, (C, True, True, "index")), (DiceScore, (C, True, "none", "samplewise", "index"))):
        assert_close(cls(*args).update(p, t).compute(), tm_value(getattr(tms, cls.__name__)(*args), p, t))


# -- scikit-learn's dataset-level values -------------------------------------------------------------


def test_global_values_equal_scikit_learn_on_the_pooled_pixels() -> None:
    p, t = labels(seed=9)
    flat_p, flat_t = p.flatten().numpy(), t.flatten().numpy()
    present = np.unique(np.concatenate([flat_p, flat_t]))
    assert present.tolist() == list(range(C))
    iou = jaccard_score(flat_t, flat_p, labels=list(range(C)), average=None, zero_division=0)
    dice = f1_score(flat_t, flat_p, labels=list(range(C)), average=None, zero_division=0)
    got = MeanIoU(C, per_class=True, input_format="index", aggregation_level="global").update(p, t).compute()
    assert_close(got, iou)
    got = MeanIoU(C, input_format="index", aggregation_level="global").update(p, t).compute()
    assert_close(got, float(np.mean(iou[present])))
    got = DiceScore(C, average="none", aggregation_level="global", input_format="index").update(p, t).compute()
    assert_close(got, dice)
    got = DiceScore(C, average="micro", aggregation_level="global", input_format="index").update(p, t).compute()
    assert_close(got, float((flat_p == flat_t).mean()))  # micro Dice over every class is pixel accuracy


def test_the_torchvision_drop_does_not_happen_here() -> None:
    """Per-rank mIoUs averaged (the bug torchvision once reported) differ; the reduced counts do not."""
    p, t = labels(seed=10)
    whole = MeanIoU(C, input_format="index", aggregation_level="global").update(p, t).compute()
    halves = [MeanIoU(C, input_format="index", aggregation_level="global").update(p[s], t[s]) for s in
              (slice(0, 4), slice(4, N))]
    averaged = sum(h.compute() for h in halves) / 2
    assert not torch.allclose(averaged, whole)
    got = sm.simulate(lambda r: halves[r].compute(), 2)
    assert_close(got[0], whole)


# -- any split of the samples, empty shards included -----------------------------------------------------

SHARDED = [
    ("miou", lambda: MeanIoU(C, input_format="index"), "index"),
    ("miou-per-class-nobg", lambda: MeanIoU(C, False, True, "index"), "index"),
    ("miou-global", lambda: MeanIoU(C, per_class=True, input_format="index", aggregation_level="global"), "index"),
    ("miou-no-num-classes", lambda: MeanIoU(per_class=True), "one-hot"),
    ("miou-no-num-classes-global", lambda: MeanIoU(aggregation_level="global"), "one-hot"),
    ("dice-weighted", lambda: DiceScore(C, average="weighted", input_format="mixed"), "mixed"),
    ("dice-none-global", lambda: DiceScore(C, average="none", aggregation_level="global"), "scores"),
    ("gdice-per-class", lambda: GeneralizedDiceScore(C, per_class=True, input_format="index"), "index"),
]


@pytest.mark.parametrize(("name", "make", "fmt"), SHARDED, ids=[s[0] for s in SHARDED])
def test_any_split_gives_the_single_process_value(name: str, make: Any, fmt: str) -> None:
    p, t = inputs(fmt, *labels(seed=11))
    expected = make().update(p, t).compute()
    for seed in (0, 1):
        check_sharded(make(), (p, t), expected, seed=seed)


def test_any_split_in_gloo(world: Any) -> None:
    p, t = labels(seed=12)
    metric = sm.Collection(miou=MeanIoU(C, per_class=True, input_format="index"),
                           dice=DiceScore(C, input_format="index"),
                           gdice=GeneralizedDiceScore(C, input_format="index"))
    expected = metric.update(p, t).compute()
    check_sharded(metric, (p, t), expected, seed=3, world_sizes=(2,), world=world)


def test_mask_leaves_samples_out() -> None:
    p, t = labels(seed=13)
    keep = torch.arange(N) % 3 != 0
    for m in (MeanIoU(C, input_format="index"), DiceScore(C, input_format="index"),
              GeneralizedDiceScore(C, input_format="index")):
        assert_close(m.update(p, t, mask=keep).compute(), m.update(p[keep], t[keep]).compute())


def test_empty_state_warns_and_is_nan() -> None:
    for m in (MeanIoU(C, input_format="index"), DiceScore(C), GeneralizedDiceScore(C)):
        with pytest.warns(UserWarning, match=type(m).__name__):
            assert torch.isnan(m.compute()).all()
    with pytest.warns(UserWarning):
        assert MeanIoU(C, per_class=True).compute().tolist() == [-1.0] * C


def test_state_is_small_and_integer_where_it_counts() -> None:
    m = MeanIoU(21, input_format="index", aggregation_level="global")
    assert {k: (v.dtype, tuple(v.shape)) for k, v in m.state_dict().items()} == {
        "sums.inter": (torch.int64, (21,)), "sums.union": (torch.int64, (21,))}
    d = DiceScore(21, average="none")
    assert {k: tuple(v.shape) for k, v in d.state_dict().items()} == {"sums.score": (21,), "sums.count": (21,)}


# -- bad input ------------------------------------------------------------------------------------------

BAD = [
    ("preds_list", lambda p, t: (p.tolist(), t), TypeError, "preds"),
    ("target_none", lambda p, t: (p, None), TypeError, "target"),
    ("complex", lambda p, t: (p.to(torch.complex64), t), TypeError, "preds"),
    ("label_out_of_range", lambda p, t: (p, t.clone().fill_(C)), ValueError, "target"),
    ("negative_label", lambda p, t: (p.clone().fill_(-1), t), ValueError, "preds"),
    ("fractional_label", lambda p, t: (p.float() + 0.5, t), ValueError, "preds"),
    ("bool_labels", lambda p, t: (p.bool(), t), TypeError, "preds"),
    ("shape_mismatch", lambda p, t: (p[:, :3], t), ValueError, "preds"),
    ("batch_mismatch", lambda p, t: (p[1:], t), ValueError, "preds"),
    ("no_pixel_dim", lambda p, t: (p[:, 0, 0], t[:, 0, 0]), ValueError, "preds"),
]


@pytest.mark.parametrize(("name", "bad", "error", "arg"), BAD, ids=[b[0] for b in BAD])
def test_bad_index_input_is_refused_and_leaves_the_metric_unchanged(name: str, bad: Any, error: type, arg: str) -> None:
    p, t = labels(n=4, seed=14)
    for m in (MeanIoU(C, input_format="index"), DiceScore(C, input_format="index"),
              GeneralizedDiceScore(C, input_format="index")):
        m = m.update(p, t)
        before = state_of(m)
        with pytest.raises(error) as info:
            m.update(*bad(p, t))
        assert type(m).__name__ in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
        assert_same_state(before, state_of(m))


@pytest.mark.parametrize(("bad", "error", "needle"), [
    (lambda p, t: (p * 2, t), ValueError, "`preds` one-hot values must be 0 or 1"),
    (lambda p, t: (p[:, :3], t), ValueError, "`preds` must have 4 classes along dim 1"),
    (lambda p, t: (p.float().masked_fill(p == 1, float("nan")), t), ValueError, "`preds` must be finite"),
    (lambda p, t: (p[:, 0, 0], t), ValueError, "`preds` must have shape (N, C, ...)"),
], ids=["not_binary", "wrong_width", "nan_scores", "index_given"])
def test_bad_one_hot_input_is_refused(bad: Any, error: type, needle: str) -> None:
    p, t = inputs("one-hot", *labels(n=4, seed=15))
    m = MeanIoU(C)
    with pytest.raises(error, match="MeanIoU.update") as info:
        m.update(*bad(p, t))
    assert needle in str(info.value), str(info.value)


def test_mixed_needs_one_of_each() -> None:
    p, t = labels(n=4, seed=16)
    with pytest.raises(ValueError, match="DiceScore.update: with input_format='mixed'"):
        DiceScore(C, input_format="mixed").update(p, t)


@pytest.mark.parametrize(("make", "error", "needle"), [
    (lambda: MeanIoU(input_format="index"), ValueError, "MeanIoU: argument `num_classes` must be given"),
    (lambda: MeanIoU(0), ValueError, "MeanIoU: argument `num_classes` must be at least 1"),
    (lambda: MeanIoU(2.0), TypeError, "MeanIoU: argument `num_classes` must be an int"),
    (lambda: MeanIoU(2, per_class="yes"), TypeError, "MeanIoU: argument `per_class` must be a bool"),
    (lambda: MeanIoU(2, input_format="onehot"), ValueError, "MeanIoU: argument `input_format` must be one of"),
    (lambda: MeanIoU(2, aggregation_level="dataset"), ValueError, "argument `aggregation_level`"),
    (lambda: DiceScore(3, average="samples"), ValueError, "DiceScore: argument `average` must be one of"),
    (lambda: DiceScore(3, include_background=1), TypeError, "DiceScore: argument `include_background`"),
    (lambda: GeneralizedDiceScore(3, weight_type="cubic"), ValueError, "argument `weight_type`"),
], ids=["index_no_classes", "zero_classes", "float_classes", "per_class", "format", "level", "average",
        "background", "weight_type"])
def test_bad_configuration_is_refused(make: Any, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_positional_arguments_follow_torchmetrics() -> None:
    import inspect

    for cls in (MeanIoU, DiceScore, GeneralizedDiceScore):
        theirs = [n for n in inspect.signature(getattr(tms, cls.__name__).__init__).parameters if n not in
                  ("self", "kwargs")]
        ours = list(inspect.signature(cls.__init__).parameters)[1:]
        assert ours[: len(theirs)] == theirs, (cls.__name__, ours, theirs)
