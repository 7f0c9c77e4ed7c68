"""``Sliced(metric, slices=None)``: slices named by keys found at run time, against the metric on each key's samples."""

from __future__ import annotations

import functools
import inspect
import io
import pickle
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
from shards import assert_close, batches, uneven_slices
from test_wrappers import _batch, _state
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics.reducers import Collective
from scopedmetrics.wrappers import KeyedSliced, Sliced, _groups

N = 240
POOL = ["en", "fr", "de", "zh-Hant", "日本語", "é", "", "pt_BR", "sw", "x" * 40]


def _data(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "x": torch.randn(N, generator=g),
        "y": torch.randn(N, generator=g) + 2.0,  # away from 0: a percentage error stays tame
        "prob": torch.rand(N, generator=g),
        "bin": torch.randint(0, 2, (N,), generator=g),
        "scores5": torch.rand(N, 5, generator=g),
        "labels5": torch.randint(0, 5, (N,), generator=g),
    }


D = _data(0)

CASES: list[tuple[str, sm.Metric, tuple[str, ...]]] = [
    ("mean", sm.Mean(), ("x",)),
    ("mse", sm.MeanSquaredError(), ("x", "y")),
    ("binary_acc", sm.BinaryAccuracy(), ("prob", "bin")),
    ("max", sm.Max(), ("x",)),  # identity rows are -inf, not zeros
    ("mc_acc_none", sm.MulticlassAccuracy(5, average=None), ("scores5", "labels5")),
    ("mape_general_path", sm.MeanAbsolutePercentageError(), ("x", "y")),  # no vectorised hook
]


def _order(k: Any) -> tuple[bool, Any]:
    return (isinstance(k, str), k)


def random_keys(n: int, seed: int, pool: Sequence[Any] = POOL) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.integers(0, len(pool), size=n)]


def disjoint_keys(slices: list[slice], seed: int) -> list[Any]:
    """Keys where each rank's shard draws from its own part of the pool (rank-disjoint key sets)."""
    rng = np.random.default_rng(seed)
    pool = [*POOL, *range(-3, 3)]
    parts = np.array_split(np.arange(len(pool)), len(slices))
    keys: list[Any] = [None] * N
    for sl, part in zip(slices, parts):
        for i in range(sl.start, sl.stop):
            keys[i] = pool[int(rng.choice(part))]
    return keys


def oracle(metric: sm.Metric, arrays: Sequence[torch.Tensor], keys: Sequence[Any]) -> dict[Any, Any]:
    """The metric computed in one process on each key's samples, keys sorted (ints first)."""
    out = {}
    with sm.use_reducer(sm.local()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in sorted(set(keys), key=_order):
            sel = torch.tensor([type(x) is type(k) and x == k for x in keys])
            out[k] = metric.reset().update(*(a[sel] for a in arrays)).compute()
    return out


def rank_body(rank: int, metric: sm.Metric, arrays: Sequence[torch.Tensor], keys: Sequence[Any],
              slices: list[slice], seed: int) -> Any:
    """One rank: its shard in random batches into ``Sliced(metric)``, then compute under the reducer in scope."""
    m = Sliced(metric)
    for b in batches(slices[rank], seed + rank):
        m = m.update(*(a[b] for a in arrays), slice_keys=list(keys[b]))
    return m.compute()


def collection_body(rank: int, arrays: Sequence[torch.Tensor], keys: Sequence[Any], slices: list[slice]) -> Any:
    """A keyed Sliced reduced together with plain metrics (a whole-state merge among leaves), in one pass."""
    sl = slices[rank]
    keyed = Sliced(sm.MeanSquaredError()).update(arrays[0][sl], arrays[1][sl], slice_keys=keys[sl])
    plain = sm.Mean().update(arrays[0][sl]) if sl.stop > sl.start else sm.Mean()
    return sm.compute({"keyed": keyed, "mean": plain, "ids": Sliced(sm.Sum(), 2).update(
        arrays[0][sl], slice_ids=(arrays[1][sl] > 2).long())})


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_key_equals_the_metric_on_its_samples_on_uneven_shards(
    case: tuple[str, sm.Metric, tuple[str, ...]],
) -> None:
    _, metric, names = case
    arrays = [D[n] for n in names]
    for size in (1, 2, 3, 4):
        slices = uneven_slices(N, size, seed=size)
        for keys in (random_keys(N, seed=size), disjoint_keys(slices, seed=size)):
            expected = oracle(metric, arrays, keys)
            values = sm.simulate(lambda r, k=keys, s=slices: rank_body(r, metric, arrays, k, s, 7), size)
            for value in values:
                assert list(value) == list(expected)  # every key some rank saw, sorted, on every rank
                assert_close(value, expected)


def test_in_real_processes_with_an_empty_rank_and_other_metrics(world: Any) -> None:
    arrays = [D["x"], D["y"]]
    for slices in ([slice(0, 90), slice(90, N)], [slice(0, N), slice(N, N)]):  # rank-disjoint keys; an empty rank
        keys = disjoint_keys(slices, seed=5)
        expected = oracle(sm.MeanSquaredError(), arrays, keys)
        for value in world.run(collection_body, 2, arrays, keys, slices):
            assert list(value["keyed"]) == list(expected)
            assert_close(value["keyed"], expected)
            assert_close(value["mean"], D["x"].mean())


def test_a_reduction_gathers_the_whole_state_once() -> None:
    keys = random_keys(N, seed=3)

    def body(rank: int) -> Any:
        counting = CountingComm(sm.get_reducer().comm)  # type: ignore[union-attr]
        m = Sliced(sm.BinaryAccuracy()).update(D["prob"][rank::2], D["bin"][rank::2], slice_keys=keys[rank::2])
        with sm.use_reducer(Collective(counting)):
            return m.compute(), counting.calls

    (a, calls), (b, _) = sm.simulate(body, 2)
    assert calls == ["all_gather"]
    assert_close(a, b)
    assert_close(a, oracle(sm.BinaryAccuracy(), [D["prob"], D["bin"]], keys))


def test_the_entry_point_and_what_it_builds() -> None:
    for m in (Sliced(sm.Mean()), Sliced(sm.Mean(), None), Sliced(sm.Mean(), slices=None),
              Sliced(metric=sm.Mean()), KeyedSliced(sm.Mean())):
        assert type(m) is KeyedSliced and isinstance(m, Sliced) and m.slices is None
    assert type(Sliced(sm.Mean(), 3)) is Sliced and type(Sliced(sm.Mean(), ["a"])) is Sliced
    assert type(Sliced(sm.Mean()).reset()) is KeyedSliced and type(Sliced(sm.Mean(), 2).reset()) is Sliced
    assert list(inspect.signature(Sliced).parameters)[:2] == ["metric", "slices"]  # not __new__'s *args
    assert inspect.signature(Sliced).parameters["slices"].default is None
    with pytest.raises(TypeError, match="cat states or merges its whole state.*name the slices instead"):
        Sliced(sm.BinaryAUROC())
    with pytest.raises(TypeError, match="PearsonCorrCoef has cat states or merges its whole state"):
        Sliced(sm.PearsonCorrCoef())
    with pytest.raises(TypeError, match="KeyedSliced has cat states"):
        Sliced(Sliced(sm.Mean()))
    with pytest.raises(ValueError, match="must be a fresh metric"):
        Sliced(sm.Sum().update(torch.tensor(1.0)))
    with pytest.raises(TypeError, match="argument `slices` must be None"):
        KeyedSliced(sm.Mean(), 3)
    with pytest.warns(UserWarning, match="the state is empty"):
        assert Sliced(sm.Mean()).compute() == {}


def test_int_keys_tensor_keys_and_the_order() -> None:
    x = torch.arange(8.0)
    keys = [3, "b", -1, "a", 3, 2**70, "b", -1]
    m = Sliced(sm.Sum()).update(x, slice_keys=keys)
    assert list(m.compute()) == [-1, 3, 2**70, "a", "b"] and m.names == (-1, 3, 2**70, "a", "b")
    assert m.compute()[-1] == 2.0 + 7.0 and m.slice(2**70).compute() == 5.0
    t = torch.tensor([3, 3, -1, 8, 3, 8, 0, -1], dtype=torch.int32)
    by_tensor = Sliced(sm.Sum()).update(x, slice_keys=t)
    by_list = Sliced(sm.Sum()).update(x, slice_keys=t.tolist())
    assert list(by_tensor.compute()) == [-1, 0, 3, 8]
    assert_close(by_tensor.compute(), by_list.compute())
    both = by_tensor.update(x, slice_keys=keys)  # tensor and list int keys are the same keys
    assert list(both.compute()) == [-1, 0, 3, 8, 2**70, "a", "b"]
    assert_close(both.compute()[3], torch.tensor(0.0 + 1 + 4 + 0 + 4))
    with pytest.raises(KeyError, match="no slice with key True"):
        m.slice(True)


def test_tensor_keys_keep_their_lookup_as_keys_arrive() -> None:
    """Batches of tensor keys, some new (the sorted int keys grow in tensors), against the same keys as lists."""
    g = torch.Generator().manual_seed(11)
    by_tensor, by_list = Sliced(sm.Mean()), Sliced(sm.Mean())
    for step in range(12):
        keys = torch.randint(-5, 5 + 3 * step, (30,), generator=g) * 1000
        x = torch.randn(30, generator=g)
        by_tensor = by_tensor.update(x, slice_keys=keys)
        by_list = by_list.update(x, slice_keys=keys.tolist())
        if step % 4 == 3:  # string keys between them leave the int lookup valid
            by_tensor = by_tensor.update(x[:2], slice_keys=["s", "t"])
            by_list = by_list.update(x[:2], slice_keys=("s", "t"))
    assert list(by_tensor.compute()) == list(by_list.compute())
    assert_close(by_tensor.compute(), by_list.compute())
    mixed = by_list.update(torch.ones(2), slice_keys=torch.tensor([0, 123456789]))  # the lookup built from the keys
    assert mixed.compute()[123456789] == 1.0


def test_mask_forward_and_a_list_input_metric() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    keep = torch.tensor([True, False, True, False])
    m = Sliced(sm.Sum()).update(x, slice_keys=["a", "only-masked", "b", "a"], mask=keep)
    assert m.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(3.0)}
    merged, batch = m.forward(x, slice_keys=("c", "a", "c", "c"))
    assert batch == {"a": torch.tensor(2.0), "c": torch.tensor(8.0)}
    assert merged.compute() == {"a": torch.tensor(3.0), "b": torch.tensor(3.0), "c": torch.tensor(8.0)}

    class Words(sm.Metric):
        words: torch.Tensor = sm.state("sum", default=0)

        def update(self, sentences: list[str]) -> Words:
            return self.replace(words=self.words + sum(len(s.split()) for s in sentences))

        def compute(self) -> torch.Tensor:
            return self.words

    text = ["a b", "c", "d e f", "g h"]
    assert Sliced(Words()).update(text, slice_keys=["x", "y", "x", "z"]).compute() == {
        "x": torch.tensor(5), "y": torch.tensor(1), "z": torch.tensor(2)}


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "mape_general_path"], ids=lambda c: c[0])
def test_vectorised_hooks_match_the_general_path(case: tuple[str, sm.Metric, tuple[str, ...]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _, metric, names = case
    arrays = [D[n] for n in names]
    keys = random_keys(N, seed=4)
    fast = Sliced(metric).update(*arrays, slice_keys=keys)
    monkeypatch.setattr(_groups, "_HOOKS", {})
    slow = Sliced(metric).update(*arrays, slice_keys=keys)
    for (ka, a), (kb, b) in zip(fast.state_dict().items(), slow.state_dict().items()):
        assert ka == kb and a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_merge_aligns_keys_by_union() -> None:
    m = Sliced(sm.MeanSquaredError())
    keys = random_keys(N, seed=8)
    parts = [slice(0, 70), slice(70, 71), slice(71, N)]
    shards = [m.update(D["x"][p], D["y"][p], slice_keys=keys[p]) for p in parts]
    whole = m.update(D["x"], D["y"], slice_keys=keys)
    left = shards[0].merge(shards[1]).merge(shards[2])
    right = shards[0].merge(shards[1].merge(shards[2]))
    for merged in (left, right, shards[2].merge(shards[0]).merge(shards[1])):
        assert list(merged.compute()) == list(whole.compute())
        assert_close(merged.compute(), whole.compute())
    ab, ba = shards[0].merge(shards[2]), shards[2].merge(shards[0])
    assert all(torch.equal(a, b) for a, b in zip(ab.state_dict().values(), ba.state_dict().values()))
    assert shards[0].merge(m) is shards[0] and m.merge(shards[0]) is shards[0]
    assert m.merge(m) is m
    with pytest.raises(ValueError, match="configurations differ"):
        shards[0].merge(Sliced(sm.MeanSquaredError(squared=False)))
    with pytest.raises(TypeError, match="cannot merge with Sliced"):
        shards[0].merge(Sliced(sm.MeanSquaredError(), 3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reduced"):
        shards[0].reduce().merge(shards[1])
    # an update after a merge (the index rebuilt in sorted order) and after a reduction's gathered states
    more = left.update(D["x"][:5], D["y"][:5], slice_keys=["new", *keys[:4]])
    assert_close(more.compute()["new"], sm.MeanSquaredError().update(D["x"][:1], D["y"][:1]).compute())


def test_branches_sharing_a_key_index_stay_apart() -> None:
    """Updates of one parent that add different keys each keep theirs (the first claims the index, the next copies)."""
    base = Sliced(sm.Sum()).update(torch.tensor([1.0, 2.0]), slice_keys=["a", "b"])
    one = base.update(torch.tensor([10.0]), slice_keys=["x"])
    two = base.update(torch.tensor([20.0, 30.0]), slice_keys=["y", "x"])
    three = base.update(torch.tensor([5.0]), slice_keys=["x"])  # "x" is in the shared index, as another's row
    assert one.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(2.0), "x": torch.tensor(10.0)}
    assert two.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(2.0), "x": torch.tensor(30.0),
                             "y": torch.tensor(20.0)}
    assert three.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(2.0), "x": torch.tensor(5.0)}
    assert base.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(2.0)}
    assert one.update(torch.tensor([1.0]), slice_keys=["x"]).compute()["x"] == 11.0
    # a chain that adds a key per update extends one index in place; known keys leave the key tensors alone
    m = Sliced(sm.Sum())
    m = m.update(torch.tensor([0.0]), slice_keys=[0])
    index = m._index()[0]
    for k in range(1, 50):
        m = m.update(torch.tensor([1.0, 2.0]), slice_keys=[k, k - 1])
        assert m._index()[0] is index
    same = m.update(torch.tensor([1.0]), slice_keys=[7])
    assert same.key_bytes is m.key_bytes and same.key_lengths is m.key_lengths and same._index()[0] is index
    assert list(m.compute()) == list(range(50)) and m.compute()[49] == 1.0 and m.compute()[3] == 3.0


def test_ranks_in_threads_extending_one_parent() -> None:
    """``simulate``'s ranks are threads: each extends the same parent's key index with keys of its own."""
    parent = Sliced(sm.Sum()).update(torch.tensor([1.0]), slice_keys=["shared"])

    def body(rank: int) -> Any:
        m = parent
        for i in range(20):
            m = m.update(torch.tensor([1.0, 1.0]), slice_keys=[f"r{rank}-{i}", "shared"])
        return m.compute()

    for value in sm.simulate(body, 4):
        assert len(value) == 81 and value["shared"] == 4 * (1.0 + 20)  # each rank holds the parent's sample too
        assert all(v == 1.0 for k, v in value.items() if k != "shared")


@pytest.mark.parametrize("metric", [sm.Mean(), sm.BinaryAccuracy(), sm.MulticlassAccuracy(5, average=None)],
                         ids=["mean", "binary_acc", "mc_acc"])
def test_checkpoints_round_trip(metric: sm.Metric) -> None:
    arrays = [D["x"]] if isinstance(metric, sm.Mean) else \
        [D["prob"], D["bin"]] if isinstance(metric, sm.BinaryAccuracy) else [D["scores5"], D["labels5"]]
    keys = random_keys(N, seed=9, pool=[*POOL, 5, -5])
    m = Sliced(metric).update(*(a[:100] for a in arrays), slice_keys=keys[:100])
    m = m.update(*(a[100:] for a in arrays), slice_keys=keys[100:])
    saved = m.state_dict()
    assert list(saved)[-2:] == ["key_bytes", "key_lengths"]
    restored = Sliced(metric).load_state_dict(saved)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    for other in (restored, torch.load(buf), pickle.loads(pickle.dumps(m))):
        assert type(other) is KeyedSliced
        assert list(other.compute()) == list(m.compute())
        assert_close(other.compute(), m.compute())
        again = other.update(*(a[:3] for a in arrays), slice_keys=["brand new", *keys[:2]])
        assert_close(again.compute(), m.update(*(a[:3] for a in arrays), slice_keys=["brand new", *keys[:2]]).compute())
    assert_close(Sliced(metric).load_state_dict(Sliced(metric).state_dict()).state_dict(), Sliced(metric).state_dict())


def test_bad_checkpoints_are_refused() -> None:
    m = Sliced(sm.Sum()).update(torch.tensor([1.0, 2.0, 3.0]), slice_keys=["a", 12, "a"])
    good = m.state_dict()
    fresh = Sliced(sm.Sum())
    cases = [
        ({**good, "counts": torch.tensor([2, 1, 0])}, "2 keys but state rows"),
        ({**good, "key_lengths": torch.tensor([2, 2])}, "do not cut key_bytes"),
        ({**good, "key_bytes": torch.tensor(list(b"sa?12"), dtype=torch.uint8)}, "not an encoded key"),
        ({**good, "key_bytes": torch.tensor(list(b"sai01"), dtype=torch.uint8),
          "key_lengths": torch.tensor([2, 3])}, "not an encoded key"),  # "01" is not how 1 is written
        ({**good, "key_bytes": torch.tensor(list(b"sasa"), dtype=torch.uint8),
          "key_lengths": torch.tensor([2, 2])}, "more than once"),
        ({k: v for k, v in good.items() if k != "key_bytes"}, "missing keys"),
        ({**good, "key_bytes": good["key_bytes"].long()}, "dtype"),
    ]
    for bad, match in cases:
        with pytest.raises(ValueError, match=f"KeyedSliced.load_state_dict: .*{match}"):
            fresh.load_state_dict(bad)
    assert fresh.load_state_dict(good).compute() == {12: torch.tensor(2.0), "a": torch.tensor(4.0)}


@pytest.mark.parametrize(
    ("keys", "error", "match"),
    [
        (["a", "b"], ValueError, "`slice_keys` has 2 entries but argument 0 has 3 along dim 0"),
        (["a", ["b"], "c"], TypeError, r"argument `slice_keys` must hold str or int keys, got an unhashable list"),
        (["a", float("nan"), "c"], TypeError, r"got a float \(nan\): float keys are refused"),
        (["a", 1.0, "c"], TypeError, r"got a float \(1.0\)"),
        (["a", True, "c"], TypeError, r"got a bool \(True\), which would be the same key as the int 1"),
        (["a", ("b",), "c"], TypeError, r"got a tuple \(\('b',\)\)"),
        ("abc", TypeError, "must be a list or tuple of str or int keys .* got str"),
        (None, TypeError, "must be a list or tuple .* got nothing"),
        (np.array(["a", "b", "c"]), TypeError, "got ndarray"),
        (torch.tensor([0.0, 1.0, 2.0]), TypeError, "as a tensor must hold integer keys, got torch.float32"),
        (torch.tensor([True, False, True]), TypeError, "as a tensor must hold integer keys, got torch.bool"),
        (torch.tensor([[0, 1, 2]]), ValueError, r"must be 1-d \(one key per sample\)"),
        (torch.tensor([0, 1]), ValueError, "`slice_keys` has 2 entries but argument 0 has 3"),
    ],
)
@pytest.mark.parametrize("metric", [sm.BinaryAccuracy(), sm.Mean(), sm.MeanSquaredError()],
                         ids=["binary_accuracy", "mean", "mse"])
def test_bad_keys_are_clear_errors_and_change_nothing(keys: Any, error: type[Exception], match: str,
                                                      metric: sm.Metric) -> None:
    batch = functools.partial(_batch, metric)
    m = Sliced(metric).update(*batch(1, 0), slice_keys=["a", 7])
    before = _state(m)
    with pytest.raises(error, match="Sliced.update: .*" + match):
        m.update(*batch(1, 0, 1), slice_keys=keys)
    assert _state(m).keys() == before.keys() and all(torch.equal(before[k], v) for k, v in _state(m).items())
    assert m._index()[0].keys == ["a", 7]  # the shared index was not extended either
    assert list(m.update(*batch(1, 0, 1), slice_keys=["z", "a", 7]).compute()) == [7, "a", "z"]


def test_mixing_slice_ids_and_slice_keys_is_refused() -> None:
    keyed = Sliced(sm.Sum())
    with pytest.raises(TypeError, match="Sliced.update: argument `slice_ids` indexes slices fixed"):
        keyed.update(torch.ones(2), slice_keys=["a", "b"], slice_ids=torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="Sliced.update: argument `slice_ids` indexes slices fixed"):
        keyed.update(torch.ones(2), slice_ids=torch.tensor([0, 1]))
    fixed = Sliced(sm.Sum(), 2)
    with pytest.raises(TypeError, match="Sliced.update: argument `slice_keys` is for slices found at run time"):
        fixed.update(torch.ones(2), slice_keys=["a", "b"], slice_ids=torch.tensor([0, 1]))


def test_a_bad_batch_is_the_wrapped_metrics_error_and_claims_no_key() -> None:
    m = Sliced(sm.BinaryAccuracy()).update(torch.tensor([1]), torch.tensor([1]), slice_keys=["a"])
    with pytest.raises(ValueError, match="BinaryAccuracy.update: argument `target` has values outside"):
        m.update(torch.tensor([1, 0]), torch.tensor([1, 7]), slice_keys=["new", "a"])
    assert m._index()[0].keys == ["a"]
    ok = m.update(torch.tensor([1, 0]), torch.tensor([1, 1]), slice_keys=["new", "a"])
    assert ok.compute() == {"a": torch.tensor(0.5), "new": torch.tensor(1.0)} and ok._index()[0] is m._index()[0]


def test_normalised_key_types() -> None:
    class Code(str):
        pass

    m = Sliced(sm.Sum()).update(torch.tensor([1.0, 2.0, 3.0]), slice_keys=[Code("en"), np.int64(4).item(), "en"])
    assert m.compute() == {4: torch.tensor(2.0), "en": torch.tensor(4.0)}
    assert all(type(k) in (str, int) for k in m.compute())
