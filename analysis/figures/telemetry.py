"""Plotly figures of GPU telemetry, shared by the Live page and the run (bandwidth) views.

Input frames are gpu_samples rows, raw or bucketed (data.reads_telemetry), with Unix-ns
`ts_ns`. One figure, one row per panel, one line per GPU. SVG lines, not WebGL: the pages
bucket each line to at most 600 points, which SVG draws in a fraction of WebGL's start-up in a
browser without a GPU (the Live page reached from another page: 3.4 -> 0.5 s in headless
Chromium, docs/decisions.md D69), and a page that redraws every second keeps no GL context.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from analysis.telemetry import THROTTLE_BITS, gpu_label
from analysis.text import plot_text


@dataclass(frozen=True, slots=True)
class Panel:
    """One chart row: what to draw, its axis title and the factor from column to axis unit."""

    columns: tuple[str, ...]  # summed when several (PCIe rx + tx)
    title: str
    scale: float = 1.0


PANELS: dict[str, Panel] = {
    "sm": Panel(("gpm_sm_util_pct",), "SM activity %"),
    "util": Panel(("util_gpu_pct",), "utilization.gpu %"),
    "hbm": Panel(("gpm_dram_bw_util_pct",), "HBM bandwidth % of peak"),
    "occupancy": Panel(("gpm_sm_occupancy_pct",), "SM occupancy %"),
    "tensor": Panel(("gpm_tensor_util_pct",), "tensor-core activity %"),
    "power": Panel(("power_mw",), "power W", 1e-3),
    "clock": Panel(("sm_clock_mhz",), "SM clock MHz"),
    "temp": Panel(("temp_gpu_c",), "GPU temperature °C"),
    "pcie": Panel(("gpm_pcie_rx_mib_s", "gpm_pcie_tx_mib_s"), "PCIe rx+tx MiB/s"),
    "nvlink": Panel(("gpm_nvlink_rx_mib_s", "gpm_nvlink_tx_mib_s"), "NVLink rx+tx MiB/s"),
    "memory": Panel(("mem_used_bytes",), "memory used GiB", 1 / 2**30),
}
LIVE_PANELS = ("sm", "util", "hbm", "tensor", "power", "clock", "temp", "pcie", "memory")
RUN_PANELS = ("hbm", "sm", "tensor", "power")


def _values(frame: pd.DataFrame, panel: Panel) -> pd.Series:
    cols = [c if c in frame else c.replace("mem_used_bytes", "mem_used_max_bytes")
            for c in panel.columns]  # fmt: skip
    data = frame[cols].astype("float64")
    # A sum of NULLs stays NULL (unsupported), it does not become 0.
    return data.sum(axis=1, min_count=1) * panel.scale


def gpu_panels(
    frame: pd.DataFrame,
    panels: tuple[str, ...] = LIVE_PANELS,
    power_limits_w: dict[tuple[str, int], float] | None = None,
    height_per_panel: int = 150,
) -> go.Figure:
    """Stacked time-series panels (keys of PANELS), one line per (host, gpu); SM-clock points
    where a throttle reason was set are marked; dashed lines show power limits.

    One x axis and one y axis per panel, laid out by hand: make_subplots alone costs 0.5 s.
    """
    # Epoch milliseconds on a date axis (UTC): numbers serialize as one typed array, where
    # datetime objects go through Python one by one.
    time = (frame["ts_ns"].to_numpy(dtype="int64") // 1_000_000).astype("float64")
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]  # fmt: skip
    values = {key: _values(frame, PANELS[key]).to_numpy() for key in panels}
    throttled = (frame["clocks_event_reasons"].fillna(0).astype("int64") & THROTTLE_BITS) > 0
    throttled_at = throttled.to_numpy()
    traces: list[go.Scatter] = []
    shapes: list[dict[str, object]] = []
    groups = frame.groupby(["host", "gpu"], sort=True).indices
    for n, (group, at) in enumerate(sorted(groups.items())):
        host, gpu = str(group[0]), int(group[1])  # type: ignore[index]
        name, color = plot_text(gpu_label(host, gpu)), palette[n % len(palette)]
        for i, key in enumerate(panels, start=1):
            panel, yaxis = PANELS[key], f"y{i}"
            traces.append(
                go.Scatter(
                    x=time[at], y=values[key][at], yaxis=yaxis, mode="lines",
                    name=name, legendgroup=name, showlegend=i == 1,
                    line={"color": color, "width": 1.5},
                    hovertemplate=f"{name}<br>%{{x}}<br>{panel.title}: %{{y:.1f}}<extra></extra>",
                )
            )  # fmt: skip
            if key == "clock":
                hit = at[throttled_at[at]]
                traces.append(
                    go.Scatter(
                        x=time[hit], y=values[key][hit], yaxis=yaxis, mode="markers",
                        name=f"{name} throttled", legendgroup=name, showlegend=False,
                        marker={"color": "#d62728", "size": 5, "symbol": "x"},
                        hovertemplate=f"{name} throttled<extra></extra>",
                    )
                )  # fmt: skip
            if key == "power" and power_limits_w and (host, gpu) in power_limits_w:
                limit = power_limits_w[(host, gpu)]
                shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": yaxis,
                               "y0": limit, "y1": limit,
                               "line": {"dash": "dash", "color": color}})  # fmt: skip
    gap, count = 0.02, len(panels)
    step = (1 - gap * (count - 1)) / count
    axes = {
        f"yaxis{i + 1}": {
            "domain": [1 - (i + 1) * step - i * gap, 1 - i * (step + gap)],
            "title": {"text": PANELS[key].title, "font": {"size": 11}},
            "anchor": "x",
        }
        for i, key in enumerate(panels)
    }
    return go.Figure(
        data=traces,
        layout={
            **axes,
            "xaxis": {"type": "date", "anchor": f"y{count}"},
            "shapes": shapes,
            "height": height_per_panel * count + 60,
            "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
            "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom"},
            "hovermode": "x",
        },
    )
