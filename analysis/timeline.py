"""Kernel timeline level of detail: which rows a chart may carry, and in what shape.

Streams × time for every rank. Zoomed out, the chart is a heatmap of busy fraction per lane
(rank, stream) and time bucket, aggregated in DuckDB (data.reads_timeline.buckets); a window
that holds at most MAX_SHAPES activities is drawn kernel by kernel. Either way a chart holds
at most MAX_SHAPES shapes (heatmap cells or kernel segments) and MAX_SPEC_BYTES of JSON: the
bucket count is cut to fit the lanes, and hover texts are truncated.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.breakdown import COMM, MEMCPY, MEMSET, event_classes
from analysis.text import plot_text

MAX_SHAPES = 20_000
MAX_SPEC_BYTES = 10_000_000
MAX_BUCKETS = 2_000  # about one per horizontal pixel of a wide chart
NAME_CHARS = 60
SHAPES_CHARS = 100


def lane_table(lanes: pd.DataFrame) -> pd.DataFrame:
    """Lanes in display order: rank, stream, lane (0-based), label ('rank 0 · stream 7')."""
    out = lanes[["rank", "stream"]].sort_values(["rank", "stream"]).reset_index(drop=True)
    out["lane"] = np.arange(len(out))
    out["label"] = [
        f"rank {r} · stream {s}" for r, s in zip(out["rank"], out["stream"], strict=True)
    ]
    return out


def bucket_plan(t0_ns: int, t1_ns: int, n_lanes: int) -> tuple[int, int]:
    """(bucket_ns, bucket count) for [t0, t1): at most MAX_BUCKETS, and lanes × buckets
    within MAX_SHAPES."""
    n = max(1, min(MAX_BUCKETS, MAX_SHAPES // max(n_lanes, 1)))
    size = max(1, math.ceil((t1_ns - t0_ns) / n))
    return size, math.ceil((t1_ns - t0_ns) / size)


def busy_grid(
    buckets: pd.DataFrame, lanes: pd.DataFrame, n_buckets: int, bucket_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    """(busy fraction, top kernel name) as lanes × buckets matrices (NaN / '' where idle).

    `buckets` is data.reads_timeline.buckets's frame; `lanes` is lane_table's.
    """
    z = np.full((len(lanes), n_buckets), np.nan)
    text = np.full((len(lanes), n_buckets), "", dtype=object)
    if buckets.empty:
        return z, text
    m = buckets.merge(lanes[["rank", "stream", "lane"]], on=["rank", "stream"])
    rows, cols = m["lane"].to_numpy(), m["bucket"].to_numpy(np.int64)
    z[rows, cols] = np.minimum(m["busy_ns"].to_numpy(np.float64) / bucket_ns, 1.0)
    text[rows, cols] = clip(m["top_name"], NAME_CHARS).to_numpy(dtype=object)
    return z, text


def clip(text: pd.Series, n: int) -> pd.Series:
    """Texts cut to n characters with an ellipsis, missing ones as an em dash, as plotly
    shows them literally (analysis.text.plot_text; vectorised)."""
    t = text.astype(object).where(text.notna(), "—").astype(str)
    t = t.where(t.str.len() <= n, t.str.slice(0, n - 1) + "…")
    return t.map(plot_text)


def segments(window: pd.DataFrame, lanes: pd.DataFrame, origin_ns: int) -> pd.DataFrame:
    """One row per activity to draw: lane, start_ms, end_ms (from origin), group (compute,
    comm, memcpy, memset) and hover (kernel, op, shapes, duration, grid, block, occupancy;
    texts clipped so that MAX_SHAPES of them stay within MAX_SPEC_BYTES).

    `window` is data.reads_timeline.window_events's frame (at most MAX_SHAPES rows).
    """
    cols = ["lane", "start_ms", "end_ms", "group", "hover"]
    if window.empty:
        return pd.DataFrame(columns=cols)
    w = window.merge(lanes[["rank", "stream", "lane"]], on=["rank", "stream"])
    cls = event_classes(w["kind"], w["name"])
    group = np.select(
        [cls == COMM, cls == MEMCPY, cls == MEMSET], ["comm", "memcpy", "memset"], "compute"
    )
    occ = w["est_occupancy_pct"].astype("Float64")
    # One text per activity, built column-wise: 7 customdata columns × 20 k cost plotly ~1 s
    # to copy and clean, one string column a tenth of that.
    hover = (
        "<b>" + clip(w["name"], NAME_CHARS) + "</b><br>op: " + clip(w["op_name"], NAME_CHARS)
        + " · shapes: " + clip(w["input_dims"], SHAPES_CHARS)
        + "<br>" + (w["dur_ns"] / 1e3).round(1).astype(str) + " µs · grid "
        + clip(w["grid"], 20) + " · block " + clip(w["block"], 20) + " · occupancy "
        + clip(occ.round(0).astype("Int64").astype(str).where(occ.notna()), 4) + " %"
    )  # fmt: skip
    ts = w["ts_ns"].to_numpy(np.int64) - origin_ns
    return pd.DataFrame({
        "lane": w["lane"].to_numpy(),
        "start_ms": ts / 1e6,
        "end_ms": (ts + w["dur_ns"].to_numpy(np.int64)) / 1e6,
        "group": group,
        "hover": hover.to_numpy(dtype=object),
    })  # fmt: skip
