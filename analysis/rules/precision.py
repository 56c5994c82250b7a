"""Rules about number formats and shapes of the matrix work: mixed precision, TF32, FP8,
tensor-core alignment. Savings re-time each matrix kernel against the device's ceilings
(measured by collectors.calibrate when available, else the datasheet's dense figures)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.model.gemm import GEMM_OPERANDS, gemm_mnk
from analysis.roofline import MATRIX_CLASSES
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import top_names
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms
from analysis.work.args import dims


def _matrix(facts: Facts) -> pd.DataFrame:
    k = facts.kernels
    return k[k["op_class"].isin(MATRIX_CLASSES) | k["kernel_class"].isin(MATRIX_CLASSES)]


def _retimed_ns(rows: pd.DataFrame, facts: Facts, new: str, byte_factor: float) -> np.ndarray:
    """Each kernel's time at precision `new`: its compute time scaled by the ratio of the
    ceilings (the kernel keeps the fraction of its roof it reaches today), floored by its
    bytes × byte_factor at the bandwidth ceiling; never slower than today."""
    roofs = facts.ceilings
    assert roofs is not None
    t = rows["dur_ns"].to_numpy(float)
    new_peak = roofs.peak(new) or 0.0
    cur = np.array([roofs.peak(p) or np.nan for p in rows["precision"]], dtype=float)
    t_compute = t * cur / new_peak
    t_memory = rows["bytes"].fillna(0).to_numpy(float) * byte_factor / roofs.bandwidth_bytes_per_s
    out = np.minimum(t, np.maximum(np.where(np.isnan(t_compute), t, t_compute), t_memory * 1e9))
    return np.asarray(out)


def _tflops(rows: pd.DataFrame) -> float:
    dur = float(rows["dur_ns"].sum())
    return float(rows["flops"].sum()) / dur / 1e3 if dur else 0.0


def _precision_switch(
    facts: Facts, rule_id: str, rows: pd.DataFrame, new: str, byte_factor: float, th_key: str
) -> Finding | None:
    roofs = facts.ceilings
    if rows.empty or roofs is None or not roofs.peak(new):
        return None
    cur_ms = facts.per_step_ms(float(rows["dur_ns"].sum()))
    if 100 * cur_ms / max(facts.step_ms, 1e-9) < CATALOG[rule_id].thresholds[th_key]:
        return None
    new_ms = facts.per_step_ms(float(_retimed_ns(rows, facts, new, byte_factor).sum()))
    old = "fp32" if (rows["precision"] == "fp32").all() else "fp32/tf32"
    peak_old = roofs.peak("fp32") or 0.0
    peak_new = roofs.peak(new) or 0.0
    ops = top_names(rows, "op_name", 4)
    named = ", ".join(ops or top_names(rows, "name", 2))
    modelled = rows["flops"].notna().mean() > 0.9
    rate = f", at {_tflops(rows):.1f} TFLOP/s" if modelled else ""
    return Finding(
        gpu_ms=cur_ms - new_ms,
        confidence="high" if modelled else "medium",
        evidence=(
            f"{old} matrix kernels ({named}): {ms(cur_ms)} per "
            f"step, {100 * cur_ms / facts.step_ms:.0f} % of the step{rate}",
            f"{roofs.label} ceilings on this GPU: fp32 {peak_old / 1e12:.1f}, {new} "
            f"{peak_new / 1e12:.0f} TFLOP/s ({peak_new / peak_old:.1f}×)"
            if peak_old
            else f"{roofs.label} {new} ceiling: {peak_new / 1e12:.0f} TFLOP/s",
            f"re-timed at {new}: {ms(new_ms)} per step",
        ),
        why=(
            f"Each {old} matrix kernel keeps the fraction of its roof it reaches today, moved "
            f"to the {new} roof ({roofs.label}); kernels limited by memory instead get their "
            f"bytes{' halved' if byte_factor < 1 else ''} at the bandwidth ceiling. The saving "
            "is today's time minus the re-timed one."
        ),
        kernels=top_names(rows, "name", 4),
        ops=ops,
    )


# Autocast puts a dispatch layer and input casts on the host's path: the host time of the
# one tune pair whose bf16 run is host-bound (precision-lightning) grew 4.05 ms on 2 169
# recorded ops per step, 1.9 µs per op.
_AUTOCAST_HOST_NS_PER_OP = 1_900


@rule("mixed-precision")
def mixed_precision(facts: Facts) -> Finding | None:
    rows = _matrix(facts)
    rows = rows[rows["precision"].isin(["fp32", "tf32"])]
    roofs = facts.ceilings
    new = "bf16" if roofs is not None and roofs.peak("bf16") else "fp16"
    found = _precision_switch(facts, "mixed-precision", rows, new, 0.5, "min_fp32_matrix_share_pct")
    ops = facts.host.step_host["cpu_ops"]
    if found is None or ops.empty:
        return found
    added_ms = float(ops.mean()) * _AUTOCAST_HOST_NS_PER_OP / 1e6
    return replace(
        found,
        host_ms=-added_ms,
        evidence=(*found.evidence, f"autocast adds about {ms(added_ms)} of host time per step"),
    )


@rule("tf32")
def tf32(facts: Facts) -> Finding | None:
    rows = _matrix(facts)
    rows = rows[(rows["precision"] == "fp32") & ~rows["tensor_core"].astype(bool)]
    return _precision_switch(facts, "tf32", rows, "tf32", 1.0, "min_simt_matrix_share_pct")


@rule("fp8")
def fp8(facts: Facts) -> Finding | None:
    th = CATALOG["fp8"].thresholds
    roofs = facts.ceilings
    if roofs is None or not roofs.peak("fp8"):
        return None
    rows = _matrix(facts)
    rows = rows[rows["precision"].isin(["bf16", "fp16"]) & rows["flops"].notna()]
    if rows.empty:
        return None
    ridge = np.array(
        [(roofs.peak(p) or 0) / roofs.bandwidth_bytes_per_s for p in rows["precision"]]
    )
    intensity = rows["flops"].to_numpy(float) / rows["bytes"].to_numpy(float)
    by_op = rows.assign(compute=intensity >= ridge).groupby("op_external_id")
    mean_us = by_op["dur_ns"].transform("mean").to_numpy(float) / 1e3
    big = rows[(intensity >= ridge) & (mean_us >= th["min_gemm_mean_us"])]
    cur_ms = facts.per_step_ms(float(big["dur_ns"].sum()))
    if 100 * cur_ms / max(facts.step_ms, 1e-9) < th["min_compute_bound_gemm_share_pct"]:
        return None
    ratio = np.array([(roofs.peak(p) or 0) for p in big["precision"]]) / (roofs.peak("fp8") or 1)
    saving = facts.per_step_ms(float((big["dur_ns"].to_numpy(float) * (1 - ratio)).sum()))
    return Finding(
        gpu_ms=saving,
        confidence="low",
        evidence=(
            f"compute-bound bf16/fp16 GEMMs: {ms(cur_ms)} per step "
            f"({100 * cur_ms / facts.step_ms:.0f} % of the step) at {_tflops(big):.0f} TFLOP/s",
            f"{roofs.label} ceilings: {big['precision'].mode()[0]} "
            f"{(roofs.peak(str(big['precision'].mode()[0])) or 0) / 1e12:.0f}, fp8 "
            f"{(roofs.peak('fp8') or 0) / 1e12:.0f} TFLOP/s",
        ),
        why=(
            "Only GEMMs right of the ridge point (limited by tensor-core throughput) gain from "
            "FP8; each is scaled by the ratio of the ceilings. Confidence is low: FP8 needs "
            "scaling recipes and a convergence check on your model."
        ),
        kernels=top_names(big, "name", 4),
        ops=top_names(big, "op_name", 4),
    )


def _model_dims(facts: Facts) -> tuple[list[int], int | None, list[int]]:
    """(token ids shape, vocabulary, embedding table shape) of the largest embedding table."""
    emb = facts.shaped_ops("aten::embedding")
    best: tuple[list[int], int | None, list[int]] = ([], None, [])
    for text in emb["input_dims"].drop_duplicates():
        d = dims(text)
        if len(d) >= 2 and len(d[0]) == 2 and (best[1] is None or d[0][0] > best[1]):
            best = (d[1], d[0][0], d[0])
    return best


@rule("tensor-core-alignment")
def tensor_core_alignment(facts: Facts) -> Finding | None:
    th = CATALOG["tensor-core-alignment"].thresholds
    align, seq_align = int(th["align"]), int(th["seq_align"])
    k = facts.kernels
    ops = facts.ops[facts.ops["name"].isin(list(GEMM_OPERANDS))]
    if k.empty or ops.empty:
        return None
    sig = ops.drop_duplicates("signature")
    mnk = {
        int(sg): gemm_mnk(str(name), dims(text))
        for sg, name, text in zip(sig["signature"], sig["name"], sig["input_dims"], strict=True)
    }

    def odd(m: tuple[int, int, int] | None) -> bool:
        return m is not None and any(d >= 2 * align and d % align for d in m)

    bad_sigs = {s for s, m in mnk.items() if odd(m)}
    bad_ids = ops[ops["signature"].isin(bad_sigs)][["rank", "external_id", "signature"]]
    rows = k.merge(bad_ids, left_on=["rank", "op_external_id"], right_on=["rank", "external_id"])
    cur_ms = facts.per_step_ms(float(rows["dur_ns"].sum()))
    if 100 * cur_ms / max(facts.step_ms, 1e-9) < th["min_misaligned_share_pct"]:
        return None
    penalty, how = th["default_penalty"], f"default penalty {th['default_penalty']:.0%}"
    on_tc = rows[rows["tensor_core"].astype(bool) & rows["flops"].notna()]
    if len(on_tc) and facts.ceilings is not None:
        prec = str(on_tc["precision"].mode()[0])
        good = _matrix(facts)
        good = good[
            good["tensor_core"].astype(bool)
            & (good["precision"] == prec)
            & good["flops"].notna()
            & ~good["op_external_id"].isin(rows["op_external_id"])
        ]
        if len(good) and _tflops(good) > 0:
            penalty = float(np.clip(1 - _tflops(on_tc) / _tflops(good), 0.0, 0.5))
            how = (
                f"measured: misaligned {prec} GEMMs reach {_tflops(on_tc):.0f} TFLOP/s, "
                f"aligned ones {_tflops(good):.0f}"
            )
    shapes = sorted(
        {mnk[int(s)] for s in rows["signature"].unique() if mnk.get(int(s))},
        key=lambda m: -(m[0] * m[1] * m[2]),  # type: ignore[index]
    )
    evidence = [
        f"GEMMs with a dimension not a multiple of {align}: {ms(cur_ms)} per step "
        f"({100 * cur_ms / facts.step_ms:.0f} % of the step); shapes (M×N×K): "
        + ", ".join(f"{m[0]}×{m[1]}×{m[2]}" for m in shapes[:4] if m)
    ]
    tokens, vocab, table = _model_dims(facts)
    named = []
    if len(tokens) == 2:
        batch, seq = tokens
        if batch % align:
            named.append(f"batch {batch}")
        if seq % seq_align:
            named.append(f"sequence {seq}")
    if vocab is not None and vocab % align:
        named.append(f"vocab {vocab}")
    if named:
        evidence.append(
            f"model dimensions to pad: {', '.join(named)} (token ids {tokens}, embedding "
            f"table {table}; pad batch and vocabulary to multiples of {align}, the sequence "
            f"to a multiple of {seq_align})"
        )
    if not on_tc.size:
        evidence.append("these GEMMs run on CUDA cores today: the penalty applies once they "
                        "move to tensor cores (mixed-precision/tf32)")  # fmt: skip
    return Finding(
        gpu_ms=cur_ms * penalty,
        confidence="medium" if "measured" in how else "low",
        evidence=tuple(evidence),
        why=(
            "Tensor cores work on tiles of 8/16 elements; an odd dimension makes cuBLAS pick "
            "slower kernels or pad tiles with wasted work. Saving = misaligned GEMM time × "
            f"penalty ({how})."
        ),
        kernels=top_names(rows, "name", 4),
        ops=top_names(rows, "op_name", 4),
    )


RULES: tuple[Rule, ...] = (mixed_precision, tf32, fp8, tensor_core_alignment)
