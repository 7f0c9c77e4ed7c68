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

import torch

import scopedmetrics as sm
import scopedmetrics.classification as smc
import scopedmetrics.regression as smr

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
    return out


CATALOGUE: list[Entry] = _entries()
BY_ID: dict[str, Entry] = {e.id: e for e in CATALOGUE}
IDS: list[str] = [e.id for e in CATALOGUE]

ORDER_SENSITIVE = {"Cat", "CosineSimilarity-none", "KLDivergence-none"}
"""Entries whose value lists samples in the order seen (rank order across participants)."""


def public_classes() -> set[type]:
    """Every public metric class of the catalogue modules and the aggregation metrics."""
    classes = {getattr(smc, n) for n in smc.__all__} | {getattr(smr, n) for n in smr.__all__}
    return classes | {sm.Sum, sm.Mean, sm.Max, sm.Min, sm.Cat}


def data(kind: str, n: int, seed: int) -> tuple[torch.Tensor, ...]:
    """``n`` samples of the inputs an entry of ``kind`` takes; rows are samples."""
    g = torch.Generator().manual_seed(seed)
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
    if part[0].shape[0] == 0:
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
