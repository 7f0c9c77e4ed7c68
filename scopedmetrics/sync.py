"""The reduction pass: metrics -> leaves + ops -> reducer -> leaves -> metrics.

``reduce_metrics`` walks every metric into *units*: a tensor leaf with its op
(``Leaf``), or a whole metric that declares its own ``merge`` (``Merge``).
Built-in reducers take all units at once: ``exchange.collective_reduce``
agrees on what is reduced and moves it in a few collectives. A plain-function
reducer is called once per leaf instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import torch

from scopedmetrics import tree
from scopedmetrics.comm import Comm
from scopedmetrics.exchange import Leaf, Merge, collective_reduce, fold
from scopedmetrics.reducers import Collective, Local, Reducer

if TYPE_CHECKING:
    from scopedmetrics.metric import Metric

__all__ = ["Leaf", "Merge", "collective_reduce", "reduce_metrics", "split_members", "walk"]


def is_metric(x: Any) -> bool:
    """Whether ``x`` is a metric (a node the walk descends into)."""
    return getattr(type(x), "_is_metric", False)


def path_str(prefix: str, *parts: Any) -> str:
    """Dotted path of a leaf, as ``state_dict`` keys spell it."""
    names = [prefix] if prefix else []
    names += [str(p) for p in parts]
    return ".".join(names)


@dataclasses.dataclass(frozen=True)
class Kept:
    """A reduced metric nested in an unreduced one: its leaves pass the reduction unchanged."""

    path: str
    metric: Metric


def walk(m: Metric, prefix: str, units: list[Leaf | Merge | Kept], desc: list[str]) -> None:
    """Append ``m``'s units in leaf order, and describe them (type, configuration, ops, shapes) to ``desc``."""
    desc.append(f"{prefix or '<metric>'}: {m._describe()}")
    if m._layout.whole_merge:
        units.append(Merge(prefix or type(m).__name__, m))
        desc.append(f"{prefix}: merge " + ", ".join(f"{t.dtype} {t.ndim}-d" for t in tree.leaves(m)))
        return
    for name, value, op in m._state_items():
        paths: list[str]
        xs: list[Any]
        if isinstance(value, torch.Tensor):  # the usual state: one leaf, no tree to walk
            paths, xs = [""], [value]
        else:
            paths, xs, _ = tree.flatten_with_path(value, is_leaf=is_metric)
        for path, x in zip(paths, xs):
            p = path_str(prefix, name, *([path] if path else []))
            if is_metric(x) and x._reduced:  # it holds every participant's state already: reduced again, it
                units.append(Kept(p, x))  # would count each of them once per participant
                desc.append(f"{p}: reduced {x._describe()}")
                continue
            if is_metric(x):
                walk(x, p, units, desc)
                continue
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"{type(m).__name__}: state {p!r} holds {type(x).__name__}, not a tensor")
            if op is None:
                raise TypeError(f"{type(m).__name__}: state {p!r} has no reduce op and no merge of its own")
            units.append(Leaf(p, x, op))
            desc.append(f"{p}: {op}" + ("" if op == "cat" else f" {x.dtype} {tuple(x.shape)}"))


def reduce_metrics(metrics: Sequence[Metric], names: Sequence[str], reducer: Reducer) -> list[Metric]:
    """Reduce ``metrics`` together with ``reducer``; results are marked reduced.

    metric -> units (``walk``) -> reducer -> reduced units -> leaves in tree order -> metric.
    """
    if isinstance(reducer, Local):
        return [m._with_mark(True) for m in metrics]
    plan = Units.of(metrics, names)
    leaves = [u for u in plan.units if isinstance(u, Leaf)]
    merges = [u for u in plan.units if isinstance(u, Merge)]
    reduced: list[torch.Tensor] = []
    merged: list[Metric] = []
    if plan.todo and isinstance(reducer, Collective):
        reduced, merged = collective_reduce(reducer.comm, leaves, merges, plan.desc)
    elif plan.todo:
        reduced = [reducer(u.tensor.clone(), u.op) for u in leaves]  # a copy: it may reduce in place
        merged = [_plain_merge(reducer, u.metric) for u in merges]
    return plan.assemble(reduced, merged)


class Units:
    """The units of the unreduced metrics among ``metrics``, in order, and how to put reduced ones back."""

    def __init__(self, metrics: Sequence[Metric], todo: list[int], units: list[Leaf | Merge | Kept], desc: list[str],
                 counts: list[int]) -> None:
        self.metrics, self.todo, self.units, self.desc, self.counts = metrics, todo, units, desc, counts

    @classmethod
    def of(cls, metrics: Sequence[Metric], names: Sequence[str]) -> Units:
        todo = [i for i, m in enumerate(metrics) if not m._reduced]
        units: list[Leaf | Merge | Kept] = []
        desc: list[str] = []
        counts = []
        for i in todo:
            before = len(units)
            walk(metrics[i], names[i], units, desc)
            counts.append(len(units) - before)
        return cls(metrics, todo, units, desc, counts)

    def assemble(self, reduced: Sequence[torch.Tensor], merged: Sequence[Metric]) -> list[Metric]:
        """The metrics with their units replaced by ``reduced`` leaves and ``merged`` states, marked reduced."""
        next_leaf, next_merge = iter(reduced), iter(merged)
        out = list(self.metrics)
        at = 0
        for i, n in zip(self.todo, self.counts):
            flat: list[torch.Tensor] = []
            for u in self.units[at : at + n]:
                if isinstance(u, Kept):
                    flat += tree.leaves(u.metric)
                else:
                    flat += [next(next_leaf)] if isinstance(u, Leaf) else tree.leaves(next(next_merge))
            at += n
            out[i] = _rebuilt(self.metrics[i], flat)
        done = set(self.todo)  # marked by _rebuilt; the others came reduced
        return [m if i in done else m._with_mark(True) for i, m in enumerate(out)]


def _rebuilt(m: Metric, leaves: list[torch.Tensor]) -> Metric:
    """``m`` holding ``leaves`` in leaf order, marked reduced (its configuration, and its canonical form, kept)."""
    d, states = m.__dict__, m._layout.states
    if not m._custom_tree and len(leaves) == len(states) and all(isinstance(d[n], torch.Tensor) for n in states):
        return m._rebuild(dict(zip(states, leaves)), reduced=True)  # a tensor per state: no tree to rebuild
    out = tree.unflatten(tree.structure(m), leaves)
    if "_cfg" in d:
        out.__dict__["_cfg"] = d["_cfg"]
    return cast("Metric", out)._with_mark(True)


_SPLITS: dict[tuple[Any, int, tuple[int, ...]], list[int]] = {}
"""(group, rank, every rank's key digest) -> the members of this rank's split, for a repeated ``subgroup``.

Never evicted: every member of a group makes the same splits of it, so every
member finds an entry exactly when the others do, and they agree on whether
the keys travel."""


def split_members(comm: Comm, key: Any) -> list[int]:
    """Ranks of ``comm`` whose key equals this rank's (``subgroup``'s Comm_split), a collective call.

    First every rank's key digest (a hash of its pickle) travels as one small
    ``max`` leaf: a split seen before, with the same digest on every rank, is
    answered from the cache. Otherwise the keys themselves travel and are
    compared with ``==``. Both go through the same exchange as a reduction,
    so a rank that splits while another reduces meets a disagreement
    (``SyncError`` on both), never a mismatched collective; every rank sees
    every key, so a key that cannot serve fails on all of them.
    """
    failure: Exception | None = None
    try:
        raw = pickle.dumps(key)
    except Exception as err:  # noqa: BLE001 - every rank must still reach the exchange
        raw, failure = b"", TypeError(f"subgroup keys must pickle; {key!r} does not: {err}")
    spot = torch.zeros(comm.size, dtype=torch.int64)
    spot[comm.rank] = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") >> 1
    (digests,), _ = collective_reduce(comm, [Leaf("subgroup.digests", spot, "max")], [], ["subgroup(key)"], failure)
    group = comm.ident()
    if group is None:  # a communicator that cannot name its group the same way on every rank
        return _members(comm, raw)
    seen = (group, comm.rank, tuple(digests.tolist()))
    if seen not in _SPLITS:
        _SPLITS[seen] = _members(comm, raw)
    return _SPLITS[seen]


def _members(comm: Comm, raw: bytes) -> list[int]:
    """Every rank's pickled key, exchanged, unpickled and compared with this rank's."""
    data = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.zeros(0, dtype=torch.uint8)
    length = torch.tensor([data.numel()])
    units = [Leaf("subgroup.length", length, "cat"), Leaf("subgroup.key", data, "cat")]
    (lengths, joined), _ = collective_reduce(comm, units, [], ["subgroup(key) keys"])
    keys, at = [], 0
    for r, n in enumerate(lengths.tolist()):
        blob = bytes(joined[at : at + n].tolist())  # no numpy needed
        at += n
        k = pickle.loads(blob)
        if not k == pickle.loads(blob):  # two copies, as two ranks' are: ``k == k`` holds for (x, nan)
            raise ValueError(
                f"subgroup: rank {r}'s key {k!r} is not equal to itself across processes (NaN, or compared by "
                "identity); keys are compared with ==, so use str, int, tuple or another value type"
            )
        keys.append(k)
    mine = keys[comm.rank]
    return [r for r, k in enumerate(keys) if k == mine]


def _plain_merge(reducer: Reducer, m: Metric) -> Metric:
    """Gather a whole state through a plain reducer's ``cat`` and fold it in rank order."""
    leaves, spec = tree.flatten(m)
    head = torch.tensor([[1, *itertools.chain.from_iterable(t.shape for t in leaves)]])
    shapes = reducer(head, "cat").tolist()
    data = [reducer(t.reshape(-1).clone(), "cat") for t in leaves]  # copies: a plain reducer may work in place
    offsets = [0] * len(leaves)
    states = []
    for row in shapes:
        k, mine = 1, []
        for j, t in enumerate(leaves):
            shape = row[k : k + t.ndim]
            k += t.ndim
            n = torch.Size(shape).numel()
            mine.append(data[j][offsets[j] : offsets[j] + n].reshape(shape))
            offsets[j] += n
        states.append(tree.unflatten(spec, mine))
    return fold(states)
