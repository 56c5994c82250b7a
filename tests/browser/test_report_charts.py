"""The HTML report's charts in Chromium: every tick label, axis title and legend entry is read
back from the drawn SVG and must lie inside its chart, apart from every other one, at a wide
and a narrow window; the axes say what the report's figures say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

# The Report page exports from inside Streamlit, whose import makes its own plotly template
# the default: the charts must read back right either way.
import streamlit  # noqa: F401
from helpers.paths import fixture
from helpers.report_files import report_file

pytestmark = pytest.mark.browser
TRACES = {
    "h200-naive": fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz"),
    "h200-cudagraph": fixture("h200/decode_b1_cudagraph.pt.trace.json.gz"),
    "h100-bert": fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
}
# Each drawn label of each chart: its chart, kind (class of its group), text and box, and
# the box of the chart's SVG.
LABELS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
  const svg = plot.querySelector('svg.main-svg').getBoundingClientRect();
  return [...plot.querySelectorAll(
      '.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .legendtext')]
    .filter(t => t.textContent && t.getBoundingClientRect().width > 0)
    .map(t => {
      const r = t.getBoundingClientRect();
      return {chart: plot.id, kind: t.closest('g[class]').getAttribute('class'),
              text: t.textContent, box: [r.left, r.top, r.right, r.bottom],
              svg: [svg.left, svg.top, svg.right, svg.bottom]};
    });
})"""


def labels(browser: Any, html: Path, width: int) -> list[dict[str, Any]]:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(html.as_uri())
    page.locator(".js-plotly-plot .xtick").first.wait_for(state="attached", timeout=60_000)
    page.wait_for_timeout(500)
    out: list[dict[str, Any]] = page.evaluate(LABELS_JS)
    page.close()
    return out


def overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.parametrize("width", [1400, 700])
@pytest.mark.parametrize("trace", list(TRACES.values()), ids=list(TRACES))
def test_every_label_is_inside_its_chart_and_apart(browser: Any, trace: Path, width: int) -> None:
    drawn = labels(browser, report_file(trace, "html"), width)
    charts = {d["chart"] for d in drawn}
    assert {"chart-roofline", "chart-bandwidth", "chart-breakdown", "chart-timeline"} <= charts
    for d in drawn:
        box, svg = d["box"], d["svg"]
        assert svg[0] - 0.5 <= box[0], d  # left
        assert box[2] <= svg[2] + 0.5, d  # right
        assert svg[1] - 0.5 <= box[1], d  # top
        assert box[3] <= svg[3] + 0.5, d  # bottom
    for chart in charts:
        mine = [d for d in drawn if d["chart"] == chart]
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                assert not overlap(a["box"], b["box"]), (chart, a["text"], b["text"])


def test_the_axes_read_back_as_the_figures_say(browser: Any) -> None:
    drawn = labels(browser, report_file(TRACES["h200-naive"], "html"), 1400)

    def texts(chart: str, kind: str) -> list[str]:
        return [d["text"] for d in drawn if d["chart"] == chart and d["kind"] == kind]

    assert texts("chart-roofline", "g-xtitle") == ["arithmetic intensity (FLOP/byte)"]
    assert texts("chart-roofline", "g-ytitle") == ["achieved TFLOP/s"]
    # one label per decade, as powers of ten ("10" and a superscript exponent)
    for kind in ("xtick", "ytick"):
        ticks = texts("chart-roofline", kind)
        assert len(ticks) >= 3
        assert all(t == "1" or t.startswith("10") for t in ticks), ticks
    assert texts("chart-bandwidth", "g-xtitle") == ["seconds from the run's first GPU event"]
    assert texts("chart-breakdown", "g-ytitle") == ["ms"]
