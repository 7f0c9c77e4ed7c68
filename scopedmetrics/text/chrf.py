"""chrF and chrF++: F-scores of character (and word) n-grams, from corpus-level n-gram totals.

The state is, per n-gram order, three int64 sums: the predicted n-grams, the
reference n-grams and the matching n-grams (characters and words separately).
The corpus score is the F-score of those totals, computed after the
reduction, so any split of the corpus gives the single-process value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text._inputs import references

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EPS = 1e-16  # keeps an F-score of nothing at 0 rather than 0/0, as sacrebleu and TorchMetrics


def _chars(sentence: str, whitespace: bool) -> list[str]:
    return list(sentence) if whitespace else list(sentence.strip().replace(" ", ""))


def _words(sentence: str) -> list[str]:
    """Words with one leading or trailing punctuation mark split off (chrF++'s word tokens)."""
    out: list[str] = []
    for w in sentence.strip().split():
        if len(w) > 1 and w[-1] in _PUNCTUATION:
            out += (w[:-1], w[-1])
        elif len(w) > 1 and w[0] in _PUNCTUATION:
            out += (w[0], w[1:])
        else:
            out.append(w)
    return out


def _counts(tokens: Sequence[str], order: int) -> list[Counter[tuple[str, ...]]]:
    return [Counter(zip(*(tokens[i:] for i in range(n)))) for n in range(1, order + 1)]


def _totals(counts: list[Counter[tuple[str, ...]]]) -> list[int]:
    return [sum(c.values()) for c in counts]


def f_score(
    matching: Sequence[float], hyp: Sequence[float], ref: Sequence[float], n_order: float, beta: float
) -> float:
    """The chrF score: the mean over n-gram orders of each order's F-beta of precision and recall."""
    total = 0.0
    for m, h, r in zip(matching, hyp, ref):
        precision = m / h if h > 0 else 0.0
        recall = m / r if r > 0 else 0.0
        total += (1 + beta**2) * precision * recall / max(beta**2 * precision + recall, _EPS)
    return total / n_order


class CHRFScore(Metric):
    """chrF (``n_word_order=0``) or chrF++ (the default, ``n_word_order=2``) of a corpus, in [0, 1].

    As TorchMetrics' ``CHRFScore``: character n-grams up to ``n_char_order``
    (spaces removed unless ``whitespace``) and word n-grams up to
    ``n_word_order``, F-beta per order averaged over orders; with several
    references, each sentence adds the statistics of its best-scoring one.
    With ``return_sentence_level_score``, ``compute`` returns ``(corpus score,
    every sentence's score)``, sentences in the order seen, rank by rank.

    Examples:
        >>> from scopedmetrics.text import CHRFScore
        >>> preds = ["the cat is on the mat"]
        >>> target = [["there is a cat on the mat", "a cat is on the mat"]]
        >>> CHRFScore().update(preds, target).compute()
        tensor(0.8640)
    """

    n_char_order: int = static(default=6)
    n_word_order: int = static(default=2)
    beta: float = static(default=2.0)
    lowercase: bool = static(default=False)
    whitespace: bool = static(default=False)
    return_sentence_level_score: bool = static(default=False)
    preds_char: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_char_order, dtype=torch.int64))
    target_char: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_char_order, dtype=torch.int64))
    matching_char: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_char_order, dtype=torch.int64))
    preds_word: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_word_order, dtype=torch.int64))
    target_word: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_word_order, dtype=torch.int64))
    matching_word: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_word_order, dtype=torch.int64))
    sentence_chrf_score: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.float32))

    def __post_init__(self) -> None:
        _checks.check_int(self, "n_char_order", 1)
        _checks.check_int(self, "n_word_order", 0)
        _checks.check_number(self, "beta", 0.0)
        for name in ("lowercase", "whitespace", "return_sentence_level_score"):
            _checks.check_bool(self, name)

    def _ngrams(self, sentence: str) -> tuple[list[Counter[tuple[str, ...]]], list[Counter[tuple[str, ...]]]]:
        if self.lowercase:
            sentence = sentence.lower()
        chars, words = _chars(sentence, self.whitespace), _words(sentence)
        return _counts(chars, self.n_char_order), _counts(words, self.n_word_order)

    def update(self, preds: str | Sequence[str], target: Sequence[str | Sequence[str]]) -> Self:
        """Fold in predictions and, per prediction, one reference or a sequence of references."""
        p, refs = references(self, preds, target)
        if not all(refs):
            raise ValueError(f"{_checks.where(self)}: argument `target` holds no reference for a prediction")
        if not p:
            return self
        n_order = float(self.n_char_order + self.n_word_order)
        sums = [[0] * self.n_char_order for _ in range(3)] + [[0] * self.n_word_order for _ in range(3)]
        sentences = []
        for pred, candidates in zip(p, refs):
            pc, pw = self._ngrams(pred)
            hyp_c, hyp_w = _totals(pc), _totals(pw)
            none_c, none_w = [0] * self.n_char_order, [0] * self.n_word_order
            best = (0.0, none_c, none_w, none_c, none_w)
            for ref in candidates:
                rc, rw = self._ngrams(ref)
                match_c = [sum((a & b).values()) for a, b in zip(pc, rc)]
                match_w = [sum((a & b).values()) for a, b in zip(pw, rw)]
                ref_c, ref_w = _totals(rc), _totals(rw)
                score = f_score(match_c + match_w, hyp_c + hyp_w, ref_c + ref_w, n_order, self.beta)
                if score > best[0]:  # a reference scoring 0 adds nothing, as in TorchMetrics
                    best = (score, match_c, match_w, ref_c, ref_w)
            sentences.append(best[0])
            for acc, add in zip(sums, (hyp_c, best[3], best[1], hyp_w, best[4], best[2])):
                for n, v in enumerate(add):
                    acc[n] += v
        new = self.replace(
            preds_char=self.preds_char + torch.tensor(sums[0], dtype=torch.int64),
            target_char=self.target_char + torch.tensor(sums[1], dtype=torch.int64),
            matching_char=self.matching_char + torch.tensor(sums[2], dtype=torch.int64),
            preds_word=self.preds_word + torch.tensor(sums[3], dtype=torch.int64),
            target_word=self.target_word + torch.tensor(sums[4], dtype=torch.int64),
            matching_word=self.matching_word + torch.tensor(sums[5], dtype=torch.int64),
        )
        if self.return_sentence_level_score:
            new = new.append(sentence_chrf_score=torch.tensor(sentences, dtype=torch.float32))
        return new

    def compute(self) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """The corpus score (and, if asked, every sentence's score)."""
        score = f_score(
            self.matching_char.tolist() + self.matching_word.tolist(),
            self.preds_char.tolist() + self.preds_word.tolist(),
            self.target_char.tolist() + self.target_word.tolist(),
            float(self.n_char_order + self.n_word_order),
            self.beta,
        )
        value = torch.tensor(score, dtype=torch.float32)
        if self.return_sentence_level_score:
            return value, self.sentence_chrf_score
        return value
