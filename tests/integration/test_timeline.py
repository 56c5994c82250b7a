"""Timeline level of detail: bucket sums against the raw events, hover links, and the caps
(at most 20 k shapes and 10 MB of JSON per chart) on the largest shared fixture."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from helpers.stores import fixture_run

from analysis import timeline as tl
from analysis.figures.timeline import timeline_heatmap, timeline_kernels
from data import reads_timeline
from data.store import Store

LARGEST = "h200/hf_llama_generate_b4.pt.trace.json.gz"  # most GPU activities (38 k)
MULTI = "foreign/hta/trace_filter/"


def _run(label: str) -> tuple[Store, str]:
    return fixture_run(label)


def _extent(s: Store, run: str) -> tuple[pd.DataFrame, int, int]:
    lanes = reads_timeline.lanes(s, run)
    return lanes, int(lanes["first_ns"].min()), int(lanes["last_ns"].max())


def shapes(fig: go.Figure) -> int:
    """Heatmap cells plus kernel segments (a segment is 3 x values: start, end, gap)."""
    n = 0
    for t in fig.data:
        if t.type == "heatmap":
            n += int(np.size(t.z))
        elif t.mode == "lines":
            n += len(t.x) // 3
    return n


def test_bucket_plan_respects_the_shape_cap() -> None:
    for lanes in (1, 3, 17, 64, 400):
        size, n = tl.bucket_plan(0, 10**9, lanes)
        assert n * lanes <= tl.MAX_SHAPES
        assert n <= tl.MAX_BUCKETS
        assert size * n >= 10**9
    assert tl.bucket_plan(0, 10**9, 1)[1] == tl.MAX_BUCKETS


def test_buckets_add_up_to_the_events() -> None:
    s, run = _run(MULTI)
    lanes, t0, t1 = _extent(s, run)
    size, _ = tl.bucket_plan(t0, t1, len(lanes))
    b = reads_timeline.buckets(s, run, t0, t1, size)
    ev = s.query("SELECT rank, stream, ts_ns, dur_ns, name FROM gpu_events WHERE run_id = ?", [run])
    got = b.groupby(["rank", "stream"])["busy_ns"].sum()
    want = ev.groupby(["rank", "stream"])["dur_ns"].sum()
    assert got.to_dict() == want.to_dict()
    assert b.groupby(["rank", "stream"])["events"].sum().to_dict() == (
        ev.groupby(["rank", "stream"]).size().to_dict()
    )
    # One bucket recomputed from the raw events: covered time and the dominant kernel.
    cell = b.loc[b["busy_ns"].idxmax()]
    lo = t0 + int(cell["bucket"]) * size
    e = ev[(ev["rank"] == cell["rank"]) & (ev["stream"] == cell["stream"])]
    cover = (np.minimum(e["ts_ns"] + e["dur_ns"], lo + size) - np.maximum(e["ts_ns"], lo)).clip(0)
    assert int(cover.sum()) == cell["busy_ns"]
    by_name = e.assign(c=cover).groupby("name")["c"].sum()
    assert by_name[cell["top_name"]] == by_name.max()  # the dominant kernel (ties allowed)


def test_window_events_carry_their_op() -> None:
    s, run = _run(LARGEST)
    _, t0, t1 = _extent(s, run)
    mid = (t0 + t1) // 2
    n = reads_timeline.window_count(s, run, mid, mid + 2_000_000)
    w = reads_timeline.window_events(s, run, mid, mid + 2_000_000, tl.MAX_SHAPES)
    assert 0 < len(w) == n
    assert ((w["ts_ns"] < mid + 2_000_000) & (w["ts_ns"] + w["dur_ns"] > mid)).all()
    k = w[w["kind"] == "kernel"]
    assert k["op_name"].notna().mean() > 0.95  # eager PyTorch: every kernel has its op
    assert k["grid"].str.match(r"^\[\d+, \d+, \d+\]$").all()
    row = k.iloc[0]
    op = s.rows(
        "SELECT c.name FROM cpu_ops c JOIN gpu_events g ON g.run_id = c.run_id "
        "AND g.rank = c.rank AND g.op_external_id = c.external_id "
        "WHERE g.run_id = ? AND g.ts_ns = ? AND g.stream = ? LIMIT 1",
        [run, int(row["ts_ns"]), int(row["stream"])],
    )
    assert op[0]["name"] == row["op_name"]
    limited = reads_timeline.window_events(s, run, t0, t1, 100)
    assert len(limited) == 100  # the longest 100
    assert limited["dur_ns"].min() >= w["dur_ns"].median()


def test_caps_on_the_largest_fixture_zoomed_out() -> None:
    s, run = _run(LARGEST)
    lanes, t0, t1 = _extent(s, run)
    assert reads_timeline.window_count(s, run, t0, t1) > tl.MAX_SHAPES  # so: aggregated
    lt = tl.lane_table(lanes)
    size, n = tl.bucket_plan(t0, t1, len(lt))
    z, text = tl.busy_grid(reads_timeline.buckets(s, run, t0, t1, size), lt, n, size)
    assert np.nanmax(z) <= 1.0
    fig = timeline_heatmap(z, text, lt["label"].tolist(), 0.0, size / 1e6)
    spec = fig.to_json()
    assert shapes(fig) <= tl.MAX_SHAPES
    assert len(spec.encode()) <= tl.MAX_SPEC_BYTES


def test_caps_on_the_largest_fixture_kernel_by_kernel() -> None:
    """The worst case a page can ask for: MAX_SHAPES activities, each with its hover."""
    s, run = _run(LARGEST)
    lanes, t0, t1 = _extent(s, run)
    lt = tl.lane_table(lanes)
    w = reads_timeline.window_events(s, run, t0, t1, tl.MAX_SHAPES)
    assert len(w) == tl.MAX_SHAPES
    seg = tl.segments(w, lt, t0)
    fig = timeline_kernels(seg, lt["label"].tolist())
    assert shapes(fig) == tl.MAX_SHAPES
    assert len(fig.to_json().encode()) <= tl.MAX_SPEC_BYTES
    # Lane 0 on top without a reversed axis (Streamlit's plotly.js drew every Scattergl line
    # of a reversed axis on one row, seen in Chromium).
    assert fig.layout.yaxis.autorange != "reversed"
    assert fig.layout.yaxis.ticktext[-1] == lt["label"].iloc[0]
    assert fig.data[1].y[0] == len(lt) - 1 - seg["lane"].iloc[0]
    hover = seg["hover"].iloc[0]
    assert "op: aten::" in hover
    assert f"{round(w.iloc[0]['dur_ns'] / 1e3, 1)} µs" in hover


def test_segments_are_in_ms_from_the_origin_on_their_lane() -> None:
    s, run = _run(MULTI)
    lanes, t0, t1 = _extent(s, run)
    lt = tl.lane_table(lanes)
    assert lt["label"].iloc[0] == f"rank {lt['rank'].iloc[0]} · stream {lt['stream'].iloc[0]}"
    w = reads_timeline.window_events(s, run, t0, t1, tl.MAX_SHAPES)
    seg = tl.segments(w, lt, t0)
    assert len(seg) == len(w)
    assert set(seg["group"]) >= {"compute", "comm"}  # this 2-rank run has NCCL kernels
    first = w.sort_values("ts_ns").iloc[0]
    assert seg["start_ms"].min() == pytest.approx((first["ts_ns"] - t0) / 1e6)
    assert (seg["end_ms"] >= seg["start_ms"]).all()
    assert sorted(seg["lane"].unique()) == list(range(len(lt)))


def test_worst_case_hover_texts_stay_within_the_byte_cap() -> None:
    """MAX_SHAPES activities whose every text is longer than its clip, on 64 lanes."""
    n = tl.MAX_SHAPES
    lanes = pd.DataFrame({"rank": np.arange(64) // 8, "stream": np.arange(64) % 8})
    long = "x" * 500
    window = pd.DataFrame({
        "rank": np.arange(n) % 64 // 8, "stream": np.arange(n) % 8, "kind": "kernel",
        "name": [f"{i}{long}" for i in range(n)], "ts_ns": np.arange(n) * 123_457,
        "dur_ns": 99_999, "grid": "[65535, 65535, 65535]", "block": "[1024, 1024, 64]",
        "est_occupancy_pct": 100.0, "op_name": long, "input_dims": long, "step": 1,
    })  # fmt: skip
    lt = tl.lane_table(lanes)
    fig = timeline_kernels(tl.segments(window, lt, 0), lt["label"].tolist())
    assert shapes(fig) == n
    assert len(fig.to_json().encode()) <= tl.MAX_SPEC_BYTES
