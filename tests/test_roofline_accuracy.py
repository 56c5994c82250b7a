"""Modelled FLOPs and bytes against Nsight Compute's counts on the same H200 micro-ops.

`microops.pt.trace.json.gz` and `ncu_microops_raw.csv.gz` (../shared/fixtures/h200) profile
the same ops: ncu counted tensor-core FLOPs (`sm__ops_path_tensor_src_bf16_dst_fp32.sum`),
FP32 instructions and DRAM bytes per kernel; our numbers come from the trace's shapes only.
The issue's bars: GEMM FLOPs within 2 %; for ops whose data exceed the 60 MB L2, modelled
bytes within 25 % of ncu's dram__bytes_read.sum + dram__bytes_write.sum.
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import fixture, requires_fixtures

from analysis.roofline import kernel_work
from collectors.ingest import ingest
from data import reads_roofline
from data.store import Store

pytestmark = requires_fixtures

L2_BYTES = 62_914_560  # what the H200 reports (60 MiB)
_SCALE = {
    "": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-9, "nsecond": 1e-9,
    "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0,
    "hz": 1.0, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9, "inst/cycle": 1.0,
}  # fmt: skip
# ncu's NVTX range -> the trace's op (name, dtype of input 0, first dim of input 0)
RANGES = {
    "mm_fp32": ("aten::mm", '"float"', 4096),
    "mm_bf16": ("aten::mm", '"c10::BFloat16"', 4096),
    "mm_bf16_odd": ("aten::mm", '"c10::BFloat16"', 4095),
    "add": ("aten::add", '"float"', 67108864),
    "softmax": ("aten::_softmax", '"float"', 4096),
    "layernorm": ("aten::native_layer_norm", '"float"', 4096),
}


def ncu_kernels(path: Path) -> pd.DataFrame:
    """One row per profiled kernel: range, flops_tensor, flops_fp32, dram_bytes, time_s."""
    with gzip.open(path, "rt", newline="") as fh:
        rows = list(csv.reader(fh))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    names, units = rows[head], rows[head + 1]
    nvtx = next(i for i, n in enumerate(names) if "Push/Pop_Range" in n)

    def value(row: list[str], col: str) -> float:
        i = names.index(col)
        return float(row[i].replace(",", "") or 0) * _SCALE[units[i]]

    out = []
    for r in rows[head + 2 :]:
        label = r[nvtx].split(":")[1] if ":" in r[nvtx] else ""
        if label not in RANGES:
            continue  # the setup kernels (randn, casts) outside the measured ranges
        t = value(r, "gpu__time_duration.sum")
        rate = value(r, "smsp__cycles_elapsed.avg.per_second")
        fp32_inst = sum(
            k * value(r, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
            for op, k in (("fadd", 1), ("fmul", 1), ("ffma", 2))
        )
        out.append({
            "range": label,
            "flops_tensor": value(r, "sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
            "flops_fp32": fp32_inst * rate * t,  # ncu's roofline section: per cycle × rate × time
            "dram_bytes": value(r, "dram__bytes_read.sum") + value(r, "dram__bytes_write.sum"),
            "time_s": t,
        })  # fmt: skip
    return pd.DataFrame(out)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pd.DataFrame]:
    """Per ncu range: ncu's counts (median over its repetitions) beside our modelled work."""
    data = tmp_path_factory.mktemp("microops")
    run_id = ingest([fixture("h200/microops.pt.trace.json.gz")], data_dir=data)
    s = Store(data)
    ops = reads_roofline.launching_ops(s, run_id)
    work = kernel_work(reads_roofline.gpu_events(s, run_id), ops)
    work = work[work["kind"] == "kernel"].merge(
        ops[["rank", "external_id", "input_dims", "input_types"]],
        left_on=["rank", "op_external_id"], right_on=["rank", "external_id"],
    )  # fmt: skip
    ncu = ncu_kernels(fixture("h200/ncu_microops_raw.csv.gz")).groupby("range").median()
    rows = []
    for label, (op, dtype, dim0) in RANGES.items():
        mine = work[
            (work["op_name"] == op)
            & work["input_types"].str.startswith(f"[{dtype}")
            & work["input_dims"].str.startswith(f"[[{dim0}")
        ]
        assert len(mine) == 3, (label, len(mine))  # 3 profiled steps, one kernel each
        rows.append({"range": label, "flops": mine["flops"].median(),
                     "bytes": mine["bytes"].median(), **ncu.loc[label].to_dict()})  # fmt: skip
    yield pd.DataFrame(rows).set_index("range")
    s.close()


@pytest.mark.parametrize("label", ["mm_bf16", "mm_bf16_odd"])
def test_tensor_core_gemm_flops_within_2_pct_of_ncu(compared: pd.DataFrame, label: str) -> None:
    row = compared.loc[label]
    assert row["flops_tensor"] > 1e11
    assert row["flops"] == pytest.approx(row["flops_tensor"], rel=0.02)


def test_fp32_gemm_flops_within_2_pct_of_ncu(compared: pd.DataFrame) -> None:
    row = compared.loc["mm_fp32"]
    assert row["flops_tensor"] == 0  # TF32 off: SIMT FFMA, counted by instructions
    assert row["flops"] == pytest.approx(row["flops_fp32"], rel=0.02)


@pytest.mark.parametrize("label", ["mm_bf16", "mm_bf16_odd", "softmax", "layernorm"])
def test_bytes_within_25_pct_of_ncu_dram_bytes(compared: pd.DataFrame, label: str) -> None:
    row = compared.loc[label]
    assert row["bytes"] > L2_BYTES  # the bar applies to data that does not fit in L2
    assert row["bytes"] == pytest.approx(row["dram_bytes"], rel=0.25)


@pytest.mark.xfail(
    reason="the SIMT fp32 GEMM re-reads its operands from DRAM: ncu 344 MB vs 201 MB "
    "compulsory; a shape model cannot know the kernel's tiling",
    strict=True,
)
def test_fp32_simt_gemm_bytes_within_25_pct(compared: pd.DataFrame) -> None:
    row = compared.loc["mm_fp32"]
    assert row["bytes"] == pytest.approx(row["dram_bytes"], rel=0.25)


@pytest.mark.xfail(
    reason="the fixture's add is x + x: ncu read one 268 MB tensor, the shapes name two; "
    "a trace does not say that both inputs are the same tensor",
    strict=True,
)
def test_add_of_one_tensor_with_itself_bytes_within_25_pct(compared: pd.DataFrame) -> None:
    row = compared.loc["add"]
    assert row["bytes"] == pytest.approx(row["dram_bytes"], rel=0.25)


def test_add_bytes_match_ncu_once_the_shared_input_is_counted_once(
    compared: pd.DataFrame,
) -> None:
    """The explanation of the xfail above, checked: one input fewer fits ncu within 5 %."""
    row = compared.loc["add"]
    one_input = row["bytes"] / 3  # [64 Mi] fp32 read, read, written
    assert row["bytes"] - one_input == pytest.approx(row["dram_bytes"], rel=0.05)
