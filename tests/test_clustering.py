"""Clustering metrics against scikit-learn and TorchMetrics, over random uneven shards (empty ranks included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded

import scopedmetrics as sm
import scopedmetrics.clustering as smcl
from scopedmetrics.clustering.contingency import _compacted, _compacted_rows

skm = pytest.importorskip("sklearn.metrics")
tmcl = pytest.importorskip("torchmetrics.clustering")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SKLEARN = {
    "MutualInfoScore": lambda t, p, **k: skm.mutual_info_score(t, p),
    "NormalizedMutualInfoScore": lambda t, p, **k: skm.normalized_mutual_info_score(t, p, **k),
    "AdjustedMutualInfoScore": lambda t, p, **k: skm.adjusted_mutual_info_score(t, p, **k),
    "RandScore": lambda t, p, **k: skm.rand_score(t, p),
    "AdjustedRandScore": lambda t, p, **k: skm.adjusted_rand_score(t, p),
    "HomogeneityScore": lambda t, p, **k: skm.homogeneity_score(t, p),
    "CompletenessScore": lambda t, p, **k: skm.completeness_score(t, p),
    "VMeasureScore": lambda t, p, **k: skm.v_measure_score(t, p, **k),
    "FowlkesMallowsIndex": lambda t, p, **k: skm.fowlkes_mallows_score(t, p),
}
CONFIGS: list[tuple[str, dict[str, Any]]] = [(n, {}) for n in SKLEARN]
CONFIGS += [("NormalizedMutualInfoScore", {"average_method": m}) for m in ("min", "geometric", "max")]
CONFIGS += [("AdjustedMutualInfoScore", {"average_method": m}) for m in ("min", "geometric", "max")]
CONFIGS += [("VMeasureScore", {"beta": 0.5}), ("VMeasureScore", {"beta": 3.0})]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]


def labels(n: int, seed: int, k_pred: int = 5, k_true: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """Correlated cluster ids with arbitrary (negative, sparse, large) values that no one declared up front."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, k_true, (n,), generator=g)
    noise = torch.randint(0, k_pred, (n,), generator=g)
    preds = torch.where(torch.rand(n, generator=g) < 0.6, target, noise)
    ids = torch.tensor([-7, 3, 10**12, 42, 5, 0, 99])
    return ids[preds], target * 3 - 2


def sklearn_value(name: str, preds: torch.Tensor, target: torch.Tensor, **kw: Any) -> float:
    return float(SKLEARN[name](target.numpy(), preds.numpy(), **kw))


@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_sharded_equals_sklearn(name: str, kw: dict[str, Any], seed: int) -> None:
    preds, target = labels(150, seed)
    expected = sklearn_value(name, preds, target, **kw)
    check_sharded(getattr(smcl, name)(**kw), (preds, target), torch.tensor(expected), seed=seed, atol=1e-6)


@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
def test_equals_torchmetrics(name: str, kw: dict[str, Any]) -> None:
    preds, target = labels(200, 5)
    preds = torch.unique(preds, return_inverse=True)[1]  # TorchMetrics' own ids, small and non-negative
    theirs = getattr(tmcl, name)(**kw)
    theirs.update(preds, target)
    with sm.use_reducer(sm.local()):
        ours = getattr(smcl, name)(**kw).update(preds, target).compute()
    assert_close(ours, theirs.compute(), atol=1e-5)


@pytest.mark.parametrize("method", ["min", "geometric", "arithmetic", "max"])
def test_adjusted_mutual_info_with_one_side_all_singletons_is_exact(method: str) -> None:
    # MI and its expectation are equal there, and their computed difference was rounding noise:
    # identical singleton labelings scored 1.0833, 0.6667, 0.0, 1.1765 at n = 10, 14, 16, 18 (scikit-learn: 1.0)
    g = torch.Generator().manual_seed(3)
    for n in range(2, 80):
        ids = torch.arange(n)
        with sm.use_reducer(sm.local()):
            same = smcl.AdjustedMutualInfoScore(method).update(ids, ids.flip(0) + 7).compute().item()
            other = torch.randint(0, 3, (n,), generator=g)
            vs = smcl.AdjustedMutualInfoScore(method).update(ids, other).compute().item()
            flipped = smcl.AdjustedMutualInfoScore(method).update(other, ids).compute().item()
        assert same == 1.0, n
        if len(other.unique()) > 1:  # one cluster on a side is scikit-learn's 0.0, tested below
            want = 1.0 if method == "min" or len(other.unique()) == n else 0.0
            assert vs == flipped == want, (n, vs, flipped)
            if method != "min":  # scikit-learn's "min" is rounding noise here (docs/clustering.md)
                theirs = skm.adjusted_mutual_info_score(other.numpy(), ids.numpy(), average_method=method)
                assert abs(want - theirs) < 1e-9


@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("case", ["one_cluster_both", "one_cluster_pred", "one_cluster_pred_10", "one_cluster_target",
                                  "all_singletons", "identical", "two"])
def test_degenerate_labelings_as_sklearn(name: str, kw: dict[str, Any], case: str) -> None:
    if name == "AdjustedMutualInfoScore" and case == "all_singletons" and kw.get("average_method") == "min":
        # 0/0: mutual information, its expectation and the normalizer are all equal; sklearn's -1 is its rounding,
        # we follow its rule for a perfect match (documented in docs/clustering.md)
        with sm.use_reducer(sm.local()):
            got = smcl.AdjustedMutualInfoScore(**kw).update(torch.arange(6), torch.tensor([0, 0, 1, 1, 2, 2]))
            assert got.compute().item() == 1.0
        return
    n = 6
    target = torch.tensor([0, 0, 1, 1, 2, 2])
    preds = {"one_cluster_both": torch.zeros(n, dtype=torch.long), "one_cluster_pred": torch.zeros(n, dtype=torch.long),
             "all_singletons": torch.arange(n), "identical": target + 10, "two": torch.tensor([4, 4]),
             "one_cluster_target": torch.tensor([0, 0, 1, 1, 2, 2]),
             "one_cluster_pred_10": torch.zeros(10, dtype=torch.long)}[case]
    if case == "one_cluster_both":
        target = torch.full((n,), 3)
    if case == "two":
        target = torch.tensor([1, 2])
    if case == "one_cluster_pred_10":  # its mutual information computed to 4e-16, not 0: NMI was -inf, AMI 2.2
        target = torch.tensor([3, 1, 2, 1, 3, 1, 3, 0, 0, 3])
    if case == "one_cluster_target":
        target = torch.zeros(n, dtype=torch.long)
    with sm.use_reducer(sm.local()):
        ours = getattr(smcl, name)(**kw).update(preds, target).compute()
    assert_close(ours, torch.tensor(sklearn_value(name, preds, target, **kw)), atol=1e-6)


def test_state_holds_distinct_pairs_only() -> None:
    preds, target = labels(5000, 3)
    m = smcl.AdjustedRandScore()
    for i in range(0, 5000, 1000):
        m = m.update(preds[i:i + 1000], target[i:i + 1000])
    assert m.pairs.shape[0] <= 5 * 4 and int(m.counts.sum()) == 5000
    assert m.pairs.dtype == m.counts.dtype == torch.long


_EDGES = [-(2**31), -(2**31) + 1, -1, 0, 1, 2**31 - 2, 2**31 - 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_EDGES) | st.integers(-(2**31), 2**31 - 1),
                          st.sampled_from(_EDGES) | st.integers(-(2**31), 2**31 - 1)), max_size=40),
       st.booleans(), st.integers(0, 2**31))
def test_packed_compaction_equals_the_row_wise_reference(rows: list[tuple[int, int]], wide: bool, seed: int) -> None:
    # ids that fit in 32 bits go through one packed int64 key each; one wider id sends the batch to unique(dim=0)
    if wide and rows:
        rows = [*rows, (2**31, -(2**31) - 1)]
    pairs = torch.tensor(rows, dtype=torch.long).reshape(-1, 2)
    counts = torch.randint(1, 5, (pairs.shape[0],), generator=torch.Generator().manual_seed(seed))
    got, want = _compacted(pairs, counts), _compacted_rows(pairs, counts) if rows else (pairs, counts)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize("name", list(SKLEARN))
def test_ids_within_32_bits_equal_sklearn(name: str) -> None:
    # labels() holds 10**12, so the sharded tests run the row-wise path; these ids take the packed one
    preds, target = labels(3000, 11)
    preds = torch.unique(preds, return_inverse=True)[1] * 2**29 - 2**31
    got = getattr(smcl, name)().update(preds[:1200], target[:1200]).update(preds[1200:], target[1200:]).compute()
    assert_close(got.double(), torch.tensor(sklearn_value(name, preds, target), dtype=torch.float64))


@pytest.mark.parametrize("name", ["AdjustedRandScore", "RandScore", "FowlkesMallowsIndex"])
def test_pair_counts_of_many_samples_do_not_overflow(name: str) -> None:
    # pairs of samples number ~n**2 / 2: 5e11 at 10^6; TorchMetrics' adjusted Rand index is -2.92 at 10^5 here
    n, g = 1_000_000, torch.Generator().manual_seed(0)
    target = torch.randint(0, 4, (n,), generator=g) * 5 - 3
    preds = torch.where(torch.rand(n, generator=g) < 0.6, target, torch.randint(-2, 3, (n,), generator=g))
    got = getattr(smcl, name)().update(preds[:100_000], target[:100_000]).update(preds[100_000:], target[100_000:])
    assert_close(got.compute().double(), torch.tensor(sklearn_value(name, preds, target), dtype=torch.float64))


@pytest.mark.parametrize("name", [n for n in SKLEARN if n != "AdjustedMutualInfoScore"])
def test_many_distinct_ids_keep_the_table_sparse(name: str) -> None:
    # the table was dense, classes x clusters: 2.3 GB to compute on 10,000 singletons a side, 38 GB on 40,000
    n, g = 40_000, torch.Generator().manual_seed(1)
    preds, target = torch.arange(n), torch.randperm(n, generator=g) // 2
    cells = smcl.contingency.contingency_cells(torch.stack([preds, target], 1), torch.ones(n, dtype=torch.long))
    assert cells.shape == (n // 2, n) and cells.nij.shape == (n,)
    got = getattr(smcl, name)().update(preds, target).compute()
    assert_close(got.double(), torch.tensor(sklearn_value(name, preds, target), dtype=torch.float64))


def test_merge_equals_concatenated() -> None:
    preds, target = labels(100, 9)
    a = smcl.NormalizedMutualInfoScore().update(preds[:30], target[:30])
    b = smcl.NormalizedMutualInfoScore().update(preds[30:], target[30:])
    with sm.use_reducer(sm.local()):
        assert_close(a.merge(b).compute(), smcl.NormalizedMutualInfoScore().update(preds, target).compute())


def test_mask() -> None:
    preds, target = labels(40, 2)
    keep = torch.arange(40) % 3 != 0
    with sm.use_reducer(sm.local()):
        got = smcl.RandScore().update(preds, target, mask=keep).compute()
    assert_close(got, torch.tensor(sklearn_value("RandScore", preds[keep], target[keep])))


def test_empty_is_sklearn_value_and_warns() -> None:
    with sm.use_reducer(sm.local()), pytest.warns(UserWarning, match="empty"):
        assert float(smcl.AdjustedRandScore().compute()) == skm.adjusted_rand_score(np.array([]), np.array([]))


@pytest.mark.parametrize("name", list(SKLEARN))
def test_bad_inputs(name: str) -> None:
    m = getattr(smcl, name)()
    with pytest.raises(TypeError, match=rf"{name}.update: argument `preds` must be a tensor"):
        m.update([0, 1], torch.tensor([0, 1]))
    with pytest.raises(TypeError, match=rf"{name}.update: argument `target` must hold integer cluster ids"):
        m.update(torch.tensor([0, 1]), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=rf"{name}.update: arguments `preds` and `target` must have the same shape"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match=rf"{name}.update: argument `preds` must have shape \(N,\)"):
        m.update(torch.zeros(2, 2, dtype=torch.long), torch.zeros(2, 2, dtype=torch.long))


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="NormalizedMutualInfoScore: argument `average_method` must be one of"):
        smcl.NormalizedMutualInfoScore(average_method="median")
    with pytest.raises(ValueError, match="AdjustedMutualInfoScore: argument `average_method`"):
        smcl.AdjustedMutualInfoScore("mean")
    with pytest.raises(TypeError, match="VMeasureScore: argument `beta` must be a number"):
        smcl.VMeasureScore(beta="1")
    with pytest.raises(ValueError, match="VMeasureScore: argument `beta` must lie in"):
        smcl.VMeasureScore(beta=-1.0)


def test_checkpoint_round_trip() -> None:
    preds, target = labels(50, 4)
    m = smcl.MutualInfoScore().update(preds, target)
    back = smcl.MutualInfoScore().load_state_dict(m.state_dict())
    with sm.use_reducer(sm.local()):
        assert_close(back.compute(), m.compute())


@pytest.mark.parametrize("name", ["AdjustedRandScore", "AdjustedMutualInfoScore"])
def test_sharded_in_a_world(world: Any, name: str) -> None:
    preds, target = labels(90, 11)
    check_sharded(getattr(smcl, name)(), (preds, target), torch.tensor(sklearn_value(name, preds, target)),
                  world=world, world_sizes=(3,), seed=4)
