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
- **Comparability** (analysis.comparability): how the runs differ (device, model, batch,
  precision), tokens/s, and MFU against one reference peak for both runs.
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

from analysis.comparability import (
    ReferencePeak,
    RunProfile,
    differences,
    reference_peak,
    run_profile,
)
from analysis.compare_deltas import (
    CLASS_COLUMNS,
    METRIC_COLUMNS,
    REC_COLUMNS,
    REC_STATUSES,
    class_deltas,
    class_time,
    gone_note,
    metric_deltas,
    recommendation_diff,
    step_windows,
    verdict,
)
from analysis.facts import Facts, gather
from analysis.load import DEFAULT_DATA_DIR, Store, open_store, resolve
from analysis.report.document import records, report_json
from analysis.specs import DeviceSpec
from data.cli import CommandParser, add_json_flag, cli_output, parse_command

# Re-exported: the comparison's frames are described by these (tests, callers).
__all__ = [
    "CLASS_COLUMNS", "METRIC_COLUMNS", "REC_COLUMNS", "Comparison", "Side", "compare",
    "compare_runs", "compare_sides", "gone_note", "recommendation_diff", "run_side", "side_of",
    "to_markdown",
]  # fmt: skip


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
    differences: tuple[str, ...] = ()
    mfu_reference: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: before, after, verdict, differences (why the runs are not
        like for like), mfu_reference, metrics, kernel_classes and recommendations split
        into gone/new/kept."""
        recs = self.recommendations
        return {
            "before": self.before,
            "after": self.after,
            "verdict": self.verdict,
            "differences": list(self.differences),
            "mfu_reference": self.mfu_reference,
            "metrics": records(self.metrics),
            "kernel_classes": records(self.classes),
            "recommendations": {
                s: records(recs[recs["status"] == s].drop(columns="status")) for s in REC_STATUSES
            },
        }


def compare(
    before: dict[str, Any],
    after: dict[str, Any],
    before_classes: pd.DataFrame,
    after_classes: pd.DataFrame,
    *,
    profiles: tuple[RunProfile, RunProfile] | None = None,
    reference: ReferencePeak | None = None,
) -> Comparison:
    """Compare two reports (analysis.report.report_json) and their `class_time` frames;
    with the runs' `profiles`, how they differ and their tokens/s; MFU against `reference`
    for both runs when given (analysis.comparability.reference_peak)."""
    tokens: tuple[float | None, float | None] = (None, None)
    diffs: tuple[str, ...] = ()
    if profiles is not None:
        tokens = (profiles[0].tokens_per_step, profiles[1].tokens_per_step)
        diffs = tuple(differences(*profiles))
    metrics = metric_deltas(before, after, tokens, reference)
    recs = recommendation_diff(before, after)
    return Comparison(
        before=before["run"],
        after=after["run"],
        metrics=metrics,
        classes=class_deltas(before_classes, after_classes),
        recommendations=recs,
        verdict=verdict(metrics, recs, len(diffs)),
        differences=diffs,
        mfu_reference=None if reference is None else reference.label,
    )


@dataclass(frozen=True)
class Side:
    """One run as a comparison reads it: its report, `class_time`, comparability profile
    and device spec."""

    report: dict[str, Any]
    classes: pd.DataFrame
    profile: RunProfile
    spec: DeviceSpec | None


def side_of(facts: Facts) -> Side:
    """One run's side of a comparison, from its facts."""
    report = report_json(facts)
    classes = class_time(facts.events, step_windows(report))
    return Side(report, classes, run_profile(facts), facts.spec)


def compare_sides(before: Side, after: Side) -> Comparison:
    """Compare two runs with their differences and one reference peak for MFU."""
    return compare(
        before.report, after.report, before.classes, after.classes,
        profiles=(before.profile, after.profile),
        reference=reference_peak(before.spec, after.spec),
    )  # fmt: skip


def run_side(store: Store, run_id: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One run's report and its `class_time`, from one read of the run."""
    side = side_of(gather(store, run_id))
    return side.report, side.classes


def compare_runs(store: Store, before_id: str, after_id: str) -> Comparison:
    """Read both runs from the store and compare them."""
    return compare_sides(side_of(gather(store, before_id)), side_of(gather(store, after_id)))


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
        *[f"- {d}" for d in c.differences],
        *([""] if c.differences else []),
        *([f"MFU against the {c.mfu_reference} for both runs.", ""] if c.mfu_reference else []),
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
