"""Inference rules (analysis/rules_inference.py) on the real H200 decode traces, and the
foreign traces for false alarms."""

from __future__ import annotations

import pytest
from helpers.rules import fire, fired, saving
from helpers.stores import facts as facts_of
from helpers.traces import foreign_labels

from analysis.rules.recommend import recommend

RULE_IDS = ("decode-batching", "weight-quantization", "paged-kv-cache")
DECODE = "h200/decode_b1.pt.trace.json.gz"
LLAMA = "h200/hf_llama_generate_b4.pt.trace.json.gz"


def test_decode_b1_is_launch_bound_decode_at_batch_one() -> None:
    facts = facts_of(DECODE)
    found = fire(facts, "decode-batching")
    assert found is not None
    assert "1 token row" in found.evidence[0]
    # Idle (~95 % of the step) and the weight reads stay, 8 sequences share them.
    assert 0.7 * facts.step_ms < saving(facts, "decode-batching") < 0.95 * facts.step_ms
    recs = recommend(facts)
    assert recs[0].id in ("cuda-graphs", "decode-batching")
    assert {r.id for r in recs[:2]} == {"cuda-graphs", "decode-batching"}


def test_decode_b1_weight_read_time_halved_by_int8() -> None:
    facts = facts_of(DECODE)
    found = fire(facts, "weight-quantization")
    assert found is not None
    assert found.confidence == "low"
    # Independent: every aten::mm kernel of the steps is a [1, K] x [K, N] bf16 weight read.
    k = facts.kernels
    mm_ms = float(k.loc[k["op_name"] == "aten::mm", "dur_ns"].sum()) / 1e6 / facts.windows
    assert found.gpu_ms == pytest.approx(0.5 * mm_ms, rel=0.01)
    # The decode step waits for its launches (host-bound without the profiler): halving the
    # weight reads shortens no step until they are fixed, so it is listed as minor.
    model = facts.step_model
    assert model.host_ms > model.gpu_ms
    assert saving(facts, "weight-quantization") == 0.0
    assert next(r for r in recommend(facts) if r.id == "weight-quantization").minor


def test_decode_b1_writes_into_a_preallocated_cache() -> None:
    # decode_b1 copies each new K/V row into a static cache (aten::copy_): nothing to page.
    assert fire(facts_of(DECODE), "paged-kv-cache") is None


def test_hf_generate_grows_its_kv_cache_with_cat() -> None:
    facts = facts_of(LLAMA)
    found = fire(facts, "paged-kv-cache")
    assert found is not None
    assert "[4, 4, 256, 128]" in found.evidence[0]
    # Independent: the cat kernels whose op appends one position to a [4, 4, L, 128] cache.
    cats = facts.shaped_ops("aten::cat")
    kv = cats[cats["input_dims"].str.contains(r"\[4, 4, \d+, 128\], \[4, 4, 1, 128\]")]
    k = facts.kernels.merge(
        kv[["rank", "external_id"]], left_on=["rank", "op_external_id"],
        right_on=["rank", "external_id"],
    )  # fmt: skip
    assert len(k) == 8 * 2 * 31 * facts.windows  # layers x (K, V) x decode tokens x steps
    upper = float(k["dur_ns"].sum()) / 1e6 / facts.windows
    assert 0.99 * upper < found.gpu_ms < upper


def test_hf_generate_batch_four_still_decode_bound() -> None:
    found = fire(facts_of(LLAMA), "decode-batching")
    assert found is not None
    assert "4 token row" in found.evidence[0]
    assert "r = 8/4" in found.why


@pytest.mark.parametrize(
    "label",
    [
        "h200/decode_b1_cudagraph.pt.trace.json.gz",  # graph replays: no op shapes
        "h200/train_gpt2_bf16_tuned.pt.trace.json.gz",
        "h200/train_gpt2_fp32_naive.pt.trace.json.gz",
        "h200/microops.pt.trace.json.gz",  # 4096² GEMMs: compute-bound, not decode
    ],
)
def test_no_inference_finding(label: str) -> None:
    assert fired(facts_of(label), RULE_IDS) == set()


# Read in each trace: none of them is a weight-bound decode loop or grows a cache by cat.
# - tracelens/h100 Qwen1.5-0.5B: GEMMs of M = 8944 token rows (a prefill), compute-bound.
# - tracelens/h100 bert-small: encoder inference, M = 141 tokens, 4 % of the step in GEMMs.
# - tracelens/b200 eager (vLLM): MoE and addmm with M = 888 batched tokens; one 1-row lm-head
#   mm (33 µs) is 4 % of the weight-GEMM time, not a decode loop.
# - hta alexnet, triton_example, torch_compile_triton: no shaped weight GEMMs with M <= 16.
# - the training traces (hta, tb_plugin, normalization, mi250): training, not inference.
# - hta cpu_only: no GPU work.
@pytest.mark.parametrize("label", foreign_labels())
def test_foreign_traces_raise_no_inference_alarm(label: str) -> None:
    assert fired(facts_of(label), RULE_IDS) == set()
