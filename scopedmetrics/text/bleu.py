"""BLEU: clipped n-gram precisions and a brevity penalty, over the whole corpus.

The state is the corpus's sufficient statistics as int64 sums: per n-gram
order the clipped matches (numerator) and the predicted n-grams
(denominator), the predicted length and the closest reference length. BLEU is
computed from those sums after the reduction, so any split of the corpus gives
the single-process value; nothing of the sentences is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text import _tokenize
from scopedmetrics.text._inputs import references

Tokens = Sequence[str]


def ngram_counts(tokens: Tokens, n_gram: int) -> Counter[tuple[str, ...]]:
    """The counts of ``tokens``' n-grams of orders ``1..n_gram`` in one ``Counter`` (a key's length is its order)."""
    return Counter(chain.from_iterable(zip(*(tokens[i:] for i in range(n))) for n in range(1, n_gram + 1)))


def corpus_statistics(
    preds: Sequence[Tokens], target: Sequence[Sequence[Tokens]], n_gram: int
) -> tuple[list[int], list[int], int, int]:
    """Clipped matches and predicted n-grams per order, predicted length, closest reference length.

    As BLEU's definition: a predicted n-gram counts at most as often as in
    the reference where it is most frequent; the reference length of a
    sentence is the one closest to its prediction, the shorter of two equally
    close (as sacrebleu and NLTK; TorchMetrics takes the first reference).
    """
    numerator, denominator = [0] * n_gram, [0] * n_gram
    preds_len = target_len = 0
    for pred, refs in zip(preds, target):
        c = len(pred)
        preds_len += c
        lengths = [len(r) for r in refs]
        target_len += min(lengths, key=lambda r: (abs(c - r), r))
        most = ngram_counts(refs[0], n_gram)
        for ref in refs[1:]:
            most |= ngram_counts(ref, n_gram)  # | keeps the larger count
        most_of = most.get
        for gram, k in ngram_counts(pred, n_gram).items():
            m = most_of(gram)
            if m:
                numerator[len(gram) - 1] += k if k < m else m
        for n in range(n_gram):
            denominator[n] += max(c - n, 0)
    return numerator, denominator, preds_len, target_len


class _BLEUCounts(Metric):
    """The sufficient statistics of corpus BLEU; subclasses say how lines become tokens."""

    preds_len: torch.Tensor = state("sum", default=0)
    target_len: torch.Tensor = state("sum", default=0)
    numerator: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_gram, dtype=torch.int64))
    denominator: torch.Tensor = state("sum", init=lambda m: torch.zeros(m.n_gram, dtype=torch.int64))

    def _check_and_shape(self) -> None:
        _checks.check_int(self, "n_gram", 1)
        _checks.check_bool(self, "smooth")
        weights = self.weights  # type: ignore[attr-defined]
        if weights is not None:
            if not isinstance(weights, Sequence) or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights
            ):
                raise TypeError(
                    f"{type(self).__name__}: argument `weights` must be a sequence of numbers, got {weights!r}"
                )
            if len(weights) != self.n_gram:  # type: ignore[attr-defined]
                raise ValueError(
                    f"{type(self).__name__}: argument `weights` must hold n_gram={self.n_gram} weights, "  # type: ignore[attr-defined]
                    f"got {len(weights)}"
                )
            object.__setattr__(self, "weights", tuple(float(w) for w in weights))  # frozen: one canonical form

    def _tokenizer(self) -> Callable[[str], list[str]]:
        return str.split

    def update(self, preds: str | Sequence[str], target: Sequence[str | Sequence[str]]) -> Self:
        """Fold in predictions and, per prediction, one reference or a sequence of references."""
        p, refs = references(self, preds, target)
        if not p:
            return self
        tok = self._tokenizer()
        for i, candidates in enumerate(refs):
            if not candidates:
                raise ValueError(f"{_checks.where(self)}: argument `target` holds no reference for prediction {i}")
        n_gram: int = self.n_gram  # type: ignore[attr-defined]
        num, den, c, r = corpus_statistics([tok(s) for s in p], [[tok(s) for s in rs] for rs in refs], n_gram)
        return self.replace(
            numerator=self.numerator + torch.tensor(num, dtype=torch.int64),
            denominator=self.denominator + torch.tensor(den, dtype=torch.int64),
            preds_len=self.preds_len + c,
            target_len=self.target_len + r,
        )

    def compute(self) -> torch.Tensor:
        """Corpus BLEU from the summed statistics (0 when some order has no match)."""
        return bleu(
            self.numerator, self.denominator, self.preds_len, self.target_len,
            self.weights, self.smooth,  # type: ignore[attr-defined]
        )


def bleu(
    numerator: torch.Tensor,
    denominator: torch.Tensor,
    preds_len: torch.Tensor,
    target_len: torch.Tensor,
    weights: Sequence[float] | None,
    smooth: bool,
) -> torch.Tensor:
    """BLEU of corpus statistics, in float64, returned as float32 (TorchMetrics' value and dtype)."""
    n_gram = numerator.numel()
    if n_gram == 0 or int(numerator.min()) == 0:
        return torch.tensor(0.0)
    num, den = numerator.double(), denominator.double()
    if smooth:  # add-one for every order above the first (Lin and Och's smoothing, as TorchMetrics)
        precision = torch.cat([num[:1] / den[:1], (num[1:] + 1) / (den[1:] + 1)])
    else:
        precision = num / den
    w = torch.tensor(weights if weights is not None else [1.0 / n_gram] * n_gram, dtype=torch.float64)
    geometric_mean = torch.exp((w * precision.log()).sum())
    c, r = preds_len.double(), target_len.double()
    brevity = torch.ones((), dtype=torch.float64) if bool(c > r) else torch.exp(1 - r / c)
    return (brevity * geometric_mean).float()


class BLEUScore(_BLEUCounts):
    """Corpus BLEU of whitespace-tokenized predictions against one or more references each.

    As TorchMetrics' ``BLEUScore``: ``n_gram`` orders, uniform ``weights``
    unless given, ``smooth`` adds one to the matches and counts of every order
    above the first. ``target`` holds, per prediction, a string (one
    reference) or a sequence of strings.

    Examples:
        >>> from scopedmetrics.text import BLEUScore
        >>> preds = ["the cat is on the mat"]
        >>> target = [["there is a cat on the mat", "a cat is on the mat"]]
        >>> BLEUScore().update(preds, target).compute()
        tensor(0.7598)
    """

    n_gram: int = static(default=4)
    smooth: bool = static(default=False)
    weights: Sequence[float] | None = static(default=None)

    def __post_init__(self) -> None:
        self._check_and_shape()


class SacreBLEUScore(_BLEUCounts):
    """Corpus BLEU with SacreBLEU's tokenization: ``tokenize`` is ``"13a"``, ``"none"``, ``"char"`` or ``"intl"``.

    As TorchMetrics' ``SacreBLEUScore`` (``sacrebleu.corpus_bleu`` with
    ``smooth_method="none"``, scores in [0, 1]). ``"intl"`` needs the ``regex``
    package; TorchMetrics' ``"zh"``, ``"ja-mecab"``, ``"ko-mecab"`` and the
    ``"flores"`` tokenizers (which need extra packages or a download) are not
    offered. ``lowercase`` lowercases each line before it is tokenized (as
    sacrebleu; TorchMetrics lowercases the tokens, which differs where
    lowercasing changes a line's tokens: ``"İ"`` becomes two characters,
    ``"&AMP;"`` becomes an entity of ``"13a"``).

    Examples:
        >>> from scopedmetrics.text import SacreBLEUScore
        >>> preds = ["the cat is on the mat."]
        >>> target = [["there is a cat on the mat.", "a cat is on the mat."]]
        >>> SacreBLEUScore().update(preds, target).compute()
        tensor(0.8091)
    """

    n_gram: int = static(default=4)
    smooth: bool = static(default=False)
    tokenize: str = static(default="13a")
    lowercase: bool = static(default=False)
    weights: Sequence[float] | None = static(default=None)

    def __post_init__(self) -> None:
        self._check_and_shape()
        _checks.check_choice(self, "tokenize", _tokenize.AVAILABLE)
        _checks.check_bool(self, "lowercase")
        if not _tokenize.available(self.tokenize):
            raise ModuleNotFoundError(
                f"{type(self).__name__}: tokenize={self.tokenize!r} needs the `regex` package: pip install regex"
            )

    def _tokenizer(self) -> Callable[[str], list[str]]:
        """Lines to tokens in sacrebleu's order: lowercase (if asked), strip the line's end, tokenize."""
        tokens = _tokenize.tokenizer(self.tokenize)
        if self.lowercase:
            return lambda line: tokens(line.lower().rstrip())
        return lambda line: tokens(line.rstrip())
