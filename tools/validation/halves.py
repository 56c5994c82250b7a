"""Which half of the validation set each pair is in: "tune" (thresholds and models were
fitted to it) or "held-out" (reported apart, as recordings the rules were not fitted to)."""

from __future__ import annotations

from tools.validation.fresh_ids import ELEVENTH, FOURTEENTH, FRESH, TENTH, TWELFTH
from tools.validation.rivals import rival_halves

# Chosen before the second recording (one pair per fix tunes, the other is held out); the
# second recording's pairs joined the half their technique's plan named.
HALVES = {
    "precision-gpt2": "tune", "tf32-vit": "tune", "precision-lightning": "tune",
    "precision-vit": "held-out",
    "attention-bert": "tune", "attention-bert-base": "tune", "attention-gpt2": "held-out",
    "optimizer-gpt2": "tune", "optimizer-gpt2-124m": "tune",
    "allocator-gpt2": "held-out",
    "dataloader-resnet": "tune", "host-preprocess-gpt2": "held-out",
    "layout-resnet50": "tune", "layout-resnet50-b256": "tune",
    "layout-efficientnet": "held-out",
    "launch-bound-mlp": "held-out", "decode-cudagraph-llama": "tune",
    "host-sync-gpt2": "held-out", "pageable-resnet": "tune",
    "alignment-peft": "held-out", "decode-batching-llama": "held-out",
    "fusion-compile-gpt2": "tune", "fusion-compile-vit": "held-out",
    "recompute-gpt2": "tune", "recompute-vit": "held-out",
    "batch-gpt2": "tune",
    # the third recording: a second pair for what the second one tuned
    "optimizer-vit": "held-out", "batch-bert": "held-out", "fusion-compile-peft": "held-out",
    "fusion-compile-resnet50": "held-out", "optimizer-gpt2-r2": "tune",
    # the sixth recording: new models for what D65 changed, and torch.compile on two more
    "recompute-bert": "held-out", "batch-recompute-bert": "held-out",
    "recompute-gpt2-reentrant": "held-out", "recompute-convnext": "held-out",
    "allocator-vit": "held-out", "batch-allocator-vit": "held-out",
    "allocator-bert": "held-out", "batch-allocator-bert": "held-out",
    "fusion-compile-bert-sdpa": "held-out", "fusion-compile-convnext": "held-out",
    # the seventh: the fixes ranked above the sixth's planted findings, on its before workloads
    "graphs-bert-sdpa": "held-out", "graphs-recompute-bert": "held-out",
    "graphs-recompute-convnext": "held-out", "batch-recompute-convnext": "held-out",
}  # fmt: skip
HALVES |= dict.fromkeys(FRESH + TENTH + ELEVENTH + TWELFTH + FOURTEENTH, "held-out")
HALVES |= rival_halves(HALVES)
# The halves the profiler-overhead model was fitted and judged on (tools/fit_step_model.py).
OVERHEAD_HALVES = dict(HALVES)
# Held-out pairs a rule's estimate was later designed on move to the tune half for the rules'
# checks (D65: checkpointing's host time from recompute-vit's traces); the sixth recording
# holds new pairs out for it, the tenth for D81's, the eleventh for D81's and D82's, the
# twelfth's torch.compile pairs for D83's, the fourteenth (defined, not yet recorded) for D86's.
RETUNED = (
    "recompute-vit", "recompute-vit-r4", "recompute-vit-r5",
    # D81: host-sync's bound on host-bound steps, channels-last's depthwise kernels
    "host-sync-llama", "recompute-llama", "layout-efficientnet", "layout-mobilenet",
    # D82: the allocator calls' share of the serialization, designed on these
    "allocator-bert", "allocator-densenet", "allocator-gpt2", "allocator-gpt2-r4",
    "allocator-llama", "allocator-neox", "allocator-vit",
    # those workloads again: the thirteenth's (rivals.py, session r6), the sixteenth's (r8, H100)
    "recompute-llama-r6", "allocator-llama-r6", "recompute-llama-r8",
    # D83: kernel-fusion's launches (a kernel kept per reduction), designed on these
    "fusion-compile-bert", "fusion-compile-bert-sdpa", "fusion-compile-convnext",
    "fusion-compile-densenet", "fusion-compile-gpt2-124m", "fusion-compile-llama",
    "fusion-compile-mobilenet", "fusion-compile-neox", "fusion-compile-peft",
    "fusion-compile-resnet50", "fusion-compile-swin", "fusion-compile-vit",
    # D86: the allocator calls' own host time as a floor, designed on every allocator pair the
    # fourteenth recording did not hold out (these and D82's above)
    "allocator-convnext-t", "allocator-ghostnet", "allocator-mixnet", "allocator-mixnet-r6",
    "allocator-opt", "allocator-opt-r6", "allocator-qwen2", "allocator-qwen2-r6",
)  # fmt: skip
HALVES |= dict.fromkeys(RETUNED, "tune")
