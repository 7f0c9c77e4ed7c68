"""TorchMetrics' positional constructor order for the catalogue's dataclass metrics.

A dataclass takes its fields by position in declaration order, base classes
first, which cannot follow TorchMetrics: ``BinaryFBetaScore(0.5)`` is
``beta=0.5`` there, while ``beta`` is declared after the options every binary
stat score shares. ``positional`` gives a class the order of its TorchMetrics
namesake instead: those names by position, every other field by keyword only,
so a positional call never means something else in the other library.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T", bound=type)


def positional(*names: str) -> Callable[[_T], _T]:
    """Let a metric class take ``names`` by position, in this order, and every other field by keyword only.

    Examples:
        >>> import inspect
        >>> from scopedmetrics.classification import BinaryFBetaScore
        >>> params = inspect.signature(BinaryFBetaScore).parameters.values()
        >>> [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
        ['beta', 'threshold', 'multidim_average', 'ignore_index', 'validate_args', 'zero_division']
        >>> BinaryFBetaScore(0.5).beta
        0.5
        >>> BinaryFBetaScore(0.5, 0.7, "global", None, True, 0, "extra")
        Traceback (most recent call last):
        ...
        TypeError: BinaryFBetaScore() takes 6 positional arguments but 7 were given
    """

    def apply(cls: _T) -> _T:
        init = cls.__dict__["__init__"]  # the dataclass's own, of every field
        params = inspect.signature(init).parameters
        unknown = [n for n in names if n not in params]
        if unknown:
            raise TypeError(f"{cls.__name__}: positional({', '.join(unknown)}) names no field")
        first, *rest = params.values()
        order = [params[n].replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        others = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in rest if p.name not in names]
        signature = inspect.Signature([first, *order, *others])
        name = cls.__name__

        @functools.wraps(init)
        def ordered(self: Any, *args: Any, **kwargs: Any) -> None:
            if args:  # keywords alone (reset, most calls) go straight through
                if len(args) > len(names):
                    raise TypeError(f"{name}() takes {len(names)} positional arguments but {len(args)} were given")
                for n, value in zip(names, args):
                    if n in kwargs:
                        raise TypeError(f"{name}() got multiple values for argument {n!r}")
                    kwargs[n] = value
            init(self, **kwargs)

        ordered.__signature__ = signature  # type: ignore[attr-defined]
        del ordered.__wrapped__  # tools that unwrap (the docs inspector) must see this order, not the fields
        cls.__init__ = ordered  # type: ignore[misc]
        return cls

    return apply
