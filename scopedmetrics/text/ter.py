"""Translation edit rate (TER, as tercom and sacrebleu compute it): edits, shifts included, over reference words.

The state is two float64 sums, the best edit count of each sentence and its
mean reference length (both exact in float64: counts and means of a few
integers), reduced with ``"sum"``; TER is their ratio after the reduction, so
any split of the corpus gives the single-process value.

The edit count follows tercom, as sacrebleu implements it: greedily apply
the block shift of the prediction that lowers its (beam-limited)
Levenshtein distance to the reference most, while one does, then add the
distance left. TorchMetrics 1.9 shifts the reference instead, allows blocks
of at most 9 words (sacrebleu 10), and gives an empty prediction 0 edits
(sacrebleu: one deletion per reference word); this metric gives sacrebleu's
values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import torch
from typing_extensions import Self

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.state import state, static
from scopedmetrics.text._inputs import references

_MAX_SHIFT_SIZE = 10  # a shifted block has at most this many words
_MAX_SHIFT_DIST = 50  # and moves at most this far
_MAX_SHIFT_CANDIDATES = 1000  # shift candidates tried per sentence, over all rounds
_BEAM_WIDTH = 25  # the Levenshtein band around the diagonal
_MAX_CACHE_SIZE = 10000
_INF = 10**16

# ---- tokenization (tercom's normalization) -------------------------------------------------------------

_WESTERN = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"\n-", ""),
        (r"\n", " "),
        (r"&quot;", '"'),
        (r"&amp;", "&"),
        (r"&lt;", "<"),
        (r"&gt;", ">"),
        (r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 "),  # mteval-v13a's symbols
        (r"'s ", r" 's "),
        (r"'s$", r" 's"),
        (r"([^0-9])([\.,])", r"\1 \2 "),
        (r"([\.,])([^0-9])", r" \1 \2"),
        (r"([0-9])(-)", r"\1 \2 "),
    )
)
_ASIAN_PUNCT = r"([\u3001\u3002\u3008-\u3011\u3014-\u301f\uff61-\uff65\u30fb])"
_FULL_WIDTH_PUNCT = r"([\uff0e\uff0c\uff1f\uff1a\uff1b\uff01\uff02\uff08\uff09])"
_ASIAN = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"([\u4e00-\u9fff\u3400-\u4dbf])", r" \1 "),  # CJK ideographs
        (r"([\u31c0-\u31ef\u2e80-\u2eff])", r" \1 "),
        (r"([\u3300-\u33ff\uf900-\ufaff\ufe30-\ufe4f])", r" \1 "),
        (r"([\u3200-\u3f22])", r" \1 "),
        (r"(^|^[\u3040-\u309f])([\u3040-\u309f]+)(?=$|^[\u3040-\u309f])", r"\1 \2 "),  # hiragana runs
        (r"(^|^[\u30a0-\u30ff])([\u30a0-\u30ff]+)(?=$|^[\u30a0-\u30ff])", r"\1 \2 "),  # katakana runs
        (r"(^|^[\u31f0-\u31ff])([\u31f0-\u31ff]+)(?=$|^[\u31f0-\u31ff])", r"\1 \2 "),
        (_ASIAN_PUNCT, r" \1 "),
        (_FULL_WIDTH_PUNCT, r" \1 "),
    )
)
_PUNCT = re.compile(r"[\.,\?:;!\"\(\)]")
_ASIAN_PUNCT_RE, _FULL_WIDTH_PUNCT_RE = re.compile(_ASIAN_PUNCT), re.compile(_FULL_WIDTH_PUNCT)


def tercom_tokens(sentence: str, normalize: bool, no_punctuation: bool, lowercase: bool, asian: bool) -> list[str]:
    """The words tercom compares, after its optional lowercasing, normalization and punctuation removal."""
    sentence = sentence.rstrip()
    if not sentence:
        return []
    if lowercase:
        sentence = sentence.lower()
    if normalize:
        sentence = f" {sentence} "
        for pattern, repl in _WESTERN + (_ASIAN if asian else ()):
            sentence = pattern.sub(repl, sentence)
    if no_punctuation:
        sentence = _PUNCT.sub("", sentence)
        if asian:
            sentence = _FULL_WIDTH_PUNCT_RE.sub("", _ASIAN_PUNCT_RE.sub("", sentence))
    return sentence.split()


# ---- beam-limited Levenshtein distance with its alignment ---------------------------------------------

# The ops of a path: keep or substitute a row word for a column word, delete a row word, insert a column word.
_MATCH, _SUB, _DEL, _INS, _UNDEF = 0, 1, 2, 3, 4


class _Distance:
    """Levenshtein distance from word lists of one length (shifts of each other) to ``columns``.

    Rows already computed for a prefix are kept in a trie: the shifts of one
    round share long prefixes, so most candidates recompute a few rows only.
    Within a band of ``_BEAM_WIDTH`` around the diagonal, as tercom; ties go
    to substitution or match, then deletion, then insertion.
    """

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns
        self.trie: dict[str, tuple[dict, list[tuple[int, int]]]] = {}  # type: ignore[type-arg]
        self.size = 0

    def __call__(self, rows: list[str]) -> tuple[int, list[int]]:
        """The distance, and the ops of one optimal path from the start (``_MATCH`` ... ``_INS``)."""
        cols = self.columns
        n, m = len(rows), len(cols)
        table: list[list[tuple[int, int]]] = [[(j, _INS) for j in range(m + 1)]]
        node = self.trie
        for word in rows:  # rows cached for this prefix
            if word not in node:
                break
            node, row = node[word]
            table.append(row)
        start = len(table) - 1
        ratio = m / n if rows else 1.0
        beam = math.ceil(ratio / 2 + _BEAM_WIDTH) if ratio / 2 > _BEAM_WIDTH else _BEAM_WIDTH
        for i in range(start + 1, n + 1):
            diag = math.floor(i * ratio)
            lo, hi = max(0, diag - beam), (m + 1 if i == n else min(m + 1, diag + beam))
            above, row = table[i - 1], [(_INF, _UNDEF)] * (m + 1)
            word = rows[i - 1]
            for j in range(lo, hi):
                if j == 0:
                    row[0] = (above[0][0] + 1, _DEL)
                    continue
                same = word == cols[j - 1]
                best = (_INF, _UNDEF)  # a cell no path reaches stays undefined, whatever its neighbours
                for cost, op in (
                    (above[j - 1][0] + (0 if same else 1), _MATCH if same else _SUB),
                    (above[j][0] + 1, _DEL),
                    (row[j - 1][0] + 1, _INS),
                ):
                    if cost < best[0]:
                        best = (cost, op)
                row[j] = best
            table.append(row)
        self._remember(rows, table, start)
        ops: list[int] = []
        i, j = n, m
        while i > 0 or j > 0:
            op = table[i][j][1]
            ops.append(op)
            if op in (_MATCH, _SUB):
                i, j = i - 1, j - 1
            elif op == _INS:
                j -= 1
            else:
                i -= 1
        ops.reverse()
        return table[n][m][0], ops

    def _remember(self, rows: list[str], table: list[list[tuple[int, int]]], start: int) -> None:
        if self.size >= _MAX_CACHE_SIZE:
            return
        node = self.trie
        for k, word in enumerate(rows):
            if word not in node:
                node[word] = ({}, table[k + 1])
                self.size += 1
            node = node[word][0]


def _alignment(ops: list[int]) -> tuple[dict[int, int], list[int], list[int]]:
    """From a row-to-column path: column position -> row position, and the error flags of rows and columns."""
    r = c = -1
    column_to_row: dict[int, int] = {}
    row_errors: list[int] = []
    column_errors: list[int] = []
    for op in ops:
        if op in (_MATCH, _SUB):
            r, c = r + 1, c + 1
            column_to_row[c] = r
            row_errors.append(op)  # _MATCH is 0, _SUB is 1
            column_errors.append(op)
        elif op == _DEL:  # a row word with no column word
            r += 1
            row_errors.append(1)
        else:  # a column word with no row word
            c += 1
            column_to_row[c] = r
            column_errors.append(1)
    return column_to_row, row_errors, column_errors


def _shift(words: list[str], start: int, length: int, to: int) -> list[str]:
    """``words`` with the block ``[start, start + length)`` moved before position ``to``."""
    block = words[start : start + length]
    if to < start:
        return words[:to] + block + words[to:start] + words[start + length :]
    if to > start + length:
        return words[:start] + words[start + length : to] + block + words[to:]
    return words[:start] + words[start + length : length + to] + block + words[length + to :]


def _best_shift(rows: list[str], cols: list[str], distance: _Distance, checked: int) -> tuple[int, list[str], int]:
    """The gain of the best block shift of ``rows``, the shifted words, and the candidates checked so far."""
    edits, ops = distance(rows)
    column_to_row, row_errors, column_errors = _alignment(ops)
    best: tuple[int, int, int, int, list[str]] | None = None
    for start in range(len(rows)):
        for col in range(len(cols)):
            if abs(col - start) > _MAX_SHIFT_DIST:
                continue
            for length in range(1, _MAX_SHIFT_SIZE + 1):
                if rows[start + length - 1] != cols[col + length - 1]:
                    break
                # a block that already matches, or that lands where it already is, is no shift
                if (
                    sum(row_errors[start : start + length]) and sum(column_errors[col : col + length])
                    and not start <= column_to_row[col] < start + length
                ):
                    previous = -1
                    for offset in range(-1, length):
                        if col + offset == -1:
                            to = 0
                        elif col + offset in column_to_row:
                            to = column_to_row[col + offset] + 1
                        else:
                            break
                        if to == previous:
                            continue
                        previous = to
                        shifted = _shift(rows, start, length, to)
                        candidate = (edits - distance(shifted)[0], length, -start, -to, shifted)
                        checked += 1
                        if best is None or candidate > best:
                            best = candidate
                if checked >= _MAX_SHIFT_CANDIDATES:
                    return (0, rows, checked) if best is None else (best[0], best[4], checked)
                if start + length == len(rows) or col + length == len(cols):
                    break
    return (0, rows, checked) if best is None else (best[0], best[4], checked)


def ter_edits(hypothesis: list[str], reference: list[str]) -> int:
    """The tercom edit count: shifts of ``hypothesis`` applied greedily, plus the Levenshtein distance left."""
    if not reference:
        return len(hypothesis)  # every hypothesis word is an insertion (sacrebleu's special case)
    distance = _Distance(reference)
    shifts = checked = 0
    words = hypothesis
    while True:
        gain, moved, checked = _best_shift(words, reference, distance, checked)
        if checked >= _MAX_SHIFT_CANDIDATES or gain <= 0:
            break
        shifts += 1
        words = moved
    return shifts + distance(words)[0]


def _ratio(edits: float, length: float) -> float:
    if length > 0 and edits > 0:
        return edits / length
    return 1.0 if edits > 0 else 0.0


class TranslationEditRate(Metric):
    """Translation edit rate: edits (shifts included) over the mean reference length, summed over the corpus.

    ``sacrebleu.metrics.TER``'s value as a fraction (not percent), with
    TorchMetrics' arguments and inputs; it can differ from TorchMetrics 1.9's
    value, which departs from sacrebleu (see the module). Each sentence takes its reference with the
    fewest edits, and adds the mean length of its references. ``lowercase``,
    ``normalize``, ``no_punctuation`` and ``asian_support`` are tercom's
    tokenization options. With ``return_sentence_level_score``, ``compute``
    returns ``(corpus TER, a tensor of every sentence's TER)``, sentences in
    the order seen, rank by rank.

    Examples:
        >>> from scopedmetrics.text import TranslationEditRate
        >>> preds = ["the cat is on the mat"]
        >>> target = [["there is a cat on the mat", "a cat is on the mat"]]
        >>> TranslationEditRate().update(preds, target).compute()
        tensor(0.1538)
    """

    normalize: bool = static(default=False)
    no_punctuation: bool = static(default=False)
    lowercase: bool = static(default=True)
    asian_support: bool = static(default=False)
    return_sentence_level_score: bool = static(default=False)
    total_num_edits: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    total_tgt_len: torch.Tensor = state("sum", default=lambda: torch.zeros((), dtype=torch.float64))
    sentence_ter: torch.Tensor = state("cat", default=lambda: torch.zeros(0, dtype=torch.float32))

    def __post_init__(self) -> None:
        for name in ("normalize", "no_punctuation", "lowercase", "asian_support", "return_sentence_level_score"):
            _checks.check_bool(self, name)

    def _tokens(self, sentence: str) -> list[str]:
        return tercom_tokens(sentence, self.normalize, self.no_punctuation, self.lowercase, self.asian_support)

    def update(self, preds: str | Sequence[str], target: Sequence[str | Sequence[str]]) -> Self:
        """Fold in predictions and, per prediction, one reference or a sequence of references."""
        p, refs = references(self, preds, target)
        if not all(refs):
            raise ValueError(f"{_checks.where(self)}: argument `target` holds no reference for a prediction")
        if not p:
            return self
        edits_sum = length_sum = 0.0
        sentences = []
        for pred, candidates in zip(p, refs):
            words = self._tokens(pred)
            ref_words = [self._tokens(r) for r in candidates]
            edits = min(ter_edits(words, r) for r in ref_words)
            length = sum(len(r) for r in ref_words) / len(ref_words)
            edits_sum += edits
            length_sum += length
            sentences.append(_ratio(edits, length))
        new = self.replace(
            total_num_edits=self.total_num_edits + edits_sum, total_tgt_len=self.total_tgt_len + length_sum
        )
        if self.return_sentence_level_score:
            new = new.append(sentence_ter=torch.tensor(sentences, dtype=torch.float32))
        return new

    def compute(self) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Corpus TER (1 when there are edits but no reference words; 0 before any sentence)."""
        value = torch.tensor(_ratio(float(self.total_num_edits), float(self.total_tgt_len)), dtype=torch.float32)
        if self.return_sentence_level_score:
            return value, self.sentence_ter
        return value
