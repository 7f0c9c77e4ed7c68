"""Whole-state merges at scale: Chan's moments fold as a pairwise tree from ``TREE_MIN`` ranks.

The states of every rank are read from the gathered buffer by one indexing
operation and merged level by level (``_kernels.folds``). Checked here: values
against one-process oracles on uneven shards with empty ranks, the same bits
on every rank, on one root, and by the peer-by-peer path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.stats
import torch
from shards import assert_close, uneven_slices
from sklearn.metrics import explained_variance_score, r2_score

import scopedmetrics as sm
import scopedmetrics.exchange as exchange
from scopedmetrics._kernels import folds
from scopedmetrics.wrappers import Sliced

N = 301


def _data(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, 2, generator=g) * 3 + 50
    return {"x": x, "y": x * 0.5 + torch.randn(N, 2, generator=g), "k": torch.randint(0, 3, (N,), generator=g)}


def _tree(rank: int, size: int, seed: int, mixed: bool) -> dict[str, Any]:
    d = _data(seed)
    mine = uneven_slices(N, size, seed)[rank]
    x, y = d["x"][mine], d["y"][mine]
    tree: dict[str, Any] = {
        "pearson": sm.PearsonCorrCoef(num_outputs=2), "r2": sm.R2Score(num_outputs=2, multioutput="raw_values"),
        "ev": sm.ExplainedVariance(), "ccc": sm.ConcordanceCorrCoef(), "rows": sm.Cat(),
    }
    if len(x):
        tree = {"pearson": tree["pearson"].update(x, y), "r2": tree["r2"].update(x, y),
                "ev": tree["ev"].update(x[:, 0], y[:, 0]), "ccc": tree["ccc"].update(x[:, 1], y[:, 1]),
                "rows": tree["rows"].update(x[:, 0])}
    if mixed:  # a merge that does not stack: every state is read peer by peer
        keys = [int(k) for k in d["k"][mine]]
        tree["sliced"] = Sliced(sm.Mean()).update(x[:, 0], slice_keys=keys) if keys else Sliced(sm.Mean())
    return tree


def values_case(rank: int, size: int, seed: int, mixed: bool) -> list[Any]:
    tree = _tree(rank, size, seed, mixed)
    return [sm.compute(tree), sm.compute(tree, root=size - 1)]


def _leaves(values: Any) -> list[torch.Tensor]:
    return [torch.as_tensor(v) for v in torch.utils._pytree.tree_leaves(values)]


def _same_bits(a: Any, b: Any) -> bool:
    return all(x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(_leaves(a), _leaves(b), strict=True))


def _oracle(seed: int) -> dict[str, Any]:
    d = _data(seed)
    x, y = d["x"].double().numpy(), d["y"].double().numpy()
    return {
        "pearson": [scipy.stats.pearsonr(x[:, j], y[:, j])[0] for j in range(2)],
        "r2": r2_score(y, x, multioutput="raw_values"),
        "ev": explained_variance_score(y[:, 0], x[:, 0]),
        "ccc": 2 * np.cov(x[:, 1], y[:, 1], bias=True)[0, 1]
        / (x[:, 1].var() + y[:, 1].var() + (x[:, 1].mean() - y[:, 1].mean()) ** 2),
    }


def _check(results: list[list[Any]], seed: int) -> None:
    first = results[0][0]
    for everywhere, rooted in results:
        assert _same_bits(everywhere, first) and _same_bits(rooted, first)
    oracle = _oracle(seed)
    for name, want in oracle.items():
        assert_close(first[name], torch.as_tensor(np.asarray(want), dtype=torch.float64).float(), atol=1e-4,
                     rtol=1e-3)


@pytest.mark.parametrize(("size", "seed", "mixed"), [(8, 1, False), (11, 2, False), (11, 3, True), (33, 4, False)])
def test_the_tree_fold_gives_the_oracle_values_and_the_same_bits_everywhere(size: int, seed: int,
                                                                             mixed: bool) -> None:
    _check(sm.simulate(lambda rank: values_case(rank, size, seed, mixed), size), seed)


@pytest.mark.parametrize("size", [8, 33])  # the gather plan, and the reduce plan (from 32 ranks)
def test_stacked_states_read_from_the_buffer_are_those_read_peer_by_peer(size: int,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[bool] = []
    original = exchange._stacked_merges

    def recording(*args: Any) -> Any:
        out = original(*args)
        read.append(out is not None)
        return out

    monkeypatch.setattr(exchange, "_stacked_merges", recording)
    fast = sm.simulate(lambda rank: values_case(rank, size, 5, False)[0], size)
    assert read and all(read)
    monkeypatch.setattr(exchange, "_stacked_merges", lambda *args: None)
    slow = sm.simulate(lambda rank: values_case(rank, size, 5, False)[0], size)
    assert all(_same_bits(a, b) for a, b in zip(fast, slow))


def test_below_tree_min_ranks_the_fold_is_in_rank_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folds, "stacked_fold", lambda s: pytest.fail("the tree ran below TREE_MIN"))
    results = sm.simulate(lambda rank: values_case(rank, folds.TREE_MIN - 1, 6, False), folds.TREE_MIN - 1)
    _check(results, 6)


def gloo_case(rank: int, seed: int) -> list[Any]:
    return values_case(rank, 8, seed, False)


def test_the_tree_fold_in_eight_gloo_processes() -> None:
    from conftest import _POOLS, gloo_world

    try:
        results = gloo_world(8).run(gloo_case, 7)
    finally:  # no other test needs eight processes: do not keep them for the rest of the suite
        _POOLS.pop(8).close()
    _check(results, 7)
    assert _same_bits(results[0][0], sm.simulate(lambda rank: gloo_case(rank, 7)[0], 8)[0])


def test_a_subclass_with_a_merge_of_its_own_folds_in_rank_order() -> None:
    class Traced(sm.PearsonCorrCoef):
        def merge(self, other: Any) -> Any:  # element-wise or not: it does not say, so no stacking
            return super().merge(other)

    class Inherited(sm.PearsonCorrCoef):
        pass

    assert sm.PearsonCorrCoef._merge_stacks and Inherited._merge_stacks and not Traced._merge_stacks
    assert not sm.Mean._merge_stacks and not Sliced(sm.Mean())._merge_stacks
