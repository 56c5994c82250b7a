"""Layout shared by the dashboard's plotly figures."""

from __future__ import annotations

from typing import Any

# The legend sits above the plot: a horizontal legend below it covers the x-axis title
# (the HBM bandwidth chart) or a short timeline's axis labels.
LAYOUT: dict[str, Any] = {
    "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
}
