"""The interleaved recording of a validation pair (tools/validation/interleave.py), its tars,
and how tools/validation/evaluate.py reads it: run for real on the CPU (the launch-bound MLP
pair at its smoke size, profiled by the dashboard's hook), and on the eighth recording's
summary from the H200 (tests/data/validation_h200_interleaved)."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

from tools.validation import evaluate as ev
from tools.validation import fresh_ids, rivals, runner
from tools.validation.cli import renamed
from tools.validation.fresh_pairs import (
    ELEVENTH,
    FOURTEENTH,
    SIXTEENTH,
    TENTH,
    THIRTEENTH,
    TWELFTH,
)
from tools.validation.fresh_pairs import FRESH as NINTH
from tools.validation.interleave import ROUNDS, Globals, measure_pair
from tools.validation.pairs import CASES
from tools.validation.workload import Ctx

RECORDED = ev.summary(ev.DATA_INTERLEAVED)
REPO = ev.REPO


def test_a_pair_is_timed_in_alternating_rounds_and_each_run_profiled(tmp_path: Path) -> None:
    ctx = Ctx(smoke=True, device=torch.device("cpu"), started=time.perf_counter(), budget_s=None)
    ((before, after),) = renamed([c for c in CASES if c.pair == "launch-bound-mlp"], "i8")
    records = measure_pair(ctx, before, after, tmp_path)
    assert [r["status"] for r in records] == ["ok", "ok"], [r["errors"] for r in records]
    for case, r in zip((before, after), records, strict=True):
        assert (case.id, r["pair"]) == (f"launch-bound-mlp-i8-{r['role']}", "launch-bound-mlp-i8")
        u = r["unprofiled"]
        assert len(u["rounds_ms"]) == ROUNDS
        assert len(u["per_step_ms"]) == u["steps"]
        assert u["median_ms"] == statistics.median(u["rounds_ms"])
        assert (tmp_path / r["trace"]).stat().st_size > 10_000  # the hook's trace of this run
        assert r["hook_unprofiled"]["median_ms"] > 0
    workloads = {before.id: records[0], after.id: records[1]}
    paired = [x - y for x, y in zip(*(r["unprofiled"]["rounds_ms"] for r in records), strict=True)]
    assert ev.measured_saving(workloads, "launch-bound-mlp-i8") == statistics.median(paired)


def test_without_a_suffix_the_pairs_keep_their_names() -> None:
    """The ninth recording's pairs were recorded only interleaved, under their own names."""
    ninth = [c for c in CASES if c.pair in ("graphs-llama", "tf32-swin")]
    got = [(b.id, a.id, b.pair, a.pair) for b, a in renamed(ninth, "")]
    assert got == [  # in the table's order: the Llama's pairs, then the Swin's
        ("graphs-llama-before", "graphs-llama-after", "graphs-llama", "graphs-llama"),
        ("tf32-swin-before", "tf32-swin-after", "tf32-swin", "tf32-swin"),
    ]
    # evaluate's lists of the later recordings' pairs (it imports no torch) are fresh_pairs'
    # tables, and their model groups name only their own pairs
    assert {c.pair for c in NINTH} == set(fresh_ids.FRESH)
    assert {c.pair for c in TENTH} == set(fresh_ids.TENTH)
    assert {c.pair for c in ELEVENTH} == set(fresh_ids.ELEVENTH)
    assert {c.pair for c in TWELFTH} == set(fresh_ids.TWELFTH)
    # the twelfth recorded more pairs on the eleventh's five models: they share its groups
    later = fresh_ids.ELEVENTH + fresh_ids.TWELFTH
    for recording, own, models in (
        (fresh_ids.TENTH, fresh_ids.TENTH, 3),
        (fresh_ids.ELEVENTH, later, 5),
        (fresh_ids.TWELFTH, later, 5),
    ):
        groups = [g for g in ev.SAME_MODEL if set(g) & set(recording)]
        assert len(groups) == models
        assert all(set(g) <= set(own) for g in groups)


def test_each_runs_settings_are_put_back_before_its_rounds() -> None:
    saved = Globals.now()
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
        torch.backends.cudnn.benchmark = True
        tf32_run = Globals.now()
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
        torch.backends.cudnn.benchmark = False  # the other run's build
        tf32_run.apply()
        assert Globals.now() == Globals(matmul_tf32=True, cudnn_tf32=False, cudnn_benchmark=True)
    finally:
        saved.apply()


def test_traces_are_packed_into_as_many_tars_as_the_size_limit_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = sorted((ev.DATA).glob("*.pt.trace.json.gz"), key=lambda p: p.stat().st_size)
    small, big = src[:6], src[-1]  # the largest (1.07 MB) exceeds the limit set below
    for i, t in enumerate([*small, big]):
        dst = tmp_path / "traces" / f"w{i}" / "rank0.pt.trace.json.gz"
        dst.parent.mkdir(parents=True)
        shutil.copy(t, dst)
    limit = 512 * 1024 + sum(t.stat().st_size for t in small) // 2 + 8192
    monkeypatch.setattr(runner, "TAR_LIMIT_BYTES", limit)
    summary = runner.Summary(tmp_path, {"argv": ["test"]})
    runner.pack(tmp_path, summary, tmp_path / "v.tar")
    tars = sorted(tmp_path.glob("v*.tar"))
    assert [t.name for t in tars] == ["v-2.tar", "v-3.tar", "v.tar"][: len(tars)]
    assert len(tars) >= 2
    members = {}
    for t in tars:
        with tarfile.open(t) as tar:
            members[t.name] = tar.getnames()
    assert members["v.tar"][0] == "summary.json"
    assert not any("summary.json" in m for n, m in members.items() if n != "v.tar")
    packed = sorted(m for ms in members.values() for m in ms if m.endswith(".gz"))
    assert packed == sorted(f"traces/w{i}/rank0.pt.trace.json.gz" for i in range(len(small)))
    assert all(t.stat().st_size <= limit for t in tars)
    assert summary.data["tar_left_out"] == ["traces/w6/rank0.pt.trace.json.gz"]


def test_the_eighth_recording_is_read_as_replicates_of_the_pairs() -> None:
    pairs = ev.pairs(RECORDED)
    assert len(pairs) == 48
    assert all(p.endswith(ev.INTERLEAVED) for p in pairs)
    assert {ev.base_pair(p) for p in pairs} <= set(ev.HALVES)
    assert {p: ev.half_of(p) for p in pairs} == {p: ev.HALVES[ev.base_pair(p)] for p in pairs}
    for p in pairs:
        b, a = (RECORDED[k] for k in ev.runs_of(p))
        assert len(b["unprofiled"]["rounds_ms"]) == len(a["unprofiled"]["rounds_ms"]) == ROUNDS
        group = ev.model_group(p)
        assert p in group
        assert all(q.endswith(ev.INTERLEAVED) for q in group)
    # the same before workload in one recording: optimizer-gpt2-124m's, with its two rivals
    assert ev.model_group("batch-gpt2-124m-i8") == (
        "batch-gpt2-124m-i8", "fusion-compile-gpt2-124m-i8", "optimizer-gpt2-124m-i8"
    )  # fmt: skip
    # GPU-bound: the rounds agree to 0.02 ms; the paired median is the saving
    assert ev.measured_saving(RECORDED, "tf32-vit-i8") == pytest.approx(29.96, abs=0.01)


def test_the_thirteenth_recording_is_read_as_a_rival_session() -> None:
    """Its rivals and the rivalled pairs' own fixes again ("<pair>-r6"), each pair with its
    own interleaved before run: each rival is judged against the own fix of its session."""
    recorded = ev.summary()
    session = {r for r, (_, _, n) in rivals.RIVALS.items() if n == "r6"}
    assert {c.pair for c in THIRTEENTH} == session
    assert len(session) == 13
    assert len(rivals.INTERLEAVED_SESSIONS["r6"]) == 10
    assert set(rivals.THIRTEENTH) == session | {f"{p}-r6" for p in rivals.SOURCES["r6"]}
    for p in rivals.THIRTEENTH:
        assert p in ev.pairs(recorded)
        assert ev.runs_of(p) == (f"{p}-before", f"{p}-after")  # no shared before run
        # CUDA graphs timed one run after the other (D80), the others in alternating rounds
        rounds = [len(recorded[k]["unprofiled"].get("rounds_ms", ())) for k in ev.runs_of(p)]
        assert rounds == ([0, 0] if p.startswith("graphs-") else [ROUNDS, ROUNDS])
    # rivals are held out; a rivalled pair's own fix again joins its pair's half
    assert {ev.half_of(r) for r in session} == {"held-out"}
    assert ev.half_of("recompute-qwen2-r6") == ev.half_of("recompute-qwen2") == "held-out"
    assert ev.half_of("allocator-llama-r6") == ev.half_of("allocator-llama") == "tune"
    # recompute-qwen2's verdicts come from its session: a 4x batch and CUDA graphs, measured
    measured = {q: ev.measured_saving(recorded, q) for q in rivals.THIRTEENTH}
    verdicts = rivals.rival_verdicts("recompute-qwen2", measured, tie_ms=3.0)
    own = measured["recompute-qwen2-r6"]
    assert verdicts == {
        "small-batch": measured["batch-recompute-qwen2"] > own - 3.0,
        "cuda-graphs": measured["graphs-recompute-qwen2"] > own - 3.0,
    }


def test_the_fourteenth_recording_is_held_out_whole() -> None:
    """The allocator pair on ten workloads no allocator pair had, recorded after D86 was
    designed (on the sixteen allocator pairs before it): every one is held out."""
    recorded = ev.summary()
    assert {c.pair for c in FOURTEENTH} == set(fresh_ids.FOURTEENTH)
    assert len(fresh_ids.FOURTEENTH) == 10
    for p in fresh_ids.FOURTEENTH:
        assert p in ev.pairs(recorded)
        assert ev.half_of(p) == "held-out"
        assert ev.runs_of(p) == (f"{p}-before", f"{p}-after")
        assert ev.planted_of(recorded, p) == "memory-headroom"
        before, after = (recorded[k] for k in ev.runs_of(p))
        assert before["change"] == after["change"]
        assert [len(w["unprofiled"]["rounds_ms"]) for w in (before, after)] == [ROUNDS, ROUNDS]
    # the pairs D86 was designed on are the other allocator pairs, and they tune
    designed = {p for p in ev.pairs(recorded) if p.startswith("allocator-")}
    designed -= {*fresh_ids.FOURTEENTH, *rivals.FIFTEENTH}
    assert len(designed) == 16
    assert {ev.half_of(p) for p in designed} == {"tune"}


def test_the_fifteenth_recording_is_held_out_whole() -> None:
    """A 4x batch on the fourteenth's ten before workloads, beside each allocator fix again
    (session r7), recorded after D88's close calls were written down: every pair held out,
    each with its own before run, timed in interleaved rounds."""
    recorded = ev.summary()
    assert len(rivals.FIFTEENTH) == 20
    for p in rivals.FIFTEENTH:
        assert p in ev.pairs(recorded)
        assert ev.half_of(p) == "held-out"
        planted = "small-batch" if p.startswith("batch-") else "memory-headroom"
        assert ev.planted_of(recorded, p) == planted
        before, after = (recorded[k] for k in ev.runs_of(p))
        assert [len(w["unprofiled"]["rounds_ms"]) for w in (before, after)] == [ROUNDS, ROUNDS]
    # each own fix again is its fourteenth pair's, in the rivals' session
    assert {rivals.session_of(f"allocator-{m}-r7") for m in rivals.FOURTEENTH_MODELS} == {
        (f"allocator-{m}", "r7") for m in rivals.FOURTEENTH_MODELS
    }


def test_the_sixteenth_recording_makes_compile_to_each_rivalled_before_workload() -> None:
    """Session r8 (D97, recorded on an H100): torch.compile made to each rivalled pair's own
    before workload, the planted change kept, named as rivals.RIVALS names it."""
    session = {r for r, (_, _, n) in rivals.RIVALS.items() if n == "r8"}
    assert {c.pair for c in SIXTEENTH} == session
    assert session == {f"fusion-compile-{p}" for p in rivals.COMPILE_RIVALLED}
    assert set(rivals.SIXTEENTH) == session | {f"{p}-r8" for p in rivals.COMPILE_RIVALLED}
    by_id = {c.id: c for c in CASES}
    for p in rivals.COMPILE_RIVALLED:
        rival = by_id[f"fusion-compile-{p}-before"]
        assert rival.planted == "kernel-fusion"
        assert rival.change == f"{p}'s before -> torch.compile (Inductor default mode)"
        # the rivalled pair plants the finding its own fix again ("<pair>-r8") is judged on
        assert by_id[f"{p}-before"].planted == rivals.PLANTED[p]


def test_the_seventeenth_is_recorded_one_run_after_the_other_under_its_suffix(
    tmp_path: Path,
) -> None:
    """`--suffix h17` names a pair recorded one run after the other as its session's (D105),
    each run timed alone (no interleaved rounds), as the CUDA-graph pairs must be."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "record_validation_pairs.py"), "--smoke",
         str(tmp_path), "--only", "launch-bound-mlp", "--suffix", "h17"],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    workloads = json.loads((tmp_path / "summary.json").read_text())["workloads"]
    assert set(workloads) == {"launch-bound-mlp-h17-before", "launch-bound-mlp-h17-after"}
    assert {w["status"] for w in workloads.values()} == {"ok"}
    assert {w["pair"] for w in workloads.values()} == {"launch-bound-mlp-h17"}
    assert all("rounds_ms" not in w["unprofiled"] for w in workloads.values())
    assert ev.pairs(workloads) == ["launch-bound-mlp-h17"]
    assert ev.round_savings(workloads, "launch-bound-mlp-h17") is None


def test_the_seventeenth_judges_each_graph_beside_its_models_4x_batch_of_one_host() -> None:
    """Each pair of the seventeenth is judged within its recording: the CUDA-graph pair's
    model group holds the same model's 4x batch pair of that recording, no pair of another."""
    assert len(rivals.SEVENTEENTH) == 24
    by_id = {c.id: c for c in CASES}
    for graphs, batch in rivals.ONE_HOST_MODELS.items():
        planted = (by_id[f"{p}-before"].planted for p in (graphs, batch))
        assert tuple(planted) == ("cuda-graphs", "small-batch")
        for pair in (graphs, batch):
            again = pair + ev.ONE_HOST
            assert (ev.base_pair(again), ev.half_of(again)) == (pair, ev.half_of(pair))
            group = ev.model_group(again)
            assert {graphs + ev.ONE_HOST, batch + ev.ONE_HOST} <= set(group)
            assert all(q.endswith(ev.ONE_HOST) for q in group)
    # the first recordings' pairs stay grouped across their own recordings
    assert "batch-bert" in ev.model_group("graphs-bert-sdpa")
