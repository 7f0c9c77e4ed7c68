"""SQuAD: exact match and token F1 of predicted answers against the gold answers, in percent.

The state is a float64 sum of the questions' best F1, an int64 count of exact
matches and an int64 count of questions, reduced with ``"sum"``; the values
are ratios of those sums, so any split of the questions gives the
single-process value.
"""

from __future__ import annotations

import re
import string
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(s: str) -> str:
    """The official SQuAD normalization: lowercase, drop punctuation and articles, collapse whitespace."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_PUNCTUATION)).split())


def _f1(pred: str, gold: str) -> float:
    p = normalize_answer(pred).split() if pred else []
    g = normalize_answer(gold).split() if gold else []
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _records(owner: Any, arg: str, x: Any, keys: tuple[str, ...]) -> list[Mapping[str, Any]]:
    items = [x] if isinstance(x, Mapping) else x
    if not isinstance(items, Sequence) or isinstance(items, str) or not all(isinstance(i, Mapping) for i in items):
        got = type(x).__name__
        raise TypeError(f"{_checks.where(owner)}: argument `{arg}` must be a dict or a sequence of dicts, got {got}")
    for item in items:
        missing = [k for k in keys if k not in item]
        if missing:
            raise ValueError(f"{_checks.where(owner)}: argument `{arg}` has an item without the key(s) {missing}")
    return list(items)


class SQuAD(Metric):
    """Exact match and F1 (percent) of answers, each question scored against its best gold answer.

    ``preds``: ``{"prediction_text": str, "id": str}`` or a list of them;
    ``target``: ``{"answers": {"text": [str, ...]}, "id": str}`` or a list of
    them, as TorchMetrics (and the SQuAD format). Each target is a question;
    one without a prediction of its id in the same batch scores 0 (with a
    warning). A question with no gold answer (``"text": []``) is
    unanswerable, as in SQuAD 2.0: an empty prediction scores 1, any other 0.
    ``compute`` returns ``{"exact_match": ..., "f1": ...}``.

    Examples:
        >>> from scopedmetrics.text import SQuAD
        >>> preds = [{"prediction_text": "1976", "id": "56e10a3be3433e1400422b22"}]
        >>> target = [{"answers": {"answer_start": [97], "text": ["1976"]}, "id": "56e10a3be3433e1400422b22"}]
        >>> SQuAD().update(preds, target).compute()
        {'exact_match': tensor(100.), 'f1': tensor(100.)}
    """

    f1_score: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    exact_match: torch.Tensor = state("sum", default=0)
    total: torch.Tensor = state("sum", default=0)

    def update(self, preds: Any, target: Any) -> SQuAD:
        """Fold in predicted answers and the questions' gold answers."""
        p = _records(self, "preds", preds, ("prediction_text", "id"))
        t = _records(self, "target", target, ("answers", "id"))
        for item in t:
            answers = item["answers"]
            if not isinstance(answers, Mapping) or "text" not in answers:
                raise ValueError(f"{_checks.where(self)}: argument `target` has answers without the key 'text'")
            texts = answers["text"]
            if isinstance(texts, str) or not isinstance(texts, Sequence) or not all(isinstance(a, str) for a in texts):
                raise TypeError(
                    f"{_checks.where(self)}: argument `target` has answers whose 'text' is not a list of strings"
                )
        if not all(isinstance(x["prediction_text"], str) for x in p):
            raise TypeError(f"{_checks.where(self)}: argument `preds` has a 'prediction_text' that is not a string")
        if not t:
            return self
        answer = {x["id"]: x["prediction_text"] for x in p}
        f1, exact = 0.0, 0
        for item in t:
            if item["id"] not in answer:
                warnings.warn(f"SQuAD.update: unanswered question {item['id']} scores 0", UserWarning, stacklevel=3)
                continue
            # no gold answer: unanswerable (SQuAD 2.0's rule), so only an empty prediction is right
            pred, golds = answer[item["id"]], item["answers"]["text"] or [""]
            exact += max(int(normalize_answer(pred) == normalize_answer(g)) for g in golds)
            f1 += max(_f1(pred, g) for g in golds)
        return self.replace(
            f1_score=self.f1_score + f1, exact_match=self.exact_match + exact, total=self.total + len(t)
        )

    def compute(self) -> dict[str, torch.Tensor]:
        """``{"exact_match": percent, "f1": percent}`` (float32); NaN before any question."""
        total = self.total.double()
        return {
            "exact_match": (100.0 * self.exact_match.double() / total).float(),
            "f1": (100.0 * self.f1_score / total).float(),
        }
