"""The two-process parse (used for big traces) gives exactly the tables of the one-process parse."""

from __future__ import annotations

from pathlib import Path

import pytest

import collectors.trace_parse as tp

SAMPLE = (
    Path(__file__).resolve().parent.parent / "data" / "samples" / "decode_b1_eager.pt.trace.json.gz"
)


def test_helper_process_gives_identical_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks small enough to split this 25 k-event trace (row order follows the chunks).
    monkeypatch.setattr(tp, "CHUNK_EVENTS", 4096)
    monkeypatch.setattr(tp, "PARALLEL_MIN_BYTES", 1 << 40)
    single = tp.parse_trace(SAMPLE)
    monkeypatch.setattr(tp, "PARALLEL_MIN_BYTES", 0)  # force the helper process
    split = tp.parse_trace(SAMPLE)
    assert tp._split(split.events_total) < split.events_total  # the helper really had work
    assert split.tables.keys() == single.tables.keys()
    for name, table in single.tables.items():
        assert split.tables[name].equals(table), name
    assert split.category_counts == single.category_counts
    assert split.events_skipped == single.events_skipped
    assert split.malformed == single.malformed == 0


def test_helper_stops_when_the_file_is_not_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [' + '{"ph": "X"},' * 1000 + "{}]}" + "garbage")
    monkeypatch.setattr(tp, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(tp.TraceFormatError, match=r"bad\.json: not valid JSON"):
        tp.parse_trace(bad)
