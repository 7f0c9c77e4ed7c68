"""Text metrics, named and called as in TorchMetrics: strings in, integer and float sums as the state.

Strings are processed on the CPU in ``update``; the state is tensors only
(edit counts, n-gram match counts, lengths, sums of sentence scores), so a
text metric reduces in the same single collective as every other metric, and
any split of a corpus gives the single-process value.
"""

from scopedmetrics.text.bleu import BLEUScore as BLEUScore
from scopedmetrics.text.bleu import SacreBLEUScore as SacreBLEUScore
from scopedmetrics.text.chrf import CHRFScore as CHRFScore
from scopedmetrics.text.error_rate import CharErrorRate as CharErrorRate
from scopedmetrics.text.error_rate import EditDistance as EditDistance
from scopedmetrics.text.error_rate import MatchErrorRate as MatchErrorRate
from scopedmetrics.text.error_rate import WordErrorRate as WordErrorRate
from scopedmetrics.text.error_rate import WordInfoLost as WordInfoLost
from scopedmetrics.text.error_rate import WordInfoPreserved as WordInfoPreserved
from scopedmetrics.text.perplexity import Perplexity as Perplexity
from scopedmetrics.text.rouge import ROUGEScore as ROUGEScore
from scopedmetrics.text.squad import SQuAD as SQuAD
from scopedmetrics.text.ter import TranslationEditRate as TranslationEditRate

__all__ = [
    "BLEUScore",
    "CHRFScore",
    "CharErrorRate",
    "EditDistance",
    "MatchErrorRate",
    "Perplexity",
    "ROUGEScore",
    "SQuAD",
    "SacreBLEUScore",
    "TranslationEditRate",
    "WordErrorRate",
    "WordInfoLost",
    "WordInfoPreserved",
]
