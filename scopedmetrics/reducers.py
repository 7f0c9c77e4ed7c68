"""Reducers: how a state leaf is combined across participants.

The protocol is one callable, ``reducer(tensor, op) -> tensor``, so any plain
function is a reducer. The built-in ones are ``local()`` (no communication)
and ``Collective`` reducers (``distributed()``, ``subgroup()``, ``simulate``)
that also take many leaves at once in a bucketed pass (``sync.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import torch
import torch.distributed as dist

from scopedmetrics.comm import Comm, TorchComm
from scopedmetrics.exchange import Leaf, collective_reduce

Reducer = Union[Callable[[torch.Tensor, str], torch.Tensor], "Local", "Collective"]
"""Anything callable as ``reducer(tensor, op) -> tensor``."""


class Local:
    """The reducer of a world of one: every process sees only its own data."""

    rank = 0
    """This participant's rank in its group: always 0."""
    size = 1
    """The group's size: always 1."""

    def __call__(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        """``tensor`` itself: a world of one has nothing to combine."""
        return tensor

    def split(self, key: Any) -> Local:
        """Itself: every group of a world of one is that world."""
        return self

    def __repr__(self) -> str:
        return "local()"


_LOCAL = Local()


def local() -> Local:
    """The reducer that does not communicate.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.local()(torch.tensor(2.0), "sum")
        tensor(2.)
    """
    return _LOCAL


class Collective:
    """A built-in reducer over a communicator, with agreement checks and buckets."""

    def __init__(self, comm: Comm) -> None:
        self.comm = comm

    @property
    def rank(self) -> int:
        """The rank of this participant within the reducer's group."""
        return self.comm.rank

    @property
    def size(self) -> int:
        """How many participants the reducer spans."""
        return self.comm.size

    def __call__(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        """One leaf through the bucketed pass (agreement check included)."""
        leaves, _ = collective_reduce(self.comm, [Leaf("leaf", tensor, op)], [], [_describe_leaf(op, tensor)])
        return leaves[0]

    def split(self, key: Any) -> Local | Collective:
        """Comm_split: a reducer over the participants whose keys equal ``key``."""
        from scopedmetrics.sync import split_members

        members = split_members(self.comm, key)
        if len(members) == 1:
            return local()
        return Collective(self.comm.subcomm(members))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.comm!r})"


def _describe_leaf(op: str, t: torch.Tensor) -> str:
    return "leaf: cat" if op == "cat" else f"leaf: {op} {t.dtype} {tuple(t.shape)}"


def distributed(
    group: Any = None, timeout: float | None = None, *, mesh: Any = None, dim: str | None = None
) -> Collective:
    """A reducer over a ``torch.distributed`` process group (gloo, NCCL, ...).

    ``group=None`` is the default group, resolved when the reducer is used;
    ``timeout`` in seconds bounds each wait for the other participants
    (``None``: the process group's own timeout, 30 minutes by default; a few
    minutes suit evaluation). With tensor or pipeline parallelism, reduce over
    the data-parallel dimension only: ``mesh=`` a ``DeviceMesh`` and ``dim=``
    its data-parallel dimension's name (``mesh.get_group(dim)``).

    Examples:
        >>> import scopedmetrics as sm
        >>> r = sm.distributed(timeout=30.0)   # usable once init_process_group ran
    """
    if mesh is not None:
        if group is not None:
            raise TypeError("sm.distributed: give group= or mesh=, not both")
        if dim is None:
            raise TypeError("sm.distributed(mesh=...) needs dim=, the mesh dimension to reduce over (e.g. 'dp')")
        group = mesh.get_group(dim)
    elif dim is not None:
        raise TypeError("sm.distributed(dim=...) needs mesh=, the DeviceMesh that dimension belongs to")
    return Collective(TorchComm(group, timeout))


_DEFAULT: dict[int, Collective] = {}


def default_reducer() -> Local | Collective:
    """``distributed()`` when torch.distributed runs more than one process, else ``local()``."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        world = dist.group.WORLD
        key = id(world)
        if key not in _DEFAULT:
            _DEFAULT.clear()
            _DEFAULT[key] = distributed()
        return _DEFAULT[key]
    return _LOCAL
