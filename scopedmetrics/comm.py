"""Communicators: the few collectives the bucketed reduction needs.

A communicator knows its rank and size and offers ``all_gather`` of
equal-sized tensors, ``all_reduce`` with a reduce op, and ``subcomm`` for
smaller groups. ``TorchComm`` runs on ``torch.distributed``; the simulated
world in ``simulate.py`` offers the same surface over threads.
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from datetime import timedelta
from typing import Any

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

    @abstractmethod
    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        """``tensor`` reduced element-wise with ``op`` across the group."""

    @abstractmethod
    def subcomm(self, members: list[int]) -> Comm:
        """The group of ``members`` (ranks of this group, ascending); only they call."""

    def gather_objects(self, obj: Any) -> list[Any]:
        """Every participant's picklable ``obj``, in rank order (two gathers)."""
        try:
            data = pickle.dumps(obj)
        except Exception as err:
            raise TypeError(f"subgroup keys must pickle; {obj!r} does not: {err}") from err
        raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        sizes = self.all_gather(torch.tensor([raw.numel()], device=self.device))
        longest = int(max(int(s.item()) for s in sizes))
        padded = torch.zeros(longest, dtype=torch.uint8, device=self.device)
        padded[: raw.numel()] = raw.to(self.device)
        parts = self.all_gather(padded)
        return [pickle.loads(p[: int(s.item())].cpu().numpy().tobytes()) for p, s in zip(parts, sizes)]

    def members(self, key: Any) -> list[int]:
        """Ranks of this group whose key equals ours (a collective call)."""
        keys = self.gather_objects(key)
        return [r for r, k in enumerate(keys) if k == key]


_REDUCE_OPS = {
    "sum": dist.ReduceOp.SUM,
    "max": dist.ReduceOp.MAX,
    "min": dist.ReduceOp.MIN,
    "prod": dist.ReduceOp.PRODUCT,
}
_GROUPS: dict[tuple[int, ...], Any] = {}


class TorchComm(Comm):
    """Collectives over a ``torch.distributed`` process group (gloo, NCCL, ...)."""

    def __init__(self, group: Any = None, timeout: float | None = None) -> None:
        self._group = group
        self.timeout = timeout

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
    def device(self) -> torch.device:
        if dist.get_backend(self.group) == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def _wait(self, work: Any, what: str) -> None:
        try:
            if self.timeout is None:
                work.wait()
            else:
                work.wait(timedelta(seconds=self.timeout))
        except Exception as err:  # gloo raises RuntimeError, NCCL DistBackendError
            raise SyncError(
                f"{what} on rank {self.rank} of {self.size} failed"
                + (f" within the {self.timeout}s timeout" if self.timeout else "")
                + f": a participant did not arrive or left ({err})"
            ) from err

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        out = [torch.empty_like(tensor) for _ in range(self.size)]
        self._wait(dist.all_gather(out, tensor, group=self.group, async_op=True), "all_gather")
        return out

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        work = dist.all_reduce(tensor, op=_REDUCE_OPS[op], group=self.group, async_op=True)
        self._wait(work, f"all_reduce({op})")
        return tensor

    def subcomm(self, members: list[int]) -> TorchComm:
        ranks = tuple(dist.get_global_rank(self.group, r) for r in members)
        group = _GROUPS.get(ranks)
        if group is None:
            kwargs: dict[str, Any] = {"use_local_synchronization": True}
            if self.timeout is not None:
                kwargs["timeout"] = timedelta(seconds=self.timeout)
            group = dist.new_group(list(ranks), **kwargs)
            _GROUPS[ranks] = group
        return TorchComm(group, self.timeout)
