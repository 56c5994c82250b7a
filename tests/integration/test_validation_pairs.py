"""The recommendations against the before/after pairs recorded on an H200
(tests/data/validation_h200, tools/validation/evaluate.py): for every pair, the planted finding
ranks first (or behind its alternative, or findings whose fix measured a saving as large,
within 5 points of the step, on the same model or, in the rival recordings (the fourth, fifth
and thirteenth), on the same before workload in one session),
its estimate is within 35 % or 5 points of the measured saving, the "after" run does not raise
it, and no host-side finding claims more than the step's headroom.

What the rules still get wrong is listed in MISSES with the measurement, as strict xfails: a
new miss fails the suite, and so does a fixed one until it leaves the list. The table and the
counts per half are benchmarks/bench_validation.py's (README, BENCHMARKS.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.validation import CHECKS, GRAPHS_UNMEASURED, STILL_RAISES_BATCH, cases, check

from analysis.rules.track_record import MIN_RANGE_PAIRS
from analysis.rules.track_record_h200 import ORDER_RECORD, TRACK_RECORD
from tools.validation import evaluate as ev
from tools.validation import summaries

WORKLOADS = ev.summary()
PAIRS = ev.pairs(WORKLOADS)


# The sixteenth recording (D97, on an H100): compile's and the planted fix's measured savings on
# a pair's before workload, in one session
_H100_R8_MS = {"recompute-llama": (24.12, 22.25), "recompute-neox": (27.54, 21.87),
               "recompute-qwen2": (39.86, 20.99), "recompute-coatnet": (48.77, 23.37)}  # fmt: skip


def _on_h100(source: str) -> str:
    compiled_ms, own_ms = _H100_R8_MS[source]
    return f"; on an H100 compile saved {compiled_ms:.2f} ms against this fix's {own_ms:.2f} (D97)"


# (pair, check): why it misses, with the numbers (estimate vs measured, ms per step).
MISSES = {
    ("allocator-bert", "first"): "cuda-graphs ranks above it, unmeasured on this workload "
    "(small-batch, also above, saved more: 12.02 ms)",
    ("batch-allocator-bert", "after_clean"): "batch 64 still raises small-batch",
    ("batch-allocator-vit", "after_clean"): "batch 512 still raises small-batch",
    ("fusion-compile-bert-sdpa", "within"): "3.15 vs 6.35 on a host-bound step: the compiled "
    "BERT launched 87 kernels a step fewer, D96 counts 114; the rest of the saving is host "
    "work between the ops (as fusion-compile-bert)",
    ("fusion-compile-convnext", "within"): "4.95 vs 0.92: the compiled ConvNeXt's host time kept "
    "the step (as fusion-compile-vit)",
    ("recompute-bert", "within"): "19.16 vs 9.60: the same before workload measured 36.85 and "
    "46.31 ms minutes apart (batch-recompute-bert's before); against the latter the fix saved "
    "19.06",
    ("batch-allocator-gpt2", "after_clean"): "batch 64 still raises small-batch (19.1 ms)",
    ("alignment-peft", "first"): "fp8 (unmeasured on this model) ranks above it",
    ("alignment-peft", "within"): "4.77 vs 8.36: the batch × sequence misalignment's cost "
    "(7 × 1000 -> 8 × 1024) is not estimated, only the vocabulary's",
    ("attention-bert-r4", "first"): "cuda-graphs ranks above it, unmeasured in this session "
    "(in the fifth recording's it saved 8.07 ms against this fix's -1.63: right there)",
    ("attention-bert-r4", "within"): "3.34 vs 7.93 on a host-bound step: the eager attention's "
    "extra host ops are not counted (as attention-bert)",
    ("batch-allocator-gpt2", "within"): "7.31 vs 4.07 ms",
    ("batch-host-preprocess-gpt2", "after_clean"): "batch 64 still raises small-batch",
    ("attention-bert", "within"): "2.81 vs 4.65 on a host-bound step: the eager attention's "
    "extra host ops are not counted",
    ("fusion-compile-vit", "within"): "2.95 vs 0.23: torch.compile halved the GPU time but the "
    "compiled ViT's host time kept the step",
    ("fusion-compile-bert", "first"): "small-batch and cuda-graphs rank above it, unmeasured on "
    "this workload; torch.compile saved 13.75 ms of a 28.9 ms step",
    ("fusion-compile-bert", "within"): "5.34 vs 13.75 on a host-bound step: its ops' host work "
    "between the launches is not counted (4 694 recorded ops a step, 935 compiled)",
    ("launch-bound-mlp", "within"): "3.38 vs 2.03: the graph replay's own cost is not modelled",
    ("optimizer-gpt2", "within"): "9.10 vs 4.41: this recording's after run was 1.6x slower on "
    "the host than the same workload recorded again (optimizer-gpt2-r2: within)",
    ("recompute-vit-r5", "first"): "small-batch, unmeasured in this session, ranks above it "
    "(cuda-graphs, also above, saved more: 22.99 against 20.12 ms)",
    ("graphs-recompute-vit", "first"): "small-batch ranks above it, unmeasured in this session "
    "(it saved 15.64 ms on the fourth recording's before, a 27.6 ms step)",
    ("attention-bert-r5", "within"): "2.89 vs -1.63: on this machine sdpa saved nothing on the "
    "host-bound step (24.59 -> 26.22 ms; 26.15 -> 26.13 in the same machine's first call)",
}
# The ninth recording (D80): models no rule was tuned on, recorded after the rules' last change.
MISSES |= {
    ("alignment-llama", "first"): "estimated 0 (minor): the step is host-bound (host 36.3 ms, "
    "GPU 23.5), so aligned GEMMs save nothing per step",
    ("alignment-llama", "within"): "0 vs 3.19 ms per token: what was measured is 8 x 1024 "
    "tokens against 7 x 1000 for the same host time per step, not the alignment",
    ("attention-llama", "within"): "13.88 vs 8.00: the S x S kernels' 14.6 ms less a fused "
    "kernel's 0.69 ms, against 38.09 -> 30.05 ms measured",
    ("batch-llama", "first"): "cuda-graphs ranks above it, unmeasured at batch 2",
    ("batch-llama", "after_clean"): "batch 8 still raises small-batch, rightly: on it a 4x batch "
    "saved 17.86 ms (batch-llama-b32)",
    ("batch-mobilenet", "first"): "cuda-graphs ranks above it, unmeasured at batch 32",
    ("batch-mobilenet", "after_clean"): "batch 128 still raises small-batch, rightly: on it a 4x "
    "batch saved 26.58 ms (batch-mobilenet-b512)",
    ("batch-swin-b512", "within"): "4.04 vs 9.90",
    ("fusion-compile-mobilenet", "within"): "3.28 vs -2.31: the compiled step was slower",
    ("host-preprocess-llama", "first"): "cuda-graphs (unmeasured on this workload: capture "
    "drops the batch built on the host) and pageable-memcpy (unmeasured) rank above it; "
    "small-batch, also above, saved 33.22 against 15.09 in the thirteenth recording",
    ("host-preprocess-llama", "within"): "10.89 vs 19.10",
    ("layout-regnety", "first"): "estimated 0 (minor): the modelled host time bounds the step; "
    "1.65 measured",
    ("optimizer-llama", "within"): "3.96 vs 9.03",
    ("pageable-regnety", "within"): "40.90 vs 21.06",
    ("tf32-swin", "after_clean"): "the TF32 run still raises tf32 (4.14 ms): 7.96 ms of its bmm, "
    "mm and convolution kernels per step ran as fp32 kernels with TF32 allowed (16.6 TFLOP/s)",
}
# The tenth recording (D81): GPT-NeoX, DenseNet-121, CoAtNet-0, recorded blind to D81's changes.
MISSES |= {
    ("batch-coatnet-b512", "first"): "not raised: the GPU is busy 98 % of the step, and even "
    "with its fixed time (D101) the estimate (about 3.0 ms) is under min_share_pct; it saved "
    "6.18 ms of 63.24",
    ("batch-coatnet-b512", "within"): "0 vs 6.18",
    ("batch-densenet", "after_clean"): "batch 128 still raises small-batch, rightly: on it a 4x "
    "batch saved 17.39 ms (batch-densenet-b512)",
    ("batch-neox-b32", "first"): "fp8 ranks above it, unmeasured on this model (kernel-fusion, "
    "also above, saved more)",
    ("fusion-compile-densenet", "within"): "10.91 vs 6.93: the compiled DenseNet halved its GPU "
    "time (46.6 -> 27.8 ms) but its host time kept the step (57.02 ms)",
    ("graphs-coatnet", "first"): "not raised, rightly: the whole-step graph saved 1.67 ms of 63.36",
    ("graphs-neox", "first"): "not raised, rightly: the whole-step graph saved -0.55 ms",
    ("optimizer-coatnet", "first"): "kernel-fusion and small-batch, unmeasured on this model "
    "(small-batch measured 6.18), rank above it",
    ("optimizer-coatnet", "within"): "2.04 vs 6.55",
    ("pageable-coatnet", "first"): "kernel-fusion, unmeasured on this model, ranks above it",
    ("recompute-coatnet", "first"): "kernel-fusion, unmeasured on this model, ranks above it"
    + _on_h100("recompute-coatnet"),
    # D82 (the allocator calls' share of the serialization) counts 2.02 ms too much here
    ("allocator-gpt2", "within"): "8.04 vs 5.53: the step's serialization against a "
    "fix that saved 5.53 (9.46 in allocator-gpt2-r4, the same change recorded again)",
}
# The eleventh recording (D82): Qwen2, OPT, ConvNeXt-T, GhostNet, MixNet-S, recorded to judge
# D81 and D82; the twelfth measured the rivals ranked above its planted findings on the same
# models' tuned runs (a 4x batch: Qwen2 9.04, OPT 9.50, MixNet 17.39 ms; the whole step as a
# CUDA graph: 7.13, 3.73, 31.56), and torch.compile to judge D83.
# The thirteenth made those rivals to the planted pairs' own before workloads (r6).
MISSES |= {
    ("allocator-qwen2", "first"): GRAPHS_UNMEASURED + "; small-batch, also above, saved more on it "
    "(19.90 ms against 18.29 in the thirteenth recording)",
    ("host-sync-opt", "first"): "estimated 0.08 (minor): the step is host-bound, so the syncs "
    "cost their own wait; removing them saved 1.11 ms of 32.92",
    ("host-sync-qwen2", "first"): "not raised, rightly: removing the sync saved -1.62 ms",
    ("layout-convnext-t", "first"): "not raised, rightly: channels_last saved 0.84 ms of 45.79",
    ("layout-mixnet", "within"): "2.71 vs -5.20: channels_last made MixNet's step slower",
    ("recompute-opt", "first"): "cuda-graphs ranks above it and saved less on this workload "
    "(18.71 ms against 23.45 in the thirteenth recording; small-batch saved 29.30)",
    # the twelfth's own pairs
    ("batch-convnext-t-b512", "first"): "not raised: the GPU is busy 98 % of the step; with "
    "its fixed time (D101) the estimate (about 2.2 ms) is under min_share_pct; a 4x batch "
    "saved 6.58 ms of 45.33",
    ("batch-convnext-t-b512", "within"): "0 vs 6.58",
    ("batch-opt-b32", "first"): "host-sync ranks above it; removing the sync saved 1.11 ms "
    "on this model",
    ("fusion-compile-mixnet", "within"): "7.69 vs 1.96: the compiled MixNet launched 278 kernels "
    "a step fewer, D96 counts 289, but each compiled launch cost the host 16 % more",
    ("fusion-compile-opt", "within"): "3.96 vs 1.89",
    ("graphs-convnext-t", "first"): "not raised, rightly: the whole-step graph saved 1.07 ms of "
    "45.17",
    ("graphs-mixnet", "first"): "small-batch ranks above it; a 4x batch saved 17.39 ms against "
    "the graph's 31.56",
    ("graphs-opt", "first"): "small-batch and kernel-fusion rank above it; a 4x batch saved 9.50 "
    "ms, torch.compile 1.89, the graph 3.73",
    ("fusion-compile-resnet50", "within"): "1.20 vs 7.97: the compiled ResNet-50 cut 159 "
    "launches a step; D96 counts 15 (three kernels kept per batch norm)",
}


# The thirteenth recording (tools/validation/rivals.py, session r6): a 4x batch and CUDA graphs
# made to ten planted pairs' before workloads, each beside the pair's own fix again.
MISSES |= {
    ("batch-allocator-llama", "after_clean"): STILL_RAISES_BATCH,
    ("batch-allocator-mixnet", "after_clean"): STILL_RAISES_BATCH,
    ("batch-allocator-opt", "after_clean"): STILL_RAISES_BATCH,
    ("batch-allocator-qwen2", "after_clean"): STILL_RAISES_BATCH,
    ("batch-host-preprocess-llama", "after_clean"): STILL_RAISES_BATCH,
    ("batch-recompute-opt", "after_clean"): STILL_RAISES_BATCH,
    ("host-preprocess-llama-r6", "first"): "cuda-graphs ranks above it, unmeasured on this "
    "workload (capture drops the batch built on the host); small-batch, also above, saved "
    "33.22 ms against 15.09",
    # D87 (the checkpointed forward's slower ops, 0.4 x the checkpoint's host time) moves
    # memory-headroom above a rival that measured more, or past the same pair again
}


# The fourteenth recording (D86 held out): small-batch (and cuda-graphs) rank above the allocator
# fix on seven of its ten workloads; the fifteenth measured the 4x batch on each (session r7).
MISSES |= {
    ("allocator-llama-s", "first"): GRAPHS_UNMEASURED + "; small-batch, also above, saved more "
    "in the fifteenth recording (39.14 ms against 35.01)",
    ("allocator-neox-s", "within"): "21.51 vs 14.79 (D86's floor, the calls' own host time, "
    "over by 41 %)",
    ("allocator-resnet34", "first"): GRAPHS_UNMEASURED + "; small-batch, also above, saved more "
    "in the fifteenth recording (23.03 ms against 12.86)",
}
# The fifteenth (rivals.py, session r7): the 4x batch on the fourteenth's before workloads,
# beside each pair's own fix again, held out whole (D88's close calls were written before it).
MISSES |= {
    ("allocator-neox-s-r7", "within"): "20.90 vs 11.74 (as allocator-neox-s: 21.51 vs 14.79)",
    ("batch-allocator-regnetx", "first"): "memory-headroom ranks above it; in this session the "
    "allocator fix saved 19.95 ms against the 4x batch's 24.61",
} | {
    (f"batch-allocator-{m}", "after_clean"): STILL_RAISES_BATCH
    for m in ("convnext-n", "deit-s", "efficientnet-b0", "llama-s", "mobilenet", "neox-s",
              "opt-s", "regnetx", "resnet34", "resnext")
}  # fmt: skip
# D94 (the profiler's cost from the trace's own aten::empty time) moved the host time of every
# model-based step: these checks failed since, 21 others passed since (both halves gained).
MISSES |= {
    ("allocator-densenet", "first"): "small-batch ranks above it since D94; this fix 45.06 "
    "estimated, 45.29 measured",
    ("allocator-mixnet", "within"): "33.41 vs 24.16 since D94",
    ("layout-resnet50", "within"): "3.90 vs 1.06 since D94 (1.81 with D93's constant costs)",
    ("allocator-efficientnet-b0", "first"): GRAPHS_UNMEASURED + "; small-batch, also above, "
    "saved more in the fifteenth recording (54.06 ms against 29.59)",
    ("allocator-opt-s", "first"): GRAPHS_UNMEASURED + "; small-batch, also above, saved more "
    "in the fifteenth recording (23.95 ms against 15.96)",
    ("batch-allocator-convnext-n", "first"): "memory-headroom ranks above it since D94; in the "
    "fifteenth recording the 4x batch saved 31.06 ms against the allocator fix's 18.76",
    ("graphs-opt", "within"): "1.42 vs 3.73 since D94",
    ("optimizer-swin-r6", "first"): "cuda-graphs ranks above it since D94, unmeasured on this "
    "workload (small-batch, also above, saved more: 58.82 ms against 27.48)",
    ("optimizer-vit", "first"): "small-batch ranks above it since D94; this fix 7.20 estimated, "
    "6.57 measured",
    ("recompute-gpt2-reentrant", "first"): "kernel-fusion ranks above it since D94; this fix "
    "7.88 estimated, 8.74 measured",
}

# D95 (a host-bound step's parts share its measured host time; checkpoint_host_factor refitted
# to 1.6 on the tune half) raised the optimizer and checkpointing estimates: four checks
# passed since, these two failed.
MISSES |= {
    ("graphs-recompute-convnext", "first"): "memory-headroom ranks above it since D95 (29.87 "
    "estimated); the checkpointing fix saved 25.59 ms against the graph's 32.84",
    ("recompute-neox-r6", "within"): "23.82 vs 15.90 since D95 (21.34 before it)",
}
# D96 (a chain whatever the gap, three kernels kept per reduction) raised kernel-fusion on the
# transformers' before runs, where torch.compile is unmeasured on the H200; on a llama of its own
# it saved 12.15 ms of 24.70 (fusion-compile-llama, estimated 13.15). On an H100 (D97, the
# sixteenth recording) compile saved more than the planted fix on each of these workloads.
_COMPILE_UNMEASURED = "kernel-fusion ranks above it since D96, unmeasured on the H200"
MISSES |= {
    ("attention-bert-r5", "first"): _COMPILE_UNMEASURED + " (4.62 estimated); small-batch "
    "and cuda-graphs, also above, saved more",
    ("batch-llama-b32", "first"): _COMPILE_UNMEASURED + " (19.01 estimated against the 4x "
    "batch's 16.16; it saved 17.86)",
    ("recompute-llama", "first"): _COMPILE_UNMEASURED + " (18.16 against 15.86); small-batch, "
    "also above, saved more" + _on_h100("recompute-llama"),
    ("recompute-llama-r6", "first"): _COMPILE_UNMEASURED + " (28.54 against 25.81); "
    "small-batch and cuda-graphs, also above, saved more" + _on_h100("recompute-llama"),
    ("recompute-neox-r6", "first"): _COMPILE_UNMEASURED
    + " (24.32 against 23.82)"
    + _on_h100("recompute-neox"),
    ("recompute-qwen2", "first"): _COMPILE_UNMEASURED + " (34.41 against 28.77); small-batch "
    "and cuda-graphs, also above, saved more" + _on_h100("recompute-qwen2"),
    ("recompute-qwen2-r6", "first"): _COMPILE_UNMEASURED + " (32.59 against 25.48); "
    "small-batch and cuda-graphs, also above, saved more" + _on_h100("recompute-qwen2"),
}


# D101 (the GPU time a larger batch does not grow): small-batch's estimate on GPU-bound steps
# rose by the GPU's own gain, so it ranked above four more planted fixes (two since D103),
# and seven 4x batch runs raise it again (5-8 % of their step). The H100's gpu-bound batch
# probe measured that gain on four LMs' and gpt2's 4x batch runs: a further batch saved
# 3.0-4.7 ms per step.
_GPU_GAIN = (
    "the 4x batch's run raises small-batch since D101 for the GPU's own gain at a larger "
    "batch, which a further batch on GPU-bound 4x batch runs measured (3.0-4.7 ms per step, "
    "the H100's gpu-bound batch probe)"
)
MISSES |= {
    ("fusion-compile-resnet50", "first"): "small-batch ranks above it since D101, unmeasured on "
    "this workload",
    ("precision-lightning", "first"): "small-batch ranks above it since D101, unmeasured on this "
    "workload (tf32, also above, saved more)",
} | {
    (p, "after_clean"): _GPU_GAIN
    for p in ("batch-gpt2", "batch-neox", "batch-recompute-bert", "batch-recompute-gpt2",
              "batch-recompute-llama", "batch-recompute-neox", "batch-recompute-qwen2")
}  # fmt: skip
# D103 (the allocator's waiting at a larger batch grows with the overlap cudaFree's sync
# stops): small-batch's estimate fell on the emptied-cache workloads, nearer the measured
# saving on both pairs below, and memory-headroom, which overestimates there, now ranks above
# it by under a millisecond.
MISSES |= {
    ("batch-allocator-opt", "first"): "memory-headroom ranks above it since D103 (23.74 against "
    "23.64 estimated); on the same workload its fix saved 14.56 ms, the 4x batch 22.46",
    ("batch-allocator-vit", "first"): "memory-headroom ranks above it since D103 (14.38 against "
    "13.63 estimated); on this model its fix saved 10.63 ms, the 4x batch 14.99",
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ev.PairResult]:
    runs = {k for p in PAIRS for k in ev.runs_of(p)}
    workloads = {k: w for k, w in WORKLOADS.items() if k in runs}
    folder: Path = tmp_path_factory.mktemp("validation")
    return {r.pair: r for r in ev.evaluate(ev.scratch_store(folder, workloads), workloads)}


def test_every_pair_has_a_half_and_every_miss_a_pair() -> None:
    assert {p: ev.HALVES.get(p) for p in PAIRS if p not in ev.HALVES} == {}
    assert {k for k in MISSES if k[0] not in PAIRS or k[1] not in CHECKS} == set()
    # Both halves are judged, and on enough pairs for the note's counts to mean something.
    halves = [ev.HALVES[p] for p in PAIRS]
    assert halves.count("tune") >= 12
    assert halves.count("held-out") >= 12


@pytest.mark.parametrize(("pair", "name"), cases(PAIRS, MISSES))
def test_pair(results: dict[str, ev.PairResult], pair: str, name: str) -> None:
    check(results[pair], name)


def test_the_track_record_the_recommendations_show_is_the_rules_current_one(
    results: dict[str, ev.PairResult],
) -> None:
    """analysis/rules/track_record_h200.py is what tools/track_record.py writes from these
    results: a rule change that moves an estimate makes it stale until it is written again."""
    assert summaries.track_record(list(results.values())) == TRACK_RECORD
    # and the close calls' record of the ranking's order on the rival pairs (D88)
    assert summaries.order_record(list(results.values()), TRACK_RECORD) == ORDER_RECORD
    assert sum(r.pairs for r in TRACK_RECORD.values()) == len(PAIRS)


def test_each_likely_range_holds_most_of_its_pairs(results: dict[str, ev.PairResult]) -> None:
    """The range a recommendation shows (measured over estimated saving, 10th to 90th
    percentile) is given for the findings raised on MIN_RANGE_PAIRS pairs or more (held out
    from tuning where they are enough), and holds about 80 % of their measured savings."""
    ranged = {k: r for k, r in TRACK_RECORD.items() if r.low_ratio is not None}
    assert {"small-batch", "cuda-graphs", "memory-headroom", "kernel-fusion"} <= set(ranged)
    for rec_id, record in TRACK_RECORD.items():
        raised = [
            r.measured_ms / r.est_ms
            for r in results.values()
            if r.planted == rec_id
            and r.est_ms
            and r.est_ms > 0
            and (r.half == "held-out" or not record.range_held_out)
        ]
        if rec_id not in ranged:
            assert len(raised) < MIN_RANGE_PAIRS, rec_id
            continue
        assert record.range_pairs == len(raised) >= MIN_RANGE_PAIRS
        assert record.low_ratio is not None
        assert record.high_ratio is not None
        inside = [x for x in raised if record.low_ratio - 0.005 <= x <= record.high_ratio + 0.005]
        assert len(inside) >= 0.7 * len(raised), (rec_id, sorted(raised))


def test_a_pair_and_its_replicates_share_a_model_family() -> None:
    """The likely ranges' check leaves one model out at a time (summaries.range_coverage):
    a replicate (`-r4`) or a rival (`batch-recompute-llama`) must fall in its source's family."""
    families = {p: summaries.model_family(p) for p in PAIRS}
    assert families["batch-recompute-llama"] == families["recompute-llama-r6"] == "llama"
    assert families["fusion-compile-gpt2-124m"] == families["optimizer-gpt2-r2"] == "gpt2"
    for pair, family in families.items():
        assert family in pair.split("-"), pair
        source = ev.base_pair(pair).rsplit("-r", 1)[0]
        if source in families:
            assert families[source] == family, pair
