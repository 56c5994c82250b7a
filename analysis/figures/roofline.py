"""The roofline: one point per op class, op, kernel class or kernel, roofs per precision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.figures.layout import LAYOUT
from analysis.roofline import Ceilings
from analysis.text import plot_text

PRECISION_COLOURS = {
    "fp8": "#B279A2", "bf16": "#4C78A8", "fp16": "#72B7B2", "tf32": "#F58518",
    "fp32": "#E45756", "fp64": "#9D755D", "int8": "#54A24B", "": "#BAB0AC",
}  # fmt: skip
_HOVER = (
    "<b>%{customdata[0]}</b> (%{customdata[1]})<br>%{x:.3g} FLOP/byte · %{y:.3g} TFLOP/s"
    "<br>%{customdata[2]:.3f} ms · %{customdata[3]:.1f} % of ceiling · %{customdata[4]}"
    "<extra></extra>"
)


def _roof_xy(peak: float, bw: float, x_lo: float, x_hi: float) -> tuple[list[float], list[float]]:
    """A roof as a polyline in (FLOP/byte, TFLOP/s): the bandwidth slope, then the peak."""
    ridge = peak / bw
    xs = [x_lo, min(max(ridge, x_lo), x_hi), x_hi]
    return xs, [min(peak, x * bw) / 1e12 for x in xs]


def roofline_figure(rows: pd.DataFrame, roof_sets: list[Ceilings], height: int = 520) -> go.Figure:
    """Log-log roofline: one point per `roofline_table` row with FLOPs, sized by time; for
    each roof set (datasheet solid, measured dashed) one roof per precision drawn."""
    pts = rows[(rows["flops"] > 0) & (rows["intensity"] > 0)]
    fig = go.Figure()
    precisions = [p for p in PRECISION_COLOURS if p in set(pts["precision"])] or ["fp32"]
    x_lo = min(0.01, float(pts["intensity"].min()) / 2) if len(pts) else 0.01
    x_hi = max(1e4, float(pts["intensity"].max()) * 2) if len(pts) else 1e4
    for roofs in roof_sets:
        dash = "solid" if roofs.label == "datasheet" else "dash"
        for p in precisions:
            peak = roofs.peak(p)
            if peak is None:
                continue
            xs, ys = _roof_xy(peak, roofs.bandwidth_bytes_per_s, x_lo, x_hi)
            fig.add_scatter(
                x=xs, y=ys, mode="lines", name=f"{p} {roofs.label}",
                line={"color": PRECISION_COLOURS.get(p, "#888"), "dash": dash, "width": 1.5},
                hovertemplate=f"{p} {roofs.label}: %{{y:.4g}} TFLOP/s<extra></extra>",
            )  # fmt: skip
    if len(pts):
        size = 8 + 40 * np.sqrt(pts["time_ms"] / pts["time_ms"].max())
        for prec, g in pts.groupby("precision", sort=False):
            names = g["name"].astype(str).str.slice(0, 90).map(plot_text)
            fig.add_scatter(
                x=g["intensity"], y=g["achieved_tflops"], mode="markers", name=f"{prec} ops",
                marker={"size": size[g.index], "color": PRECISION_COLOURS.get(str(prec), "#888"),
                        "line": {"width": 1, "color": "#333"}, "opacity": 0.8},
                customdata=np.stack([names, g["precision"], g["time_ms"],
                                     g["pct_of_ceiling"].fillna(np.nan), g["bound"].fillna("—")],
                                    axis=-1),
                hovertemplate=_HOVER,
            )  # fmt: skip
    fig.update_layout(
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)"},
        yaxis={"type": "log", "title": "achieved TFLOP/s"},
        height=height, **LAYOUT,
    )  # fmt: skip
    return fig
