"""Critical success index (threat score) of inputs binarized at a threshold.

Over the whole input (``keep_sequence_dim=None``) the state is three int64
counts, hits, misses and false alarms, and the number of elements seen,
reduced with ``"sum"``. With a
sequence dimension the counts are kept per sample in a ``cat`` state (one row
of ``(3,)`` counts per sample for dimension 0, one ``(S, 3)`` row per sample
for a dimension ``k >= 1``, whose length ``S`` only the data tell).
"""

from __future__ import annotations

from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.regression._inputs import check_bool, check_values, tensor_arg, where
from scopedmetrics.state import append, state, static


def _rows(m: Metric) -> torch.Tensor:
    if m.keep_sequence_dim == 0:  # type: ignore[attr-defined]
        return torch.empty(0, 3, dtype=torch.int64)
    return torch.empty(0, dtype=torch.int64)  # rows of (S, 3): S is known once data arrive


def _index(hits: torch.Tensor, misses: torch.Tensor, false_alarms: torch.Tensor) -> torch.Tensor:
    """``hits / (hits + misses + false_alarms)``, 0 where there is no event at all (TorchMetrics' ``_safe_divide``)."""
    num, den = hits.to(torch.float32), (hits + misses + false_alarms).to(torch.float32)
    return torch.where(den != 0, num / den.clamp(min=1), torch.zeros_like(num))


class CriticalSuccessIndex(Metric):
    """Critical success index ``TP / (TP + FN + FP)`` of ``preds >= threshold`` against ``target >= threshold``.

    ``threshold`` is required, as in TorchMetrics. With ``keep_sequence_dim=None``
    the counts pool every element of every input (any equal shapes) and the
    value is 0-d. With ``keep_sequence_dim=0`` the value has one score per
    sample (row of dim 0), in the order seen (rank order across participants).
    With ``keep_sequence_dim=k >= 1`` the value has one score per position of
    dimension ``k``, pooled over every sample (TorchMetrics pools each batch
    separately and concatenates the batches' scores, so its value depends on
    the batching; on one batch the two agree). With no event the score is 0.

    Examples:
        >>> import torch
        >>> from scopedmetrics.regression import CriticalSuccessIndex
        >>> x = torch.tensor([[0.2, 0.7], [0.9, 0.3]])
        >>> y = torch.tensor([[0.4, 0.2], [0.8, 0.6]])
        >>> CriticalSuccessIndex(0.5).update(x, y).compute()
        tensor(0.3333)
        >>> CriticalSuccessIndex(0.5, keep_sequence_dim=0).update(torch.stack([x, x]), torch.stack([y, y])).compute()
        tensor([0.3333, 0.3333])

    """

    threshold: float = static()  # required, as in TorchMetrics
    keep_sequence_dim: int | None = static(default=None)
    validate_args: bool = static(default=True)
    sample_counts: torch.Tensor = state("cat", init=_rows)
    hits: torch.Tensor = state("sum", default=0)
    misses: torch.Tensor = state("sum", default=0)
    false_alarms: torch.Tensor = state("sum", default=0)
    total: torch.Tensor = state("sum", default=0)  # elements seen: data without any event is not an empty state

    _rows_of_any_kind = True  # the empty ``sample_counts`` of k >= 1 loads rows of any sequence length

    def __post_init__(self) -> None:
        _checks.check_number(self, "threshold")
        _checks.check_int(self, "keep_sequence_dim", 0, optional=True)
        check_bool(self, "validate_args")

    def update(self, preds: Any, target: Any) -> CriticalSuccessIndex:
        """Fold in one batch of ``preds`` and ``target``; ``self`` is unchanged."""
        p = tensor_arg(self, "preds", preds)
        t = tensor_arg(self, "target", target)
        _checks.same_shape(self, "preds", p, "target", t)
        k = self.keep_sequence_dim
        if k is not None and p.ndim <= k:
            raise ValueError(
                f"{where(self)}: argument `preds` has shape {tuple(p.shape)}; keep_sequence_dim={k} "
                f"needs at least {k + 1} dimensions"
            )
        if self.validate_args:
            for name, x in (("preds", p), ("target", t)):
                if x.is_floating_point():
                    check_values(self, name, ~x.isnan(), "free of NaN (it has no side of the threshold)")
        device = self.hits.device
        # exactly, whatever the dtype: torch compares in the inputs' (300 against uint8 values is 44)
        pb, tb = (_checks.beyond(x.to(device), self.threshold, inclusive=True) for x in (p, t))
        hits, misses, false_alarms = pb & tb, tb & ~pb, pb & ~tb
        total = self.total + p.numel()
        if k is None:
            return self.replace(
                hits=self.hits + hits.sum(),
                misses=self.misses + misses.sum(),
                false_alarms=self.false_alarms + false_alarms.sum(),
                total=total,
            )
        counts = torch.stack([hits, misses, false_alarms], dim=-1).long()  # (..., 3)
        pooled = tuple(d for d in range(1, p.ndim) if d != k)
        rows = counts.sum(pooled) if pooled else counts  # (N, 3) for k == 0, (N, S, 3) for k >= 1
        held = self.sample_counts
        if rows.shape[0] and held.shape[0] and rows.shape[1:] != held.shape[1:]:
            raise ValueError(
                f"{where(self)}: argument `preds` has shape {tuple(p.shape)}: {rows.shape[1]} positions along "
                f"keep_sequence_dim={k}, but earlier inputs had {held.shape[1]}"
            )
        return self.replace(sample_counts=append(held, rows), total=total)

    def compute(self) -> torch.Tensor:
        """The index over all counts, per sample (``keep_sequence_dim=0``) or per position (``k >= 1``)."""
        k = self.keep_sequence_dim
        if k is None:
            return _index(self.hits, self.misses, self.false_alarms)
        rows = self.sample_counts
        if k > 0:
            if rows.shape[0] == 0:
                return torch.empty(0, device=rows.device)
            rows = rows.sum(0)
        return _index(rows[..., 0], rows[..., 1], rows[..., 2])
