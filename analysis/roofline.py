"""The roofline: modelled FLOPs and bytes against kernel time, per op class, op or kernel.

A kernel's work is its launching op's modelled work (analysis.work), split over the op's
kernels in proportion to their GPU time; an op's time is the GPU time of the kernels it
launched (gpu_events.op_external_id = cpu_ops.external_id, same run and rank). Kernels with
no launching op are "unattributed"; ops without a usable model say why ("no shapes", "no
model for this op") instead of guessing. memcpy/memset move their recorded bytes.

Ceiling of a point at intensity I (FLOP/byte) for its precision p:
min(peak_p, I × bandwidth) (Williams et al.; ncu's roofline section uses the same
min). `pct_of_ceiling` = achieved / that ceiling; with measured ceilings (collectors.calibrate)
the percentage is of what the card really reaches, else of the datasheet.

Bound: "latency" when the work is far below both roofs (< 25 % of the ceiling) and the
kernels are short (mean < 10 µs, launch-dominated: ncu's "Latency Issue" fires on such
kernels) or run at low occupancy (< 10 % estimated); else "compute" when the intensity is at or
right of the ridge point peak_p / bandwidth, "memory" left of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.kernel_classes import classify
from analysis.overview import step_times
from analysis.specs import DeviceSpec
from analysis.work import work_table

LATENCY_KERNEL_NS = 10_000
LATENCY_OCCUPANCY_PCT = 10.0
LATENCY_FAR_BELOW_PCT = 25.0
MATRIX_CLASSES = frozenset({"gemm", "conv", "attention"})
_TENSOR_PRECISIONS = frozenset({"bf16", "fp16", "fp8", "int8", "tf32"})


@dataclass(frozen=True, slots=True)
class Ceilings:
    """One set of roofs: peak FLOP/s per precision and memory bandwidth in bytes/s."""

    label: str  # "datasheet" or "measured"
    flop_per_s: Mapping[str, float]
    bandwidth_bytes_per_s: float

    def peak(self, precision: str | None) -> float | None:
        """Peak FLOP/s for a precision, None when this set has no roof for it."""
        return self.flop_per_s.get(precision or "fp32")


def datasheet_ceilings(spec: DeviceSpec) -> Ceilings:
    """The spec's dense peaks and HBM bandwidth as roofs."""
    rates = {p: v * 1e12 for p, v in spec.dense_tflops.items() if v is not None}
    return Ceilings("datasheet", rates, spec.hbm_bytes_per_s)


def measured_ceilings(rows: pd.DataFrame) -> Ceilings | None:
    """Roofs from `ceilings` table rows (metric, value) of one device; None if no copy rate.

    `matmul_<p>_flop_per_s` becomes the roof of precision p; the fp32 SIMT matmul also
    stands for the vector (CUDA-core) roof of non-matrix ops.
    """
    values = dict(zip(rows["metric"], rows["value"].astype(float), strict=True))
    bw = values.get("copy_bytes_per_s")
    if not bw:
        return None
    rates = {
        m.removeprefix("matmul_").removesuffix("_flop_per_s"): v
        for m, v in values.items()
        if m.startswith("matmul_") and m.endswith("_flop_per_s")
    }
    return Ceilings("measured", rates, bw)


KERNEL_WORK_COLUMNS = [
    "rank", "step", "kind", "name", "ts_ns", "dur_ns", "est_occupancy_pct", "op_external_id",
    "op_name", "op_class", "kernel_class", "tensor_core", "precision", "flops", "bytes",
    "attribution",
]  # fmt: skip


def kernel_work(
    kernels: pd.DataFrame, ops: pd.DataFrame, rereads: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Each GPU event with its share of the launching op's modelled work.

    Args:
        kernels: gpu_events rows: rank, step, kind (kernel/memcpy/memset), name, ts_ns,
            dur_ns, op_external_id, bytes, dtod (device-to-device memcpy), est_occupancy_pct
            (data.reads_roofline.gpu_events).
        ops: cpu_ops rows of the launching ops: rank, external_id, name, input_dims,
            input_types, concrete_inputs (extra ops are ignored).
        rereads: analysis.gemm_traffic.reread_bytes rows (rank, external_id, reread_bytes):
            DRAM bytes an op's tiled GEMM kernel reads beyond its operands, added to its bytes.
    Returns one row per GPU event, columns KERNEL_WORK_COLUMNS: op_class (the op's class,
    else the kernel's), kernel_class, tensor_core, precision (the roof it is measured
    against: the op's dtype for bf16/fp16/fp8 matrix ops, tf32 for fp32 on tensor cores,
    fp32 for CUDA-core work, "" for copies), flops and bytes (NaN where not modelled),
    attribution ("modelled", "no shapes", "no model for this op", "unattributed", "copy").
    """
    k = kernels.reset_index(drop=True)
    cls = classify(k["name"])
    o = ops.drop_duplicates(["rank", "external_id"]).reset_index(drop=True)
    w = pd.concat([o[["rank", "external_id", "name"]], work_table(o)], axis=1).rename(
        columns={"name": "op_name", "flops": "op_flops", "bytes": "op_bytes"}
    )
    if rereads is not None and len(rereads):
        w = w.merge(rereads, how="left", on=["rank", "external_id"])
        w["op_bytes"] += w.pop("reread_bytes").fillna(0.0)
    m = k.merge(w, how="left", left_on=["rank", "op_external_id"], right_on=["rank", "external_id"])
    is_copy = m["kind"].isin(["memcpy", "memset"])
    # An op's work is split over its kernels by their share of its kernel time (a memset
    # the op launched moves its own bytes and takes no share).
    dur = m["dur_ns"].astype(float).where(~is_copy, 0.0)
    op_ns = dur.groupby([m["rank"], m["op_external_id"]]).transform("sum")
    share = (dur / op_ns.where(op_ns > 0)).fillna(1.0)
    # A device-to-device copy reads and writes; host copies and memsets touch HBM once.
    copy_bytes: pd.Series = m["bytes"].astype(float) * np.where(m["dtod"], 2.0, 1.0)
    flops = (m["op_flops"] * share).where(~is_copy, 0.0)
    moved = (m["op_bytes"] * share).where(~is_copy, copy_bytes)
    note = m["work_note"].fillna("")
    attribution = _obj(
        np.select(
            [is_copy, m["op_name"].isna(), flops.notna() & moved.notna()],
            ["copy", "unattributed", "modelled"],
            default=note.where(note != "", "no shapes"),
        ),
        m.index,
    )
    kclass = cls["kernel_class"].set_axis(m.index)
    # Copies launched by an op (the memset before a GEMM) are data movement, not the op's class.
    op_class = m["op_class"].where(m["op_class"].notna() & ~is_copy, kclass)
    return pd.DataFrame({
        "rank": m["rank"], "step": m["step"], "kind": m["kind"], "name": m["name"],
        "ts_ns": m["ts_ns"], "dur_ns": m["dur_ns"],
        "est_occupancy_pct": m["est_occupancy_pct"], "op_external_id": m["op_external_id"],
        "op_name": m["op_name"], "op_class": op_class, "kernel_class": kclass,
        "tensor_core": cls["tensor_core"].to_numpy(),
        "precision": _obj(_ceiling_precision(op_class, m["op_precision"], cls, is_copy), m.index),
        "flops": flops, "bytes": moved, "attribution": attribution,
    })  # fmt: skip


def _obj(values: np.ndarray, index: pd.Index) -> pd.Series:
    """An object column (pandas 3 would convert each value to an Arrow string: 0.1 s/100 k)."""
    return pd.Series(values, index=index, dtype=object)


def _ceiling_precision(
    op_class: pd.Series, op_precision: pd.Series, cls: pd.DataFrame, is_copy: pd.Series
) -> np.ndarray:
    """Which roof a kernel is measured against (see kernel_work); "" for copies."""
    tc = cls["tensor_core"].to_numpy()
    hint = pd.Series(cls["precision"].to_numpy(), index=op_precision.index)
    d = op_precision.where(op_precision.notna(), hint).to_numpy(dtype=object)
    op_matrix = op_class.isin(MATRIX_CLASSES).to_numpy()
    matrix = op_matrix | np.isin(cls["kernel_class"].to_numpy(), list(MATRIX_CLASSES))
    out = np.where(d == "fp64", "fp64", "fp32").astype(object)
    # A bf16/fp16/fp8 matrix op is held to its tensor-core roof on all its kernels (cuDNN's
    # helper kernels of an attention backward get a share of the op's tensor-core work).
    tensor_dtype = np.isin(d, list(_TENSOR_PRECISIONS))
    out = np.where((op_matrix | (matrix & tc)) & tensor_dtype, d, out)
    # fp32 on tensor cores is TF32 (allow_tf32 / matmul precision "high").
    out = np.where(matrix & tc & ((d == "fp32") | pd.isna(d)), "tf32", out)
    return np.where(is_copy.to_numpy(), "", out)


ROOFLINE_COLUMNS = [
    "name", "kernel_count", "time_ms", "share_pct", "mean_us", "modelled_pct", "flops",
    "bytes", "intensity", "achieved_tflops", "achieved_gbps", "precision", "bound",
    "pct_of_ceiling", "pct_of_datasheet", "pct_of_measured", "note",
]  # fmt: skip


def roofline_table(
    ops_with_kernels: pd.DataFrame,
    spec: DeviceSpec | None,
    ceilings: Ceilings | None = None,
    by: str = "op_class",
) -> pd.DataFrame:
    """Roofline rows per op class, op, kernel class or kernel, sorted by time.

    Args:
        ops_with_kernels: `kernel_work` output (one row per GPU event).
        spec: datasheet spec of the device (None: unknown device; no % and no bound).
        ceilings: measured roofs (`measured_ceilings`), preferred for pct_of_ceiling/bound.
        by: "op_class", "op_name", "kernel_class" or "name" (per kernel name); one row
            per group and roof precision (a class with bf16 and fp32 GEMMs gives two rows).
    Columns ROOFLINE_COLUMNS: name (the group: for rows without an op class or op, the
    attribution, e.g. "unattributed"), kernel_count, time_ms (all GPU time of the
    group), share_pct (of all GPU event time), mean_us, modelled_pct (time with a work
    model), flops, bytes (modelled), intensity (FLOP/byte), achieved_tflops and
    achieved_gbps (modelled work / modelled time), precision (the roof the row is measured against,
    time), bound (compute, memory, latency or None), pct_of_ceiling, pct_of_datasheet,
    pct_of_measured, note (why nothing is modelled, e.g. "unattributed", "no shapes").
    """
    df = ops_with_kernels
    if df.empty:
        return pd.DataFrame(columns=ROOFLINE_COLUMNS)
    key = df[by].astype(object).where(df[by].notna(), df["attribution"])
    dur = df["dur_ns"].astype(float)
    modelled = df["flops"].notna() & df["bytes"].notna()
    g = pd.DataFrame({
        "key": key, "precision": df["precision"], "dur": dur, "mdur": dur.where(modelled, 0.0),
        "flops": df["flops"].where(modelled, 0.0), "bytes": df["bytes"].where(modelled, 0.0),
        "occ": df["est_occupancy_pct"].where(df["est_occupancy_pct"] > 0),
        "note": df["attribution"].where(~modelled),
    }).groupby(["key", "precision"], sort=False)  # fmt: skip
    agg = g.agg(
        kernel_count=("dur", "size"), dur=("dur", "sum"), mdur=("mdur", "sum"),
        flops=("flops", "sum"), bytes=("bytes", "sum"), occ=("occ", "mean"),
        note=("note", "first"),
    ).reset_index()  # fmt: skip
    total = float(dur.sum()) or 1.0
    mdur_s = agg["mdur"] / 1e9
    has = agg["mdur"] > 0
    out = pd.DataFrame({
        "name": agg["key"].astype(str),
        "kernel_count": agg["kernel_count"].astype(int),
        "time_ms": agg["dur"] / 1e6,
        "share_pct": 100.0 * agg["dur"] / total,
        "mean_us": agg["dur"] / agg["kernel_count"] / 1e3,
        "modelled_pct": 100.0 * agg["mdur"] / agg["dur"].where(agg["dur"] > 0),
        "flops": agg["flops"].where(has),
        "bytes": agg["bytes"].where(has),
        "intensity": (agg["flops"] / agg["bytes"].where(agg["bytes"] > 0)).where(has),
        "achieved_tflops": (agg["flops"] / mdur_s / 1e12).where(has),
        "achieved_gbps": (agg["bytes"] / mdur_s / 1e9).where(has),
        "precision": agg["precision"],
        "note": agg["note"].fillna("").where(~has, ""),
    })  # fmt: skip
    sheet = datasheet_ceilings(spec) if spec is not None else None
    out["pct_of_datasheet"] = _pct_of(out, sheet)
    out["pct_of_measured"] = _pct_of(out, ceilings)
    out["pct_of_ceiling"] = out["pct_of_measured"].where(
        out["pct_of_measured"].notna(), out["pct_of_datasheet"]
    )
    roofs = ceilings if ceilings is not None else sheet
    out["bound"] = _bound(out, roofs, agg["occ"].to_numpy())
    return out[ROOFLINE_COLUMNS].sort_values("time_ms", ascending=False, ignore_index=True)


def _pct_of(rows: pd.DataFrame, roofs: Ceilings | None) -> pd.Series:
    """Achieved FLOP/s as % of the attainable min(peak, I × BW) for each row's precision."""
    if roofs is None:
        return pd.Series(np.nan, index=rows.index)
    peak = rows["precision"].map(lambda p: roofs.peak(p)).astype(float)
    attainable = np.minimum(peak, rows["intensity"] * roofs.bandwidth_bytes_per_s)
    # A pure data-movement row (0 FLOP) is measured against the bandwidth alone.
    by_bw = 100.0 * rows["achieved_gbps"] * 1e9 / roofs.bandwidth_bytes_per_s
    by_flops: pd.Series = 100.0 * rows["achieved_tflops"] * 1e12 / attainable
    return by_flops.where(rows["flops"] > 0, by_bw)


def _bound(rows: pd.DataFrame, roofs: Ceilings | None, occupancy: np.ndarray) -> pd.Series:
    if roofs is None:
        return pd.Series([None] * len(rows), index=rows.index, dtype=object)
    peak = rows["precision"].map(lambda p: roofs.peak(p)).astype(float)
    ridge = peak / roofs.bandwidth_bytes_per_s
    pct = _pct_of(rows, roofs)
    slow = (rows["mean_us"] * 1e3 < LATENCY_KERNEL_NS) | (occupancy < LATENCY_OCCUPANCY_PCT)
    latency = slow & (pct < LATENCY_FAR_BELOW_PCT)
    bound = np.where(latency, "latency", np.where(rows["intensity"] >= ridge, "compute", "memory"))
    return pd.Series(bound, index=rows.index, dtype=object).where(rows["intensity"].notna(), None)


TOKENS_TAG = "tokens_per_step"


def tokens_per_step(tags: dict[str, str]) -> float | None:
    """The run's tag tokens_per_step as a positive finite number; None when it is absent or
    is not one (a tag is free text: `--tag tokens_per_step=abc` crashed the Roofline page)."""
    try:
        tokens = float(tags.get(TOKENS_TAG, ""))
    except ValueError:
        return None
    return tokens if 0 < tokens < math.inf else None


def run_compute_metrics(
    ops_with_kernels: pd.DataFrame,
    steps: pd.DataFrame,
    spec: DeviceSpec | None,
    *,
    tokens_per_step: float | None = None,
) -> dict[str, float | None]:
    """Run-level rates: modelled work over wall time, per GPU.

    Args:
        ops_with_kernels: `kernel_work` output, all ranks.
        steps: the store's `steps` rows (rank, step, ts_ns, dur_ns, gpu_end_ns, …); when
            empty, the GPU-active span of each rank is the time.
        spec: datasheet spec (None: mfu_pct and hbm_bw_util_pct are None).
        tokens_per_step: from runs.tags, for tokens_per_s.
    Returns achieved_tflops (modelled FLOPs / time / ranks), mfu_pct (that over the dense
    datasheet peak of the precision doing most FLOPs), hbm_bw_util_pct (modelled bytes /
    time / ranks over the datasheet bandwidth), tokens_per_s, modelled_time_pct (share of
    GPU event time whose work is modelled: how much of the run these numbers cover).
    """
    per_step = step_metrics(ops_with_kernels, steps, spec, tokens_per_step=tokens_per_step)
    df = ops_with_kernels
    dur = df["dur_ns"].astype(float)
    modelled = df["flops"].notna() & df["bytes"].notna()
    out: dict[str, float | None] = {
        "achieved_tflops": None, "mfu_pct": None, "hbm_bw_util_pct": None,
        "tokens_per_s": None,
        "modelled_time_pct": float(100 * dur[modelled].sum() / dur.sum()) if dur.sum() else None,
    }  # fmt: skip
    if per_step.empty:
        return out
    time_s = float(per_step["step_time_ms"].sum()) / 1e3
    ranks = max(int(df["rank"].nunique()), 1)
    flops = float(per_step["flops"].sum())
    moved = float(per_step["bytes"].sum())
    out["achieved_tflops"] = flops / time_s / ranks / 1e12
    if spec is not None:
        peak = _main_peak(df, spec)
        out["mfu_pct"] = 100 * flops / time_s / ranks / peak if peak else None
        out["hbm_bw_util_pct"] = 100 * moved / time_s / ranks / spec.hbm_bytes_per_s
    if tokens_per_step:
        out["tokens_per_s"] = tokens_per_step * len(per_step) / time_s
    return out


def _main_peak(df: pd.DataFrame, spec: DeviceSpec) -> float | None:
    """Dense peak of the precision that does most of the modelled FLOPs."""
    by_prec = df.groupby("precision")["flops"].sum()
    if by_prec.empty or by_prec.max() <= 0:
        return None
    return spec.peak_flop_per_s(str(by_prec.idxmax()))


STEP_METRIC_COLUMNS = [
    "step", "step_time_ms", "flops", "bytes", "achieved_tflops", "mfu_pct", "hbm_gbps",
    "hbm_bw_util_pct", "tokens_per_s",
]  # fmt: skip


def step_metrics(
    ops_with_kernels: pd.DataFrame,
    steps: pd.DataFrame,
    spec: DeviceSpec | None,
    *,
    tokens_per_step: float | None = None,
) -> pd.DataFrame:
    """Per ProfilerStep (all ranks): STEP_METRIC_COLUMNS; rates per GPU.

    Step time is analysis.overview.step_times' (slowest rank, start to next start); a step's
    work is that of the kernels its ops launched (gpu_events.step). Without steps, one row
    (step -1) spans each rank's GPU activity.
    """
    df = ops_with_kernels
    ranks = max(int(df["rank"].nunique()), 1) if not df.empty else 1
    if steps.empty:
        if df.empty:
            return pd.DataFrame(columns=STEP_METRIC_COLUMNS)
        end = df["ts_ns"] + df["dur_ns"]
        span = (end.groupby(df["rank"]).max() - df["ts_ns"].groupby(df["rank"]).min()).max()
        times = pd.DataFrame({"step": [-1], "step_time_ms": [float(span) / 1e6]})
        work = pd.DataFrame(
            {"step": [-1], "flops": [df["flops"].sum()], "bytes": [df["bytes"].sum()]}
        )
    else:
        times = step_times(steps, df)[["step", "step_time_ms"]]
        work = df.groupby("step", as_index=False)[["flops", "bytes"]].sum(min_count=1)
    out = times.merge(work, on="step", how="left")
    out[["flops", "bytes"]] = out[["flops", "bytes"]].fillna(0.0)
    secs = out["step_time_ms"] / 1e3
    out["achieved_tflops"] = out["flops"] / secs / ranks / 1e12
    out["hbm_gbps"] = out["bytes"] / secs / ranks / 1e9
    peak = _main_peak(df, spec) if spec is not None and not df.empty else None
    out["mfu_pct"] = 100 * out["achieved_tflops"] * 1e12 / peak if peak else np.nan
    out["hbm_bw_util_pct"] = (
        100 * out["hbm_gbps"] * 1e9 / spec.hbm_bytes_per_s if spec is not None else np.nan
    )
    out["tokens_per_s"] = tokens_per_step / secs if tokens_per_step else np.nan
    return out[STEP_METRIC_COLUMNS]
