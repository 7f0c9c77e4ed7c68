"""The two reduction plans (``scopedmetrics/exchange.py``) give the same states, and the reduce plan is checked.

Small groups gather (one ``all_gather`` of a header and the payloads); groups of
``exchange.CROSSOVER`` ranks or more agree by one MAX ``all_reduce`` and reduce
fixed-size states by ``all_reduce``. Here the crossover is moved so both plans
run at small sizes, in simulate and in real gloo processes: every catalogue
metric reduces to the same state under both, on uneven shards with empty ranks,
every rank gets the same bits, and disagreements and failures stay loud.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import catalogue
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import uneven_slices
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics import exchange
from scopedmetrics.reducers import Collective


@contextlib.contextmanager
def plan(name: str) -> Iterator[None]:
    """Run a block under the ``"gather"`` or the ``"reduce"`` plan.

    Simulated ranks are threads sharing the module, so the test sets the plan
    around ``simulate`` and the rank bodies leave it; a gloo worker (its own
    process, its main thread) sets its own.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = exchange.CROSSOVER
    exchange.CROSSOVER = 1 if name == "reduce" else 1 << 20
    try:
        yield
    finally:
        exchange.CROSSOVER = saved


def states_case(rank: int, ids: list[str], size: int, name: str) -> list[dict[str, torch.Tensor]]:
    """Every entry's reduced state on this rank under plan ``name``, from uneven shards of one data set."""
    out = []
    for i, id_ in enumerate(ids):
        entry = catalogue.BY_ID[id_]
        arrays = catalogue.data(entry.kind, 23, seed=i)
        sl = uneven_slices(23, size, seed=i + size)[rank]
        m = catalogue.feed(entry.make(), arrays, sl)
        with plan(name):
            out.append(catalogue.state_of(m.reduce()))
    return out


def _fixed_size_ids() -> list[str]:
    return [e.id for e in catalogue.CATALOGUE if e.kind not in catalogue.VISION_KINDS]


@pytest.mark.parametrize("size", [2, 3])
def test_every_catalogue_metric_reduces_alike_under_both_plans(size: int) -> None:
    ids = [e.id for e in catalogue.CATALOGUE]
    with plan("gather"):
        gathered = sm.simulate(lambda r: states_case(r, ids, size, "gather"), size)
    with plan("reduce"):
        reduced = sm.simulate(lambda r: states_case(r, ids, size, "reduce"), size)
    for rank in range(size):
        for id_, a, b in zip(ids, gathered[rank], reduced[rank]):
            assert a.keys() == b.keys(), id_
            for k in a:
                assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, (id_, k)
                if a[k].dtype.is_floating_point or a[k].dtype.is_complex:
                    assert torch.allclose(a[k], b[k], rtol=1e-6, atol=1e-6, equal_nan=True), (id_, k)
                else:
                    assert torch.equal(a[k], b[k]), (id_, k)
            for k in a:  # the same bits on every rank
                assert torch.equal(
                    b[k].view(-1).view(torch.uint8), reduced[0][ids.index(id_)][k].view(-1).view(torch.uint8)
                )


def test_both_plans_agree_in_gloo(world: Any) -> None:
    ids = _fixed_size_ids()[::3]
    with plan("gather"):
        gathered = world.run(states_case, 3, ids, 3, "gather")
    with plan("reduce"):
        reduced = world.run(states_case, 3, ids, 3, "reduce")
    for a_rank, b_rank in zip(gathered, reduced):
        for id_, a, b in zip(ids, a_rank, b_rank):
            for k in a:
                assert (
                    torch.allclose(a[k].double(), b[k].double(), equal_nan=True)
                    if a[k].is_floating_point()
                    else torch.equal(a[k], b[k])
                ), (id_, k)


def untouched_case(rank: int, ids: list[str], name: str) -> list[bool]:
    """Whether reducing each entry left the caller's metric holding the states it held (collectives work in place)."""
    out = []
    for i, id_ in enumerate(ids):
        entry = catalogue.BY_ID[id_]
        m = catalogue.feed(entry.make(), catalogue.data(entry.kind, 23, seed=i), uneven_slices(23, 3, seed=i + 3)[rank])
        before = {k: v.clone() for k, v in catalogue.state_of(m).items()}
        with plan(name):
            m.reduce()
        after = catalogue.state_of(m)
        out.append(all(torch.equal(before[k], after[k]) or torch.isnan(before[k]).any().item() for k in before))
    return out


def test_a_reduction_leaves_the_caller_s_states_as_they_were(world: Any) -> None:
    # gloo's all_reduce writes into the buffer it is given: a bucket of one leaf must travel as a copy too
    ids = _fixed_size_ids()[::3]
    for name in ("gather", "reduce"):
        with plan(name):
            assert world.run(untouched_case, 3, ids, name) == [[True] * len(ids)] * 3, name


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_FLOATS, min_size=3, max_size=3), min_size=1, max_size=6), st.sampled_from(["max", "min"]))
def test_order_keys_reduce_like_torch_maximum_and_minimum(rows: list[list[float]], op: str) -> None:
    """Floats as order-preserving int64: the max of keys decodes to torch.maximum/minimum's fold (NaN wins)."""
    x = torch.tensor(rows, dtype=torch.float32)
    keys = exchange._order_keys(x.double(), op)
    got = exchange._from_keys(keys.amax(0), op, torch.float64).float()
    want = x[0]
    for r in x[1:]:
        want = torch.maximum(want, r) if op == "max" else torch.minimum(want, r)
    assert torch.equal(got.isnan(), want.isnan())
    ok = ~want.isnan()
    assert torch.equal(got[ok], want[ok])


def calls_case(rank: int, name: str) -> tuple[list[str], dict[str, torch.Tensor]]:
    """One compute() of a mixed collection (sums of two dtypes, max, min, cat, merge) with its calls counted."""
    from scopedmetrics.regression import MeanSquaredError, PearsonCorrCoef

    x = torch.arange(float(rank * 4)) + 1  # rank 0 holds nothing
    ms: dict[str, sm.Metric] = {"s": sm.Sum(), "m": sm.Mean(), "hi": sm.Max(), "lo": sm.Min(), "cat": sm.Cat()}
    if x.numel():
        ms = {k: m.update(x) for k, m in ms.items()}
    mse, r = MeanSquaredError(), PearsonCorrCoef()
    if x.numel():
        mse, r = mse.update(x, x * 2), r.update(x, x * x)
    c = sm.Collection(ms, mse=mse, r=r)
    counting = CountingComm(sm.get_reducer().comm)
    with plan(name), sm.use_reducer(Collective(counting)):
        values = c.compute()
    return counting.calls, values


def test_reduce_plan_calls_and_values(world: Any) -> None:
    with plan("gather"):
        gathered = world.run(calls_case, 3, "gather")
    with plan("reduce"):
        reduced = world.run(calls_case, 3, "reduce")
    for (gcalls, gv), (rcalls, rv) in zip(gathered, reduced):
        assert gcalls == ["all_gather"]
        # agreement (max, min ride along), float32 sums, int64 sums, the cat and merge rows
        assert rcalls[0] == "all_reduce:max" and rcalls[-1] == "all_gather" and len(rcalls) <= 4, rcalls
        for k in gv:
            assert torch.allclose(gv[k], rv[k], equal_nan=True), k
    assert torch.equal(reduced[0][1]["cat"], torch.cat([torch.arange(float(r * 4)) + 1 for r in range(3)]))


def disagree_case(rank: int, name: str) -> str:
    m = sm.Sum() if rank != 1 else sm.Max()
    with plan(name):
        try:
            m.update(torch.ones(2)).compute()
        except sm.SyncError as err:
            return str(err)
    return "no error"


def cat_shape_case(rank: int) -> str:
    m = sm.Cat().update(torch.ones(2, 3) if rank != 2 else torch.ones(2, 4))
    with plan("reduce"):
        try:
            m.compute()
        except sm.SyncError as err:
            return str(err)
    return "no error"


def failing_case(rank: int) -> str:
    class Refusing(sm.Metric):
        x: torch.Tensor = sm.state("max", default=0.0)

        def compute(self) -> torch.Tensor:
            return self.x

    m = Refusing()
    if rank == 1:
        m = m.replace(x=torch.tensor(1 + 1j))  # a complex max cannot be ordered
    with plan("reduce"):
        try:
            m.reduce()
        except (sm.SyncError, TypeError) as err:
            return f"{type(err).__name__}: {err}"
    return "no error"


def test_reduce_plan_stays_loud(world: Any) -> None:
    with plan("reduce"):
        disagree = world.run(disagree_case, 3, "reduce")
        cat_shape = world.run(cat_shape_case, 3)
        msgs = world.run(failing_case, 3)
    for msg in disagree:
        assert "disagree on what they reduce" in msg and "rank 1" in msg
    for msg in cat_shape:
        assert "disagree on cat state" in msg and "rank 2" in msg
    assert "cannot order" in msgs[1]
    assert all("rank 1" in m for r, m in enumerate(msgs) if r != 1)


def host_ops_case(rank: int, members: int) -> int:
    """Torch calls on rank 0 during one compute() of ``members`` small metrics (the exchange's host work)."""
    from torch.overrides import TorchFunctionMode

    class Count(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            Count.n += getattr(func, "__name__", "") != "__get__"  # operations, not attribute reads
            return func(*args, **(kwargs or {}))

    c = sm.Collection(
        {f"m{i}": (sm.Sum, sm.Mean, sm.Max)[i % 3]().update(torch.ones(2) * rank) for i in range(members)}
    )
    sm.compute(c)  # warm
    if rank:
        sm.compute(c)
        return 0
    with Count():
        sm.compute(c)
    return Count.n


@pytest.mark.parametrize("name", ["gather", "reduce"])
def test_host_work_of_fixed_size_states_does_not_grow_with_the_group(name: str) -> None:
    with plan(name):
        small = sm.simulate(lambda r: host_ops_case(r, 30), 4)[0]
        large = sm.simulate(lambda r: host_ops_case(r, 30), 64)[0]
    assert large <= small * 1.1, (small, large)


def split_case(rank: int) -> tuple[list[str], list[str], float, float]:
    counting = CountingComm(sm.get_reducer().comm)
    counting.ident = sm.get_reducer().comm.ident  # type: ignore[method-assign]  # name the group as the inner one
    calls = []
    values = []
    with sm.use_reducer(Collective(counting)):
        for _ in range(2):
            before = len(counting.calls)
            with sm.use_reducer(sm.subgroup(rank % 2)):
                values.append(float(sm.Sum().update(torch.tensor([float(rank)])).compute()))
            calls.append(counting.calls[before:])
    first, second = calls
    return first, second, values[0], values[1]


def test_a_repeated_subgroup_is_checked_with_one_small_exchange(world: Any) -> None:
    for rank, (first, second, a, b) in enumerate(world.run(split_case, 3)):
        assert a == b == (2.0 if rank % 2 == 0 else 1.0)
        assert len(first) == 2 and len(second) == 1  # digests, then keys; the second time digests only
