"""Two-dimensional parallelism: a 2x2 DeviceMesh (dp x tp) over gloo, 4 processes.

Every tensor-parallel rank of a data-parallel replica holds the same
predictions (the replica's shard of the data), so a metric must be reduced over
the ``dp`` dimension only: ``sm.distributed(group=mesh.get_group("dp"))`` gives
one process's value on every rank, where the default group (all four ranks)
would count each sample once per TP rank. The simulated twin splits the world
with ``sm.subgroup(tp coordinate)``, which forms the same groups.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from shards import assert_close

import scopedmetrics as sm

DP, TP = 2, 2
SAMPLES = 101


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    scores = torch.rand(SAMPLES, 4, generator=g).softmax(dim=1)
    return scores, torch.randint(0, 4, (SAMPLES,), generator=g)


def metrics() -> sm.Collection:
    return sm.Collection(acc=sm.MulticlassAccuracy(4, average="micro"), auroc=sm.MulticlassAUROC(4),
                         seen=sm.MulticlassConfusionMatrix(4))  # fmt: skip


def coordinates(rank: int) -> tuple[int, int]:
    """``(dp, tp)`` of a global rank in a row-major (dp, tp) mesh, as init_device_mesh lays it out."""
    return divmod(rank, TP)


def replica_metrics(dp: int) -> sm.Collection:
    """What every TP rank of replica ``dp`` holds: the metrics of that replica's shard (uneven: 70 and 31)."""
    scores, labels = data()
    rows = slice(0, 70) if dp == 0 else slice(70, SAMPLES)
    return metrics().update(scores[rows], labels[rows])


def mesh_body(rank: int) -> tuple[Any, Any, tuple[int, int]]:
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (DP, TP), mesh_dim_names=("dp", "tp"))
    dp, tp = mesh.get_coordinate()
    assert (dp, tp) == coordinates(rank)
    m = replica_metrics(dp)
    reducer = sm.distributed(group=mesh.get_group("dp"))
    with sm.use_reducer(reducer):
        over_dp = m.compute()
    with sm.use_reducer(sm.distributed(mesh=mesh, dim="dp")):  # the same group, named by its dimension
        assert_close(m.compute(), over_dp)
    everywhere = m.compute()  # the default group: all four ranks, each sample once per TP rank
    return over_dp, everywhere, (reducer.rank, reducer.size)


def subgroup_body(rank: int) -> tuple[Any, Any, tuple[int, int]]:
    dp, tp = coordinates(rank)
    m = replica_metrics(dp)
    reducer = sm.subgroup(tp)  # the ranks sharing a TP coordinate: one per replica, the dp dimension
    with sm.use_reducer(reducer):
        over_dp = m.compute()
    return over_dp, m.compute(), (reducer.rank, reducer.size)


def check(results: list[tuple[Any, Any, tuple[int, int]]]) -> None:
    scores, labels = data()
    with sm.use_reducer(sm.local()):
        truth = metrics().update(scores, labels).compute()
    for rank, (over_dp, everywhere, (r, size)) in enumerate(results):
        assert_close(over_dp, truth)
        assert int(over_dp["seen"].sum()) == SAMPLES
        assert int(everywhere["seen"].sum()) == TP * SAMPLES  # the mistake the dp group avoids
        assert (r, size) == (coordinates(rank)[0], DP)


def test_a_2x2_device_mesh_reduces_over_the_dp_group_only() -> None:
    from conftest import gloo_world

    check(gloo_world(DP * TP).run(mesh_body))


def test_mesh_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="needs dim="):
        sm.distributed(mesh=object())
    with pytest.raises(TypeError, match="needs mesh="):
        sm.distributed(dim="dp")
    with pytest.raises(TypeError, match="not both"):
        sm.distributed(group=object(), mesh=object(), dim="dp")


def test_subgroups_by_tp_coordinate_form_the_dp_groups(world: Any) -> None:
    check(world.run(subgroup_body, DP * TP))
