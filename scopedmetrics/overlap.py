"""Reductions that run beside the caller: ``sm.reduce(tree, async_op=True)``.

A metric never changes once made (``update`` returns a new one), so a
reduction can read a snapshot on another thread while the caller trains on
and updates. It runs over the reducer's *channel*, the same ranks on a backend
of their own, so its collectives never interleave with the caller's (DDP's
gradient buckets, a blocking ``sm.reduce``), whose order on each rank is
otherwise only the caller's to keep. On each channel one reduction runs at a
time, in the order they were started, which is then the same on every rank.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

import torch

from scopedmetrics.exchange import Leaf, collective_reduce
from scopedmetrics.reducers import Collective, Reducer

T = TypeVar("T")

_LOCK = threading.Lock()
_MADE: set[tuple[Hashable, int]] = set()  # (group, rank) whose channel was agreed on
_LAST: dict[tuple[Hashable, int], Pending[Any]] = {}  # (channel, rank) -> its latest reduction, the next one's wait


class Pending(Generic[T]):
    """A reduction under way; ``wait()`` gives its result (or raises what the reduction raised)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        """Whether ``wait()`` would return at once."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> T:
        """The result, once every rank's part has arrived; a failure is raised here, on every rank.

        ``timeout`` (seconds) bounds this wait only: past it ``TimeoutError`` is
        raised and the reduction goes on, so a later ``wait()`` still gets it.
        """
        if not self._done.wait(timeout):
            raise TimeoutError(f"the reduction is not done after {timeout}s; it goes on: wait() again for it")
        if self._error is not None:
            raise self._error
        return cast(T, self._value)

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self._value = work()
        except BaseException as err:  # noqa: BLE001 - handed to whoever waits
            self._error = err
        finally:
            self._done.set()

    def __repr__(self) -> str:
        return f"Pending({'done' if self.done() else 'running'})"


def start(reducer: Reducer, run: Callable[[Reducer], T]) -> Pending[T]:
    """Begin ``run(reducer over the channel)`` on a worker thread.

    Without a ``Collective`` reducer (one process, or a plain function, which
    may run collectives of its own on the caller's group) ``run(reducer)``
    runs here and the handle is already done.
    """
    pending: Pending[T] = Pending()
    if not isinstance(reducer, Collective):
        pending._run(lambda: run(reducer))
        return pending
    channel = _channel(reducer)
    on_stream = _on_callers_stream()
    key = (channel.comm.ident() or id(channel.comm), channel.rank)  # simulated ranks share the process
    with _LOCK:
        before, _LAST[key] = _LAST.get(key), pending

    def work() -> T:
        if before is not None:
            before._done.wait()
        return on_stream(lambda: run(channel))

    def thread() -> None:
        pending._run(work)
        with _LOCK:
            if _LAST.get(key) is pending:
                del _LAST[key]

    threading.Thread(target=thread, name="sm-reduce", daemon=False).start()
    return pending


def _channel(reducer: Collective) -> Collective:
    """The reducer over ``reducer``'s channel, made at the first overlapped reduction over its group.

    Making a backend waits for every member with no bound of ours, so the
    ranks first meet in one checked exchange on the group itself: a rank that
    never comes is named within the reducer's timeout, and one that reduces
    something else meanwhile is a disagreement on both.
    """
    key = (reducer.comm.ident() or id(reducer.comm), reducer.rank)
    if key not in _MADE:
        collective_reduce(reducer.comm, [Leaf("channel", torch.zeros(1), "max")], [],
                          ["sm.reduce(async_op=True): a channel for reductions beside this group"])
        _MADE.add(key)
    return Collective(reducer.comm.channel())


def _on_callers_stream() -> Callable[[Callable[[], T]], T]:
    """How the worker runs a reduction when this process uses CUDA: on the caller's device, after its work.

    A thread starts on device 0, so the worker takes the caller's current
    device (where an NCCL backend's buffers go, whatever device the states
    are on); it waits for an event recorded now on the caller's current stream,
    so states still being written there are complete, and synchronizes its
    own stream before handing the results over.
    """
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):  # type: ignore[no-untyped-call]
        return lambda reduce: reduce()
    device = torch.cuda.current_device()
    event = torch.cuda.Event()  # type: ignore[no-untyped-call]  # untyped in the stub
    event.record()

    def run(reduce: Callable[[], T]) -> T:
        torch.cuda.set_device(device)
        torch.cuda.current_stream().wait_event(event)
        out = reduce()
        torch.cuda.current_stream().synchronize()
        return out

    return run
