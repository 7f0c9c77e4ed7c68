"""Input checks of the text metrics: strings in, checked before any state changes.

Every text metric's ``update`` takes ``preds`` as one string or a sequence of
strings; ``target`` is, by metric, the same (one reference per prediction) or
a sequence with one reference *or a sequence of references* per prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scopedmetrics import _checks


def pairs(owner: Any, preds: Any, target: Any) -> tuple[list[str], list[str]]:
    """``preds`` and ``target`` as two lists of strings of one length (a lone string is a batch of one)."""
    p = _checks.strings(owner, "preds", preds)
    t = _checks.strings(owner, "target", target)
    _checks.same_length(owner, "preds", p, "target", t)
    return p, t


def references(owner: Any, preds: Any, target: Any) -> tuple[list[str], list[list[str]]]:
    """``preds`` as a list of strings and ``target`` as one list of references (strings) per prediction.

    A ``target`` item that is a string is one reference; a lone string ``preds``
    is a batch of one (and a lone string ``target`` its one reference). For a
    single prediction, a flat sequence of several strings is its references.
    """
    p = _checks.strings(owner, "preds", preds)
    if isinstance(target, str):
        refs = [[target]]
    elif isinstance(target, Sequence):
        if len(p) == 1 and len(target) > 1 and all(isinstance(x, str) for x in target):
            refs = [list(target)]  # one prediction and a flat list: its references (as TorchMetrics' chrF and TER)
        else:
            refs = [[x] if isinstance(x, str) else _reference_list(owner, x) for x in target]
    else:
        raise TypeError(
            f"{_checks.where(owner)}: argument `target` must be a sequence of references (a string, or a sequence "
            f"of strings, per prediction), got {type(target).__name__}"
        )
    _checks.same_length(owner, "preds", p, "target", refs)
    return p, refs


def _reference_list(owner: Any, x: Any) -> list[str]:
    if isinstance(x, Sequence) and all(isinstance(s, str) for s in x):
        return list(x)
    raise TypeError(
        f"{_checks.where(owner)}: argument `target` must hold, per prediction, a string or a sequence of strings, "
        f"got {type(x).__name__}"
    )
