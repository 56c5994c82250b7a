"""The fifteenth recording, which the device made on an H100 (tests/data/validation_h100): a 4x
batch made to each of the fourteenth's ten allocator pairs' before workloads, beside the pair's
own fix again (session r7, interleaved), both timed without the profiler. It was recorded after
the close calls (D88) were written, and is judged with the rules and the H200 track record as
committed: no rule, threshold or record was fitted to it, and none counts it. The runs are
read with the H100's datasheet ceilings (none were measured on that card).

The same four checks as the H200 pairs (test_validation_pairs.py), and D88's record on it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from helpers.validation import CHECKS, cases, check

from analysis.facts import Facts
from analysis.roofline import datasheet_ceilings
from analysis.rules.track_record import OrderRecord
from analysis.rules.track_record_h200 import TRACK_RECORD
from tools.validation import evaluate as ev
from tools.validation import summaries
from tools.validation.rivals import FIFTEENTH, FOURTEENTH_MODELS

WORKLOADS = ev.summary(ev.DATA_H100)
PAIRS = ev.pairs(WORKLOADS)
_GRAPHS = "cuda-graphs ranks above it, unmeasured on this workload (capture drops the emptied "
_STILL = "the 4x batch's run still raises small-batch (a batch 4x larger again is unmeasured)"
MISSES = {
    ("allocator-llama-s-r7", "first"): _GRAPHS + "cache); small-batch, above, saved more",
    ("allocator-mobilenet-r7", "first"): _GRAPHS + "cache); small-batch, above, saved more",
    ("allocator-opt-s-r7", "within"): "29.29 vs 19.13 (the same pair on the H200: 15.30 vs "
    "17.42, within)",
    ("batch-allocator-opt-s", "within"): "30.38 vs 21.97",
} | {(p, "after_clean"): _STILL for p in PAIRS if p.startswith("batch-")}


@pytest.fixture(scope="module")
def facts_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Facts]:
    store = tmp_path_factory.mktemp("validation-h100")
    return ev.scratch_store(store, WORKLOADS, ev.DATA_H100, ceilings=None)


@pytest.fixture(scope="module")
def results(facts_of: Callable[[str], Facts]) -> dict[str, ev.PairResult]:
    return {r.pair: r for r in ev.evaluate(facts_of, WORKLOADS)}


def test_the_recording_is_the_fifteenth_held_out_on_an_h100() -> None:
    summary = json.loads((ev.DATA_H100 / "summary.json").read_text())
    assert {i["versions"]["device"] for i in summary["invocations"]} == {"NVIDIA H100 80GB HBM3"}
    assert sorted(PAIRS) == sorted(FIFTEENTH)
    assert {ev.half_of(p) for p in PAIRS} == {"held-out"}
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
    """D88: where the two findings' likely ranges (the H200 track record's) were apart, the
    ranking put the fix that measured the larger saving first every time; where they
    overlapped, 4 of 6. With the record as it stood when the recording was made (before the
    fourteenth joined it), the split was 5 of 5 apart and 3 of 5 overlapping (D88's table)."""
    got = summaries.order_record(list(results.values()), TRACK_RECORD)
    assert got == OrderRecord(overlap_pairs=6, overlap_right=4, apart_pairs=4, apart_right=4)
    # the two wrong orders, from the recorder's timings (both fixes' rounds interleaved with
    # one shared before run), not from the rules: the fix ranked lower saved more
    wrong = set()
    for m in FOURTEENTH_MODELS:
        own, batch = results[f"allocator-{m}-r7"], results[f"batch-allocator-{m}"]
        if ("small-batch" in own.above) != (batch.measured_ms > own.measured_ms):
            wrong.add(m)
    assert wrong == {"resnet34", "opt-s"}
