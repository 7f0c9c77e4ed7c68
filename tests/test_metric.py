"""The metric base: pytree view, immutability, merge, reduce mark, state dicts."""

from __future__ import annotations

import dataclasses
import io
import pickle
from typing import Any

import optree
import pytest
import torch
from catalogue import CATALOGUE, Entry, data, feed
from custom import MeanSquaredError
from torch.testing import assert_close

import scopedmetrics as sm
from scopedmetrics import metric as metric_module
from scopedmetrics import sync as sync_module


class Bins(sm.Metric):
    """A dict state and a nested metric, to check paths and per-leaf ops."""

    bins: dict = sm.state("max", default=lambda: {"a": torch.tensor(0.0), "b": torch.zeros(2)})
    inner: MeanSquaredError = sm.state(default=MeanSquaredError)
    rows: torch.Tensor = sm.state("cat")

    def update(self, x: torch.Tensor) -> Bins:
        bins = {"a": torch.maximum(self.bins["a"], x.max()), "b": torch.maximum(self.bins["b"], x[:2])}
        return self.replace(bins=bins, inner=self.inner.update(x, torch.zeros_like(x)), rows=torch.cat([self.rows, x]))

    def compute(self) -> dict:
        return {"a": self.bins["a"], "mse": self.inner.compute(), "n": self.rows.numel()}


def test_defaults_follow_torch_tensor_dtypes() -> None:
    m = MeanSquaredError()
    assert m.sum_sq.dtype == torch.float32 and m.count.dtype == torch.int64
    assert sm.Max().max_value.item() == float("-inf")
    assert sm.Min().min_value.item() == float("inf")
    assert sm.Cat().value.shape == (0,) and sm.Cat().value.dtype == torch.float32


def test_leaves_are_exactly_the_states_and_tree_map_keeps_type() -> None:
    m = MeanSquaredError(squared=False).update(torch.ones(3), torch.zeros(3))
    leaves = optree.tree_leaves(m, namespace=sm.NAMESPACE)
    assert len(leaves) == 2 and leaves[0] is m.sum_sq and leaves[1] is m.count
    doubled = optree.tree_map(lambda t: t * 2, m, namespace=sm.NAMESPACE)
    assert type(doubled) is MeanSquaredError and doubled.squared is False
    assert doubled.sum_sq.item() == 6.0


def test_static_config_is_in_structure_not_leaves() -> None:
    a = optree.tree_structure(MeanSquaredError(squared=True), namespace=sm.NAMESPACE)
    b = optree.tree_structure(MeanSquaredError(squared=False), namespace=sm.NAMESPACE)
    assert a != b


def test_update_returns_new_metric_and_leaves_old_unchanged() -> None:
    m = MeanSquaredError()
    m2 = m.update(torch.ones(2), torch.zeros(2))
    assert m.sum_sq.item() == 0.0 and m2.sum_sq.item() == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.sum_sq = torch.tensor(1.0)  # type: ignore[misc]


def test_merge_reset_identity_and_mismatch() -> None:
    m = MeanSquaredError().update(torch.tensor([1.0, 2.0]), torch.zeros(2))
    same = m.merge(m.reset())
    assert torch.equal(same.sum_sq, m.sum_sq) and torch.equal(same.count, m.count)
    with pytest.raises(ValueError, match="MeanSquaredError.merge: configurations differ: squared"):
        m.merge(MeanSquaredError(squared=False))
    with pytest.raises(TypeError, match="cannot merge with Sum"):
        m.merge(sm.Sum())  # type: ignore[arg-type]


def test_merge_refuses_shapes_that_would_broadcast() -> None:
    m = sm.Sum()
    other = m.replace(sum_value=torch.zeros(3))
    with pytest.raises(ValueError, match="Sum.merge: state 'sum_value'"):
        m.merge(other)


def test_nested_states_take_their_ops_and_paths() -> None:
    m = Bins().update(torch.tensor([1.0, 3.0, 2.0]))
    assert set(m.state_dict()) == {"bins.a", "bins.b", "inner.sum_sq", "inner.count", "rows"}
    merged = m.merge(Bins().update(torch.tensor([5.0, 0.0])))
    assert merged.bins["a"].item() == 5.0  # max, from the field
    assert merged.inner.count.item() == 5  # sum, from the nested metric's own declaration
    assert merged.rows.tolist() == [1.0, 3.0, 2.0, 5.0, 0.0]


def test_compute_reduces_exactly_once_even_with_nested_and_super_calls() -> None:
    calls = []

    def counting(t: torch.Tensor, op: str) -> torch.Tensor:
        calls.append(op)
        return t

    class Rooted(MeanSquaredError):  # noqa: N818 - a metric, not an exception
        def compute(self) -> torch.Tensor:
            return super().compute().sqrt()

    m = Rooted().update(torch.tensor([3.0]), torch.zeros(1))
    with sm.use_reducer(counting):
        assert m.compute().item() == pytest.approx(3.0)
    assert calls == ["sum", "sum"]  # one call per leaf, no second reduction
    calls.clear()
    with sm.use_reducer(counting):
        Bins().update(torch.ones(2)).compute()
    assert sorted(calls) == sorted(["max", "max", "sum", "sum", "cat"])


class _Totals:
    """A mixin (not a Metric) bringing ``update`` and ``compute``: they must reduce and fold like a metric's own."""

    def update(self, x: torch.Tensor) -> Any:
        return self.replace(total=self.total + x.sum())  # type: ignore[attr-defined]

    def compute(self) -> torch.Tensor:
        return self.total  # type: ignore[attr-defined, no-any-return]


class MixedSum(_Totals, sm.Metric):
    total: torch.Tensor = sm.state("sum", default=0.0)


def mixed_sum_case(rank: int) -> tuple[float, bool]:
    m = MixedSum().update(torch.tensor([float(rank + 1)], requires_grad=True))
    return float(m.compute()), m.total.requires_grad


def _alias_cases() -> dict[str, Any]:
    from scopedmetrics.classification import MulticlassConfusionMatrix, MulticlassMatthewsCorrCoef, MulticlassRecall

    p, t = torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 1, 2])
    return {
        "sum": sm.Sum().update(torch.tensor([1.0, 2.0])),
        "cat": sm.Cat().update(torch.tensor([1.0, 2.0])),
        "confmat": MulticlassConfusionMatrix(3).update(p, t),
        "recall per class": MulticlassRecall(3, average="none").update(p, t),
        "collection": sm.Collection(cm=MulticlassConfusionMatrix(3), mcc=MulticlassMatthewsCorrCoef(3)).update(p, t),
    }


@pytest.mark.parametrize("name", list(_alias_cases()))
@pytest.mark.parametrize("reduced", [False, True])
def test_changing_a_computed_value_in_place_leaves_the_metric_unchanged(name: str, reduced: bool) -> None:
    # in one process the reducer passes states through, and many a compute returns a state (or a view of one):
    # cm.fill_diagonal_(0) used to change the metric, and the MCC beside it in a collection
    m = _alias_cases()[name]
    if reduced:
        m = m.reduce()
    want = optree.tree_map(torch.clone, m.compute())
    for v in optree.tree_leaves(m.compute()):
        v.zero_()
    assert_close(m.compute(), want)


@pytest.mark.parametrize("name", list(_alias_cases()))
@pytest.mark.parametrize("first", [True, False])
def test_changing_a_batch_value_of_forward_in_place_leaves_the_metric_unchanged(name: str, first: bool) -> None:
    # forward on an empty Cat handed back the new metric's own rows as the batch value: v.zero_() zeroed the metric
    m = _alias_cases()[name]
    m = m.reset() if first else m
    batch = _alias_batch(m)
    new, value = m.forward(*batch)
    want = optree.tree_map(torch.clone, new.compute())
    for v in optree.tree_leaves(value):
        v.zero_()
    assert_close(new.compute(), want)


def mutated_values_case(rank: int) -> list[bool]:
    """Each alias case's value zeroed in place after a reduction over the world: is the metric unchanged?"""
    out = []
    for m in _alias_cases().values():
        m = m.update(*_alias_batch(m)) if rank % 2 else m  # unequal states on the ranks
        for compute in (lambda m=m: m.compute(), lambda m=m: sm.compute({"m": m})["m"]):
            want = optree.tree_map(torch.clone, compute())
            for v in optree.tree_leaves(compute()):
                v.zero_()
            got = compute()
            out.append(all(torch.equal(a, b) for a, b in zip(optree.tree_leaves(got), optree.tree_leaves(want))))
    return out


def _alias_batch(m: Any) -> tuple[torch.Tensor, ...]:
    if isinstance(m, (sm.Sum, sm.Cat)):
        return (torch.tensor([5.0]),)
    return torch.tensor([1, 1]), torch.tensor([1, 0])


def test_changing_a_value_computed_across_processes_in_place_leaves_the_metric_unchanged(world: Any) -> None:
    # after a collective the reduced states are new and the value is not copied again; it must still not be the
    # caller's state (a world of one passes states through)
    assert world.run(mutated_values_case, 2) == [[True] * 10] * 2


def test_compute_and_update_from_a_mixin_reduce_and_fold_too(world: Any) -> None:
    assert world.run(mixed_sum_case, 3) == [(6.0, False)] * 3  # every rank's sum, no autograd history
    reduced = MixedSum().update(torch.ones(2)).reduce()
    with pytest.raises(ValueError, match="MixedSum.update: this metric is reduced"):
        reduced.update(torch.ones(1))
    assert float(MixedSum().update(torch.ones(3), mask=torch.tensor([True, False, True])).compute()) == 2.0


def test_reduce_marks_and_a_reduced_metric_is_final() -> None:
    calls = []
    m = MeanSquaredError().update(torch.ones(1), torch.zeros(1))
    with sm.use_reducer(lambda t, op: calls.append(op) or t):
        r = m.reduce()
        assert r._reduced and r.reduce() is r
        r.compute()
        assert len(calls) == 2
        with pytest.raises(ValueError, match="MeanSquaredError.update: this metric is reduced"):
            r.update(torch.ones(1), torch.ones(1))
        with pytest.raises(ValueError, match="MeanSquaredError.forward: this metric is reduced"):
            r.forward(torch.ones(1), torch.ones(1))
        with pytest.raises(ValueError, match="cannot merge a reduced metric with an unreduced one"):
            r.merge(m)
        with pytest.raises(ValueError, match="cannot merge a reduced metric with an unreduced one"):
            m.merge(r)
        assert r.merge(r)._reduced and not r.reset()._reduced
    assert optree.tree_structure(r, namespace=sm.NAMESPACE) != optree.tree_structure(m, namespace=sm.NAMESPACE)


def test_updating_a_reduced_metric_never_counts_the_others_twice() -> None:
    """0.1 gave 4.0 here (the global state reduced a second time); the right answer is 2.0 or an error."""

    def body(rank: int) -> str:
        r = sm.Sum().update(torch.tensor(1.0)).reduce()
        try:
            r.update(torch.tensor(0.0)).compute()
        except ValueError as err:
            return str(err)
        return "no error"

    assert all("Sum.update: this metric is reduced" in msg for msg in sm.simulate(body, 2))


@torch.enable_grad()
def test_states_never_hold_autograd_history() -> None:
    w = torch.ones(4, requires_grad=True)
    preds = w * 2  # a graph, as a model's output outside torch.no_grad()
    m = MeanSquaredError().update(preds, torch.zeros(4))
    assert all(not t.requires_grad and t.grad_fn is None for t in optree.tree_leaves(m, namespace=sm.NAMESPACE))
    c = sm.classification.BinaryAUROC().update(torch.sigmoid(w * 3), torch.tensor([0, 1, 0, 1]))
    assert not c.preds.requires_grad and c.preds.grad_fn is None
    c2, value = sm.Mean().forward(preds)
    assert not c2.mean_value.requires_grad and not value.requires_grad
    assert torch.is_grad_enabled()  # the caller's mode is restored


def test_compute_of_an_empty_state_warns_naming_the_metric() -> None:
    m = MeanSquaredError()
    m.update(torch.ones(2), torch.zeros(2))  # the result dropped: the commonest migration mistake
    with pytest.warns(UserWarning, match="MeanSquaredError.compute: the state is empty"):
        m.compute()
    for metric in (sm.MulticlassAccuracy(num_classes=3), sm.Max()):
        with pytest.warns(UserWarning, match=f"{type(metric).__name__}.compute: the state is empty"):
            metric.compute()
    with pytest.warns(UserWarning, match="Sum.compute: the state is empty") as seen:
        sm.Collection(total=sm.Sum(), top=sm.Max().update(torch.ones(1))).compute()
    assert len(seen) == 1  # the empty member only


def test_an_empty_rank_among_full_ones_does_not_warn() -> None:
    import warnings

    def body(rank: int) -> float:
        m = sm.Mean()
        if rank == 1:
            m = m.update(torch.tensor([2.0, 4.0]))
        return float(m.compute())

    with warnings.catch_warnings():  # here, not in the rank threads: the filters are global and not thread-safe
        warnings.simplefilter("error")
        assert sm.simulate(body, 3) == [3.0, 3.0, 3.0]


def test_mask_leaves_rows_out_exactly() -> None:
    preds, target = torch.tensor([1.0, 5.0, 2.0, 9.0]), torch.tensor([1.0, 0.0, 0.0, 0.0])
    keep = torch.tensor([True, False, True, False])
    m = MeanSquaredError().update(preds, target, mask=keep)
    assert m.compute().item() == MeanSquaredError().update(preds[keep], target[keep]).compute().item() == 2.0
    none = torch.zeros(4, dtype=torch.bool)
    assert MeanSquaredError().update(preds, target, mask=none).count.item() == 0
    with pytest.raises(TypeError, match="mask must be a 1-d bool tensor"):
        MeanSquaredError().update(preds, target, mask=torch.ones(4))
    with pytest.raises(ValueError, match="mask covers 3 rows but argument 0 has 4"):
        MeanSquaredError().update(preds, target, mask=keep[:3])
    c = sm.Collection(mse=MeanSquaredError(), acc=sm.BinaryAccuracy())
    out = c.update(torch.tensor([0.9, 0.2, 0.1]), torch.tensor([1, 0, 1]), mask=torch.tensor([True, True, False]))
    assert out.compute()["acc"].item() == 1.0


def test_compute_never_changes_the_metric() -> None:
    m = MeanSquaredError().update(torch.ones(2), torch.zeros(2))
    with sm.use_reducer(lambda t, op: t * 10):
        assert m.compute().item() == pytest.approx(1.0)
    assert m.sum_sq.item() == 2.0 and not m._reduced


def test_forward_returns_batch_value_locally_and_accumulates() -> None:
    calls = []
    m = MeanSquaredError().update(torch.tensor([2.0]), torch.zeros(1))
    with sm.use_reducer(lambda t, op: calls.append(op) or t):
        m2, batch_value = m.forward(torch.tensor([1.0, 1.0]), torch.zeros(2))
    assert calls == []
    assert batch_value.item() == 1.0
    assert m2.count.item() == 3 and m2.sum_sq.item() == 6.0


def test_to_casts_every_state() -> None:
    m = MeanSquaredError().update(torch.ones(2), torch.zeros(2)).to(torch.float64)
    assert m.sum_sq.dtype == torch.float64 and m.count.dtype == torch.float64


def test_replace_rejects_unknown_fields() -> None:
    with pytest.raises(TypeError, match="MeanSquaredError.replace: unknown field"):
        MeanSquaredError().replace(nope=1)


def test_state_dict_round_trip_and_refusals() -> None:
    m = Bins().update(torch.tensor([1.0, 3.0, 2.0]))
    sd = m.state_dict()
    back = Bins().load_state_dict(sd)
    assert back.rows.tolist() == [1.0, 3.0, 2.0] and back.inner.sum_sq.item() == 14.0
    longer = dict(sd, rows=torch.arange(5.0))  # dim 0 of a cat leaf may differ
    assert Bins().load_state_dict(longer).rows.numel() == 5
    with pytest.raises(ValueError, match="missing keys \\['rows'\\]"):
        Bins().load_state_dict({k: v for k, v in sd.items() if k != "rows"})
    with pytest.raises(ValueError, match="unexpected keys \\['extra'\\]"):
        Bins().load_state_dict(dict(sd, extra=torch.zeros(1)))
    with pytest.raises(ValueError, match="'inner.count' has dtype torch.float32"):
        Bins().load_state_dict(dict(sd, **{"inner.count": torch.tensor(1.0)}))
    with pytest.raises(ValueError, match="'bins.b' has shape \\(3,\\)"):
        Bins().load_state_dict(dict(sd, **{"bins.b": torch.zeros(3)}))


def test_pickle_and_torch_save_round_trip() -> None:
    m = Bins().update(torch.tensor([1.0, 2.0])).reduce()
    again = pickle.loads(pickle.dumps(m))
    assert again._reduced and again.rows.tolist() == [1.0, 2.0]
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert type(loaded) is Bins and loaded.compute()["n"] == 2


def test_state_without_op_requires_a_merge() -> None:
    with pytest.raises(TypeError, match="declare no reduce op"):

        class Broken(sm.Metric):
            x: torch.Tensor = sm.state(default=0.0)


def test_state_default_kinds() -> None:
    class Kinds(sm.Metric):
        a: torch.Tensor = sm.state("sum", default=torch.ones(2))
        b: torch.Tensor = sm.state("prod")
        c: torch.Tensor = sm.state("sum", default=lambda: torch.zeros(3, dtype=torch.int32))

    k = Kinds()
    assert k.a.tolist() == [1.0, 1.0] and k.b.item() == 1.0 and k.c.dtype == torch.int32
    assert Kinds().a is not k.a  # every instance gets its own tensor
    with pytest.raises(ValueError, match="unknown reduce op 'mean'"):
        sm.state("mean")
    with pytest.raises(TypeError, match="state default must be"):
        sm.state("sum", default="zero")


def test_an_op_less_state_shaped_by_init_must_hold_metrics() -> None:
    class Nested(sm.Metric):
        inner: Any = sm.state(init=lambda m: sm.Sum())

        def compute(self) -> Any:
            return self.inner.compute()

    class Bare(sm.Metric):
        total: Any = sm.state(init=lambda m: torch.zeros(2))

        def compute(self) -> Any:
            return self.total

    assert isinstance(Nested().inner, sm.Sum)
    with pytest.raises(TypeError, match="Bare: state field 'total' declares no reduce op"):
        Bare()


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.id)
def test_the_leaves_compute_reads_off_the_states_are_the_pytree_leaves(entry: Entry) -> None:
    # _owned and _is_empty read a metric's leaves on every compute without the pytree walk where they can
    m = feed(entry.make(), data(entry.kind, 7, 0))
    for x in (entry.make(), m, m.reduce(), sm.Collection(a=m)):
        assert [id(t) for t in metric_module._leaves(x)] == [id(t) for t in sm.tree.leaves(x)]


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.id)
def test_a_reduced_metric_rebuilt_off_its_states_is_the_one_the_pytree_rebuilds(entry: Entry) -> None:
    # the reduction puts reduced leaves back by _rebuild where every state is a tensor, else by the pytree
    m = feed(entry.make(), data(entry.kind, 7, 0))
    m._config()  # cached, as after a first reduction
    leaves = [t.clone() for t in sm.tree.leaves(m)]
    fast = sync_module._rebuilt(m, leaves)
    walked = sm.tree.unflatten(sm.tree.structure(m), leaves)._with_mark(True)
    assert type(fast) is type(walked) and fast._reduced and walked._reduced
    assert [id(t) for t in sm.tree.leaves(fast)] == [id(t) for t in leaves]
    assert sm.tree.structure(fast) == sm.tree.structure(walked)
    assert fast._config() == m._config()
