"""Per-language ASR and LM evaluation over uneven shards: WER, CER and perplexity for each language.

Run it in a simulated world of four ranks (threads of this process), or as
real processes joined by gloo:

    python examples/per_language_asr.py                     # sm.simulate, 4 ranks
    torchrun --nproc-per-node 4 examples/per_language_asr.py

(add ``--standalone`` to torchrun if port 29500 is taken). Every rank builds
the same toy corpus — utterances in four languages, recorded in sessions, so
the languages come in runs — and takes an uneven, contiguous shard of it: some
ranks never see some languages. Each rank folds its shard into
``Sliced(WordErrorRate())``, ``Sliced(CharErrorRate())`` and
``Sliced(Perplexity())`` with the language as the slice id (the perplexity
from toy per-token log-likelihoods, as a vocabulary-parallel LM gives them),
and one ``sm.compute`` reduces all three in one pass. Rank 0 prints a table,
each language next to the same metrics computed in one process on that
language's utterances alone, and the script exits non-zero if any differs.
"""

from __future__ import annotations

import math
import os
import random
import sys
from typing import Any

import torch
import torch.distributed as dist

import scopedmetrics as sm
from scopedmetrics.text import CharErrorRate, Perplexity, WordErrorRate
from scopedmetrics.wrappers import Sliced

LANGUAGES = ("en", "de", "fr", "sw")
WORDS = {
    "en": "the a cat dog sat on mat is was big small red house tree".split(),
    "de": "der die das katze hund sitzt auf matte ist war gross klein rot haus".split(),
    "fr": "le la chat chien assis sur tapis est etait grand petit rouge maison".split(),
    "sw": "paka mbwa ameketi juu ya mkeka ni alikuwa kubwa ndogo nyekundu nyumba".split(),
}
ERRORS = {"en": 0.06, "de": 0.12, "fr": 0.09, "sw": 0.22}  # how often the toy recogniser gets a word wrong
SURPRISE = {"en": 2.8, "de": 3.3, "fr": 3.1, "sw": 4.0}  # the toy LM's mean -log p per token
UTTERANCES = 400
MAX_TOKENS = 16
IGNORE = -100
WORLD = 4


def make_data(seed: int = 0) -> dict[str, Any]:
    """Sessions of 5-40 utterances, one language each; references, hypotheses and LM token log-likelihoods."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    langs: list[int] = []
    while len(langs) < UTTERANCES:
        lang = rng.choices(range(len(LANGUAGES)), weights=[45, 25, 20, 10])[0]
        langs += [lang] * rng.randint(5, 40)
    langs = langs[:UTTERANCES]
    refs, hyps = [], []
    tokens = torch.full((UTTERANCES, MAX_TOKENS), IGNORE)
    loglik = torch.zeros(UTTERANCES, MAX_TOKENS)
    for i, k in enumerate(langs):
        lang = LANGUAGES[k]
        ref = rng.choices(WORDS[lang], k=rng.randint(3, MAX_TOKENS))
        hyp = []
        for w in ref:
            r = rng.random()
            if r < ERRORS[lang]:
                hyp.append(rng.choice(WORDS[lang]))  # substitution
            elif r < 1.3 * ERRORS[lang]:
                continue  # deletion
            else:
                hyp.append(w)
            if rng.random() < 0.2 * ERRORS[lang]:
                hyp.append(rng.choice(WORDS[lang]))  # insertion
        refs.append(" ".join(ref))
        hyps.append(" ".join(hyp))
        n = len(ref)
        tokens[i, :n] = torch.tensor([WORDS[lang].index(w) for w in ref])
        nll = torch.empty(n).exponential_(1 / SURPRISE[lang], generator=g)
        loglik[i, :n] = -nll  # log p(token) <= 0; padding is left out by IGNORE
    return {"lang": torch.tensor(langs), "refs": refs, "hyps": hyps, "tokens": tokens, "loglik": loglik}


def shard_bounds(rank: int, world: int) -> tuple[int, int]:
    """Uneven contiguous shards: rank r's share is proportional to ``r + 1``."""
    total = world * (world + 1) // 2
    edges = [round(UTTERANCES * (r * (r + 1) // 2) / total) for r in range(world + 1)]
    return edges[rank], edges[rank + 1]


def make_metrics() -> dict[str, Any]:
    """The ASR metrics take text, the LM metric tensors: two groups, reduced together by ``sm.compute``."""
    return {
        "asr": sm.Collection(wer=Sliced(WordErrorRate(), LANGUAGES), cer=Sliced(CharErrorRate(), LANGUAGES)),
        "ppl": Sliced(Perplexity(ignore_index=IGNORE), LANGUAGES),
    }


def evaluate(data: dict[str, Any], rows: list[int], batch: int = 32) -> dict[str, Any]:
    """Fold ``rows`` of ``data`` in, batch by batch."""
    metrics = make_metrics()
    asr, ppl = metrics["asr"], metrics["ppl"]
    for start in range(0, len(rows), batch):
        idx = rows[start : start + batch]
        ids = data["lang"][idx]
        asr = asr.update([data["hyps"][i] for i in idx], [data["refs"][i] for i in idx], slice_ids=ids)
        ppl = ppl.update(data["loglik"][idx], data["tokens"][idx], slice_ids=ids)
    return {"asr": asr, "ppl": ppl}


def table(values: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``sm.compute``'s nested result as ``{language: {"wer": .., "cer": .., "ppl": ..}}``."""
    out: dict[str, dict[str, float]] = {}
    for name, per_lang in (("wer", values["asr"]["wer"]), ("cer", values["asr"]["cer"]), ("ppl", values["ppl"])):
        for lang, v in per_lang.items():
            out.setdefault(lang, {})[name] = float(v)
    return out


def rank_values(data: dict[str, Any], rank: int, world: int) -> dict[str, dict[str, float]]:
    """The values of every language: rank ``rank``'s shard folded in, reduced over every rank in scope."""
    lo, hi = shard_bounds(rank, world)
    return table(sm.compute(evaluate(data, list(range(lo, hi)))))


def one_process(data: dict[str, Any], lang: str) -> dict[str, float]:
    """The plain metrics (no ``Sliced``) on one language's utterances, in this process alone."""
    rows = [i for i, k in enumerate(data["lang"].tolist()) if LANGUAGES[k] == lang]
    hyps, refs = [data["hyps"][i] for i in rows], [data["refs"][i] for i in rows]
    with sm.use_reducer(sm.local()):
        return {
            "wer": float(WordErrorRate().update(hyps, refs).compute()),
            "cer": float(CharErrorRate().update(hyps, refs).compute()),
            "ppl": float(Perplexity(ignore_index=IGNORE).update(data["loglik"][rows], data["tokens"][rows]).compute()),
        }


def report(data: dict[str, Any], values: dict[str, dict[str, float]], world: int, how: str) -> int:
    """Print the table and check every language against one process; the exit status."""
    langs = data["lang"].tolist()
    bounds = [shard_bounds(r, world) for r in range(world)]
    print(f"{world} ranks ({how}), shard sizes {[hi - lo for lo, hi in bounds]}")
    print(f"{'language':<9}{'utterances':>11}  {'on ranks':<14}{'WER':>8}{'CER':>8}{'PPL':>9}")
    failures = 0
    for k, lang in enumerate(LANGUAGES):
        if lang not in values:
            continue
        count = langs.count(k)
        ranks = [r for r, (lo, hi) in enumerate(bounds) if k in langs[lo:hi]]
        truth = one_process(data, lang)
        ok = all(math.isclose(values[lang][m], truth[m], rel_tol=1e-5, abs_tol=1e-6) for m in truth)
        failures += not ok
        v = values[lang]
        print(f"{lang:<9}{count:>11}  {str(ranks):<14}{v['wer']:>8.4f}{v['cer']:>8.4f}{v['ppl']:>9.3f}  "
              f"[{'matches one process' if ok else 'MISMATCH'}]")
    missing = [lang for lang in LANGUAGES if lang not in values and LANGUAGES.index(lang) in langs]
    failures += len(missing)
    print("PASS" if failures == 0 else f"FAIL: {failures} language(s) differ from one process")
    return 0 if failures == 0 else 1


def main() -> int:
    """Under torchrun: this process is one rank. Otherwise: a simulated world of ``WORLD`` ranks."""
    data = make_data()
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        results = sm.simulate(lambda rank: rank_values(data, rank, WORLD), world_size=WORLD)
        if any(r != results[0] for r in results):
            print("FAIL: ranks disagree")
            return 1
        return report(data, results[0], WORLD, "sm.simulate")
    dist.init_process_group("gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        values = rank_values(data, rank, world)
        everyone: list[Any] = [None] * world
        dist.all_gather_object(everyone, values)  # only to check, for the report, that every rank got the same
        code = 0
        if rank == 0 and any(v != values for v in everyone):
            print("FAIL: ranks disagree")
            code = 1
        elif rank == 0:
            code = report(data, values, world, "gloo processes")
        dist.barrier()  # leave together: a gloo rank whose peers tear their connections down first may abort
        return code
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
