"""Every path of every kernel (counts, the stacked fold) equals its plain twin (``_kernels.reference``)."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close

import scopedmetrics as sm
from scopedmetrics import _kernels, tree
from scopedmetrics._kernels import counts as kernels
from scopedmetrics._kernels import folds, reference
from scopedmetrics.exchange import fold


def _batch(seed: int, n: int, high: int, masked: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, high, (n,), generator=g)
    return index, (torch.rand(n, generator=g) < 0.7) if masked else None


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 60), size=st.integers(1, 12), over=st.integers(0, 3), seed=st.integers(0, 2**16),
       masked=st.booleans())
def test_bincount_matches_its_twin(n: int, size: int, over: int, seed: int, masked: bool) -> None:
    index, keep = _batch(seed, n, size + over, masked)  # values past the end are dropped
    assert torch.equal(_kernels.bincount(index, size, keep), reference.bincount(index, size, keep))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 60), shape=st.sampled_from([(5,), (2, 3), (3, 2, 2)]), seed=st.integers(0, 2**16),
       masked=st.booleans(), large=st.booleans())
def test_tally_matches_its_twin_on_both_paths(n: int, shape: tuple[int, ...], seed: int, masked: bool,
                                              large: bool) -> None:
    counts = torch.randint(0, 9, shape)
    index, keep = _batch(seed, n, counts.numel(), masked)
    with pytest.MonkeyPatch.context() as patch:
        if large:  # the bincount pass, taken above INDEX_ADD_MAX samples
            patch.setattr(kernels, "INDEX_ADD_MAX", -1)
        got = _kernels.tally(counts, index, keep)
    assert torch.equal(got, reference.tally(counts, index, keep))


@pytest.mark.parametrize("large", [False, True])
def test_tally_takes_an_index_and_keep_of_any_shape_on_both_paths(large: bool) -> None:
    # the bincount path used to get the 2-d keep beside the flattened index (a binned multiclass curve with
    # ignore_index raised from 65,536 scores on the CPU, and on other devices from 2)
    g = torch.Generator().manual_seed(0)
    index, keep = torch.randint(0, 12, (40, 3), generator=g), torch.rand(40, 3, generator=g) < 0.6
    counts = torch.zeros(4, 3, dtype=torch.long)
    with pytest.MonkeyPatch.context() as patch:
        if large:
            patch.setattr(kernels, "INDEX_ADD_MAX", -1)
        got = _kernels.tally(counts, index, keep)
    assert torch.equal(got, reference.tally(counts, index, keep))


def test_tally_switches_to_bincount_past_the_threshold() -> None:
    index = torch.randint(0, 7, (kernels.INDEX_ADD_MAX + 1,))
    counts = torch.zeros(7, dtype=torch.long)
    assert torch.equal(_kernels.tally(counts, index), torch.bincount(index, minlength=7))


def test_tally_on_the_index_add_path_refuses_a_position_out_of_range() -> None:
    with pytest.raises(IndexError):
        _kernels.tally(torch.zeros(3, dtype=torch.long), torch.tensor([0, 3]))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 50), c=st.integers(2, 6), seed=st.integers(0, 2**16), masked=st.booleans())
def test_class_counts_every_path_matches_its_twin(n: int, c: int, seed: int, masked: bool) -> None:
    g = torch.Generator().manual_seed(seed)
    p, t = torch.randint(0, c, (n,), generator=g), torch.randint(0, c, (n,), generator=g)
    keep = torch.rand(n, generator=g) < 0.7 if masked else None
    old = torch.randint(0, 5, (c, 3), generator=g)
    want = reference.class_counts(old, p, t, keep, c)
    with pytest.MonkeyPatch.context() as patch:
        for confusion_min in (kernels.CONFUSION_MIN, 0):  # 0: n >= c * c counts the confusion matrix
            patch.setattr(kernels, "CONFUSION_MIN", confusion_min)
            for index_add in (True, False):  # CPU and other devices
                assert torch.equal(_kernels.class_counts(old, p, t, keep, c, index_add=index_add), want)
    for scored in (True, False):  # p of an argmax: one lookup in pairs (without keep, on the CPU)
        assert torch.equal(_kernels.class_counts(old, p, t, keep, c, scored=scored), want)
    if keep is not None:  # ignored samples may carry any label
        assert torch.equal(_kernels.class_counts(old, p, torch.where(keep, t, -7), keep, c), want)


@pytest.mark.parametrize("bad", [-4, -3, -1, 3, 4, 5, 6, 9])
@pytest.mark.parametrize("where", ["p_hit", "p_miss", "t"])
def test_class_counts_on_the_index_add_path_refuses_every_label_out_of_range(bad: int, where: str) -> None:
    # with rows (3, C), a miss predicted as c or c + 1 counted as the support of class 0 or 1: no error
    p, t = torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2])
    if where == "p_hit":
        p, t = torch.tensor([0, bad, 2]), torch.tensor([0, bad, 2])
    elif where == "p_miss":
        p = torch.tensor([0, bad, 2])
    else:
        t = torch.tensor([0, bad, 2])
    with pytest.raises(IndexError):
        _kernels.class_counts(torch.zeros(3, 3, dtype=torch.long), p, t, None, 3)
    if where == "t":  # a scored batch's predictions are in range; its targets are refused by the lookup
        with pytest.raises(IndexError):
            _kernels.class_counts(torch.zeros(3, 3, dtype=torch.long), p, t, None, 3, scored=True)


@pytest.mark.parametrize("c", [2, 10, kernels.PAIRS_MAX])
def test_class_counts_of_scored_batches_take_the_lookup_on_both_sides_of_its_bounds(c: int) -> None:
    g = torch.Generator().manual_seed(c)
    for n in (0, 1, kernels.PAIRS_ROWS - 1, kernels.PAIRS_ROWS):
        p, t = torch.randint(0, c, (n,), generator=g), torch.randint(0, c, (n,), generator=g)
        old = torch.randint(0, 5, (c, 3), generator=g)
        want = reference.class_counts(old, p, t, None, c)
        assert torch.equal(_kernels.class_counts(old, p, t, None, c, scored=True), want)
    assert kernels.pairs(c, torch.device("cpu")) is kernels.pairs(c, torch.device("cpu"))  # made once per c


def test_full_is_cached_per_size_and_bounded() -> None:
    cpu = torch.device("cpu")
    assert _kernels.full(4, 1, torch.long, cpu) is _kernels.full(4, 1, torch.long, cpu)
    assert torch.equal(_kernels.full(4, 2, torch.long, cpu), torch.full((4,), 2))
    for n in range(100):
        _kernels.full(n, 1, torch.int32, cpu)
    assert len(kernels._FULL) <= 64


_STACKING = {
    "pearson": lambda: sm.PearsonCorrCoef(num_outputs=2),
    "concordance": lambda: sm.ConcordanceCorrCoef(),
    "r2": lambda: sm.R2Score(num_outputs=3, multioutput="raw_values"),
    "explained": lambda: sm.ExplainedVariance(),
}


def _moment_states(name: str, p: int, seed: int) -> list[sm.Metric]:
    g = torch.Generator().manual_seed(seed)
    states = []
    for _ in range(p):
        m = _STACKING[name]()
        n = int(torch.randint(0, 5, (1,), generator=g))  # empty states included
        outputs = m.num_outputs
        if n:
            shape = (n,) if outputs == 1 else (n, outputs)
            m = m.update(torch.randn(shape, generator=g) * 2 + 1e3, torch.randn(shape, generator=g))
        states.append(m)
    return states


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(_STACKING)), p=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_the_stacked_fold_matches_its_twin_bit_for_bit(name: str, p: int, seed: int) -> None:
    states = _moment_states(name, p, seed)
    got = folds.stacked_fold(folds.stack(states))  # type: ignore[arg-type]
    want = reference.pairwise_fold(states)
    assert type(got) is type(want)
    for x, y in zip(tree.leaves(got), tree.leaves(want), strict=True):
        assert x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y), (name, p)


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(_STACKING)), p=st.integers(folds.TREE_MIN, 40), seed=st.integers(0, 2**16))
def test_the_tree_fold_is_the_rank_order_fold_up_to_rounding(name: str, p: int, seed: int) -> None:
    states = _moment_states(name, p, seed)
    tree_fold, plain = fold(states), functools.reduce(lambda a, b: a.merge(b), states)
    assert int(tree_fold.total) == int(plain.total)
    assert_close(tree_fold.compute(), plain.compute(), atol=1e-4, rtol=1e-3)


def test_the_fold_takes_the_tree_from_tree_min_states_and_only_for_classes_that_stack() -> None:
    seen: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(folds, "stacked_fold", lambda s: seen.append(int(s.total.shape[0])) or reference.pairwise_fold(
            [tree.unflatten(tree.structure(s), [x[i] for x in tree.leaves(s)]) for i in range(s.total.shape[0])]))
        fold(_moment_states("pearson", folds.TREE_MIN - 1, 0))
        fold([sm.MeanSquaredError().update(torch.ones(2), torch.zeros(2))] * 20)
        fold(_moment_states("pearson", folds.TREE_MIN, 0))
    assert seen == [folds.TREE_MIN]


# -- order: the sort of the exact curves ---------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 70), cols=st.sampled_from([0, 1, 3]), levels=st.integers(1, 8), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.float16]), by_numpy=st.booleans())
def test_the_descending_order_matches_its_twin_up_to_ties(n: int, cols: int, levels: int, seed: int,
                                                          dtype: torch.dtype, by_numpy: bool) -> None:
    from unittest import mock

    from scopedmetrics._kernels import order
    from scopedmetrics.classification import curves

    g = torch.Generator().manual_seed(seed)
    shape = (n,) if cols == 0 else (n, cols)
    scores = (torch.randint(0, levels, shape, generator=g) / levels - 0.5).to(dtype)  # many ties, signed zeros
    positive = torch.rand(shape, generator=g) < 0.4
    table, hits = scores.reshape(n, max(cols, 1)), positive.reshape(n, max(cols, 1))
    with mock.patch.object(order, "NUMPY_MIN", 0 if by_numpy else 10**9):
        fast = order.descending(scores)
        ranked = curves._ranked(table, hits, None)
    twin = reference.descending(scores)
    assert torch.equal(fast.sort(dim=0).values, torch.arange(n).reshape(-1, *([1] * (scores.ndim - 1))).expand(shape))
    assert torch.equal(scores.gather(0, fast), scores.gather(0, twin))  # the same values in the same order
    with mock.patch.object(curves, "ranked", reference.ranked):
        assert all(torch.equal(a, b) for a, b in zip(ranked, curves._ranked(table, hits, None)))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 70), cols=st.sampled_from([1, 3]), levels=st.integers(1, 8), seed=st.integers(0, 2**16),
       masked=st.booleans(), packed=st.booleans())
def test_the_ranked_rows_give_the_counts_of_their_twin(n: int, cols: int, levels: int, seed: int, masked: bool,
                                                       packed: bool) -> None:
    """Packed int64 keys (score bits, valid, positive) sorted by value against Python's sort of the scores."""
    from unittest import mock

    from scopedmetrics._kernels import order
    from scopedmetrics.classification import curves

    g = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, levels, (n, cols), generator=g) / levels - 0.5  # many ties, signed zeros
    scores[torch.rand(n, cols, generator=g) < 0.1] = -0.0
    scores[torch.rand(n, cols, generator=g) < 0.05] = float("-inf")
    scores[torch.rand(n, cols, generator=g) < 0.05] = float("inf")
    positive = torch.rand(n, cols, generator=g) < 0.4
    valid = torch.rand(n, cols, generator=g) < 0.8 if masked else None
    with mock.patch.object(order, "NUMPY_MIN", 0 if packed else 10**9):
        ties, hit, kept = order.ranked(scores, positive, valid)
        fast = curves._ranked(scores, positive, valid)
        values, _, _ = order.ranked(scores, positive, valid, values=True)
    want_ties, want_hit, want_kept = reference.ranked(scores, positive, valid)
    assert torch.equal(ties[1:] == ties[:-1], want_ties[1:] == want_ties[:-1])  # ties exactly where scores tie
    assert torch.equal(values, want_ties)  # the sorted scores themselves (-0.0 equals 0.0)
    assert torch.equal(hit.sum(0), want_hit.sum(0)) and (kept is None) == (want_kept is None)
    with mock.patch.object(curves, "ranked", reference.ranked):
        assert all(torch.equal(a, b) for a, b in zip(fast, curves._ranked(scores, positive, valid)))


def test_the_descending_order_leaves_nan_to_torch() -> None:
    from scopedmetrics._kernels import order

    scores = torch.rand(order.NUMPY_MIN + 10, dtype=torch.float64)
    scores[[3, 500]] = float("nan")
    assert torch.equal(order.descending(scores), scores.argsort(descending=True))
    assert torch.isnan(scores[order.descending(scores)][:2]).all()  # NaN first, as torch sorts it


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 40), c=st.integers(1, 20), wide=st.booleans(), scale=st.sampled_from([1.0, 30.0, 1e4]),
       seed=st.integers(0, 2**16), short=st.booleans())
def test_the_softmax_matches_its_twin_on_both_paths(n: int, c: int, wide: bool, scale: float, seed: int,
                                                    short: bool) -> None:
    from scopedmetrics._kernels import softmax as kernel

    dtype = torch.float64 if wide else torch.float32
    x = torch.randn(n, c, generator=torch.Generator().manual_seed(seed), dtype=dtype) * scale
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel, "short_rows", lambda x: short)  # both paths, whatever the CPU
        got = kernel.softmax(x)
    tol = {"rtol": 1e-12, "atol": 1e-15} if wide else {"rtol": 4e-6, "atol": 1e-7}
    torch.testing.assert_close(got, reference.softmax(x), **tol)
    torch.testing.assert_close(got, x.softmax(1), **tol)


@pytest.mark.parametrize("c", [3, 10, 15])
def test_the_short_row_softmax_gives_a_row_the_same_bits_in_any_batch(c: int) -> None:
    # the choice of path never depends on the number of rows, and neither do a row's bits: a sample's
    # probability (an exact curve's tie, a calibration bin's edge) is the same whichever batch or rank holds it
    from scopedmetrics._kernels import softmax as kernel

    x = torch.randn(3000, c, generator=torch.Generator().manual_seed(c))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel, "short_rows", lambda x: True)
        whole = kernel.softmax(x)
        for size in (1, 2, 7, 64, 1000):
            parts = torch.cat([kernel.softmax(x[i:i + size]) for i in range(0, x.shape[0], size)])
            assert torch.equal(parts, whole), size


def test_the_short_row_softmax_is_chosen_by_dtype_classes_and_device_only() -> None:
    from scopedmetrics._kernels import softmax as kernel

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel, "_float32_lanes", lambda: 16)  # AVX-512
        assert kernel.short_rows(torch.zeros(5, 15)) and not kernel.short_rows(torch.zeros(5, 16))
        assert kernel.short_rows(torch.zeros(0, 15, dtype=torch.float64))
        assert not kernel.short_rows(torch.zeros(10**5, 16, dtype=torch.float64))
        assert not kernel.short_rows(torch.zeros(5, 0)) and not kernel.short_rows(torch.zeros(5, 3, 2))
        assert not kernel.short_rows(torch.zeros(5, 3, dtype=torch.float16))
        patch.setattr(kernel, "_float32_lanes", lambda: 8)  # AVX2
        assert kernel.short_rows(torch.zeros(5, 7)) and not kernel.short_rows(torch.zeros(5, 8))
        assert kernel.short_rows(torch.zeros(5, 15, dtype=torch.float64))


@pytest.mark.parametrize("row", [[math.inf, 0.0], [-math.inf, -math.inf], [-math.inf, 1.0], [math.nan, 1.0],
                                 [1e38, -1e38], [3.0, 3.0]])
def test_the_short_row_softmax_treats_non_finite_scores_as_torch_does(row: list[float]) -> None:
    from scopedmetrics._kernels import softmax as kernel

    x = torch.tensor([row, [0.0, 1.0]])
    assert kernel.short_rows(x)
    torch.testing.assert_close(kernel.softmax(x), x.softmax(1), equal_nan=True)
