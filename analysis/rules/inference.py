"""Rules for inference: decode batching, weight quantization, the KV cache.

Decode runs the weight GEMMs with a token dimension M of a few rows (one token per sequence):
their bytes are the weights, read once per generated token whatever M is, so their time is
set by HBM bandwidth and barely moves with the batch (analysis.gemm_shapes). The rules
measure that weight-read time and the step's idle time in the run itself.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.gemm_shapes import time_weighted_median
from analysis.model.dtypes import HALF_TYPES
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import top_names
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms


def _decode_gemms(facts: Facts) -> pd.DataFrame:
    """Weight GEMM kernels of an inference run with few token rows and memory-bound work
    (intensity left of the ridge of their precision); empty for training runs."""
    roofs = facts.ceilings
    if facts.is_training or roofs is None or facts.kernels.empty:
        return pd.DataFrame()
    g = facts.weight_gemms
    th = CATALOG["decode-batching"].thresholds
    g = g[(g["tokens"] <= th["max_tokens"]) & (g["bytes"] > 0)]
    ridge = g["precision"].map(lambda p: (roofs.peak(p) or np.nan) / roofs.bandwidth_bytes_per_s)
    return g[g["flops"] / g["bytes"] < ridge.astype(float)]


def _weight_share(g: pd.DataFrame) -> pd.Series:
    """Share of each GEMM's compulsory bytes that are weight bytes (x and y at 2 bytes)."""
    act = g["tokens"] * (g["k"] + g["n"]) * 2.0
    return g["weight_bytes"] / (g["weight_bytes"] + act)


def _shape_text(g: pd.DataFrame) -> str:
    top = g.groupby(["tokens", "k", "n"])["dur_ns"].sum().sort_values(ascending=False)
    return ", ".join(f"[{m}, {k}] × [{k}, {n}]" for m, k, n in top.index[:3])


@rule("decode-batching")
def decode_batching(facts: Facts) -> Finding | None:
    th = CATALOG["decode-batching"].thresholds
    g = _decode_gemms(facts)
    if g.empty:
        return None
    all_gemms = facts.weight_gemms
    decode_share = float(g["dur_ns"].sum()) / max(float(all_gemms["dur_ns"].sum()), 1.0)
    batch = time_weighted_median(g["tokens"], g["dur_ns"])
    if decode_share < th["min_decode_gemm_share"] or batch >= th["target_batch"]:
        return None
    r = th["target_batch"] / batch
    step = facts.step_ms
    gemm = facts.per_step_ms(float(g["dur_ns"].sum()))
    w = float((_weight_share(g) * g["dur_ns"]).sum()) / float(g["dur_ns"].sum())
    model = facts.step_model
    if model is not None:
        # GPU work at r× the batch: the same weight reads plus r× the activation bytes, and
        # r× every other kernel (attention over r caches, elementwise on r rows); the host
        # launches the same kernels, and the step's waiting stays.
        rest = max(model.gpu_ms - gemm, 0.0)
        gpu = gemm * (w + r * (1 - w)) + r * rest
        batched = max(gpu, model.host_ms) + model.serial_ms
        idle = model.headroom_ms
    else:
        idle = min(facts.per_step_ms(facts.total_ns("idle_ns")), step)
        rest = max(step - idle - gemm, 0.0)
        batched = idle + gemm * (w + r * (1 - w)) + r * rest
    saving = step - batched / r
    if 100 * saving / max(step, 1e-9) < th["min_share_pct"]:
        return None
    ops = g.drop_duplicates(["rank", "op_external_id"])
    weights_gb = facts.per_step_ms(float(ops["weight_bytes"].sum())) / 1e3  # GB per step
    rate = float(g["bytes"].sum()) / float(g["dur_ns"].sum()) * 1e9  # bytes/s
    roofs = facts.ceilings
    assert roofs is not None
    target = int(th["target_batch"])
    return Finding(
        saving_ms=saving,
        confidence="medium",
        evidence=(
            f"decode GEMMs with {batch:g} token row(s) ({_shape_text(g)}): {ms(gemm)} per "
            f"step reading {weights_gb:.3g} GB of weights at {rate / 1e12:.2f} TB/s "
            f"({100 * rate / roofs.bandwidth_bytes_per_s:.0f} % of the {roofs.label} "
            "bandwidth): the weights are read again for every token",
            f"GPU idle {ms(idle)} of the {ms(step)} step ({100 * idle / step:.0f} %); the "
            "host launches the same kernels whatever the batch",
            f"batch {target}: about {ms(batched)} per step for {r:g}× the sequences, "
            f"{ms(batched / r)} per sequence-step instead of {ms(step)}",
        ),
        why=(
            f"Per step, the GPU idle time ({ms(idle)}) and the weight reads of the decode "
            f"GEMMs ({100 * w:.0f} % of their bytes) do not grow with the batch; their "
            "activation bytes and every other kernel grow with it. Batched step = idle + "
            "GEMM × (w + r·(1 − w)) + r × other kernels, with r = "
            f"{target}/{batch:g}; the saving is step − batched step / r."
        ),
        kernels=top_names(g, "name", 3),
        ops=tuple(sorted(set(g["op_name"]))),
    )


@rule("weight-quantization")
def weight_quantization(facts: Facts) -> Finding | None:
    th = CATALOG["weight-quantization"].thresholds
    g = _decode_gemms(facts)
    if g.empty:
        return None
    g = g[g["weight_type"].isin(HALF_TYPES)]
    if g.empty:
        return None
    read_ms = facts.per_step_ms(float((g["dur_ns"] * _weight_share(g)).sum()))
    saving = read_ms * th["int8_byte_cut"]
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    dtype = "bf16" if (g["weight_type"] == "c10::BFloat16").all() else "16-bit"
    return Finding(
        gpu_ms=saving,
        confidence="low",
        evidence=(
            f"memory-bound {dtype} weight GEMMs ({_shape_text(g)}): {ms(read_ms)} per step "
            "spent reading weights",
            f"INT8 weights halve those bytes: about {ms(saving)} per step; INT4: "
            f"{ms(read_ms * th['int4_byte_cut'])}",
        ),
        why=(
            "These GEMMs sit left of the ridge point: their time is the bytes they read, "
            "almost all weights. The saving is the weight-read time (kernel time × weight "
            f"share of its bytes) × {th['int8_byte_cut']:g} for INT8; accuracy has to be "
            "checked on the model, hence the low confidence."
        ),
        kernels=top_names(g, "name", 3),
        ops=tuple(sorted(set(g["op_name"]))),
    )


def _appends(cats: pd.DataFrame) -> pd.DataFrame:
    """torch.cat calls that append a few positions to a tensor of rank >= 3 along one axis:
    rank, external_id, length (positions before), added, shape (of the first input)."""
    rows = []
    for r in cats.itertuples():
        shapes = _tensor_list(r.input_dims)
        if len(shapes) != 2 or len(shapes[0]) < 3 or len(shapes[0]) != len(shapes[1]):
            continue
        a, b = shapes
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1 and b[diff[0]] < a[diff[0]]:
            rows.append((r.rank, r.external_id, a[diff[0]], b[diff[0]], diff[0], str(a)))
    return pd.DataFrame(rows, columns=["rank", "external_id", "length", "added", "axis", "shape"])


def _tensor_list(text: object) -> list[list[int]]:
    """The shapes of aten::cat's first input (a TensorList: [[shape, shape, ...], dim])."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    if not isinstance(value, list) or not value or not isinstance(value[0], list):
        return []
    shapes = value[0]
    if all(isinstance(s, list) and all(isinstance(d, int) for d in s) for s in shapes):
        return [[int(d) for d in s] for s in shapes]
    return []


@rule("paged-kv-cache")
def paged_kv_cache(facts: Facts) -> Finding | None:
    th = CATALOG["paged-kv-cache"].thresholds
    if facts.is_training or facts.kernels.empty:
        return None
    cats = facts.shaped_ops("aten::cat")
    app = _appends(cats)
    if app.empty or app["length"].nunique() < th["min_distinct_lengths"]:
        return None
    k = facts.kernels.merge(
        app, left_on=["rank", "op_external_id"], right_on=["rank", "external_id"]
    )
    if k.empty:
        return None
    # A static or paged cache writes only the new positions: the copy of the old ones goes.
    old = k["length"] / (k["length"] + k["added"])
    saving = facts.per_step_ms(float((k["dur_ns"] * old).sum()))
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    per_step = len(k) / (facts.windows * facts.ranks)
    lo, hi = int(k["length"].min()), int(k["length"].max())
    example = app.sort_values("length").iloc[0]["shape"]
    return Finding(
        gpu_ms=saving,
        confidence="medium",
        evidence=(
            f"{per_step:,.0f} torch.cat kernels per step append {int(k['added'].median())} "
            f"position(s) to caches like {example} whose length grows from {lo} to {hi}",
            f"each call copies the whole cache ({float(k['dur_ns'].mean()) / 1e3:.1f} µs per "
            f"call on average): {ms(saving)} per step copying old positions",
        ),
        why=(
            "Appending with torch.cat allocates a new cache and copies every old position "
            "each token, so the cost grows with the context. A preallocated (static) or "
            "paged cache writes only the new position: the saving is the cat kernels' time × "
            "old / (old + new) positions."
        ),
        kernels=top_names(k, "name", 2),
        ops=("aten::cat",),
    )


RULES: tuple[Rule, ...] = (decode_batching, weight_quantization, paged_kv_cache)
