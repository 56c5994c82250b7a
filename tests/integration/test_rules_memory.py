"""Memory rules (analysis/rules_memory.py): small-batch and memory-headroom on real traces."""

from __future__ import annotations

import pytest
from helpers.rules import fire, fired, saving
from helpers.stores import facts as facts_of
from helpers.stores import sample_facts
from helpers.traces import foreign_labels

RULE_IDS = ("small-batch", "memory-headroom")


def test_small_gpt_step_waits_for_the_host_with_memory_free() -> None:
    # The project's bf16 GPT recording: 4096 tokens a step, GPU busy 15 %, 1.1 GB of 150 GB.
    facts = sample_facts("gpt_train_bf16.pt.trace.json.gz")
    found = fire(facts, "small-batch")
    assert found is not None
    assert "4,096 token rows" in found.evidence[0]
    assert "4× batch" in found.evidence[1]
    # No data loader in this step: per original batch the step becomes max(step / 4, busy).
    busy = facts.step_ms * facts.shares["gpu_busy_pct"] / 100
    assert saving(facts, "small-batch") == pytest.approx(facts.step_ms - max(facts.step_ms / 4, busy))


@pytest.mark.parametrize(
    "label",
    [
        # 8 x 1024 tokens a step: the GEMMs are large; its idle is the host's, not the batch's.
        "h200/train_gpt2_bf16_tuned.pt.trace.json.gz",
        # the same model starved by its data loader (gpu-starvation's finding)
        "h200/train_gpt2_bf16_dataloader_w0.pt.trace.json.gz",
        # GPU busy 97 %
        "h200/train_gpt2_fp32_naive.pt.trace.json.gz",
        "h200/resnet50_train_fp32.pt.trace.json.gz",
        "h200/decode_b1.pt.trace.json.gz",  # inference
    ],
)
def test_no_memory_finding(label: str) -> None:
    assert fired(facts_of(label), RULE_IDS) == set()


def test_no_allocator_churn_in_the_steady_state() -> None:
    facts = sample_facts("gpt_train_bf16.pt.trace.json.gz")
    assert facts.allocator_calls.empty
    assert fire(facts, "memory-headroom") is None


# Read in each trace: none shows a training step with small GEMMs, a mostly idle GPU and
# allocator peaks known to be small, or allocator calls inside steps.
# - hta alexnet: 15 cudaFree + 24 cudaMalloc (6.5 s, a benchmark's setup), but no steps,
#   no allocator events (its memory use is unknown) and no backward pass.
# - tb_plugin resnet50: allocator events without totals (peak unknown); conv net whose only
#   GEMM is the classifier.
# - hta mi250 minitoy: [5, 128] GEMMs, GPU 98 % idle, but no allocator events.
# - the other training traces record no allocator events; the rest are inference.
@pytest.mark.parametrize("label", foreign_labels())
def test_foreign_traces_raise_no_memory_alarm(label: str) -> None:
    assert fired(facts_of(label), RULE_IDS) == set()
