"""The hostile corpus (tests/helpers/hostile.py) through the ingest command line: each case
refused with one line that names the file, exit status 2 and the store untouched, or ingested
with exactly its malformed events counted; and never more than 1.5 GB of memory.

The store already holds a real run, so "untouched" is checked against real content: every
table's rows (checksums) and every file under the lake.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import run_measured, store_snapshot
from helpers.hostile import CASES, Ingested, Refused
from helpers.paths import SAMPLES

from collectors.ingest import ingest
from data.store import Store

MAX_PEAK_BYTES = 1.5e9


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile_store")
    ingest([SAMPLES / "gpt_train_bf16.pt.trace.json.gz"], data_dir=d)
    return d


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_input(case: str, store_dir: Path, tmp_path: Path) -> None:
    spec = CASES[case]
    paths = spec.make(tmp_path)
    before = store_snapshot(store_dir)
    got = run_measured("collectors.ingest", *paths, "--data", store_dir, env=spec.env)
    assert got.peak_rss_bytes < MAX_PEAK_BYTES, f"{got.peak_rss_bytes / 1e9:.2f} GB"
    if isinstance(spec.expect, Refused):
        assert got.status == 2, got.stderr
        assert got.stdout == ""
        lines = got.stderr.splitlines()
        assert len(lines) == 1, got.stderr
        assert lines[0].startswith("error: "), lines[0]
        assert str(paths[0]) in lines[0], lines[0]
        assert re.search(spec.expect.reason, lines[0]), lines[0]
        assert store_snapshot(store_dir) == before
        return
    assert isinstance(spec.expect, Ingested)
    assert got.status == 0, got.stderr
    run_id = got.stdout.splitlines()[-1]
    store = Store(store_dir)
    try:
        run = store.run_summary(run_id)
        (rank,) = store.rows("SELECT malformed_examples FROM ranks WHERE run_id = ?", [run_id])
    finally:
        store.close()
    assert (run["events_malformed"], run["kernel_count"]) == (
        spec.expect.malformed,
        spec.expect.kernels,
    )
    # every malformed event is shown with an example (up to five)
    examples = json.loads(rank["malformed_examples"])
    assert len(examples) == min(spec.expect.malformed, 5), examples


def test_invalid_utf8_is_replaced_not_lost(tmp_path: Path) -> None:
    (path,) = CASES["utf8_kernel_name"].make(tmp_path)
    run_id = ingest([path], data_dir=tmp_path / "store")
    store = Store(tmp_path / "store")
    try:
        names = [
            r["name"]
            for r in store.rows(
                "SELECT name FROM gpu_events WHERE run_id = ? AND kind = 'kernel'", [run_id]
            )
        ]
    finally:
        store.close()
    assert len(names) == CASES["utf8_kernel_name"].expect.kernels  # type: ignore[union-attr]
    assert [n for n in names if "\ufffd" in n] == [
        next(n for n in names if n.startswith("\ufffdbad\ufffd"))
    ]


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_every_report_of_a_run_with_an_out_of_range_duration(
    fmt: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A dur of 2**70 was stored as INT64_MIN, and every report then failed."""
    d = tmp_path_factory.mktemp(f"report_{fmt}")
    (path,) = CASES["dur_2**70"].make(d)
    run_id = ingest([path], data_dir=d / "store")
    got = run_measured(
        "analysis.report", run_id, "--format", fmt, "-o", d / f"r.{fmt}", "--data", d / "store"
    )
    assert got.status == 0, got.stderr
    assert (d / f"r.{fmt}").stat().st_size > 1000
