"""Which reducer is in effect: a process-wide default and a scoped stack.

``set_reducer`` writes a module global; ``use_reducer`` pushes onto a
``ContextVar`` holding an immutable tuple, so scopes are local to a thread and
an asyncio task. A block opened inside a generator is ignored while that
generator is suspended, so it never leaks into the caller across ``yield``.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import sys
import threading
from types import FrameType, TracebackType
from typing import Any, cast

from scopedmetrics.reducers import Reducer, default_reducer

_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR
_CM_ENTER = contextlib._GeneratorContextManager.__enter__.__code__
_CONTEXTLIB = contextlib.__file__
_FAR = 1 << 30  # depth given to blocks whose opening frame has returned (manual __enter__)


class _Entry:
    """One open ``use_reducer`` block: the reducer and the frame that opened it."""

    __slots__ = ("reducer", "frame", "suspendable")

    def __init__(self, reducer: Reducer, frame: FrameType) -> None:
        # A block entered through contextlib (ExitStack.enter_context) belongs to
        # the code that called it; one opened inside a @contextmanager generator
        # belongs to the code that entered that manager, which it is meant to scope.
        while (back := frame.f_back) is not None:
            if frame.f_code.co_filename == _CONTEXTLIB:
                frame = back
            elif frame.f_code.co_flags & _SUSPENDABLE and back.f_code is _CM_ENTER and back.f_back is not None:
                frame = back.f_back
            else:
                break
        self.reducer = reducer
        self.frame = frame
        self.suspendable = bool(frame.f_code.co_flags & _SUSPENDABLE)


_STACK: contextvars.ContextVar[tuple[_Entry, ...]] = contextvars.ContextVar("scopedmetrics_reducers", default=())
_GLOBAL: Reducer | None = None
_LOCK = threading.Lock()


def _forget_scopes_in_child() -> None:
    """A forked child (a DataLoader worker, say) starts with no open blocks: they belong to the parent."""
    _STACK.set(())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_scopes_in_child)


def set_reducer(reducer: Reducer) -> None:
    """Set the process-wide default reducer (scoped overrides still win).

    Example:
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

    Example:
        >>> import scopedmetrics as sm
        >>> sm.set_reducer(lambda t, op: t); sm.reset_reducer()
        >>> sm.get_reducer()
        local()
    """
    global _GLOBAL
    with _LOCK:
        _GLOBAL = None


def get_reducer() -> Reducer:
    """The reducer in effect here and now: innermost scope, else global, else default.

    Example:
        >>> import scopedmetrics as sm
        >>> r = sm.local()
        >>> with sm.use_reducer(r):
        ...     sm.get_reducer() is r
        True
    """
    stack = _STACK.get()
    if not stack:
        return _GLOBAL if _GLOBAL is not None else default_reducer()
    if len(stack) == 1 and not stack[0].suspendable:
        return stack[0].reducer
    return _innermost(stack, sys._getframe(1))


def _innermost(stack: tuple[_Entry, ...], here: FrameType) -> Reducer:
    """The block whose opening frame is nearest on the call stack; later wins ties.

    A block opened in a generator applies only while that generator runs, so
    it never leaks into the caller across ``yield``.
    """
    frames = {id(e.frame) for e in stack}
    depth: dict[int, int] = {}
    f: FrameType | None = here
    d = 0
    while f is not None:
        if id(f) in frames:
            depth.setdefault(id(f), d)
        f, d = f.f_back, d + 1
    best: tuple[int, int] | None = None
    chosen: Reducer | None = None
    for i, e in enumerate(stack):
        at = depth.get(id(e.frame))
        if at is None:
            if e.suspendable:
                continue  # a suspended generator's block
            at = _FAR
        if best is None or (at, -i) < best:
            best, chosen = (at, -i), e.reducer
    if chosen is None:
        return _GLOBAL if _GLOBAL is not None else default_reducer()
    return chosen


class use_reducer:  # noqa: N801 - used as a context manager, named like one
    """Scope ``reducer`` to a ``with`` block; the innermost block wins.

    Example:
        >>> import scopedmetrics as sm, torch
        >>> m = sm.Sum().update(torch.tensor([1.0, 2.0]))
        >>> with sm.use_reducer(lambda t, op: t * 2):   # a stand-in "world" of two
        ...     m.compute()
        tensor(6.)
    """

    def __init__(self, reducer: Reducer) -> None:
        if not callable(reducer):
            raise TypeError(f"use_reducer expects a reducer(tensor, op) callable, got {reducer!r}")
        self._reducer = reducer
        self._entry: _Entry | None = None

    def __enter__(self) -> Reducer:
        if self._entry is not None:
            raise RuntimeError("this use_reducer block is already open; create a new one")
        self._entry = _Entry(self._reducer, sys._getframe(1))
        _STACK.set((*_STACK.get(), self._entry))
        return self._reducer

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entry, self._entry = self._entry, None
        # Remove by identity rather than resetting a token: generators may
        # close their blocks out of order, and a token reset would drop the
        # caller's newer blocks with them.
        _STACK.set(tuple(e for e in _STACK.get() if e is not entry))

    def __repr__(self) -> str:
        return f"use_reducer({self._reducer!r})"


def current_stack() -> tuple[Any, ...]:
    """The reducers of the blocks open here, outermost first (for debugging).

    Blocks of suspended generators are left out: they are not in effect here.
    """
    running = set()
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        running.add(id(f))
        f = f.f_back
    return tuple(e.reducer for e in _STACK.get() if not e.suspendable or id(e.frame) in running)


def subgroup(key: Any) -> Reducer:
    """Split the reducer in scope: participants passing equal keys form a group (Comm_split).

    A collective call: every participant of the reducer in scope makes it.
    Nested splits divide the current group further; a group of one is ``local()``.

    Example:
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
