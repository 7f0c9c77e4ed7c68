"""ROUGE-N and ROUGE-L: per-sentence precision, recall and F-measure, averaged over the corpus.

The state is, per ROUGE key, the float64 sums of the sentences' precision,
recall and F-measure, and an int64 count of sentences, reduced with
``"sum"``; the value is sum over count, so any split of the corpus gives the
single-process mean.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text._inputs import references

KEYS = ("rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rouge6", "rouge7", "rouge8", "rouge9", "rougeL")
_SCORES = ("fmeasure", "precision", "recall")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_SPACE = re.compile(r"\s+")


def _tokens(text: str, stemmer: Any, normalizer: Callable[[str], str] | None, tokenizer: Any) -> list[str]:
    """rouge-score's default: lowercase, non-alphanumerics to spaces, split; Porter-stem tokens over 3 letters."""
    text = normalizer(text) if callable(normalizer) else _NON_ALNUM.sub(" ", text.lower())
    tokens = tokenizer(text) if callable(tokenizer) else _SPACE.split(text)
    if stemmer is not None:
        tokens = [stemmer.stem(x) if len(x) > 3 else x for x in tokens]
    return [x for x in tokens if isinstance(x, str) and x]


def _prf(hits: int, pred_len: int, target_len: int) -> tuple[float, float, float]:
    """``(F, P, R)`` of ``hits`` among ``pred_len`` predicted and ``target_len`` reference units."""
    if pred_len == 0 or target_len == 0:
        return 0.0, 0.0, 0.0
    precision, recall = hits / pred_len, hits / target_len
    if precision == recall == 0.0:
        return 0.0, 0.0, 0.0
    return 2 * precision * recall / (precision + recall), precision, recall


def _rouge_n(pred: list[str], target: list[str], n: int) -> tuple[float, float, float]:
    p = Counter(zip(*(pred[i:] for i in range(n))))
    t = Counter(zip(*(target[i:] for i in range(n))))
    return _prf(sum((p & t).values()), sum(p.values()), sum(t.values()))


def _lcs(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence (one row of the table at a time)."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        diag = 0
        for j, y in enumerate(b, 1):
            diag, row[j] = row[j], diag + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def _rouge_l(pred: list[str], target: list[str]) -> tuple[float, float, float]:
    if not pred or not target:
        return 0.0, 0.0, 0.0
    return _prf(_lcs(pred, target), len(pred), len(target))


class ROUGEScore(Metric):
    """ROUGE-1..9 and ROUGE-L of predictions against one or more references, averaged over sentences.

    As TorchMetrics' ``ROUGEScore``: tokens as rouge-score makes them (or by
    ``normalizer`` and ``tokenizer``), optionally Porter-stemmed
    (``use_stemmer``, which needs ``nltk``); with several references,
    ``accumulate="best"`` keeps each key's best-F reference and ``"avg"``
    averages over them. ``compute`` returns ``{"rouge1_fmeasure": ...,
    "rouge1_precision": ..., "rouge1_recall": ..., ...}``. ``rougeLsum`` is
    not offered: it splits sentences with nltk's punkt model, a download.

    Examples:
        >>> from scopedmetrics.text import ROUGEScore
        >>> rouge = ROUGEScore(rouge_keys=("rouge1", "rougeL"))
        >>> scores = rouge.update("My name is John", "Is your name John").compute()
        >>> scores["rouge1_fmeasure"], scores["rougeL_fmeasure"]
        (tensor(0.7500), tensor(0.5000))
    """

    use_stemmer: bool = static(default=False)
    normalizer: Callable[[str], str] | None = static(default=None)
    tokenizer: Callable[[str], Sequence[str]] | None = static(default=None)
    accumulate: str = static(default="best")
    rouge_keys: str | tuple[str, ...] = static(default=("rouge1", "rouge2", "rougeL"))
    sums: torch.Tensor = state("sum", init=lambda m: torch.zeros(len(m.rouge_keys), 3, dtype=torch.float64))
    count: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        _checks.check_bool(self, "use_stemmer")
        _checks.check_choice(self, "accumulate", ("avg", "best"))
        keys = (self.rouge_keys,) if isinstance(self.rouge_keys, str) else self.rouge_keys
        if not isinstance(keys, Sequence) or not keys:
            raise TypeError(f"ROUGEScore: argument `rouge_keys` must be a key or a tuple of keys, got {keys!r}")
        for key in keys:
            if key == "rougeLsum":
                raise ValueError(
                    "ROUGEScore: argument `rouge_keys`: 'rougeLsum' is not offered (it needs nltk's punkt sentence "
                    f"model, a download); choose from {KEYS}"
                )
            if key not in KEYS:
                raise ValueError(f"ROUGEScore: argument `rouge_keys` must hold keys of {KEYS}, got {key!r}")
        object.__setattr__(self, "rouge_keys", tuple(keys))  # frozen: one canonical form
        for name in ("normalizer", "tokenizer"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise TypeError(f"ROUGEScore: argument `{name}` must be callable or None, got {getattr(self, name)!r}")
        if self.use_stemmer:
            try:
                importlib.import_module("nltk.stem.porter")
            except ImportError:
                raise ModuleNotFoundError("ROUGEScore: use_stemmer=True needs nltk: pip install nltk") from None

    def update(self, preds: str | Sequence[str], target: str | Sequence[str | Sequence[str]]) -> Self:
        """Fold in predictions and, per prediction, one reference or a sequence of references."""
        p, refs = references(self, preds, target)
        if not p:
            return self
        stemmer = importlib.import_module("nltk.stem.porter").PorterStemmer() if self.use_stemmer else None
        keys: tuple[str, ...] = self.rouge_keys  # type: ignore[assignment]

        def tokens(text: str) -> list[str]:
            return _tokens(text, stemmer, self.normalizer, self.tokenizer)

        if not all(refs):
            raise ValueError(f"{_checks.where(self)}: argument `target` holds no reference for a prediction")
        sums = torch.zeros(len(keys), 3, dtype=torch.float64)
        for pred, candidates in zip(p, refs):
            pt = tokens(pred)
            scores = torch.tensor(
                [[_rouge_l(pt, rt) if k == "rougeL" else _rouge_n(pt, rt, int(k[5:])) for k in keys]
                 for rt in map(tokens, candidates)],
                dtype=torch.float64,
            )  # (references, keys, (F, P, R))
            if self.accumulate == "best":
                best = scores[:, :, 0].argmax(0)  # the first best-F reference per key
                sums += scores[best, torch.arange(len(keys))]
            else:
                sums += scores.mean(0)
        return self.replace(sums=self.sums + sums.to(self.sums.device), count=self.count + len(p))

    def compute(self) -> dict[str, torch.Tensor]:
        """``{"<key>_<fmeasure|precision|recall>": mean over sentences}`` (float32); NaN before any sentence."""
        means = (self.sums / self.count).float()
        keys: tuple[str, ...] = self.rouge_keys  # type: ignore[assignment]
        return {f"{k}_{s}": means[i, j] for i, k in enumerate(keys) for j, s in enumerate(_SCORES)}
