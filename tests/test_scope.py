"""The reducer stack: process default, scoped overrides, isolation across threads and tasks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator

import pytest
import torch

import scopedmetrics as sm


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
