"""``sm.reduce(tree, async_op=True)``: the values of a blocking reduce, while the caller goes on.

Each body runs in simulated threads and in real gloo processes (the ``world`` fixture).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import torch
import torch.distributed as dist
from test_rooted import _flat, _metrics

import scopedmetrics as sm
from scopedmetrics.classification import BinaryAUROC


def _equal(a: Any, b: Any) -> bool:
    xs, ys = _flat(a), _flat(b)
    return len(xs) == len(ys) > 0 and all(
        x.dtype == y.dtype and torch.equal(x, y) or (x.isnan().all() and y.isnan().all()) for x, y in zip(xs, ys)
    )


def _beside(rank: int) -> torch.Tensor:
    """What the caller does while a reduction runs: a blocking reduction, and a raw collective under gloo."""
    blocking = sm.compute(sm.Sum().update(torch.tensor([float(rank)])))
    if dist.is_initialized():
        raw = torch.tensor([rank + 1.0])
        dist.all_reduce(raw)
        blocking = blocking + raw
    return blocking


def same_values_case(rank: int, size: int, seed: int) -> tuple[bool, float]:
    tree = _metrics(rank, size, seed)
    pending = sm.reduce(tree, async_op=True)
    beside = _beside(rank)
    reduced = pending.wait()
    return _equal(sm.compute(reduced), sm.compute(tree)), float(beside)


@pytest.mark.parametrize(("size", "seed"), [(2, 1), (3, 2), (4, 3)])
def test_the_values_are_those_of_a_blocking_reduce(world: Any, size: int, seed: int) -> None:
    results = world.run(same_values_case, size, size, seed)
    expected = sum(range(size)) + (sum(range(1, size + 1)) if world.kind == "gloo" else 0)
    assert results == [(True, expected)] * size


def in_order_case(rank: int, size: int) -> list[bool]:
    """Five reductions of different trees in flight at once, waited for in reverse: each is its own."""
    trees = [[sm.Cat().update(torch.arange(rank + k + 1.0))] + [sm.Max().update(torch.tensor([rank * k]))] * k
             for k in range(5)]
    pending = [sm.reduce(t, async_op=True) for t in trees]
    return [_equal(sm.compute(p.wait()), sm.compute(t)) for p, t in zip(pending[::-1], trees[::-1])]


def test_reductions_run_in_the_order_they_were_started(world: Any) -> None:
    assert world.run(in_order_case, 3, 3) == [[True] * 5] * 3


def snapshot_case(rank: int) -> list[float]:
    """Updates made after the start (into the same ``cat`` buffer) are not in the reduction."""
    m = BinaryAUROC().update(torch.tensor([0.2, 0.8]), torch.tensor([0, 1]))
    pending = sm.reduce(m, async_op=True)
    later = m
    for _ in range(50):
        later = later.update(torch.tensor([0.9, 0.1]), torch.tensor([0, 1]))
    reduced = pending.wait()
    return [float(reduced.compute()), float(reduced.preds.shape[0]), float(later.preds.shape[0])]


def test_the_reduction_reads_the_tree_as_it_was_started(world: Any) -> None:
    assert world.run(snapshot_case, 2) == [[1.0, 4.0, 102.0]] * 2


def subgroup_case(rank: int) -> list[float]:
    with sm.use_reducer(sm.subgroup(rank % 2)):
        pending = sm.reduce(sm.Cat().update(torch.tensor([float(rank)])), async_op=True)
    _beside(rank)  # the world meanwhile, outside the subgroup
    return pending.wait().compute().tolist()


def test_the_reduction_spans_the_group_in_scope_when_started(world: Any) -> None:
    assert world.run(subgroup_case, 4) == [[0.0, 2.0], [1.0, 3.0], [0.0, 2.0], [1.0, 3.0]]


def disagreeing_case(rank: int) -> Any:
    m = sm.Sum() if rank == 0 else sm.Max()
    pending = sm.reduce(m.update(torch.ones(1)), async_op=True)
    return pending.wait()


def test_a_disagreement_is_raised_by_wait_on_every_rank(world: Any) -> None:
    for ok, err in world.results(disagreeing_case, 2):
        assert not ok and isinstance(err, sm.SyncError) and "disagree" in str(err), err


def test_without_a_collective_reducer_the_reduction_is_done_on_return() -> None:
    m = sm.Sum().update(torch.ones(3))
    pending = sm.reduce({"a": m}, async_op=True)
    assert pending.done() and pending.wait()["a"].compute() == 3.0 and pending.wait()["a"]._reduced
    threads: list[str] = []

    def doubling(t: torch.Tensor, op: str) -> torch.Tensor:
        threads.append(threading.current_thread().name)
        return t * 2

    with sm.use_reducer(doubling):  # a plain function may use the caller's group: it runs here, now
        pending = sm.reduce(m, async_op=True)
        assert pending.done() and threads == [threading.current_thread().name]
    assert pending.wait().compute() == 6.0


def test_a_leaf_that_is_not_a_metric_is_refused_at_the_call() -> None:
    before = threading.active_count()
    with pytest.raises(TypeError, match="leaf at 'b' is int, not a Metric"):
        sm.simulate(lambda r: sm.reduce({"a": sm.Sum(), "b": 3}, async_op=True), 2)
    assert threading.active_count() == before


def test_a_communicator_without_a_channel_is_refused() -> None:
    from scopedmetrics.comm import Comm
    from scopedmetrics.reducers import Collective

    class Bare(Comm):
        rank, size, timeout = 0, 2, None

        def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
            return [tensor, tensor]

        def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
            return tensor

        def subcomm(self, members: list[int]) -> Comm:
            return self

    with sm.use_reducer(Collective(Bare())):
        with pytest.raises(NotImplementedError, match="no second channel"):
            sm.reduce(sm.Sum(), async_op=True)


def absent_case(rank: int) -> Any:
    if rank == 1:  # never starts the reduction
        return None
    reducer = sm.distributed(timeout=2.0) if dist.is_initialized() else sm.get_reducer()
    with sm.use_reducer(reducer):
        pending = sm.reduce(sm.Sum().update(torch.ones(1)), async_op=True)
    return pending.wait()


def test_a_rank_that_never_starts_is_named_by_wait(world: Any) -> None:
    (ok, err), (ok1, _) = world.results(absent_case, 2, timeout=3.0 if world.kind == "simulate" else 30.0)
    assert ok1 and not ok and isinstance(err, sm.SyncError), err
    assert "[1]" in str(err), err


def compute_case(rank: int, size: int, seed: int) -> list[bool]:
    tree = _metrics(rank, size, seed)
    pending = [sm.compute(tree, async_op=True), sm.compute(tree, root=size - 1, async_op=True)]
    _beside(rank)
    blocking = sm.compute(tree)
    return [_equal(p.wait(), blocking) for p in pending]


@pytest.mark.parametrize(("size", "seed"), [(2, 4), (3, 5)])
def test_compute_with_async_op_gives_the_values_of_compute(world: Any, size: int, seed: int) -> None:
    assert world.run(compute_case, size, size, seed) == [[True, True]] * size


def test_a_bad_root_is_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="argument `root` must be a rank in"):
        sm.simulate(lambda r: sm.compute(sm.Cat(), root=5, async_op=True), 2)


def late_case(rank: int) -> list[Any]:
    sm.reduce(sm.Sum(), async_op=True).wait()  # the first call over a group meets the others to make the channel
    if rank == 1:
        time.sleep(1.0)  # starts late: rank 0's first, bounded wait runs out
    pending = sm.reduce(sm.Sum().update(torch.tensor([rank + 1.0])), async_op=True)
    outcomes: list[Any] = []
    if rank == 0:
        try:
            pending.wait(timeout=0.05)
        except TimeoutError as err:
            outcomes.append("goes on" in str(err))
    outcomes.append(float(pending.wait().compute()))
    return outcomes


def test_a_bounded_wait_that_runs_out_leaves_the_reduction_running(world: Any) -> None:
    assert world.run(late_case, 2) == [[True, 3.0], [3.0]]
