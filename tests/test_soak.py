"""Soak: random update / merge / reduce / reset programs on random uneven shards, against one process.

Hypothesis draws a simulated world (1-4 ranks), a data set cut into uneven
shards (empty ones included) and a program. Between collective steps every rank
runs its own random sequence of local operations on two metric sets, ``main``
and ``side``: update either with its next chunk (possibly empty), fold ``side``
into ``main`` or ``main`` into ``side`` with ``merge``, or reset ``main``. A
collective step is ``compute`` (every rank's value must equal the metric
computed in one process on every rank's ``main`` data, concatenated in rank
order, and so must the ``merge`` fold of the ranks' states) or ``reduce``
(the reduced metric's values are checked; it is final, so ``main`` goes on unreduced). A
model of which samples each metric holds, in order, is the oracle's input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shards import assert_close

import scopedmetrics as sm
import scopedmetrics.classification as smc
import scopedmetrics.regression as smr

Feed = Callable[[torch.Tensor], tuple[torch.Tensor, ...]]

METRICS: dict[str, tuple[Callable[[], sm.Metric], Feed]] = {
    "sum": (sm.Sum, lambda x: (x,)),
    "mean": (sm.Mean, lambda x: (x,)),
    "max": (sm.Max, lambda x: (x,)),
    "min": (sm.Min, lambda x: (x,)),
    "cat": (sm.Cat, lambda x: (x,)),  # keeps the order: rank order, then the order of merges
    "mse": (smr.MeanSquaredError, lambda x: (x, 0.5 * x + 1)),
    "pearson": (smr.PearsonCorrCoef, lambda x: (x, torch.sin(x))),  # a whole-state merge
    "auroc": (smc.BinaryAUROC, lambda x: ((x / 40).sigmoid(), (torch.cos(x) > 0).long())),  # exact: cat states
    "acc": (lambda: smc.MulticlassAccuracy(num_classes=3, average="micro"),
            lambda x: (torch.remainder((x * 7).long(), 3), torch.remainder((x * 5).long(), 3))),
}
LOCAL_OPS = ("update_main", "update_side", "side_into_main", "main_into_side", "reset", "nothing")


def fresh() -> dict[str, sm.Metric]:
    return {k: make() for k, (make, _) in METRICS.items()}


def fed(tree: dict[str, sm.Metric], x: torch.Tensor) -> dict[str, sm.Metric]:
    """Every metric updated with ``x``, even when ``x`` is empty (an empty batch is a no-op)."""
    return {k: m.update(*METRICS[k][1](x)) for k, m in tree.items()}


def oracle(x: torch.Tensor) -> dict[str, Any]:
    """The values computed in one process on ``x``."""
    with sm.use_reducer(sm.local()):
        return {k: m.compute() for k, m in (fed(fresh(), x) if len(x) else fresh()).items()}


def close(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """``assert_close`` of two dicts of values, with a fast path: one ``allclose`` over every element."""
    a = [torch.as_tensor(v) for k in sorted(expected) for v in _leaves(actual[k])]
    e = [torch.as_tensor(v) for k in sorted(expected) for v in _leaves(expected[k])]
    if actual.keys() == expected.keys() and [t.shape for t in a] == [t.shape for t in e]:
        x = torch.cat([torch.zeros(0, dtype=torch.float64), *(t.double().reshape(-1) for t in a)])
        y = torch.cat([torch.zeros(0, dtype=torch.float64), *(t.double().reshape(-1) for t in e)])
        if torch.allclose(x, y, rtol=1e-4, atol=1e-3, equal_nan=True):
            return
    assert_close(actual, expected, atol=1e-3, rtol=1e-4)  # slow, and says what differs


def _leaves(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (tuple, list)) else [v]


def merged(trees: list[dict[str, sm.Metric]]) -> dict[str, Any]:
    """The values of the ranks' states folded with ``merge`` in rank order, in this process."""
    acc = trees[0]
    for t in trees[1:]:
        acc = {k: acc[k].merge(t[k]) for k in acc}
    with sm.use_reducer(sm.local()):
        return {k: m.compute() for k, m in acc.items()}


# -- the program ------------------------------------------------------------------

STEPS = [("local", None)] * 3 + [("collective", "compute"), ("collective", "reduce")]


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(1, 4))
    n = draw(st.integers(0, 40))
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=size - 1, max_size=size - 1)))
    steps = [*draw(st.lists(st.sampled_from(STEPS), min_size=0, max_size=10)), ("local", None),
             ("collective", "compute")]
    # each rank draws its own local sequences: one list of (op, chunk) per rank per local step
    per_rank = [
        [draw(st.lists(st.tuples(st.sampled_from(LOCAL_OPS), st.integers(0, 6)), min_size=1, max_size=5))
         if kind == "local" else None for kind, _ in steps]
        for _ in range(size)
    ]
    seed = draw(st.integers(0, 2**16))
    return {"size": size, "n": n, "bounds": [0, *cuts, n], "steps": steps, "per_rank": per_rank, "seed": seed}


def shard_of(w: dict[str, Any], x: torch.Tensor, rank: int) -> torch.Tensor:
    return x[w["bounds"][rank] : w["bounds"][rank + 1]]


def model(w: dict[str, Any], x: torch.Tensor) -> list[torch.Tensor]:
    """Pure bookkeeping, no metrics: at each collective step, the samples the ranks' ``main`` hold.

    Concatenated in rank order, each rank's in the order its merges put them; a ``reduce`` changes
    no rank's ``main``.
    """
    size = w["size"]
    pos = [0] * size
    main: list[list[torch.Tensor]] = [[] for _ in range(size)]
    side: list[list[torch.Tensor]] = [[] for _ in range(size)]
    out = []
    for i, (kind, _) in enumerate(w["steps"]):
        if kind == "local":
            for r in range(size):
                for op, k in w["per_rank"][r][i]:
                    if op in ("update_main", "update_side"):
                        chunk = shard_of(w, x, r)[pos[r] : pos[r] + k]
                        pos[r] += k
                        (main if op == "update_main" else side)[r].append(chunk)
                    elif op == "side_into_main":
                        main[r], side[r] = main[r] + side[r], []
                    elif op == "main_into_side":
                        main[r], side[r] = side[r] + main[r], []
                    elif op == "reset":
                        main[r] = []
            continue
        everyone = torch.cat([torch.empty(0), *(t for r in range(size) for t in main[r])])
        out.append(everyone)  # a reduce leaves every rank's own metric as it was: the reduced one is final
    return out


def never(t: torch.Tensor, op: str) -> torch.Tensor:
    raise AssertionError("a reduced metric was reduced again")


def run_rank(rank: int, w: dict[str, Any], x: torch.Tensor) -> list[tuple[dict[str, Any], Any]]:
    """One rank's program on real metrics; per collective step, its values (and state, for compute)."""
    shard = shard_of(w, x, rank)
    pos = 0
    main, side = fresh(), fresh()
    log: list[tuple[dict[str, Any], Any]] = []
    for (kind, what), mine in zip(w["steps"], w["per_rank"][rank]):
        if kind == "local":
            for op, k in mine:
                if op in ("update_main", "update_side"):
                    chunk, pos = shard[pos : pos + k], pos + k
                    if op == "update_main":
                        main = fed(main, chunk)
                    else:
                        side = fed(side, chunk)
                elif op == "side_into_main":
                    main, side = {n: main[n].merge(side[n]) for n in main}, fresh()
                elif op == "main_into_side":
                    main, side = {n: side[n].merge(main[n]) for n in main}, fresh()
                elif op == "reset":
                    main = {n: m.reset() for n, m in main.items()}
        elif what == "compute":
            log.append((sm.compute(main), main))
        else:
            reduced = sm.reduce(main)
            with sm.use_reducer(never):  # a reduced metric computes without communicating
                log.append(({n: m.compute() for n, m in reduced.items()}, None))
            # A reduced metric is final; the program carries on with its own, unreduced one.
            assert all(m._reduced for m in reduced.values()) and not any(m._reduced for m in main.values())
    return log


def data_of(w: dict[str, Any]) -> torch.Tensor:
    x = (torch.rand(w["n"], generator=torch.Generator().manual_seed(w["seed"])) - 0.5) * 200
    return x.round(decimals=2)


MAX_EXAMPLES = 260
RUNS = {"worlds": 0, "rank_sequences": 0, "local_ops": 0, "collective_steps": 0}


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_random_programs_keep_the_invariant(w: dict[str, Any]) -> None:
    x = data_of(w)
    logs = sm.simulate(lambda r: run_rank(r, w, x), w["size"], timeout=30)
    expected_data = model(w, x)
    assert all(len(log) == len(expected_data) for log in logs)
    for i, held in enumerate(expected_data):
        expected = oracle(held)
        for rank, log in enumerate(logs):
            try:
                close(log[i][0], expected)
            except AssertionError as err:
                raise AssertionError(f"collective step {i}, rank {rank}: {err}") from None
        states = [log[i][1] for log in logs]
        if states[0] is not None:  # a compute step: the merge fold of the states agrees too
            close(merged(states), expected)
    RUNS["worlds"] += 1
    RUNS["rank_sequences"] += sum(1 for kind, _ in w["steps"] if kind == "local") * w["size"]
    RUNS["local_ops"] += sum(len(ops) for rank in w["per_rank"] for ops in rank if ops)
    RUNS["collective_steps"] += len(expected_data)


def test_the_soak_ran_thousands_of_sequences() -> None:
    """Runs after the property (file order): it really exercised what the docstring claims."""
    if RUNS["worlds"] == 0:
        import pytest

        pytest.skip("run together with test_random_programs_keep_the_invariant")
    print(f"soak: {RUNS}")
    assert RUNS["rank_sequences"] >= 1000, RUNS
