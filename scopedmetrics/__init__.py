"""scopedmetrics: metrics as immutable pytrees, reduced by the reducer in scope.

The data path of ``compute()``: metric -> leaves + ops (``sync``) -> reducer
(``reducers``, ``comm``) -> leaves -> metric -> the metric's own ``compute``.
"""

from scopedmetrics import classification as classification
from scopedmetrics import clustering as clustering
from scopedmetrics import data as data
from scopedmetrics import nn as nn
from scopedmetrics import nominal as nominal
from scopedmetrics import regression as regression
from scopedmetrics import wrappers as wrappers
from scopedmetrics._checks import device_checks as device_checks
from scopedmetrics.aggregation import Cat as Cat
from scopedmetrics.aggregation import Max as Max
from scopedmetrics.aggregation import Mean as Mean
from scopedmetrics.aggregation import Min as Min
from scopedmetrics.aggregation import Sum as Sum
from scopedmetrics.classification import BinaryAccuracy as BinaryAccuracy
from scopedmetrics.classification import BinaryAUROC as BinaryAUROC
from scopedmetrics.classification import BinaryAveragePrecision as BinaryAveragePrecision
from scopedmetrics.classification import BinaryCalibrationError as BinaryCalibrationError
from scopedmetrics.classification import BinaryCohenKappa as BinaryCohenKappa
from scopedmetrics.classification import BinaryConfusionMatrix as BinaryConfusionMatrix
from scopedmetrics.classification import BinaryF1Score as BinaryF1Score
from scopedmetrics.classification import BinaryFBetaScore as BinaryFBetaScore
from scopedmetrics.classification import BinaryHammingDistance as BinaryHammingDistance
from scopedmetrics.classification import BinaryJaccardIndex as BinaryJaccardIndex
from scopedmetrics.classification import BinaryMatthewsCorrCoef as BinaryMatthewsCorrCoef
from scopedmetrics.classification import BinaryNegativePredictiveValue as BinaryNegativePredictiveValue
from scopedmetrics.classification import BinaryPrecision as BinaryPrecision
from scopedmetrics.classification import BinaryPrecisionRecallCurve as BinaryPrecisionRecallCurve
from scopedmetrics.classification import BinaryRecall as BinaryRecall
from scopedmetrics.classification import BinaryROC as BinaryROC
from scopedmetrics.classification import BinarySpecificity as BinarySpecificity
from scopedmetrics.classification import BinaryStatScores as BinaryStatScores
from scopedmetrics.classification import MulticlassAccuracy as MulticlassAccuracy
from scopedmetrics.classification import MulticlassAUROC as MulticlassAUROC
from scopedmetrics.classification import MulticlassAveragePrecision as MulticlassAveragePrecision
from scopedmetrics.classification import MulticlassCalibrationError as MulticlassCalibrationError
from scopedmetrics.classification import MulticlassCohenKappa as MulticlassCohenKappa
from scopedmetrics.classification import MulticlassConfusionMatrix as MulticlassConfusionMatrix
from scopedmetrics.classification import MulticlassExactMatch as MulticlassExactMatch
from scopedmetrics.classification import MulticlassF1Score as MulticlassF1Score
from scopedmetrics.classification import MulticlassFBetaScore as MulticlassFBetaScore
from scopedmetrics.classification import MulticlassHammingDistance as MulticlassHammingDistance
from scopedmetrics.classification import MulticlassJaccardIndex as MulticlassJaccardIndex
from scopedmetrics.classification import MulticlassMatthewsCorrCoef as MulticlassMatthewsCorrCoef
from scopedmetrics.classification import MulticlassNegativePredictiveValue as MulticlassNegativePredictiveValue
from scopedmetrics.classification import MulticlassPrecision as MulticlassPrecision
from scopedmetrics.classification import MulticlassPrecisionRecallCurve as MulticlassPrecisionRecallCurve
from scopedmetrics.classification import MulticlassRecall as MulticlassRecall
from scopedmetrics.classification import MulticlassROC as MulticlassROC
from scopedmetrics.classification import MulticlassSpecificity as MulticlassSpecificity
from scopedmetrics.classification import MulticlassStatScores as MulticlassStatScores
from scopedmetrics.classification import MultilabelAccuracy as MultilabelAccuracy
from scopedmetrics.classification import MultilabelAUROC as MultilabelAUROC
from scopedmetrics.classification import MultilabelAveragePrecision as MultilabelAveragePrecision
from scopedmetrics.classification import MultilabelConfusionMatrix as MultilabelConfusionMatrix
from scopedmetrics.classification import MultilabelExactMatch as MultilabelExactMatch
from scopedmetrics.classification import MultilabelF1Score as MultilabelF1Score
from scopedmetrics.classification import MultilabelFBetaScore as MultilabelFBetaScore
from scopedmetrics.classification import MultilabelHammingDistance as MultilabelHammingDistance
from scopedmetrics.classification import MultilabelJaccardIndex as MultilabelJaccardIndex
from scopedmetrics.classification import MultilabelMatthewsCorrCoef as MultilabelMatthewsCorrCoef
from scopedmetrics.classification import MultilabelNegativePredictiveValue as MultilabelNegativePredictiveValue
from scopedmetrics.classification import MultilabelPrecision as MultilabelPrecision
from scopedmetrics.classification import MultilabelPrecisionRecallCurve as MultilabelPrecisionRecallCurve
from scopedmetrics.classification import MultilabelRecall as MultilabelRecall
from scopedmetrics.classification import MultilabelROC as MultilabelROC
from scopedmetrics.classification import MultilabelSpecificity as MultilabelSpecificity
from scopedmetrics.classification import MultilabelStatScores as MultilabelStatScores
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
from scopedmetrics.collection import Collection as Collection
from scopedmetrics.collection import compute as compute
from scopedmetrics.collection import reduce as reduce
from scopedmetrics.errors import SyncError as SyncError
from scopedmetrics.metric import Metric as Metric
from scopedmetrics.metric import delegate as delegate
from scopedmetrics.nn import Stateful as Stateful
from scopedmetrics.reducers import Reducer as Reducer
from scopedmetrics.reducers import distributed as distributed
from scopedmetrics.reducers import local as local
from scopedmetrics.regression import ConcordanceCorrCoef as ConcordanceCorrCoef
from scopedmetrics.regression import CosineSimilarity as CosineSimilarity
from scopedmetrics.regression import ExplainedVariance as ExplainedVariance
from scopedmetrics.regression import KLDivergence as KLDivergence
from scopedmetrics.regression import MeanAbsoluteError as MeanAbsoluteError
from scopedmetrics.regression import MeanAbsolutePercentageError as MeanAbsolutePercentageError
from scopedmetrics.regression import MeanSquaredError as MeanSquaredError
from scopedmetrics.regression import PearsonCorrCoef as PearsonCorrCoef
from scopedmetrics.regression import R2Score as R2Score
from scopedmetrics.regression import SpearmanCorrCoef as SpearmanCorrCoef
from scopedmetrics.scope import get_reducer as get_reducer
from scopedmetrics.scope import reset_reducer as reset_reducer
from scopedmetrics.scope import set_reducer as set_reducer
from scopedmetrics.scope import subgroup as subgroup
from scopedmetrics.scope import use_reducer as use_reducer
from scopedmetrics.simulate import simulate as simulate
from scopedmetrics.state import NAMESPACE as NAMESPACE
from scopedmetrics.state import state as state
from scopedmetrics.state import static as static

__version__ = "0.2.0"

__all__ = [
    "Accuracy",
    "Precision",
    "Recall",
    "F1Score",
    "FBetaScore",
    "Specificity",
    "StatScores",
    "ConfusionMatrix",
    "MatthewsCorrCoef",
    "CohenKappa",
    "CalibrationError",
    "AUROC",
    "AveragePrecision",
    "ROC",
    "PrecisionRecallCurve",
    "HingeLoss",
    "PrecisionAtFixedRecall",
    "RecallAtFixedPrecision",
    "SensitivityAtSpecificity",
    "SpecificityAtSensitivity",
    "clustering",
    "nominal",
    "delegate",
    "Stateful",
    "nn",
    "data",
    "wrappers",
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
    "Cat",
    "Collection",
    "ConcordanceCorrCoef",
    "CosineSimilarity",
    "ExplainedVariance",
    "KLDivergence",
    "Max",
    "Mean",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "Metric",
    "Min",
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
    "NAMESPACE",
    "PearsonCorrCoef",
    "R2Score",
    "Reducer",
    "SpearmanCorrCoef",
    "Sum",
    "SyncError",
    "classification",
    "compute",
    "device_checks",
    "distributed",
    "get_reducer",
    "local",
    "reduce",
    "regression",
    "reset_reducer",
    "set_reducer",
    "simulate",
    "state",
    "static",
    "subgroup",
    "use_reducer",
]
