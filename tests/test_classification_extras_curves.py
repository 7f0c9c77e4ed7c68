"""Hinge loss, operating points and label ranking metrics against scikit-learn and TorchMetrics, over shards."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import sklearn.metrics as skm
import torch
import torchmetrics
import torchmetrics.classification as tmc
from shards import assert_close, check_sharded
from test_classification_curves import IGNORE, C, binary_data, columns, multiclass_data, multilabel_data, np_, sk_pr

import scopedmetrics as sm
import scopedmetrics.classification as smc

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
NAN = float("nan")


def torchmetrics_value(name: str, kwargs: dict[str, Any], *batches: tuple[torch.Tensor, torch.Tensor]) -> Any:
    ref = getattr(tmc, name)(**kwargs)
    for p, t in batches:
        ref.update(p, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ref.compute()


def local(m: sm.Metric, *batches: tuple[torch.Tensor, torch.Tensor]) -> Any:
    with sm.use_reducer(sm.local()):
        for p, t in batches:
            m = m.update(p, t)
        return m.compute()


# -- hinge loss -------------------------------------------------------------------


def hinge_data(seed: int, n: int = 70, multiclass: bool = False, logits: bool = True) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    if multiclass:
        preds = torch.randn(n, C, generator=g) * 2
        target = torch.randint(0, C, (n,), generator=g)
    else:
        preds = torch.randn(n, generator=g) * 2
        target = torch.randint(0, 2, (n,), generator=g)
    if not logits:
        preds = preds.sigmoid() if not multiclass else preds.softmax(1)
    target[torch.rand(n, generator=g) < 0.15] = IGNORE
    return preds, target


@pytest.mark.parametrize("logits", [True, False])
@pytest.mark.parametrize("ignore", [False, True])
def test_binary_hinge_matches_sklearn(ignore: bool, logits: bool) -> None:
    preds, target = hinge_data(1, logits=logits)
    if not ignore:
        target = target.clamp(min=0)
    keep = target != IGNORE
    p = preds[keep]
    p = p.sigmoid() if bool(((p < 0) | (p > 1)).any()) else p
    expected = skm.hinge_loss(2 * target[keep].numpy() - 1, np_(p))
    check_sharded(smc.BinaryHingeLoss(ignore_index=IGNORE if ignore else None), (preds, target),
                  np.float64(expected), seed=2)


def test_multiclass_crammer_singer_hinge_matches_sklearn() -> None:
    preds, target = hinge_data(3, multiclass=True)
    keep = target != IGNORE
    expected = skm.hinge_loss(target[keep].numpy(), np_(preds[keep].softmax(1)), labels=list(range(C)))
    check_sharded(smc.MulticlassHingeLoss(C, ignore_index=IGNORE), (preds, target), np.float64(expected), seed=4)


HINGE_VARIANTS = [
    ("BinaryHingeLoss", {}),
    ("BinaryHingeLoss", {"squared": True}),
    ("MulticlassHingeLoss", {"num_classes": C}),
    ("MulticlassHingeLoss", {"num_classes": C, "squared": True}),
    ("MulticlassHingeLoss", {"num_classes": C, "multiclass_mode": "one-vs-all"}),
    ("MulticlassHingeLoss", {"num_classes": C, "multiclass_mode": "one-vs-all", "squared": True}),
]


@pytest.mark.parametrize("logits", [True, False])
@pytest.mark.parametrize(("name", "kwargs"), HINGE_VARIANTS)
def test_hinge_matches_torchmetrics_over_shards(name: str, kwargs: dict[str, Any], logits: bool) -> None:
    data = hinge_data(5, multiclass=name.startswith("Multiclass"), logits=logits)
    kwargs = {**kwargs, "ignore_index": IGNORE}
    expected = torchmetrics_value(name, kwargs, data)
    check_sharded(getattr(smc, name)(**kwargs), data, expected, seed=6, world_sizes=(1, 3))


def test_hinge_logits_are_decided_per_batch_like_torchmetrics() -> None:
    a, b = hinge_data(7, logits=True), hinge_data(8, logits=False)
    for name, kwargs in HINGE_VARIANTS:
        mc = name.startswith("Multiclass")
        a, b = hinge_data(7, multiclass=mc), hinge_data(8, multiclass=mc, logits=False)
        assert_close(local(getattr(smc, name)(**kwargs, ignore_index=IGNORE), a, b),
                     torchmetrics_value(name, {**kwargs, "ignore_index": IGNORE}, a, b))


def test_hinge_states_are_sums_shaped_by_the_mode() -> None:
    assert smc.MulticlassHingeLoss(4).measures.shape == ()
    m = smc.MulticlassHingeLoss(4, multiclass_mode="one-vs-all")
    assert m.measures.shape == (4,) and m.measures.dtype == torch.float64 and m.total.dtype == torch.int64
    assert m._layout.ops == {"measures": "sum", "total": "sum"}
    assert torch.isnan(smc.BinaryHingeLoss().compute())  # 0 / 0, as TorchMetrics


def test_hinge_in_worlds(world: Any) -> None:
    data = hinge_data(9, multiclass=True)
    kwargs = {"num_classes": C, "multiclass_mode": "one-vs-all", "ignore_index": IGNORE}
    expected = torchmetrics_value("MulticlassHingeLoss", kwargs, data)
    check_sharded(smc.MulticlassHingeLoss(**kwargs), data, expected, seed=10, world_sizes=(2, 3), world=world)


# -- operating points ---------------------------------------------------------------

OPERATING = {  # stem -> (floor argument, curve the point is read from)
    "RecallAtFixedPrecision": ("min_precision", "pr"),
    "PrecisionAtFixedRecall": ("min_recall", "pr"),
    "SensitivityAtSpecificity": ("min_specificity", "roc"),
    "SpecificityAtSensitivity": ("min_sensitivity", "roc"),
}
FLOORS = [0.0, 0.437, 0.713, 1.0]  # not fractions of small counts: float32 and float64 rates compare alike


def lexmax(keys: list[np.ndarray], ok: np.ndarray) -> int | None:
    idx = np.flatnonzero(ok)
    if not len(idx):
        return None
    for k in keys:
        idx = idx[k[idx] == k[idx].max()]
    return int(idx[0])


def np_point(stem: str, y: np.ndarray, s: np.ndarray, floor: float) -> tuple[float, float]:
    """The operating point from scikit-learn's curve, by TorchMetrics' selection rule."""
    if OPERATING[stem][1] == "pr":
        p, r, t = sk_pr(y, s)
        p, r = p[: len(t)], r[: len(t)]
        if stem == "RecallAtFixedPrecision":
            best = lexmax([r, p, t], p >= floor)
            value = 0.0 if best is None else r[best]
        else:
            best = lexmax([p, r, t], r >= floor)
            value = 0.0 if best is None else p[best]
        return (0.0, NAN) if best is None or value == 0 else (value, t[best])
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
    thr[0] = 1.0
    value, other = (tpr, 1 - fpr) if stem == "SensitivityAtSpecificity" else (1 - fpr, tpr)
    ok = np.flatnonzero(other >= floor)
    if not len(ok):
        return 0.0, 1e6
    best = ok[np.argmax(value[ok])]
    return value[best], thr[best]


def op_kwargs(task: str, stem: str, floor: float, **extra: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {OPERATING[stem][0]: floor, **extra}
    if task == "Multiclass":
        kwargs["num_classes"] = C
    if task == "Multilabel":
        kwargs["num_labels"] = C
    return kwargs


@pytest.mark.parametrize("floor", FLOORS)
@pytest.mark.parametrize("stem", list(OPERATING))
def test_binary_operating_point_matches_sklearn_curves(stem: str, floor: float) -> None:
    preds, target = binary_data(11, ignore=True)
    keep = target != IGNORE
    expected = np_point(stem, np_(target[keep]), np_(preds[keep]), floor)
    metric = getattr(smc, f"Binary{stem}")(floor, ignore_index=IGNORE)
    check_sharded(metric, (preds, target), tuple(np.float64(v) for v in expected), seed=12)


@pytest.mark.parametrize("floor", FLOORS[1:3])
@pytest.mark.parametrize("task", ["Multiclass", "Multilabel"])
@pytest.mark.parametrize("stem", list(OPERATING))
def test_per_column_operating_points_match_sklearn_curves(stem: str, task: str, floor: float) -> None:
    multiclass = task == "Multiclass"
    preds, target = (multiclass_data if multiclass else multilabel_data)(13, ignore=True)
    points = [np_point(stem, y, s, floor) for y, s in columns(preds, target, multiclass)]
    expected = (np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    metric = getattr(smc, f"{task}{stem}")(**op_kwargs(task, stem, floor, ignore_index=IGNORE))
    check_sharded(metric, (preds, target), expected, seed=14, world_sizes=(1, 3))


DATA = {"Binary": binary_data, "Multiclass": multiclass_data, "Multilabel": multilabel_data}


@pytest.mark.parametrize("thresholds", [None, 6, [0.1, 0.3, 0.5, 0.5, 0.8]], ids=["exact", "int", "list"])
@pytest.mark.parametrize("task", list(DATA))
@pytest.mark.parametrize("stem", list(OPERATING))
def test_operating_points_match_torchmetrics(stem: str, task: str, thresholds: Any) -> None:
    a, b = DATA[task](15, ignore=True), DATA[task](16, n=17, ignore=True)
    for floor in FLOORS:
        kwargs = op_kwargs(task, stem, floor, thresholds=thresholds, ignore_index=IGNORE)
        name = f"{task}{stem}"
        assert_close(local(getattr(smc, name)(**kwargs), a, b), torchmetrics_value(name, kwargs, a, b))


@pytest.mark.parametrize("thresholds", [None, 7])
@pytest.mark.parametrize("stem", list(OPERATING))
def test_binned_and_exact_operating_points_over_shards(stem: str, thresholds: int | None) -> None:
    preds, target = multilabel_data(17, ignore=True)
    kwargs = op_kwargs("Multilabel", stem, 0.437, thresholds=thresholds, ignore_index=IGNORE)
    expected = torchmetrics_value(f"Multilabel{stem}", kwargs, (preds, target))
    check_sharded(getattr(smc, f"Multilabel{stem}")(**kwargs), (preds, target), expected, seed=18)


def test_operating_point_in_worlds(world: Any) -> None:
    preds, target = binary_data(19, ignore=True)
    kwargs = {"min_precision": 0.437, "thresholds": 9, "ignore_index": IGNORE}
    expected = torchmetrics_value("BinaryRecallAtFixedPrecision", kwargs, (preds, target))
    check_sharded(smc.BinaryRecallAtFixedPrecision(**kwargs), (preds, target), expected, seed=20,
                  world_sizes=(2, 3), world=world)


def test_operating_points_share_the_curve_state() -> None:
    curve = smc.MulticlassPrecisionRecallCurve(C, thresholds=5)
    point = smc.MulticlassRecallAtFixedPrecision(C, 0.5, thresholds=5)
    data = multiclass_data(21)
    assert curve.update(*data).state_dict().keys() == point.update(*data).state_dict().keys()
    assert torch.equal(curve.update(*data).counts, point.update(*data).counts)


def test_a_column_without_positives_is_nan_where_torchmetrics_raises() -> None:
    preds, target = multilabel_data(22)
    target = target.clone()
    target[:, 1] = 0
    value, threshold = local(smc.MultilabelRecallAtFixedPrecision(C, 0.0, thresholds=5), (preds, target))
    assert value[1].isnan() and threshold[1].isnan() and not value[0].isnan()
    with pytest.raises(IndexError):
        torchmetrics_value("MultilabelRecallAtFixedPrecision",
                           {"num_labels": C, "min_precision": 0.0, "thresholds": 5}, (preds, target))


def test_empty_operating_points_are_values_not_errors() -> None:
    for thresholds in (None, 5):
        for stem in OPERATING:
            value, threshold = getattr(smc, f"Binary{stem}")(0.5, thresholds=thresholds).compute()
            assert float(value) == 0.0  # nothing reaches a floor, or the empty curve's only point has rate 0
            if thresholds is not None:  # TorchMetrics' exact state cannot be computed empty
                theirs = torchmetrics_value(f"Binary{stem}", {OPERATING[stem][0]: 0.5, "thresholds": 5})
                assert_close((value, threshold), theirs)


# -- label ranking ----------------------------------------------------------------

RANKING = {
    "MultilabelCoverageError": skm.coverage_error,
    "MultilabelRankingAveragePrecision": skm.label_ranking_average_precision_score,
    "MultilabelRankingLoss": skm.label_ranking_loss,
}


def ranking_data(seed: int, n: int = 80, tied: bool = True, ignore: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    preds = torch.randint(0, 4, (n, 5), generator=g).float() / 3 if tied else torch.rand(n, 5, generator=g)
    target = torch.randint(0, 2, (n, 5), generator=g)
    target[:3] = torch.tensor([[0] * 5, [1] * 5, [1, 0, 0, 0, 0]])  # no relevant label, all relevant, one
    if ignore:
        target[torch.rand(n, 5, generator=g) < 0.2] = IGNORE
        target[3] = IGNORE  # a sample with every label ignored: not counted
    return preds, target


def sk_per_row(score: Callable[..., float], preds: torch.Tensor, target: torch.Tensor) -> float:
    """scikit-learn on each sample's non-ignored labels, averaged over samples with any."""
    values = []
    for p, t in zip(preds, target):
        keep = t != IGNORE
        if keep.any():
            values.append(score(t[keep].numpy()[None], np_(p[keep])[None]))
    return float(np.mean(values))


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("name", list(RANKING))
def test_ranking_matches_sklearn_over_shards(name: str, tied: bool) -> None:
    preds, target = ranking_data(23, tied=tied)
    expected = RANKING[name](target.numpy(), np_(preds))
    check_sharded(getattr(smc, name)(5), (preds, target), np.float64(expected), seed=24)


@pytest.mark.parametrize("name", list(RANKING))
def test_ranking_ignore_index_drops_labels_from_the_sample(name: str) -> None:
    preds, target = ranking_data(25, ignore=True)
    expected = sk_per_row(RANKING[name], preds, target)
    check_sharded(getattr(smc, name)(5, ignore_index=IGNORE), (preds, target), np.float64(expected), seed=26,
                  world_sizes=(1, 3))


@pytest.mark.parametrize("name", list(RANKING))
def test_ranking_matches_torchmetrics_without_ties(name: str) -> None:
    a, b = ranking_data(27, tied=False), ranking_data(28, n=9, tied=False)
    logits = (a[0] * 8 - 4, a[1])  # logits: sigmoid first, as TorchMetrics
    for batches in ((a, b), (logits, b)):
        assert_close(local(getattr(smc, name)(5), *batches), torchmetrics_value(name, {"num_labels": 5}, *batches))


def test_ranking_extra_dimensions_are_samples() -> None:
    preds, target = ranking_data(29, n=12)
    wide_p, wide_t = preds.reshape(4, 3, 5).movedim(2, 1), target.reshape(4, 3, 5).movedim(2, 1)
    for name in RANKING:
        assert_close(local(getattr(smc, name)(5), (wide_p, wide_t)), local(getattr(smc, name)(5), (preds, target)))


def test_ranking_states() -> None:
    m = smc.MultilabelCoverageError(5).update(*ranking_data(30))
    assert m.measure.dtype == torch.int64 and m.total.dtype == torch.int64 and int(m.total) == 80
    r = smc.MultilabelRankingLoss(5)
    assert r.measure.dtype == torch.float64 and r._layout.ops == {"measure": "sum", "total": "sum"}
    assert torch.isnan(r.compute())


def test_ranking_in_worlds(world: Any) -> None:
    preds, target = ranking_data(31, ignore=True)
    expected = sk_per_row(skm.label_ranking_average_precision_score, preds, target)
    check_sharded(smc.MultilabelRankingAveragePrecision(5, ignore_index=IGNORE), (preds, target),
                  np.float64(expected), seed=32, world_sizes=(2, 3), world=world)


# -- configuration, bad input, signatures, dispatchers -----------------------------

ALL_NAMES = ["BinaryHingeLoss", "MulticlassHingeLoss", *RANKING,
             *[f"{t}{s}" for s in OPERATING for t in ("Binary", "Multiclass", "Multilabel")]]


def build(name: str, **kwargs: Any) -> sm.Metric:
    cls = getattr(smc, name)
    params = inspect.signature(cls).parameters
    base: dict[str, Any] = {k: v for k, v in (("num_classes", C), ("num_labels", C)) if k in params}
    base.update({f: 0.5 for f, _ in OPERATING.values() if f in params})
    return cls(**{**base, **kwargs})  # type: ignore[no-any-return]


def good_batch(name: str, n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    if name.startswith("Multiclass"):
        return multiclass_data(33, n=max(n, C))
    if name.startswith("Multilabel"):
        return multilabel_data(33, n=n)
    return binary_data(33, n=n)


BAD_CONFIGS = [
    ("BinaryHingeLoss", {"squared": 1}, TypeError, "squared"),
    ("BinaryHingeLoss", {"ignore_index": 0.5}, TypeError, "ignore_index"),
    ("MulticlassHingeLoss", {"num_classes": 1}, ValueError, "num_classes"),
    ("MulticlassHingeLoss", {"multiclass_mode": "ovr"}, ValueError, "multiclass_mode"),
    ("BinaryRecallAtFixedPrecision", {"min_precision": 1.5}, ValueError, "min_precision"),
    ("MulticlassPrecisionAtFixedRecall", {"min_recall": "high"}, TypeError, "min_recall"),
    ("MultilabelSensitivityAtSpecificity", {"min_specificity": -0.1}, ValueError, "min_specificity"),
    ("BinarySpecificityAtSensitivity", {"min_sensitivity": True}, TypeError, "min_sensitivity"),
    ("BinarySpecificityAtSensitivity", {"thresholds": [0.5, 0.1]}, ValueError, "thresholds"),
    ("MultilabelCoverageError", {"num_labels": 1}, ValueError, "num_labels"),
    ("MultilabelRankingLoss", {"validate_args": "no"}, TypeError, "validate_args"),
]


@pytest.mark.parametrize(("name", "kwargs", "error", "arg"), BAD_CONFIGS)
def test_bad_configuration_names_metric_and_argument(name: str, kwargs: dict[str, Any], error: type,
                                                     arg: str) -> None:
    with pytest.raises(error) as info:
        build(name, **kwargs)
    assert str(info.value).startswith(f"{name}: ") and f"`{arg}`" in str(info.value)


BAD_UPDATES = [
    ("BinaryHingeLoss", lambda p, t: (p.long(), t), TypeError, "preds"),
    ("BinaryHingeLoss", lambda p, t: (p, t + 2), ValueError, "target"),
    ("BinaryHingeLoss", lambda p, t: (p.index_fill(0, torch.tensor([0]), float("inf")), t), ValueError, "preds"),
    ("MulticlassHingeLoss", lambda p, t: (p[:, :2], t), ValueError, "preds"),
    ("MulticlassHingeLoss", lambda p, t: (p.index_fill(0, torch.tensor([0]), NAN), t), ValueError, "preds"),
    ("BinaryRecallAtFixedPrecision", lambda p, t: (p, t.float() + 0.5), TypeError, "target"),
    ("MultilabelPrecisionAtFixedRecall", lambda p, t: (p.long(), t), TypeError, "preds"),
    ("MultilabelCoverageError", lambda p, t: (p.long(), t), TypeError, "preds"),
    ("MultilabelRankingLoss", lambda p, t: (p[:, :2], t[:, :2]), ValueError, "preds"),
    ("MultilabelRankingAveragePrecision", lambda p, t: (p.index_fill(0, torch.tensor([0]), NAN), t), ValueError,
     "preds"),
]


@pytest.mark.parametrize(("name", "bad", "error", "arg"), BAD_UPDATES)
def test_bad_updates_name_metric_and_argument_and_leave_state(name: str, bad: Any, error: type, arg: str) -> None:
    m = build(name).update(*good_batch(name))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    with pytest.raises(error) as info:
        m.update(*bad(*good_batch(name)))
    assert name in str(info.value) and f"`{arg}`" in str(info.value)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())


@pytest.mark.parametrize("name", ALL_NAMES)
def test_positional_order_is_torchmetrics(name: str) -> None:
    theirs = [p.name for p in list(inspect.signature(getattr(tmc, name).__init__).parameters.values())[1:]
              if p.kind == p.POSITIONAL_OR_KEYWORD]
    ours = [p.name for p in inspect.signature(getattr(smc, name)).parameters.values()
            if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert ours[: len(theirs)] == theirs


DISPATCHERS = {
    "HingeLoss": [("binary", {"ignore_index": IGNORE}),
                  ("multiclass", {"num_classes": C, "multiclass_mode": "one-vs-all", "ignore_index": IGNORE})],
    **{stem: [("binary", {OPERATING[stem][0]: 0.437}),
              ("multiclass", {OPERATING[stem][0]: 0.437, "num_classes": C, "thresholds": 5}),
              ("multilabel", {OPERATING[stem][0]: 0.713, "num_labels": C})] for stem in OPERATING},
}


@pytest.mark.parametrize("name", list(DISPATCHERS))
def test_dispatchers_give_the_task_class_and_torchmetrics_values(name: str) -> None:
    for task, kwargs in DISPATCHERS[name]:
        ours = getattr(sm, name)(task, **kwargs)
        assert type(ours).__name__ == f"{task.capitalize()}{name}" and getattr(smc, name) is getattr(sm, name)
        data = hinge_data(34, multiclass=task == "multiclass") if name == "HingeLoss" else DATA[task.capitalize()](35)
        theirs = getattr(torchmetrics, name)(task, **kwargs)
        theirs.update(*data)
        assert_close(local(ours, data), theirs.compute())
        ours_params = [p.name for p in inspect.signature(getattr(smc, name)).parameters.values()]
        their_params = [p.name for p in inspect.signature(getattr(torchmetrics, name).__new__).parameters.values()]
        assert ours_params == their_params[1:]


def test_dispatchers_refuse_a_task_without_a_class() -> None:
    with pytest.raises(ValueError, match=r"HingeLoss: argument `task` must be one of \('binary', 'multiclass'\)"):
        smc.HingeLoss("multilabel", num_labels=3)
    with pytest.raises(ValueError, match="RecallAtFixedPrecision: argument `num_classes` must be an int"):
        smc.RecallAtFixedPrecision("multiclass", 0.5)
    m = smc.SpecificityAtSensitivity("multilabel", 0.5, 4, None, 3, -1, False)
    assert (m.num_labels, m.thresholds, m.ignore_index, m.validate_args) == (3, 4, -1, False)


def test_mask_leaves_out_rows_of_every_new_metric() -> None:
    for name in ALL_NAMES:
        preds, target = good_batch(name, n=12)
        keep = torch.arange(len(preds)) % 3 != 0
        masked = build(name).update(preds, target, mask=keep)
        assert_close(local(masked), local(build(name), (preds[keep], target[keep])))


def test_thresholds_are_normalized_on_the_way_in_for_subclasses_too() -> None:
    class Mine(smc.BinaryRecallAtFixedPrecision):
        pass

    m = Mine(min_precision=0.5, thresholds=torch.tensor([0.25, 0.5]))
    assert m.thresholds == (0.25, 0.5) and m.counts.shape == (3, 2)
    assert smc.MultilabelPrecisionAtFixedRecall(2, 0.5, [0.1, 0.9]).counts.shape == (2, 3, 2)
    assert m.reset().thresholds == (0.25, 0.5)
