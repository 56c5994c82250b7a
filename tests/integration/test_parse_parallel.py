"""The sliced parse (and its helper process, used for big traces) gives exactly the tables of
the whole-document parse, and falls back to it where the cuts cannot be trusted."""

from __future__ import annotations

import gzip
import itertools
import json
import mmap
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.paths import SAMPLES

from collectors.parse import document, entry, helper
from collectors.parse.rank_trace import RankTrace
from data.errors import TraceFormatError

SAMPLE = SAMPLES / "decode_b1_eager.pt.trace.json.gz"


def _assert_same(a: RankTrace, b: RankTrace) -> None:
    assert a.tables.keys() == b.tables.keys()
    for name, table in a.tables.items():
        assert b.tables[name].equals(table), name
    assert a.category_counts == b.category_counts
    assert a.events_total == b.events_total
    assert a.events_skipped == b.events_skipped
    assert a.metadata == b.metadata


def _whole(path: Path) -> RankTrace:
    return entry._parse_whole(path, document.read_bytes(path), False, None)


def test_helper_process_gives_identical_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # Slices small enough to cut this 25 k-event trace into about 30.
    monkeypatch.setattr(document, "CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(helper, "PARALLEL_MIN_BYTES", 1 << 40)
    single = entry.parse_trace(SAMPLE)
    monkeypatch.setattr(helper, "PARALLEL_MIN_BYTES", 0)  # force the helper process
    parent, slices = os.getpid(), entry.slices
    by_parent = []

    def slower_parent(*args: Any) -> Any:
        for index, chunk in slices(*args):
            if os.getpid() == parent:  # leave the helper time to take slices too
                by_parent.append(index)
                time.sleep(0.02)
            yield index, chunk

    monkeypatch.setattr(entry, "slices", slower_parent)  # the parent's; the helper keeps its own
    split = entry.parse_trace(SAMPLE)
    cuts = document.slicing(SAMPLE, document.read_bytes(SAMPLE))[1]  # type: ignore[index]
    assert 0 < len(by_parent) < len(cuts) - 1
    _assert_same(single, split)
    assert split.malformed == single.malformed == 0


def test_slices_equal_the_whole_document_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(entry, "CHUNK_EVENTS", 1 << 30)  # one chunk: row order as in the file
    sliced = entry.parse_trace(SAMPLE)
    monkeypatch.setattr(document, "CHUNK_BYTES", 1 << 40)
    assert len(document.slicing(SAMPLE, document.read_bytes(SAMPLE))[1]) == 2  # type: ignore[index]
    _assert_same(entry.parse_trace(SAMPLE), _whole(SAMPLE))
    assert sliced.events_total == _whole(SAMPLE).events_total


def _event(i: int, name: str) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
            "ts": 1000.5 + i, "dur": 0.25, "args": {"External id": i}}  # fmt: skip


def test_a_cut_inside_a_string_falls_back_to_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [_event(i, "odd}, {name" if i == 7 else f"op{i}") for i in range(20)]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    monkeypatch.setattr(
        document, "CHUNK_BYTES", 1
    )  # a cut at every '}, {', the one in the name too
    whole = entry._parse_whole
    used = []
    monkeypatch.setattr(entry, "_parse_whole", lambda *a: used.append(1) or whole(*a))
    trace = entry.parse_trace(path)
    assert used == [1]
    assert trace.tables["cpu_ops"]["name"].to_pylist() == [e["name"] for e in events]
    assert trace.events_total == 20
    assert trace.malformed == 0
    _assert_same(trace, _whole(path))


def test_keys_after_the_events_with_lists_of_their_own(tmp_path: Path) -> None:
    doc = {"schemaVersion": 1, "traceEvents": [_event(i, f"op{i}") for i in range(5)],
           "logs": ["a]", ["b]"]], "traceName": "t]", "baseTimeNanoseconds": 7}  # fmt: skip
    path = tmp_path / "tail.json"
    path.write_text(json.dumps(doc))
    buf = document.read_bytes(path)
    (meta, notes), cuts = document.slicing(path, buf)  # type: ignore[misc]
    assert bytes(buf[cuts[-1] : cuts[-1] + 9]) == b'], "logs"'
    assert meta == {"schemaVersion": 1, "traceName": "t]", "baseTimeNanoseconds": 7}
    assert notes == []
    _assert_same(entry.parse_trace(path), _whole(path))


def test_helper_stops_when_the_file_is_not_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [' + '{"ph": "X"},' * 1000 + "{}]}" + "garbage")
    monkeypatch.setattr(helper, "PARALLEL_MIN_BYTES", 0)
    with pytest.raises(TraceFormatError, match=r"bad\.json: not valid JSON"):
        entry.parse_trace(bad)


def _resident_kb(where: Path | int) -> int:
    """Resident kB of this process's maps of file `where`, or of the map holding the address
    `where` (/proc/self/smaps)."""
    total, ours = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):  # a mapping's header line
            lo, hi = (int(x, 16) for x in first.split("-"))
            ours = (
                lo <= where < hi if isinstance(where, int) else line.rstrip().endswith(str(where))
            )
        elif ours and first == "Rss:":
            total += int(line.split()[1])
    return total


def test_a_plain_file_leaves_no_pages_mapped_once_its_slices_are_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An 8.6 MB plain trace in 1 MB slices: each copied slice is unmapped (the page cache keeps
    # it), so the parse and its helper do not both count the file (issue 15's 1 GB floor).
    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
    monkeypatch.setattr(document, "CHUNK_BYTES", 1 << 20)
    buf = document.read_bytes(plain)
    cuts = document.slicing(plain, buf)[1]  # type: ignore[index]
    assert len(cuts) > 4
    # Finding the cuts mapped part of the file already (the kernel maps up to 2 MB around
    # each read); every slice read maps the rest.
    assert _resident_kb(plain) > 1000
    take = itertools.count().__next__
    copied = [len(chunk) for _, chunk in document.slices(buf, cuts, take, None)]
    assert sum(copied) > 5_000_000
    # What is left: the pages that two slices share, one per cut.
    assert _resident_kb(plain) <= 4 * len(cuts)
    assert isinstance(buf, mmap.mmap)
    buf.close()


def test_a_gzip_trace_is_mapped_and_let_go_like_a_plain_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A .json.gz is expanded into a nameless temporary file and mapped: the bytes are the
    decompressed trace, and once its slices are copied out the process holds only the pages
    two slices share, as for a plain file (in a private buffer it kept all of them, and so
    did a forked helper: D74)."""
    monkeypatch.setattr(document, "CHUNK_BYTES", 1 << 20)
    buf = document.read_bytes(SAMPLE)
    assert isinstance(buf, mmap.mmap)
    assert buf[:] == gzip.decompress(SAMPLE.read_bytes())  # reads, so maps, every page
    address = int(np.frombuffer(buf, dtype=np.uint8).ctypes.data)
    assert _resident_kb(address) >= 0.9 * len(buf) / 1024
    cuts = document.slicing(SAMPLE, buf)[1]  # type: ignore[index]
    assert len(cuts) > 4
    take = itertools.count().__next__
    copied = [len(chunk) for _, chunk in document.slices(buf, cuts, take, None)]
    assert sum(copied) > 5_000_000
    assert _resident_kb(address) <= 4 * len(cuts)
    buf.close()
