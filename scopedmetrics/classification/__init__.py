"""Classification metrics: stat scores, confusion matrices, calibration, curves, and task dispatchers.

Class names, arguments (in TorchMetrics' positional order, see ``signature``)
and input conventions follow TorchMetrics; see ``docs/classification.md`` for
the input formats and each metric's state.
"""

from scopedmetrics.classification.calibration import BinaryCalibrationError as BinaryCalibrationError
from scopedmetrics.classification.calibration import MulticlassCalibrationError as MulticlassCalibrationError
from scopedmetrics.classification.confusion import BinaryCohenKappa as BinaryCohenKappa
from scopedmetrics.classification.confusion import BinaryConfusionMatrix as BinaryConfusionMatrix
from scopedmetrics.classification.confusion import BinaryJaccardIndex as BinaryJaccardIndex
from scopedmetrics.classification.confusion import BinaryMatthewsCorrCoef as BinaryMatthewsCorrCoef
from scopedmetrics.classification.confusion import MulticlassCohenKappa as MulticlassCohenKappa
from scopedmetrics.classification.confusion import MulticlassConfusionMatrix as MulticlassConfusionMatrix
from scopedmetrics.classification.confusion import MulticlassJaccardIndex as MulticlassJaccardIndex
from scopedmetrics.classification.confusion import MulticlassMatthewsCorrCoef as MulticlassMatthewsCorrCoef
from scopedmetrics.classification.confusion import MultilabelConfusionMatrix as MultilabelConfusionMatrix
from scopedmetrics.classification.confusion import MultilabelJaccardIndex as MultilabelJaccardIndex
from scopedmetrics.classification.confusion import MultilabelMatthewsCorrCoef as MultilabelMatthewsCorrCoef
from scopedmetrics.classification.curves import BinaryAUROC as BinaryAUROC
from scopedmetrics.classification.curves import BinaryAveragePrecision as BinaryAveragePrecision
from scopedmetrics.classification.curves import BinaryPrecisionRecallCurve as BinaryPrecisionRecallCurve
from scopedmetrics.classification.curves import BinaryROC as BinaryROC
from scopedmetrics.classification.curves import MulticlassAUROC as MulticlassAUROC
from scopedmetrics.classification.curves import MulticlassAveragePrecision as MulticlassAveragePrecision
from scopedmetrics.classification.curves import (
    MulticlassPrecisionRecallCurve as MulticlassPrecisionRecallCurve,
)
from scopedmetrics.classification.curves import MulticlassROC as MulticlassROC
from scopedmetrics.classification.curves import MultilabelAUROC as MultilabelAUROC
from scopedmetrics.classification.curves import MultilabelAveragePrecision as MultilabelAveragePrecision
from scopedmetrics.classification.curves import (
    MultilabelPrecisionRecallCurve as MultilabelPrecisionRecallCurve,
)
from scopedmetrics.classification.curves import MultilabelROC as MultilabelROC
from scopedmetrics.classification.dispatch import AUROC as AUROC
from scopedmetrics.classification.dispatch import ROC as ROC
from scopedmetrics.classification.dispatch import Accuracy as Accuracy
from scopedmetrics.classification.dispatch import AveragePrecision as AveragePrecision
from scopedmetrics.classification.dispatch import CalibrationError as CalibrationError
from scopedmetrics.classification.dispatch import CohenKappa as CohenKappa
from scopedmetrics.classification.dispatch import ConfusionMatrix as ConfusionMatrix
from scopedmetrics.classification.dispatch import ExactMatch as ExactMatch
from scopedmetrics.classification.dispatch import F1Score as F1Score
from scopedmetrics.classification.dispatch import FBetaScore as FBetaScore
from scopedmetrics.classification.dispatch import HammingDistance as HammingDistance
from scopedmetrics.classification.dispatch import HingeLoss as HingeLoss
from scopedmetrics.classification.dispatch import JaccardIndex as JaccardIndex
from scopedmetrics.classification.dispatch import MatthewsCorrCoef as MatthewsCorrCoef
from scopedmetrics.classification.dispatch import NegativePredictiveValue as NegativePredictiveValue
from scopedmetrics.classification.dispatch import Precision as Precision
from scopedmetrics.classification.dispatch import PrecisionAtFixedRecall as PrecisionAtFixedRecall
from scopedmetrics.classification.dispatch import PrecisionRecallCurve as PrecisionRecallCurve
from scopedmetrics.classification.dispatch import Recall as Recall
from scopedmetrics.classification.dispatch import RecallAtFixedPrecision as RecallAtFixedPrecision
from scopedmetrics.classification.dispatch import SensitivityAtSpecificity as SensitivityAtSpecificity
from scopedmetrics.classification.dispatch import Specificity as Specificity
from scopedmetrics.classification.dispatch import SpecificityAtSensitivity as SpecificityAtSensitivity
from scopedmetrics.classification.dispatch import StatScores as StatScores
from scopedmetrics.classification.hinge import BinaryHingeLoss as BinaryHingeLoss
from scopedmetrics.classification.hinge import MulticlassHingeLoss as MulticlassHingeLoss
from scopedmetrics.classification.operating import BinaryPrecisionAtFixedRecall as BinaryPrecisionAtFixedRecall
from scopedmetrics.classification.operating import BinaryRecallAtFixedPrecision as BinaryRecallAtFixedPrecision
from scopedmetrics.classification.operating import BinarySensitivityAtSpecificity as BinarySensitivityAtSpecificity
from scopedmetrics.classification.operating import BinarySpecificityAtSensitivity as BinarySpecificityAtSensitivity
from scopedmetrics.classification.operating import MulticlassPrecisionAtFixedRecall as MulticlassPrecisionAtFixedRecall
from scopedmetrics.classification.operating import MulticlassRecallAtFixedPrecision as MulticlassRecallAtFixedPrecision
from scopedmetrics.classification.operating import (
    MulticlassSensitivityAtSpecificity as MulticlassSensitivityAtSpecificity,
)
from scopedmetrics.classification.operating import (
    MulticlassSpecificityAtSensitivity as MulticlassSpecificityAtSensitivity,
)
from scopedmetrics.classification.operating import MultilabelPrecisionAtFixedRecall as MultilabelPrecisionAtFixedRecall
from scopedmetrics.classification.operating import MultilabelRecallAtFixedPrecision as MultilabelRecallAtFixedPrecision
from scopedmetrics.classification.operating import (
    MultilabelSensitivityAtSpecificity as MultilabelSensitivityAtSpecificity,
)
from scopedmetrics.classification.operating import (
    MultilabelSpecificityAtSensitivity as MultilabelSpecificityAtSensitivity,
)
from scopedmetrics.classification.ranking import MultilabelCoverageError as MultilabelCoverageError
from scopedmetrics.classification.ranking import MultilabelRankingAveragePrecision as MultilabelRankingAveragePrecision
from scopedmetrics.classification.ranking import MultilabelRankingLoss as MultilabelRankingLoss
from scopedmetrics.classification.stat_scores import BinaryAccuracy as BinaryAccuracy
from scopedmetrics.classification.stat_scores import BinaryF1Score as BinaryF1Score
from scopedmetrics.classification.stat_scores import BinaryFBetaScore as BinaryFBetaScore
from scopedmetrics.classification.stat_scores import BinaryHammingDistance as BinaryHammingDistance
from scopedmetrics.classification.stat_scores import BinaryNegativePredictiveValue as BinaryNegativePredictiveValue
from scopedmetrics.classification.stat_scores import BinaryPrecision as BinaryPrecision
from scopedmetrics.classification.stat_scores import BinaryRecall as BinaryRecall
from scopedmetrics.classification.stat_scores import BinarySpecificity as BinarySpecificity
from scopedmetrics.classification.stat_scores import BinaryStatScores as BinaryStatScores
from scopedmetrics.classification.stat_scores import MulticlassAccuracy as MulticlassAccuracy
from scopedmetrics.classification.stat_scores import MulticlassExactMatch as MulticlassExactMatch
from scopedmetrics.classification.stat_scores import MulticlassF1Score as MulticlassF1Score
from scopedmetrics.classification.stat_scores import MulticlassFBetaScore as MulticlassFBetaScore
from scopedmetrics.classification.stat_scores import MulticlassHammingDistance as MulticlassHammingDistance
from scopedmetrics.classification.stat_scores import (
    MulticlassNegativePredictiveValue as MulticlassNegativePredictiveValue,
)
from scopedmetrics.classification.stat_scores import MulticlassPrecision as MulticlassPrecision
from scopedmetrics.classification.stat_scores import MulticlassRecall as MulticlassRecall
from scopedmetrics.classification.stat_scores import MulticlassSpecificity as MulticlassSpecificity
from scopedmetrics.classification.stat_scores import MulticlassStatScores as MulticlassStatScores
from scopedmetrics.classification.stat_scores import MultilabelAccuracy as MultilabelAccuracy
from scopedmetrics.classification.stat_scores import MultilabelExactMatch as MultilabelExactMatch
from scopedmetrics.classification.stat_scores import MultilabelF1Score as MultilabelF1Score
from scopedmetrics.classification.stat_scores import MultilabelFBetaScore as MultilabelFBetaScore
from scopedmetrics.classification.stat_scores import MultilabelHammingDistance as MultilabelHammingDistance
from scopedmetrics.classification.stat_scores import (
    MultilabelNegativePredictiveValue as MultilabelNegativePredictiveValue,
)
from scopedmetrics.classification.stat_scores import MultilabelPrecision as MultilabelPrecision
from scopedmetrics.classification.stat_scores import MultilabelRecall as MultilabelRecall
from scopedmetrics.classification.stat_scores import MultilabelSpecificity as MultilabelSpecificity
from scopedmetrics.classification.stat_scores import MultilabelStatScores as MultilabelStatScores

__all__ = [
    "AUROC",
    "Accuracy",
    "AveragePrecision",
    "CalibrationError",
    "CohenKappa",
    "ConfusionMatrix",
    "F1Score",
    "FBetaScore",
    "MatthewsCorrCoef",
    "Precision",
    "PrecisionRecallCurve",
    "ROC",
    "Recall",
    "Specificity",
    "StatScores",
    "BinaryAUROC",
    "BinaryAccuracy",
    "BinaryAveragePrecision",
    "BinaryCalibrationError",
    "BinaryCohenKappa",
    "BinaryConfusionMatrix",
    "BinaryF1Score",
    "BinaryFBetaScore",
    "BinaryMatthewsCorrCoef",
    "BinaryPrecision",
    "BinaryPrecisionRecallCurve",
    "BinaryROC",
    "BinaryRecall",
    "BinarySpecificity",
    "BinaryStatScores",
    "MulticlassAUROC",
    "MulticlassAccuracy",
    "MulticlassAveragePrecision",
    "MulticlassCalibrationError",
    "MulticlassCohenKappa",
    "MulticlassConfusionMatrix",
    "MulticlassF1Score",
    "MulticlassFBetaScore",
    "MulticlassMatthewsCorrCoef",
    "MulticlassPrecision",
    "MulticlassPrecisionRecallCurve",
    "MulticlassROC",
    "MulticlassRecall",
    "MulticlassSpecificity",
    "MulticlassStatScores",
    "MultilabelAUROC",
    "MultilabelAccuracy",
    "MultilabelAveragePrecision",
    "MultilabelConfusionMatrix",
    "MultilabelF1Score",
    "MultilabelFBetaScore",
    "MultilabelMatthewsCorrCoef",
    "MultilabelPrecision",
    "MultilabelPrecisionRecallCurve",
    "MultilabelROC",
    "MultilabelRecall",
    "MultilabelSpecificity",
    "MultilabelStatScores",
    "ExactMatch",
    "HammingDistance",
    "JaccardIndex",
    "NegativePredictiveValue",
    "BinaryHammingDistance",
    "BinaryNegativePredictiveValue",
    "MulticlassExactMatch",
    "MulticlassHammingDistance",
    "MulticlassNegativePredictiveValue",
    "MultilabelExactMatch",
    "MultilabelHammingDistance",
    "MultilabelNegativePredictiveValue",
    "BinaryJaccardIndex",
    "MulticlassJaccardIndex",
    "MultilabelJaccardIndex",
    "HingeLoss",
    "PrecisionAtFixedRecall",
    "RecallAtFixedPrecision",
    "SensitivityAtSpecificity",
    "SpecificityAtSensitivity",
    "BinaryHingeLoss",
    "MulticlassHingeLoss",
    "BinaryPrecisionAtFixedRecall",
    "BinaryRecallAtFixedPrecision",
    "BinarySensitivityAtSpecificity",
    "BinarySpecificityAtSensitivity",
    "MulticlassPrecisionAtFixedRecall",
    "MulticlassRecallAtFixedPrecision",
    "MulticlassSensitivityAtSpecificity",
    "MulticlassSpecificityAtSensitivity",
    "MultilabelPrecisionAtFixedRecall",
    "MultilabelRecallAtFixedPrecision",
    "MultilabelSensitivityAtSpecificity",
    "MultilabelSpecificityAtSensitivity",
    "MultilabelCoverageError",
    "MultilabelRankingAveragePrecision",
    "MultilabelRankingLoss",
]
