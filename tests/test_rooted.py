"""``sm.compute(tree, root=r)``: the values of ``sm.compute(tree)``, with every rank's rows on ``r`` alone.

Each body runs in simulated threads and in real gloo processes (the ``world`` fixture).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from shards import uneven_slices

import scopedmetrics as sm
import scopedmetrics.retrieval as smr
from scopedmetrics.classification import BinaryAUROC

N = 97


def _data(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"p": torch.rand(N, generator=g), "t": torch.randint(0, 2, (N,), generator=g),
            "x": torch.randn(N, generator=g), "y": torch.randn(N, generator=g),
            "q": torch.randint(0, 7, (N,), generator=g)}


def _metrics(rank: int, size: int, seed: int) -> dict[str, Any]:
    d = _data(seed)
    mine = uneven_slices(N, size, seed)[rank]
    p, t, x, y, q = (d[k][mine] for k in "ptxyq")
    tree: dict[str, Any] = {"auroc": BinaryAUROC(), "mse": sm.MeanSquaredError(), "pearson": sm.PearsonCorrCoef(),
                            "map": smr.RetrievalMAP(), "rows": [sm.Cat(), sm.Max()]}
    if len(p):  # an empty rank folds nothing in
        tree = {"auroc": tree["auroc"].update(p, t), "mse": tree["mse"].update(x, y),
                "pearson": tree["pearson"].update(x, y), "map": tree["map"].update(p, t, indexes=q),
                "rows": [tree["rows"][0].update(x), tree["rows"][1].update(x)]}
    return tree


def same_values_case(rank: int, size: int, root: int, seed: int) -> list[Any]:
    tree = _metrics(rank, size, seed)
    return [sm.compute(tree), sm.compute(tree, root=root)]


def _flat(values: Any) -> list[torch.Tensor]:
    return [torch.as_tensor(v) for v in torch.utils._pytree.tree_leaves(values)]


@pytest.mark.parametrize(("size", "root", "seed"), [(2, 0, 1), (3, 2, 2), (4, 1, 3)])
def test_the_values_are_those_of_compute_on_every_rank(world: Any, size: int, root: int, seed: int) -> None:
    for everywhere, rooted in world.run(same_values_case, size, size, root, seed):
        a, b = _flat(everywhere), _flat(rooted)
        assert len(a) == len(b) == 6
        assert all(x.dtype == y.dtype and torch.equal(x, y) or (x.isnan().all() and y.isnan().all())
                   for x, y in zip(a, b)), (everywhere, rooted)


def test_only_the_root_computes_and_holds_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int]] = []
    original = BinaryAUROC.compute

    def recording(self: BinaryAUROC) -> torch.Tensor:
        seen.append((threading.current_thread().name, int(self.preds.shape[0])))
        return original(self)

    monkeypatch.setattr(BinaryAUROC, "compute", recording)
    sm.simulate(lambda r: sm.compute(BinaryAUROC().update(torch.rand(10 + r), torch.randint(0, 2, (10 + r,))),
                                     root=2), 3)
    assert seen == [("sm-rank-2", 33)]


class Failing(sm.Metric):
    """A cat metric whose compute fails."""

    rows: torch.Tensor = sm.state("cat")

    def update(self, x: torch.Tensor) -> Failing:
        return self.append(rows=x)

    def compute(self) -> torch.Tensor:
        raise ArithmeticError(f"cannot compute {self.rows.shape[0]} rows")


def failing_case(rank: int, size: int) -> Any:
    return sm.compute(Failing().update(torch.ones(2)), root=size - 1)


def test_a_failure_on_the_root_is_raised_there_and_named_everywhere_else(world: Any) -> None:
    results = world.results(failing_case, 3, 3)
    ok, err = results[2]
    assert not ok and isinstance(err, ArithmeticError) and "6 rows" in str(err)
    for ok, err in results[:2]:
        assert not ok and isinstance(err, sm.SyncError) and "rank 2 failed to compute" in str(err), err


def disagreeing_case(rank: int, size: int) -> Any:
    return sm.compute(sm.Cat().update(torch.ones(2)), root=rank)  # each rank names another root


def test_ranks_that_name_different_roots_disagree(world: Any) -> None:
    for ok, err in world.results(disagreeing_case, 2, 2):
        assert not ok and isinstance(err, sm.SyncError) and "disagree" in str(err), err


def odd_rows_case(rank: int, size: int, odd: str, async_op: bool) -> Any:
    rows = {"dtype": torch.tensor([16777217]), "shape": torch.ones(1, 3), "ndim": torch.ones(1, 2, 2)}[odd]
    x = rows if rank == 1 else torch.ones(2, 2) if odd != "dtype" else torch.tensor([0.5])
    tree = {"emb": sm.Cat().update(x), "n": sm.Sum().update(torch.ones(1))}
    return sm.compute(tree, root=0, async_op=True).wait() if async_op else sm.compute(tree, root=0)


@pytest.mark.parametrize(("odd", "async_op"), [("dtype", False), ("shape", False), ("ndim", True)])
def test_cat_rows_that_differ_across_ranks_are_refused_as_by_compute(world: Any, odd: str, async_op: bool) -> None:
    # the root joined them with torch.cat: int64 16777217 beside float32 rows came back as 16777216.0
    results = world.results(odd_rows_case, 3, 3, odd, async_op)
    for ok, err in results:
        assert not ok and isinstance(err, sm.SyncError), err
        assert "disagree on cat state 'emb.value': rank 1 holds" in str(err), err
    assert "rank 0 failed to compute" in str(results[1][1]) and "rank 0 failed" not in str(results[0][1])


def subgroup_case(rank: int, size: int) -> Any:
    with sm.use_reducer(sm.subgroup(rank % 2)):  # ranks {0, 2} and {1, 3}; root 1 of each group
        return sm.compute(sm.Cat().update(torch.tensor([float(rank)])), root=1).tolist()


def test_root_is_a_rank_of_the_group_in_scope(world: Any) -> None:
    assert world.run(subgroup_case, 4, 4) == [[0.0, 2.0], [1.0, 3.0], [0.0, 2.0], [1.0, 3.0]]


def test_a_bad_root_is_refused_and_one_process_needs_none() -> None:
    m = sm.Cat().update(torch.tensor([1.0, 2.0]))
    assert sm.compute(m, root=0).tolist() == [1.0, 2.0]  # no reducer in scope: nothing to gather
    for bad in (1, -1):  # one process is a group of one: rank 1 was accepted there, refused in any real group
        with pytest.raises(ValueError, match=r"argument `root` must be a rank in \[0, 1\)"):
            sm.compute(m, root=bad)
    for bad in (2, -1, True, 0.0):
        with pytest.raises(ValueError, match="argument `root` must be a rank in"):
            sm.simulate(lambda r, bad=bad: sm.compute(m, root=bad), 2)
