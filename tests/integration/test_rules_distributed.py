"""Distributed rules (analysis/rules_distributed.py) on the project's 2-rank DDP recording
and the foreign multi-rank and NCCL traces."""

from __future__ import annotations

import pytest
from helpers.paths import TEST_DATA
from helpers.rules import fire, fired, saving
from helpers.stores import facts as facts_of
from helpers.stores import sample_facts
from helpers.traces import foreign_labels

from analysis.rules.distributed import _exposed_collectives
from analysis.rules.recommend import recommend

RULE_IDS = ("comm-overlap", "straggler", "nccl-topology")
DDP = "ddp_gpt_bf16_2rank"
# The project's 2-rank H200 recordings of a 120 M-parameter model whose communication is the
# problem (tools/record_samples.py --ddp-comm), each beside the run with the fix applied:
# NCCL with P2P disabled (traffic through host memory) -> DDP's defaults over NVLink; and,
# GPU-bound (batch 32) with P2P disabled, one bucket for all gradients (the all-reduce waits
# for the end of backward) -> default 25 MB buckets.


def data_facts(name: str):  # type: ignore[no-untyped-def]
    return sample_facts(name, TEST_DATA)


def test_p2p_disabled_gets_nccl_topology_and_the_fixed_run_saves_that_much() -> None:
    before, after = data_facts("ddp_p2p_disabled_2rank"), data_facts("ddp_default_2rank")
    found = fire(before, "nccl-topology")
    assert found is not None
    bus_gbps = float(found.evidence[0].split(" GB/s")[0].rsplit(" ", 1)[1])
    assert bus_gbps < 50  # ~26 GB/s; NVLink carries ~300 GB/s in the fixed run
    assert fire(after, "nccl-topology") is None


@pytest.mark.xfail(
    strict=True,
    reason="known miss: the fix also removes host time the finding does not claim. With P2P "
    "off NCCL's proxy threads stage the traffic through host memory and the main thread "
    "runs slower everywhere (aten::to up to 0.65 ms against 0.12 ms, c10d::allreduce_ "
    "3.5 against 1.6 ms per step), so the step model calls the step host-bound after the "
    "fix: 4.6 ms estimated against 18.5 ms between the two runs' unprofiled steps "
    "(12.3 ms between their profiled steps)",
)
def test_the_p2p_fix_saves_what_nccl_topology_estimates() -> None:
    before, after = data_facts("ddp_p2p_disabled_2rank"), data_facts("ddp_default_2rank")
    assert saving(before, "nccl-topology") == pytest.approx(
        before.step_ms - after.step_ms, rel=0.35
    )


def test_one_bucket_gets_comm_overlap_and_buckets_remove_it() -> None:
    before = data_facts("ddp_gpu_bound_one_bucket_2rank")
    after = data_facts("ddp_gpu_bound_2rank")
    found = fire(before, "comm-overlap")
    assert found is not None
    assert "19 buckets of 25 MB" in found.evidence[1]  # 117.5 M fp32 gradients = 470 MB
    # What the buckets leave (a slow link still exposes its last bucket) is under a tenth of
    # it, and ranks below the link's own finding.
    assert saving(after, "comm-overlap") < saving(before, "comm-overlap") / 10
    ranked = [r.id for r in recommend(after)]
    assert ranked.index("nccl-topology") < ranked.index("comm-overlap")
    # The fixed run is 10 ms per step faster (63.2 -> 53.2 ms): the estimate (16.4 ms) is an
    # upper bound; bucketed all-reduce over a slow link still leaves 9 ms exposed.
    measured = before.step_ms - after.step_ms
    assert measured > 5
    assert measured <= saving(before, "comm-overlap") <= 2 * measured


def test_exposed_comm_nothing_waits_for_is_not_overlap_advice() -> None:
    # DDP's defaults, host-bound (GPU busy 40 %): the all-reduce runs in gaps where the GPU
    # waits for its host anyway; nothing was queued behind it.
    assert fire(data_facts("ddp_default_2rank"), "comm-overlap") is None


def test_ddp_rank_one_is_the_straggler() -> None:
    facts = sample_facts(DDP)
    found = fire(facts, "straggler")
    assert found is not None
    assert found.evidence[0].startswith("rank 1 ")
    assert "host wait" in found.evidence[2]
    # Independent: rank 0 sits in its all-reduce kernels waiting for rank 1; what rank 1
    # would save is about that wait (rank 0's exposed comm less rank 1's).
    ps = facts.per_step.groupby("rank")["comm_ns"].sum() / 1e6 / facts.windows
    assert saving(facts, "straggler") == pytest.approx(ps[0] - ps[1], rel=0.15)


def test_ddp_exposed_allreduce_is_waiting_not_missing_overlap() -> None:
    # Rank 0's all-reduce is exposed for 16 ms a step, rank 1's (the last to arrive) for
    # 0.35 ms: the transfer is short, overlap would win little.
    assert fire(sample_facts(DDP), "comm-overlap") is None


def test_exposed_collectives_agree_with_the_breakdown() -> None:
    # All of the DDP recording's communication is all-reduce: its exposed time per window
    # is the breakdown's exposed comm, computed there by another route (exclusive unions).
    facts = sample_facts(DDP)
    x = _exposed_collectives(facts)
    assert x["exposed_ns"].tolist() == facts.per_step["comm_ns"].tolist()
    assert (x["last_ns"] > 0).all()
    assert (x["last_ns"] < x["exposed_ns"]).all()


def test_pipeline_send_recv_is_not_counted_as_collectives() -> None:
    # HTA trace_filter: 26 % exposed communication, every kernel ncclKernel_SendRecv.
    facts = facts_of("foreign/hta/trace_filter/")
    assert facts.per_step["comm_ns"].sum() > 0.2 * facts.per_step["window_ns"].sum()
    assert _exposed_collectives(facts)["exposed_ns"].sum() == 0


def test_ddp_allreduce_runs_near_nvlink_speed() -> None:
    facts = sample_facts(DDP)
    assert fire(facts, "nccl-topology") is None
    # Independent: the fastest rank's kernels move 4-9.5 M floats at > 25 % of NVLink.
    c = facts.collectives
    k = c[(c["source"] == "kernel") & (c["rank"] == 1)]
    bus = k["in_msg_nelems"] * 4 / k["dur_ns"]  # GB/s; all-reduce of 2 ranks: factor 1
    assert facts.spec is not None
    assert (bus * 1e9 > 0.25 * facts.spec.link.bytes_per_s).all()


def test_single_rank_run_has_no_straggler() -> None:
    assert fire(sample_facts("gpt_train_bf16.pt.trace.json.gz"), "straggler") is None


# Read in each trace:
# - hta trace_filter (2 ranks): all of its communication is ncclKernel_SendRecv (pipeline
#   stages), left out of comm-overlap; rank 1 is 21 ms a step (3 %) slower: no straggler.
# - hta negative_queue_length_values_check: SendRecv only (pipeline), one rank.
# - hta trace_diff/control: all-reduce exposed 1 % of the time; the rest is SendRecv.
# - hta nccl_parser_config: one rank of two; its all-reduce is exposed 6 % of the time and,
#   seen from one rank, transfer cannot be told from waiting: no bandwidth verdict.
# - tracelens/b200: one 50 kB all-gather.
# - every other foreign trace: a single rank without collectives.
@pytest.mark.parametrize("label", foreign_labels())
def test_foreign_traces_raise_no_distributed_alarm(label: str) -> None:
    assert fired(facts_of(label), RULE_IDS) == set()
