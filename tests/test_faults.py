"""Faults: no hangs, no silent mis-merges, no lost state.

Every test taking ``world`` runs in ``sm.simulate`` threads and in real gloo
processes. Ranks disagree about what they reduce, hold no data, skip
``compute``, raise before the collective, or die; every surviving rank must end
with an error (or the right value) within the timeout, and never hang.
Disagreement cases use three ranks where rank 2 is the odd one out, so ranks 0
and 1 (which agree with each other) must still blame rank 2.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Callable
from typing import Any, NoReturn

import pytest
import torch
import torch.distributed as dist
from catalogue import BY_ID, CATALOGUE, IDS, data, feed, public_classes
from shards import assert_close
from worlds import WorkerDiedError

import scopedmetrics as sm
import scopedmetrics.classification as smc
import scopedmetrics.regression as smr
from scopedmetrics import exchange
from scopedmetrics.comm import Comm
from scopedmetrics.reducers import Collective

SIZE = 3
ODD = 2  # the rank that differs

# -- metrics with dict and list states ----------------------------------------


class Bins(sm.Metric):
    """A dict state: one ``sum`` leaf per key."""

    bins: dict[str, torch.Tensor] = sm.state("sum", default=lambda: {"a": torch.zeros(2), "b": torch.zeros(2)})

    def update(self, x: torch.Tensor) -> Bins:
        return self.replace(bins={k: v + x for k, v in self.bins.items()})

    def compute(self) -> dict[str, torch.Tensor]:
        return self.bins


class Parts(sm.Metric):
    """A list of ``cat`` leaves: one per batch."""

    parts: list[torch.Tensor] = sm.state("cat", default=list)

    def update(self, x: torch.Tensor) -> Parts:
        return self.replace(parts=[*self.parts, x])

    def compute(self) -> list[torch.Tensor]:
        return self.parts


# -- helpers --------------------------------------------------------------------


def bounded(timeout: float) -> contextlib.AbstractContextManager[Any]:
    """Under gloo, a ``distributed`` reducer with ``timeout``; in simulate, the world's own timeout."""
    if dist.is_initialized():
        return sm.use_reducer(sm.distributed(timeout=timeout))
    return contextlib.nullcontext()


def outcomes(
    world: Any, fn: Callable[..., Any], *args: Any, timeout: float, size: int = SIZE
) -> list[tuple[bool, Any]]:
    """Every rank's ``(ok, value or exception)``.

    Under simulate an exception propagates out of its rank as it would in user
    code, so ``simulate`` fails the world and the other ranks learn of it; the
    world's timeout is ``timeout``. Under gloo ``fn`` bounds its own waits
    (``bounded``) and the harness waits long enough to see every rank finish.
    """
    if world.kind == "gloo":
        return world.results(fn, size, *args, timeout=timeout + 60)
    got: list[tuple[bool, Any]] = [(False, RuntimeError("never ran"))] * size

    def body(rank: int) -> None:
        try:
            got[rank] = (True, fn(rank, *args))
        except BaseException as err:
            got[rank] = (False, err)
            raise

    with contextlib.suppress(BaseException):
        sm.simulate(body, size, timeout=timeout)
    return got


def timed(fn: Callable[[], Any]) -> tuple[bool, Any, float]:
    """``(ok, value or exception, seconds)`` of ``fn()``."""
    start = time.monotonic()
    try:
        return True, fn(), time.monotonic() - start
    except Exception as err:  # noqa: BLE001 - returned to the test
        return False, err, time.monotonic() - start


# -- 1. disagreements: every rank raises SyncError naming what differs and rank 2 --


def disagree_case(rank: int, what: str) -> tuple[Any, Any]:
    """Compute something rank 2 disagrees on, then (same group) something all agree on."""
    odd = rank == ODD
    if what == "metric_set_missing":
        tree: Any = {"a": sm.Sum(), "b": sm.Mean()}
        if odd:
            del tree["b"]
    elif what == "metric_set_extra":
        tree = {"a": sm.Sum(), "b": sm.Mean()}
        if odd:
            tree["c"] = sm.Max()
    elif what == "config":
        tree = smc.MulticlassAccuracy(num_classes=4 if odd else 3)
    elif what == "config_nested":
        tree = sm.Collection(acc=smc.BinaryAccuracy(threshold=0.7 if odd else 0.5), total=sm.Sum())
    elif what == "dtype":
        tree = sm.Mean().to(torch.float64 if odd else torch.float32)
    elif what == "dtype_merge":
        tree = smr.PearsonCorrCoef().to(torch.float64 if odd else torch.float32)
    elif what == "shape":
        m = smc.BinaryConfusionMatrix()
        tree = m.replace(matrix=m.matrix.replace(confmat=torch.zeros(3 if odd else 2, 2, dtype=torch.long)))
    elif what == "shape_merge":
        m = smr.PearsonCorrCoef()
        if odd:  # the state of num_outputs=2 under a num_outputs=1 configuration
            m = m.replace(**{k: torch.zeros(2, 2, dtype=m.mean.dtype) for k in ("mean", "m2", "low", "high")},
                          comoment=torch.zeros(2, dtype=m.comoment.dtype))
        tree = m
    elif what == "dict_keys":
        tree = Bins() if not odd else Bins().replace(bins={"a": torch.zeros(2), "c": torch.zeros(2)})
    elif what == "cat_leaves":
        tree = Parts().update(torch.ones(2))
        if not odd:
            tree = tree.update(torch.ones(3))
    elif what == "cat_rows":
        tree = sm.Cat()  # rank 0 stays empty: an empty leaf joins anything
        if rank:
            tree = tree.update(torch.ones(2, 3 if odd else 4))
    elif what == "cat_dtype":
        tree = sm.Cat().update(torch.ones(2, dtype=torch.int64) if odd else torch.ones(2))
    elif what == "cat_ndim":
        tree = sm.Cat().update(torch.ones(2, 2) if odd else torch.ones(2))
    else:
        raise AssertionError(what)
    with bounded(10):
        try:
            sm.compute(tree)
            err: Any = None
        except Exception as e:  # noqa: BLE001 - returned to the test
            err = e
        after = sm.Sum().update(torch.tensor([rank + 1.0])).compute()
    return err, after


DISAGREEMENTS = [
    ("metric_set_missing", ["b: scopedmetrics", "Mean", "nothing more"]),
    ("metric_set_extra", ["c: scopedmetrics", "Max", "nothing more"]),
    ("config", ["MulticlassAccuracy", "num_classes=4", "num_classes=3"]),
    ("config_nested", ["acc: ", "threshold=0.7", "threshold=0.5"]),
    ("dtype", ["mean_value", "torch.float64", "torch.float32"]),
    ("dtype_merge", ["merge torch.float64", "merge torch.float32"]),
    ("shape", ["confmat", "(3, 2)", "(2, 2)"]),
    ("shape_merge", ["'mean'", "(2, 2)", "(2, 1)"]),
    ("dict_keys", ["bins.c", "bins.b"]),
    ("cat_leaves", ["parts.1", "nothing more"]),
    ("cat_rows", ["'value'", "rows of shape (3,)", "rows of shape (4,)"]),
    ("cat_dtype", ["'value'", "torch.int64", "torch.float32"]),
    ("cat_ndim", ["'value'", "rows of shape (2,)", "rows of shape ()"]),
]


@pytest.mark.parametrize(("what", "needles"), DISAGREEMENTS, ids=[d[0] for d in DISAGREEMENTS])
def test_disagreement_raises_sync_error_naming_what_and_rank_on_every_rank(
    world: Any, what: str, needles: list[str]
) -> None:
    results = world.results(disagree_case, SIZE, what, timeout=60)
    for rank, (ok, value) in enumerate(results):
        assert ok, f"rank {rank} did not survive to the follow-up reduction: {value!r}"
        err, after = value
        assert isinstance(err, sm.SyncError), f"rank {rank}: expected SyncError, got {err!r}"
        message = str(err)
        for needle in needles:
            assert needle in message, f"rank {rank}: {needle!r} not in {message!r}"
        assert f"rank {ODD}" in message, f"rank {rank}: the odd rank {ODD} is not named in {message!r}"
        assert after.item() == 1.0 + 2.0 + 3.0  # the same group still reduces correctly: nothing lost


# -- 2. a rank with no data, for every catalogue metric ---------------------------

N = 30


def empty_rank_case(rank: int, ids: list[str], arrays: dict[str, tuple[torch.Tensor, ...]],
                    slices: list[slice]) -> dict[str, Any]:
    """Each metric fed this rank's shard in two batches (none on the empty rank); one joint compute."""
    sl = slices[rank]
    half = sl.start + (sl.stop - sl.start) // 2
    tree = {}
    for id_ in ids:
        m = BY_ID[id_].make()
        m = feed(m, arrays[id_], slice(sl.start, half))
        tree[id_] = feed(m, arrays[id_], slice(half, sl.stop))
    with bounded(60):
        return sm.compute(tree)


def test_catalogue_covers_every_public_metric_class() -> None:
    assert public_classes() <= {type(e.make()) for e in CATALOGUE}


@pytest.mark.parametrize("empty", [0, 1])
def test_a_rank_with_no_data_changes_no_value(world: Any, empty: int) -> None:
    arrays = {e.id: data(e.kind, N, seed=i) for i, e in enumerate(CATALOGUE)}
    cuts = [0, 12, 12, 30] if empty == 1 else [0, 0, 17, 30]
    slices = [slice(cuts[r], cuts[r + 1]) for r in range(SIZE)]
    values = world.run(empty_rank_case, SIZE, IDS, arrays, slices)
    with sm.use_reducer(sm.local()):
        expected = {e.id: feed(e.make(), arrays[e.id]).compute() for e in CATALOGUE}
    for rank, got in enumerate(values):
        for id_ in IDS:
            try:
                assert_close(got[id_], expected[id_])
            except AssertionError as err:
                raise AssertionError(f"rank {rank}, {id_}: {err}") from None


# -- 3. missing, raising and dying ranks -------------------------------------------------


def skip_case(rank: int, timeout: float) -> tuple[bool, Any, float]:
    """Rank 2 never calls compute; the others do."""
    if rank == ODD:
        return True, "skipped compute", 0.0
    with bounded(timeout):
        return timed(lambda: sm.Sum().update(torch.ones(1)).compute())


def raise_case(rank: int, timeout: float) -> tuple[bool, Any, float]:
    """Rank 2 raises while updating, before the collective; the others compute."""
    m = smc.BinaryAccuracy()
    if rank == ODD:
        m.update(torch.tensor([0.5]), torch.tensor([7]))  # out-of-range label: ValueError
    with bounded(timeout):
        return timed(lambda: m.update(torch.tensor([0.9]), torch.tensor([1])).compute())


def die_case(rank: int, timeout: float) -> tuple[bool, Any, float]:
    """Rank 2's process dies (gloo: ``os._exit``; simulate: its thread ends with SystemExit)."""
    if rank == ODD:
        if dist.is_initialized():
            os._exit(1)
        raise SystemExit(1)
    with bounded(timeout):
        return timed(lambda: sm.compute({"s": sm.Sum().update(torch.ones(1)), "c": sm.Cat().update(torch.ones(2))}))


class DyingComm(Comm):
    """Passes the agreement header, then dies in the next collective: mid-reduction."""

    def __init__(self, inner: Comm) -> None:
        self.inner = inner
        self.calls = 0

    rank = property(lambda self: self.inner.rank)  # type: ignore[assignment]
    size = property(lambda self: self.inner.size)  # type: ignore[assignment]
    timeout = property(lambda self: self.inner.timeout)  # type: ignore[assignment]

    def all_gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        self.calls += 1
        if self.calls == 1:  # the header
            return self.inner.all_gather(tensor)
        self._die()

    def all_reduce(self, tensor: torch.Tensor, op: str) -> torch.Tensor:
        self._die()

    def _die(self) -> NoReturn:
        if dist.is_initialized():
            os._exit(1)
        raise SystemExit(1)

    def subcomm(self, members: list[int]) -> Comm:
        return self.inner.subcomm(members)


def die_mid_reduction_case(rank: int, timeout: float) -> tuple[bool, Any, float]:
    """Rank 2 dies after the header exchange, inside the payload exchange (too large for the first gather)."""
    big = torch.ones(exchange.first_room(SIZE) // 2)  # float32: twice the room
    tree = {"s": sm.Sum().update(torch.ones(1)), "c": sm.Cat().update(big)}
    with bounded(timeout):
        if rank == ODD:
            with sm.use_reducer(Collective(DyingComm(sm.get_reducer().comm))):
                sm.compute(tree)
        return timed(lambda: sm.compute(tree))


SCENARIOS: dict[str, Callable[..., Any]] = {
    "never_computes": skip_case,
    "raises_before_collective": raise_case,
    "dies_before_collective": die_case,
    "dies_mid_reduction": die_mid_reduction_case,
}
TIMEOUT = {"gloo": 2.0, "simulate": 1.0}
SLACK = 3.0  # seconds beyond the timeout a survivor may take to give up (slow, shared CI cores)


@functools.cache
def scenario_outcomes(kind: str, scenario: str) -> tuple[list[tuple[bool, Any]], float]:
    """Run one scenario once per world kind; the tests below read its outcomes."""
    from conftest import World

    start = time.monotonic()
    got = outcomes(World(kind), SCENARIOS[scenario], TIMEOUT[kind], timeout=TIMEOUT[kind])
    elapsed = time.monotonic() - start
    if kind == "gloo":  # a rank that skipped, raised or died leaves the group's collectives out of step
        from conftest import gloo_world

        gloo_world(SIZE).broken = True
    return got, elapsed


def survivors(kind: str, scenario: str) -> list[tuple[int, Any, float]]:
    """``(rank, error, seconds)`` of every rank but the odd one, each of which must have failed."""
    got, _ = scenario_outcomes(kind, scenario)
    out = []
    for rank, (ok, value) in enumerate(got):
        if rank == ODD:
            continue
        assert ok, f"rank {rank}'s body itself failed: {value!r}"
        done, err, seconds = value
        assert not done, f"rank {rank} computed {err!r} although rank {ODD} never took part"
        out.append((rank, err, seconds))
    return out


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_survivors_raise_sync_error_within_the_timeout(world: Any, scenario: str) -> None:
    got, wall = scenario_outcomes(world.kind, scenario)
    limit = TIMEOUT[world.kind] + SLACK
    for rank, err, seconds in survivors(world.kind, scenario):
        assert isinstance(err, sm.SyncError), f"rank {rank}: {err!r}"
        assert seconds < limit, f"rank {rank} took {seconds:.1f}s to give up (timeout {TIMEOUT[world.kind]}s)"
    assert wall < limit + (30 if world.kind == "gloo" else 0)  # the whole world, pool start-up included
    ok, odd = got[ODD]
    if scenario == "never_computes":
        assert (ok, odd[1]) == (True, "skipped compute")
    elif scenario == "raises_before_collective":
        assert not ok and isinstance(odd, ValueError) and "BinaryAccuracy.update" in str(odd)
    elif world.kind == "gloo":
        assert not ok and isinstance(odd, WorkerDiedError)
    else:
        assert not ok and isinstance(odd, SystemExit)


MISSING = re.compile(rf"rank\(s\) \[{ODD}\]|rank {ODD}\b")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_survivors_error_names_the_rank_that_failed_them(world: Any, scenario: str) -> None:
    for rank, err, _ in survivors(world.kind, scenario):
        assert MISSING.search(str(err)), f"rank {rank}'s error does not name rank {ODD}: {err}"


# -- 4. timeouts are per reducer -----------------------------------------------------

LATE = 1.5  # rank 1 arrives this late
SHORT, LONG = 0.5, 6.0


def two_timeouts_case(rank: int) -> list[tuple[bool, Any, float]]:
    """Two reducers over the same group, with a short and a long timeout; rank 1 is late twice."""
    patient, impatient = sm.distributed(timeout=LONG), sm.distributed(timeout=SHORT)
    m = sm.Sum().update(torch.tensor([rank + 1.0]))
    out = []
    for reducer in (patient, impatient):
        if rank == 1:
            time.sleep(LATE)
        with sm.use_reducer(reducer if rank == 0 else sm.distributed(timeout=2.0)):
            out.append(timed(m.compute))
    return out


def test_each_reducer_waits_as_long_as_its_own_timeout(world: Any) -> None:
    if world.kind == "gloo":
        results = world.results(two_timeouts_case, 2, timeout=60)
        from conftest import gloo_world

        gloo_world(2).broken = True  # rank 0 gave up on a collective rank 1 still made: out of step
        assert results[0][0], results[0]
        (ok_long, value, waited), (ok_short, err, gave_up) = results[0][1]
    else:  # a simulated world's reducer takes the world's timeout
        def late(rank: int) -> tuple[bool, Any, float]:
            if rank == 1:
                time.sleep(LATE)
            return timed(sm.Sum().update(torch.tensor([rank + 1.0])).compute)

        (ok_long, value, waited) = sm.simulate(late, 2, timeout=LONG)[0]
        (ok_short, err, gave_up) = sm.simulate(late, 2, timeout=SHORT)[0]
    assert ok_long and value.item() == 3.0, value
    assert waited >= LATE - 0.2  # it waited for the late rank, past the short timeout
    assert not ok_short and isinstance(err, sm.SyncError), err
    assert gave_up < LATE - 0.3, f"the {SHORT}s reducer waited {gave_up:.2f}s"
    assert str(SHORT) in str(err)


# -- 5. subgroups under faults ------------------------------------------------------------


def split_timeout_case(rank: int) -> tuple[float, float]:
    """The split's backend waits as long as the process group, whoever made it first and with what timeout."""
    import torch.distributed as dist

    from scopedmetrics.comm import _GROUPS

    with sm.use_reducer(sm.distributed(timeout=1.0)):  # the first creator is impatient
        split = sm.subgroup("all")
    backend = next(pg for (_, ranks, tag), pg in _GROUPS.items() if ranks == (0, 1) and not tag)
    world = dist.group.WORLD._get_backend(torch.device("cpu")).options._timeout
    assert split.comm.timeout == 1.0
    with sm.use_reducer(sm.distributed(timeout=15.0)):
        patient = sm.subgroup("all")  # the same split, cached: this reducer's own timeout
        if rank == 1:
            time.sleep(2.5)  # later than the first creator's 1 s
        with sm.use_reducer(patient):
            value = float(sm.Sum().update(torch.tensor(1.0)).compute())
    return backend.options._timeout.total_seconds() - world.total_seconds(), value


def test_a_cached_split_serves_each_reducer_with_its_own_timeout() -> None:
    from conftest import gloo_world

    for gap, value in gloo_world(2).run(split_timeout_case):
        assert gap == 0.0 and value == 2.0


def split_while_reducing_case(rank: int, timeout: float) -> str:
    with bounded(timeout):
        try:
            if rank == 0:
                sm.subgroup("a")
            else:
                sm.Sum().update(torch.tensor(1.0)).compute()
        except sm.SyncError as err:
            return str(err)
    return "no error"


def test_a_split_on_some_ranks_while_others_reduce_is_a_sync_error(world: Any) -> None:
    """0.1 aborted the gloo process (EnforceNotMet) here."""
    results = outcomes(world, split_while_reducing_case, 10.0, timeout=10.0, size=2)
    for ok, msg in results:
        assert ok and "disagree" in msg and "subgroup(key)" in msg, msg


def bad_key_case(rank: int, key: Any) -> str:
    try:
        sm.subgroup(key if rank == 1 else "fine")
    except (ValueError, TypeError) as err:
        return f"{type(err).__name__}: {err}"
    return "no error"


class ByIdentity:
    """A key compared by identity: no two processes could ever hold equal ones."""


@pytest.mark.parametrize(
    "key",
    [float("nan"), ByIdentity(), ("en", float("nan")), ("en", ByIdentity())],
    ids=["nan", "identity", "nan-in-tuple", "identity-in-tuple"],
)
def test_a_key_unequal_to_itself_fails_on_every_rank(world: Any, key: Any) -> None:
    """0.1 raised `ValueError: 0 is not in list` on the rank with the key, and nothing on the others.

    A tuple holding NaN equals itself (tuples compare items by identity first) but not
    another process's copy: every rank was silently put in a group of one.
    """
    for msg in world.run(bad_key_case, 2, key):
        assert msg.startswith("ValueError: subgroup: rank 1's key") and "not equal to itself" in msg, msg


def unpicklable_key_case(rank: int) -> str:
    try:
        sm.subgroup((lambda: 0) if rank == 0 else "fine")
    except TypeError as err:
        return f"TypeError: {err}"
    except sm.SyncError as err:
        return f"SyncError: {err}"
    return "no error"


def test_a_key_that_does_not_pickle_fails_on_every_rank_without_a_hang() -> None:
    from conftest import gloo_world

    mine, other = gloo_world(2).run(unpicklable_key_case)
    assert mine.startswith("TypeError: subgroup keys must pickle")
    assert other.startswith("SyncError: a participant failed") and "rank 0" in other


def store_host_dies_case(rank: int) -> str:
    if rank == 0:
        os._exit(1)  # the process that hosts the TCP store
    try:
        with sm.use_reducer(sm.distributed(timeout=5.0)):
            sm.Sum().update(torch.tensor(1.0)).compute()
    except sm.SyncError as err:
        return str(err)
    return "no error"


def test_when_the_store_host_dies_survivors_name_it() -> None:
    from conftest import gloo_world

    results = gloo_world(3).results(store_host_dies_case, timeout=60)
    assert isinstance(results[0][1], Exception)  # rank 0 died
    for ok, msg in results[1:]:
        assert ok and "rank 0" in msg and "store" in msg, msg
