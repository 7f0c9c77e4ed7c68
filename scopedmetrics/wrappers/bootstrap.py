"""``BootStrapper``: bootstrap replicates of a metric, with weights that can be independent of the sharding.

With ``sample_ids``, how often sample ``i`` appears in replicate ``b`` is a
Poisson(1) draw made from a counter-based hash of ``(seed, i, b)``
(splitmix64 in int64 tensor ops, then inversion of the Poisson CDF). It does
not depend on which participant saw the sample, in which batch or in which
order, so the replicates, hence the interval, are the same for any world size,
sharding and batching. Poisson(1) counts are the large-sample limit of the
multinomial resampling TorchMetrics does per batch (Hanley & MacGibbon, 2006).
"""

from __future__ import annotations

import math
from typing import Any, cast

import optree
import torch

from scopedmetrics.metric import Metric
from scopedmetrics.state import NAMESPACE, state, static
from scopedmetrics.wrappers._groups import (
    GroupIds,
    check_count,
    check_flag,
    check_ids,
    check_rows,
    check_template,
    count,
    fold_groups,
    group,
    groups_of,
    is_rows,
    register_sliced_update,
    take,
)

_STRATEGIES = ("poisson", "multinomial")
_MASK64 = (1 << 64) - 1


def _signed(x: int) -> int:
    """A 64-bit pattern as the int64 torch holds it."""
    x &= _MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


_GOLDEN = _signed(0x9E3779B97F4A7C15)
_M1 = _signed(0xBF58476D1CE4E5B9)
_M2 = _signed(0x94D049BB133111EB)


def _shr(x: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 ``x`` (torch's ``>>`` is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """splitmix64's finalizer on int64 tensors (wrapping arithmetic): a bijection that scrambles every bit.

    Examples:
        >>> mix64(torch.tensor([0, 1])).tolist()
        [0, 6238072747940578789]
    """
    x = (x ^ _shr(x, 30)) * _M1
    x = (x ^ _shr(x, 27)) * _M2
    return x ^ _shr(x, 31)


def _mix_int(x: int) -> int:
    """``mix64`` of one Python int (the seed), exact."""
    x &= _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return _signed(x ^ (x >> 31))


def uniforms(seed: int, ids: torch.Tensor, replicates: int) -> torch.Tensor:
    """``(replicates, N)`` float64 uniforms in [0, 1), each a function of ``(seed, ids[j], b)`` alone.

    Examples:
        >>> u = uniforms(0, torch.tensor([7, 7, 8]), 2)
        >>> bool(u[0, 0] == u[0, 1]), bool(u[0, 0] == u[1, 0]), bool((0 <= u).all() and (u < 1).all())
        (True, False, True)
    """
    key = mix64(ids.long() + _signed(_mix_int(seed) + _GOLDEN))
    steps = torch.tensor([_signed((b + 1) * _GOLDEN) for b in range(replicates)], dtype=torch.int64)
    h = mix64(key[None, :] + steps.to(ids.device)[:, None])
    return _shr(h, 11).double() * 2.0**-53


def _poisson_cdf() -> torch.Tensor:
    terms = [math.exp(-1.0) / math.factorial(k) for k in range(40)]
    cdf, acc = [], 0.0
    for t in terms:
        acc += t
        cdf.append(acc)
    return torch.tensor(cdf, dtype=torch.float64)


_CDF = _poisson_cdf()


def poisson_counts(seed: int, ids: torch.Tensor, replicates: int) -> torch.Tensor:
    """``(replicates, N)`` int64 Poisson(1) counts: how often sample ``ids[j]`` appears in replicate ``b``.

    Examples:
        >>> c = poisson_counts(0, torch.arange(100_000), 1).double()
        >>> abs(c.mean().item() - 1) < 0.01, abs(c.var().item() - 1) < 0.02
        (True, True)
    """
    u = uniforms(seed, ids, replicates)
    return torch.bucketize(u, _CDF.to(u.device), right=True)


class BootStrapper(Metric):
    """Bootstrap replicates of a metric: their mean, standard deviation, quantiles or raw values.

    ``update(*args, sample_ids=None, **kwargs)`` takes what the wrapped metric
    takes. With ``sample_ids`` (an integer tensor, one id per sample, unique
    over the data set) each sample's weight in each replicate depends only on
    ``seed``, its id and the replicate, so ``compute()`` is the same for any
    world size, sharding and batching. Without them each participant draws
    its own weights from torch's global generator, as TorchMetrics does (seed
    each rank differently). ``"multinomial"`` draws ``N`` of a batch's ``N``
    rows per replicate, as TorchMetrics does; it depends on the batches, so it
    does not take ``sample_ids``.

    The replicates are one stacked state where the metric allows (a leading
    replicate dimension, updated in one scatter for the common families), so
    ``compute()`` reduces them all in the same single pass as one metric.

    Examples:
        >>> import torch, scopedmetrics as sm
        >>> from scopedmetrics.wrappers import BootStrapper
        >>> m = BootStrapper(sm.Mean(), num_bootstraps=50, quantile=torch.tensor([0.05, 0.95]))
        >>> x = torch.arange(100.0)
        >>> out = m.update(x, sample_ids=torch.arange(100)).compute()
        >>> sorted(out), 40 < out["mean"].item() < 60, out["quantile"].shape
        (['mean', 'quantile', 'std'], True, torch.Size([2]))
    """

    metric: Metric = static()
    num_bootstraps: int = static(default=10)
    mean: bool = static(default=True)
    std: bool = static(default=True)
    quantile: Any = static(default=None)
    raw: bool = static(default=False)
    sampling_strategy: str = static(default="poisson")
    seed: int = static(default=0)
    # the op is never used: every leaf below belongs to a nested metric, which brings its own ops
    replicates: Any = state("sum", init=lambda m: groups_of(m.metric, m.num_bootstraps))

    _shareable = False  # without sample_ids, update draws random numbers: two members never share it

    def __post_init__(self) -> None:
        check_template(self)
        check_count(self, "num_bootstraps")
        for flag in ("mean", "std", "raw"):
            check_flag(self, flag)
        if self.sampling_strategy not in _STRATEGIES:
            got = self.sampling_strategy
            raise ValueError(f"BootStrapper: argument `sampling_strategy` must be one of {_STRATEGIES}, got {got!r}")
        check_count(self, "seed", minimum=-(1 << 63))
        q = self.quantile
        if q is not None:
            if isinstance(q, bool) or not isinstance(q, (int, float, torch.Tensor, list, tuple)):
                raise TypeError(f"BootStrapper: argument `quantile` must be a number or a tensor of them, got {q!r}")
            qt = torch.as_tensor(q, dtype=torch.float64)
            if qt.ndim > 1 or bool(((qt < 0) | (qt > 1) | qt.isnan()).any()):
                raise ValueError(f"BootStrapper: argument `quantile` must lie in [0, 1], got {q!r}")
            if isinstance(q, (list, tuple)):
                object.__setattr__(self, "quantile", tuple(float(v) for v in q))

    def update(self, *args: Any, sample_ids: Any = None, **kwargs: Any) -> BootStrapper:
        """Fold a batch into every replicate, each sample repeated as often as its draw says."""
        n = _batch_rows(self, args, kwargs)
        if sample_ids is not None:
            ids = check_ids(self, "sample_ids", sample_ids, None)
            check_rows(self, ids.shape[0], "sample_ids", args, kwargs)
            if self.sampling_strategy != "poisson":
                raise ValueError(
                    "BootStrapper.update: sample_ids need sampling_strategy='poisson' (multinomial resampling draws "
                    "N of each batch's N rows, so it depends on the batches); use poisson, its large-sample limit"
                )
            counts = poisson_counts(self.seed, ids, self.num_bootstraps)
        else:
            counts = self._draw(n)
        if n == 0:
            return self
        return self.replace(replicates=resample(self, self.replicates, self.metric, counts, args, kwargs))

    def _draw(self, n: int) -> torch.Tensor:
        """``(B, n)`` counts from torch's global generator, as TorchMetrics draws them."""
        b = self.num_bootstraps
        if self.sampling_strategy == "poisson":
            return torch.poisson(torch.ones(b, n)).long()
        if n == 0:
            return torch.zeros(b, 0, dtype=torch.long)
        picks = torch.multinomial(torch.ones(n), n * b, replacement=True).view(b, n)
        return torch.stack([torch.bincount(p, minlength=n) for p in picks])

    def compute(self) -> dict[str, Any]:
        """The statistics asked for over the replicates' values (for dict values, per entry)."""
        values = [group(self.replicates, b).compute() for b in range(count(self.replicates))]
        try:
            stacked = optree.tree_map(lambda *vs: torch.stack([_float(v) for v in vs]), *values, namespace=NAMESPACE)
        except (ValueError, TypeError, RuntimeError) as err:
            raise ValueError(f"BootStrapper.compute: the replicates' values do not stack ({err})") from None
        out: dict[str, Any] = {}
        if self.mean:
            out["mean"] = optree.tree_map(lambda v: v.mean(0), stacked)
        if self.std:
            out["std"] = optree.tree_map(lambda v: v.std(0), stacked)
        if self.quantile is not None:
            q = torch.as_tensor(self.quantile, dtype=torch.float64)
            out["quantile"] = optree.tree_map(lambda v: torch.quantile(v, q.to(v), dim=0), stacked)
        if self.raw:
            out["raw"] = stacked
        return out


def _float(v: Any) -> torch.Tensor:
    t = torch.as_tensor(v)
    return t if t.is_floating_point() else t.double()


def _batch_rows(owner: Metric, args: Any, kwargs: dict[str, Any]) -> int:
    """The number of samples: the first per-sample argument's length."""
    for x in (*args, *kwargs.values()):
        if is_rows(x):
            return int(x.shape[0]) if isinstance(x, torch.Tensor) else len(x)
    raise ValueError(f"{type(owner).__name__}.update: no argument has one row per sample to resample")


def resample(
    owner: Metric, replicates: Any, template: Metric, counts: torch.Tensor, args: Any, kwargs: dict[str, Any]
) -> Any:
    """``replicates`` with replicate ``b`` updated on the rows repeated ``counts[b]`` times, in row order."""
    b, n = counts.shape
    check_rows(owner, n, "the batch", args, kwargs)
    counts = counts.to(torch.long)
    rows = torch.arange(n, device=counts.device).repeat(b).repeat_interleave(counts.reshape(-1))
    ids = torch.arange(b, device=counts.device).repeat_interleave(counts.sum(1))
    picked = [take(a, rows) for a in args]
    picked_kw = {k: take(v, rows) for k, v in kwargs.items()}
    return fold_groups(owner, replicates, template, ids, b, picked, picked_kw)


@register_sliced_update(BootStrapper)
def _sliced_bootstrap(
    stacked: BootStrapper, template: BootStrapper, g: GroupIds, *args: Any, sample_ids: Any = None, **kwargs: Any
) -> BootStrapper | None:
    """Slices of a bootstrapped metric as ``n * B`` groups of the inner metric: one scatter for both."""
    ids, n = g.ids, g.n
    if sample_ids is None or template.sampling_strategy != "poisson":
        return None
    sids = check_ids(template, "sample_ids", sample_ids, None)
    b = template.num_bootstraps
    counts = poisson_counts(template.seed, sids, b)  # (B, N)
    flat: Any = optree.tree_map(lambda t: t.reshape(n * b, *t.shape[2:]), stacked.replicates, namespace=NAMESPACE)
    per = counts.reshape(-1).to(ids.device)
    rows = torch.arange(ids.shape[0], device=ids.device).repeat(b).repeat_interleave(per)
    replicate = torch.arange(b, device=ids.device).repeat_interleave(ids.shape[0])
    groups = (ids.repeat(b) * b + replicate).repeat_interleave(per)
    picked = [take(a, rows) for a in args]
    picked_kw = {k: take(v, rows) for k, v in kwargs.items()}
    done = fold_groups(template, flat, template.metric, groups, n * b, picked, picked_kw)
    back = optree.tree_map(lambda t: t.reshape(n, b, *t.shape[1:]), cast(Any, done), namespace=NAMESPACE)
    return stacked.replace(replicates=back)
