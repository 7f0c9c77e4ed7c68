"""Fixtures: run one test body in a simulated world or in real gloo processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from worlds import GlooWorld, simulate_results

import scopedmetrics as sm

_POOLS: dict[int, GlooWorld] = {}


def gloo_world(size: int) -> GlooWorld:
    """A live gloo world of ``size`` ranks, rebuilt if the last test broke it."""
    world = _POOLS.get(size)
    if world is None or world.broken:
        if world is not None:
            world.close()
        world = _POOLS[size] = GlooWorld(size)
    return world


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    for world in _POOLS.values():
        world.close()
    _POOLS.clear()


class World:
    """Runs ``fn(rank, *args)`` on every rank of a world of the given kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def run(self, fn: Callable[..., Any], size: int, *args: Any) -> list[Any]:
        """Every rank's result; the first original error (else a SyncError) is raised."""
        if self.kind == "gloo":
            return gloo_world(size).run(fn, *args)
        return sm.simulate(lambda rank: fn(rank, *args), size)

    def results(self, fn: Callable[..., Any], size: int, *args: Any, timeout: float = 60.0) -> list[tuple[bool, Any]]:
        """Every rank's ``(ok, value or exception)``."""
        if self.kind == "gloo":
            return gloo_world(size).results(fn, *args, timeout=timeout)
        return simulate_results(fn, size, *args, timeout=timeout)


@pytest.fixture(params=["simulate", "gloo"])
def world(request: pytest.FixtureRequest) -> World:
    """Each test using it runs twice: in threads and in real gloo processes."""
    return World(request.param)


@pytest.fixture(autouse=True)
def _clean_reducer() -> Iterator[None]:
    sm.reset_reducer()
    yield
    sm.reset_reducer()
