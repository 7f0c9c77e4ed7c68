"""State declarations, identities, and the amortized growth of cat states."""

from __future__ import annotations

import io
import pickle
import threading

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics.state import BY_REFERENCE, Rows, append, combine, identity, link, settle


@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_identity_is_neutral(op: str, dtype: torch.dtype) -> None:
    x = torch.tensor([3, -2, 7], dtype=dtype)
    e = identity(op, dtype)
    assert torch.equal(combine(op, x, e.expand_as(x)), x)
    assert torch.equal(combine(op, e.expand_as(x), x), x)


def test_cat_identity_joins_any_rows() -> None:
    rows = torch.ones(2, 3, dtype=torch.int64)
    assert torch.equal(combine("cat", identity("cat"), rows), rows)
    assert torch.equal(combine("cat", rows, identity("cat")), rows)


def test_append_never_changes_earlier_views_even_when_branching() -> None:
    a = append(torch.empty(0), torch.tensor([1.0, 2.0]))
    b = append(a, torch.tensor([3.0]))
    c = append(a, torch.tensor([9.0, 8.0]))  # a branch from the same prefix must copy
    d = append(b, torch.tensor([4.0]))
    assert a.tolist() == [1.0, 2.0]
    assert b.tolist() == [1.0, 2.0, 3.0]
    assert c.tolist() == [1.0, 2.0, 9.0, 8.0]
    assert d.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_append_is_amortized() -> None:
    rows = torch.empty(0)
    buffers = set()
    for _ in range(1000):
        rows = append(rows, torch.ones(10))
        buffers.add(rows.untyped_storage().data_ptr())
    assert rows.numel() == 10_000
    assert len(buffers) < 20  # grows geometrically, not a copy per append


def test_append_from_many_threads_to_one_prefix_keeps_every_branch_intact() -> None:
    base = append(torch.empty(0), torch.zeros(4))
    out: dict[int, torch.Tensor] = {}

    def grow(i: int) -> None:
        out[i] = append(base, torch.full((3,), float(i + 1)))

    threads = [threading.Thread(target=grow, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, rows in out.items():
        assert rows.tolist() == [0.0] * 4 + [float(i + 1)] * 3


def test_append_refuses_other_row_shapes() -> None:
    rows = append(torch.empty(0), torch.ones(2, 3))
    with pytest.raises(ValueError, match="rows of shape \\(4,\\)"):
        append(rows, torch.ones(1, 4))


def test_saved_metrics_do_not_carry_spare_capacity() -> None:
    m = sm.Cat()
    for _ in range(50):
        m = m.update(torch.ones(100))
    assert m.value.untyped_storage().nbytes() > m.value.numel() * 4
    raw = pickle.dumps(m)
    assert len(raw) < m.value.numel() * 4 + 2_000
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    assert buf.tell() < m.value.numel() * 4 + 2_000
    assert torch.equal(pickle.loads(raw).value, m.value)


def test_cat_state_refuses_compile_tracing() -> None:
    def step(rows: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return append(rows, x)

    compiled = torch.compile(step, fullgraph=True, backend="eager")
    with pytest.raises(Exception, match="cannot be traced by torch.compile"):
        compiled(torch.ones(2), torch.ones(3))


# -- large batches kept by reference (state.Rows) ------------------------------------

BIG = BY_REFERENCE // 4  # float32 rows that make a batch large enough to be kept by reference


def test_link_equals_cat_of_every_batch_in_order_and_branches_stay_apart() -> None:
    g = torch.Generator().manual_seed(0)
    parts = [torch.rand(n, generator=g) for n in (3, BIG, 5, 7, BIG + 1, 2)]
    rows: torch.Tensor | Rows = torch.empty(0)
    prefixes = []
    for p in parts:
        rows = link(rows, p)
        prefixes.append(rows)
    assert isinstance(prefixes[1], Rows) and isinstance(prefixes[0], torch.Tensor)
    branch = link(prefixes[3], torch.full((4,), -1.0))  # a second child of the same chain
    for i, prefix in enumerate(prefixes):
        assert torch.equal(settle(prefix), torch.cat(parts[: i + 1]))
    assert torch.equal(settle(branch), torch.cat([*parts[:4], torch.full((4,), -1.0)]))
    assert settle(prefixes[-1]) is settle(prefixes[-1])  # copied in once


def test_a_large_batch_is_kept_by_reference_until_read() -> None:
    big = torch.rand(BIG)
    rows = link(torch.empty(0), big)
    assert isinstance(rows, Rows) and rows.chunks[0] is big
    view = torch.rand(2 * BIG)[:BIG]  # a view would keep its whole base alive: copied
    assert link(torch.empty(0), view).chunks[0] is not view  # type: ignore[union-attr]
    with torch.inference_mode():  # no version counter to watch: copied
        frozen = torch.rand(BIG)
    assert link(torch.empty(0), frozen).chunks[0] is not frozen  # type: ignore[union-attr]


def test_a_large_batch_changed_in_place_before_the_read_raises() -> None:
    scores, labels = torch.rand(BIG), torch.randint(0, 2, (BIG,))
    m = sm.classification.BinaryAUROC().update(scores, labels)
    scores.mul_(0.5)  # the user's buffer, reused
    with pytest.raises(RuntimeError, match="changed in place"):
        m.compute()
    copy = torch.rand(BIG)
    m = sm.classification.BinaryAUROC().update(copy, labels)
    value = m.compute()  # read once: copied in, so later changes cannot reach it
    copy.zero_()
    assert torch.equal(m.compute(), value)


def test_metrics_with_linked_rows_behave_like_tensors_everywhere() -> None:
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(1)
    batches = [(torch.rand(n, generator=g), torch.randint(0, 2, (n,), generator=g)) for n in (BIG, 10, BIG + 3)]
    m = sm.classification.BinaryAUROC()
    for s, t in batches:
        m = m.update(s, t)
    scores, labels = torch.cat([s for s, _ in batches]), torch.cat([t for _, t in batches])
    expected = roc_auc_score(labels.numpy(), scores.numpy())
    assert type(m.__dict__["preds"]) is Rows
    assert m.compute().item() == pytest.approx(expected, abs=1e-6)
    assert torch.equal(m.preds, scores) and m.target.dtype == torch.uint8
    fresh = sm.classification.BinaryAUROC().update(*batches[0])
    for restored in (
        pickle.loads(pickle.dumps(fresh)),
        sm.classification.BinaryAUROC().load_state_dict(fresh.state_dict()),
        fresh.merge(sm.classification.BinaryAUROC()),
        fresh.to(torch.float64),
    ):
        assert torch.allclose(restored.preds.double(), batches[0][0].double())
    halves = sm.simulate(lambda r: sm.classification.BinaryAUROC().update(*batches[r]).compute(), 2)
    two = [torch.cat([batches[0][i], batches[1][i]]).numpy() for i in (1, 0)]
    both = roc_auc_score(*two)
    assert all(v.item() == pytest.approx(both, abs=1e-6) for v in halves)


def test_metric_append_takes_cat_states_only() -> None:
    with pytest.raises(TypeError, match="'sum_value' is not a cat state"):
        sm.Sum().append(sum_value=torch.ones(1))
    m = sm.Cat().append(value=torch.ones(BIG))
    assert isinstance(m.value, torch.Tensor) and m.value.shape == (BIG,)
