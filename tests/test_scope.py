"""The reducer stack: process default, scoped overrides, isolation across threads and tasks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics.scope import current_stack


def double(t: torch.Tensor, op: str) -> torch.Tensor:
    return t * 2


def test_default_is_local_without_distributed() -> None:
    assert repr(sm.get_reducer()) == "local()"


def test_global_custom_reducer_is_called_by_compute_and_reset_restores() -> None:
    seen = []

    def recording(t: torch.Tensor, op: str) -> torch.Tensor:
        seen.append((op, t.clone()))
        return t * 3  # a world of three identical ranks

    sm.set_reducer(recording)
    assert sm.get_reducer() is recording  # returned as given, not wrapped
    m = sm.Sum().update(torch.tensor([1.0, 1.0]))
    assert m.compute().item() == 6.0
    assert [op for op, _ in seen] == ["sum"]
    sm.reset_reducer()
    assert m.compute().item() == 2.0
    assert len(seen) == 1


def test_scoped_override_wins_and_nests_and_restores_on_error() -> None:
    sm.set_reducer(double)
    m = sm.Sum().update(torch.tensor([1.0]))
    with sm.use_reducer(sm.local()):
        assert m.compute().item() == 1.0
        with sm.use_reducer(lambda t, op: t * 5):
            assert m.compute().item() == 5.0
        assert m.compute().item() == 1.0
    assert m.compute().item() == 2.0
    with pytest.raises(RuntimeError, match="boom"):
        with sm.use_reducer(sm.local()):
            raise RuntimeError("boom")
    assert sm.get_reducer() is double


def test_set_reducer_rejects_non_callables() -> None:
    with pytest.raises(TypeError, match="callable"):
        sm.set_reducer(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        sm.use_reducer("sum")  # type: ignore[arg-type]


def test_scope_does_not_leak_to_other_threads_or_pools() -> None:
    seen = {}
    entered = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with sm.use_reducer(double):
            entered.set()
            release.wait(5)
            seen["holder"] = sm.get_reducer()

    t = threading.Thread(target=holder)
    t.start()
    entered.wait(5)
    seen["main"] = sm.get_reducer()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        seen["pool"] = pool.submit(sm.get_reducer).result()
    release.set()
    t.join()
    assert seen["holder"] is double
    assert repr(seen["main"]) == "local()" and repr(seen["pool"]) == "local()"


def test_scope_is_local_to_asyncio_tasks() -> None:
    async def task(r: object, gate: asyncio.Event, out: dict) -> None:
        with sm.use_reducer(r):  # type: ignore[arg-type]
            await gate.wait()
            out[id(r)] = sm.get_reducer() is r

    async def main() -> dict:
        gate, out = asyncio.Event(), {}
        a, b = (lambda t, op: t), (lambda t, op: t)
        tasks = [asyncio.create_task(task(a, gate, out)), asyncio.create_task(task(b, gate, out))]
        await asyncio.sleep(0)
        out["outside"] = repr(sm.get_reducer())
        gate.set()
        await asyncio.gather(*tasks)
        return out

    out = asyncio.run(main())
    assert out.pop("outside") == "local()"
    assert all(out.values()) and len(out) == 2


def test_block_inside_a_generator_does_not_leak_across_yield() -> None:
    def gen() -> Iterator[object]:
        with sm.use_reducer(double):
            yield sm.get_reducer()  # inside the generator, the block applies
            yield sm.get_reducer()

    g = gen()
    assert next(g) is double
    assert repr(sm.get_reducer()) == "local()"  # suspended: the caller does not see it
    with sm.use_reducer(sm.local()):
        assert next(g) is double
        assert repr(sm.get_reducer()) == "local()"
    g.close()
    assert repr(sm.get_reducer()) == "local()"


def test_generator_closing_out_of_order_keeps_callers_block() -> None:
    def gen() -> Iterator[None]:
        with sm.use_reducer(double):
            yield

    g = gen()
    next(g)
    inner = lambda t, op: t  # noqa: E731
    with sm.use_reducer(inner):
        g.close()  # exits the generator's block while the caller's is open
        assert sm.get_reducer() is inner
    assert repr(sm.get_reducer()) == "local()"


def test_subgroup_under_local_is_local_and_plain_function_refuses() -> None:
    assert repr(sm.subgroup("a")) == "local()"
    with sm.use_reducer(double):
        with pytest.raises(TypeError, match="plain function and cannot be split"):
            sm.subgroup("a")


def test_contextmanager_helpers_scope_their_caller() -> None:
    import contextlib

    @contextlib.contextmanager
    def evaluating() -> Iterator[None]:
        with sm.use_reducer(double):
            yield

    with evaluating():
        assert sm.get_reducer() is double
        assert sm.Sum().update(torch.ones(1)).compute().item() == 2.0
    assert repr(sm.get_reducer()) == "local()"


def test_manually_entered_block_stays_until_exited() -> None:
    block = sm.use_reducer(double)

    def enter() -> None:  # the opening frame returns, as in a notebook cell
        block.__enter__()

    enter()
    try:
        assert sm.get_reducer() is double
        with sm.use_reducer(sm.local()):
            assert repr(sm.get_reducer()) == "local()"
    finally:
        block.__exit__(None, None, None)
    assert repr(sm.get_reducer()) == "local()"


# -- however a block is opened, the innermost open one wins (the "exact or loud" issue) ----------------------


def triple(t: torch.Tensor, op: str) -> torch.Tensor:
    return t * 3


class InGroup:
    """A class-based manager whose ``__enter__`` opens the block (and ``__exit__`` closes it)."""

    def __init__(self, key: object) -> None:
        self.key = key

    def __enter__(self) -> InGroup:
        self._cm = sm.use_reducer(sm.subgroup(self.key))
        self._cm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(None, None, None)


class Trainer:
    """Trainer hooks: the block is entered in one callback and exited in another."""

    def __init__(self, key: object) -> None:
        self.key = key

    def on_validation_start(self) -> None:
        self._block = sm.use_reducer(sm.subgroup(self.key))
        self._block.__enter__()

    def on_validation_end(self) -> None:
        self._block.__exit__(None, None, None)

    def validate(self, m: sm.Sum) -> float:
        self.on_validation_start()
        try:
            return float(m.compute())
        finally:
            self.on_validation_end()


def test_class_based_manager_inside_simulate_gives_the_group_value_not_the_world_s() -> None:
    def rank_fn(rank: int) -> tuple[float, float]:
        m = sm.Sum().update(torch.tensor([float(rank + 1)]))  # the world: 1 + 2 + 3 + 4 = 10
        with InGroup(rank % 2):
            group = m.compute().item()  # {0, 2}: 4, {1, 3}: 6
        return group, m.compute().item()

    assert sm.simulate(rank_fn, world_size=4) == [(4.0, 10.0), (6.0, 10.0), (4.0, 10.0), (6.0, 10.0)]


def test_trainer_hooks_inside_simulate_give_the_group_value() -> None:
    def rank_fn(rank: int) -> tuple[float, float]:
        m = sm.Sum().update(torch.tensor([float(rank + 1)]))
        return Trainer(rank % 2).validate(m), m.compute().item()

    assert sm.simulate(rank_fn, world_size=4) == [(4.0, 10.0), (6.0, 10.0), (4.0, 10.0), (6.0, 10.0)]


def test_asynccontextmanager_helper_inside_simulate_gives_the_group_value() -> None:
    @contextlib.asynccontextmanager
    async def in_group(key: object) -> AsyncIterator[None]:
        with sm.use_reducer(sm.subgroup(key)):
            yield

    async def evaluate(m: sm.Sum, key: object) -> float:
        async with in_group(key):
            await asyncio.sleep(0)
            return m.compute().item()

    def rank_fn(rank: int) -> tuple[float, float]:
        m = sm.Sum().update(torch.tensor([float(rank + 1)]))
        return asyncio.run(evaluate(m, rank % 2)), m.compute().item()  # the task copies the rank's context

    assert sm.simulate(rank_fn, world_size=4) == [(4.0, 10.0), (6.0, 10.0), (4.0, 10.0), (6.0, 10.0)]


def test_a_block_opened_by_hooks_wins_over_an_enclosing_with_block() -> None:
    block = sm.use_reducer(triple)
    m = sm.Sum().update(torch.ones(1))
    with sm.use_reducer(double):
        block.__enter__()  # a hook: the opening frame is this test, but it could have returned
        assert sm.get_reducer() is triple and m.compute().item() == 3.0
        block.__exit__(None, None, None)
        assert sm.get_reducer() is double
    assert repr(sm.get_reducer()) == "local()"


def test_class_based_manager_wins_over_an_enclosing_block_and_closes_with_its_exit() -> None:
    class Tripled:
        def __enter__(self) -> None:
            self._cm = sm.use_reducer(triple)
            self._cm.__enter__()

        def __exit__(self, *exc: object) -> None:
            self._cm.__exit__(None, None, None)

    with sm.use_reducer(double):
        with Tripled():
            assert sm.get_reducer() is triple
            assert current_stack() == (double, triple)
        assert sm.get_reducer() is double


def test_exit_stack_enter_context_opens_a_block_for_its_caller() -> None:
    with sm.use_reducer(double), contextlib.ExitStack() as stack:
        assert stack.enter_context(sm.use_reducer(triple)) is triple
        assert sm.get_reducer() is triple
    assert repr(sm.get_reducer()) == "local()"


def test_asynccontextmanager_helper_scopes_its_caller() -> None:
    @contextlib.asynccontextmanager
    async def tripled() -> AsyncIterator[None]:
        with sm.use_reducer(triple):
            yield

    async def main() -> tuple[object, object, object]:
        with sm.use_reducer(double):
            async with tripled():
                await asyncio.sleep(0)
                inside = sm.get_reducer()
            after = sm.get_reducer()
        return inside, after, sm.get_reducer()

    inside, after, outside = asyncio.run(main())
    assert inside is triple and after is double and repr(outside) == "local()"


def test_context_manager_helpers_inside_a_generator_do_not_leak_across_its_yield() -> None:
    @contextlib.contextmanager
    def tripled() -> Iterator[None]:
        with sm.use_reducer(triple):
            yield

    class Tripled:
        def __enter__(self) -> None:
            self._cm = sm.use_reducer(triple)
            self._cm.__enter__()

        def __exit__(self, *exc: object) -> None:
            self._cm.__exit__(None, None, None)

    def gen(manager: Any) -> Iterator[object]:
        with manager:
            yield sm.get_reducer()
            yield sm.get_reducer()

    for manager in (tripled(), Tripled()):
        g = gen(manager)
        assert next(g) is triple
        assert repr(sm.get_reducer()) == "local()"  # the generator is suspended inside the helper
        assert next(g) is triple
        g.close()
        assert current_stack() == ()


def test_out_of_order_exits_keep_the_newer_blocks() -> None:
    older, newer = sm.use_reducer(double), sm.use_reducer(triple)
    older.__enter__()
    newer.__enter__()
    older.__exit__(None, None, None)  # hooks closed in the "wrong" order
    assert sm.get_reducer() is triple and current_stack() == (triple,)
    newer.__exit__(None, None, None)
    assert current_stack() == () and repr(sm.get_reducer()) == "local()"


def test_an_open_block_cannot_be_entered_again_but_can_be_reused_after_exit() -> None:
    block = sm.use_reducer(double)
    with block:
        with pytest.raises(RuntimeError, match="already open"):
            block.__enter__()
        assert current_stack() == (double,)
    with block:
        assert sm.get_reducer() is double
    with pytest.raises(RuntimeError, match="not open"):
        block.__exit__(None, None, None)


def test_exiting_a_block_in_another_thread_than_the_one_that_entered_it_is_refused() -> None:
    block = sm.use_reducer(double)
    block.__enter__()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            block.__exit__(None, None, None)
        except RuntimeError as err:
            errors.append(err)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1 and "another thread" in str(errors[0])
    assert sm.get_reducer() is double  # still open here, where it was entered
    block.__exit__(None, None, None)  # and it can still be closed here
    assert current_stack() == ()


def test_the_generator_s_own_block_wins_inside_it_over_a_block_opened_while_it_was_suspended() -> None:
    def gen() -> Iterator[tuple[object, tuple[object, ...]]]:
        with sm.use_reducer(double):
            yield sm.get_reducer(), current_stack()
            yield sm.get_reducer(), current_stack()

    g = gen()
    assert next(g) == (double, (double,))
    with sm.use_reducer(triple):
        assert current_stack() == (triple,)
        assert next(g) == (double, (triple, double))  # the caller's block is outside the generator's
        assert sm.get_reducer() is triple
    g.close()


def test_a_generator_s_block_opened_while_another_was_suspended_in_its_own_is_refused_when_both_run() -> None:
    def inner() -> Iterator[object]:
        with sm.use_reducer(triple):
            yield sm.get_reducer()
            yield sm.get_reducer()

    def outer(g: Iterator[object]) -> Iterator[object]:
        with sm.use_reducer(double):
            yield sm.get_reducer()
            yield next(g)  # inner runs inside outer now, but its block was opened while outer was suspended

    i = inner()
    o = outer(i)
    assert next(o) is double
    assert next(i) is triple  # inner's block opens while outer is suspended inside its own
    with pytest.raises(RuntimeError, match="cannot tell which block is innermost"):
        next(o)
    i.close()
    assert current_stack() == ()


def test_asyncio_tasks_each_work_on_their_own_copy_of_the_stack() -> None:
    async def child() -> tuple[object, object]:
        inherited = sm.get_reducer()
        with sm.use_reducer(triple):
            await asyncio.sleep(0)
            return inherited, sm.get_reducer()

    async def main() -> tuple[tuple[object, object], object]:
        with sm.use_reducer(double):
            task = asyncio.create_task(child())
        return await task, sm.get_reducer()  # the parent left its block before the child ran

    (inherited, own), parent = asyncio.run(main())
    assert inherited is double and own is triple and repr(parent) == "local()"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_with_no_blocks_and_may_leave_its_parent_s() -> None:
    read, write = os.pipe()
    pid, seen = -1, "raised"
    try:
        with sm.use_reducer(double):
            pid = os.fork()
            if pid == 0:  # the child
                seen = f"{current_stack()!r} {sm.get_reducer()!r}"
        if pid == 0:
            seen += " and left the parent's block"
    finally:
        if pid == 0:  # never let the child go back to pytest
            os.write(write, seen.encode())
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        assert f.read() == "() local() and left the parent's block"
