"""What a GPU kernel is, from its name alone: class, precision hint, tensor-core use.

One ordered table of regexes, first match wins (reference notes §6.2; the ✔ names there were
seen on an H200 with torch 2.11 / CUDA 13, where cuBLAS GEMMs are `nvjet_*` and cuDNN attention
is `cudnn_generated_fort_native_sdpa_*`). Names drift with library versions, so the table is
tested on every real trace in ../shared/fixtures. The roofline prefers the launching op's
dtypes over the precision hint here; the hint serves kernels without an op.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd

KERNEL_CLASSES = (
    "gemm", "attention", "conv", "elementwise", "reduction", "norm", "softmax", "embedding",
    "optimizer", "copy", "comm", "memcpy", "memset", "other",
)  # fmt: skip

# (class, pattern). Order matters: attention and conv kernels contain "gemm", cuDNN batch
# norm contains "cudnn", copies are templated through elementwise_kernel.
CLASS_PATTERNS: tuple[tuple[str, str], ...] = (
    ("memcpy", r"^Memcpy"),
    ("memset", r"^Memset"),
    ("comm", r"nccl|rccl|all_reduce_(one|two)_shot|cross_device_reduce"),
    (
        "attention",
        r"sdpa|flash_fwd|flash_bwd|flash::|FlashAttn|fmha|attn_fwd|attn_bwd|paged_attention"
        r"|BatchDecodeWithPagedKVCache|BatchPrefillWith|cudnn::fusion::(compute_dot_do_o"
        r"|convert_dq)",
    ),
    (
        "norm",
        r"layer_norm|LayerNorm|rms_norm|RMSNorm|RowwiseMoments|batch_norm|BatchNorm|bn_fw|bn_bw"
        r"|group_norm|GroupNorm|instance_norm|compute_mean_var|GammaBetaBackward",
    ),
    ("softmax", r"softmax|SoftMax"),
    (
        "conv",
        r"implicit_gemm|implicit_convolve|ImplicitGemmConvolution|convolve|conv2d|conv3d"
        r"|scudnn|fprop|dgrad|wgrad|winograd|fft2d|cudnn::cnn|c(utl)?ass_cudnn|flip_filter",
    ),
    (
        "gemm",
        r"^nvjet|xmma_gemm|(?<!fb)gemm|gemv|Cijk_|splitKreduce|bmm_|Marlin|_int_mm|triton_tem_|epilogue::impl",
    ),
    (
        "embedding",
        r"(?<!rotary_)embedding|indexSelect|EmbeddingBag|compute_grad_weight|partial_segment"
        r"|partials_per_segment",
    ),
    ("optimizer", r"multi_tensor_apply|Adam|adagrad|_foreach_"),
    (
        "copy",
        r"copy_kernel|CatArrayBatchedCopy|transpose|Transpose|nchwToNhwc|nhwcToNchw|permute"
        r"|index|gather|scatter|reshape_and_cache|copy_page|recat_copy",
    ),
    (
        "reduction",
        r"reduce_kernel|Reduce|reduction|cub::|DeviceSelect|DeviceScan|radix_sort"
        r"|unique_by_key|ClassNLLCriterion|nll_loss|scan_innermost|max_pool|avg_pool"
        r"|triton_(red|per)_",
    ),
    (
        "elementwise",
        r"elementwise|Functor|_kernel_cuda|triton_poi_|fill|arange|triu_tril|where|dropout"
        r"|distribution|gelu|silu|relu|sigmoid|tanh|rotary|scalePackedTensor",
    ),
)

# Tensor-core kernels among gemm/conv/attention; SIMT names win over them (checked first).
_SIMT = re.compile(
    r"ffma|sgemm|simt|scudnn|gemv|gemmk1|implicit_convolve|winograd|fft2d|cf32|splitKreduce"
    r"|dgrad_engine|wgrad_alg|compute_dot_do_o|convert_dq"
)
_TENSOR = re.compile(
    r"nvjet|tensorop|gmma|hmma|imma|1688|16816|884|wmma|tensor\d|tf32|bf16|f16|e4m3|e5m2"
    r"|sdpa|flash|fmha|_MI\d+x|Marlin|bmm_|triton_tem_"
)

# (precision, pattern), first match wins; a hint only (cuDNN's "f16" also covers bf16).
PRECISION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("fp8", r"e4m3|e5m2|fp8|[Ff]loat8|nvjet_(sm\d+_)?qq"),
    ("bf16", r"bf16|[Bb][Ff]loat16|nvjet_(sm\d+_)?tst"),
    ("tf32", r"tf32|tensorop_s1688|s16816gemm(?!_bf16)"),
    ("fp16", r"fp16|f16|[Hh]alf|h1688|h884|nvjet_(sm\d+_)?hsh"),
    ("fp64", r"double|dgemm|f64"),
    ("int8", r"int8|igemm|imma|i8816"),
    ("fp32", r"f32f32|sgemm|ffma|scudnn|<float|float>|float,|\bfloat\b"),
)

_CLASS_RE = [(c, re.compile(p)) for c, p in CLASS_PATTERNS]
_PRECISION_RE = [(p, re.compile(r, re.IGNORECASE)) for p, r in PRECISION_PATTERNS]
_MATRIX = {"gemm", "conv", "attention"}
# Only a name's start is matched: the longest real kernel name of the fixtures is 5 123
# characters and each of their 956 names is classified the same from its first 512; a 1 MB
# name took 0.5 s per call (18 of a report's 20 s with ten of them).
NAME_CHARS = 2048


@functools.lru_cache(maxsize=65536)
def classify_name(name: str) -> tuple[str, str | None, bool]:
    """(kernel_class, precision hint or None, tensor_core) of one kernel name, from its first
    NAME_CHARS characters; each distinct name is matched once per process."""
    name = name[:NAME_CHARS]
    cls = next((c for c, rx in _CLASS_RE if rx.search(name)), "other")
    precision = next((p for p, rx in _PRECISION_RE if rx.search(name)), None)
    tensor_core = cls in _MATRIX and not _SIMT.search(name) and bool(_TENSOR.search(name))
    return cls, precision, tensor_core


def classify(names: pd.Series) -> pd.DataFrame:
    """Classify kernel names; one row per input row, same index.

    Columns: kernel_class (one of KERNEL_CLASSES), precision (fp8, bf16, tf32, fp16, fp64,
    int8, fp32 or None: a hint from the name), tensor_core (bool). Each distinct name is
    matched once, so a million events with a few hundred names cost milliseconds.
    """
    codes, uniques = pd.factorize(names, use_na_sentinel=True)
    table = [classify_name(str(n)) for n in uniques]
    # A missing name has code -1, which picks the appended last entry.
    cls = np.array([t[0] for t in table] + ["other"], dtype=object)
    prec = np.array([t[1] for t in table] + [None], dtype=object)
    tc = np.array([t[2] for t in table] + [False], dtype=bool)
    # Object columns: pandas 3 would otherwise convert every value to an Arrow string.
    return pd.DataFrame(
        {
            "kernel_class": pd.Series(cls[codes], index=names.index, dtype=object),
            "precision": pd.Series(prec[codes], index=names.index, dtype=object),
            "tensor_core": pd.Series(tc[codes], index=names.index),
        }
    )
