"""Permutation invariant training: a separation metric under the best assignment of estimates to speakers.

The state is a float64 sum of each sample's best value and an int64 count
(reduced with ``"sum"``); the value is their mean, as TorchMetrics.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static

_MODES = ("speaker-wise", "permutation-wise")
MAX_SPEAKERS = 8  # 8! = 40,320 permutations: the exhaustive search's bound


def _permutations(speakers: int, device: torch.device) -> torch.Tensor:
    return torch.tensor(list(itertools.permutations(range(speakers))), dtype=torch.int64, device=device)


def best_permutation(
    preds: torch.Tensor, target: torch.Tensor, metric_func: Callable[..., torch.Tensor], mode: str, eval_func: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per sample, the best mean metric over assignments of estimates to speakers, and that permutation.

    ``preds`` and ``target`` are ``(batch, speakers, ...)``. ``"speaker-wise"``
    scores every (estimate, speaker) pair once and searches the permutations
    of that matrix; ``"permutation-wise"`` scores each permuted batch whole.
    Either way a sample's score is the mean of all ``metric_func`` gives for
    it (over speakers, and over channels of ``(batch, speakers, channels, time)``).
    The search is exhaustive (``speakers!`` permutations), which finds the
    same optimum as TorchMetrics' linear sum assignment.
    """
    batch, speakers = target.shape[:2]
    perms = _permutations(speakers, preds.device)  # (P, S)
    pick = torch.max if eval_func == "max" else torch.min
    if mode == "permutation-wise":
        permuted = preds[:, perms].reshape(batch * perms.shape[0], *preds.shape[1:])  # (B*P, S, ...)
        repeated = target.repeat_interleave(perms.shape[0], dim=0)
        scores = metric_func(permuted, repeated).reshape(batch, perms.shape[0], -1).mean(-1)
    else:

        def pair(i: int, j: int) -> torch.Tensor:  # one value per sample: the mean over what else it returns
            value = metric_func(preds[:, j], target[:, i])
            if value.ndim == 0 or value.shape[0] != batch:
                raise ValueError(
                    f"PermutationInvariantTraining: `metric_func` must give one value per sample for mode="
                    f"'speaker-wise', shape ({batch}, ...), got {tuple(value.shape)} for signals of shape "
                    f"{tuple(preds[:, j].shape)}; use mode='permutation-wise', or signals (batch, speakers, time)"
                )
            return value.reshape(batch, -1).mean(-1)

        rows_of = [[pair(i, j) for j in range(speakers)] for i in range(speakers)]
        pairs = torch.stack([torch.stack(row, -1) for row in rows_of], 1)  # (B, target speaker i, estimate j)
        rows = torch.arange(speakers, device=preds.device)
        scores = pairs[:, rows[None, :], perms].mean(-1)  # (B, P): mean over speakers of pairs[b, i, perm[i]]
    best, which = pick(scores, dim=1)
    return best, perms[which]


class PermutationInvariantTraining(Metric):
    """The mean over samples of ``metric_func`` under each sample's best speaker permutation.

    ``update(preds, target)``: ``(batch, speakers, ...)`` estimates and
    references. ``metric_func(preds, target)`` maps ``(batch, ...)`` signals
    to ``(batch,)`` values (``scale_invariant_signal_distortion_ratio`` of
    ``scopedmetrics.audio.snr``, or TorchMetrics' functionals); ``eval_func``
    says whether the best is the ``"max"`` or the ``"min"``. TorchMetrics'
    extra ``**kwargs`` for ``metric_func`` are given by binding them:
    ``functools.partial(metric_func, zero_mean=True)``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.audio import PermutationInvariantTraining
        >>> from scopedmetrics.audio.snr import scale_invariant_signal_distortion_ratio
        >>> g = torch.Generator().manual_seed(0)
        >>> target = torch.randn(3, 2, 100, generator=g)
        >>> preds = target.flip(1) + 0.1 * torch.randn(3, 2, 100, generator=g)   # speakers swapped
        >>> pit = PermutationInvariantTraining(scale_invariant_signal_distortion_ratio)
        >>> round(float(pit.update(preds, target).compute()), 1)
        20.3
    """

    metric_func: Callable[..., torch.Tensor] = static()
    mode: str = static(default="speaker-wise")
    eval_func: str = static(default="max")
    sum_pit_metric: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    total: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        if not callable(self.metric_func):
            raise TypeError(f"{type(self).__name__}: argument `metric_func` must be callable, got {self.metric_func!r}")
        _checks.check_choice(self, "mode", _MODES)
        _checks.check_choice(self, "eval_func", ("max", "min"))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> PermutationInvariantTraining:
        """Fold in estimates and references of shape ``(batch, speakers, ...)``."""
        p = _checks.tensor(self, "preds", preds)
        t = _checks.tensor(self, "target", target)
        _checks.floating(self, "preds", p)
        _checks.floating(self, "target", t)
        _checks.same_shape(self, "preds", p, "target", t)
        _checks.ndim(self, "preds", p, range(2, 64), "(batch, speakers, ...)")
        _checks.finite(self, "preds", p)
        _checks.finite(self, "target", t)
        if p.shape[1] > MAX_SPEAKERS:  # before the search builds speakers! permutations (16! ran out of memory)
            raise ValueError(
                f"{type(self).__name__}.update: argument `preds` has {p.shape[1]} speakers in dim 1; the search over "
                f"every permutation takes at most {MAX_SPEAKERS} (signals are (batch, speakers, ...))"
            )
        if p.shape[0] == 0:
            return self
        best, _ = best_permutation(p, t.to(p.device), self.metric_func, self.mode, self.eval_func)
        where = self.total.device
        return self.replace(
            sum_pit_metric=self.sum_pit_metric + best.double().sum().to(where), total=self.total + best.numel()
        )

    def compute(self) -> torch.Tensor:
        """The mean best value over samples (float32); NaN before any sample."""
        return (self.sum_pit_metric / self.total).float()
