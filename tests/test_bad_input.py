"""Bad input to every catalogue metric: refused clearly, or accepted as documented, never half-applied.

For every metric and every kind of bad batch that applies to its inputs, the
test asserts what the metric does: it raises ``ValueError`` or ``TypeError``
whose message names the metric class and the argument, or it accepts the batch
(as a no-op for an empty batch). Either way the metric it was called on holds
exactly the state it held before (its ``state_dict`` tensors are compared), and
feeding it the next good batch gives the state of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
import torch
from catalogue import CATALOGUE, FAMILY_KINDS, C, Entry, L, assert_same_state, data, state_of

import scopedmetrics as sm
from scopedmetrics import _checks
from scopedmetrics.classification import inputs

NAN, INF = float("nan"), float("inf")
N = 6  # rows of a bad batch

SCORES_ONLY = ("ROC", "PrecisionRecallCurve", "AUROC", "AveragePrecision", "CalibrationError", "HingeLoss",
               "AtFixed", "AtSpecificity", "AtSensitivity", "CoverageError", "Ranking")
"""Classification metrics that take float scores only (curves, operating points, calibration, hinge and label
ranking); the others also take labels."""
FLAT = ("MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "RootMeanSquaredError")
"""Single-output regression entries that flatten inputs of any equal shape, as TorchMetrics does."""


@dataclasses.dataclass(frozen=True)
class Expect:
    """What a metric does with a bad batch: raise ``error`` naming ``arg``, or accept (``error is None``)."""

    error: type[Exception] | None = None
    arg: str = ""
    noop: bool = False  # accepted and the state is unchanged
    warns: bool = False  # accepted with a warning


def refuse(error: type[Exception], arg: str) -> Expect:
    return Expect(error, arg)


ACCEPT, NOOP = Expect(), Expect(noop=True)


def _names(e: Entry) -> tuple[str, str]:
    return ("p", "q") if e.kind in ("dist", "logdist") else ("preds", "target")


def _scores_only(e: Entry) -> bool:
    return any(s in e.id for s in SCORES_ONLY)


def _with(x: torch.Tensor, value: float) -> torch.Tensor:
    """``x`` as float with its first element set to ``value``."""
    y = x.clone().float()
    y.view(-1)[0] = value
    return y


def case(e: Entry, name: str) -> tuple[tuple[Any, ...], Expect] | None:
    """The bad arguments of case ``name`` for entry ``e`` and what the metric must do; ``None`` if n/a."""
    if e.kind in FAMILY_KINDS:  # strings, rankings, images, boxes: their own test files refuse their bad inputs
        return None
    good = data(e.kind, N, seed=7)
    if e.kind == "value":
        return _value_case(e, name, good[0])
    p, t = good
    first, second = _names(e)
    classification = e.kind in ("binary", "multiclass", "multilabel")
    common: dict[str, tuple[tuple[Any, ...], Expect]] = {
        "preds_not_a_tensor": ((p.tolist(), t), refuse(TypeError, first)),
        "target_not_a_tensor": ((p, t.tolist()), refuse(TypeError, second)),
        "preds_is_none": ((None, t), refuse(TypeError, first)),
        "complex_preds": ((p.to(torch.complex64), t), refuse(TypeError, first)),
        "mismatched_lengths": ((p[1:], t), refuse(ValueError, first)),
        "empty_batch": ((p[:0], t[:0]), NOOP),
    }
    if name in common:
        return common[name]
    if classification:
        return _classification_case(e, name, p, t)
    # regression
    if name == "nan_preds":
        return (_with(p, NAN), t), refuse(ValueError, first)
    if name == "nan_target":
        return (p, _with(t, NAN)), refuse(ValueError, second)
    if name == "inf_preds":  # (for log-probabilities +inf is refused; -inf, probability 0, is valid)
        return (_with(p, INF), t), refuse(ValueError, first)
    if name == "wrong_ndim":
        if e.kind in ("rows", "dist", "logdist"):
            return (p.reshape(-1), t.reshape(-1)), refuse(ValueError, first)
        if e.kind == "pair2":
            return (p[:, :1], t[:, :1]), refuse(ValueError, first)
        if e.id in FLAT:
            return (p.reshape(2, 3), t.reshape(2, 3)), ACCEPT
        return (p.reshape(2, 3), t.reshape(2, 3)), refuse(ValueError, first)
    if name == "integer_inputs":  # cast to the state's float dtype
        return ((p * 10).round().long() + 1, (t * 10).round().long() + 1), ACCEPT
    if name == "negative_probabilities" and e.kind == "dist":
        return (-p, t), refuse(ValueError, first)
    if name == "row_summing_to_zero" and e.kind == "dist":
        return (p * 0, t), refuse(ValueError, first)
    return None


def _classification_case(e: Entry, name: str, p: torch.Tensor, t: torch.Tensor) -> Any:
    scores_only = _scores_only(e)
    top = {"binary": 2, "multiclass": C, "multilabel": 2}[e.kind]
    labels = p.argmax(1) if e.kind == "multiclass" else (p > 0.5).long()
    if name == "nan_preds":
        return (_with(p, NAN), t), refuse(ValueError, "preds")
    if name == "inf_preds":
        # A logit of +inf is a certain prediction where scores become labels (or sigmoid probabilities);
        # curves refuse non-finite scores, and a softmax over +inf is NaN.
        accepted = not scores_only or e.id == "BinaryCalibrationError"
        return (_with(p, INF), t), ACCEPT if accepted else refuse(ValueError, "preds")
    if name == "bool_target":  # bool labels are 0/1 labels
        return (p, t.bool()), ACCEPT
    if name == "float_target":  # whole-number floats are labels, as TorchMetrics takes them
        return (p, t.float()), ACCEPT
    if name == "fraction_target":
        return (p, t.float() + 0.5), refuse(TypeError, "target")
    if name == "nan_target":
        return (p, _with(t, NAN)), refuse(TypeError, "target")
    if name == "target_out_of_range":
        return (p, t.clone().index_fill_(0, torch.tensor([0]), top)), refuse(ValueError, "target")
    if name == "target_negative":
        return (p, t.clone().index_fill_(0, torch.tensor([0]), -3)), refuse(ValueError, "target")
    if name == "label_preds":
        if scores_only:
            return (labels, t), refuse(TypeError, "preds")
        if "top2" in e.id:
            return (labels, t), refuse(ValueError, "preds")
        return (labels, t), ACCEPT
    if name == "label_preds_out_of_range":
        bad = torch.full_like(t, top)
        # multilabel curves check the range before the dtype; the other scores-only metrics the dtype
        error = TypeError if scores_only and e.kind != "multilabel" else ValueError
        return (bad, t), refuse(error, "preds")
    if name == "wrong_width" and e.kind == "multiclass":
        return (torch.rand(N, C + 1), t), refuse(ValueError, "preds")
    if name == "wrong_width" and e.kind == "multilabel":
        return (torch.rand(N, L + 1), torch.randint(0, 2, (N, L + 1))), refuse(ValueError, "preds")
    if name == "wrong_ndim" and e.kind != "binary":  # binary flattens any equal shapes
        return (p.reshape(-1)[:N].contiguous(), t.reshape(-1)[:N].contiguous()), refuse(ValueError, "preds")
    return None


def _value_case(e: Entry, name: str, x: torch.Tensor) -> Any:
    if name == "preds_not_a_tensor":
        return ("1.5",), refuse(TypeError, "value")
    if name == "preds_is_none":
        return (None,), refuse(TypeError, "value")
    if name == "complex_preds":
        return (x.to(torch.complex64),), refuse(TypeError, "value")
    if name == "empty_batch":
        return (x[:0],), NOOP
    if name == "nan_preds":  # the default nan_strategy="warn" drops NaNs with a warning
        return (_with(x, NAN),), Expect(warns=True)
    if name == "inf_preds":  # infinity is a value like any other for a sum, mean, max, min or cat
        return (_with(x, INF),), ACCEPT
    if name == "wrong_ndim" and e.id == "Cat":  # rows of another shape than those already held
        return (torch.ones(2, 3),), refuse(ValueError, "value")
    return None


CASES = [
    "preds_not_a_tensor", "target_not_a_tensor", "preds_is_none", "complex_preds", "mismatched_lengths",
    "empty_batch", "nan_preds", "nan_target", "inf_preds", "float_target", "fraction_target", "target_out_of_range",
    "target_negative", "label_preds", "label_preds_out_of_range", "wrong_width", "wrong_ndim",
    "negative_probabilities", "row_summing_to_zero", "integer_inputs", "bool_target",
]  # fmt: skip

PARAMS = [
    pytest.param(e, name, id=f"{e.id}-{name}")
    for e in CATALOGUE
    for name in CASES
    if (e.kind != "value" or name not in ("target_not_a_tensor", "mismatched_lengths")) and case(e, name) is not None
]


def _before_and_next(e: Entry) -> tuple[sm.Metric, tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """A metric fed a first good batch (cat states then have spare capacity), and the next good batch."""
    good = data(e.kind, 10, seed=3)
    head = tuple(a[:5] for a in good)
    tail = tuple(a[5:] for a in good)
    return e.make().update(*head), tail, good


@pytest.mark.parametrize(("entry", "name"), PARAMS)
def test_bad_batch_is_refused_clearly_or_accepted_as_documented(entry: Entry, name: str) -> None:
    args, expect = case(entry, name)  # type: ignore[misc]
    m, tail, whole = _before_and_next(entry)
    before = state_of(m)
    cls = type(m).__name__
    if expect.error is not None:
        with pytest.raises((ValueError, TypeError)) as info:
            m.update(*args)
        message = str(info.value)
        assert isinstance(info.value, expect.error), f"{type(info.value).__name__}: {message}"
        assert cls in message, f"the message does not name {cls}: {message!r}"
        assert f"`{expect.arg}`" in message or f" {expect.arg} " in message, (
            f"the message does not name the argument {expect.arg!r}: {message!r}"
        )
    else:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            new = m.update(*args)
        assert bool(seen) == expect.warns, [str(w.message) for w in seen]
        if expect.noop:
            assert_same_state(before, state_of(new))
        new.compute()  # whatever was accepted can be computed
    assert_same_state(before, state_of(m))  # the metric called on is untouched
    if expect.error is not None:  # and nothing of the refused batch lingers in it
        assert_same_state(state_of(m.update(*tail)), state_of(_fed(entry, whole)))


DATA_CASES = ("nan_preds", "nan_target", "fraction_target", "target_out_of_range", "target_negative", "inf_preds",
              "negative_probabilities", "row_summing_to_zero")
"""The cases refused by reading the values (the others by type, shape or option, at the call)."""


@pytest.mark.parametrize(("entry", "name"), PARAMS)
def test_bad_batch_is_refused_as_well_by_checks_on_the_device(
    entry: Entry, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside ``sm.device_checks()`` on an accelerator (forced here: both device predicates say so), the
    checks that read data are asynchronous asserts; every batch refused above is still refused (on the CPU
    ``torch._assert_async`` raises ``RuntimeError`` at once), naming the metric and the argument, and every
    batch accepted above gives the same state."""
    args, expect = case(entry, name)  # type: ignore[misc]
    m, _, _ = _before_and_next(entry)
    before = state_of(m)
    cls = type(m).__name__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_host = None if expect.error is not None else state_of(m.update(*args))
    monkeypatch.setattr(_checks, "_off_host", lambda x: True)
    monkeypatch.setattr(inputs, "on_device", lambda x: True)
    with sm.device_checks(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if expect.error is not None:
            with pytest.raises((ValueError, TypeError, RuntimeError)) as info:
                m.update(*args)
            message = str(info.value)
            if name in DATA_CASES:  # a check of the values: the device's assert, not a host read
                assert isinstance(info.value, RuntimeError), f"{type(info.value).__name__}: {message}"
            assert cls in message, f"the message does not name {cls}: {message!r}"
            assert f"`{expect.arg}`" in message or f" {expect.arg} " in message, message
        else:
            assert_same_state(state_of(m.update(*args)), on_host)  # type: ignore[arg-type]
    assert_same_state(before, state_of(m))


def _fed(e: Entry, whole: tuple[torch.Tensor, ...]) -> sm.Metric:
    return e.make().update(*(a[:5] for a in whole)).update(*(a[5:] for a in whole))


def test_every_metric_gets_the_common_cases() -> None:
    per_metric: dict[str, set[str]] = {}
    for p in PARAMS:
        e, name = p.values
        per_metric.setdefault(e.id, set()).add(name)  # type: ignore[union-attr]
    assert set(per_metric) == {e.id for e in CATALOGUE if e.kind not in FAMILY_KINDS}
    for id_, names in per_metric.items():
        assert {"preds_not_a_tensor", "preds_is_none", "complex_preds", "empty_batch", "nan_preds"} <= names, id_


# -- aggregation specifics: nan_strategy, weights, cat dtypes --------------------------


@pytest.mark.parametrize("cls", [sm.Sum, sm.Mean, sm.Max, sm.Min, sm.Cat])
def test_nan_strategy_error_refuses_nan_and_keeps_the_state(cls: type[sm.Metric]) -> None:
    m = cls(nan_strategy="error").update(torch.tensor([1.0, 2.0]))
    before = state_of(m)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.update: value contains NaN"):
        m.update(torch.tensor([3.0, NAN]))
    assert_same_state(before, state_of(m))


@pytest.mark.parametrize(
    ("weight", "error", "needle"),
    [
        (torch.ones(3), ValueError, "weight of shape (3,)"),
        (torch.tensor([1.0, -1.0]), ValueError, "weight must be non-negative"),
        ("heavy", TypeError, "weight"),
        (None, TypeError, "weight"),
    ],
    ids=["wrong_shape", "negative", "a_string", "none"],
)
def test_mean_refuses_bad_weights_naming_mean_and_weight(weight: Any, error: type[Exception], needle: str) -> None:
    m = sm.Mean().update(torch.tensor([1.0, 2.0]))
    before = state_of(m)
    with pytest.raises((ValueError, TypeError)) as info:
        m.update(torch.tensor([1.0, 3.0]), weight=weight)
    assert isinstance(info.value, error) and "Mean.update" in str(info.value) and needle in str(info.value), info.value
    assert_same_state(before, state_of(m))


def test_mean_drops_a_nan_value_together_with_its_weight() -> None:
    """nan_strategy="warn" drops NaN values; their weights must go with them (TorchMetrics' MeanMetric)."""
    with pytest.warns(UserWarning, match="dropping NaN"):
        m = sm.Mean().update(torch.tensor([1.0, NAN, 3.0, 5.0]), weight=torch.tensor([1.0, 1.0, 1.0, 2.0]))
    assert m.compute().item() == pytest.approx((1 + 3 + 10) / 4)


def test_mean_does_not_let_a_nan_weight_poison_the_state() -> None:
    """A NaN weight is refused under nan_strategy="error" and dropped (with its value) under "warn"."""
    with pytest.raises(ValueError, match="Mean.update: .*weight"):
        sm.Mean(nan_strategy="error").update(torch.tensor([1.0, 3.0]), weight=torch.tensor([1.0, NAN]))
    with pytest.warns(UserWarning):
        m = sm.Mean().update(torch.tensor([1.0, 3.0]), weight=torch.tensor([1.0, NAN]))
    assert m.compute().item() == pytest.approx(1.0)


@pytest.mark.parametrize("late", [torch.tensor([2.5]), 2.5], ids=["tensor", "number"])
def test_cat_does_not_truncate_floats_appended_to_integer_rows(late: Any) -> None:
    m = sm.Cat().update(torch.tensor([1, 2]))
    before = state_of(m)
    try:
        new = m.update(late)
    except (ValueError, TypeError) as err:  # refusing is fine, if it says who and what
        assert "Cat.update" in str(err) and "value" in str(err), err
        assert_same_state(before, state_of(m))
        return
    assert new.compute().tolist()[-1] == 2.5, f"2.5 was stored as {new.compute().tolist()[-1]!r}"


# -- devices ----------------------------------------------------------------------------

DEVICE_ENTRIES = [e for e in CATALOGUE if e.kind != "value" and e.kind not in FAMILY_KINDS]


@pytest.mark.skipif(not torch.cuda.is_available(), reason=(
    "needs a CUDA device: CPU-only machine. The meta device is no stand-in here: it holds no data, "
    "so every data-dependent check (ranges, NaN) fails for meta's own reasons, not the device mismatch"
))
@pytest.mark.parametrize("where", ["both_on_cuda", "preds_on_cuda"])
def test_inputs_on_another_device_are_moved_or_refused_clearly(where: str) -> None:
    """A metric on the CPU fed CUDA tensors moves them (and gets the CPU value) or refuses them clearly."""
    failures = []
    for entry in DEVICE_ENTRIES:
        m, tail, whole = _before_and_next(entry)
        before = state_of(m)
        p, t = tail
        args = (p.cuda(), t.cuda()) if where == "both_on_cuda" else (p.cuda(), t)
        try:
            new = m.update(*args)
        except (ValueError, TypeError) as err:
            named = any(f"`{a}`" in str(err) for a in ("preds", "target", "p", "q"))
            if type(m).__name__ not in str(err) or not named:
                failures.append(f"{entry.id}: {err}")
        except Exception as err:  # noqa: BLE001 - collected: any other error is a vague one
            failures.append(f"{entry.id}: {type(err).__name__}: {err}")
        else:
            try:
                assert_same_state(state_of(new.to("cpu")), state_of(_fed(entry, whole)))
            except AssertionError as err:
                failures.append(f"{entry.id}: accepted, but the state differs: {err}")
        assert_same_state(before, state_of(m))
    assert not failures, "\n".join(failures)



def test_arguments_that_do_not_bind_are_refused_naming_the_metric() -> None:
    # Python named the function that did not take them: "BinaryCounts._fold() missing 1 required positional
    # argument: 'target'", "_BinaryCurve.update() got an unexpected keyword argument 'foo'"
    p, t = torch.rand(4), torch.randint(0, 2, (4,))
    cases = [
        (lambda: sm.BinaryAccuracy().update(p), "BinaryAccuracy.update: missing 1 required positional argument"),
        (lambda: sm.BinaryAccuracy().update(p, t, foo=1), "BinaryAccuracy.update: got an unexpected keyword"),
        (lambda: sm.BinaryAUROC().update(p, t, foo=1), "BinaryAUROC.update: got an unexpected keyword"),
        (lambda: sm.Sum().update(), "Sum.update: missing 1 required positional argument: 'value'"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()
    with pytest.raises(TypeError, match="BinaryAccuracy.update: argument `preds` must be a torch.Tensor"):
        sm.BinaryAccuracy().update("x", t)  # an error raised inside update keeps its own words
