"""The metric base: an immutable dataclass registered as an optree pytree.

State fields are the leaves, static fields live in the structure together with
a *reduced* mark. ``compute`` reduces with the reducer in scope exactly once and
then runs the subclass's own math on the reduced state.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import functools
import hashlib
import inspect
import re
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar, cast

import optree
import torch
from typing_extensions import dataclass_transform  # typing's own is 3.11+; torch depends on typing_extensions

from scopedmetrics import tree
from scopedmetrics.state import NAMESPACE, Shaped, StateSpec, append, combine, compact, is_empty_cat, spec_of, static

M = TypeVar("M", bound="Metric")


def _is_metric(x: Any) -> bool:
    return getattr(type(x), "_is_metric", False)


_set_grad = torch._C._set_grad_enabled
_any_autocast: Callable[[], bool] = getattr(torch._C, "_is_any_autocast_enabled", lambda: False)  # one C call
_AUTOCAST_DEVICES = tuple(getattr(torch._C, "_autocast_supported_devices", lambda: ("cpu", "cuda"))())
_NESTING = threading.local()  # depth of compute calls in this thread: only the outermost warns
_EMPTY: dict[tuple[type, str], list[torch.Tensor]] = {}  # empty leaves by (type, configuration), for _is_empty
_CACHES = ("_cfg", "_update_plan")  # derived from the configuration on first use; never pickled


def _full_precision() -> contextlib.ExitStack[bool | None]:
    """Autocast switched off on every device type where it is on (entered by ``with``).

    A model evaluated under ``torch.autocast`` often updates its metrics inside
    the same block, where autocast would run a metric's own math in lower
    precision without an error (SSIM's Gaussian windows are convolutions: in
    bfloat16 its value moved by 1e-4, MS-SSIM's by 5e-3). ``update`` and
    ``compute`` run with it off; a traced ``update`` keeps it (Dynamo cannot
    trace switching it).
    """
    stack = contextlib.ExitStack()
    for device in _AUTOCAST_DEVICES:
        if torch.is_autocast_enabled(device):
            stack.enter_context(torch.autocast(device, enabled=False))
    return stack


def _reducing(compute: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a subclass's ``compute`` so it runs on a reduced state, reducing once (``_computed``)."""

    @functools.wraps(compute)
    def wrapper(self: Metric, *args: Any, **kwargs: Any) -> Any:
        return _computed(compute, self, self, args, kwargs)

    wrapper._sm_wrapped = True  # type: ignore[attr-defined]
    return wrapper


def _computed(compute: Callable[..., Any], metric: Metric, held: Metric, args: Any, kwargs: Any) -> Any:
    """``compute`` of ``metric``, reduced first unless it is; ``held`` is the metric the caller holds.

    The outermost call also warns when the reduced state is empty: no
    participant folded a sample in, the usual sign of ``m.update(...)`` whose
    result was dropped, and hands back a value that shares no memory with
    ``held``'s states (``_owned``). A reduced copy made inside the call may
    share memory with the value: nobody else can reach it. In one process the
    reducer passes the states through, so there the value is a copy; after a
    collective, whose states are new, it is not copied again.
    """
    if _any_autocast() and not torch.compiler.is_compiling():
        with _full_precision():
            return _computed(compute, metric, held, args, kwargs)
    if not metric._reduced:
        metric = metric.reduce()
    depth = getattr(_NESTING, "depth", 0)
    if depth == 0:
        metric._warn_if_empty()
    _NESTING.depth = depth + 1
    try:
        value = compute(metric, *args, **kwargs)
    finally:
        _NESTING.depth = depth
    return _owned(value, held) if depth == 0 else value


def _compute_for(reduced: Metric, held: Metric) -> Any:
    """``reduced.compute()`` for a caller who holds ``held``, the metric ``reduced`` was reduced from.

    ``sm.compute`` of a tree reduces every metric in one pass and then computes
    each: the values must share no memory with what the caller holds, and may
    share it with the reduced copies, which the caller never sees.
    """
    compute = getattr(type(reduced).compute, "__wrapped__", None)
    if compute is None:  # Metric's own compute: the class defines none, and this call says so
        return reduced.compute()
    return _computed(compute, reduced, held, (), {})


def _owned(value: Any, metric: Metric) -> Any:
    """``value`` with every tensor that shares memory with ``metric``'s state replaced by a copy.

    Many a ``compute`` returns a state as it is (``Sum``, ``Cat``, a confusion
    matrix) or a view of one (a count row), and in one process the reducer
    passes the states through; a caller that then changed the value in place
    (``cm.fill_diagonal_(0)`` to plot the errors) would change the metric, and
    every metric sharing that state in a collection, without an error.
    """
    if torch.compiler.is_compiling():
        return value
    held = {_memory(t) for t in _leaves(metric) if isinstance(t, torch.Tensor)} - {None}
    if not held:
        return value
    if isinstance(value, torch.Tensor):  # the usual value: no tree to walk
        return value.clone() if _memory(value) in held else value

    def own(x: Any) -> Any:
        return x.clone() if isinstance(x, torch.Tensor) and _memory(x) in held else x

    return optree.tree_map(own, value)


def _leaves(m: Metric) -> list[Any]:
    """``tree.leaves(m)``, read off the states when each is a tensor or a metric of such states, as most are.

    Every ``compute`` reads them twice (``_owned``, ``_is_empty``): the pytree walk cost
    about 3 µs a metric, a tenth of a small metric's whole ``compute``.
    """
    if m._custom_tree:
        return tree.leaves(m)
    d, out = m.__dict__, []
    for name in m._layout.states:
        s = d[name]
        if isinstance(s, torch.Tensor):
            out.append(s)
        elif isinstance(s, Metric):
            out += _leaves(s)
        else:  # a container of states: the pytree walk
            return tree.leaves(m)
    return out


def _memory(t: torch.Tensor) -> int | None:
    """Where ``t``'s storage lives; ``None`` for tensors without one of their own (sparse, some subclasses)."""
    try:
        return int(t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _folding(update: Callable[..., Any], own_mask: bool) -> Callable[..., Any]:
    """Wrap a subclass's ``update``: refuse a reduced metric, drop masked rows, fold detached values.

    ``own_mask`` says the subclass's ``update`` takes ``mask=`` itself.
    """

    @functools.wraps(update)
    def wrapper(self: Metric, *args: Any, **kwargs: Any) -> Any:
        if _any_autocast() and not torch.compiler.is_compiling():
            with _full_precision():
                return wrapper(self, *args, **kwargs)
        if self._reduced:
            raise ValueError(
                f"{type(self).__name__}.update: this metric is reduced (it holds every participant's state), "
                "so folding more data in would count the others again; update the unreduced metric, "
                "or start over from .reset()"
            )
        if not own_mask and "mask" in kwargs:
            mask = kwargs.pop("mask")
            if mask is not None:
                keep = _mask_of(self, mask)
                args, kwargs = _masked(self, keep, args, kwargs)  # checks the mask's length against the rows
                if not bool(keep.any()):
                    return self  # nothing kept: exactly as if the batch had never been passed
        grad = torch.is_grad_enabled()
        if grad:
            _set_grad(False)  # states never hold autograd history (a bare switch: no_grad()'s object costs ~1 µs)
        try:
            return update(self, *args, **kwargs)
        except TypeError as err:
            named = _named(self, err)
            if named is err:
                raise
            raise named from err
        finally:
            if grad:
                _set_grad(True)

    wrapper._sm_wrapped = True  # type: ignore[attr-defined]
    return wrapper


_BINDING = re.compile(r"^[\w.<>]+\(\) (got an unexpected keyword|got multiple values|missing \d+ required|takes )")


def _named(m: Metric, err: TypeError) -> TypeError:
    """``err``, or, where the arguments of ``update`` did not bind, the same error named after the metric.

    Python names the function that did not take them, which may be an inner one that
    ``update`` hands them to (``BinaryCounts._fold()``). An error raised from inside is kept as it is.
    """
    tb, frames = err.__traceback__, 0
    while tb is not None:
        tb, frames = tb.tb_next, frames + 1
    if frames > 2 or not _BINDING.match(str(err)):  # raised inside, not by the call: as it is
        return err
    return TypeError(f"{type(m).__name__}.update: {str(err).split('() ', 1)[1]}")


def delegate(field: str) -> Callable[..., Any]:
    """An ``update`` that folds the batch into the metric held in state ``field``, and does nothing else.

    Metrics that compute different values from one state hold that state as a
    nested metric and declare ``update = sm.delegate("counts")``. Their update
    is then, by construction, the nested metric's, so a ``Collection`` runs it
    once for all of them (a class that defines ``update`` itself delegates nothing).

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> class Mean(sm.Metric):
        ...     sums: sm.Sum = sm.state(default=sm.Sum())
        ...     count: sm.Sum = sm.state(default=sm.Sum())
        ...     def update(self, x):
        ...         return self.replace(sums=self.sums.update(x), count=self.count.update(torch.ones_like(x)))
        ...     def compute(self): return self.sums.compute() / self.count.compute()
        >>> class Total(sm.Metric):
        ...     counts: Mean = sm.state(default=Mean())
        ...     update = sm.delegate("counts")
        ...     def compute(self): return self.counts.sums.compute()
        >>> Total().update(torch.tensor([1.0, 2.0])).compute()
        tensor(3.)
    """

    def update(self: Metric, *args: Any, **kwargs: Any) -> Metric:
        return self.replace(**{field: getattr(self, field).update(*args, **kwargs)})

    update._sm_delegate = field  # type: ignore[attr-defined]
    update.__doc__ = f"Fold the batch into ``{field}`` (see ``sm.delegate``)."
    return update


def _mask_of(m: Metric, mask: Any) -> torch.Tensor:
    """``mask`` checked: a 1-d bool tensor over the batch's first dimension."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.ndim != 1:
        got = f"{mask.dtype} tensor of shape {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask)
        raise TypeError(f"{type(m).__name__}.update: mask must be a 1-d bool tensor over the batch, got {got}")
    return mask


def _masked(m: Metric, keep: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The batch arguments with the rows where ``keep`` is False left out."""
    n = keep.shape[0]
    rows: list[int] | None = None
    cuts = 0

    def cut(name: str, x: Any) -> Any:
        nonlocal rows, cuts
        if isinstance(x, torch.Tensor) or (hasattr(x, "__array__") and hasattr(x, "shape")):  # NumPy arrays too
            if len(x.shape) == 0:
                return x
            if x.shape[0] != n:
                raise ValueError(
                    f"{type(m).__name__}.update: mask covers {n} rows but {name} has {x.shape[0]} along dim 0"
                )
            cuts += 1
            return x[keep.to(x.device)] if isinstance(x, torch.Tensor) else x[keep.cpu().numpy()]
        if isinstance(x, (list, tuple)):
            if len(x) != n:
                raise ValueError(f"{type(m).__name__}.update: mask covers {n} rows but {name} has {len(x)} items")
            if rows is None:
                rows = keep.nonzero().flatten().tolist()
            cuts += 1
            return type(x)(x[i] for i in rows) if isinstance(x, tuple) else [x[i] for i in rows]
        return x

    out = tuple(cut(f"argument {i}", a) for i, a in enumerate(args)), {k: cut(k, v) for k, v in kwargs.items()}
    if not cuts and n != 1:  # a single value (a Python number, a 0-d tensor) is one row
        raise ValueError(f"{type(m).__name__}.update: mask covers {n} rows but no argument has rows along dim 0")
    return out


def _flatten(m: Metric) -> tuple[tuple[Any, ...], Any, tuple[str, ...]]:
    return m._tree_flatten()


# ``state`` is deliberately not a field specifier: to a type checker its call is the
# field's default value, which matches the runtime (states always have one).
@dataclass_transform(frozen_default=True, eq_default=False, field_specifiers=(static,))
class Metric:
    """Base class of every metric: subclass it, declare fields, write ``update`` and ``compute``.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> class MeanSquaredError(sm.Metric):
        ...     sum_sq: torch.Tensor = sm.state("sum", default=0.0)
        ...     count: torch.Tensor = sm.state("sum", default=0)
        ...     def update(self, preds, target):
        ...         d = preds - target
        ...         return self.replace(sum_sq=self.sum_sq + (d * d).sum(), count=self.count + d.numel())
        ...     def compute(self):
        ...         return self.sum_sq / self.count
        >>> MeanSquaredError().update(torch.zeros(4), torch.ones(4)).compute()
        tensor(1.)
    """

    _is_metric: ClassVar[bool] = True
    _custom_tree: ClassVar[bool] = False
    _merge_stacks: ClassVar[bool] = False
    """Whether ``merge`` is element-wise over states stacked along a leading dim (see ``_kernels/folds.py``)."""
    _layout: ClassVar[Layout]  # what the class declares, read once (``Layout``)
    _rows_of_any_kind: ClassVar[bool] = False  # True: empty cat defaults load any rows, as a cat state without one
    _delegate: ClassVar[str | None] = None  # the field whose nested metric ``update`` folds into (``delegate``)
    _reduced = False  # plain class attribute, not a field: reduced instances set it in __dict__

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Own or inherited: a compute or update that a mixin (not a Metric) brings is wrapped too,
        # or its compute would read this rank's state alone.
        compute, update = cls.compute, cls.update
        if compute is not Metric.compute and not getattr(compute, "_sm_wrapped", False):
            cls.compute = _reducing(compute)  # type: ignore[method-assign]
        if update is not Metric.update and not getattr(update, "_sm_wrapped", False):
            cls._delegate = getattr(update, "_sm_delegate", None)  # an update of its own delegates nothing
            cls.update = _folding(update, "mask" in inspect.signature(update).parameters)  # type: ignore[method-assign]
        if "merge" in cls.__dict__ and "_merge_stacks" not in cls.__dict__:
            cls._merge_stacks = False  # a merge of its own takes stacked states only where its class says so
        if not cls._custom_tree:
            _make_dataclass(cls)
        else:
            cls._layout = Layout.of({}, (), (), cls.merge is not Metric.merge)
        register: Any = optree.register_pytree_node  # its stub types nodes as optree's own Collection
        register(cls, _flatten, cls._tree_unflatten, path_entry_type=optree.GetAttrEntry, namespace=NAMESPACE)
        # torch.load's default (weights_only=True) unpickles only allowlisted classes: a metric is plain data
        # (tensors and configuration, no code run on load), so every metric class is allowed.
        allow = getattr(torch.serialization, "add_safe_globals", None)
        if allow is not None:
            allow([cls])

    # -- the pytree view --------------------------------------------------

    def _tree_flatten(self) -> tuple[tuple[Any, ...], Any, tuple[str, ...]]:
        d = self.__dict__
        statics = tuple(d[n] for n in self._layout.statics)
        return tuple(d[n] for n in self._layout.states), (statics, self._reduced), self._layout.states

    @classmethod
    def _tree_unflatten(cls: type[M], meta: Any, children: Any) -> M:
        obj = object.__new__(cls)
        d = obj.__dict__
        d.update(zip(cls._layout.statics, meta[0]))
        d.update(zip(cls._layout.states, children))
        if meta[1]:
            d["_reduced"] = True
        return obj

    def _state_items(self) -> Iterator[tuple[str, Any, str | None]]:
        """``(name, value, op)`` of every state field, in leaf order."""
        d = self.__dict__
        return ((n, d[n], self._layout.ops[n]) for n in self._layout.states)

    def _config(self) -> str:
        """The static configuration as one exact string (``canonical``): equal strings merge and reduce together.

        Cached on the instance: statics are frozen, tensors among them copied at construction.
        """
        d = self.__dict__
        cfg = d.get("_cfg")
        if cfg is None:
            cfg = d["_cfg"] = "(" + ", ".join(f"{n}={canonical(d[n])!r}" for n in self._layout.statics) + ")"
        return cast(str, cfg)

    def _describe(self) -> str:
        """Type and configuration, exactly as compared across participants (the fingerprint hashes it)."""
        return f"{type(self).__module__}.{type(self).__qualname__}{self._config()}"

    def _is_empty(self) -> bool:
        """Whether the state equals the empty state (no sample folded in anywhere)."""
        key = (type(self), self._config())
        fresh = _EMPTY.get(key)
        if fresh is None:  # the empty leaves of one type and configuration, made once (they are only compared)
            if len(_EMPTY) >= 256:
                _EMPTY.clear()
            fresh = _EMPTY[key] = _leaves(self.reset())
        mine = _leaves(self)
        return len(fresh) == len(mine) and all(
            a.shape == b.shape and torch.equal(a, b if b.device == a.device else b.to(a.device))
            for a, b in zip(mine, fresh)
        )

    def _warn_if_empty(self) -> None:
        if self._is_empty():
            warnings.warn(
                f"{type(self).__name__}.compute: the state is empty after the reduction (no participant folded in "
                "a sample), so this is the empty value; did an update's result go unkept? write m = m.update(...)",
                UserWarning,
                stacklevel=4,
            )

    def _rebuild(self: M, fields: dict[str, Any], reduced: bool = False) -> M:
        """A copy with ``fields`` replaced and the reduced mark set to ``reduced``."""
        obj = object.__new__(type(self))
        d = obj.__dict__
        d.update(self.__dict__)
        d.update(fields)
        if "_cfg" in d and not fields.keys().isdisjoint(self._layout.statics):
            del d["_cfg"]  # a static was replaced: its canonical form is recomputed when asked
        if reduced:
            d["_reduced"] = True
        else:
            d.pop("_reduced", None)
        return obj

    def _with_mark(self: M, reduced: bool) -> M:
        """A copy marked (un)reduced, with every metric nested in its state marked alike."""
        nested = {
            name: optree.tree_map(
                lambda x: x._with_mark(reduced) if _is_metric(x) else x, value, is_leaf=_is_metric, namespace=NAMESPACE
            )
            for name, value, _ in self._state_items()
            if not isinstance(value, torch.Tensor)
        }
        if not nested and self._reduced == reduced:
            return self
        return self._rebuild(nested, reduced)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Not a module: calling a metric would hide whether the batch was kept; say what to call instead."""
        raise TypeError(
            f"{type(self).__name__} is an immutable metric, not a module: use m = m.update(...) to fold a batch "
            "in, m, value = m.forward(...) for the batch's value too, or sm.Stateful(metric) for a module "
            "that updates in place"
        )

    # -- the public methods ------------------------------------------------

    def update(self: M, *args: Any, **kwargs: Any) -> M:
        """Fold one batch in and return the new metric; ``self`` is unchanged.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> m = sm.Sum()
            >>> m2 = m.update(torch.tensor([1.0, 2.0]))
            >>> m.sum_value, m2.sum_value
            (tensor(0.), tensor(3.))
        """
        raise NotImplementedError(f"{type(self).__name__} does not define update")

    def compute(self) -> Any:
        """Reduce with the reducer in scope, then compute the value; ``self`` is unchanged.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Mean().update(torch.tensor([1.0, 2.0])).compute()
            tensor(1.5000)
        """
        raise NotImplementedError(f"{type(self).__name__} does not define compute")

    def merge(self: M, other: M) -> M:
        """Combine with another metric of the same type and configuration, op by op.

        ``m.merge(m.reset())`` is a no-op, and merge is associative, so any
        grouping of shards gives the same state.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> a, b = sm.Sum().update(torch.tensor(1.0)), sm.Sum().update(torch.tensor(2.0))
            >>> a.merge(b).compute()
            tensor(3.)
            >>> a.merge(sm.Max())
            Traceback (most recent call last):
            ...
            TypeError: Sum.merge: cannot merge with Max
        """
        check_compatible(self, other)
        new = {
            name: _merge_value(self, name, op, value, getattr(other, name)) for name, value, op in self._state_items()
        }
        return self._rebuild(new, reduced=self._reduced)

    def reduce(self: M) -> M:
        """The state reduced across the participants of the reducer in scope, marked reduced.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> def rank_fn(rank):
            ...     return sm.Sum().update(torch.tensor(float(rank))).reduce().sum_value
            >>> sm.simulate(rank_fn, world_size=3)
            [tensor(3.), tensor(3.), tensor(3.)]
        """
        if self._reduced:
            return self
        from scopedmetrics.scope import get_reducer
        from scopedmetrics.sync import reduce_metrics

        return cast(M, reduce_metrics([self], [""], get_reducer())[0])

    def forward(self: M, *args: Any, **kwargs: Any) -> tuple[M, Any]:
        """Fold the batch in and also return this batch's own value, computed locally.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> m, batch_mean = sm.Mean().update(torch.tensor([0.0])).forward(torch.tensor([4.0]))
            >>> batch_mean, m.compute()
            (tensor(4.), tensor(2.))
        """
        if self._reduced:
            raise ValueError(f"{type(self).__name__}.forward: this metric is reduced; forward the unreduced metric")
        batch = self.reset().update(*args, **kwargs)
        depth = getattr(_NESTING, "depth", 0)
        _NESTING.depth = depth + 1  # an empty batch's value is not the forgotten-update mistake: no warning
        try:
            value = batch._with_mark(True).compute()
        finally:
            _NESTING.depth = depth
        merged = self.merge(batch)  # an empty self's merge may hand back the batch's own states (a cat leaf)
        return merged, _owned(value, merged)

    def plot(self, value: Any = None, ax: Any = None) -> tuple[Any, Any]:
        """Draw the value with matplotlib (``scopedmetrics.plot.plot``); returns ``(figure, axes)``.

        ``value`` defaults to ``self.compute()``: curves for ROC and precision-recall curves, a heat map for
        confusion matrices, bars for per-class values, a point for a scalar.

        Examples:
            >>> import matplotlib; matplotlib.use("Agg")
            >>> import scopedmetrics as sm, torch
            >>> fig, ax = sm.BinaryAccuracy().update(torch.tensor([1]), torch.tensor([1])).plot()
        """
        from scopedmetrics.plot import plot

        return plot(self, value, ax)

    def reset(self: M) -> M:
        """The empty state with the same configuration (the identity of ``merge``).

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Sum().update(torch.tensor(5.0)).reset().compute()
            tensor(0.)
        """
        fresh = type(self)(**{n: getattr(self, n) for n in self._layout.init_statics})
        if "_cfg" in self.__dict__:  # the same configuration: keep its canonical form
            fresh.__dict__["_cfg"] = self.__dict__["_cfg"]
        return fresh

    def to(self: M, *args: Any, **kwargs: Any) -> M:
        """Every state moved or cast as ``Tensor.to(*args, **kwargs)`` would.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Sum().to(torch.float64).sum_value.dtype
            torch.float64
        """
        return cast(M, tree.map_tensors(lambda t: t.to(*args, **kwargs), self))

    def replace(self: M, **fields: Any) -> M:
        """Dataclass replace; the result is not marked reduced.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Sum().replace(sum_value=torch.tensor(2.0)).compute()
            tensor(2.)
        """
        unknown = fields.keys() - self._field_names()
        if unknown:
            raise TypeError(f"{type(self).__name__}.replace: unknown field(s) {sorted(unknown)}")
        return self._rebuild(fields)

    def _field_names(self) -> frozenset[str]:
        return self._layout.names

    def append(self: M, **rows: torch.Tensor) -> M:
        """A new metric with ``rows`` appended along dim 0 to these ``cat`` states.

        The rows are copied into the state's growing buffer (``state.append``),
        so a caller that refills the tensor it passed cannot change the state.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Cat().append(value=torch.tensor([1.0, 2.0])).append(value=torch.tensor([3.0])).value
            tensor([1., 2., 3.])
        """
        d = self.__dict__
        for n in rows:
            if n not in self._layout.cat:
                raise TypeError(f"{type(self).__name__}.append: {n!r} is not a cat state")
        return self._rebuild({n: append(d[n], batch) for n, batch in rows.items()})

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The state leaves keyed by their dotted paths (``"inner.c.sum_sq"``).

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> sm.Collection(a=sm.Mean()).state_dict()
            {'a.mean_value': tensor(0.), 'a.weight': tensor(0.)}
        """
        paths, leaves, _ = tree.flatten_with_path(self)
        out, seen = {}, set()
        for p, t in zip(paths, leaves):
            t = compact(t)
            memory = t.untyped_storage().data_ptr()  # 0 for empty and meta tensors: nothing to share
            if memory and memory in seen:  # one state at two paths (members sharing one count):
                t = t.clone()  # each key its own memory, as safetensors requires
            seen.add(memory)
            out[p] = t
        return out

    def __getstate__(self) -> dict[str, Any]:
        # Pickle (and torch.save) the states alone, not the spare capacity of cat buffers.
        d = self.__dict__
        states = self._layout.states
        return {k: tree.map_tensors(compact, v) if k in states else v for k, v in d.items() if k not in _CACHES}

    def load_state_dict(self: M, state_dict: dict[str, torch.Tensor]) -> M:
        """A metric like this one holding ``state_dict``'s tensors; refuses any mismatch whole.

        Examples:
            >>> import scopedmetrics as sm, torch
            >>> saved = sm.Sum().update(torch.tensor(4.0)).state_dict()
            >>> sm.Sum().load_state_dict(saved).compute()
            tensor(4.)
            >>> sm.Sum().load_state_dict({})
            Traceback (most recent call last):
            ...
            ValueError: Sum.load_state_dict: missing keys ['sum_value'], unexpected keys []
        """
        name = type(self).__name__
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"{name}.load_state_dict: expected a mapping of path to tensor, got {type(state_dict).__name__}"
            )
        keys, leaves, spec = tree.flatten_with_path(self)
        missing, extra = set(keys) - state_dict.keys(), state_dict.keys() - set(keys)
        if missing or extra:
            raise ValueError(f"{name}.load_state_dict: missing keys {sorted(missing)}, unexpected keys {sorted(extra)}")
        free = _free_shape_leaves(self)
        new = []
        for key, old, shape_free in zip(keys, leaves, free):
            t = state_dict[key]
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{name}.load_state_dict: {key!r} is {type(t).__name__}, not a tensor")
            if shape_free == "any" and old.shape == (0,) and t.ndim >= 1:
                new.append(t.to(old.device))  # an empty leaf of a generic container joins any rows
                continue
            rows_of_floats = shape_free and t.is_floating_point() and old.is_floating_point()
            if t.dtype != old.dtype and not rows_of_floats:  # float rows keep their batches' dtype (append widens)
                raise ValueError(f"{name}.load_state_dict: {key!r} has dtype {t.dtype}, expected {old.dtype}")
            same = t.shape[1:] == old.shape[1:] if shape_free else t.shape == old.shape
            if t.ndim != old.ndim or not same:
                raise ValueError(
                    f"{name}.load_state_dict: {key!r} has shape {tuple(t.shape)}, expected {tuple(old.shape)}"
                )
            new.append(t.to(old.device))
        first: dict[int, int] = {}
        for i, old in enumerate(leaves):  # a state two members hold here (one count) is saved once per key:
            j = first.setdefault(id(old), i)
            if j != i and torch.equal(new[j], new[i]):
                new[i] = new[j]  # held once again, so they go on counting once
        return cast(M, tree.unflatten(spec, new))._with_mark(False)

    def __repr__(self) -> str:
        parts = [f"{n}={getattr(self, n)!r}" for n in self._layout.statics]
        for n, v, _ in self._state_items():
            parts.append(f"{n}={_short(v)}")
        mark = ", reduced" if self._reduced else ""
        return f"{type(self).__name__}({', '.join(parts)}{mark})"


def _short(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return repr(v) if v.numel() <= 4 else f"tensor(shape={tuple(v.shape)}, dtype={v.dtype})"
    return repr(v)


@dataclasses.dataclass(frozen=True)
class Layout:
    """What a metric class declares, read once from its fields when the class is made.

    ``states`` and ``statics`` are field names in declaration order (the
    pytree's leaves and its structure); ``ops`` maps each state to its reduce
    op (``None``: the class merges its whole state, ``whole_merge``).
    """

    states: tuple[str, ...]
    statics: tuple[str, ...]
    ops: Mapping[str, str | None]
    init_statics: tuple[str, ...]  # the statics the constructor takes, for reset
    whole_merge: bool
    names: frozenset[str]  # every field name, for replace
    cat: tuple[str, ...]  # the cat states, for append
    any_rows: frozenset[str]  # cat states declared without a default: their empty start takes any rows

    @classmethod
    def of(
        cls,
        ops: Mapping[str, str | None],
        statics: tuple[str, ...],
        init: tuple[str, ...],
        whole_merge: bool,
        any_rows: frozenset[str] = frozenset(),
    ) -> Layout:
        """The layout of states ``ops`` (name to op, in order) and ``statics``; the derived fields filled in.

        Plain fields, not cached properties: those take a lock, which ``torch.compile`` cannot trace.
        """
        cat = tuple(n for n, op in ops.items() if op == "cat")
        return cls(tuple(ops), statics, ops, init, whole_merge, frozenset((*ops, *statics)), cat, any_rows)


def _make_dataclass(cls: type[Metric]) -> None:
    """Turn ``cls`` into a frozen dataclass and record what its fields declare."""
    dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    specs = {f.name: spec_of(f) for f in fields}
    ops = {n: spec.op for n, spec in specs.items() if isinstance(spec, StateSpec)}
    statics = tuple(n for n in specs if n not in ops)
    whole_merge = cls.merge is not Metric.merge
    init = tuple(f.name for f in fields if f.init and f.name in statics)
    any_rows = frozenset(n for n, spec in specs.items() if isinstance(spec, StateSpec) and spec.any_rows)
    cls._layout = Layout.of(ops, statics, init, whole_merge, any_rows)
    cls.__init__ = _checking_config(cls.__init__)  # type: ignore[method-assign]
    no_op = [f.name for f in fields if f.name in ops and ops[f.name] is None and not _holds_metrics(f)]
    if no_op and not whole_merge:
        raise TypeError(
            f"{cls.__name__}: state field(s) {no_op} declare no reduce op; "
            "give them one, or override merge to reduce the whole state"
        )


def _holds_metrics(f: dataclasses.Field[Any]) -> bool:
    """Whether a field's default holds only metrics (which bring their own ops).

    A state shaped by the configuration (``init=``) is known only per instance:
    ``_checking_config`` checks it once shaped.
    """
    if f.default_factory is dataclasses.MISSING:
        return False
    default = f.default_factory()
    return type(default) is Shaped or all(_is_metric(x) for x in tree.leaves(default, is_leaf=_is_metric))


def _holds_only_metrics(value: Any) -> bool:
    return all(_is_metric(x) for x in tree.leaves(value, is_leaf=_is_metric))


def _checking_config(init: Callable[..., None]) -> Callable[..., None]:
    """Wrap a dataclass ``__init__``: shape ``init=`` states; statics must be comparable; mutable ones are copied.

    A copy, so a caller writing into the tensor it passed cannot change a
    configuration that was already compared or cached.
    """

    @functools.wraps(init)
    def wrapper(self: Metric, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)  # the dataclass's, then __post_init__ (checks of the configuration)
        d = self.__dict__
        layout = self._layout
        for n in layout.states:  # states shaped by the configuration: made once it is checked
            if type(d[n]) is Shaped:
                d[n] = d[n].init(self)
                if layout.ops[n] is None and not layout.whole_merge and not _holds_only_metrics(d[n]):
                    raise TypeError(
                        f"{type(self).__name__}: state field {n!r} declares no reduce op and its init= made "
                        f"{type(d[n]).__name__}, not metrics; give it an op, or override merge"
                    )
        for n in self._layout.statics:
            value = d[n]
            if isinstance(value, torch.Tensor):
                d[n] = value.detach().clone()
                continue
            try:
                canonical(value)
            except TypeError as err:
                raise TypeError(f"{type(self).__name__}: configuration {n!r} {err}") from None
            if isinstance(value, (list, dict)):  # mutable containers: a later write must not reach the metric
                d[n] = copy.deepcopy(value)

    return wrapper


_PLAIN = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))


def canonical(value: Any) -> Any:
    """A configuration value as plain data whose ``repr`` is exact and equal across processes.

    Configuration is compared by the ``repr`` of this form, both by ``merge``
    and by the agreement of a reduction, so the two never disagree: numbers by
    exact value and type (``repr`` tells ``True`` from ``1`` from ``1.0`` and
    round-trips floats), tensors element by element, functions and classes by
    qualified name, modules (``nn.Module``) by class and a digest of their parameters
    and buffers. Any other object may say how it compares by defining
    ``__canonical__(self)``, returning a value of these kinds. A value that
    cannot be compared this way is refused (``TypeError``) when the metric is
    built.

    Examples:
        >>> canonical(0.1), canonical(torch.tensor([1, 2]))
        (0.1, ('tensor', 'torch.int64', (2,), (1, 2)))
        >>> class Window:
        ...     def __init__(self, size): self.size = size
        ...     def __canonical__(self): return self.size
        >>> canonical(Window(3))
        ('object', 'scopedmetrics.metric.Window', 3)
        >>> canonical(object())
        Traceback (most recent call last):
        ...
        TypeError: holds a object, which cannot be compared across processes; use numbers, strings, ...
    """
    if isinstance(value, _PLAIN):  # their repr tells True from 1 from 1.0, and round-trips floats
        return value
    hook = getattr(type(value), "__canonical__", None)
    if hook is not None:
        return ("object", _qualname(type(value)), canonical(hook(value)))
    if isinstance(value, torch.nn.Module):
        return ("module", _qualname(type(value)), module_digest(value))
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), tuple(value.detach().cpu().flatten().tolist()))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(canonical(k)), canonical(v)) for k, v in value.items())))
    if isinstance(value, (torch.dtype, torch.device)):
        return (type(value).__name__, str(value))
    if isinstance(value, enum.Enum):
        return ("enum", _qualname(type(value)), value.name)
    if isinstance(value, Metric):
        return ("metric", value._describe())
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type, functools.partial)):
        if isinstance(value, functools.partial):
            return ("partial", canonical(value.func), canonical(value.args), canonical(value.keywords))
        return ("function", _qualname(value))
    raise TypeError(
        f"holds a {type(value).__name__}, which cannot be compared across processes; "
        "use numbers, strings, tensors, tuples, lists, dicts, functions or modules, or define __canonical__"
    )


def module_digest(module: torch.nn.Module) -> str:
    """A hash of a module's parameters and buffers (names, dtypes, shapes, bytes): its value as configuration."""
    h = hashlib.blake2b(digest_size=16)
    for name, t in module.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def check_compatible(a: Metric, b: Any) -> None:
    """Refuse to merge ``b`` into ``a``: another type, another configuration, or one reduced and one not."""
    name = type(a).__name__
    if type(b) is not type(a):
        raise TypeError(f"{name}.merge: cannot merge with {type(b).__name__}")
    if a._reduced != b._reduced:
        raise ValueError(
            f"{name}.merge: cannot merge a reduced metric with an unreduced one "
            "(the reduced one already holds every participant's state); merge before reducing"
        )
    if a._config() != b._config():
        diff = [
            f"{n}={getattr(a, n)!r} vs {getattr(b, n)!r}"
            for n in a._layout.statics
            if repr(canonical(getattr(a, n))) != repr(canonical(getattr(b, n)))
        ]
        raise ValueError(f"{name}.merge: configurations differ: {', '.join(diff) or a._describe()}")


def _merge_value(owner: Metric, name: str, op: str | None, a: Any, b: Any) -> Any:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return _combine(owner, name, op, a, b)
    sa, sb = tree.structure(a, is_leaf=_is_metric), tree.structure(b, is_leaf=_is_metric)
    if sa != sb:
        raise ValueError(f"{type(owner).__name__}.merge: state {name!r} differs in structure: {sa} vs {sb}")
    return optree.tree_map(
        lambda x, y: x.merge(y) if _is_metric(x) else _combine(owner, name, op, x, y),
        a,
        b,
        is_leaf=_is_metric,
        namespace=NAMESPACE,
    )


def _combine(owner: Metric, name: str, op: str | None, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Combine two leaves with ``op``, refusing shapes or dtypes that would broadcast silently."""
    where = f"{type(owner).__name__}.merge: state {name!r}"
    if op == "cat":
        if not (is_empty_cat(a) or is_empty_cat(b)) and (a.dtype != b.dtype or a.shape[1:] != b.shape[1:]):
            raise ValueError(
                f"{where}: cannot join rows {a.dtype}{tuple(a.shape[1:])} and {b.dtype}{tuple(b.shape[1:])}"
            )
    elif a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"{where}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
    if op is None:
        raise TypeError(f"{where} has no reduce op; {type(owner).__name__} must merge it itself")
    return combine(op, a, b)


def _free_shape_leaves(m: Metric) -> list[str]:
    """Per leaf, in tree order: ``""`` where its shape is fixed, else whose rows it holds.

    ``"rows"`` for ``cat`` leaves, and for leaves of a whole-state merge that
    start empty along dim 0: dim 0 may differ from this metric's. ``"any"`` for
    such a leaf of a generic container (``_rows_of_any_kind``, ``Cat``): its
    empty default takes rows of any dtype and shape, wherever the container is
    nested. Every other shape is fixed by the configuration.
    """
    rows = "any" if m._rows_of_any_kind else "rows"
    if m._layout.whole_merge:
        return [rows if t.ndim > 0 and t.shape[0] == 0 else "" for t in tree.leaves(m.reset())]
    out: list[str] = []
    for name, value, op in m._state_items():
        kind = "any" if name in m._layout.any_rows else rows
        for x in tree.leaves(value, is_leaf=_is_metric):
            out += _free_shape_leaves(x) if _is_metric(x) else [kind if op == "cat" else ""]
    return out
