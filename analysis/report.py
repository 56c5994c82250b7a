"""The run report: `python -m analysis.report RUN --format html|md|json|pdf [-o FILE]
[--data DIR]`.

RUN is a run id, a run name (the latest run of that name) or a trace path (ingested first,
by `python -m collectors.ingest` in a child process: analysis never imports collectors).
`build_report` is pure (frames in, a dict out); `export` turns that dict and the run's charts
(analysis.report_charts) into one format (HTML: analysis.report_html, Markdown:
analysis.report_md, PDF: analysis.report_pdf); `main` does the reading and writing.

JSON layout: `run` (id, name, ranks, device_name), `metrics` (`overall` and `per_rank`, each
with kernel_count, kernel_time_ms, step_time_ms, gpu_busy_pct, idle_pct, compute_pct,
comm_pct, memcpy_pct, achieved_tflops, mfu_pct, hbm_bw_util_pct, plus the breakdown's other
shares), `roofline` (one row per op class and precision: analysis.roofline.ROOFLINE_COLUMNS, i.e.
name, flops, bytes, intensity, achieved_tflops, achieved_gbps, bound, pct_of_ceiling…),
`breakdown` (per step windows in ms, the spread across ranks, the straggler, launch
statistics), `recommendations` (ranked by saving: analysis.recommend.Recommendation.as_json:
id, title, est_saving_pct, est_saving_ms per step, confidence, evidence, fix, why, kernels,
ops). Shares are exclusive shares of the step time (analysis.breakdown), so
compute + comm + memcpy + memset + idle = 100; comm_pct is exposed communication.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import breakdown as bd
from analysis import roofline
from analysis.evidence import gather
from analysis.overview import step_times
from analysis.recommend import recommend
from analysis.report_charts import report_charts
from analysis.report_html import render_html
from analysis.report_md import render_md
from analysis.report_sections import Chart
from data.errors import DashError, error_line
from data.store import DEFAULT_DATA_DIR, Store

FORMATS = ("html", "md", "json", "pdf")
MEDIA_TYPES = {
    "html": "text/html",
    "md": "text/markdown",
    "json": "application/json",
    "pdf": "application/pdf",
}
REPO = Path(__file__).resolve().parents[1]
COMPUTE_KEYS = ("achieved_tflops", "mfu_pct", "hbm_bw_util_pct")
SHARE_KEYS = (
    "gpu_busy_pct",
    "idle_pct",
    "compute_pct",
    "comm_pct",
    "memcpy_pct",
    "memset_pct",
    "host_wait_pct",
    "kernel_wait_pct",
    "idle_other_pct",
    "comm_overlap_pct",
)


def _num(v: Any) -> Any:
    """JSON-safe scalar: numpy to Python, NaN/NA to None."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.integer | int) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.floating | float):
        return None if math.isnan(float(v)) else float(v)
    return v


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _num(v) for k, v in row.items()} for row in df.to_dict("records")]


def _metrics(
    steps: pd.DataFrame,
    events: pd.DataFrame,
    share_row: pd.Series | None,
    compute: dict[str, float | None],
) -> dict[str, Any]:
    kernels = events[events["kind"] == "kernel"]
    per_step = step_times(steps)
    out: dict[str, Any] = {
        "kernel_count": len(kernels),
        "kernel_time_ms": float(kernels["dur_ns"].sum()) / 1e6,
        "step_time_ms": None if per_step.empty else float(per_step["step_time_ms"].median()),
    }
    for key in SHARE_KEYS:
        out[key] = None if share_row is None else _num(share_row[key])
    for key in COMPUTE_KEYS:
        out[key] = _num(compute.get(key))
    return out


def build_report(
    run: dict[str, Any],
    steps: pd.DataFrame,
    events: pd.DataFrame,
    *,
    roofline: pd.DataFrame | None = None,
    compute: dict[Any, dict[str, float | None]] | None = None,
) -> dict[str, Any]:
    """The report as a JSON-ready dict.

    `run`: the runs row (run_id, name, rank_count, device_name); `steps`: the store's steps;
    `events`: data.reads_timeline.gpu_work; `roofline`: the roofline rows (any columns,
    flops/bytes/intensity/achieved_tflops/achieved_gbps/bound at least), `compute`: the
    compute-side metrics (achieved_tflops, mfu_pct, hbm_bw_util_pct) keyed by rank, with key
    None for the whole run; missing ones are null.
    """
    compute = compute or {}
    per_step = bd.breakdown(events, steps)
    shares = bd.shares(per_step)
    spread, straggler = bd.rank_spread(shares, per_step)
    overall_share = shares[shares["rank"].isna()]
    ranks = sorted({int(r) for r in events["rank"]} | {int(r) for r in steps["rank"]})
    per_rank = []
    for r in ranks:
        row = shares[shares["rank"] == r]
        m = _metrics(
            steps[steps["rank"] == r],
            events[events["rank"] == r],
            row.iloc[0] if len(row) else None,
            compute.get(r, {}),
        )
        per_rank.append({"rank": r, **m})
    windows = per_step.assign(
        **{
            c.replace("_ns", "_ms"): per_step[c] / 1e6
            for c in bd.STEP_COLUMNS
            if c.endswith("_ns") and c not in ("start_ns", "end_ns")
        }
    )
    windows = windows.drop(columns=[c for c in bd.STEP_COLUMNS if c.endswith("_ns")])
    launch = bd.launch_stats(events)
    return {
        "run": {
            "id": run["run_id"],
            "name": run["name"],
            "ranks": int(run["rank_count"]),
            "device_name": run.get("device_name"),
        },
        "metrics": {
            "overall": _metrics(
                steps,
                events,
                overall_share.iloc[0] if len(overall_share) else None,
                compute.get(None, {}),
            ),
            "per_rank": per_rank,
        },
        "roofline": [] if roofline is None else _records(roofline),
        "breakdown": {
            "definitions": "exclusive shares of each step window (analysis/breakdown.py)",
            "per_step": _records(windows),
            "spread": _records(spread),
            "straggler_rank": straggler,
            "launch": _records(launch),
        },
    }


def _resolve(ref: str, data: Path) -> str:
    """A run id or name, or a trace path that is ingested first; returns the run id."""
    if not Path(ref).exists():
        return Store(data).resolve_run(ref)
    proc = subprocess.run(
        [sys.executable, "-m", "collectors.ingest", ref, "--data", str(data)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0:
        return proc.stdout.strip().splitlines()[-1]
    err = proc.stderr.strip().splitlines()
    line = err[-1].removeprefix("error: ") if err else f"ingest exited with {proc.returncode}"
    if "already ingested as run " in line:  # the same trace: report on that run
        return line.rsplit("already ingested as run ", 1)[1].split()[0]
    raise DashError(line)


def report_json(store: Store, run_id: str) -> dict[str, Any]:
    """Read one run from the store and build its report (roofline per op class, compute
    metrics from analysis.roofline against the matched device spec and measured ceilings)."""
    facts = gather(store, run_id)
    steps, work, spec = facts.steps, facts.all_work, facts.spec
    compute: dict[Any, dict[str, float | None]] = {
        None: roofline.run_compute_metrics(work, steps, spec)
    }
    for rank in sorted(work["rank"].unique()):
        compute[int(rank)] = roofline.run_compute_metrics(
            work[work["rank"] == rank], steps[steps["rank"] == rank], spec
        )
    table = roofline.roofline_table(work, spec, facts.measured, by="op_class")
    doc = build_report(facts.run, steps, facts.events, roofline=table, compute=compute)
    doc["recommendations"] = [r.as_json() for r in recommend(facts)]
    return doc


def export(doc: dict[str, Any], charts: dict[str, Chart] | None, fmt: str) -> str | bytes:
    """The report in one of FORMATS: text, or bytes for PDF. `doc` is report_json's dict,
    `charts` report_charts's (not needed for JSON)."""
    if fmt == "json":
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if charts is None:
        raise ValueError(f"the {fmt} report needs the run's charts")
    if fmt == "html":
        return render_html(doc, charts)
    if fmt == "md":
        return render_md(doc, charts)
    # matplotlib and fpdf2 take ~0.5 s to import: only the PDF needs them.
    from analysis.report_pdf import render_pdf

    return render_pdf(doc, charts)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.report",
        description="Write the report of one run: self-contained HTML with interactive "
        "charts, Markdown, JSON, or PDF with static charts.",
    )
    ap.add_argument("run", help="run id, run name (latest of that name) or trace path")
    ap.add_argument("--format", choices=FORMATS, default="json", help="report format")
    ap.add_argument(
        "-o", "--output", type=Path, help="output file (default: standard output; PDF bytes too)"
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    args = ap.parse_args(argv)

    def produce() -> str | bytes:
        run_id = _resolve(args.run, args.data)
        store = Store(args.data)
        charts = None if args.format == "json" else report_charts(store, run_id)
        return export(report_json(store, run_id), charts, args.format)

    return cli_output(produce, args.output)


def cli_output(produce: Callable[[], str | bytes], output: Path | None) -> int:
    """A CLI's exit status: what `produce` returns goes to `output` (else standard output,
    bytes as they are); a DashError or OSError becomes one line on stderr and status 2."""
    try:
        out = produce()
        data = out.encode() if isinstance(out, str) else out
        if output:
            output.write_bytes(data)
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
    except (DashError, OSError) as e:
        print(error_line(e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
