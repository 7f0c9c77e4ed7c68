"""plot(metric, value=None, ax=None): what each kind of metric draws, with the Agg backend."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics.plot import plot
from scopedmetrics.wrappers import BootStrapper, ClasswiseWrapper, MetricTracker, Sliced

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")

G = torch.Generator().manual_seed(0)
PROB = torch.rand(64, generator=G)
BIN = torch.randint(0, 2, (64,), generator=G)
SCORES = torch.rand(64, 3, generator=G)
LABELS = torch.randint(0, 3, (64,), generator=G)


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    yield
    plt.close("all")


@pytest.mark.parametrize(
    ("metric", "args", "lines", "xlabel"),
    [
        (sm.BinaryROC(), (PROB, BIN), 2, "False positive rate"),  # the curve and the chance diagonal
        (sm.BinaryROC(thresholds=5), (PROB, BIN), 2, "False positive rate"),
        (sm.MulticlassROC(3), (SCORES, LABELS), 4, "False positive rate"),
        (sm.BinaryPrecisionRecallCurve(), (PROB, BIN), 1, "Recall"),
        (sm.MulticlassPrecisionRecallCurve(3, thresholds=10), (SCORES, LABELS), 3, "Recall"),
        (sm.MultilabelROC(3), (SCORES, (SCORES > 0.5).long()), 4, "False positive rate"),
    ],
    ids=["roc", "roc-binned", "multiclass-roc", "pr", "multiclass-pr-binned", "multilabel-roc"],
)
def test_curves_are_lines(metric: sm.Metric, args: tuple[Any, ...], lines: int, xlabel: str) -> None:
    fig, ax = plot(metric.update(*args))
    assert isinstance(fig, matplotlib.figure.Figure)
    assert len(ax.get_lines()) == lines and ax.get_xlabel() == xlabel


def test_confusion_matrices_are_heat_maps() -> None:
    fig, ax = plot(sm.MulticlassConfusionMatrix(3).update(SCORES, LABELS))
    assert len(ax.get_images()) == 1 and len(ax.texts) == 9 and ax.get_ylabel() == "Target"
    fig, axes = plot(sm.MultilabelConfusionMatrix(3).update(SCORES, (SCORES > 0.4).long()))
    assert len(axes) == 3 and all(len(a.get_images()) == 1 for a in axes)
    with pytest.raises(ValueError, match="needs 3 axes"):
        plot(sm.MultilabelConfusionMatrix(3).update(SCORES, (SCORES > 0.4).long()), ax=plt.gca())
    _, mine = plt.subplots()
    fig2, ax2 = plot(sm.BinaryConfusionMatrix(normalize="true").update(PROB, BIN), ax=mine)
    assert ax2 is mine and fig2 is mine.get_figure()


def test_per_class_values_and_dicts_are_bars() -> None:
    _, ax = plot(sm.MulticlassAccuracy(3, average=None).update(SCORES, LABELS))
    assert len(ax.patches) == 3
    _, ax = plot(ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None)).update(SCORES, LABELS))
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"multiclassaccuracy_{i}" for i in range(3)]
    sliced = Sliced(sm.BinaryAccuracy(), ["a", "b", "c"]).update(PROB, BIN, slice_ids=LABELS)
    _, ax = plot(sliced)
    assert len(ax.patches) == 3
    _, ax = plot(sm.Collection(acc=sm.BinaryAccuracy(), f1=sm.BinaryF1Score()).update(PROB, BIN))
    assert len(ax.patches) == 2


def test_scalars_are_points_and_bootstraps_have_error_bars() -> None:
    _, ax = plot(sm.BinaryAccuracy().update(PROB, BIN))
    assert len(ax.get_lines()) == 1 and len(ax.texts) == 1
    boot = BootStrapper(sm.BinaryAccuracy(), num_bootstraps=20, quantile=(0.05, 0.95)).update(
        PROB, BIN, sample_ids=torch.arange(64))
    _, ax = plot(boot)
    assert len(ax.containers) == 2  # the bar and its error bar
    per_group = Sliced(BootStrapper(sm.BinaryAccuracy(), num_bootstraps=20), 3).update(
        PROB, BIN, slice_ids=LABELS, sample_ids=torch.arange(64))
    _, ax = plot(per_group)
    assert len(ax.patches) == 3


def test_a_tracker_is_a_line_over_steps_and_a_given_value_is_not_recomputed() -> None:
    t = MetricTracker(sm.BinaryAccuracy())
    for k in range(3):
        t = t.increment().update(PROB[k * 20 : k * 20 + 20], BIN[k * 20 : k * 20 + 20])
    _, ax = plot(t)
    assert len(ax.get_lines()) == 1 and len(ax.get_lines()[0].get_xdata()) == 3 and ax.get_xlabel() == "Step"
    _, ax = plot(sm.Mean(), value=torch.tensor(0.25))  # no compute: an empty metric would warn
    assert ax.get_lines()[0].get_ydata()[0] == 0.25


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'scopedmetrics\[plot\]'"):
        plot(sm.BinaryAccuracy().update(PROB, BIN))
