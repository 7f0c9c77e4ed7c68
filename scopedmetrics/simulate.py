"""A world of ranks as threads of this process, for notebooks and tests.

Each rank runs ``fn(rank)`` in its own thread with a ``Collective`` reducer in
scope whose communicator exchanges tensors in memory. It goes through the same
bucketed pass, agreement check and ``subgroup`` splits as ``distributed``.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from scopedmetrics.comm import Comm
from scopedmetrics.errors import SyncError
from scopedmetrics.exchange import over_ranks
from scopedmetrics.reducers import Collective
from scopedmetrics.scope import use_reducer

R = TypeVar("R")


_SERIALS = itertools.count()


class _Box:
    """One collective call's contributions, filled by every member."""

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.done = False
        self.lock = threading.Lock()
        self.result: Any = None  # ``folded``'s value, computed once for every member


class _World:
    """Shared by the threads of one group: the rendezvous and its failure state."""

    def __init__(self, size: int, timeout: float, root: _World | None = None) -> None:
        self.size = size
        self.timeout = timeout
        self.root = root or self
        self.cond = threading.Condition()
        self.box = _Box()
        self.subworlds: dict[tuple[str, tuple[int, ...]], _World] = {}
        self.serial = next(_SERIALS)  # a name no later world reuses (``id`` may be)
        if root is None:
            self.failure: str | None = None
            self.worlds: list[_World] = [self]

    def fail(self, why: str) -> None:
        """Break every group of the world: pending and later collectives raise."""
        root = self.root
        if root.failure is None:
            root.failure = why
        for w in list(root.worlds):
            with w.cond:
                w.cond.notify_all()

    def exchange(self, rank: int, value: Any) -> list[Any]:
        """Every member's ``value``, in rank order, once all members have called."""
        box = self._meet(rank, value)
        return [box.values[r] for r in range(self.size)]

    def folded(self, rank: int, value: Any, fold: Callable[[list[Any]], Any]) -> Any:
        """``fold`` of every member's ``value`` (in rank order), computed once and shared by all members."""
        box = self._meet(rank, value)
        with box.lock:
            if box.result is None:
                box.result = fold([box.values[r] for r in range(self.size)])
            return box.result

    def _meet(self, rank: int, value: Any) -> _Box:
        deadline = time.monotonic() + self.timeout
        with self.cond:
            box = self.box
            box.values[rank] = value
            if len(box.values) == self.size:
                box.done = True
                self.box = _Box()
                self.cond.notify_all()
            while not box.done:
                if self.root.failure is not None:
                    raise SyncError(f"rank {rank}: {self.root.failure}")
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(set(range(self.size)) - box.values.keys())
                    why = f"rank(s) {missing} of a group of {self.size} did not arrive within {self.timeout}s"
                    self.cond.release()
                    try:
                        self.fail(why)
                    finally:
                        self.cond.acquire()
                    raise SyncError(f"rank {rank}: {why}")
                self.cond.wait(left)
            return box

    def sub(self, members: tuple[int, ...], tag: str = "") -> _World:
        """The (cached) world of ``members``, shared by all of them; another ``tag``, another rendezvous."""
        with self.cond:
            world = self.subworlds.get((tag, members))
            if world is None:
                world = _World(len(members), self.timeout, self.root)
                self.subworlds[tag, members] = world
                self.root.worlds.append(world)  # list.append is atomic; fail() iterates a copy
            return world


class ThreadComm(Comm):
    """One rank's view of a simulated world."""

    def __init__(self, world: _World, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.size = world.size
        self.timeout = world.timeout

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        parts = self.world.exchange(self.rank, tensor)
        shapes = {tuple(p.shape) for p in parts}
        if len(shapes) > 1:  # what gloo would refuse, refused here too
            raise SyncError(f"all_gather with unequal sizes {sorted(shapes)} on rank {self.rank}")
        return [p.clone() for p in parts]

    def all_gather_into(self, tensor: torch.Tensor) -> torch.Tensor:
        stacked: torch.Tensor = self.world.folded(self.rank, tensor, self._stack)  # stacked once
        return stacked.clone()  # a copy per rank

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        def reduce(parts: list[torch.Tensor]) -> torch.Tensor:  # one reduction over ranks: the same bits for all
            return over_ranks(self._stack(parts), op)

        reduced: torch.Tensor = self.world.folded(self.rank, tensor, reduce)
        return reduced.clone()

    def gather_into(self, tensor: torch.Tensor, root: int) -> torch.Tensor | None:
        stacked: torch.Tensor = self.world.folded(self.rank, tensor, self._stack)
        return stacked.clone() if self.rank == root else None

    def broadcast(self, tensor: torch.Tensor, root: int) -> torch.Tensor:
        parts = self.world.exchange(self.rank, tensor)
        return self._stack(parts)[root].clone()

    def _stack(self, parts: list[torch.Tensor]) -> torch.Tensor:
        shapes = {tuple(p.shape) for p in parts}
        if len(shapes) > 1:  # what gloo would refuse, refused here too
            raise SyncError(f"all_gather with unequal sizes {sorted(shapes)} on rank {self.rank}")
        return torch.stack(parts)

    def ident(self) -> tuple[str, int]:
        return ("simulated", self.world.serial)

    def subcomm(self, members: list[int]) -> ThreadComm:
        return ThreadComm(self.world.sub(tuple(members)), members.index(self.rank))

    def channel(self) -> ThreadComm:
        return ThreadComm(self.world.sub(tuple(range(self.size)), "overlap"), self.rank)

    def __repr__(self) -> str:
        return f"simulated rank {self.rank} of {self.size}"


def simulate(fn: Callable[[int], R], world_size: int, timeout: float = 60.0) -> list[R]:
    """Run ``fn(rank)`` for every rank of a simulated world; results in rank order.

    If a rank raises, the others' pending collectives fail with ``SyncError``
    and the first original exception is re-raised.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> def rank_fn(rank):
        ...     return sm.Sum().update(torch.tensor([float(rank)])).compute()
        >>> sm.simulate(rank_fn, world_size=3)
        [tensor(3.), tensor(3.), tensor(3.)]
    """
    if world_size < 1:
        raise ValueError(f"simulate: world_size must be at least 1, got {world_size}")
    world = _World(world_size, timeout)
    results: list[Any] = [None] * world_size
    errors: list[BaseException | None] = [None] * world_size

    def run(rank: int) -> None:
        try:
            with use_reducer(Collective(ThreadComm(world, rank))):
                results[rank] = fn(rank)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            errors[rank] = err
            world.fail(f"rank {rank} raised {type(err).__name__}: {err}")

    threads = [threading.Thread(target=run, args=(r,), name=f"sm-rank-{r}") for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    raised = [e for e in errors if e is not None]
    if raised:
        original = [e for e in raised if not isinstance(e, SyncError)]
        raise (original or raised)[0]
    return results
