"""Cross-participant reduction: values, cat shards, subgroups, call counts, agreement.

Every test taking ``world`` runs its body twice: in ``sm.simulate`` threads and
in real ``torch.distributed`` gloo processes on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
import torch.distributed as dist
from custom import MeanSquaredError
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics import exchange
from scopedmetrics.classification import BinaryAUROC
from scopedmetrics.reducers import Collective


class RunningVariance(sm.Metric):
    """Count, mean and M2 merged with Chan's formula: a whole-state merge."""

    n: torch.Tensor = sm.state(default=0.0)
    mean: torch.Tensor = sm.state(default=0.0)
    m2: torch.Tensor = sm.state(default=0.0)

    def update(self, x: torch.Tensor) -> RunningVariance:
        x = x.double().float()
        if x.numel() == 0:
            return self.replace()
        batch = RunningVariance(n=torch.tensor(float(x.numel())), mean=x.mean(), m2=((x - x.mean()) ** 2).sum())
        return self.merge(batch)

    def merge(self, other: RunningVariance) -> RunningVariance:
        n = self.n + other.n
        if float(n) == 0:
            return self.replace()
        delta = other.mean - self.mean
        mean = self.mean + delta * other.n / n
        m2 = self.m2 + other.m2 + delta**2 * self.n * other.n / n
        return self.replace(n=n, mean=mean, m2=m2)

    def compute(self) -> torch.Tensor:
        return self.m2 / self.n


# -- rank bodies (module level, so gloo workers can import them) -------------


def rmse_case(rank: int) -> float:
    per_sample = 20.0 if rank == 0 else 10.0  # SSE 200 and 100, ten samples each
    m = MeanSquaredError(squared=False).update(torch.full((10,), math.sqrt(per_sample)), torch.zeros(10))
    return float(m.compute())


def cat_case(rank: int, trailing: tuple[int, ...]) -> torch.Tensor:
    rows = torch.arange(rank * 2 * int(np.prod(trailing)), dtype=torch.float32).reshape(rank * 2, *trailing)
    m = sm.Cat()
    if rows.shape[0]:
        m = m.update(rows + 100 * rank)
    return m.compute()


def large_rows_case(rank: int, scores: torch.Tensor, labels: torch.Tensor, bounds: list[int]) -> float:
    """Exact AUROC whose shards arrive as one large batch and a small one, the buffers reused after."""
    part = slice(bounds[rank], bounds[rank + 1])
    s, t = scores[part].clone(), labels[part].clone()  # tensors of their own, as a model's outputs are
    cut = len(s) - 5
    big = s[:cut].clone()
    m = BinaryAUROC().update(big, t[:cut].clone()).update(s[cut:], t[cut:])
    big.zero_()  # the caller's buffer, refilled: the state keeps what update was given
    return float(m.compute())


def empty_joins_case(rank: int) -> torch.Tensor:
    m = sm.Cat()  # float32, shape (0,)
    if rank == 1:
        m = m.update(torch.ones(3, 2, dtype=torch.int64))
    return m.compute()


def variance_case(rank: int, data: torch.Tensor, bounds: list[int]) -> float:
    return float(RunningVariance().update(data[bounds[rank] : bounds[rank + 1]]).compute())


def plain_function_case(rank: int, data: torch.Tensor, bounds: list[int]) -> tuple[float, float]:
    inner = sm.get_reducer()
    shard = data[bounds[rank] : bounds[rank + 1]]
    with sm.use_reducer(lambda t, op: inner(t, op)):  # a plain function over the same world
        var = float(RunningVariance().update(shard).compute())
        total = float(sm.Sum().update(shard).compute())
    return var, total


def subgroup_case(rank: int, keys: list[Any]) -> tuple[float, float, int]:
    m = sm.Sum().update(torch.tensor([float(rank + 1)]))
    split = sm.subgroup(keys[rank])
    with sm.use_reducer(split):
        per_group = float(m.compute())
    overall = float(m.compute())
    size = getattr(split, "size", 1)
    return per_group, overall, size


def nested_subgroup_case(rank: int) -> tuple[float, float, float]:
    m = sm.Sum().update(torch.tensor([float(2**rank)]))
    with sm.use_reducer(sm.subgroup(rank < 3)):  # {0,1,2} and {3}
        outer = float(m.compute())
        with sm.use_reducer(sm.subgroup(rank % 2)):  # {0,2}, {1} and {3}
            inner = float(m.compute())
        again = float(m.compute())
    assert outer == again
    with sm.use_reducer(sm.subgroup(rank < 3)):  # the same split again reuses the group
        assert float(m.compute()) == outer
    return outer, inner, float(m.compute())


def _torch_calls(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run ``fn`` counting every torch.distributed collective it issues."""
    calls: list[str] = []
    names = ["all_gather", "all_reduce", "all_gather_into_tensor", "broadcast", "barrier", "all_gather_object",
             "gather", "scatter", "reduce", "all_to_all", "broadcast_object_list"]
    saved = {n: getattr(dist, n) for n in names}
    for n in names:
        setattr(dist, n, (lambda name, f: lambda *a, **k: calls.append(name) or f(*a, **k))(n, saved[n]))
    try:
        return fn(), calls
    finally:
        for n, f in saved.items():
            setattr(dist, n, f)


def ten_metrics(num: int) -> sm.Collection:
    kinds: list[Callable[[], sm.Metric]] = [sm.Sum, sm.Mean, sm.Max, sm.Min, sm.Cat, MeanSquaredError]
    return sm.Collection({f"m{i}": kinds[i % len(kinds)]() for i in range(num)})


@contextlib.contextmanager
def gather_limit(limit: int | None) -> Iterator[None]:
    """Set ``exchange.GATHER_LIMIT`` for a block (``None``: leave it)."""
    saved = exchange.GATHER_LIMIT
    exchange.GATHER_LIMIT = saved if limit is None else limit
    try:
        yield
    finally:
        exchange.GATHER_LIMIT = saved


def count_case(
    rank: int, num: int, limit: int | None = None, rows: int = 3
) -> tuple[list[str], list[str], dict[str, Any]]:
    """Count the collectives of one compute(); ``limit`` is applied here only in a process of its own."""
    counting = CountingComm(sm.get_reducer().comm)
    c = _update_all(ten_metrics(num), torch.arange(float(rank * rows)))
    with gather_limit(limit if dist.is_initialized() else None), sm.use_reducer(Collective(counting)):
        values, torch_calls = _torch_calls(c.compute)
    return counting.calls, torch_calls, values


def _update_all(c: sm.Collection, x: torch.Tensor) -> sm.Collection:
    new = {}
    for name in c.keys():
        m = c[name]
        new[name] = m.update(x, torch.zeros_like(x)) if isinstance(m, MeanSquaredError) else m.update(x)
    return c.replace(**new)


def disagree_case(rank: int, what: str) -> Any:
    if what == "config":
        m = MeanSquaredError(squared=rank == 0)
    elif what == "type":
        m = sm.Sum() if rank == 0 else sm.Max()
    elif what == "dtype":
        m = sm.Sum().replace(sum_value=torch.tensor(0.0, dtype=torch.float64 if rank == 1 else torch.float32))
    elif what == "shape":
        m = sm.Sum().replace(sum_value=torch.zeros(2 if rank == 1 else 3))
    elif what == "keys":
        m = sm.Collection({"a": sm.Sum(), ("b" if rank == 1 else "c"): sm.Sum()})
    elif what == "cat_rows":
        m = sm.Cat().update(torch.ones(2, 3 if rank == 1 else 4))
    else:
        raise AssertionError(what)
    return m.compute()


def timeout_case(rank: int) -> Any:
    if rank == 1:
        return "skipped compute"
    if dist.is_initialized():
        with sm.use_reducer(sm.distributed(timeout=1.5)):
            return sm.Sum().compute()
    return sm.Sum().compute()  # simulate: the world's own timeout applies


# -- the tests ---------------------------------------------------------------


def test_rmse_is_reduced_before_the_square_root(world: Any) -> None:
    values = world.run(rmse_case, 2)
    assert values == pytest.approx([math.sqrt(300 / 20)] * 2, abs=1e-6)
    assert values[0] == pytest.approx(3.873, abs=1e-3)
    # The per-rank mean is (sqrt(20) + sqrt(10)) / 2 = 3.817 (quoted elsewhere as 3.815): wrong either way.
    per_rank_mean = (math.sqrt(20) + math.sqrt(10)) / 2
    assert per_rank_mean == pytest.approx(3.817, abs=1e-3) and abs(values[0] - per_rank_mean) > 0.05


def test_default_reducer_under_gloo_is_distributed() -> None:
    from conftest import gloo_world

    assert gloo_world(2).run(_default_repr) == ["Collective(distributed)"] * 2


def _default_repr(rank: int) -> str:
    r = sm.get_reducer()
    return f"{type(r).__name__}({'distributed' if r.comm.__class__.__name__ == 'TorchComm' else '?'})"


def test_large_batches_reduce_like_any_other(world: Any) -> None:
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(7)
    n = 20_000  # float32: 80 KiB per shard
    scores, labels = torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)
    bounds = [0, n // 2 - 1000, n]  # uneven shards
    expected = roc_auc_score(labels.numpy(), scores.numpy())
    for value in world.run(large_rows_case, 2, scores, labels, bounds):
        assert value == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("trailing", [(), (3,)])
def test_cat_uneven_and_empty_shards_keep_rank_order(world: Any, trailing: tuple[int, ...]) -> None:
    values = world.run(cat_case, 3, trailing)
    expected = torch.cat([_rows(r, trailing) for r in range(3)])
    for v in values:
        assert torch.equal(v, expected)
    assert values[0].shape[0] == 0 + 2 + 4


def _rows(rank: int, trailing: tuple[int, ...]) -> torch.Tensor:
    n = rank * 2
    return torch.arange(n * int(np.prod(trailing)), dtype=torch.float32).reshape(n, *trailing) + 100 * rank


def test_empty_cat_leaf_joins_others_dtype_and_shape(world: Any) -> None:
    for v in world.run(empty_joins_case, 3):
        assert v.dtype == torch.int64 and v.shape == (3, 2)


def test_whole_state_merge_folds_in_rank_order(world: Any) -> None:
    data = torch.randn(40) * 3 + 1000
    bounds = [0, 0, 17, 40]  # rank 0 empty
    for v in world.run(variance_case, 3, data, bounds):
        assert v == pytest.approx(float(np.var(data.numpy())), rel=1e-4)


def test_plain_function_reducer_handles_leaves_and_whole_state_merges(world: Any) -> None:
    data = torch.randn(30)
    bounds = [0, 11, 11, 30]
    for var, total in world.run(plain_function_case, 3, data, bounds):
        assert var == pytest.approx(float(np.var(data.numpy())), rel=1e-4)
        assert total == pytest.approx(float(data.sum()), abs=1e-4)


def test_subgroups_of_unequal_sizes(world: Any) -> None:
    keys = ["en", "de", "en", "en"]
    values = world.run(subgroup_case, 4, keys)
    assert [v[0] for v in values] == [1 + 3 + 4, 2.0, 1 + 3 + 4, 1 + 3 + 4]
    assert all(v[1] == 10.0 for v in values)
    assert [v[2] for v in values] == [3, 1, 3, 3]  # the single-member group is local()


def test_nested_subgroups(world: Any) -> None:
    values = world.run(nested_subgroup_case, 4)
    assert [v[0] for v in values] == [7.0, 7.0, 7.0, 8.0]
    assert [v[1] for v in values] == [5.0, 2.0, 5.0, 8.0]
    assert all(v[2] == 15.0 for v in values)


def test_collective_count_does_not_grow_with_members(world: Any) -> None:
    few = world.run(count_case, 3, 10)
    many = world.run(count_case, 3, 30)
    for calls, torch_calls, _ in few + many:
        assert calls == ["all_gather"]  # the header, and the payloads: they fit in the first gather
        if world.kind == "gloo":
            assert torch_calls == ["all_gather"]
    # A payload larger than the first gather's room takes a second, padded all_gather.
    rows = exchange.first_room(3) // 4  # rank 2's Cat alone holds twice the room
    big = world.run(count_case, 3, 10, None, rows)
    for calls, torch_calls, values in big:
        assert calls == ["all_gather", "all_gather"]
        assert torch.equal(values["m4"], torch.cat([torch.arange(float(r * rows)) for r in range(3)]))
        if world.kind == "gloo":
            assert torch_calls == ["all_gather", "all_gather"]
    # Buckets too large to gather are all-reduced instead: one call per (op, dtype); max and min as order keys,
    # both by MAX (gloo's MIN and MAX drop a NaN)
    with gather_limit(0 if world.kind == "simulate" else None):  # threads share the module: set it once
        large = world.run(count_case, 3, 10, 0)
    for calls, torch_calls, values in large:
        assert calls[0] == "all_gather"
        assert sorted(calls[1:]) == sorted(["all_reduce:sum", "all_reduce:sum", "all_reduce:max", "all_reduce:max"])
        assert values.keys() == few[0][2].keys()
        assert all(torch.allclose(values[k], few[0][2][k], equal_nan=True) for k in values)
        if world.kind == "gloo":
            assert len(torch_calls) == 5
    x = torch.cat([torch.arange(float(r * 3)) for r in range(3)])
    values = few[0][2]
    assert values["m0"].item() == pytest.approx(float(x.sum()))
    assert values["m2"].item() == pytest.approx(float(x.max()))
    assert torch.equal(values["m4"], x)


@pytest.mark.parametrize(
    ("what", "needle"),
    [
        ("config", "squared=False"),
        ("type", "Max"),
        ("dtype", "torch.float64"),
        ("shape", "(2,)"),
        ("keys", "Collection(a, b)"),
        ("cat_rows", "rows of shape"),
    ],
)
def test_disagreeing_ranks_all_raise_sync_error(world: Any, what: str, needle: str) -> None:
    outcomes = world.results(disagree_case, 2, what)
    for ok, err in outcomes:
        assert not ok and isinstance(err, sm.SyncError), err
        assert needle in str(err) and "rank" in str(err)


def test_a_rank_that_never_arrives_makes_the_others_fail(world: Any) -> None:
    if world.kind == "simulate":
        outcomes = _simulate_with_timeout()
    else:
        outcomes = world.results(timeout_case, 2, timeout=60)
    ok0, err0 = outcomes[0]
    assert not ok0 and isinstance(err0, sm.SyncError)
    assert outcomes[1] == (True, "skipped compute")


def _simulate_with_timeout() -> list[tuple[bool, Any]]:
    from worlds import simulate_results

    return simulate_results(timeout_case, 2, timeout=1.0)


def test_reduce_and_compute_take_any_tree_in_one_pass() -> None:
    def body(rank: int) -> tuple[Any, list[str]]:
        counting = CountingComm(sm.get_reducer().comm)
        mean, biggest = sm.Mean().update(torch.tensor([float(rank)])), sm.Max().update(torch.tensor([rank * 1.0]))
        tree = {"loss": mean, "cls": [sm.Sum(), biggest]}
        with sm.use_reducer(Collective(counting)):
            return sm.compute(tree), counting.calls

    for values, calls in sm.simulate(body, 3):
        assert values["loss"].item() == pytest.approx(1.0)
        assert values["cls"][1].item() == 2.0
        assert calls == ["all_gather"]  # one pass: the header and every payload


def test_simulate_reraises_the_original_exception() -> None:
    def body(rank: int) -> Any:
        if rank == 2:
            raise KeyError("bad shard")
        return sm.Sum().compute()

    with pytest.raises(KeyError, match="bad shard"):
        sm.simulate(body, 3, timeout=30)


def test_subgroup_keys_must_pickle() -> None:
    def body(rank: int) -> Any:
        return sm.subgroup(lambda: rank)

    with pytest.raises(TypeError, match="subgroup keys must pickle"):
        sm.simulate(body, 2)


def unsupported_dtype_case(rank: int) -> Any:
    m = sm.Cat()
    if rank == 1:  # a dtype the byte payload cannot carry, on one rank only
        m = m.replace(value=torch.zeros(2, dtype=torch.uint16))
    else:
        m = m.update(torch.ones(2))
    return m.compute()


def test_a_rank_failing_to_prepare_fails_every_rank_without_a_hang(world: Any) -> None:
    outcomes = world.results(unsupported_dtype_case, 3)
    assert not outcomes[1][0] and isinstance(outcomes[1][1], TypeError) and "uint16" in str(outcomes[1][1])
    for r in (0, 2):
        ok, err = outcomes[r]
        assert not ok and isinstance(err, sm.SyncError) and "rank 1: TypeError" in str(err)
