"""Label ranking metrics of a multilabel task: coverage error, ranking average precision, ranking loss.

Each is a mean over samples of a per-sample score, so the state is two
``"sum"`` tensors and any split of the samples reduces to the same value:
``measure``, the sum of the per-sample scores (int64 for coverage error, whose
scores are counts; float64 otherwise), and ``total``, the number of samples
(int64). Per sample, over its labels ranked by score (ties share the lowest
rank, as in scikit-learn):

* coverage error: how many labels score at least as high as the lowest-scored
  relevant label (0 for a sample without relevant labels);
* ranking average precision: the mean, over relevant labels, of the fraction
  of labels scoring at least as high that are relevant (1 for a sample whose
  labels are all relevant or all irrelevant);
* ranking loss: the fraction of (relevant, irrelevant) pairs where the
  irrelevant label scores at least as high (0 for a sample whose labels are
  all relevant or all irrelevant).

``preds`` are float scores ``(N, L, ...)``; as in TorchMetrics a batch with
any value outside [0, 1] goes through a sigmoid first (which keeps the order,
up to ties where it saturates). Extra dimensions are samples. A label whose
target is ``ignore_index`` leaves that sample's label set; a sample with every
label ignored is not counted.
"""

from __future__ import annotations

from typing import TypeVar

import torch
from torch import Tensor

from scopedmetrics.classification.inputs import (
    _multilabel_checks,
    _no_nan,
    _probabilities,
    check_bool,
    check_ignore_index,
    check_int,
    input_error,
    not_ignored,
    widened,
)
from scopedmetrics.classification.signature import positional
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_R = TypeVar("_R", bound="_Ranking")


def _ranks(scores: Tensor, relevant: Tensor, valid: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per label, sorted high to low within each row: relevant, and the relevant and valid labels scoring >= it.

    Returns ``(relevant, above_relevant, above_valid, valid)`` in each row's
    sorted order; every member of a tie group carries the counts at the group's
    end, so tied labels all count one another.
    """
    n = scores.shape[1]
    order = scores.argsort(dim=1, descending=True)
    s = scores.gather(1, order)
    rel, val = relevant.gather(1, order), valid.gather(1, order)
    last = torch.ones_like(s, dtype=torch.bool)
    last[:, :-1] = s[:, 1:] != s[:, :-1]
    cols = torch.arange(n, device=s.device).expand_as(s)
    end = torch.where(last, cols, n - 1).flip(1).cummin(1).values.flip(1)
    return rel, rel.long().cumsum(1).gather(1, end), val.long().cumsum(1).gather(1, end), val


class _Ranking(Metric):
    """Per-sample label ranking scores of a multilabel task, summed, and the number of samples."""

    num_labels: int = static()
    ignore_index: int | None = static(default=None)
    validate_args: bool = static(default=True)
    measure: Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    total: Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_int(self, "num_labels", 2)
        check_ignore_index(self)
        check_bool(self, "validate_args")

    def update(self: _R, preds: Tensor, target: Tensor) -> _R:
        """Fold in float scores ``preds`` and 0/1 labels ``target``, both (N, L, ...)."""
        if self.validate_args:
            _multilabel_checks(self, preds, target)
            if not preds.is_floating_point():
                problem = f"must hold float probabilities or logits, got {preds.dtype}"
                raise input_error(self, "preds", problem, TypeError)
            _no_nan(self, preds, finite=True)
        scores = _probabilities(widened(preds), "sigmoid")
        scores = scores.movedim(1, -1).reshape(-1, self.num_labels)
        target = target.movedim(1, -1).reshape(-1, self.num_labels)
        kept = not_ignored(target, self.ignore_index)
        valid = torch.ones_like(target, dtype=torch.bool) if kept is None else kept
        relevant = (target == 1) & valid
        per_sample = self._scores(*_ranks(scores, relevant, valid))
        counted: Tensor | int = len(scores)
        if self.ignore_index is not None:  # a sample with every label ignored counts for nothing (masked, not dropped)
            keep = valid.any(1)
            per_sample, counted = per_sample.where(keep, 0), keep.sum()
        return self.replace(measure=self.measure + per_sample.sum().to(self.measure.dtype), total=self.total + counted)

    def _scores(self, rel: Tensor, above_rel: Tensor, above: Tensor, valid: Tensor) -> Tensor:
        raise NotImplementedError

    def compute(self) -> Tensor:
        """Return the mean over every sample seen (NaN with no sample)."""
        return (self.measure / self.total).float()


@positional("num_labels", "ignore_index", "validate_args")
class MultilabelCoverageError(_Ranking):
    """Coverage error: how far down the ranked labels one goes, on average, to cover every relevant label.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelCoverageError
        >>> preds = torch.tensor([[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
        >>> MultilabelCoverageError(3).update(preds, torch.tensor([[1, 0, 0], [0, 0, 1]])).compute()
        tensor(2.5000)
    """

    measure: Tensor = state("sum", default=0)  # coverages are counts: an exact int64 sum

    def _scores(self, rel: Tensor, above_rel: Tensor, above: Tensor, valid: Tensor) -> Tensor:
        return torch.where(rel, above, 0).amax(1) if rel.shape[0] else above.new_zeros(0)


@positional("num_labels", "ignore_index", "validate_args")
class MultilabelRankingAveragePrecision(_Ranking):
    """Label ranking average precision: per relevant label, the share of relevant labels ranked at or above it.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRankingAveragePrecision
        >>> preds = torch.tensor([[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
        >>> MultilabelRankingAveragePrecision(3).update(preds, torch.tensor([[1, 0, 0], [0, 0, 1]])).compute()
        tensor(0.4167)
    """

    def _scores(self, rel: Tensor, above_rel: Tensor, above: Tensor, valid: Tensor) -> Tensor:
        n_rel, n_valid = rel.sum(1), valid.sum(1)
        ratio = torch.where(rel, above_rel.double() / above.clamp(min=1), 0.0).sum(1) / n_rel.clamp(min=1)
        return torch.where((n_rel == 0) | (n_rel == n_valid), 1.0, ratio)


@positional("num_labels", "ignore_index", "validate_args")
class MultilabelRankingLoss(_Ranking):
    """Label ranking loss: the share of (relevant, irrelevant) label pairs ranked the wrong way round.

    Examples:
        >>> import torch
        >>> from scopedmetrics.classification import MultilabelRankingLoss
        >>> preds = torch.tensor([[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
        >>> MultilabelRankingLoss(3).update(preds, torch.tensor([[1, 0, 0], [0, 0, 1]])).compute()
        tensor(0.7500)
    """

    def _scores(self, rel: Tensor, above_rel: Tensor, above: Tensor, valid: Tensor) -> Tensor:
        n_rel, n_valid = rel.sum(1), valid.sum(1)
        wrong = torch.where(rel, above - above_rel, 0).sum(1)  # irrelevant labels at or above each relevant one
        pairs = n_rel * (n_valid - n_rel)
        return torch.where(pairs > 0, wrong.double() / pairs.clamp(min=1), 0.0)
