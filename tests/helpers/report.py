"""The report's test runs (the H200 fp32 GPT-2 training trace, whose recommendations are real,
and a CPU-only trace) and its command line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from analysis.report.charts import NO_GPU
from helpers.cli import run_module
from helpers.paths import TEST_DATA

NAIVE = "h200/train_gpt2_fp32_naive.pt.trace.json.gz"
CPU_TRACE = TEST_DATA / "cpu_mlp.pt.trace.json.gz"
NO_GPU_TEXT = NO_GPU.split(":")[0]  # "No GPU activity in this run (a CPU-only trace)"


def report(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """`python -m analysis.report ARGS`, its output as bytes (a PDF goes to stdout)."""
    return run_module("analysis.report", *args, timeout=180, text=False)
