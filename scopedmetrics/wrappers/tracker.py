"""``MetricTracker`` (one metric per epoch) and ``MinMaxMetric`` (a value's extremes over time), as pure steps.

TorchMetrics' versions change themselves: ``MetricTracker.increment()`` appends
in place, ``MinMaxMetric.compute()`` stores the new extremes. Here those are
explicit calls that return a new wrapper (``increment()``, ``observe()``), and
``compute()`` never changes anything.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.wrappers._groups import check_template

_STEP = re.compile(r"^steps\.(\d+)\.")


class MetricTracker(Metric):
    """A metric per step (epoch): ``increment()`` returns a tracker with a fresh one; the best step is found later.

    ``update`` and ``compute`` act on the newest step; ``compute_all()`` gives
    every step's value stacked (per key for dict values), ``best_metric()``
    the best of them (largest when ``maximize``; a sequence of bools gives one
    per key of a dict value). Every participant must ``increment`` alike: the
    steps are part of the state, and each ``compute`` reduces them together.
    ``reset()`` empties every step and keeps their number (TorchMetrics'
    ``reset_all``), so that it stays the identity of ``merge``.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import MetricTracker
        >>> t = MetricTracker(sm.BinaryAccuracy())
        >>> for epoch in range(3):
        ...     t = t.increment().update(torch.tensor([1, 0, epoch % 2]), torch.tensor([1, 1, 1]))
        >>> t.compute_all()
        tensor([0.3333, 0.6667, 0.3333])
        >>> t.best_metric(return_step=True)
        (0.6666666865348816, 1)
    """

    metric: Metric = static()
    maximize: Any = static(default=True)
    steps: Any = state("sum", init=lambda m: ())  # the op is unused: each step's metric brings its own

    def __post_init__(self) -> None:
        check_template(self)
        mx = self.maximize
        if isinstance(mx, (list, tuple)):
            if not all(isinstance(x, bool) for x in mx):
                raise TypeError(f"MetricTracker: argument `maximize` must be a bool or a sequence of bools, got {mx!r}")
            object.__setattr__(self, "maximize", tuple(mx))
        elif not isinstance(mx, bool):
            raise TypeError(f"MetricTracker: argument `maximize` must be a bool or a sequence of bools, got {mx!r}")

    @property
    def n_steps(self) -> int:
        """How many steps have been started with ``increment()``."""
        return len(self.steps)

    def increment(self) -> MetricTracker:
        """A tracker with one more step, a fresh metric, that ``update`` now feeds."""
        if self._reduced:
            raise ValueError(
                "MetricTracker.increment: this tracker is reduced (it holds every participant's state); "
                "increment the unreduced tracker"
            )
        return self.replace(steps=(*self.steps, self.metric))

    def _newest(self, method: str) -> Metric:
        if not self.steps:
            raise ValueError(f"MetricTracker.{method}: call increment() first: there is no step yet")
        return self.steps[-1]  # type: ignore[no-any-return]

    def update(self, *args: Any, **kwargs: Any) -> MetricTracker:
        """Fold a batch into the newest step."""
        newest = self._newest("update").update(*args, **kwargs)
        return self.replace(steps=(*self.steps[:-1], newest))

    def compute(self) -> Any:
        """The newest step's value."""
        return self._newest("compute").compute()

    def compute_all(self) -> Any:
        """Every step's value, stacked along dim 0 (per key for dicts; a list when they do not stack).

        A collective call (it reduces every step), like ``compute``.
        """
        reduced = self.reduce()
        if not reduced.steps:
            raise ValueError("MetricTracker.compute_all: call increment() first: there is no step yet")
        values = [m.compute() for m in reduced.steps]
        try:
            if isinstance(values[0], Mapping):
                return {k: torch.stack([v[k] for v in values]) for k in values[0]}
            return torch.stack(values)
        except (TypeError, RuntimeError, KeyError):
            return values

    def best_metric(self, return_step: bool = False) -> Any:
        """The best value over the steps (and its step with ``return_step``); per key for dict values.

        ``None`` (with a warning) where no best is defined, as TorchMetrics.
        """
        res = self.compute_all()
        if isinstance(res, torch.Tensor):
            return _best(res, bool(self.maximize) if isinstance(self.maximize, bool) else self.maximize[0],
                         return_step, type(self.metric).__name__)
        if not isinstance(res, dict):
            warnings.warn("MetricTracker.best_metric: the values do not stack; returning None", UserWarning,
                          stacklevel=2)
            return (None, None) if return_step else None
        flags = self.maximize if isinstance(self.maximize, tuple) else (self.maximize,) * len(res)
        if len(flags) != len(res):
            raise ValueError(f"MetricTracker.best_metric: {len(flags)} maximize flags for {len(res)} values")
        best = {k: _best(v, mx, True, k) for (k, v), mx in zip(res.items(), flags)}
        values = {k: b[0] for k, b in best.items()}
        return (values, {k: b[1] for k, b in best.items()}) if return_step else values

    def reset(self) -> MetricTracker:
        """Every step emptied, their number kept (the identity of ``merge``)."""
        return self._rebuild({"steps": tuple(m.reset() for m in self.steps)})

    def load_state_dict(self, state_dict: dict[str, torch.Tensor]) -> MetricTracker:
        """As ``Metric.load_state_dict``, with as many steps as the checkpoint holds."""
        steps = {int(m.group(1)) for k in state_dict if (m := _STEP.match(str(k)))}
        target = self._rebuild({"steps": (self.metric,) * (max(steps) + 1 if steps else 0)})
        return Metric.load_state_dict(target, state_dict)


def _best(values: torch.Tensor, maximize: bool, return_step: bool, name: str) -> Any:
    try:
        value, idx = (torch.max if maximize else torch.min)(values, 0)
        out: tuple[Any, Any] = (value.item(), int(idx.item()))
    except (ValueError, RuntimeError) as err:
        warnings.warn(f"MetricTracker.best_metric: no best value of {name} ({err}); returning None", UserWarning,
                      stacklevel=3)
        out = (None, None)
    return out if return_step else out[0]


class MinMaxMetric(Metric):
    """A scalar metric's value with the smallest and largest values it has had when observed.

    ``compute()`` returns ``{"raw": value, "max": ..., "min": ...}``, the
    extremes including the current value, and changes nothing. ``observe()``
    (a collective call: it computes) returns a new wrapper that holds those
    extremes; ``restart()`` empties the wrapped metric and keeps them, for the
    next epoch. TorchMetrics updates the extremes inside ``compute``.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import MinMaxMetric
        >>> m = MinMaxMetric(sm.Mean())
        >>> for epoch in [torch.tensor([1.0, 3.0]), torch.tensor([5.0]), torch.tensor([0.0, 1.0])]:
        ...     m = m.update(epoch).observe().restart()
        >>> m.update(torch.tensor([2.0])).compute()
        {'raw': tensor(2.), 'max': tensor(5.), 'min': tensor(0.5000)}
    """

    metric: Metric = static()
    inner: Any = state("sum", init=lambda m: m.metric)  # the op is unused: the wrapped metric brings its own
    min_val: torch.Tensor = state("min", default=float("inf"))
    max_val: torch.Tensor = state("max", default=float("-inf"))

    def __post_init__(self) -> None:
        check_template(self)

    def update(self, *args: Any, **kwargs: Any) -> MinMaxMetric:
        """Fold a batch into the wrapped metric."""
        return self.replace(inner=self.inner.update(*args, **kwargs))

    def compute(self) -> dict[str, torch.Tensor]:
        """The current value and the extremes including it."""
        raw = self.inner.compute()
        if isinstance(raw, (int, float)):
            raw = torch.tensor(float(raw))
        if not isinstance(raw, torch.Tensor) or raw.numel() != 1:
            got = tuple(raw.shape) if isinstance(raw, torch.Tensor) else type(raw).__name__
            raise ValueError(f"MinMaxMetric.compute: {type(self.metric).__name__} must give a scalar, got {got}")
        v = raw.reshape(()).to(self.min_val.dtype)
        return {"raw": raw, "max": torch.maximum(self.max_val.to(v.device), v),
                "min": torch.minimum(self.min_val.to(v.device), v)}

    def observe(self) -> MinMaxMetric:
        """A wrapper holding the extremes that include the current value (collective: it computes)."""
        value = self.compute()
        return self._rebuild({"min_val": value["min"], "max_val": value["max"]}, reduced=self._reduced)

    def restart(self) -> MinMaxMetric:
        """The wrapped metric emptied, the extremes kept: the next epoch starts."""
        return self.replace(inner=self.inner.reset())
