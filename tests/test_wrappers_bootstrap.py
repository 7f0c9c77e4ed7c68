"""BootStrapper: counter-based weights (independent of world size, sharding and batching), oracles, one pass."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pytest
import torch
from shards import assert_close, batches, uneven_slices
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics.reducers import Collective
from scopedmetrics.wrappers import BootStrapper
from scopedmetrics.wrappers.bootstrap import mix64, poisson_counts, uniforms

N = 300
G = torch.Generator().manual_seed(0)
PROB = torch.rand(N, generator=G)
LABEL = torch.randint(0, 2, (N,), generator=G)
X = torch.randn(N, generator=G)
Y = torch.randn(N, generator=G)
IDS = torch.arange(N) * 7 + 11  # any unique ids


def _reference_mix(x: int) -> int:
    """splitmix64's finalizer in Python integers: the oracle of the int64 tensor version."""
    x &= (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    x ^= x >> 31
    return x - (1 << 64) if x >= 1 << 63 else x


def test_the_hash_is_splitmix64_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    xs = [0, 1, -1, 2**63 - 1, -(2**63), *rng.integers(-(2**63), 2**63 - 1, size=200, dtype=np.int64).tolist()]
    assert mix64(torch.tensor(xs, dtype=torch.int64)).tolist() == [_reference_mix(x) for x in xs]


def test_weights_are_poisson_one_and_depend_on_seed_id_and_replicate_only() -> None:
    counts = poisson_counts(0, torch.arange(200_000), 2).double()
    assert abs(counts.mean().item() - 1) < 0.01 and abs(counts.var().item() - 1) < 0.02
    assert abs((counts == 0).double().mean().item() - math.exp(-1)) < 0.005
    assert abs((counts == 2).double().mean().item() - math.exp(-1) / 2) < 0.005
    ids = torch.tensor([5, 9, 5])
    u = uniforms(1, ids, 4)
    assert torch.equal(u[:, 0], u[:, 2]) and not torch.equal(u[:, 0], u[:, 1])
    assert torch.equal(uniforms(1, ids[:1], 4)[:, 0], u[:, 0])  # the batch around a sample changes nothing
    assert not torch.equal(uniforms(2, ids, 4), u)
    assert torch.corrcoef(counts)[0, 1].abs() < 0.01  # replicates are independent


def rank_body(rank: int, metric: BootStrapper, arrays: list[torch.Tensor], slices: list[slice], seed: int) -> Any:
    m = metric.reset()
    for b in batches(slices[rank], seed + rank):
        m = m.update(*(a[b] for a in arrays[:-1]), sample_ids=arrays[-1][b])
    return m.compute()


@pytest.mark.parametrize("base", [sm.BinaryAccuracy(), sm.MeanSquaredError(), sm.BinaryAUROC()],
                         ids=["accuracy", "mse", "auroc-per-replicate"])
def test_the_interval_does_not_depend_on_world_size_sharding_or_batching(base: sm.Metric) -> None:
    boot = BootStrapper(base, num_bootstraps=12, quantile=(0.1, 0.9), raw=True, seed=5)
    arrays = [PROB, LABEL, IDS] if not isinstance(base, sm.MeanSquaredError) else [X, Y, IDS]
    perm = torch.randperm(N, generator=torch.Generator().manual_seed(1))  # another order of the same samples
    results = []
    for size, order in [(1, None), (2, None), (3, perm), (3, None)]:
        data = arrays if order is None else [a[order] for a in arrays]
        slices = uneven_slices(N, size, seed=size)
        results += sm.simulate(lambda r, d=data, s=slices, k=size: rank_body(r, boot, d, s, k), size)
    exact = not isinstance(base, sm.MeanSquaredError)  # integer counts are exact; float sums differ in order only
    for other in results[1:]:
        if exact:
            assert all(torch.equal(other[k], results[0][k]) for k in results[0])
        else:
            assert_close(other, results[0], atol=1e-5, rtol=1e-5)


def test_each_replicate_is_the_metric_on_its_resampled_rows() -> None:
    boot = BootStrapper(sm.MeanSquaredError(), num_bootstraps=8, raw=True, seed=9)
    raw = boot.update(X, Y, sample_ids=IDS).compute()["raw"]
    counts = poisson_counts(9, IDS, 8).numpy()
    for b in range(8):
        xs, ys = np.repeat(X.numpy(), counts[b]), np.repeat(Y.numpy(), counts[b])
        assert_close(raw[b], ((xs - ys) ** 2).mean())


def test_statistics_follow_torchmetrics_layout() -> None:
    boot = BootStrapper(sm.Mean(), num_bootstraps=30, quantile=torch.tensor([0.05, 0.95]), raw=True)
    out = boot.update(X, sample_ids=IDS).compute()
    assert set(out) == {"mean", "std", "quantile", "raw"}
    raw = out["raw"]
    assert raw.shape == (30,)
    assert_close(out["mean"], raw.mean())
    assert_close(out["std"], raw.std())
    assert_close(out["quantile"], torch.quantile(raw, torch.tensor([0.05, 0.95])))
    tm = pytest.importorskip("torchmetrics")
    theirs = tm.wrappers.BootStrapper(tm.MeanMetric(), num_bootstraps=30, quantile=torch.tensor([0.05, 0.95]), raw=True)
    theirs.update(X)
    ref = theirs.compute()
    assert set(ref) == set(out) and all(ref[k].shape == out[k].shape for k in out)
    assert abs(out["mean"] - X.mean()) < 4 * X.std() / math.sqrt(N)  # both centre on the value
    only_mean = BootStrapper(sm.Mean(), std=False).update(X, sample_ids=IDS).compute()
    assert list(only_mean) == ["mean"]


def test_without_sample_ids_each_participant_draws_from_the_global_generator() -> None:
    boot = BootStrapper(sm.Sum(), num_bootstraps=5, raw=True)
    torch.manual_seed(3)
    a = boot.update(torch.ones(50)).compute()["raw"]
    torch.manual_seed(3)
    b = boot.update(torch.ones(50)).compute()["raw"]
    assert torch.equal(a, b) and not bool((a == 50).all())  # Poisson totals: reproducible, not all 50
    multi = BootStrapper(sm.Sum(), num_bootstraps=5, raw=True, sampling_strategy="multinomial")
    assert multi.update(torch.ones(50)).compute()["raw"].tolist() == [50.0] * 5  # N of the N rows each time
    with pytest.raises(ValueError, match="sample_ids need sampling_strategy='poisson'"):
        multi.update(torch.ones(3), sample_ids=torch.arange(3))


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        (torch.tensor([0.0, 1.0]), TypeError, "`sample_ids` must be an integer tensor, got torch.float32"),
        (torch.tensor([[0, 1]]), ValueError, r"`sample_ids` must be 1-d"),
        (torch.tensor([0, 1, 2]), ValueError, "`sample_ids` has 3 entries but argument 0 has 2"),
    ],
)
def test_bad_sample_ids_are_clear_errors(ids: torch.Tensor, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match="BootStrapper.update: .*" + match):
        BootStrapper(sm.MeanSquaredError()).update(torch.zeros(2), torch.zeros(2), sample_ids=ids)


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="sampling_strategy` must be one of"):
        BootStrapper(sm.Mean(), sampling_strategy="jackknife")
    with pytest.raises(ValueError, match="num_bootstraps` must be at least 1"):
        BootStrapper(sm.Mean(), num_bootstraps=0)
    with pytest.raises(ValueError, match=r"quantile` must lie in \[0, 1\]"):
        BootStrapper(sm.Mean(), quantile=1.5)
    with pytest.raises(TypeError, match="argument `mean` must be a bool"):
        BootStrapper(sm.Mean(), mean=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="argument `metric` must be a scopedmetrics Metric"):
        BootStrapper(3)  # type: ignore[arg-type]


def _calls(metric: sm.Metric) -> list[str]:
    def body(rank: int) -> list[str]:
        m = metric.update(X[rank::2], Y[rank::2], sample_ids=IDS[rank::2]) if isinstance(metric, BootStrapper) \
            else metric.update(X[rank::2], Y[rank::2])
        counting = CountingComm(sm.get_reducer().comm)  # type: ignore[union-attr]
        with sm.use_reducer(Collective(counting)):
            m.compute()
        return list(counting.calls)

    a, b = sm.simulate(body, 2)
    assert a == b
    return a


def test_a_hundred_replicates_reduce_in_one_pass() -> None:
    one = _calls(sm.MeanSquaredError())
    assert one == ["all_gather"]
    assert _calls(BootStrapper(sm.MeanSquaredError(), num_bootstraps=100)) == one


def test_checkpoints_round_trip_and_merge() -> None:
    boot = BootStrapper(sm.BinaryAUROC(), num_bootstraps=4, raw=True)
    m = boot.update(PROB, LABEL, sample_ids=IDS)
    assert_close(boot.load_state_dict(m.state_dict()).compute(), m.compute())
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    assert_close(torch.load(buf).compute(), m.compute())
    half = boot.update(PROB[:100], LABEL[:100], sample_ids=IDS[:100]).merge(
        boot.update(PROB[100:], LABEL[100:], sample_ids=IDS[100:]))
    assert_close(half.compute(), m.compute())


def bootstrap_in_processes(rank: int, arrays: list[torch.Tensor]) -> Any:
    boot = BootStrapper(sm.BinaryAccuracy(), num_bootstraps=10, raw=True, seed=1)
    sl = uneven_slices(N, 2, seed=4)[rank]
    return boot.update(arrays[0][sl], arrays[1][sl], sample_ids=arrays[2][sl]).compute()


def test_bootstrap_in_real_processes(world: Any) -> None:
    expected = BootStrapper(sm.BinaryAccuracy(), num_bootstraps=10, raw=True, seed=1).update(
        PROB, LABEL, sample_ids=IDS).compute()
    for value in world.run(bootstrap_in_processes, 2, [PROB, LABEL, IDS]):
        assert all(torch.equal(value[k], expected[k]) for k in expected)
