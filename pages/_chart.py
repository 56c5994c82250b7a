"""Plotly figures on the pages, drawn by plotly.js's basic bundle instead of Streamlit's.

st.plotly_chart loads a 4.7 MB chunk (all of plotly.js) whose evaluation alone took 0.63 s of
a page opened by its URL on this 2-core VM (D73). The basic bundle (static/, plotly.js 4.1.1,
MIT, the release the plotly package here writes for) holds scatter, bar and pie: every chart
on the pages but the report's timeline snapshot. A components-v2 element (no iframe) loads it
once per browser tab and draws the figure's JSON (D76). Figures with other trace types still
go through st.plotly_chart.
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import streamlit as st
from plotly.io.json import to_json_plotly

BASIC_TRACES = frozenset({"scatter", "bar", "pie"})  # what static/plotly-basic.min.js draws

_CHART = st.components.v2.component(
    "dash_chart",
    html='<div class="dash-chart" style="width: 100%"></div>',
    js=(Path(__file__).with_name("_chart.js")).read_text(),
    isolate_styles=False,  # Plotly puts its modebar and hover styles in the document's head
)


def show_chart(fig: go.Figure, *, key: str | None = None) -> None:
    """Draw `fig` across the page's width."""
    if {trace.type for trace in fig.data} <= BASIC_TRACES:
        _CHART(data=_without_template(fig), key=key)
    else:
        st.plotly_chart(fig, width="stretch", key=key)


def _without_template(fig: go.Figure) -> str:
    """The figure's JSON less its template: _chart.js lays the viewer's theme in its place,
    so plotly's default template (6.5 KB) would travel with every draw only to be dropped,
    every second on the Live page."""
    spec = fig.to_dict()
    spec["layout"].pop("template", None)
    return str(to_json_plotly(spec))
