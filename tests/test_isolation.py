"""Reducer scopes stay where they were opened: threads, pools, asyncio, DataLoader workers, generators.

Extends ``test_scope.py`` (which covers a block held in one thread while the
main thread and a pool look, two concurrent asyncio tasks, and one generator
suspended inside its block) with the cases around them: work started from
inside a block, pool threads reused by later tasks, child tasks, async
generators, DataLoader worker processes, and generators nested, chained,
interleaved, thrown into, abandoned, or entering their block through helpers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import scopedmetrics as sm
from scopedmetrics.scope import current_stack


def reducer_a(t: torch.Tensor, op: str) -> torch.Tensor:
    return t


def reducer_b(t: torch.Tensor, op: str) -> torch.Tensor:
    return t


NAMES = {reducer_a: "A", reducer_b: "B"}


def seen() -> str:
    """The reducer in effect here: ``"A"``, ``"B"``, or the repr of anything else (``"local()"``)."""
    r = sm.get_reducer()
    return NAMES.get(r, repr(r))  # type: ignore[call-overload]


@pytest.fixture(autouse=True)
def _no_open_blocks() -> Iterator[None]:
    yield
    assert current_stack() == (), "a test left a use_reducer block open in the main thread"


# -- threads and pools ----------------------------------------------------------------


def test_a_thread_started_inside_a_block_does_not_inherit_it() -> None:
    out: list[str] = []
    with sm.use_reducer(reducer_a):
        t = threading.Thread(target=lambda: out.append(seen()))
        t.start()
        t.join()
        assert seen() == "A"
    assert out == ["local()"]


def test_a_pool_used_inside_a_block_runs_its_tasks_without_it() -> None:
    with sm.use_reducer(reducer_a), concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert [f.result() for f in [pool.submit(seen) for _ in range(4)]] == ["local()"] * 4


def test_a_block_in_one_pool_task_does_not_reach_later_tasks_on_the_same_worker() -> None:
    def opens_and_fails() -> None:
        with sm.use_reducer(reducer_a):
            raise RuntimeError("task failed inside its block")

    def leaves_a_generator_suspended_in_its_block() -> Iterator[str]:
        def gen() -> Iterator[str]:
            with sm.use_reducer(reducer_b):
                yield seen()
                yield seen()

        g = gen()
        assert next(g) == "B"
        return g  # still alive, suspended inside its block

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # one worker thread runs every task
        with pytest.raises(RuntimeError, match="task failed"):
            pool.submit(opens_and_fails).result()
        assert pool.submit(seen).result() == "local()"
        g = pool.submit(leaves_a_generator_suspended_in_its_block).result()
        assert pool.submit(seen).result() == "local()"
        assert pool.submit(lambda: next(g)).result() == "B"  # resumed on that worker, its block applies
        assert pool.submit(seen).result() == "local()"
        pool.submit(g.close).result()


def test_concurrent_threads_each_see_only_their_own_block() -> None:
    reducers = [(lambda t, op: t) for _ in range(6)]
    start = threading.Barrier(len(reducers))
    wrong: list[int] = []

    def worker(i: int) -> None:
        with sm.use_reducer(reducers[i]):
            start.wait(5)
            for _ in range(300):
                if sm.get_reducer() is not reducers[i]:
                    wrong.append(i)
        if repr(sm.get_reducer()) != "local()":
            wrong.append(-i - 1)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(reducers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# -- asyncio ----------------------------------------------------------------------------


def test_a_child_task_runs_under_the_block_it_was_created_in_and_its_own_blocks_stay_inside() -> None:
    async def child(gate: asyncio.Event) -> tuple[str, str]:
        inherited = seen()  # asyncio copies the creating task's context
        with sm.use_reducer(reducer_b):
            await gate.wait()
            return inherited, seen()

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        gate = asyncio.Event()
        early = asyncio.create_task(asyncio.sleep(0, result="started before"))
        with sm.use_reducer(reducer_a):
            task = asyncio.create_task(child(gate))
            await asyncio.sleep(0)  # the child is now inside its own block, waiting
            out["parent while child waits"] = seen()
            gate.set()
            out["child"] = await task
            out["parent after child"] = seen()
        out["outside"] = seen()
        await early
        return out

    assert asyncio.run(main()) == {
        "parent while child waits": "A",
        "child": ("A", "B"),
        "parent after child": "A",
        "outside": "local()",
    }


def test_a_block_inside_an_async_generator_does_not_leak_across_yield() -> None:
    async def numbers() -> AsyncIterator[str]:
        with sm.use_reducer(reducer_a):
            yield seen()
            await asyncio.sleep(0)
            yield seen()

    async def main() -> list[tuple[str, str]]:
        out = []
        async for inside in numbers():
            out.append((inside, seen()))
        return out

    assert asyncio.run(main()) == [("A", "local()"), ("A", "local()")]


def test_to_thread_carries_the_block_and_run_in_executor_does_not() -> None:
    async def main() -> tuple[str, str, str]:
        with sm.use_reducer(reducer_a):
            carried = await asyncio.to_thread(seen)  # documented to copy the context
            plain = await asyncio.get_running_loop().run_in_executor(None, seen)
            return carried, plain, seen()

    assert asyncio.run(main()) == ("A", "local()", "A")


# -- DataLoader workers ---------------------------------------------------------------------


class ReportsReducer(Dataset[str]):
    """Each item is the reducer in effect where ``__getitem__`` runs (a worker process)."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> str:
        return seen()


def test_dataloader_workers_do_not_see_the_block_the_loader_was_iterated_in() -> None:
    loader = DataLoader(ReportsReducer(), batch_size=None, num_workers=2)  # the platform's default start method
    with sm.use_reducer(reducer_a):
        items = list(loader)
        assert seen() == "A"
    assert items == ["local()"] * 4, f"workers saw {items}"


# -- generators ---------------------------------------------------------------------------


def test_nested_generators_each_keep_their_block_inside() -> None:
    def inner() -> Iterator[str]:
        with sm.use_reducer(reducer_b):
            yield seen()

    def outer() -> Iterator[str]:
        with sm.use_reducer(reducer_a):
            yield seen()
            yield from inner()
            yield seen()

    assert [(v, seen()) for v in outer()] == [("A", "local()"), ("B", "local()"), ("A", "local()")]


def test_a_suspended_generator_s_block_does_not_reach_the_generator_consuming_it() -> None:
    def source() -> Iterator[str]:
        with sm.use_reducer(reducer_a):
            for _ in range(2):
                yield seen()

    def stage() -> Iterator[tuple[str, str]]:
        for v in source():
            yield v, seen()  # source is suspended here

    assert [(*v, seen()) for v in stage()] == [("A", "local()", "local()")] * 2


def test_interleaved_generators_each_see_their_own_block() -> None:
    def gen(r: Any) -> Iterator[str]:
        with sm.use_reducer(r):
            while True:
                yield seen()

    a, b = gen(reducer_a), gen(reducer_b)
    assert [(next(a), next(b), seen()) for _ in range(3)] == [("A", "B", "local()")] * 3
    a.close()
    assert (next(b), seen()) == ("B", "local()")
    b.close()


def test_the_caller_s_block_applies_while_it_resumes_a_generator_and_only_then() -> None:
    def plain() -> Iterator[str]:
        while True:
            yield seen()

    def own() -> Iterator[str]:
        yield seen()
        with sm.use_reducer(reducer_a):
            yield seen()

    p, o = plain(), own()
    with sm.use_reducer(reducer_b):
        assert (next(p), next(o)) == ("B", "B")
        assert next(o) == "A"  # the generator's own block is innermost inside it
        assert seen() == "B"
    assert next(p) == "local()"
    o.close()


def test_throw_into_a_generator_inside_its_block_keeps_the_block_and_the_caller_clean() -> None:
    def gen() -> Iterator[str]:
        with sm.use_reducer(reducer_a):
            try:
                yield seen()
            except KeyError:
                yield "caught under " + seen()
        yield "after the block: " + seen()

    g = gen()
    assert next(g) == "A"
    assert g.throw(KeyError("x")) == "caught under A"
    assert seen() == "local()"
    assert next(g) == "after the block: local()"


def test_an_abandoned_generator_s_block_neither_leaks_nor_outlives_it() -> None:
    def gen() -> Iterator[str]:
        with sm.use_reducer(reducer_a):
            yield seen()
            yield seen()

    g = gen()
    assert next(g) == "A"
    with sm.use_reducer(reducer_b):
        assert seen() == "B"
    assert seen() == "local()"
    del g
    gc.collect()
    assert current_stack() == ()


def test_a_block_entered_through_an_exit_stack_inside_a_generator_does_not_leak_across_yield() -> None:
    def gen() -> Iterator[str]:
        with contextlib.ExitStack() as stack:
            stack.enter_context(sm.use_reducer(reducer_a))
            yield seen()
            yield seen()

    g = gen()
    inside = next(g)
    caller = seen()
    g.close()
    assert (inside, caller) == ("A", "local()")


def test_a_never_closed_generator_s_block_is_not_listed_as_open_here() -> None:
    def gen() -> Iterator[str]:
        with sm.use_reducer(reducer_a):
            yield seen()

    g = gen()
    assert next(g) == "A"
    assert current_stack() == () and seen() == "local()"  # suspended, so not in effect here
    g.close()
