"""Calibration error: how far predicted confidence is from observed accuracy, bin by bin.

Confidences fall into ``n_bins`` equal-width bins of [0, 1] (the last bin is
closed, so a confidence of exactly 1 lands in it). The state is three per-bin
``"sum"`` tensors, so any split of the data reduces to the same bins:
``bin_count`` and ``bin_correct`` (int64) and ``bin_confidence`` (float64, the
sum of the confidences: in float32 a bin's sum stops taking each confidence
exactly from about 10^6 samples, 0.0053 for a calibration error of 0, and the
drift then depends on how the data is split). ``norm`` picks the error: ``"l1"`` (expected
calibration error), ``"l2"`` (root mean square) or ``"max"`` (maximum).
Scores on rows whose target is ``ignore_index`` do not take part in the
choice between probabilities and logits (TorchMetrics drops those rows first).
Constructor arguments come in TorchMetrics' positional order.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import torch

from scopedmetrics._kernels import tally
from scopedmetrics.classification.inputs import (
    binary_confidences,
    check_bool,
    check_ignore_index,
    check_int,
    check_one_of,
    multiclass_confidences,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_M = TypeVar("_M", bound=Metric)

NORMS = ("l1", "l2", "max")


def _check_bins(m: Any) -> None:
    check_int(m, "n_bins", 1)
    check_one_of(m, "norm", NORMS)
    check_ignore_index(m)
    check_bool(m, "validate_args")


@functools.lru_cache(maxsize=64)
def _inner_edges(n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The ``n - 1`` edges between ``n`` equal-width bins of [0, 1], in the confidences' dtype; made once."""
    return torch.linspace(0, 1, n + 1, dtype=dtype, device=device)[1:-1]


def _binned(m: _M, conf: torch.Tensor, correct: torch.Tensor, keep: torch.Tensor | None) -> _M:
    """``m`` with the kept ``(conf, correct)`` pairs added to their bins.

    Bin ``i`` holds the confidences in ``[i / n, (i + 1) / n)`` (the edges as ``linspace``
    gives them), the last one also 1: counting the inner edges at or below each
    confidence gives that index directly, always in ``[0, n)``, so the bins grow by
    ``index_add`` on every device (NaN, never a probability, lands in the last bin).
    """
    n = m.n_bins  # type: ignore[attr-defined]
    edges = (torch.linspace(0, 1, n + 1, dtype=conf.dtype, device=conf.device)[1:-1]
             if torch.compiler.is_compiling() else _inner_edges(n, conf.dtype, conf.device))
    idx = torch.bucketize(conf, edges, right=True)
    if keep is not None:
        correct, conf = correct & keep, conf.where(keep, 0)
    total = m.bin_confidence  # type: ignore[attr-defined]  # float64: each confidence added to the running sums
    return m.replace(
        bin_count=tally(m.bin_count, idx, keep),  # type: ignore[attr-defined]
        bin_confidence=total.index_add(0, idx, conf.to(total.dtype)),
        bin_correct=m.bin_correct.index_add(0, idx, correct.to(m.bin_correct.dtype)),  # type: ignore[attr-defined]
    )


def _calibration_error(m: Any) -> torch.Tensor:
    """The error in float64, returned as float32: a bin's gap is ``|correct - confidence sum| / count``."""
    count: torch.Tensor = m.bin_count.double()
    gap: torch.Tensor = (m.bin_correct.double() - m.bin_confidence).abs() / count.clamp(min=1)  # empty bins: 0
    if m.norm == "max":
        return gap.max().float()
    weight = count / count.sum().clamp(min=1)
    if m.norm == "l1":
        return (gap * weight).sum().float()
    return (gap * gap * weight).sum().sqrt().float()


@positional("n_bins", "norm", "ignore_index", "validate_args")
class BinaryCalibrationError(Metric):
    """Calibration error of a binary task: bin the positive-class probability, compare with the positive rate.

    ``preds`` are probabilities, or logits (any value outside [0, 1]) put through a sigmoid.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import BinaryCalibrationError
        >>> m = BinaryCalibrationError(n_bins=2)
        >>> m.update(torch.tensor([0.25, 0.25, 0.75, 0.75]), torch.tensor([0, 0, 1, 0])).compute()
        tensor(0.2500)
    """

    bin_count: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.long))
    bin_confidence: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.float64))
    bin_correct: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.long))
    n_bins: int = static(default=15)
    norm: str = static(default="l1")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)

    def __post_init__(self) -> None:
        _check_bins(self)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> BinaryCalibrationError:
        """Fold in a batch: float ``preds`` and ``target`` in {0, 1} of the same shape ``(N, ...)``."""
        return _binned(self, *binary_confidences(self, preds, target))

    def compute(self) -> torch.Tensor:
        return _calibration_error(self)


@positional("num_classes", "n_bins", "norm", "ignore_index", "validate_args")
class MulticlassCalibrationError(Metric):
    """Top-label calibration error of a multiclass task: bin the top-1 probability, compare with accuracy.

    ``preds`` are scores ``(N, C, ...)``: probabilities, or logits (any value outside [0, 1]) that
    go through a softmax over dim 1.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MulticlassCalibrationError
        >>> m = MulticlassCalibrationError(num_classes=3, n_bins=2, norm="max")
        >>> preds = torch.tensor([[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.4, 0.3, 0.3]])
        >>> m.update(preds, torch.tensor([0, 1, 1])).compute()
        tensor(0.4000)
    """

    num_classes: int = static()
    n_bins: int = static(default=15)
    norm: str = static(default="l1")
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    bin_count: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.long))
    bin_confidence: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.float64))
    bin_correct: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_bins, dtype=torch.long))

    def __post_init__(self) -> None:
        check_int(self, "num_classes", 2)
        _check_bins(self)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> MulticlassCalibrationError:
        """Fold in a batch: float scores ``(N, C, ...)`` and ``target`` labels ``(N, ...)``."""
        return _binned(self, *multiclass_confidences(self, preds, target))

    def compute(self) -> torch.Tensor:
        return _calibration_error(self)
