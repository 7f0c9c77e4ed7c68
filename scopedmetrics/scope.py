"""Which reducer is in effect: a process-wide default and a stack of scoped blocks.

``set_reducer`` writes a module global. The open ``use_reducer`` blocks live in
a ``ContextVar`` holding an immutable tuple of entries, outermost first:
``__enter__`` pushes an entry, ``__exit__`` removes that entry by identity (a
generator closed out of order never takes newer blocks with it), and
``get_reducer()`` returns the innermost entry in effect, else the global, else
the built-in default. Being a ``ContextVar``, the stack is local to a thread
(a new thread starts empty) and to an asyncio task (a task starts with a copy
of its creator's); a forked child starts empty. However a block was opened (a
``with`` statement, ``ExitStack``, a ``@contextmanager`` or
``@asynccontextmanager`` helper, a class whose ``__enter__`` opens it, two
trainer hooks), the block opened last wins. Generators are the one exception,
settled once at ``__enter__``: a block opened inside a plain or async
generator (not a context-manager helper, whose block belongs to the code that
entered the helper) records that generator's frame, and lookups skip it while
the generator is suspended, which is an O(1) test (a suspended generator's
frame has ``f_back is None``); so it never leaks into the caller across
``yield``. A block the caller opens while such a generator is suspended is
recorded as opened outside it, and inside the resumed generator its own block
wins. The one order that cannot be told apart without walking frames, a
generator's block opened while another generator was suspended inside its
block with both of them running now, raises ``RuntimeError`` rather than pick
either.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import sys
import threading
from types import CodeType, FrameType, TracebackType
from typing import cast

from scopedmetrics.reducers import Reducer, default_reducer

_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR
_CONTEXTLIB = contextlib.__file__
# The frames that drive a @contextmanager / @asynccontextmanager helper's generator into its body.
_HELPER_ENTER: frozenset[CodeType] = frozenset(
    {
        contextlib._GeneratorContextManager.__enter__.__code__,
        contextlib._AsyncGeneratorContextManager.__aenter__.__code__,
    }
)
_MANAGER_ENTER = frozenset({"__enter__", "__aenter__"})
_forks = 0  # how many times this process has been forked into a child (counted in the child)


class _Entry:
    """One open ``use_reducer`` block.

    ``owner`` is the frame of the plain or async generator the block was
    opened in (``None`` otherwise); ``outside`` holds the generators' blocks
    that were suspended when this one opened, so it was opened outside them.
    """

    __slots__ = ("reducer", "owned", "owner", "outside", "open", "forks")

    def __init__(self, reducer: Reducer, opener: FrameType, stack: tuple[_Entry, ...]) -> None:
        owner = _owning_generator(opener)
        self.reducer = reducer
        self.owned = owner is not None
        self.owner = owner
        self.outside = tuple(e for e in stack if e.owned and _suspended(e))
        self.open = True
        self.forks = _forks

    def running_generator_inside(self) -> _Entry | None:
        """A generator's block opened before this one, whose generator runs now although this opened outside it."""
        for o in self.outside:
            if o.open and not _suspended(o):
                return o
        return None


def _suspended(e: _Entry) -> bool:
    """Whether ``e`` was opened by a generator that is not running now (suspended, or finished)."""
    return e.owner is None or e.owner.f_back is None


def _owning_generator(frame: FrameType) -> FrameType | None:
    """The plain or async generator frame whose ``yield`` would carry a block opened from ``frame``.

    Walked once, at ``__enter__``: through contextlib (``ExitStack.enter_context``),
    through class-based managers' ``__enter__`` / ``__aenter__`` to the code that
    entered them, and out of ``@contextmanager`` / ``@asynccontextmanager``
    helpers to the code that entered the helper, which the block is meant to scope.
    """
    while (back := frame.f_back) is not None:
        code = frame.f_code
        if code.co_filename == _CONTEXTLIB or code.co_name in _MANAGER_ENTER:
            frame = back
        elif code.co_flags & _SUSPENDABLE and back.f_code in _HELPER_ENTER:
            frame = back  # the helper's driver, in contextlib: skipped next round
        else:
            break
    return frame if frame.f_code.co_flags & _SUSPENDABLE else None


_STACK: contextvars.ContextVar[tuple[_Entry, ...]] = contextvars.ContextVar("scopedmetrics_reducers", default=())
_GLOBAL: Reducer | None = None
_LOCK = threading.Lock()


def _forget_scopes_in_child() -> None:
    """A forked child (a DataLoader worker, say) starts with no open blocks: they belong to the parent."""
    global _forks
    _forks += 1
    _STACK.set(())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_scopes_in_child)


def set_reducer(reducer: Reducer) -> None:
    """Set the process-wide default reducer (scoped overrides still win).

    Examples:
        >>> import scopedmetrics as sm
        >>> sm.set_reducer(sm.local()); sm.get_reducer() is not None
        True
        >>> sm.reset_reducer()
    """
    global _GLOBAL
    if not callable(reducer):
        raise TypeError(f"a reducer must be callable as reducer(tensor, op), got {reducer!r}")
    with _LOCK:
        _GLOBAL = reducer


def reset_reducer() -> None:
    """Forget ``set_reducer``: the built-in default applies again.

    Examples:
        >>> import scopedmetrics as sm
        >>> sm.set_reducer(lambda t, op: t); sm.reset_reducer()
        >>> sm.get_reducer()
        local()
    """
    global _GLOBAL
    with _LOCK:
        _GLOBAL = None


def get_reducer() -> Reducer:
    """The reducer in effect here and now: innermost open block, else global, else default.

    Blocks of suspended generators are skipped. Raises ``RuntimeError`` where
    two generators' blocks are open in an order that cannot be resolved
    without walking frames (see the module docstring).

    Examples:
        >>> import scopedmetrics as sm
        >>> r = sm.local()
        >>> with sm.use_reducer(r):
        ...     sm.get_reducer() is r
        True
    """
    stack = _STACK.get()
    for i in range(len(stack) - 1, -1, -1):
        e = stack[i]
        if e.owned and _suspended(e):
            continue  # a suspended generator's block: not in effect in its caller
        if e.outside and (inside := e.running_generator_inside()) is not None:
            if e.owned:
                raise RuntimeError(_ambiguous(e, inside))
            continue  # the caller's block, opened while this generator was suspended: its own block wins in it
        return e.reducer
    return _GLOBAL if _GLOBAL is not None else default_reducer()


def _ambiguous(e: _Entry, inside: _Entry) -> str:
    return (
        f"use_reducer: cannot tell which block is innermost here. A block ({e.reducer!r}) was opened inside "
        f"generator {_name(e)} while generator {_name(inside)} was suspended inside its own block "
        f"({inside.reducer!r}); both generators are running now, one resumed from the other. Open the block "
        "outside the generators, or open each generator's block only once the generator that drives it runs."
    )


def _name(e: _Entry) -> str:
    return f"{e.owner.f_code.co_name}()" if e.owner is not None else "(closed)"


class use_reducer:  # noqa: N801 - used as a context manager, named like one
    """Scope ``reducer`` to a block; the innermost open block wins, however it was opened.

    One object opens one block at a time: entering it while it is open raises
    ``RuntimeError`` (it may be entered again once closed). ``__exit__`` must
    run in the thread or asyncio task that ran ``__enter__``.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> m = sm.Sum().update(torch.tensor([1.0, 2.0]))
        >>> with sm.use_reducer(lambda t, op: t * 2):   # a stand-in "world" of two
        ...     m.compute()
        tensor(6.)

        Opened in one callback and closed in another (trainer hooks):

        >>> block = sm.use_reducer(lambda t, op: t * 3)
        >>> def on_validation_start(): block.__enter__()
        >>> def on_validation_end(): block.__exit__(None, None, None)
        >>> on_validation_start(); m.compute()
        tensor(9.)
        >>> on_validation_end(); m.compute()
        tensor(3.)
    """

    def __init__(self, reducer: Reducer) -> None:
        if not callable(reducer):
            raise TypeError(f"use_reducer expects a reducer(tensor, op) callable, got {reducer!r}")
        self._reducer = reducer
        self._entry: _Entry | None = None

    def __enter__(self) -> Reducer:
        if self._entry is not None:
            raise RuntimeError(f"{self!r} is already open; create a new use_reducer for another block")
        stack = _STACK.get()
        self._entry = entry = _Entry(self._reducer, sys._getframe(1), stack)
        _STACK.set((*stack, entry))
        return self._reducer

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entry = self._entry
        if entry is None:
            raise RuntimeError(f"{self!r} is not open: __exit__ without a matching __enter__")
        stack = _STACK.get()
        # Remove by identity rather than resetting a token: generators may close
        # their blocks out of order, and a token reset would drop newer blocks.
        kept = tuple(e for e in stack if e is not entry)
        if len(kept) == len(stack) and not entry.owned and entry.forks == _forks:
            # (A generator finalized elsewhere, by gc or an event loop's shutdown, or a
            # forked child leaving its parent's block, has nothing to remove here.)
            raise RuntimeError(
                f"{self!r} was entered in another thread, asyncio task or contextvars.Context than the one "
                "exiting it, and stays open where it was entered; exit it there."
            )
        self._entry = None
        entry.open = False
        entry.owner = None  # a closed block keeps no frame (and its locals) alive
        if len(kept) != len(stack):
            _STACK.set(kept)

    def __repr__(self) -> str:
        return f"use_reducer({self._reducer!r})"


def current_stack() -> tuple[Reducer, ...]:
    """The reducers of the blocks in effect here, outermost first (for debugging); the last is ``get_reducer()``.

    Blocks of suspended generators are left out. A block the caller opened
    while a generator was suspended inside its own block is listed before that
    block while the generator runs. Never raises.

    Examples:
        >>> import scopedmetrics as sm
        >>> from scopedmetrics.scope import current_stack
        >>> with sm.use_reducer(sm.local()):
        ...     current_stack()
        (local(),)
        >>> current_stack()
        ()
    """
    order: list[_Entry] = []
    for e in _STACK.get():
        if e.owned and _suspended(e):
            continue
        inside = e.running_generator_inside() if e.outside else None
        if inside is not None and inside in order:
            order.insert(order.index(inside), e)
        else:
            order.append(e)
    return tuple(e.reducer for e in order)


def subgroup(key: object) -> Reducer:
    """Split the reducer in scope: participants passing equal keys form a group (Comm_split).

    A collective call: every participant of the reducer in scope makes it.
    Nested splits divide the current group further; a group of one is ``local()``.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> def rank_fn(rank):
        ...     m = sm.Sum().update(torch.tensor([1.0]))
        ...     with sm.use_reducer(sm.subgroup(rank % 2)):
        ...         return m.compute()
        >>> sm.simulate(rank_fn, world_size=3)
        [tensor(2.), tensor(1.), tensor(2.)]
    """
    reducer = get_reducer()
    split = getattr(reducer, "split", None)
    if split is None:
        raise TypeError(
            f"subgroup: the reducer in scope ({reducer!r}) is a plain function and cannot be split; "
            "use sm.distributed(), sm.simulate() or sm.local()"
        )
    return cast(Reducer, split(key))
