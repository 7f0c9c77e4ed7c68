"""Overlap metrics of semantic segmentation: mean IoU, Dice and generalized Dice.

TorchMetrics 1.9 averages these *per sample*: ``MeanIoU`` is the mean, over
every (sample, class) pair where the class occurs in the prediction or the
target, of that sample's IoU; ``DiceScore`` (``aggregation_level="samplewise"``,
its default) the mean over samples of each sample's Dice; ``GeneralizedDiceScore``
the mean over samples. Each per-sample value is computed in ``update``, so the
state is a sum of values and a count of the pairs that had one, reduced with
``"sum"``: the same on any split of the samples across processes.

The dataset-level value (one IoU or Dice per class from the pixel counts of the
whole data set, the definition of the torchvision and mmsegmentation
references) keeps int64 sums of per-class pixel counts instead: exact, however
many processes add them. ``DiceScore(aggregation_level="global")`` is that, as
in TorchMetrics; ``MeanIoU(aggregation_level="global")`` is our addition.
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from scopedmetrics import _checks
from scopedmetrics.metric import Metric
from scopedmetrics.segmentation._inputs import Counts, check_config, counts, out_classes
from scopedmetrics.state import append, state, static

Average = Literal["micro", "macro", "weighted", "none"]
_F64 = torch.float64


def _per_class_sums(m: Any, names: tuple[str, ...], per_class: bool, dtypes: tuple[torch.dtype, ...]) -> Any:
    """Zeroed ``"sum"`` leaves: ``(C',)`` when per class and the class count is known, else 0-d; none if unknown."""
    if per_class and m.num_classes is None:
        return {}
    shape = (out_classes(m.num_classes, m.include_background),) if per_class else ()
    return {n: torch.zeros(shape, dtype=d) for n, d in zip(names, dtypes)}


class MeanIoU(Metric):
    """Mean intersection over union of semantic segmentation, as TorchMetrics 1.9 computes it.

    ``preds`` and ``target`` are one-hot ``(N, C, ...)`` (bool or 0/1 integers;
    float scores are reduced with ``argmax`` over dim 1), index ``(N, ...)``
    tensors of class labels, or one of each (``input_format="mixed"``).

    With ``aggregation_level="samplewise"`` (TorchMetrics' only behaviour) the
    value is the mean of per-sample IoUs over every (sample, class) pair where
    the class occurs in the prediction or the target; with ``per_class=True``
    one such mean per class, ``-1`` for a class that never occurred.
    ``aggregation_level="global"`` (ours) instead gives each class's IoU from
    the pixel counts of the whole data set (int64 sums) and their mean over the
    classes that occurred. ``num_classes`` may be left out for one-hot inputs,
    as in TorchMetrics: the class dimension then says how many.

    Examples:
        >>> import torch
        >>> from scopedmetrics.segmentation import MeanIoU
        >>> preds = torch.tensor([[[0, 1], [1, 1]], [[0, 0], [0, 0]]])
        >>> target = torch.tensor([[[0, 1], [0, 1]], [[0, 0], [0, 1]]])
        >>> MeanIoU(num_classes=2, input_format="index").update(preds, target).compute()
        tensor(0.4792)
        >>> MeanIoU(2, per_class=True, input_format="index").update(preds, target).compute()
        tensor([0.6250, 0.3333])
        >>> MeanIoU(2, input_format="index", aggregation_level="global").update(preds, target).compute()
        tensor(0.5833)
    """

    num_classes: int | None = static(default=None)
    include_background: bool = static(default=True)
    per_class: bool = static(default=False)
    input_format: str = static(default="one-hot")
    aggregation_level: str = static(default="samplewise")
    sums: dict[str, torch.Tensor] = state("sum", init=lambda m: m._sums())
    rows: dict[str, torch.Tensor] = state("cat", init=lambda m: m._rows())

    def __post_init__(self) -> None:
        check_config(self, num_classes_optional=True)
        _checks.check_bool(self, "per_class")
        _checks.check_choice(self, "aggregation_level", ("samplewise", "global"))

    def _names(self) -> tuple[tuple[str, str], bool]:
        """The two leaves' names and whether they are per class."""
        if self.aggregation_level == "global":
            return ("inter", "union"), True
        return ("score", "count"), self.per_class

    def _sums(self) -> dict[str, torch.Tensor]:
        names, per_class = self._names()
        first = _F64 if names[0] == "score" else torch.int64
        return dict(_per_class_sums(self, names, per_class, (first, torch.int64)))

    def _rows(self) -> dict[str, torch.Tensor]:
        """Without ``num_classes``, per-class sums as long rows ``(class, a, b)``: one row per class and update."""
        if self._sums():
            return {}
        (a, b), _ = self._names()
        return {"cls": torch.zeros(0, dtype=torch.int64), a: torch.zeros(0, dtype=_F64 if a == "score" else
                torch.int64), b: torch.zeros(0, dtype=torch.int64)}

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> MeanIoU:
        """Fold in a batch of segmentations; ``self`` is unchanged."""
        (a, b), per_class = self._names()
        c = counts(self, preds, target, per_sample=a != "inter")
        union = c.pred + c.target - c.inter
        if a == "inter":
            new = {"inter": c.inter.sum(0), "union": union.sum(0)}
        else:
            valid = union > 0
            score = torch.where(valid, c.inter.to(_F64) / union.clamp(min=1).to(_F64), 0.0)
            new = {"score": score.sum(0), "count": valid.sum(0)}
            if not per_class:
                new = {k: v.sum() for k, v in new.items()}
        return self._fold(new, per_class)

    def _fold(self, new: dict[str, torch.Tensor], per_class: bool) -> MeanIoU:
        if self.sums or not per_class:
            return self.replace(sums={k: self.sums[k] + v.to(self.sums[k].dtype) for k, v in new.items()})
        # no num_classes: the class count comes with the data, so the sums are rows of (class, a, b)
        cls = torch.arange(next(iter(new.values())).shape[0])
        return self.replace(rows={"cls": append(self.rows["cls"], cls),
                                  **{k: append(self.rows[k], v.to(self.rows[k].dtype)) for k, v in new.items()}})

    def _totals(self) -> tuple[torch.Tensor, torch.Tensor]:
        (a, b), _ = self._names()
        if self.sums:
            return self.sums[a], self.sums[b]
        cls = self.rows["cls"]
        size = int(cls.max()) + 1 if cls.numel() else 0
        return tuple(torch.zeros(size, dtype=self.rows[k].dtype).index_add_(0, cls, self.rows[k])  # type: ignore[return-value]
                     for k in (a, b))

    def compute(self) -> torch.Tensor:
        """The mean IoU (or per-class IoUs, ``-1`` where a class never occurred)."""
        num, den = self._totals()
        value = num.to(_F64) / den.to(_F64)  # NaN where a class never occurred
        if self.per_class:
            return value.nan_to_num(-1.0).float()
        return (value.nanmean() if value.ndim else value).float()


def _dice(num: torch.Tensor, den: torch.Tensor, support: torch.Tensor, average: str | None) -> torch.Tensor:
    """TorchMetrics' Dice of ``(N, C)`` numerators, denominators and supports: ``(N,)``, or ``(N, C)`` unaveraged."""
    num, den, support = num.to(_F64), den.to(_F64), support.to(_F64)
    if average == "micro":
        return num.sum(-1) / den.sum(-1)  # 0 / 0 is NaN: no pixel of any class in the sample
    dice = num / den
    if average == "macro":
        return dice.nanmean(-1)
    if average == "weighted":
        weights = support / support.sum(-1, keepdim=True)
        out = (dice * weights).nansum(-1)
        return torch.where(dice.isnan().all(-1), float("nan"), out)
    return dice


class DiceScore(Metric):
    """Dice score of semantic segmentation, as TorchMetrics 1.9 computes it.

    Inputs as for :class:`MeanIoU`. Per sample and class, Dice is
    ``2 |P ∩ T| / (|P| + |T|)`` (NaN when the class is in neither); ``average``
    combines the classes (``"micro"`` pools the pixel counts, ``"macro"`` takes
    the mean over classes that occur, ``"weighted"`` weighs them by target
    pixels, ``"none"`` or ``None`` keeps them). ``aggregation_level="samplewise"``
    averages per-sample values over the samples that have one;
    ``"global"`` computes one Dice from the counts of the whole data set.

    Examples:
        >>> import torch
        >>> from scopedmetrics.segmentation import DiceScore
        >>> preds = torch.tensor([[[0, 1], [1, 1]], [[0, 0], [0, 0]]])
        >>> target = torch.tensor([[[0, 1], [0, 1]], [[0, 0], [0, 1]]])
        >>> DiceScore(num_classes=2, input_format="index").update(preds, target).compute()
        tensor(0.5810)
        >>> m = DiceScore(2, average="none", aggregation_level="global", input_format="index")
        >>> m.update(preds, target).compute()
        tensor([0.8000, 0.6667])
    """

    num_classes: int = static()
    include_background: bool = static(default=True)
    average: str | None = static(default="macro")
    aggregation_level: str = static(default="samplewise")
    input_format: str = static(default="one-hot")
    sums: dict[str, torch.Tensor] = state("sum", init=lambda m: m._sums())

    def __post_init__(self) -> None:
        check_config(self)
        _checks.check_choice(self, "average", ("micro", "macro", "weighted", "none", None))
        _checks.check_choice(self, "aggregation_level", ("samplewise", "global"))

    def _sums(self) -> dict[str, torch.Tensor]:
        if self.aggregation_level == "global":
            names: tuple[str, ...] = ("numerator", "denominator", "support")
            return dict(_per_class_sums(self, names, True, (torch.int64,) * 3))
        per_class = self.average in ("none", None)
        return dict(_per_class_sums(self, ("score", "count"), per_class, (_F64, torch.int64)))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> DiceScore:
        """Fold in a batch of segmentations; ``self`` is unchanged."""
        c: Counts = counts(self, preds, target, per_sample=self.aggregation_level != "global")
        num, den = 2 * c.inter, c.pred + c.target
        if self.aggregation_level == "global":
            new = {"numerator": num.sum(0), "denominator": den.sum(0), "support": c.target.sum(0)}
        else:
            v = _dice(num, den, c.target, self.average)
            valid = ~v.isnan()
            new = {"score": torch.where(valid, v, 0.0).sum(0), "count": valid.sum(0)}
        return self.replace(sums={k: self.sums[k] + new[k] for k in self.sums})

    def compute(self) -> torch.Tensor:
        """The Dice score (per class with ``average="none"``); NaN where it is undefined."""
        s = self.sums
        if self.aggregation_level == "global":
            value = _dice(s["numerator"][None], s["denominator"][None], s["support"][None], self.average)[0]
        else:
            value = s["score"] / s["count"].to(_F64)
        return value.float()


class GeneralizedDiceScore(Metric):
    """Generalized Dice score of semantic segmentation (Sudre et al., 2017), averaged over samples.

    Inputs as for :class:`MeanIoU`. Per sample, class ``c`` weighs
    ``w_c = 1 / |T_c|**2`` (``weight_type="square"``), ``1 / |T_c|``
    (``"simple"``) or ``1`` (``"linear"``) and the score is
    ``2 Σ w_c |P_c ∩ T_c| / Σ w_c (|P_c| + |T_c|)`` (per class with
    ``per_class=True``; 0 where the denominator is 0). A class absent from a
    sample's target has an infinite weight, which is set to 0: TorchMetrics
    replaces it with a maximum taken over its *batch*, so its value depends on
    how the samples were batched; with one sample per batch it is 0 there too.

    Examples:
        >>> import torch
        >>> from scopedmetrics.segmentation import GeneralizedDiceScore
        >>> preds = torch.tensor([[[0, 1], [1, 1]], [[0, 0], [0, 1]]])
        >>> target = torch.tensor([[[0, 1], [0, 1]], [[0, 0], [1, 1]]])
        >>> GeneralizedDiceScore(num_classes=2, input_format="index").update(preds, target).compute()
        tensor(0.7500)
    """

    num_classes: int = static()
    include_background: bool = static(default=True)
    per_class: bool = static(default=False)
    weight_type: str = static(default="square")
    input_format: str = static(default="one-hot")
    score: torch.Tensor = state("sum", init=lambda m: m._zeros())
    samples: torch.Tensor = state("sum", default=0)

    def __post_init__(self) -> None:
        check_config(self)
        _checks.check_bool(self, "per_class")
        _checks.check_choice(self, "weight_type", ("square", "simple", "linear"))

    def _zeros(self) -> torch.Tensor:
        return torch.zeros((out_classes(self.num_classes, self.include_background),) if self.per_class else (),
                           dtype=_F64)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> GeneralizedDiceScore:
        """Fold in a batch of segmentations; ``self`` is unchanged."""
        c = counts(self, preds, target)
        ts = c.target.to(_F64)
        if self.weight_type == "linear":
            w = torch.ones_like(ts)
        else:
            w = torch.where(ts > 0, 1.0 / (ts * ts if self.weight_type == "square" else ts), 0.0)
        num = 2.0 * c.inter.to(_F64) * w
        den = (c.pred + c.target).to(_F64) * w
        if not self.per_class:
            num, den = num.sum(-1), den.sum(-1)
        score = torch.where(den != 0, num / den, 0.0)
        return self.replace(score=self.score + score.sum(0), samples=self.samples + c.inter.shape[0])

    def compute(self) -> torch.Tensor:
        """The mean over samples of the generalized Dice score (per class with ``per_class=True``)."""
        return (self.score / self.samples.to(_F64)).float()
