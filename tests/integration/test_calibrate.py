"""`python -m collectors.calibrate`: refuses without CUDA, stores measured ceilings.

The measuring path needs an H200; it ran there (data/samples/ceilings_h200.json is its
`--json` output, recorded on an NVIDIA H200 with torch 2.11 / CUDA 13). Here, the CLI's
refusal, its import path and the stored rows are tested, and that recording is compared with
the independent measurement in ../shared/fixtures/h200/ceilings.json.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.cli import run_module
from helpers.paths import FIXTURES, REPO

from analysis.roofline import measured_ceilings
from collectors.calibrate import main
from data import reads_roofline
from data.store import Store

RECORDED = REPO / "data" / "samples" / "ceilings_h200.json"


def calibrate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_module("collectors.calibrate", *args)


def test_without_cuda_it_exits_with_one_line(tmp_path: Path) -> None:
    proc = calibrate("--data", tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: cuda: ")
    assert proc.stdout == ""
    written = {p.parent.name for p in tmp_path.glob("lake/ceilings/*/*.parquet")}
    assert written <= {"host=_empty"}  # nothing stored


def test_import_stores_one_row_per_metric(tmp_path: Path) -> None:
    proc = calibrate("--data", tmp_path, "--import", RECORDED)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "NVIDIA H200: import:ceilings_h200.json"
    rows = reads_roofline.ceilings(Store(tmp_path), "NVIDIA H200")
    doc = json.loads(RECORDED.read_text())
    assert dict(zip(rows["metric"], rows["value"], strict=True)) == {
        k: v for k, v in doc.items() if k.endswith("_per_s")
    }
    assert set(rows["source"]) == {"import:ceilings_h200.json"}
    assert reads_roofline.ceilings(Store(tmp_path), "NVIDIA L4").empty


def test_the_latest_calibration_wins(tmp_path: Path) -> None:
    older = json.loads(RECORDED.read_text())
    newer = {**older, "copy_bytes_per_s": 1.0e12}
    (tmp_path / "new.json").write_text(json.dumps(newer))
    assert main(["--data", str(tmp_path), "--import", str(RECORDED)]) == 0
    assert main(["--data", str(tmp_path), "--import", str(tmp_path / "new.json")]) == 0
    roofs = measured_ceilings(reads_roofline.ceilings(Store(tmp_path), "NVIDIA H200"))
    assert roofs is not None
    assert roofs.bandwidth_bytes_per_s == 1.0e12
    assert roofs.peak("bf16") == older["matmul_bf16_flop_per_s"]


@pytest.mark.parametrize(
    ("content", "why"),
    [("not json", "cannot read"), ('{"copy_bytes_per_s": 1}', "'device'"),
     ('{"device": {"name": "X"}, "copy_bytes_per_s": -1}', "no positive")],
)  # fmt: skip
def test_bad_import_files_exit_with_one_line(tmp_path: Path, content: str, why: str) -> None:
    bad = tmp_path / "c.json"
    bad.write_text(content)
    proc = calibrate("--data", tmp_path / "store", "--import", bad)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"error: {bad}: ")
    assert why in proc.stderr


def test_json_line_for_an_import_and_the_json_file(tmp_path: Path) -> None:
    copy = tmp_path / "copy.json"
    proc = calibrate("--data", tmp_path / "store", "--import", RECORDED, "--json", "-o", copy)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(RECORDED.read_text())
    assert json.loads(proc.stdout) == {
        "ok": True,
        "device": "NVIDIA H200",
        "source": "import:ceilings_h200.json",
        "ceilings": {k: v for k, v in doc.items() if k.endswith("_per_s")},
    }
    assert json.loads(copy.read_text()) == doc


def test_without_cuda_the_json_line_names_the_error(tmp_path: Path) -> None:
    proc = calibrate("--data", tmp_path, "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["type"] == "CudaUnavailableError"
    assert error["message"].startswith("cuda: ")


def test_a_store_that_is_a_file_is_one_error_line(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "store"
    not_a_folder.write_text("")
    proc = calibrate("--data", not_a_folder, "--import", RECORDED)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {not_a_folder}")
    assert proc.stdout == ""


def test_our_h200_measurement_agrees_with_the_shared_one() -> None:
    """Two calibrations of H200s (ours, and the shared fixture's) within run-to-run noise.

    TF32 is left out: the fixture's 237 TFLOP/s is 40 % below ours (397) and below the
    reference notes' probe (389); its TF32 path evidently did not use TF32 tensor cores
    throughout, so it is not a measurement of the same thing.
    """
    ours = json.loads(RECORDED.read_text())
    theirs = json.loads((FIXTURES / "h200" / "ceilings.json").read_text())
    assert ours["device"] == theirs["device"]
    assert ours["copy_bytes_per_s"] == pytest.approx(theirs["copy_bytes_per_s"], rel=0.03)
    for p in ("bf16", "fp16"):
        key = f"matmul_{p}_flop_per_s"
        assert ours[key] == pytest.approx(theirs[key], rel=0.06)
    assert ours["matmul_fp32_flop_per_s"] == pytest.approx(
        theirs["matmul_fp32_flop_per_s"], rel=0.02
    )
    assert ours["matmul_tf32_flop_per_s"] > 1.5 * theirs["matmul_tf32_flop_per_s"]
