"""Plotly figures of the time side (breakdown, timeline), shared by pages and reports."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.breakdown import IDLE_SPLIT
from analysis.figure_layout import LAYOUT

# Category -> (label, colour); idle is drawn as its three parts.
CATEGORIES = {
    "compute": ("compute", "#4C78A8"),
    "comm": ("comm (exposed)", "#F58518"),
    "memcpy": ("memcpy", "#54A24B"),
    "memset": ("memset", "#B279A2"),
    "host_wait": ("idle: host wait", "#E45756"),
    "kernel_wait": ("idle: kernel wait", "#FF9DA6"),
    "idle_other": ("idle: other", "#BAB0AC"),
}
GROUP_COLOURS = {"compute": "#4C78A8", "comm": "#F58518", "memcpy": "#54A24B", "memset": "#B279A2"}


def _stacked(
    x: list[str], values: Callable[[str], object], unit: str, digits: int, title: str, height: int
) -> go.Figure:
    """One stacked bar per x, a segment per breakdown category (`values(key)` its heights)."""
    fig = go.Figure()
    for key in ("compute", "comm", "memcpy", "memset", *IDLE_SPLIT):
        label, colour = CATEGORIES[key]
        fig.add_bar(
            x=x,
            y=values(key),
            name=label,
            marker_color=colour,
            hovertemplate="%{x}<br>" + label + f": %{{y:.{digits}f}} {unit}<extra></extra>",
        )
    fig.update_layout(
        barmode="stack", yaxis_title=title, xaxis_type="category", height=height, **LAYOUT
    )
    return fig


def breakdown_bars(per_step: pd.DataFrame) -> go.Figure:
    """Stacked bars, one per rank and step window, in ms (analysis.breakdown.breakdown)."""
    x = [
        f"r{r} · step {'—' if pd.isna(s) else s}"
        for r, s in zip(per_step["rank"], per_step["step"], strict=True)
    ]
    return _stacked(x, lambda k: per_step[f"{k}_ns"].to_numpy(np.float64) / 1e6, "ms", 3, "ms", 340)


def rank_share_bars(rank_shares: pd.DataFrame) -> go.Figure:
    """100 % stacked bars per rank (and 'all'), from analysis.breakdown.shares."""
    x = ["all" if pd.isna(r) else f"rank {r}" for r in rank_shares["rank"]]
    return _stacked(x, lambda k: rank_shares[f"{k}_pct"], "%", 2, "% of step time", 300)


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
