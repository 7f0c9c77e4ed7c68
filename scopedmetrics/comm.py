"""Communicators: the few collectives the bucketed reduction needs.

A communicator knows its rank and size and offers ``all_gather`` of
equal-sized tensors, ``all_reduce`` with a reduce op, and ``subcomm`` for
smaller groups. ``TorchComm`` runs on ``torch.distributed``; the simulated
world in ``simulate.py`` offers the same surface over threads.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Hashable
from datetime import timedelta
from typing import Any, cast

import torch
import torch.distributed as dist

from scopedmetrics.errors import SyncError


class Comm(ABC):
    """A group of participants and the collectives over it."""

    rank: int
    size: int
    timeout: float | None

    @property
    def device(self) -> torch.device:
        """Where buffers must live for this backend."""
        return torch.device("cpu")

    @abstractmethod
    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every participant's ``tensor``, in rank order; sizes must agree."""

    def all_gather_into(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every participant's ``tensor`` stacked in rank order into one ``(size, *shape)`` tensor."""
        return torch.stack(self.all_gather(tensor))

    @abstractmethod
    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        """``tensor`` reduced element-wise with ``op`` across the group."""

    def gather_into(self, tensor: torch.Tensor, root: int) -> torch.Tensor | None:
        """Every participant's ``tensor`` stacked in rank order on ``root`` (``None`` elsewhere); sizes must agree."""
        stacked = self.all_gather_into(tensor)
        return stacked if self.rank == root else None

    def broadcast(self, tensor: torch.Tensor, root: int) -> torch.Tensor:
        """``root``'s ``tensor`` on every participant (each passes a tensor of the same size and dtype)."""
        return self.all_gather_into(tensor)[root]

    @abstractmethod
    def subcomm(self, members: list[int]) -> Comm:
        """The group of ``members`` (ranks of this group, ascending); only they call."""

    def ident(self) -> Hashable | None:
        """A name of this group equal on every member (``None``: cannot tell; ``subgroup`` then caches nothing)."""
        return None

    def channel(self) -> Comm:
        """The same members over a backend of their own, for reductions run beside this group's collectives.

        A collective call: every member calls it at the same point (the first
        ``sm.reduce(..., async_op=True)``); later calls return the cached channel.
        """
        raise NotImplementedError(
            f"{type(self).__name__} offers no second channel, so sm.reduce(async_op=True) cannot run beside it; "
            "reduce without async_op"
        )

    def arrive(self) -> None:  # noqa: B027 - optional hook; in-memory worlds know who is missing
        """Note that this rank begins its next reduction, so a failure can name who never came."""

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every participant's picklable ``obj``, in rank order (two gathers), to explain a failure."""
        data = pickle.dumps(obj)
        raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        sizes = self.all_gather(torch.tensor([raw.numel()], device=self.device))
        longest = int(max(int(s.item()) for s in sizes))
        padded = torch.zeros(longest, dtype=torch.uint8, device=self.device)
        padded[: raw.numel()] = raw.to(self.device)
        parts = self.all_gather(padded)
        return [pickle.loads(bytes(p[: int(s.item())].cpu().tolist())) for p, s in zip(parts, sizes)]  # no numpy needed


_REDUCE_OPS = {
    "sum": dist.ReduceOp.SUM,
    "max": dist.ReduceOp.MAX,
    "min": dist.ReduceOp.MIN,
    "prod": dist.ReduceOp.PRODUCT,
}
_GROUPS: dict[tuple[Any, tuple[int, ...], str], Any] = {}  # (store, global ranks, tag) -> backend
_ARRIVALS: dict[str, int] = {}  # group's arrival key -> reductions this process began
_SLOW = 0.2  # seconds a wait lasts before this rank writes its arrival to the store
_WAITING: dict[int, tuple[float, TorchComm]] = {}  # thread -> (when its current wait began, over which group)
_WATCH: list[threading.Thread] = []


def _watch() -> None:
    """Announce the arrival of every rank thread whose wait has lasted ``_SLOW`` seconds (a daemon's loop).

    A store write costs a round trip to the store's host; made on every reduction
    it cost more than the reduction's own collectives at small sizes. Made only
    when a wait is slow, it still comes long before any timeout reads it.
    """
    announced: set[tuple[int, float]] = set()
    while True:
        time.sleep(_SLOW / 2)
        now = time.monotonic()
        for ident, (since, comm) in list(_WAITING.items()):
            if now - since >= _SLOW and (ident, since) not in announced:
                announced.add((ident, since))
                comm._announce()
        announced &= {(i, since) for i, (since, _) in list(_WAITING.items())}


def _forget_watch() -> None:
    """In a forked child the watcher thread does not exist: start another when needed."""
    _WATCH.clear()
    _WAITING.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watch)


def _waiting(comm: TorchComm) -> None:
    if not _WATCH:
        _WATCH.append(threading.Thread(target=_watch, name="scopedmetrics-arrivals", daemon=True))
        _WATCH[0].start()
    _WAITING[threading.get_ident()] = (time.monotonic(), comm)


def _latest(log: str) -> dict[int, int]:
    """Each rank's latest count in an arrival log ``"rank:count,rank:count,..."``.

    Examples:
        >>> _latest("1:3,0:2,1:4,")
        {1: 4, 0: 2}
    """
    out: dict[int, int] = {}
    for entry in filter(None, log.split(",")):
        rank, count = map(int, entry.split(":"))
        out[rank] = max(out.get(rank, 0), count)
    return out


class TorchComm(Comm):
    """Collectives over a ``torch.distributed`` process group (gloo, NCCL, ...)."""

    tag = ""
    """Names a second backend over the same ranks (``"overlap"``: a ``channel``); empty for the group itself."""

    def __init__(self, group: Any = None, timeout: float | None = None) -> None:
        self._group = group
        self.timeout = timeout
        self._ranks: tuple[Any, tuple[int, ...]] | None = None  # (group, its global ranks), resolved on use

    @property
    def group(self) -> Any:
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "sm.distributed() needs torch.distributed to be initialized "
                "(dist.init_process_group); use sm.local() or sm.simulate() otherwise"
            )
        return self._group if self._group is not None else dist.group.WORLD

    @property
    def rank(self) -> int:  # type: ignore[override]
        return dist.get_rank(self.group)

    @property
    def size(self) -> int:  # type: ignore[override]
        return dist.get_world_size(self.group)

    @property
    def backend(self) -> str:
        """The backend's name: ``"gloo"``, ``"nccl"``, ..."""
        return str(dist.get_backend(self.group))

    @property
    def device(self) -> torch.device:
        if self.backend == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def global_ranks(self, members: list[int]) -> tuple[int, ...]:
        """Global ranks of this group's ``members``."""
        ranks = self._members()
        return tuple(ranks[r] for r in members)

    def _members(self) -> tuple[int, ...]:
        group = self.group
        if self._ranks is None or self._ranks[0] is not group:
            self._ranks = (group, tuple(dist.get_process_group_ranks(group)))
        return self._ranks[1]

    def ident(self) -> Hashable:
        store = dist.distributed_c10d._get_default_store()  # a new process group is another group
        return ("torch", id(store), self._members(), self.tag)

    def _arrival_key(self, members: tuple[int, ...]) -> str:
        """The group's arrival log: one store key, appended ``"rank:count,"`` by each rank that waits long."""
        digest = hashlib.blake2b(",".join(map(str, members)).encode(), digest_size=12).hexdigest()
        return f"scopedmetrics/arrived/{self.tag}{digest}"

    def arrive(self) -> None:
        key = self._arrival_key(self._members())
        _ARRIVALS[key] = _ARRIVALS.get(key, 0) + 1

    def _announce(self) -> None:
        """Write how many reductions over this group this rank began, for ``_absent`` on the others."""
        try:
            members = self._members()
            store = dist.distributed_c10d._get_default_store()
            entry = f"{dist.get_rank()}:{_ARRIVALS.get(self._arrival_key(members), 0)},"
            store.append(self._arrival_key(members), entry)  # type: ignore[attr-defined]  # missing from the stub
        except Exception:  # noqa: BLE001, S110 - best effort: the store may be gone with the rank that hosted it
            pass

    def _absent(self, grace: float) -> str:
        """Which ranks of the group have not begun the reduction this rank is in (best effort).

        Live ranks may still be on their way when a dead peer fails the call at
        once, so the answer is polled until it holds still for half a second.
        Each poll is one read of the group's arrival log, so a failure costs
        O(1) store requests per rank, O(P) in all.
        """
        self._announce()
        try:
            members = self._members()
            key = self._arrival_key(members)
            mine = _ARRIVALS.get(key, 0)
            store = dist.distributed_c10d._get_default_store()
            deadline, stable_since, behind = time.monotonic() + grace, time.monotonic(), None
            while True:
                seen = _latest(store.get(key).decode()) if store.check([key]) else {}
                now = [g for g, r in enumerate(members) if seen.get(r, 0) < mine]
                if now != behind:
                    behind, stable_since = now, time.monotonic()
                if not behind or time.monotonic() - stable_since >= 0.5 or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
        except Exception:  # noqa: BLE001 - the store is gone with the rank that hosted it
            return (
                "; the store cannot be reached, so the rank hosting it (global rank 0, the MASTER_ADDR process) "
                "has most likely left"
            )
        if not behind:
            return "; every rank began this reduction, so one left during it"
        return f"; rank(s) {behind} of the group are not in this reduction (never began it, or left before waiting)"

    def _wait(self, work: Any, what: str) -> None:
        started = time.monotonic()
        _waiting(self)
        try:
            if self.timeout is None:
                work.wait()
            else:
                work.wait(timedelta(seconds=self.timeout))
        except Exception as err:  # gloo raises RuntimeError, NCCL DistBackendError
            waited = time.monotonic() - started
            timed_out = self.timeout is not None and waited >= 0.9 * self.timeout
            how = f"timed out after {self.timeout}s" if timed_out else f"failed after {waited:.2f}s"
            raise SyncError(
                f"{what} on rank {self.rank} of {self.size} {how}: a participant did not arrive or left"
                f"{self._absent(grace=2.0 if self.timeout is None else min(2.0, self.timeout))} ({err})"
            ) from err
        finally:
            del _WAITING[threading.get_ident()]

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        out = [torch.empty_like(tensor) for _ in range(self.size)]
        self._wait(dist.all_gather(out, tensor, group=self.group, async_op=True), "all_gather")
        return out

    def all_gather_into(self, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.new_empty(self.size * tensor.numel())  # gloo takes the concatenated form only
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # renamed in torch 2.13
        self._wait(gather(out, tensor.reshape(-1), group=self.group, async_op=True), "all_gather")
        return out.view(self.size, *tensor.shape)

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        work = dist.all_reduce(tensor, op=_REDUCE_OPS[op], group=self.group, async_op=True)
        self._wait(work, f"all_reduce({op})")
        return tensor

    def gather_into(self, tensor: torch.Tensor, root: int) -> torch.Tensor | None:
        out = [torch.empty_like(tensor) for _ in range(self.size)] if self.rank == root else None
        dst = self.global_ranks([root])[0]
        self._wait(dist.gather(tensor, out, dst=dst, group=self.group, async_op=True), "gather")
        return None if out is None else torch.stack(out)

    def broadcast(self, tensor: torch.Tensor, root: int) -> torch.Tensor:
        src = self.global_ranks([root])[0]
        self._wait(dist.broadcast(tensor, src=src, group=self.group, async_op=True), "broadcast")
        return tensor

    def backend_timeout(self) -> timedelta:
        """The process group's own timeout (``init_process_group(timeout=...)``; 30 minutes by default)."""
        backend = self.group._get_backend(self.device)
        return cast(timedelta, backend.options._timeout)

    def subcomm(self, members: list[int]) -> SplitComm:
        """The split's backend is cached by its ranks and made with the process group's timeout.

        Each reducer then bounds its own waits (``timeout``), so a cached split
        serves reducers of any timeout, and one without a timeout waits as
        long as the process group would.
        """
        return self._over(self.global_ranks(members), "")

    def channel(self) -> SplitComm:
        """A backend of the group's ranks named ``overlap``, cached like a split."""
        return self._over(self._members(), "overlap")

    def _over(self, ranks: tuple[int, ...], tag: str) -> SplitComm:
        store = dist.distributed_c10d._get_default_store()
        key = (id(store), ranks, tag)
        if key not in _GROUPS:
            _GROUPS[key] = _new_backend(self.backend, store, ranks, self.backend_timeout(), tag)
        return SplitComm(_GROUPS[key], ranks, self.backend, self.timeout, tag)

    def __repr__(self) -> str:
        return "distributed()" if self._group is None else f"distributed(group={self._group!r})"


def _new_backend(backend: str, store: Any, ranks: tuple[int, ...], wait: timedelta, tag: str) -> Any:
    """A process-group backend over ``ranks``, created by those ranks alone.

    ``dist.new_group(..., use_local_synchronization=True)`` names groups by how
    many groups each process made before, which differs between ranks after
    unequal splits and then hangs; a store prefix named by the ranks does not.
    """
    name = f"scopedmetrics/{tag}{'_'.join(map(str, ranks))}/"
    prefix = dist.PrefixStore(name, store)  # type: ignore[attr-defined]  # public, missing from the stub
    rank = ranks.index(dist.get_rank())
    if backend == "gloo":
        return dist.ProcessGroupGloo(prefix, rank, len(ranks), wait)
    if backend == "nccl":
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = wait
        return dist.ProcessGroupNCCL(prefix, rank, len(ranks), options)
    raise NotImplementedError(f"subgroup: no split for backend {backend!r}; use gloo or nccl")


class SplitComm(TorchComm):
    """Collectives over a backend made by ``subgroup`` for a set of global ranks."""

    def __init__(self, pg: Any, ranks: tuple[int, ...], backend: str, timeout: float | None, tag: str = "") -> None:
        super().__init__(None, timeout)
        self.pg, self.ranks, self._backend, self.tag = pg, ranks, backend, tag

    @property
    def rank(self) -> int:  # type: ignore[override]
        return self.ranks.index(dist.get_rank())

    @property
    def size(self) -> int:  # type: ignore[override]
        return len(self.ranks)

    @property
    def backend(self) -> str:
        return self._backend

    def global_ranks(self, members: list[int]) -> tuple[int, ...]:
        return tuple(self.ranks[r] for r in members)

    def _members(self) -> tuple[int, ...]:
        return self.ranks

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        out = [torch.empty_like(tensor) for _ in range(self.size)]
        self._wait(self.pg.allgather([out], [tensor]), "all_gather")
        return out

    def all_gather_into(self, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.new_empty(self.size * tensor.numel())
        self._wait(self.pg._allgather_base(out, tensor.reshape(-1)), "all_gather")
        return out.view(self.size, *tensor.shape)

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        opts = dist.AllreduceOptions()
        opts.reduceOp = _REDUCE_OPS[op]  # type: ignore[assignment]  # the stub's RedOpType is the same enum
        self._wait(self.pg.allreduce([tensor], opts), f"all_reduce({op})")
        return tensor

    def gather_into(self, tensor: torch.Tensor, root: int) -> torch.Tensor | None:
        opts = dist.GatherOptions()
        opts.rootRank = root
        out = [[torch.empty_like(tensor) for _ in range(self.size)]] if self.rank == root else []
        self._wait(self.pg.gather(out, [tensor], opts), "gather")
        return torch.stack(out[0]) if out else None

    def broadcast(self, tensor: torch.Tensor, root: int) -> torch.Tensor:
        opts = dist.BroadcastOptions()
        opts.rootRank = root
        self._wait(self.pg.broadcast([tensor], opts), "broadcast")
        return tensor

    def __repr__(self) -> str:
        return f"subgroup(ranks={list(self.ranks)}{', ' + self.tag if self.tag else ''})"
