"""Many groups of one metric's state: stacked along a leading dim where the ops allow, else one metric per group.

A *group* is a slice (``Sliced``), a bootstrap replicate (``BootStrapper``), a
slot of a window (``Running``) or an output (``MultioutputWrapper``). When every
leaf of the wrapped metric reduces with ``sum``, ``max``, ``min`` or ``prod``,
the groups are held as **one** metric of the wrapped type whose leaves carry a
leading group dimension (``stack``): one leaf per state however many groups
there are, so the reduction bucket does not grow in count, only in bytes.
Otherwise (``cat`` states, whole-state merges) they are a tuple of metrics.

A batch is folded into the groups by ``fold_groups``: with a vectorised hook
for the metric's family (``register_sliced_update``) it is one scatter by group
id; without one, the wrapped metric's own ``update`` runs once per group that
received rows, on a fresh metric, and its state is combined into that group's
row with the state's op. The second path is exact because every metric's
``update`` is a homomorphism (``m.update(a).update(b) == m.update(a).merge(fresh.update(b))``),
which is the invariant the whole library rests on.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, Union

import torch

from scopedmetrics import tree
from scopedmetrics.metric import Metric
from scopedmetrics.state import combine
from scopedmetrics.sync import Leaf, walk

M = TypeVar("M", bound=Metric)
Groups = Union[Metric, tuple[Metric, ...]]  # noqa: UP007 - an alias evaluated at runtime on 3.10
"""A stacked metric (leaves with a leading group dim) or one metric per group."""

SlicedUpdate = Callable[..., Any]
"""``hook(stacked, template, groups, *args, **kwargs) -> stacked metric or None`` (``None``: the general path)."""

_STACKABLE_OPS = frozenset(("sum", "max", "min", "prod"))
_HOOKS: dict[type, SlicedUpdate] = {}


# -- configuration ----------------------------------------------------------------------


def check_template(owner: Metric, arg: str = "metric") -> None:
    """``owner.arg`` is an empty, unreduced metric: the wrapper keeps its configuration, never its state.

    A wrapper starts empty; silently dropping the data a wrapped metric already
    holds would be wrong, so such a metric is refused.
    """
    m = getattr(owner, arg)
    name = type(owner).__name__
    if not isinstance(m, Metric):
        raise TypeError(f"{name}: argument `{arg}` must be a scopedmetrics Metric, got {type(m).__name__}")
    if m._reduced or not m._is_empty():
        raise ValueError(
            f"{name}: argument `{arg}` must be a fresh metric (the wrapper starts empty and would drop the "
            f"state {type(m).__name__} holds); pass {type(m).__name__}(...) or m.reset()"
        )


def check_flag(owner: Metric, arg: str) -> None:
    """``owner.arg`` is a bool."""
    if not isinstance(getattr(owner, arg), bool):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be a bool, got {getattr(owner, arg)!r}")


def check_count(owner: Metric, arg: str, minimum: int = 1) -> None:
    """``owner.arg`` is an int (not a bool) of at least ``minimum``."""
    v = getattr(owner, arg)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be an int, got {v!r}")
    if v < minimum:
        raise ValueError(f"{type(owner).__name__}: argument `{arg}` must be at least {minimum}, got {v!r}")


# -- batches ------------------------------------------------------------------------------


def check_ids(owner: Metric, arg: str, ids: Any, high: int | None) -> torch.Tensor:
    """``ids`` checked: a 1-d integer tensor, values in ``[0, high)`` when ``high`` is given; as int64.

    Refused before anything changes, so a bad batch leaves the metric as it was.
    """
    where = f"{type(owner).__name__}.update"
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{where}: argument `{arg}` must be an integer tensor, got {type(ids).__name__}")
    if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"{where}: argument `{arg}` must be an integer tensor, got {ids.dtype}")
    if ids.ndim != 1:
        raise ValueError(f"{where}: argument `{arg}` must be 1-d (one id per sample), got shape {tuple(ids.shape)}")
    if high is not None and ids.numel():
        low, top = torch.aminmax(ids)
        if low.item() < 0 or top.item() >= high:
            bad = torch.unique(ids[(ids < 0) | (ids >= high)])[:5].tolist()
            raise ValueError(f"{where}: argument `{arg}` must hold ids in [0, {high}), got {bad}")
    return ids if ids.dtype == torch.long else ids.long()


def group_sizes(owner: Metric, arg: str, ids: Any, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids`` checked as ``check_ids`` does, and how many of them name each of the ``n`` groups.

    One ``bincount`` both counts and checks the range (negative ids make it
    raise, ids past the end make it longer), so a valid batch pays no extra pass.
    """
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 1:
        ids = check_ids(owner, arg, ids, n)
    try:
        sizes = torch.bincount(ids, minlength=n)
    except RuntimeError:
        sizes = torch.zeros(n + 1, dtype=torch.long)  # a negative id: let check_ids name it
    if sizes.shape[0] > n:
        check_ids(owner, arg, ids, n)
    return ids, sizes


def rows_in(x: Any) -> int | None:
    """An argument's entries per sample (as ``mask=`` sees it: a tensor of dim >= 1, a list, a tuple); else ``None``."""
    if isinstance(x, torch.Tensor):
        return x.shape[0] if x.ndim else None
    return len(x) if isinstance(x, (list, tuple)) else None


def is_rows(x: Any) -> bool:
    """Whether an argument has one entry per sample (``rows_in``)."""
    return rows_in(x) is not None


def check_rows(owner: Metric, n: int, arg: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Every per-sample argument has ``n`` entries (the length of ``arg``), and at least one exists."""
    found = False
    for i, x in enumerate((*args, *kwargs.values()) if kwargs else args):  # every update: names only for an error
        length = rows_in(x)
        if length is None:
            continue
        found = True
        if length != n:
            name = f"argument {i}" if i < len(args) else list(kwargs)[i - len(args)]
            raise ValueError(
                f"{type(owner).__name__}.update: `{arg}` has {n} entries but {name} has {length} along dim 0"
            )
    if not found:
        raise ValueError(
            f"{type(owner).__name__}.update: no argument has one row per sample (a tensor of dim >= 1 or a list) "
            f"to go with `{arg}`"
        )


def take(x: Any, index: torch.Tensor, rows: list[int] | None = None) -> Any:
    """The rows ``index`` of a per-sample argument; anything else as it is."""
    if isinstance(x, torch.Tensor) and x.ndim > 0:
        return x.index_select(0, index.to(x.device))
    if isinstance(x, (list, tuple)):
        picked = [x[i] for i in (rows if rows is not None else index.tolist())]
        return tuple(picked) if isinstance(x, tuple) else picked
    return x


def _narrow(x: Any, start: int, length: int) -> Any:
    if isinstance(x, torch.Tensor) and x.ndim > 0:
        return x.narrow(0, start, length)
    if isinstance(x, (list, tuple)):
        return x[start : start + length]
    return x


def split_rows(
    ids: torch.Tensor, n: int, args: Sequence[Any], kwargs: dict[str, Any]
) -> Iterator[tuple[int, tuple[Any, ...], dict[str, Any]]]:
    """``(group, args, kwargs)`` for every group with rows, in group order, rows in their original order.

    One stable sort by group id and one gather per argument (none when the ids
    are already sorted), then a view per group.
    """
    sizes = torch.bincount(ids, minlength=n).tolist()
    if ids.numel() > 1 and not bool((ids[1:] >= ids[:-1]).all()):
        order = torch.argsort(ids, stable=True)
        rows = order.tolist() if any(isinstance(x, (list, tuple)) for x in (*args, *kwargs.values())) else None
        args = tuple(take(a, order, rows) for a in args)
        kwargs = {k: take(v, order, rows) for k, v in kwargs.items()}
    start = 0
    for k, size in enumerate(sizes):
        if size:
            part = {name: _narrow(v, start, size) for name, v in kwargs.items()}
            yield k, tuple(_narrow(a, start, size) for a in args), part
            start += size


class GroupIds:
    """Which group each row of a batch goes to: ``ids`` (int64, one per row) among ``n`` groups.

    ``sizes`` (rows per group) is counted once, when first asked for, or given
    by a caller that already counted them.
    """

    __slots__ = ("_sizes", "ids", "n")

    def __init__(self, ids: torch.Tensor, n: int, sizes: torch.Tensor | None = None) -> None:
        self.ids, self.n, self._sizes = ids, n, sizes

    @property
    def sizes(self) -> torch.Tensor:
        """int64 ``(n,)``: how many rows go to each group."""
        if self._sizes is None:
            self._sizes = torch.bincount(self.ids, minlength=self.n)
        return self._sizes


# -- groups ---------------------------------------------------------------------------------


def leaf_ops(m: Metric) -> list[str]:
    """The reduce op of every leaf of ``m``, in ``tree.leaves`` order; empty when some part merges whole."""
    units: list[Any] = []
    walk(m, "", units, [])
    return [u.op if isinstance(u, Leaf) else "merge" for u in units]


def stackable(m: Metric) -> bool:
    """Whether groups of ``m`` can stack: every leaf reduces element-wise (``sum``, ``max``, ``min``, ``prod``).

    A metric whose ``update`` is not a homomorphism of its state (``Running``
    overwrites a slot: ``_homomorphic = False``) never stacks, anywhere in the
    tree, since the general path combines a fresh metric's update into a group.
    """
    return all(op in _STACKABLE_OPS for op in leaf_ops(m)) and all(
        getattr(type(x), "_homomorphic", True) for x in _nodes(m)
    )


def _nodes(m: Metric) -> Iterator[Metric]:
    """``m`` and every metric nested in its state."""
    yield m
    for _, value, _ in m._state_items():
        for x in tree.leaves(value, is_leaf=lambda v: isinstance(v, Metric)):
            if isinstance(x, Metric):
                yield from _nodes(x)


def groups_of(template: Metric, n: int) -> Groups:
    """``n`` empty groups of ``template``: stacked when it allows, else a tuple of ``n`` metrics."""
    if stackable(template):
        return stack(template, n)
    return (template,) * n  # immutable: one instance serves every group until it is updated


def stack(m: M, n: int) -> M:
    """``m`` with every leaf repeated ``n`` times along a new leading dim."""
    return tree.map_tensors(lambda t: t.unsqueeze(0).expand(n, *t.shape).clone(), m)  # type: ignore[no-any-return]


def group(groups: Groups, k: int) -> Metric:
    """Group ``k`` as a metric of the wrapped type (a view of row ``k`` when stacked)."""
    if isinstance(groups, Metric):
        return tree.map_tensors(lambda t: t[k], groups)  # type: ignore[no-any-return]
    return groups[k]


def count(groups: Groups) -> int:
    """How many groups there are."""
    if isinstance(groups, Metric):
        leaves = tree.leaves(groups)
        return int(leaves[0].shape[0]) if leaves else 0
    return len(groups)


def combine_rows(owner: Metric, stacked: M, parts: dict[int, Metric], replace: bool = False) -> M:
    """``stacked`` with each ``parts[k]``'s state combined into row ``k`` by the leaf's op (or written, ``replace``)."""
    if not parts:
        return stacked
    leaves, spec = tree.flatten(stacked)
    ops = leaf_ops(stacked)
    ks = list(parts)
    part_leaves = [tree.leaves(parts[k]) for k in ks]
    index = torch.tensor(ks, dtype=torch.long, device=leaves[0].device if leaves else None)
    new = []
    for j, (leaf, op) in enumerate(zip(leaves, ops)):
        got = [p[j] for p in part_leaves]
        for g in got:
            if g.shape != leaf.shape[1:]:
                raise ValueError(
                    f"{type(owner).__name__}: {type(parts[ks[0]]).__name__}.update changed a state's shape from "
                    f"{tuple(leaf.shape[1:])} to {tuple(g.shape)}, so its groups cannot be stacked"
                )
        rows = torch.stack(got).to(leaf.device, leaf.dtype)
        out = leaf.clone()
        out[index] = rows if replace else combine(op, leaf[index], rows)
        new.append(out)
    return tree.unflatten(spec, new)  # type: ignore[no-any-return]


def fold_groups(
    owner: Metric,
    groups: Groups,
    template: Metric,
    ids: torch.Tensor,
    n: int,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    sizes: torch.Tensor | None = None,
) -> Groups:
    """``groups`` with each row of the batch folded into group ``ids[row]``.

    The arguments' per-sample entries (as ``mask=`` sees them) line up with
    ``ids``; other arguments go to every group unchanged. ``sizes``: the rows
    per group, when the caller has counted them.
    """
    if ids.numel() == 0:
        return groups
    if isinstance(groups, Metric):
        hook = hook_for(template)
        if hook is not None:
            done = _call_hook(hook, groups, template, GroupIds(ids, n, sizes), args, kwargs)
            if done is not None:
                return done  # type: ignore[no-any-return]
        parts = {k: template.update(*a, **kw) for k, a, kw in split_rows(ids, n, args, kwargs)}
        return combine_rows(owner, groups, parts)
    out = list(groups)
    for k, a, kw in split_rows(ids, n, args, kwargs):
        out[k] = out[k].update(*a, **kw)
    return tuple(out)


# -- the registry of vectorised updates -----------------------------------------------------------


def register_sliced_update(cls: type[Metric]) -> Callable[[SlicedUpdate], SlicedUpdate]:
    """Register a vectorised update of many groups of ``cls`` at once (used by every grouping wrapper).

    The hook is called as ``hook(stacked, template, groups, *args, **kwargs)``:
    ``stacked`` holds ``groups.n`` groups of ``cls`` (leaves with a leading
    group dim), ``template`` is an empty ``cls`` with the configuration (run
    input checks with it, so errors name the metric), ``groups.ids`` (int64,
    one per sample) says which group each row goes to (``groups.sizes``: how
    many rows each group gets), and ``args``/``kwargs`` are what
    ``cls.update`` takes. It returns the new stacked metric, or ``None`` to let
    the general path (one ``update`` per group) handle this batch. It applies
    to subclasses that do not override ``update``.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import Sliced, register_sliced_update
        >>> class Count(sm.Metric):
        ...     n: torch.Tensor = sm.state("sum", default=0)
        ...     def update(self, x): return self.replace(n=self.n + x.shape[0])
        ...     def compute(self): return self.n
        >>> @register_sliced_update(Count)
        ... def _count(stacked, template, groups, x):
        ...     return stacked.replace(n=stacked.n + groups.sizes)
        >>> Sliced(Count(), 2).update(torch.zeros(3), slice_ids=torch.tensor([0, 1, 1])).compute()
        {0: tensor(1), 1: tensor(2)}
    """

    def register(fn: SlicedUpdate) -> SlicedUpdate:
        _HOOKS[cls] = fn
        return fn

    return register


def hook_for(m: Metric) -> SlicedUpdate | None:
    """The vectorised update registered for ``type(m)`` or a base whose ``update`` it inherits."""
    cls = type(m)
    hook = _HOOKS.get(cls)
    if hook is not None:  # registered for the class itself (the common case, looked up on every update)
        return hook
    for base in cls.__mro__[1:]:
        hook = _HOOKS.get(base)
        if hook is not None:
            return hook if getattr(cls, "update") is getattr(base, "update") else None  # noqa: B009
    return None


@functools.cache
def _accepts(hook: SlicedUpdate) -> tuple[int, frozenset[str], bool]:
    """How many batch arguments a hook takes by position, its keyword names, and whether it takes ``*args``."""
    params = list(inspect.signature(hook).parameters.values())[3:]  # after stacked, template, groups
    kinds = inspect.Parameter
    open_ended = any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in params)
    positional = sum(p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD) for p in params)
    names = frozenset(p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY))
    return positional, names, open_ended


def _call_hook(
    hook: SlicedUpdate, stacked: Metric, template: Metric, groups: GroupIds, args: Sequence[Any],
    kwargs: dict[str, Any],
) -> Any:
    """The hook's result; ``None`` when the arguments do not fit its signature (the metric's update then says why)."""
    positional, names, open_ended = _accepts(hook)
    if not open_ended and (len(args) > positional or (kwargs and not names.issuperset(kwargs))):
        return None
    return hook(stacked, template, groups, *args, **kwargs)


def per_element(ids: torch.Tensor, total: int) -> torch.Tensor | None:
    """Group id of every element of a batch flattened to ``total`` entries, rows first (``None``: not divisible)."""
    rows = ids.shape[0]
    if total == rows:
        return ids
    if rows == 0 or total % rows:
        return None
    return ids.repeat_interleave(total // rows)
