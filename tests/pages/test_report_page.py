"""The Report page under AppTest: its preview and a download for every format, on the H200
training run and on a CPU-only run (the stores are tests/conftest.py's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.pages import chart_specs, dashboard_store, open_page, shown
from helpers.report import NO_GPU_TEXT

from analysis.report.charts import CHART_SECTIONS
from analysis.report.sections import TITLES


def test_report_page_previews_and_offers_every_format(
    naive: tuple[Path, str], naive_doc: dict[str, Any]
) -> None:
    d, run_id = naive
    with dashboard_store(d):
        at = open_page("pages/report.py", run_id)
    assert not at.error
    buttons = at.get("download_button")
    assert [b.proto.label.split(" ")[0] for b in buttons] == ["HTML", "Markdown", "JSON", "PDF"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Kernels"] == f"{naive_doc['metrics']['overall']['kernel_count']:,}"
    assert len(at.expander) == len(naive_doc["recommendations"])
    assert [c.value for c in at.code] == [r["fix"] for r in naive_doc["recommendations"]]
    captions = [shown(c.value) for c in at.caption]
    for rec in naive_doc["recommendations"]:
        assert rec["saving_basis"] in captions
    assert [t.label for t in at.tabs] == [TITLES[k] for k in CHART_SECTIONS]
    # Only the open tab's chart is sent; picking another tab draws that one instead.
    assert [len(chart_specs(t)) for t in at.tabs] == [1, 0, 0, 0]
    assert len(at.tabs[0].get("bidi_component")) == 1  # scatter: the basic bundle draws it
    at.session_state["report_chart"] = TITLES[CHART_SECTIONS[-1]]
    at.run()
    assert not at.exception, at.exception
    assert [len(chart_specs(t)) for t in at.tabs] == [0, 0, 0, 1]
    # The timeline snapshot's heatmap or scattergl is not in the basic bundle.
    (timeline,) = at.tabs[-1].get("plotly_chart")
    assert {t["type"] for t in json.loads(timeline.proto.spec)["data"]} & {"heatmap", "scattergl"}


def test_report_page_on_a_cpu_only_run(cpu: tuple[Path, str]) -> None:
    d, run_id = cpu
    with dashboard_store(d):
        at = open_page("pages/report.py", run_id)
    assert not at.error
    assert len(at.get("download_button")) == 4
    assert not chart_specs(at)
    assert sum(NO_GPU_TEXT in shown(i.value) for i in at.info) == 1  # the open tab's only
