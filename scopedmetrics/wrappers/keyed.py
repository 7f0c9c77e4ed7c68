"""``Sliced(metric, slices=None)``: slices named by keys discovered at run time (``KeyedSliced``).

Each rank discovers its own keys (language codes, tenant ids), so neither the
number of slices nor their order is known when the metric is built, and two
ranks hold different ones. The state therefore cannot be reduced leaf by leaf
(an ``all_reduce`` needs equal shapes on every rank): ``KeyedSliced`` merges its
whole state itself, and the library gathers it from every participant and folds
it with that ``merge`` in rank order.

The state is the fixed-size ``Sliced`` state of the keys seen so far, one row
per key, plus the keys themselves as tensors:

* ``counts`` (int64 ``(K,)``) and ``per_slice`` (the wrapped metric stacked,
  leaves ``(K, ...)``): exactly ``Sliced``'s, updated by the same
  ``fold_groups`` (vectorised hooks, else one ``update`` per key present);
* ``key_bytes`` (uint8) and ``key_lengths`` (int64 ``(K,)``): key ``k`` is the
  ``key_lengths[k]`` bytes after the previous keys', a tag (``s`` or ``i``)
  then the string's UTF-8 or the int's decimal digits.

Rows are in discovery order: a batch whose keys are all known is a dict lookup
per sample (a tensor of int keys: one ``searchsorted``) and one scatter, with
no Python work per key; a new key appends an identity row (the wrapped metric's
empty state), tensor work of the order of the update itself. ``merge`` aligns two states
by the union of their keys, sorted by ``(type name, key)``: each side's rows
are scattered into identity rows of the union, then the two stacked metrics
merge with the wrapped metric's own ops.

A key-to-row dict (and the sorted int keys with their rows) is cached on the
metric, valid while its key tensors are the same objects (rebuilt from them
after a reduction, a load, a pickle). Metrics that extend one another
share it, append-only, as ``state.append`` shares a ``cat`` buffer: the first
update that adds keys to a given prefix claims the dict's tail, a second (a
branch) copies the prefix. New keys then cost O(new keys) Python, not O(keys).
"""

from __future__ import annotations

import array
import sys
import threading
from typing import Any, TypeVar

import torch

from scopedmetrics import tree
from scopedmetrics.metric import Metric, check_compatible
from scopedmetrics.state import append, state
from scopedmetrics.wrappers._families import _renamed
from scopedmetrics.wrappers._groups import check_rows, check_template, fold_groups, group, stackable
from scopedmetrics.wrappers.sliced import Sliced, constructor_signature

KS = TypeVar("KS", bound="KeyedSliced")

_WHERE = "Sliced.update"
_ARG = "argument `slice_keys`"
_EXACT = frozenset((str, int))
_CACHE = "_key_index"  # (key_bytes, key_lengths, _KeyIndex, number of keys): valid while the key tensors are these
_INTS = "_int_keys"  # (key_bytes, key_lengths, sorted int64 keys, their rows): the lookup of tensor keys
_INT64 = range(-(2**63), 2**63)


def _order(key: str | int) -> tuple[bool, Any]:
    """The sort key of slice keys: by type name (ints before strings), then by value."""
    return (type(key) is str, key)


def _row_bytes(rows: range) -> list[bytes]:
    """Each row as the 8 bytes of an int64 here: a batch's rows are then one ``bytes.join``, read as a tensor."""
    return [i.to_bytes(8, sys.byteorder, signed=True) for i in rows]


class _KeyIndex:
    """Key to row (``ids``; ``packed``: its int64 bytes), append-only, shared by metrics whose keys prefix ``keys``."""

    __slots__ = ("ids", "keys", "lock", "packed")

    def __init__(self, keys: list[Any], ids: dict[Any, int] | None = None) -> None:
        self.keys = keys
        self.ids = {k: i for i, k in enumerate(keys)} if ids is None else ids
        self.packed = dict(zip(keys, _row_bytes(range(len(keys)))))
        self.lock = threading.Lock()

    def extended(self, n: int, new: list[Any]) -> _KeyIndex:
        """An index of ``keys[:n] + new``: this one, extended in place when the prefix ``n`` owns its tail."""
        with self.lock:
            if len(self.keys) == n:
                rows = range(n, n + len(new))
                self.packed.update(zip(new, _row_bytes(rows)))
                self.ids.update(zip(new, rows))
                self.keys.extend(new)
                return self
        return _KeyIndex(self.keys[:n] + new)


# -- keys as tensors -------------------------------------------------------------------------------


def _encode(keys: list[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """``keys`` (exact str or int) as bytes and lengths: a tag byte, then UTF-8 or decimal digits."""
    pieces = [b"i" + str(k).encode() if type(k) is int else b"s" + k.encode("utf-8", "surrogatepass") for k in keys]
    data = torch.frombuffer(bytearray(b"".join(pieces)), dtype=torch.uint8)
    return data, torch.tensor([len(p) for p in pieces], dtype=torch.long)


def _decode(data: torch.Tensor, lengths: torch.Tensor, where: str) -> list[Any]:
    """The keys ``_encode`` wrote, checked (a state from a checkpoint or another process is read here)."""
    sizes = lengths.long().tolist()  # (a metric cast with .to(dtype) casts these too)
    if any(n < 1 for n in sizes) or sum(sizes) != data.shape[0]:
        raise ValueError(f"{where}: key_lengths {sizes[:10]} do not cut key_bytes ({data.shape[0]} bytes) into keys")
    raw = bytes(data.cpu().to(torch.uint8).tolist())
    keys: list[Any] = []
    at = 0
    for n in sizes:
        tag, body = raw[at], raw[at + 1 : at + n]
        at += n
        try:
            if tag == ord("s"):
                keys.append(body.decode("utf-8", "surrogatepass"))
                continue
            if tag == ord("i") and body.decode("ascii") == str(int(body)):
                keys.append(int(body))
                continue
        except (UnicodeDecodeError, ValueError):
            pass
        raise ValueError(f"{where}: key_bytes hold {raw[at - n : at]!r}, not an encoded key")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{where}: key_bytes hold a key more than once")
    return keys


def _normalised(keys: list[Any] | tuple[Any, ...], kinds: set[type]) -> list[Any]:
    """``keys`` as exact ``str``/``int`` values, or a clear error for the first that is neither."""
    for kind in kinds:
        if kind in _EXACT:
            continue
        bad = next(k for k in keys if type(k) is kind)
        if issubclass(kind, bool):
            raise TypeError(f"{_WHERE}: {_ARG} must hold str or int keys, got a bool ({bad!r}), which would be the "
                            "same key as the int 1 or 0; pass int(key) or str(key)")
        if issubclass(kind, float):
            raise TypeError(f"{_WHERE}: {_ARG} must hold str or int keys, got a float ({bad!r}): float keys are "
                            "refused (NaN never equals itself, 1.0 equals 1); pass str or int keys")
        if not issubclass(kind, (str, int)):
            what = "an unhashable " if getattr(kind, "__hash__", None) is None else "a "
            raise TypeError(f"{_WHERE}: {_ARG} must hold str or int keys, got {what}{kind.__name__} ({bad!r})")
    return [k if type(k) in _EXACT else str.__str__(k) if isinstance(k, str) else int.__int__(k) for k in keys]


def _check_tensor_keys(keys: torch.Tensor) -> None:
    if keys.dtype == torch.bool or keys.is_floating_point() or keys.is_complex():
        raise TypeError(f"{_WHERE}: {_ARG} as a tensor must hold integer keys, got {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"{_WHERE}: {_ARG} must be 1-d (one key per sample), got shape {tuple(keys.shape)}")


# -- the metric --------------------------------------------------------------------------------------


class KeyedSliced(Sliced):
    """``Sliced(metric, slices=None)``: the wrapped metric per slice, slices named by keys found in the data.

    ``update(*args, slice_keys=keys, **kwargs)`` takes what the wrapped metric
    takes plus ``keys``, one key per sample over the batch's first dimension:
    a list or tuple of ``str`` or ``int`` (a language code, a tenant id), or a
    1-d integer tensor (its values are int keys). Each participant discovers
    its own keys; ``compute()`` returns ``{key: value}`` for every key some
    participant saw, ints before strings, each sorted, the same on every rank,
    and each value equals the metric computed in one process on that key's
    samples. ``merge`` aligns two such metrics by the union of their keys.

    The wrapped metric must reduce element-wise (``sum``/``max``/``min``/
    ``prod`` states: counts, sums, confusion matrices); ``cat`` states and
    whole-state merges need a fixed list of slices. Since ranks hold different
    keys, the state is gathered whole from every participant and merged in rank
    order: a reduction moves every rank's state to every rank (about ``P``
    times the bytes of ``Sliced(metric, n)``, which ``all_reduce``s). Prefer a
    fixed list when the slices are known in advance, when there are many of
    them (thousands, on many ranks) or when every rank sees most of them.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import Sliced
        >>> m = Sliced(sm.BinaryAccuracy())
        >>> m = m.update(torch.tensor([1, 0, 1, 1]), torch.tensor([1, 1, 1, 0]), slice_keys=["fr", "en", "en", "fr"])
        >>> m.compute()
        {'en': tensor(0.5000), 'fr': tensor(0.5000)}
        >>> m.update(torch.tensor([1]), torch.tensor([1]), slice_keys=[True])
        Traceback (most recent call last):
        ...
        TypeError: Sliced.update: argument `slice_keys` must hold str or int keys, got a bool (True), ...
    """

    counts: torch.Tensor = state(default=lambda: torch.zeros(0, dtype=torch.long))
    per_slice: Any = state(init=lambda m: _no_rows(m.metric))
    key_bytes: torch.Tensor = state(default=lambda: torch.zeros(0, dtype=torch.uint8))
    key_lengths: torch.Tensor = state(default=lambda: torch.zeros(0, dtype=torch.long))

    def __post_init__(self) -> None:
        check_template(self)
        if self.slices is not None:
            raise TypeError(f"KeyedSliced: argument `slices` must be None (keys found at run time), got "
                            f"{self.slices!r}; use Sliced(metric, slices) for fixed slices")
        if not stackable(self.metric):
            name = type(self.metric).__name__
            raise TypeError(
                f"Sliced(metric, slices=None): {name} has cat states or merges its whole state, and slices found "
                "at run time need every state to reduce element-wise (sum, max, min, prod) so that each rank's "
                f"rows can be aligned by key; name the slices instead: Sliced({name}(...), [names])"
            )

    # -- keys ---------------------------------------------------------------------------------------

    def _index(self, where: str = "KeyedSliced") -> tuple[_KeyIndex, int]:
        """The key-to-row index and the number of keys (decoded from the key tensors when not cached)."""
        cached = self.__dict__.get(_CACHE)
        if cached is not None and cached[0] is self.key_bytes and cached[1] is self.key_lengths:
            return cached[2], cached[3]
        keys = _decode(self.key_bytes, self.key_lengths, where)
        index = _KeyIndex(keys)
        self.__dict__[_CACHE] = (self.key_bytes, self.key_lengths, index, len(keys))
        return index, len(keys)

    def _keys(self) -> list[Any]:
        """The keys, in row order."""
        index, n = self._index()
        return index.keys[:n]

    def _int_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The int keys (int64, sorted) and their rows, on the state's device: how tensor keys are looked up."""
        cached = self.__dict__.get(_INTS)
        if cached is not None and cached[0] is self.key_bytes and cached[1] is self.key_lengths:
            return cached[2], cached[3]
        pairs = sorted((k, i) for i, k in enumerate(self._keys()) if type(k) is int and k in _INT64)
        device = self.counts.device
        keys = torch.tensor([k for k, _ in pairs], dtype=torch.long, device=device)
        rows = torch.tensor([i for _, i in pairs], dtype=torch.long, device=device)
        self.__dict__[_INTS] = (self.key_bytes, self.key_lengths, keys, rows)
        return keys, rows

    def _batch_rows(self, index: _KeyIndex, known: int, keys: Any) -> tuple[torch.Tensor, torch.Tensor, list[Any]]:
        """Each sample's row, the samples per row, and the keys new to this metric (their rows follow ``known``).

        A batch of known keys costs no Python work per key: a list is one dict lookup per sample and one
        ``bincount``, a tensor one ``searchsorted`` among the sorted int keys. A list's row at or past
        ``known`` belongs to a key that another metric sharing the index added: it shows as a longer
        ``bincount``, and such a batch, like one with new keys, takes the second pass.
        """
        device = self.counts.device
        if isinstance(keys, torch.Tensor):
            keys = keys.to(device, torch.long)
            fast = _known_tensor_rows(*self._int_rows(), keys)
            if fast is not None:
                return fast, torch.bincount(fast, minlength=known), []
            ids, new = _tensor_rows(index, known, keys)
        else:
            keys = _lookup_safe(keys)
            fast = _known_rows(index, keys)
            if fast is not None:
                fast = fast.to(device)
                sizes = torch.bincount(fast, minlength=known)
                if sizes.shape[0] == known:
                    return fast, sizes, []
            ids, new = _list_rows(index, known, _exact(keys))  # new keys are stored as exact str or int
        ids = ids.to(device)
        return ids, torch.bincount(ids, minlength=known + len(new)), new

    @property
    def names(self) -> tuple[Any, ...]:
        """The keys seen so far (by this participant, or by all once reduced), ints first, each sorted."""
        return tuple(sorted(self._keys(), key=_order))

    def __getstate__(self) -> dict[str, Any]:
        d = super().__getstate__()
        d.pop(_CACHE, None)  # a lock and a dict: rebuilt from the key tensors
        d.pop(_INTS, None)
        return d

    # -- the metric's methods -------------------------------------------------------------------------

    def update(self, *args: Any, slice_keys: Any = None, slice_ids: Any = None, **kwargs: Any) -> KeyedSliced:
        """Fold a batch in, each sample into the slice its key names (a new key opens a slice)."""
        if slice_ids is not None:
            raise TypeError(f"{_WHERE}: argument `slice_ids` indexes slices fixed when the metric is built; "
                            "Sliced(metric, slices=None) finds its slices at run time: pass slice_keys=[key, ...]")
        if isinstance(slice_keys, torch.Tensor):
            _check_tensor_keys(slice_keys)
        elif not isinstance(slice_keys, (list, tuple)):
            got = "nothing" if slice_keys is None else type(slice_keys).__name__
            raise TypeError(f"{_WHERE}: {_ARG} must be a list or tuple of str or int keys (one per sample) or a "
                            f"1-d integer tensor, got {got}")
        n = len(slice_keys)
        try:
            check_rows(self, n, "slice_keys", args, kwargs)
        except ValueError as err:
            raise _renamed(err, type(self).__name__, "Sliced") from None
        if n == 0:
            return self
        index, known = self._index()
        ids, sizes, new = self._batch_rows(index, known, slice_keys)
        total = known + len(new)
        per_slice, counts = self.per_slice, self.counts
        if new:
            per_slice = _grow(per_slice, self.metric, len(new))
            counts = torch.cat([counts, counts.new_zeros(len(new))])
        per_slice = fold_groups(self, per_slice, self.metric, ids, total, args, kwargs, sizes)
        if not new:
            return self.replace(counts=counts + sizes, per_slice=per_slice)
        data, lengths = _encode(new)
        out = self.replace(counts=counts + sizes, per_slice=per_slice,
                           key_bytes=append(self.key_bytes, data.to(self.key_bytes.device)),
                           key_lengths=append(self.key_lengths, lengths.to(self.key_lengths.device)))
        out.__dict__[_CACHE] = (out.key_bytes, out.key_lengths, index.extended(known, new), total)
        ints = self.__dict__.get(_INTS)
        if ints is not None and ints[0] is self.key_bytes and ints[1] is self.key_lengths:  # extend it, in tensors
            add = [(k, known + j) for j, k in enumerate(new) if type(k) is int and k in _INT64]
            out.__dict__[_INTS] = (out.key_bytes, out.key_lengths, *_with_ints(ints[2], ints[3], add))
        return out

    def merge(self: KS, other: KS) -> KS:
        """The union of both metrics' keys, sorted; each key's states merged with the wrapped metric's ops."""
        check_compatible(self, other)
        a, b = self._keys(), other._keys()
        if not b:
            return self
        if not a:
            return other
        if a == b:
            return self._rebuild({"counts": self.counts + other.counts.to(self.counts.device),
                                  "per_slice": self.per_slice.merge(_on(other.per_slice, self.counts.device))},
                                 reduced=self._reduced)
        union = sorted(set(a).union(b), key=_order)
        pos = {k: i for i, k in enumerate(union)}
        at_a, at_b = [pos[k] for k in a], [pos[k] for k in b]
        device = self.counts.device
        per_slice = _scatter(self.per_slice, self.metric, at_a, len(union), device).merge(
            _scatter(other.per_slice, self.metric, at_b, len(union), device))
        counts = torch.zeros(len(union), dtype=torch.long, device=device)
        counts[torch.tensor(at_a, device=device)] += self.counts
        counts[torch.tensor(at_b, device=device)] += other.counts.to(device)
        data, lengths = _encode(union)
        out = self._rebuild({"counts": counts, "per_slice": per_slice, "key_bytes": data.to(self.key_bytes.device),
                             "key_lengths": lengths.to(self.key_lengths.device)}, reduced=self._reduced)
        out.__dict__[_CACHE] = (out.key_bytes, out.key_lengths, _KeyIndex(union, pos), len(union))
        return out

    def compute(self) -> dict[Any, Any]:
        """``{key: value}`` of every key some participant saw, ints first, each sorted."""
        keys = self._keys()
        seen = self.counts.tolist()
        order = sorted(range(len(keys)), key=lambda i: _order(keys[i]))
        return {keys[i]: group(self.per_slice, i).compute() for i in order if seen[i]}

    def slice(self, name: Any) -> Metric:
        """The wrapped metric holding one key's state (reduced when this metric is).

        Examples:
            >>> import torch, scopedmetrics as sm
            >>> from scopedmetrics.wrappers import Sliced
            >>> m = Sliced(sm.Sum()).update(torch.tensor([1.0, 2.0, 4.0]), slice_keys=[7, "b", "b"])
            >>> m.slice("b").compute(), m.names
            (tensor(6.), (7, 'b'))
        """
        index, n = self._index()
        row = index.ids.get(name) if type(name) in _EXACT else None
        if row is None or row >= n:
            raise KeyError(f"Sliced: no slice with key {name!r}; the keys seen are {list(self.names)[:10]}")
        return group(self.per_slice, row)

    def load_state_dict(self: KS, state_dict: dict[str, torch.Tensor]) -> KS:
        """A metric holding ``state_dict``'s keys and states; refuses a state whose rows do not match its keys."""
        out = super().load_state_dict(state_dict)
        where = f"{type(self).__name__}.load_state_dict"
        n = out.key_lengths.shape[0]
        rows = {out.counts.shape[0], *(t.shape[0] for t in tree.leaves(out.per_slice))}
        if rows != {n}:
            raise ValueError(f"{where}: {n} keys but state rows {sorted(rows)}: the state and its keys do not match")
        out._index(where)  # decodes and checks the keys
        return out


KeyedSliced.__signature__ = constructor_signature(KeyedSliced)  # type: ignore[attr-defined]


def _lookup_safe(keys: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    """``keys``, when a dict lookup finds each the row it names; else normalised, or a clear error.

    A bool or a float would find the row of an equal int (``True == 1 == 1.0``), so types are checked
    before any lookup: a ``str.join`` proves a batch of strings in one pass (a subclass of ``str`` finds
    the row of the equal string, as it should), other batches check every key's type.
    """
    try:
        "".join(keys)
        return keys
    except TypeError:
        pass
    kinds = set(map(type, keys))
    return keys if kinds <= _EXACT else _normalised(keys, kinds)


def _exact(keys: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
    """``keys`` when every one is an exact ``str`` or ``int``; else normalised, or a clear error."""
    kinds = set(map(type, keys))
    return keys if kinds <= _EXACT else _normalised(keys, kinds)


def _known_rows(index: _KeyIndex, keys: list[Any] | tuple[Any, ...]) -> torch.Tensor | None:
    """Each key's row when every key is in the index, else ``None``: a dict lookup per sample, then one join.

    ``torch.tensor`` of a list of ints costs four times the lookups; the rows' bytes, joined, are read as
    int64 at once.
    """
    try:
        return torch.frombuffer(bytearray(b"".join(map(index.packed.__getitem__, keys))), dtype=torch.long)
    except KeyError:
        return None


def _list_rows(index: _KeyIndex, known: int, keys: list[Any] | tuple[Any, ...]) -> tuple[torch.Tensor, list[Any]]:
    """Each key's row, and the keys new to this metric in order of first appearance (rows from ``known`` on)."""
    new: dict[Any, int] = {}
    out = []
    get = index.ids.get
    for k in keys:
        i = get(k)
        if i is None or i >= known:
            i = new.get(k)
            if i is None:
                i = new[k] = known + len(new)
        out.append(i)
    return torch.tensor(out, dtype=torch.long), list(new)


def _known_tensor_rows(sorted_keys: torch.Tensor, rows: torch.Tensor, keys: torch.Tensor) -> torch.Tensor | None:
    """Each int key's row when every one is known (one ``searchsorted``), else ``None``."""
    if sorted_keys.numel() == 0:
        return None
    at = torch.searchsorted(sorted_keys, keys).clamp_(max=sorted_keys.numel() - 1)
    return rows[at] if torch.equal(sorted_keys[at], keys) else None


def _with_ints(sorted_keys: torch.Tensor, rows: torch.Tensor, add: list[tuple[int, int]]) -> tuple[Any, Any]:
    """The sorted int keys and their rows with ``add`` (key, row) pairs among them."""
    if not add:
        return sorted_keys, rows
    keys = torch.cat([sorted_keys, torch.tensor([k for k, _ in add], dtype=torch.long, device=sorted_keys.device)])
    order = torch.argsort(keys)
    rows = torch.cat([rows, torch.tensor([r for _, r in add], dtype=torch.long, device=rows.device)])
    return keys[order], rows[order]


def _tensor_rows(index: _KeyIndex, known: int, keys: torch.Tensor) -> tuple[torch.Tensor, list[Any]]:
    """``_list_rows`` for int keys in a tensor: one dict lookup per distinct key."""
    distinct, inverse = torch.unique(keys, return_inverse=True)
    new: list[Any] = []
    lut = array.array("q")
    get = index.ids.get
    for k in distinct.tolist():
        i = get(k)
        if i is None or i >= known:
            i = known + len(new)
            new.append(k)
        lut.append(i)
    return torch.frombuffer(lut, dtype=torch.long).to(inverse.device)[inverse], new


def _no_rows(template: Metric) -> Metric:
    """``template`` stacked zero times: leaves ``(0, ...)`` (made fresh: an expanded empty tensor has odd strides)."""
    return tree.map_tensors(lambda t: t.new_empty((0, *t.shape)), template)  # type: ignore[no-any-return]


def _on(groups: Any, device: torch.device) -> Any:
    return tree.map_tensors(lambda t: t if t.device == device else t.to(device), groups)


def _grow(groups: Metric, template: Metric, extra: int) -> Metric:
    """``groups`` followed by ``extra`` identity rows (the wrapped metric's empty state)."""
    leaves, spec = tree.flatten(groups)
    empty = tree.leaves(template)
    rows = [torch.cat([x, t.to(x.device, x.dtype).expand(extra, *t.shape)]) for x, t in zip(leaves, empty)]
    return tree.unflatten(spec, rows)  # type: ignore[no-any-return]


def _scatter(groups: Metric, template: Metric, at: list[int], size: int, device: torch.device) -> Metric:
    """``size`` rows holding ``groups``' row ``i`` at row ``at[i]`` and the identity (empty state) elsewhere."""
    leaves, spec = tree.flatten(groups)
    index = torch.tensor(at, dtype=torch.long, device=device)
    out = []
    for x, t in zip(leaves, tree.leaves(template)):
        rows = t.to(device, x.dtype).expand(size, *t.shape).clone()
        rows[index] = x.to(device)
        out.append(rows)
    return tree.unflatten(spec, out)  # type: ignore[no-any-return]
