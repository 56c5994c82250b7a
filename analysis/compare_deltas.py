"""The deltas of a two-run comparison (analysis.compare): metrics, GPU time per kernel class,
recommendations by id, and the one-line verdict. Pure: two reports in, frames out."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from analysis.comparability import ReferencePeak
from analysis.kernel_classes import KERNEL_CLASSES, classify
from analysis.metrics import COMPARE_METRICS
from analysis.metrics import METRICS as LABELS
from analysis.rules.catalog import NEEDS_SHAPES
from analysis.rules.recommend import likely_of

# Modelled FLOPs and bytes: comparable only when both runs model about the same share of time
# (kernels replayed by a CUDA graph have no op shapes, so decode_b1_cudagraph models 0.2 %).
WORK_METRICS = ("achieved_tflops", "mfu_pct", "hbm_bw_util_pct")
MODELLED_GAP_PCT_POINTS = 10.0
UNSEEN_BELOW_MODELLED_PCT = 50.0
METRIC_COLUMNS = ["metric", "label", "before", "after", "delta", "delta_pct", "better", "change"]
CLASS_COLUMNS = [
    "kernel_class",
    "before_ms_per_step",
    "after_ms_per_step",
    "delta_ms_per_step",
    "delta_pct",
]
REC_COLUMNS = [
    "id",
    "title",
    "status",
    "before_rank",
    "after_rank",
    "before_saving_pct",
    "after_saving_pct",
    "before_saving_ms",
    "after_saving_ms",
    # the range the before run's saving was likely to measure (its track record, D85)
    "before_likely_low_ms",
    "before_likely_high_ms",
    "confidence",
]
REC_STATUSES = ("gone", "unseen", "new", "kept")
NOISE_REL = 0.01
NOISE_PCT_POINTS = 0.1
# A report's recommendations by id: (rank from 1, the recommendation dict).
Ranked = dict[str, tuple[int | None, dict[str, Any]]]


def step_windows(report: dict[str, Any]) -> int:
    """The run's step windows (one per rank and step): the per-step denominator."""
    return len(report["breakdown"]["per_step"])


def class_time(events: pd.DataFrame, windows: int) -> pd.DataFrame:
    """GPU time per kernel class and step window: kernel_class, ms_per_step (classes with
    time only, in KERNEL_CLASSES order). `events`: data.reads.gpu_events (name,
    dur_ns at least), all of the run's GPU activity; `windows`: `step_windows(report)`."""
    if events.empty or windows == 0:
        return pd.DataFrame({"kernel_class": pd.Series(dtype=object), "ms_per_step": []})
    total_ns = events.groupby(classify(events["name"])["kernel_class"])["dur_ns"].sum()
    order = [c for c in KERNEL_CLASSES if c in total_ns.index]
    return pd.DataFrame(
        {
            "kernel_class": pd.Series(order, dtype=object),
            "ms_per_step": total_ns.loc[order].to_numpy(dtype=float) / 1e6 / windows,
        }
    )


def _overall(
    report: dict[str, Any], tokens_per_step: float | None, reference: ReferencePeak | None
) -> dict[str, Any]:
    """The overall metrics plus the per-step ones derived from the totals; tokens/s over the
    step (unprofiled where known); MFU against `reference` when given."""
    m = dict(report["metrics"]["overall"])
    windows = step_windows(report)
    m["kernels_per_step"] = m["kernel_count"] / windows if windows else None
    m["kernel_ms_per_step"] = m["kernel_time_ms"] / windows if windows else None
    m["modelled_time_pct"] = _modelled_pct(report)
    step_ms = m.get("unprofiled_step_ms") or m.get("step_time_ms")
    m["tokens_per_s"] = tokens_per_step / (step_ms / 1e3) if tokens_per_step and step_ms else None
    if reference is not None:
        achieved = m.get("achieved_tflops")
        m["mfu_pct"] = None if achieved is None else 100 * achieved * 1e12 / reference.flop_per_s
    return m


def _modelled_pct(report: dict[str, Any]) -> float | None:
    """Share of the GPU time whose ops have a work model (from the roofline rows)."""
    rows = report.get("roofline") or []
    time_ms = sum(r.get("time_ms") or 0.0 for r in rows)
    modelled_ms = sum(
        (r.get("time_ms") or 0.0) * (r.get("modelled_pct") or 0.0) / 100 for r in rows
    )
    return 100 * modelled_ms / time_ms if time_ms else None


def _change(key: str, before: float, after: float, better: str) -> str:
    delta = after - before
    noise = NOISE_PCT_POINTS if key.endswith("_pct") else 0.0
    if abs(delta) <= max(NOISE_REL * max(abs(before), abs(after)), noise):
        return "same"
    return "better" if (delta < 0) == (better == "lower") else "worse"


def metric_deltas(
    before: dict[str, Any],
    after: dict[str, Any],
    tokens_per_step: tuple[float | None, float | None] = (None, None),
    reference: ReferencePeak | None = None,
) -> pd.DataFrame:
    """One row per COMPARE_METRICS entry, from two reports (METRIC_COLUMNS); tokens/s from
    each run's tokens per step, MFU against `reference` for both (else each run's own)."""
    b = _overall(before, tokens_per_step[0], reference)
    a = _overall(after, tokens_per_step[1], reference)
    mb, ma = b["modelled_time_pct"], a["modelled_time_pct"]
    work_comparable = mb is not None and ma is not None and abs(mb - ma) <= MODELLED_GAP_PCT_POINTS
    rows = []
    for key in COMPARE_METRICS:
        label, better = LABELS[key].label, LABELS[key].better
        vb, va = b.get(key), a.get(key)
        if vb is None or va is None:
            rows.append([key, label, vb, va, None, None, better, "n/a"])
            continue
        delta = va - vb
        pct = delta / abs(vb) * 100 if vb else None
        if not better:
            change = "n/a"
        elif key in WORK_METRICS and not work_comparable:
            change = "not comparable"
        else:
            change = _change(key, vb, va, better)
        rows.append([key, label, vb, va, delta, pct, better, change])
    out = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    for c in ("before", "after", "delta", "delta_pct"):
        out[c] = out[c].astype(float)
    return out


def class_deltas(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """ms per step of each kernel class in either run (a class missing in one is 0 there),
    largest absolute change first (CLASS_COLUMNS)."""
    b = before.set_index("kernel_class")["ms_per_step"]
    a = after.set_index("kernel_class")["ms_per_step"]
    order = [c for c in KERNEL_CLASSES if c in b.index or c in a.index]
    out = pd.DataFrame(
        {
            "kernel_class": pd.Series(order, dtype=object),
            "before_ms_per_step": b.reindex(order, fill_value=0.0).to_numpy(dtype=float),
            "after_ms_per_step": a.reindex(order, fill_value=0.0).to_numpy(dtype=float),
        }
    )
    out["delta_ms_per_step"] = out["after_ms_per_step"] - out["before_ms_per_step"]
    base = out["before_ms_per_step"].where(out["before_ms_per_step"] > 0)
    out["delta_pct"] = out["delta_ms_per_step"] / base * 100
    order_by = out["delta_ms_per_step"].abs().sort_values(ascending=False, kind="stable").index
    return out.loc[order_by].reset_index(drop=True)


def recommendation_diff(before: dict[str, Any], after: dict[str, Any]) -> pd.DataFrame:
    """Recommendations by id: gone, new, kept (REC_COLUMNS). A report without the
    `recommendations` key has none."""
    b: Ranked = {r["id"]: (i + 1, r) for i, r in enumerate(before.get("recommendations") or [])}
    a: Ranked = {r["id"]: (i + 1, r) for i, r in enumerate(after.get("recommendations") or [])}
    none: tuple[int | None, dict[str, Any]] = (None, {})
    coverage = _modelled_pct(after)
    blind = coverage is not None and coverage < UNSEEN_BELOW_MODELLED_PCT
    rows = []
    for status, ids in (
        ("gone", [i for i in b if i not in a and not (blind and i in NEEDS_SHAPES)]),
        ("unseen", [i for i in b if i not in a and blind and i in NEEDS_SHAPES]),
        ("new", [i for i in a if i not in b]),
        ("kept", [i for i in a if i in b]),
    ):
        for rid in ids:
            rb, rec_b = b.get(rid, none)
            ra, rec_a = a.get(rid, none)
            rec = rec_a or rec_b
            rows.append(
                [rid, rec.get("title"), status, rb, ra,
                 rec_b.get("est_saving_pct"), rec_a.get("est_saving_pct"),
                 rec_b.get("est_saving_ms"), rec_a.get("est_saving_ms"),
                 *(likely_of(rec_b) or (None, None)), rec.get("confidence")]
            )  # fmt: skip
    out = pd.DataFrame(rows, columns=REC_COLUMNS)
    for c in ("before_rank", "after_rank"):
        out[c] = out[c].astype("Int64")
    for c in REC_COLUMNS:
        if c.endswith(("_pct", "_ms")):  # the savings and the likely range
            out[c] = out[c].astype(float)
    return out


def gone_note(metrics: pd.DataFrame) -> str:
    """What the "gone" findings' columns mean, and the unprofiled step's measured change to
    hold them against (when both runs have one)."""
    text = (
        "Findings the after run no longer raises: the saving the before run estimated and the "
        "range it was likely to measure (its track record on the measured H200 pairs)."
    )
    row = metrics[metrics["metric"] == "unprofiled_step_ms"]
    if row.empty:
        return text
    before, after = float(row["before"].iloc[0]), float(row["after"].iloc[0])
    if math.isnan(before) or math.isnan(after):
        return text
    return text + (
        f" Without the profiler the step went {_fmt(before)} -> {_fmt(after)} ms: "
        f"{_fmt(before - after)} ms per step saved by every change between the runs together."
    )


def _fmt(v: float) -> str:
    return f"{v:,.1f}" if abs(v) >= 1 else f"{v:.3g}"


def verdict(metrics: pd.DataFrame, recommendations: pd.DataFrame, differences: int = 0) -> str:
    """One line: step time before -> after (without the profiler when both runs have a step
    model, else on the traces' timelines), GPU busy, and the recommendations that went away
    or appeared; prefixed with a warning when the runs differ in `differences` ways."""

    def values(key: str) -> list[float]:
        row = metrics[metrics["metric"] == key]
        return [float(row[c].iloc[0]) for c in ("before", "after", "delta_pct")]

    parts = []
    for key, what in (("unprofiled_step_ms", "unprofiled"), ("step_time_ms", "profiled")):
        before, after, pct = values(key)
        if not (math.isnan(before) or math.isnan(after)):
            rel = "" if math.isnan(pct) else f" ({pct:+,.0f} %)"
            parts.append(f"step time {_fmt(before)} -> {_fmt(after)} ms {what}{rel}")
            break
    before, after, _ = values("gpu_busy_pct")
    if not (math.isnan(before) or math.isnan(after)):
        parts.append(f"GPU busy {_fmt(before)} -> {_fmt(after)} %")
    for status in ("gone", "new"):
        rows = recommendations[recommendations["status"] == status]
        if len(rows):
            titles = [str(t) if isinstance(t, str) else str(i)
                      for t, i in zip(rows["title"], rows["id"], strict=True)]  # fmt: skip
            parts.append(f"{status}: {'; '.join(titles)}")
    line = "; ".join(parts) or "no comparable metrics"
    if differences:
        ways = "one way" if differences == 1 else f"{differences} ways"
        line = f"Not like for like (the runs differ in {ways}): {line}"
    return line
