"""The reduction pass: metrics -> leaves + ops -> reducer -> leaves -> metrics.

``reduce_metrics`` walks every metric into *units*: a tensor leaf with its op,
or a whole metric that declares its own ``merge``. Built-in reducers take all
units at once (``collective_reduce``): one fixed-size ``all_gather`` of a
header, to agree on what is reduced, and of a byte payload carrying every
``cat`` leaf, every merge state and every small (op, dtype) bucket; a second,
padded ``all_gather`` only when some rank's payload does not fit the first,
plus one ``all_reduce`` per bucket too large to gather.
A plain-function reducer is called once per leaf instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import torch

from scopedmetrics import tree, wire
from scopedmetrics.comm import Comm
from scopedmetrics.errors import SyncError
from scopedmetrics.reducers import Collective, Local, Reducer
from scopedmetrics.state import combine, concat, is_empty_cat

if TYPE_CHECKING:
    from scopedmetrics.metric import Metric


@dataclasses.dataclass(frozen=True)
class Leaf:
    """A state tensor reduced with ``op``; ``path`` as ``state_dict`` spells it."""

    path: str
    tensor: torch.Tensor
    op: str


@dataclasses.dataclass(frozen=True)
class Merge:
    """A metric that merges its whole state itself (``Metric.merge``), gathered and folded in rank order."""

    path: str
    metric: Metric


def is_metric(x: Any) -> bool:
    """Whether ``x`` is a metric (a node the walk descends into)."""
    return getattr(type(x), "_is_metric", False)


def path_str(prefix: str, *parts: Any) -> str:
    """Dotted path of a leaf, as ``state_dict`` keys spell it."""
    names = [prefix] if prefix else []
    names += [str(p) for p in parts]
    return ".".join(names)


def walk(m: Metric, prefix: str, units: list[Leaf | Merge], desc: list[str]) -> None:
    """Append ``m``'s units in leaf order, and describe them (type, configuration, ops, shapes) to ``desc``."""
    desc.append(f"{prefix or '<metric>'}: {m._describe()}")
    if m._layout.whole_merge:
        units.append(Merge(prefix or type(m).__name__, m))
        desc.append(f"{prefix}: merge " + ", ".join(f"{t.dtype} {t.ndim}-d" for t in tree.leaves(m)))
        return
    for name, value, op in m._state_items():
        paths, xs, _ = tree.flatten_with_path(value, is_leaf=is_metric)
        for path, x in zip(paths, xs):
            p = path_str(prefix, name, *([path] if path else []))
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
    todo = [i for i, m in enumerate(metrics) if not m._reduced]
    if not todo or isinstance(reducer, Local):
        return [m._with_mark(True) for m in metrics]
    units: list[Leaf | Merge] = []
    desc: list[str] = []
    counts = []
    for i in todo:
        before = len(units)
        walk(metrics[i], names[i], units, desc)
        counts.append(len(units) - before)
    leaves = [u for u in units if isinstance(u, Leaf)]
    merges = [u for u in units if isinstance(u, Merge)]
    if isinstance(reducer, Collective):
        reduced, merged = collective_reduce(reducer.comm, leaves, merges, desc)
    else:
        reduced = [reducer(u.tensor.clone(), u.op) for u in leaves]  # a copy: it may reduce in place
        merged = [_plain_merge(reducer, u.metric) for u in merges]
    next_leaf, next_merge = iter(reduced), iter(merged)
    out = list(metrics)
    at = 0
    for i, n in zip(todo, counts):
        flat: list[torch.Tensor] = []
        for u in units[at : at + n]:
            flat += [next(next_leaf)] if isinstance(u, Leaf) else tree.leaves(next(next_merge))
        at += n
        out[i] = tree.unflatten(tree.structure(metrics[i]), flat)
        if "_cfg" in metrics[i].__dict__:  # the same configuration: keep its canonical form
            out[i].__dict__["_cfg"] = metrics[i].__dict__["_cfg"]
    return [m._with_mark(True) for m in out]


def fingerprint(desc: list[str]) -> int:
    """A 63-bit hash of a description, equal across processes for equal input."""
    digest = hashlib.blake2b("\n".join(desc).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


GATHER_LIMIT = 4 << 20
"""A bucket whose bytes times the group size stay under this rides the payload ``all_gather``."""

FIRST_GATHER = 256 << 10
"""Bytes (all ranks together) of the first ``all_gather``: the header, plus the payloads when they fit."""

_HEAD = 24  # the header: fingerprint, payload bytes, failure flag (three int64)


def first_room(size: int) -> int:
    """Payload bytes each of ``size`` ranks may carry in the first ``all_gather`` (a multiple of 8).

    Examples:
        >>> first_room(2), first_room(4), first_room(1024)
        (131072, 65536, 4096)
    """
    return max(4096, FIRST_GATHER // size) // 8 * 8


def split_members(comm: Comm, key: Any) -> list[int]:
    """Ranks of ``comm`` whose key equals this rank's (``subgroup``'s Comm_split), a collective call.

    The keys travel through the same exchange as a reduction, so a rank that
    splits while another reduces meets a disagreement (``SyncError`` on both),
    never a mismatched collective. Every rank sees every key, so a key that
    cannot serve (it does not pickle, or is unequal to itself) fails on all of them.
    """
    failure: Exception | None = None
    try:
        raw = torch.frombuffer(bytearray(pickle.dumps(key)), dtype=torch.uint8)
    except Exception as err:  # noqa: BLE001 - every rank must still reach the exchange
        raw = torch.zeros(0, dtype=torch.uint8)
        failure = TypeError(f"subgroup keys must pickle; {key!r} does not: {err}")
    length = torch.tensor([raw.numel()])
    units = [Leaf("subgroup.length", length, "cat"), Leaf("subgroup.key", raw, "cat")]
    (lengths, data), _ = collective_reduce(comm, units, [], ["subgroup(key)"], failure=failure)
    keys, at = [], 0
    for n in lengths.tolist():
        keys.append(pickle.loads(bytes(data[at : at + n].tolist())))  # no numpy needed
        at += n
    for r, k in enumerate(keys):
        if type(k).__eq__ is cast(Any, object.__eq__) or not k == k:
            raise ValueError(
                f"subgroup: rank {r}'s key {k!r} is not equal to itself across processes (NaN, or compared by "
                "identity); keys are compared with ==, so use str, int, tuple or another value type"
            )
    mine = keys[comm.rank]
    return [r for r, k in enumerate(keys) if k == mine]


def collective_reduce(
    comm: Comm,
    units: list[Leaf],
    merges: list[Merge],
    desc: list[str],
    failure: Exception | None = None,
) -> tuple[list[torch.Tensor], list[Metric]]:
    """Reduce many leaves and merge states over ``comm`` in as few collectives as possible.

    Calls: one fixed-size ``all_gather`` of a header (agreement, payload sizes)
    and, when every rank's payload fits in ``first_room``, of the payloads
    themselves: every ``cat`` leaf, every merge state and every small (op,
    dtype) bucket, folded here in rank order. A larger payload takes a second,
    padded ``all_gather``; a bucket too large to gather (``GATHER_LIMIT``)
    takes one ``all_reduce``. ``failure``: this rank could not prepare its
    part; every rank still takes part in the header exchange, then raises.
    """
    leaves, ops, paths = [u.tensor for u in units], [u.op for u in units], [u.path for u in units]
    comm.arrive()
    fp = fingerprint(desc)
    cat_at = [i for i, op in enumerate(ops) if op == "cat"]
    merge_leaves = [tree.leaves(u.metric) for u in merges]
    small, large = _buckets(leaves, ops, comm.size)
    flats = [_flat(leaves, idx, comm.device) for _, idx in small]
    carried = [leaves[i] for i in cat_at] + list(itertools.chain.from_iterable(merge_leaves)) + flats
    try:
        payload = wire.pack(carried, comm.device) if carried and failure is None else None
    except Exception as err:  # noqa: BLE001 - every rank must still reach the header exchange
        payload, failure = None, err
    size = 0 if payload is None else payload.numel()
    room = first_room(comm.size)
    first = torch.zeros(_HEAD + room, dtype=torch.uint8, device=comm.device)
    first[:_HEAD] = torch.tensor([fp, size, failure is not None], dtype=torch.int64).view(torch.uint8)
    if payload is not None and size <= room:
        first[_HEAD : _HEAD + size] = payload
    gathered = comm.all_gather(first)
    headers = torch.stack([g[:_HEAD] for g in gathered]).cpu().view(torch.int64)
    if bool(headers[:, 2].any()):
        _raise_failure(comm, failure)
    if bool((headers[:, 0] != fp).any()):
        _raise_disagreement(comm, desc)
    out = list(leaves)
    for (op, dtype), idx in large:  # bool as uint8: its op is already max or min, which cannot wrap
        flat = _flat(leaves, idx, comm.device, torch.uint8 if dtype == torch.bool else None)
        _scatter(comm.all_reduce(flat, op) if flat.numel() else flat, leaves, idx, out)
    if payload is None:
        return out, []
    sizes = headers[:, 1].tolist()
    longest = max(sizes)
    if longest <= room:
        payloads = [g[_HEAD : _HEAD + n] for g, n in zip(gathered, sizes)]
    else:
        if size < longest:
            payload = torch.cat([payload, payload.new_zeros(longest - size)])
        payloads = comm.all_gather(payload)
    per_rank = [wire.unpack(p) for p in payloads]
    for k, i in enumerate(cat_at):
        out[i] = _join_cat(paths[i], [parts[k] for parts in per_rank], leaves[i])
    offset = len(cat_at)
    merged = []
    for u, mine in zip(merges, merge_leaves):
        spec = tree.structure(u.metric)
        states = [tree.unflatten(spec, [t.to(x.device) for t, x in zip(parts[offset:], mine)]) for parts in per_rank]
        merged.append(_fold(states, u.path))
        offset += len(mine)
    for j, ((op, _), idx) in enumerate(small):
        parts = [p[offset + j] for p in per_rank]
        folded = parts[0]
        for p in parts[1:]:  # rank order, so every rank gets the same bits
            folded = combine(op, folded, p)
        _scatter(folded, leaves, idx, out)
    return out, merged


_Bucket = tuple[tuple[str, torch.dtype], list[int]]


_BOOL_OP = {"sum": "max", "prod": "min", "max": "max", "min": "min"}
"""What each op does to bool tensors (as ``merge`` computes it: ``+`` is or, ``*`` is and)."""


def _buckets(leaves: list[torch.Tensor], ops: list[str], size: int) -> tuple[list[_Bucket], list[_Bucket]]:
    """Non-cat leaves grouped by (op, dtype), split into gathered (small) and all-reduced (large).

    Bool leaves are grouped by what their op means for bools, so a bool sum
    never travels as a uint8 sum (which would wrap at 256 participants).
    """
    buckets: dict[tuple[str, torch.dtype], list[int]] = {}
    for i, (t, op) in enumerate(zip(leaves, ops)):
        if op != "cat":
            buckets.setdefault((_BOOL_OP[op] if t.dtype == torch.bool else op, t.dtype), []).append(i)
    small: list[_Bucket] = []
    large: list[_Bucket] = []
    for key, idx in buckets.items():
        nbytes = sum(leaves[i].numel() for i in idx) * key[1].itemsize
        (small if nbytes * size <= GATHER_LIMIT else large).append((key, idx))
    return small, large


def _flat(
    leaves: list[torch.Tensor], idx: list[int], device: torch.device, wire: torch.dtype | None = None
) -> torch.Tensor:
    """The leaves ``idx`` as one flat buffer on ``device``, of dtype ``wire`` (their own by default)."""
    wire = wire or leaves[idx[0]].dtype
    parts = [leaves[i].reshape(-1).to(device, wire) for i in idx]
    return torch.cat(parts) if len(parts) > 1 else parts[0].clone()


def _scatter(flat: torch.Tensor, leaves: list[torch.Tensor], idx: list[int], out: list[torch.Tensor]) -> None:
    """Cut a reduced flat buffer back into leaves of their own shape, dtype and device."""
    for i, piece in zip(idx, torch.split(flat, [leaves[i].numel() for i in idx])):
        out[i] = piece.reshape(leaves[i].shape).to(leaves[i].device, leaves[i].dtype)


def _join_cat(path: str, parts: list[torch.Tensor], mine: torch.Tensor) -> torch.Tensor:
    full = [(r, p) for r, p in enumerate(parts) if not is_empty_cat(p)]
    if not full:
        return mine
    r0, p0 = full[0]
    for r, p in full[1:]:
        if p.dtype != p0.dtype or p.shape[1:] != p0.shape[1:]:
            raise SyncError(
                f"participants disagree on cat state {path!r}: "
                f"rank {r} holds {p.dtype} rows of shape {tuple(p.shape[1:])} "
                f"but rank {r0} holds {p0.dtype} rows of shape {tuple(p0.shape[1:])}"
            )
    return concat([p for _, p in full]).to(mine.device)


def _fold(states: list[Metric], path: str = "") -> Metric:
    """Merge every participant's state in rank order; a refused merge is a disagreement."""
    acc = states[0]
    for r, s in enumerate(states[1:], start=1):
        try:
            acc = acc.merge(s)
        except (TypeError, ValueError) as err:
            raise SyncError(
                f"participants disagree on merge state {path!r}: rank {r}'s state does not merge ({err})"
            ) from err
    return acc


def _raise_failure(comm: Comm, failure: Exception | None) -> None:
    """A rank could not prepare its part: it raises its own error, the others say which rank and why."""
    every = comm.gather_objects(None if failure is None else f"{type(failure).__name__}: {failure}")
    if failure is not None:
        raise failure
    why = "; ".join(f"rank {r}: {msg}" for r, msg in enumerate(every) if msg is not None)
    raise SyncError(f"a participant failed before the reduction ({why})")


def _raise_disagreement(comm: Comm, desc: list[str]) -> None:
    every = comm.gather_objects(desc)
    ref = every[0]
    diffs = []
    for r, d in enumerate(every[1:], start=1):
        if d == ref:
            continue
        i = next((j for j, (a, b) in enumerate(zip(ref, d)) if a != b), min(len(ref), len(d)))
        mine = d[i] if i < len(d) else "nothing more"
        theirs = ref[i] if i < len(ref) else "nothing more"
        diffs.append(f"rank {r} has {mine!r} where rank 0 has {theirs!r}")
    raise SyncError(f"participants disagree on what they reduce (seen on rank {comm.rank}): " + "; ".join(diffs))


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
    return _fold(states)
