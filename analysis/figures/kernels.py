"""Kernel time per class, split into tensor-core and other kernels (analysis.kernels)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.figures.layout import LAYOUT

TENSOR_COLOUR, OTHER_COLOUR = "#54A24B", "#BAB0AC"


def tensor_core_bars(classes: pd.DataFrame) -> go.Figure:
    """Horizontal stacked bars, one per kernel class (analysis.kernels.tensor_core_use),
    largest on top: ms on tensor cores, ms elsewhere."""
    c = classes.sort_values("time_ms")
    fig = go.Figure()
    for label, ms, colour in (
        ("tensor cores", c["tensor_core_ms"], TENSOR_COLOUR),
        ("CUDA cores and other units", c["time_ms"] - c["tensor_core_ms"], OTHER_COLOUR),
    ):
        fig.add_bar(
            y=c["kernel_class"],
            x=ms,
            name=label,
            orientation="h",
            marker_color=colour,
            hovertemplate="%{y}: %{x:.3f} ms on " + label + "<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        xaxis_title="kernel time (ms)",
        yaxis={"type": "category", "automargin": True},
        height=100 + 26 * len(c),
        **LAYOUT,
    )
    return fig
