"""The regression metrics beyond the core set, against SciPy, scikit-learn, NumPy and TorchMetrics, on any sharding."""

from __future__ import annotations

import itertools
import math
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.spatial.distance
import scipy.stats
import sklearn.metrics as skm
import torch
from catalogue import CATALOGUE, REGRESSION_EXTRA_KINDS, Entry, assert_same_state, data, state_of
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded

import scopedmetrics as sm
from scopedmetrics.regression import (
    ContinuousRankedProbabilityScore,
    CriticalSuccessIndex,
    JensenShannonDivergence,
    KendallRankCorrCoef,
    LogCoshError,
    MeanSquaredLogError,
    MinkowskiDistance,
    NormalizedRootMeanSquaredError,
    RelativeSquaredError,
    SymmetricMeanAbsolutePercentageError,
    TweedieDevianceScore,
    WeightedMeanAbsolutePercentageError,
)
from scopedmetrics.regression.rank import inversions

tmr = pytest.importorskip("torchmetrics.regression")

N = 57
NEW = (
    ContinuousRankedProbabilityScore, CriticalSuccessIndex, JensenShannonDivergence, KendallRankCorrCoef,
    LogCoshError, MeanSquaredLogError, MinkowskiDistance, NormalizedRootMeanSquaredError, RelativeSquaredError,
    SymmetricMeanAbsolutePercentageError, TweedieDevianceScore, WeightedMeanAbsolutePercentageError,
)  # fmt: skip


# -- data and oracles ---------------------------------------------------------------------------


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def pair(seed: int, shape: tuple[int, ...] = (N,), offset: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Correlated ``(preds, target)`` of any shape."""
    g = gen(seed)
    target = offset + torch.randn(shape, generator=g)
    return target + 0.5 * torch.randn(shape, generator=g), target


def positive(seed: int, shape: tuple[int, ...] = (N,)) -> tuple[torch.Tensor, torch.Tensor]:
    """Positive ``(preds, target)``: targets in [0.5, 3.5), predictions off by a factor of about exp(±0.4)."""
    g = gen(seed)
    target = 0.5 + 3 * torch.rand(shape, generator=g)
    return target * torch.exp(0.4 * torch.randn(shape, generator=g)), target


def distributions(seed: int, d: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    g = gen(seed)
    return torch.rand(N, d, generator=g) + 0.05, torch.rand(N, d, generator=g) + 0.05


def ensemble(seed: int, members: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = gen(seed)
    target = torch.randn(N, generator=g)
    return target.unsqueeze(1) + torch.randn(N, members, generator=g), target


def np64(*xs: torch.Tensor) -> list[np.ndarray]:
    return [x.double().numpy() for x in xs]


def cols(x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], -1)


def smape(p: np.ndarray, t: np.ndarray) -> float:
    return float(np.mean(2 * np.abs(p - t) / np.maximum(np.abs(p) + np.abs(t), 1.17e-6)))


def wmape(p: np.ndarray, t: np.ndarray) -> float:
    return float(np.abs(p - t).sum() / np.abs(t).sum())


def nrmse(p: np.ndarray, t: np.ndarray, normalization: str, outputs: bool) -> np.ndarray:
    p, t = (cols(p), cols(t)) if outputs else (p.reshape(-1, 1), t.reshape(-1, 1))
    rmse = np.sqrt(skm.mean_squared_error(t, p, multioutput="raw_values"))
    denom = {
        "mean": t.mean(0),
        "range": t.max(0) - t.min(0),
        "std": t.std(0),
        "l2": np.linalg.norm(t, axis=0),
    }[normalization]
    out = rmse / denom
    return out if outputs else out[0]


def log_cosh(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.log(np.cosh(cols(p) - cols(t))).mean(0).squeeze()


def rse(p: np.ndarray, t: np.ndarray, squared: bool) -> float:
    values = 1 - skm.r2_score(cols(t), cols(p), multioutput="raw_values")  # RSE is 1 - R² per output
    return float(np.mean(values if squared else np.sqrt(values)))


def kendall_scipy(p: np.ndarray, t: np.ndarray, variant: str, alternative: str | None) -> Any:
    """SciPy's tau b or c (and asymptotic p-value) per column; 0-d arrays for 1-d inputs."""
    taus, ps = [], []
    for a, b in zip(cols(p).T, cols(t).T, strict=True):
        r = scipy.stats.kendalltau(a, b, variant=variant, method="asymptotic", alternative=alternative or "two-sided")
        taus.append(r.statistic)
        ps.append(r.pvalue)
    squeeze = (lambda x: np.asarray(x[0])) if p.ndim == 1 else np.asarray
    return (squeeze(taus), squeeze(ps)) if alternative else squeeze(taus)


def tau_a(p: np.ndarray, t: np.ndarray) -> float:
    """TorchMetrics' tau a, ``(C - D) / (C + D)``, by counting every pair."""
    s = np.sign(p[:, None] - p[None]) * np.sign(t[:, None] - t[None])
    c, d = (s > 0).sum() / 2, (s < 0).sum() / 2
    return float((c - d) / (c + d))


def csi(p: np.ndarray, t: np.ndarray, threshold: float, axis: Any = None) -> Any:
    pb, tb = p >= threshold, t >= threshold
    hits, misses, fa = (pb & tb).sum(axis), (tb & ~pb).sum(axis), (pb & ~tb).sum(axis)
    return hits / (hits + misses + fa)


def js(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return scipy.spatial.distance.jensenshannon(p, q, axis=1) ** 2  # SciPy gives the square root


def crps(x: np.ndarray, y: np.ndarray) -> float:
    m = x.shape[1]
    spread = np.abs(x[:, :, None] - x[:, None, :]).sum((1, 2)) / (2 * m * m)
    return float((np.abs(x - y[:, None]).mean(1) - spread).mean())


def _cases() -> list[Any]:
    """``(metric, data, oracle, torchmetrics factory)`` for every class and its configurations."""
    cases = []

    def case(id_: str, metric: sm.Metric, arrays: tuple[torch.Tensor, ...], oracle: Any, tm: Callable[[], Any]) -> None:
        cases.append(pytest.param(metric, arrays, oracle, tm, id=id_))

    pp, tp = positive(1)
    a, b = np64(pp, tp)
    pp2, tp2 = positive(2, (N, 2, 3))  # any shape, flattened
    case("msle", MeanSquaredLogError(), (pp, tp), skm.mean_squared_log_error(b, a), tmr.MeanSquaredLogError)
    case("msle-3d", MeanSquaredLogError(), (pp2, tp2),
         skm.mean_squared_log_error(*np64(tp2.reshape(-1), pp2.reshape(-1))), tmr.MeanSquaredLogError)
    p, t = pair(3)
    case("smape", SymmetricMeanAbsolutePercentageError(), (p, t), smape(*np64(p, t)),
         tmr.SymmetricMeanAbsolutePercentageError)
    case("wmape", WeightedMeanAbsolutePercentageError(), (p, t), wmape(*np64(p, t)),
         tmr.WeightedMeanAbsolutePercentageError)
    case("wmape-3d", WeightedMeanAbsolutePercentageError(), (pp2, tp2), wmape(*np64(pp2, tp2)),
         tmr.WeightedMeanAbsolutePercentageError)
    p3, t3 = pair(4, (N, 3), offset=2.0)
    for norm in ("mean", "range", "std", "l2"):
        case(f"nrmse-{norm}", NormalizedRootMeanSquaredError(norm), (pp, tp), nrmse(a, b, norm, False),
             lambda n=norm: tmr.NormalizedRootMeanSquaredError(n))
        case(f"nrmse-{norm}-3", NormalizedRootMeanSquaredError(norm, 3), (p3, t3), nrmse(*np64(p3, t3), norm, True),
             lambda n=norm: tmr.NormalizedRootMeanSquaredError(n, 3))
    case("nrmse-flat", NormalizedRootMeanSquaredError("std"), (p3, t3), nrmse(*np64(p3, t3), "std", False),
         lambda: tmr.NormalizedRootMeanSquaredError("std"))
    case("logcosh", LogCoshError(), (p, t), log_cosh(*np64(p, t)), tmr.LogCoshError)
    case("logcosh-3", LogCoshError(3), (p3, t3), log_cosh(*np64(p3, t3)), lambda: tmr.LogCoshError(3))
    for power in (0.0, 1.0, 1.5, 2.0, 3.0, -0.5):
        case(f"tweedie-{power}", TweedieDevianceScore(power), (pp, tp), skm.mean_tweedie_deviance(b, a, power=power),
             lambda w=power: tmr.TweedieDevianceScore(w))
    zeros = (tp - 1.5).clamp(min=0)  # a third of the targets are 0
    case("tweedie-zero-target", TweedieDevianceScore(1.0), (pp, zeros),
         skm.mean_tweedie_deviance(*np64(zeros, pp), power=1.0), lambda: tmr.TweedieDevianceScore(1))
    for order in (1, 2, 3.5):
        case(f"minkowski-{order}", MinkowskiDistance(order), (p3, t3),
             scipy.spatial.distance.minkowski(*np64(p3.reshape(-1), t3.reshape(-1)), p=order),
             lambda o=order: tmr.MinkowskiDistance(o))
    case("rse", RelativeSquaredError(), (p, t), rse(*np64(p, t), True), tmr.RelativeSquaredError)
    case("rrse-3", RelativeSquaredError(3, False), (p3, t3), rse(*np64(p3, t3), False),
         lambda: tmr.RelativeSquaredError(3, False))
    ties = ((p * 3).round() / 3, (t * 3).round() / 3)  # many ties in both inputs
    ties3 = ((p3 * 2).round(), (t3 * 2).round())
    for variant in ("b", "c"):
        for name, arrays in (("", (p, t)), ("-ties", ties)):
            case(f"kendall-{variant}{name}", KendallRankCorrCoef(variant), arrays,
                 kendall_scipy(*np64(*arrays), variant, None), lambda v=variant: tmr.KendallRankCorrCoef(v))
        for alternative in ("two-sided", "less", "greater"):
            case(f"kendall-{variant}-ties-{alternative}", KendallRankCorrCoef(variant, True, alternative), ties,
                 kendall_scipy(*np64(*ties), variant, alternative),
                 lambda v=variant, alt=alternative: tmr.KendallRankCorrCoef(v, True, alt))
        case(f"kendall-{variant}-3", KendallRankCorrCoef(variant, True, num_outputs=3), ties3,
             kendall_scipy(*np64(*ties3), variant, "two-sided"),
             lambda v=variant: tmr.KendallRankCorrCoef(v, True, num_outputs=3))
    case("kendall-a-ties", KendallRankCorrCoef("a"), ties, tau_a(*np64(*ties)), lambda: tmr.KendallRankCorrCoef("a"))
    case("kendall-a-t-test", KendallRankCorrCoef("a", True), (p, t),
         (tau_a(*np64(p, t)), None), lambda: tmr.KendallRankCorrCoef("a", True))
    seq_p, seq_t = positive(5, (N, 4, 3))
    sa, sb = np64(seq_p, seq_t)
    case("csi", CriticalSuccessIndex(2.0), (seq_p, seq_t), csi(sa, sb, 2.0), lambda: tmr.CriticalSuccessIndex(2.0))
    case("csi-per-sample", CriticalSuccessIndex(2.0, 0), (seq_p, seq_t), csi(sa, sb, 2.0, (1, 2)),
         lambda: tmr.CriticalSuccessIndex(2.0, 0))
    case("csi-per-position", CriticalSuccessIndex(2.0, 1), (seq_p, seq_t), csi(sa, sb, 2.0, (0, 2)),
         lambda: tmr.CriticalSuccessIndex(2.0, 1))
    case("csi-last-dim", CriticalSuccessIndex(1.5, 2), (seq_p, seq_t), csi(sa, sb, 1.5, (0, 1)),
         lambda: tmr.CriticalSuccessIndex(1.5, 2))
    dp, dq = distributions(6)
    jsd = js(*np64(dp, dq))
    logp, logq = torch.log_softmax(dp, 1), torch.log_softmax(dq, 1)
    case("js-mean", JensenShannonDivergence(), (dp, dq), jsd.mean(), tmr.JensenShannonDivergence)
    case("js-sum", JensenShannonDivergence(reduction="sum"), (dp, dq), jsd.sum(),
         lambda: tmr.JensenShannonDivergence(reduction="sum"))
    case("js-none", JensenShannonDivergence(reduction="none"), (dp, dq), jsd,
         lambda: tmr.JensenShannonDivergence(reduction="none"))
    case("js-log", JensenShannonDivergence(True), (logp, logq), js(*np64(logp.exp(), logq.exp())).mean(),
         lambda: tmr.JensenShannonDivergence(True))
    ex, ey = ensemble(7)
    case("crps", ContinuousRankedProbabilityScore(), (ex, ey), crps(*np64(ex, ey)),
         tmr.ContinuousRankedProbabilityScore)
    ex2, ey2 = ensemble(8, members=2)
    case("crps-2", ContinuousRankedProbabilityScore(), (ex2, ey2), crps(*np64(ex2, ey2)),
         tmr.ContinuousRankedProbabilityScore)
    return cases


CASES = _cases()


def _torchmetrics_value(factory: Callable[[], Any], arrays: tuple[torch.Tensor, ...]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchMetrics' notes on cat states and compute before update
        m = factory()
        m.update(*arrays)
        return m.compute()


def _expected(oracle: Any, tm_value: Any) -> Any:
    """The oracle as arrays; a ``None`` part (a p-value no library offers) taken from TorchMetrics."""
    if isinstance(oracle, tuple):
        return tuple(_expected(o, v) for o, v in zip(oracle, tm_value, strict=True))
    if oracle is None:
        return tm_value.double().numpy()
    return np.asarray(oracle, dtype=np.float64)


# -- the contract's invariant, against oracles and TorchMetrics ----------------------------------


@pytest.mark.parametrize(("metric", "arrays", "oracle", "tm"), CASES)
def test_matches_the_oracle_on_any_sharding(metric: sm.Metric, arrays: Any, oracle: Any, tm: Any) -> None:
    expected = _expected(oracle, _torchmetrics_value(tm, arrays))
    check_sharded(metric, arrays, expected, seed=17, atol=2e-5, rtol=2e-4)


@pytest.mark.parametrize(("metric", "arrays", "oracle", "tm"), CASES)
def test_matches_torchmetrics_on_one_batch(metric: sm.Metric, arrays: Any, oracle: Any, tm: Any) -> None:
    ours = metric.update(*arrays).compute()
    theirs = _torchmetrics_value(tm, arrays)
    assert_close(ours, theirs, atol=2e-5, rtol=2e-4)
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,),
                    strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)


@pytest.mark.parametrize(
    "name",
    ["nrmse-std-3", "kendall-b-ties-two-sided", "csi-per-position", "js-none", "crps", "rrse-3", "tweedie-1.5"],
)
def test_distributed_worlds(world: Any, name: str) -> None:
    metric, arrays, oracle, tm = next(c.values for c in CASES if c.id == name)
    expected = _expected(oracle, _torchmetrics_value(tm, arrays))
    check_sharded(metric, arrays, expected, seed=5, world_sizes=(2,), world=world, atol=2e-5, rtol=2e-4)


# -- where TorchMetrics' value depends on the batching, ours does not ---------------------------


def test_critical_success_index_per_position_pools_every_batch() -> None:
    """TorchMetrics concatenates each batch's per-position scores; ours pools the whole data set."""
    p, t = positive(9, (N, 4, 3))
    ours = CriticalSuccessIndex(2.0, 1).update(p[:20], t[:20]).update(p[20:], t[20:]).compute()
    assert ours.shape == (4,)
    assert_close(ours, csi(*np64(p, t), 2.0, (0, 2)))
    theirs = tmr.CriticalSuccessIndex(2.0, 1)
    theirs.update(p[:20], t[:20])
    theirs.update(p[20:], t[20:])
    assert theirs.compute().shape == (8,)  # two batches, four positions each


def test_nrmse_normalizer_is_the_data_set_s_on_every_split() -> None:
    p, t = positive(10, (N,))
    for norm in ("mean", "range", "std", "l2"):
        shards = [NormalizedRootMeanSquaredError(norm).update(p[s], t[s]) for s in (slice(0, 9), slice(9, N))]
        values = sm.simulate(lambda r, s=shards: s[r].compute(), 2)
        for v in values:
            assert_close(v, nrmse(*np64(p, t), norm, False))


# -- precision: float64 sums where the math cancels -----------------------------------------------


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), offset=st.sampled_from([1e3, 1e4, -1e4]))
def test_spread_of_targets_far_from_zero_stays_accurate(seed: int, offset: float) -> None:
    """Targets near 1e4 with unit spread: float64 sums of squares keep the variance float32 would lose."""
    p, t = pair(seed, (N, 2), offset=offset)
    a, b = np64(p, t)
    rtol = 1e-4
    for metric, expected in [
        (NormalizedRootMeanSquaredError("std", 2), nrmse(a, b, "std", True)),
        (RelativeSquaredError(2), rse(a, b, True)),
    ]:
        check_sharded(metric, (p, t), np.asarray(expected), seed=seed, world_sizes=(1, 3), atol=rtol, rtol=rtol)


def test_state_dtypes_are_fixed_by_the_configuration() -> None:
    p, t = pair(0, (N, 2))
    ints = (p * 10).round().long(), (t * 10).round().long()
    assert NormalizedRootMeanSquaredError(num_outputs=2).update(*ints).m2.dtype == torch.float64
    assert RelativeSquaredError(2).update(*ints).rss.dtype == torch.float64
    assert TweedieDevianceScore().update(*ints).sum_deviance_score.dtype == torch.float64
    assert LogCoshError(2).update(*ints).sum_log_cosh_error.dtype == torch.float32
    assert CriticalSuccessIndex(0.5).update(*ints).hits.dtype == torch.int64
    for m in (NormalizedRootMeanSquaredError(num_outputs=2), RelativeSquaredError(2), TweedieDevianceScore(),
              LogCoshError(2)):
        assert m.update(p, t).compute().dtype == torch.float32, type(m).__name__


@pytest.mark.parametrize("offset", [1e4, 1e6, -1e8])
def test_relative_errors_keep_the_spread_of_a_target_far_from_zero(offset: float) -> None:
    # Σt² - (Σt)²/n cancelled: RSE 8.6e6 and NRMSE("std") 0.917 for 1.012 and 1.006 at 1e6 with spread 1e-2
    g = torch.Generator().manual_seed(5)
    t = offset + 0.01 * torch.randn(3000, 2, generator=g, dtype=torch.float64)
    p = t + 0.01 * torch.randn(3000, 2, generator=g, dtype=torch.float64)
    a, b = p.numpy(), t.numpy()
    rse = (((b - a) ** 2).sum(0) / ((b - b.mean(0)) ** 2).sum(0)).mean()
    std = np.sqrt(((b - a) ** 2).mean(0)) / b.std(0)
    cuts = [slice(0, 0), slice(0, 1), slice(1, 1000), slice(1000, 3000)]  # an empty and a one-row shard
    for m, want in ((RelativeSquaredError(2), rse), (NormalizedRootMeanSquaredError("std", 2), std)):
        whole = m.update(p, t).compute()
        ranks = sm.simulate(lambda r, m=m: m.update(p[cuts[r]], t[cuts[r]]).compute(), len(cuts))
        for got in (whole, *ranks):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_log_cosh_does_not_overflow() -> None:
    """TorchMetrics' exp-based form is inf beyond |d| ~ 89 in float32; log cosh d is about |d| - log 2."""
    value = LogCoshError().update(torch.tensor([200.0, -300.0]), torch.zeros(2)).compute()
    assert value.item() == pytest.approx((200 + 300) / 2 - math.log(2), rel=1e-6)


# -- Kendall's pair counts -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(r=st.lists(st.integers(0, 6), max_size=40))
def test_inversions_count_every_strictly_decreasing_pair(r: list[int]) -> None:
    expected = sum(1 for i, j in itertools.combinations(range(len(r)), 2) if r[i] > r[j])
    values = sorted(set(r))
    ranks = torch.tensor([values.index(v) for v in r], dtype=torch.int64)  # dense ranks, below len(r)
    assert inversions(ranks) == expected


@settings(max_examples=40, deadline=None)
@given(xs=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3, max_size=30))
def test_kendall_agrees_with_scipy_and_pair_counting_under_heavy_ties(xs: list[tuple[int, int]]) -> None:
    x = torch.tensor([float(a) for a, _ in xs])
    y = torch.tensor([float(b) for _, b in xs])
    a, b = np64(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy warns on constant inputs
        for variant in ("b", "c"):
            expected = kendall_scipy(a, b, variant, None)
            assert_close(KendallRankCorrCoef(variant).update(x, y).compute(), expected, atol=1e-6)
        expected_a = tau_a(a, b) if len(set(a)) > 1 and len(set(b)) > 1 else float("nan")
    got_a = KendallRankCorrCoef("a").update(x, y).compute()
    if not math.isnan(expected_a):
        assert_close(got_a, expected_a, atol=1e-6)


def test_kendall_scales_past_all_pairs() -> None:
    """n log² n counting: 200k samples (2e10 pairs) in a moment."""
    g = gen(0)
    x = torch.randn(200_000, generator=g)
    tau = KendallRankCorrCoef().update(x, x + torch.randn(200_000, generator=g)).compute()
    assert 0.4 < tau.item() < 0.6


# -- degenerate inputs --------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*the state is empty")
def test_no_samples_anywhere() -> None:
    nan_metrics = [
        MeanSquaredLogError(), SymmetricMeanAbsolutePercentageError(), NormalizedRootMeanSquaredError(),
        LogCoshError(), TweedieDevianceScore(1.5), RelativeSquaredError(), KendallRankCorrCoef(),
        JensenShannonDivergence(), ContinuousRankedProbabilityScore(),
    ]  # fmt: skip

    def body(rank: int) -> list[torch.Tensor]:
        return [m.compute() for m in nan_metrics]

    for values in [*sm.simulate(body, 3), body(0)]:
        for m, v in zip(nan_metrics, values, strict=True):
            assert v.shape == () and torch.isnan(v), type(m).__name__
    assert WeightedMeanAbsolutePercentageError().compute() == 0  # 0 / epsilon, as TorchMetrics
    assert MinkowskiDistance(2).compute() == 0
    assert CriticalSuccessIndex(0.5).compute() == 0
    assert CriticalSuccessIndex(0.5, 0).compute().shape == (0,)
    assert CriticalSuccessIndex(0.5, 1).compute().shape == (0,)
    assert NormalizedRootMeanSquaredError(num_outputs=3).compute().isnan().all()
    tau, p = KendallRankCorrCoef(t_test=True, num_outputs=2).compute()
    assert tau.shape == p.shape == (2,) and tau.isnan().all()


def test_constant_inputs() -> None:
    x, c = torch.arange(6.0), torch.full((6,), 2.0)
    assert torch.isnan(KendallRankCorrCoef().update(x, c).compute())  # tau b: 0 / 0
    assert torch.isnan(KendallRankCorrCoef("c").update(c, x).compute())
    assert RelativeSquaredError().update(x, c).compute() > 1e6  # the spread is clamped at float32's epsilon
    assert NormalizedRootMeanSquaredError("std").update(x, c).compute() == float("inf")
    assert CriticalSuccessIndex(10.0).update(x, c).compute() == 0  # no event at all: 0, as TorchMetrics


def test_csi_takes_infinite_values_as_above_or_below_the_threshold() -> None:
    p = torch.tensor([float("inf"), -float("inf"), 1.0])
    assert CriticalSuccessIndex(0.5).update(p, torch.tensor([1.0, 1.0, 0.0])).compute().item() == pytest.approx(1 / 3)


def test_empty_batches_and_masks() -> None:
    for e in EXTRA:
        arrays = data(e.kind, 12, seed=1)
        full = e.make().update(*arrays)
        assert_same_state(state_of(full.update(*(a[:0] for a in arrays))), state_of(full))
        keep = torch.arange(12) % 3 != 0
        masked = e.make().update(*arrays, mask=keep)
        assert_same_state(state_of(masked), state_of(e.make().update(*(a[keep] for a in arrays))))


# -- bad input ------------------------------------------------------------------------------------

EXTRA: list[Entry] = [e for e in CATALOGUE if type(e.make()) in NEW]
NAN, INF = float("nan"), float("inf")


def _names(e: Entry) -> tuple[str, str]:
    if e.kind in ("dist", "logdist"):
        return "p", "q"
    targets = isinstance(e.make(), (TweedieDevianceScore, MinkowskiDistance))  # TorchMetrics' names
    return ("preds", "targets") if targets else ("preds", "target")


def _with(x: torch.Tensor, value: float) -> torch.Tensor:
    y = x.clone().float()
    y.view(-1)[0] = value
    return y


def bad_cases(e: Entry) -> list[tuple[str, tuple[Any, ...], type[Exception] | None, str]]:
    """``(case, arguments, error or None for accepted, argument named)`` for entry ``e``."""
    p, t = data(e.kind, 6, seed=7)
    first, second = _names(e)
    m = e.make()
    flat = e.kind == "positive"
    out: list[tuple[str, tuple[Any, ...], type[Exception] | None, str]] = [
        ("preds_not_a_tensor", (p.tolist(), t), TypeError, first),
        ("target_not_a_tensor", (p, t.tolist()), TypeError, second),
        ("preds_is_none", (None, t), TypeError, first),
        ("complex_preds", (p.to(torch.complex64), t), TypeError, first),
        ("mismatched_lengths", (p[1:], t), ValueError, first),
        ("nan_preds", (_with(p, NAN), t), ValueError, first),
        ("nan_target", (p, _with(t, NAN)), ValueError, second),
        ("empty_batch", (p[:0], t[:0]), None, ""),
    ]
    csi_ = isinstance(m, CriticalSuccessIndex)
    out.append(("inf_preds", (_with(p, INF), t), None if csi_ else ValueError, first))
    if flat:
        out.append(("any_shape", (p.reshape(2, 3), t.reshape(2, 3)), None, ""))
        out.append(("integer_inputs", ((p * 10).round().long() + 1, (t * 10).round().long() + 1), None, ""))
    if e.kind == "ensemble":
        out += [
            ("one_member", (p[:, :1], t), ValueError, first),
            ("flat_ensemble", (p.reshape(-1), t), ValueError, first),
            ("target_2d", (p, t.unsqueeze(1)), ValueError, first),
        ]
    if e.kind == "sequences":
        few = (p[:, 0, 0], t[:, 0, 0]) if m.keep_sequence_dim == 1 else (p[0, 0, 0], t[0, 0, 0])
        out.append(("too_few_dims", few, ValueError, "keep_sequence_dim"))
        if m.keep_sequence_dim == 1:
            out.append(("other_sequence_length", (p[:, :2], t[:, :2]), ValueError, first))
    if isinstance(m, MeanSquaredLogError):
        out += [("log_of_minus_one", (p - 5, t), ValueError, first), ("target_below", (p, t - 5), ValueError, second)]
    if isinstance(m, TweedieDevianceScore) and m.power > 0:
        out += [("negative_preds", (-p, t), ValueError, first), ("negative_targets", (p, -t), ValueError, second)]
    if isinstance(m, JensenShannonDivergence) and e.kind == "dist":
        out += [("negative_probabilities", (-p, t), ValueError, first), ("zero_row", (p * 0, t), ValueError, first)]
    return out


BAD = [pytest.param(e, c, id=f"{e.id}-{c[0]}") for e in EXTRA for c in bad_cases(e)]


@pytest.mark.parametrize(("entry", "bad"), BAD)
def test_bad_batch_is_refused_clearly_and_changes_nothing(entry: Entry, bad: Any) -> None:
    name, args, error, arg = bad
    good = data(entry.kind, 10, seed=3)
    m = entry.make().update(*(a[:5] for a in good))
    before = state_of(m)
    cls = type(m).__name__
    if error is None:
        m.update(*args).compute()
    else:
        with pytest.raises((ValueError, TypeError)) as info:
            m.update(*args)
        message = str(info.value)
        assert isinstance(info.value, error), f"{type(info.value).__name__}: {message}"
        assert cls in message and (f"`{arg}`" in message or f"{arg}=" in message), message
    assert_same_state(before, state_of(m))
    whole = entry.make().update(*(a[:5] for a in good)).update(*(a[5:] for a in good))
    assert_same_state(state_of(m.update(*(a[5:] for a in good))), state_of(whole))


def test_every_extra_entry_is_covered() -> None:
    assert {type(e.make()) for e in EXTRA} == set(NEW)
    assert {e.kind for e in EXTRA} >= REGRESSION_EXTRA_KINDS


def test_validate_args_false_skips_the_data_checks() -> None:
    nan = torch.tensor([1.0, NAN])
    assert torch.isnan(MeanSquaredLogError(validate_args=False).update(nan - 5, torch.ones(2)).compute())
    assert TweedieDevianceScore(2.0, validate_args=False).update(-torch.ones(2), torch.ones(2)).num_observations == 2
    csi_ = CriticalSuccessIndex(0.5, validate_args=False).update(nan, torch.ones(2))
    assert csi_.hits == 1 and csi_.misses == 1  # NaN is below every threshold
    with pytest.raises(ValueError, match="shape"):  # shapes are still checked: they guard the state
        LogCoshError(validate_args=False).update(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: NormalizedRootMeanSquaredError("median"), ValueError, "`normalization`"),
        (lambda: NormalizedRootMeanSquaredError(num_outputs=0), ValueError, "`num_outputs`"),
        (lambda: LogCoshError(1.5), TypeError, "`num_outputs`"),
        (lambda: TweedieDevianceScore(0.5), ValueError, "`power`"),
        (lambda: TweedieDevianceScore("2"), TypeError, "`power`"),
        (lambda: MinkowskiDistance(0.5), ValueError, "`p`"),
        (lambda: MinkowskiDistance(True), TypeError, "`p`"),
        (lambda: MinkowskiDistance(), TypeError, "p"),  # required, as in TorchMetrics
        (lambda: RelativeSquaredError(squared=1), TypeError, "`squared`"),
        (lambda: KendallRankCorrCoef("d"), ValueError, "`variant`"),
        (lambda: KendallRankCorrCoef(t_test="yes"), TypeError, "`t_test`"),
        (lambda: KendallRankCorrCoef(t_test=True, alternative=None), ValueError, "`alternative`"),
        (lambda: KendallRankCorrCoef(alternative="both"), ValueError, "`alternative`"),
        (lambda: CriticalSuccessIndex(), TypeError, "threshold"),
        (lambda: CriticalSuccessIndex("high"), TypeError, "`threshold`"),
        (lambda: CriticalSuccessIndex(0.5, -1), ValueError, "`keep_sequence_dim`"),
        (lambda: CriticalSuccessIndex(0.5, 1.0), TypeError, "`keep_sequence_dim`"),
        (lambda: JensenShannonDivergence(log_prob="yes"), TypeError, "`log_prob`"),
        (lambda: JensenShannonDivergence(reduction="max"), ValueError, "`reduction`"),
        (lambda: ContinuousRankedProbabilityScore(validate_args=None), TypeError, "`validate_args`"),
    ],
)
def test_bad_configuration_is_refused_at_construction(make: Callable[[], Any], error: type[Exception],
                                                      words: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert words in str(info.value), str(info.value)


def test_merge_refuses_mismatches_and_round_trips() -> None:
    p, t = positive(0)
    with pytest.raises(ValueError, match="TweedieDevianceScore.merge: configurations differ: power"):
        TweedieDevianceScore(1.5).merge(TweedieDevianceScore(2.0))
    with pytest.raises(ValueError, match="NormalizedRootMeanSquaredError.merge: configurations differ"):
        NormalizedRootMeanSquaredError("std").merge(NormalizedRootMeanSquaredError("range"))
    seq = positive(1, (8, 3, 2))
    a = CriticalSuccessIndex(2.0, 1).update(*seq)
    with pytest.raises(ValueError, match="CriticalSuccessIndex.merge"):
        a.merge(CriticalSuccessIndex(2.0, 1).update(*positive(2, (8, 4, 2))))
    for m in (a, KendallRankCorrCoef(t_test=True).update(p, t), NormalizedRootMeanSquaredError().update(p, t)):
        back = pickle.loads(pickle.dumps(m))
        assert_same_state(state_of(back), state_of(m))
        loaded = m.reset().load_state_dict(m.state_dict())
        assert_close(loaded.compute(), m.compute(), atol=0, rtol=0)


def test_a_positional_call_binds_torchmetrics_names() -> None:
    """The new classes' arguments in TorchMetrics' positional order (``tests/test_signatures.py`` checks names)."""
    assert NormalizedRootMeanSquaredError("l2", 3).normalization == "l2"
    assert KendallRankCorrCoef("c", True, "less", 2).alternative == "less"
    assert CriticalSuccessIndex(0.3, 1).keep_sequence_dim == 1
    assert RelativeSquaredError(2, False).squared is False
    assert JensenShannonDivergence(True, "sum").reduction == "sum"
    assert MinkowskiDistance(4).p == 4 and TweedieDevianceScore(3).power == 3


def test_log_cosh_and_squared_log_error_keep_the_digits_of_small_errors() -> None:
    # |d| + log1p(exp(-2|d|)) - log 2 cancelled near 0 (0.0 for d = 1e-4 in float32), and log1p(p) - log1p(t) of
    # float32 values near 1e4 kept 3e-3 of their difference
    d = torch.tensor([1e-4, 1e-3, 1e-2, 0.5, 39.0, 41.0, 200.0])
    want = np.log(np.cosh(d.double().numpy()))
    for i, x in enumerate(d):
        got = LogCoshError().update(x.reshape(1), torch.zeros(1)).compute().item()
        assert got == pytest.approx(want[i], rel=1e-6), float(x)
    p, t = torch.tensor([1e4 + 1, 3e4 + 2]), torch.tensor([1e4, 3e4])
    exact = np.mean((np.log1p(p.double().numpy()) - np.log1p(t.double().numpy())) ** 2)
    assert MeanSquaredLogError().update(p, t).compute().item() == pytest.approx(exact, rel=1e-6)


def test_critical_success_index_compares_with_the_threshold_exactly() -> None:
    # torch compared in the inputs' dtype: 300 against uint8 values was 44, -1 was 255, and 0.1 against float16
    # values was float16's 0.1 (a false alarm for 0.0999755859375)
    u = torch.tensor([50, 200], dtype=torch.uint8)
    assert CriticalSuccessIndex(300).update(u, u).compute().item() == 0.0  # no event at all
    assert CriticalSuccessIndex(-1).update(u, torch.tensor([50, 0], dtype=torch.uint8)).compute().item() == 1.0
    i16 = torch.tensor([5, 30000], dtype=torch.int16)
    assert CriticalSuccessIndex(40000).update(i16, i16).compute().item() == 0.0
    h, ht = torch.tensor([0.1, 0.5], dtype=torch.float16), torch.tensor([0.0, 0.5], dtype=torch.float16)
    assert CriticalSuccessIndex(0.1).update(h, ht).compute().item() == 1.0
    big = CriticalSuccessIndex(16777219.5).update(torch.tensor([16777219]), torch.tensor([16777220])).compute()
    assert big.item() == 0.0  # a miss: 16777219 is below the threshold, which float32 rounded to 16777220


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_configuration_number_must_be_finite(bad: float) -> None:
    # MinkowskiDistance(inf) gave 1.0 for scipy's Chebyshev 4.0, TweedieDevianceScore(nan) NaN, CSI(nan) 0.0
    for make in (MinkowskiDistance, TweedieDevianceScore, CriticalSuccessIndex):
        with pytest.raises(ValueError, match=rf"{make.__name__}: argument `\w+` must be finite"):
            make(bad)
