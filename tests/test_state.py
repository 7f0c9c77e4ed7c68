"""State declarations, identities, and the amortized growth of cat states."""

from __future__ import annotations

import io
import pickle
import threading

import pytest
import torch

import scopedmetrics as sm
from scopedmetrics.state import append, combine, identity


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


@pytest.mark.parametrize("inference", [False, True], ids=["plain", "inference_mode"])
def test_append_is_amortized(inference: bool) -> None:
    # inference tensors track no views (no _base): under torch.inference_mode, Lightning's default for
    # validation and test, every append used to copy the whole state
    rows = torch.empty(0)
    buffers = set()
    with torch.inference_mode(inference):
        for _ in range(1000):
            rows = append(rows, torch.ones(10))
            buffers.add(rows.untyped_storage().data_ptr())
    assert rows.numel() == 10_000
    assert len(buffers) < 20  # grows geometrically, not a copy per append


def test_append_across_inference_mode_keeps_branches_and_copies_what_it_cannot_write() -> None:
    with torch.inference_mode():
        a = append(torch.empty(0), torch.tensor([1.0, 2.0]))
        b = append(a, torch.tensor([3.0]))
        c = append(a, torch.tensor([9.0]))  # a branch from the same prefix must copy there too
    d = append(b, torch.tensor([4.0]))  # outside: the inference buffer cannot be written, so d is a copy
    assert not d.is_inference()
    assert (a.tolist(), b.tolist(), c.tolist(), d.tolist()) == ([1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0, 9.0],
                                                                   [1.0, 2.0, 3.0, 4.0])


def test_a_wider_batch_widens_the_rows_as_torch_cat_promotes() -> None:
    # rows kept their first batch's dtype: 0.5 after integer rows was written as 0, float64 after float32 rounded
    ints = append(torch.empty(0, dtype=torch.int64), torch.tensor([1, 2]))
    widened = append(ints, torch.tensor([0.5]))
    assert widened.dtype == torch.float32 and widened.tolist() == [1.0, 2.0, 0.5]
    close = torch.tensor([0.3, 0.30000001], dtype=torch.float64)
    rows = append(append(torch.empty(0), torch.tensor([0.25])), close)
    assert rows.dtype == torch.float64 and torch.equal(rows[1:], close)
    narrow = append(rows, torch.tensor([1.5], dtype=torch.float16))  # a narrower batch is cast up
    assert narrow.dtype == torch.float64 and narrow.tolist()[-1] == 1.5
    assert ints.tolist() == [1, 2] and ints.dtype == torch.int64  # and what was there is left as it was


def test_cast_keeps_the_rows_dtype_in_the_copy_itself() -> None:
    # 0/1 labels kept as uint8: the batch's int64, bool or whole-number floats are converted as .to would
    empty = torch.empty(0, dtype=torch.uint8)
    rows = append(empty, torch.tensor([1, 0]), cast=True)
    rows = append(rows, torch.tensor([True]), cast=True)
    rows = append(rows, torch.tensor([0.0, 1.0]), cast=True)
    branch = append(rows[:2], torch.tensor([1]), cast=True)  # a branch copies, still in uint8
    assert rows.dtype == branch.dtype == torch.uint8
    assert rows.tolist() == [1, 0, 1, 0, 1] and branch.tolist() == [1, 0, 1]
    assert append(rows, torch.tensor([1])).dtype == torch.int64  # without cast a wider batch widens


def test_binary_curve_labels_stay_uint8_whatever_the_target_dtype() -> None:
    scores = torch.tensor([[0.1, 0.8], [0.6, 0.3], [0.2, 0.7]])
    m = sm.classification.BinaryAUROC()
    for s, target in zip(scores, (torch.tensor([0, 1]), torch.tensor([True, False]), torch.tensor([1.0, 0.0]))):
        m = m.update(s, target)
    assert m.target.dtype == torch.uint8 and m.target.tolist() == [0, 1, 1, 0, 1, 0]
    assert m.compute().item() == pytest.approx(6 / 9)  # 6 of the 9 (positive, negative) pairs in order


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


# -- what update was given is what the state keeps -------------------------------------

BIG = 1 << 16  # float32 rows: a batch of 256 KiB


@pytest.mark.parametrize("reuse", ["in_place", "from_numpy", "data"])
def test_a_reused_buffer_never_changes_the_state(reuse: str) -> None:
    """A caller refilling its input buffer (with or without torch's version counter) cannot reach the state."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    host = rng.random(BIG).astype(np.float32)
    scores = torch.from_numpy(host) if reuse == "from_numpy" else torch.tensor(host)
    labels = torch.from_numpy(rng.integers(0, 2, BIG))
    m = sm.classification.BinaryAUROC().update(scores, labels)
    expected = roc_auc_score(labels.numpy(), host.copy())
    if reuse == "from_numpy":
        host[:] = rng.random(BIG)  # no version bump: torch cannot see this write
    elif reuse == "data":
        scores.data.mul_(0.5)  # .data bypasses the version counter too
    else:
        scores.mul_(0.5)
    assert m.compute().item() == pytest.approx(expected, abs=1e-6)
    before = m.__dict__["preds"]
    m.compute()
    assert m.__dict__["preds"] is before  # a read never rewrites the metric it reads


def test_metric_append_takes_cat_states_only() -> None:
    with pytest.raises(TypeError, match="'sum_value' is not a cat state"):
        sm.Sum().append(sum_value=torch.ones(1))
    m = sm.Cat().append(value=torch.ones(BIG))
    assert isinstance(m.value, torch.Tensor) and m.value.shape == (BIG,)
