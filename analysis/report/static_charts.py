"""Static images of the project's plotly figures, drawn with matplotlib (Agg).

For the PDF report: plotly's own image export (kaleido) needs a Chrome, which a report command
must not. This is a small generic adapter, not a second set of charts: it reads the traces and
layout of a plotly figure (scatter/scattergl lines and markers, stacked bars, heatmaps; axis
titles, log axes, ranges, tick labels, reversed axes) and draws the same data. It covers what
analysis/figures_*.py build, one x and one y axis per figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from PIL.Image import Image, fromarray

DPI = 150
PX_PER_INCH = 100  # plotly heights are px; a 1000 px wide chart becomes 10 inches
PT_PER_PX = 0.75
DASHES = {"solid": "-", "dash": "--", "dot": ":", "dashdot": "-."}
COLORSCALES = {"Viridis": "viridis"}


def _array(v: Any) -> np.ndarray | None:
    return None if v is None else np.asarray(v)


def _scatter(ax: Axes, t: Any, label: str | None) -> None:
    x, y = _array(t.x), _array(t.y)
    if x is None or y is None or not len(x):
        return
    mode = t.mode or "lines"
    if "lines" in mode:
        ax.plot(
            x,
            y,
            color=t.line.color,
            linestyle=DASHES.get(t.line.dash or "solid", "-"),
            linewidth=(t.line.width or 2) * PT_PER_PX,
            drawstyle="steps-post" if t.line.shape == "hv" else "default",
            label=label,
            solid_capstyle="butt",
        )
        label = None  # one legend entry per trace
    if "markers" in mode:
        size = _array(t.marker.size)
        ax.scatter(
            x,
            y,
            s=((8 if size is None else size.astype(float)) * PT_PER_PX) ** 2,
            color=t.marker.color,
            alpha=t.marker.opacity,
            edgecolors=t.marker.line.color if t.marker.line else None,
            linewidths=(t.marker.line.width or 0) * PT_PER_PX if t.marker.line else 0,
            label=label,
            zorder=3,
        )


def _bars(ax: Axes, bars: list[Any], stacked: bool) -> None:
    cats: list[str] = []
    for t in bars:
        cats += [str(c) for c in t.x if str(c) not in cats]
    pos = {c: i for i, c in enumerate(cats)}
    bottom = np.zeros(len(cats))
    width = 0.8 if stacked else 0.8 / len(bars)
    for n, t in enumerate(bars):
        idx = np.array([pos[str(c)] for c in t.x], dtype=int)
        y = np.nan_to_num(np.asarray(t.y, dtype=float))
        offset = 0.0 if stacked else (n - (len(bars) - 1) / 2) * width
        ax.bar(
            idx + offset,
            y,
            width=width,
            bottom=bottom[idx] if stacked else None,
            color=t.marker.color,
            label=t.name,
        )
        if stacked:
            bottom[idx] += y
    step = max(1, len(cats) // 30)  # at most ~30 tick labels
    ax.set_xticks(range(0, len(cats), step), cats[::step], rotation=45, ha="right", fontsize=7)


def _heatmap(fig: Figure, ax: Axes, t: Any) -> None:
    z = np.asarray(t.z, dtype=float)
    x = np.asarray(t.x, dtype=float) if t.x is not None else np.arange(z.shape[1])
    dx = float(x[1] - x[0]) if len(x) > 1 else 1.0
    image = ax.imshow(
        z,
        aspect="auto",
        interpolation="nearest",
        cmap=COLORSCALES.get(str(t.colorscale) if isinstance(t.colorscale, str) else "", "viridis"),
        vmin=t.zmin,
        vmax=t.zmax,
        extent=(x[0] - dx / 2, x[-1] + dx / 2, len(z) - 0.5, -0.5),
    )
    if t.y is not None:
        ax.set_yticks(range(len(t.y)), [str(v) for v in t.y], fontsize=7)
    bar = fig.colorbar(image, ax=ax, fraction=0.03)
    if t.colorbar and t.colorbar.title and t.colorbar.title.text:
        bar.set_label(t.colorbar.title.text)


def _axes(ax: Axes, layout: Any, image: bool) -> None:
    for axis, set_scale, set_label, set_lim in (
        (layout.xaxis, ax.set_xscale, ax.set_xlabel, ax.set_xlim),
        (layout.yaxis, ax.set_yscale, ax.set_ylabel, ax.set_ylim),
    ):
        if axis.type == "log":
            set_scale("log")
        if axis.title and axis.title.text:
            set_label(axis.title.text, fontsize=8)
        if axis.range is not None and axis.type != "category":
            lo, hi = (float(v) for v in axis.range)
            set_lim((10**lo, 10**hi) if axis.type == "log" else (lo, hi))
    y = layout.yaxis
    if y.tickvals is not None and y.ticktext is not None:
        ax.set_yticks(list(y.tickvals), [str(v) for v in y.ticktext], fontsize=7)
    if y.autorange == "reversed" and not image:  # imshow's extent already runs top down
        ax.invert_yaxis()
    ax.minorticks_off()  # on log axes over many decades they cost most of the drawing
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def figure_image(fig: go.Figure, width_px: int = 1000, height_px: int | None = None) -> Image:
    """The figure as an RGB image (DPI dots per inch, width_px / 100 inches wide).

    An image, not PNG bytes: the PDF writer takes pixels as they are, where a PNG would be
    encoded here and decoded there (twice the time of drawing, measured on the report's
    four charts).
    """
    layout = fig.layout
    height = height_px or layout.height or 400
    out = Figure(
        figsize=(width_px / PX_PER_INCH, height / PX_PER_INCH), dpi=DPI, layout="constrained"
    )
    ax = out.add_subplot()
    bars = [t for t in fig.data if t.type == "bar"]
    image = False
    for t in fig.data:
        label = t.name if t.name and t.showlegend is not False else None
        if t.type in ("scatter", "scattergl"):
            _scatter(ax, t, label)
        elif t.type == "heatmap":
            _heatmap(out, ax, t)
            image = True
    if bars:
        _bars(ax, bars, stacked=layout.barmode in ("stack", "relative"))
    _axes(ax, layout, image)
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) > 1:
        legend = out.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=7)
        for h in legend.legend_handles:  # marker sizes stand for time: one size in the key
            if isinstance(h, PathCollection):
                h.set_sizes([30.0])
    canvas = FigureCanvasAgg(out)
    canvas.draw()  # type: ignore[no-untyped-call]
    return fromarray(np.asarray(canvas.buffer_rgba())[:, :, :3])  # type: ignore[no-untyped-call]
