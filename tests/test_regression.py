"""Regression metrics against independent oracles, sharded over simulated and gloo worlds."""

from __future__ import annotations

import doctest
import math
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics as skm
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shards import assert_close, check_sharded, shard_case

import scopedmetrics as sm
from scopedmetrics.regression import (
    ConcordanceCorrCoef,
    CosineSimilarity,
    ExplainedVariance,
    KLDivergence,
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    PearsonCorrCoef,
    R2Score,
    SpearmanCorrCoef,
)

N = 57


# -- data and oracles ---------------------------------------------------------


def regression_data(
    seed: int, d: int = 1, offset: float = 0.0, scale: float = 1.0
) -> tuple[torch.Tensor, ...]:
    """Correlated ``(preds, target)``: shape ``(N,)`` for ``d == 1``, else ``(N, d)``."""
    g = torch.Generator().manual_seed(seed)
    shape = (N,) if d == 1 else (N, d)
    target = offset + scale * torch.randn(shape, generator=g)
    preds = target + 0.5 * scale * torch.randn(shape, generator=g)
    return preds, target


def np64(*xs: torch.Tensor) -> list[np.ndarray]:
    return [x.double().numpy() for x in xs]


def columns(x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], -1)


def per_column(fn: Callable[[np.ndarray, np.ndarray], float], p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``fn`` of each column pair; a 0-d array for 1-d inputs."""
    out = np.array([fn(a, b) for a, b in zip(columns(p).T, columns(t).T, strict=True)])
    return out[0] if p.ndim == 1 else out


def pearson(p: np.ndarray, t: np.ndarray) -> float:
    return float(scipy.stats.pearsonr(p, t).statistic)


def spearman(p: np.ndarray, t: np.ndarray) -> float:
    return float(scipy.stats.spearmanr(p, t).statistic)


def concordance(p: np.ndarray, t: np.ndarray) -> float:
    """Lin's coefficient with sample (ddof=1) moments, as TorchMetrics defines it."""
    cov = np.cov(p, t, ddof=1)
    return float(2 * cov[0, 1] / (cov[0, 0] + cov[1, 1] + (p.mean() - t.mean()) ** 2))


def cosine(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    return (p * t).sum(1) / (np.linalg.norm(p, axis=1) * np.linalg.norm(t, axis=1))


def distributions(seed: int, d: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(N, d, generator=g) + 0.05, torch.rand(N, d, generator=g) + 0.05


def _case_list() -> list[Any]:
    """``(metric, (preds, target), expected)`` for every metric and configuration."""
    cases = []
    p, t = regression_data(1)
    p3, t3 = regression_data(2, d=3)
    a, b = np64(p, t)
    a3, b3 = np64(p3, t3)
    cases += [
        pytest.param(MeanSquaredError(), (p, t), skm.mean_squared_error(b, a), id="mse"),
        pytest.param(
            MeanSquaredError(squared=False), (p, t), math.sqrt(skm.mean_squared_error(b, a)), id="rmse"
        ),
        pytest.param(
            MeanSquaredError(num_outputs=3),
            (p3, t3),
            skm.mean_squared_error(b3, a3, multioutput="raw_values"),
            id="mse-3",
        ),
        pytest.param(MeanAbsoluteError(), (p, t), skm.mean_absolute_error(b, a), id="mae"),
        pytest.param(
            MeanAbsoluteError(num_outputs=3),
            (p3, t3),
            skm.mean_absolute_error(b3, a3, multioutput="raw_values"),
            id="mae-3",
        ),
        pytest.param(R2Score(), (p, t), skm.r2_score(b, a), id="r2"),
        pytest.param(
            R2Score(num_outputs=3, multioutput="raw_values"),
            (p3, t3),
            skm.r2_score(b3, a3, multioutput="raw_values"),
            id="r2-raw",
        ),
        pytest.param(
            R2Score(num_outputs=3, multioutput="variance_weighted"),
            (p3, t3),
            skm.r2_score(b3, a3, multioutput="variance_weighted"),
            id="r2-weighted",
        ),
        pytest.param(
            R2Score(adjusted=4),
            (p, t),
            1 - (1 - skm.r2_score(b, a)) * (N - 1) / (N - 4 - 1),
            id="r2-adjusted",
        ),
        pytest.param(ExplainedVariance(), (p, t), skm.explained_variance_score(b, a), id="ev"),
        pytest.param(
            ExplainedVariance(num_outputs=3, multioutput="raw_values"),
            (p3, t3),
            skm.explained_variance_score(b3, a3, multioutput="raw_values"),
            id="ev-raw",
        ),
        pytest.param(
            ExplainedVariance(num_outputs=3, multioutput="variance_weighted"),
            (p3, t3),
            skm.explained_variance_score(b3, a3, multioutput="variance_weighted"),
            id="ev-weighted",
        ),
        pytest.param(PearsonCorrCoef(), (p, t), pearson(a, b), id="pearson"),
        pytest.param(PearsonCorrCoef(num_outputs=3), (p3, t3), per_column(pearson, a3, b3), id="pearson-3"),
        pytest.param(ConcordanceCorrCoef(), (p, t), concordance(a, b), id="concordance"),
        pytest.param(
            ConcordanceCorrCoef(num_outputs=3), (p3, t3), per_column(concordance, a3, b3), id="concordance-3"
        ),
    ]
    # Spearman with many ties: values rounded to quarters.
    pr, tr = (p * 4).round() / 4, (t * 4).round() / 4
    pr3, tr3 = (p3 * 4).round() / 4, (t3 * 4).round() / 4
    cases += [
        pytest.param(SpearmanCorrCoef(), (p, t), spearman(a, b), id="spearman"),
        pytest.param(SpearmanCorrCoef(), (pr, tr), spearman(*np64(pr, tr)), id="spearman-ties"),
        pytest.param(
            SpearmanCorrCoef(num_outputs=3),
            (pr3, tr3),
            per_column(spearman, *np64(pr3, tr3)),
            id="spearman-3",
        ),
    ]
    tp = t + 3.0 * torch.sign(t)  # MAPE: targets away from zero
    cases.append(
        pytest.param(
            MeanAbsolutePercentageError(),
            (p, tp),
            skm.mean_absolute_percentage_error(*np64(tp, p)),
            id="mape",
        )
    )
    c1, c2 = regression_data(3, d=4)
    sims = cosine(*np64(c1, c2))
    cases += [
        pytest.param(CosineSimilarity(), (c1, c2), sims.sum(), id="cosine-sum"),
        pytest.param(CosineSimilarity(reduction="mean"), (c1, c2), sims.mean(), id="cosine-mean"),
        pytest.param(CosineSimilarity(reduction="none"), (c1, c2), sims, id="cosine-none"),
    ]
    dp, dq = distributions(4)
    kl = scipy.stats.entropy(*np64(dp, dq), axis=1)
    logp, logq = dp.log() - dp.sum(1, keepdim=True).log(), torch.log_softmax(dq, dim=1)
    kl_log = scipy.stats.entropy(*np64(logp.exp(), logq.exp()), axis=1)
    cases += [
        pytest.param(KLDivergence(), (dp, dq), kl.mean(), id="kl-mean"),
        pytest.param(KLDivergence(reduction="sum"), (dp, dq), kl.sum(), id="kl-sum"),
        pytest.param(KLDivergence(reduction="none"), (dp, dq), kl, id="kl-none"),
        pytest.param(KLDivergence(log_prob=True), (logp, logq), kl_log.mean(), id="kl-log"),
    ]
    return cases


# -- the contract's invariant, against oracles --------------------------------


@pytest.mark.parametrize(("metric", "data", "expected"), _case_list())
def test_matches_oracle_on_any_sharding(
    metric: sm.Metric, data: tuple[torch.Tensor, ...], expected: Any
) -> None:
    expected = np.asarray(expected, dtype=np.float64)
    check_sharded(metric, data, expected, seed=11, atol=2e-5, rtol=2e-4)


@pytest.mark.parametrize(
    ("metric", "data", "expected"),
    [
        pytest.param(
            MeanSquaredError(squared=False),
            regression_data(5),
            math.sqrt(skm.mean_squared_error(*np64(*regression_data(5))[::-1])),
            id="rmse",
        ),
        pytest.param(
            PearsonCorrCoef(num_outputs=2),
            regression_data(6, d=2),
            per_column(pearson, *np64(*regression_data(6, d=2))),
            id="pearson-2",
        ),
        pytest.param(
            SpearmanCorrCoef(), regression_data(7), spearman(*np64(*regression_data(7))), id="spearman"
        ),
    ],
)
def test_distributed_worlds(
    world: Any, metric: sm.Metric, data: tuple[torch.Tensor, ...], expected: Any
) -> None:
    check_sharded(
        metric, data, np.asarray(expected), seed=3, world_sizes=(2,), world=world, atol=2e-5, rtol=2e-4
    )


def test_rmse_is_root_of_pooled_mse_not_mean_of_rank_rmses(world: Any) -> None:
    """Rank 0: ten errors of sqrt(20) (SSE 200); rank 1: ten errors of sqrt(10) (SSE 100)."""
    preds = torch.cat([torch.full((10,), math.sqrt(20.0)), torch.full((10,), math.sqrt(10.0))])
    slices = [slice(0, 10), slice(10, 20)]
    values = world.run(
        shard_case, 2, MeanSquaredError(squared=False), (preds, torch.zeros(20)), slices, 0, {}
    )
    pooled = math.sqrt(300 / 20)  # 3.873
    mean_of_roots = (math.sqrt(20) + math.sqrt(10)) / 2  # 3.817
    for v in values:
        assert v.item() == pytest.approx(pooled, rel=1e-6)
        assert abs(v.item() - mean_of_roots) > 0.05


# -- the merge algebra ---------------------------------------------------------

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def three_shards(draw: Any) -> tuple[int, list[list[float]], list[list[float]], list[list[float]]]:
    """``num_outputs`` and three shards of rows ``preds[0..d) + target[0..d)``, each maybe empty."""
    d = draw(st.integers(1, 3))
    rows = st.lists(st.lists(finite, min_size=2 * d, max_size=2 * d), max_size=6)
    return d, draw(rows), draw(rows), draw(rows)


def built(cls: type[sm.Metric], d: int, rows: list[list[float]]) -> sm.Metric:
    m = cls(num_outputs=d)
    if rows:
        x = torch.tensor(rows, dtype=torch.float32).reshape(-1, 2, d)
        m = m.update(x[:, 0], x[:, 1])
    return m


def assert_states_close(a: sm.Metric, b: sm.Metric, exact: bool = False) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        if exact:
            assert torch.equal(sa[k], sb[k]), k
        else:
            scale = max(1.0, float(sa[k].double().abs().max().nan_to_num(0.0, 0.0, 0.0)))
            torch.testing.assert_close(sa[k].double(), sb[k].double(), rtol=1e-4, atol=1e-4 * scale, msg=k)


@pytest.mark.parametrize("cls", [PearsonCorrCoef, ConcordanceCorrCoef, R2Score, ExplainedVariance])
@settings(max_examples=40, deadline=None)
@given(case=three_shards())
def test_merge_is_associative_with_reset_as_identity(cls: type[sm.Metric], case: Any) -> None:
    d, x, y, z = case
    a, b, c = built(cls, d, x), built(cls, d, y), built(cls, d, z)
    assert_states_close(a.merge(b).merge(c), a.merge(b.merge(c)))
    assert_states_close(a.merge(a.reset()), a, exact=True)
    assert_states_close(a.reset().merge(a), a, exact=True)
    assert_states_close(built(cls, d, x + y), a.merge(b))  # update is the merge of the batch
    assert_close(a.merge(b).merge(c).compute(), a.merge(b.merge(c)).compute(), atol=1e-3, rtol=1e-3)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), offset=st.sampled_from([1e3, 1e4, -1e4]), d=st.integers(1, 2))
def test_large_offsets_stay_accurate(seed: int, offset: float, d: int) -> None:
    """Values near 1e4 with unit spread: raw float32 sums of squares would keep no digit of the variance."""
    p, t = regression_data(seed, d=d, offset=offset)
    a, b = np64(p, t)
    rtol = 1e-3
    raw = "raw_values"
    for metric, expected in [
        (PearsonCorrCoef(num_outputs=d), per_column(pearson, a, b)),
        (ConcordanceCorrCoef(num_outputs=d), per_column(concordance, a, b)),
        (R2Score(num_outputs=d, multioutput=raw), skm.r2_score(b, a, multioutput=raw)),
        (
            ExplainedVariance(num_outputs=d, multioutput=raw),
            skm.explained_variance_score(b, a, multioutput=raw),
        ),
    ]:
        expected = expected.squeeze() if d == 1 else expected
        check_sharded(
            metric, (p, t), np.asarray(expected), seed=seed, world_sizes=(1, 3), atol=rtol, rtol=rtol
        )


def test_naive_sums_would_fail_at_large_offsets() -> None:
    """The premise of the test above: float32 sums of squares lose the variance entirely."""
    _, t = regression_data(0, offset=1e4)
    n = t.numel()
    naive = (t * t).sum() - t.sum() ** 2 / n
    true = float(np.var(t.double().numpy()) * n)
    assert abs(float(naive) - true) > 0.1 * true


# -- degenerate inputs ---------------------------------------------------------


def test_no_samples_anywhere_is_nan_not_a_crash() -> None:
    nan_metrics = [
        MeanSquaredError(),
        MeanSquaredError(squared=False),
        MeanAbsoluteError(),
        MeanAbsolutePercentageError(),
        R2Score(),
        ExplainedVariance(),
        PearsonCorrCoef(),
        ConcordanceCorrCoef(),
        SpearmanCorrCoef(),
        CosineSimilarity(reduction="mean"),
        KLDivergence(),
    ]

    def body(rank: int) -> list[torch.Tensor]:
        return [m.compute() for m in nan_metrics]

    for values in [*sm.simulate(body, 3), body(0)]:
        for m, v in zip(nan_metrics, values, strict=True):
            assert v.shape == () and torch.isnan(v), type(m).__name__
    assert CosineSimilarity().compute() == 0
    assert KLDivergence(reduction="sum").compute() == 0
    assert CosineSimilarity(reduction="none").compute().shape == (0,)
    assert PearsonCorrCoef(num_outputs=3).compute().isnan().all()
    assert SpearmanCorrCoef(num_outputs=3).compute().shape == (3,)


def test_empty_batches_change_nothing() -> None:
    p, t = regression_data(0)
    for m in [MeanSquaredError(), R2Score(), ExplainedVariance(), PearsonCorrCoef(), SpearmanCorrCoef()]:
        full = m.update(p, t)
        again = full.update(torch.empty(0), torch.empty(0))
        assert_states_close(again, full, exact=True)
    kl = KLDivergence().update(*distributions(0))
    assert_states_close(kl.update(torch.empty(0, 5), torch.empty(0, 5)), kl, exact=True)


@settings(max_examples=30, deadline=None)
@given(x=finite, y=finite)
def test_single_sample(x: float, y: float) -> None:
    p, t = torch.tensor([x]), torch.tensor([y])
    for cls in [PearsonCorrCoef, ConcordanceCorrCoef, SpearmanCorrCoef, R2Score]:
        assert torch.isnan(cls().update(p, t).compute()), cls.__name__
    assert ExplainedVariance().update(p, t).compute() == 1.0  # as scikit-learn
    expected = (np.float32(x) - np.float32(y)) ** 2
    assert MeanSquaredError().update(p, t).compute().item() == pytest.approx(float(expected), rel=1e-5)


@settings(max_examples=30, deadline=None)
@given(c=finite, seed=st.integers(0, 1000), splits=st.integers(1, 4))
def test_constant_inputs(c: float, seed: int, splits: int) -> None:
    """A constant column is detected exactly (its extremes agree), whatever rounding leaves in m2."""
    _, t = regression_data(seed)
    const = torch.full((N,), c)

    def fold(cls: type[sm.Metric], p: torch.Tensor, q: torch.Tensor, **kw: Any) -> sm.Metric:
        m = cls(**kw)
        for a, b in zip(p.tensor_split(splits), q.tensor_split(splits), strict=True):
            m = m.update(a, b)
        return m

    for cls in [PearsonCorrCoef, SpearmanCorrCoef]:
        assert torch.isnan(fold(cls, const, t).compute()), cls.__name__  # scipy: nan, ConstantInputWarning
        assert torch.isnan(fold(cls, t, const).compute()), cls.__name__
    assert fold(ConcordanceCorrCoef, const, t).compute() == 0
    assert torch.isnan(fold(ConcordanceCorrCoef, const, const).compute())  # 0/0
    # A constant target: 1.0 if predicted exactly, else 0.0 (scikit-learn's force_finite).
    b = const.double().numpy()
    for cls, oracle in [(R2Score, skm.r2_score), (ExplainedVariance, skm.explained_variance_score)]:
        assert fold(cls, const, const).compute() == oracle(b, b) == 1.0
        assert fold(cls, t, const).compute() == oracle(b, t.double().numpy()) == 0.0


def test_multi_output_shapes() -> None:
    p, t = regression_data(0, d=4)
    for m in [
        MeanSquaredError(num_outputs=4),
        MeanAbsoluteError(num_outputs=4),
        PearsonCorrCoef(num_outputs=4),
        ConcordanceCorrCoef(num_outputs=4),
        SpearmanCorrCoef(num_outputs=4),
        R2Score(num_outputs=4, multioutput="raw_values"),
        ExplainedVariance(num_outputs=4, multioutput="raw_values"),
    ]:
        assert m.update(p, t).compute().shape == (4,), type(m).__name__
    assert R2Score(num_outputs=4).update(p, t).compute().shape == ()
    # (N, 1) is accepted as a single output
    assert PearsonCorrCoef().update(p[:, :1], t[:, :1]).compute().shape == ()


# -- library integration -------------------------------------------------------


def test_forward_returns_the_batch_value_and_folds_it_in() -> None:
    p, t = regression_data(0)
    m, first = PearsonCorrCoef().forward(p[:30], t[:30])
    m, second = m.forward(p[30:], t[30:])
    assert_close(first, pearson(*np64(p[:30], t[:30])))
    assert_close(second, pearson(*np64(p[30:], t[30:])))
    assert_close(m.compute(), pearson(*np64(p, t)))


def test_collection_reduces_sums_merges_and_cats_together() -> None:
    p, t = regression_data(8)
    expected = {
        "mse": skm.mean_squared_error(*np64(t, p)),
        "pearson": pearson(*np64(p, t)),
        "spearman": spearman(*np64(p, t)),
    }
    shards = [slice(0, 20), slice(20, 20), slice(20, N)]

    def body(rank: int) -> dict[str, torch.Tensor]:
        c = sm.Collection(mse=MeanSquaredError(), pearson=PearsonCorrCoef(), spearman=SpearmanCorrCoef())
        return c.update(p[shards[rank]], t[shards[rank]]).compute()

    for v in sm.simulate(body, 3):
        assert_close(v, expected)


def test_plain_function_reducer_gathers_whole_states() -> None:
    p, t = regression_data(9)
    with sm.use_reducer(lambda x, op: x):  # a one-participant plain reducer: the gather-by-cat path
        assert_close(PearsonCorrCoef().update(p, t).compute(), pearson(*np64(p, t)))


def test_state_dict_pickle_and_dtype() -> None:
    p, t = regression_data(0, d=2)
    m = ConcordanceCorrCoef(num_outputs=2).update(p, t)
    back = ConcordanceCorrCoef(num_outputs=2).load_state_dict(m.state_dict())
    assert_states_close(back, m, exact=True)
    assert_states_close(pickle.loads(pickle.dumps(m)), m, exact=True)
    assert m.total.dtype == torch.int64 and m.mean.dtype == torch.float64  # moments in float64, the value float32
    assert m.compute().dtype == torch.float32
    f = m.to(torch.float32).update(p, t)  # a cast state keeps its dtype through updates
    assert f.mean.dtype == torch.float32
    # dtype and shape depend on configuration only: integer inputs land in float32 states
    ints = MeanSquaredError().update(torch.tensor([1, 2]), torch.tensor([1, 4]))
    assert ints.sum_squared_error.dtype == torch.float32 and ints.compute() == 2.0


# -- bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "args", "error", "words"),
    [
        pytest.param(
            MeanSquaredError(),
            (torch.zeros(3), torch.zeros(4)),
            ValueError,
            ["MeanSquaredError.update", "`preds` has shape (3,) but `target` has shape (4,)"],
            id="shape",
        ),
        pytest.param(
            MeanAbsoluteError(),
            ([1.0], torch.zeros(1)),
            TypeError,
            ["MeanAbsoluteError.update", "`preds`", "tensor"],
            id="not-a-tensor",
        ),
        pytest.param(
            R2Score(),
            (torch.zeros(2), torch.zeros(2, dtype=torch.complex64)),
            TypeError,
            ["R2Score.update", "`target`", "real"],
            id="complex",
        ),
        pytest.param(
            PearsonCorrCoef(),
            (torch.zeros(4, 2), torch.zeros(4, 2)),
            ValueError,
            ["PearsonCorrCoef.update", "`preds`", "num_outputs=1"],
            id="outputs",
        ),
        pytest.param(
            MeanSquaredError(num_outputs=2),
            (torch.zeros(4, 3), torch.zeros(4, 3)),
            ValueError,
            ["MeanSquaredError.update", "num_outputs=2"],
            id="outputs-2",
        ),
        pytest.param(
            ConcordanceCorrCoef(),
            (torch.tensor([1.0, float("nan")]), torch.zeros(2)),
            ValueError,
            ["ConcordanceCorrCoef.update", "`preds`", "non-finite"],
            id="nan",
        ),
        pytest.param(
            ExplainedVariance(),
            (torch.zeros(2), torch.tensor([1.0, float("inf")])),
            ValueError,
            ["ExplainedVariance.update", "`target`", "non-finite"],
            id="inf",
        ),
        pytest.param(
            MeanAbsolutePercentageError(),
            (torch.zeros(2), torch.tensor([1.0, float("inf")])),
            ValueError,
            ["MeanAbsolutePercentageError.update", "`target`"],
            id="mape-inf",
        ),
        pytest.param(
            SpearmanCorrCoef(),
            (torch.tensor([float("nan")]), torch.zeros(1)),
            ValueError,
            ["SpearmanCorrCoef.update", "`preds`"],
            id="spearman-nan",
        ),
        pytest.param(
            CosineSimilarity(),
            (torch.zeros(3), torch.zeros(3)),
            ValueError,
            ["CosineSimilarity.update", "`preds`", "(N, D)"],
            id="cosine-1d",
        ),
        pytest.param(
            KLDivergence(),
            (torch.tensor([[0.5, -0.5]]), torch.tensor([[0.5, 0.5]])),
            ValueError,
            ["KLDivergence.update", "`p`", "negative"],
            id="kl-negative",
        ),
        pytest.param(
            KLDivergence(),
            (torch.tensor([[0.5, 0.5]]), torch.tensor([[0.0, 0.0]])),
            ValueError,
            ["KLDivergence.update", "`q`", "sums to 0"],
            id="kl-zero-row",
        ),
        pytest.param(
            KLDivergence(log_prob=True),
            (torch.tensor([[0.0, float("nan")]]), torch.zeros(1, 2)),
            ValueError,
            ["KLDivergence.update", "`p`", "NaN"],
            id="kl-log-nan",
        ),
        pytest.param(
            KLDivergence(),
            (torch.zeros(2, 3), torch.zeros(2, 4)),
            ValueError,
            ["KLDivergence.update", "`p` has shape (2, 3) but `q` has shape (2, 4)"],
            id="kl-shape",
        ),
    ],
)
def test_bad_input_names_metric_and_argument_and_changes_nothing(
    metric: sm.Metric, args: tuple[Any, ...], error: type[Exception], words: list[str]
) -> None:
    if isinstance(metric, KLDivergence):
        good = distributions(0, d=2)
    else:
        good = regression_data(
            0, d=2 if isinstance(metric, CosineSimilarity) else getattr(metric, "num_outputs", 1)
        )
    before = metric.update(*good)
    snapshot = {k: v.clone() for k, v in before.state_dict().items()}
    with pytest.raises(error) as info:
        before.update(*args)
    for w in words:
        assert w in str(info.value), str(info.value)
    after = before.state_dict()
    assert after.keys() == snapshot.keys()
    for k, v in after.items():
        assert torch.equal(v, snapshot[k]), k


def test_validate_args_false_skips_the_data_checks() -> None:
    nan = torch.tensor([1.0, float("nan")])
    assert torch.isnan(MeanSquaredError(validate_args=False).update(nan, torch.zeros(2)).compute())
    kl = KLDivergence(validate_args=False).update(torch.tensor([[0.5, -0.5]]), torch.tensor([[0.5, 0.5]]))
    assert kl.total == 1
    with pytest.raises(ValueError, match="shape"):  # shapes are still checked: they guard the state
        MeanSquaredError(validate_args=False).update(torch.zeros(3), torch.zeros(4))


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: MeanSquaredError(squared=1), TypeError, ["MeanSquaredError", "`squared`"]),
        (lambda: MeanSquaredError(num_outputs=0), ValueError, ["MeanSquaredError", "`num_outputs`"]),
        (lambda: PearsonCorrCoef(num_outputs=2.0), TypeError, ["PearsonCorrCoef", "`num_outputs`"]),
        (lambda: R2Score(adjusted=-1), ValueError, ["R2Score", "`adjusted`"]),
        (lambda: R2Score(multioutput="max"), ValueError, ["R2Score", "`multioutput`"]),
        (lambda: ExplainedVariance(multioutput="x"), ValueError, ["ExplainedVariance", "`multioutput`"]),
        (lambda: CosineSimilarity(reduction="max"), ValueError, ["CosineSimilarity", "`reduction`"]),
        (lambda: KLDivergence(log_prob="yes"), TypeError, ["KLDivergence", "`log_prob`"]),
        (lambda: SpearmanCorrCoef(validate_args=None), TypeError, ["SpearmanCorrCoef", "`validate_args`"]),
    ],
)
def test_bad_configuration(make: Callable[[], sm.Metric], error: type[Exception], words: list[str]) -> None:
    with pytest.raises(error) as info:
        make()
    for w in words:
        assert w in str(info.value)


def test_merge_refuses_mismatches() -> None:
    p, t = regression_data(0)
    a = PearsonCorrCoef().update(p, t)
    with pytest.raises(TypeError, match="PearsonCorrCoef.merge"):
        a.merge(ConcordanceCorrCoef().update(p, t))
    with pytest.raises(ValueError, match="PearsonCorrCoef.merge: configurations differ: num_outputs"):
        a.merge(PearsonCorrCoef(num_outputs=2))
    with pytest.raises(ValueError, match="R2Score.merge: configurations differ: multioutput"):
        R2Score().merge(R2Score(multioutput="raw_values"))
    with pytest.raises(ValueError, match="MeanSquaredError.merge"):
        MeanSquaredError().merge(MeanSquaredError(squared=False))


def test_docs_example_runs() -> None:
    path = Path(__file__).resolve().parent.parent / "docs" / "regression.md"
    assert doctest.testfile(str(path), module_relative=False).failed == 0


def test_adjusted_r2_falls_back_with_a_warning() -> None:
    p, t = regression_data(0)
    m = R2Score(adjusted=N).update(p, t)
    with pytest.warns(UserWarning, match="adjusted"):
        value = m.compute()
    assert_close(value, skm.r2_score(*np64(t, p)))


# -- inputs more precise than the state -----------------------------------------------


_OFFSET_CASES = {
    "MeanSquaredError": (MeanSquaredError, lambda p, t: ((p - t) ** 2).mean()),
    "MeanAbsoluteError": (MeanAbsoluteError, lambda p, t: (p - t).abs().mean()),
    "MeanAbsolutePercentageError": (MeanAbsolutePercentageError, lambda p, t: ((p - t).abs() / t.abs()).mean()),
    "LogCoshError": (sm.regression.LogCoshError,  # log cosh x = |x| + log1p(exp(-2|x|)) - log 2, without overflow
                     lambda p, t: ((p - t).abs() + torch.log1p(torch.exp(-2 * (p - t).abs())) - math.log(2)).mean()),
    "MinkowskiDistance": (lambda: sm.regression.MinkowskiDistance(p=3.0),
                          lambda p, t: ((p - t).abs() ** 3).sum() ** (1 / 3)),
}


@pytest.mark.parametrize("name", list(_OFFSET_CASES))
@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_inputs_the_state_dtype_cannot_hold_are_not_rounded_before_the_error(name: str, dtype: torch.dtype) -> None:
    # float64 and int64 inputs were cast to the float32 state first: 1e6 + 0.01 and 1e6 became one value, MSE 0
    make, truth = _OFFSET_CASES[name]
    g = torch.Generator().manual_seed(7)
    if dtype.is_floating_point:  # errors of 0.05 at 1e6-2e6, where float32's spacing is 0.06-0.12
        target = 1e6 + torch.randint(0, 10**6, (40,), generator=g).double()
        preds = target + torch.randn(40, generator=g, dtype=torch.float64) * 0.05
    else:  # errors of up to 3 at 2**25, where float32's spacing is 4
        target = 2.0**25 + torch.randint(0, 1000, (40,), generator=g).double()
        preds = target + torch.randint(-3, 4, (40,), generator=g).double()
    p, t = preds.to(dtype), target.to(dtype)
    want = truth(p.double(), t.double())
    got = make().update(p[:25], t[:25]).update(p[25:], t[25:])
    assert got.compute().dtype == torch.float32  # the state, and the value, stay float32
    assert_close(got.compute().double(), want, rtol=1e-6, atol=0)


def test_spearman_ranks_float64_inputs_that_float32_would_tie() -> None:
    g = torch.Generator().manual_seed(8)
    target = torch.randn(60, generator=g, dtype=torch.float64)
    preds = 1.0 + target * 1e-9  # distinct in float64, one value in float32
    assert preds.float().unique().numel() < 10
    got = SpearmanCorrCoef().update(preds, target).compute()
    assert_close(got.double(), torch.tensor(scipy.stats.spearmanr(preds.numpy(), target.numpy())[0],
                                            dtype=torch.float64), rtol=1e-6, atol=0)


def test_moments_of_float64_data_far_from_zero_keep_its_spread() -> None:
    # float32 moments of data at 1e6 with a spread of 1e-2 read as constant: Pearson 0.0, R2 -3.0
    g = torch.Generator().manual_seed(10)
    target = 1e6 + torch.randn(500, dtype=torch.float64, generator=g) * 1e-2
    preds = target + torch.randn(500, dtype=torch.float64, generator=g) * 5e-3
    y, p = target.numpy(), preds.numpy()
    want = {
        PearsonCorrCoef: np.corrcoef(p, y)[0, 1],
        R2Score: skm.r2_score(y, p),
        ExplainedVariance: skm.explained_variance_score(y, p),
    }
    for cls, value in want.items():
        got = cls().update(preds[:200], target[:200]).update(preds[200:], target[200:]).compute()
        assert got.dtype == torch.float32
        assert_close(got.double(), torch.tensor(value, dtype=torch.float64), rtol=1e-6, atol=0)


_LARGE_PATH = ["R2Score", "ExplainedVariance", "PearsonCorrCoef", "ConcordanceCorrCoef", "RelativeSquaredError",
               "NormalizedRootMeanSquaredError"]


@pytest.mark.parametrize("name", _LARGE_PATH)
@pytest.mark.parametrize("outputs", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_large_batch_takes_fused_kernels_and_keeps_the_small_batches_state(name: str, outputs: int,
                                                                              dtype: torch.dtype) -> None:
    # from _moments.LARGE samples a batch is not stacked and one output takes dot/aminmax/mse_loss:
    # the state must be that of the same rows fed in small batches (the plain ops), and the value sklearn's
    from scopedmetrics.regression import _moments

    n = 3 * _moments.LARGE + 5
    g = torch.Generator().manual_seed(outputs)
    shape = (n,) if outputs == 1 else (n, outputs)
    target = 1e3 + torch.randn(shape, generator=g)
    preds = target + 0.5 * torch.randn(shape, generator=g)
    cls = getattr(sm.regression, name)
    make = (lambda: cls()) if outputs == 1 else (lambda: cls(num_outputs=outputs))
    large = make().to(dtype).update(preds, target)
    small = make().to(dtype)
    for i in range(0, n, 1000):
        small = small.update(preds[i:i + 1000], target[i:i + 1000])
    tol = 1e-9 if dtype == torch.float64 else 1e-4
    for key, value in large.state_dict().items():
        if value.is_floating_point():
            assert_close(value, small.state_dict()[key], rtol=tol, atol=tol * 1e3)
        else:
            assert torch.equal(value, small.state_dict()[key])
    y, p = target.double().numpy(), preds.double().numpy()
    if name == "R2Score" and outputs == 1:
        assert_close(large.compute().double(), torch.tensor(skm.r2_score(y, p), dtype=torch.float64), rtol=1e-5)
    if name == "PearsonCorrCoef" and outputs == 1:
        assert_close(large.compute().double(), torch.tensor(np.corrcoef(p, y)[0, 1], dtype=torch.float64), rtol=1e-5)
