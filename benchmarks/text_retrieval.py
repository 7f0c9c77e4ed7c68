"""Text updates and retrieval computes against TorchMetrics, jiwer and sacrebleu: time and peak memory, as ratios.

Part 1 folds 10,000 sentence pairs (10 updates of 1,000) into WordErrorRate
and BLEUScore (scopedmetrics and TorchMetrics), and gives jiwer
(``process_words``) and sacrebleu (``corpus_bleu``, whitespace tokens, no
smoothing) the same 10,000 pairs at once. Every implementation's value is
checked equal before timing.

Part 2 times ``compute()`` of the eight grouped retrieval metrics over
100,000 queries of 10 documents (10^6 rows, queries interleaved), each
metric alone and all eight in one ``sm.Collection``. TorchMetrics loops over
queries in Python, so it is timed over 10,000 queries (every metric) and
over 100,000 (MRR only, to check its time grows linearly, and for its peak
memory); its 100,000-query time for the other metrics is the 10,000-query
time times 10, marked ``~``.

Part 3 (issue #13's sync figure) syncs a text and retrieval collection over
four gloo processes: WER, CER, BLEU, chrF and ROUGE over ``SYNC_PAIRS``
sentence pairs and RetrievalMAP, MRR and NDCG over ``SYNC_QUERIES`` queries of
10 documents. sm reduces its three collections in one ``sm.compute``;
TorchMetrics holds the same metrics in one ``MetricCollection``. Twice: on
uneven shards (40/30/20/10%, whole queries per rank) without ROUGE, as
TorchMetrics 1.9 cannot sync its ``ROUGEScore`` there (its per-sentence list
states, ``dist_reduce_fx=None``, are gathered one tensor per sentence, so
ranks with fewer sentences issue fewer collectives: the smallest rank returns
a wrong value and the others hang), then on even shards with ROUGE. Values are
checked equal, then ``compute()`` is timed (each call after a barrier; the
slowest rank's time per iteration; the median over iterations), next to its
math alone (``local()``, TorchMetrics without sync), and the
``torch.distributed`` calls of one ``compute()`` are counted. Results go to
``results/text_retrieval_sync.json`` (``--only sync`` runs only this part).

Every case of parts 1 and 2 runs in a fresh subprocess: it builds its inputs, warms up on a
small slice, then times the call (the median of ``--repeat`` calls, 3 by
default, for scopedmetrics; one call for the others, which take seconds) and
measures its peak memory: the rise of the process's peak RSS (``VmHWM``,
reset through ``/proc/self/clear_refs``) above the RSS before the first
timed call, inputs excluded. The values of every implementation are checked
equal.

Run: ``python benchmarks/text_retrieval.py`` (about 3 minutes; ``--quick``: one repeat).
Prints Markdown tables and writes ``benchmarks/results/text_retrieval.json``.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common
import torch

PAIRS = 10_000
BATCH = 1_000
QUERIES = 100_000
DOCS = 10
TM_QUERIES = 10_000
SYNC_WORLD = 4
SYNC_PAIRS = 2_000
SYNC_QUERIES = 400
SYNC_SHARES = (4, 3, 2, 1)  # rank r's share of the pairs and of the queries, in tenths
RETRIEVAL = ("RetrievalMRR", "RetrievalMAP", "RetrievalNormalizedDCG", "RetrievalPrecision", "RetrievalRecall",
             "RetrievalHitRate", "RetrievalRPrecision", "RetrievalFallOut")


# -- one case per subprocess ---------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:  # pragma: no cover - not Linux
        pass
    return None


def measure(fn: Callable[[], Any], calls: int) -> dict[str, Any]:
    """``fn()``'s value, median seconds over ``calls`` calls, and the peak RSS rise of the first call (MB)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # peak RSS := current RSS
        before = _status_kb("VmRSS:")
    except OSError:  # pragma: no cover - not Linux, or not allowed
        before = None
    times = []
    for k in range(calls):
        start = _common.CLOCK()
        value = fn()
        times.append(_common.CLOCK() - start)
        if k == 0:
            peak = _status_kb("VmHWM:")
    mb = None if before is None or peak is None else (peak - before) / 1024
    return {"value": float(value), "ms": statistics.median(times) * 1000, "peak_mb": mb, "calls": calls}


def corpus(seed: int = 0) -> tuple[list[str], list[str]]:
    """``PAIRS`` references of 5-25 words (Zipf-like over 2,000 words) and predictions close to them."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(2000)]
    weights = [1 / (i + 1) for i in range(2000)]
    refs, preds = [], []
    for _ in range(PAIRS):
        ref = rng.choices(vocab, weights, k=rng.randint(5, 25))
        pred = [rng.choice(vocab) if rng.random() < 0.2 else w for w in ref if rng.random() > 0.1]
        refs.append(" ".join(ref))
        preds.append(" ".join(pred))
    return preds, refs


def rankings(queries: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``queries`` x ``DOCS`` rows, each query's documents together, queries in random order."""
    g = torch.Generator().manual_seed(seed)
    indexes = torch.randperm(queries, generator=g).repeat_interleave(DOCS)
    preds = torch.rand(queries * DOCS, generator=g)
    target = (torch.rand(queries * DOCS, generator=g) < 0.2).long()
    return preds, target, indexes


def text_case(metric: str, who: str, repeat: int) -> dict[str, Any]:
    preds, refs = corpus()
    nested = [[r] for r in refs]
    batches = [slice(i, i + BATCH) for i in range(0, PAIRS, BATCH)]
    if who == "sm":
        import scopedmetrics.text as smt

        cls, target = getattr(smt, metric), refs if metric == "WordErrorRate" else nested

        def run(n: int = PAIRS) -> Any:
            m = cls()
            for b in batches:
                b = slice(b.start, min(b.stop, n))
                m = m.update(preds[b], target[b])
            return m.compute()
    elif who == "tm":
        import torchmetrics.text as tmt

        cls, target = getattr(tmt, metric), refs if metric == "WordErrorRate" else nested

        def run(n: int = PAIRS) -> Any:
            m = cls()
            for b in batches:
                b = slice(b.start, min(b.stop, n))
                m.update(preds[b], target[b])
            return m.compute()
    elif metric == "WordErrorRate":
        import jiwer

        def run(n: int = PAIRS) -> Any:
            return jiwer.process_words(refs[:n], preds[:n]).wer
    else:
        import sacrebleu

        def run(n: int = PAIRS) -> Any:
            return sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none").corpus_score(
                preds[:n], [refs[:n]]).score / 100

    run(100)  # warm-up on 100 pairs
    return measure(run, repeat if who == "sm" else 1)


def retrieval_case(metric: str, who: str, queries: int, repeat: int) -> dict[str, Any]:
    p, t, i = rankings(QUERIES)
    rows = slice(0, queries * DOCS)  # whole queries: rows are query-major
    p, t, i = p[rows], t[rows], i[rows]
    if who == "sm":
        import scopedmetrics as sm
        import scopedmetrics.retrieval as smr

        names = RETRIEVAL if metric == "all" else (metric,)
        m = sm.Collection({n: getattr(smr, n)() for n in names}).update(p, t, indexes=i)
        m.reset().update(p[:100], t[:100], indexes=i[:100]).compute()  # warm-up

        def run() -> Any:
            out = m.compute()
            return sum(float(v) for v in out.values())
        result = measure(run, repeat)
        head = slice(0, TM_QUERIES * DOCS)  # the rows TorchMetrics is timed on, for the value check
        first = sm.Collection({n: getattr(smr, n)() for n in names}).update(p[head], t[head], indexes=i[head])
        return {**result, "value_10k": sum(float(v) for v in first.compute().values())}
    import torchmetrics.retrieval as tmr

    def once(name: str) -> dict[str, Any]:
        tm = getattr(tmr, name)()
        tm.update(p, t, indexes=i)
        return measure(tm.compute, 1)  # TorchMetrics caches a computed value: one call

    if metric != "all":
        return once(metric)
    return {name: once(name) for name in RETRIEVAL}  # one process for all: times only (peaks would overlap)


# -- part 3: one sync of a text + retrieval collection over gloo -----------------------------------------


def _sync_rows(rank: int, n: int, shares: tuple[int, ...], unit: int = 1) -> slice:
    """Rank ``rank``'s share of ``n`` items (whole groups of ``unit`` rows each)."""
    total = sum(shares)
    edges = [round(n * sum(shares[:r]) / total) * unit for r in range(len(shares) + 1)]
    return slice(edges[rank], edges[rank + 1])


def _sync_data(rank: int, shares: tuple[int, ...]) -> dict[str, Any]:
    preds, refs = corpus()
    text = _sync_rows(rank, SYNC_PAIRS, shares)
    p, t, i = rankings(SYNC_QUERIES, seed=1)
    rows = _sync_rows(rank, SYNC_QUERIES, shares, DOCS)  # rankings() keeps each query's documents together
    return {"preds": preds[text], "refs": refs[text], "scores": p[rows], "relevant": t[rows], "indexes": i[rows]}


ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")  # TorchMetrics' default adds rougeLsum, which downloads nltk's punkt


def _sync_sm(d: dict[str, Any], rouge: bool) -> dict[str, Any]:
    import scopedmetrics as sm
    import scopedmetrics.retrieval as smr
    import scopedmetrics.text as smt

    nested = [[r] for r in d["refs"]]
    translation: dict[str, Any] = {"bleu": smt.BLEUScore(), "chrf": smt.CHRFScore()}
    if rouge:
        translation["rouge"] = smt.ROUGEScore(rouge_keys=ROUGE_KEYS)
    return {
        "rates": sm.Collection(wer=smt.WordErrorRate(), cer=smt.CharErrorRate()).update(d["preds"], d["refs"]),
        "translation": sm.Collection(translation).update(d["preds"], nested),
        "retrieval": sm.Collection(map=smr.RetrievalMAP(), mrr=smr.RetrievalMRR(), ndcg=smr.RetrievalNormalizedDCG())
        .update(d["scores"], d["relevant"], indexes=d["indexes"]),
    }


def _sync_tm(d: dict[str, Any], rouge: bool) -> Any:
    import torchmetrics
    import torchmetrics.retrieval as tmr
    import torchmetrics.text as tmt

    nested = [[r] for r in d["refs"]]
    members = {"wer": tmt.WordErrorRate(), "cer": tmt.CharErrorRate(), "bleu": tmt.BLEUScore(), "chrf": tmt.CHRFScore(),
               "rouge": tmt.ROUGEScore(rouge_keys=ROUGE_KEYS), "map": tmr.RetrievalMAP(), "mrr": tmr.RetrievalMRR(),
               "ndcg": tmr.RetrievalNormalizedDCG()}
    for name in ("wer", "cer"):
        members[name].update(d["preds"], d["refs"])
    if not rouge:
        del members["rouge"]
    for name in ("bleu", "chrf", "rouge")[: 3 if rouge else 2]:
        members[name].update(d["preds"], nested)
    for name in ("map", "mrr", "ndcg"):
        members[name].update(d["scores"], d["relevant"], indexes=d["indexes"])
    return torchmetrics.MetricCollection(members)


def _flat(values: dict[str, Any]) -> dict[str, float]:
    """sm's nested dict and TorchMetrics' flat one as ``{"bleu": .., "rouge1_fmeasure": .., ...}``."""
    out: dict[str, float] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out.update(_flat(v))
        else:
            out[k] = float(v)
    return out


def _sync_bench(rank: int, iters: int, warmup: int, shares: tuple[int, ...], rouge: bool) -> dict[str, Any]:
    import torch.distributed as dist
    from sync import Counting

    counting = Counting()  # before scopedmetrics is imported, so that its bindings are the counted functions
    import scopedmetrics as sm

    d = _sync_data(rank, shares)
    ours, theirs = _sync_sm(d, rouge), _sync_tm(d, rouge)

    def tm_compute(sync: bool = True) -> Any:
        for m in theirs.values():  # TorchMetrics caches compute() until the next update: a fresh one each time
            m._computed = None
            m._to_sync = sync
        try:
            return theirs.compute()
        finally:
            for m in theirs.values():
                m._to_sync = True

    def sm_local() -> Any:
        with sm.use_reducer(sm.local()):
            return sm.compute(ours)

    a, b = _flat(sm.compute(ours)), _flat(tm_compute())
    if a.keys() != b.keys() or any(abs(a[k] - b[k]) > 1e-4 * max(1.0, abs(b[k])) for k in a):
        raise AssertionError(f"rank {rank}: scopedmetrics {a} vs torchmetrics {b}")
    impls = {"sm": lambda: sm.compute(ours), "tm": tm_compute, "sm_local": sm_local,
             "tm_local": lambda: tm_compute(sync=False)}
    times: dict[str, list[float]] = {k: [] for k in impls}
    calls: dict[str, dict[str, int]] = {}
    for i in range(warmup + iters):
        for name, fn in impls.items():
            dist.barrier()
            elapsed, used, _ = counting.measure(fn)
            if i >= warmup:
                times[name].append(elapsed)
                calls[name] = used
    return {"times": times, "calls": calls, "values": a}


def _sync_rank(rank: int, size: int, iters: int, warmup: int, shares: tuple[int, ...], rouge: bool) -> dict[str, Any]:
    _common.setup()
    return _sync_bench(rank, iters, warmup, shares, rouge)


def sync_world(iters: int, warmup: int, shares: tuple[int, ...], rouge: bool) -> dict[str, Any]:
    """One configuration in ``SYNC_WORLD`` gloo processes: per implementation, calls and the slowest rank's ms."""
    from sync import run_world

    per_rank = run_world(SYNC_WORLD, _sync_rank, iters, warmup, shares, rouge, timeout=600)
    rows = {}
    for name in per_rank[0]["times"]:
        slowest = [max(ts) for ts in zip(*(r["times"][name] for r in per_rank))]
        kinds = per_rank[0]["calls"].get(name, {})
        rows[name] = {"collectives": sum(kinds.values()), "by_kind": kinds,
                      "median_ms": statistics.median(slowest) * 1e3, "min_ms": min(slowest) * 1e3,
                      "max_ms": max(slowest) * 1e3, "iterations": len(slowest)}
    return {"shares": shares, "rouge": rouge, "rows": rows, "values": per_rank[0]["values"]}


def sync_part(quick: bool) -> dict[str, Any]:
    """Part 3: uneven shards without ROUGE (TorchMetrics cannot sync it there), then even shards with it."""
    iters, warmup = (3, 1) if quick else (15, 3)
    uneven = sync_world(iters, warmup, SYNC_SHARES, rouge=False)
    print_sync(uneven)
    even = sync_world(max(3, iters // 5), 1, (1,) * SYNC_WORLD, rouge=True)
    print_sync(even)
    return {"uneven_without_rouge": uneven, "even_with_rouge": even}


def print_sync(result: dict[str, Any]) -> None:
    r = result["rows"]
    sync_ms = {k: r[k]["median_ms"] - r[f"{k}_local"]["median_ms"] for k in ("sm", "tm")}
    body = []
    for key, label in (("sm", "scopedmetrics, one sm.compute"), ("tm", "TorchMetrics MetricCollection")):
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r[key]["by_kind"].items()))
        body.append([label, r[key]["collectives"], kinds, r[key]["median_ms"], r[f"{key}_local"]["median_ms"],
                     sync_ms[key]])
    members = "WER, CER, BLEU, chrF" + (", ROUGE" if result["rouge"] else "") + ", MAP, MRR, NDCG"
    print(f"\n{members}: {SYNC_WORLD} gloo ranks, {SYNC_PAIRS:,} pairs and {SYNC_QUERIES} queries x {DOCS}, "
          f"shares {result['shares']}:")
    print(_common.table(["implementation", "collectives", "which", "compute ms", "math only ms", "sync ms"], body,
                        digits=[0, 0, 0, 1, 1, 1]))
    print(f"sm/tm: collectives {r['sm']['collectives']}/{r['tm']['collectives']} = "
          f"{r['sm']['collectives'] / r['tm']['collectives']:.3f}, compute "
          f"{_common.ratio(r['sm']['median_ms'], r['tm']['median_ms']):.3f}, sync (compute - math) "
          f"{_common.ratio(sync_ms['sm'], sync_ms['tm']):.3f}")


def run_case(spec: list[str], repeat: int, cpu_clock: bool) -> dict[str, Any]:
    """``spec`` in a fresh Python: its JSON result."""
    cmd = [sys.executable, __file__, "--case", *spec, "--repeat", str(repeat)] + (["--cpu-clock"] if cpu_clock else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=Path(__file__).parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = _common.parser(__doc__, repeat=3)
    p.add_argument("--case", nargs="+", help=argparse_hidden())
    args = p.parse_args()
    _common.setup(args)
    if args.case:
        kind, metric, who, *rest = args.case
        result = (text_case(metric, who, args.repeat) if kind == "text"
                  else retrieval_case(metric, who, int(rest[0]), args.repeat))
        print(json.dumps(result))
        return
    repeat = 1 if args.quick else args.repeat
    started = time.perf_counter()
    print(f"text_retrieval: {PAIRS} sentence pairs in batches of {BATCH}; {QUERIES} queries x {DOCS} documents; "
          f"sm median of {repeat}")
    rows: list[dict[str, Any]] = []

    def keep(name: str) -> bool:
        return not args.only or args.only in name

    save_sync = not args.no_save
    if args.only == "sync":
        result = sync_part(args.quick)
        if save_sync:
            _common.save("text_retrieval_sync", {"machine": _common.machine(), "config": _sync_config(), **result})
        return

    for metric, ref in (("WordErrorRate", "jiwer"), ("BLEUScore", "sacrebleu")):
        if not keep(metric):
            continue
        got = {who: run_case(["text", metric, who], repeat, args.cpu_clock) for who in ("sm", "tm", ref)}
        values = [g["value"] for g in got.values()]
        assert max(values) - min(values) < 1e-5, (metric, values)
        rows.append({"case": f"{metric} update, {PAIRS} pairs", "reference": ref, "sm": got["sm"], "tm": got["tm"],
                     "ref": got[ref]})
        print(f"  {rows[-1]['case']}: sm {got['sm']['ms']:.0f} ms, tm {got['tm']['ms']:.0f} ms, "
              f"{ref} {got[ref]['ms']:.0f} ms")

    tm_small = run_case(["retrieval", "all", "tm", str(TM_QUERIES)], 1, args.cpu_clock) if keep("Retrieval") else {}
    for metric in RETRIEVAL:
        if not keep(metric):
            continue
        sm_ = run_case(["retrieval", metric, "sm", str(QUERIES)], repeat, args.cpu_clock)
        small = tm_small[metric]
        assert abs(sm_["value_10k"] - small["value"]) < 1e-5, (metric, sm_, small)
        if metric == "RetrievalMRR":  # TorchMetrics at the full size once, to check the 10x estimate
            tm_ = run_case(["retrieval", metric, "tm", str(QUERIES)], 1, args.cpu_clock)
            assert abs(sm_["value"] - tm_["value"]) < 1e-5, (metric, sm_, tm_)
            tm_["ms_10k"] = small["ms"]
        else:
            tm_ = {"value": small["value"], "ms_10k": small["ms"], "ms": small["ms"] * QUERIES / TM_QUERIES,
                   "estimated": True, "peak_mb": None}
        rows.append({"case": f"{metric} compute, {QUERIES} queries", "sm": sm_, "tm": tm_})
        print(f"  {rows[-1]['case']}: sm {sm_['ms']:.0f} ms, tm {tm_['ms']:.0f} ms"
              + (" (10x its 10,000-query time)" if tm_.get("estimated") else ""))
    if not args.only:
        sm_ = run_case(["retrieval", "all", "sm", str(QUERIES)], repeat, args.cpu_clock)
        tm_ms = sum(r["tm"]["ms"] for r in rows if "compute" in r["case"])
        rows.append({"case": f"all 8 in one Collection, {QUERIES} queries", "sm": sm_,
                     "tm": {"ms": tm_ms, "estimated": True, "peak_mb": None}})

    print()
    table = []
    for r in rows:
        sm_, tm_, ref = r["sm"], r["tm"], r.get("ref")
        table.append([
            r["case"], sm_["ms"], ("~" if tm_.get("estimated") else "") + _common.fmt(tm_["ms"], 0),
            None if ref is None else f"{ref['ms']:.0f} ({r['reference']})",
            _common.ratio(sm_["ms"], tm_["ms"]), None if ref is None else _common.ratio(sm_["ms"], ref["ms"]),
            sm_["peak_mb"], tm_.get("peak_mb"), None if ref is None else ref["peak_mb"],
        ])
    print(_common.table(
        ["case", "sm ms", "tm ms", "reference ms", "sm/tm time", "sm/ref time", "sm peak MB", "tm peak MB",
         "ref peak MB"], table, digits=[0, 0, 0, 0, 3, 2, 1, 1, 1]))
    print(f"\n~: TorchMetrics over {TM_QUERIES:,} queries, times {QUERIES // TM_QUERIES} (its compute loops over "
          "queries, linear in their number; MRR is measured at the full size, its peak too). "
          f"Total {time.perf_counter() - started:.0f} s.")
    if not args.only:
        result = sync_part(args.quick)
        if save_sync:
            _common.save("text_retrieval_sync", {"machine": _common.machine(), "config": _sync_config(), **result})
    if args.only:
        args.no_save = True
    _common.save("text_retrieval", {
        "machine": _common.machine(),
        "config": {"pairs": PAIRS, "batch": BATCH, "queries": QUERIES, "docs": DOCS, "tm_queries": TM_QUERIES,
                   "repeat": repeat},
        "rows": rows,
    }, args)


def _sync_config() -> dict[str, Any]:
    return {"world": SYNC_WORLD, "pairs": SYNC_PAIRS, "queries": SYNC_QUERIES, "docs": DOCS,
            "rouge_keys": ROUGE_KEYS, "backend": "gloo (127.0.0.1)"}


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
