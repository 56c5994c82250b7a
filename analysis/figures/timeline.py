"""The kernel timeline: busy fraction per lane and bucket, or each activity as a segment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis import timeline as tl
from analysis.figures.layout import LAYOUT
from analysis.load import TimelineWindow

GROUP_COLOURS = {"compute": "#4C78A8", "comm": "#F58518", "memcpy": "#54A24B", "memset": "#B279A2"}


def timeline_heatmap(
    z: np.ndarray, text: np.ndarray, labels: list[str], t0_ms: float, bucket_ms: float
) -> go.Figure:
    """Busy fraction per lane and time bucket (analysis.timeline.busy_grid)."""
    x = t0_ms + bucket_ms * (np.arange(z.shape[1]) + 0.5)
    fig = go.Figure(
        go.Heatmap(
            z=np.round(z, 3),
            x=np.round(x, 4),
            y=labels,
            text=text,
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar={"title": "busy"},
            hovertemplate="%{y}<br>%{x:.3f} ms<br>busy %{z:.0%}<br>%{text}<extra></extra>",
        )
    )
    fig.update_layout(xaxis_title="ms", height=120 + 28 * len(labels), dragmode="select", **LAYOUT)
    fig.update_yaxes(autorange="reversed")
    return fig


def timeline_kernels(seg: pd.DataFrame, labels: list[str]) -> go.Figure:
    """Each activity as a WebGL segment on its lane; hover on the segment's midpoint marker.

    `seg` is analysis.timeline.segments's frame.
    """
    fig = go.Figure()
    for group, g in seg.groupby("group", sort=False):
        n = len(g)
        x = np.empty(3 * n)
        x[0::3], x[1::3], x[2::3] = g["start_ms"], g["end_ms"], np.nan
        # Lane 0 on top by numbering rows from the bottom: Streamlit's plotly.js draws
        # Scattergl lines on a reversed y axis all on one row (seen in Chromium).
        row = len(labels) - 1 - g["lane"].to_numpy(np.float64)
        y = np.repeat(row, 3)
        y[2::3] = np.nan
        colour = GROUP_COLOURS[str(group)]
        fig.add_trace(
            go.Scattergl(
                x=np.round(x, 6),
                y=y,
                mode="lines",
                name=str(group),
                line={"width": 14, "color": colour},
                hoverinfo="skip",
            )
        )
        mid = np.round((g["start_ms"].to_numpy() + g["end_ms"].to_numpy()) / 2, 6)
        fig.add_trace(
            go.Scattergl(
                x=mid,
                y=row,
                mode="markers",
                showlegend=False,
                marker={"size": 4, "color": colour},
                text=g["hover"].to_numpy(),
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(labels))),
        ticktext=labels[::-1],
        range=[-0.5, len(labels) - 0.5],
    )
    fig.update_layout(xaxis_title="ms", height=120 + 28 * len(labels), **LAYOUT)
    return fig


def timeline_figure(window: TimelineWindow) -> go.Figure:
    """The chart of a loaded window (analysis.load.load_timeline_window): each activity on
    its lane, or busy fraction per lane and bucket. Times in ms from the run's first
    activity."""
    lanes = tl.lane_table(window.lanes)
    labels = lanes["label"].tolist()
    origin = int(window.lanes["first_ns"].min())
    t0_ms = (window.t0_ns - origin) / 1e6
    if window.events is not None:
        fig = timeline_kernels(tl.segments(window.events, lanes, origin), labels)
        fig.update_xaxes(range=[t0_ms, (window.t1_ns - origin) / 1e6])
        return fig
    grid = window.grid
    if grid is None:
        raise ValueError("a timeline window holds its events or a busy grid")
    z, text = tl.busy_grid(grid.buckets, lanes, grid.count, grid.bucket_ns)
    return timeline_heatmap(z, text, labels, t0_ms, grid.bucket_ns / 1e6)
