"""The recommendation catalog: every id, what it detects, how the saving is estimated, the
thresholds, the fix. One place: the rules (analysis/rules/*.py) read their thresholds here and
the README's catalog table is generated from it (`python -m analysis.rules.catalog`).

Ids are stable slugs (ARCHITECTURE.md); new ones may be added, existing ones keep their meaning.
A rule with `detects=""` is documented only: `needs` says what data it would take.

Every saving is per step of the run without the profiler (analysis/step_model.py): a fix
removes GPU time, host time or serialized waiting, and the saving is the step before less
the step after, never below the GPU's or the host's own time. The `saving` texts say what
each fix removes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    technique: str  # the tuning guide's section (../shared/reference/seed-digest.md)
    detects: str  # the mechanism seen in the trace; "" = documented only
    saving: str  # how est_saving_ms is estimated
    fix: str  # code a user can paste
    thresholds: Mapping[str, float] = field(default_factory=dict)
    needs: str = ""  # documented-only rules: the data detection would take
    alternative_to: str = ""  # another id whose fix targets the same kernels (one or other)


_RULES = (
    Entry(
        "mixed-precision", "Train in bf16 autocast", "Mixed precision",
        "fp32 matmuls, convolutions and attention (op dtypes Float) take time on the GPU",
        "each fp32 matrix kernel re-timed at bf16: its FLOPs at the bf16 ceiling scaled by the "
        "efficiency it reaches today, and its bytes halved at the bandwidth ceiling; the larger "
        "of the two is the new time",
        "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n"
        "    loss = model(x, y)\nloss.backward()  # outside autocast; optimizer unchanged",
        {"min_fp32_matrix_share_pct": 5.0},
    ),
    Entry(
        "tf32", "Allow TF32 tensor cores for fp32 matmuls", "Mixed precision",
        "fp32 matmuls and convolutions run on CUDA cores (SIMT kernels) on a GPU with TF32 "
        "tensor cores",
        "the same re-timing as mixed-precision against the TF32 ceiling, bytes unchanged",
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "# or: torch.set_float32_matmul_precision('high')\n"
        "torch.backends.cudnn.allow_tf32 = True",
        {"min_simt_matrix_share_pct": 5.0},
        alternative_to="mixed-precision",
    ),
    Entry(
        "fp8", "Run the large GEMMs in FP8 (Transformer Engine)", "Mixed precision",
        "compute-bound bf16/fp16 GEMMs dominate on a GPU with FP8 tensor cores (Hopper, "
        "Blackwell, Ada)",
        "compute-bound bf16/fp16 GEMM time × (1 − bf16 ceiling / fp8 ceiling)",
        "import transformer_engine.pytorch as te\n"
        "layer = te.Linear(d_in, d_out)  # replaces nn.Linear\n"
        "with te.fp8_autocast(enabled=True):\n    y = layer(x)",
        {"min_compute_bound_gemm_share_pct": 30.0, "min_gemm_mean_us": 20.0},
    ),
    Entry(
        "tensor-core-alignment", "Pad batch, sequence, vocabulary to multiples of 8",
        "Batch size",
        "GEMM dimensions (M, N, K from the ops' input shapes) that are not multiples of 8; "
        "the token tensor's shape and the embedding table name batch, sequence and vocabulary",
        "misaligned GEMM time × the penalty of an odd shape: measured in the run when aligned "
        "GEMMs of the same precision exist (their efficiency vs the misaligned ones'), else the "
        "default penalty",
        "vocab_size = (vocab_size + 63) // 64 * 64      # e.g. 50257 -> 50304\n"
        "seq_len, batch = 1024, 8                       # multiples of 8 (16 for fp8)\n"
        "x = F.pad(x, (0, (-x.shape[-1]) % 8))         # or pad ragged inputs",
        {"min_misaligned_share_pct": 1.0, "default_penalty": 0.15, "align": 8, "seq_align": 64},
    ),
    Entry(
        "channels-last", "Run the convolution net in channels_last", "Memory bandwidth",
        "bf16/fp16 convolutions over NCHW tensors (the inputs' strides): cuDNN converts them "
        "to NHWC and back on every call (nchwToNhwc/nhwcToNchw kernels), and batch norm, "
        "pooling and the elementwise ops run their slower NCHW kernels; depthwise "
        "convolutions run PyTorch's own NCHW kernels (conv_depthwise2d) instead of cuDNN's",
        "the layout-conversion kernels' time, plus the NCHW batch-norm kernels' time × (1 − "
        "nhwc_norm_ratio) and the NCHW depthwise kernels' time × (1 − nhwc_depthwise_ratio), "
        "the channels_last kernels taking those fractions of it",
        "model = model.to(memory_format=torch.channels_last)\n"
        "x = x.to(memory_format=torch.channels_last)  # each batch, before the model",
        {"min_share_pct": 1.0, "nhwc_norm_ratio": 0.44, "nhwc_depthwise_ratio": 0.3},
    ),
    Entry(
        "fused-attention", "Use fused attention (F.scaled_dot_product_attention)",
        "Memory bandwidth",
        "attention materialised in HBM: matmul/softmax/masking ops on [..., S, S] score tensors "
        "and no flash/cuDNN/memory-efficient attention kernel",
        "time of the kernels that touch the S×S tensors minus a fused kernel doing the same "
        "FLOPs at the efficiency of the run's best matmuls",
        "# q, k, v: [batch, heads, seq, head_dim]\n"
        "y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
        {"min_share_pct": 2.0, "min_seq": 128},
    ),
    Entry(
        "kernel-fusion", "Fuse elementwise chains (torch.compile)", "Kernel fusion",
        "chains of memory-bound elementwise/normalisation kernels launched one after another "
        "on a rank, each writing a tensor the next reads (not Inductor's triton_* kernels: "
        "torch.compile fused those already)",
        "GPU time: per chain, every kernel after the longest one (a fused kernel reads and "
        "writes once); host time: the launches it saves (a compiled chain keeps "
        "`kept_per_reduction` kernels per normalisation, reduction or softmax in it, at least "
        "one), at the run's host time per launch",
        "model = torch.compile(model)  # Inductor fuses pointwise and norm chains",
        {"min_share_pct": 3.0, "min_chain": 3, "kept_per_reduction": 3.0},
    ),
    Entry(
        "fused-optimizer", "Use the fused (or foreach) optimizer", "Kernel fusion",
        "the optimizer step launches one kernel per parameter per operation "
        "(no multi_tensor_apply / fused Adam kernel)",
        "GPU time: the optimizer's kernel time minus one fused pass (7 reads+writes of every "
        "fp32 parameter state at the bandwidth ceiling); host time: Optimizer.step's host "
        "time without the profiler (its share of the step's host time) less a fused step's "
        "loop over the tensors",
        "opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # or foreach=True",
        {"min_kernels_per_step": 200.0, "min_share_pct": 0.5},
    ),
    Entry(
        "cuda-graphs", "Capture the step in a CUDA graph", "Kernel fusion",
        "launch-bound: many short kernels per step with the GPU idle between them, waiting for "
        "the host (host-wait gaps), and launches not already replayed from graphs",
        "host time: the GPU idle of the forward and backward passes (the optimizer, data "
        "loading, syncs and allocator calls are other rules' regions) in the share of host-wait "
        "gaps shorter than `max_gap_us` (launch overhead; longer gaps are host work a graph "
        "replay keeps); without ProfilerSteps, those short gaps",
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = model(static_in)\n"
        "# per step: static_in.copy_(x); g.replay()\n"
        "# or: model = torch.compile(model, mode='reduce-overhead')",
        {
            "min_host_wait_pct": 20.0, "min_share_pct": 5.0, "min_kernels_per_step": 50.0,
            "max_median_kernel_us": 50.0, "max_gap_us": 1000.0, "max_graph_launch_share": 0.5,
        },
    ),
    Entry(
        "gpu-starvation", "Feed the GPU: DataLoader workers and pinned memory", "Method",
        "the GPU idles while the host prepares input: the step's data loading (DataLoader "
        "__next__) or host code outside the model (before its first op, after its backward: "
        "tokenising, augmenting, Python between steps)",
        "host time: the GPU idle of the data-loading and host-code regions per step",
        "loader = DataLoader(ds, batch_size=bs, num_workers=8, pin_memory=True,\n"
        "                    persistent_workers=True, prefetch_factor=4)",
        {"min_share_pct": 5.0},
    ),
    Entry(
        "host-sync", "Remove host synchronisations from the step", "Method",
        "cudaStreamSynchronize/cudaDeviceSynchronize inside steps (`.item()`, `.cpu()`, "
        "printing a loss, blocking copies): the host cannot run ahead of the GPU",
        "serialization: the step's time beyond max(GPU, host), its share of the step's "
        "waiting that the syncs account for (when the host bounds the step, the syncs' own "
        "wait)",
        "# log without a sync every step:\n"
        "running = running + loss.detach()          # stays on the GPU\n"
        "if step % 100 == 0:\n    print(running.item() / 100); running.zero_()",
        {"min_syncs_per_step": 1.0, "min_share_pct": 0.05},
    ),
    Entry(
        "pageable-memcpy", "Copy from pinned memory, non_blocking", "Method",
        "host-to-device or device-to-host copies from/to pageable memory (staged and "
        "synchronous for the host)",
        "GPU time: pageable copy time minus the same bytes at pinned-copy speed (measured on "
        "the run's pinned copies of 1 MB or more, else `pinned_gb_per_s`); serialization: the "
        "share of the step's waiting the blocking copies account for",
        "batch = batch.pin_memory().to('cuda', non_blocking=True)\n"
        "# or DataLoader(..., pin_memory=True)",
        {"min_copies_per_step": 1.0, "min_kb_per_copy": 16.0, "pinned_gb_per_s": 25.0},
    ),
    Entry(
        "small-batch", "Raise the batch (gradient accumulation keeps the math)", "Batch size",
        "training whose allocator peak leaves room for a larger batch (profile_memory=True and "
        "deviceProperties needed) and whose estimated saving reaches min_share_pct of the "
        "step: the host's per-step work or the GPU's fixed time spread over more samples "
        "(without ProfilerSteps, only a GPU busy at most max_gpu_busy_pct of the step)",
        "k = the memory headroom (usable memory / peak reserved), at most max_batch_factor; "
        "per original batch the step becomes (max(fixed GPU + (GPU − fixed GPU) × k, host + "
        "loading × (k − 1)) + waiting) / k: the host's per-step work stays, data loading grows "
        "k×; the fixed GPU time (optimizer kernels, each other kernel's first kernel_fixed_us) "
        "stays; the allocator's share of the waiting grows as min(GPU, host)",
        "# per-GPU micro-batch k× larger; fewer accumulation steps keep the global batch:\n"
        "loader = DataLoader(ds, batch_size=k * micro_batch, ...)\n"
        "accum_steps = max(1, accum_steps // k)",
        {"max_gpu_busy_pct": 40.0, "max_peak_memory_pct": 50.0,
         "usable_memory_pct": 80.0, "max_batch_factor": 4.0, "min_share_pct": 5.0,
         "kernel_fixed_us": 2.0},
    ),
    Entry(
        "memory-headroom", "Use the free device memory", "Batch size",
        "the caching allocator gives memory back and takes it again inside steps "
        "(cudaFree/cudaMalloc or hipFree/hipMalloc calls: torch.cuda.empty_cache(), "
        "PYTORCH_NO_CUDA_MEMORY_CACHING, fragmentation, or retries near capacity), or "
        "activation checkpointing recomputes the forward in the backward pass (numbered "
        "forward ops on the autograd threads) while most of the device memory is free",
        "serialization (cudaFree synchronises the device): the step's time beyond max(GPU, "
        "host), its share of the step's waiting that the allocator calls account for (without "
        "ProfilerSteps, the GPU idle during them), and at least the calls' own host time; "
        "recomputation: the GPU time of the kernels "
        "it launches and its host time without the profiler (its share of the step's host "
        "time) × `checkpoint_host_factor` (the "
        "checkpointed forward's ops run slower under the saved-tensor hooks)",
        "# keep the cache: drop torch.cuda.empty_cache() from the loop, unset\n"
        "# PYTORCH_NO_CUDA_MEMORY_CACHING, and against fragmentation:\n"
        "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n"
        "# with memory to spare, keep activations instead of recomputing them:\n"
        "model.gradient_checkpointing_disable()  # timm: model.set_grad_checkpointing(False)",
        {"max_peak_memory_pct": 50.0, "near_capacity_pct": 90.0, "min_calls_per_step": 1.0,
         "min_share_pct": 0.5, "checkpoint_host_factor": 1.6},
    ),
    Entry(
        "comm-overlap", "Overlap gradient communication with backward", "Distributed communication",
        "communication kernels (NCCL/RCCL) run while no compute runs (exposed comm in the "
        "breakdown); with several ranks, the part every rank pays (the minimum over ranks per "
        "step), so that waiting for a slower peer is left to straggler",
        "exposed comm per step minus the last bucket (`bucket_mb`) of each window's last "
        "collective (it follows the last gradient and cannot overlap), at most the compute "
        "time not yet overlapped",
        "model = DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True)\n"
        "# FSDP: FullyShardedDataParallel(model, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,\n"
        "#        limit_all_gathers=True); avoid a sync (loss.item()) before the all-reduce ends",
        {"min_exposed_comm_pct": 10.0, "min_share_pct": 3.0, "bucket_mb": 25.0},
    ),
    Entry(
        "straggler", "Fix the straggler rank", "Distributed communication",
        "with two ranks or more, one rank's time outside exposed communication exceeds the "
        "others' (the others wait for it inside their collectives); the breakdown share that "
        "differs most names the cause (host wait, compute, memcpy)",
        "per step, the straggler's non-communication time minus the median of the other "
        "ranks'",
        "# find why rank R is slow: its host (CPU pinning, data loading), its GPU (clocks,\n"
        "# thermal), or more work (uneven shards):\n"
        "torchrun --nproc-per-node 8 --local-ranks-filter R train.py  # profile that rank\n"
        "DataLoader(..., num_workers=w, pin_memory=True)  # same loader on every rank",
        {"min_gap_pct": 5.0},
    ),
    Entry(
        "nccl-topology", "Place ranks by topology; tune NCCL", "Distributed communication",
        "large collectives (≥ min_msg_mb) whose bus bandwidth (message bytes × the "
        "collective's bus factor / the fastest rank's kernel time, i.e. without waiting for "
        "peers; needs the same collective seen on two ranks or more) is far below the GPU's "
        "link (NVLink or PCIe per direction, from the device name)",
        "each such collective's time minus its bytes at link_efficiency × the link bandwidth, "
        "times the exposed share of communication",
        "NCCL_DEBUG=INFO torchrun ...        # check the chosen transport: P2P/NVLS, not NET/SHM\n"
        "nvidia-smi topo -m                  # ranks on one NVLink domain / NUMA node\n"
        "# multi-node: one rank per GPU, NCCL_IB_HCA set to the NICs next to the GPUs",
        {"min_msg_mb": 16.0, "max_link_fraction": 0.25, "link_efficiency": 0.8,
         "min_share_pct": 1.0},
    ),
    Entry(
        "power-throttling", "Clocks throttled by power or temperature", "Method",
        "NVML samples taken during the run (the run's host and busiest GPUs) report a power, "
        "thermal or hardware-slowdown clock reason with the SM clock below its maximum "
        "(gpu_inventory's max_sm_clock_mhz, else the highest clock sampled)",
        "GPU time: the step's GPU time × the mean over the run's samples of (1 − SM clock / "
        "maximum) on throttled samples: compute time stretches with the clock",
        "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE   # which limit, and by how much\n"
        "# check cooling and airflow; power limit: nvidia-smi -pl <watts> (admin);\n"
        "# a power cap under fp8/bf16 GEMMs: NVIDIA's power-smoothing / lower clocks trade",
        {"min_throttled_share": 0.1, "min_share_pct": 0.5},
    ),
    Entry(
        "decode-batching", "Batch decode requests (continuous batching)", "Inference",
        "inference whose weight GEMMs (mm/addmm/linear/matmul × a 2-D weight) carry at most "
        "max_tokens token rows and are memory-bound (intensity left of the ridge), and make "
        "up most of the weight-GEMM time (a decode loop, not a prefill)",
        "batch r = target_batch / today's token rows: batched step = max(decode GEMM × "
        "(w + r·(1 − w)) + r × other kernel time, host) + waiting (w = weight share of the "
        "GEMM bytes; the host launches the same kernels); saving = step − batched step / r",
        "# serve with continuous batching, e.g. vLLM:\n"
        "from vllm import LLM\nllm = LLM(model=path, max_num_seqs=64)\n"
        "outs = llm.generate(prompts)  # many requests share every weight read",
        {"max_tokens": 16.0, "target_batch": 8.0, "min_decode_gemm_share": 0.5,
         "min_share_pct": 5.0},
    ),
    Entry(
        "weight-quantization", "Quantize weights (INT8/INT4) for memory-bound decode",
        "Inference",
        "the memory-bound decode GEMMs of decode-batching read bf16/fp16 weights",
        "their weight-read time (kernel time × weight share of the bytes) × int8_byte_cut "
        "(INT4: int4_byte_cut); confidence low: accuracy must be checked",
        "from torchao.quantization import quantize_, int8_weight_only\n"
        "quantize_(model, int8_weight_only())   # or int4_weight_only(group_size=128)",
        {"int8_byte_cut": 0.5, "int4_byte_cut": 0.75, "min_share_pct": 1.0},
    ),
    Entry(
        "paged-kv-cache", "Preallocate or page the KV cache", "Inference",
        "inference with torch.cat calls that append a few positions along one axis to a "
        "tensor of rank ≥ 3 whose length takes min_distinct_lengths values or more (a cache "
        "that grows per token, e.g. Hugging Face's DynamicCache)",
        "the cat kernels' time × old / (old + new) positions: a static or paged cache writes "
        "only the new ones",
        "out = model.generate(**inputs, cache_implementation='static')  # transformers\n"
        "# or serve with vLLM (PagedAttention)",
        {"min_distinct_lengths": 4.0, "min_share_pct": 0.1},
    ),
    Entry(
        "speculative-decoding", "Speculative decoding", "Inference", "",
        "decode time per token × (1 − 1 / expected accepted tokens per target step)",
        "out = model.generate(**inputs, assistant_model=draft)  # transformers",
        needs="the acceptance rate of a draft model on the workload's prompts (measured "
        "offline, e.g. as a run tag); the trace shows only that decode is memory-bound "
        "(decode-batching's evidence), not how many draft tokens would be accepted",
    ),
    Entry(
        "sequence-packing", "Pack variable-length sequences instead of padding", "Batch size",
        "", "padding share of the tokens × the time of the token-proportional kernels",
        "# pack documents into full rows and attend within each (varlen / document masks):\n"
        "flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_len, max_len, causal=True)",
        needs="the padding tokens per batch (the attention mask's sum, e.g. a run tag "
        "pad_tokens_per_step beside tokens_per_step): the profiler records shapes, not the "
        "values that say which positions are padding",
    ),
)  # fmt: skip

CATALOG: dict[str, Entry] = {r.id: r for r in _RULES}

# Rules that see their mechanism only through op shapes. Kernels replayed from a CUDA graph
# carry none (their ops ran at capture time), so where most GPU time has no work model their
# silence proves nothing: analysis.compare calls such a finding "unseen", not "gone".
NEEDS_SHAPES = frozenset({
    "mixed-precision", "fp8", "tensor-core-alignment", "fused-attention", "small-batch",
    "decode-batching", "weight-quantization", "paged-kv-cache",
})  # fmt: skip


def markdown() -> str:
    """The README's catalog table."""
    lines = [
        "| id | technique | detected from | estimated saving | thresholds |",
        "|---|---|---|---|---|",
    ]
    for r in _RULES:
        detects = r.detects or f"documented only; needs {r.needs}"
        th = ", ".join(f"`{k}`={v:g}" for k, v in r.thresholds.items())
        lines.append(f"| `{r.id}` | {r.technique} | {detects} | {r.saving} | {th} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
