"""Good input in every form a model hands it: layouts and precision modes never change a catalogue metric's value.

Views, slices and transposes reach ``update`` as they are, and a model
evaluated under ``torch.autocast`` often updates its metrics inside the same
block: neither may change what a metric computes.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from catalogue import CATALOGUE, Entry, data, state_of


def _strided(x: Any) -> Any:
    """``x`` with the same values in a non-contiguous layout: every other element of a wider buffer, dims swapped."""
    if not isinstance(x, torch.Tensor) or x.ndim == 0:
        return x
    y = torch.stack([x, torch.zeros_like(x)], dim=-1)[..., 0]
    if x.ndim >= 2 and x.shape[0] > 1 and x.shape[1] > 1:
        y = y.transpose(0, 1).contiguous().transpose(0, 1)
    assert torch.equal(y, x)
    return y


@pytest.mark.parametrize("entry", CATALOGUE, ids=[e.id for e in CATALOGUE])
def test_strided_inputs_give_the_state_of_contiguous_ones(entry: Entry) -> None:
    """Views, slices and transposes reach ``update`` as they are (segmentation refused them with a view error)."""
    arrays = data(entry.kind, 24, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = state_of(entry.make().update(*arrays))
        strided = [_strided(a) for a in arrays]
        got = state_of(entry.make().update(*strided))
    assert any(isinstance(a, torch.Tensor) and not a.is_contiguous() for a in strided) or not any(
        isinstance(a, torch.Tensor) for a in arrays)  # text kinds take lists
    assert want.keys() == got.keys()
    for k in want:  # float sums may add in another order: equal to rounding
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        torch.testing.assert_close(got[k], want[k], rtol=1e-6, atol=1e-6, equal_nan=True, msg=k)


def _values(v: Any) -> list[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, dict):
        return [t for k in sorted(v) for t in _values(v[k])]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _values(x)]
    return [torch.tensor(float(v))]


@pytest.mark.parametrize("entry", CATALOGUE, ids=[e.id for e in CATALOGUE])
def test_update_and_compute_inside_autocast_give_the_full_precision_value(entry: Entry) -> None:
    """SSIM's windows (convolutions) and FID's extractor ran in bfloat16 inside ``torch.autocast``."""
    arrays = data(entry.kind, 40, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = entry.make().update(*arrays)
        want = _values(m.compute())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = entry.make().update(*arrays)
            got = _values(inside.compute())
            assert torch.is_autocast_enabled("cpu")  # the user's block is as it was
    assert_same_state_values(state_of(inside), state_of(m))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def assert_same_state_values(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, equal_nan=True, msg=k)
