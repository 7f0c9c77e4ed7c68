"""Metrics as modules: ``Stateful`` holds one immutable metric for code built around ``nn.Module``.

A ``Stateful`` is an attribute of a model like any submodule: its states move
and cast with the model, a model checkpoint carries them, and it works inside
``nn.ModuleDict`` and under ``copy.deepcopy``. The states are deliberately not
buffers: DDP broadcasts buffers from rank 0 before every forward, which would
overwrite each rank's own state with rank 0's, and ``Module.type`` casts every
buffer, counts included.

A checkpoint written by one process (Lightning's rank 0) can only hold what
that process has, so ``reduce_state_dict`` writes the *global* state into it
(a collective, at save time) and ``resume_state_dict`` hands that state to rank
0 alone on resume, every other rank starting empty. Since every reduce op is
associative with the empty state as identity, the resumed run's ``compute()``
equals the uninterrupted run's at any world size (counts to the bit, floating
sums up to the order of addition). Each ``Stateful`` saves whose samples its
states hold (``_extra_state``); a model always loads, but a ``Stateful`` that
loaded a state which would count samples twice or leave some out here (those
two calls forgotten) refuses to update or compute from it until ``reset()``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

import torch

from scopedmetrics import tree
from scopedmetrics.metric import Metric, _free_shape_leaves

M = TypeVar("M", bound=Metric)


class Stateful(torch.nn.Module, Generic[M]):
    """A ``torch.nn.Module`` holding one metric (or collection), updated in place.

    ``update`` folds a batch in and returns ``None``; calling the module (its
    ``forward``) also returns the batch's own value, as TorchMetrics'
    ``forward`` does; ``compute`` reduces with the reducer in scope.
    ``metric`` is the immutable metric it holds now. Moves and casts of the
    module apply to the states: floating ones widen but never narrow
    (``model.half()`` would leave sums counting in half precision,
    ``model.float()`` would undo float64 moments), counts are never cast;
    after ``to_empty`` (which leaves tensors uninitialized) call ``reset()``.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> s = Stateful(sm.Mean())
        >>> s(torch.tensor([1.0, 3.0]))          # this batch's value
        tensor(2.)
        >>> s.update(torch.tensor([8.0]))
        >>> s.compute(), dict(s.state_dict())
        (tensor(4.), {'_extra_state': tensor([0, 0, 1]), 'mean_value': tensor(12.), 'weight': tensor(3.)})
        >>> s.double().metric.weight.dtype        # floating states cast with the module
        torch.float64
    """

    def __init__(self, metric: M) -> None:
        super().__init__()
        if not isinstance(metric, Metric):
            raise TypeError(f"sm.Stateful holds one sm.Metric (or sm.Collection), got {type(metric).__name__}")
        if metric._reduced:
            raise ValueError(
                f"sm.Stateful({type(metric).__name__}): this metric is reduced (it holds every participant's "
                "state) and cannot be updated; wrap the unreduced metric"
            )
        self._metric = metric
        self._doubt: tuple[torch.Tensor, str] | None = None  # the mark and the reason of a state not to use
        self._held: tuple[torch.Tensor, str, tuple[int | None, int | None]] | None = None  # a loaded state's mark

    @property
    def metric(self) -> M:
        """The immutable metric held now (the module's state); refused while it holds a doubted checkpoint's state."""
        self._usable()
        return self._metric

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Fold one batch in, in place (``metric.update``, ``mask=`` included)."""
        self._usable()
        self._metric = self._metric.update(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Fold one batch in and return that batch's own value, computed locally (``Metric.forward``)."""
        self._usable()
        self._metric, value = self._metric.forward(*args, **kwargs)
        return value

    def compute(self) -> Any:
        """The value, reduced with the reducer in scope: a collective call outside ``sm.local()``."""
        self._usable()
        return self._metric.compute()

    def reset(self) -> None:
        """Back to the empty state, each state on the device and in the floating dtype it had."""
        self._metric = _placed(self._metric.reset(), self._metric)
        self._doubt = self._held = None

    def _usable(self) -> None:
        """Refuse to go on from a loaded state that would count samples twice or leave some out (``_refusal``).

        A loaded state is checked where it is loaded and again wherever it is used under
        another participant: a checkpoint loaded before ``init_process_group`` (Lightning's
        ``load_from_checkpoint`` in a DDP script) is loaded in a world of one.
        """
        d = self.__dict__
        doubt = d.get("_doubt")
        if doubt is None and d.get("_held") is not None:
            mark, name, checked = d["_held"]
            here = _participant()
            if here != checked:
                problem = _refusal(mark, here)
                self._held = (mark, name, here)
                if problem is not None:
                    doubt = self._doubt = (mark, f"{name}: {problem}")
        if doubt is not None:
            raise RuntimeError(doubt[1])

    def __getattr__(self, name: str) -> Any:
        """A module attribute, else the state at a ``state_dict`` key (``"count"``) or its first components.

        ``torch.distributed.checkpoint.state_dict`` (FSDP2's and DCP's
        ``get_model_state_dict``) walks every key of a model's state dict by
        ``getattr``, one dotted component at a time: ``s.stats.tp`` must
        resolve where ``"stats.tp"`` is one of this module's keys.
        """
        try:
            return super().__getattr__(name)
        except AttributeError:
            if "_metric" not in self.__dict__:
                raise
            paths, leaves, _ = tree.flatten_with_path(self.__dict__["_metric"])  # the leaves as held: no copies
            found = _StatePath(dict(zip(paths, leaves))).get(name)
            if found is None:
                raise
            return found

    def get_extra_state(self) -> torch.Tensor:
        """Whose samples the states hold, saved as ``_extra_state``: this participant's own, of a world of ``size``.

        An int64 tensor ``[kind, rank, size]`` (``_mark``), so a checkpoint stays
        tensors only (``weights_only``, safetensors, DCP). ``reduce_state_dict``
        marks the global state instead and ``resume_state_dict`` a share to
        resume from. A state loaded where it would count samples twice or
        leave some out (``_refusal``) keeps the mark it came with, and this
        module refuses to update or compute from it until ``reset()``.
        """
        doubt = self.__dict__.get("_doubt")
        return doubt[0].clone() if doubt is not None else _mark("rank", *_participant())

    def set_extra_state(self, state: Any) -> None:
        """Nothing to set: ``_load_from_state_dict`` reads the mark before it loads any state."""

    def extra_repr(self) -> str:
        """The metric, as its own ``repr`` shows it."""
        return repr(self._metric)

    # -- the module protocol ------------------------------------------------

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> Stateful[M]:
        # Every move and cast of the module (to, cuda, double, half, type, to_empty, ...) lands here.
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # torch leaves Module._apply untyped
        self._metric = tree.map_tensors(lambda t: _kind_kept(fn, t), self._metric)
        return self

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        live = {id(t) for t in tree.leaves(self._metric)}  # state_dict copies the rows of a growing buffer itself
        for key, value in self._metric.state_dict().items():
            # a copy: torch.distributed.checkpoint loads into these tensors in place, and a state tensor may be
            # shared with other metrics (a nested metric's default serves every fresh instance); no autograd history
            destination[prefix + key] = value.clone() if id(value) in live else value

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        before = len(unexpected_keys)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        marker = prefix + _HOLDS
        if marker not in state_dict and marker in missing_keys:
            missing_keys.remove(marker)  # a checkpoint from before the mark: nothing to check it by
        keys = list(self._metric.state_dict())
        missing = [prefix + k for k in keys if prefix + k not in state_dict]
        if missing:  # a state loads whole or not at all; strict=False keeps the current one
            missing_keys.extend(missing)
            return  # and the keys it holds stay in unexpected_keys: they were not loaded either
        ours = {prefix + k for k in keys}
        unexpected_keys[before:] = [k for k in unexpected_keys[before:] if k not in ours]  # not params: ours
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        loaded = {k: state_dict[prefix + k] for k in keys}
        try:
            metric = _loaded(self._metric, loaded, assign)
        except (TypeError, ValueError) as err:
            error_msgs.append(f"{prefix[:-1]}: {err}" if prefix else str(err))
            return
        held = state_dict.get(marker)
        self._metric = metric
        # the model loads (its weights are wanted), and a reset empties the state: only using it is refused
        self._doubt = self._held = None
        if isinstance(held, torch.Tensor) and not metric._is_empty():  # empty: nothing to count twice
            here, name = _participant(), prefix[:-1] or "sm.Stateful"
            problem = _refusal(held, here)
            if problem is not None:
                self._doubt = (held.clone(), f"{name}: {problem}")
            else:
                self._held = (held.clone(), name, here)  # checked again where it is used (``_usable``)


class _StatePath:
    """The states under one dotted prefix of a ``state_dict``, reachable by ``getattr`` one component at a time."""

    def __init__(self, state: Mapping[str, torch.Tensor]) -> None:
        self._state = state

    def get(self, name: str) -> torch.Tensor | _StatePath | None:
        """The state at key ``name``, the states under ``name.``, or ``None`` where no key starts so."""
        if name in self._state:
            return self._state[name]
        head = name + "."
        below = {k[len(head):]: v for k, v in self._state.items() if k.startswith(head)}
        return _StatePath(below) if below else None

    def __getattr__(self, name: str) -> torch.Tensor | _StatePath:
        found = None if name == "_state" or name.startswith("__") else self.get(name)
        if found is None:
            raise AttributeError(f"no metric state at {name!r}; the keys here are {sorted(self._state)}")
        return found


_HOLDS = "_extra_state"  # the key of a Stateful's mark of whose samples its states hold (Module.get_extra_state)


def _participant() -> tuple[int | None, int | None]:
    """``(rank, size)`` of this participant under the reducer in scope (``None`` for a reducer without them)."""
    from scopedmetrics.scope import get_reducer

    reducer = get_reducer()
    return getattr(reducer, "rank", None), getattr(reducer, "size", None)


_KINDS = ("rank", "all", "share")


def _mark(kind: str, rank: int | None, size: int | None) -> torch.Tensor:
    """``[kind, rank, size]`` as int64 (-1 where unknown): whose samples a checkpoint's states hold."""
    return torch.tensor([_KINDS.index(kind), -1 if rank is None else rank, -1 if size is None else size])


def _read_mark(held: Any) -> tuple[str | None, int | None, int | None]:
    """``(kind, rank, size)`` of a mark; ``(None, None, None)`` for none, or for anything that is not one."""
    if not isinstance(held, torch.Tensor) or held.shape != (3,) or held.is_floating_point() or held.is_complex():
        return None, None, None
    kind, rank, size = (int(v) for v in held.tolist())
    if not 0 <= kind < len(_KINDS):
        return None, None, None
    return _KINDS[kind], None if rank < 0 else rank, None if size < 0 else size


def _refusal(held: Any, here: tuple[int | None, int | None]) -> str | None:
    """Why states marked ``held`` must not load on the participant ``here``, or ``None``.

    In a world of one process every state loads (a rank's own state alone
    warns: its value covers only that rank's samples). In a world of many, a
    participant loads its own state of a world of the same size, or a share
    made by ``resume_state_dict``; a global state or one process's state would
    count its samples once per participant, another rank's state would count
    that rank twice and lose this one's. A reducer that does not say its rank
    and size, or a checkpoint without the mark, is not checked.
    """
    rank, size = here
    kind, was_rank, was_size = _read_mark(held)
    if kind in (None, "share") or size is None:
        return None
    if kind == "rank" and (was_size is None or (was_size, was_rank) == (size, rank)):
        return None  # saved under a reducer without a rank, or this participant's own
    if size == 1:
        if kind == "rank" and was_size is not None and was_size > 1:
            warnings.warn(
                f"sm.Stateful: loading rank {was_rank}'s own state of a world of {was_size} into one process: "
                "its value covers that rank's samples only (save with sm.nn.reduce_state_dict for all of them)",
                UserWarning, stacklevel=5,
            )
        return None
    if kind == "all" or was_size == 1:
        what = "the global state" if kind == "all" else "the state of one process"
        fix = ("call sm.nn.resume_state_dict(model, state_dict) before loading (or load under "
               "sm.use_reducer(sm.local()) to use it in this process alone)")
    else:
        what = f"rank {was_rank}'s own state of a world of {was_size}"
        fix = "save with sm.nn.reduce_state_dict on every rank, then resume with sm.nn.resume_state_dict"
    return (f"the checkpoint loaded here holds {what}; on rank {rank} of {size} its samples would count twice "
            f"or be left out: {fix}, or reset() this module to start it empty")


def _kind_kept(fn: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor) -> torch.Tensor:
    """``fn(t)``, except that a module cast never changes a count and never narrows a float state.

    ``Module.type(torch.float16)`` casts every tensor it is given: integer and
    bool states only move, as a cast through float16 would round a count of
    3,001 to 3,000. ``model.half()`` or ``model.to(torch.bfloat16)``
    (Lightning's ``"16-true"`` and ``"bf16-true"``) would leave a float state
    accumulating in half precision, where sums stop counting without an error
    (10,000 ones sum to 9,936 in float16), and ``model.float()`` would undo the
    float64 a metric keeps on purpose (Pearson's moments of data near 1e6 gave
    0 for 0.69): a float state only moves unless the cast widens it
    (``model.double()``). What ``fn`` does is read from an empty tensor first,
    so no value is ever rounded on the way.
    """
    probe = fn(t.new_empty(0))
    if probe.dtype == t.dtype:
        return fn(t)
    floats = (t.is_floating_point() or t.is_complex()) and (probe.is_floating_point() or probe.is_complex())
    if floats and torch.promote_types(t.dtype, probe.dtype) == probe.dtype:
        return fn(t)  # a widening cast
    return t.to(probe.device)


def _placed(fresh: M, like: M) -> M:
    """``fresh`` with each state on the device, and in the floating dtype, of ``like``'s state at its path."""
    have = dict(zip(*tree.flatten_with_path(like)[:2]))
    anchor = next(iter(have.values()), None)
    paths, leaves, spec = tree.flatten_with_path(fresh)
    out = []
    for path, t in zip(paths, leaves):
        ref = have.get(path, anchor)
        if ref is not None:
            dtype = ref.dtype if t.is_floating_point() and ref.is_floating_point() else t.dtype
            t = t.to(device=ref.device, dtype=dtype)
        out.append(t)
    return tree.unflatten(spec, out)  # type: ignore[no-any-return]


def _loaded(current: M, state: dict[str, torch.Tensor], assign: bool) -> M:
    """``current.load_state_dict(state)`` as a module loads: floats cast to the module's dtype, unless assigned.

    Torch copies a checkpoint's tensor into the parameter's dtype and device;
    ``assign=True`` (meta-device initialization) takes the checkpoint's tensors
    as they are. Rows of ``cat`` states are never narrowed: float64 scores
    saved from an exact curve stay float64 in a float32 module (rounded, they
    would tie), and rows loaded into empty ones keep their dtype, as the first
    append gives its own (float16 rows came back float32, and a resumed world
    then disagreed on the rows' dtype). Integer and bool states are left to
    ``Metric.load_state_dict``, which refuses a wrong dtype.
    """
    paths, leaves, spec = tree.flatten_with_path(current)
    if assign:
        leaves = [
            torch.empty_like(old, device=state[p].device) if isinstance(state[p], torch.Tensor) else old
            for p, old in zip(paths, leaves)
        ]
        current = tree.unflatten(spec, leaves)
    else:
        state = dict(state)
        for p, old, rows in zip(paths, leaves, _free_shape_leaves(current)):
            t = state[p]
            if isinstance(t, torch.Tensor) and t.is_floating_point() and old.is_floating_point():
                if not rows:
                    state[p] = t.to(old.dtype)
                elif old.shape[0]:  # rows join rows: as append widens, never narrows
                    state[p] = t.to(torch.promote_types(t.dtype, old.dtype))
    return current.load_state_dict(state)


# -- checkpoints written by one process -------------------------------------------


def _statefuls(module: torch.nn.Module) -> Iterator[tuple[str, Stateful[Any]]]:
    """``(key prefix, module)`` of every ``Stateful`` in ``module``, itself included."""
    for name, sub in module.named_modules():
        if isinstance(sub, Stateful):
            yield (f"{name}." if name else ""), sub


def reduce_state_dict(module: torch.nn.Module, state_dict: MutableMapping[str, Any]) -> None:
    """Write the global state of every ``Stateful`` in ``module`` into ``state_dict``, in place.

    A collective call (one bucketed reduction for all of them, with the reducer
    in scope): every participant makes it, typically in the hook that builds the
    checkpoint (Lightning's ``on_save_checkpoint``, which every rank runs), and
    any one of them may then write the file. Pair it with ``resume_state_dict``
    on load. The metrics themselves are unchanged.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> def rank_fn(rank):
        ...     model = torch.nn.ModuleDict({"loss": Stateful(sm.Sum().update(torch.tensor(rank + 1.0)))})
        ...     checkpoint = model.state_dict()          # this rank's own state: 1 on rank 0, 2 on rank 1
        ...     reduce_state_dict(model, checkpoint)     # every rank calls it
        ...     return checkpoint["loss.sum_value"], model["loss"].metric.sum_value
        >>> sm.simulate(rank_fn, world_size=2)
        [(tensor(3.), tensor(1.)), (tensor(3.), tensor(2.))]
    """
    from scopedmetrics.collection import reduce

    found = dict(_statefuls(module))
    reduced = reduce({prefix: s.metric for prefix, s in found.items()})
    size = _participant()[1]
    for prefix, m in reduced.items():
        state_dict.update({prefix + k: v for k, v in m.state_dict().items()})
        state_dict[prefix + _HOLDS] = _mark("all", None, size)


def resume_state_dict(module: torch.nn.Module, state_dict: MutableMapping[str, Any], rank: int | None = None) -> None:
    """Prepare a checkpoint of global states (``reduce_state_dict``) for loading here, in place.

    Rank 0 keeps the global states; on every other rank the ``Stateful``
    entries become empty states, so that after ``module.load_state_dict`` every
    saved sample is counted once across the participants, whatever their
    number. ``rank`` defaults to this participant's rank under the reducer in
    scope (``sm.local()``: 0, a single process resumes the whole state). No
    communication.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> saved = Stateful(sm.Sum().update(torch.tensor(5.0))).state_dict()
        >>> fresh = Stateful(sm.Sum())
        >>> resume_state_dict(fresh, saved, rank=1)
        >>> fresh.load_state_dict(saved)
        <All keys matched successfully>
        >>> fresh.metric.sum_value
        tensor(0.)
    """
    if rank is None:
        from scopedmetrics.scope import get_reducer

        reducer = get_reducer()
        rank = getattr(reducer, "rank", None)
        if rank is None:
            raise TypeError(
                f"sm.nn.resume_state_dict: the reducer in scope ({reducer!r}) does not say this participant's rank; "
                "pass rank= explicitly"
            )
    for prefix, s in _statefuls(module):
        if not all(prefix + k in state_dict for k in s._metric.state_dict()):
            continue  # not (wholly) in the checkpoint: refused alike on every rank by load_state_dict, not emptied
        kind, was_rank, was_size = _read_mark(state_dict.get(prefix + _HOLDS))
        if kind == "rank" and (was_size or 1) > 1:
            raise ValueError(
                f"sm.nn.resume_state_dict: {prefix[:-1] or 'the Stateful'} holds rank {was_rank}'s own state of a "
                f"world of {was_size}, not the global one; save with reduce_state_dict (every rank, before the "
                "checkpoint is written) to resume at any world size"
            )
        if rank != 0:
            empty = _placed(s._metric.reset(), s._metric)
            state_dict.update({prefix + k: v for k, v in empty.state_dict().items()})
        state_dict[prefix + _HOLDS] = _mark("share", None, None)


def size_state_dict(module: torch.nn.Module, state_dict: MutableMapping[str, Any], metadata: Any, prefix: str = ""
                    ) -> None:
    """The ``cat`` states of every ``Stateful`` in ``state_dict`` given the length and dtype a checkpoint holds.

    ``torch.distributed.checkpoint.load`` fills the tensors of the state dict it
    is given and refuses one whose size differs from the saved one, but a fresh
    model's ``cat`` states are empty. Call this between ``get_model_state_dict``
    and ``dcp.load``. ``metadata`` is the checkpoint's (``reader.read_metadata()``;
    a mapping of key to saved tensor works too) and ``prefix`` the key of the
    model's state dict inside the dict that was saved (``"model."`` for
    ``dcp.save({"model": ...})``). Fixed-size states are left as they are, so a
    configuration that differs from the saved one is still refused. No
    communication.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> saved = Stateful(sm.Cat()).state_dict()
        >>> saved["value"] = torch.arange(3.0)        # what a checkpoint holds
        >>> fresh = Stateful(sm.Cat())
        >>> current = fresh.state_dict()
        >>> size_state_dict(fresh, current, saved)
        >>> current["value"].shape
        torch.Size([3])
    """
    found = getattr(metadata, "state_dict_metadata", metadata)
    for key_prefix, s in _statefuls(module):
        for key, rows in zip(s._metric.state_dict(), _free_shape_leaves(s._metric)):
            saved = found.get(prefix + key_prefix + key) if rows else None
            # a tensor, or torch.distributed.checkpoint's TensorStorageMetadata (size, properties.dtype)
            size: Any = saved.shape if isinstance(saved, torch.Tensor) else getattr(saved, "size", None)
            dtype: Any = getattr(saved, "dtype", None) or getattr(getattr(saved, "properties", None), "dtype", None)
            if isinstance(size, torch.Size) and isinstance(dtype, torch.dtype):
                old = state_dict[key_prefix + key]
                state_dict[key_prefix + key] = torch.empty(size, dtype=dtype, device=old.device)
