"""Rules about how tensors are laid out in memory: a convolution net run in NCHW under
bf16/fp16, where cuDNN's tensor-core convolutions want NHWC.

Measured on the validation set's ResNet-50 pair (H200, bf16, batch 64): NCHW made cuDNN
convert every convolution's input and output (nchwToNhwc/nhwcToNchw kernels, 3.3 ms per
step) and batch norm run its NCHW kernels (14.8 ms against 6.5 ms in channels_last): the
GPU's time went from 27.8 to 15.2 ms per step. Depthwise convolutions (EfficientNet,
MobileNetV3) run PyTorch's own NCHW kernels (conv_depthwise2d) and cuDNN's in channels_last:
their convolutions' time fell from 44.5 to 13.9 and 14.3 to 5.7 ms per step (D81).
"""

from __future__ import annotations

import json
import re

from analysis.facts import Facts
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import names_matching, top_names
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms

_CONVERSION = re.compile(r"nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw")
_NCHW_DEPTHWISE = re.compile(r"conv_depthwise2d")
_NCHW_NORM = re.compile(r"batch_norm(?!.*channels_last)|max_pool\w*_nchw|avg_pool\w*_nchw")
_CONV_OPS = ("aten::cudnn_convolution", "aten::convolution", "aten::_convolution")
_HALF = ('"c10::BFloat16"', '"c10::Half"')


def _nchw_half_convs(facts: Facts) -> int:
    """Distinct bf16/fp16 convolution signatures whose input is NCHW-contiguous (its
    channel stride is H·W, its last stride 1)."""
    ops = facts.ops[facts.ops["name"].isin(_CONV_OPS)].drop_duplicates("signature")
    found = 0
    for types, strides, shapes in zip(
        ops["input_types"], ops["input_strides"], ops["input_dims"], strict=True
    ):
        if not isinstance(types, str) or not any(h in types for h in _HALF):
            continue
        try:
            stride = json.loads(strides)[0] if isinstance(strides, str) else None
            shape = json.loads(shapes)[0] if isinstance(shapes, str) else None
        except (ValueError, IndexError, TypeError):
            continue
        if (
            isinstance(stride, list)
            and isinstance(shape, list)
            and len(stride) == len(shape) == 4
            and stride[3] == 1
            and stride[1] == shape[2] * shape[3]
        ):
            found += 1
    return found


@rule("channels-last")
def channels_last(facts: Facts) -> Finding | None:
    th = CATALOG["channels-last"].thresholds
    k = facts.kernels
    if k.empty or not _nchw_half_convs(facts):
        return None
    convert = k[names_matching(k["name"], _CONVERSION)]
    norm = k[names_matching(k["name"], _NCHW_NORM)]
    depthwise = k[names_matching(k["name"], _NCHW_DEPTHWISE)]
    convert_ms = facts.per_step_ms(float(convert["dur_ns"].sum()))
    norm_ms = facts.per_step_ms(float(norm["dur_ns"].sum()))
    depthwise_ms = facts.per_step_ms(float(depthwise["dur_ns"].sum()))
    saving = (
        convert_ms
        + norm_ms * (1 - th["nhwc_norm_ratio"])
        + depthwise_ms * (1 - th["nhwc_depthwise_ratio"])
    )
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    per_step = len(convert) / (facts.windows * facts.ranks)
    return Finding(
        gpu_ms=saving,
        confidence="high" if len(convert) else "medium",
        evidence=(
            f"{_nchw_half_convs(facts)} bf16/fp16 convolution shapes run on NCHW tensors "
            "(input strides)",
            f"{per_step:,.0f} layout conversions per step (nchwToNhwc/nhwcToNchw): "
            f"{ms(convert_ms)} of GPU time",
            f"NCHW batch-norm and pooling kernels: {ms(norm_ms)} per step; in channels_last "
            f"they take about {th['nhwc_norm_ratio']:.0%} of that",
            *(
                [
                    f"NCHW depthwise convolution kernels (conv_depthwise2d): {ms(depthwise_ms)} "
                    f"per step; cuDNN's channels_last ones take about "
                    f"{th['nhwc_depthwise_ratio']:.0%} of that"
                ]
                if len(depthwise)
                else []
            ),
        ),
        why=(
            "cuDNN's tensor-core convolutions work in NHWC: with NCHW tensors each call "
            "converts its input and output, and the norm and pooling kernels around them run "
            "their NCHW versions (depthwise convolutions PyTorch's own NCHW kernels). In "
            "channels_last the conversions go and those kernels get "
            "faster: the saving removes that GPU time (the step without the profiler, never "
            "below the host's own time)."
        ),
        kernels=top_names(convert if len(convert) else norm, "name", 3),
        ops=("aten::cudnn_convolution", "aten::native_batch_norm"),
    )


RULES: tuple[Rule, ...] = (channels_last,)
