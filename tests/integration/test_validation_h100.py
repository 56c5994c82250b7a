"""Recordings the device made on an H100 (tests/data/validation_h100), judged with the rules and
the H200 track record as committed, the runs read with the H100's datasheet ceilings (none were
measured on that card). No rule, threshold or record was fitted to an H100 run, and no track
record counts one.

- The fifteenth: a 4x batch made to each of the fourteenth's ten allocator pairs' before
  workloads, beside the pair's own fix again (session r7, interleaved), recorded after the close
  calls (D88) were written.
- The sixteenth: torch.compile made to the before workloads of six H200 pairs where kernel-fusion
  ranked above the planted finding with compile unmeasured (D96), beside each pair's own fix
  again (session r8, interleaved), to say whether kernel-fusion belongs above (D97). The device
  gave an H100, so it is judged here.
- The batch recording (session b, 2026-12-07, interleaved, D100): the H200 set's twelve 4x
  batch pairs on the models of the cross-GPU recording's CUDA-graph pairs, so that small-batch
  ranked above cuda-graphs there would be measured; its host ran those before workloads
  1.4-1.8x faster than the cross-GPU recording's (a launch-bound step moves with the host's
  speed), so across the two sessions the order stays unjudged. The pairs keep their H200 half.
- The seventeenth (2026-12-07, one H100 host, D108): the cross-GPU recording's twelve
  whole-step CUDA-graph pairs again (one run after the other, `PAIR-h17`) and the batch
  recording's twelve 4x batch pairs on the same before workloads again (interleaved), so that
  small-batch ranked above cuda-graphs is judged by two savings of one host.
- The cross-GPU recording: 38 pairs of the H200 set (its first recordings' pairs, one per
  technique, and its whole-step CUDA graphs on twelve models), each run timed one after the
  other as on the H200; the pairs keep their H200 half, so the tune half's are checks of rules
  tuned on the same workloads on another card.

The same four checks as the H200 pairs (test_validation_pairs.py), and D88's record on the
fifteenth."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable

import pytest
from helpers.batch_probes import PROBES, probe_after, probe_saving_ms
from helpers.validation import CHECKS, GRAPHS_UNMEASURED, STILL_RAISES_BATCH, cases, check

from analysis.facts import Facts
from analysis.roofline import datasheet_ceilings
from analysis.rules.catalog import CATALOG
from analysis.rules.memory import _fixed_gpu_ms, allocator_waiting_ms
from analysis.rules.recommend import recommend
from analysis.rules.track_record import OrderRecord
from analysis.rules.track_record_h200 import TRACK_RECORD
from tools.validation import evaluate as ev
from tools.validation import summaries
from tools.validation.rivals import (
    COMPILE_RIVALLED,
    FIFTEENTH,
    FOURTEENTH_MODELS,
    ONE_HOST_MODELS,
    PLANTED,
    SEVENTEENTH,
    SIXTEENTH,
    rival_verdicts,
)

WORKLOADS = ev.summary(ev.DATA_H100)
PAIRS = ev.pairs(WORKLOADS)


BATCH_SESSION = {  # the batch recording's pairs (session b, D100)
    *(f"batch-{m}" for m in ("bert", "recompute-bert", "recompute-convnext")),
    *(f"batch-{m}-b32" for m in ("llama", "neox", "opt", "qwen2")),
    *(f"batch-{m}-b512" for m in ("densenet", "ghostnet", "mixnet", "mobilenet", "regnety")),
}


def _above(*ids: str) -> str:
    return (
        f"{', '.join(ids)} {'ranks' if len(ids) == 1 else 'rank'} above it, unmeasured on the H100"
    )


# The seventeenth (D108): what the 4x batch and the whole-step graph saved on the same before
# workload on one H100 host (ms; each pair's own before run, recorded minutes apart).
ONE_HOST_SAVED_MS = {
    "bert-sdpa": (17.50, 9.60), "recompute-bert": (34.67, 25.74),
    "recompute-convnext": (29.27, 23.63), "llama": (24.31, 9.75), "neox": (8.86, 7.23),
    "opt": (6.90, 5.89), "qwen2": (19.65, 24.05), "densenet": (31.26, 47.08),
    "ghostnet": (45.07, 26.39), "mixnet": (29.50, 20.50), "mobilenet": (23.17, 18.45),
    "regnety": (45.56, 35.51),
}  # fmt: skip


def _one_host(model: str, *unmeasured: str) -> str:
    """A cross-GPU CUDA-graph pair's reason: small-batch ranks above it, which the cross-GPU
    and batch recordings measured on two hosts; the seventeenth's verdict on one host."""
    batch, graph = ONE_HOST_SAVED_MS[model]
    verdict = "rightly" if batch > graph else "wrongly"
    return (
        (_above(*unmeasured) + "; " if unmeasured else "")
        + f"small-batch ranks above it, measured on another host; {verdict} on one host "
        f"(graphs-{model}-h17: the 4x batch saved {batch:.2f} ms, the graph {graph:.2f})"
    )


MISSES = {
    ("allocator-llama-s-r7", "first"): GRAPHS_UNMEASURED + "; small-batch, above, saved more",
    ("allocator-mobilenet-r7", "first"): GRAPHS_UNMEASURED + "; small-batch, above, saved more",
    ("allocator-opt-s-r7", "within"): "29.83 vs 19.13 (the same pair on the H200: 15.85 vs "
    "17.42, within)",
    ("batch-allocator-opt-s", "within"): "30.38 vs 21.97",
    ("allocator-deit-s-r7", "within"): "32.42 vs 23.57 since D94 (the host's speed read off "
    "the trace); within with D93's constant costs",
} | {(p, "after_clean"): STILL_RAISES_BATCH for p in PAIRS if p.startswith("batch-allocator-")}
MISSES |= {
    (f"batch-allocator-{m}", "after_clean"): "the 4x batch's run still raises small-batch, "
    "wrongly: a larger batch again saved nothing in the batch probe (D100)"
    for m in PROBES["allocator"]["cases"]
}
# The cross-GPU recording: pairs of the H200 set's first recordings and its whole-step CUDA
# graphs, recorded one run after the other on an H100 (2026-12-05 19:17-19:24 UTC)
MISSES |= {
    ("alignment-peft", "first"): _above("kernel-fusion", "fp8"),
    ("alignment-peft", "within"): "4.77 vs 8.34",
    ("attention-bert", "first"): _above("kernel-fusion", "cuda-graphs") + "; small-batch, "
    "above, saved more in the batch recording (D100, another host)",
    ("graphs-bert-sdpa", "first"): _one_host("bert-sdpa"),
    ("graphs-coatnet", "first"): "not raised, rightly: the whole-step graph saved 1.73 ms of 70.27",
    ("graphs-convnext-t", "first"): "not raised, rightly: the whole-step graph saved 1.06 ms of "
    "49.71",
    ("graphs-densenet", "first"): _one_host("densenet", "kernel-fusion"),
    ("graphs-ghostnet", "first"): _one_host("ghostnet"),
    ("graphs-llama", "first"): _one_host("llama"),
    ("graphs-mixnet", "first"): _one_host("mixnet"),
    ("graphs-mobilenet", "first"): _one_host("mobilenet"),
    ("graphs-neox", "first"): _one_host("neox", "kernel-fusion"),
    ("graphs-opt", "first"): _one_host("opt", "kernel-fusion"),
    ("graphs-opt", "within"): "3.96 vs 6.38",
    ("graphs-qwen2", "first"): _one_host("qwen2"),
    ("graphs-recompute-bert", "first"): _one_host("recompute-bert"),
    ("graphs-recompute-convnext", "first"): _one_host("recompute-convnext", "memory-headroom"),
    ("graphs-regnety", "first"): _one_host("regnety"),
    ("graphs-swin", "first"): "not raised, rightly: the whole-step graph saved 1.70 ms of 64.53",
    ("host-preprocess-gpt2", "first"): _above("small-batch"),
    ("host-preprocess-gpt2", "within"): "1.96 vs -1.17",
    ("launch-bound-mlp", "within"): "3.98 vs 2.90",
    ("layout-resnet50", "first"): "estimated 0 (minor): the step counts as host-bound (GPU 29.81 "
    "of 31.37 ms, the host taken as the step), so no GPU saving counts; channels_last saved "
    "11.34 ms (1.06 on the H200)",
    ("layout-resnet50", "within"): "0.00 vs 11.34",
    ("optimizer-gpt2", "first"): _above("small-batch", "cuda-graphs"),
    ("optimizer-vit", "first"): _above("small-batch"),
}
# The seventeenth (D108): small-batch ranked above cuda-graphs on all twelve graph pairs,
# rightly on ten (the 4x batch saved more, or as much within the tie, on the same host)
MISSES |= {
    ("graphs-densenet-h17", "first"): "small-batch ranks above it and saved 31.26 ms against "
    "the graph's 47.08 (its before run 78.71 ms, the graph's 99.53)",
    ("graphs-qwen2-h17", "first"): _above("kernel-fusion") + "; small-batch, above it, saved "
    "19.65 ms against the graph's 24.05 (its before run 40.27 ms, the graph's 48.79)",
} | {  # as on the earlier recordings of these workloads
    (f"{pair}-h17", "first"): _above(above)
    for above, pairs in (
        ("kernel-fusion", ("graphs-llama", "graphs-neox", "batch-neox-b32", "batch-qwen2-b32")),
        ("memory-headroom", ("graphs-recompute-convnext", "batch-recompute-convnext")),
    )
    for pair in pairs
}
# The batch recording (session b, D100): kernel-fusion's compile and the recompute and allocator
# fixes were not made in its session. D101 (the GPU's fixed time per step) made seven of its
# estimates within (all twelve estimated low before: 0-15.03 ms against 3.17-18.30).
MISSES |= {
    ("batch-densenet-b512", "first"): _above("kernel-fusion"),
    ("batch-llama-b32", "first"): _above("kernel-fusion"),
    ("batch-mixnet-b512", "first"): _above("kernel-fusion"),
    ("batch-neox-b32", "first"): _above("kernel-fusion"),
    ("batch-qwen2-b32", "first"): _above("kernel-fusion"),
    ("batch-recompute-bert", "first"): _above("memory-headroom"),
    ("batch-recompute-convnext", "first"): _above("memory-headroom", "kernel-fusion"),
}
# D101: small-batch now counts the GPU's own gain at a larger batch, which puts it above three
# planted fixes it was not measured against
MISSES |= {
    ("batch-gpt2", "after_clean"): "the 4x batch's run raises small-batch, rightly: a further "
    "3.53x batch saved 4.70 ms of 61.0 in the gpu-bound batch probe (estimated 3.87; D101)",
    ("host-sync-gpt2", "first"): _above("small-batch"),
    ("precision-lightning", "first"): _above("small-batch"),
    ("recompute-gpt2", "first"): _above("small-batch"),
}
# D95 (a host-bound step's parts priced at its measured host time) raised the three fused-
# optimizer estimates: optimizer-gpt2 8.99 -> 10.39 and optimizer-vit 5.32 -> 6.88 ms (12.41
# and 7.52 measured), and this one past the tolerance.
MISSES |= {
    ("optimizer-gpt2-r2", "within"): "11.61 vs 8.23 since D95 (8.73 before it)",
}
# The sixteenth (session r8): compile saved more than the planted fix on all six workloads
# (test below), and more than kernel-fusion estimates on each: compile also shrinks the planted
# problem (fewer allocations to refill after empty_cache, a cheaper recompute), which the
# estimate, from the chains alone, does not count (D97).
_R8_UNMEASURED = "small-batch ranks above it, unmeasured in its session"
MISSES |= {
    ("fusion-compile-host-preprocess-llama", "first"): _R8_UNMEASURED,
    ("fusion-compile-host-preprocess-llama", "within"): "11.04 vs 21.96",
    ("fusion-compile-recompute-qwen2", "first"): "small-batch and cuda-graphs rank above it, "
    "unmeasured in its session; memory-headroom above it saved 20.99 ms against compile's 39.86",
    ("fusion-compile-allocator-llama-s", "first"): "small-batch and cuda-graphs rank above it, "
    "unmeasured in its session; memory-headroom above it saved 29.34 ms against compile's 37.06",
    ("fusion-compile-allocator-llama-s", "within"): "21.79 vs 37.06",
    ("fusion-compile-recompute-coatnet", "first"): "memory-headroom ranks above it and saved "
    "23.37 ms against compile's 48.77",
    ("fusion-compile-recompute-coatnet", "within"): "24.70 vs 48.77",
    ("allocator-llama-s-r8", "first"): _R8_UNMEASURED,
    ("host-preprocess-llama-r8", "first"): _R8_UNMEASURED + " (cuda-graphs too)",
    ("host-preprocess-llama-r8", "within"): "8.60 vs 18.42",
    ("recompute-neox-r8", "first"): _R8_UNMEASURED,
    ("recompute-neox-r8", "within"): "9.39 vs 21.87",
    ("recompute-qwen2-r8", "first"): _R8_UNMEASURED,
}


@pytest.fixture(scope="module")
def facts_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Facts]:
    store = tmp_path_factory.mktemp("validation-h100")
    return ev.scratch_store(store, WORKLOADS, ev.DATA_H100, ceilings=None)


@pytest.fixture(scope="module")
def results(facts_of: Callable[[str], Facts]) -> dict[str, ev.PairResult]:
    return {r.pair: r for r in ev.evaluate(facts_of, WORKLOADS)}


def test_the_recordings_are_an_h100s() -> None:
    summary = json.loads((ev.DATA_H100 / "summary.json").read_text())
    assert {i["versions"]["device"] for i in summary["invocations"]} == {"NVIDIA H100 80GB HBM3"}
    assert set(FIFTEENTH) <= set(PAIRS)
    assert {ev.half_of(p) for p in FIFTEENTH} == {"held-out"}
    assert set(SIXTEENTH) <= set(PAIRS)
    assert set(SEVENTEENTH) <= set(PAIRS)
    assert {ev.half_of(p) for p in SEVENTEENTH} == {"held-out"}
    # every other pair is one the H200 set holds, under the same name and half
    others = set(PAIRS) - set(FIFTEENTH) - set(SIXTEENTH) - set(SEVENTEENTH)
    assert others >= BATCH_SESSION
    assert len(others - BATCH_SESSION) == 38
    assert others <= set(ev.pairs(ev.summary()))
    assert {k for k in MISSES if k[0] not in PAIRS or k[1] not in CHECKS} == set()


def test_the_runs_are_read_against_the_h100s_datasheet(facts_of: Callable[[str], Facts]) -> None:
    for key in ("allocator-resnet34-r7-before", "batch-allocator-llama-s-after"):
        f = facts_of(key)
        assert f.spec is not None
        assert f.spec.name == "H100 SXM5 80GB"
        assert f.measured is None
        assert f.ceilings == datasheet_ceilings(f.spec)


@pytest.mark.parametrize(("pair", "name"), cases(PAIRS, MISSES))
def test_pair(results: dict[str, ev.PairResult], pair: str, name: str) -> None:
    check(results[pair], name)


def test_close_calls_on_pairs_no_rule_was_fitted_to(results: dict[str, ev.PairResult]) -> None:
    """D88: on the fifteenth, where the two findings' likely ranges (the H200 track record's)
    were apart, the ranking put the fix that measured the larger saving first every time (3 of
    3); where they overlapped, 5 of 7. With the record as it stood when the recording was made
    (before the fourteenth and the fifteenth's H200 runs joined it), the split was 5 of 5 apart
    and 3 of 5 overlapping (D88's table): the record a close call quotes moves with each
    recording. On the sixteenth every pair's ranges overlapped, and compile, which saved more
    on all six, ranked above the planted fix on 3 (D97)."""
    by_session = [[r for p, r in results.items() if p in ids] for ids in (FIFTEENTH, SIXTEENTH)]
    got = [summaries.order_record(rs, TRACK_RECORD) for rs in by_session]
    assert got == [
        OrderRecord(overlap_pairs=7, overlap_right=5, apart_pairs=3, apart_right=3),
        OrderRecord(overlap_pairs=6, overlap_right=3, apart_pairs=0, apart_right=0),
    ]
    # the two wrong orders, from the recorder's timings (both fixes' rounds interleaved with
    # one shared before run), not from the rules: the fix ranked lower saved more
    wrong = set()
    for m in FOURTEENTH_MODELS:
        own, batch = results[f"allocator-{m}-r7"], results[f"batch-allocator-{m}"]
        if ("small-batch" in own.above) != (batch.measured_ms > own.measured_ms):
            wrong.add(m)
    assert wrong == {"resnet34", "deit-s"}


def test_compile_belongs_above_the_planted_fix_where_kernel_fusion_ranked_it(
    results: dict[str, ev.PairResult],
) -> None:
    """The sixteenth (D97): on the six before workloads where kernel-fusion ranked above the
    planted finding on the H200 with compile unmeasured, compile saved more than the planted
    fix in the same session on every one, so ranking it above is right here; its estimate was
    short of the measured saving on all six."""
    measured = {p: results[p].measured_ms for p in SIXTEENTH}
    for source in COMPILE_RIVALLED:
        own, compiled = results[f"{source}-r8"], results[f"fusion-compile-{source}"]
        assert (own.planted, compiled.planted) == (PLANTED[source], "kernel-fusion")
        assert (own.half, compiled.half) == (ev.half_of(source), "held-out")
        tie = ev.WITHIN_POINTS / 100 * own.step_ms
        assert rival_verdicts(own.pair, measured, tie) == {"kernel-fusion": True}
        assert compiled.measured_ms > own.measured_ms
        assert compiled.est_ms is not None
        assert compiled.est_ms < compiled.measured_ms
        # where kernel-fusion ranked above the planted finding, the measurement justifies it
        assert "kernel-fusion" not in set(own.above) - set(own.justified)
        # each pair timed in interleaved rounds beside its own before run
        assert ev.round_savings(WORKLOADS, own.pair) is not None
        assert ev.round_savings(WORKLOADS, compiled.pair) is not None


def test_small_batch_above_the_graph_is_right_on_ten_of_twelve_on_one_host(
    results: dict[str, ev.PairResult],
) -> None:
    """The seventeenth (D108): small-batch ranked above cuda-graphs on all twelve graph pairs;
    on the same H100 host the 4x batch saved more (or as much, within the tie) on ten. The
    savings the cross-GPU pairs' reasons quote are this evaluation's."""
    judged = {}
    for graphs, batch in ONE_HOST_MODELS.items():
        graph_r, batch_r = results[f"{graphs}-h17"], results[f"{batch}-h17"]
        model = graphs.removeprefix("graphs-")
        assert ONE_HOST_SAVED_MS[model] == (
            round(batch_r.measured_ms, 2),
            round(graph_r.measured_ms, 2),
        )
        assert "small-batch" in graph_r.above
        judged[model] = "small-batch" in graph_r.justified
    assert {m for m, right in judged.items() if not right} == {"densenet", "qwen2"}


_PROBE_MISSES = {
    ("allocator", m): "small-batch grows the emptied cache's waiting with the overlap it "
    "stops (D103), which on these GPU-bound 4x runs is the host's, so it stays; the probe "
    "measured no saving (D100): the refill's cost at large batches (D102's ladder) is not counted"
    for m in PROBES["allocator"]["cases"]
} | {
    (probe, model): f"not raised: its estimate is under min_share_pct of the step; the further "
    f"batch saved {saved} ms (D101)"
    for probe, model, saved in (
        ("gpu-bound", "opt", "4.15 of 78.1"),
        ("gpu-bound-vision", "ghostnet", "4.61 of 87.1"),
        ("gpu-bound-vision", "mobilenet", "3.36 of 62.2"),
        ("gpu-bound-vision", "mixnet", "8.87 of 153.1"),
        ("gpu-bound-vision", "regnety", "9.81 of 195.5"),
    )
}


@pytest.mark.parametrize(
    ("probe", "model"),
    [
        pytest.param(p, m, marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
        for p in PROBES
        for m in sorted(PROBES[p]["cases"])
        for why in [_PROBE_MISSES.get((p, m))]
    ],
)
def test_small_batch_on_a_4x_batch_run_saves_what_it_estimates(
    facts_of: Callable[[str], Facts], probe: str, model: str
) -> None:
    """The further batch small-batch suggests on a 4x batch's after run, timed (D100, D101):
    on GPU-bound runs it saved 3.6-7.7 % of the step (five LMs) and 2.5-5.8 % (five timm
    models), the kernels' fixed time spread over more work; on the emptied cache's runs it
    cost time."""
    after = probe_after(probe, model)
    k, measured = probe_saving_ms(probe, model)
    found = {r.id: r for r in recommend(facts_of(after))}
    estimate = found["small-batch"].est_saving_ms if "small-batch" in found else 0.0
    step = ev.unprofiled_ms(WORKLOADS[after])
    assert abs(estimate - measured) <= ev.tolerance_ms(measured, step), (k, estimate, measured)


def test_the_allocators_waiting_at_4x_the_batch_grows_as_the_overlap_it_stops(
    facts_of: Callable[[str], Facts],
) -> None:
    """The fifteenth's ten 4x batch pairs on emptied-cache workloads (D103): each after run's
    allocator waiting (its share of the measured unprofiled step beyond its GPU and host
    time) against what small-batch predicts from the before run at 4x. Kept the same per
    step, the prediction is off by a median factor of 1.8 (|log| 0.61); grown with the
    overlap cudaFree's sync stops, 1.26 (0.23). No threshold was fitted to these pairs."""
    kernel_fixed_us = CATALOG["small-batch"].thresholds["kernel_fixed_us"]
    kept, grown = [], []
    for pair in (p for p in FIFTEENTH if p.startswith("batch-allocator-")):
        before, after = (facts_of(run) for run in ev.runs_of(pair))
        model, model_4x = before.step_model, after.step_model
        assert model is not None
        assert model_4x is not None
        fixed = min(_fixed_gpu_ms(before, kernel_fixed_us), model.gpu_ms)
        gpu_4x = fixed + 4 * (model.gpu_ms - fixed)
        host_4x = model.host_ms + before.region_idle_ms("data_loading", "host_code") * 3
        alloc, alloc_4x = allocator_waiting_ms(model, gpu_4x, host_4x)
        measured = model_4x.serial_share("alloc")
        kept.append(abs(math.log(alloc / measured)))
        grown.append(abs(math.log(alloc_4x / measured)))
    assert len(grown) == 10
    assert statistics.median(grown) < 0.3
    assert statistics.median(kept) > 0.5
