"""The pytree view of metrics: optree's calls, fixed to the library's namespace.

One namespace (``"scopedmetrics"``) and one ``none_is_leaf`` policy (``False``:
``None`` is an empty subtree, never a state) for every call in the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree
import torch

from scopedmetrics.state import NAMESPACE

Spec = optree.PyTreeSpec


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in order (state tensors, for a metric)."""
    return list(optree.tree_leaves(tree, is_leaf=is_leaf, namespace=NAMESPACE))


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], Spec]:
    """Leaves and structure of ``tree``."""
    out, spec = optree.tree_flatten(tree, is_leaf=is_leaf, namespace=NAMESPACE)
    return list(out), spec


def flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[str], list[Any], Spec]:
    """Dotted paths (``"inner.bins.a"``), leaves and structure of ``tree``."""
    paths, out, spec = optree.tree_flatten_with_path(tree, is_leaf=is_leaf, namespace=NAMESPACE)
    return [".".join(map(str, p)) for p in paths], list(out), spec


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Spec:
    """The structure of ``tree``: types, static configuration, container keys."""
    return optree.tree_structure(tree, is_leaf=is_leaf, namespace=NAMESPACE)


def unflatten(spec: Spec, values: list[Any]) -> Any:
    """The tree of ``spec`` holding ``values`` as its leaves."""
    return optree.tree_unflatten(spec, values)


def map_tensors(fn: Callable[[torch.Tensor], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    return optree.tree_map(fn, tree, namespace=NAMESPACE)
