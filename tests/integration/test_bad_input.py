"""Bad input: a clear one-line TraceFormatError naming the file, and a store left exactly as it was.

"Exactly as it was" is checked two ways: Store.checksums() (row count + hash of every row, per
table) and the set of every file and folder under the lake, so a failed ingest may not leave
a staging folder, a claim file or a stray segment behind.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.cli import lake_files
from helpers.paths import REPO, SAMPLES

from collectors.ingest import ingest
from data.errors import DuplicateTraceError, TraceFormatError
from data.store import Store

SMALL = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"  # a real H200 trace, 270 kB
OTHER = SAMPLES / "gpt_train_fp32_naive.pt.trace.json.gz"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one real run, so 'unchanged' is checked against real content."""
    d = tmp_path_factory.mktemp("bad_input_store")
    ingest([OTHER], data_dir=d)
    return d


@pytest.fixture(scope="module")
def reader(store_dir: Path) -> Iterator[Store]:
    """One open store over store_dir: its views read the lake at query time."""
    store = Store(store_dir)
    yield store
    store.close()


def snapshot(d: Path, store: Store | None = None) -> tuple[dict[str, tuple[int, int]], set[str]]:
    """(checksums of every table, every path under the lake) of the store in `d`."""
    if store is not None:
        return store.checksums(), lake_files(d)
    store = Store(d)
    try:
        return store.checksums(), lake_files(d)
    finally:
        store.close()


def assert_one_line(msg: str, path: Path, reason: str) -> None:
    assert "\n" not in msg, msg
    assert str(path) in msg, msg
    assert re.search(reason, msg, re.IGNORECASE), f"{msg!r} gives no reason like {reason!r}"


# ----------------------------------------------------------------------- the bad inputs


def _text(p: Path) -> Path:
    p = p / "notes.json"
    p.write_text("this is a plain text file, not a trace\nsecond line\n")
    return p


def _truncated_gz(p: Path) -> Path:
    data = SMALL.read_bytes()
    p = p / "truncated.pt.trace.json.gz"
    p.write_bytes(data[: len(data) // 2])
    return p


def _no_trace_events(p: Path) -> Path:
    p = p / "other.json"
    p.write_text(json.dumps({"schemaVersion": 1, "events": [{"ph": "X", "ts": 1, "dur": 1}]}))
    return p


def _empty_trace(p: Path) -> Path:
    p = p / "empty.pt.trace.json"
    p.write_text(json.dumps({"traceEvents": []}))
    return p


def _empty_trace_gz(p: Path) -> Path:
    p = p / "empty.pt.trace.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    return p


def _binary(p: Path) -> Path:
    rnd = random.Random(1234)
    p = p / "blob.json"
    p.write_bytes(b"\x00\x01" + rnd.randbytes(4000) + b"\x00" * 64 + rnd.randbytes(4000))
    return p


def _zero_bytes(p: Path) -> Path:
    p = p / "zero.pt.trace.json"
    p.write_bytes(b"")
    return p


def _zero_bytes_gz(p: Path) -> Path:
    p = p / "zero.pt.trace.json.gz"
    p.write_bytes(gzip.compress(b""))
    return p


def _empty_folder(p: Path) -> Path:
    p = p / "no_traces"
    p.mkdir()
    (p / "readme.txt").write_text("no traces here")
    (p / "telemetry.nvml.csv").write_text("ts,power_mw\n1,2\n")
    return p


def _missing(p: Path) -> Path:
    return p / "does_not_exist.pt.trace.json.gz"


def _zip_without_traces(p: Path) -> Path:
    p = p / "nothing.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("readme.txt", "hello")
    return p


def _not_a_zip(p: Path) -> Path:
    p = p / "broken.zip"
    p.write_bytes(b"PK\x03\x04 this is not really a zip archive")
    return p


BAD: dict[str, tuple[Callable[[Path], Path], str]] = {
    "text": (_text, r"not (valid )?JSON"),
    "truncated_gzip": (_truncated_gz, r"truncated|corrupt"),
    "no_traceEvents": (_no_trace_events, r"traceEvents"),
    "empty_trace": (_empty_trace, r"no events|empty"),
    "empty_trace_gz": (_empty_trace_gz, r"no events|empty"),
    "binary": (_binary, r"binary|not JSON"),
    "zero_bytes": (_zero_bytes, r"empty"),
    "zero_bytes_gz": (_zero_bytes_gz, r"empty"),
    "folder_without_traces": (_empty_folder, r"no \.json|no trace"),
    "missing_path": (_missing, r"no such file"),
    "zip_without_traces": (_zip_without_traces, r"no \.json|no trace"),
    "not_a_zip": (_not_a_zip, r"archive|zip"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_rejected_and_store_untouched(
    store_dir: Path, reader: Store, tmp_path: Path, case: str
) -> None:
    make, reason = BAD[case]
    bad = make(tmp_path)
    before = snapshot(store_dir, reader)
    assert before[0]["runs"][0] == 1
    assert before[0]["gpu_events"][0] > 0
    with pytest.raises(TraceFormatError) as exc:
        ingest([bad], data_dir=store_dir)
    assert_one_line(str(exc.value), bad, reason)
    assert snapshot(store_dir, reader) == before


def test_bad_rank_in_a_good_folder_writes_nothing(
    store_dir: Path, reader: Store, tmp_path: Path
) -> None:
    """All or nothing: one good rank file plus one corrupt one is no run at all."""
    folder = tmp_path / "two_ranks"
    folder.mkdir()
    (folder / "rank0.pt.trace.json.gz").write_bytes(SMALL.read_bytes())
    bad = folder / "rank1.pt.trace.json.gz"
    bad.write_bytes(SMALL.read_bytes()[:50_000])
    before = snapshot(store_dir, reader)
    with pytest.raises(TraceFormatError) as exc:
        ingest([folder], data_dir=store_dir)
    assert_one_line(str(exc.value), bad, r"truncated|corrupt")
    assert snapshot(store_dir, reader) == before


def test_two_files_with_the_same_rank_rejected(
    store_dir: Path, reader: Store, tmp_path: Path
) -> None:
    folder = tmp_path / "same_rank"
    folder.mkdir()
    (folder / "a.pt.trace.json.gz").write_bytes(SMALL.read_bytes())
    (folder / "b.pt.trace.json.gz").write_bytes(OTHER.read_bytes())  # both default to rank 0
    before = snapshot(store_dir, reader)
    with pytest.raises(TraceFormatError) as exc:
        ingest([folder], data_dir=store_dir)
    assert_one_line(str(exc.value), folder / "b.pt.trace.json.gz", r"rank 0")
    assert snapshot(store_dir, reader) == before


def test_duplicate_trace_names_first_run(tmp_path: Path) -> None:
    d = tmp_path / "store"
    first = ingest([SMALL], data_dir=d)
    before = snapshot(d)
    with pytest.raises(DuplicateTraceError) as exc:
        ingest([SMALL], data_dir=d)
    assert_one_line(str(exc.value), SMALL, re.escape(first))
    assert exc.value.run_id == first
    # same bytes under another name and compression-independent content: still the same trace
    copy = tmp_path / "renamed.pt.trace.json.gz"
    copy.write_bytes(SMALL.read_bytes())
    with pytest.raises(DuplicateTraceError) as exc2:
        ingest([copy], data_dir=d)
    assert_one_line(str(exc2.value), copy, re.escape(first))
    assert exc2.value.run_id == first
    assert snapshot(d) == before
    assert before[0]["runs"][0] == 1


# ---------------------------------------------------------------------- archive traversal


def test_zip_member_path_traversal_stays_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member named '../../…/evil.json' may not land outside the ingest's temporary folder;
    the ingest either flattens it (and ingests the trace) or rejects the archive with a clear
    one-line message naming the archive."""
    # The ingest unpacks under tempfile's folder: point it deep inside tmp_path so that any
    # '../' escape would still land where this test can see it.
    scratch = tmp_path / "tmp" / "a" / "b" / "c" / "d"
    scratch.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    payload = gzip.decompress(SMALL.read_bytes())
    archive = tmp_path / "in" / "x" / "y" / "evil_upload.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("../../../../../../evil.json", payload)
        zf.writestr("../../evil.txt", "not a trace, must not be written anywhere")
    d = tmp_path / "store"
    before_repo = set(REPO.rglob("evil.*"))
    try:
        run_id = ingest([archive], data_dir=d)
    except TraceFormatError as e:
        assert_one_line(str(e), archive, r"\w+")
        run_id = None
    assert list(tmp_path.rglob("evil.*")) == []
    assert set(REPO.rglob("evil.*")) == before_repo
    assert not Path("/tmp/evil.json").exists()
    assert list(scratch.iterdir()) == []  # the ingest's temporary folder is gone too
    if run_id is not None:
        store = Store(d)
        try:
            got = store.rows("SELECT kernel_count FROM runs WHERE run_id = ?", [run_id])
            raw = sum(
                1
                for e in json.loads(payload)["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")
            )
            assert got == [{"kernel_count": raw}]
        finally:
            store.close()


def test_zip_with_one_folder_per_rank_same_file_names(tmp_path: Path) -> None:
    """A common multi-rank layout: rank0/trace.json.gz, rank1/trace.json.gz. Flattening must
    not let the second file overwrite the first: both ranks are ingested."""
    ddp = SAMPLES / "ddp_gpt_bf16_2rank"
    archive = tmp_path / "ddp.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for r in (0, 1):
            zf.writestr(
                f"run/rank{r}/trace.pt.trace.json.gz",
                (ddp / f"rank{r}.pt.trace.json.gz").read_bytes(),
            )
    d = tmp_path / "store"
    try:
        run_id = ingest([archive], data_dir=d)
    except TraceFormatError as e:
        pytest.fail(f"a valid 2-rank archive was refused: {e}")
    store = Store(d)
    try:
        assert store.rows("SELECT rank FROM ranks WHERE run_id = ? ORDER BY rank", [run_id]) == [
            {"rank": 0},
            {"rank": 1},
        ]
    finally:
        store.close()


# ------------------------------------------------------------------------ malformed events


def test_malformed_events_counted_not_fatal(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(SMALL.read_bytes()))
    events = doc["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
    bad_kernel, bad_op, bad_call = kernels[10], ops[20], calls[30]
    bad_kernel["ts"] = "abc"
    bad_op["dur"] = "12.5"
    bad_call["dur"] = "n/a"
    corrupted = 3
    path = tmp_path / "corrupt.pt.trace.json"
    path.write_text(json.dumps(doc))

    d = tmp_path / "store"
    run_id = ingest([path], data_dir=d)
    store = Store(d)
    try:
        s = store.run_summary(run_id)
        assert s["events_malformed"] == corrupted
        assert s["events_total"] == len(events)
        assert s["kernel_count"] == len(kernels) - 1  # the kernel without a time is left out
        (rank,) = store.rows(
            "SELECT events_malformed, malformed_examples FROM ranks WHERE run_id = ?", [run_id]
        )
        assert rank["events_malformed"] == corrupted
        examples = json.loads(rank["malformed_examples"])
        assert isinstance(examples, list)
        assert len(examples) >= 2
        text = " | ".join(examples)
        assert bad_kernel["name"][:40] in text, text
        assert "ts" in text, text
        assert "dur" in text, text
        assert any(bad_op["name"][:20] in x or "12.5" in x for x in examples), text
        assert any(bad_call["name"][:20] in x or "n/a" in x for x in examples), text
    finally:
        store.close()


# ------------------------------------------------------------------------------ the CLI


def test_cli_bad_input_one_error_line(tmp_path: Path) -> None:
    """Two bad inputs, two CLI processes run side by side: exit non-zero, one 'error:' line."""
    cases = ["text", "folder_without_traces"]
    bads = [BAD[c][0](tmp_path) for c in cases]
    # one store each: a brand-new store opened by two processes at once is another matter
    # (test_store_concurrency.py::test_processes_opening_a_new_store_at_once)
    stores = [tmp_path / f"store_{c}" for c in cases]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "collectors.ingest", str(b), "--data", str(d)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for b, d in zip(bads, stores, strict=True)
    ]
    for bad, d, p in zip(bads, stores, procs, strict=True):
        out, err = p.communicate(timeout=120)
        assert p.returncode != 0
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("error:"), lines[0]
        assert str(bad) in lines[0], lines[0]
        assert out == ""
        assert not [f for f in lake_files(d) if "run_id=" in f and "_empty" not in f]
        assert not [f for f in lake_files(d) if f.startswith(("_staging/", "_locks/"))]
