"""Compute on one rank and broadcast the values: for ``cat`` states too large to hold on every rank.

``sm.compute(tree, root=r)`` gives every rank the values ``sm.compute(tree)``
gives, but only rank ``r`` ever holds every participant's rows. Fixed-size
leaves (sums, maxima, counts) reduce on every rank as usual, in the same agreed
exchange that checks every rank reduces the same thing; the rows of ``cat``
states and the whole states of metrics with their own ``merge`` go to ``r``
alone (one ``gather``, padded to the longest payload). ``r`` joins the rows in
rank order and folds the states exactly as the reduction does (``fold``),
computes every value, and broadcasts the values (their length, then their
bytes). The other ranks keep only their own data, and only ``r`` sorts or
ranks all of it.

An error while ``r`` computes is raised on ``r`` and reported by every other
rank as a ``SyncError`` naming ``r``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import optree
import torch

from scopedmetrics import tree, wire
from scopedmetrics.errors import SyncError
from scopedmetrics.exchange import Leaf, Merge, check_rows, collective_reduce, fold
from scopedmetrics.metric import Metric
from scopedmetrics.reducers import Collective
from scopedmetrics.state import is_empty_cat
from scopedmetrics.sync import Units


def check_root(root: Any, size: int) -> None:
    """Refuse a ``root`` that is not a rank of a group of ``size``."""
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < size:
        raise ValueError(f"sm.compute: argument `root` must be a rank in [0, {size}), got {root!r}")


def compute_on(metrics: Sequence[Metric], names: Sequence[str], spec: Any, root: int, reducer: Collective) -> Any:
    """Reduce ``metrics`` (the leaves of a tree of structure ``spec``) onto ``root``, compute there, broadcast.

    ``root`` is a rank of ``reducer``'s group (``check_root``, by the caller).
    """
    comm = reducer.comm
    plan = Units.of(metrics, names)
    leaves = [u for u in plan.units if isinstance(u, Leaf)]
    fixed = [u for u in leaves if u.op != "cat"]
    rows = [u for u in leaves if u.op == "cat"]
    merges = [u for u in plan.units if isinstance(u, Merge)]
    failure: Exception | None = None
    try:
        payload = wire.pack([u.tensor for u in rows] + [t for m in merges for t in tree.leaves(m.metric)], comm.device)
    except Exception as err:  # noqa: BLE001 - every rank must still reach the exchange
        payload, failure = torch.zeros(0, dtype=torch.uint8, device=comm.device), err
    size = Leaf("compute(root).bytes", torch.tensor([payload.numel()], dtype=torch.int64), "max")
    reduced, _ = collective_reduce(comm, [*fixed, size], [], [*plan.desc, f"compute on rank {root}"], failure)
    longest = int(reduced[-1].item())
    gathered = comm.gather_into(torch.cat([payload, payload.new_zeros(longest - payload.numel())]), root)
    blob, error = b"", None
    if gathered is not None:
        try:
            out = _joined(plan, reduced[:-1], rows, merges, gathered)
            value = optree.tree_unflatten(spec, [m.compute() for m in out])
            blob = _dumps(("ok", value))
        except Exception as err:  # noqa: BLE001 - the others must still receive the outcome
            error = err
            blob = _dumps(("error", f"{type(err).__name__}: {err}"))
    length = comm.broadcast(torch.tensor([len(blob)], dtype=torch.int64, device=comm.device), root)
    data = torch.zeros(int(length.item()), dtype=torch.uint8, device=comm.device)
    if blob:
        data.copy_(torch.frombuffer(bytearray(blob), dtype=torch.uint8))
    data = comm.broadcast(data, root)
    if comm.rank == root:
        if error is not None:
            raise error
        return value
    status, got = torch.load(io.BytesIO(bytes(data.cpu().numpy())), map_location=_home(metrics), weights_only=False)
    if status == "error":
        raise SyncError(f"sm.compute(root={root}): rank {root} failed to compute the values: {got}")
    return got


def _joined(plan: Units, fixed: Sequence[torch.Tensor], rows: list[Leaf], merges: list[Merge],
            gathered: torch.Tensor) -> list[Metric]:
    """The reduced metrics on ``root``: every rank's rows joined and states folded, in rank order."""
    parts = [wire.unpack(row) for row in gathered]
    joined = []
    for j, leaf in enumerate(rows):
        pieces = [p[j] for p in parts]
        full = [(r, x) for r, x in enumerate(pieces) if not is_empty_cat(x)]
        if full:
            check_rows(leaf.path, full)  # torch.cat would promote dtypes: the exchange refuses them
        joined.append(torch.cat([x for _, x in full]) if full else pieces[0])
    merged, at = [], len(rows)
    for u in merges:
        structure, k = tree.structure(u.metric), len(tree.leaves(u.metric))
        merged.append(fold([tree.unflatten(structure, p[at : at + k]) for p in parts], u.path))
        at += k
    next_fixed, next_rows = iter(fixed), iter(joined)
    ordered = [next(next_rows) if u.op == "cat" else next(next_fixed)
               for u in plan.units if isinstance(u, Leaf)]
    return plan.assemble(ordered, merged)


def _dumps(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _home(metrics: Sequence[Metric]) -> torch.device:
    """Where this rank's values belong: the device of its first state tensor (the CPU without one)."""
    for m in metrics:
        for t in tree.leaves(m):
            device: torch.device = t.device
            return device
    return torch.device("cpu")
