"""Collections of metrics, and reducing any pytree of metrics in one pass.

A ``Collection`` is itself a metric whose state is its members' states,
matched by name. Members whose ``update`` is the same code over the same
configuration and equal states share one ``update`` call.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, cast

import optree

from scopedmetrics.metric import Metric, _is_metric, frozen
from scopedmetrics.scope import get_reducer
from scopedmetrics.state import StateSpec, spec_of
from scopedmetrics.sync import reduce_metrics
from scopedmetrics.tree import flatten

T = TypeVar("T")
C = TypeVar("C", bound="Collection")

_Group = tuple[tuple[str, ...], tuple[str, ...]]  # member names, state fields they share


class Collection(Metric):
    """Metrics updated with the same inputs and reduced together.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> c = sm.Collection(total=sm.Sum(), biggest=sm.Max())
        >>> c.update(torch.tensor([1.0, 5.0])).compute()
        {'total': tensor(6.), 'biggest': tensor(5.)}
    """

    _custom_tree = True
    _members: dict[str, Metric]
    _shared: tuple[_Group, ...]

    def __init__(self, metrics: Mapping[str, Metric] | None = None, /, **kwargs: Metric) -> None:
        members = {**(metrics or {}), **kwargs}
        for name, m in members.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"Collection: member names must be identifiers, got {name!r}")
            if not isinstance(m, Metric):
                raise TypeError(f"Collection: member {name!r} is {type(m).__name__}, not a Metric")
        shared = _share_groups(members)
        for names, fields in shared:  # members that share an update share its tensors from the start
            lead = members[names[0]]
            for other in names[1:]:
                members[other] = members[other]._rebuild({f: getattr(lead, f) for f in fields})
        self.__dict__.update(_members=members, _shared=shared)

    # -- the pytree view --------------------------------------------------

    def _tree_flatten(self) -> tuple[tuple[Any, ...], Any, tuple[str, ...]]:
        names = tuple(sorted(self._members))
        meta = (tuple(self._members), self._shared, self._reduced)
        return tuple(self._members[n] for n in names), meta, names

    @classmethod
    def _tree_unflatten(cls: type[C], meta: Any, children: Any) -> C:
        order, shared, reduced = meta
        by_name = dict(zip(sorted(order), children))
        obj = object.__new__(cls)
        obj.__dict__.update(_members={n: by_name[n] for n in order}, _shared=shared)
        if reduced:
            obj.__dict__["_reduced"] = True
        return obj

    def _state_items(self) -> Iterator[tuple[str, Any, str | None]]:
        return ((n, self._members[n], None) for n in sorted(self._members))

    def _config(self) -> tuple[Any, ...]:
        return tuple(sorted(self._members))

    def _describe(self) -> str:
        return f"Collection({', '.join(sorted(self._members))})"

    def _field_names(self) -> frozenset[str]:
        return frozenset(self._members)

    def _rebuild(self: C, fields: dict[str, Any], reduced: bool = False) -> C:
        obj = object.__new__(type(self))
        obj.__dict__.update(_members={**self._members, **fields}, _shared=self._shared)
        if reduced:
            obj.__dict__["_reduced"] = True
        return obj

    # -- the metric --------------------------------------------------------

    def update(self: C, *args: Any, **kwargs: Any) -> C:
        """Update every member with the positional arguments and the keywords it accepts."""
        accepts = _accepted(self)
        unknown = set() if accepts is None else kwargs.keys() - accepts
        if unknown:
            raise TypeError(f"Collection.update: no member accepts keyword(s) {sorted(unknown)}")
        new: dict[str, Metric] = {}
        for names, shared in self._shared:
            lead = self._members[names[0]]
            accepted = _accepted(lead)
            kw = kwargs if accepted is None else {k: v for k, v in kwargs.items() if k in accepted}
            up = lead.update(*args, **kw)
            new[names[0]] = up
            copied = {f: getattr(up, f) for f in shared}
            for other in names[1:]:
                new[other] = self._members[other]._rebuild(copied)
        return self._rebuild(new)

    def compute(self) -> dict[str, Any]:
        """Every member's value, keyed like the members, after one joint reduction."""
        return {n: m.compute() for n, m in self._members.items()}

    def reset(self: C) -> C:
        """Every member reset; the same members and sharing."""
        return self._rebuild({n: m.reset() for n, m in self._members.items()})

    # -- mapping access ----------------------------------------------------

    def __getattr__(self, name: str) -> Metric:
        members: dict[str, Metric] | None = self.__dict__.get("_members")
        if members is not None and name in members:
            return members[name]
        raise AttributeError(f"Collection has no member {name!r}")

    def __getitem__(self, name: str) -> Metric:
        return self._members[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def keys(self) -> Any:
        """Member names, in the order they were given."""
        return self._members.keys()

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"Collection is immutable; use replace({name}=...)")

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={m!r}" for n, m in self._members.items())
        return f"Collection({inner}{', reduced' if self._reduced else ''})"


@functools.cache
def _update_params(update: Any) -> frozenset[str] | None:
    """Keyword names an ``update`` accepts; ``None`` when it takes ``**kwargs``."""
    params = inspect.signature(update).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _accepted(m: Metric) -> frozenset[str] | None:
    if isinstance(m, Collection):
        sets = [_accepted(x) for x in m._members.values()]
        return None if any(s is None for s in sets) else frozenset().union(*sets)  # type: ignore[arg-type]
    return _update_params(type(m).update)


def _share_key(m: Metric) -> tuple[Any, ...] | None:
    """Members with equal keys and equal states compute the same ``update``."""
    if isinstance(m, Collection) or m._whole_merge:
        return None
    owner = next(c for c in type(m).__mro__ if "update" in c.__dict__)
    if not dataclasses.is_dataclass(owner):
        return None
    fields = dataclasses.fields(owner)
    statics = tuple((f.name, frozen(getattr(m, f.name))) for f in fields if not isinstance(spec_of(f), StateSpec))
    states = tuple(f.name for f in fields if isinstance(spec_of(f), StateSpec))
    return (owner, statics, states)


def _same_state(a: Metric, b: Metric, names: tuple[str, ...]) -> bool:
    for n in names:
        la, sa = flatten(getattr(a, n))
        lb, sb = flatten(getattr(b, n))
        if sa != sb or any(
            x.dtype != y.dtype or x.shape != y.shape or not bool((x == y).all()) for x, y in zip(la, lb)
        ):
            return False
    return True


def _share_groups(members: dict[str, Metric]) -> tuple[_Group, ...]:
    groups: list[tuple[list[str], Any]] = []
    for name, m in members.items():
        key = _share_key(m)
        for names, k in groups:
            if key is not None and k == key and _same_state(members[names[0]], m, key[2]):
                names.append(name)
                break
        else:
            groups.append(([name], key))
    return tuple((tuple(names), k[2] if k is not None else ()) for names, k in groups)


def reduce(tree: T) -> T:
    """Reduce every metric in a pytree (dict, list, tuple, nesting) in one bucketed pass.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> out = sm.reduce({"a": sm.Sum().update(torch.ones(2)), "b": [sm.Max()]})
        >>> out["a"].compute()
        tensor(2.)
    """
    paths, metrics, spec = optree.tree_flatten_with_path(tree, is_leaf=_is_metric)  # type: ignore[arg-type]
    for p, m in zip(paths, metrics):
        if not _is_metric(m):
            raise TypeError(f"sm.reduce: leaf at {'.'.join(map(str, p))!r} is {type(m).__name__}, not a Metric")
    names = [".".join(map(str, p)) for p in paths]
    return cast(T, optree.tree_unflatten(spec, reduce_metrics(metrics, names, get_reducer())))


def compute(tree: Any) -> Any:
    """Reduce every metric in a pytree together, then compute each; same structure of values.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> sm.compute({"total": sm.Sum().update(torch.ones(3))})
        {'total': tensor(3.)}
    """
    return optree.tree_map(lambda m: m.compute(), reduce(tree), is_leaf=_is_metric)
