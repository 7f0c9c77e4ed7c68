"""Drawing a metric's value with matplotlib (an optional extra): ``plot(metric, value=None, ax=None)``.

What is drawn follows from the metric and its value: a curve for ROC and
precision-recall curves (one per class for per-class curves), a heat map for
confusion matrices (one per label for multilabel ones), a line over the steps
of a ``MetricTracker``, a point with an error bar for bootstrap statistics, a
bar per entry for per-class values and dicts of scalars (``Sliced``,
``ClasswiseWrapper``, collections), and a point for a scalar. matplotlib is
imported only when something is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from scopedmetrics.metric import Metric

_BOOTSTRAP_KEYS = frozenset(("mean", "std", "quantile", "raw"))


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "scopedmetrics.plot needs matplotlib, an optional extra: pip install 'scopedmetrics[plot]' "
            "(or pip install matplotlib)"
        ) from err
    return plt


def plot(metric: Metric, value: Any = None, ax: Any = None) -> tuple[Any, Any]:
    """Draw ``value`` (default: ``metric.compute()``) on ``ax`` (default: a new figure); return ``(figure, axes)``.

    ``value`` can be passed to draw a value computed earlier without
    computing (hence reducing) again.

    Examples:
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.plot import plot
        >>> roc = sm.BinaryROC().update(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1]))
        >>> fig, ax = plot(roc)
        >>> ax.get_xlabel(), ax.get_ylabel()
        ('False positive rate', 'True positive rate')
    """
    plt = _pyplot()
    from scopedmetrics import classification as c
    from scopedmetrics.wrappers import MetricTracker

    if value is None:
        value = metric.compute_all() if isinstance(metric, MetricTracker) else metric.compute()
    name = type(metric).__name__
    if isinstance(metric, (c.BinaryROC, c.MulticlassROC, c.MultilabelROC)):
        return _curve(plt, ax, value, name, 0, 1, "False positive rate", "True positive rate", diagonal=True)
    if isinstance(metric, (c.BinaryPrecisionRecallCurve, c.MulticlassPrecisionRecallCurve,
                           c.MultilabelPrecisionRecallCurve)):
        return _curve(plt, ax, value, name, 1, 0, "Recall", "Precision", diagonal=False)
    if isinstance(metric, (c.BinaryConfusionMatrix, c.MulticlassConfusionMatrix, c.MultilabelConfusionMatrix)):
        return _heatmap(plt, ax, torch.as_tensor(value), name)
    if isinstance(metric, MetricTracker):
        return _steps(plt, ax, value, name)
    return _values(plt, ax, value, name)


def _axes(plt: Any, ax: Any) -> tuple[Any, Any]:
    if ax is None:
        fig, ax = plt.subplots()
        return fig, ax
    return ax.get_figure(), ax


def _floats(x: Any) -> list[float]:
    return [float(v) for v in torch.as_tensor(x).detach().cpu().reshape(-1).tolist()]


def _curve(plt: Any, ax: Any, value: Any, name: str, xi: int, yi: int, xlabel: str, ylabel: str,
           diagonal: bool) -> tuple[Any, Any]:
    """One line per curve: the value is ``(a, b, thresholds)`` of tensors, lists of tensors, or ``(C, T)`` rows."""
    fig, ax = _axes(plt, ax)
    xs, ys = value[xi], value[yi]
    if isinstance(xs, torch.Tensor) and xs.ndim == 1:
        ax.plot(_floats(xs), _floats(ys), label=name)
    else:
        for k, (x, y) in enumerate(zip(xs, ys)):
            ax.plot(_floats(x), _floats(y), label=f"class {k}")
        ax.legend(loc="best")
    if diagonal:
        ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_title(name)
    return fig, ax


def _heatmap(plt: Any, ax: Any, cm: torch.Tensor, name: str) -> tuple[Any, Any]:
    """A heat map of a ``(C, C)`` matrix (rows: target, columns: prediction), or one per label of ``(L, 2, 2)``."""
    if cm.ndim == 3:
        if ax is None:
            fig, axes = plt.subplots(1, cm.shape[0], figsize=(3 * cm.shape[0], 3), squeeze=False)
            axes = list(axes[0])
        else:
            if not isinstance(ax, Sequence) or len(ax) != cm.shape[0]:
                raise ValueError(f"plot: a multilabel confusion matrix needs {cm.shape[0]} axes, one per label")
            axes = list(ax)
            fig = axes[0].get_figure()
        for k, a in enumerate(axes):
            _one_heatmap(a, cm[k], f"label {k}")
        return fig, axes
    fig, ax = _axes(plt, ax)
    _one_heatmap(ax, cm, name)
    return fig, ax


def _one_heatmap(ax: Any, cm: torch.Tensor, title: str) -> None:
    data = cm.detach().cpu().double()
    rows = data.tolist()
    image = ax.imshow(rows, cmap="Blues")
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    size = data.shape[0]
    if size <= 20:  # numbers stay readable
        high = float(data.max()) if data.numel() else 0.0
        integer = not cm.is_floating_point()
        for i in range(size):
            for j in range(size):
                v = rows[i][j]
                ax.text(j, i, f"{int(v)}" if integer else f"{v:.2f}", ha="center", va="center",
                        color="white" if v > high / 2 else "black")
    ax.set_xticks(range(size))
    ax.set_yticks(range(size))
    ax.set_xlabel("Predicted")
    ax.set_ylabel("Target")
    ax.set_title(title)


def _steps(plt: Any, ax: Any, value: Any, name: str) -> tuple[Any, Any]:
    """A line over the steps of a tracker (one per key for dict values)."""
    fig, ax = _axes(plt, ax)
    series = value.items() if isinstance(value, Mapping) else [(name, value)]
    for label, v in series:
        t = torch.as_tensor(v)
        if t.ndim == 1:
            ax.plot(range(t.shape[0]), _floats(t), marker="o", label=str(label))
        else:  # (steps, C): one line per class
            for k in range(t.reshape(t.shape[0], -1).shape[1]):
                ax.plot(range(t.shape[0]), _floats(t.reshape(t.shape[0], -1)[:, k]), marker="o", label=f"{label} {k}")
    ax.set_xlabel("Step")
    ax.legend(loc="best")
    ax.set_title(name)
    return fig, ax


def _is_bootstrap(v: Any) -> bool:
    return isinstance(v, Mapping) and bool(v) and set(v) <= _BOOTSTRAP_KEYS and ("mean" in v or "quantile" in v)


def _interval(v: Mapping[str, Any]) -> tuple[float, float, float]:
    """Centre and the distances below and above it: quantiles when there are two, else the mean +- std."""
    q = _floats(v["quantile"]) if "quantile" in v else []
    centre = _floats(v["mean"])[0] if "mean" in v else (q[0] + q[-1]) / 2
    if len(q) >= 2:
        return centre, max(centre - min(q), 0.0), max(max(q) - centre, 0.0)
    spread = _floats(v["std"])[0] if "std" in v else 0.0
    return centre, spread, spread


def _flatten(value: Mapping[Any, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and not _is_bootstrap(v):
            out.update(_flatten(v, f"{key}/"))
        else:
            out[key] = v
    return out


def _values(plt: Any, ax: Any, value: Any, name: str) -> tuple[Any, Any]:
    """Bars for per-class values and dicts, a point (with an error bar for bootstrap statistics) for one value."""
    fig, ax = _axes(plt, ax)
    if _is_bootstrap(value):
        value = {name: value}
    if isinstance(value, Mapping):
        entries = _flatten(value)
        labels = list(entries)
        if all(_is_bootstrap(v) for v in entries.values()):
            centres, low, high = zip(*(_interval(v) for v in entries.values()))
            ax.bar(range(len(labels)), centres, color="tab:blue", alpha=0.6)
            ax.errorbar(range(len(labels)), centres, yerr=[low, high], fmt="o", color="black", capsize=4)
        else:
            heights = []
            for k, v in entries.items():
                t = torch.as_tensor(v)
                if t.numel() != 1:
                    raise ValueError(f"plot: {name}'s entry {k!r} is not a scalar (shape {tuple(t.shape)})")
                heights.append(float(t))
            ax.bar(range(len(labels)), heights)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=45 if len(labels) > 6 else 0, ha="right" if len(labels) > 6 else "center")
    else:
        t = torch.as_tensor(value).detach().cpu()
        if t.ndim == 0 or t.numel() == 1:
            ax.plot([0], [float(t)], marker="o", markersize=8)
            ax.annotate(f"{float(t):.4g}", (0, float(t)), textcoords="offset points", xytext=(8, 8))
            ax.set_xticks([])
        elif t.ndim == 1:
            ax.bar(range(t.shape[0]), _floats(t))
            ax.set_xticks(range(t.shape[0]))
            ax.set_xlabel("Class")
        else:
            raise ValueError(f"plot: cannot draw {name}'s value of shape {tuple(t.shape)}")
    ax.set_title(name)
    return fig, ax
