"""The text, retrieval and audio catalogue entries through the library's machinery.

An empty rank, checkpoints (``state_dict`` and ``torch.save``), ``mask=`` and
``forward`` for every entry of ``tests/catalogue.py`` whose inputs are one of
the ``FAMILY_KINDS`` of these three families (the generic catalogue tests run
them too; these keep the families' own run self-contained).
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import torch
from catalogue import CATALOGUE, ORDER_SENSITIVE, Entry, assert_same_state, data, feed, state_of
from shards import assert_close

import scopedmetrics as sm

KINDS = {"sentences", "translations", "squad", "lm", "token_loglik", "retrieval", "retrieval_graded", "dense",
         "signals", "speakers"}
ENTRIES = [e for e in CATALOGUE if e.kind in KINDS]
IDS = [e.id for e in ENTRIES]


def test_every_public_class_of_the_three_families_has_an_entry() -> None:
    from scopedmetrics import audio, retrieval, text

    public = {getattr(f, n) for f in (text, retrieval, audio) for n in f.__all__}
    assert public <= {type(e.make()) for e in ENTRIES}


def rank_body(rank: int, entries: list[Entry], arrays: dict[str, Any], cuts: list[int]) -> dict[str, Any]:
    tree = {}
    for e in entries:
        m = e.make()
        m = feed(m, arrays[e.id], slice(cuts[rank], (cuts[rank] + cuts[rank + 1]) // 2))
        tree[e.id] = feed(m, arrays[e.id], slice((cuts[rank] + cuts[rank + 1]) // 2, cuts[rank + 1]))
    return sm.compute(tree)


@pytest.mark.parametrize("cuts", [[0, 0, 13, 30], [0, 11, 11, 30], [0, 30, 30, 30]], ids=["first", "middle", "two"])
def test_ranks_without_data_change_no_value(cuts: list[int]) -> None:
    arrays = {e.id: data(e.kind, 30, seed=i) for i, e in enumerate(ENTRIES)}
    with sm.use_reducer(sm.local()):
        expected = {e.id: feed(e.make(), arrays[e.id]).compute() for e in ENTRIES}
    for rank, got in enumerate(sm.simulate(lambda r: rank_body(r, ENTRIES, arrays, cuts), 3)):
        for e in ENTRIES:
            try:
                assert_close(got[e.id], expected[e.id])
            except AssertionError as err:
                raise AssertionError(f"rank {rank}, {e.id}: {err}") from None


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_checkpoints_resume_where_they_stopped(entry: Entry) -> None:
    arrays = data(entry.kind, 20, seed=5)
    m = feed(entry.make(), arrays, slice(0, 12))
    back = entry.make().load_state_dict(m.state_dict())
    assert_same_state(state_of(feed(back, arrays, slice(12, 20))), state_of(feed(m, arrays, slice(12, 20))))
    buffer = io.BytesIO()
    torch.save(m, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)  # weights_only=True: metric classes (and our signal functions) are allowed
    assert_same_state(state_of(loaded), state_of(m))


def rows_of(arrays: tuple[Any, ...], keep: list[int]) -> tuple[Any, ...]:
    return tuple(a[torch.tensor(keep)] if isinstance(a, torch.Tensor) else [a[i] for i in keep] for a in arrays)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_mask_leaves_rows_out_as_if_never_passed(entry: Entry) -> None:
    arrays = data(entry.kind, 12, seed=6)
    keep = torch.tensor([i % 3 != 1 for i in range(12)])
    m = entry.make()
    masked = m.update(*arrays, mask=keep)
    plain = m.update(*rows_of(arrays, keep.nonzero().flatten().tolist()))
    assert_same_state(state_of(masked), state_of(plain))
    assert_same_state(state_of(m.update(*arrays, mask=torch.zeros(12, dtype=torch.bool))), state_of(m))


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_forward_returns_the_batch_value_and_folds_it_in(entry: Entry) -> None:
    arrays = data(entry.kind, 16, seed=7)
    first = feed(entry.make(), arrays, slice(0, 8))
    batch = tuple(a[8:16] for a in arrays)
    folded, value = first.forward(*batch)
    with sm.use_reducer(sm.local()):
        assert_close(value, entry.make().update(*batch).compute())
        whole = feed(entry.make(), arrays).compute()
        got = folded.compute()
    if entry.id in ORDER_SENSITIVE:
        got, whole = got.sort().values, whole.sort().values
    assert_close(got, whole)
