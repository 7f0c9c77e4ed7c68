"""``Sliced``: one metric per data slice (a group, a language, a device type), reduced in one pass."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.wrappers._groups import check_rows, check_template, fold_groups, group, group_sizes, groups_of


class Sliced(Metric):
    """The wrapped metric per data slice: ``compute()`` is ``{slice: value}`` for every slice that saw a sample.

    ``slices`` is a number of slices (named ``0 .. n-1``) or a sequence of
    names (strings or ints); ``None`` (the default) names the slices by keys
    found in the data at run time (``KeyedSliced``: ``update(*args,
    slice_keys=keys, **kwargs)``). ``update(*args, slice_ids=ids, **kwargs)`` takes
    what the wrapped metric takes plus ``ids``, an integer tensor with one
    slice index per sample (an index into ``slices``). Per-slice sample counts
    are a ``sum`` state, so which slices appear is decided after the
    reduction, identically on every participant; a slice no participant saw
    is left out. Each value equals the metric computed in one process on that
    slice's samples.

    Metrics whose states all reduce with ``sum``/``max``/``min``/``prod`` keep
    every slice in one stacked leaf per state (a leading slice dimension), so
    1,000 slices reduce in as many collectives as one metric; the common
    families update all slices with one scatter. Others hold one metric per slice.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import Sliced
        >>> m = Sliced(sm.BinaryAccuracy(), ["en", "fr", "de"])
        >>> m = m.update(torch.tensor([1, 0, 1, 1]), torch.tensor([1, 1, 1, 0]), slice_ids=torch.tensor([0, 0, 2, 2]))
        >>> m.compute()
        {'en': tensor(0.5000), 'de': tensor(0.5000)}
        >>> m.update(torch.tensor([1]), torch.tensor([1]), slice_ids=torch.tensor([3]))
        Traceback (most recent call last):
        ...
        ValueError: Sliced.update: argument `slice_ids` must hold ids in [0, 3), got [3]
    """

    metric: Metric = static()
    slices: Any = static(default=None)
    counts: torch.Tensor = state("sum", init=lambda m: torch.zeros(len(m.names), dtype=torch.long))
    # the op is never used: every leaf below belongs to a nested metric, which brings its own ops
    per_slice: Any = state("sum", init=lambda m: groups_of(m.metric, len(m.names)))

    def __new__(cls, *args: Any, **kwargs: Any) -> Sliced:
        """``Sliced(metric)`` or ``Sliced(metric, slices=None)`` builds a ``KeyedSliced`` (slices found at run time)."""
        if cls is Sliced and (args or kwargs):  # without arguments: unpickling, which builds the class it names
            slices = kwargs["slices"] if "slices" in kwargs else args[1] if len(args) > 1 else None
            if slices is None:
                from scopedmetrics.wrappers.keyed import KeyedSliced

                return object.__new__(KeyedSliced)  # Python then runs KeyedSliced's __init__ with these arguments
        return object.__new__(cls)

    def __post_init__(self) -> None:
        check_template(self)
        s = self.slices
        if isinstance(s, bool) or not isinstance(s, (int, list, tuple)):
            raise TypeError(f"Sliced: argument `slices` must be a number of slices or a sequence of names, got {s!r}")
        if isinstance(s, int):
            if s < 1:
                raise ValueError(f"Sliced: argument `slices` must be at least 1, got {s}")
            return
        names = tuple(s)
        if not names:
            raise ValueError("Sliced: argument `slices` must name at least one slice")
        for x in names:
            if isinstance(x, bool) or not isinstance(x, (str, int)):
                raise TypeError(f"Sliced: slice names must be strings or ints, got {x!r}")
        if len(set(names)) != len(names):
            dup = sorted({str(x) for x in names if names.count(x) > 1})
            raise ValueError(f"Sliced: slice names must be unique, got {dup} more than once")
        object.__setattr__(self, "slices", names)

    @property
    def names(self) -> tuple[Any, ...]:
        """The slices' names, in index order (``0 .. n-1`` when ``slices`` is a number)."""
        s = self.slices
        return tuple(range(s)) if isinstance(s, int) else tuple(s)

    def update(self, *args: Any, slice_ids: Any, **kwargs: Any) -> Sliced:
        """Fold a batch in, each sample into the slice ``slice_ids`` names; the rest goes to the wrapped metric."""
        if "slice_keys" in kwargs:
            raise TypeError("Sliced.update: argument `slice_keys` is for slices found at run time "
                            "(Sliced(metric, slices=None)); these slices are fixed: pass slice_ids=ids")
        n = self.counts.shape[0]
        ids, sizes = group_sizes(self, "slice_ids", slice_ids, n)
        check_rows(self, ids.shape[0], "slice_ids", args, kwargs)
        if ids.numel() == 0:
            return self
        if ids.device != self.counts.device:
            ids, sizes = ids.to(self.counts.device), sizes.to(self.counts.device)
        per_slice = fold_groups(self, self.per_slice, self.metric, ids, n, args, kwargs, sizes)
        return self.replace(counts=self.counts + sizes, per_slice=per_slice)

    def compute(self) -> dict[Any, Any]:
        """``{name: value}`` of every slice that received a sample on some participant, in slice order."""
        seen = self.counts.tolist()
        return {name: group(self.per_slice, k).compute() for k, name in enumerate(self.names) if seen[k]}

    def slice(self, name: Any) -> Metric:
        """The wrapped metric holding one slice's state (reduced when this metric is).

        Examples:
            >>> import torch, scopedmetrics as sm
            >>> from scopedmetrics.wrappers import Sliced
            >>> m = Sliced(sm.Sum(), ["a", "b"]).update(torch.tensor([1.0, 2.0]), slice_ids=torch.tensor([1, 1]))
            >>> m.slice("b").compute()
            tensor(3.)
        """
        try:
            k = self.names.index(name)
        except ValueError:
            raise KeyError(f"Sliced: no slice named {name!r}; the slices are {list(self.names)[:10]}") from None
        return group(self.per_slice, k)


def constructor_signature(cls: type[Metric]) -> inspect.Signature:
    """``cls``'s constructor as its ``__init__`` takes it (``inspect`` would read ``Sliced.__new__``'s ``*args``)."""
    sig = inspect.signature(cls.__init__)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


Sliced.__signature__ = constructor_signature(Sliced)  # type: ignore[attr-defined]
