"""Aggregation values against TorchMetrics' aggregators: NaN strategies element by element, weights, list inputs."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from shards import assert_close

import scopedmetrics as sm

tma = pytest.importorskip("torchmetrics.aggregation")

NAN = float("nan")
PAIRS = {
    "Sum": (sm.Sum, tma.SumMetric),
    "Mean": (sm.Mean, tma.MeanMetric),
    "Max": (sm.Max, tma.MaxMetric),
    "Min": (sm.Min, tma.MinMetric),
    "Cat": (sm.Cat, tma.CatMetric),
}
STRATEGIES = ["ignore", "warn", 0.0, 2.5, "disable"]


def run(name: str, batches: list[tuple[Any, ...]], **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Our and TorchMetrics' value after the same updates (warnings silenced: both warn on NaN)."""
    ours_cls, theirs_cls = PAIRS[name]
    ours, theirs = ours_cls(**kwargs), theirs_cls(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for batch in batches:
            ours = ours.update(*batch)
            theirs.update(*(b.clone() if isinstance(b, torch.Tensor) else b for b in batch))  # it fills in place
        with sm.use_reducer(sm.local()):
            return ours.compute(), theirs.compute()


def with_nans(seed: int, shape: tuple[int, ...], share: float = 0.25) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    return x.masked_fill(torch.rand(shape, generator=g) < share, NAN)


# -- the example ----------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["ignore", "warn"])
def test_a_nan_drops_the_element_not_the_row(strategy: str) -> None:
    x = torch.tensor([[1.0, NAN, 10.0], [4.0, 5.0, 6.0]])
    expected = {"Sum": 26.0, "Mean": 5.2, "Max": 10.0, "Min": 1.0}
    for name, value in expected.items():
        ours, theirs = run(name, [(x,)], nan_strategy=strategy)
        assert_close(ours, torch.tensor(value))
        assert_close(ours, theirs)
    ours, theirs = run("Cat", [(x,)], nan_strategy=strategy)
    assert ours.tolist() == [1.0, 10.0, 4.0, 5.0, 6.0]  # TorchMetrics' CatMetric keeps the elements, flattened
    assert_close(ours, theirs)


def test_warn_warns_and_ignore_is_silent() -> None:
    x = torch.tensor([1.0, NAN])
    with pytest.warns(UserWarning, match=r"Sum.update: dropping NaN values from value"):
        sm.Sum().update(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm.Sum(nan_strategy="ignore").update(x)


# -- random data, every strategy ---------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES, ids=str)
@pytest.mark.parametrize("name", list(PAIRS))
@pytest.mark.parametrize("shape", [(7,), (4, 3), (2, 3, 2)], ids=str)
def test_values_match_torchmetrics(name: str, strategy: Any, shape: tuple[int, ...]) -> None:
    batches = [(with_nans(seed, shape),) for seed in range(3)]
    if name == "Cat" and strategy in ("ignore", "warn") and len(shape) > 1:
        batches = batches[:1]  # flattened survivors of several N-d batches cannot be joined, in either library
    ours, theirs = run(name, batches, nan_strategy=strategy)
    assert_close(ours, theirs)


@pytest.mark.parametrize("strategy", ["ignore", "warn", 0.0, 3.0], ids=str)
@pytest.mark.parametrize(
    "weight_shape", [None, (), (4, 3), (3,), (4, 1)], ids=["unweighted", "scalar", "same", "row", "column"]
)
def test_mean_drops_or_fills_a_value_with_its_weight_after_broadcasting(
    strategy: Any, weight_shape: tuple[int, ...] | None
) -> None:
    g = torch.Generator().manual_seed(1)
    batches: list[tuple[Any, ...]] = []
    for seed in range(3):
        value = with_nans(10 + seed, (4, 3))
        if weight_shape is None:
            batches.append((value,))
            continue
        weight = torch.rand(weight_shape, generator=g) + 0.1
        if weight.ndim:
            weight = weight.masked_fill(torch.rand(weight_shape, generator=g) < 0.2, NAN)
        batches.append((value, weight))
    ours, theirs = run("Mean", batches, nan_strategy=strategy)
    if isinstance(strategy, float) and weight_shape not in (None, (4, 3)):
        # TorchMetrics 1.9 writes the filled weight 1 through the broadcast view, into every element sharing it
        # (a documented difference); ours fills the NaN's own position, as an unbroadcast weight would be
        theirs = explicit_mean(batches, strategy)
    assert_close(ours, theirs)


def explicit_mean(batches: list[tuple[Any, ...]], fill: float) -> torch.Tensor:
    """Weighted mean with a value filled where it or its weight is NaN, and weight 1 there."""
    total, weights = torch.tensor(0.0), torch.tensor(0.0)
    for value, weight in batches:
        weight = torch.broadcast_to(weight, value.shape)
        bad = value.isnan() | weight.isnan()
        value, weight = value.masked_fill(bad, fill), weight.masked_fill(bad, 1.0)
        total, weights = total + (value * weight).sum(), weights + weight.sum()
    return total / weights


def test_mean_keeps_its_weights_with_nan_strategy_disable() -> None:
    """TorchMetrics 1.9 replaces the weights by ones under "disable" (a documented difference): we keep them."""
    value, weight = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([3.0, 1.0, 2.0])
    ours = sm.Mean(nan_strategy="disable").update(value, weight).compute()
    assert_close(ours, (value * weight).sum() / weight.sum())


def test_nan_strategy_error_refuses_value_and_weight() -> None:
    with pytest.raises(ValueError, match=r"Mean.update: weight contains NaN \(nan_strategy='error'\)"):
        sm.Mean(nan_strategy="error").update(torch.ones(2), torch.tensor([1.0, NAN]))
    with pytest.raises(ValueError, match=r"Max.update: value contains NaN"):
        sm.Max(nan_strategy="error").update([1.0, NAN])


def test_element_dropping_holds_on_any_split() -> None:
    x = with_nans(20, (9, 4))

    def rank_fn(rank: int) -> torch.Tensor:
        m = sm.Mean(nan_strategy="ignore").update(x[rank * 4 : (rank + 1) * 4])  # rank 2 gets one row
        return m.compute()

    values = sm.simulate(rank_fn, 3)
    assert_close(values[0], x[~x.isnan()].mean())
    assert all(torch.equal(v, values[0]) for v in values)


# -- Python lists, tuples, numbers and arrays ---------------------------------------------

VALUES = [
    pytest.param([1, 2, 3], id="list_of_ints"),
    pytest.param([[1.5, 2.0], [3.0, -4.0]], id="nested_list"),
    pytest.param((1.0, 2.0, 5.0), id="tuple"),
    pytest.param(3, id="int"),
    pytest.param(2.5, id="float"),
    pytest.param(True, id="bool"),
    pytest.param([torch.tensor(1.0), torch.tensor(2.0)], id="list_of_0d_tensors"),
    pytest.param(np.array([[1.0, 2.0], [0.5, 4.0]]), id="numpy"),
    pytest.param([], id="empty_list"),
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("name", list(PAIRS))
def test_lists_and_numbers_are_values(name: str, value: Any) -> None:
    if name == "Cat" and isinstance(value, list) and not value:  # a documented difference, checked as such
        ours, theirs = run(name, [(value,), (value,)])
        assert isinstance(ours, torch.Tensor) and ours.shape == (0,) and theirs == []
        return
    batches = [(value,), (value,)] if name != "Cat" or np.ndim(value) <= 1 else [(value,)]
    ours, theirs = run(name, batches)
    assert_close(ours, theirs)
    if name == "Cat":
        assert ours.dtype == theirs.dtype == torch.float32


def test_mean_takes_list_weights() -> None:
    ours, theirs = run("Mean", [([1, 2, 3], [1, 0, 1]), ([[1.0, 2.0]], [2.0, 1.0])])
    assert_close(ours, theirs)


@pytest.mark.parametrize("name", list(PAIRS))
def test_ragged_or_non_numeric_lists_are_refused_naming_the_metric(name: str) -> None:
    cls = PAIRS[name][0]
    for bad in ([1, [2, 3]], ["a", "b"], [None]):
        with pytest.raises(TypeError, match=rf"{name}\.update: value must be a tensor, a number or a \(nested\) list"):
            cls().update(bad)


@pytest.mark.parametrize(("first", "later", "kept"), [
    (torch.tensor([1, 2], dtype=torch.int8), torch.tensor([300, 1000]), None),  # wrapped to 44, -24
    (torch.tensor([1], dtype=torch.int8), torch.tensor([200], dtype=torch.uint8), None),  # -56
    (torch.tensor([1], dtype=torch.uint8), torch.tensor([-1], dtype=torch.int8), None),  # 255
    (torch.tensor([1.0], dtype=torch.float16), torch.tensor([1e5], dtype=torch.float64), None),  # inf
    (torch.tensor([1.0], dtype=torch.float16), 100_000, None),  # an integer: promotion said float16 holds it
    (torch.tensor([1.0], dtype=torch.float16), torch.tensor([3]), [1.0, 3.0]),
    (torch.tensor([1, 2], dtype=torch.int8), torch.tensor([3, -4]), [1, 2, 3, -4]),  # fits: kept
    (torch.tensor([1], dtype=torch.int32), 5, [1, 5]),
    (torch.tensor([1.0]), torch.tensor([0.5], dtype=torch.float64), [1.0, 0.5]),  # rounds, as float32 rows do
])
def test_cat_refuses_later_values_its_rows_cannot_hold(
    first: torch.Tensor, later: Any, kept: list[float] | None
) -> None:
    # torch.can_cast compares kinds only: these were stored wrapped or as inf without an error
    m = sm.Cat().update(first)
    if kept is None:
        with pytest.raises(ValueError, match="Cat.update: value holds numbers that .* rows"):
            m.update(later)
        assert torch.equal(m.compute(), first)
    else:
        got = m.update(later).compute()
        assert got.dtype == first.dtype and got.tolist() == kept


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_sums_of_inputs_the_state_cannot_hold_are_taken_in_their_own_precision(dtype: torch.dtype) -> None:
    # each value was cast to the float32 state first: 1e8 + 0.5 - 1e8 + 3.25 summed to 3.25 (TorchMetrics: 3.25)
    if dtype.is_floating_point:
        x, w = torch.tensor([1e8 + 0.5, -1e8, 3.25], dtype=dtype), torch.tensor([1.0, 1.0, 2.0], dtype=dtype)
    else:
        x, w = torch.tensor([2**25 + 1, -(2**25), 3], dtype=dtype), torch.tensor([1, 1, 2], dtype=dtype)
    xd, wd = x.double(), w.double()
    total = sm.Sum().update(x[:2]).update(x[2:])
    assert total.sum_value.dtype == torch.float32 and total.compute().item() == xd.sum().item()
    assert sm.Mean().update(x).compute().item() == pytest.approx((xd.sum() / 3).item(), rel=1e-7)
    weighted = sm.Mean().update(x, weight=w).compute().item()
    assert weighted == pytest.approx(((xd * wd).sum() / wd.sum()).item(), rel=1e-7)


def test_mask_cuts_numpy_values_and_a_weight_broadcast_to_the_values() -> None:
    # a NumPy value passed the mask whole (Mean 11.0 for 1.5), and a (d,) weight of (N, d) values was cut as rows
    keep = torch.tensor([True, True, False])
    for cls, want in ((sm.Mean, 1.5), (sm.Sum, 3.0), (sm.Max, 2.0), (sm.Min, 1.0)):
        assert cls().update(np.array([1.0, 2.0, 30.0]), mask=keep).compute().item() == want, cls.__name__
    assert sm.Cat().update(np.array([1.0, 2.0, 30.0]), mask=keep).compute().tolist() == [1.0, 2.0]
    two = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = sm.Mean().update(two, weight=torch.tensor([1.0, 3.0]), mask=torch.tensor([True, False])).compute()
    assert got.item() == (1 * 1 + 2 * 3) / 4
    rows = sm.Mean().update(two, weight=torch.tensor([[1.0], [5.0]]), mask=torch.tensor([False, True])).compute()
    assert rows.item() == 3.5
    with pytest.raises(ValueError, match="Sum.update: mask covers 2 rows but no argument has rows along dim 0"):
        sm.Sum().update(5.0, mask=torch.tensor([True, False]))


def test_a_mask_that_keeps_nothing_still_has_the_batch_s_length() -> None:
    # an all-False mask returned before its length was checked: a mask of 1 row for a batch of 2 passed
    for m in (sm.Mean(), sm.Sum(), sm.classification.MulticlassAccuracy(3)):
        args = (torch.tensor([2, 2]), torch.tensor([1, 1])) if isinstance(m, sm.classification.MulticlassAccuracy) \
            else (torch.tensor([2.0, 2.0]),)
        with pytest.raises(ValueError, match=r"mask covers 1 rows but argument 0 has 2 along dim 0"):
            m.update(*args, mask=torch.tensor([False]))
        assert m.update(*args, mask=torch.tensor([False, False])) is m
