"""ClasswiseWrapper, MultitaskWrapper, Running, MultioutputWrapper, MetricTracker, MinMaxMetric vs TorchMetrics."""

from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from shards import assert_close, uneven_slices

import scopedmetrics as sm
from scopedmetrics.wrappers import (
    ClasswiseWrapper,
    MetricTracker,
    MinMaxMetric,
    MultioutputWrapper,
    MultitaskWrapper,
    Running,
)

tm = pytest.importorskip("torchmetrics")
tmc = pytest.importorskip("torchmetrics.classification")
tmw = pytest.importorskip("torchmetrics.wrappers")

N = 200
G = torch.Generator().manual_seed(0)
SCORES = torch.rand(N, 4, generator=G)
LABELS = torch.randint(0, 4, (N,), generator=G)
X = torch.randn(N, 3, generator=G)
Y = torch.randn(N, 3, generator=G)


def _sharded(metric: sm.Metric, arrays: list[Any], size: int, seed: int) -> list[Any]:
    slices = uneven_slices(N, size, seed)

    def body(rank: int) -> Any:
        m = metric.reset()
        sl = slices[rank]
        if sl.stop > sl.start:
            m = m.update(*(a[sl] for a in arrays))
        return m.compute()

    return sm.simulate(body, size)


# -- ClasswiseWrapper ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs", [{}, {"labels": ["a", "b", "c", "d"]}, {"prefix": "acc-"}, {"postfix": "/val"},
               {"labels": ["a", "b", "c", "d"], "prefix": "p_", "postfix": "_q"}],
    ids=["plain", "labels", "prefix", "postfix", "all"],
)
def test_classwise_keys_and_values_are_torchmetrics(kwargs: dict[str, Any]) -> None:
    theirs = tmw.ClasswiseWrapper(tmc.MulticlassRecall(4, average=None), **kwargs)
    theirs.update(SCORES, LABELS)
    expected = theirs.compute()
    ours = ClasswiseWrapper(sm.MulticlassRecall(4, average=None), **kwargs)
    for value in _sharded(ours, [SCORES, LABELS], 3, seed=1):
        assert list(value) == list(expected)
        assert_close(value, expected)


def test_classwise_bad_labels_and_values_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="`labels` must be None or a list of strings, got 'abc'"):
        ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None), labels="abc")
    with pytest.raises(TypeError, match="`labels` must be None or a list of strings"):
        ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None), labels=[1, 2, 3])
    with pytest.raises(ValueError, match="`labels` names 2 classes but MultilabelAccuracy has num_labels=3"):
        ClasswiseWrapper(sm.MultilabelAccuracy(3, average=None), labels=["x", "y"])
    with pytest.raises(TypeError, match="`prefix` must be None or a string"):
        ClasswiseWrapper(sm.MulticlassAccuracy(3, average=None), prefix=1)  # type: ignore[arg-type]
    macro = ClasswiseWrapper(sm.MulticlassAccuracy(3)).update(torch.tensor([0]), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"must give one value per class \(a 1-d tensor; average=None\), got \(\)"):
        macro.compute()


def test_classwise_checkpoint_and_mask() -> None:
    m = ClasswiseWrapper(sm.MulticlassAccuracy(4, average=None)).update(SCORES, LABELS)
    assert_close(ClasswiseWrapper(sm.MulticlassAccuracy(4, average=None)).load_state_dict(m.state_dict()).compute(),
                 m.compute())
    keep = LABELS != 0
    masked = ClasswiseWrapper(sm.MulticlassAccuracy(4, average=None)).update(SCORES, LABELS, mask=keep)
    plain = ClasswiseWrapper(sm.MulticlassAccuracy(4, average=None)).update(SCORES[keep], LABELS[keep])
    assert_close(masked.compute(), plain.compute())


# -- MultitaskWrapper --------------------------------------------------------------------------


def test_multitask_is_torchmetrics_and_reduces_every_task_together() -> None:
    theirs = tmw.MultitaskWrapper({"cls": tmc.MulticlassAccuracy(4), "reg": tm.MeanSquaredError()}, prefix="t_")
    theirs.update({"cls": SCORES, "reg": X[:, 0]}, {"cls": LABELS, "reg": Y[:, 0]})
    expected = theirs.compute()
    ours = MultitaskWrapper({"cls": sm.MulticlassAccuracy(4), "reg": sm.MeanSquaredError()}, prefix="t_")
    slices = uneven_slices(N, 3, seed=2)

    def body(rank: int) -> Any:
        sl = slices[rank]
        return ours.update({"cls": SCORES[sl], "reg": X[sl, 0]}, {"cls": LABELS[sl], "reg": Y[sl, 0]}).compute()

    for value in sm.simulate(body, 3):
        assert list(value) == ["t_cls", "t_reg"]
        assert_close(value, expected)


def test_multitask_nested_collections_mask_and_errors() -> None:
    m = MultitaskWrapper({"cls": sm.Collection(acc=sm.MulticlassAccuracy(4), f1=sm.MulticlassF1Score(4)),
                          "reg": sm.MeanAbsoluteError()}, postfix="_val")
    keep = torch.arange(N) % 3 != 0
    out = m.update({"cls": SCORES, "reg": X[:, 0]}, {"cls": LABELS, "reg": Y[:, 0]}, mask=keep).compute()
    assert set(out) == {"cls_val", "reg_val"} and set(out["cls_val"]) == {"acc", "f1"}
    assert_close(out["reg_val"], (X[keep, 0] - Y[keep, 0]).abs().mean())
    with pytest.raises(ValueError, match=r"must have the tasks' keys \['cls', 'reg'\], got \['cls'\] and"):
        m.update({"cls": SCORES}, {"cls": LABELS, "reg": Y[:, 0]})
    with pytest.raises(TypeError, match="`preds` must be a dict, got Tensor"):
        m.update(SCORES, {"cls": LABELS})
    with pytest.raises(TypeError, match="task 'a' is int, not a Metric"):
        MultitaskWrapper({"a": 1})
    full = m.update(preds={"cls": SCORES, "reg": X[:, 0]}, target={"cls": LABELS, "reg": Y[:, 0]})  # API.md's names
    restored = m.load_state_dict(full.state_dict())
    assert "tasks.cls.acc.stats.counts" in restored.state_dict()


# -- Running -------------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 3, 5])
def test_running_follows_torchmetrics_update_by_update(window: int) -> None:
    theirs = tmw.Running(tm.MeanMetric(), window=window)
    ours = Running(sm.Mean(), window=window)
    for i in range(8):
        batch = X[i * 10 : (i + 1) * 10, 0]
        theirs.update(batch)
        ours = ours.update(batch)
        assert_close(ours.compute(), theirs.compute())


def test_running_over_ranks_is_each_ranks_last_window_reduced_together() -> None:
    def body(rank: int) -> Any:
        m = Running(sm.BinaryAUROC(), window=2)  # cat states: a ring of metrics
        for i in range(rank + 2):
            sl = slice(rank * 60 + i * 15, rank * 60 + (i + 1) * 15)
            m = m.update(SCORES[sl, 0], (LABELS[sl] > 1).long())
        return m.compute()

    rows = torch.cat([torch.arange(r * 60 + r * 15, r * 60 + (r + 2) * 15) for r in range(3)])
    expected = sm.BinaryAUROC().update(SCORES[rows, 0], (LABELS[rows] > 1).long()).compute()
    for value in sm.simulate(body, 3):
        assert_close(value, expected)


@pytest.mark.parametrize("updates", [2, 3, 5, 7])
def test_running_rows_come_oldest_first(updates: int) -> None:
    # the slots were merged in slot order: after 5 updates to a window of 3, rows 3, 4, 2
    m = Running(sm.Cat(), window=3)
    for i in range(updates):
        m = m.update(torch.tensor([float(i), float(i)]))
    assert m.compute().tolist() == [float(i) for i in range(max(0, updates - 3), updates) for _ in range(2)]


@pytest.mark.parametrize("name", ["PearsonCorrCoef", "R2Score"])
def test_running_a_metric_with_its_own_merge_is_the_metric_of_the_last_window(name: str) -> None:
    # compute merged the reduced slots as they were and raised "cannot merge a reduced metric"
    def body(rank: int) -> Any:
        m = Running(getattr(sm, name)(), window=3)  # two merges: the second met a reduced slot
        for i in range(rank + 4):
            sl = slice(rank * 60 + i * 12, rank * 60 + (i + 1) * 12)
            m = m.update(X[sl, 0], Y[sl, 0])
        return m.compute()

    rows = torch.cat([torch.arange(r * 60 + (r + 1) * 12, r * 60 + (r + 4) * 12) for r in range(2)])
    expected = getattr(sm, name)().update(X[rows, 0], Y[rows, 0]).compute()
    for value in sm.simulate(body, 2):
        assert_close(value, expected)
    with sm.use_reducer(sm.local()):
        alone = getattr(sm, name)().update(X[12:48, 0], Y[12:48, 0]).compute()
        assert_close(body(0), alone)


def test_running_configuration_and_checkpoint() -> None:
    with pytest.raises(ValueError, match="Running: argument `window` must be at least 1, got 0"):
        Running(sm.Sum(), window=0)
    with pytest.raises(TypeError, match="Running: argument `window` must be an int, got 2.5"):
        Running(sm.Sum(), window=2.5)  # type: ignore[arg-type]
    m = Running(sm.Sum(), window=2)
    for v in (1.0, 2.0, 3.0):
        m = m.update(torch.tensor([v]))
    restored = Running(sm.Sum(), window=2).load_state_dict(m.state_dict())
    assert restored.update(torch.tensor([10.0])).compute() == torch.tensor(13.0)  # the ring continues where it was
    assert m.update(torch.tensor([5.0]), mask=torch.tensor([False])).compute() == m.compute()


# -- MultioutputWrapper --------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Metric `SpearmanCorrcoef` will save")
@pytest.mark.parametrize("remove_nans", [True, False])
def test_multioutput_is_torchmetrics(remove_nans: bool) -> None:
    preds = X.clone()
    if remove_nans:  # sm refuses NaN inputs where TorchMetrics propagates them: only the removed rows hold one
        preds[3, 1] = float("nan")
    theirs = tmw.MultioutputWrapper(tm.MeanSquaredError(), num_outputs=3, remove_nans=remove_nans)
    theirs.update(preds, Y)
    ours = MultioutputWrapper(sm.MeanSquaredError(), num_outputs=3, remove_nans=remove_nans)
    assert_close(ours.update(preds, Y).compute(), theirs.compute())
    spearman = MultioutputWrapper(sm.SpearmanCorrCoef(), num_outputs=3)  # cat states: one metric per output
    theirs_s = tmw.MultioutputWrapper(tm.SpearmanCorrCoef(), num_outputs=3)
    theirs_s.update(X, Y)
    for value in _sharded(spearman, [X, Y], 3, seed=5):
        assert_close(value, theirs_s.compute())


@pytest.mark.parametrize("name", ["BinaryF1Score", "BinaryConfusionMatrix", "BinaryAUROC"])
def test_multioutput_decides_probabilities_or_logits_per_output_as_torchmetrics(name: str) -> None:
    # the outputs were folded as groups of one batch: one column of logits put every column through a sigmoid
    preds = torch.tensor([[0.2, -2.0], [0.7, 3.0], [0.6, 0.5], [0.4, -1.0], [0.9, 0.1]])
    target = torch.tensor([[0, 0], [1, 1], [0, 1], [1, 0], [1, 1]])
    kw = {"thresholds": 5} if name == "BinaryAUROC" else {}
    ours = MultioutputWrapper(getattr(sm.classification, name)(**kw), num_outputs=2).update(preds, target)
    theirs = tmw.MultioutputWrapper(getattr(tmc, name)(**kw), num_outputs=2)
    theirs.update(preds, target)
    assert_close(ours.compute(), torch.stack(list(theirs.compute())))


def test_multioutput_other_dims_and_errors() -> None:
    preds, target = X.T.contiguous(), Y.T.contiguous()  # outputs along dim 0
    ours = MultioutputWrapper(sm.MeanAbsoluteError(), num_outputs=3, output_dim=0).update(preds, target)
    assert_close(ours.compute(), (X - Y).abs().mean(0))
    with pytest.raises(ValueError, match="must have 3 outputs along dim -1, got shape"):
        MultioutputWrapper(sm.MeanAbsoluteError(), num_outputs=3).update(X[:, :2], Y[:, :2])


# -- MetricTracker ---------------------------------------------------------------------------------


@pytest.mark.parametrize("maximize", [True, False])
def test_tracker_follows_torchmetrics(maximize: bool) -> None:
    theirs = tmw.MetricTracker(tmc.MulticlassAccuracy(4), maximize=maximize)
    ours = MetricTracker(sm.MulticlassAccuracy(4), maximize=maximize)
    for epoch in range(4):
        sl = slice(epoch * 40, epoch * 40 + 40 + 10 * epoch)
        theirs.increment()
        theirs.update(SCORES[sl], LABELS[sl])
        ours = ours.increment().update(SCORES[sl], LABELS[sl])
        assert_close(ours.compute(), theirs.compute())
    assert ours.n_steps == theirs.n_steps == 4
    assert_close(ours.compute_all(), theirs.compute_all())
    assert ours.best_metric(return_step=True) == pytest.approx(theirs.best_metric(return_step=True))
    assert ours.best_metric() == pytest.approx(theirs.best_metric())


def test_tracker_with_dict_values_in_a_world() -> None:
    base = sm.Collection(acc=sm.MulticlassAccuracy(4), mse=sm.MeanSquaredError())

    def body(rank: int) -> Any:
        t = MetricTracker(sm.Collection(acc=sm.MulticlassAccuracy(4)), maximize=True)
        for epoch in range(3):
            t = t.increment()
            if rank == 0 or epoch == 1:  # rank 1 sees data only in epoch 1
                sl = slice(epoch * 50 + rank * 25, epoch * 50 + rank * 25 + 25)
                t = t.update(SCORES[sl], LABELS[sl])
        return t.compute_all(), t.best_metric(return_step=True)

    expected = []
    for epoch in range(3):
        rows = torch.arange(epoch * 50, epoch * 50 + (50 if epoch == 1 else 25))
        expected.append(sm.MulticlassAccuracy(4).update(SCORES[rows], LABELS[rows]).compute())
    for all_steps, (_, step) in sm.simulate(body, 2):
        assert_close(all_steps["acc"], torch.stack(expected))
        assert step["acc"] == int(torch.stack(expected).argmax())
    assert MetricTracker(base, maximize=[True, False]).maximize == (True, False)


def test_tracker_errors_reset_and_checkpoints() -> None:
    t = MetricTracker(sm.BinaryAccuracy())
    with pytest.raises(ValueError, match=r"MetricTracker.update: call increment\(\) first"):
        t.update(torch.tensor([1]), torch.tensor([1]))
    with pytest.raises(TypeError, match="`maximize` must be a bool or a sequence of bools"):
        MetricTracker(sm.BinaryAccuracy(), maximize="yes")
    for _ in range(3):
        t = t.increment().update(torch.tensor([1, 0]), torch.tensor([1, 1]))
    saved = t.state_dict()
    restored = MetricTracker(sm.BinaryAccuracy()).load_state_dict(saved)  # as many steps as the checkpoint holds
    assert restored.n_steps == 3
    assert_close(restored.compute_all(), t.compute_all())
    empty = t.reset()
    assert empty.n_steps == 3 and t.merge(empty).state_dict().keys() == saved.keys()
    with pytest.raises(ValueError, match="this tracker is reduced"):
        t.reduce().increment()
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    assert_close(torch.load(buf).compute_all(), t.compute_all())


# -- MinMaxMetric ---------------------------------------------------------------------------------


def test_minmax_follows_torchmetrics_with_an_explicit_observe() -> None:
    theirs = tmw.MinMaxMetric(tmc.BinaryAccuracy())
    ours = MinMaxMetric(sm.BinaryAccuracy())
    for epoch in range(4):
        sl = slice(epoch * 40, epoch * 40 + 40)
        preds, target = SCORES[sl, 0], (LABELS[sl] > 1 - epoch % 2).long()
        theirs.update(preds, target)
        expected = theirs.compute()
        ours = ours.update(preds, target)
        assert_close(ours.compute(), expected)  # compute includes the current value, and changes nothing
        ours = ours.observe().restart()
        theirs._base_metric.reset()
    assert ours.min_val <= ours.max_val
    with pytest.raises(ValueError, match="MinMaxMetric.compute: MulticlassAccuracy must give a scalar"):
        MinMaxMetric(sm.MulticlassAccuracy(4, average=None)).update(SCORES, LABELS).compute()


def test_minmax_observe_in_a_world_agrees_on_every_rank() -> None:
    def body(rank: int) -> Any:
        m = MinMaxMetric(sm.Mean())
        for epoch in range(3):
            m = m.update(torch.tensor([float(epoch * (rank + 1))])).observe().restart()
        return m.min_val, m.max_val

    for lo, hi in sm.simulate(body, 2):
        assert lo == 0.0 and hi == 3.0


# -- every wrapper in one pass ---------------------------------------------------------------------


def test_every_wrapper_reduces_in_the_same_single_pass() -> None:
    from worlds import CountingComm

    from scopedmetrics.reducers import Collective
    from scopedmetrics.wrappers import BootStrapper, Sliced

    def body(rank: int) -> Any:
        sl = slice(rank * 70, rank * 70 + 70 * rank)  # rank 0 holds nothing
        s, lab, x, y = SCORES[sl], LABELS[sl], X[sl], Y[sl]
        tree = {
            "sliced": Sliced(sm.MulticlassAccuracy(4), 3).update(s, lab, slice_ids=lab % 3),
            "boot": BootStrapper(sm.MeanSquaredError(), num_bootstraps=20).update(
                x[:, 0], y[:, 0], sample_ids=torch.arange(sl.start, sl.start + x.shape[0])),
            "classwise": ClasswiseWrapper(sm.MulticlassRecall(4, average=None)).update(s, lab),
            "running": Running(sm.Mean(), window=3).update(x[:, 0]),
            "multitask": MultitaskWrapper({"a": sm.MeanAbsoluteError()}).update({"a": x[:, 0]}, {"a": y[:, 0]}),
            "multioutput": MultioutputWrapper(sm.MeanSquaredError(), 3).update(x, y),
            "tracker": MetricTracker(sm.Mean()).increment().update(x[:, 1]),
            "minmax": MinMaxMetric(sm.Mean()).update(x[:, 2]),
        }
        counting = CountingComm(sm.get_reducer().comm)  # type: ignore[union-attr]
        with sm.use_reducer(Collective(counting)):
            values = sm.compute(tree)
        return values, counting.calls

    out = sm.simulate(body, 3)
    for values, calls in out:
        assert calls == ["all_gather"]
        assert_close(values, out[0][0])
    assert_close(out[0][0]["multioutput"], ((X[70:210] - Y[70:210]) ** 2).mean(0))


def _filled() -> list[sm.Metric]:
    from scopedmetrics.wrappers import BootStrapper, Sliced

    s, lab = SCORES[:60], LABELS[:60]
    return [
        Sliced(sm.Collection(acc=sm.MulticlassAccuracy(4), f1=sm.MulticlassF1Score(4)), 3).update(
            s, lab, slice_ids=lab % 3),
        BootStrapper(sm.MulticlassAccuracy(4), num_bootstraps=5).update(s, lab, sample_ids=torch.arange(60)),
        ClasswiseWrapper(sm.MulticlassRecall(4, average=None)).update(s, lab),
        Running(sm.BinaryAUROC(), window=2).update(s[:, 0], lab % 2).update(s[:, 1], lab % 2),
        MultitaskWrapper({"a": sm.MeanAbsoluteError()}).update({"a": X[:60, 0]}, {"a": Y[:60, 0]}),
        MultioutputWrapper(sm.PearsonCorrCoef(), 3).update(X[:60], Y[:60]),
        MetricTracker(sm.Mean()).increment().update(X[:30, 0]).increment().update(X[30:60, 0]),
        MinMaxMetric(sm.Mean()).update(X[:60, 2]).observe(),
    ]


@pytest.mark.parametrize("metric", _filled(), ids=lambda m: type(m).__name__)
def test_every_wrapper_checkpoints_and_pickles(metric: sm.Metric) -> None:
    restored = metric.reset().load_state_dict(metric.state_dict())
    assert_close(restored.compute(), metric.compute())
    buf = io.BytesIO()
    torch.save(metric, buf)
    buf.seek(0)
    assert_close(torch.load(buf).compute(), metric.compute())
    assert_close(metric.merge(metric.reset()).compute(), metric.compute())  # reset is merge's identity


def test_sliced_running_keeps_each_slices_own_window() -> None:
    from scopedmetrics.wrappers import Sliced

    m = Sliced(Running(sm.Sum(), window=2), 2)
    assert isinstance(m.per_slice, tuple)  # a window is no sum: one Running per slice
    for v, k in [(1.0, 0), (2.0, 0), (10.0, 1), (3.0, 0)]:
        m = m.update(torch.tensor([v]), slice_ids=torch.tensor([k]))
    assert m.compute() == {0: torch.tensor(5.0), 1: torch.tensor(10.0)}
