"""Collections of metrics, and reducing any pytree of metrics in one pass.

A ``Collection`` is itself a metric whose state is its members' states,
matched by name. Members of one type and configuration that hold the very
same state tensors (built equal, then updated together) share one ``update``
call: the same computation on the same state. Sharing is re-derived from the
states at every update, never fixed when the collection is built, so a member
given other states (``load_state_dict``, ``replace``) stops sharing at once.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, NamedTuple, TypeVar, cast, overload

import optree

from scopedmetrics import overlap
from scopedmetrics.metric import Metric, _compute_for, _is_metric
from scopedmetrics.overlap import Pending
from scopedmetrics.reducers import Collective, Local, Reducer
from scopedmetrics.rooted import check_root, compute_on
from scopedmetrics.scope import get_reducer
from scopedmetrics.sync import reduce_metrics
from scopedmetrics.tree import flatten

T = TypeVar("T")
C = TypeVar("C", bound="Collection")


class Collection(Metric):
    """Metrics updated with the same inputs and reduced together.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> c = sm.Collection(total=sm.Sum(), biggest=sm.Max())
        >>> c.update(torch.tensor([1.0, 5.0])).compute()
        {'total': tensor(6.), 'biggest': tensor(5.)}
    """

    _custom_tree = True
    _members: dict[str, Metric]

    def __init__(self, metrics: Mapping[str, Metric] | None = None, /, **kwargs: Metric) -> None:
        members = {**(metrics or {}), **kwargs}
        for name, m in members.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"Collection: member names must be identifiers, got {name!r}")
            if not isinstance(m, Metric):
                raise TypeError(f"Collection: member {name!r} is {type(m).__name__}, not a Metric")
        self.__dict__.update(_members=_alias_equal(members))

    # -- the pytree view --------------------------------------------------

    def _tree_flatten(self) -> tuple[tuple[Any, ...], Any, tuple[str, ...]]:
        names = tuple(sorted(self._members))
        meta = (tuple(self._members), self._reduced)
        return tuple(self._members[n] for n in names), meta, names

    @classmethod
    def _tree_unflatten(cls: type[C], meta: Any, children: Any) -> C:
        order, reduced = meta
        by_name = dict(zip(sorted(order), children))
        obj = object.__new__(cls)
        obj.__dict__.update(_members={n: by_name[n] for n in order})
        if reduced:
            obj.__dict__["_reduced"] = True
        return obj

    def _state_items(self) -> Iterator[tuple[str, Any, str | None]]:
        return ((n, self._members[n], None) for n in sorted(self._members))

    def _config(self) -> str:
        return repr(tuple(sorted(self._members)))

    def _describe(self) -> str:
        return f"Collection({', '.join(sorted(self._members))})"

    def _field_names(self) -> frozenset[str]:
        return frozenset(self._members)

    def _rebuild(self: C, fields: dict[str, Any], reduced: bool = False) -> C:
        obj = object.__new__(type(self))
        obj.__dict__.update(_members={**self._members, **fields})
        if reduced:
            obj.__dict__["_reduced"] = True
        return obj

    # -- the metric --------------------------------------------------------

    def update(self: C, *args: Any, **kwargs: Any) -> C:
        """Update every member with the positional arguments and the keywords it accepts."""
        plan = self._plan()
        if kwargs and plan.accepts is not None and not kwargs.keys() <= plan.accepts:
            unknown = sorted(kwargs.keys() - plan.accepts)
            raise TypeError(f"Collection.update: no member accepts keyword(s) {unknown}")
        members, new = self._members, {}
        done: dict[Any, Metric] = {}  # by unit object, and by (kind, state tensors)
        for name, field, kind, accepts in plan.steps:
            m = members[name]
            unit = m.__dict__[field] if field else m
            result = None if kind is None else done.get(id(unit))  # a unit already updated (shared since)
            if result is None:
                key = None if kind is None else (kind, *(id(unit.__dict__[n]) for n in unit._layout.states))
                result = done.get(key)  # the same computation on the same state: reuse its result
                if result is None:
                    kw = kwargs if accepts is None else {k: v for k, v in kwargs.items() if k in accepts}
                    result = unit.update(*args, **kw)
                    if key is not None:
                        done[key] = result
                if key is not None:
                    done[id(unit)] = result
            new[name] = m._rebuild({field: result}) if field else result
        out = self._rebuild(new)
        out.__dict__["_update_plan"] = plan  # update keeps every member's type and configuration
        return out

    def _plan(self) -> _Plan:
        """What ``update`` does per member, derived once from types and configurations (states vary)."""
        plan: _Plan | None = self.__dict__.get("_update_plan")
        if plan is None:
            plan = self.__dict__["_update_plan"] = _plan_of(self)
        return plan

    def compute(self) -> dict[str, Any]:
        """Every member's value, keyed like the members, after one joint reduction."""
        return {n: m.compute() for n, m in self._members.items()}

    def _warn_if_empty(self) -> None:
        for m in self._members.values():  # each member names itself
            m._warn_if_empty()

    def reset(self: C) -> C:
        """Every member reset; members of one type and configuration share their update again."""
        return self._rebuild(_alias_equal({n: m.reset() for n, m in self._members.items()}))

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
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return frozenset(names | {"mask"})  # every metric's update takes mask= (Metric's wrapper)


class _Step(NamedTuple):
    """One member's part of ``update``: its name, the field it delegates to, what it shares by, its keywords."""

    name: str
    field: str | None
    kind: tuple[Any, ...] | None  # (type, configuration) of the update unit; None: never shares
    accepts: frozenset[str] | None


class _Plan(NamedTuple):
    steps: tuple[_Step, ...]
    accepts: frozenset[str] | None  # keywords some member takes; None: a member takes **kwargs


def _plan_of(c: Collection) -> _Plan:
    steps = []
    for name, m in c._members.items():
        field, unit = _unit(m)
        steps.append(_Step(name, field, _share_kind(unit), _accepted(unit)))
    return _Plan(tuple(steps), _accepted(c))


def _accepted(m: Metric) -> frozenset[str] | None:
    if isinstance(m, Collection):
        sets = [_accepted(x) for x in m._members.values()]
        return None if any(s is None for s in sets) else frozenset().union(*sets)  # type: ignore[arg-type]
    field, unit = _unit(m)
    return _accepted(unit) if field else _update_params(type(m).update)


def _unit(m: Metric) -> tuple[str | None, Metric]:
    """The metric whose ``update`` does ``m``'s work: the one ``m`` delegates to (``sm.delegate``), else ``m``."""
    field = type(m)._delegate
    return (field, m.__dict__[field]) if field else (None, m)


def _share_kind(m: Metric) -> tuple[Any, ...] | None:
    """Type and configuration of an update unit that may share; ``None`` for one that never does.

    Containers and metrics that opt out (``_shareable = False``, e.g. ones that
    draw random numbers in ``update``) never share.
    """
    if m._custom_tree or not getattr(type(m), "_shareable", True):
        return None
    return (type(m), m._config())


def _alias_equal(members: dict[str, Metric]) -> dict[str, Metric]:
    """Members whose update units are equal (type, configuration, states) made to hold the same state tensors.

    A unit is the member, or the nested metric it delegates to, so members of
    different types that delegate to equal nested metrics come to hold one.
    """
    out: dict[str, Metric] = {}
    leads: list[Metric] = []
    for name, m in members.items():
        field, unit = _unit(m)
        lead = next((x for x in leads if _share_kind(unit) is not None and _equal(x, unit)), None)
        if lead is None:
            leads.append(unit)
        else:
            unit = unit._rebuild({n: lead.__dict__[n] for n in unit._layout.states})
        out[name] = m._rebuild({field: unit}) if field else unit
    return out


def _equal(a: Metric, b: Metric) -> bool:
    """Same type, configuration and state values."""
    if type(a) is not type(b) or a._config() != b._config():
        return False
    la, sa = flatten([a.__dict__[n] for n in a._layout.states])
    lb, sb = flatten([b.__dict__[n] for n in b._layout.states])
    return sa == sb and all(
        x.dtype == y.dtype and x.shape == y.shape and bool((x == y).all()) for x, y in zip(la, lb)
    )


class _Metrics(NamedTuple):
    """The metrics of a pytree, their dotted paths and the tree's structure."""

    metrics: list[Metric]
    names: list[str]
    spec: Any

    @classmethod
    def of(cls, tree: Any, who: str) -> _Metrics:
        paths, metrics, spec = optree.tree_flatten_with_path(tree, is_leaf=_is_metric)
        for p, m in zip(paths, metrics):
            if not _is_metric(m):
                raise TypeError(f"{who}: leaf at {'.'.join(map(str, p))!r} is {type(m).__name__}, not a Metric")
        return cls(metrics, [".".join(map(str, p)) for p in paths], spec)

    def reduced(self, reducer: Reducer) -> Any:
        """The tree with every metric reduced by ``reducer``, in one pass."""
        return optree.tree_unflatten(self.spec, reduce_metrics(self.metrics, self.names, reducer))

    def computed(self, reducer: Reducer) -> Any:
        """The tree of every metric's value after one reduction by ``reducer``."""
        reduced = reduce_metrics(self.metrics, self.names, reducer)
        return optree.tree_unflatten(self.spec, [_compute_for(r, m) for r, m in zip(reduced, self.metrics)])


@overload
def reduce(tree: T, *, async_op: Literal[False] = False) -> T: ...
@overload
def reduce(tree: T, *, async_op: Literal[True]) -> Pending[T]: ...
def reduce(tree: T, *, async_op: bool = False) -> T | Pending[T]:
    """Reduce every metric in a pytree (dict, list, tuple, nesting) in one bucketed pass.

    ``async_op=True`` returns at once with a handle whose ``wait()`` gives the
    reduced tree: the reduction runs on a thread over a second backend of the
    same ranks, so training steps (and their collectives) go on meanwhile.
    Every rank starts the same reductions in the same order, as for a blocking
    one; the values are the same bit for bit.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> out = sm.reduce({"a": sm.Sum().update(torch.ones(2)), "b": [sm.Max()]})
        >>> out["a"].compute()
        tensor(2.)
        >>> sm.reduce(sm.Sum().update(torch.ones(2)), async_op=True).wait().compute()
        tensor(2.)
    """
    parts = _Metrics.of(tree, "sm.reduce")
    if async_op:
        return overlap.start(get_reducer(), parts.reduced)
    return cast(T, parts.reduced(get_reducer()))


def compute(tree: Any, *, root: int | None = None, async_op: bool = False) -> Any:
    """Reduce every metric in a pytree together, then compute each; same structure of values.

    ``root=r`` computes on rank ``r`` alone and broadcasts the values, so only
    ``r`` ever holds every rank's ``cat`` rows (exact curves, retrieval, mAP);
    the values are the same. In one process (or a group of one) it changes
    nothing, and only ``root=0`` names a rank; under a plain-function reducer
    it changes nothing. ``async_op=True`` returns a
    handle whose ``wait()`` gives the values, reduced and computed on a thread
    as ``sm.reduce(tree, async_op=True)`` reduces.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> sm.compute({"total": sm.Sum().update(torch.ones(3))})
        {'total': tensor(3.)}
        >>> sm.simulate(lambda rank: sm.compute(sm.Cat().update(torch.tensor([rank])), root=0), 2)
        [tensor([0, 1]), tensor([0, 1])]
    """
    reducer = get_reducer()
    parts = _Metrics.of(tree, "sm.compute")
    run: Callable[[Reducer], Any]
    if root is not None and isinstance(reducer, Collective):
        check_root(root, reducer.size)
        run = lambda r: compute_on(*parts, root, cast(Collective, r))  # noqa: E731 - a channel, or reducer itself
    else:
        if root is not None and isinstance(reducer, Local):
            check_root(root, 1)  # one process, or a group of one: rank 0 alone
        run = parts.computed
    return overlap.start(reducer, run) if async_op else run(reducer)
