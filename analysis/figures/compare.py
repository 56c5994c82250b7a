"""Plotly figures of a two-run comparison (analysis.compare), shared by pages and reports."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.figures.layout import LAYOUT
from analysis.text import plot_text

BEFORE_COLOUR, AFTER_COLOUR = "#BAB0AC", "#4C78A8"


def class_bars(classes: pd.DataFrame, before_label: str, after_label: str) -> go.Figure:
    """Grouped bars of GPU ms per step by kernel class, before beside after
    (analysis.compare.Comparison.classes), classes in the frame's order."""
    fig = go.Figure()
    for side, label, colour in (
        ("before", before_label, BEFORE_COLOUR),
        ("after", after_label, AFTER_COLOUR),
    ):
        fig.add_bar(
            x=classes["kernel_class"],
            y=classes[f"{side}_ms_per_step"],
            name=f"{side}: {plot_text(label)}",
            marker_color=colour,
            hovertemplate="%{x}<br>" + side + ": %{y:.3f} ms/step<extra></extra>",
        )
    fig.update_layout(
        barmode="group",
        xaxis={"title": "kernel class", "type": "category"},
        yaxis_title="ms per step",
        height=340,
        **LAYOUT,
    )
    return fig
