"""Faults around the input: a full or read-only disk, a claim held by a live ingest, odd
paths, names, tags and settings. Each command ends with one line that names what was wrong
and exit status 2 (or, where the input is fine, does its work), and leaves the store as it
was. The disks are real (helpers.faults: a small tmpfs in a private mount namespace).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers.cli import one_line, run_cli, run_measured, run_module
from helpers.faults import namespaces, on_small_disk
from helpers.hostile_bombs import CAP_ENV, CAP_MB, zip_zero_bomb
from helpers.paths import REPO, SAMPLES, TEST_DATA

from collectors.ingest import ingest
from collectors.parse.expansion import DEFAULT_CAP_MB
from data.cli_child import ingest_child
from data.store import Store

SMALL = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"  # a real H200 trace, 270 kB
OTHER = SAMPLES / "gpt_train_fp32_naive.pt.trace.json.gz"
RECORDING = SAMPLES / "gpt_train_bf16.nvml.csv"
DISK_FULL = r"No space left on device|File too large"  # the latter: RLIMIT_FSIZE (no tmpfs)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    d = tmp_path / "store"
    ingest([SMALL], data_dir=d)
    return d


def test_a_full_disk_is_one_line_and_blocks_nothing(store: Path) -> None:
    got = on_small_disk(store, "collectors.ingest", OTHER, "--data", store, free_kb=16)
    assert got.status == 2, got.stderr
    line = one_line(got.stderr)
    where = re.escape(str(store))
    assert re.fullmatch(rf"error: {where}/\S+: (cannot write: )?({DISK_FULL})", line), line
    assert got.after == got.before  # no run, no staging folder, no claim left behind
    # and with room again the same trace goes in: nothing claimed it for ever
    assert run_cli(OTHER, "--data", store).returncode == 0


def test_a_full_temporary_folder_while_unpacking(store: Path, tmp_path: Path) -> None:
    if not namespaces():
        pytest.skip("needs a tmpfs for the temporary folder (unshare)")
    archive = tmp_path / "big.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/rank0.pt.trace.json", b" " * (8 << 20) + b"{}")
    got = on_small_disk(
        store, "collectors.ingest", archive, "--data", store, free_kb=1024, tmp_on_disk=True
    )
    assert got.status == 2, got.stderr
    line = one_line(got.stderr)
    assert re.fullmatch(
        rf"error: {re.escape(str(store))}/ingest-\S+/rank0\.pt\.trace\.json: No space left on "
        rf"device \(unpacking {re.escape(str(archive))}\)",
        line,
    ), line
    assert got.after == got.before


def test_an_archive_bomb_never_fills_the_temporary_folder_past_the_cap(
    store: Path, tmp_path: Path
) -> None:
    """The temporary folder has the cap and 32 MB more: the bomb (512 MB of zeros) is refused
    for its size, not by a full disk."""
    if not namespaces():
        pytest.skip("needs a tmpfs for the temporary folder (unshare)")
    (bomb,) = zip_zero_bomb(tmp_path)
    got = on_small_disk(
        store, "collectors.ingest", bomb, "--data", store,
        free_kb=(CAP_MB + 32) * 1024, tmp_on_disk=True, env=CAP_ENV,
    )  # fmt: skip
    assert got.status == 2, got.stderr
    assert one_line(got.stderr) == (
        f"error: {bomb}: expands to more than {CAP_MB} MB; refused (DASH_MAX_EXPANDED_MB raises "
        "the cap)"
    )
    assert got.after == got.before


def test_the_default_cap_is_four_upload_limits_and_no_error_detail_reaches_a_browser() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert 4 * config["server"]["maxUploadSize"] == DEFAULT_CAP_MB
    assert config["client"]["showErrorDetails"] == "none"


def test_a_read_only_store_refuses_writes_and_still_reads(store: Path, tmp_path: Path) -> None:
    got = on_small_disk(
        store, "collectors.ingest", OTHER, "--data", store, free_kb=1024, read_only=True
    )
    assert got.status == 2, got.stderr
    line = one_line(got.stderr)
    assert re.fullmatch(
        rf"error: {re.escape(str(store))}/\S+: (Read-only file system|Permission denied)", line
    ), line
    assert got.after == got.before
    report = tmp_path / "report.md"
    got = on_small_disk(
        store, "analysis.report", "gpt_train_bf16", "--format", "md", "-o", report,
        "--data", store, free_kb=1024, read_only=True,
    )  # fmt: skip
    assert got.status == 0, got.stderr
    assert report.read_text().startswith("# GPU performance report: gpt\\_train\\_bf16")


_HOLDER = """
import sys, time
from pathlib import Path
from data.lake_locks import claim
with claim(Path(sys.argv[1]), sys.argv[2], "another ingest"):
    print("holding", flush=True)
    time.sleep(120)
"""


def test_a_claim_held_by_a_live_process(store: Path) -> None:
    """An ingest of content another live process has claimed says who holds it."""
    digest = hashlib.sha256(hashlib.sha256(OTHER.read_bytes()).hexdigest().encode()).hexdigest()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(store / "lake" / "_locks"), digest],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "holding\n"
        got = run_cli(OTHER, "--data", store)
    finally:
        holder.kill()
        holder.wait()
    assert got.returncode == 2, got.stderr
    line = one_line(got.stderr)
    assert line.startswith(
        f"error: {OTHER}: the same trace is being ingested right now (pid {holder.pid} on "
    ), line
    # once that process is gone (killed: its claim stays), the trace goes in
    assert run_cli(OTHER, "--data", store).returncode == 0


def test_a_store_path_with_quotes_and_spaces(tmp_path: Path) -> None:
    """The --data path reaches DuckDB as a bound value, never pasted into SQL."""
    d = tmp_path / 'it\'s a "store"; DROP TABLE runs; --'
    got = run_cli(SMALL, "--data", d, "--json")
    assert got.returncode == 0, got.stderr
    run_id = json.loads(got.stdout)["run_id"]
    got = run_module("analysis.report", run_id, "--format", "json", "--data", d)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["run"]["id"] == run_id
    got = run_module("analysis.compare", run_id, run_id, "--format", "json", "--data", d)
    assert got.returncode == 0, got.stderr


def test_a_run_name_that_looks_like_a_flag(tmp_path: Path) -> None:
    """The Upload page's run name goes to the ingest as --name=VALUE, paths after '--'."""
    d = tmp_path / "store"
    traces = (SMALL, OTHER, TEST_DATA / "cpu_mlp.pt.trace.json.gz")
    for name, trace in zip(("-x", "--data=/etc", "--help"), traces, strict=True):
        run = ingest_child([trace], data_dir=d, name=name)
        assert Store(d).run_summary(run.run_id)["name"] == name


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (["--tag", "tokens_per_step=abc"], {}, r"tag tokens_per_step='abc': expected a positive"),
        (["--tag", "tokens_per_step=inf"], {}, r"tag tokens_per_step='inf': expected a positive"),
        ([], {"DASH_MAX_EXPANDED_MB": "abc"}, r"DASH_MAX_EXPANDED_MB='abc': expected a whole"),
        (["--no-such-flag"], {}, r"unrecognized arguments: --no-such-flag \(see python -m "),
    ],
)
def test_bad_settings_are_one_line(
    store: Path, args: list[str], env: dict[str, str], reason: str
) -> None:
    before = Store(store).checksums()
    got = run_measured("collectors.ingest", OTHER, "--data", store, *args, env=env)
    assert got.status == 2, got.stderr
    assert re.search(reason, one_line(got.stderr)), got.stderr
    assert Store(store).checksums() == before


@pytest.mark.parametrize(
    ("cell", "reason"),
    [("inf", "is not a number"), ("9" * 23, "is out of range"), ("1e400", "is not a number")],
)
def test_a_recording_with_values_no_column_holds(tmp_path: Path, cell: str, reason: str) -> None:
    lines = RECORDING.read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("power_mw")
    row = lines[1].split(",")
    row[col] = cell
    bad = tmp_path / "bad.nvml.csv"
    bad.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    got = run_module("collectors.nvml", "--replay", bad, "--keep-time", "--data", tmp_path / "s")
    assert got.returncode == 2, got.stderr
    assert one_line(got.stderr) == f"error: {bad}:2: power_mw={cell!r} {reason}"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", r"cannot read \("),
        ('{"gpu": 0}', r"expected a JSON list of objects with an int 'gpu'"),
        ('[{"gpu": "0"}]', r"expected a JSON list of objects with an int 'gpu'"),
        ('[{"gpu": 0, "mem_total_bytes": 1180591620717411303424}]', r"gpu 0: "),
        ("[" * 100_000 + "]" * 100_000, r"cannot read \("),
    ],
    ids=["not_json", "not_a_list", "gpu_as_text", "memory_2**70", "nested_100k"],
)
def test_a_bad_inventory_beside_a_recording(tmp_path: Path, text: str, reason: str) -> None:
    csv = tmp_path / "rec.csv"
    csv.write_text(RECORDING.read_text())
    side = tmp_path / "rec.inventory.json"
    side.write_text(text)
    got = run_module("collectors.nvml", "--replay", csv, "--keep-time", "--data", tmp_path / "s")
    assert got.returncode == 2, got.stderr
    assert re.match(rf"error: {re.escape(str(side))}: {reason}", one_line(got.stderr))


@pytest.mark.parametrize("cell", ["-1", "1.5", "inf", "<b>x</b>"])
def test_a_recordings_processes_cell_is_kept_as_the_text_written(tmp_path: Path, cell: str) -> None:
    """The processes column is text (a JSON list of [pid, bytes], shown as written on Live):
    a cell that reads as a number was once parsed as one and refused with "unexpected
    ArrowTypeError" and no file named (found by a random mutation of this recording, D106)."""
    rows = list(csv.reader((SAMPLES / "nvml_phases_h200.csv").open(newline="")))
    rows[5][rows[0].index("processes")] = cell
    rec = tmp_path / "rec.csv"
    with rec.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    got = run_module("collectors.nvml", "--replay", rec, "--keep-time", "--data", tmp_path / "s")
    assert got.returncode == 0, got.stderr
    kept = Store(tmp_path / "s").query(
        "SELECT processes FROM gpu_samples WHERE processes = ?", [cell]
    )
    assert len(kept) == 1
