"""Estimated HBM utilization over a run, beside NVML GPM's DRAM_BW_UTIL samples."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.figures.layout import LAYOUT


def bandwidth_figure(series: pd.DataFrame, gpm: pd.DataFrame | None = None) -> go.Figure:
    """Estimated HBM utilization % over time (analysis.bandwidth.bandwidth_series, with a
    `t_s` column of seconds), beside NVML GPM DRAM_BW_UTIL samples (columns t_s, gpu,
    gpm_dram_bw_util_pct) when given."""
    fig = go.Figure()
    for rank, g in series.groupby("rank"):
        fig.add_scatter(
            x=g["t_s"], y=g["util_pct"], mode="lines", name=f"trace estimate, rank {rank}",
            line={"shape": "hv"},
            hovertemplate="%{x:.4f} s<br>%{y:.1f} % of peak<extra></extra>",
        )  # fmt: skip
    if gpm is not None and not gpm.empty:
        for gpu, g in gpm.groupby("gpu"):
            fig.add_scatter(
                x=g["t_s"], y=g["gpm_dram_bw_util_pct"], mode="lines+markers",
                name=f"measured (NVML GPM DRAM_BW_UTIL), GPU {gpu}", line={"dash": "dot"},
                hovertemplate="%{x:.3f} s<br>%{y:.1f} %<extra></extra>",
            )  # fmt: skip
    fig.update_layout(
        xaxis_title="seconds from the run's first GPU event", yaxis_title="% of HBM bandwidth",
        height=340, **LAYOUT,
    )  # fmt: skip
    return fig
