"""The pair ids of the recordings on models no earlier pair had (tools/validation/fresh_pairs.py
builds them; kept here without torch for evaluate.py), held out whole, and their model groups
(evaluate.SAME_MODEL), each written before the recording's results were read."""

from __future__ import annotations

from tools.validation.rivals import FOURTEENTH_MODELS

# The ninth recording (tools/validation/fresh_pairs.py): models no pair had, held out whole.
FRESH = (
    "precision-llama", "attention-llama", "optimizer-llama", "fusion-compile-llama",
    "recompute-llama", "allocator-llama", "host-sync-llama", "host-preprocess-llama",
    "batch-llama", "alignment-llama", "tf32-swin", "optimizer-swin", "fusion-compile-swin",
    "recompute-swin", "layout-regnety", "precision-regnety", "pageable-regnety",
    "layout-mobilenet", "fusion-compile-mobilenet", "batch-mobilenet", "dataloader-mobilenet",
    "batch-llama-b32", "graphs-llama", "batch-swin-b512", "graphs-swin", "batch-regnety-b512",
    "graphs-regnety", "batch-mobilenet-b512", "graphs-mobilenet",
)  # fmt: skip
# The tenth recording (fresh_pairs.TENTH): three more new models, recorded blind while the
# rules were changed on the ninth's misses, and held out whole to judge those changes (D81).
TENTH = (
    "precision-neox", "attention-neox", "optimizer-neox", "fusion-compile-neox",
    "recompute-neox", "allocator-neox", "host-sync-neox", "host-preprocess-neox", "batch-neox",
    "batch-neox-b32", "graphs-neox", "layout-densenet", "precision-densenet",
    "fusion-compile-densenet", "allocator-densenet", "batch-densenet", "batch-densenet-b512",
    "graphs-densenet", "dataloader-densenet", "tf32-coatnet", "optimizer-coatnet",
    "recompute-coatnet", "layout-coatnet", "pageable-coatnet", "batch-coatnet-b512",
    "graphs-coatnet",
)  # fmt: skip
# The eleventh (fresh_pairs.ELEVENTH): five more new models, recorded to judge D81 and D82.
ELEVENTH = (
    "host-sync-qwen2", "allocator-qwen2", "recompute-qwen2", "host-sync-opt", "allocator-opt",
    "recompute-opt", "layout-convnext-t", "allocator-convnext-t", "layout-ghostnet",
    "allocator-ghostnet", "layout-mixnet", "allocator-mixnet",
)  # fmt: skip
# The twelfth (fresh_pairs.TWELFTH): on the eleventh's models, the rival fixes (4x batch, CUDA
# graphs) and torch.compile, recorded to judge D83.
TWELFTH = (
    "batch-qwen2-b32", "graphs-qwen2", "fusion-compile-qwen2", "batch-opt-b32", "graphs-opt",
    "fusion-compile-opt", "batch-convnext-t-b512", "graphs-convnext-t",
    "fusion-compile-convnext-t", "batch-ghostnet-b512", "graphs-ghostnet",
    "fusion-compile-ghostnet", "batch-mixnet-b512", "graphs-mixnet", "fusion-compile-mixnet",
)  # fmt: skip
# The fourteenth (fresh_pairs.FOURTEENTH): the allocator pair on ten workloads no allocator
# pair had, one pair per model, held out whole to judge D86.
FOURTEENTH = tuple(f"allocator-{m}" for m in FOURTEENTH_MODELS)
FRESH_GROUPS = (
    ("precision-llama", "attention-llama", "optimizer-llama", "fusion-compile-llama",
     "recompute-llama", "allocator-llama", "host-sync-llama", "host-preprocess-llama",
     "batch-llama-b32", "graphs-llama"),
    ("tf32-swin", "optimizer-swin", "fusion-compile-swin", "recompute-swin", "batch-swin-b512",
     "graphs-swin"),
    ("layout-regnety", "precision-regnety", "pageable-regnety", "batch-regnety-b512",
     "graphs-regnety"),
    ("layout-mobilenet", "fusion-compile-mobilenet", "batch-mobilenet-b512", "graphs-mobilenet",
     "allocator-mobilenet"),  # the fourteenth's allocator pair on the same model and batch
    # the tenth's, written before its results were read
    ("precision-neox", "attention-neox", "optimizer-neox", "fusion-compile-neox",
     "recompute-neox", "allocator-neox", "host-sync-neox", "host-preprocess-neox",
     "batch-neox-b32", "graphs-neox"),
    ("layout-densenet", "precision-densenet", "fusion-compile-densenet", "allocator-densenet",
     "batch-densenet-b512", "graphs-densenet"),
    ("tf32-coatnet", "optimizer-coatnet", "recompute-coatnet", "layout-coatnet",
     "pageable-coatnet", "batch-coatnet-b512", "graphs-coatnet"),
    # the eleventh's, written before its results were read, with the twelfth's on those models
    ("host-sync-qwen2", "allocator-qwen2", "recompute-qwen2", "batch-qwen2-b32", "graphs-qwen2",
     "fusion-compile-qwen2"),
    ("host-sync-opt", "allocator-opt", "recompute-opt", "batch-opt-b32", "graphs-opt",
     "fusion-compile-opt"),
    ("layout-convnext-t", "allocator-convnext-t", "batch-convnext-t-b512", "graphs-convnext-t",
     "fusion-compile-convnext-t"),
    ("layout-ghostnet", "allocator-ghostnet", "batch-ghostnet-b512", "graphs-ghostnet",
     "fusion-compile-ghostnet"),
    ("layout-mixnet", "allocator-mixnet", "batch-mixnet-b512", "graphs-mixnet",
     "fusion-compile-mixnet"),
)  # fmt: skip
