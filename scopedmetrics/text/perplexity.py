"""Perplexity of a language model: ``exp`` of the mean negative log-likelihood of the target tokens.

The state is a float64 sum of negative log-likelihoods and an int64 count of
tokens, reduced with ``"sum"``, so any split of the tokens gives the
single-process value, and the sum does not lose digits over billions of
tokens.
"""

from __future__ import annotations

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static


class Perplexity(Metric):
    """Perplexity, ``exp(sum(-log p(target)) / tokens)``, over every target token not ``ignore_index``.

    ``update(preds, target)`` takes one of two forms:

    - ``preds`` logits of shape ``(batch, seq_len, vocab_size)`` and ``target``
      token ids of shape ``(batch, seq_len)``, as TorchMetrics;
    - ``preds`` per-token log-likelihoods of shape ``(batch, seq_len)``:
      ``log p(target[b, s])``, at most 0, as a vocabulary-parallel
      cross-entropy gives them (its negative) when no rank holds the whole
      vocabulary; ``target`` (same shape) is then read only for ``ignore_index``.

    Examples:
        >>> import torch
        >>> from scopedmetrics.text import Perplexity
        >>> logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> target = torch.tensor([[0, 1]])
        >>> Perplexity().update(logits, target).compute()
        tensor(1.4851)
        >>> token_log_likelihood = logits.log_softmax(-1).gather(-1, target[..., None]).squeeze(-1)
        >>> Perplexity().update(token_log_likelihood, target).compute()
        tensor(1.4851)
    """

    ignore_index: int | None = static(default=None)
    total_log_probs: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    count: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        _checks.check_int(self, "ignore_index", optional=True)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> Perplexity:
        """Fold in one batch of logits (or token log-likelihoods) and target token ids."""
        p = _checks.tensor(self, "preds", preds)
        t = _checks.tensor(self, "target", target)
        _checks.floating(self, "preds", p)
        if t.is_floating_point() or t.dtype == torch.bool:
            raise TypeError(f"{_checks.where(self)}: argument `target` must hold integer token ids, got {t.dtype}")
        if p.ndim == 3:
            if t.shape != p.shape[:2]:
                raise ValueError(
                    f"{_checks.where(self)}: argument `target` must have shape (batch, seq_len) = "
                    f"{tuple(p.shape[:2])} for logits `preds` of shape {tuple(p.shape)}, got {tuple(t.shape)}"
                )
            _checks.labels(self, "target", t, p.shape[2], self.ignore_index)
            if bool(torch.isnan(p).any()) or bool(torch.isposinf(p).any()):
                raise ValueError(f"{_checks.where(self)}: argument `preds` holds NaN or +inf logits")
        elif p.ndim == 2:
            _checks.same_shape(self, "preds", p, "target", t)
            if bool(torch.isnan(p).any()) or bool((p > 0).any()):
                raise ValueError(
                    f"{_checks.where(self)}: argument `preds` of shape (batch, seq_len) holds token "
                    "log-likelihoods, which are at most 0 and not NaN (pass -nll, not the nll)"
                )
        else:
            raise ValueError(
                f"{_checks.where(self)}: argument `preds` must have shape (batch, seq_len, vocab_size) (logits) or "
                f"(batch, seq_len) (token log-likelihoods), got {tuple(p.shape)}"
            )
        t = t.to(p.device)  # token ids may come from the loader's device
        kept = _checks.not_ignored(t, self.ignore_index)
        keep = torch.ones_like(t, dtype=torch.bool) if kept is None else kept
        if p.ndim == 3:
            x = p if p.dtype in (torch.float32, torch.float64) else p.float()
            picked = x.gather(-1, t.where(keep, 0).long().unsqueeze(-1)).squeeze(-1)  # gather takes int64 ids
            log_likelihood = picked - torch.logsumexp(x, dim=-1)
        else:
            log_likelihood = p
        nll = -log_likelihood[keep].double().sum()
        where = self.count.device
        return self.replace(
            total_log_probs=self.total_log_probs + nll.to(where), count=self.count + keep.sum().to(where)
        )

    def compute(self) -> torch.Tensor:
        """``exp`` of the mean negative log-likelihood per token (float32); NaN before any token."""
        return torch.exp(self.total_log_probs / self.count).float()
