"""`python -m analysis.report RUN --format json`: the contract's keys, and numbers that agree
with the store, per rank and overall, on the project's own 2-rank DDP recording."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_module
from helpers.paths import SAMPLES

from collectors.ingest import ingest
from data.store import Store

DDP = SAMPLES / "ddp_gpt_bf16_2rank"
SINGLE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
METRIC_KEYS = {
    "kernel_count", "kernel_time_ms", "step_time_ms", "gpu_busy_pct", "idle_pct", "compute_pct",
    "comm_pct", "memcpy_pct", "achieved_tflops", "mfu_pct", "hbm_bw_util_pct",
}  # fmt: skip
ROOFLINE_KEYS = {"flops", "bytes", "intensity", "achieved_tflops", "achieved_gbps", "bound"}


def report(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_module("analysis.report", *args)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("report")
    ingest([DDP], data_dir=d, name="ddp")
    return d


@pytest.fixture(scope="module")
def doc(store_dir: Path) -> dict[str, Any]:
    out = store_dir / "r.json"
    proc = report("ddp", "--format", "json", "-o", out, "--data", store_dir)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(out.read_text()))


def test_every_contract_key(doc: dict[str, Any]) -> None:
    assert set(doc["run"]) >= {"id", "name", "ranks", "device_name"}
    assert doc["run"]["ranks"] == 2
    assert doc["run"]["device_name"] == "NVIDIA H200"
    assert set(doc["metrics"]["overall"]) >= METRIC_KEYS
    assert [r["rank"] for r in doc["metrics"]["per_rank"]] == [0, 1]
    for r in doc["metrics"]["per_rank"]:
        assert set(r) >= METRIC_KEYS
    assert doc["roofline"]
    for row in doc["roofline"]:
        assert set(row) >= ROOFLINE_KEYS
    # The compute side is filled in on a known device.
    for key in ("achieved_tflops", "mfu_pct", "hbm_bw_util_pct"):
        assert doc["metrics"]["overall"][key] > 0


def test_numbers_agree_with_the_store(doc: dict[str, Any], store_dir: Path) -> None:
    s = Store(store_dir)
    rows = s.query(
        "SELECT rank, count(*) AS n, sum(dur_ns) AS ns FROM gpu_events "
        "WHERE run_id = ? AND kind = 'kernel' GROUP BY rank ORDER BY rank",
        [doc["run"]["id"]],
    )
    per_rank = doc["metrics"]["per_rank"]
    assert [r["kernel_count"] for r in per_rank] == rows["n"].tolist()
    for r, ns in zip(per_rank, rows["ns"], strict=True):
        assert r["kernel_time_ms"] == pytest.approx(ns / 1e6)
    overall = doc["metrics"]["overall"]
    assert overall["kernel_count"] == rows["n"].sum()
    assert overall["kernel_time_ms"] == pytest.approx(rows["ns"].sum() / 1e6)
    # Exclusive shares: they add up to 100 %, busy is the rest of idle.
    for m in [*per_rank, overall]:
        total = sum(
            m[k] for k in ("compute_pct", "comm_pct", "memcpy_pct", "memset_pct", "idle_pct")
        )
        assert total == pytest.approx(100.0)
        assert m["gpu_busy_pct"] == pytest.approx(100.0 - m["idle_pct"])
        assert m["comm_pct"] > 0  # DDP: NCCL all-reduces
    # Overall is the ranks together, weighted by their step time.
    windows = [
        sum(w["window_ms"] for w in doc["breakdown"]["per_step"] if w["rank"] == r["rank"])
        for r in per_rank
    ]
    weighted = sum(r["compute_pct"] * w for r, w in zip(per_rank, windows, strict=True))
    assert overall["compute_pct"] == pytest.approx(weighted / sum(windows))
    steps = s.query("SELECT step FROM steps WHERE run_id = ?", [doc["run"]["id"]])
    assert {w["step"] for w in doc["breakdown"]["per_step"]} == set(steps["step"])
    assert doc["breakdown"]["straggler_rank"] in (0, 1)


def test_a_trace_path_is_ingested_first(tmp_path: Path) -> None:
    proc = report(SINGLE, "--data", tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["run"]["name"] == "gpt_train_bf16"
    assert (
        doc["metrics"]["overall"]["kernel_count"] == Store(tmp_path).runs().iloc[0]["kernel_count"]
    )
    again = report(SINGLE, "--data", tmp_path)  # already ingested: the same run
    assert json.loads(again.stdout)["run"]["id"] == doc["run"]["id"]


def test_unknown_run_is_one_line(tmp_path: Path) -> None:
    proc = report("no-such-run", "--data", tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: no-such-run: ")
