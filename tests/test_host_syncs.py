"""``update`` with ``validate_args=False``, or checked inside ``sm.device_checks()``, never reads data on the host.

On an accelerator a host read (``.item()``, ``bool()``, ``.tolist()``) or an
output whose shape depends on the data (``nonzero``, boolean indexing) waits
for every queued kernel. Checks must read the data (they raise in Python), so
they run only with ``validate_args=True``; everything else decides on the
device, and inside ``sm.device_checks()`` the checks are asynchronous asserts
there. This machine has no accelerator, so the choices that depend on the
device (``inputs.on_device``, ``_checks._off_host``) are forced, and a ``TorchFunctionMode`` records
every host read while ``update`` runs. ``cat`` states (exact curves) keep the
kept rows only, a data-dependent shape by nature, and are left out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from catalogue import CATALOGUE, Entry, assert_same_state, data, feed, state_of
from torch.overrides import TorchFunctionMode

import scopedmetrics as sm
from scopedmetrics import _checks
from scopedmetrics.classification import inputs
from scopedmetrics.sync import Leaf, Merge, walk

HOST_READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "nonzero", "unique", "masked_select",
              "numpy", "argwhere", "nonzero_static"}


class HostReads(TorchFunctionMode):
    """Records the torch calls that read tensor data on the host or give a data-dependent shape."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in HOST_READS:
            self.seen.append(name)
        if name == "__getitem__" and any(isinstance(a, torch.Tensor) and a.dtype == torch.bool for a in args[1:]):
            self.seen.append("boolean index")
        return func(*args, **(kwargs or {}))


def _fixed_size(m: Any) -> bool:
    """Whether no ``cat`` state grew (binned curves declare rows they never fill)."""
    units: list[Leaf | Merge] = []
    walk(m, "", units, [])
    return all(isinstance(u, Merge) or u.op != "cat" or u.tensor.numel() == 0 for u in units)


def _fixed_size_checked() -> list[Entry]:
    """The entries that take ``validate_args`` and whose states keep their size."""
    out = []
    for e in CATALOGUE:
        m = e.make()
        if "validate_args" in getattr(m, "__dataclass_fields__", {}) and _fixed_size(feed(m, data(e.kind, 8, 0))):
            out.append(e)
    return out


FIXED_SIZE = _fixed_size_checked()


def test_the_rule_covers_the_families_that_validate() -> None:
    ids = {e.id for e in FIXED_SIZE}
    assert len(ids) >= 70, len(ids)
    assert {"BinaryAccuracy", "MulticlassF1Score", "MultilabelRecall", "BinaryAUROC-binned", "MeanSquaredError",
            "BinaryHingeLoss-squared", "MultilabelRankingLoss-ignore", "PearsonCorrCoef"} <= ids


@pytest.mark.parametrize("entry", FIXED_SIZE, ids=lambda e: e.id)
def test_update_reads_nothing_on_the_host(entry: Entry, monkeypatch: pytest.MonkeyPatch) -> None:
    m = dataclasses.replace(entry.make(), validate_args=False)
    arrays = data(entry.kind, 24, 3)
    on_host = feed(m, arrays)  # the CPU's own way: the choices read on the host
    monkeypatch.setattr(inputs, "on_device", lambda x: True)  # as on an accelerator
    with HostReads() as reads:
        on_dev = feed(m, arrays)
    assert reads.seen == [], f"{entry.id}: update read the data on the host via {sorted(set(reads.seen))}"
    assert_same_state(state_of(on_dev), state_of(on_host))


@pytest.mark.parametrize("entry", FIXED_SIZE, ids=lambda e: e.id)
def test_checked_update_in_device_checks_reads_nothing_on_the_host(
    entry: Entry, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = dataclasses.replace(entry.make(), validate_args=True)
    arrays = data(entry.kind, 24, 3)
    on_host = feed(m, arrays)
    monkeypatch.setattr(inputs, "on_device", lambda x: True)
    monkeypatch.setattr(_checks, "_off_host", lambda x: True)  # as on an accelerator
    with sm.device_checks(), HostReads() as reads:
        on_dev = feed(m, arrays)
    assert reads.seen == [], f"{entry.id}: a checked update read the data on the host via {sorted(set(reads.seen))}"
    assert_same_state(state_of(on_dev), state_of(on_host))
    with HostReads() as reads:  # the block closed: the checks read on the host again
        feed(m, arrays)
    assert reads.seen, f"{entry.id}: outside device_checks() the checks read nothing"
