"""Text metrics against TorchMetrics, jiwer, sacrebleu and rouge-score, on random sentences and uneven shards.

Every metric is checked three ways: its value against the oracles on one
process; the contract's invariant on random uneven shards (empty ones
included) in ``sm.simulate`` (and, for a few, in real gloo processes); and
bad input refused with an error naming the metric and the argument, leaving
the metric as it was. The batched edit distance has a plain twin here.
"""

from __future__ import annotations

import inspect
import random
import warnings
from typing import Any

import pytest
import torch
from catalogue import assert_same_state, state_of
from shards import assert_close, check_sharded

import scopedmetrics as sm
from scopedmetrics import text as smt
from scopedmetrics.text import _edit

tm_text = pytest.importorskip("torchmetrics.text")
jiwer = pytest.importorskip("jiwer")
sacrebleu = pytest.importorskip("sacrebleu")
rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

WORDS = "the a cat dog sat on mat . , is was Hello hello big small red it's 's (x) 3.5 12-3 & &amp; naïve".split()


class Rows(list):  # type: ignore[type-arg]
    """A list that slices to its own kind and has a ``shape``, so ``check_sharded`` can shard sentences."""

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    def __getitem__(self, i: Any) -> Any:
        out = super().__getitem__(i)
        return Rows(out) if isinstance(i, slice) else out


def sentences(n: int, seed: int, low: int = 0, high: int = 14, words: list[str] = WORDS) -> Rows:
    rng = random.Random(seed)
    return Rows(" ".join(rng.choice(words) for _ in range(rng.randint(low, high))) for _ in range(n))


def near(sents: list[str], seed: int) -> Rows:
    """Each sentence with some words replaced or dropped: a prediction that shares n-grams with it."""
    rng = random.Random(seed)
    out = Rows()
    for s in sents:
        ws = [rng.choice(WORDS) if rng.random() < 0.3 else w for w in s.split() if rng.random() > 0.1]
        out.append(" ".join(ws))
    return out


def references(n: int, seed: int, most: int = 3) -> Rows:
    rng = random.Random(seed)
    flat = sentences(n * most, seed + 1, low=1)
    return Rows(flat[i * most : i * most + rng.randint(1, most)] for i in range(n))


def plain_levenshtein(a: list[Any], b: list[Any], cost: int = 1) -> int:
    """The textbook dynamic programme, cell by cell: the twin of ``_edit.distances``."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (0 if x == y else cost))
    return row[-1]


# -- the batched edit distance ---------------------------------------------------------------------------


@pytest.mark.parametrize("cost", [0, 1, 2, 3])
def test_batched_distances_equal_the_cell_by_cell_twin(cost: int) -> None:
    rng = random.Random(cost)
    a = [[rng.randrange(5) for _ in range(rng.choice([0, 1, 3, 12, 40]))] for _ in range(1500)]  # > one bucket
    b = [[rng.randrange(5) for _ in range(rng.choice([0, 2, 7, 30]))] for _ in range(1500)]

    def flat(seqs: list[list[int]]) -> tuple[torch.Tensor, list[int]]:
        return torch.tensor([x for s in seqs for x in s], dtype=torch.int64), [len(s) for s in seqs]

    got = _edit.distances(flat(a), flat(b), cost).tolist()
    assert got == [plain_levenshtein(x, y, cost) for x, y in zip(a, b)]


def test_character_ids_cover_any_code_point() -> None:
    strings = ["naïve", "", "日本語", "😀a", "a\ud800b", "\udcff"]  # lone surrogates raised UnicodeEncodeError
    ids, lengths = _edit.char_ids(strings)
    assert lengths == [5, 0, 3, 2, 3, 1]
    assert ids.tolist() == [ord(c) for c in "".join(strings)]
    assert float(smt.CharErrorRate().update(["a\ud800b"], ["ab"]).compute()) == 0.5  # TorchMetrics: 0.5


# -- error rates -------------------------------------------------------------------------------------------

RATES = ["WordErrorRate", "CharErrorRate", "MatchErrorRate", "WordInfoLost", "WordInfoPreserved"]


@pytest.mark.parametrize("name", RATES)
def test_error_rates_equal_torchmetrics(name: str) -> None:
    preds, target = sentences(300, 1), sentences(300, 2)  # empty predictions and references included
    ours = getattr(smt, name)().update(preds, target)
    assert_close(ours.compute(), getattr(tm_text, name)()(list(preds), list(target)), atol=1e-6, rtol=1e-6)
    assert ours.errors.dtype == torch.int64 and ours.target_total.dtype == torch.int64  # exact sums


def test_word_and_character_error_rates_equal_jiwer() -> None:
    preds, target = sentences(300, 3, low=1), sentences(300, 4, low=1)  # jiwer refuses empty references
    assert smt.WordErrorRate().update(preds, target).compute().item() == pytest.approx(jiwer.wer(target, preds))
    assert smt.CharErrorRate().update(preds, target).compute().item() == pytest.approx(jiwer.cer(target, preds))


def spaced(sents: list[str], seed: int, gaps: list[str], ends: list[str]) -> Rows:
    """``sents`` (of one word or more) with words separated by random ``gaps``, and one of ``ends`` at each end."""
    rng = random.Random(seed)
    out = Rows()
    for s in sents:
        words = s.split()
        inner = "".join(w + rng.choice(gaps) for w in words[:-1]) + words[-1]
        out.append(rng.choice(ends) + inner + rng.choice(ends))
    return out


def test_word_and_character_error_rates_equal_jiwer_except_for_whitespace_as_documented() -> None:
    """docs/text.md: WER equals jiwer's unless a lone non-space whitespace character separates two words; CER
    unless a sentence starts or ends with whitespace. Both differences are TorchMetrics' tokens (kept)."""
    preds, target = sentences(200, 30, low=1), sentences(200, 31, low=1)
    runs = [" ", "  ", " \t", "\t\n", "\n\n ", "\xa0\xa0"]  # a lone space, or a run of two or more
    ends = ["", " ", "\t", "\n "]
    p, t = spaced(preds, 32, runs, ends), spaced(target, 33, runs, ends)
    assert smt.WordErrorRate().update(p, t).compute().item() == pytest.approx(jiwer.wer(list(t), list(p)))
    p, t = spaced(preds, 34, runs, [""]), spaced(target, 35, runs, [""])
    assert smt.CharErrorRate().update(p, t).compute().item() == pytest.approx(jiwer.cer(list(t), list(p)))
    for lone in ("\t", "\n", "\xa0"):  # jiwer joins the words a lone non-space separates; we (and TorchMetrics) split
        assert smt.WordErrorRate().update(f"a{lone}b", "a b").compute().item() == 0.0
        assert tm_text.WordErrorRate()([f"a{lone}b"], ["a b"]).item() == 0.0
        assert jiwer.wer("a b", f"a{lone}b") == 1.0
    assert smt.CharErrorRate().update(" hello", "hello").compute().item() == pytest.approx(0.2)  # jiwer strips
    assert tm_text.CharErrorRate()([" hello"], ["hello"]).item() == pytest.approx(0.2)
    assert jiwer.cer("hello", " hello") == 0.0
    p, t = spaced(preds, 36, ["\t", " "], ends), spaced(target, 37, ["\t", " "], ends)
    words = [" ".join(s.split()) for s in p], [" ".join(s.split()) for s in t]
    wer = smt.WordErrorRate().update(p, t).compute().item()
    assert wer == pytest.approx(jiwer.wer(words[1], words[0])) != jiwer.wer(list(t), list(p))
    cer = smt.CharErrorRate().update(p, t).compute().item()
    stripped = smt.CharErrorRate().update([s.strip() for s in p], [s.strip() for s in t]).compute().item()
    assert stripped == pytest.approx(jiwer.cer(list(t), list(p))) != cer


def test_match_error_rate_equals_jiwer_where_no_alignment_mixes_insertions_and_deletions() -> None:
    """TorchMetrics' (and our) MER divides by max(len); jiwer by its alignment's H+S+D+I: equal without D and I."""
    preds, target = Rows(["a b c", "a x c d"]), Rows(["a b", "a b c d"])  # one insertion; one substitution
    assert smt.MatchErrorRate().update(preds, target).compute().item() == pytest.approx(jiwer.mer(target, preds))
    wip = jiwer.wip(target, preds)
    assert smt.WordInfoPreserved().update(preds, target).compute().item() == pytest.approx(wip)


@pytest.mark.parametrize("name", RATES + ["EditDistance"])
def test_error_rates_hold_the_invariant_on_uneven_shards(name: str) -> None:
    preds, target = sentences(60, 5), sentences(60, 6, low=1)
    expected = getattr(smt, name)().update(preds, target).compute()
    check_sharded(getattr(smt, name)(), (preds, target), expected, seed=1)


def test_word_error_rate_in_gloo_and_threads(world: Any) -> None:
    preds, target = sentences(40, 7), sentences(40, 8, low=1)
    expected = tm_text.WordErrorRate()(list(preds), list(target))
    check_sharded(smt.WordErrorRate(), (preds, target), expected, world=world, world_sizes=(2,))


@pytest.mark.parametrize("kwargs", [{}, {"substitution_cost": 2}, {"reduction": "sum"}, {"reduction": "none"},
                                    {"reduction": None, "substitution_cost": 0}])
def test_edit_distance_equals_torchmetrics_on_short_strings(kwargs: dict[str, Any]) -> None:
    preds, target = sentences(200, 9, high=3), sentences(200, 10, high=3)  # under 25 characters
    assert max(map(len, preds + target)) < 25
    ours = smt.EditDistance(**kwargs).update(preds, target).compute()
    theirs = tm_text.EditDistance(**kwargs)(list(preds), list(target))
    assert ours.dtype == theirs.dtype
    assert_close(ours, theirs, atol=1e-6, rtol=1e-6)


def test_edit_distance_is_exact_where_torchmetrics_beam_overestimates() -> None:
    """TorchMetrics searches a band of 25 around the diagonal; we compute the exact distance (a documented gap)."""
    pred, ref = ", on", "Hello is on & - cat 3.5 hello 3.5 . the )"  # lengths 4 and 41
    exact = plain_levenshtein(list(pred), list(ref))
    assert smt.EditDistance(reduction="sum").update([pred], [ref]).compute().item() == exact == 38
    assert tm_text.EditDistance(reduction="sum")([pred], [ref]).item() == 39


def test_edit_distance_none_lists_pairs_in_rank_order() -> None:
    preds, target = sentences(30, 11), sentences(30, 12)

    def rank_fn(rank: int) -> torch.Tensor:
        part = slice(0, 10) if rank == 0 else slice(10, 30)
        return smt.EditDistance(reduction="none").update(preds[part], target[part]).compute()

    got = sm.simulate(rank_fn, 2)
    expected = torch.tensor([plain_levenshtein(list(p), list(t)) for p, t in zip(preds, target)], dtype=torch.int32)
    assert torch.equal(got[0], expected) and torch.equal(got[1], expected)
    with pytest.warns(UserWarning, match="the state is empty"):
        assert smt.EditDistance(reduction="none").update([], []).compute().shape == (0,)


def test_mask_leaves_out_sentences() -> None:
    preds, target = sentences(20, 13), sentences(20, 14, low=1)
    keep = torch.tensor([i % 3 != 0 for i in range(20)])
    masked = smt.WordErrorRate().update(preds, target, mask=keep)
    rows = [i for i in range(20) if i % 3]
    plain = smt.WordErrorRate().update([preds[i] for i in rows], [target[i] for i in rows])
    assert_same_state(state_of(masked), state_of(plain))


def test_a_lone_string_is_a_batch_of_one() -> None:
    assert smt.WordErrorRate().update("a b c", "a b d").compute().item() == pytest.approx(1 / 3)


@pytest.mark.parametrize("name", ["CHRFScore", "TranslationEditRate"])
def test_one_prediction_with_a_flat_list_of_references(name: str) -> None:
    pred, refs = "the cat sat on the mat", ["a cat sat on a mat", "the cat is on the mat"]
    ours = getattr(smt, name)().update([pred], refs).compute()
    assert_close(ours, getattr(smt, name)().update([pred], [refs]).compute())
    assert_close(ours, getattr(tm_text, name)()([pred], refs), rtol=1e-5)


# -- perplexity --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ignore_index", [None, -100, 3])
def test_perplexity_equals_torchmetrics(ignore_index: int | None) -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 9, 11, generator=g) * 3
    target = torch.randint(0, 11, (6, 9), generator=g)
    if ignore_index == -100:
        target[torch.rand(6, 9, generator=g) < 0.3] = -100
    ours = smt.Perplexity(ignore_index).update(logits, target)
    assert_close(ours.compute(), tm_text.Perplexity(ignore_index=ignore_index)(logits, target), rtol=1e-5)
    assert ours.total_log_probs.dtype == torch.float64


def test_perplexity_an_ignore_index_narrow_token_ids_cannot_hold_ignores_nothing() -> None:
    # torch compares in the tensor's dtype: -100 against uint8 ids was 156, so token 156 was dropped silently
    g = torch.Generator().manual_seed(3)
    loglik = -torch.rand(2, 5, generator=g)
    ids = torch.tensor([[156, 1, 2, 156, 0], [3, 156, 4, 5, 6]])
    want = smt.Perplexity().update(loglik, ids)
    got = smt.Perplexity(ignore_index=-100).update(loglik, ids.to(torch.uint8))
    assert int(got.count) == 10
    assert_close(got.compute(), want.compute())
    logits = torch.randn(1, 3, 300, generator=g)
    with_ignore = smt.Perplexity(ignore_index=-100).update(logits, torch.tensor([[156, 7, 299]], dtype=torch.int32))
    assert_close(with_ignore.compute(), smt.Perplexity().update(logits, torch.tensor([[156, 7, 299]])).compute())


def test_perplexity_from_token_log_likelihoods_equals_the_logits_form() -> None:
    """The vocabulary-parallel form: each rank of a tensor-parallel model holds a slice of the vocabulary."""
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 7, 10, generator=g)
    target = torch.randint(0, 10, (4, 7), generator=g)
    target[0, :3] = -100
    shards = logits.split(5, dim=-1)  # two vocabulary shards, as two tensor-parallel ranks hold them
    lse = torch.logsumexp(torch.stack([torch.logsumexp(s, -1) for s in shards]), 0)
    picked = logits.gather(-1, target.clamp(min=0)[..., None]).squeeze(-1)  # the rank holding the token gives it
    loglik = picked - lse
    by_logits = smt.Perplexity(ignore_index=-100).update(logits, target).compute()
    by_loglik = smt.Perplexity(ignore_index=-100).update(loglik, target).compute()
    assert_close(by_loglik, by_logits, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32])
def test_perplexity_of_logits_takes_token_ids_of_any_integer_dtype(dtype: torch.dtype) -> None:
    # gather() took the ids' own dtype and raised for uint8, int8 and int16
    g = torch.Generator().manual_seed(8)
    logits, ids = torch.randn(2, 5, 7, generator=g), torch.randint(0, 7, (2, 5), generator=g)
    want = smt.Perplexity().update(logits, ids).compute()
    assert torch.equal(smt.Perplexity().update(logits, ids.to(dtype)).compute(), want)


def test_perplexity_holds_the_invariant_on_uneven_shards() -> None:
    g = torch.Generator().manual_seed(2)
    logits, target = torch.randn(50, 5, 8, generator=g), torch.randint(0, 8, (50, 5), generator=g)
    check_sharded(smt.Perplexity(), (logits, target), tm_text.Perplexity()(logits, target), seed=2)


def test_perplexity_sums_in_float64() -> None:
    """Ten million tokens of log-likelihood -1.1 in float32 sums drift; the float64 state does not."""
    m = smt.Perplexity()
    loglik = torch.full((1000, 1000), -1.1)
    target = torch.zeros(1000, 1000, dtype=torch.int64)
    for _ in range(10):
        m = m.update(loglik, target)
    assert m.compute().item() == pytest.approx(torch.exp(torch.tensor(1.1, dtype=torch.float64)).item(), rel=1e-6)


# -- BLEU --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"smooth": True}, {"n_gram": 2}, {"n_gram": 3, "weights": [0.5, 0.3, 0.2]}])
def test_bleu_equals_torchmetrics(kwargs: dict[str, Any]) -> None:
    """TorchMetrics takes the first of two equally close reference lengths, we the shorter: shortest first, equal."""
    target = references(200, 20)
    preds = near([t[0] for t in target], 21)
    ours = smt.BLEUScore(**kwargs).update(preds, target).compute()
    assert ours.item() > 0
    shortest_first = [sorted(t, key=lambda r: len(r.split())) for t in target]
    assert_close(ours, tm_text.BLEUScore(**kwargs)(list(preds), shortest_first), rtol=1e-5)


@pytest.mark.parametrize("tokenize", ["13a", "none", "char", "intl"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_sacrebleu_score_equals_sacrebleu_and_torchmetrics(tokenize: str, lowercase: bool) -> None:
    target = sentences(200, 22, low=1)
    preds = near(list(target), 23)
    ours = smt.SacreBLEUScore(tokenize=tokenize, lowercase=lowercase).update(preds, target).compute()
    bleu = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=lowercase, smooth_method="none")
    assert ours.item() == pytest.approx(bleu.corpus_score(list(preds), [list(target)]).score / 100, rel=1e-5)
    theirs = tm_text.SacreBLEUScore(tokenize=tokenize, lowercase=lowercase)(list(preds), [[t] for t in target])
    assert_close(ours, theirs, rtol=1e-5)


def tied_references(n: int, seed: int) -> tuple[Rows, list[list[str]]]:
    """Predictions with two or three references each; mostly one reference ``k`` words longer than the prediction
    and one ``k`` shorter (equally close), the longer listed first."""
    rng = random.Random(seed)
    refs = sentences(n, seed, low=4)
    preds = near(list(refs), seed + 1)
    target = []
    for pred, ref in zip(preds, refs):
        words, c, k = ref.split(), len(pred.split()), rng.randint(1, 2)
        longer = " ".join((words + rng.choices(WORDS, k=c + k))[: c + k])
        tie = c - k >= 1 and rng.random() < 0.8
        target.append([longer, " ".join(words[: c - k]), ref] if tie else [longer, ref])
    return preds, target


def test_bleu_takes_the_shorter_of_two_equally_close_reference_lengths() -> None:
    """sacrebleu and NLTK take the shorter reference length on a tie; TorchMetrics the first reference's."""
    bleu2 = sacrebleu.metrics.BLEU(smooth_method="none", max_ngram_order=2)
    one, refs = ["a b c d e"], [["a b c d e f", "a b c d"]]
    assert smt.SacreBLEUScore(n_gram=2).update(one, refs).compute().item() == pytest.approx(1.0)
    assert bleu2.corpus_score(one, [[r] for r in refs[0]]).score / 100 == pytest.approx(1.0)
    assert smt.BLEUScore(n_gram=2).update(one, refs).compute().item() == pytest.approx(1.0)
    assert tm_text.BLEUScore(n_gram=2)(one, refs).item() == pytest.approx(0.8187, abs=1e-4)  # the first: 6 words
    preds, target = tied_references(200, 40)
    streams = [[t[min(k, len(t) - 1)] for t in target] for k in range(3)]  # sacrebleu: one stream per reference
    ours = smt.SacreBLEUScore().update(preds, target).compute().item()
    assert ours == pytest.approx(sacrebleu.metrics.BLEU(smooth_method="none").corpus_score(list(preds), streams).score
                                 / 100, rel=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"n_gram": 2}, {"n_gram": 3, "weights": [0.5, 0.3, 0.2]}])
def test_bleu_equals_nltk(kwargs: dict[str, Any]) -> None:
    bleu_score = pytest.importorskip("nltk.translate.bleu_score")
    n = kwargs.get("n_gram", 4)
    preds, target = tied_references(200, 41)
    keep = [i for i, p in enumerate(preds) if len(p.split()) >= n]  # NLTK counts 1 n-gram in a shorter prediction
    preds, target = Rows(preds[i] for i in keep), [target[i] for i in keep]
    weights = tuple(kwargs.get("weights", [1 / n] * n))
    theirs = bleu_score.corpus_bleu([[r.split() for r in t] for t in target], [p.split() for p in preds], weights)
    assert smt.BLEUScore(**kwargs).update(preds, target).compute().item() == pytest.approx(theirs, rel=1e-5)


@pytest.mark.parametrize("tokenize", ["13a", "none", "char", "intl"])
def test_sacrebleu_lowercases_each_line_before_tokenizing_as_sacrebleu(tokenize: str) -> None:
    """sacrebleu lowercases, strips the line's end, then tokenizes; TorchMetrics lowercases the tokens."""
    preds = ["İstanbul is big", "we met at &AMP; by the sea <SKIPPED> today", "a fine dash -\n", "İstanbul"]
    target = ["istanbul is big", "we met at & by the sea today", "a fine dash -", "istanbul"]
    ours = smt.SacreBLEUScore(n_gram=2, tokenize=tokenize, lowercase=True).update(preds, target).compute().item()
    bleu = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=True, smooth_method="none", max_ngram_order=2)
    assert ours == pytest.approx(bleu.corpus_score(preds, [target]).score / 100, rel=1e-6)
    alone = smt.SacreBLEUScore(tokenize="char", lowercase=True).update(["İstanbul"], ["istanbul"]).compute().item()
    bleu_char = sacrebleu.metrics.BLEU(tokenize="char", lowercase=True, smooth_method="none")
    assert alone == pytest.approx(bleu_char.corpus_score(["İstanbul"], [["istanbul"]]).score / 100, rel=1e-6)


def test_smoothed_sacrebleu_equals_add_one_smoothing() -> None:
    target = sentences(100, 24, low=1)
    preds = near(list(target), 25)
    ours = smt.SacreBLEUScore(smooth=True).update(preds, target).compute().item()
    bleu = sacrebleu.metrics.BLEU(smooth_method="add-k", smooth_value=1)
    assert ours == pytest.approx(bleu.corpus_score(list(preds), [list(target)]).score / 100, rel=1e-5)


def test_thirteen_a_tokenizes_like_sacrebleu() -> None:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    from scopedmetrics.text._tokenize import tokenizer

    mine, theirs = tokenizer("13a"), Tokenizer13a()
    for line in ["Hello, world! It's 3.5 (or 12-3) &amp; &quot;more&quot;.", "a-b 1,000.5 x.y <skipped>z", ""]:
        assert mine(line) == theirs(line).split()


@pytest.mark.parametrize("name", ["BLEUScore", "SacreBLEUScore", "CHRFScore", "TranslationEditRate", "ROUGEScore"])
def test_translation_metrics_hold_the_invariant_on_uneven_shards(name: str) -> None:
    target = references(40, 26)
    preds = near([t[0] for t in target], 27)
    expected = getattr(smt, name)().update(preds, target).compute()
    check_sharded(getattr(smt, name)(), (preds, target), expected, seed=3)


def test_bleu_in_gloo_and_threads(world: Any) -> None:
    target = references(30, 28)
    preds = near([t[0] for t in target], 29)
    expected = tm_text.BLEUScore()(list(preds), [list(t) for t in target])
    check_sharded(smt.BLEUScore(), (preds, target), expected, world=world, world_sizes=(2,))


def test_bleu_state_is_integer_counts() -> None:
    m = smt.BLEUScore().update(["a b c d e"], [["a b c d f"]])
    assert m.numerator.tolist() == [4, 3, 2, 1] and m.denominator.tolist() == [5, 4, 3, 2]
    assert all(t.dtype == torch.int64 for t in m.state_dict().values())


# -- chrF, TER, ROUGE, SQuAD -------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"n_word_order": 0}, {"n_char_order": 4, "beta": 1.0},
                                    {"lowercase": True, "whitespace": True}])
def test_chrf_equals_torchmetrics(kwargs: dict[str, Any]) -> None:
    target = references(150, 30)
    preds = near([t[0] for t in target], 31)
    preds[0] = "zzz"  # no reference shares an n-gram: it adds no reference statistics (as in TorchMetrics)
    ours = smt.CHRFScore(**kwargs).update(preds, target).compute()
    assert_close(ours, tm_text.CHRFScore(**kwargs)(list(preds), [list(t) for t in target]), rtol=1e-5)


def test_chrf_is_sacrebleu_chrf_with_eps_smoothing() -> None:
    """TorchMetrics (and we) average the F-score of every order, as sacrebleu's eps_smoothing=True (up to eps)."""
    target = sentences(150, 32, low=1)
    preds = near(list(target), 33)
    ours = smt.CHRFScore().update(preds, target).compute().item()
    chrf = sacrebleu.metrics.CHRF(word_order=2, eps_smoothing=True)
    assert ours == pytest.approx(chrf.corpus_score(list(preds), [list(target)]).score / 100, rel=2e-3)


def test_chrf_sentence_scores_in_rank_order() -> None:
    target = references(20, 34)
    preds = near([t[0] for t in target], 35)
    corpus, per_sentence = smt.CHRFScore(return_sentence_level_score=True).update(preds, target).compute()
    theirs = tm_text.CHRFScore(return_sentence_level_score=True)(list(preds), [list(t) for t in target])
    assert_close(corpus, theirs[0], rtol=1e-5)
    assert_close(per_sentence, theirs[1], rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"normalize": True}, {"no_punctuation": True, "lowercase": False},
                                    {"normalize": True, "asian_support": True}])
def test_ter_equals_sacrebleu(kwargs: dict[str, Any]) -> None:
    target = references(60, 36, most=2)
    preds = near([t[0] for t in target], 37)
    preds[0], preds[1] = "", preds[1] + " 日本 語です。"  # an empty prediction; Asian text
    options = {"normalized": kwargs.get("normalize", False), "no_punct": kwargs.get("no_punctuation", False),
               "case_sensitive": not kwargs.get("lowercase", True), "asian_support": kwargs.get("asian_support", False)}
    streams = [[t[min(i, len(t) - 1)] for t in target] for i in range(2)]  # sacrebleu: one stream per reference
    refs = Rows([t[0], t[1]] if len(t) > 1 else [t[0], t[0]] for t in target)
    ours = smt.TranslationEditRate(**kwargs).update(preds, refs).compute().item()
    assert ours == pytest.approx(sacrebleu.metrics.TER(**options).corpus_score(list(preds), streams).score / 100,
                                 rel=1e-6)


def test_ter_differs_from_torchmetrics_where_it_departs_from_sacrebleu() -> None:
    """TorchMetrics 1.9 gives an empty prediction 0 edits; sacrebleu (and we) count every reference word."""
    ours = smt.TranslationEditRate().update([""], [["a b c"]]).compute().item()
    assert ours == pytest.approx(sacrebleu.metrics.TER().corpus_score([""], [["a b c"]]).score / 100) == 1.0
    assert tm_text.TranslationEditRate()([""], [["a b c"]]).item() == 0.0


def test_ter_sentence_scores() -> None:
    target = references(10, 38)
    preds = near([t[0] for t in target], 39)
    corpus, per = smt.TranslationEditRate(return_sentence_level_score=True).update(preds, target).compute()
    assert per.shape == (10,)
    one_by_one = [smt.TranslationEditRate().update([p], [t]).compute() for p, t in zip(preds, target)]
    assert_close(per, torch.stack(one_by_one))
    assert_close(corpus, smt.TranslationEditRate().update(preds, target).compute())


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_equals_rouge_score(stem: bool) -> None:
    target = sentences(150, 40, low=1)
    preds = near(list(target), 41)
    ours = smt.ROUGEScore(use_stemmer=stem).update(preds, target).compute()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
    scores = [scorer.score(t, p) for p, t in zip(preds, target)]
    for key in ("rouge1", "rouge2", "rougeL"):
        for i, part in enumerate(("precision", "recall", "fmeasure")):
            want = sum(s[key][i] for s in scores) / len(scores)
            assert ours[f"{key}_{part}"].item() == pytest.approx(want, abs=1e-6), (key, part)


@pytest.mark.parametrize("kwargs", [{}, {"accumulate": "avg"}, {"rouge_keys": ("rouge1", "rouge4", "rougeL")},
                                    {"rouge_keys": "rouge2", "use_stemmer": True}])
def test_rouge_equals_torchmetrics_with_several_references(kwargs: dict[str, Any]) -> None:
    target = references(100, 42)
    preds = near([t[0] for t in target], 43)
    ours = smt.ROUGEScore(**kwargs).update(preds, target).compute()
    theirs_kwargs = {"rouge_keys": ("rouge1", "rouge2", "rougeL"), **kwargs}
    assert_close(ours, tm_text.ROUGEScore(**theirs_kwargs)(list(preds), [list(t) for t in target]), atol=1e-6)


def summaries(n: int, seed: int, multi: bool = False) -> tuple[Rows, Rows]:
    """Multi-line predictions and references: 0-4 sentences a line each, empty and punctuation-only lines included."""
    rng = random.Random(seed)
    preds, target = Rows(), Rows()
    for _ in range(n):
        refs = []
        for _ in range(rng.randint(2, 3) if multi else 1):
            lines = list(sentences(rng.randint(0, 4), rng.randrange(10**6), low=0, high=9))
            refs.append("\n".join(lines + [""] * (rng.random() < 0.2)))
        lines = [x for x in refs[0].split("\n") if rng.random() > 0.15]
        rng.shuffle(lines)  # sentences out of order: rougeLsum and rougeL part ways
        pred = "\n".join(near(lines, rng.randrange(10**6)) + ["", ". ,"][: rng.randint(0, 2)])
        preds.append(pred)
        target.append(refs if multi else refs[0])
    return preds, target


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_lsum_equals_rouge_score_on_uneven_shards(stem: bool) -> None:
    """rouge-score's rougeLsum (sentences at newlines), and the contract's invariant over random uneven shards."""
    preds, target = summaries(120, 44 + stem)
    scorer = rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], use_stemmer=stem)
    scores = [scorer.score(t, p) for p, t in zip(preds, target)]
    assert any(s["rougeL"].fmeasure != s["rougeLsum"].fmeasure for s in scores)  # the two keys differ here
    expected = {f"{key}_{part}": torch.tensor(sum(s[key][i] for s in scores) / len(scores))
                for key in ("rougeL", "rougeLsum") for i, part in enumerate(("precision", "recall", "fmeasure"))}
    metric = smt.ROUGEScore(use_stemmer=stem, rouge_keys=("rougeL", "rougeLsum"))
    assert_close(metric.update(preds, target).compute(), expected, atol=1e-6)
    check_sharded(metric, (preds, target), expected, seed=5, atol=1e-6)


@pytest.mark.parametrize("accumulate", ["best", "avg"])
def test_rouge_lsum_is_torchmetrics_given_sentences_at_newlines(accumulate: str, monkeypatch: Any) -> None:
    """The one difference from TorchMetrics 1.9 is the sentence splitter (nltk's punkt there): replace it, and equal."""
    rouge_fn = pytest.importorskip("torchmetrics.functional.text.rouge")
    monkeypatch.setattr(rouge_fn, "_split_sentence", lambda x: x.split("\n"))  # punkt would need a download
    preds, target = summaries(60, 46, multi=True)
    keys = ("rouge1", "rougeL", "rougeLsum")
    ours = smt.ROUGEScore(accumulate=accumulate, rouge_keys=keys).update(preds, target).compute()
    theirs = tm_text.ROUGEScore(accumulate=accumulate, rouge_keys=keys)(list(preds), [list(t) for t in target])
    assert_close(ours, theirs, atol=1e-6)


def squad_batch(n: int, seed: int) -> tuple[Rows, Rows]:
    answers = sentences(3 * n, seed, low=1, high=4)
    preds = Rows({"prediction_text": p, "id": str(i)} for i, p in enumerate(near(answers[::3], seed + 1)))
    target = Rows({"answers": {"text": answers[3 * i : 3 * i + 2], "answer_start": [0, 0]}, "id": str(i)}
                  for i in range(n))
    return preds, target


def test_squad_equals_torchmetrics_and_holds_the_invariant() -> None:
    preds, target = squad_batch(80, 44)
    expected = tm_text.SQuAD()(list(preds), list(target))
    assert_close(smt.SQuAD().update(preds, target).compute(), expected, atol=1e-4)
    check_sharded(smt.SQuAD(), (preds, target), expected, seed=4, atol=1e-4)


def test_squad_scores_an_unanswered_question_zero_with_a_warning() -> None:
    _, target = squad_batch(2, 45)
    with pytest.warns(UserWarning, match="unanswered question 1"):
        m = smt.SQuAD().update([{"prediction_text": target[0]["answers"]["text"][0], "id": "0"}], target)
    assert m.compute() == {"exact_match": torch.tensor(50.0), "f1": torch.tensor(50.0)}


def test_squad_an_empty_answer_list_is_unanswerable_as_in_squad_2() -> None:
    # it was counted as a question and scored 0 whatever the prediction; TorchMetrics raises
    preds = [{"prediction_text": p, "id": str(i)} for i, p in enumerate(["", "The.", "paris", "Lyon"])]
    target = [{"answers": {"text": t}, "id": str(i)} for i, t in enumerate([[], [], ["Paris"], []])]
    m = smt.SQuAD().update(preds, target)  # "" and "The." normalize to nothing: right; "Lyon": wrong
    assert m.compute() == {"exact_match": torch.tensor(75.0), "f1": torch.tensor(75.0)}


# -- the state is tensors, configuration follows TorchMetrics --------------------------------------------


def every_text_metric() -> list[sm.Metric]:
    return [getattr(smt, n)() for n in smt.__all__]


def test_states_are_tensors_and_pickle() -> None:
    import pickle

    for m in every_text_metric():
        assert all(isinstance(t, torch.Tensor) for t in m.state_dict().values()), type(m).__name__
        assert type(pickle.loads(pickle.dumps(m))) is type(m)


def test_an_empty_metric_warns_on_compute() -> None:
    for m in every_text_metric():
        with pytest.warns(UserWarning, match=f"{type(m).__name__}.compute: the state is empty"):
            m.compute()


@pytest.mark.parametrize("name", smt.__all__)
def test_positional_parameters_follow_torchmetrics(name: str) -> None:
    ours = [p for p in inspect.signature(getattr(smt, name).__init__).parameters.values()][1:]
    theirs = [p for p in inspect.signature(getattr(tm_text, name).__init__).parameters.values()][1:]
    theirs_named = [p.name for p in theirs if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in ours if p.kind == p.POSITIONAL_OR_KEYWORD][: len(theirs_named)] == theirs_named


# -- bad input: refused clearly, the metric unchanged ------------------------------------------------------

GOOD = {"pair": (["a b c", "d e"], ["a b", "d e f"]), "refs": (["a b c", "d e"], [["a b", "a c"], ["d e f"]])}
PAIR = ["WordErrorRate", "CharErrorRate", "MatchErrorRate", "WordInfoLost", "WordInfoPreserved", "EditDistance"]
REFS = ["BLEUScore", "SacreBLEUScore", "CHRFScore", "TranslationEditRate", "ROUGEScore"]

BAD = [
    ("preds_not_strings", lambda p, t: ([1, 2], t), TypeError, "preds"),
    ("preds_none", lambda p, t: (None, t), TypeError, "preds"),
    ("target_none", lambda p, t: (p, None), TypeError, "target"),
    ("target_numbers", lambda p, t: (p, [3, 4]), TypeError, "target"),
    ("mismatched_lengths", lambda p, t: (p[:1], t), ValueError, "preds"),
]


@pytest.mark.parametrize("name", PAIR + REFS)
@pytest.mark.parametrize(("case", "bad", "error", "arg"), BAD, ids=[b[0] for b in BAD])
def test_bad_batches_are_refused_naming_metric_and_argument(name: str, case: str, bad: Any, error: type,
                                                            arg: str) -> None:
    p, t = GOOD["pair" if name in PAIR else "refs"]
    m = getattr(smt, name)().update(p, t)
    before = state_of(m)
    with pytest.raises(error) as info:
        m.update(*bad(p, t))
    assert f"{name}.update" in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))


@pytest.mark.parametrize(("args", "error", "needle"), [
    ((torch.randn(2, 3, 5), torch.randint(0, 5, (2, 4))), ValueError, "`target`"),
    ((torch.randn(2, 3, 5), torch.randint(0, 5, (2, 3)).float()), TypeError, "`target`"),
    ((torch.randn(2, 3, 5), torch.full((2, 3), 5)), ValueError, "`target`"),
    ((torch.randint(0, 5, (2, 3, 5)), torch.randint(0, 5, (2, 3))), TypeError, "`preds`"),
    ((torch.randn(2, 3, 5).index_fill_(0, torch.tensor([0]), float("nan")), torch.zeros(2, 3, dtype=torch.long)),
     ValueError, "`preds`"),
    ((torch.rand(2, 3), torch.zeros(2, 3, dtype=torch.long)), ValueError, "`preds`"),  # an nll, not a log-lik
    ((torch.randn(4), torch.zeros(4, dtype=torch.long)), ValueError, "`preds`"),
    (([0.1], torch.zeros(1, dtype=torch.long)), TypeError, "`preds`"),
], ids=["wrong_target_shape", "float_target", "target_out_of_vocab", "integer_logits", "nan_logits",
        "positive_log_likelihood", "one_dim_preds", "list_preds"])
def test_perplexity_refuses_bad_batches(args: tuple[Any, Any], error: type, needle: str) -> None:
    g = torch.Generator().manual_seed(0)
    m = smt.Perplexity().update(torch.randn(2, 3, 5, generator=g), torch.randint(0, 5, (2, 3), generator=g))
    before = state_of(m)
    with pytest.raises(error) as info:
        m.update(*args)
    assert "Perplexity.update" in str(info.value) and needle in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))


@pytest.mark.parametrize(("make", "error", "needle"), [
    (lambda: smt.BLEUScore(n_gram=0), ValueError, "`n_gram`"),
    (lambda: smt.BLEUScore(weights=[0.5]), ValueError, "`weights`"),
    (lambda: smt.BLEUScore(smooth="yes"), TypeError, "`smooth`"),
    (lambda: smt.SacreBLEUScore(tokenize="zh"), ValueError, "`tokenize`"),
    (lambda: smt.EditDistance(reduction="max"), ValueError, "`reduction`"),
    (lambda: smt.EditDistance(substitution_cost=-1), ValueError, "`substitution_cost`"),
    (lambda: smt.CHRFScore(n_char_order=0), ValueError, "`n_char_order`"),
    (lambda: smt.CHRFScore(beta=-1.0), ValueError, "`beta`"),
    (lambda: smt.TranslationEditRate(normalize=1), TypeError, "`normalize`"),
    (lambda: smt.ROUGEScore(accumulate="sum"), ValueError, "`accumulate`"),
    (lambda: smt.ROUGEScore(rouge_keys=("rouge10",)), ValueError, "`rouge_keys`"),
    (lambda: smt.Perplexity(ignore_index="pad"), TypeError, "`ignore_index`"),
], ids=lambda x: "" if callable(x) or isinstance(x, type) else x.strip("`"))
def test_bad_configuration_is_refused_naming_metric_and_argument(make: Any, error: type, needle: str) -> None:
    with pytest.raises(error) as info:
        make()
    assert needle in str(info.value), str(info.value)


def test_a_prediction_without_references_is_refused() -> None:
    for name in REFS:
        m = getattr(smt, name)()
        with pytest.raises(ValueError, match=rf"{name}\.update: argument `target` holds no reference"):
            m.update(["a b"], [[]])


def test_squad_refuses_records_without_their_keys() -> None:
    preds, target = squad_batch(2, 46)
    m = smt.SQuAD().update(preds, target)
    before = state_of(m)
    with pytest.raises(ValueError, match=r"SQuAD\.update: argument `preds` has an item without the key"):
        m.update([{"id": "0"}], target)
    with pytest.raises(ValueError, match=r"SQuAD\.update: argument `target` has an item without the key"):
        m.update(preds, [{"answers": {"text": ["x"]}}])
    with pytest.raises(TypeError, match=r"SQuAD\.update: argument `target` must be a dict or a sequence"):
        m.update(preds, "answers")
    assert_same_state(before, state_of(m))


def test_an_empty_batch_changes_nothing() -> None:
    for m in every_text_metric():
        if isinstance(m, smt.Perplexity):
            args: tuple[Any, Any] = (torch.zeros(0, 3, 5), torch.zeros(0, 3, dtype=torch.long))
        elif isinstance(m, smt.SQuAD):
            args = ([], [])
        else:
            args = ([], [])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same_state(state_of(m.update(*args)), state_of(m))
