"""One reduction's collectives: agree on what is reduced, then move only what the states need.

Two plans, chosen by the group's size alone, so every rank picks the same one:

- **gather** (``size < CROSSOVER``): one ``all_gather`` of a fixed-size buffer
  carries a header (fingerprint, payload bytes, failure flag) and, when it
  fits, every rank's payload; a payload that does not fit takes a second
  ``all_gather`` padded to the longest. A bucket too large to gather
  (``GATHER_LIMIT``) takes one ``all_reduce``.
- **reduce** (``size >= CROSSOVER``): one fixed-size MAX ``all_reduce`` agrees
  (fingerprint and its complement, failure flag, longest payload) and carries
  the max and min leaves as order-preserving integers; one ``all_reduce`` per
  dtype of sums (every integer sum as int64) and of products; one
  ``all_gather``, sized to the longest payload, of ``cat`` rows and merge
  states, only when the states hold any.

Either way the gathered bytes land in one ``(P, S)`` matrix: headers are read
in one copy, the fixed-size leaves of a bucket are folded by one reduction
over ranks, and a ``cat`` leaf's rows are joined by one indexing operation, so
the host work of fixed-size states does not grow with the group. Only merge
states (a metric's own ``merge``) are folded peer by peer.

Payload layout (every piece padded to 16 bytes): the gathered buckets' data
(same offsets on every agreeing rank), then per ``cat`` leaf a row of
``_META`` int64 (dtype code, ndim, rows, bytes, trailing dims), then the
``cat`` data, then the merge states as one ``wire.pack``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch._C._nn import flatten_dense_tensors, unflatten_dense_tensors  # DDP's bucket views, typed

from scopedmetrics import tree, wire
from scopedmetrics._kernels import folds
from scopedmetrics.comm import Comm
from scopedmetrics.errors import SyncError

if TYPE_CHECKING:
    from scopedmetrics.metric import Metric

CROSSOVER = 32
"""Groups of at least this many ranks agree and reduce by ``all_reduce`` (see ``benchmarks/scale.py``)."""

GATHER_LIMIT = 4 << 20
"""Gather plan: a bucket whose bytes times the group size stay under this rides the payload ``all_gather``."""

FIRST_GATHER = 256 << 10
"""Gather plan: payload bytes of the first ``all_gather``, all ranks together (at least 4 KiB each).

Below the crossover a second round trip costs more than carrying this much
room: the 10-metric collection of ``benchmarks/sync.py`` (an exact AUROC of
10,000 samples per rank) fits in one call at 2 and 4 ranks."""

KEY_ROOM = 60
"""Reduce plan: max/min elements carried by the agreement ``all_reduce`` itself (more take one more call)."""

_HEAD = 32  # gather plan header: fingerprint, payload bytes, failure flag, unused (four int64: 16-aligned)
_AGREE = 4  # reduce plan agreement: fingerprint, its complement, failure flag, longest payload
_DIMS = 8  # trailing dims a cat leaf may have
_META = 4 + _DIMS  # int64 per cat leaf: dtype code, ndim, rows, bytes, trailing dims
_I64_MAX = torch.iinfo(torch.int64).max
_FLIP = 0x7FFFFFFFFFFFFFFF


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


@dataclasses.dataclass(frozen=True)
class Bucket:
    """Non-``cat`` leaves reduced together: ``op`` and ``dtype`` as they travel."""

    op: str
    dtype: torch.dtype
    idx: tuple[int, ...]
    numel: int

    @property
    def nbytes(self) -> int:
        """Bytes of the bucket's data as it travels."""
        return self.numel * self.dtype.itemsize


_BOOL_OP = {"sum": "max", "prod": "min", "max": "max", "min": "min"}
"""What each op does to bool tensors (as ``merge`` computes it: ``+`` is or, ``*`` is and)."""


def first_room(size: int) -> int:
    """Gather plan: payload bytes each of ``size`` ranks may carry in the first ``all_gather`` (a multiple of 16).

    Examples:
        >>> first_room(2), first_room(4), first_room(1024)
        (131072, 65536, 4096)
    """
    return max(4096, FIRST_GATHER // size) // 16 * 16


def fingerprint(desc: list[str]) -> int:
    """A 63-bit hash of a description, equal across processes for equal input."""
    digest = hashlib.blake2b("\n".join(desc).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def collective_reduce(
    comm: Comm,
    units: list[Leaf],
    merges: list[Merge],
    desc: list[str],
    failure: Exception | None = None,
) -> tuple[list[torch.Tensor], list[Metric]]:
    """Reduce many leaves and merge states over ``comm`` in as few collectives as the plan allows.

    ``desc`` describes what this rank reduces (its fingerprint must agree on
    every rank). ``failure``: this rank could not prepare its part; every rank
    still takes part in the agreement, then raises.
    """
    comm.arrive()
    cats = [i for i, u in enumerate(units) if u.op == "cat"]
    mine = [tree.leaves(u.metric) for u in merges]
    fp = fingerprint(desc)
    if comm.size < CROSSOVER:
        return _gather_plan(comm, units, cats, merges, mine, fp, desc, failure)
    return _reduce_plan(comm, units, cats, merges, mine, fp, desc, failure)


def _gather_plan(
    comm: Comm,
    units: list[Leaf],
    cats: list[int],
    merges: list[Merge],
    mine: list[list[torch.Tensor]],
    fp: int,
    desc: list[str],
    failure: Exception | None,
) -> tuple[list[torch.Tensor], list[Metric]]:
    leaves = [u.tensor for u in units]
    small, large = _split_gathered(_buckets(units, widen=False), comm.size)
    payload = None
    if failure is None:
        try:
            payload = torch.cat([_pack_dense(leaves, small, comm.device), _pack_rows(leaves, cats, mine, comm.device)])
        except Exception as err:  # noqa: BLE001 - every rank must still reach the header exchange
            failure = err
    size = 0 if payload is None else payload.numel()
    room = first_room(comm.size)
    first = torch.zeros(_HEAD + room, dtype=torch.uint8, device=comm.device)
    first[:_HEAD] = torch.tensor([fp, size, failure is not None, 0], dtype=torch.int64).view(torch.uint8)
    if payload is not None and size <= room:
        first[_HEAD : _HEAD + size] = payload
    rows = comm.all_gather_into(first)
    head = rows[:, :_HEAD].contiguous().cpu().view(torch.int64)
    if bool(head[:, 2].any()):
        _raise_failure(comm, failure)
    if bool((head[:, 0] != fp).any()):
        _raise_disagreement(comm, desc)
    out = list(leaves)
    for b in large:
        flat = _flat(leaves, b, comm.device)
        _scatter(_all_reduced(comm, flat, b.op) if flat.numel() else flat, leaves, b, out)
    assert payload is not None  # every rank prepared its part
    longest = int(head[:, 1].max())
    at = _HEAD
    if longest > room:
        rows, at = comm.all_gather_into(torch.cat([payload, payload.new_zeros(longest - size)])), 0
    dense = sum(_pad(b.nbytes) for b in small)
    _fold_dense(rows[:, at : at + dense], leaves, small, out)
    if longest <= dense:  # no rank holds cat rows or merge states
        return out, []
    return out, _join_rows(rows, at + dense, units, cats, merges, mine, out)


def _reduce_plan(
    comm: Comm,
    units: list[Leaf],
    cats: list[int],
    merges: list[Merge],
    mine: list[list[torch.Tensor]],
    fp: int,
    desc: list[str],
    failure: Exception | None,
) -> tuple[list[torch.Tensor], list[Metric]]:
    leaves = [u.tensor for u in units]
    buckets = _buckets(units, widen=True)
    ordered = [b for b in buckets if b.op in ("max", "min")]
    payload = keys = None
    if failure is None:
        try:
            keys = torch.cat([_order_keys(_flat(leaves, b, comm.device), b.op) for b in ordered] or [_no_keys(comm)])
            payload = _pack_rows(leaves, cats, mine, comm.device)
        except Exception as err:  # noqa: BLE001 - every rank must still reach the agreement
            failure = err
    nkeys = sum(b.numel for b in ordered)
    agree = torch.zeros(_AGREE + KEY_ROOM, dtype=torch.int64, device=comm.device)
    size = 0 if payload is None else payload.numel()
    agree[:_AGREE] = torch.tensor([fp, ~fp, failure is not None, size], dtype=torch.int64)
    if keys is not None and nkeys <= KEY_ROOM:
        agree[_AGREE : _AGREE + nkeys] = keys
    agreed = comm.all_reduce(agree, "max")
    head = agreed[:_AGREE].cpu().tolist()
    if head[2]:
        _raise_failure(comm, failure)
    if head[0] != fp or ~head[1] != fp:
        _raise_disagreement(comm, desc)
    assert keys is not None and payload is not None  # every rank prepared its part
    keys = agreed[_AGREE : _AGREE + nkeys] if nkeys <= KEY_ROOM else comm.all_reduce(keys, "max")
    out = list(leaves)
    for b, piece in zip(ordered, torch.split(keys, [b.numel for b in ordered])):
        _scatter(_from_keys(piece, b.op, b.dtype), leaves, b, out)
    for b in buckets:
        if b.op not in ("max", "min"):
            _scatter(comm.all_reduce(_flat(leaves, b, comm.device), b.op), leaves, b, out)
    if not head[3]:
        return out, []
    rows = comm.all_gather_into(torch.cat([payload, payload.new_zeros(head[3] - size)]))
    return out, _join_rows(rows, 0, units, cats, merges, mine, out)


# -- buckets of fixed-size leaves ---------------------------------------------


def _buckets(units: list[Leaf], widen: bool) -> list[Bucket]:
    """Non-cat leaves grouped by (op, dtype) as they travel, in first-seen order.

    Bool leaves travel by what their op means for bools (a bool sum is an or:
    ``max``), so they never wrap. ``widen``: integer sums and products travel
    as int64 (exact: two's complement arithmetic agrees modulo the narrow
    width) and every max and min as int64 order keys, so a reduce plan needs
    one call per float dtype, not per dtype.
    """
    groups: dict[tuple[str, torch.dtype], list[int]] = {}
    for i, u in enumerate(units):
        if u.op == "cat":
            continue
        dtype, op = u.tensor.dtype, u.op
        if dtype == torch.bool:
            op = _BOOL_OP[op]
        if widen and op in ("max", "min"):
            if not (dtype.is_complex or dtype == torch.uint64):  # which _order_keys refuses: int64 would reorder
                dtype = torch.float64 if dtype.is_floating_point else torch.int64
        elif widen and not (dtype.is_floating_point or dtype.is_complex):
            dtype = torch.int64
        groups.setdefault((op, dtype), []).append(i)
    return [
        Bucket(op, d, tuple(idx), sum(units[i].tensor.shape.numel() for i in idx)) for (op, d), idx in groups.items()
    ]


def _split_gathered(buckets: list[Bucket], size: int) -> tuple[list[Bucket], list[Bucket]]:
    """Gather plan: buckets small enough to gather, and the rest (one ``all_reduce`` each)."""
    small = [b for b in buckets if b.nbytes * size <= GATHER_LIMIT]
    return small, [b for b in buckets if b.nbytes * size > GATHER_LIMIT]


def _flat(leaves: list[torch.Tensor], b: Bucket, device: torch.device) -> torch.Tensor:
    """The leaves of ``b`` as one flat buffer of its travelling dtype on ``device`` (a copy).

    torch's flattening of many tensors (DDP's) is one C++ call: a ``reshape`` per leaf and a
    ``cat`` from Python cost 2.2x as much for 80 small leaves. One leaf it would hand back as
    a view, so that one is cloned (collectives reduce in place).
    """
    parts = [leaves[i] for i in b.idx]
    flat = flatten_dense_tensors(parts) if len(parts) > 1 else parts[0].reshape(-1).clone()  # cat promotes
    return flat if flat.dtype == b.dtype and flat.device == device else flat.to(device, b.dtype)


def _scatter(flat: torch.Tensor, leaves: list[torch.Tensor], b: Bucket, out: list[torch.Tensor]) -> None:
    """Cut a reduced flat buffer back into leaves of their own shape, dtype and device.

    The views come from one C++ call (``split`` and a ``view`` per leaf from Python cost 2.6x as much).
    """
    mine = [leaves[i] for i in b.idx]
    for i, t, piece in zip(b.idx, mine, unflatten_dense_tensors(flat, mine)):
        out[i] = piece if piece.dtype == t.dtype and piece.device == t.device else piece.to(t.device, t.dtype)


def _pack_dense(leaves: list[torch.Tensor], buckets: list[Bucket], device: torch.device) -> torch.Tensor:
    """The gathered buckets' data as bytes, each padded to 16."""
    return _bytes([_flat(leaves, b, device) for b in buckets], device)


def _fold_dense(rows: torch.Tensor, leaves: list[torch.Tensor], buckets: list[Bucket], out: list[torch.Tensor]) -> None:
    """Fold every rank's bucket data (``rows``: one row per rank) by one reduction over ranks per bucket."""
    at = 0
    for b in buckets:
        per_rank = rows[:, at : at + b.nbytes].view(b.dtype)
        _scatter(over_ranks(per_rank, b.op), leaves, b, out)
        at += _pad(b.nbytes)


def over_ranks(x: torch.Tensor, op: str) -> torch.Tensor:
    """``x``'s rows (one per rank) reduced with ``op`` over the rank dimension, in ``x``'s dtype.

    Integer sums and products come back in their own width, wrapped as the
    rank-by-rank fold would wrap them (two's complement agrees modulo the width).
    """
    if op == "sum":
        out = x.sum(0)
    elif op == "prod":
        out = x.prod(0)
    else:
        return x.amax(0) if op == "max" else x.amin(0)
    return out if out.dtype == x.dtype else out.to(x.dtype)


def _order_keys(x: torch.Tensor, op: str) -> torch.Tensor:
    """int64 keys whose ``max`` over ranks gives the op's result (``_from_keys`` decodes): NaN wins, as in torch."""
    if x.dtype.is_floating_point:
        bits = x.to(torch.float64).view(torch.int64)
        keys = torch.where(bits < 0, bits ^ _FLIP, bits)
    elif x.dtype == torch.int64:
        keys = x
    else:
        raise TypeError(f"cannot order {x.dtype} leaves across ranks")
    if op == "min":
        keys = ~keys
    return keys.masked_fill(x.isnan(), _I64_MAX) if x.dtype.is_floating_point else keys


def _from_keys(keys: torch.Tensor, op: str, dtype: torch.dtype) -> torch.Tensor:
    """The values ``_order_keys`` encoded (``dtype``: how they travelled)."""
    if dtype != torch.float64:
        return ~keys if op == "min" else keys
    nan = keys == _I64_MAX
    bits = ~keys if op == "min" else keys
    bits = torch.where(bits < 0, bits ^ _FLIP, bits)
    return bits.view(torch.float64).masked_fill(nan, float("nan"))


def _all_reduced(comm: Comm, flat: torch.Tensor, op: str) -> torch.Tensor:
    """``flat`` reduced with ``op`` over the ranks; a max or min by order keys, where NaN wins as in torch.

    gloo's MAX and MIN keep a NaN or drop it by which rank held it (600,000 zeros and one
    NaN reduced to 0.0); the keys are int64, so floats travel as float64 keys.
    """
    if op not in ("max", "min"):
        return comm.all_reduce(flat, op)
    wide = flat.to(torch.float64 if flat.dtype.is_floating_point else torch.int64)
    return _from_keys(comm.all_reduce(_order_keys(wide, op), "max"), op, wide.dtype)


def _no_keys(comm: Comm) -> torch.Tensor:
    return torch.zeros(0, dtype=torch.int64, device=comm.device)


# -- rows: cat leaves and merge states ------------------------------------------


def _pack_rows(
    leaves: list[torch.Tensor], cats: list[int], mine: list[list[torch.Tensor]], device: torch.device
) -> torch.Tensor:
    """The variable part of a payload: cat metadata, cat data, then the merge states.

    Nothing at all when there are no merge states and every cat leaf is empty:
    a rank that sends less than the longest is read as zeros, and zero
    metadata means no rows, so ranks without rows need not say so.
    """
    if not mine and all(leaves[i].ndim == 0 or leaves[i].shape[0] == 0 for i in cats):
        return torch.zeros(0, dtype=torch.uint8, device=device)
    meta = torch.zeros(len(cats), _META, dtype=torch.int64)
    data = []
    for j, i in enumerate(cats):
        t = leaves[i]
        if t.ndim > _DIMS + 1:
            raise ValueError(f"a cat state has {t.ndim} dims; at most {_DIMS + 1} can be reduced")
        if t.ndim and t.shape[0]:
            meta[j, :4] = torch.tensor([wire.code(t.dtype), t.ndim, t.shape[0], t.numel() * t.dtype.itemsize])
            meta[j, 4 : 4 + t.ndim - 1] = torch.tensor(t.shape[1:], dtype=torch.int64)
            data.append(t)
    parts = [meta.view(torch.uint8).reshape(-1).to(device), _bytes(data, device)]
    if mine:
        parts.append(_bytes([wire.pack([x for ms in mine for x in ms], device)], device))
    return torch.cat(parts)


def _join_rows(
    rows: torch.Tensor,
    at: int,
    units: list[Leaf],
    cats: list[int],
    merges: list[Merge],
    mine: list[list[torch.Tensor]],
    out: list[torch.Tensor],
) -> list[Metric]:
    """Join every rank's cat rows into ``out`` and fold the merge states (rank ``r``'s part at ``rows[r, at:]``)."""
    p = rows.shape[0]
    k = len(cats)
    meta = rows[:, at : at + 8 * _META * k].contiguous().cpu().view(torch.int64).reshape(p, k, _META)
    nbytes = meta[:, :, 3]
    padded = (nbytes + 15) // 16 * 16
    starts = padded.cumsum(1) - padded + (at + 8 * _META * k)  # byte offsets within each rank's row
    for j, i in enumerate(cats):
        full = (meta[:, j, 2] > 0).nonzero().reshape(-1)
        if full.numel():
            out[i] = _join_cat(units[i].path, rows, meta[:, j], starts[:, j], full).to(units[i].tensor.device)
    if not merges:
        return []
    ends = padded.sum(1) + (at + 8 * _META * k)
    if p >= folds.TREE_MIN and all(type(u.metric)._merge_stacks for u in merges):
        stacked = _stacked_merges(rows, ends, merges, mine)
        if stacked is not None:
            return [stacked_fold(s, u.path) for s, u in zip(stacked, merges)]
    packs = [wire.unpack(rows[r, e:]) for r, e in enumerate(ends.tolist())]  # merge states: peer by peer
    merged, offset = [], 0
    for u, ms in zip(merges, mine):
        spec = tree.structure(u.metric)
        states = [tree.unflatten(spec, [t.to(x.device) for t, x in zip(parts[offset:], ms)]) for parts in packs]
        merged.append(fold(states, u.path))
        offset += len(ms)
    return merged


def _stacked_merges(
    rows: torch.Tensor, ends: torch.Tensor, merges: list[Merge], mine: list[list[torch.Tensor]]
) -> list[Metric] | None:
    """Every rank's merge states, stacked leaf by leaf along a new dim 0, read by one indexing operation.

    Only when every rank's merge block has rank 0's header (the same dtypes
    and shapes, so the same layout); ``None`` otherwise, and the states are
    then read peer by peer.
    """
    pieces = wire.layout(rows[0, int(ends[0]) :])
    if not pieces:
        return None
    head = pieces[0][2]  # the first tensor starts where the header ends
    length = pieces[-1][2] + pieces[-1][3]
    if int(ends.max()) + length > rows.shape[1]:
        return None  # some rank's row is too short for rank 0's layout: other shapes
    starts = ends.to(rows.device) + torch.arange(rows.shape[0], device=rows.device) * rows.shape[1]
    block = rows.reshape(-1)[starts[:, None] + torch.arange(length, device=rows.device)]
    if not bool((block[:, :head] == block[:1, :head]).all()):
        return None
    out, at = [], iter(pieces)
    for u, ms in zip(merges, mine):
        leaves = []
        for x in ms:
            dtype, shape, pos, nbytes = next(at)
            leaves.append(block[:, pos : pos + nbytes].contiguous().view(dtype).reshape(-1, *shape).to(x.device))
        out.append(tree.unflatten(tree.structure(u.metric), leaves))
    return out


def _join_cat(
    path: str, rows: torch.Tensor, meta: torch.Tensor, starts: torch.Tensor, full: torch.Tensor
) -> torch.Tensor:
    """One cat leaf's rows from every rank holding some (``full``), in rank order, by one indexing operation."""
    kinds = meta[full][:, [0, 1, *range(4, _META)]]
    odd = (kinds != kinds[0]).any(1).nonzero().reshape(-1)
    if odd.numel():
        r0, r = int(full[0]), int(full[int(odd[0])])
        raise _rows_disagree(path, r, _rows(meta[r]), r0, _rows(meta[r0]))
    dtype, ndim = wire.dtype(int(meta[full[0], 0])), int(meta[full[0], 1])
    trailing = meta[full[0], 4 : 3 + ndim].tolist()
    if 0 in trailing:  # rows of no elements: nothing to read, only how many
        return torch.zeros(int(meta[full, 2].sum()), *trailing, dtype=dtype, device=rows.device)
    size = dtype.itemsize  # pieces start 16-aligned in rows of a multiple of 16 bytes: readable as ``dtype``
    n = meta[full, 3] // size
    first = starts[full] // size + full * (rows.shape[1] // size)  # each piece's first element in the flat buffer
    total = int(n.sum())
    index = torch.repeat_interleave(first - (n.cumsum(0) - n), n, output_size=total) + torch.arange(total)
    held = rows.reshape(-1).view(dtype).index_select(0, index.to(rows.device))
    return held.reshape(-1, *trailing)


def check_rows(path: str, held: Sequence[tuple[int, torch.Tensor]]) -> None:
    """Refuse ``cat`` rows of one state that differ across ranks in dtype or row shape, as the exchange does.

    ``held`` is ``(rank, rows)`` for each rank holding some, in rank order: for a
    caller that joins rows it received whole (``sm.compute(tree, root=r)``).
    """
    r0, first = held[0]
    for r, x in held[1:]:
        if x.dtype != first.dtype or x.shape[1:] != first.shape[1:]:
            theirs, mine = _rows_text(x.dtype, x.shape[1:]), _rows_text(first.dtype, first.shape[1:])
            raise _rows_disagree(path, r, theirs, r0, mine)


def _rows_disagree(path: str, r: int, theirs: str, r0: int, first: str) -> SyncError:
    return SyncError(
        f"participants disagree on cat state {path!r}: rank {r} holds {theirs} but rank {r0} holds {first}"
    )


def _rows(meta: torch.Tensor) -> str:
    ndim = int(meta[1])
    return _rows_text(wire.dtype(int(meta[0])), meta[4 : 3 + ndim].tolist())


def _rows_text(dtype: torch.dtype, trailing: Sequence[int]) -> str:
    return f"{dtype} rows of shape {tuple(trailing)}"


def _bytes(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Tensors' raw bytes back to back, each padded to 16 (so every piece can be viewed as its dtype)."""
    chunks = []
    for t in tensors:
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).to(device)
        chunks.append(data)
        if data.numel() % 16:
            chunks.append(torch.zeros(16 - data.numel() % 16, dtype=torch.uint8, device=device))
    return torch.cat(chunks) if chunks else torch.zeros(0, dtype=torch.uint8, device=device)


def _pad(n: int) -> int:
    return (n + 15) // 16 * 16


# -- folds and failures ---------------------------------------------------------


def fold(states: list[Metric], path: str = "") -> Metric:
    """Merge every participant's state: in rank order, or as a pairwise tree for a class whose merge stacks.

    The tree (``_kernels.folds``, from ``TREE_MIN`` states) takes
    ``ceil(log2 P)`` merges instead of ``P - 1``; the grouping is fixed by P
    alone, so every rank (and every path: everywhere, on one root, a plain
    reducer) gets the same bits. A refused merge is a disagreement.
    """
    if len(states) >= folds.TREE_MIN and type(states[0])._merge_stacks:
        stacked = folds.stack(states)
        if stacked is not None:
            return stacked_fold(stacked, path)
    acc = states[0]
    for r, s in enumerate(states[1:], start=1):
        try:
            acc = acc.merge(s)
        except (TypeError, ValueError) as err:
            raise SyncError(
                f"participants disagree on merge state {path!r}: rank {r}'s state does not merge ({err})"
            ) from err
    return acc


def stacked_fold(stacked: Metric, path: str) -> Metric:
    """``folds.stacked_fold``, a refused merge reported as a disagreement."""
    try:
        return folds.stacked_fold(stacked)
    except (TypeError, ValueError) as err:
        raise SyncError(f"participants disagree on merge state {path!r}: the states do not merge ({err})") from err


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
