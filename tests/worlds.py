"""Worlds to run one test body in: simulated threads, or real gloo processes.

A gloo world is a pool of ``size`` spawned processes joined by
``torch.distributed`` on 127.0.0.1; it is kept between tests and rebuilt after
any test in which a rank failed, since a failed collective can poison a group.
A worker that dies (``os._exit`` in a test body, a crash) is reported as
``WorkerDiedError`` for its rank as soon as its process is gone, instead of being
waited for until the harness times out; the world is then marked broken.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import socket
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

import scopedmetrics as sm
from scopedmetrics.comm import Comm

_POLL = 0.2  # seconds between checks for dead workers while waiting for results


class WorkerDiedError(RuntimeError):
    """A gloo worker's process exited (``os._exit``, a crash) before answering."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, size: int, port: int, inbox: Any, outbox: Any) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=size
    )
    while True:
        job = inbox.get()
        if job is None:
            break
        fn, args = job
        try:
            outbox.put((rank, True, fn(rank, *args)))
        except BaseException as err:  # noqa: BLE001 - sent back to the test
            try:
                outbox.put((rank, False, err))
            except Exception:
                outbox.put((rank, False, RuntimeError(f"{type(err).__name__}: {err}\n{traceback.format_exc()}")))
    dist.destroy_process_group()


class GlooWorld:
    """``size`` processes in one gloo process group, running test bodies on demand."""

    def __init__(self, size: int) -> None:
        self.size = size
        ctx = mp.get_context("spawn")
        port = free_port()
        self.inboxes = [ctx.Queue() for _ in range(size)]
        self.outbox = ctx.Queue()
        self.procs = [
            ctx.Process(target=_worker, args=(r, size, port, self.inboxes[r], self.outbox), daemon=True)
            for r in range(size)
        ]
        for p in self.procs:
            p.start()
        self.broken = False

    def run(self, fn: Callable[..., Any], *args: Any, timeout: float = 120.0) -> list[Any]:
        results = self._collect(fn, args, timeout)
        errors = [v for ok, v in results.values() if not ok]
        if errors:
            self.broken = self.broken or _poisoned(errors)
            original = [e for e in errors if not isinstance(e, sm.SyncError)]
            raise (original or errors)[0]
        return [results[r][1] for r in range(self.size)]

    def results(self, fn: Callable[..., Any], *args: Any, timeout: float = 120.0) -> list[tuple[bool, Any]]:
        """Every rank's ``(ok, value or exception)``, for tests where ranks are meant to fail.

        A rank whose process died reports ``(False, WorkerDiedError(...))``.
        """
        out = self._collect(fn, args, timeout)
        self.broken = self.broken or _poisoned([v for ok, v in out.values() if not ok])
        return [out[r] for r in range(self.size)]

    def _collect(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> dict[int, tuple[bool, Any]]:
        """Send ``fn`` to every rank and gather ``rank -> (ok, value)``; dead ranks are reported, not awaited."""
        for box in self.inboxes:
            box.put((fn, args))
        out: dict[int, tuple[bool, Any]] = {}
        deadline = time.monotonic() + timeout
        while len(out) < self.size:
            left = deadline - time.monotonic()
            if left <= 0:
                self.broken = True
                missing = sorted(set(range(self.size)) - out.keys())
                raise TimeoutError(f"gloo world hung: ranks {missing} never finished")
            try:
                rank, ok, value = self.outbox.get(timeout=min(left, _POLL))
            except queue.Empty:
                self._report_dead(out)
                continue
            out.setdefault(rank, (ok, value))
        return out

    def _report_dead(self, out: dict[int, tuple[bool, Any]]) -> None:
        """Record ``WorkerDiedError`` for every rank whose process has exited without answering."""
        for r, p in enumerate(self.procs):
            if r not in out and p.exitcode is not None:
                self.broken = True
                out[r] = (False, WorkerDiedError(f"rank {r}'s process exited with code {p.exitcode}"))

    def close(self) -> None:
        for box, p in zip(self.inboxes, self.procs):
            if p.is_alive() and not self.broken:
                box.put(None)
        for p in self.procs:
            p.join(timeout=0.1 if self.broken else 5)
            if p.is_alive():
                p.kill()
                p.join()


def _poisoned(errors: list[BaseException]) -> bool:
    """Whether the group may be out of step: a rank left, timed out or failed outside a reduction.

    A disagreement ``SyncError`` is raised by every rank after the same
    exchanges, so the group stays usable.
    """
    return any(not isinstance(e, sm.SyncError) or "disagree" not in str(e) for e in errors)


def simulate_results(fn: Callable[..., Any], size: int, *args: Any, timeout: float = 60.0) -> list[tuple[bool, Any]]:
    """Like ``GlooWorld.results`` in a simulated world: each rank's outcome, errors included."""

    def body(rank: int) -> tuple[bool, Any]:
        try:
            return True, fn(rank, *args)
        except Exception as err:  # noqa: BLE001 - returned to the test
            return False, err

    return sm.simulate(body, size, timeout=timeout)


class CountingComm(Comm):
    """Delegates to a communicator and counts the collectives issued."""

    def __init__(self, inner: Comm) -> None:
        self.inner, self.calls, self.reduced = inner, [], []

    rank = property(lambda self: self.inner.rank)  # type: ignore[assignment]
    size = property(lambda self: self.inner.size)  # type: ignore[assignment]
    timeout = property(lambda self: self.inner.timeout)  # type: ignore[assignment]

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        self.calls.append("all_gather")
        return self.inner.all_gather(tensor)

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        self.calls.append(f"all_reduce:{op}")
        self.reduced.append(tensor.numel())
        return self.inner.all_reduce(tensor, op)

    def subcomm(self, members: list[int]) -> Comm:
        return self.inner.subcomm(members)
