"""Nominal association and Fleiss' kappa against scipy and TorchMetrics, over random uneven shards."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from shards import assert_close, check_sharded

import scopedmetrics as sm
import scopedmetrics.nominal as smn

tmn = pytest.importorskip("torchmetrics.nominal")
contingency = pytest.importorskip("scipy.stats.contingency")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

C = 4
ASSOCIATION = ("CramersV", "TschuprowsT", "PearsonsContingencyCoefficient", "TheilsU")
BIASED = ("CramersV", "TschuprowsT")
SCIPY = {"CramersV": "cramer", "TschuprowsT": "tschuprow", "PearsonsContingencyCoefficient": "pearson"}


def categories(n: int, seed: int, k: int = C, nan: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, k, (n,), generator=g)
    preds = torch.where(torch.rand(n, generator=g) < 0.5, target, torch.randint(0, k, (n,), generator=g))
    if not nan:
        return preds, target
    preds, target = preds.float(), target.float()
    preds[torch.rand(n, generator=g) < 0.1] = float("nan")
    target[torch.rand(n, generator=g) < 0.1] = float("nan")
    return preds, target


def configs() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name in ASSOCIATION:
        for extra in ({}, {"nan_strategy": "drop"}, {"nan_replace_value": 1.0}):
            out.append((name, extra))
        if name in BIASED:
            out.append((name, {"bias_correction": False}))
    return out


CONFIGS = configs()
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]


def theirs_value(name: str, kw: dict[str, Any], *arrays: torch.Tensor) -> torch.Tensor:
    m = getattr(tmn, name)(**kw) if name == "FleissKappa" else getattr(tmn, name)(C, **kw)
    m.update(*arrays)
    return m.compute()


@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
@pytest.mark.parametrize("nan", [False, True])
def test_sharded_equals_torchmetrics(name: str, kw: dict[str, Any], nan: bool) -> None:
    preds, target = categories(120, 3, nan=nan)
    expected = theirs_value(name, kw, preds, target)
    check_sharded(getattr(smn, name)(C, **kw), (preds, target), expected, seed=2)


@pytest.mark.parametrize("name", list(SCIPY))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_scipy_association(name: str, seed: int) -> None:
    k = 2 if seed == 2 else C  # a 2x2 table: one degree of freedom
    preds, target = categories(90, seed, k=k)
    table = np.zeros((k, k), dtype=np.int64)
    np.add.at(table, (target.numpy(), preds.numpy()), 1)
    expected = contingency.association(table, method=SCIPY[name], correction=False)
    kw = {"bias_correction": False} if name in BIASED else {}
    with sm.use_reducer(sm.local()):
        got = getattr(smn, name)(k, **kw).update(preds, target).compute()
    assert_close(got, torch.tensor(expected))


@pytest.mark.parametrize("name", BIASED)
def test_yates_correction_on_two_by_two(name: str) -> None:
    preds, target = categories(70, 5, k=2)
    with sm.use_reducer(sm.local()):
        got = getattr(smn, name)(2).update(preds, target).compute()
    assert_close(got, theirs_value(name, {}, preds, target))


@pytest.mark.parametrize("name", ASSOCIATION)
def test_scores_take_their_argmax(name: str) -> None:
    preds, target = categories(50, 8)
    g = torch.Generator().manual_seed(1)
    scores = torch.rand(50, C, generator=g) + 2 * torch.nn.functional.one_hot(preds, C)
    with sm.use_reducer(sm.local()):
        a = getattr(smn, name)(C).update(scores, target).compute()
        b = getattr(smn, name)(C).update(preds, target).compute()
    assert_close(a, b)
    assert_close(a, theirs_value(name, {}, scores, target))


def test_positional_order_is_torchmetrics() -> None:
    m = smn.CramersV(3, False, "drop", None)
    assert (m.num_classes, m.bias_correction, m.nan_strategy, m.nan_replace_value) == (3, False, "drop", None)
    m2 = smn.TheilsU(3, "replace", 2.0)
    assert (m2.nan_strategy, m2.nan_replace_value) == ("replace", 2.0)
    assert smn.FleissKappa("probs").mode == "probs"


@pytest.mark.parametrize("name", ASSOCIATION)
def test_bad_inputs_and_configuration(name: str) -> None:
    cls = getattr(smn, name)
    m = cls(3)
    with pytest.raises(TypeError, match=rf"{name}.update: argument `preds` must be a tensor"):
        m.update([0, 1], torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=rf"{name}.update: argument `target` must hold labels in \[0, 3\)"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=rf"{name}.update: arguments `preds` and `target` must have the same shape"):
        m.update(torch.tensor([0, 1]), torch.tensor([0, 1, 1]))
    with pytest.raises(ValueError, match=rf"{name}.update: argument `preds` must have shape"):
        m.update(torch.zeros(2, 2, 2), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=rf"{name}.update: argument `preds` must hold labels"):
        cls(3, nan_replace_value=7.0).update(torch.tensor([float("nan")]), torch.tensor([0]))
    with pytest.raises(TypeError, match=rf"{name}: argument `num_classes` must be an int"):
        cls("3")
    with pytest.raises(ValueError, match=rf"{name}: argument `nan_strategy` must be one of"):
        cls(3, nan_strategy="keep")
    with pytest.raises(TypeError, match=rf"{name}: argument `nan_replace_value` must be a number"):
        cls(3, nan_replace_value=None)


def test_empty_is_nan_and_warns() -> None:
    with sm.use_reducer(sm.local()), pytest.warns(UserWarning, match="empty"):
        assert smn.CramersV(3).compute().isnan()


def ratings(n: int, seed: int, k: int = 3, raters: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    favourite = torch.randint(0, k, (n, 1), generator=g)
    picks = torch.where(torch.rand(n, raters, generator=g) < 0.6, favourite, torch.randint(0, k, (n, raters),
                                                                                         generator=g))
    return torch.nn.functional.one_hot(picks, k).sum(1)


@pytest.mark.parametrize("seed", [0, 1])
def test_fleiss_kappa_counts_sharded(seed: int) -> None:
    r = ratings(80, seed)
    check_sharded(smn.FleissKappa(), (r,), theirs_value("FleissKappa", {}, r), seed=seed)


def test_fleiss_kappa_probs_sharded() -> None:
    g = torch.Generator().manual_seed(4)
    probs = torch.rand(60, 3, 3, generator=g)  # categories == raters: TorchMetrics one-hot encodes with the raters
    check_sharded(smn.FleissKappa("probs"), (probs,), theirs_value("FleissKappa", {"mode": "probs"}, probs))


def test_fleiss_kappa_probs_with_more_categories_than_raters() -> None:
    g = torch.Generator().manual_seed(5)
    probs = torch.rand(40, 5, 2, generator=g)
    counts = torch.nn.functional.one_hot(probs.argmax(1), 5).sum(1)
    with sm.use_reducer(sm.local()):
        assert_close(smn.FleissKappa("probs").update(probs).compute(), smn.FleissKappa().update(counts).compute())


def test_fleiss_kappa_bad_inputs() -> None:
    with pytest.raises(TypeError, match="FleissKappa.update: argument `ratings` must hold integer counts"):
        smn.FleissKappa().update(torch.rand(3, 2))
    with pytest.raises(ValueError, match=r"FleissKappa.update: argument `ratings` must have shape \(N, categories\)"):
        smn.FleissKappa().update(torch.ones(3, dtype=torch.long))
    with pytest.raises(TypeError, match="FleissKappa.update: argument `ratings` must be a floating-point tensor"):
        smn.FleissKappa("probs").update(torch.ones(3, 2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="FleissKappa.update: argument `ratings` must keep 3 categories"):
        smn.FleissKappa().update(ratings(4, 0)).update(torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="FleissKappa: argument `mode` must be one of"):
        smn.FleissKappa("votes")


def test_fleiss_kappa_refuses_subjects_with_different_numbers_of_raters() -> None:
    # a kappa was given (0.18 for [[3, 0], [1, 1], [0, 4]], as TorchMetrics), meaning nothing; one rater gave NaN
    msg = "FleissKappa.update: argument `ratings` must give every subject the same number of raters, at least 2"
    m = smn.FleissKappa().update(torch.tensor([[3, 0], [1, 2]]))
    for bad in ([[3, 0], [1, 1], [0, 4]], [[1, 0], [0, 1]]):
        with pytest.raises(ValueError, match=msg):
            smn.FleissKappa().update(torch.tensor(bad))
    with pytest.raises(ValueError, match=msg + "; got 4 per subject after subjects of 3"):
        m.update(torch.tensor([[2, 2]]))

    def body(rank: int) -> str:
        try:
            smn.FleissKappa().update(torch.tensor([[3, 0], [1, 2]]) if rank else torch.tensor([[2, 2]])).compute()
        except ValueError as err:
            return str(err)
        return "no error"

    for got in sm.simulate(body, 2):
        assert got.startswith("FleissKappa.compute: every subject must have the same number of raters"), got


def test_fleiss_kappa_checkpoint_and_empty_merge() -> None:
    r = ratings(20, 3)
    m = smn.FleissKappa().update(r)
    back = smn.FleissKappa().load_state_dict(m.state_dict())
    with sm.use_reducer(sm.local()):
        assert_close(back.merge(smn.FleissKappa()).compute(), m.compute())


def test_sharded_in_a_world(world: Any) -> None:
    preds, target = categories(90, 12)
    check_sharded(smn.CramersV(C), (preds, target), theirs_value("CramersV", {}, preds, target), world=world,
                  world_sizes=(3,), seed=5)
    r = ratings(40, 6)
    check_sharded(smn.FleissKappa(), (r,), theirs_value("FleissKappa", {}, r), world=world, world_sizes=(3,), seed=1)
