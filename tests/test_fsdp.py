"""Metrics inside an FSDP2 (``fully_shard``) or DDP model, checkpointed with ``torch.distributed.checkpoint``.

``get_model_state_dict`` walks every key of the model's state dict by
``getattr``, one dotted component at a time: a model holding a ``Stateful``
could not be checkpointed at all (``AttributeError: 'Stateful' object has no
attribute 'sum_squared_error'``). DCP also treats every plain tensor as
replicated (it saves one rank's copy) and loads into tensors of the saved
size, so the metrics take three calls: ``reduce_state_dict`` before
``dcp.save`` (the global state, the same on every rank), ``size_state_dict``
before ``dcp.load`` (a fresh model's ``cat`` states are empty) and
``resume_state_dict`` before ``set_model_state_dict``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import torch
from shards import assert_close

import scopedmetrics as sm
import scopedmetrics.classification as smc
import scopedmetrics.regression as smr
from scopedmetrics.nn import Stateful, reduce_state_dict, resume_state_dict, size_state_dict

C, N = 3, 61
BEFORE = [slice(0, 0), slice(0, 23)]  # rank 0 saw nothing before the checkpoint
AFTER = [slice(23, 40), slice(40, N)]


def _data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    return torch.randn(N, 4, generator=g), torch.randint(0, C, (N,), generator=g), torch.randn(N, generator=g)


def _metrics() -> sm.Collection:
    return sm.Collection(acc=smc.MulticlassAccuracy(C), auroc=smc.MulticlassAUROC(C))


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, C)
        self.metrics = Stateful(_metrics())
        self.mse = Stateful(smr.MeanSquaredError())


def _feed(net: _Net, rows: slice) -> None:
    x, y, z = _data()
    with torch.no_grad():
        scores = net.lin(x[rows]).softmax(1)
    if rows.stop > rows.start:
        net.metrics.update(scores, y[rows])
        net.mse.update(scores[:, 0], z[rows])


def _truth() -> tuple[Any, Any]:
    x, y, z = _data()
    with torch.no_grad():
        scores = _Net().lin(x).softmax(1)
    with sm.use_reducer(sm.local()):
        return _metrics().update(scores, y).compute(), smr.MeanSquaredError().update(scores[:, 0], z).compute()


def _sharded(mesh: Any) -> _Net:
    from torch.distributed.fsdp import fully_shard

    net = _Net()
    fully_shard(net.lin, mesh=mesh)
    fully_shard(net, mesh=mesh)
    return net


def forgetful_body(rank: int, path: str) -> None:
    """The DCP round trip without reduce_state_dict and resume_state_dict: refused where it would be wrong."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2,))
    net = _sharded(mesh)
    _feed(net, BEFORE[rank])
    dcp.save(get_model_state_dict(net), checkpoint_id=path)  # DCP keeps one rank's copy of each plain tensor
    fresh = _sharded(mesh)
    state = get_model_state_dict(fresh)
    size_state_dict(fresh, state, dcp.FileSystemReader(path).read_metadata())
    dcp.load(state, checkpoint_id=path)
    set_model_state_dict(fresh, state)  # the weights load; the metrics refuse to go on from another rank's state
    _feed(fresh, AFTER[rank])


def fsdp_body(rank: int, path: str) -> tuple[Any, list[str]]:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", (2,))
    net = _sharded(mesh)
    _feed(net, BEFORE[rank])
    state = get_model_state_dict(net)
    keys = sorted(state)
    reduce_state_dict(net, state)  # a collective: the global state, equal on every rank, as DCP assumes
    dcp.save(state, checkpoint_id=path)

    fresh = _sharded(mesh)
    state = get_model_state_dict(fresh)
    size_state_dict(fresh, state, dcp.FileSystemReader(path).read_metadata())
    dcp.load(state, checkpoint_id=path)
    resume_state_dict(fresh, state)  # rank 0 keeps the global state, rank 1 starts empty
    set_model_state_dict(fresh, state)
    _feed(fresh, AFTER[rank])
    return (fresh.metrics.compute(), fresh.mse.compute()), keys


def test_an_fsdp2_model_resumes_its_metrics_from_a_dcp_checkpoint_exactly(tmp_path: Path) -> None:
    from conftest import gloo_world

    results = gloo_world(2).run(fsdp_body, str(tmp_path / "ckpt"))
    truth = _truth()
    for value, keys in results:
        assert_close(value, truth)
        assert [k for k in keys if not k.startswith("lin.")] == [
            "metrics._extra_state", "metrics.acc.stats.counts", "metrics.auroc.counts", "metrics.auroc.preds",
            "metrics.auroc.target", "mse._extra_state", "mse.sum_squared_error", "mse.total"]


def test_a_dcp_checkpoint_of_unreduced_metrics_is_refused_after_loading(tmp_path: Path) -> None:
    from conftest import gloo_world

    results = gloo_world(2).results(forgetful_body, str(tmp_path / "ckpt"))
    errors = [str(err) for ok, err in results if not ok]
    assert errors, "every rank loaded one rank's metric states"
    assert all("own state of a world of 2" in e and "sm.nn.reduce_state_dict" in e for e in errors), errors


def ddp_body(rank: int, path: str) -> Any:
    """The same round trip under DDP, through the module DDP wraps (DCP renames only parameters and buffers)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    net = torch.nn.parallel.DistributedDataParallel(_Net())
    _feed(net.module, BEFORE[rank])
    state = get_model_state_dict(net.module)
    reduce_state_dict(net.module, state)
    dcp.save(state, checkpoint_id=path)
    fresh = torch.nn.parallel.DistributedDataParallel(_Net())
    state = get_model_state_dict(fresh.module)
    size_state_dict(fresh.module, state, dcp.FileSystemReader(path).read_metadata())
    dcp.load(state, checkpoint_id=path)
    resume_state_dict(fresh.module, state)
    set_model_state_dict(fresh.module, state)
    _feed(fresh.module, AFTER[rank])
    return fresh.module.metrics.compute(), fresh.module.mse.compute()


def test_a_ddp_model_resumes_its_metrics_from_a_dcp_checkpoint_exactly(tmp_path: Path) -> None:
    from conftest import gloo_world

    truth = _truth()
    for value in gloo_world(2).run(ddp_body, str(tmp_path / "ckpt")):
        assert_close(value, truth)


def test_state_dict_keys_resolve_by_getattr_one_component_at_a_time() -> None:
    s = Stateful(sm.Collection(acc=smc.MulticlassAccuracy(C), auroc=smc.MulticlassAUROC(C)))
    s.update(torch.tensor([[0.2, 0.5, 0.3]]), torch.tensor([1]))
    for key, value in s.metric.state_dict().items():  # what get_model_state_dict does with every key but the mark
        assert torch.equal(functools.reduce(getattr, key.split("."), s), value), key
    assert isinstance(s.update, type(s.compute))  # module attributes come first
    assert not hasattr(s, "missing")
    with pytest.raises(AttributeError, match="no metric state at 'count'"):
        s.acc.stats.count  # noqa: B018


def test_size_state_dict_takes_the_saved_length_and_dtype_of_cat_states_only() -> None:
    saved = Stateful(sm.Collection(rows=sm.Cat(), n=sm.Sum())).state_dict()
    saved["rows.value"] = torch.arange(4, dtype=torch.float64)
    saved["n.sum_value"] = torch.zeros(2)  # a fixed-size state of another shape: not this helper's to change
    fresh = Stateful(sm.Collection(rows=sm.Cat(), n=sm.Sum()))
    current = fresh.state_dict()
    size_state_dict(fresh, current, saved)
    assert current["rows.value"].shape == (4,) and current["rows.value"].dtype == torch.float64
    assert current["n.sum_value"].shape == ()
