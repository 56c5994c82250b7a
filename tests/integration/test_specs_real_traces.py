"""The device spec table against real H200s: a fixture trace's deviceProperties and the card
the project calibrated (the table itself: tests/unit/test_specs.py)."""

from __future__ import annotations

import json

from helpers.paths import FIXTURES, REPO
from helpers.raw_trace import load_trace_json

from analysis.specs import match_spec


def test_h200_traces_and_the_measured_card_agree_with_the_spec() -> None:
    """deviceProperties of a real trace and the calibrated card's properties."""
    props = load_trace_json(FIXTURES / "h200/microops.pt.trace.json.gz")["deviceProperties"][0]
    spec = match_spec(props["name"])
    assert spec is not None
    assert spec.sm_count == props["numSms"]
    card = json.loads((REPO / "data/samples/ceilings_h200.json").read_text())["device"]
    assert match_spec(card["name"]) is spec
    assert spec.l2_mb is not None
    assert spec.l2_mb * 2**20 == card["l2_bytes"]
    assert spec.sm_count == card["sm_count"]
