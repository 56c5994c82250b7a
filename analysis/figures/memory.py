"""Allocated and reserved device memory over time (analysis.load.RunMemory)."""

from __future__ import annotations

import plotly.graph_objects as go

from analysis.figures.layout import LAYOUT
from analysis.load import RunMemory
from analysis.memory import device_labels

GIB = 2**30
COLOURS = ("#4C78A8", "#F58518", "#54A24B", "#B279A2", "#E45756", "#72B7B2")


def memory_figure(memory: RunMemory) -> go.Figure:
    """Per device, allocated (solid) and reserved (dashed) GiB as steps over ms from the
    first allocator event. The device's memory is not drawn: at 141 GiB it would flatten a
    16 GiB curve; the page states the headroom instead."""
    fig = go.Figure()
    d, s = memory.devices, memory.series
    for i, (label, row) in enumerate(zip(device_labels(d), d.itertuples(), strict=True)):
        colour = COLOURS[i % len(COLOURS)]
        mine = s[
            (s["rank"] == row.rank)
            & (s["device_type"] == row.device_type)
            & (s["device_id"] == row.device_id)
        ]
        x = ((mine["ts_ns"] - memory.t0_ns) / 1e6).round(4)
        for what, dash in (("allocated", "solid"), ("reserved", "dash")):
            fig.add_scatter(
                x=x,
                y=(mine[f"{what}_bytes"] / GIB).round(4),
                mode="lines",
                line={"color": colour, "dash": dash, "shape": "hv"},
                name=f"{label} {what}",
                hovertemplate="%{x:.3f} ms<br>%{y:.3f} GiB " + what + "<extra></extra>",
            )
    fig.update_layout(
        xaxis={"title": "ms from the first allocator event", "automargin": True},
        yaxis={"title": "GiB", "rangemode": "tozero", "automargin": True},
        height=380,
        **LAYOUT,
    )
    return fig
