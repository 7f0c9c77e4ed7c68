"""The wire format: many tensors of any dtype and shape as one byte buffer, and back.

Below ``reducers`` and ``sync`` (it imports neither), so the reduction pass and
the communicators share one packing without an import circle. Every dtype a
state may hold has a code; data is padded to 8 bytes, and a piece whose dtype
needs more alignment (``complex128``) is copied out rather than viewed.
"""

from __future__ import annotations

import torch

_DTYPES = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
)  # fmt: skip
_CODE = {d: i for i, d in enumerate(_DTYPES)}


def pack(tensors: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    """Tensors of any dtypes and shapes as one uint8 buffer: a header of dtype codes and shapes, then data.

    Example:
        >>> parts = unpack(pack([torch.tensor([1.5, 2.0]), torch.tensor([[True], [False]])], torch.device("cpu")))
        >>> [p.tolist() for p in parts]
        [[1.5, 2.0], [[True], [False]]]
    """
    meta: list[int] = []
    chunks = []
    for t in tensors:
        meta += [code(t.dtype), t.ndim, *t.shape]
        data = t.detach().contiguous().reshape(-1).view(torch.uint8).to(device)
        chunks.append(data)
        if data.numel() % 8:
            chunks.append(torch.zeros(8 - data.numel() % 8, dtype=torch.uint8, device=device))
    head = torch.tensor([len(meta), *meta], dtype=torch.int64).view(torch.uint8).to(device)
    return torch.cat([head, *chunks])


def unpack(buf: torch.Tensor) -> list[torch.Tensor]:
    """The tensors ``pack`` put in ``buf``, in order (views of it where alignment allows)."""
    out = []
    for dtype, shape, pos, nbytes in layout(buf):
        piece = buf[pos : pos + nbytes]
        if piece.storage_offset() % dtype.itemsize:  # complex128 needs 16-byte alignment; rows are 8-aligned
            piece = piece.clone()
        out.append(piece.view(dtype).reshape(shape))
    return out


def layout(buf: torch.Tensor) -> list[tuple[torch.dtype, list[int], int, int]]:
    """Where ``pack`` put each tensor in ``buf``: ``(dtype, shape, byte offset, bytes)``, in order."""
    n = int(buf[:8].cpu().view(torch.int64).item())
    meta = buf[8 : 8 * (n + 1)].cpu().view(torch.int64).tolist()
    pos, k, out = 8 * (n + 1), 0, []
    while k < len(meta):
        dtype, ndim = _DTYPES[meta[k]], meta[k + 1]
        shape = meta[k + 2 : k + 2 + ndim]
        k += 2 + ndim
        nbytes = torch.Size(shape).numel() * dtype.itemsize
        out.append((dtype, shape, pos, nbytes))
        pos += nbytes + (-nbytes) % 8
    return out


def code(dtype: torch.dtype) -> int:
    """The wire code of ``dtype`` (``TypeError`` for a dtype no state may hold)."""
    if dtype not in _CODE:
        raise TypeError(f"cannot carry a state of dtype {dtype}")
    return _CODE[dtype]


def dtype(code: int) -> torch.dtype:
    """The dtype of a wire ``code``."""
    return _DTYPES[code]
