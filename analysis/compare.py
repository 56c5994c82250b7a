"""Compare two runs: `python -m analysis.compare BEFORE AFTER [--format json|md] [--data DIR]`.

BEFORE and AFTER are run ids, run names (the latest run of that name) or trace paths, resolved
as `python -m analysis.report` resolves them. `compare` is pure: two reports
(analysis.report.document.report_json) and their GPU time per kernel class (`class_time`)
in, a `Comparison` out.

- **Metric deltas**: the report's overall metrics, plus kernels and kernel time per step
  (totals are not comparable when the runs profiled different numbers of steps) and the share
  of GPU time with a work model (from the report's roofline rows). Each row says which
  direction is better and whether the change is better, worse or the same (within 1 % of the
  larger value, or 0.1 percentage point for shares: run-to-run noise); achieved TFLOP/s, MFU
  and HBM % are "not comparable" when the modelled shares differ by more than 10 points.
- **Time per step by kernel class**: every GPU activity (kernels, memcpy, memset) classified
  by analysis.kernel_classes, summed, divided by the run's step windows (one per rank and
  step, analysis.breakdown; a rank without ProfilerSteps is one window). So the classes add up
  to the run's GPU time per step and per GPU.
- **Recommendations**, by id: gone (before only), new (after only), kept (both, with each
  side's estimated saving); "unseen" instead of gone when the rule needs op shapes and the
  after run has a work model for less than half its GPU time (CUDA-graph replays carry no
  shapes: the rule could not have seen the problem, fixed or not).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.facts import gather
from analysis.kernel_classes import KERNEL_CLASSES, classify
from analysis.load import DEFAULT_DATA_DIR, Store, open_store, resolve
from analysis.metrics import COMPARE_METRICS
from analysis.metrics import METRICS as LABELS
from analysis.report.document import records, report_json
from analysis.rules.catalog import NEEDS_SHAPES
from data.cli import CommandParser, add_json_flag, cli_output, parse_command

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
    "confidence",
]
REC_STATUSES = ("gone", "unseen", "new", "kept")
NOISE_REL = 0.01
NOISE_PCT_POINTS = 0.1
# A report's recommendations by id: (rank from 1, the recommendation dict).
_Ranked = dict[str, tuple[int | None, dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs side by side. Frames: `metrics` (METRIC_COLUMNS; before/after/delta in the
    metric's unit, delta_pct relative to before, better 'lower'/'higher' or '' for neither,
    change 'better'/'worse'/'same'/'not comparable'/'n/a'), `classes` (CLASS_COLUMNS, ms
    per step and GPU, largest change first), `recommendations` (REC_COLUMNS; status
    gone/new/kept, rank 1 = first)."""

    before: dict[str, Any]
    after: dict[str, Any]
    metrics: pd.DataFrame
    classes: pd.DataFrame
    recommendations: pd.DataFrame
    verdict: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: before, after, verdict, metrics, kernel_classes and
        recommendations split into gone/new/kept."""
        recs = self.recommendations
        return {
            "before": self.before,
            "after": self.after,
            "verdict": self.verdict,
            "metrics": records(self.metrics),
            "kernel_classes": records(self.classes),
            "recommendations": {
                s: records(recs[recs["status"] == s].drop(columns="status")) for s in REC_STATUSES
            },
        }


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


def _overall(report: dict[str, Any]) -> dict[str, Any]:
    """The overall metrics plus the per-step ones derived from the totals."""
    m = dict(report["metrics"]["overall"])
    windows = step_windows(report)
    m["kernels_per_step"] = m["kernel_count"] / windows if windows else None
    m["kernel_ms_per_step"] = m["kernel_time_ms"] / windows if windows else None
    m["modelled_time_pct"] = _modelled_pct(report)
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


def metric_deltas(before: dict[str, Any], after: dict[str, Any]) -> pd.DataFrame:
    """One row per COMPARE_METRICS entry, from two reports (METRIC_COLUMNS)."""
    b, a = _overall(before), _overall(after)
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
    b: _Ranked = {r["id"]: (i + 1, r) for i, r in enumerate(before.get("recommendations") or [])}
    a: _Ranked = {r["id"]: (i + 1, r) for i, r in enumerate(after.get("recommendations") or [])}
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
                 rec_b.get("est_saving_ms"), rec_a.get("est_saving_ms"), rec.get("confidence")]
            )  # fmt: skip
    out = pd.DataFrame(rows, columns=REC_COLUMNS)
    for c in ("before_rank", "after_rank"):
        out[c] = out[c].astype("Int64")
    for c in ("before_saving_pct", "after_saving_pct", "before_saving_ms", "after_saving_ms"):
        out[c] = out[c].astype(float)
    return out


def _fmt(v: float) -> str:
    return f"{v:,.1f}" if abs(v) >= 1 else f"{v:.3g}"


def verdict(metrics: pd.DataFrame, recommendations: pd.DataFrame) -> str:
    """One line: step time before -> after (without the profiler when both runs have a step
    model, else on the traces' timelines), GPU busy, and the recommendations that went away
    or appeared."""

    def values(key: str) -> list[float]:
        row = metrics[metrics["metric"] == key]
        return [float(row[c].iloc[0]) for c in ("before", "after", "delta_pct")]

    parts = []
    for key, what in (("unprofiled_step_ms", "unprofiled"), ("step_time_ms", "profiled")):
        before, after, pct = values(key)
        if not (math.isnan(before) or math.isnan(after)):
            rel = "" if math.isnan(pct) else f" ({pct:+.0f} %)"
            parts.append(f"step time {_fmt(before)} -> {_fmt(after)} ms {what}{rel}")
            break
    before, after, _ = values("gpu_busy_pct")
    if not (math.isnan(before) or math.isnan(after)):
        parts.append(f"GPU busy {_fmt(before)} -> {_fmt(after)} %")
    for status in ("gone", "new"):
        ids = recommendations.loc[recommendations["status"] == status, "id"].tolist()
        if ids:
            parts.append(f"{status}: {', '.join(ids)}")
    return "; ".join(parts) or "no comparable metrics"


def compare(
    before: dict[str, Any],
    after: dict[str, Any],
    before_classes: pd.DataFrame,
    after_classes: pd.DataFrame,
) -> Comparison:
    """Compare two reports (analysis.report.report_json) and their `class_time` frames."""
    metrics = metric_deltas(before, after)
    recs = recommendation_diff(before, after)
    return Comparison(
        before=before["run"],
        after=after["run"],
        metrics=metrics,
        classes=class_deltas(before_classes, after_classes),
        recommendations=recs,
        verdict=verdict(metrics, recs),
    )


def run_side(store: Store, run_id: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One run's report and its `class_time`, from one read of the run."""
    facts = gather(store, run_id)
    report = report_json(facts)
    return report, class_time(facts.events, step_windows(report))


def compare_runs(store: Store, before_id: str, after_id: str) -> Comparison:
    """Read both runs from the store and compare them."""
    (b, bc), (a, ac) = run_side(store, before_id), run_side(store, after_id)
    return compare(b, a, bc, ac)


def _md_table(df: pd.DataFrame) -> list[str]:
    def cell(v: Any) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            return "—"
        return f"{v:,.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(False)]
    return lines


def to_markdown(c: Comparison) -> str:
    """The comparison as a Markdown document."""
    recs = c.recommendations
    lines = [
        f"# {c.before['name']} → {c.after['name']}",
        "",
        f"`{c.before['id']}` → `{c.after['id']}`",
        "",
        f"**{c.verdict}**",
        "",
        "## Metrics",
        "",
        *_md_table(c.metrics.drop(columns="metric")),
        "",
        "## GPU time per step by kernel class (ms)",
        "",
        *_md_table(c.classes),
    ]
    for status in REC_STATUSES:
        part = recs[recs["status"] == status].drop(columns="status")
        lines += ["", f"## Recommendations {status}", ""]
        lines += _md_table(part) if len(part) else ["none"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
        prog="python -m analysis.compare",
        description="Compare two runs: metric deltas, time per kernel class, recommendations.",
    )
    ap.add_argument("before", help="run id, run name (latest of that name) or trace path")
    ap.add_argument("after", help="run id, run name (latest of that name) or trace path")
    ap.add_argument("--format", choices=("json", "md"), default="md", help="output format")
    ap.add_argument("-o", "--output", type=Path, help="output file (default: standard output)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    add_json_flag(ap)
    args = parse_command(ap, argv)

    def produce() -> str:
        before, after = resolve(args.data, args.before), resolve(args.data, args.after)
        c = compare_runs(open_store(args.data), before, after)
        if args.format == "json":
            return json.dumps(c.to_json(), indent=1, ensure_ascii=False) + "\n"
        return to_markdown(c)

    return cli_output(produce, args.output, json_line=args.json)


if __name__ == "__main__":
    sys.exit(main())
