"""Sliced and the grouping machinery: per-slice oracles on uneven shards, the vectorised hooks' twin, collectives."""

from __future__ import annotations

import functools
import io
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
import torch
from shards import assert_close, batches, uneven_slices
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics import tree
from scopedmetrics.reducers import Collective
from scopedmetrics.wrappers import BootStrapper, Sliced, _families, _groups
from scopedmetrics.wrappers.bootstrap import poisson_counts

N = 240


def _data(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "x": torch.randn(N, generator=g),
        "x2": torch.randn(N, 3, generator=g),
        "y": torch.randn(N, generator=g),
        "y2": torch.randn(N, 3, generator=g),
        "prob": torch.rand(N, generator=g),
        "prob4": torch.rand(N, 4, generator=g),
        "bin": torch.randint(0, 2, (N,), generator=g),
        "bin_ign": torch.randint(-1, 2, (N, 4), generator=g),
        "scores5": torch.rand(N, 5, generator=g),
        "labels5": torch.randint(0, 5, (N,), generator=g),
        "pred5": torch.randint(0, 5, (N,), generator=g),
        "ml": torch.randint(0, 2, (N, 4), generator=g),
        "labels5_ign": torch.randint(-1, 5, (N,), generator=g),
    }


D = _data(0)

# (id, metric, names of the positional arrays); every family with a vectorised hook, and two without
CASES: list[tuple[str, sm.Metric, tuple[str, ...]]] = [
    ("sum", sm.Sum(), ("x2",)),
    ("mean", sm.Mean(), ("x",)),
    ("max", sm.Max(), ("x2",)),
    ("min", sm.Min(), ("x",)),
    ("mse", sm.MeanSquaredError(), ("x", "y")),
    ("rmse", sm.MeanSquaredError(squared=False), ("x2", "y2")),
    ("mae_outputs", sm.MeanAbsoluteError(num_outputs=3), ("x2", "y2")),
    ("binary_acc", sm.BinaryAccuracy(), ("prob", "bin")),
    ("binary_f1_ignore", sm.BinaryF1Score(ignore_index=-1), ("prob4", "bin_ign")),
    ("mc_acc_none", sm.MulticlassAccuracy(5, average=None), ("scores5", "labels5")),
    ("mc_f1_top2", sm.MulticlassF1Score(5, top_k=2), ("scores5", "labels5")),
    ("mc_recall_ignore_unchecked", sm.MulticlassRecall(5, average=None, ignore_index=-1, validate_args=False),
     ("pred5", "labels5_ign")),
    ("mc_micro_no_classes", sm.MulticlassAccuracy(average="micro"), ("pred5", "labels5")),
    ("ml_precision", sm.MultilabelPrecision(4, average=None), ("prob4", "ml")),
    ("binary_cm", sm.BinaryConfusionMatrix(), ("prob", "bin")),
    ("mc_cm", sm.MulticlassConfusionMatrix(5), ("pred5", "labels5")),
    ("ml_cm", sm.MultilabelConfusionMatrix(4), ("prob4", "ml")),
    ("auroc_exact", sm.BinaryAUROC(), ("prob", "bin")),  # cat states: one metric per slice
    ("pearson", sm.PearsonCorrCoef(), ("x", "y")),  # a whole-state merge: one metric per slice
]


def _ids(n: int, seed: int, skip: Sequence[int] = ()) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, n, (N,), generator=g)
    for s in skip:  # slices nobody sees
        ids[ids == s] = (s + 1) % n
    return ids


def oracle(metric: sm.Metric, arrays: Sequence[torch.Tensor], ids: torch.Tensor,
           names: Sequence[Any]) -> dict[Any, Any]:
    """The metric computed in one process on each slice's samples."""
    out = {}
    with sm.use_reducer(sm.local()):
        for k, name in enumerate(names):
            sel = ids == k
            if bool(sel.any()):
                out[name] = metric.reset().update(*(a[sel] for a in arrays)).compute()
    return out


def rank_body(rank: int, metric: sm.Metric, arrays: Sequence[torch.Tensor], kw: dict[str, torch.Tensor],
              slices: list[slice], seed: int) -> Any:
    """One rank: its shard in random batches, then compute under the reducer in scope."""
    m = metric.reset()
    for b in batches(slices[rank], seed + rank):
        m = m.update(*(a[b] for a in arrays), **{k: v[b] for k, v in kw.items()})
    return m.compute()


def run_sharded(metric: sm.Metric, arrays: Sequence[torch.Tensor], kw: dict[str, torch.Tensor], size: int,
                seed: int, world: Any = None) -> list[Any]:
    slices = uneven_slices(N, size, seed)
    if world is None:
        return sm.simulate(lambda r: rank_body(r, metric, arrays, kw, slices, seed), size)
    return list(world.run(rank_body, size, metric, arrays, kw, slices, seed))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sliced_equals_the_metric_on_each_slice_on_uneven_shards(case: tuple[str, sm.Metric, tuple[str, ...]]) -> None:
    _, metric, names = case
    arrays = [D[n] for n in names]
    ids = _ids(7, seed=1, skip=(3,))
    expected = oracle(metric, arrays, ids, range(7))
    assert 3 not in expected
    for size in (1, 2, 3, 4):
        for value in run_sharded(Sliced(metric, 7), arrays, {"slice_ids": ids}, size, seed=10 + size):
            assert list(value) == list(expected)  # the same slices, in slice order, on every rank
            assert_close(value, expected)


def test_sliced_in_real_processes(world: Any) -> None:
    arrays = [D["scores5"], D["labels5"]]
    ids = _ids(4, seed=2, skip=(1,))
    names = ["north", "east", "south", "west"]
    metric = sm.MulticlassF1Score(5, average=None)
    expected = oracle(metric, arrays, ids, names)
    for value in run_sharded(Sliced(metric, names), arrays, {"slice_ids": ids}, 2, seed=3, world=world):
        assert list(value) == ["north", "south", "west"]
        assert_close(value, expected)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in ("auroc_exact", "pearson")], ids=lambda c: c[0])
def test_vectorised_hooks_match_the_general_path(case: tuple[str, sm.Metric, tuple[str, ...]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference twin of every hook: the wrapped metric's own update, one slice at a time."""
    _, metric, names = case
    arrays = [D[n] for n in names]
    ids = _ids(6, seed=4)
    fast = Sliced(metric, 6).update(*arrays, slice_ids=ids)
    assert isinstance(fast.per_slice, type(metric))  # stacked: one leaf per state
    monkeypatch.setattr(_groups, "_HOOKS", {})
    slow = Sliced(metric, 6).update(*arrays, slice_ids=ids)
    for (ka, a), (kb, b) in zip(fast.state_dict().items(), slow.state_dict().items()):
        assert ka == kb and a.dtype == b.dtype and a.shape == b.shape
        if a.is_floating_point():
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        else:
            assert torch.equal(a, b), ka


def test_hooks_leave_nan_and_unvalidated_batches_to_the_metric() -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, 4.0])
    ids = torch.tensor([0, 0, 1, 1])
    with pytest.warns(UserWarning, match="dropping NaN"):
        out = Sliced(sm.Mean(), 2).update(x, slice_ids=ids).compute()
    assert out == {0: torch.tensor(1.0), 1: torch.tensor(3.5)}
    bad = Sliced(sm.MulticlassAccuracy(3, validate_args=False), 2)
    with pytest.raises(ValueError, match="MulticlassAccuracy.update: argument `preds` or `target` holds a label"):
        bad.update(torch.tensor([0, 9]), torch.tensor([0, 1]), slice_ids=torch.tensor([0, 1]))


@pytest.mark.parametrize("strategy", ["warn", "ignore", "disable", 0.5])
@pytest.mark.parametrize("weight", [1.0, 2, 0.0, float("inf")])
def test_mean_nan_and_weights_per_slice_are_the_plain_metrics(strategy: Any, weight: float) -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, 0.0, 4.0, -2.0, float("inf"), 5.0])
    ids = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    metric = sm.Mean(nan_strategy=strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "warn" warns in both
        expected = {k: metric.update(x[ids == k], weight=weight).state_dict() for k in range(4)}
        sliced = Sliced(metric, 4).update(x, slice_ids=ids, weight=weight)
    for k in range(4):
        for name, want in expected[k].items():
            torch.testing.assert_close(sliced.slice(k).state_dict()[name], want, equal_nan=True)
    with pytest.raises(ValueError, match="nan"):
        Sliced(sm.Mean(nan_strategy="error"), 4).update(x, slice_ids=ids)


@pytest.mark.parametrize(
    ("metric", "big", "batch"),
    [
        (sm.Sum(), (torch.tensor([2.0**24]),), (torch.ones(1024),)),
        (sm.Mean(), (torch.tensor([2.0**24]),), (torch.ones(1024),)),
        (sm.Mean(), (torch.tensor([2.0**24]),), (torch.ones(1024), torch.ones(1024))),
        (sm.MeanSquaredError(), (torch.tensor([4096.0]), torch.zeros(1)), (torch.ones(1024), torch.zeros(1024))),
        (sm.MeanAbsoluteError(num_outputs=2), (torch.full((1, 2), 2.0**24), torch.zeros(1, 2)),
         (torch.ones(1024, 2), torch.zeros(1024, 2))),
    ],
    ids=["sum", "mean", "mean_weighted", "mse", "mae_outputs"],
)
def test_a_batch_is_added_to_a_large_float_state_once_as_the_metric_adds_it(
    metric: sm.Metric, big: tuple[torch.Tensor, ...], batch: tuple[torch.Tensor, ...]
) -> None:
    """Each slice's batch is summed before it meets the state: added row by row, 2**24 + 1 + 1 ... stays 2**24."""
    plain = metric.update(*big).update(*batch)
    one = torch.zeros(1, dtype=torch.long)
    sliced = Sliced(metric, 2).update(*big, slice_ids=one).update(*batch, slice_ids=one.expand(1024))
    for name, want in plain.state_dict().items():
        assert torch.equal(sliced.slice(0).state_dict()[name], want), name


def test_group_sums_are_shaped_like_the_state_on_every_path() -> None:
    """The CPU's weighted bincount and the index_add_ of other devices (shapes checked on the meta device)."""
    ids = torch.tensor([0, 2, 2, 1])
    cases = [(torch.zeros(3), torch.tensor([1.0, 2.0, 3.0, 4.0]), [1.0, 4.0, 5.0]),
             (torch.zeros(3, 1), torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64), [[1.0], [4.0], [5.0]]),
             (torch.zeros(3, 2), torch.ones(4, 2), [[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]])]
    for state, rows, want in cases:
        sums = _families._group_sums(state, ids, rows)
        assert sums.dtype == state.dtype and sums.tolist() == want
        meta = _families._group_sums(state.to("meta"), ids.to("meta"), rows.to("meta"))
        assert meta.shape == state.shape and meta.dtype == state.dtype


def test_a_subclass_that_overrides_update_takes_the_general_path() -> None:
    class Doubled(sm.Sum):
        def update(self, value: Any) -> Doubled:
            return self.replace(sum_value=self.sum_value + 2 * torch.as_tensor(value).sum())

    assert _groups.hook_for(Doubled()) is None and _groups.hook_for(sm.BinaryAccuracy()) is not None
    out = Sliced(Doubled(), 2).update(torch.tensor([1.0, 2.0, 3.0]), slice_ids=torch.tensor([0, 1, 1])).compute()
    assert out == {0: torch.tensor(2.0), 1: torch.tensor(10.0)}


class Words(sm.Metric):
    """A list-input metric (text-like): words per sentence."""

    words: torch.Tensor = sm.state("sum", default=0)
    sentences: torch.Tensor = sm.state("sum", default=0)

    def update(self, sentences: list[str]) -> Words:
        return self.replace(words=self.words + sum(len(s.split()) for s in sentences),
                            sentences=self.sentences + len(sentences))

    def compute(self) -> torch.Tensor:
        return self.words / self.sentences


def test_list_arguments_are_split_by_slice_in_order() -> None:
    text = ["a b", "c", "d e f", "g h", "i"]
    out = Sliced(Words(), ["short", "long"]).update(text, slice_ids=torch.tensor([1, 0, 1, 1, 0])).compute()
    assert out == {"short": torch.tensor(1.0), "long": torch.tensor(7 / 3)}

    order: list[list[float]] = []

    class Rows(sm.Cat):
        def update(self, value: Any) -> Rows:
            order.append(torch.as_tensor(value).tolist())
            return super().update(value)

    cat = Sliced(Rows(), 2).update(torch.tensor([1.0, 2.0, 3.0, 4.0]), slice_ids=torch.tensor([1, 0, 1, 0])).compute()
    assert cat[0].tolist() == [2.0, 4.0] and cat[1].tolist() == [1.0, 3.0]  # each slice keeps the batch's order


def test_mask_leaves_rows_out_of_every_slice() -> None:
    x, ids = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0, 1, 1, 0])
    keep = torch.tensor([True, False, True, False])
    masked = Sliced(sm.Sum(), 2).update(x, slice_ids=ids, mask=keep)
    assert masked.compute() == {0: torch.tensor(1.0), 1: torch.tensor(3.0)}
    assert masked.counts.tolist() == [1, 1]
    assert Sliced(sm.Sum(), 2).update(x, slice_ids=ids, mask=torch.zeros(4, dtype=torch.bool)).counts.sum() == 0


def test_merge_equals_the_concatenated_data_and_forward_gives_the_batch() -> None:
    m = Sliced(sm.MeanSquaredError(), 3)
    a = m.update(D["x"][:100], D["y"][:100], slice_ids=_ids(3, 5)[:100])
    b = m.update(D["x"][100:], D["y"][100:], slice_ids=_ids(3, 5)[100:])
    whole = m.update(D["x"], D["y"], slice_ids=_ids(3, 5))
    assert_close(a.merge(b).compute(), whole.compute())
    merged, batch = a.forward(D["x"][100:], D["y"][100:], slice_ids=_ids(3, 5)[100:])
    assert_close(batch, b.compute())
    assert_close(merged.compute(), whole.compute())
    with pytest.raises(ValueError, match="configurations differ"):
        a.merge(Sliced(sm.MeanSquaredError(), 4))


def _state(m: sm.Metric) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in m.state_dict().items()}


def _batch(metric: sm.Metric, *values: int) -> tuple[torch.Tensor, ...]:
    """``update``'s arguments of ``values`` for the wrapped ``metric`` (a Mean takes one tensor, scores two)."""
    t = torch.tensor(values)
    return (t.float(),) if isinstance(metric, sm.Mean) else (t, torch.ones_like(t))


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        (torch.tensor([0.0, 1.0, 0.0]), TypeError, "must be an integer tensor, got torch.float32"),
        (torch.tensor([True, False, True]), TypeError, "must be an integer tensor, got torch.bool"),
        ([0, 1, 0], TypeError, "must be an integer tensor, got list"),
        (torch.tensor([[0, 1, 0]]), ValueError, r"must be 1-d \(one id per sample\)"),
        (torch.tensor([0, 3, 1]), ValueError, r"must hold ids in \[0, 3\), got \[3\]"),
        (torch.tensor([0, -1, 1]), ValueError, r"must hold ids in \[0, 3\), got \[-1\]"),
        (torch.tensor([0, 1]), ValueError, "`slice_ids` has 2 entries but argument 0 has 3 along dim 0"),
    ],
)
@pytest.mark.parametrize("metric", [sm.BinaryAccuracy(), sm.Mean(), sm.MeanSquaredError()],
                         ids=["binary_accuracy", "mean", "mse"])
def test_bad_slice_ids_are_clear_errors_and_change_nothing(ids: Any, error: type[Exception], match: str,
                                                           metric: sm.Metric) -> None:
    batch = functools.partial(_batch, metric)
    m = Sliced(metric, 3).update(*batch(1, 0), slice_ids=torch.tensor([0, 2]))
    before = _state(m)
    prefix = "Sliced.update: " if match.startswith("`") else "Sliced.update: argument `slice_ids` "
    with pytest.raises(error, match=prefix + match):
        m.update(*batch(1, 0, 1), slice_ids=ids)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    with pytest.raises(TypeError, match="slice_ids"):
        m.update(*batch(1))  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"must hold ids in \[0, 3\), got \[3, 7\]"):  # int32 ids, as int64
        m.update(*batch(1, 0, 1), slice_ids=torch.tensor([3, 7, 0], dtype=torch.int32))
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    same = m.update(*batch(1, 0, 1), slice_ids=torch.tensor([0, 2, 2], dtype=torch.int32))
    assert torch.equal(same.counts, m.update(*batch(1, 0, 1), slice_ids=torch.tensor([0, 2, 2])).counts)


def test_a_bad_batch_is_the_wrapped_metrics_error() -> None:
    m = Sliced(sm.BinaryAccuracy(), 2)
    with pytest.raises(ValueError, match="BinaryAccuracy.update: argument `target` has values outside"):
        m.update(torch.tensor([1, 0]), torch.tensor([1, 7]), slice_ids=torch.tensor([0, 1]))


def test_configuration_is_checked() -> None:
    with pytest.raises(TypeError, match="Sliced: argument `metric` must be a scopedmetrics Metric, got str"):
        Sliced("accuracy", 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be a fresh metric"):
        Sliced(sm.Sum().update(torch.tensor(1.0)), 3)
    with pytest.raises(ValueError, match="at least 1, got 0"):
        Sliced(sm.Sum(), 0)
    with pytest.raises(TypeError, match="number of slices or a sequence of names, got True"):
        Sliced(sm.Sum(), True)
    with pytest.raises(ValueError, match=r"unique, got \['a'\]"):
        Sliced(sm.Sum(), ["a", "b", "a"])
    with pytest.raises(TypeError, match="strings or ints, got 1.5"):
        Sliced(sm.Sum(), ["a", 1.5])
    assert Sliced(sm.Sum(), ["a", "b"]).names == ("a", "b") and Sliced(sm.Sum(), 3).names == (0, 1, 2)


def test_nothing_seen_anywhere_warns_and_is_empty() -> None:
    with pytest.warns(UserWarning, match="Sliced.compute: the state is empty"):
        assert Sliced(sm.Mean(), 3).compute() == {}


@pytest.mark.parametrize("metric", [sm.MulticlassAccuracy(4, average=None), sm.BinaryAUROC()],
                         ids=["stacked", "per-slice"])
def test_checkpoints_round_trip(metric: sm.Metric) -> None:
    preds = D["scores5"][:, :4] if isinstance(metric, sm.MulticlassAccuracy) else D["prob"]
    target = D["labels5"].clamp(max=3) if isinstance(metric, sm.MulticlassAccuracy) else D["bin"]
    m = Sliced(metric, ["a", "b", "c"]).update(preds, target, slice_ids=_ids(3, 6))
    restored = Sliced(metric, ["a", "b", "c"]).load_state_dict(m.state_dict())
    assert_close(restored.compute(), m.compute())
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert_close(loaded.compute(), m.compute())
    keys = list(m.state_dict())
    assert keys[0] == "counts"
    assert keys[1] == "per_slice.stats.counts" if len(keys) == 2 else keys[1].startswith("per_slice.0.")
    with pytest.raises(ValueError, match="Sliced.load_state_dict: "):
        Sliced(metric, 4).load_state_dict(m.state_dict())  # another number of slices


def _counted(body: Any) -> Any:
    def run(rank: int) -> Any:
        counting = CountingComm(sm.get_reducer().comm)  # type: ignore[union-attr]
        with sm.use_reducer(Collective(counting)):
            value = body(rank)
        return value, counting.calls

    return run


def _calls_of(metric: sm.Metric, slices: int | None) -> list[str]:
    def body(rank: int) -> Any:
        x, y = D["x"][rank::2], D["y"][rank::2]
        m = metric if slices is None else Sliced(metric, slices)
        kw = {} if slices is None else {"slice_ids": torch.arange(x.shape[0]) % slices}
        return m.update(x, y, **kw).compute() if isinstance(metric, sm.MeanSquaredError) else \
            m.update((x > 0).long(), (y > 0).long(), **kw).compute()

    outs = sm.simulate(_counted(body), 2)
    assert outs[0][1] == outs[1][1]
    return list(outs[0][1])


@pytest.mark.parametrize("metric", [sm.MeanSquaredError(), sm.BinaryAccuracy()], ids=["mse", "binary_accuracy"])
def test_a_thousand_slices_reduce_in_as_many_collectives_as_one_metric(metric: sm.Metric) -> None:
    one = _calls_of(metric, None)
    assert one == ["all_gather"]
    assert _calls_of(metric, 1000) == one
    sliced = Sliced(metric, 1000)
    assert len(tree.leaves(sliced)) == len(tree.leaves(metric)) + 1  # one stacked leaf per state, plus the counts


def test_compare_with_torchmetrics_binary_group_stat_rates() -> None:
    tmc = pytest.importorskip("torchmetrics.classification")
    ids = _ids(3, 7)
    theirs = tmc.BinaryGroupStatRates(num_groups=3)
    theirs.update(D["prob"], D["bin"], ids)
    rates = theirs.compute()
    ours = Sliced(sm.BinaryStatScores(), 3).update(D["prob"], D["bin"], slice_ids=ids).compute()
    for k, v in ours.items():
        counts = v[:4].double()
        assert_close(counts / counts.sum(), rates[f"group_{k}"])


def test_sliced_bootstrap_uses_one_scatter_and_matches_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    ids, sample_ids = _ids(3, 8), torch.arange(N) + 1000
    boot = BootStrapper(sm.BinaryAccuracy(), num_bootstraps=20, raw=True, seed=3)
    fast = Sliced(boot, 3).update(D["prob"], D["bin"], slice_ids=ids, sample_ids=sample_ids)
    monkeypatch.setattr(_groups, "_HOOKS", {})
    slow = Sliced(boot, 3).update(D["prob"], D["bin"], slice_ids=ids, sample_ids=sample_ids)
    assert all(torch.equal(a, b) for a, b in zip(fast.state_dict().values(), slow.state_dict().values()))
    # and each slice's replicates are the metric on that slice's rows repeated by their Poisson counts
    raw = fast.compute()[1]["raw"]
    sel = ids == 1
    counts = poisson_counts(3, sample_ids[sel], 20)
    for b in range(20):
        rows = torch.arange(int(sel.sum())).repeat_interleave(counts[b])
        want = sm.BinaryAccuracy().update(D["prob"][sel][rows], D["bin"][sel][rows]).compute()
        assert_close(raw[b], want)


def test_split_rows_groups_in_order_without_copying_sorted_ids() -> None:
    x = torch.arange(6.0)
    parts = list(_groups.split_rows(torch.tensor([2, 0, 2, 1, 0, 2]), 4, (x,), {}))
    assert [(k, a[0].tolist()) for k, a, _ in parts] == [(0, [1.0, 4.0]), (1, [3.0]), (2, [0.0, 2.0, 5.0])]
    sorted_parts = list(_groups.split_rows(torch.tensor([0, 0, 1]), 2, (x[:3],), {"w": 2.0}))
    assert sorted_parts[0][1][0].data_ptr() == x.data_ptr() and sorted_parts[1][2] == {"w": 2.0}


def test_stackable_is_decided_by_the_ops() -> None:
    assert _groups.stackable(sm.BinaryAccuracy()) and _groups.stackable(sm.Max())
    assert not _groups.stackable(sm.BinaryAUROC()) and not _groups.stackable(sm.PearsonCorrCoef())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Sliced(sm.Max(), 2).update(torch.tensor([1.0, 2.0]), slice_ids=torch.tensor([0, 1]))  # no beta warnings


@pytest.mark.parametrize("metric", [sm.Sum(), sm.Mean(), sm.MeanSquaredError(num_outputs=2)],
                         ids=["sum", "mean", "mse_outputs"])
def test_sliced_float64_inputs_equal_the_metric_on_each_slice(metric: sm.Metric) -> None:
    # the sliced path cast each value to the float32 state first, where the metric now sums in float64
    g = torch.Generator().manual_seed(9)
    base = 1e8 * torch.randint(-1, 2, (60,), generator=g).double() + torch.randn(60, generator=g, dtype=torch.float64)
    ids = torch.randint(0, 3, (60,), generator=g)
    if isinstance(metric, sm.MeanSquaredError):
        args: tuple[torch.Tensor, ...] = (torch.stack([base, base * 2], 1) + 0.01, torch.stack([base, base * 2], 1))
    else:
        args = (base,)
    got = Sliced(metric, 3).update(*args, slice_ids=ids).compute()
    for k in range(3):
        want = metric.reset().update(*(a[ids == k] for a in args)).compute()
        assert torch.equal(got[k], want), (k, got[k], want)


def test_the_grouped_path_sums_many_rows_of_a_slice_as_the_metric_does() -> None:
    # the groups' bincount and index_add added float32 rows one at a time: 10^7 rows of 0.1 summed to 1,087,937
    # (+8.8%); Mean, MAE and MSE of the slice, and every BootStrapper replicate, drifted the same way
    n = 4_000_000
    x, ids = torch.full((n,), 0.1), torch.zeros(n, dtype=torch.long)
    for metric, args in ((sm.Sum(), (x,)), (sm.Mean(), (x,)), (sm.MeanAbsoluteError(), (x, torch.zeros(n))),
                         (sm.MeanSquaredError(), (x, torch.zeros(n)))):
        want = metric.update(*args).compute()
        got = Sliced(metric, 1).update(*args, slice_ids=ids).compute()[0]
        assert got.item() == pytest.approx(want.item(), rel=1e-6), type(metric).__name__
    weighted = Sliced(sm.Mean(), 1).update(x, weight=torch.full((n,), 2.0), slice_ids=ids).compute()[0]
    assert weighted.item() == pytest.approx(0.1, rel=1e-6)
