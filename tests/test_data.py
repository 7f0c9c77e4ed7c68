"""sm.data: every dataset index kept exactly once under a padded DistributedSampler, at any size."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler

import scopedmetrics as sm


def kept_indices(n: int, world: int, batch: int, shuffle: bool, drop_last: bool, seed: int) -> list[list[int]]:
    data = torch.arange(n)
    out = []
    for rank in range(world):
        sampler = DistributedSampler(
            data, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
        )
        loader = DataLoader(data, batch_size=batch, sampler=sampler)
        mine = []
        for b, keep in sm.data.exact(loader):
            assert keep.dtype == torch.bool and keep.shape == b.shape[:1]
            mine += b[keep].tolist()
        assert len(mine) == sampler.num_samples - sm.data.repeated(sampler)
        out.append(mine)
    return out


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 60), world=st.integers(1, 8), batch=st.integers(1, 9), shuffle=st.booleans(),
    drop_last=st.booleans(), seed=st.integers(0, 3),
)  # fmt: skip
def test_kept_samples_are_each_dataset_index_exactly_once(
    n: int, world: int, batch: int, shuffle: bool, drop_last: bool, seed: int
) -> None:
    if drop_last and n < world:
        return  # no sample for anyone
    kept = sorted(i for mine in kept_indices(n, world, batch, shuffle, drop_last, seed) for i in mine)
    if drop_last:
        assert len(kept) == len(set(kept)) and len(kept) == world * (n // world)  # the tail is dropped, no repeats
    else:
        assert kept == list(range(n))


def test_keep_mask_matches_exact_batch_by_batch() -> None:
    data = torch.arange(23)
    for rank in range(4):
        sampler = DistributedSampler(data, num_replicas=4, rank=rank, shuffle=True, seed=1)
        for i, (_, keep) in enumerate(sm.data.exact(DataLoader(data, batch_size=4, sampler=sampler))):
            assert torch.equal(keep, sm.data.keep_mask(sampler, i, 4))


def test_a_metric_through_exact_gives_the_single_process_value() -> None:
    """The mission's case in miniature: 101 samples, 2 ranks; padded, the per-rank data would count one twice."""
    g = torch.Generator().manual_seed(0)
    scores, labels = torch.rand(101, generator=g), torch.randint(0, 2, (101,), generator=g)
    data = torch.utils.data.TensorDataset(scores, labels)
    truth = sm.BinaryAccuracy().update(scores, labels).compute()

    def rank_fn(rank: int) -> tuple[float, int]:
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True)
        exact, seen = sm.BinaryAccuracy(), sm.Sum()
        for (s, y), keep in sm.data.exact(DataLoader(data, batch_size=8, sampler=sampler)):
            exact = exact.update(s, y, mask=keep)
            seen = seen.update(torch.ones(len(s)))
        values = sm.compute({"exact": exact, "seen": seen})
        return float(values["exact"]), int(values["seen"])

    for value, seen in sm.simulate(rank_fn, 2):
        assert value == pytest.approx(float(truth))
        assert seen == 102  # the ranks ran the padded, even steps; the metric left the repeat out


def test_batch_sampler_and_dict_batches() -> None:
    data = [{"x": torch.tensor([float(i)])} for i in range(7)]
    sampler = DistributedSampler(data, num_replicas=3, rank=2, shuffle=False)
    loader = DataLoader(data, batch_sampler=torch.utils.data.BatchSampler(sampler, batch_size=2, drop_last=False))
    got = [(b["x"].flatten().tolist(), k.tolist()) for b, k in sm.data.exact(loader)]
    assert got == [([2.0, 5.0], [True, True]), ([1.0], [False])]


UNPADDED = [DataLoader(torch.arange(4)), DataLoader(torch.arange(4), sampler=RandomSampler(range(4)))]


@pytest.mark.parametrize("bad", UNPADDED)
def test_a_loader_without_a_distributed_sampler_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="needs a DataLoader whose sampler .* is a DistributedSampler"):
        next(sm.data.exact(bad))
    with pytest.raises(TypeError, match="needs a torch.utils.data.DistributedSampler"):
        sm.data.repeated(bad.sampler)


def test_a_loader_of_single_samples_is_refused() -> None:
    # batch_size=None yields unbatched samples: the first dim of a (4,) sample was read as a batch of 4
    data = torch.arange(20.0).reshape(5, 4)
    loader = DataLoader(data, batch_size=None, sampler=DistributedSampler(data, num_replicas=2, rank=0))
    with pytest.raises(ValueError, match="needs a batching DataLoader: with batch_size=None"):
        next(sm.data.exact(loader))
