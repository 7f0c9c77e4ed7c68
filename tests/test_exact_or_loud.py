"""Quiet ways to a wrong number, each closed: exact, or an error naming what differs.

Every case runs in a simulated world and, where processes matter, in real gloo
processes (the ``world`` fixture). The list of cases is counted in
``docs/guarantees.md``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from worlds import CountingComm

import scopedmetrics as sm
from scopedmetrics import exchange
from scopedmetrics.comm import Comm
from scopedmetrics.reducers import Collective
from scopedmetrics.state import combine
from scopedmetrics.sync import Leaf, collective_reduce

# -- configuration is agreed by value, exactly as merge compares it ----------------------


class Thresholded(sm.Metric):
    """A metric configured by a tensor and a function, as binned curves and custom metrics are."""

    total: torch.Tensor = sm.state("sum", default=0.0)
    thresholds: Any = sm.static(default=None)
    transform: Any = sm.static(default=None)

    def update(self, x: torch.Tensor) -> Thresholded:
        return self.replace(total=self.total + x.sum())

    def compute(self) -> torch.Tensor:
        return self.total


def squash(x: torch.Tensor) -> torch.Tensor:
    return x.sigmoid()


def stretch(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


def configured(rank: int, how: str) -> Thresholded:
    base = torch.linspace(0, 1, 1001)
    if how == "fifth_decimal" and rank == 1:
        base = base.clone()
        base[3] += 1e-5
    if how == "elided_middle" and rank == 1:
        base = base.clone()
        base[500] += 0.25  # the middle of a long tensor: its repr elides it
    transform = stretch if how == "other_function" and rank == 1 else squash
    return Thresholded(thresholds=base, transform=transform).update(torch.tensor([float(rank + 1)]))


def config_case(rank: int, how: str) -> float:
    return float(configured(rank, how).compute())


def test_equal_configurations_reduce_and_functions_agree_by_name(world: Any) -> None:
    assert world.run(config_case, 2, "same") == [3.0, 3.0]


@pytest.mark.parametrize("how", ["fifth_decimal", "elided_middle", "other_function"])
def test_configurations_that_merge_refuses_never_reduce_together(world: Any, how: str) -> None:
    with pytest.raises(ValueError, match="configurations differ"):
        configured(0, how).merge(configured(1, how))
    for ok, err in world.results(config_case, 2, how):
        assert not ok and isinstance(err, sm.SyncError) and "disagree" in str(err), err


def test_a_configuration_that_cannot_be_compared_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match="Thresholded: configuration 'transform' holds a object"):
        Thresholded(transform=object())


class Window:
    """A configuration object that says how it compares (``__canonical__``)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __canonical__(self) -> int:
        return self.size


def module_case(rank: int, how: str) -> float:
    g = torch.Generator().manual_seed(0 if how == "same" or rank == 0 else 1)  # equal weights, or rank 1's differ
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():  # a generator of its own: simulated ranks are threads sharing the global one
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return float(Thresholded(transform=model).update(torch.tensor([float(rank + 1)])).compute())


@pytest.mark.parametrize("how", ["same", "other_weights"])
def test_a_module_configuration_agrees_by_its_weights(world: Any, how: str) -> None:
    if how == "same":
        assert world.run(module_case, 2, how) == [3.0, 3.0]
        return
    for ok, err in world.results(module_case, 2, how):
        assert not ok and isinstance(err, sm.SyncError) and "disagree" in str(err), err


def test_modules_and_canonical_objects_merge_by_value() -> None:
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert Thresholded(transform=a).merge(Thresholded(transform=b)).transform is a
    with torch.no_grad():
        b.bias += 1e-6
    with pytest.raises(ValueError, match="configurations differ"):
        Thresholded(transform=a).merge(Thresholded(transform=b))
    Thresholded(transform=Window(3)).merge(Thresholded(transform=Window(3)))
    with pytest.raises(ValueError, match="configurations differ"):
        Thresholded(transform=Window(3)).merge(Thresholded(transform=Window(4)))


def test_a_tensor_configuration_is_copied_so_later_writes_cannot_reach_it() -> None:
    mine = torch.zeros(3)
    m = Thresholded(thresholds=mine)
    mine += 1
    assert torch.equal(m.thresholds, torch.zeros(3))
    assert m.merge(Thresholded(thresholds=torch.zeros(3))).thresholds.sum() == 0
    bounds = [0.25, 0.5]
    listed = Thresholded(thresholds=bounds)
    bounds.append(0.75)  # the caller's list, changed after the metric was built
    assert listed.thresholds == [0.25, 0.5]
    with pytest.raises(ValueError, match="configurations differ"):
        listed.merge(Thresholded(thresholds=bounds))


# -- a plain reducer that works in place is handed copies --------------------------------


def test_an_in_place_plain_reducer_never_changes_the_metric() -> None:
    def two_ranks_in_place(t: torch.Tensor, op: str) -> torch.Tensor:
        return t.mul_(2) if op == "sum" else torch.cat([t, t])  # as dist.all_reduce does, over two equal ranks

    m = sm.Sum().update(torch.tensor([1.0, 2.0]))
    cat = sm.Cat().update(torch.tensor([1.0]))
    auroc = sm.BinaryAUROC().update(torch.tensor([0.2, 0.8]), torch.tensor([0, 1]))
    with sm.use_reducer(two_ranks_in_place):
        assert [m.compute().item() for _ in range(2)] == [6.0, 6.0]
        assert cat.compute().tolist() == [1.0, 1.0]
        auroc.compute()
    assert m.sum_value.item() == 3.0 and cat.value.tolist() == [1.0]
    assert auroc.preds.tolist() == pytest.approx([0.2, 0.8])


# -- the wire carries every dtype as merge combines it, at any world size ----------------


class Replicas(Comm):
    """``size`` participants holding this rank's tensors (the world of one rank, repeated): no threads."""

    rank = 0
    timeout = None

    def __init__(self, size: int) -> None:
        self.size = size

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        return [tensor.clone() for _ in range(self.size)]

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        out = tensor.clone()
        for _ in range(self.size - 1):
            out = combine(op, out, tensor)
        return tensor.copy_(out)

    def subcomm(self, members: list[int]) -> Comm:
        raise NotImplementedError


@pytest.mark.parametrize("plan", ["gathered", "all_reduced", "reduce plan"])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_bool_states_reduce_like_merge_at_256_participants(
    op: str, plan: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.1 carried bool sums as uint8: 256 participants holding True summed to False."""
    large = plan == "all_reduced"
    monkeypatch.setattr(exchange, "CROSSOVER", 1 if plan == "reduce plan" else 1 << 20)
    n = 1 << 16 if large else 3  # 64 KiB x 256 ranks is past the gather limit: one all_reduce
    t = torch.ones(n, dtype=torch.bool)
    comm = CountingComm(Replicas(256))
    out, _ = collective_reduce(comm, [Leaf("flags", t, op)], [], ["flags"])
    folded = t
    for _ in range(255):
        folded = combine(op, folded, t)
    assert out[0].dtype == torch.bool and torch.equal(out[0], folded) and bool(out[0].all())
    if plan == "reduce plan":  # the agreement all_reduce carries the flags as order keys
        assert comm.calls == ["all_reduce:max"]
        return
    assert ("all_reduce:max" in comm.calls or "all_reduce:min" in comm.calls) == large


DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
]  # fmt: skip


def _state_of(rank: int, dtype: torch.dtype, op: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(rank)
    raw = torch.randint(0, 3, (5,), generator=g)
    if dtype == torch.bool:
        return raw > 0
    if dtype.is_complex:
        return torch.complex(raw.double(), -raw.double()).to(dtype)
    return raw.to(dtype)


class Typed(sm.Metric):
    """One leaf of any dtype under any op, plus a cat leaf of the same dtype."""

    value: torch.Tensor = sm.state("sum")
    rows: torch.Tensor = sm.state("cat")

    def compute(self) -> torch.Tensor:
        return self.value


for _op in ("max", "min", "prod"):
    globals()[f"Typed_{_op}"] = type(
        f"Typed_{_op}", (sm.Metric,), {"__annotations__": {"value": "torch.Tensor", "rows": "torch.Tensor"},
                                       "__module__": __name__, "__qualname__": f"Typed_{_op}",
                                       "value": sm.state(_op), "rows": sm.state("cat"),
                                       "compute": lambda self: self.value}
    )  # fmt: skip


def _typed(rank: int, dtype: torch.dtype, op: str) -> sm.Metric:
    cls = Typed if op == "sum" else globals()[f"Typed_{op}"]
    t = _state_of(rank, dtype, op)
    return cls().replace(value=t, rows=t.reshape(5, 1)[: rank + 1])


def dtype_case(rank: int, dtype: torch.dtype, op: str) -> tuple[torch.Tensor, torch.Tensor]:
    r = _typed(rank, dtype, op).reduce()
    return r.value, r.rows


_OPS = {  # ops torch defines for each dtype (complex numbers have no order)
    torch.complex64: ["sum", "prod"],
    torch.complex128: ["sum", "prod"],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_reduces_like_merge(world: Any, dtype: torch.dtype) -> None:
    for op in _OPS.get(dtype, ["sum", "prod", "max", "min"]):
        expected = _typed(0, dtype, op)
        for r in (1, 2):
            expected = expected.merge(_typed(r, dtype, op))
        for value, rows in world.run(dtype_case, 3, dtype, op):
            assert value.dtype == dtype and torch.equal(value, expected.value), (op, value, expected.value)
            assert torch.equal(rows, expected.rows)


def complex_case(rank: int) -> torch.Tensor:
    m = Typed().replace(value=torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128) * (rank + 1))
    return m.reduce().value


def test_complex128_states_unpack(world: Any) -> None:
    for v in world.run(complex_case, 2):
        assert torch.equal(v, torch.tensor([3 + 6j, 9 - 3j], dtype=torch.complex128))


def test_collective_reduce_counts_one_call_for_small_bool_states() -> None:
    comm = CountingComm(Replicas(4))
    with sm.use_reducer(Collective(comm)):
        _typed(0, torch.bool, "sum").reduce()
    assert comm.calls == ["all_gather"]


class Peaks(sm.Metric):
    """A large max state: past the gather limit at two ranks, so it travels by all_reduce."""

    peak: torch.Tensor = sm.state("max", default=lambda: torch.zeros(600_000))

    def update(self, x: torch.Tensor) -> Peaks:
        return self.replace(peak=torch.maximum(self.peak, x))


def nan_peak_case(rank: int) -> list[bool]:
    x = torch.zeros(600_000)
    if rank == 1:
        x[0] = float("nan")
    got = Peaks().update(x).reduce().peak
    return [bool(got[0].isnan()), bool((got[1:] == 0).all())]


def test_a_large_max_state_keeps_nan_as_torch_does(world: Any) -> None:
    # gloo's MAX dropped the NaN of rank 1 (0.0 where merge and every smaller state give NaN)
    assert 600_000 * 4 * 2 > exchange.GATHER_LIMIT
    assert world.run(nan_peak_case, 2) == [[True, True]] * 2


def empty_rows_case(rank: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    m = sm.Cat().update(torch.zeros(rank + 1, 3, 0))
    return tuple(m.compute().shape), tuple(sm.compute(m, root=0).shape)


def test_rows_of_no_elements_join_by_their_count(world: Any) -> None:
    # reshape(-1, 3, 0) of the joined rows raised a bare RuntimeError
    assert world.run(empty_rows_case, 2) == [((3, 3, 0), (3, 3, 0))] * 2


class Unsigned(sm.Metric):
    top: torch.Tensor = sm.state("max", default=lambda: torch.zeros(1, dtype=torch.uint64))

    def update(self, x: torch.Tensor) -> Unsigned:
        return self.replace(top=x)


def test_uint64_max_is_refused_at_any_world_size() -> None:
    # from 32 ranks uint64 travelled as int64 order keys: 2**63 + 5 ranked below 1 (max 1, min 2**63 + 5)
    def body(rank: int) -> str:
        try:
            Unsigned().update(torch.tensor([2**63 + 5 if rank == 0 else 1], dtype=torch.uint64)).reduce()
        except (TypeError, NotImplementedError) as err:
            return type(err).__name__
        return "no error"

    assert set(sm.simulate(body, 2)) == {"NotImplementedError"}  # torch has no CPU max of uint64
    assert set(sm.simulate(body, 32)) == {"TypeError"}
