"""Phases of the NVML recording made on the H200 (data/samples/nvml_phases_h200.csv, written by
tools/nvml_phases.py): one phase's real rows as a recording of its own."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers.paths import SAMPLES

PHASES = SAMPLES / "nvml_phases_h200.csv"
INVENTORY = PHASES.with_name("nvml_phases_h200.inventory.json")


def phase_csv(folder: Path, phase: str) -> Path:
    """The real rows of one phase of the H200 recording (from the GEMMs' start for the
    GEMM phase), with the recording's inventory beside them."""
    with PHASES.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["phase"] == phase]
    if phase == "gemm_bf16":
        first = next(i for i, r in enumerate(rows) if int(r["util_gpu_pct"]) > 50)
        rows = rows[first:]
    path = folder / f"{phase}.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    path.with_name(f"{phase}.inventory.json").write_text(INVENTORY.read_text())
    return path
