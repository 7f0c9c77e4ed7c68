"""_checks: one exception type per mistake, messages naming the metric and the argument."""

from __future__ import annotations

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics import _checks


class Probe(sm.Metric):
    num_classes: object = sm.static(default=3)
    average: object = sm.static(default="macro")
    flag: object = sm.static(default=True)
    beta: object = sm.static(default=1.0)


@pytest.mark.parametrize(
    ("config", "check", "error", "needle"),
    [
        ({"num_classes": "3"}, lambda m: _checks.check_int(m, "num_classes", 1), TypeError, "must be an int"),
        ({"num_classes": True}, lambda m: _checks.check_int(m, "num_classes", 1), TypeError, "must be an int"),
        ({"num_classes": 0}, lambda m: _checks.check_int(m, "num_classes", 1), ValueError, "must be at least 1"),
        ({"average": "mean"}, lambda m: _checks.check_choice(m, "average", ("macro",)), ValueError, "must be one of"),
        ({"flag": 1}, lambda m: _checks.check_bool(m, "flag"), TypeError, "must be a bool"),
        ({"beta": -1.0}, lambda m: _checks.check_number(m, "beta", 0.0), ValueError, "must lie in"),
        ({"beta": "1"}, lambda m: _checks.check_number(m, "beta", 0.0), TypeError, "must be a number"),
    ],
)
def test_configuration_mistakes(config: dict[str, object], check: object, error: type, needle: str) -> None:
    m = Probe(**config)
    with pytest.raises(error, match=f"Probe: argument `{next(iter(config))}` {needle}"):
        check(m)  # type: ignore[operator]


def test_batch_mistakes() -> None:
    m = Probe()
    with pytest.raises(TypeError, match="Probe.update: argument `preds` must be a tensor, got list"):
        _checks.tensor(m, "preds", [1.0])
    with pytest.raises(TypeError, match="must be real"):
        _checks.tensor(m, "preds", torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="`preds` and `target` must have the same shape, got \\(2,\\) and \\(3,\\)"):
        _checks.same_shape(m, "preds", torch.ones(2), "target", torch.ones(3))
    with pytest.raises(ValueError, match="`preds` must be finite"):
        _checks.finite(m, "preds", torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match=r"labels in \[0, 3\) or the ignore_index -1, got values in \[0, 5\]"):
        _checks.labels(m, "target", torch.tensor([0, 5, -1]), high=3, ignore=-1)
    with pytest.raises(ValueError, match="whole numbers if float"):
        _checks.labels(m, "target", torch.tensor([0.5]))
    with pytest.raises(TypeError, match="integer labels, got torch.bool"):
        _checks.labels(m, "target", torch.tensor([True]))
    _checks.labels(m, "target", torch.tensor([0.0, 2.0, -1.0]), high=3, ignore=-1)  # whole floats are labels
    assert _checks.strings(m, "preds", ("a b", "c")) == ["a b", "c"]
    with pytest.raises(TypeError, match="a string or a sequence of strings, got list"):
        _checks.strings(m, "preds", ["a", 1])
    with pytest.raises(ValueError, match="must hold as many items, got 2 and 1"):
        _checks.same_length(m, "preds", ["a", "b"], "target", ["a"])


# -- device_checks: the checks of accelerator tensors as asynchronous asserts ------------------------


def test_device_checks_is_a_scope_nested_blocks_restore_and_threads_start_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    monkeypatch.setattr(_checks, "_off_host", lambda x: True)  # as on an accelerator
    x = torch.zeros(2)
    assert not _checks.asserting(x)
    seen: list[bool] = []
    with sm.device_checks():
        assert _checks.asserting(x)
        with sm.device_checks(enabled=False):
            assert not _checks.asserting(x)
        assert _checks.asserting(x)
        worker = threading.Thread(target=lambda: seen.append(_checks.asserting(x)))
        worker.start()
        worker.join()
    assert not _checks.asserting(x)
    assert seen == [False]  # contextvars: a new thread starts from the defaults


def test_device_checks_leave_cpu_tensors_to_the_checks_that_raise_at_once() -> None:
    m = sm.classification.MulticlassAccuracy(num_classes=3)
    with sm.device_checks(), pytest.raises(ValueError, match=r"^MulticlassAccuracy\.update: argument `target`"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, 5]))


def test_device_checks_refuses_a_non_bool() -> None:
    with pytest.raises(TypeError, match="device_checks: argument `enabled` must be a bool"), sm.device_checks(1):  # type: ignore[arg-type]
        pass


_INF, _NAN, _BIG = float("inf"), float("nan"), 3e38  # three of _BIG overflow a float32 sum


@pytest.mark.parametrize(("row", "nan_free", "finite"), [
    ([0.5, -1.0, 2.0], True, True),
    ([_BIG, _BIG, _BIG], True, True),  # the sum overflows; every term is finite
    ([_INF, 1.0, 2.0], True, False),
    ([_INF, -_INF, 2.0], True, False),  # the sum is NaN; no term is
    ([_NAN, 1.0, 2.0], False, False),
    ([-_INF, _NAN, _INF], False, False),
])
def test_the_nan_check_decides_by_the_sum_and_looks_closer_when_it_is_not_finite(
    row: list[float], nan_free: bool, finite: bool
) -> None:
    from scopedmetrics.classification import BinaryAUROC, MulticlassAccuracy

    scores, target = torch.tensor([row, [0.1, 0.2, 0.3]]), torch.tensor([0, 1])
    calls = [lambda: MulticlassAccuracy(num_classes=3).update(scores, target),  # NaN refused, infinities kept
             lambda: BinaryAUROC().update(scores.reshape(-1), torch.zeros(6, dtype=torch.long))]  # both refused
    for call, ok in zip(calls, (nan_free, finite)):
        if ok:
            call()
        else:
            with pytest.raises(ValueError, match="argument `preds` contains (NaN|non-finite values)"):
                call()


@pytest.mark.parametrize("on_device", [False, True], ids=["host", "device asserts"])
def test_labels_of_a_narrow_dtype_are_checked_against_bounds_it_cannot_hold(
    on_device: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torch compares in the tensor's dtype: against uint8 labels 299 was 43, so valid labels were refused
    from scopedmetrics.classification import MulticlassAccuracy, inputs
    from scopedmetrics.segmentation import MeanIoU

    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 256, (64,), generator=g)
    labels[:2] = torch.tensor([0, 255])
    if on_device:  # both device predicates say so: every data check is an element-wise assert
        monkeypatch.setattr(_checks, "_off_host", lambda x: True)
        monkeypatch.setattr(inputs, "on_device", lambda x: True)
    with sm.device_checks(on_device):
        _checks.labels(Probe(), "target", labels.to(torch.uint8), 300)
        _checks.labels(Probe(), "target", labels.to(torch.int8) % 100, 300, ignore=-1)
        got = MulticlassAccuracy(num_classes=300, average="micro").update(labels.to(torch.uint8), labels.flip(0))
        want = MulticlassAccuracy(num_classes=300, average="micro").update(labels, labels.flip(0))
        assert torch.equal(got.compute(), want.compute())
        masks = labels.reshape(4, 4, 4)
        got_iou = MeanIoU(num_classes=300, input_format="index").update(masks.to(torch.uint8), masks.flip(0))
        want_iou = MeanIoU(num_classes=300, input_format="index").update(masks, masks.flip(0))
        assert torch.equal(got_iou.compute(), want_iou.compute())
        with pytest.raises((ValueError, RuntimeError), match="argument `target`"):
            _checks.labels(Probe(), "target", labels.to(torch.uint8), 255)  # 255 is outside [0, 255)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), None])
def test_all_finite_finds_any_nan_or_infinity(dtype: torch.dtype, bad: float | None) -> None:
    # one aminmax for real floats: NaN must reach the extremes wherever it sits
    for where_ in (0, 517, 999):
        x = torch.rand(1000).to(dtype)
        if bad is not None:
            x[where_] = bad
        assert bool(_checks.all_finite(x)) is (bad is None)
    assert bool(_checks.all_finite(torch.empty(0, dtype=dtype)))
