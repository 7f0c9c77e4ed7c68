"""Checkpoints: state dicts round-trip, resume at another world size, and refuse corruption whole.

The resume procedure tested here is the one ``docs/guarantees.md`` documents:
every rank saves its own, *unreduced* ``state_dict()``; on resume with ``W'``
ranks, new rank ``r'`` loads the checkpoints of the old ranks ``r`` with
``r * W' // W == r'`` (contiguous blocks, in rank order) into fresh metrics,
folds them with ``merge``, and carries on with its own data. Old rank ``r``
lands on new rank ``r`` when the world grows (2 -> 3) and every old rank on
rank 0 when it shrinks to one (4 -> 1). Since ``merge`` is associative with the
fresh metric as identity, ``compute()`` then equals the uninterrupted run.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import torch
from catalogue import BY_ID, CATALOGUE, IDS, ORDER_SENSITIVE, Entry, assert_same_state, data, feed, state_of
from shards import assert_close

import scopedmetrics as sm
import scopedmetrics.classification as smc
import scopedmetrics.regression as smr

# -- the resume procedure --------------------------------------------------------------


def save(m: sm.Metric) -> bytes:
    """What a rank writes at checkpoint time: its own state dict, through ``torch.save``."""
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    return buf.getvalue()


def load(blob: bytes) -> dict[str, torch.Tensor]:
    return torch.load(io.BytesIO(blob), weights_only=True)  # plain tensors: no pickled code runs


def mine(old_size: int, new_rank: int, new_size: int) -> list[int]:
    """The old ranks whose checkpoints new rank ``new_rank`` takes over: a contiguous block, in order."""
    return [r for r in range(old_size) if r * new_size // old_size == new_rank]


def resume(template: sm.Metric, checkpoints: list[bytes], new_rank: int, new_size: int) -> sm.Metric:
    """The metric new rank ``new_rank`` starts from: its old ranks' states folded with ``merge``."""
    m = template.reset()
    for r in mine(len(checkpoints), new_rank, new_size):
        m = m.merge(template.reset().load_state_dict(load(checkpoints[r])))
    return m


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CATALOGUE, ids=IDS)
def test_state_dict_round_trips_through_torch_save(entry: Entry) -> None:
    arrays = data(entry.kind, 20, seed=5)
    m = feed(entry.make(), arrays, slice(0, 12))
    back = entry.make().load_state_dict(load(save(m)))
    assert type(back) is type(m) and not back._reduced
    assert_same_state(state_of(back), state_of(m))
    with sm.use_reducer(sm.local()):
        assert_close(back.compute(), m.compute(), atol=0, rtol=0)
    # and it carries on exactly like the metric it was saved from
    assert_same_state(state_of(feed(back, arrays, slice(12, 20))), state_of(feed(m, arrays, slice(12, 20))))


@pytest.mark.parametrize("entry", CATALOGUE, ids=IDS)
def test_state_dict_round_trips_through_safetensors(entry: Entry) -> None:
    """safetensors (Hugging Face's default format) refuses tensors sharing memory, such as one count at two keys."""
    from safetensors.torch import load as st_load
    from safetensors.torch import save as st_save

    arrays = data(entry.kind, 20, seed=5)
    m = feed(entry.make(), arrays, slice(0, 12))
    back = entry.make().load_state_dict(st_load(st_save(m.state_dict())))
    assert_same_state(state_of(back), state_of(m))
    with sm.use_reducer(sm.local()):
        assert_close(back.compute(), m.compute(), atol=0, rtol=0)


def test_members_sharing_one_count_save_to_safetensors_and_count_once_after_loading() -> None:
    from safetensors.torch import load as st_load
    from safetensors.torch import save as st_save

    def scores() -> sm.Collection:
        return sm.Collection(acc=smc.MulticlassAccuracy(3), f1=smc.MulticlassF1Score(3),
                             recall=smc.MulticlassRecall(3, average="micro"))

    arrays = data("multiclass", 40, seed=2)
    c = scores().update(*arrays)
    assert c["acc"].stats is c["f1"].stats  # one count for the members of one configuration
    state = c.state_dict()
    assert state["acc.stats.counts"] is not state["f1.stats.counts"]  # each key its own memory
    for loaded in (st_load(st_save(state)), load(save(c))):
        back = scores().load_state_dict(loaded)
        assert back["acc"].stats.counts is back["f1"].stats.counts  # held once again
        after = back.update(*arrays)
        assert after["acc"].stats is after["f1"].stats  # and counted once
        with sm.use_reducer(sm.local()):
            assert_close(after.compute(), c.update(*arrays).compute(), atol=0, rtol=0)


def test_a_reduced_metric_s_state_dict_loads_unreduced() -> None:
    m = sm.Sum().update(torch.tensor([2.0])).reduce()
    back = sm.Sum().load_state_dict(m.state_dict())
    assert m._reduced and not back._reduced and back.compute().item() == 2.0


class Report(sm.Metric):
    """A metric with a dict state, a nested metric and a cat state, inside the collections below."""

    peaks: dict[str, torch.Tensor] = sm.state(
        "max", default=lambda: {"low": torch.tensor(-1e9), "high": torch.zeros(2)}
    )
    error: smr.MeanSquaredError = sm.state(default=smr.MeanSquaredError)
    seen: torch.Tensor = sm.state("cat")

    def update(self, x: torch.Tensor) -> Report:
        peaks = {"low": torch.maximum(self.peaks["low"], -x.min()), "high": torch.maximum(self.peaks["high"], x[:2])}
        return self.replace(peaks=peaks, error=self.error.update(x, torch.zeros_like(x)),
                            seen=torch.cat([self.seen, x]))

    def compute(self) -> dict[str, Any]:
        return {"peaks": self.peaks, "mse": self.error.compute(), "n": self.seen.numel()}


def nested(seed: int) -> sm.Collection:
    """Nested collections whose members were fed different inputs (and so built after feeding)."""
    p, t = data("binary", 16, seed)
    x = torch.randn(9, generator=torch.Generator().manual_seed(seed)) + 3
    cls = sm.Collection(
        precision=smc.BinaryPrecision().update(p, t),
        auroc=smc.BinaryAUROC().update(p, t),
        per_bin=sm.Collection(ece=smc.BinaryCalibrationError(n_bins=4).update(p, t)),
    )
    reg = sm.Collection(r2=smr.R2Score().update(x, x + 0.1), report=Report().update(x))
    return sm.Collection(cls=cls, reg=reg, count=sm.Sum().update(x))


def test_nested_collections_round_trip_with_dotted_keys() -> None:
    c = nested(1)
    sd = c.state_dict()
    keys = {"cls.per_bin.ece.bin_count", "reg.report.peaks.high", "reg.report.error.total", "cls.auroc.preds"}
    assert keys <= set(sd)
    back = nested(2).reset().load_state_dict(load(save(c)))
    assert_same_state(state_of(back), state_of(c))
    with sm.use_reducer(sm.local()):
        assert_close(back.compute(), c.compute(), atol=0, rtol=0)


def test_pickled_metrics_round_trip_with_their_configuration() -> None:
    c = nested(3)
    buf = io.BytesIO()
    torch.save(c, buf)
    back = torch.load(io.BytesIO(buf.getvalue()))  # torch's default, weights_only=True: metrics are allowlisted
    assert_same_state(state_of(back), state_of(c))
    assert back["cls"]["per_bin"]["ece"].n_bins == 4
    reduced = torch.load(io.BytesIO(_saved(c.reduce())))
    assert reduced._reduced and reduced.compute().keys() == c.compute().keys()


def _saved(obj: object) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    "rows", [torch.arange(6.0).reshape(3, 2), torch.tensor([1, 2, 3]), torch.ones(2, 2, 2, dtype=torch.float64)],
    ids=["2d_rows", "int64", "float64_3d"],
)
def test_a_fresh_cat_loads_rows_of_any_dtype_and_shape(rows: torch.Tensor) -> None:
    """A fresh Cat's empty leaf joins any rows in merge and reduce, so it must load any rows too."""
    m = sm.Cat().update(rows)
    assert sm.Cat().merge(m).compute().equal(rows)  # what merge already does
    back = sm.Cat().load_state_dict(load(save(m)))
    assert back.compute().equal(rows)


# -- resuming at another world size ----------------------------------------------------------

N1, N2 = 24, 26  # samples before and after the checkpoint


def shards(n: int, size: int, offset: int) -> list[slice]:
    """Uneven contiguous shards of ``n`` rows starting at ``offset``; the second-to-last one is empty."""
    cuts = [round(n * k / (size + 1)) for k in range(size)] + [n]
    if size > 1:
        cuts[-2] = cuts[-3] if size > 2 else 0
    cuts = sorted(cuts)
    return [slice(offset + cuts[i], offset + cuts[i + 1]) for i in range(size)]


def fed(arrays: dict[str, tuple[torch.Tensor, ...]], tree: dict[str, sm.Metric], sl: slice) -> dict[str, sm.Metric]:
    return {k: feed(m, arrays[k], sl) for k, m in tree.items()}


def fresh() -> dict[str, sm.Metric]:
    return {e.id: e.make() for e in CATALOGUE}


def run_resumed(arrays: Any, old: int, new: int) -> list[dict[str, Any]]:
    before = shards(N1, old, 0)
    after = shards(N2, new, N1)

    def phase1(rank: int) -> dict[str, bytes]:  # ... train, evaluate part of the data, checkpoint, stop
        return {k: save(m) for k, m in fed(arrays, fresh(), before[rank]).items()}

    saved = sm.simulate(phase1, old)

    def phase2(rank: int) -> dict[str, Any]:  # restart with another number of ranks
        start = {k: resume(BY_ID[k].make(), [s[k] for s in saved], rank, new) for k in IDS}
        return sm.compute(fed(arrays, start, after[rank]))

    return sm.simulate(phase2, new)


def run_uninterrupted(arrays: Any, size: int) -> dict[str, Any]:
    before, after = shards(N1, size, 0), shards(N2, size, N1)
    return sm.simulate(lambda r: sm.compute(fed(arrays, fed(arrays, fresh(), before[r]), after[r])), size)[0]


def _sorted(v: torch.Tensor) -> torch.Tensor:
    return v.sort().values


@pytest.mark.parametrize(("old", "new"), [(2, 3), (4, 1)], ids=["2to3", "4to1"])
def test_resuming_at_another_world_size_gives_the_uninterrupted_value(old: int, new: int) -> None:
    arrays = {e.id: data(e.kind, N1 + N2, seed=11 + i) for i, e in enumerate(CATALOGUE)}
    resumed = run_resumed(arrays, old, new)
    uninterrupted = run_uninterrupted(arrays, old)
    with sm.use_reducer(sm.local()):
        single = {e.id: feed(e.make(), arrays[e.id]).compute() for e in CATALOGUE}
    for rank, values in enumerate(resumed):
        for k in IDS:
            got, want, oracle = values[k], uninterrupted[k], single[k]
            if k in ORDER_SENSITIVE:  # the same samples; the order follows the ranks that held them
                got, want, oracle = _sorted(got), _sorted(want), _sorted(oracle)
            try:
                assert_close(got, want)
                assert_close(got, oracle)
            except AssertionError as err:
                raise AssertionError(f"new rank {rank}, {k}: {err}") from None


def test_the_resume_assignment_covers_every_old_rank_once_in_order() -> None:
    for old in range(1, 7):
        for new in range(1, 7):
            taken = [r for n in range(new) for r in mine(old, n, new)]
            assert taken == list(range(old)), (old, new)
    assert [mine(2, r, 3) for r in range(3)] == [[0], [1], []]
    assert mine(4, 0, 1) == [0, 1, 2, 3]


# -- corrupted and mismatched checkpoints ------------------------------------------------------------


def _wrong_shape(m: sm.Metric, sd: dict[str, torch.Tensor]) -> tuple[Any, str]:
    """A fixed-shape leaf doubled along its last dim (or made 1-d); without one, a leaf given one more dim.

    Leaves that are not empty in a fresh metric have a shape fixed by the configuration (``cat`` leaves
    start with no rows).
    """
    fresh = m.reset().state_dict()
    fixed = [k for k in sd if fresh[k].ndim == 0 or fresh[k].shape[0] > 0]
    if not fixed:
        k = list(sd)[0]
        return {**sd, k: sd[k].unsqueeze(-1)}, f"{k!r} has shape"
    k = fixed[0]
    t = sd[k]
    return {**sd, k: torch.cat([t, t], dim=-1) if t.ndim else t.reshape(1)}, f"{k!r} has shape"


def _wrong_rows(m: sm.Metric, sd: dict[str, torch.Tensor]) -> tuple[Any, str] | None:
    """A ``cat`` leaf whose rows have one more column than the configuration gives them (dim 0 is free)."""
    fresh = m.reset().state_dict()
    rows = [k for k in sd if fresh[k].ndim >= 2 and fresh[k].shape[0] == 0]
    if not rows:
        return None
    k = rows[0]
    t = sd[k]
    return {**sd, k: torch.cat([t, t[..., :1]], dim=-1)}, f"{k!r} has shape"


def _other_dtype(t: torch.Tensor) -> torch.Tensor:
    """Another kind of number: floats for integer leaves, integers for float ones (float rows of a ``cat`` state
    may come in any float dtype, as ``append`` widens them)."""
    return t.long() if t.is_floating_point() else t.double()


CORRUPTIONS: dict[str, Callable[[sm.Metric, dict[str, torch.Tensor]], tuple[Any, str]]] = {
    "missing_key": lambda m, sd: ({k: v for k, v in list(sd.items())[:-1]}, "missing keys"),
    "extra_key": lambda m, sd: ({**sd, "bogus.leaf": torch.zeros(1)}, "unexpected keys ['bogus.leaf']"),
    "wrong_dtype": lambda m, sd: ({**sd, (k := list(sd)[-1]): _other_dtype(sd[k])}, f"{k!r} has dtype"),
    "wrong_shape": _wrong_shape,
    "wrong_row_shape": _wrong_rows,  # type: ignore[dict-item]
    "wrong_ndim": lambda m, sd: ({**sd, (k := list(sd)[-1]): sd[k].unsqueeze(-1)}, f"{k!r} has shape"),
    "numpy_array": lambda m, sd: ({**sd, (k := list(sd)[0]): sd[k].numpy()}, f"{k!r} is ndarray, not a tensor"),
    "python_number": lambda m, sd: ({**sd, (k := list(sd)[0]): 1.0}, f"{k!r} is float, not a tensor"),
}


def test_float_rows_load_in_the_float_dtype_they_were_saved_in() -> None:
    g = torch.Generator().manual_seed(3)
    scores = torch.sigmoid(torch.randn(300, dtype=torch.float64, generator=g) * 15)
    target = torch.randint(0, 2, (300,), generator=g)
    saved = smc.BinaryAUROC().update(scores, target)
    loaded = smc.BinaryAUROC().load_state_dict(load(save(saved)))
    assert loaded.preds.dtype == torch.float64
    assert torch.equal(loaded.compute(), saved.compute())
    with pytest.raises(ValueError, match="'total' has dtype torch.float64"):  # a sum keeps its dtype
        smr.MeanSquaredError().load_state_dict({**smr.MeanSquaredError().state_dict(), "total": torch.tensor(0.0,
                                                dtype=torch.float64)})


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupted_checkpoint_is_refused_whole_for_every_metric(corruption: str) -> None:
    failures = []
    for e in CATALOGUE:
        m = feed(e.make(), data(e.kind, 9, seed=2))
        before = state_of(m)
        corrupt = CORRUPTIONS[corruption](m, load(save(m)))
        if corrupt is None:  # this corruption does not apply to this metric's states
            continue
        checkpoint, needle = corrupt
        snapshot = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in checkpoint.items()}
        try:
            m.load_state_dict(checkpoint)
            failures.append(f"{e.id}: loaded")
        except ValueError as err:
            message = str(err)
            if f"{type(m).__name__}.load_state_dict" not in message or needle not in message:
                failures.append(f"{e.id}: {message!r} lacks {needle!r}")
        assert_same_state(before, state_of(m))
        for k, v in checkpoint.items():  # the checkpoint itself is left as it was
            if isinstance(v, torch.Tensor):
                assert torch.equal(v, snapshot[k]) or bool((v.isnan() & snapshot[k].isnan()).any())
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("make", "other"),
    [
        (lambda: smc.MulticlassAccuracy(num_classes=3), lambda: smc.MulticlassAccuracy(num_classes=4)),
        (lambda: smc.BinaryAUROC(), lambda: smc.BinaryAUROC(thresholds=5)),
        (lambda: smr.PearsonCorrCoef(), lambda: smr.PearsonCorrCoef(num_outputs=2)),
        (lambda: smr.SpearmanCorrCoef(), lambda: smr.SpearmanCorrCoef(num_outputs=2)),
        (lambda: smc.BinaryCalibrationError(n_bins=5), lambda: smc.BinaryCalibrationError(n_bins=6)),
    ],
    ids=["num_classes", "exact_into_binned", "num_outputs_merge", "num_outputs_cat", "n_bins"],
)
def test_a_checkpoint_of_another_configuration_is_refused(make: Any, other: Any) -> None:
    with pytest.raises(ValueError, match=r"load_state_dict: '[\w.]+' has shape"):
        other().load_state_dict(make().state_dict())


def test_a_collection_refuses_a_checkpoint_with_one_bad_member_and_loads_nothing() -> None:
    c = nested(4)
    before = state_of(c)
    sd = load(save(c))
    sd["reg.report.error.total"] = sd["reg.report.error.total"].float()  # the last member is corrupt
    with pytest.raises(ValueError, match=r"Collection.load_state_dict: 'reg.report.error.total' has dtype"):
        c.load_state_dict(sd)
    assert_same_state(before, state_of(c))


@pytest.mark.parametrize("checkpoint", [None, [("sum_value", torch.zeros(()))], "sum_value"],
                         ids=["none", "list_of_pairs", "string"])
def test_a_checkpoint_that_is_not_a_mapping_is_refused_clearly(checkpoint: Any) -> None:
    with pytest.raises((ValueError, TypeError), match=r"Sum.load_state_dict"):
        sm.Sum().load_state_dict(checkpoint)


class Ids(sm.Metric):
    """A custom metric with a cat state declared without a default: its rows' kind is not declared."""

    ids: torch.Tensor = sm.state("cat")

    def update(self, x: torch.Tensor) -> Ids:
        return self.append(ids=x)

    def compute(self) -> torch.Tensor:
        return self.ids


def test_a_cat_state_declared_without_a_default_loads_rows_of_any_kind() -> None:
    # API.md: an empty cat leaf joins whatever rows the others hold; a checkpoint of int64 or (N, 2) rows was
    # refused ("has dtype torch.int64, expected torch.float32"), through Stateful too
    for rows in (torch.tensor([3, 4, 5]), torch.ones(5, 2)):
        saved = Ids().update(rows).state_dict()
        assert torch.equal(Ids().load_state_dict(saved).compute(), rows)
        module = sm.Stateful(Ids())
        module.update(rows)
        fresh = sm.Stateful(Ids())
        fresh.load_state_dict(module.state_dict())
        assert torch.equal(fresh.metric.ids, rows)
    with pytest.raises(ValueError, match=r"'preds' has shape \(3, 2\), expected \(0,\)"):  # declared rows: checked
        sm.BinaryAUROC().load_state_dict({**sm.BinaryAUROC().state_dict(), "preds": torch.ones(3, 2)})
