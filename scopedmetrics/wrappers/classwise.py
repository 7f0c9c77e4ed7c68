"""``ClasswiseWrapper`` and ``MultitaskWrapper``: one metric's per-class values, or one metric per task, as dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.wrappers._groups import check_template


def _check_affix(owner: Metric, arg: str) -> None:
    v = getattr(owner, arg)
    if v is not None and not isinstance(v, str):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be None or a string, got {v!r}")


class ClasswiseWrapper(Metric):
    """A per-class metric (``average=None``) as a flat ``{name: scalar}`` dict, keys as TorchMetrics builds them.

    Keys are ``f"{prefix}{label}{postfix}"``, labels being ``labels`` or the
    class indices; without ``prefix`` and ``postfix`` the prefix is the wrapped
    class's name in lower case and an underscore (``"multiclassaccuracy_0"``).

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import ClasswiseWrapper
        >>> m = ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None), labels=["cat", "dog", "fish"])
        >>> m.update(torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 1, 2])).compute()  # doctest: +NORMALIZE_WHITESPACE
        {'multiclassaccuracy_cat': tensor(1.), 'multiclassaccuracy_dog': tensor(0.5000),
         'multiclassaccuracy_fish': tensor(1.)}
        >>> ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None), labels=["cat", "dog"])
        Traceback (most recent call last):
        ...
        ValueError: ClasswiseWrapper: argument `labels` names 2 classes but MulticlassAccuracy has num_classes=3
    """

    metric: Metric = static()
    labels: Any = static(default=None)
    prefix: str | None = static(default=None)
    postfix: str | None = static(default=None)
    inner: Any = state("sum", init=lambda m: m.metric)  # the op is unused: the wrapped metric brings its own

    def __post_init__(self) -> None:
        check_template(self)
        _check_affix(self, "prefix")
        _check_affix(self, "postfix")
        labels = self.labels
        if labels is None:
            return
        if not isinstance(labels, (list, tuple)) or not all(isinstance(x, str) for x in labels):
            raise TypeError(f"ClasswiseWrapper: argument `labels` must be None or a list of strings, got {labels!r}")
        for arg in ("num_classes", "num_labels"):
            size = getattr(self.metric, arg, None)
            if isinstance(size, int) and size != len(labels):
                raise ValueError(
                    f"ClasswiseWrapper: argument `labels` names {len(labels)} classes but "
                    f"{type(self.metric).__name__} has {arg}={size}"
                )
        object.__setattr__(self, "labels", tuple(labels))

    def update(self, *args: Any, **kwargs: Any) -> ClasswiseWrapper:
        """Fold a batch into the wrapped metric."""
        return self.replace(inner=self.inner.update(*args, **kwargs))

    def compute(self) -> dict[str, torch.Tensor]:
        """``{key: value}`` of every class."""
        values = self.inner.compute()
        name = type(self.metric).__name__
        if not isinstance(values, torch.Tensor) or values.ndim != 1:
            got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
            raise ValueError(
                f"ClasswiseWrapper.compute: {name} must give one value per class "
                f"(a 1-d tensor; average=None), got {got}"
            )
        if self.labels is not None and len(self.labels) != values.shape[0]:
            raise ValueError(
                f"ClasswiseWrapper.compute: {len(self.labels)} labels but {name} gave {values.shape[0]} values"
            )
        if not self.prefix and not self.postfix:
            prefix, postfix = f"{name.lower()}_", ""
        else:
            prefix, postfix = self.prefix or "", self.postfix or ""
        labels = self.labels if self.labels is not None else range(values.shape[0])
        return {f"{prefix}{label}{postfix}": v for label, v in zip(labels, values)}


class MultitaskWrapper(Metric):
    """One metric (or collection) per task: ``update(preds: dict, target: dict)``, ``compute()`` a dict by task.

    Keys of ``compute()`` are ``f"{prefix}{task}{postfix}"``; a task whose
    metric is an ``sm.Collection`` gives a nested dict, as TorchMetrics does.
    Every task reduces in the same single pass.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import MultitaskWrapper
        >>> m = MultitaskWrapper({"cls": sm.BinaryAccuracy(), "reg": sm.MeanSquaredError()})
        >>> preds = {"cls": torch.tensor([1, 0, 1]), "reg": torch.tensor([2.0, 3.0])}
        >>> target = {"cls": torch.tensor([1, 1, 1]), "reg": torch.tensor([2.0, 1.0])}
        >>> m.update(preds, target).compute()
        {'cls': tensor(0.6667), 'reg': tensor(2.)}
    """

    task_metrics: Any = static()
    prefix: str | None = static(default=None)
    postfix: str | None = static(default=None)
    tasks: Any = state("sum", init=lambda m: dict(m.task_metrics))  # the op is unused: each task brings its own

    def __post_init__(self) -> None:
        tasks = self.task_metrics
        if not isinstance(tasks, Mapping):
            raise TypeError(f"MultitaskWrapper: argument `task_metrics` must be a dict, got {type(tasks).__name__}")
        if not tasks:
            raise ValueError("MultitaskWrapper: argument `task_metrics` must hold at least one task")
        for name, m in tasks.items():
            if not isinstance(name, str):
                raise TypeError(f"MultitaskWrapper: task names must be strings, got {name!r}")
            if not isinstance(m, Metric):
                raise TypeError(f"MultitaskWrapper: task {name!r} is {type(m).__name__}, not a Metric")
            if m._reduced or not m._is_empty():
                raise ValueError(f"MultitaskWrapper: task {name!r} must be a fresh metric (the wrapper starts empty)")
        _check_affix(self, "prefix")
        _check_affix(self, "postfix")
        object.__setattr__(self, "task_metrics", dict(tasks))

    def update(self, preds: Any, target: Any, mask: Any = None) -> MultitaskWrapper:
        """Fold each task's ``(preds[task], target[task])`` into its metric; ``mask`` (if given) goes to every task.

        TorchMetrics names the two ``task_preds`` and ``task_targets``; they come in the same positions.
        """
        for arg, value in (("preds", preds), ("target", target)):
            if not isinstance(value, Mapping):
                raise TypeError(f"MultitaskWrapper.update: argument `{arg}` must be a dict, got {type(value).__name__}")
        expected = set(self.task_metrics)
        if set(preds) != expected or set(target) != expected:
            raise ValueError(
                "MultitaskWrapper.update: arguments `preds` and `target` must have the tasks' keys "
                f"{sorted(expected)}, got {sorted(preds)} and {sorted(target)}"
            )
        extra = {} if mask is None else {"mask": mask}
        new = {name: m.update(preds[name], target[name], **extra) for name, m in self.tasks.items()}
        return self.replace(tasks=new)

    def compute(self) -> dict[str, Any]:
        """``{prefix + task + postfix: value}``, in the order the tasks were given."""
        pre, post = self.prefix or "", self.postfix or ""
        return {f"{pre}{name}{post}": self.tasks[name].compute() for name in self.task_metrics}
