"""What every report format shows: the sections in order, each a list of blocks (paragraphs,
notes, tables of formatted cells, figures, recommendations) read from the JSON report
(analysis.report.document) and the charts (analysis.report.charts).

The HTML, Markdown and PDF writers only lay the blocks out (and escape them for their
format), so the three say the same thing in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

import plotly.graph_objects as go

from analysis.host_regions import REGION_NOTE
from analysis.metrics import METRICS, REPORT_METRICS
from analysis.rank_sample import sample_text
from analysis.rules.recommend import MINOR_PCT, likely_of
from analysis.step_model import BASIS
from analysis.text import clip, fmt, fmt_sig, plural

# (id, title) in report order; the ids are the HTML anchors.
SECTIONS = (
    ("summary", "Summary"),
    ("metrics", "Key metrics"),
    ("roofline", "Roofline"),
    ("bandwidth", "HBM bandwidth"),
    ("breakdown", "Where the time goes"),
    ("timeline", "Timeline snapshot"),
    ("recommendations", "Recommendations"),
)
TITLES = dict(SECTIONS)
NO_RECOMMENDATIONS = "No recommendation: none of the rules found a saving in this run."


@dataclass(frozen=True, slots=True)
class Table:
    """Rows of formatted cells under a header (every row as long as the header)."""

    header: list[str]
    rows: list[list[str]]
    title: str = ""


@dataclass(frozen=True, slots=True)
class Chart:
    """One chart section: the figure (None: nothing to draw), what it shows in words (or why
    there is none), and a small table the page shows beside it."""

    figure: go.Figure | None
    summary: str
    table: Table | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """A secondary paragraph: a caption, a definition."""

    text: str


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One recommendation of the ranked list (rank from 1), as the JSON report holds it."""

    rank: int
    rec: dict[str, Any]


Block: TypeAlias = str | Note | Table | go.Figure | Recommendation


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The report's opening lines: the run, the headline numbers, the top recommendation."""
    run, m = doc["run"], doc["metrics"]["overall"]
    ranks = f"{run['ranks']} rank" + ("s" if run["ranks"] != 1 else "")
    lines = [
        f"Run {run['name']} ({run['id']}) on {run['device_name'] or 'an unnamed device'}, {ranks}.",
        step_line(doc),
        (
            "On the profiled timeline, GPU busy "
            if m["unprofiled_step_ms"] is not None
            else "GPU busy "
        )
        + f"{fmt(m['gpu_busy_pct'], 1)} % "
        f"(compute {fmt(m['compute_pct'], 1)} %, exposed comm {fmt(m['comm_pct'], 1)} %, "
        f"copies {fmt(m['memcpy_pct'], 1)} %, memsets {fmt(m['memset_pct'], 1)} %), "
        f"idle {fmt(m['idle_pct'], 1)} %; {fmt(m['kernel_count'])} kernels, "
        f"{fmt(m['kernel_time_ms'])} ms of kernel time.",
        f"Achieved {fmt(m['achieved_tflops'])} TFLOP/s per GPU, MFU {fmt(m['mfu_pct'], 1)} % "
        "(of the dense peak of the precision doing most of the FLOPs), "
        f"HBM bandwidth {fmt(m['hbm_bw_util_pct'], 1)} % of peak (modelled work over step time).",
    ]
    sample = run.get("analysed_ranks")
    if sample:
        lines.append(sample_text(sample))
    if m["kernel_count"] == 0:
        lines.append("No GPU activity in this run (a CPU-only trace).")
    recs = recommendations(doc)
    if recs:
        top = recs[0]
        lines.append(
            f"{plural(len(recs), 'recommendation')}; the largest: {top['title']} "
            f"(about {fmt(top.get('est_saving_pct'), 1)} % of step time, "
            f"{top.get('confidence', '—')} confidence)."
        )
    else:
        lines.append(NO_RECOMMENDATIONS)
    return lines


def step_line(doc: dict[str, Any]) -> str:
    """Both step times, the profiler's share and where the unprofiled one comes from."""
    m, model = doc["metrics"]["overall"], doc.get("step_model") or {}
    if model.get("unprofiled_step_ms") is None:
        return f"Time per step {fmt(m['step_time_ms'])} ms on the trace's timeline."
    return (
        f"Time per step {fmt(model['unprofiled_step_ms'])} ms without the profiler "
        f"({BASIS.get(model['basis'], model['basis'])}); {fmt(model['profiled_step_ms'])} ms "
        f"profiled, of which the profiler added {fmt(model['profiler_share_pct'], 1)} %. "
        "Savings are taken against the unprofiled step."
    )


def metrics_table(doc: dict[str, Any]) -> Table:
    """One row per metric: the whole run, then each rank."""
    ranks = doc["metrics"]["per_rank"]
    cols = [doc["metrics"]["overall"], *ranks]
    return Table(
        ["metric", "run", *[f"rank {r['rank']}" for r in ranks]],
        [
            [METRICS[key].label, *[fmt(c.get(key), METRICS[key].digits) for c in cols]]
            for key in REPORT_METRICS
        ],
    )


def roofline_rows(doc: dict[str, Any]) -> Table:
    """The JSON report's roofline rows (per op class and precision), by time."""
    return Table(
        ["op class", "precision", "time (ms)", "share %", "FLOP/byte", "TFLOP/s", "GB/s",
         "% of ceiling", "bound"],
        [
            [str(r["name"]), str(r.get("precision") or "—"), fmt(r.get("time_ms"), 3),
             fmt(r.get("share_pct"), 1), fmt_sig(r.get("intensity")),
             fmt(r.get("achieved_tflops")), fmt(r.get("achieved_gbps"), 0),
             fmt(r.get("pct_of_ceiling"), 1), str(r.get("bound") or r.get("note") or "—")]
            for r in doc["roofline"]
        ],
    )  # fmt: skip


def breakdown_rows(doc: dict[str, Any]) -> Table:
    """Per rank and step window: the exclusive shares in ms, and the kernel launches."""
    launch = {(r["rank"], r["step"]): r for r in doc["breakdown"]["launch"]}
    rows = []
    for w in doc["breakdown"]["per_step"]:
        ln = launch.get((w["rank"], w["step"]), {})
        rows.append(
            [str(w["rank"]), fmt(w["step"]), fmt(w["window_ms"], 3), fmt(w["compute_ms"], 3),
             fmt(w["comm_ms"], 3), fmt(w["memcpy_ms"], 3), fmt(w["memset_ms"], 3),
             fmt(w["host_wait_ms"], 3), fmt(w["kernel_wait_ms"], 3),
             fmt(w["idle_other_ms"], 3), fmt(ln.get("kernel_count"), 0),
             fmt(ln.get("short_kernel_count"), 0)]
        )  # fmt: skip
    return Table(
        ["rank", "step", "window (ms)", "compute", "comm (exposed)", "memcpy", "memset",
         "host wait", "kernel wait", "idle other", "kernels", "< 10 µs"],
        rows,
        title="Per step window, in ms",
    )  # fmt: skip


def breakdown_note(doc: dict[str, Any]) -> str:
    """The definitions, and the straggler when there are several ranks."""
    text = (
        "Exclusive shares of each step's GPU window in priority order compute > comm > memcpy "
        "> memset; idle is time when no stream runs anything."
    )
    straggler = doc["breakdown"].get("straggler_rank")
    if straggler is not None:
        text += f" Straggler: rank {straggler} (the most time outside exposed communication)."
    return text


def region_rows(doc: dict[str, Any]) -> Table:
    """GPU idle by host region: where the host was while the GPU waited, per step."""
    return Table(
        ["host region", "idle on the trace (ms)", "idle unprofiled (ms)", "share of idle %",
         "claimed by"],
        [
            [str(r["label"]), fmt(r.get("idle_ms"), 3), fmt(r.get("unprofiled_ms"), 3),
             fmt(r.get("share_pct"), 1), str(r.get("claimed_by") or "—")]
            for r in doc["breakdown"].get("idle_by_host_region") or []
        ],
        title="GPU idle by host region, per step",
    )  # fmt: skip


def minor_rows(doc: dict[str, Any]) -> Table:
    """The findings under MINOR_PCT of the step: listed, not ranked."""
    return Table(
        ["id", "title", "saving per step (ms)", "% of step"],
        [
            [str(r["id"]), str(r["title"]), fmt(r.get("est_saving_ms"), 4),
             fmt(r.get("est_saving_pct"), 2)]
            for r in doc.get("minor_recommendations") or []
        ],
        title=f"Minor findings (under {MINOR_PCT} % of the step, not ranked)",
    )  # fmt: skip


def recommendations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The ranked recommendations; none when the report has no such key."""
    return list(doc.get("recommendations") or [])


def saving_text(rec: dict[str, Any]) -> str:
    """'saves about 12.3 % of the step (4.56 ms per step; likely 3.90–6.21 ms) · high
    confidence', and the fix it is an alternative to."""
    likely = likely_of(rec)
    within = "" if likely is None else f"; likely {fmt(likely[0])}–{fmt(likely[1])} ms"
    text = (
        f"saves about {fmt(rec.get('est_saving_pct'), 1)} % of the step "
        f"({fmt(rec.get('est_saving_ms'))} ms per step{within}) · "
        f"{rec.get('confidence') or '—'} confidence"
    )
    alt = rec.get("alternative_of")
    return text + (f" · an alternative to {alt} (the savings do not add up)" if alt else "")


def targets_text(rec: dict[str, Any], name_chars: int | None = None) -> str:
    """The ops and kernels a recommendation is about ('' when it names none), each name cut
    to `name_chars` when given."""

    def names(key: str) -> str:
        return ", ".join(clip(str(v), name_chars) for v in rec.get(key) or [])

    return " · ".join(f"{key}: {names(key)}" for key in ("ops", "kernels") if rec.get(key))


def _chart_blocks(chart: Chart) -> list[Block]:
    out: list[Block] = [] if chart.figure is None else [chart.figure]
    out.append(Note(chart.summary))
    if chart.table is not None and chart.table.rows:
        out.append(chart.table)
    return out


def report_blocks(
    doc: dict[str, Any], charts: dict[str, Chart]
) -> list[tuple[str, str, list[Block]]]:
    """(section id, title, blocks) for every section of SECTIONS, in order."""
    blocks: dict[str, list[Block]] = {
        "summary": list(summary_lines(doc)),
        "metrics": [metrics_table(doc)],
    }
    for key in ("roofline", "bandwidth", "breakdown", "timeline"):
        blocks[key] = _chart_blocks(charts[key])
    if doc["roofline"]:
        blocks["roofline"].append(roofline_rows(doc))
    blocks["breakdown"].append(Note(breakdown_note(doc)))
    if doc["breakdown"]["per_step"]:
        blocks["breakdown"].append(breakdown_rows(doc))
    if (regions := region_rows(doc)).rows:
        blocks["breakdown"] += [regions, Note(REGION_NOTE)]
    recs = recommendations(doc)
    blocks["recommendations"] = (
        [Recommendation(n, r) for n, r in enumerate(recs, start=1)]
        if recs
        else [NO_RECOMMENDATIONS]
    )
    if (minor := minor_rows(doc)).rows:
        blocks["recommendations"].append(minor)
    return [(sid, title, blocks[sid]) for sid, title in SECTIONS]
