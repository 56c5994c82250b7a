"""The before/after pairs: one workload twice, with exactly one change."""

from __future__ import annotations

from tools.validation.changes import (
    TF,
    empty_cache,
    host_sync_every_100,
    host_sync_every_step,
    pair,
    variant,
)
from tools.validation.decode import HFDecoder, decode
from tools.validation.fresh_pairs import (
    ELEVENTH,
    FIFTEENTH,
    FOURTEENTH,
    FRESH,
    SIXTEENTH,
    TENTH,
    THIRTEENTH,
    TWELFTH,
)
from tools.validation.language_models import (
    BERT_BASE,
    BERT_SMALL_B64,
    bert_mlm,
    lm_train,
    pretokenized,
    tokenized_in_loop,
)
from tools.validation.launch_bound import launch_bound
from tools.validation.lightning_train import lightning_train
from tools.validation.vision import resnet50, timm_model, vision_train, vit

PAIRS = [
    *pair("precision-gpt2", "mixed-precision", "transformers", "fp32 (TF32 off) -> bf16 autocast",
          TF, lambda c: lm_train(c, precision="fp32"), lambda c: lm_train(c)),
    *pair("tf32-vit", "tf32", "timm", "fp32 TF32 off -> TF32 on", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), precision="fp32"),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), precision="tf32")),
    *pair("attention-bert", "fused-attention", "transformers", "eager attention -> sdpa",
          TF, lambda c: bert_mlm(c, "eager"), lambda c: bert_mlm(c, "sdpa")),
    *pair("attention-gpt2", "fused-attention", "transformers", "eager causal attention -> sdpa",
          TF, lambda c: lm_train(c, attn="eager", seq=1024, batch=8),
          lambda c: lm_train(c, seq=1024, batch=8)),
    *pair("optimizer-gpt2", "fused-optimizer", "transformers",
          "AdamW(foreach=False) -> AdamW(fused=True)", TF,
          lambda c: lm_train(c, layers=6, d=768, heads=12, batch=8, optimizer="for-loop"),
          lambda c: lm_train(c, layers=6, d=768, heads=12, batch=8)),
    *pair("allocator-gpt2", "memory-headroom", "transformers",
          "torch.cuda.empty_cache() after every step -> not", TF,
          lambda c: lm_train(c, after_step=empty_cache), lambda c: lm_train(c)),
    *pair("dataloader-resnet", "gpu-starvation", "timm+torchvision",
          "DataLoader num_workers=0 -> 8 workers, pinned, persistent, prefetch 4",
          ("timm", "torchvision"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(64, 2), "loader0"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(64, 2), "loader8")),
    *pair("host-preprocess-gpt2", "gpu-starvation", "transformers",
          "pure-Python tokenization in the loop -> batches pre-tokenized before it", TF,
          lambda c: lm_train(c, batches=tokenized_in_loop),
          lambda c: lm_train(c, batches=pretokenized)),
    *pair("layout-resnet50", "channels-last", "torchvision", "NCHW -> channels_last",
          ("torchvision",),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2), channels_last=False),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2))),
    *pair("launch-bound-mlp", "cuda-graphs", "torch",
          "eager -> torch.compile(mode='reduce-overhead') (make_graphed_callables if it fails)",
          (), lambda c: launch_bound(c, graphs=False), lambda c: launch_bound(c, graphs=True)),
    *pair("decode-cudagraph-llama", "cuda-graphs", "transformers",
          "eager decode step -> the step captured in a CUDA graph and replayed", TF,
          lambda c: decode(c, 1, graph=False), lambda c: decode(c, 1, graph=True)),
    *pair("host-sync-gpt2", "host-sync", "transformers",
          "loss.item() every step -> loss summed on the GPU, read every 100 steps", TF,
          lambda c: lm_train(c, after_step=host_sync_every_step()),
          lambda c: lm_train(c, after_step=host_sync_every_100())),
    *pair("pageable-resnet", "pageable-memcpy", "timm",
          "batches in pageable host memory, .to(cuda) -> pinned, non_blocking", ("timm",),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(128, 2), "pageable"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(128, 2), "pinned")),
    *pair("alignment-peft", "tensor-core-alignment", "transformers+peft",
          "vocab 50257, batch 7 x seq 1000 -> vocab 50304, batch 8 x seq 1024 (per token)",
          ("transformers", "peft"),
          lambda c: lm_train(c, layers=6, d=768, heads=12, vocab=50257, seq=1000, batch=7,
                               lora=True),
          lambda c: lm_train(c, layers=6, d=768, heads=12, seq=1024, batch=8, lora=True)),
    *pair("precision-lightning", "mixed-precision", "lightning",
          'Trainer(precision="32-true") -> "bf16-mixed"', ("lightning|pytorch_lightning",),
          lambda c: lightning_train(c, "32-true"), lambda c: lightning_train(c, "bf16-mixed")),
    *pair("decode-batching-llama", "decode-batching", "transformers",
          "decode batch 1 -> batch 8 (compare per sequence: step_b8 / 8)", TF,
          lambda c: decode(c, 1, graph=False, impl=HFDecoder),
          lambda c: decode(c, 8, graph=False, impl=HFDecoder)),
]  # fmt: skip
# The second recording (tools/record_validation_pairs.py --only …): GPU-bound sizes of the
# first set's host-bound pairs, the fixes the first set lacked, and a second pair per fix.
GPT2_124M = {"layers": 12, "d": 768, "heads": 12, "seq": 1024, "batch": 8}
GPT2_6L = {"layers": 6, "d": 768, "heads": 12, "batch": 8}
PAIRS += [
    *pair("precision-vit", "mixed-precision", "timm", "fp32 TF32 off -> bf16 autocast",
          ("timm",), lambda c: vision_train(c, vit(c), c.pick(128, 2), precision="fp32"),
          lambda c: vision_train(c, vit(c), c.pick(128, 2))),
    *pair("attention-bert-base", "fused-attention", "transformers",
          "eager attention -> sdpa (BERT-base, batch 32)", TF,
          lambda c: bert_mlm(c, "eager", BERT_BASE), lambda c: bert_mlm(c, "sdpa", BERT_BASE)),
    *pair("optimizer-gpt2-124m", "fused-optimizer", "transformers",
          "AdamW(foreach=False) -> AdamW(fused=True) (GPT-2 124M, 8 x 1024 tokens)", TF,
          lambda c: lm_train(c, **GPT2_124M, optimizer="for-loop"),
          lambda c: lm_train(c, **GPT2_124M)),
    *pair("batch-gpt2", "small-batch", "transformers",
          "optimizer-gpt2's run at batch 8 -> batch 32 (per token)", TF,
          lambda c: lm_train(c, **GPT2_6L, optimizer="for-loop"),
          lambda c: lm_train(c, **{**GPT2_6L, "batch": 32}, optimizer="for-loop")),
    *pair("fusion-compile-gpt2", "kernel-fusion", "transformers",
          "eager -> torch.compile (Inductor default mode)", TF,
          lambda c: lm_train(c), lambda c: lm_train(c, compiled=True)),
    *pair("fusion-compile-vit", "kernel-fusion", "timm",
          "eager -> torch.compile (Inductor default mode)", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2)),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), compiled=True)),
    *pair("recompute-gpt2", "memory-headroom", "transformers",
          "gradient_checkpointing_enable() -> off, memory mostly free", TF,
          lambda c: lm_train(c, checkpointed=True), lambda c: lm_train(c)),
    *pair("recompute-vit", "memory-headroom", "timm",
          "set_grad_checkpointing(True) -> off, memory mostly free", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, vit(c), c.pick(128, 2))),
    *pair("layout-resnet50-b256", "channels-last", "torchvision", "NCHW -> channels_last",
          ("torchvision",),
          lambda c: vision_train(c, resnet50(), c.pick(256, 2), channels_last=False),
          lambda c: vision_train(c, resnet50(), c.pick(256, 2))),
    *pair("layout-efficientnet", "channels-last", "timm", "NCHW -> channels_last",
          ("timm",),
          lambda c: vision_train(c, timm_model("efficientnet_b0"), c.pick(256, 2),
                                 channels_last=False),
          lambda c: vision_train(c, timm_model("efficientnet_b0"), c.pick(256, 2))),
]  # fmt: skip
# The third recording: a second pair for the fixes the second one tuned.
PEFT_GPT2 = {"layers": 6, "d": 768, "heads": 12, "seq": 1024, "batch": 8, "lora": True}
PAIRS += [
    *pair("optimizer-vit", "fused-optimizer", "timm",
          "AdamW(foreach=False) -> AdamW(fused=True)", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), optimizer="for-loop"),
          lambda c: vision_train(c, vit(c), c.pick(128, 2))),
    *pair("graphs-bert", "cuda-graphs", "transformers",
          "eager -> forward and backward replayed from CUDA graphs (make_graphed_callables)",
          TF, lambda c: bert_mlm(c, "sdpa"), lambda c: bert_mlm(c, "sdpa", graphs="callables")),
    *pair("batch-bert", "small-batch", "transformers", "batch 16 -> 64 (per token)", TF,
          lambda c: bert_mlm(c, "sdpa"), lambda c: bert_mlm(c, "sdpa", BERT_SMALL_B64)),
    *pair("fusion-compile-peft", "kernel-fusion", "transformers+peft",
          "eager -> torch.compile (Inductor default mode)", ("transformers", "peft"),
          lambda c: lm_train(c, **PEFT_GPT2), lambda c: lm_train(c, **PEFT_GPT2,
                                                                      compiled=True)),
    *pair("fusion-compile-resnet50", "kernel-fusion", "torchvision",
          "eager -> torch.compile (Inductor default mode), NCHW", ("torchvision",),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2), channels_last=False),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2), channels_last=False,
                                 compiled=True)),
]  # fmt: skip
# The fourth recording: the fixes of findings that rank above a planted one where no pair had
# measured them, each made to that pair's own "before" workload (evaluate.RIVALS): whether the
# ranking was right is then a measurement. Not fp8 (no fp8 training stack on the GPU machine);
# cuda-graphs on BERT and ViT waited for the fifth recording (graphs-bert's capture changed
# precision too).
GPT2_124M_LOOP = {**GPT2_124M, "optimizer": "for-loop"}
RIVAL_SOURCES = ("optimizer-gpt2-124m", "recompute-gpt2", "host-preprocess-gpt2", "allocator-gpt2",
                 "recompute-vit", "attention-bert")  # fmt: skip
PAIRS += [
    *pair("batch-gpt2-124m", "small-batch", "transformers",
          "optimizer-gpt2-124m's before at batch 8 -> batch 32 (per token)", TF,
          lambda c: lm_train(c, **GPT2_124M_LOOP),
          lambda c: lm_train(c, **{**GPT2_124M_LOOP, "batch": 32})),
    *pair("fusion-compile-gpt2-124m", "kernel-fusion", "transformers",
          "optimizer-gpt2-124m's before, eager -> torch.compile", TF,
          lambda c: lm_train(c, **GPT2_124M_LOOP),
          lambda c: lm_train(c, **GPT2_124M_LOOP, compiled=True)),
    *pair("batch-recompute-gpt2", "small-batch", "transformers",
          "recompute-gpt2's before at batch 16 -> batch 64 (per token)", TF,
          lambda c: lm_train(c, checkpointed=True),
          lambda c: lm_train(c, checkpointed=True, batch=64)),
    *pair("batch-host-preprocess-gpt2", "small-batch", "transformers",
          "host-preprocess-gpt2's before at batch 16 -> batch 64 (per token)", TF,
          lambda c: lm_train(c, batches=tokenized_in_loop),
          lambda c: lm_train(c, batches=tokenized_in_loop, batch=64)),
    *pair("batch-allocator-gpt2", "small-batch", "transformers",
          "allocator-gpt2's before at batch 16 -> batch 64 (per token)", TF,
          lambda c: lm_train(c, after_step=empty_cache),
          lambda c: lm_train(c, after_step=empty_cache, batch=64)),
    *pair("batch-recompute-vit", "small-batch", "timm",
          "recompute-vit's before at batch 128 -> batch 512 (per sample)", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, vit(c), c.pick(512, 4), checkpointed=True)),
    *pair("fusion-compile-bert", "kernel-fusion", "transformers",
          "attention-bert's before, eager -> torch.compile", TF,
          lambda c: bert_mlm(c, "eager"), lambda c: bert_mlm(c, "eager", compiled=True)),
]  # fmt: skip
# The fifth recording: cuda-graphs, ranked above the planted finding on BERT and on the
# checkpointed ViT, made to those before workloads (the whole step captured in one CUDA graph:
# forward, backward and a capturable fused AdamW), each beside its pair's own fix again.
GRAPH_RIVAL_SOURCES = ("attention-bert", "recompute-vit")
PAIRS += [
    *pair("graphs-attention-bert", "cuda-graphs", "transformers",
          "attention-bert's before, eager -> the whole step replayed from a CUDA graph (its "
          "all-zero attention mask built once: transformers' per-step one cannot be captured)",
          TF,
          lambda c: bert_mlm(c, "eager"), lambda c: bert_mlm(c, "eager", graphs="step")),
    *pair("graphs-recompute-vit", "cuda-graphs", "timm",
          "recompute-vit's before, eager -> the whole step replayed from a CUDA graph", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), checkpointed=True, graphed=True)),
]  # fmt: skip
# The sixth recording: new models for the two estimates D65 changed, held out (the pairs they
# were designed on moved to the tune half): checkpointing on BERT, a ConvNeXt and the
# reentrant kind on GPT-2; a cache emptied every step on the ViT and on BERT, each beside a
# larger batch of the same before workload (small-batch now counts the allocator's waiting as
# growing with the batch).
BERT_CKPT = {"checkpointed": True}
PAIRS += [
    *pair("recompute-bert", "memory-headroom", "transformers",
          "gradient_checkpointing_enable() -> off, memory mostly free (BERT)", TF,
          lambda c: bert_mlm(c, "sdpa", **BERT_CKPT), lambda c: bert_mlm(c, "sdpa")),
    *pair("batch-recompute-bert", "small-batch", "transformers",
          "recompute-bert's before at batch 16 -> batch 64 (per token)", TF,
          lambda c: bert_mlm(c, "sdpa", **BERT_CKPT),
          lambda c: bert_mlm(c, "sdpa", BERT_SMALL_B64, **BERT_CKPT)),
    *pair("recompute-gpt2-reentrant", "memory-headroom", "transformers",
          "gradient_checkpointing_enable(use_reentrant=True) -> off, memory mostly free", TF,
          lambda c: lm_train(c, checkpointed="reentrant"), lambda c: lm_train(c)),
    *pair("recompute-convnext", "memory-headroom", "timm",
          "set_grad_checkpointing(True) -> off, memory mostly free (ConvNeXt-atto)", ("timm",),
          lambda c: vision_train(c, timm_model("convnext_atto"), c.pick(128, 2),
                                 checkpointed=True),
          lambda c: vision_train(c, timm_model("convnext_atto"), c.pick(128, 2))),
    *pair("allocator-vit", "memory-headroom", "timm",
          "torch.cuda.empty_cache() after every step -> not (ViT)", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), after_step=empty_cache),
          lambda c: vision_train(c, vit(c), c.pick(128, 2))),
    *pair("batch-allocator-vit", "small-batch", "timm",
          "allocator-vit's before at batch 128 -> batch 512 (per sample)", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), after_step=empty_cache),
          lambda c: vision_train(c, vit(c), c.pick(512, 4), after_step=empty_cache)),
    *pair("allocator-bert", "memory-headroom", "transformers",
          "torch.cuda.empty_cache() after every step -> not (BERT)", TF,
          lambda c: bert_mlm(c, "sdpa", after_step=empty_cache), lambda c: bert_mlm(c, "sdpa")),
    *pair("batch-allocator-bert", "small-batch", "transformers",
          "allocator-bert's before at batch 16 -> batch 64 (per token)", TF,
          lambda c: bert_mlm(c, "sdpa", after_step=empty_cache),
          lambda c: bert_mlm(c, "sdpa", BERT_SMALL_B64, after_step=empty_cache)),
    # and torch.compile on two models no pair compiled: kernel-fusion's estimate, held out
    *pair("fusion-compile-bert-sdpa", "kernel-fusion", "transformers",
          "eager -> torch.compile (Inductor default mode), BERT with sdpa attention", TF,
          lambda c: bert_mlm(c, "sdpa"), lambda c: bert_mlm(c, "sdpa", compiled=True)),
    *pair("fusion-compile-convnext", "kernel-fusion", "timm",
          "eager -> torch.compile (Inductor default mode), ConvNeXt-atto", ("timm",),
          lambda c: vision_train(c, timm_model("convnext_atto"), c.pick(128, 2)),
          lambda c: vision_train(c, timm_model("convnext_atto"), c.pick(128, 2),
                                 compiled=True)),
]  # fmt: skip
# The seventh recording: the fixes ranked above the sixth's planted findings, on the same
# before workloads (evaluate.SAME_MODEL groups them): the whole step captured in a CUDA graph
# on BERT and on the checkpointed BERT and ConvNeXt, and a 4x batch of the checkpointed ConvNeXt.
CONVNEXT = "convnext_atto"
PAIRS += [
    *pair("graphs-bert-sdpa", "cuda-graphs", "transformers",
          "BERT with sdpa attention, eager -> the whole step replayed from a CUDA graph", TF,
          lambda c: bert_mlm(c, "sdpa"), lambda c: bert_mlm(c, "sdpa", graphs="step")),
    *pair("graphs-recompute-bert", "cuda-graphs", "transformers",
          "recompute-bert's before, eager -> the whole step replayed from a CUDA graph", TF,
          lambda c: bert_mlm(c, "sdpa", **BERT_CKPT),
          lambda c: bert_mlm(c, "sdpa", graphs="step", **BERT_CKPT)),
    *pair("graphs-recompute-convnext", "cuda-graphs", "timm",
          "recompute-convnext's before, eager -> the whole step replayed from a CUDA graph",
          ("timm",),
          lambda c: vision_train(c, timm_model(CONVNEXT), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, timm_model(CONVNEXT), c.pick(128, 2), checkpointed=True,
                                 graphed=True)),
    *pair("batch-recompute-convnext", "small-batch", "timm",
          "recompute-convnext's before at batch 128 -> batch 512 (per sample)", ("timm",),
          lambda c: vision_train(c, timm_model(CONVNEXT), c.pick(128, 2), checkpointed=True),
          lambda c: vision_train(c, timm_model(CONVNEXT), c.pick(512, 4), checkpointed=True)),
]  # fmt: skip
PAIRS += FRESH + TENTH + ELEVENTH + TWELFTH + THIRTEENTH + FOURTEENTH + FIFTEENTH + SIXTEENTH
FLAGGED = ("precision-gpt2", "attention-gpt2", "optimizer-gpt2", "layout-resnet50")
CASES = [
    *PAIRS,
    *variant(PAIRS, FLAGGED, "stack", with_stack=True),
    *variant(PAIRS, FLAGGED[:3], "noshapes", record_shapes=False),
    *variant(PAIRS, FLAGGED[:3], "nomemory", profile_memory=False),
    *variant(PAIRS, FLAGGED[:3], "bare", record_shapes=False, profile_memory=False),
    # the fourth recording again makes these pairs' own fixes beside their rivals' (same session)
    *variant(PAIRS, RIVAL_SOURCES, "r4"),
    *variant(PAIRS, GRAPH_RIVAL_SOURCES, "r5"),
]
