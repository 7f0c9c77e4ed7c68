"""ROUGE-N and ROUGE-L: per-sentence precision, recall and F-measure, averaged over the corpus.

The state is, per ROUGE key, the float64 sums of the sentences' precision,
recall and F-measure, and an int64 count of sentences, reduced with
``"sum"``; the value is sum over count, so any split of the corpus gives the
single-process mean. ``rougeLsum`` (summary-level LCS) splits a summary into
sentences at newlines, rouge-score's rule, so nothing is downloaded.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text._inputs import references

KEYS = ("rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rouge6", "rouge7", "rouge8", "rouge9", "rougeL",
        "rougeLsum")
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


def _sentences(text: str) -> list[str]:
    """rouge-score's rule for ``rougeLsum``: one sentence per line, empty lines dropped."""
    return [s for s in text.split("\n") if s]


def _lcs_indices(ref: list[str], can: list[str]) -> list[int]:
    """The indices into ``ref`` of one longest common subsequence, chosen as rouge-score's backtrack chooses."""
    table = [[0] * (len(can) + 1) for _ in range(len(ref) + 1)]
    for i, x in enumerate(ref, 1):
        for j, y in enumerate(can, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    out, i, j = [], len(ref), len(can)
    while i > 0 and j > 0:  # the tie-break matters: the union below depends on which subsequence is read out
        if ref[i - 1] == can[j - 1]:
            out.append(i - 1)
            i, j = i - 1, j - 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return out


def _rouge_lsum(pred: list[list[str]], target: list[list[str]]) -> tuple[float, float, float]:
    """Summary-level LCS (Lin 2004, section 3.2): per reference sentence, the union of its LCS with each predicted one.

    A token is a hit at most as often as it occurs on both sides (rouge-score's and ROUGE 1.5.5's counting).
    """
    pred_len, target_len = sum(map(len, pred)), sum(map(len, target))
    if pred_len == 0 or target_len == 0:
        return 0.0, 0.0, 0.0
    left_p, left_t = Counter(chain.from_iterable(pred)), Counter(chain.from_iterable(target))
    hits = 0
    for ref in target:
        for i in sorted(set().union(*(_lcs_indices(ref, can) for can in pred))):
            token = ref[i]
            if left_p[token] > 0 and left_t[token] > 0:
                hits += 1
                left_p[token] -= 1
                left_t[token] -= 1
    return _prf(hits, pred_len, target_len)


class ROUGEScore(Metric):
    r"""ROUGE-1..9, ROUGE-L and ROUGE-Lsum of predictions against one or more references, averaged over sentences.

    As TorchMetrics' ``ROUGEScore``: tokens as rouge-score makes them (or by
    ``normalizer`` and ``tokenizer``), optionally Porter-stemmed
    (``use_stemmer``, which needs ``nltk``); with several references,
    ``accumulate="best"`` keeps each key's best-F reference and ``"avg"``
    averages over them. ``compute`` returns ``{"rouge1_fmeasure": ...,
    "rouge1_precision": ..., "rouge1_recall": ..., ...}``. ``rougeLsum``
    (asked for in ``rouge_keys``) splits summaries into sentences at newlines,
    as rouge-score does; TorchMetrics splits them with nltk's punkt model (a
    download), so put one sentence per line.

    Examples:
        >>> from scopedmetrics.text import ROUGEScore
        >>> rouge = ROUGEScore(rouge_keys=("rouge1", "rougeL"))
        >>> scores = rouge.update("My name is John", "Is your name John").compute()
        >>> scores["rouge1_fmeasure"], scores["rougeL_fmeasure"]
        (tensor(0.7500), tensor(0.5000))
        >>> lsum = ROUGEScore(rouge_keys=("rougeL", "rougeLsum"))  # one sentence per line
        >>> scores = lsum.update("a b c\nd e", "d e\na b c").compute()
        >>> scores["rougeL_fmeasure"], scores["rougeLsum_fmeasure"]
        (tensor(0.6000), tensor(1.))
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
        def sentence_tokens(text: str) -> list[list[str]]:
            return [tokens(s) for s in _sentences(text)]

        def score(key: str, pt: list[str], rt: list[str], ps: list[list[str]], rs: list[list[str]]) -> Any:
            if key == "rougeLsum":
                return _rouge_lsum(ps, rs)
            return _rouge_l(pt, rt) if key == "rougeL" else _rouge_n(pt, rt, int(key[5:]))

        lsum = "rougeLsum" in keys
        sums = torch.zeros(len(keys), 3, dtype=torch.float64)
        for pred, candidates in zip(p, refs):
            pt, ps = tokens(pred), sentence_tokens(pred) if lsum else []
            per_ref = [(tokens(r), sentence_tokens(r) if lsum else []) for r in candidates]
            scores = torch.tensor(
                [[score(k, pt, rt, ps, rs) for k in keys] for rt, rs in per_ref], dtype=torch.float64
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
