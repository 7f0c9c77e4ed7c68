"""Edit-distance metrics: word, character and match error rates, word information lost and preserved.

Each keeps integer sums (int64, exact at any size, reduced with ``"sum"``):
the edit operations and the token counts the rate divides by. A rate is a
ratio of those sums, taken after the reduction, so any split of the corpus
gives the single-process value. Tokens are ``str.split()`` words (characters
for ``CharErrorRate``); the distances of a whole batch are computed at once
(``_edit``), on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text import _edit
from scopedmetrics.text._inputs import pairs


def _word_distances(preds: list[str], target: list[str]) -> tuple[torch.Tensor, list[int], list[int]]:
    """Word-level edit distance of every pair, and the word counts of both sides."""
    p_words = [s.split() for s in preds]
    t_words = [s.split() for s in target]
    vocab = _edit.vocabulary()
    p, t = _edit.token_ids(p_words, vocab), _edit.token_ids(t_words, vocab)
    return _edit.distances(p, t), p[1], t[1]


def _char_distances(preds: list[str], target: list[str], cost: int = 1) -> tuple[torch.Tensor, list[int], list[int]]:
    """Character-level edit distance of every pair, and the character counts of both sides."""
    p, t = _edit.char_ids(preds), _edit.char_ids(target)
    return _edit.distances(p, t, cost), p[1], t[1]


class _EditCounts(Metric):
    """The sums every edit rate divides: edits, reference and prediction tokens, and the longer side's.

    Subclasses say which tokens (``_chars``) and which ratio (``compute``).
    """

    errors: torch.Tensor = state("sum", default=0)
    target_total: torch.Tensor = state("sum", default=0)
    preds_total: torch.Tensor = state("sum", default=0)
    longest_total: torch.Tensor = state("sum", default=0)

    _chars: ClassVar[bool] = False

    def update(self, preds: str | Sequence[str], target: str | Sequence[str]) -> Self:
        """Fold in predicted and reference transcripts (one string or a sequence of them)."""
        p, t = pairs(self, preds, target)
        if not p:
            return self
        edits, p_len, t_len = (_char_distances if self._chars else _word_distances)(p, t)
        longest = sum(max(a, b) for a, b in zip(p_len, t_len))
        return self.replace(
            errors=self.errors + edits.sum(),
            target_total=self.target_total + sum(t_len),
            preds_total=self.preds_total + sum(p_len),
            longest_total=self.longest_total + longest,
        )


def _ratio(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() / b.double()).float()


class WordErrorRate(_EditCounts):
    """Word error rate: word-level edit operations over reference words, summed over the corpus.

    As TorchMetrics' ``WordErrorRate``: words are ``str.split()`` tokens, and a
    corpus's rate is total edits over total reference words (not a mean of
    per-sentence rates). NaN before any reference word.

    Examples:
        >>> from scopedmetrics.text import WordErrorRate
        >>> preds = ["this is the prediction", "there is an other sample"]
        >>> target = ["this is the reference", "there is another one"]
        >>> WordErrorRate().update(preds, target).compute()
        tensor(0.5000)
    """

    def compute(self) -> torch.Tensor:
        """Total edits over total reference words."""
        return _ratio(self.errors, self.target_total)


class CharErrorRate(_EditCounts):
    """Character error rate: character-level edit operations over reference characters (spaces included).

    Examples:
        >>> from scopedmetrics.text import CharErrorRate
        >>> preds = ["this is the prediction", "there is an other sample"]
        >>> target = ["this is the reference", "there is another one"]
        >>> CharErrorRate().update(preds, target).compute()
        tensor(0.3415)
    """

    _chars: ClassVar[bool] = True

    def compute(self) -> torch.Tensor:
        """Total character edits over total reference characters."""
        return _ratio(self.errors, self.target_total)


class MatchErrorRate(_EditCounts):
    """Match error rate: edits over, per pair, the longer of prediction and reference (words), summed.

    As TorchMetrics, the denominator is ``sum(max(len(pred), len(ref)))``;
    jiwer divides by hits + edits of its alignment, which differs when an
    alignment holds both insertions and deletions.

    Examples:
        >>> from scopedmetrics.text import MatchErrorRate
        >>> preds = ["this is the prediction", "there is an other sample"]
        >>> target = ["this is the reference", "there is another one"]
        >>> MatchErrorRate().update(preds, target).compute()
        tensor(0.4444)
    """

    def compute(self) -> torch.Tensor:
        """Total edits over the total of the longer sides."""
        return _ratio(self.errors, self.longest_total)


def _preserved(m: _EditCounts) -> torch.Tensor:
    """TorchMetrics' word information preserved, ``H^2 / (N P)`` with ``H = sum(max) - edits``, in float64."""
    hits = (m.longest_total - m.errors).double()
    return hits / m.target_total.double() * (hits / m.preds_total.double())


class WordInfoPreserved(_EditCounts):
    """Word information preserved: ``(H / N) * (H / P)`` over the corpus (1 is best).

    ``N`` and ``P`` are the reference and predicted words; as in TorchMetrics
    the hits are ``H = sum(max(len(pred), len(ref))) - edits``, which equals
    the hits of an alignment without both insertions and deletions (jiwer
    counts the hits of its alignment, so it can differ).

    Examples:
        >>> from scopedmetrics.text import WordInfoPreserved
        >>> preds = ["this is the prediction", "there is an other sample"]
        >>> target = ["this is the reference", "there is another one"]
        >>> WordInfoPreserved().update(preds, target).compute()
        tensor(0.3472)
    """

    def compute(self) -> torch.Tensor:
        """``H^2 / (N P)`` of the corpus sums."""
        return _preserved(self).float()


class WordInfoLost(_EditCounts):
    """Word information lost: ``1 - WordInfoPreserved`` (0 is best).

    Examples:
        >>> from scopedmetrics.text import WordInfoLost
        >>> preds = ["this is the prediction", "there is an other sample"]
        >>> target = ["this is the reference", "there is another one"]
        >>> WordInfoLost().update(preds, target).compute()
        tensor(0.6528)
    """

    def compute(self) -> torch.Tensor:
        """``1 - H^2 / (N P)`` of the corpus sums."""
        return (1 - _preserved(self)).float()


_REDUCTIONS = ("mean", "sum", "none", None)


class EditDistance(Metric):
    """Character-level Levenshtein distance between predictions and references, per pair.

    ``substitution_cost`` prices a substitution (insertions and deletions cost
    1); ``reduction`` is ``"mean"`` (over pairs), ``"sum"``, or ``"none"``/``None``
    (every pair's distance, in the order seen, rank by rank). The mean and sum
    keep two int64 sums; ``"none"`` keeps one int32 row per pair.

    Examples:
        >>> from scopedmetrics.text import EditDistance
        >>> EditDistance().update(["rain", "lnaguaeg"], ["shine", "language"]).compute()
        tensor(3.5000)
        >>> EditDistance(reduction="none").update(["rain", "lnaguaeg"], ["shine", "language"]).compute()
        tensor([3, 4], dtype=torch.int32)
    """

    substitution_cost: int = static(default=1)
    reduction: str | None = static(default="mean")
    edit_scores: torch.Tensor = state("sum", default=0)
    num_elements: torch.Tensor = state("sum", default=0)
    edit_scores_list: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.int32))

    def __post_init__(self) -> None:
        _checks.check_int(self, "substitution_cost", 0)
        _checks.check_choice(self, "reduction", _REDUCTIONS)

    def update(self, preds: str | Sequence[str], target: str | Sequence[str]) -> EditDistance:
        """Fold in predicted and reference strings (one string or a sequence of them)."""
        p, t = pairs(self, preds, target)
        if not p:
            return self
        edits = _char_distances(p, t, self.substitution_cost)[0]
        new = self.replace(edit_scores=self.edit_scores + edits.sum(), num_elements=self.num_elements + len(p))
        if self.reduction in ("none", None):
            new = new.append(edit_scores_list=edits.to(torch.int32))
        return new

    def compute(self) -> torch.Tensor:
        """The mean or total distance, or every pair's (an empty int32 tensor before any pair)."""
        if self.reduction == "sum":
            return self.edit_scores
        if self.reduction == "mean":
            return _ratio(self.edit_scores, self.num_elements)
        return self.edit_scores_list
