"""Nsight Compute's raw CSV (`ncu --csv --page raw`) as one row per profiled kernel."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pandas as pd

_SCALE = {
    "": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "nsecond": 1e-9,
    "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0,
    "hz": 1.0, "block": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "inst/cycle": 1.0,
}  # fmt: skip


def ncu_kernels(path: Path, labels: set[str]) -> pd.DataFrame:
    """One row per kernel profiled inside an NVTX range named in `labels`: range, name,
    flops_tensor, flops_fp32, dram_bytes, time_s, and occupancy_limit (CTAs per SM: the
    tightest of ncu's register, shared-memory, warp and block limits)."""
    with gzip.open(path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    names, units = rows[head], rows[head + 1]
    nvtx = next(i for i, n in enumerate(names) if "Push/Pop_Range" in n)

    def value(row: list[str], col: str) -> float:
        """The metric in its base unit; NaN when this CSV did not collect it."""
        if col not in names:
            return float("nan")
        i = names.index(col)
        return float(row[i].replace(",", "") or 0) * _SCALE[units[i]]

    out = []
    for r in rows[head + 2 :]:
        label = r[nvtx].split(":")[1] if ":" in r[nvtx] else ""
        if label not in labels:
            continue  # the setup kernels (randn, casts) outside the measured ranges
        t = value(r, "gpu__time_duration.sum")
        rate = value(r, "smsp__cycles_elapsed.avg.per_second")
        fp32_inst = sum(
            k * value(r, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
            for op, k in (("fadd", 1), ("fmul", 1), ("ffma", 2))
        )
        limits = [value(r, f"launch__occupancy_limit_{x}")
                  for x in ("registers", "shared_mem", "warps", "blocks")]  # fmt: skip
        out.append({
            "range": label,
            "name": r[names.index("Kernel Name")],
            "flops_tensor": value(r, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
            "flops_fp32": fp32_inst * rate * t,  # ncu's roofline section: per cycle × rate × time
            "dram_bytes": value(r, "dram__bytes_read.sum") + value(r, "dram__bytes_write.sum"),
            "time_s": t,
            "occupancy_limit": min(limits),
        })  # fmt: skip
    return pd.DataFrame(out)
