"""The algebra, as properties: merge is associative, reset() is its identity, cat keeps rank order,
and any split of a data set reduces to the single-process value and to the merge fold."""

from __future__ import annotations

from collections.abc import Callable

import optree
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scopedmetrics as sm
from scopedmetrics.regression import MeanSquaredError, PearsonCorrCoef

FACTORIES: dict[str, Callable[[], sm.Metric]] = {
    "sum": sm.Sum,
    "mean": sm.Mean,
    "max": sm.Max,
    "min": sm.Min,
    "cat": sm.Cat,
    "mse": MeanSquaredError,
    "pearson": PearsonCorrCoef,  # a whole-state merge
}

values = st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=0, max_size=12)


def feed(m: sm.Metric, xs: list[float]) -> sm.Metric:
    x = torch.tensor(xs, dtype=torch.float32)
    if isinstance(m, (MeanSquaredError, PearsonCorrCoef)):
        return m.update(x, x * 0.5 + 1.0) if xs else m
    return m.update(x) if xs else m


def same(a: sm.Metric, b: sm.Metric) -> None:
    assert optree.tree_structure(a, namespace=sm.NAMESPACE) == optree.tree_structure(b, namespace=sm.NAMESPACE)
    for x, y in zip(optree.tree_leaves(a, namespace=sm.NAMESPACE), optree.tree_leaves(b, namespace=sm.NAMESPACE)):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-3, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(FACTORIES)), values, values, values)
def test_merge_is_associative(kind: str, xs: list[float], ys: list[float], zs: list[float]) -> None:
    a, b, c = (feed(FACTORIES[kind](), v) for v in (xs, ys, zs))
    same(a.merge(b).merge(c), a.merge(b.merge(c)))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(FACTORIES)), values)
def test_reset_is_the_identity_of_merge(kind: str, xs: list[float]) -> None:
    m = feed(FACTORIES[kind](), xs)
    same(m.merge(m.reset()), m)
    same(m.reset().merge(m), m)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_cat_keeps_rank_order(lengths: list[int]) -> None:
    def body(rank: int) -> torch.Tensor:
        rows = torch.full((lengths[rank], 2), float(rank))
        m = sm.Cat()
        return (m.update(rows) if lengths[rank] else m).compute()

    expected = torch.cat([torch.full((n, 2), float(r)) for r, n in enumerate(lengths)])
    for got in sm.simulate(body, len(lengths)):
        if expected.numel():
            assert torch.equal(got, expected)
        else:
            assert got.numel() == 0


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(sorted(FACTORIES)),
    st.lists(st.floats(-100, 100, allow_nan=False, width=32), min_size=2, max_size=40),
    st.lists(st.integers(0, 40), min_size=0, max_size=3),
)
def test_any_split_reduces_to_the_single_process_value(kind: str, xs: list[float], cuts: list[int]) -> None:
    bounds = [0, *sorted(min(c, len(xs)) for c in cuts), len(xs)]
    shards = [xs[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]  # empty shards happen
    with sm.use_reducer(sm.local()):
        whole = feed(FACTORIES[kind](), xs).compute()
        folded = FACTORIES[kind]()
        for s in shards:
            folded = folded.merge(feed(FACTORIES[kind](), s))
        torch.testing.assert_close(folded.compute(), whole, rtol=1e-4, atol=1e-3, equal_nan=True)
    reduced = sm.simulate(lambda r: feed(FACTORIES[kind](), shards[r]).compute(), len(shards))
    for v in reduced:
        torch.testing.assert_close(v, whole, rtol=1e-4, atol=1e-3, equal_nan=True)
