"""Nominal (categorical) association and rater agreement, named and called as in TorchMetrics.

The association metrics keep an int64 ``"sum"`` contingency table of
``(num_classes, num_classes)``; ``FleissKappa`` keeps the sums of its formula.
"""

from scopedmetrics.nominal.association import CramersV as CramersV
from scopedmetrics.nominal.association import FleissKappa as FleissKappa
from scopedmetrics.nominal.association import PearsonsContingencyCoefficient as PearsonsContingencyCoefficient
from scopedmetrics.nominal.association import TheilsU as TheilsU
from scopedmetrics.nominal.association import TschuprowsT as TschuprowsT

__all__ = [
    "CramersV",
    "FleissKappa",
    "PearsonsContingencyCoefficient",
    "TheilsU",
    "TschuprowsT",
]
