"""Where the time goes: stacked bars per step window and per rank (analysis.breakdown)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.breakdown import IDLE_SPLIT
from analysis.figures.layout import LAYOUT

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
    many = per_step["rank"].nunique() > 1
    x = [
        ("" if not many else f"rank {r} · ") + f"step {'—' if pd.isna(s) else s}"
        for r, s in zip(per_step["rank"], per_step["step"], strict=True)
    ]
    return _stacked(x, lambda k: per_step[f"{k}_ns"].to_numpy(np.float64) / 1e6, "ms", 3, "ms", 340)


def rank_share_bars(rank_shares: pd.DataFrame) -> go.Figure:
    """100 % stacked bars per rank (and 'all'), from analysis.breakdown.shares."""
    x = ["all" if pd.isna(r) else f"rank {r}" for r in rank_shares["rank"]]
    return _stacked(x, lambda k: rank_shares[f"{k}_pct"], "%", 2, "% of step time", 300)
