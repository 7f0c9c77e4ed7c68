"""``torch.compile(fullgraph=True)`` on the update of core metrics: does it compile, where does it break, how fast.

Three ways to compile one update (batch of 32, CPU, inductor):

* ``step(spec outside)``: ``step(leaves, preds, target) -> new leaves``, where the
  treespec comes from ``optree.tree_flatten`` outside the compiled function and
  ``optree.tree_unflatten`` rebuilds the metric inside it;
* ``step(spec inside)``: the same, but the treespec is made inside the compiled
  function by flattening the (constant) fresh metric, so Dynamo traces both ends;
* ``update``: ``torch.compile(metric.update)`` directly (returns a new metric).

For each: ``torch._dynamo.explain`` (graphs, graph breaks and their first
reasons), whether ``fullgraph=True`` compiles and runs (else the first line of
the error), that the compiled result equals eager, and eager vs compiled µs per
call (median over repeats). Under tracing the library turns its data checks into
asynchronous asserts and its probabilities-or-logits choice into a ``torch.where``
(see docs/concepts.md, "Compiling update").

Run: ``python benchmarks/compile.py`` (``--quick``: fewer calls per timing).
Prints a Markdown table and writes ``benchmarks/results/compile.json``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import _common
import optree
import torch

import scopedmetrics as sm
from scopedmetrics.classification import BinaryAUROC, MulticlassAccuracy
from scopedmetrics.regression import MeanSquaredError

NS = sm.NAMESPACE
BATCH = 32


def _metrics() -> list[tuple[str, sm.Metric, tuple[torch.Tensor, ...]]]:
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(BATCH, 10, generator=g), torch.randint(0, 10, (BATCH,), generator=g)
    x, y = torch.randn(BATCH, generator=g), torch.randn(BATCH, generator=g)
    s, b = torch.rand(BATCH, generator=g), torch.randint(0, 2, (BATCH,), generator=g)
    out = []
    for validate in (False, True):
        v = f"validate_args={validate}"
        out += [
            (f"MulticlassAccuracy(10), {v}", MulticlassAccuracy(num_classes=10, validate_args=validate),
             (logits, labels)),
            (f"MeanSquaredError, {v}", MeanSquaredError(validate_args=validate), (x, y)),
            (f"Mean, nan_strategy={'warn' if validate else 'disable'}",
             sm.Mean(nan_strategy="warn" if validate else "disable"), (x,)),
            (f"BinaryAUROC(thresholds=100), {v}", BinaryAUROC(thresholds=100, validate_args=validate), (s, b)),
            (f"BinaryAUROC exact, {v}", BinaryAUROC(validate_args=validate), (s, b)),
        ]
    return out


def _forms(m: sm.Metric) -> dict[str, tuple[Callable[..., Any], bool]]:
    """name -> (function, whether its first argument is the state leaves)."""
    _, outside = optree.tree_flatten(m, namespace=NS)

    def step_outside(leaves: list[torch.Tensor], *batch: torch.Tensor) -> list[torch.Tensor]:
        metric = optree.tree_unflatten(outside, leaves)
        return optree.tree_leaves(metric.update(*batch), namespace=NS)

    def step_inside(leaves: list[torch.Tensor], *batch: torch.Tensor) -> list[torch.Tensor]:
        _, spec = optree.tree_flatten(m, namespace=NS)
        metric = optree.tree_unflatten(spec, leaves)
        return optree.tree_leaves(metric.update(*batch), namespace=NS)

    return {"step (spec outside)": (step_outside, True), "step (spec inside)": (step_inside, True),
            "update": (m.update, False)}


def _first_line(err: BaseException) -> str:
    """The gist of a Dynamo error: the underlying exception when Dynamo wraps one, else the first lines."""
    text = str(err)
    marker = "Developer debug context: raised exception "
    if marker in text:  # "Observed exception": the real cause is the exception Dynamo saw raised
        return text.split(marker, 1)[1].split("\n", 1)[0].strip()[:300]
    text = " ".join(line.strip() for line in text.split("\n")[:2] if line.strip())
    return f"{type(err).__name__}: {text}"[:300]


def _explain(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Any]:
    torch._dynamo.reset()
    try:
        e = torch._dynamo.explain(fn)(*args)
    except Exception as err:  # noqa: BLE001 - reported
        return {"graphs": None, "breaks": None, "reasons": [_first_line(err)]}
    reasons = []
    for b in e.break_reasons:
        r = str(b.reason).split("\n")[0].strip()
        if r not in reasons:
            reasons.append(r)
    return {"graphs": e.graph_count, "breaks": e.graph_break_count, "reasons": reasons[:3]}


def _leaves(out: Any) -> list[torch.Tensor]:
    return out if isinstance(out, list) else optree.tree_leaves(out, namespace=NS)


def _case(name: str, m: sm.Metric, batch: tuple[torch.Tensor, ...], number: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    leaves = optree.tree_leaves(m, namespace=NS)
    for form, (fn, takes_leaves) in _forms(m).items():
        args = (leaves, *batch) if takes_leaves else batch
        row: dict[str, Any] = {"metric": name, "form": form}
        row.update(_explain(fn, args))
        torch._dynamo.reset()
        start = time.perf_counter()
        try:
            compiled = torch.compile(fn, fullgraph=True)
            got = _leaves(compiled(*args))
            row["compiles"] = True
            row["compile_s"] = time.perf_counter() - start
            want = _leaves(fn(*args))
            row["matches_eager"] = len(got) == len(want) and all(
                a.shape == b.shape and torch.allclose(a.double(), b.double()) for a, b in zip(got, want)
            )
        except Exception as err:  # noqa: BLE001 - reported
            row.update(compiles=False, compile_s=time.perf_counter() - start, error=_first_line(err))
            rows.append(row)
            print(f"  {name:<40} {form:<20} fails: {row['error'][:110]}", flush=True)
            continue
        if takes_leaves:  # chain the state through, as a training loop would
            eager_box, comp_box = [leaves], [leaves]

            def eager_step(f: Any = fn, box: list[Any] = eager_box) -> None:
                box[0] = f(box[0], *batch)

            def compiled_step(f: Any = compiled, box: list[Any] = comp_box) -> None:
                box[0] = f(box[0], *batch)
        else:
            def eager_step(f: Any = fn) -> None:
                f(*batch)

            def compiled_step(f: Any = compiled) -> None:
                f(*batch)
        stats = _common.compare({"eager": eager_step, "compiled": compiled_step}, number, repeat)
        row["eager_us"] = stats["eager"]["median_us"]
        row["compiled_us"] = stats["compiled"]["median_us"]
        rows.append(row)
        print(f"  {name:<40} {form:<20} compiles; eager {row['eager_us']:.1f} µs, compiled {row['compiled_us']:.1f} µs",
              flush=True)
    return rows


def main() -> None:
    args = _common.parser(__doc__, repeat=7).parse_args()
    _common.setup(args)
    number = 100 if args.quick else 500
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    logging.getLogger("torch._inductor").setLevel(logging.ERROR)
    rows = []
    for name, m, batch in _metrics():
        if args.only and args.only not in name:
            continue
        rows += _case(name, m, batch, number, args.repeat)
    body = []
    for r in rows:
        explained = f"{r['graphs']} / {r['breaks']}" if r["graphs"] is not None else "raised"
        reasons = "; ".join(r["reasons"]) if r.get("reasons") else ""
        body.append([r["metric"], r["form"], explained, reasons[:90], r["compiles"], r.get("error", "")[:110],
                     r.get("compile_s"), r.get("eager_us"), r.get("compiled_us")])
    print()
    print(_common.table(["metric", "form", "explain: graphs / breaks", "break reasons (explain)", "fullgraph",
                         "fullgraph error", "compile s", "eager µs", "compiled µs"], body,
                        digits=[0, 0, 0, 0, 0, 0, 1, 1, 1]))
    if args.only:
        args.no_save = True
    _common.save("compile", {
        "machine": _common.machine(),
        "config": {"batch": BATCH, "backend": "inductor", "number": number, "repeat": args.repeat},
        "rows": rows,
    }, args)


if __name__ == "__main__":
    main()
