"""A run's report read from the store: its facts once, then the document and the charts."""

from __future__ import annotations

from typing import Any

from analysis.facts import Facts, gather
from analysis.load import Store, load_lanes, load_timeline_window
from analysis.report.charts import REPORT_TIMELINE_SHAPES, report_charts
from analysis.report.document import report_json
from analysis.report.sections import Chart


def load_report(
    store: Store, run_id: str, facts: Facts | None = None
) -> tuple[dict[str, Any], dict[str, Chart]]:
    """(the JSON document, the charts) of one run; `facts`: the run's, when already gathered
    (the dashboard's pages share them)."""
    facts = facts if facts is not None else gather(store, run_id)
    lanes = load_lanes(store, run_id)
    window = None
    if not lanes.empty:
        first, last = int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
        window = load_timeline_window(store, run_id, lanes, first, last, REPORT_TIMELINE_SHAPES)
    return report_json(facts), report_charts(facts, window)
