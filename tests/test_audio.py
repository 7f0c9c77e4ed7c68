"""Audio metrics against TorchMetrics, on random signals and uneven shards; bad input refused clearly."""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any

import pytest
import torch
from catalogue import assert_same_state, state_of
from shards import assert_close, check_sharded

from scopedmetrics import audio as sma
from scopedmetrics.audio import snr

tm_audio = pytest.importorskip("torchmetrics.audio")
tm_functional = pytest.importorskip("torchmetrics.functional.audio")

RATIOS = ["SignalNoiseRatio", "ScaleInvariantSignalNoiseRatio", "ScaleInvariantSignalDistortionRatio"]


def signals(shape: tuple[int, ...], seed: int, noise: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    target = torch.randn(shape, generator=g)
    return target + noise * torch.randn(shape, generator=g), target


@pytest.mark.parametrize("name", RATIOS)
@pytest.mark.parametrize("shape", [(64,), (8, 64), (4, 3, 50)])
@pytest.mark.parametrize("zero_mean", [False, True])
def test_ratios_equal_torchmetrics(name: str, shape: tuple[int, ...], zero_mean: bool) -> None:
    preds, target = signals(shape, 1)
    kwargs = {} if name == "ScaleInvariantSignalNoiseRatio" else {"zero_mean": zero_mean}
    ours = getattr(sma, name)(**kwargs).update(preds, target)
    assert_close(ours.compute(), getattr(tm_audio, name)(**kwargs)(preds, target), rtol=1e-5)
    assert ours.total_value.dtype == torch.float64


def test_float64_signals_keep_their_epsilon() -> None:
    preds, target = signals((6, 40), 2)
    preds, target = preds.double(), target.double()
    got = sma.ScaleInvariantSignalDistortionRatio().update(preds, target).compute()
    assert_close(got, tm_audio.ScaleInvariantSignalDistortionRatio()(preds, target), rtol=1e-6)


@pytest.mark.parametrize("name", RATIOS)
def test_ratios_hold_the_invariant_on_uneven_shards(name: str) -> None:
    preds, target = signals((40, 32), 3)
    check_sharded(getattr(sma, name)(), (preds, target), getattr(tm_audio, name)()(preds, target), seed=3)


def test_si_sdr_in_gloo_and_threads(world: Any) -> None:
    preds, target = signals((20, 32), 4)
    expected = tm_audio.ScaleInvariantSignalDistortionRatio()(preds, target)
    check_sharded(sma.ScaleInvariantSignalDistortionRatio(), (preds, target), expected, world=world,
                  world_sizes=(2,))


@pytest.mark.parametrize("mode", ["speaker-wise", "permutation-wise"])
@pytest.mark.parametrize("eval_func", ["max", "min"])
@pytest.mark.parametrize("speakers", [2, 3])
def test_pit_equals_torchmetrics(mode: str, eval_func: str, speakers: int) -> None:
    g = torch.Generator().manual_seed(speakers)
    target = torch.randn(6, speakers, 40, generator=g)
    preds = target[:, torch.randperm(speakers, generator=g)] + 0.4 * torch.randn(6, speakers, 40, generator=g)
    ours = sma.PermutationInvariantTraining(snr.scale_invariant_signal_distortion_ratio, mode, eval_func)
    theirs = tm_audio.PermutationInvariantTraining(tm_functional.scale_invariant_signal_distortion_ratio,
                                                   mode=mode, eval_func=eval_func)
    assert_close(ours.update(preds, target).compute(), theirs(preds, target), rtol=1e-5)


def test_pit_takes_torchmetrics_functionals_and_bound_keyword_arguments() -> None:
    preds, target = signals((5, 2, 30), 6)
    bound = functools.partial(tm_functional.signal_noise_ratio, zero_mean=True)
    ours = sma.PermutationInvariantTraining(bound).update(preds, target).compute()
    theirs = tm_audio.PermutationInvariantTraining(tm_functional.signal_noise_ratio, zero_mean=True)(preds, target)
    assert_close(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize("shape", [(4, 2, 3, 50), (4, 3, 2, 50)])
def test_pit_with_channels_is_the_best_mean_over_speakers_and_channels(shape: tuple[int, ...]) -> None:
    # speaker-wise stacked (batch, channels) values as if they were (batch,): -3.86 dB for 10.84 at (2, 2, 3, 200),
    # and an IndexError with fewer channels than speakers
    g = torch.Generator().manual_seed(8)
    target = torch.randn(*shape, generator=g)
    preds = target.flip(1) + 0.3 * torch.randn(*shape, generator=g)
    f = snr.scale_invariant_signal_distortion_ratio
    speakers = shape[1]
    perms = itertools.permutations(range(speakers))
    best = torch.stack([f(preds[:, list(perm)], target).mean((1, 2)) for perm in perms]).amax(0).mean()
    for mode in ("speaker-wise", "permutation-wise"):
        assert_close(sma.PermutationInvariantTraining(f, mode).update(preds, target).compute(), best.float(),
                     rtol=1e-5)


def test_pit_speaker_wise_refuses_a_metric_without_a_value_per_sample() -> None:
    m = sma.PermutationInvariantTraining(snr.scale_invariant_signal_distortion_ratio)
    with pytest.raises(ValueError, match=r"`metric_func` must give one value per sample .* got \(\)"):
        m.update(torch.randn(4, 2), torch.randn(4, 2))  # (batch, speakers): no time axis


def test_pit_holds_the_invariant_on_uneven_shards() -> None:
    preds, target = signals((30, 2, 24), 7)
    metric = sma.PermutationInvariantTraining(snr.scale_invariant_signal_noise_ratio)
    expected = tm_audio.PermutationInvariantTraining(tm_functional.scale_invariant_signal_noise_ratio)(preds, target)
    check_sharded(metric, (preds, target), expected, seed=7)


@pytest.mark.parametrize("name", RATIOS + ["PermutationInvariantTraining"])
def test_positional_parameters_follow_torchmetrics(name: str) -> None:
    def positional(cls: type) -> list[str]:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        return [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]

    theirs = positional(getattr(tm_audio, name))
    assert positional(getattr(sma, name))[: len(theirs)] == theirs


def make(name: str) -> Any:
    if name == "PermutationInvariantTraining":
        return sma.PermutationInvariantTraining(snr.scale_invariant_signal_distortion_ratio)
    return getattr(sma, name)()


BAD = [
    ("preds_list", lambda p, t: (p.tolist(), t), TypeError, "preds"),
    ("target_none", lambda p, t: (p, None), TypeError, "target"),
    ("integer_preds", lambda p, t: (p.long(), t), TypeError, "preds"),
    ("complex_preds", lambda p, t: (p.to(torch.complex64), t), TypeError, "preds"),
    ("shapes_differ", lambda p, t: (p[:, :, :-1], t), ValueError, "preds"),
    ("nan_preds", lambda p, t: (p.index_fill(0, torch.tensor([0]), float("nan")), t), ValueError, "preds"),
    ("inf_target", lambda p, t: (p, t.index_fill(0, torch.tensor([0]), float("inf"))), ValueError, "target"),
]


@pytest.mark.parametrize("name", RATIOS + ["PermutationInvariantTraining"])
@pytest.mark.parametrize(("case", "bad", "error", "arg"), BAD, ids=[b[0] for b in BAD])
def test_bad_batches_are_refused_naming_metric_and_argument(name: str, case: str, bad: Any, error: type,
                                                            arg: str) -> None:
    preds, target = signals((3, 2, 16), 8)
    m = make(name).update(preds, target)
    before = state_of(m)
    with pytest.raises(error) as info:
        m.update(*bad(preds, target))
    assert f"{name}.update" in str(info.value) and f"`{arg}`" in str(info.value), str(info.value)
    assert_same_state(before, state_of(m))


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(TypeError, match="SignalNoiseRatio: argument `zero_mean`"):
        sma.SignalNoiseRatio(zero_mean=1)
    with pytest.raises(ValueError, match="PermutationInvariantTraining: argument `mode`"):
        sma.PermutationInvariantTraining(snr.signal_noise_ratio, mode="best")
    with pytest.raises(ValueError, match="PermutationInvariantTraining: argument `eval_func`"):
        sma.PermutationInvariantTraining(snr.signal_noise_ratio, eval_func="mean")
    with pytest.raises(TypeError, match="PermutationInvariantTraining: argument `metric_func`"):
        sma.PermutationInvariantTraining("si_sdr")
    with pytest.raises(ValueError, match=r"PermutationInvariantTraining\.update: argument `preds` must have shape"):
        sma.PermutationInvariantTraining(snr.signal_noise_ratio).update(torch.randn(4), torch.randn(4))


def test_an_empty_batch_changes_nothing() -> None:
    for name in RATIOS + ["PermutationInvariantTraining"]:
        m = make(name)
        assert_same_state(state_of(m.update(torch.zeros(0, 2, 8), torch.zeros(0, 2, 8))), state_of(m))


def test_pit_refuses_more_speakers_than_the_search_takes_before_searching() -> None:
    # (batch, time) signals read as 16 speakers built 16! permutations and ran out of memory
    m = sma.PermutationInvariantTraining(snr.scale_invariant_signal_distortion_ratio)
    with pytest.raises(ValueError, match="has 16 speakers in dim 1; the search over every permutation takes at most 8"):
        m.update(torch.randn(2, 16), torch.randn(2, 16))
