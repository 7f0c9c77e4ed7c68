"""Random uneven shards (empty ones included) and the checks every metric must pass.

``check_sharded`` runs a metric over a data set split across 1-4 simulated
ranks (and, when given a ``world``, real gloo ranks) and compares the reduced
value with an oracle value and with the ``merge`` fold of the shards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import optree
import torch

import scopedmetrics as sm


def uneven_slices(n: int, parts: int, seed: int) -> list[slice]:
    """``parts`` contiguous slices covering ``range(n)``; sizes random, often some empty."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, n + 1, size=parts - 1))
    if parts > 1 and rng.random() < 0.5:  # force an empty shard half of the time
        cuts[rng.integers(0, parts - 1)] = cuts[0] if rng.random() < 0.5 else n
        cuts = np.sort(cuts)
    bounds = [0, *cuts.tolist(), n]
    return [slice(bounds[i], bounds[i + 1]) for i in range(parts)]


def batches(sl: slice, seed: int) -> list[slice]:
    """Split one shard into random batches (possibly a single one)."""
    rng = np.random.default_rng(seed)
    size = sl.stop - sl.start
    k = int(rng.integers(1, 4))
    cuts = np.sort(rng.integers(0, size + 1, size=k - 1)) + sl.start
    bounds = [sl.start, *cuts.tolist(), sl.stop]
    return [slice(bounds[i], bounds[i + 1]) for i in range(k) if bounds[i + 1] > bounds[i]]


def fold(metric: sm.Metric, arrays: Sequence[torch.Tensor], sl: slice, seed: int, **kwargs: Any) -> sm.Metric:
    """``metric`` updated with the rows of ``arrays`` in ``sl``, batch by batch."""
    m = metric.reset()
    for b in batches(sl, seed):
        m = m.update(*(a[b] for a in arrays), **kwargs)
    return m


def shard_case(rank: int, metric: sm.Metric, arrays: Sequence[torch.Tensor], slices: list[slice], seed: int,
               kwargs: dict[str, Any]) -> Any:
    """One rank's body: update with its shard, compute under the reducer in scope."""
    return fold(metric, arrays, slices[rank], seed + rank, **kwargs).compute()


def assert_close(actual: Any, expected: Any, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Compare values (tensors, arrays, numbers, or pytrees of them), NaN equal to NaN."""
    a_leaves, a_spec = optree.tree_flatten(actual)
    e_leaves, e_spec = optree.tree_flatten(expected)
    assert a_spec == e_spec, f"structure {a_spec} != {e_spec}"
    for a, e in zip(a_leaves, e_leaves):
        a_t = torch.as_tensor(a).double().cpu()
        e_t = torch.as_tensor(np.asarray(e)).double().cpu()
        assert a_t.shape == e_t.shape, f"shape {tuple(a_t.shape)} != {tuple(e_t.shape)}"
        torch.testing.assert_close(a_t, e_t, atol=atol, rtol=rtol, equal_nan=True)


def check_sharded(
    metric: sm.Metric,
    arrays: Sequence[torch.Tensor],
    expected: Any,
    *,
    seed: int = 0,
    world_sizes: Sequence[int] = (1, 2, 3, 4),
    world: Any = None,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    **kwargs: Any,
) -> None:
    """The contract's invariant for one metric and data set, against an oracle value.

    For each world size: every rank's reduced value equals ``expected``, and so
    does the ``merge`` fold of the shards computed locally. With ``world`` (the
    conftest fixture) the distributed run uses that world's kind instead of
    ``simulate`` only.
    """
    n = int(arrays[0].shape[0])
    for size in world_sizes:
        slices = uneven_slices(n, size, seed + size)
        shards = [fold(metric, arrays, sl, seed + size + r, **kwargs) for r, sl in enumerate(slices)]
        merged = shards[0]
        for s in shards[1:]:
            merged = merged.merge(s)
        with sm.use_reducer(sm.local()):
            assert_close(merged.compute(), expected, atol, rtol)
        if size == 1:
            continue
        if world is None:
            values = sm.simulate(lambda r, sl=slices, n=size: shard_case(r, metric, arrays, sl, seed + n, kwargs), size)
        else:
            values = world.run(shard_case, size, metric, arrays, slices, seed + size, kwargs)
        for v in values:
            assert_close(v, expected, atol, rtol)
