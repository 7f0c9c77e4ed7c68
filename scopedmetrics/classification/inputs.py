"""Input checking and formatting shared by the classification metrics.

Conventions follow TorchMetrics. ``preds`` holds either labels (an integer or
bool tensor shaped like ``target``) or scores (a float tensor): probabilities,
or logits when any value lies outside [0, 1], in which case a sigmoid (binary,
multilabel) or a softmax over dim 1 (multiclass) is applied first. The choice
between probabilities and logits is made per batch: on the whole batch, or,
where TorchMetrics drops ignored entries first (the binary confusion matrix
and its scores, calibration, binary and multiclass curves), on the entries
whose target is not ``ignore_index``. ``target`` holds integer labels, or floats
that are whole numbers (``0.``/``1.``, class indices), as TorchMetrics takes
them. Extra dimensions ``...`` are flattened into the batch ("global"
averaging).

Every formatter returns flat tensors plus a ``keep`` mask that is ``False``
where ``target == ignore_index``; masking instead of filtering keeps shapes
independent of the data. Checks run only when the metric's ``validate_args``
is true; every error names the metric and the argument at fault.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics._checks import not_ignored as not_ignored  # the classification modules take these from here
from scopedmetrics._checks import widened as widened
from scopedmetrics._kernels.softmax import softmax


def config_error(owner: Any, arg: str, expected: str) -> ValueError:
    """Build the error for a bad option, naming the metric, the argument, what it must be and what it is.

    Examples:
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> config_error(BinaryAccuracy(), "threshold", "below 0.4")
        ValueError('BinaryAccuracy: argument `threshold` must be below 0.4, got 0.5')
    """
    value = getattr(owner, arg)
    return ValueError(f"{type(owner).__name__}: argument `{arg}` must be {expected}, got {value!r}")


def input_error(owner: Any, arg: str, problem: str, kind: type[Exception] = ValueError) -> Exception:
    """Build the error for a bad batch, naming the metric's ``update``, the argument and the problem.

    Examples:
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> input_error(BinaryAccuracy(), "preds", "is empty", TypeError)
        TypeError('BinaryAccuracy.update: argument `preds` is empty')
    """
    return kind(f"{type(owner).__name__}.update: argument `{arg}` {problem}")


# -- configuration, checked in __post_init__ ---------------------------------


def check_int(owner: Any, arg: str, minimum: int) -> None:
    """Refuse a static field that is not an integer ``>= minimum`` (``_checks.check_int``).

    Examples:
        >>> from scopedmetrics.classification import MulticlassAccuracy
        >>> MulticlassAccuracy(num_classes=1)
        Traceback (most recent call last):
        ...
        ValueError: MulticlassAccuracy: argument `num_classes` must be at least 2, got 1
    """
    _checks.check_int(owner, arg, minimum)


def check_one_of(owner: Any, arg: str, allowed: Sequence[Any]) -> None:
    """Refuse a static field whose value is not one of ``allowed``.

    Examples:
        >>> from scopedmetrics.classification import BinaryCalibrationError
        >>> BinaryCalibrationError(norm="l3")
        Traceback (most recent call last):
        ...
        ValueError: BinaryCalibrationError: argument `norm` must be one of ('l1', 'l2', 'max'), got 'l3'
    """
    value = getattr(owner, arg)
    if isinstance(value, torch.Tensor):
        raise TypeError(f"{type(owner).__name__}: argument `{arg}` must be one of {tuple(allowed)}, got a tensor")
    if isinstance(value, bool) and not any(a is value for a in allowed):
        raise config_error(owner, arg, f"one of {tuple(allowed)}")
    _checks.check_choice(owner, arg, allowed)


def check_threshold(owner: Any) -> None:
    """Refuse a ``threshold`` that is not a number in [0, 1].

    Examples:
        >>> from scopedmetrics.classification import BinaryRecall
        >>> BinaryRecall(threshold=2.0)
        Traceback (most recent call last):
        ...
        ValueError: BinaryRecall: argument `threshold` must lie in [0, 1], got 2.0
    """
    _checks.check_number(owner, "threshold", 0, 1)


def check_ignore_index(owner: Any) -> None:
    """Refuse an ``ignore_index`` that is neither ``None`` nor an integer.

    Examples:
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> BinaryAccuracy(ignore_index=0.5)
        Traceback (most recent call last):
        ...
        TypeError: BinaryAccuracy: argument `ignore_index` must be an int, got 0.5
    """
    _checks.check_int(owner, "ignore_index", optional=True)


def check_bool(owner: Any, arg: str) -> None:
    """Refuse a flag that is not a bool.

    Examples:
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> BinaryAccuracy(validate_args="yes")
        Traceback (most recent call last):
        ...
        TypeError: BinaryAccuracy: argument `validate_args` must be a bool, got 'yes'
    """
    _checks.check_bool(owner, arg)


# -- tensor checks -----------------------------------------------------------


def _tensor(owner: Any, arg: str, x: Any) -> None:
    if not isinstance(x, torch.Tensor):
        raise input_error(owner, arg, f"must be a torch.Tensor, got {type(x).__name__}", TypeError)
    if x.is_complex():
        raise input_error(owner, arg, f"must be real, got {x.dtype}", TypeError)


def _labels(owner: Any, arg: str, x: torch.Tensor) -> None:
    """Integer labels, or floats that are whole numbers (TorchMetrics takes ``0.``/``1.`` targets)."""
    if not x.is_floating_point():
        return
    whole = (x == x.trunc()).all()  # NaN is no whole number
    problem = f"must hold integer labels (whole numbers if float), got {x.dtype} with fractions or NaN"
    if _checks.asserting(x):
        torch._assert_async(whole, str(input_error(owner, arg, problem, TypeError)))
    elif not bool(whole):
        raise input_error(owner, arg, problem, TypeError)


def _scores(owner: Any, preds: torch.Tensor) -> None:
    problem = f"must hold float probabilities or logits, got {preds.dtype}"
    raise input_error(owner, "preds", problem, TypeError)


def _same_shape(owner: Any, preds: torch.Tensor, target: torch.Tensor) -> None:
    if preds.shape != target.shape:
        shapes = f"{tuple(preds.shape)} but `target` has {tuple(target.shape)}"
        raise input_error(owner, "preds", f"has shape {shapes}; they must match")


def _in_range(
    owner: Any, arg: str, x: torch.Tensor, high: int | None, ignore: int | None = None, mask: torch.Tensor | None = None
) -> None:
    """Every value of ``x`` (where ``mask``) lies in [0, high] (``high=None``: is not negative), or equals ``ignore``.

    The common case costs one ``aminmax``: when the extremes are in range, or
    are ``ignore``, every value is; only a batch that fails that looks closer.
    Where ``_checks.asserting(x)`` (tracing; an accelerator in ``sm.device_checks()``) the
    check is an asynchronous assert: no graph break, no host read.
    """
    if ignore is not None and not _checks.holds(x.dtype, ignore):
        ignore = None  # no value of x equals it (a comparison would wrap it into x's dtype)
    device = _checks.asserting(x)
    if not device and _extremes_within(x, high, ignore):
        return
    bad = x < 0 if high is None else (x < 0) | (x > _checks.clipped(x.dtype, high))
    if ignore is not None:
        bad &= x != ignore
    if mask is not None:
        bad &= mask
    also = f" other than ignore_index={ignore}" if ignore is not None else ""
    problem = "has negative values" if high is None else f"has values outside [0, {high}]"
    if device:
        torch._assert_async(~bad.any(), str(input_error(owner, arg, f"{problem}{also}")))
        return
    if bool(bad.any()):
        found = torch.unique(x[bad])[:5].tolist()
        raise input_error(owner, arg, f"{problem}{also}: {found}")


def _extremes_within(x: torch.Tensor, high: int | None, ignore: int | None) -> bool:
    """A sufficient test that every value of ``x`` lies in [0, high] (or is not negative) or equals ``ignore``."""
    if x.numel() == 0:
        return True
    if ignore is not None and not (0 <= ignore and (high is None or ignore <= high)):
        x = x.masked_fill(x == ignore, 0)
    low, top = torch.aminmax(x)
    return bool(low.item() >= 0 and (high is None or top.item() <= high))


def _no_nan(owner: Any, preds: torch.Tensor, finite: bool = False) -> None:
    """Refuse NaN in ``preds`` (``finite``: any non-finite value).

    One sum and one host read decide the common case: NaN propagates through a
    sum, and a finite sum has only finite terms. A sum that is infinite or NaN
    without a NaN term (an infinity, an overflow, ``inf`` and ``-inf``) is
    looked at closer.
    """
    device = _checks.asserting(preds)
    if not device:
        if preds.numel() == 0:
            return
        total = preds.sum().item()
        if math.isfinite(total) or (not finite and not math.isnan(total)):
            return
    ok = preds.isfinite().all() if finite else ~preds.isnan().any()
    problem = "contains " + ("non-finite values" if finite else "NaN")
    if device:
        torch._assert_async(ok, str(input_error(owner, "preds", problem)))
    elif not bool(ok):
        raise input_error(owner, "preds", problem)


def _binary_checks(owner: Any, preds: Any, target: Any, scores_only: bool = False, nan: bool = True) -> None:
    """Refuse a bad binary batch; ``nan=False`` leaves float ``preds`` unread (the caller checks them last)."""
    _tensor(owner, "preds", preds)
    _tensor(owner, "target", target)
    _labels(owner, "target", target)
    _same_shape(owner, preds, target)
    _in_range(owner, "target", target, 1, owner.ignore_index)
    if preds.is_floating_point():
        if nan:
            _no_nan(owner, preds)
    elif scores_only:
        _scores(owner, preds)
    else:
        _in_range(owner, "preds", preds, 1)


def _scores_of(preds: torch.Tensor, target: torch.Tensor) -> bool:
    """Whether ``preds`` has the shape ``(N, C, ...)`` of scores for ``target`` of shape ``(N, ...)``."""
    if preds.ndim == 2:  # the common case, without building shapes
        return target.ndim == 1 and preds.shape[0] == target.shape[0]
    return preds.ndim > 2 and preds.shape[:1] + preds.shape[2:] == target.shape


def _multiclass_checks(owner: Any, preds: Any, target: Any, scores_only: bool = False, nan: bool = True) -> None:
    """Refuse a bad multiclass batch; ``nan=False`` leaves float ``preds`` unread (the caller checks them last)."""
    _tensor(owner, "preds", preds)
    _tensor(owner, "target", target)
    _labels(owner, "target", target)
    c = owner.num_classes  # None (micro averages only): any number of classes
    if preds.is_floating_point():
        if not _scores_of(preds, target):
            shapes = f"got {tuple(preds.shape)} and {tuple(target.shape)}"
            problem = f"holds scores, so it must be (N, C, ...) for `target` of shape (N, ...); {shapes}"
            raise input_error(owner, "preds", problem)
        if c is not None and preds.shape[1] != c:
            problem = f"has {preds.shape[1]} scores in dim 1, expected num_classes={c}"
            raise input_error(owner, "preds", problem)
        if nan:
            _no_nan(owner, preds, finite=scores_only)
    elif scores_only:
        _scores(owner, preds)
    else:
        _same_shape(owner, preds, target)
        if getattr(owner, "top_k", 1) > 1:
            problem = f"holds labels, but top_k={owner.top_k} needs scores (N, C, ...)"
            raise input_error(owner, "preds", problem)
    high = None if c is None else c - 1
    _in_range(owner, "target", target, high, owner.ignore_index)
    if not preds.is_floating_point():
        _in_range(owner, "preds", preds, high, mask=not_ignored(target, owner.ignore_index))


def _multilabel_checks(owner: Any, preds: Any, target: Any) -> None:
    _tensor(owner, "preds", preds)
    _tensor(owner, "target", target)
    _labels(owner, "target", target)
    _same_shape(owner, preds, target)
    n = owner.num_labels
    if preds.ndim < 2 or preds.shape[1] != n:
        problem = f"must have shape (N, {n}, ...) for num_labels={n}, got {tuple(preds.shape)}"
        raise input_error(owner, "preds", problem)
    _in_range(owner, "target", target, 1, owner.ignore_index)
    if preds.is_floating_point():
        _no_nan(owner, preds)
    else:
        _in_range(owner, "preds", preds, 1)


# -- formatting --------------------------------------------------------------


def on_device(x: torch.Tensor) -> bool:
    """Whether choices that depend on ``x``'s values must be made on its device, not in Python.

    On an accelerator, reading a value on the host (``.item()``, ``bool()``) waits for
    every queued kernel, and a traced function cannot branch on data at all; on the
    CPU the host read is the cheaper way (one op instead of a ``where`` over the batch).
    """
    return not x.is_cpu or torch.compiler.is_compiling()


def _probabilities(
    preds: torch.Tensor,
    normalize: str,
    extremes: tuple[float, float] | None = None,
    keep: torch.Tensor | None = None,
) -> torch.Tensor:
    """``preds`` as probabilities: unchanged when all in [0, 1], else through sigmoid/softmax.

    ``keep`` (broadcastable to ``preds``), when given, limits that decision to
    the kept entries: an ignored score outside [0, 1] does not make the batch
    logits. ``extremes``, when the caller already has them, are the minimum
    and maximum the decision reads.

    Examples:
        >>> import torch
        >>> _probabilities(torch.tensor([0.2, 3.0]), "sigmoid", keep=torch.tensor([True, False]))
        tensor([0.2000, 3.0000])
    """
    if preds.numel() == 0:
        return preds
    decided = preds if keep is None else preds.where(keep, 0.5)  # 0.5 is a probability: it decides nothing
    if extremes is None and on_device(preds):  # the same choice without reading the data on the host
        low_t, high_t = torch.aminmax(decided)
        scaled = preds.sigmoid() if normalize == "sigmoid" else softmax(preds)
        return torch.where((low_t >= 0) & (high_t <= 1), preds, scaled)
    low, high = _extremes(decided) if extremes is None else extremes
    if low >= 0 and high <= 1:  # NaN extremes fail both tests, as NaN scores fail the elementwise ones
        return preds
    return preds.sigmoid() if normalize == "sigmoid" else softmax(preds)


def _extremes(x: torch.Tensor) -> tuple[float, float]:
    """Minimum and maximum of a non-empty ``x`` as Python numbers (NaN if ``x`` holds one)."""
    low, high = torch.aminmax(x)
    return low.item(), high.item()


def finite_scores(owner: Any, preds: torch.Tensor) -> tuple[float, float] | None:
    """Refuse float ``preds`` holding NaN (named so) or infinities; their extremes, ``None`` when empty.

    One ``aminmax`` serves the check and, through ``_probabilities``, the choice between
    probabilities and logits.
    """
    if preds.numel() == 0:
        return None
    if _checks.asserting(preds):  # NaN, then infinities, as below
        _no_nan(owner, preds)
        _no_nan(owner, preds, finite=True)
        return None
    low, high = _extremes(preds)
    if math.isnan(low) or math.isnan(high):
        raise input_error(owner, "preds", "contains NaN")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise input_error(owner, "preds", "contains non-finite values")
    return low, high


def _thresholded(owner: Any, preds: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
    if preds.is_floating_point():
        return _checks.beyond(_probabilities(widened(preds), "sigmoid", keep=keep), owner.threshold, inclusive=False)
    return preds.bool()


_Batch = tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None"]


def binary_labels(owner: Any, preds: Any, target: Any, kept_only: bool = False) -> _Batch:
    """Flat bool ``(preds, target, keep)`` of a binary batch; float preds are thresholded.

    ``keep`` is ``None`` without an ``ignore_index`` (every sample counts).
    ``kept_only``: whether only the kept scores decide between probabilities and
    logits (TorchMetrics' confusion matrices), not the whole batch (its stat scores).

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryAccuracy
        >>> binary_labels(BinaryAccuracy(), torch.tensor([0.2, 0.7]), torch.tensor([0, 1]))
        (tensor([False,  True]), tensor([False,  True]), None)
        >>> binary_labels(BinaryAccuracy(ignore_index=-1), torch.tensor([0.2, 0.7]), torch.tensor([-1, 1]))[2]
        tensor([False,  True])
    """
    if owner.validate_args:
        _binary_checks(owner, preds, target)
    keep = not_ignored(target, owner.ignore_index)
    return (
        _thresholded(owner, preds, keep if kept_only else None).reshape(-1),
        (target == 1).reshape(-1),
        None if keep is None else keep.reshape(-1),
    )


def multilabel_labels(owner: Any, preds: Any, target: Any) -> _Batch:
    """Bool ``(preds, target, keep)`` of shape ``(M, num_labels)``; float preds are thresholded.

    ``keep`` is ``None`` without an ``ignore_index``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelAccuracy
        >>> p, t, keep = multilabel_labels(MultilabelAccuracy(num_labels=2), torch.tensor([[0.9, 0.1]]),
        ...                                torch.tensor([[1, 1]]))
        >>> p
        tensor([[ True, False]])
    """
    if owner.validate_args:
        _multilabel_checks(owner, preds, target)
    n = owner.num_labels

    def rows(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1, n) if x.ndim == 2 else x.movedim(1, -1).reshape(-1, n)

    keep = not_ignored(target, owner.ignore_index)
    return rows(_thresholded(owner, preds)), rows(target == 1), None if keep is None else rows(keep)


def multiclass_labels(owner: Any, preds: Any, target: Any) -> _Batch:
    """Flat int64 ``(preds, target)`` and bool ``keep`` (``None`` without ``ignore_index``) of a multiclass batch.

    Scores become labels by argmax; with ``top_k > 1`` a sample's label is its
    target when the target is among the ``top_k`` highest scores, else the
    argmax (TorchMetrics' convention), so each sample still predicts one class.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassAccuracy
        >>> scores = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7]])
        >>> multiclass_labels(MulticlassAccuracy(num_classes=3, top_k=2), scores, torch.tensor([1, 0]))
        (tensor([1, 2]), tensor([1, 0]), None)
    """
    if owner.validate_args:
        _multiclass_checks(owner, preds, target)
    t = (target if target.ndim == 1 else target.reshape(-1)).long()
    keep = not_ignored(t, owner.ignore_index)
    if not preds.is_floating_point():
        return preds.reshape(-1).long(), t, keep
    c = preds.shape[1]  # num_classes, or any number of classes when it is None
    scores = preds if preds.ndim == 2 else preds.movedim(1, -1).reshape(-1, c)
    k = getattr(owner, "top_k", 1)
    if k == 1:
        return _argmax(scores), t, keep
    top = scores.topk(k, dim=1).indices
    hit = (top == t[:, None]).any(1)
    return torch.where(hit, t, top[:, 0]), t, keep


def _argmax(scores: torch.Tensor) -> torch.Tensor:
    """Row-wise argmax of ``(M, C)`` scores (first maximum; NaN counts as the maximum, as ``argmax``).

    ``max(1)`` returns the same indices and, on the CPU, is faster than ``argmax`` from about
    a thousand rows on (up to 1.4x at 10^6 x 10); below that ``argmax`` is.
    """
    return scores.argmax(1) if scores.shape[0] < 1024 else scores.max(1).indices


def binary_confidences(owner: Any, preds: Any, target: Any) -> _Batch:
    """Flat ``(probability of the positive class, target is positive, keep)`` of a binary batch.

    ``keep`` is ``None`` without an ``ignore_index``; only kept scores decide
    between probabilities and logits, as TorchMetrics drops ignored entries first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryCalibrationError
        >>> binary_confidences(BinaryCalibrationError(), torch.tensor([0.0, 2.0]), torch.tensor([0, 1]))
        (tensor([0.5000, 0.8808]), tensor([False,  True]), None)
    """
    if owner.validate_args:
        _binary_checks(owner, preds, target, scores_only=True)
    keep = not_ignored(target, owner.ignore_index)
    return (
        _probabilities(widened(preds), "sigmoid", keep=keep).reshape(-1),
        (target == 1).reshape(-1),
        None if keep is None else keep.reshape(-1),
    )


def multiclass_confidences(owner: Any, preds: Any, target: Any) -> _Batch:
    """Flat ``(top-1 probability, top-1 is the target, keep)`` of a multiclass batch.

    ``keep`` is ``None`` without an ``ignore_index``; only kept rows decide
    between probabilities and logits, as TorchMetrics drops ignored rows first.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassCalibrationError
        >>> m = MulticlassCalibrationError(num_classes=2)
        >>> multiclass_confidences(m, torch.tensor([[0.8, 0.2], [0.4, 0.6]]), torch.tensor([0, 0]))
        (tensor([0.8000, 0.6000]), tensor([ True, False]), None)
    """
    extremes = None
    if owner.validate_args:
        _multiclass_checks(owner, preds, target, scores_only=True, nan=False)
        extremes = finite_scores(owner, preds)  # NaN, then infinities, as the checks above would go on
    t = target.reshape(-1).long()
    keep = not_ignored(t, owner.ignore_index)
    scores = preds if preds.ndim == 2 else preds.movedim(1, -1).reshape(-1, owner.num_classes)
    rows = None if keep is None else keep[:, None]
    probs = _probabilities(widened(scores), "softmax", extremes if keep is None else None, keep=rows)
    conf, label = probs.max(1)
    return conf, label == t, keep
