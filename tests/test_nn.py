"""sm.Stateful: a metric as a module (in-place updates, casts, checkpoints), and resuming rank 0's checkpoint.

The resume procedure for a checkpoint that one process writes (Lightning's
rank 0): at save time every rank calls ``reduce_state_dict`` (a collective), so
the file holds the global state; on resume every rank loads that file after
``resume_state_dict``, which leaves the global state to rank 0 and gives every
other rank an empty one. Counted once, at any world size.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import torch
from shards import assert_close

import scopedmetrics as sm
from scopedmetrics.nn import reduce_state_dict, resume_state_dict


def make() -> sm.Collection:
    """Integer counts and cat states (float scores, integer labels): leaves a module must move and cast apart."""
    return sm.Collection(acc=sm.BinaryAccuracy(), auroc=sm.BinaryAUROC())


def data(n: int = 101, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand(n, generator=g)
    labels = (torch.rand(n, generator=g) < scores).long()
    return scores, labels, (scores - labels) ** 2


class Evaluated(torch.nn.Module):
    """A model with metrics as submodules, the way a LightningModule holds them."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(2, 1)
        self.metrics = torch.nn.ModuleDict({"val": sm.Stateful(make()), "loss": sm.Stateful(sm.Mean())})

    def fold(self, scores: torch.Tensor, labels: torch.Tensor, loss: torch.Tensor, **kw: Any) -> None:
        self.metrics["val"].update(scores, labels, **kw)
        self.metrics["loss"].update(loss, **kw)


def one_process(scores: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
    with sm.use_reducer(sm.local()):
        return make().update(scores, labels).compute()  # type: ignore[no-any-return]


# -- the module --------------------------------------------------------------------------


def test_update_folds_in_place_and_forward_returns_the_batch_value() -> None:
    scores, labels, _ = data()
    s = sm.Stateful(sm.BinaryAccuracy())
    assert s.update(scores[:50], labels[:50]) is None
    batch = s(scores[50:], labels[50:])
    _, expected = sm.BinaryAccuracy().update(scores[:50], labels[:50]).forward(scores[50:], labels[50:])
    assert torch.equal(batch, expected)
    assert torch.equal(s.forward(scores[:0], labels[:0]), sm.BinaryAccuracy().forward(scores[:0], labels[:0])[1])
    with sm.use_reducer(sm.local()):
        assert torch.equal(s.compute(), sm.BinaryAccuracy().update(scores, labels).compute())
    assert isinstance(s.metric, sm.BinaryAccuracy) and not s.metric._reduced
    s.reset()
    assert all(int(v) == 0 for v in s.metric.state_dict().values())


def test_update_takes_mask_like_the_metric() -> None:
    scores, labels, _ = data()
    keep = torch.arange(101) % 3 != 0
    s = sm.Stateful(make())
    s.update(scores, labels, mask=keep)
    assert_close(s.compute(), one_process(scores[keep], labels[keep]), atol=0, rtol=0)


def test_the_metric_is_replaced_never_mutated() -> None:
    s = sm.Stateful(sm.Sum())
    before = s.metric
    s.update(torch.tensor([2.0]))
    assert before.sum_value.item() == 0.0 and s.metric.sum_value.item() == 2.0


def test_it_holds_one_unreduced_metric() -> None:
    with pytest.raises(TypeError, match="sm.Stateful holds one sm.Metric"):
        sm.Stateful({"a": sm.Sum()})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Sum\\): this metric is reduced"):
        sm.Stateful(sm.Sum().reduce())


def test_calling_a_plain_metric_says_what_to_call() -> None:
    with pytest.raises(TypeError, match=r"update\(.*forward\(.*sm\.Stateful"):
        sm.BinaryAccuracy()(torch.rand(3), torch.ones(3, dtype=torch.long))


def test_states_are_neither_parameters_nor_buffers() -> None:
    # DDP broadcasts buffers from rank 0 before each forward: a state there would be overwritten by rank 0's
    model = Evaluated()
    assert [n for n, _ in model.named_buffers()] == []
    assert [n for n, _ in model.named_parameters()] == ["net.weight", "net.bias"]


# -- moves and casts ---------------------------------------------------------------------


def dtypes(model: torch.nn.Module) -> dict[str, torch.dtype]:
    return {k: v.dtype for k, v in model.state_dict().items() if k.startswith("metrics.")}


@pytest.mark.parametrize(
    ("cast", "floating"),
    [
        (lambda s: s.to(torch.float64), torch.float64),
        (lambda s: s.double(), torch.float64),
        (lambda s: s.half(), torch.float16),
        (lambda s: s.bfloat16(), torch.bfloat16),
        (lambda s: s.type(torch.float64), torch.float64),  # Module.type casts every tensor: counts must not follow
        (lambda s: s.to("cpu", torch.float16), torch.float16),
    ],
    ids=["to-dtype", "double", "half", "bfloat16", "type", "to-device-dtype"],
)
def test_floating_states_cast_and_integer_counts_stay_integers(cast: Any, floating: torch.dtype) -> None:
    """Float states take the module's float dtype, except below float32 (half-precision sums stop counting)."""
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    before = dtypes(model)
    assert before["metrics.val.acc.stats.tp"] == torch.int64 and before["metrics.val.auroc.target"] == torch.uint8
    assert before["metrics.val.auroc.preds"] == before["metrics.loss.weight"] == torch.float32
    assert cast(model) is model
    after = dtypes(model)
    kept = floating if floating.itemsize >= 4 else torch.float32
    for key, old in before.items():
        assert after[key] == (kept if old.is_floating_point else old), key
    assert model.net.weight.dtype == floating  # the model's own parameters cast as asked
    for s in model.metrics.values():
        s.reset()  # a reset keeps the module's floating dtype
    assert dtypes(model) == after


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_model_cast_to_half_precision_keeps_its_metrics_counting(dtype: torch.dtype) -> None:
    # model.half() (Lightning's "16-true") cast the states too: 10,000 ones summed to 9,936 in float16
    model = torch.nn.Linear(2, 2)
    model.total, model.mean = sm.Stateful(sm.Sum()), sm.Stateful(sm.Mean())
    model.to(dtype)
    assert model.weight.dtype == dtype
    for _ in range(100):
        model.total.update(torch.ones(100, dtype=dtype))
        model.mean.update(torch.arange(100, dtype=dtype))
    with sm.use_reducer(sm.local()):
        assert model.total.compute().item() == 10_000
        assert model.mean.compute().item() == 49.5


def test_float64_rows_stay_float64_through_a_module_checkpoint() -> None:
    # the load cast the rows to the fresh module's float32: float64 scores that float32 merges then tied
    g = torch.Generator().manual_seed(2)
    scores = torch.sigmoid(torch.randn(400, dtype=torch.float64, generator=g) * 15)
    target = torch.randint(0, 2, (400,), generator=g)
    trained = sm.Stateful(sm.classification.BinaryAUROC())
    trained.update(scores, target)
    resumed = sm.Stateful(sm.classification.BinaryAUROC())
    resumed.load_state_dict(trained.state_dict())
    assert resumed.metric.preds.dtype == torch.float64
    with sm.use_reducer(sm.local()):
        assert torch.equal(resumed.compute(), trained.compute())


def test_states_move_to_meta_with_the_module_and_reset_there() -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    model.to("meta")
    leaves = list(model.metrics["val"].metric.state_dict().values())
    assert leaves and all(t.device.type == "meta" for t in leaves)
    assert model.metrics["val"].state_dict()["acc.stats.tp"].dtype == torch.int64
    model.metrics["val"].reset()
    assert all(t.device.type == "meta" for t in model.metrics["val"].metric.state_dict().values())


def test_meta_initialized_module_loads_with_assign() -> None:
    scores, labels, loss = data()
    trained = Evaluated()
    trained.fold(scores, labels, loss)
    with torch.device("meta"):
        model = Evaluated()
    assert model.metrics["loss"].metric.weight.device.type == "meta"
    model.load_state_dict(trained.state_dict(), assign=True)
    with sm.use_reducer(sm.local()):
        assert_close(model.metrics["val"].compute(), one_process(scores, labels), atol=0, rtol=0)


def test_floating_states_of_a_checkpoint_cast_to_the_module_s_dtype() -> None:
    scores, labels, loss = data()
    saved = Evaluated()
    saved.fold(scores, labels, loss)
    model = Evaluated().double()
    model.load_state_dict(saved.state_dict())
    assert model.metrics["loss"].metric.weight.dtype == torch.float64
    assert model.metrics["val"].metric.acc.tp.dtype == torch.int64
    with sm.use_reducer(sm.local()):
        assert_close(model.metrics["loss"].compute(), loss.mean().double())


# -- checkpoints ---------------------------------------------------------------------------


def test_state_dict_holds_the_metric_s_paths_under_the_module_s_prefix() -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    keys = list(model.state_dict())
    val = [f"metrics.val.{k}" for k in model.metrics["val"].metric.state_dict()]
    assert keys == ["net.weight", "net.bias", "metrics.val._extra_state", *val,
                    "metrics.loss._extra_state", "metrics.loss.mean_value", "metrics.loss.weight"]
    assert torch.equal(model.state_dict()["metrics.val._extra_state"], torch.tensor([0, 0, 1]))  # rank 0's of 1
    assert model.state_dict()["metrics.val.auroc.preds"].shape == (101,)


def test_a_model_checkpoint_round_trips_with_weights_only_and_cat_states_of_any_length() -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    fresh = Evaluated()  # its cat states are empty: 101 rows load into them
    result = fresh.load_state_dict(torch.load(io.BytesIO(buf.getvalue()), weights_only=True))
    assert not result.missing_keys and not result.unexpected_keys
    with sm.use_reducer(sm.local()):
        assert_close(fresh.metrics["val"].compute(), one_process(scores, labels), atol=0, rtol=0)
    fresh.fold(scores, labels, loss)  # and it carries on like the saved one
    model.fold(scores, labels, loss)
    for (k, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), k


def test_a_bad_checkpoint_is_refused_and_loads_nothing() -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    good = model.state_dict()
    before = model.metrics["val"].metric

    bad = dict(good)
    bad["metrics.val.acc.stats.tp"] = bad["metrics.val.acc.stats.tp"].float()  # a count that is not a count
    with pytest.raises(RuntimeError, match=r"metrics\.val: .*'acc\.stats\.tp' has dtype torch\.float32"):
        model.load_state_dict(bad)
    assert model.metrics["val"].metric is before

    missing = {k: v for k, v in good.items() if k != "metrics.val.acc.stats.fn"}
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*metrics\.val\.acc\.stats\.fn"):
        model.load_state_dict(missing)
    result = Evaluated().load_state_dict(missing, strict=False)  # loads nothing of that metric, says so
    assert result.missing_keys == ["metrics.val.acc.stats.fn"]
    # and its keys the checkpoint holds are named too: they were not loaded either (before, only the absent key was)
    val = {k for k in good if k.startswith("metrics.val.")} - {"metrics.val.acc.stats.fn", "metrics.val._extra_state"}
    assert val and set(result.unexpected_keys) == val

    extra = {**good, "metrics.val.acc.bogus": torch.tensor(1)}
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\).*metrics\.val\.acc\.bogus"):
        model.load_state_dict(extra)
    result = Evaluated().load_state_dict(extra, strict=False)  # as torch does: the states it has keys for load
    assert result.unexpected_keys == ["metrics.val.acc.bogus"] and not result.missing_keys


def test_deepcopy_and_pickle_give_independent_modules() -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores[:50], labels[:50], loss[:50])
    twin = copy.deepcopy(model)
    twin.fold(scores[50:], labels[50:], loss[50:])
    with sm.use_reducer(sm.local()):
        assert_close(model.metrics["val"].compute(), one_process(scores[:50], labels[:50]), atol=0, rtol=0)
        assert_close(twin.metrics["val"].compute(), one_process(scores, labels), atol=0, rtol=0)
        assert_close(twin.metrics["loss"].compute(), loss.mean())
    buf = io.BytesIO()
    torch.save(model, buf)
    back = torch.load(io.BytesIO(buf.getvalue()), weights_only=False)  # a whole pickled model: its own classes
    for (k, a), b in zip(model.state_dict().items(), back.state_dict().values()):
        assert torch.equal(a, b), k


def test_module_dict_and_repr() -> None:
    d = torch.nn.ModuleDict({"a": sm.Stateful(sm.Sum()), "b": sm.Stateful(sm.Max())})
    d["a"].update(torch.tensor([1.0, 2.0]))
    mark = torch.tensor([0, 0, 1])  # this process's own states (rank 0 of a world of 1)
    want = {"a._extra_state": mark, "a.sum_value": torch.tensor(3.0),
            "b._extra_state": mark, "b.max_value": torch.tensor(float("-inf"))}
    got = d.state_dict()
    assert list(got) == list(want) and all(torch.equal(got[k], v) for k, v in want.items())
    assert "Stateful(Sum(" in repr(d)


# -- rank 0's checkpoint, resumed on every rank ----------------------------------------------


def halves(rank: int, size: int, n: int = 101) -> tuple[slice, slice]:
    """This rank's rows before and after the checkpoint (uneven, the last rank's second half empty)."""
    edges = [round(n * r / size) for r in range(size + 1)]
    lo, hi = edges[rank], edges[rank + 1]
    mid = hi if rank == size - 1 else (lo + hi) // 2
    return slice(lo, mid), slice(mid, hi)


def save_body(rank: int, size: int) -> bytes:
    """Fold the rows before the checkpoint; every rank reduces, rank 0 'writes' the file."""
    scores, labels, loss = data()
    model = Evaluated()
    before, _ = halves(rank, size)
    model.fold(scores[before], labels[before], loss[before])
    checkpoint = model.state_dict()
    reduce_state_dict(model, checkpoint)  # a collective: every rank calls it
    assert model.metrics["val"].metric.acc.tp.sum() < len(scores)  # the module itself is unchanged
    buf = io.BytesIO()
    torch.save(checkpoint, buf)
    return buf.getvalue() if rank == 0 else b""


def resume_body(rank: int, blob: bytes, old_size: int, size: int) -> Any:
    """A fresh model loads rank 0's file, folds this rank's rows after the checkpoint, and computes."""
    scores, labels, loss = data()
    model = Evaluated()
    checkpoint = torch.load(io.BytesIO(blob), weights_only=True)
    resume_state_dict(model, checkpoint)  # rank 0 keeps the global state, the others start empty
    model.load_state_dict(checkpoint)
    # the rows after the checkpoint, as the old ranks held them, spread over the new world
    after = torch.cat([torch.arange(101)[halves(r, old_size)[1]] for r in range(old_size)])
    mine = after.tensor_split(size)[rank]
    model.fold(scores[mine], labels[mine], loss[mine])
    return model.metrics["val"].compute(), model.metrics["loss"].compute()


def test_rank_zero_s_checkpoint_resumes_to_the_one_process_value(world: Any) -> None:
    scores, labels, loss = data()
    blob = world.run(save_body, 2, 2)[0]
    for val, mean in world.run(resume_body, 2, blob, 2, 2):
        assert_close(val, one_process(scores, labels))
        assert_close(mean, loss.mean())
    # without resume_state_dict every rank would hold the checkpoint's samples, counted twice: refused on each
    for ok, err in world.results(plain_load, 2, blob):
        assert not ok and isinstance(err, RuntimeError)
        assert "metrics.val: the checkpoint loaded here holds the global state; on rank" in str(err)
        assert "sm.nn.resume_state_dict" in str(err)
    saved = sum(len(range(101)[halves(r, 2)[0]]) for r in range(2))
    assert world.run(plain_load, 2, blob, True) == [saved, saved]  # under local(): the whole state, here alone


def plain_load(rank: int, blob: bytes, alone: bool = False) -> int:
    """Load rank 0's global checkpoint without resume_state_dict and fold a batch; ``alone``: for one process."""
    scores, labels, loss = data()
    model = Evaluated()
    with sm.use_reducer(sm.local() if alone else sm.get_reducer()):
        model.load_state_dict(torch.load(io.BytesIO(blob), weights_only=True))  # the weights load
        model.fold(scores[:4], labels[:4], loss[:4])  # the metrics refuse to go on from a state counted twice
        return int(model.metrics["loss"].metric.reduce().weight) - 4


def own_file_body(rank: int) -> tuple[bytes, Any]:
    """Every rank saves its own unreduced state (no reduce_state_dict)."""
    scores, labels, loss = data()
    model = Evaluated()
    before, _ = halves(rank, 2)
    model.fold(scores[before], labels[before], loss[before])
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    return buf.getvalue(), model.metrics["val"].compute()


def load_body(rank: int, blobs: list[bytes], resume: bool = False, compute: bool = True, reset: bool = False) -> Any:
    """Load this rank's file (the only one if there is one), fold a batch, and compute (a collective) if asked."""
    scores, labels, loss = data()
    model = Evaluated()
    checkpoint = torch.load(io.BytesIO(blobs[rank % len(blobs)]), weights_only=True)
    if resume:
        resume_state_dict(model, checkpoint)
    model.load_state_dict(checkpoint)  # always loads: the weights are wanted
    if reset:
        model.metrics["val"].reset()
        model.metrics["loss"].reset()
    model.fold(scores[:0], labels[:0], loss[:0])  # where a loaded state would be used, it is refused
    return model.metrics["val"].compute() if compute else None


def test_each_rank_loads_its_own_file_and_refuses_another_rank_s(world: Any) -> None:
    saved = world.run(own_file_body, 2)
    blobs, values = [b for b, _ in saved], [v for _, v in saved]
    for got, want in zip(world.run(load_body, 2, blobs), values):  # each its own: the state it had
        assert_close(got, want)
    results = world.results(load_body, 2, blobs[:1], False, False)  # rank 0's file on both ranks
    assert results[0][0]
    ok, err = results[1]
    assert not ok and "holds rank 0's own state of a world of 2; on rank 1 of 2 its samples" in str(err)
    for got in world.run(load_body, 2, blobs[:1], False, True, True):  # reset after loading: empty, no doubt
        assert_close(got, Evaluated().metrics["val"].metric.compute())
    for ok, err in world.results(load_body, 2, blobs[:1], True, False):  # resume_state_dict cannot make it global
        assert not ok and isinstance(err, ValueError) and "save with reduce_state_dict" in str(err)


def test_one_process_s_checkpoint_resumes_on_many_ranks_only_through_resume_state_dict(world: Any) -> None:
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)  # one process saw everything
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    blob = buf.getvalue()
    for ok, err in world.results(load_body, 2, [blob], False, False):
        assert not ok and "holds the state of one process" in str(err)
    for got in world.run(load_body, 2, [blob], True):
        assert_close(got, one_process(scores, labels))


def doubted_body(rank: int, blob: bytes) -> tuple[str, bool, bool]:
    """Rank 1 loads rank 0's own checkpoint: what it refuses, what it saves, and whether reset() clears it."""
    model = Evaluated()
    model.load_state_dict(torch.load(io.BytesIO(blob), weights_only=True))
    s = model.metrics["val"]
    if rank == 0:
        return "", True, True
    with pytest.raises(RuntimeError, match="holds rank 0's own state of a world of 2") as refused:
        s.metric  # noqa: B018 - reading the metric is refused too: it could be reduced or saved elsewhere
    with pytest.raises(RuntimeError):
        s.compute()
    again = model.state_dict()["metrics.val._extra_state"]  # saved again, it keeps the mark it came with
    kept = torch.equal(again, torch.tensor([0, 0, 2]))
    s.reset()
    cleared = torch.equal(model.state_dict()["metrics.val._extra_state"], torch.tensor([0, 1, 2]))
    return str(refused.value), kept, cleared and s.metric._is_empty()


def test_a_doubted_state_is_refused_saved_with_its_mark_and_cleared_by_reset() -> None:
    blob = sm.simulate(own_file_body, 2)[0][0]
    results = sm.simulate(lambda r: doubted_body(r, blob), 2)
    message, kept, cleared = results[1]
    assert message.startswith("metrics.val: the checkpoint loaded here holds rank 0's own state") and kept and cleared


def emptied_body(rank: int) -> bytes:
    """A rank's checkpoint written after its metrics were reset (an epoch end): empty states."""
    scores, labels, loss = data()
    model = Evaluated()
    model.fold(scores, labels, loss)
    model.metrics["val"].reset()
    model.metrics["loss"].reset()
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    return buf.getvalue()


def test_a_checkpoint_of_empty_states_resumes_on_any_rank(world: Any) -> None:
    blob = world.run(emptied_body, 2)[0]  # rank 0's, loaded on both: nothing in it to count twice
    for got in world.run(load_body, 2, [blob]):
        assert_close(got, Evaluated().metrics["val"].metric.compute())


def test_one_process_loading_one_rank_s_own_state_is_warned() -> None:
    blob = sm.simulate(own_file_body, 2)[1][0]
    with pytest.warns(UserWarning, match="rank 1's own state of a world of 2 into one process"):
        load_body(0, [blob])


def test_the_checkpoint_resumes_at_another_world_size() -> None:
    scores, labels, loss = data()
    blob = sm.simulate(lambda r: save_body(r, 2), 2)[0]
    for size in (1, 3):
        for val, mean in sm.simulate(lambda r: resume_body(r, blob, 2, size), size):  # noqa: B023
            assert_close(val, one_process(scores, labels))
            assert_close(mean, loss.mean())


def test_one_process_reads_the_global_value_at_checkpoint_time() -> None:
    scores, labels, _ = data()
    blob = sm.simulate(lambda r: save_body(r, 2), 2)[0]
    model = Evaluated()
    checkpoint = torch.load(io.BytesIO(blob), weights_only=True)
    resume_state_dict(model, checkpoint)  # under sm.local(): rank 0, keeps everything
    model.load_state_dict(checkpoint)
    rows = torch.cat([torch.arange(101)[halves(r, 2)[0]] for r in range(2)])
    with sm.use_reducer(sm.local()):
        assert_close(model.metrics["val"].compute(), one_process(scores[rows], labels[rows]))


def test_resume_needs_a_rank_from_a_plain_function_reducer() -> None:
    model = Evaluated()
    with sm.use_reducer(lambda t, op: t), pytest.raises(TypeError, match="pass rank="):
        resume_state_dict(model, model.state_dict())
    sd = model.state_dict()
    resume_state_dict(model, sd, rank=1)
    assert int(sd["metrics.loss.weight"]) == 0


def loaded_before_the_world(rank: int, blob: bytes) -> str:
    """Load rank 0's global checkpoint under sm.local() (before init_process_group), then fold in the world."""
    scores, labels, loss = data()
    model = Evaluated()
    with sm.use_reducer(sm.local()):  # Lightning's load_from_checkpoint runs before the process group starts
        model.load_state_dict(torch.load(io.BytesIO(blob), weights_only=True))
    try:
        model.fold(scores[:4], labels[:4], loss[:4])
    except RuntimeError as err:
        return str(err)
    return "no error"


def test_a_checkpoint_loaded_before_the_world_is_checked_where_it_is_used(world: Any) -> None:
    # it was checked once, in the world of one it was loaded in: both ranks then counted the global state (60 for 45)
    blob = world.run(save_body, 2, 2)[0]
    for got in world.run(loaded_before_the_world, 2, blob):
        assert "the checkpoint loaded here holds the global state" in got, got


def test_a_module_cast_never_rounds_a_count_nor_narrows_a_float_state() -> None:
    # type(float16) cast counts through float16 (3,001 became 3,000); float() undid Pearson's float64 moments
    s = sm.Stateful(sm.BinaryAccuracy())
    s.update(torch.ones(3001), torch.ones(3001, dtype=torch.long))
    s.type(torch.float16)
    assert s.metric.tp.item() == 3001 and s.metric.tp.dtype == torch.int64
    g = torch.Generator().manual_seed(3)
    x = 1e6 + 1e-2 * torch.randn(1000, dtype=torch.float64, generator=g)
    y = x + 1e-2 * torch.randn(1000, dtype=torch.float64, generator=g)
    p = sm.Stateful(sm.PearsonCorrCoef())
    p.float()
    p.update(x, y)
    assert p.metric.mean.dtype == torch.float64
    with sm.use_reducer(sm.local()):
        assert_close(p.compute(), sm.PearsonCorrCoef().update(x, y).compute())
    total = sm.Stateful(sm.Sum())
    total.double()
    total.float()
    assert total.metric.sum_value.dtype == torch.float64  # widened, then never narrowed back


def test_state_dict_tensors_are_copies_that_an_in_place_load_cannot_share() -> None:
    # torch.distributed.checkpoint loads into them in place: a nested metric's default, shared by every fresh
    # instance, took the checkpoint's values (a brand-new metric then counted them)
    class Totals(sm.Metric):
        sums: sm.Sum = sm.state(default=sm.Sum())

        def update(self, x: torch.Tensor) -> Totals:
            return self.replace(sums=self.sums.update(x))

        def compute(self) -> torch.Tensor:
            return self.sums.compute()

    shared = sm.Mean()
    model = torch.nn.ModuleDict({"t": sm.Stateful(Totals()), "val": sm.Stateful(shared), "test": sm.Stateful(shared)})
    for t in model.state_dict().values():
        t.fill_(7)  # what dcp.load does to the tensors it is given
    with sm.use_reducer(sm.local()):
        assert Totals().update(torch.ones(1)).compute().item() == 1.0
        assert shared.mean_value.item() == 0.0
        assert model["t"].metric.sums.sum_value.item() == 0.0


def test_rows_load_with_the_dtype_they_were_saved_in_wherever_a_cat_is_nested() -> None:
    # float16 rows came back float32 (a resumed world then disagreed on their dtype); a Cat in a collection or
    # wrapper refused its own (N, 2) or int64 rows
    s = sm.Stateful(sm.Cat())
    s.update(torch.ones(3, dtype=torch.float16))
    fresh = sm.Stateful(sm.Cat())
    fresh.load_state_dict(s.state_dict())
    assert fresh.metric.value.dtype == torch.float16
    for rows in (torch.ones(3, 2), torch.arange(3)):
        saved = sm.Collection(c=sm.Cat()).update(rows).state_dict()
        assert torch.equal(sm.Collection(c=sm.Cat()).load_state_dict(saved).c.value, rows)
        ring = sm.wrappers.Running(sm.Cat(), window=2).update(rows)
        assert torch.equal(sm.wrappers.Running(sm.Cat(), window=2).load_state_dict(ring.state_dict()).compute(), rows)


def test_resume_leaves_a_metric_the_checkpoint_lacks_absent_on_every_rank() -> None:
    # ranks other than 0 wrote empty states for it, so a strict load failed on rank 0 alone
    old = torch.nn.ModuleDict({"a": sm.Stateful(sm.Sum())})
    saved = old.state_dict()
    new = torch.nn.ModuleDict({"a": sm.Stateful(sm.Sum()), "b": sm.Stateful(sm.Mean())})
    for rank in (0, 1):
        sd = dict(saved)
        resume_state_dict(new, sd, rank=rank)
        assert "b.mean_value" not in sd and "b.weight" not in sd, rank
        with pytest.raises(RuntimeError, match="Missing key"):
            new.load_state_dict(sd)
