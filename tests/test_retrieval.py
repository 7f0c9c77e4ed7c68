"""Retrieval metrics against TorchMetrics and trec_eval (pytrec_eval), with queries split across ranks.

The grouped metrics rank each query whole after the reduction, so the
invariant must hold however a query's documents fall on the shards: the data
here gives every query documents on several shards. ``RetrievalAtK`` (dense
scores per batch) is checked against the grouped metrics on the same rows.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import pytest
import torch
from catalogue import assert_same_state, state_of
from shards import assert_close, check_sharded

import scopedmetrics as sm
from scopedmetrics import retrieval as smr

tm_retrieval = pytest.importorskip("torchmetrics.retrieval")
pytrec_eval = pytest.importorskip("pytrec_eval")

GROUPED = ["RetrievalMRR", "RetrievalMAP", "RetrievalNormalizedDCG", "RetrievalPrecision", "RetrievalRecall",
           "RetrievalHitRate", "RetrievalRPrecision", "RetrievalFallOut"]
WITH_TOP_K = [n for n in GROUPED if n != "RetrievalRPrecision"]


def rankings(queries: int, seed: int, graded: bool = False, shuffle: bool = True,
             scores: str = "normal") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Documents of ``queries`` queries (1-11 each, ids spread out), rows shuffled: ``(preds, target, indexes)``."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 12, (queries,), generator=g)
    ids = torch.randperm(queries * 5, generator=g)[:queries] * 7 - 40  # sparse, some negative
    indexes = torch.repeat_interleave(ids, sizes)
    n = indexes.numel()
    if scores == "normal":
        preds = torch.randn(n, generator=g)
    elif scores == "positive":
        preds = torch.rand(n, generator=g) + 0.01
    else:  # few distinct values: many ties
        preds = torch.randint(0, 3, (n,), generator=g).float()
    target = torch.randint(0, 4, (n,), generator=g).float() if graded else (torch.rand(n, generator=g) < 0.3).long()
    if shuffle:
        order = torch.randperm(n, generator=g)
        preds, target, indexes = preds[order], target[order], indexes[order]
    return preds, target, indexes


def tm_value(name: str, kwargs: dict[str, Any], p: torch.Tensor, t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    return getattr(tm_retrieval, name)(**kwargs)(p, t, indexes=i)


CONFIGS = [{}, {"top_k": 1}, {"top_k": 3}, {"empty_target_action": "skip"}, {"empty_target_action": "pos"},
           {"aggregation": "median"}, {"aggregation": "max", "top_k": 2}, {"aggregation": "min"},
           {"ignore_index": -1}]


def config_id(kwargs: dict[str, Any]) -> str:
    return "-".join(f"{a}={b}" for a, b in kwargs.items()) or "default"


@pytest.mark.parametrize(("name", "kwargs"), [
    pytest.param(name, kwargs, id=f"{name}-{config_id(kwargs)}")
    for name in GROUPED for kwargs in CONFIGS
    if "top_k" not in kwargs or name in WITH_TOP_K  # RetrievalRPrecision takes no top_k, as in TorchMetrics
])
def test_grouped_metrics_equal_torchmetrics(name: str, kwargs: dict[str, Any]) -> None:
    p, t, i = rankings(300, 1, graded=name == "RetrievalNormalizedDCG")
    if "ignore_index" in kwargs:
        t = t.clone()
        t[::7] = -1
    ours = getattr(smr, name)(**kwargs).update(p, t, indexes=i).compute()
    assert_close(ours, tm_value(name, kwargs, p, t, i), atol=1e-6)


@pytest.mark.parametrize("top_k", [None, 2, 20])
def test_precision_with_adaptive_k_equals_torchmetrics(top_k: int | None) -> None:
    p, t, i = rankings(200, 2)
    ours = smr.RetrievalPrecision(top_k=top_k, adaptive_k=True).update(p, t, indexes=i).compute()
    assert_close(ours, tm_value("RetrievalPrecision", {"top_k": top_k, "adaptive_k": True}, p, t, i), atol=1e-6)


@pytest.mark.parametrize("top_k", [None, 1, 2, 5])
def test_ndcg_averages_tied_scores_as_torchmetrics(top_k: int | None) -> None:
    p, t, i = rankings(300, 3, graded=True, scores="ties")
    ours = smr.RetrievalNormalizedDCG(top_k=top_k).update(p, t, indexes=i).compute()
    assert_close(ours, tm_value("RetrievalNormalizedDCG", {"top_k": top_k}, p, t, i), atol=1e-6)


def test_a_custom_aggregation_gets_the_per_query_values() -> None:
    def second_largest(values: torch.Tensor, dim: int | None = None) -> torch.Tensor:
        return values.sort().values[-2]

    p, t, i = rankings(50, 4)
    ours = smr.RetrievalMRR(aggregation=second_largest).update(p, t, indexes=i).compute()
    assert_close(ours, tm_value("RetrievalMRR", {"aggregation": second_largest}, p, t, i))


def trec(p: torch.Tensor, t: torch.Tensor, i: torch.Tensor, measures: set[str]) -> dict[str, float]:
    """Mean of each trec_eval measure over the queries (every query here has a relevant document)."""
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for k, (score, rel, q) in enumerate(zip(p.tolist(), t.tolist(), i.tolist())):
        run.setdefault(str(q), {})[f"d{k}"] = score
        qrels.setdefault(str(q), {})[f"d{k}"] = int(rel)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = next(iter(per_query.values())).keys()
    return {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in names}


def with_a_relevant_document_per_query(graded: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p, t, i = rankings(200, 5, graded=graded, scores="positive")
    first = torch.zeros_like(i, dtype=torch.bool)
    _, where = torch.unique(i, return_inverse=True)
    seen: set[int] = set()
    for row, q in enumerate(where.tolist()):
        if q not in seen:
            seen.add(q)
            first[row] = True
    t = t.clone()
    t[first] = 2 if graded else 1
    return p, t, i


def test_binary_metrics_equal_trec_eval() -> None:
    p, t, i = with_a_relevant_document_per_query(graded=False)
    want = trec(p, t, i, {"recip_rank", "map", "P.3", "recall.3", "Rprec", "success.1"})

    def ours(cls: type, **kwargs: Any) -> float:
        return float(cls(**kwargs).update(p, t, indexes=i).compute())

    assert ours(smr.RetrievalMRR) == pytest.approx(want["recip_rank"], abs=1e-6)
    assert ours(smr.RetrievalMAP) == pytest.approx(want["map"], abs=1e-6)
    assert ours(smr.RetrievalPrecision, top_k=3) == pytest.approx(want["P_3"], abs=1e-6)
    assert ours(smr.RetrievalRecall, top_k=3) == pytest.approx(want["recall_3"], abs=1e-6)
    assert ours(smr.RetrievalRPrecision) == pytest.approx(want["Rprec"], abs=1e-6)
    assert ours(smr.RetrievalHitRate, top_k=1) == pytest.approx(want["success_1"], abs=1e-6)


def test_graded_ndcg_equals_trec_eval() -> None:
    p, t, i = with_a_relevant_document_per_query(graded=True)
    want = trec(p, t, i, {"ndcg", "ndcg_cut.3"})
    assert float(smr.RetrievalNormalizedDCG().update(p, t, indexes=i).compute()) == pytest.approx(want["ndcg"])
    top3 = smr.RetrievalNormalizedDCG(top_k=3).update(p, t, indexes=i).compute()
    assert float(top3) == pytest.approx(want["ndcg_cut_3"], abs=1e-6)


@pytest.mark.parametrize("name", GROUPED)
def test_grouped_metrics_hold_the_invariant_with_queries_split_across_ranks(name: str) -> None:
    arrays = rankings(40, 6, graded=name == "RetrievalNormalizedDCG")  # shuffled: each query on several shards
    kwargs = {"top_k": 2} if name in WITH_TOP_K else {}
    expected = tm_value(name, kwargs, *arrays)
    check_sharded(getattr(smr, name)(**kwargs), arrays, expected, seed=6)


@pytest.mark.parametrize("name", ["RetrievalMRR", "RetrievalNormalizedDCG"])
def test_grouped_metrics_in_gloo_and_threads(world: Any, name: str) -> None:
    arrays = rankings(30, 7, graded=name == "RetrievalNormalizedDCG")
    check_sharded(getattr(smr, name)(), arrays, tm_value(name, {}, *arrays), world=world, world_sizes=(2,))


def test_the_value_does_not_depend_on_row_order_even_with_ties() -> None:
    """Tied scores rank relevant-last, a rule of the rows alone; TorchMetrics leaves ties to torch.topk."""
    p, t, i = rankings(200, 8, scores="ties", shuffle=False)
    for name in GROUPED:
        one = getattr(smr, name)(top_k=2) if name in WITH_TOP_K else getattr(smr, name)()
        base = one.update(p, t, indexes=i).compute()
        for seed in range(3):
            order = torch.randperm(p.numel(), generator=torch.Generator().manual_seed(seed))
            assert torch.equal(one.reset().update(p[order], t[order], indexes=i[order]).compute(), base), name


@pytest.mark.parametrize("far", [2**31, 2**62, 2**63 - 1])
def test_query_ids_any_distance_apart_are_different_queries(far: int) -> None:
    # ids 2**63 or more apart (hashed int64 ids) wrapped the span check to a negative number, and the packed
    # sort key kept 31 bits of the id: -1 and 2**63 - 1 ranked as one query (MRR 0.667 for 0.75)
    p, t, i = rankings(6, 6)
    _, query = torch.unique(i, return_inverse=True)  # 0..5
    ids = torch.tensor([-(2**63), -1, 0, 5, 2**40 + 3, far])
    for name in GROUPED:
        m = getattr(smr, name)()
        want = m.update(p, t, indexes=query).compute()
        assert torch.equal(m.update(p, t, indexes=ids[query]).compute(), want), name


def test_ties_rank_relevant_documents_last() -> None:
    p = torch.tensor([0.5, 0.5, 0.5])
    t = torch.tensor([1, 0, 0])
    i = torch.zeros(3, dtype=torch.long)
    assert smr.RetrievalMRR().update(p, t, indexes=i).compute().item() == pytest.approx(1 / 3)
    assert smr.RetrievalFallOut(top_k=1).update(p, t, indexes=i).compute().item() == pytest.approx(0.5)


NEAR_TIES = [pytest.param([0.30000001, 0.3], id="one_float32_ulp"),
             pytest.param([16777217.0, 16777216.0], id="above_2**24")]


def by_rank(p: torch.Tensor) -> torch.Tensor:
    """Scores in the same order as ``p``, as small float32 integers (from 1): TorchMetrics casts scores to float32,
    so it is the oracle of float64 scores only through an order-preserving map that float32 holds exactly."""
    return (torch.unique(p, return_inverse=True)[1] + 1).float()


@pytest.mark.parametrize("scores", NEAR_TIES)
def test_float64_scores_that_float32_would_round_together_are_not_tied(scores: list[float]) -> None:
    """Distinct float64 scores rank as distinct, in the grouped and the dense form."""
    p, t, i = torch.tensor(scores, dtype=torch.float64), torch.tensor([1, 0]), torch.tensor([0, 0])
    assert p.float()[0] == p.float()[1]  # float32 would tie them (and rank the relevant one last)
    for name in GROUPED:
        kwargs = {"top_k": 1} if name in WITH_TOP_K else {}
        ours = getattr(smr, name)(**kwargs).update(p, t, indexes=i).compute()
        assert_close(ours, tm_value(name, kwargs, by_rank(p), t, i), atol=0)
    assert smr.RetrievalMRR().update(p, t, indexes=i).compute().item() == 1.0
    assert smr.RetrievalPrecision(top_k=1).update(p, t, indexes=i).compute().item() == 1.0
    dense_values = smr.RetrievalAtK(k=(1,)).update(p[None], t[None]).compute()
    assert all(v.item() == 1.0 for v in dense_values.values()), dense_values


def test_float64_scores_keep_their_order_on_any_split() -> None:
    """Scores 1e-12 apart, tied in float32: the rows stay float64 on every shard and rank exactly."""
    p, t, i = rankings(60, 17, scores="ties")
    p = (p + 1).double() + torch.arange(p.numel(), dtype=torch.float64) * 1e-12
    assert torch.unique(p.float()).numel() < torch.unique(p).numel()
    for name in GROUPED:
        kwargs = {"top_k": 2} if name in WITH_TOP_K else {}
        expected = tm_value(name, kwargs, by_rank(p), t, i)
        check_sharded(getattr(smr, name)(**kwargs), (p, t, i), expected, seed=8, atol=1e-7)
    half = p.numel() // 2
    m = smr.RetrievalMRR().update(p[:half].float(), t[:half], indexes=i[:half])
    m = m.update(p[half:], t[half:], indexes=i[half:])  # a float64 batch after a float32 one is not rounded
    assert m.preds.dtype == torch.float64 and torch.equal(m.preds[half:], p[half:])
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        assert smr.RetrievalMRR().update(p.to(dtype), t, indexes=i).preds.dtype == torch.float64


def test_documents_scored_at_most_zero_are_never_hits_as_in_torchmetrics() -> None:
    p, t, i = torch.tensor([-0.2, -0.5]), torch.tensor([1, 0]), torch.zeros(2, dtype=torch.long)
    for name in ("RetrievalMRR", "RetrievalMAP", "RetrievalPrecision", "RetrievalRecall"):
        assert getattr(smr, name)().update(p, t, indexes=i).compute().item() == 0.0
        assert tm_value(name, {}, p, t, i).item() == 0.0
    assert smr.RetrievalHitRate().update(p, t, indexes=i).compute().item() == 1.0


def test_empty_target_action_error_raises_in_compute_naming_the_metric() -> None:
    p, t, i = torch.tensor([0.3, 0.2, 0.9]), torch.tensor([0, 0, 1]), torch.tensor([0, 0, 1])
    with pytest.raises(ValueError, match=r"RetrievalMAP\.compute: a query has no positive target"):
        smr.RetrievalMAP(empty_target_action="error").update(p, t, indexes=i).compute()
    with pytest.raises(ValueError, match=r"RetrievalFallOut\.compute: a query has no negative target"):
        smr.RetrievalFallOut(empty_target_action="error").update(p, t, indexes=i).compute()
    only_empty = smr.RetrievalRecall(empty_target_action="skip").update(p[:2], t[:2], indexes=i[:2])
    assert only_empty.compute().item() == 0.0


def test_one_hundred_thousand_queries_compute_fast() -> None:
    queries, docs = 100_000, 5
    g = torch.Generator().manual_seed(9)
    indexes = torch.randperm(queries, generator=g).repeat_interleave(docs)
    preds, target = torch.rand(queries * docs, generator=g), (torch.rand(queries * docs, generator=g) < 0.2).long()
    metrics = sm.Collection({name: getattr(smr, name)() for name in GROUPED})
    metrics = metrics.update(preds, target, indexes=indexes)
    start = time.perf_counter()
    values = metrics.compute()
    elapsed = time.perf_counter() - start
    assert elapsed < 30, f"{elapsed:.1f}s for 8 metrics over 100,000 queries"  # about 1.5 s on 2 idle cores
    small = slice(0, 500 * docs)  # the same rows of the first 500 queries, against TorchMetrics
    sub = {n: getattr(smr, n)().update(preds[small], target[small], indexes=indexes[small]).compute() for n in GROUPED}
    assert_close(sub, {n: tm_value(n, {}, preds[small], target[small], indexes[small]) for n in GROUPED}, atol=1e-6)
    assert set(values) == set(GROUPED)


# -- the dense form ----------------------------------------------------------------------------------------

DENSE_AS = {"hit_rate": "RetrievalHitRate", "recall": "RetrievalRecall", "precision": "RetrievalPrecision",
            "mrr": "RetrievalMRR", "ndcg": "RetrievalNormalizedDCG", "map": "RetrievalMAP"}


def dense(queries: int, docs: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand(queries, docs, generator=g) + 0.01
    relevant = torch.rand(queries, docs, generator=g) < 0.15
    return scores, relevant, torch.randint(0, docs, (queries,), generator=g)


@pytest.mark.parametrize("action", ["neg", "pos", "skip"])
def test_dense_values_equal_the_grouped_metrics_on_the_same_rows(action: str) -> None:
    scores, relevant, gold = dense(60, 12, 10)
    relevant[:3] = False  # queries without a relevant document
    queries = torch.arange(60)[:, None].expand(60, 12)
    for target, name in ((relevant, "relevance"), (gold, "gold")):
        rel = relevant if name == "relevance" else torch.nn.functional.one_hot(gold, 12).bool()
        got = smr.RetrievalAtK(k=(1, 4, 20), empty_target_action=action).update(scores, target).compute()
        for metric, cls in DENSE_AS.items():
            for k in (1, 4, 20):
                want = tm_value(cls, {"top_k": k, "empty_target_action": action}, scores, rel, queries)
                assert_close(got[f"{metric}@{k}"], want, atol=1e-6)


def test_dense_holds_the_invariant_and_constant_memory() -> None:
    scores, _, gold = dense(50, 9, 11)
    expected = smr.RetrievalAtK().update(scores, gold).compute()
    check_sharded(smr.RetrievalAtK(), (scores, gold), expected, seed=7)
    big = smr.RetrievalAtK().update(*dense(5000, 9, 12)[::2])
    assert [t.shape for t in big.state_dict().values()] == [t.shape for t in smr.RetrievalAtK().state_dict().values()]


def test_dense_refuses_bad_input() -> None:
    scores, relevant, gold = dense(4, 5, 13)
    m = smr.RetrievalAtK().update(scores, gold)
    before = state_of(m)
    cases = [((scores[0], gold), ValueError, "`preds`"), ((scores, gold[:3]), ValueError, "`target`"),
             ((scores, gold + 5), ValueError, "`target`"), ((scores.long(), gold), TypeError, "`preds`"),
             ((scores, relevant.float() * 2), ValueError, "`target`"),
             ((scores.index_fill(0, torch.tensor([0]), float("nan")), gold), ValueError, "`preds`")]
    for args, error, needle in cases:
        with pytest.raises(error) as info:
            m.update(*args)
        assert "RetrievalAtK.update" in str(info.value) and needle in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))
    with pytest.raises(ValueError, match="RetrievalAtK: argument `k`"):
        smr.RetrievalAtK(k=(0, 5))
    with pytest.raises(ValueError, match=r"RetrievalAtK\.update: argument `target` gives a query no relevant"):
        smr.RetrievalAtK(empty_target_action="error").update(scores, torch.zeros_like(relevant))


# -- configuration and bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", GROUPED)
def test_positional_parameters_follow_torchmetrics(name: str) -> None:
    def positional(cls: type) -> list[str]:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        return [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]

    theirs = positional(getattr(tm_retrieval, name))
    assert positional(getattr(smr, name))[: len(theirs)] == theirs


BAD = [
    ("no_indexes", lambda p, t, i: (p, t, None), TypeError, "indexes"),
    ("float_indexes", lambda p, t, i: (p, t, i.float()), TypeError, "indexes"),
    ("indexes_shape", lambda p, t, i: (p, t, i[1:]), ValueError, "indexes"),
    ("target_shape", lambda p, t, i: (p, t[1:], i), ValueError, "preds"),
    ("integer_preds", lambda p, t, i: ((p * 10).long(), t, i), TypeError, "preds"),
    ("list_preds", lambda p, t, i: (p.tolist(), t, i), TypeError, "preds"),
    ("complex_preds", lambda p, t, i: (p.to(torch.complex64), t, i), TypeError, "preds"),
    ("nan_preds", lambda p, t, i: (p.index_fill(0, torch.tensor([0]), float("nan")), t, i), ValueError, "preds"),
    ("non_binary_target", lambda p, t, i: (p, t * 2, i), ValueError, "target"),
    ("nan_target", lambda p, t, i: (p, t.float().index_fill(0, torch.tensor([0]), float("nan")), i), ValueError,
     "target"),
]


@pytest.mark.parametrize(("name", "case", "bad", "error", "arg"), [
    pytest.param(name, *b, id=f"{name}-{b[0]}")
    for name in GROUPED for b in BAD
    if not (b[0] == "non_binary_target" and name == "RetrievalNormalizedDCG")  # NDCG takes graded relevance
])
def test_bad_batches_are_refused_naming_metric_and_argument(name: str, case: str, bad: Any, error: type,
                                                            arg: str) -> None:
    p, t, i = rankings(5, 14, shuffle=False)
    m = getattr(smr, name)().update(p, t, indexes=i)
    before = state_of(m)
    with pytest.raises(error) as info:
        m.update(*bad(p, t, i))
    assert f"{name}.update" in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))


@pytest.mark.parametrize(("kwargs", "error", "needle"), [
    ({"empty_target_action": "ignore"}, ValueError, "`empty_target_action`"),
    ({"ignore_index": 0.5}, TypeError, "`ignore_index`"),
    ({"top_k": 0}, ValueError, "`top_k`"),
    ({"top_k": "3"}, TypeError, "`top_k`"),
    ({"aggregation": "sum"}, ValueError, "`aggregation`"),
])
def test_bad_configuration_is_refused(kwargs: dict[str, Any], error: type, needle: str) -> None:
    with pytest.raises(error, match=needle):
        smr.RetrievalRecall(**kwargs)


def test_an_empty_batch_and_ignored_rows_change_nothing() -> None:
    p, t, i = rankings(5, 15, shuffle=False)
    m = smr.RetrievalMRR(ignore_index=-1).update(p, t, indexes=i)
    assert_same_state(state_of(m.update(p[:0], t[:0], indexes=i[:0])), state_of(m))
    assert_same_state(state_of(m.update(p, torch.full_like(t, -1), indexes=i)), state_of(m))


def test_an_ignore_index_a_narrow_target_dtype_cannot_hold_ignores_nothing() -> None:
    # torch compares in the tensor's dtype: -100 against uint8 relevance was 156, so those documents were dropped
    p = torch.tensor([0.9, 0.4, 0.7, 0.2])
    t = torch.tensor([156, 0, 3, 1])
    i = torch.tensor([0, 0, 1, 1])
    want = smr.RetrievalNormalizedDCG().update(p, t, indexes=i)
    got = smr.RetrievalNormalizedDCG(ignore_index=-100).update(p, t.to(torch.uint8), indexes=i)
    assert_same_state(state_of(got), state_of(want))


def test_mask_and_any_shape() -> None:
    p, t, i = rankings(20, 16, shuffle=False)
    n = p.numel() - p.numel() % 2
    p2, t2, i2 = p[:n].reshape(-1, 2), t[:n].reshape(-1, 2), i[:n].reshape(-1, 2)
    keep = torch.arange(n // 2) % 3 != 0
    got = smr.RetrievalMAP().update(p2, t2, indexes=i2, mask=keep)
    want = smr.RetrievalMAP().update(p2[keep].flatten(), t2[keep].flatten(), indexes=i2[keep].flatten())
    assert_same_state(state_of(got), state_of(want))
