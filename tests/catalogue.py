"""Every public catalogue metric, with a constructor and a data set of the inputs it takes.

Shared by the fault, bad-input, checkpoint and soak tests. An entry's ``kind``
names its input layout; ``data(kind, n, seed)`` returns row-major tensors whose
rows are samples, so slicing every array with the same rows gives a shard.
Entries are looked up by ``id`` so gloo workers can rebuild them (constructors
are lambdas and do not pickle).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import torch

import scopedmetrics as sm
import scopedmetrics.audio as sma
import scopedmetrics.classification as smc
import scopedmetrics.clustering as smcl
import scopedmetrics.detection as smd
import scopedmetrics.image as smi
import scopedmetrics.nominal as smn
import scopedmetrics.regression as smr
import scopedmetrics.retrieval as smrt
import scopedmetrics.segmentation as sms
import scopedmetrics.text as smt
from scopedmetrics.audio.snr import scale_invariant_signal_distortion_ratio

C = 3  # classes of multiclass entries
L = 3  # labels of multilabel entries
D = 4  # columns of row-wise regression entries


@dataclasses.dataclass(frozen=True)
class Entry:
    id: str
    make: Callable[[], sm.Metric]
    kind: str


def _entries() -> list[Entry]:
    out: list[Entry] = []

    def add(id_: str, make: Callable[[], sm.Metric], kind: str) -> None:
        out.append(Entry(id_, make, kind))

    for cls in (sm.Sum, sm.Mean, sm.Max, sm.Min, sm.Cat):
        add(cls.__name__, cls, "value")
    for name in ("StatScores", "Accuracy", "Precision", "Recall", "F1Score", "Specificity",
                 "ConfusionMatrix", "MatthewsCorrCoef", "CohenKappa", "CalibrationError",
                 "ROC", "PrecisionRecallCurve", "AUROC", "AveragePrecision"):
        add(f"Binary{name}", getattr(smc, f"Binary{name}"), "binary")
    add("BinaryFBetaScore", lambda: smc.BinaryFBetaScore(beta=2.0), "binary")
    add("BinaryROC-binned", lambda: smc.BinaryROC(thresholds=5), "binary")
    add("BinaryAUROC-binned", lambda: smc.BinaryAUROC(thresholds=11, ignore_index=-1), "binary")
    add("BinaryAveragePrecision-binned", lambda: smc.BinaryAveragePrecision(thresholds=[0.2, 0.5, 0.9]), "binary")
    for name in ("StatScores", "Accuracy", "Precision", "Recall", "F1Score", "Specificity",
                 "ConfusionMatrix", "MatthewsCorrCoef", "CohenKappa", "CalibrationError",
                 "ROC", "PrecisionRecallCurve", "AUROC", "AveragePrecision"):
        cls = getattr(smc, f"Multiclass{name}")
        add(f"Multiclass{name}", functools.partial(cls, num_classes=C), "multiclass")
    add("MulticlassFBetaScore", lambda: smc.MulticlassFBetaScore(num_classes=C, beta=0.5), "multiclass")
    add("MulticlassAccuracy-top2", lambda: smc.MulticlassAccuracy(num_classes=C, top_k=2, average="micro"),
        "multiclass")
    add("MulticlassROC-binned-macro", lambda: smc.MulticlassROC(C, thresholds=6, average="macro"), "multiclass")
    add("MulticlassAUROC-binned", lambda: smc.MulticlassAUROC(C, thresholds=7, average="weighted"), "multiclass")
    for name in ("StatScores", "Accuracy", "Precision", "Recall", "F1Score", "Specificity",
                 "ConfusionMatrix", "MatthewsCorrCoef", "ROC", "PrecisionRecallCurve", "AUROC",
                 "AveragePrecision"):
        cls = getattr(smc, f"Multilabel{name}")
        add(f"Multilabel{name}", functools.partial(cls, num_labels=L), "multilabel")
    add("MultilabelFBetaScore", lambda: smc.MultilabelFBetaScore(num_labels=L, beta=2.0), "multilabel")
    add("MultilabelAveragePrecision-binned-micro",
        lambda: smc.MultilabelAveragePrecision(L, thresholds=5, average="micro"), "multilabel")
    _hinge_operating_ranking_entries(add)
    _stat_score_extra_entries(add)
    for name in ("MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "PearsonCorrCoef",
                 "ConcordanceCorrCoef", "SpearmanCorrCoef", "R2Score", "ExplainedVariance"):
        add(name, getattr(smr, name), "pair")
    add("RootMeanSquaredError", lambda: smr.MeanSquaredError(squared=False), "pair")
    add("MeanSquaredError-2", lambda: smr.MeanSquaredError(num_outputs=2), "pair2")
    add("PearsonCorrCoef-2", lambda: smr.PearsonCorrCoef(num_outputs=2), "pair2")
    add("SpearmanCorrCoef-2", lambda: smr.SpearmanCorrCoef(num_outputs=2), "pair2")
    add("R2Score-2", lambda: smr.R2Score(num_outputs=2, multioutput="raw_values"), "pair2")
    add("CosineSimilarity", smr.CosineSimilarity, "rows")
    add("CosineSimilarity-none", lambda: smr.CosineSimilarity(reduction="none"), "rows")
    add("KLDivergence", smr.KLDivergence, "dist")
    add("KLDivergence-none", lambda: smr.KLDivergence(reduction="none"), "dist")
    add("KLDivergence-log", lambda: smr.KLDivergence(log_prob=True, reduction="sum"), "logdist")
    _regression_extra_entries(add)
    _family_entries(add)
    _vision_entries(add)
    _contingency_entries(add)
    return out


def _regression_extra_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """The regression metrics after TorchMetrics' core set (flat ones take the ``REGRESSION_EXTRA_KINDS``)."""
    for name in ("MeanSquaredLogError", "SymmetricMeanAbsolutePercentageError", "WeightedMeanAbsolutePercentageError",
                 "NormalizedRootMeanSquaredError", "TweedieDevianceScore"):
        add(name, getattr(smr, name), "positive")
    add("NormalizedRootMeanSquaredError-std-2", lambda: smr.NormalizedRootMeanSquaredError("std", 2), "pair2")
    add("TweedieDevianceScore-1.5", lambda: smr.TweedieDevianceScore(1.5), "positive")
    add("MinkowskiDistance", lambda: smr.MinkowskiDistance(3), "positive")
    for name in ("LogCoshError", "RelativeSquaredError", "KendallRankCorrCoef"):
        add(name, getattr(smr, name), "pair")
    add("LogCoshError-2", lambda: smr.LogCoshError(num_outputs=2), "pair2")
    add("RelativeSquaredError-2-root", lambda: smr.RelativeSquaredError(2, False), "pair2")
    add("KendallRankCorrCoef-c-t-test-2", lambda: smr.KendallRankCorrCoef("c", True, "greater", 2), "pair2")
    add("JensenShannonDivergence", smr.JensenShannonDivergence, "dist")
    add("JensenShannonDivergence-log-none", lambda: smr.JensenShannonDivergence(True, "none"), "logdist")
    add("CriticalSuccessIndex", lambda: smr.CriticalSuccessIndex(2.0), "positive")
    add("CriticalSuccessIndex-per-sample", lambda: smr.CriticalSuccessIndex(2.0, 0), "sequences")
    add("CriticalSuccessIndex-per-position", lambda: smr.CriticalSuccessIndex(2.0, 1), "sequences")
    add("ContinuousRankedProbabilityScore", smr.ContinuousRankedProbabilityScore, "ensemble")


def _stat_score_extra_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """Negative predictive value, Hamming distance, Jaccard index (every task) and exact match."""
    for stem in ("NegativePredictiveValue", "HammingDistance", "JaccardIndex"):
        add(f"Binary{stem}", getattr(smc, f"Binary{stem}"), "binary")
        add(f"Multiclass{stem}", functools.partial(getattr(smc, f"Multiclass{stem}"), C), "multiclass")
        add(f"Multilabel{stem}", functools.partial(getattr(smc, f"Multilabel{stem}"), L), "multilabel")
    add("MulticlassHammingDistance-top2-none", lambda: smc.MulticlassHammingDistance(C, 2, "none"), "multiclass")
    add("MulticlassJaccardIndex-ignore-micro", lambda: smc.MulticlassJaccardIndex(C, "micro", 1), "multiclass")
    add("MulticlassExactMatch", lambda: smc.MulticlassExactMatch(C), "multiclass")
    add("MultilabelExactMatch", lambda: smc.MultilabelExactMatch(L, ignore_index=-1), "multilabel")


def _hinge_operating_ranking_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """Hinge losses, operating points (exact and binned) and label ranking metrics."""
    add("BinaryHingeLoss", smc.BinaryHingeLoss, "binary")
    add("BinaryHingeLoss-squared", lambda: smc.BinaryHingeLoss(squared=True, ignore_index=-1), "binary")
    add("MulticlassHingeLoss", lambda: smc.MulticlassHingeLoss(C), "multiclass")
    add("MulticlassHingeLoss-one-vs-all-squared", lambda: smc.MulticlassHingeLoss(C, True, "one-vs-all"),
        "multiclass")
    for stem in ("RecallAtFixedPrecision", "PrecisionAtFixedRecall", "SensitivityAtSpecificity",
                 "SpecificityAtSensitivity"):
        add(f"Binary{stem}", functools.partial(getattr(smc, f"Binary{stem}"), 0.5), "binary")
        add(f"Multiclass{stem}", functools.partial(getattr(smc, f"Multiclass{stem}"), C, 0.5), "multiclass")
        add(f"Multilabel{stem}", functools.partial(getattr(smc, f"Multilabel{stem}"), L, 0.5), "multilabel")
        add(f"Multiclass{stem}-binned", functools.partial(getattr(smc, f"Multiclass{stem}"), C, 0.4, thresholds=5),
            "multiclass")
    add("BinaryRecallAtFixedPrecision-binned", lambda: smc.BinaryRecallAtFixedPrecision(0.6, [0.2, 0.5, 0.9]),
        "binary")
    add("MultilabelSpecificityAtSensitivity-binned", lambda: smc.MultilabelSpecificityAtSensitivity(L, 0.7, 6),
        "multilabel")
    for name in ("MultilabelCoverageError", "MultilabelRankingAveragePrecision", "MultilabelRankingLoss"):
        add(name, functools.partial(getattr(smc, name), L), "multilabel")
    add("MultilabelRankingLoss-ignore", lambda: smc.MultilabelRankingLoss(L, ignore_index=-1), "multilabel")


def _contingency_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """The clustering and nominal metrics (their inputs are the ``CONTINGENCY_KINDS``)."""
    for name in smcl.__all__:
        add(name, getattr(smcl, name), "clusters")
    add("NormalizedMutualInfoScore-max", lambda: smcl.NormalizedMutualInfoScore("max"), "clusters")
    add("AdjustedMutualInfoScore-geometric", lambda: smcl.AdjustedMutualInfoScore("geometric"), "clusters")
    add("VMeasureScore-beta2", lambda: smcl.VMeasureScore(beta=2.0), "clusters")
    for name in ("CramersV", "TschuprowsT", "PearsonsContingencyCoefficient", "TheilsU"):
        add(name, functools.partial(getattr(smn, name), C), "nominal")
    add("CramersV-uncorrected-drop", lambda: smn.CramersV(C, False, "drop"), "nominal")
    add("FleissKappa", smn.FleissKappa, "ratings")
    add("FleissKappa-probs", lambda: smn.FleissKappa("probs"), "rater_probs")


def _family_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """The text, retrieval and audio metrics (their inputs are the ``FAMILY_KINDS``)."""
    for name in ("WordErrorRate", "CharErrorRate", "MatchErrorRate", "WordInfoLost", "WordInfoPreserved",
                 "EditDistance"):
        add(name, getattr(smt, name), "sentences")
    add("EditDistance-sum-cost2", lambda: smt.EditDistance(substitution_cost=2, reduction="sum"), "sentences")
    add("EditDistance-none", lambda: smt.EditDistance(reduction="none"), "sentences")
    for name in ("BLEUScore", "SacreBLEUScore", "CHRFScore", "TranslationEditRate", "ROUGEScore"):
        add(name, getattr(smt, name), "translations")
    add("BLEUScore-smooth-2", lambda: smt.BLEUScore(n_gram=2, smooth=True), "translations")
    add("SacreBLEUScore-char", lambda: smt.SacreBLEUScore(tokenize="char", lowercase=True), "translations")
    add("CHRFScore-chrF", lambda: smt.CHRFScore(n_word_order=0, beta=1.0), "translations")
    add("ROUGEScore-avg", lambda: smt.ROUGEScore(accumulate="avg", rouge_keys=("rouge1", "rougeL")), "translations")
    add("SQuAD", smt.SQuAD, "squad")
    add("Perplexity", lambda: smt.Perplexity(ignore_index=-100), "lm")
    add("Perplexity-loglik", lambda: smt.Perplexity(ignore_index=-100), "token_loglik")
    for name in ("RetrievalMRR", "RetrievalMAP", "RetrievalPrecision", "RetrievalRecall", "RetrievalHitRate",
                 "RetrievalRPrecision", "RetrievalFallOut"):
        add(name, getattr(smrt, name), "retrieval")
    add("RetrievalNormalizedDCG", smrt.RetrievalNormalizedDCG, "retrieval_graded")
    add("RetrievalNormalizedDCG-top3", lambda: smrt.RetrievalNormalizedDCG(top_k=3), "retrieval_graded")
    add("RetrievalMRR-top2-skip", lambda: smrt.RetrievalMRR(empty_target_action="skip", top_k=2), "retrieval")
    add("RetrievalPrecision-adaptive", lambda: smrt.RetrievalPrecision(top_k=4, adaptive_k=True), "retrieval")
    add("RetrievalRecall-median", lambda: smrt.RetrievalRecall(top_k=2, aggregation="median"), "retrieval")
    add("RetrievalAtK", lambda: smrt.RetrievalAtK(k=(1, 3)), "dense")
    for name in ("SignalNoiseRatio", "ScaleInvariantSignalNoiseRatio", "ScaleInvariantSignalDistortionRatio"):
        add(name, getattr(sma, name), "signals")
    add("SignalNoiseRatio-zero-mean", lambda: sma.SignalNoiseRatio(zero_mean=True), "signals")
    add("PermutationInvariantTraining",
        lambda: sma.PermutationInvariantTraining(scale_invariant_signal_distortion_ratio), "speakers")


def _extractor() -> torch.nn.Module:
    """The FID/KID entries' feature extractor: a seeded linear map of 3x4x4 images to 5 features."""
    g = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 5))
    for prm in net.parameters():
        prm.data = torch.randn(prm.shape, generator=g) * 0.3
    net.num_features = 5  # type: ignore[assignment]
    return net


def _vision_entries(add: Callable[[str, Callable[[], sm.Metric], str], None]) -> None:
    """The segmentation, image and detection metrics (their inputs are the ``VISION_KINDS``)."""
    add("MeanIoU", lambda: sms.MeanIoU(C, input_format="index"), "segmentation")
    add("MeanIoU-per-class-global", lambda: sms.MeanIoU(C, False, True, "index", aggregation_level="global"),
        "segmentation")
    add("DiceScore", lambda: sms.DiceScore(C, input_format="index"), "segmentation")
    add("DiceScore-weighted-global", lambda: sms.DiceScore(C, True, "weighted", "global", "index"), "segmentation")
    add("GeneralizedDiceScore", lambda: sms.GeneralizedDiceScore(C, per_class=True, input_format="index"),
        "segmentation")
    add("HausdorffDistance", lambda: sms.HausdorffDistance(C, input_format="index"), "segmentation")
    add("HausdorffDistance-directed-taxicab",
        lambda: sms.HausdorffDistance(C, True, "taxicab", [1.0, 0.5], True, "index"), "segmentation")
    add("PeakSignalNoiseRatio", lambda: smi.PeakSignalNoiseRatio(1.0), "images")
    add("PeakSignalNoiseRatio-per-image", lambda: smi.PeakSignalNoiseRatio((0.0, 1.0), dim=(1, 2, 3)), "images")
    add("StructuralSimilarityIndexMeasure", smi.StructuralSimilarityIndexMeasure, "images")
    add("MultiScaleStructuralSimilarityIndexMeasure",
        lambda: smi.MultiScaleStructuralSimilarityIndexMeasure(kernel_size=5, sigma=0.5, betas=(0.3, 0.3, 0.4)),
        "images")
    add("FrechetInceptionDistance", lambda: smi.FrechetInceptionDistance(_extractor()), "features")
    add("KernelInceptionDistance", lambda: smi.KernelInceptionDistance(_extractor(), subsets=4, subset_size=3),
        "features")
    add("MeanAveragePrecision", lambda: smd.MeanAveragePrecision(class_metrics=True), "detections")
    add("MeanAveragePrecision-micro", lambda: smd.MeanAveragePrecision(average="micro", iou_thresholds=[0.5, 0.7]),
        "detections")
    for name in ("IntersectionOverUnion", "GeneralizedIntersectionOverUnion", "DistanceIntersectionOverUnion",
                 "CompleteIntersectionOverUnion"):
        add(name, functools.partial(getattr(smd, name), class_metrics=True), "detections")


CATALOGUE: list[Entry] = _entries()
BY_ID: dict[str, Entry] = {e.id: e for e in CATALOGUE}
IDS: list[str] = [e.id for e in CATALOGUE]

ORDER_SENSITIVE = {"Cat", "CosineSimilarity-none", "KLDivergence-none", "EditDistance-none",
                   "JensenShannonDivergence-log-none", "CriticalSuccessIndex-per-sample"}
"""Entries whose value lists samples in the order seen (rank order across participants)."""


def public_classes() -> set[type]:
    """Every public metric class of the catalogue modules and the aggregation metrics."""
    dispatchers = set(smc.dispatch.__all__)  # constructors that return a task class's metric, never their own
    classes = {getattr(smc, n) for n in smc.__all__ if n not in dispatchers} | {getattr(smr, n) for n in smr.__all__}
    for family in (smt, smrt, sma, sms, smi, smd, smcl, smn):
        classes |= {getattr(family, n) for n in family.__all__}
    return classes | {sm.Sum, sm.Mean, sm.Max, sm.Min, sm.Cat}


FAMILY_KINDS = {"sentences", "translations", "squad", "lm", "token_loglik", "retrieval", "retrieval_graded",
                "dense", "signals", "speakers"}
"""Input kinds of the text, retrieval and audio entries: strings, dicts, three arrays or wider tensors, not the
``(preds, target)`` tensor pairs the generic bad-input cases are written for; their bad inputs are tested in
``tests/test_text.py``, ``tests/test_retrieval.py`` and ``tests/test_audio.py``."""

VISION_KINDS = {"segmentation", "images", "features", "detections"}
"""Input kinds of the segmentation, image and detection entries: label maps, image pairs, images with a real/fake
flag, lists of per-image dicts; their bad inputs are tested in ``tests/test_segmentation.py``,
``tests/test_image.py`` and ``tests/test_detection.py``."""
FAMILY_KINDS |= VISION_KINDS

CONTINGENCY_KINDS = {"clusters", "nominal", "ratings", "rater_probs"}
"""Input kinds of the clustering and nominal entries: cluster ids of any integer value, categories, raters' counts
or scores; their bad inputs are tested in ``tests/test_clustering.py`` and ``tests/test_nominal.py``."""
FAMILY_KINDS |= CONTINGENCY_KINDS

REGRESSION_EXTRA_KINDS = {"positive", "sequences", "ensemble"}
"""Input kinds of regression entries the generic bad-input cases do not describe: ``positive`` pairs of any equal
shape, flattened (as TorchMetrics' MSLE, SMAPE, Tweedie, ... take them, so a reshaped pair is valid), sequences of
images and ensembles with a 1-d target; their bad inputs are tested in ``tests/test_regression_extras.py``."""
FAMILY_KINDS |= REGRESSION_EXTRA_KINDS


def _contingency_data(kind: str, n: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
    if kind == "clusters":
        target = torch.randint(0, 4, (n,), generator=g) * 5 - 3
        preds = torch.where(torch.rand(n, generator=g) < 0.6, target, torch.randint(-2, 3, (n,), generator=g))
        return preds, target
    if kind == "nominal":
        target = torch.randint(0, C, (n,), generator=g)
        return torch.where(torch.rand(n, generator=g) < 0.5, target, torch.randint(0, C, (n,), generator=g)), target
    if kind == "ratings":
        return (torch.nn.functional.one_hot(torch.randint(0, C, (n, 4), generator=g), C).sum(1),)
    if kind == "rater_probs":
        return (torch.rand(n, C, 4, generator=g),)
    raise AssertionError(kind)


def _boxes(k: int, g: torch.Generator) -> torch.Tensor:
    xy = torch.rand(k, 2, generator=g) * 200
    return torch.cat([xy, xy + 4 + torch.rand(k, 2, generator=g) * 120], 1)


def _vision_data(kind: str, n: int, g: torch.Generator) -> tuple[Any, ...]:
    if kind == "segmentation":
        target = torch.randint(0, C, (n, 5, 6), generator=g)
        noise = torch.randint(0, C, (n, 5, 6), generator=g)
        return torch.where(torch.rand(n, 5, 6, generator=g) < 0.6, target, noise), target
    if kind == "images":
        target = torch.rand(n, 1, 24, 24, generator=g)
        return (target + 0.1 * torch.randn(n, 1, 24, 24, generator=g)).clamp(0, 1), target
    if kind == "features":
        return torch.rand(n, 3, 4, 4, generator=g), torch.arange(n) % 2 == 0
    if kind == "detections":
        preds, target = [], []
        for _ in range(n):
            k = int(torch.randint(0, 4, (), generator=g))
            gt = _boxes(k, g)
            moved = gt + torch.randn(k, 4, generator=g) * 6
            moved = torch.cat([moved[:, :2], torch.maximum(moved[:, 2:], moved[:, :2] + 1)], 1)  # still proper boxes
            det = torch.cat([moved, _boxes(int(torch.randint(0, 3, (), generator=g)), g)])
            target.append({"boxes": gt, "labels": torch.randint(0, C, (k,), generator=g)})
            preds.append({"boxes": det, "scores": torch.rand(det.shape[0], generator=g),
                          "labels": torch.randint(0, C, (det.shape[0],), generator=g)})
        return preds, target
    raise AssertionError(kind)


_WORDS = ("the", "a", "cat", "dog", "sat", "on", "mat", "is", "was", "red", "big", ".", ",", "it's")


def _sentences(n: int, g: torch.Generator, low: int = 0, high: int = 8) -> list[str]:
    """``n`` random sentences of ``low``..``high`` words from a small vocabulary (so n-grams match often)."""
    lengths = torch.randint(low, high + 1, (n,), generator=g).tolist()
    words = torch.randint(0, len(_WORDS), (sum(lengths),), generator=g).tolist()
    out, at = [], 0
    for k in lengths:
        out.append(" ".join(_WORDS[w] for w in words[at:at + k]))
        at += k
    return out


def _perturbed(sentence: str, g: torch.Generator) -> str:
    """``sentence`` with about a third of its words replaced and one sometimes dropped (a near translation)."""
    words = sentence.split()
    swap = torch.rand(len(words), generator=g).tolist()
    new = torch.randint(0, len(_WORDS), (len(words),), generator=g).tolist()
    out = [_WORDS[w] if r < 0.3 else x for x, r, w in zip(words, swap, new)]
    if out and float(torch.rand((), generator=g)) < 0.3:
        del out[int(torch.randint(0, len(out), (), generator=g))]
    return " ".join(out)


def _family_data(kind: str, n: int, g: torch.Generator) -> tuple[Any, ...]:
    if kind == "sentences":
        return _sentences(n, g), _sentences(n, g, low=1)
    if kind == "translations":
        counts = torch.randint(1, 4, (n,), generator=g).tolist()
        refs = _sentences(sum(counts), g, low=1)
        at = [0, *torch.tensor(counts).cumsum(0).tolist()]
        target = [refs[at[i]:at[i + 1]] for i in range(n)]
        return [_perturbed(t[0], g) for t in target], target
    if kind == "squad":
        preds, golds = _sentences(n, g, high=3), _sentences(2 * n, g, low=1, high=3)
        ids = [f"q{i}-{torch.randint(0, 10**9, (1,), generator=g).item()}" for i in range(n)]
        return ([{"prediction_text": p, "id": i} for p, i in zip(preds, ids)],
                [{"answers": {"text": golds[2 * k:2 * k + 2], "answer_start": [0, 0]}, "id": i}
                 for k, i in enumerate(ids)])
    if kind in ("lm", "token_loglik"):
        logits = torch.randn(n, 4, 7, generator=g) * 2
        target = torch.randint(0, 7, (n, 4), generator=g)
        target[torch.rand(n, 4, generator=g) < 0.2] = -100
        if kind == "lm":
            return logits, target
        picked = logits.log_softmax(-1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return picked, target
    if kind in ("retrieval", "retrieval_graded"):  # documents of random queries: a query's rows fall on many shards
        preds = torch.randn(n, generator=g)
        high = 4 if kind == "retrieval_graded" else 2
        target = torch.randint(0, high, (n,), generator=g)
        return preds, target.float() if kind == "retrieval_graded" else target, torch.randint(0, n // 4 + 2, (n,),
                                                                                                 generator=g)
    if kind == "dense":
        return torch.rand(n, 6, generator=g), torch.randint(0, 6, (n,), generator=g)
    if kind == "signals":
        target = torch.randn(n, 16, generator=g)
        return target + 0.3 * torch.randn(n, 16, generator=g), target
    if kind == "speakers":
        target = torch.randn(n, 2, 16, generator=g)
        return target.flip(1) + 0.3 * torch.randn(n, 2, 16, generator=g), target
    raise AssertionError(kind)


def _regression_extra_data(kind: str, n: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
    if kind in ("positive", "sequences"):  # positive targets, predictions off by a factor of about exp(±0.4)
        shape = (n,) if kind == "positive" else (n, 3, 4)
        target = 0.5 + 3 * torch.rand(shape, generator=g)
        return target * torch.exp(0.4 * torch.randn(shape, generator=g)), target
    if kind == "ensemble":  # five members around each observation
        target = torch.randn(n, generator=g)
        return target.unsqueeze(1) + torch.randn(n, 5, generator=g), target
    raise AssertionError(kind)


def data(kind: str, n: int, seed: int) -> tuple[torch.Tensor, ...]:
    """``n`` samples of the inputs an entry of ``kind`` takes; rows are samples (list items for text kinds)."""
    g = torch.Generator().manual_seed(seed)
    if kind in CONTINGENCY_KINDS:
        return _contingency_data(kind, n, g)
    if kind in VISION_KINDS:
        return _vision_data(kind, n, g)
    if kind in REGRESSION_EXTRA_KINDS:
        return _regression_extra_data(kind, n, g)
    if kind in FAMILY_KINDS:
        return _family_data(kind, n, g)  # type: ignore[return-value]
    if kind == "value":
        return (torch.randn(n, generator=g) * 3,)
    if kind == "binary":
        return torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)
    if kind == "multiclass":
        return torch.randn(n, C, generator=g).softmax(1), torch.randint(0, C, (n,), generator=g)
    if kind == "multilabel":
        return torch.rand(n, L, generator=g), torch.randint(0, 2, (n, L), generator=g)
    if kind in ("pair", "pair2"):
        shape = (n,) if kind == "pair" else (n, 2)
        target = torch.randn(shape, generator=g) + 2.0
        return target + 0.5 * torch.randn(shape, generator=g), target
    if kind == "rows":
        return torch.randn(n, D, generator=g), torch.randn(n, D, generator=g)
    if kind == "dist":
        return torch.rand(n, D, generator=g) + 0.05, torch.rand(n, D, generator=g) + 0.05
    if kind == "logdist":
        return torch.randn(n, D, generator=g).log_softmax(1), torch.randn(n, D, generator=g).log_softmax(1)
    raise AssertionError(kind)


def feed(m: sm.Metric, arrays: tuple[torch.Tensor, ...], rows: slice | None = None) -> sm.Metric:
    """``m`` updated once with ``rows`` of ``arrays`` (all rows by default); an empty slice is no update."""
    part = arrays if rows is None else tuple(a[rows] for a in arrays)
    if len(part[0]) == 0:  # rows of a tensor, or items of a list (text kinds)
        return m
    return m.update(*part)


def state_of(m: sm.Metric) -> dict[str, torch.Tensor]:
    """A detached copy of ``m``'s state dict, to compare with later."""
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    """Equal keys, dtypes, shapes and values (NaN equal to NaN)."""
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    for k in a:
        x, y = a[k], b[k]
        assert x.dtype == y.dtype and x.shape == y.shape, (k, x.dtype, tuple(x.shape), y.dtype, tuple(y.shape))
        assert torch.equal(x, y) or bool(((x == y) | (x.isnan() & y.isnan())).all()), k
