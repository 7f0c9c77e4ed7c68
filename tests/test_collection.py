"""Collections: members matched by name, keyword routing, shared updates, joint reduction."""

from __future__ import annotations

from typing import Any

import optree
import pytest
import torch

import scopedmetrics as sm

CALLS: list[str] = []  # the update bodies that really ran


class Counted(sm.Metric):
    """Counts how often its update body really runs."""

    total: torch.Tensor = sm.state("sum", default=0.0)
    scale: float = sm.static(default=1.0)

    def update(self, x: torch.Tensor) -> Counted:
        CALLS.append(type(self).__name__)
        return self.replace(total=self.total + self.factor() * x.sum())

    def factor(self) -> float:
        return self.scale

    def compute(self) -> torch.Tensor:
        return self.total


class Doubled(Counted):
    """Overrides a hook that update uses: its state must never come from Counted's update."""

    def factor(self) -> float:
        return 2 * self.scale


class Offset(Counted):
    """Adds a static that update reads."""

    offset: float = sm.static(default=100.0)

    def factor(self) -> float:
        return self.scale + self.offset


class Weighted(sm.Metric):
    total: torch.Tensor = sm.state("sum", default=0.0)

    def update(self, x: torch.Tensor, weight: float = 1.0) -> Weighted:
        return self.replace(total=self.total + weight * x.sum())

    def compute(self) -> torch.Tensor:
        return self.total


def test_collection_is_a_metric_and_computes_a_dict_in_member_order() -> None:
    c = sm.Collection(total=sm.Sum(), biggest=sm.Max(), mean=sm.Mean())
    assert isinstance(c, sm.Metric)
    out = c.update(torch.tensor([1.0, 5.0])).compute()
    assert list(out) == ["total", "biggest", "mean"]
    assert out == {"total": torch.tensor(6.0), "biggest": torch.tensor(5.0), "mean": torch.tensor(3.0)}


def test_mapping_and_keyword_construction_agree() -> None:
    a = sm.Collection({"x": sm.Sum()}, y=sm.Max())
    assert list(a.keys()) == ["x", "y"] and isinstance(a["x"], sm.Sum) and isinstance(a.y, sm.Max)
    with pytest.raises(TypeError, match="member 'z' is int, not a Metric"):
        sm.Collection(z=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="identifiers"):
        sm.Collection({"a.b": sm.Sum()})


def test_keywords_go_only_to_members_that_accept_them() -> None:
    c = sm.Collection(w=Weighted(), s=sm.Sum()).update(torch.ones(2), weight=3.0)
    assert c.compute() == {"w": torch.tensor(6.0), "s": torch.tensor(2.0)}
    with pytest.raises(TypeError, match="no member accepts keyword\\(s\\) \\['nope'\\]"):
        c.update(torch.ones(1), nope=1)


def test_nested_collections_give_nested_dicts_and_dotted_state_keys() -> None:
    c = sm.Collection(outer=sm.Sum(), inner=sm.Collection(a=sm.Max(), b=sm.Min()))
    c = c.update(torch.tensor([2.0, -1.0]))
    assert c.compute() == {"outer": torch.tensor(1.0), "inner": {"a": torch.tensor(2.0), "b": torch.tensor(-1.0)}}
    assert set(c.state_dict()) == {"outer.sum_value", "inner.a.max_value", "inner.b.min_value"}


def test_members_are_matched_by_name_not_order() -> None:
    a = sm.Collection(x=sm.Sum(), y=sm.Max()).update(torch.tensor([1.0, 4.0]))
    b = sm.Collection(y=sm.Max(), x=sm.Sum()).update(torch.tensor([7.0]))
    merged = a.merge(b).compute()
    assert merged == {"x": torch.tensor(12.0), "y": torch.tensor(7.0)}
    assert optree.tree_structure(a.reset(), namespace=sm.NAMESPACE) != optree.tree_structure(
        sm.Collection(x=sm.Sum()), namespace=sm.NAMESPACE
    )
    with pytest.raises(ValueError, match="configurations differ"):
        a.merge(sm.Collection(x=sm.Sum(), z=sm.Max()))


def test_equal_members_share_one_update() -> None:
    CALLS.clear()
    c = sm.Collection(a=Counted(), b=Counted(), other=Counted(scale=2.0))
    c = c.update(torch.tensor([1.0, 2.0]))
    assert CALLS == ["Counted", "Counted"]  # a and b share one; other has a different configuration
    assert c.a.total is c.b.total
    assert c.compute() == {"a": torch.tensor(3.0), "b": torch.tensor(3.0), "other": torch.tensor(6.0)}


def test_subclasses_never_share_with_their_base() -> None:
    """0.1 shared by the class that defines update: b was 3 where 6 is right, c took a's state."""
    CALLS.clear()
    c = sm.Collection(a=Counted(), b=Doubled(), c=Offset()).update(torch.tensor([1.0, 2.0]))
    assert sorted(CALLS) == ["Counted", "Doubled", "Offset"]
    assert c.compute() == {"a": torch.tensor(3.0), "b": torch.tensor(6.0), "c": torch.tensor(303.0)}


@pytest.mark.parametrize("how", ["load_state_dict", "replace"])
def test_members_given_unequal_states_stop_sharing(how: str) -> None:
    """0.1 kept sharing members built equal, then restored unequal: b was 102 where 2 is right."""
    c = sm.Collection(a=Counted(), b=Counted())
    if how == "load_state_dict":
        c = c.load_state_dict({"a.total": torch.tensor(100.0), "b.total": torch.tensor(0.0)})
    else:
        c = c.replace(a=c.a.replace(total=torch.tensor(100.0)))
    c = c.update(torch.tensor([2.0]))
    assert c.compute() == {"a": torch.tensor(102.0), "b": torch.tensor(2.0)}


def test_members_with_different_states_do_not_share() -> None:
    started = Counted().update(torch.ones(1))
    CALLS.clear()
    c = sm.Collection(a=Counted(), b=started).update(torch.ones(1))
    assert len(CALLS) == 2 and c.compute() == {"a": torch.tensor(1.0), "b": torch.tensor(2.0)}


def test_reset_shares_again() -> None:
    saved = {"a.total": torch.tensor(1.0), "b.total": torch.tensor(5.0)}
    c = sm.Collection(a=Counted(), b=Counted()).load_state_dict(saved)
    CALLS.clear()
    c.reset().update(torch.ones(1))
    assert CALLS == ["Counted"]


def test_shared_states_reduce_together_and_ranks_with_no_data_agree() -> None:
    from worlds import CountingComm

    from scopedmetrics.reducers import Collective

    def body(rank: int) -> tuple[dict[str, Any], list[int]]:
        c = sm.Collection(a=Counted(), b=Counted(), d=Doubled(), m=sm.Max())
        if rank != 1:  # rank 1 never updates: its shared tensors must still line up
            c = c.update(torch.tensor([float(rank + 1)]))
        counting = CountingComm(sm.get_reducer().comm)
        with sm.use_reducer(Collective(counting)):
            return c.compute(), counting.calls

    for out, calls in sm.simulate(body, 3):
        assert out == {"a": torch.tensor(4.0), "b": torch.tensor(4.0), "d": torch.tensor(8.0), "m": torch.tensor(3.0)}
        assert calls == ["all_gather"]


def test_reset_and_forward_on_collections() -> None:
    c = sm.Collection(s=sm.Sum(), m=sm.Mean()).update(torch.ones(3))
    c2, batch = c.forward(torch.tensor([4.0]))
    assert batch == {"s": torch.tensor(4.0), "m": torch.tensor(4.0)}
    assert c2.compute() == {"s": torch.tensor(7.0), "m": torch.tensor(1.75)}
    assert c.reset().compute()["s"].item() == 0.0


def test_collection_is_immutable() -> None:
    c = sm.Collection(s=sm.Sum())
    with pytest.raises(Exception, match="immutable"):
        c.s = sm.Sum()  # type: ignore[misc]


class Tally(sm.Metric):
    """The shared state of Hits and Misses: counts of hits and of samples."""

    hits: torch.Tensor = sm.state("sum", default=0)
    seen: torch.Tensor = sm.state("sum", default=0)
    threshold: float = sm.static(default=0.5)

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> Tally:
        CALLS.append("Tally")
        hit = ((preds > self.threshold).long() == target).sum()
        return self.replace(hits=self.hits + hit, seen=self.seen + target.numel())


class Hits(sm.Metric):
    counts: Tally = sm.state(default=Tally())
    update = sm.delegate("counts")

    def compute(self) -> torch.Tensor:
        return self.counts.hits / self.counts.seen


class Misses(sm.Metric):
    counts: Tally = sm.state(default=Tally())
    update = sm.delegate("counts")

    def compute(self) -> torch.Tensor:
        return 1 - self.counts.hits / self.counts.seen


class Tweaked(Hits):
    """Defines its own update: it delegates nothing, so it never shares."""

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> Tweaked:
        return self.replace(counts=self.counts.update(1 - preds, target))


def test_members_that_delegate_to_one_nested_state_share_its_update_by_construction() -> None:
    CALLS.clear()
    preds, target = torch.tensor([0.9, 0.2, 0.7, 0.1]), torch.tensor([1, 0, 0, 0])
    c = sm.Collection(h=Hits(), m=Misses(), t=Tweaked(), other=Hits(counts=Tally(threshold=0.8)))
    c = c.update(preds, target)
    assert CALLS == ["Tally", "Tally", "Tally"]  # h and m share one; t has its own update; other its own config
    assert c.h.counts is c.m.counts
    assert c.compute() == {"h": 0.75, "m": 0.25, "t": 0.25, "other": 1.0}
    restored = c.load_state_dict({**c.state_dict(), "m.counts.hits": torch.tensor(0)})
    CALLS.clear()
    again = restored.update(preds, target)
    assert CALLS == ["Tally"] * 4 and again.compute()["m"] == 1 - 3 / 8  # unequal states: shared no more
    with pytest.raises(TypeError, match=r"no member accepts keyword\(s\) \['weight'\]"):
        c.update(preds, target, weight=1.0)


def nested_reduced_case(rank: int) -> list[float]:
    """A collection holding a reduced member beside unreduced ones, computed everywhere and on one rank."""
    x = torch.arange(4.0) + rank
    total = sm.Sum().update(torch.tensor([1.0])).reduce()  # the global state already: 3.0 on every rank
    pearson = sm.PearsonCorrCoef().update(x, x * x).reduce()
    tree = sm.Collection(total=total, pearson=pearson, fresh=sm.Sum().update(torch.tensor([float(rank)])))
    out = []
    for values in (tree.compute(), sm.compute(tree, root=0), sm.compute({"c": tree})["c"]):
        out += [float(values["total"]), float(values["pearson"]), float(values["fresh"])]
    return out


def test_a_reduced_member_is_not_reduced_again(world: Any) -> None:
    # walk only skipped reduced metrics at the top of the tree: a reduced member counted every rank's state once per
    # rank (9.0 for 3.0 on 3 ranks), and a reduced whole-state merge raised "cannot merge a reduced metric"
    x = torch.cat([torch.arange(4.0) + r for r in range(3)])
    pearson = float(sm.PearsonCorrCoef().update(x, x * x).compute())
    for got in world.run(nested_reduced_case, 3):
        assert got == pytest.approx([3.0, pearson, 3.0] * 3), got
