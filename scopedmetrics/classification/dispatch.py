"""Task dispatchers: TorchMetrics' ``Accuracy(task="multiclass", num_classes=10)`` and its siblings.

Each dispatcher is a class whose constructor returns a metric of the task's
own class (``MulticlassAccuracy`` here), exactly as TorchMetrics' ``__new__``
does: nothing of the dispatcher is left in the metric, which is an ordinary
catalogue metric (its type, configuration and state are the task class's).
Arguments come in TorchMetrics' positional order (1.9); of the dispatcher's
named arguments only those the task class takes are passed on, with the
dispatcher's defaults (so ``Accuracy(task="multiclass", num_classes=3)``
averages ``"micro"``, as in TorchMetrics); extra keyword arguments go to the
task class unchanged. An unknown task, or one the metric has no class for
(multilabel Cohen's kappa and calibration error, as in TorchMetrics), is a
``ValueError`` listing the valid tasks.
"""

from __future__ import annotations

import inspect
from typing import Any

from scopedmetrics.classification import calibration, confusion, curves, hinge, operating, stat_scores
from scopedmetrics.metric import Metric

TASKS = ("binary", "multiclass", "multilabel")


def _dispatch(name: str, task: Any, classes: dict[str, type[Metric]], named: dict[str, Any],
              kwargs: dict[str, Any]) -> Metric:
    """The metric of ``task``'s class in ``classes``, given the ``named`` arguments it takes and all ``kwargs``."""
    if not isinstance(task, str):
        raise TypeError(f"{name}: argument `task` must be a string, one of {tuple(classes)}, got {task!r}")
    if task not in classes:
        why = "is not a task" if task not in TASKS else "has no metric class"
        raise ValueError(f"{name}: argument `task` must be one of {tuple(classes)}, got {task!r} (it {why} here)")
    count = {"multiclass": "num_classes", "multilabel": "num_labels"}.get(task)
    if count is not None and (not isinstance(named.get(count), int) or isinstance(named.get(count), bool)):
        raise ValueError(f"{name}: argument `{count}` must be an int when `task` is {task!r}, got {named.get(count)!r}")
    cls = classes[task]
    takes = inspect.signature(cls).parameters
    passed = {k: v for k, v in named.items() if k in takes}
    clash = sorted(set(passed) & set(kwargs))
    if clash:
        raise TypeError(f"{name}() got multiple values for argument {clash[0]!r}")
    return cls(**passed, **kwargs)


def _tasks(module: Any, stem: str, tasks: tuple[str, ...] = TASKS) -> dict[str, type[Metric]]:
    return {t: getattr(module, f"{t.capitalize()}{stem}") for t in tasks}


_STAT = {n: _tasks(stat_scores, n) for n in ("StatScores", "Accuracy", "Precision", "Recall", "F1Score",
                                              "FBetaScore", "Specificity")}


class _Dispatcher:
    """A TorchMetrics-style task dispatcher: its constructor returns the task's metric, never an instance of it."""

    classes: dict[str, type[Metric]]


class StatScores(_Dispatcher):
    """Stat scores ``[tp, fp, tn, fn, support]`` of the given ``task``; see ``BinaryStatScores`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import StatScores
        >>> m = StatScores(task="multiclass", num_classes=3)
        >>> type(m).__name__
        'MulticlassStatScores'
        >>> m.update(torch.tensor([0, 2, 1, 1]), torch.tensor([0, 1, 1, 2])).compute()
        tensor([2, 2, 6, 2, 4])
    """

    classes = _STAT["StatScores"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class Accuracy(_Dispatcher):
    """Accuracy of the given ``task``: ``BinaryAccuracy``, ``MulticlassAccuracy`` or ``MultilabelAccuracy``.

    As TorchMetrics' dispatcher: ``average`` defaults to ``"micro"``; ``top_k``
    reaches the multiclass task only, ``threshold`` the binary and multilabel ones.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import Accuracy
        >>> m = Accuracy(task="multiclass", num_classes=3)
        >>> type(m).__name__, m.average
        ('MulticlassAccuracy', 'micro')
        >>> m.update(torch.tensor([0, 2, 1, 1]), torch.tensor([0, 1, 1, 2])).compute()
        tensor(0.5000)
        >>> Accuracy(task="multi")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Accuracy: argument `task` must be one of ('binary', 'multiclass', 'multilabel'), got 'multi' ...
    """

    classes = _STAT["Accuracy"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class Precision(_Dispatcher):
    """Precision of the given ``task``: ``BinaryPrecision``, ``MulticlassPrecision`` or ``MultilabelPrecision``.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import Precision
        >>> Precision(task="binary").update(torch.tensor([0.9, 0.8, 0.2]), torch.tensor([1, 0, 0])).compute()
        tensor(0.5000)
    """

    classes = _STAT["Precision"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class Recall(_Dispatcher):
    """Recall of the given ``task``: ``BinaryRecall``, ``MulticlassRecall`` or ``MultilabelRecall``.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import Recall
        >>> m = Recall(task="multilabel", num_labels=2, average="none")
        >>> m.update(torch.tensor([[0.9, 0.1], [0.2, 0.7]]), torch.tensor([[1, 1], [1, 1]])).compute()
        tensor([0.5000, 0.5000])
    """

    classes = _STAT["Recall"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class F1Score(_Dispatcher):
    """F1 score of the given ``task``: ``BinaryF1Score``, ``MulticlassF1Score`` or ``MultilabelF1Score``.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import F1Score
        >>> F1Score("binary").update(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 0])).compute()
        tensor(0.5000)
    """

    classes = _STAT["F1Score"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, zero_division: float = 0.0, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args, zero_division=zero_division)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class FBetaScore(_Dispatcher):
    """F-beta score of the given ``task``: ``BinaryFBetaScore``, ``MulticlassFBetaScore`` or ``MultilabelFBetaScore``.

    ``beta`` defaults to 1 and ``average`` to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import FBetaScore
        >>> m = FBetaScore("multiclass", 2.0, num_classes=3)
        >>> type(m).__name__, m.beta
        ('MulticlassFBetaScore', 2.0)
    """

    classes = _STAT["FBetaScore"]

    def __new__(  # type: ignore[misc]
        cls, task: str, beta: float = 1.0, threshold: float = 0.5, num_classes: int | None = None,
        num_labels: int | None = None, average: str | None = "micro", multidim_average: str | None = "global",
        top_k: int | None = 1, ignore_index: int | None = None, validate_args: bool = True,
        zero_division: float = 0.0, **kwargs: Any,
    ) -> Metric:
        named = dict(beta=beta, threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args, zero_division=zero_division)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class Specificity(_Dispatcher):
    """Specificity of the given ``task``: ``BinarySpecificity``, ``MulticlassSpecificity`` or ``MultilabelSpecificity``.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import Specificity
        >>> Specificity("binary").update(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 0])).compute()
        tensor(0.5000)
    """

    classes = _STAT["Specificity"]

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class NegativePredictiveValue(_Dispatcher):
    """Negative predictive value of the given ``task``; see ``BinaryNegativePredictiveValue`` and its siblings.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import NegativePredictiveValue
        >>> m = NegativePredictiveValue("binary")
        >>> m.update(torch.tensor([1, 0, 0, 0]), torch.tensor([1, 0, 1, 0])).compute()
        tensor(0.6667)
    """

    classes = _tasks(stat_scores, "NegativePredictiveValue")

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class HammingDistance(_Dispatcher):
    """Hamming distance of the given ``task``; see ``BinaryHammingDistance`` and its siblings.

    ``average`` defaults to ``"micro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import HammingDistance
        >>> m = HammingDistance("multiclass", num_classes=3)
        >>> m.update(torch.tensor([0, 2, 1, 1]), torch.tensor([0, 1, 1, 2])).compute()
        tensor(0.5000)
    """

    classes = _tasks(stat_scores, "HammingDistance")

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "micro", multidim_average: str | None = "global", top_k: int | None = 1,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     multidim_average=multidim_average, top_k=top_k, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class ExactMatch(_Dispatcher):
    """Exact match of the given ``task``: ``MulticlassExactMatch`` or ``MultilabelExactMatch`` (no binary task).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import ExactMatch
        >>> m = ExactMatch("multilabel", num_labels=2)
        >>> m.update(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 0], [0, 1]])).compute()
        tensor(0.5000)
        >>> ExactMatch("binary")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: ExactMatch: argument `task` must be one of ('multiclass', 'multilabel'), got 'binary' ...
    """

    classes = _tasks(stat_scores, "ExactMatch", ("multiclass", "multilabel"))

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        multidim_average: str = "global", ignore_index: int | None = None, validate_args: bool = True,
        **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels,
                     multidim_average=multidim_average, ignore_index=ignore_index, validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class ConfusionMatrix(_Dispatcher):
    """Confusion matrix of the given ``task``; see ``BinaryConfusionMatrix`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import ConfusionMatrix
        >>> ConfusionMatrix("binary").update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor([[1, 1],
                [0, 2]])
    """

    classes = _tasks(confusion, "ConfusionMatrix")

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        normalize: str | None = None, ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, normalize=normalize,
                     ignore_index=ignore_index, validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class MatthewsCorrCoef(_Dispatcher):
    """Matthews correlation coefficient of the given ``task``; see ``BinaryMatthewsCorrCoef`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MatthewsCorrCoef
        >>> MatthewsCorrCoef("binary").update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5774)
    """

    classes = _tasks(confusion, "MatthewsCorrCoef")

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class CohenKappa(_Dispatcher):
    """Cohen's kappa of the given ``task``: ``BinaryCohenKappa`` or ``MulticlassCohenKappa`` (no multilabel task).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import CohenKappa
        >>> CohenKappa("binary").update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.5000)
        >>> CohenKappa("multilabel")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: CohenKappa: argument `task` must be one of ('binary', 'multiclass'), got 'multilabel' ...
    """

    classes = _tasks(confusion, "CohenKappa", ("binary", "multiclass"))

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, weights: str | None = None,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, weights=weights, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class JaccardIndex(_Dispatcher):
    """Jaccard index of the given ``task``; see ``BinaryJaccardIndex`` and its siblings.

    ``average`` defaults to ``"macro"``, as in TorchMetrics' dispatcher.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import JaccardIndex
        >>> JaccardIndex("binary").update(torch.tensor([0, 1, 1, 1]), torch.tensor([0, 1, 0, 1])).compute()
        tensor(0.6667)
    """

    classes = _tasks(confusion, "JaccardIndex")

    def __new__(  # type: ignore[misc]
        cls, task: str, threshold: float = 0.5, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "macro", ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(threshold=threshold, num_classes=num_classes, num_labels=num_labels, average=average,
                     ignore_index=ignore_index, validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class CalibrationError(_Dispatcher):
    """Calibration error of the given ``task``: ``BinaryCalibrationError`` or ``MulticlassCalibrationError``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import CalibrationError
        >>> m = CalibrationError("binary", n_bins=2)
        >>> m.update(torch.tensor([0.25, 0.75]), torch.tensor([0, 1])).compute()
        tensor(0.2500)
    """

    classes = _tasks(calibration, "CalibrationError", ("binary", "multiclass"))

    def __new__(  # type: ignore[misc]
        cls, task: str, n_bins: int = 15, norm: str = "l1", num_classes: int | None = None,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(n_bins=n_bins, norm=norm, num_classes=num_classes, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class AUROC(_Dispatcher):
    """Area under the ROC curve of the given ``task``; see ``BinaryAUROC`` and its siblings.

    ``max_fpr`` reaches the binary task only, ``average`` (default ``"macro"``) the others.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import AUROC
        >>> AUROC("binary").update(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.7500)
    """

    classes = _tasks(curves, "AUROC")

    def __new__(  # type: ignore[misc]
        cls, task: str, thresholds: Any = None, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "macro", max_fpr: float | None = None, ignore_index: int | None = None,
        validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(thresholds=thresholds, num_classes=num_classes, num_labels=num_labels, average=average,
                     max_fpr=max_fpr, ignore_index=ignore_index, validate_args=validate_args)
        if task != "binary":
            named.pop("max_fpr")  # as TorchMetrics: only the binary task reads it
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class AveragePrecision(_Dispatcher):
    """Average precision of the given ``task``; see ``BinaryAveragePrecision`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import AveragePrecision
        >>> m = AveragePrecision("binary")
        >>> m.update(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])).compute()
        tensor(0.8333)
    """

    classes = _tasks(curves, "AveragePrecision")

    def __new__(  # type: ignore[misc]
        cls, task: str, thresholds: Any = None, num_classes: int | None = None, num_labels: int | None = None,
        average: str | None = "macro", ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(thresholds=thresholds, num_classes=num_classes, num_labels=num_labels, average=average,
                     ignore_index=ignore_index, validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class ROC(_Dispatcher):
    """Receiver operating characteristic curve of the given ``task``; see ``BinaryROC`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import ROC
        >>> fpr, tpr, thresholds = ROC("binary").update(torch.tensor([0.2, 0.8]), torch.tensor([0, 1])).compute()
        >>> fpr, tpr
        (tensor([0., 0., 1.]), tensor([0., 1., 1.]))
    """

    classes = _tasks(curves, "ROC")

    def __new__(  # type: ignore[misc]
        cls, task: str, thresholds: Any = None, num_classes: int | None = None, num_labels: int | None = None,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(thresholds=thresholds, num_classes=num_classes, num_labels=num_labels, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class PrecisionRecallCurve(_Dispatcher):
    """Precision-recall curve of the given ``task``; see ``BinaryPrecisionRecallCurve`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import PrecisionRecallCurve
        >>> m = PrecisionRecallCurve("binary").update(torch.tensor([0.2, 0.8]), torch.tensor([0, 1]))
        >>> precision, recall, thresholds = m.compute()
        >>> precision, recall
        (tensor([0.5000, 1.0000, 1.0000]), tensor([1., 1., 0.]))
    """

    classes = _tasks(curves, "PrecisionRecallCurve")

    def __new__(  # type: ignore[misc]
        cls, task: str, thresholds: Any = None, num_classes: int | None = None, num_labels: int | None = None,
        ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        named = dict(thresholds=thresholds, num_classes=num_classes, num_labels=num_labels, ignore_index=ignore_index,
                     validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


class HingeLoss(_Dispatcher):
    """Hinge loss of the given ``task``: ``BinaryHingeLoss`` or ``MulticlassHingeLoss`` (no multilabel task).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import HingeLoss
        >>> HingeLoss("binary").update(torch.tensor([0.5, 0.7, 0.1]), torch.tensor([0, 1, 1])).compute()
        tensor(0.9000)
        >>> preds = torch.tensor([[-1.0, 0.9, 0.2], [0.5, -1.1, 0.8], [2.2, -0.5, 0.3]])
        >>> HingeLoss("multiclass", 3, multiclass_mode="one-vs-all").update(preds, torch.tensor([0, 1, 2])).compute()
        tensor([1.3743, 1.1945, 1.2359])
    """

    classes = _tasks(hinge, "HingeLoss", ("binary", "multiclass"))

    def __new__(  # type: ignore[misc]
        cls, task: str, num_classes: int | None = None, squared: bool = False,
        multiclass_mode: str = "crammer-singer", ignore_index: int | None = None, validate_args: bool = True,
        **kwargs: Any,
    ) -> Metric:
        named = dict(num_classes=num_classes, squared=squared, multiclass_mode=multiclass_mode,
                     ignore_index=ignore_index, validate_args=validate_args)
        return _dispatch(cls.__name__, task, cls.classes, named, kwargs)


def _operating(name: str, floor: str, value: float, thresholds: Any, num_classes: int | None,
               num_labels: int | None, ignore_index: int | None, validate_args: bool, task: Any,
               kwargs: dict[str, Any]) -> Metric:
    named = {floor: value, "thresholds": thresholds, "num_classes": num_classes, "num_labels": num_labels,
             "ignore_index": ignore_index, "validate_args": validate_args}
    return _dispatch(name, task, _tasks(operating, name), named, kwargs)


class RecallAtFixedPrecision(_Dispatcher):
    """Highest recall at precision ``>= min_precision`` of the given ``task``; see ``BinaryRecallAtFixedPrecision``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import RecallAtFixedPrecision
        >>> m = RecallAtFixedPrecision("binary", 0.6)
        >>> m.update(torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])).compute()
        (tensor(1.), tensor(0.4000))
    """

    classes = _tasks(operating, "RecallAtFixedPrecision")

    def __new__(  # type: ignore[misc]
        cls, task: str, min_precision: float, thresholds: Any = None, num_classes: int | None = None,
        num_labels: int | None = None, ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        return _operating(cls.__name__, "min_precision", min_precision, thresholds, num_classes, num_labels,
                          ignore_index, validate_args, task, kwargs)


class PrecisionAtFixedRecall(_Dispatcher):
    """Highest precision at recall ``>= min_recall`` of the given ``task``; see ``BinaryPrecisionAtFixedRecall``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import PrecisionAtFixedRecall
        >>> m = PrecisionAtFixedRecall("binary", 0.5)
        >>> m.update(torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])).compute()
        (tensor(1.), tensor(0.8000))
    """

    classes = _tasks(operating, "PrecisionAtFixedRecall")

    def __new__(  # type: ignore[misc]
        cls, task: str, min_recall: float, thresholds: Any = None, num_classes: int | None = None,
        num_labels: int | None = None, ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        return _operating(cls.__name__, "min_recall", min_recall, thresholds, num_classes, num_labels,
                          ignore_index, validate_args, task, kwargs)


class SensitivityAtSpecificity(_Dispatcher):
    """Highest sensitivity at specificity ``>= min_specificity`` of the given ``task``.

    See ``BinarySensitivityAtSpecificity`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import SensitivityAtSpecificity
        >>> m = SensitivityAtSpecificity("binary", 0.5)
        >>> m.update(torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])).compute()
        (tensor(1.), tensor(0.4000))
    """

    classes = _tasks(operating, "SensitivityAtSpecificity")

    def __new__(  # type: ignore[misc]
        cls, task: str, min_specificity: float, thresholds: Any = None, num_classes: int | None = None,
        num_labels: int | None = None, ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        return _operating(cls.__name__, "min_specificity", min_specificity, thresholds, num_classes, num_labels,
                          ignore_index, validate_args, task, kwargs)


class SpecificityAtSensitivity(_Dispatcher):
    """Highest specificity at sensitivity ``>= min_sensitivity`` of the given ``task``.

    See ``BinarySpecificityAtSensitivity`` and its siblings.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import SpecificityAtSensitivity
        >>> m = SpecificityAtSensitivity("binary", 0.5)
        >>> m.update(torch.tensor([0.1, 0.4, 0.6, 0.8]), torch.tensor([0, 1, 0, 1])).compute()
        (tensor(1.), tensor(0.8000))
    """

    classes = _tasks(operating, "SpecificityAtSensitivity")

    def __new__(  # type: ignore[misc]
        cls, task: str, min_sensitivity: float, thresholds: Any = None, num_classes: int | None = None,
        num_labels: int | None = None, ignore_index: int | None = None, validate_args: bool = True, **kwargs: Any,
    ) -> Metric:
        return _operating(cls.__name__, "min_sensitivity", min_sensitivity, thresholds, num_classes, num_labels,
                          ignore_index, validate_args, task, kwargs)


__all__ = [
    "AUROC",
    "ROC",
    "Accuracy",
    "AveragePrecision",
    "CalibrationError",
    "CohenKappa",
    "ConfusionMatrix",
    "F1Score",
    "FBetaScore",
    "MatthewsCorrCoef",
    "PrecisionRecallCurve",
    "Precision",
    "Recall",
    "Specificity",
    "NegativePredictiveValue",
    "HammingDistance",
    "ExactMatch",
    "JaccardIndex",
    "StatScores",
    "HingeLoss",
    "PrecisionAtFixedRecall",
    "RecallAtFixedPrecision",
    "SensitivityAtSpecificity",
    "SpecificityAtSensitivity",
]
