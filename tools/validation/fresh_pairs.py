"""The ninth recording's pairs: models no earlier pair had (tools/validation/pairs.py)."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from tools.validation.changes import (
    TF,
    empty_cache,
    host_sync_every_100,
    host_sync_every_step,
    pair,
)
from tools.validation.language_models import lm_train, pretokenized, tokenized_in_loop
from tools.validation.vision import swin, timm_model, vision_train
from tools.validation.workload import Case, Ctx

# The ninth recording: models no pair had, recorded after the rules' last change and held out
# whole (nothing was tuned on it): a Llama trained with transformers, timm's Swin-T,
# RegNetY-1.6GF and MobileNetV3, one change per pair as before. Each pair was timed in one
# process, interleaved (--interleave), but for the CUDA-graph ones (timed one run after the
# other: interleaved, they break the CUDA context; D80).
LLAMA = {
    "arch": "llama",
    "layers": 6,
    "d": 768,
    "heads": 12,
    "vocab": 32000,
    "seq": 1024,
    "batch": 8,
}
REGNET, MOBILENET = "regnety_016", "mobilenetv3_large_100"


def _vision_rivals(model: Callable[[Ctx], nn.Module], name: str) -> list[Case]:
    return [
        *pair(f"batch-{name}-b512", "small-batch", "timm", "batch 128 -> 512 (per sample)",
              ("timm",), lambda c: vision_train(c, model(c), c.pick(128, 2)),
              lambda c: vision_train(c, model(c), c.pick(512, 4))),
        *pair(f"graphs-{name}", "cuda-graphs", "timm",
              "eager -> the whole step replayed from a CUDA graph", ("timm",),
              lambda c: vision_train(c, model(c), c.pick(128, 2)),
              lambda c: vision_train(c, model(c), c.pick(128, 2), graphed=True)),
    ]  # fmt: skip


FRESH = [
    *pair("precision-llama", "mixed-precision", "transformers", "fp32 (TF32 off) -> bf16 autocast",
          TF, lambda c: lm_train(c, **LLAMA, precision="fp32"), lambda c: lm_train(c, **LLAMA)),
    *pair("attention-llama", "fused-attention", "transformers", "eager causal attention -> sdpa",
          TF, lambda c: lm_train(c, **LLAMA, attn="eager"), lambda c: lm_train(c, **LLAMA)),
    *pair("optimizer-llama", "fused-optimizer", "transformers",
          "AdamW(foreach=False) -> AdamW(fused=True)", TF,
          lambda c: lm_train(c, **LLAMA, optimizer="for-loop"), lambda c: lm_train(c, **LLAMA)),
    *pair("fusion-compile-llama", "kernel-fusion", "transformers",
          "eager -> torch.compile (Inductor default mode)", TF,
          lambda c: lm_train(c, **LLAMA), lambda c: lm_train(c, **LLAMA, compiled=True)),
    *pair("recompute-llama", "memory-headroom", "transformers",
          "gradient_checkpointing_enable() -> off, memory mostly free", TF,
          lambda c: lm_train(c, **LLAMA, checkpointed=True), lambda c: lm_train(c, **LLAMA)),
    *pair("allocator-llama", "memory-headroom", "transformers",
          "torch.cuda.empty_cache() after every step -> not", TF,
          lambda c: lm_train(c, **LLAMA, after_step=empty_cache), lambda c: lm_train(c, **LLAMA)),
    *pair("host-sync-llama", "host-sync", "transformers",
          "loss.item() every step -> loss summed on the GPU, read every 100 steps", TF,
          lambda c: lm_train(c, **LLAMA, after_step=host_sync_every_step()),
          lambda c: lm_train(c, **LLAMA, after_step=host_sync_every_100())),
    *pair("host-preprocess-llama", "gpu-starvation", "transformers",
          "pure-Python tokenization in the loop -> batches pre-tokenized before it", TF,
          lambda c: lm_train(c, **LLAMA, batches=tokenized_in_loop),
          lambda c: lm_train(c, **LLAMA, batches=pretokenized)),
    *pair("batch-llama", "small-batch", "transformers", "batch 2 -> 8 (per token)", TF,
          lambda c: lm_train(c, **{**LLAMA, "batch": 2}), lambda c: lm_train(c, **LLAMA)),
    *pair("alignment-llama", "tensor-core-alignment", "transformers",
          "vocab 32001, batch 7 x seq 1000 -> vocab 32000, batch 8 x seq 1024 (per token)", TF,
          lambda c: lm_train(c, **{**LLAMA, "vocab": 32001, "seq": 1000, "batch": 7}),
          lambda c: lm_train(c, **LLAMA)),
    *pair("tf32-swin", "tf32", "timm", "fp32 TF32 off -> TF32 on", ("timm",),
          lambda c: vision_train(c, swin(c), c.pick(128, 2), precision="fp32"),
          lambda c: vision_train(c, swin(c), c.pick(128, 2), precision="tf32")),
    *pair("optimizer-swin", "fused-optimizer", "timm",
          "AdamW(foreach=False) -> AdamW(fused=True)", ("timm",),
          lambda c: vision_train(c, swin(c), c.pick(128, 2), optimizer="for-loop"),
          lambda c: vision_train(c, swin(c), c.pick(128, 2))),
    *pair("fusion-compile-swin", "kernel-fusion", "timm",
          "eager -> torch.compile (Inductor default mode)", ("timm",),
          lambda c: vision_train(c, swin(c), c.pick(128, 2)),
          lambda c: vision_train(c, swin(c), c.pick(128, 2), compiled=True)),
    *pair("recompute-swin", "memory-headroom", "timm",
          "set_grad_checkpointing(True) -> off, memory mostly free", ("timm",),
          lambda c: vision_train(c, swin(c), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, swin(c), c.pick(128, 2))),
    *pair("layout-regnety", "channels-last", "timm", "NCHW -> channels_last", ("timm",),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2), channels_last=False),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2))),
    *pair("precision-regnety", "mixed-precision", "timm", "fp32 TF32 off -> bf16 autocast",
          ("timm",),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2), precision="fp32"),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2))),
    *pair("pageable-regnety", "pageable-memcpy", "timm",
          "batches in pageable host memory, .to(cuda) -> pinned, non_blocking", ("timm",),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2), "pageable"),
          lambda c: vision_train(c, timm_model(REGNET), c.pick(128, 2), "pinned")),
    *pair("layout-mobilenet", "channels-last", "timm", "NCHW -> channels_last", ("timm",),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(128, 2), channels_last=False),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(128, 2))),
    *pair("fusion-compile-mobilenet", "kernel-fusion", "timm",
          "eager -> torch.compile (Inductor default mode)", ("timm",),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(128, 2)),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(128, 2), compiled=True)),
    *pair("batch-mobilenet", "small-batch", "timm", "batch 32 -> 128 (per sample)", ("timm",),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(32, 2)),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(128, 4))),
    *pair("dataloader-mobilenet", "gpu-starvation", "timm+torchvision",
          "DataLoader num_workers=0 -> 8 workers, pinned, persistent, prefetch 4",
          ("timm", "torchvision"),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(64, 2), "loader0"),
          lambda c: vision_train(c, timm_model(MOBILENET), c.pick(64, 2), "loader8")),
    # the fixes of the findings ranked above the planted ones, made to each model's tuned
    # run: a 4x batch and the whole step replayed from a CUDA graph (evaluate.SAME_MODEL)
    *pair("batch-llama-b32", "small-batch", "transformers", "batch 8 -> 32 (per token)", TF,
          lambda c: lm_train(c, **LLAMA), lambda c: lm_train(c, **{**LLAMA, "batch": 32})),
    *pair("graphs-llama", "cuda-graphs", "transformers",
          "eager -> the whole step replayed from a CUDA graph", TF,
          lambda c: lm_train(c, **LLAMA), lambda c: lm_train(c, **LLAMA, graphed=True)),
    *[case for model, name in ((swin, "swin"), (lambda c: timm_model(REGNET), "regnety"),
                               (lambda c: timm_model(MOBILENET), "mobilenet"))
      for case in _vision_rivals(model, name)],
]  # fmt: skip
