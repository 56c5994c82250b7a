"""Modelled FLOPs and bytes against Nsight Compute's counts on the same H200 micro-ops.

`microops.pt.trace.json.gz` and `ncu_microops_raw.csv.gz` (../shared/fixtures/h200) profile
the same ops: ncu counted tensor-core FLOPs (`sm__ops_path_tensor_src_bf16_dst_fp32.sum`),
FP32 instructions and DRAM bytes per kernel; our numbers come from the trace alone (op
shapes and dtypes; for tiled GEMM kernels also the kernel name, grid and launch resources).
The issue's bars: GEMM FLOPs within 2 %; for ops whose data exceed the 60 MB L2, modelled
bytes within 25 % of ncu's dram__bytes_read.sum + dram__bytes_write.sum.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from helpers.ncu_csv import ncu_kernels
from helpers.paths import fixture

from analysis.facts import Facts
from analysis.load import load_run
from analysis.specs import match_spec
from collectors.ingest import ingest
from data.store import Store

L2_BYTES = 62_914_560  # what the H200 reports (60 MiB)
# ncu's NVTX range -> the trace's op (name, dtype of input 0, first dim of input 0)
RANGES = {
    "mm_fp32": ("aten::mm", '"float"', 4096),
    "mm_bf16": ("aten::mm", '"c10::BFloat16"', 4096),
    "mm_bf16_odd": ("aten::mm", '"c10::BFloat16"', 4095),
    "add": ("aten::add", '"float"', 67108864),
    "softmax": ("aten::_softmax", '"float"', 4096),
    "layernorm": ("aten::native_layer_norm", '"float"', 4096),
}


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pd.DataFrame]:
    """Per ncu range: ncu's counts (median over its repetitions) beside our modelled work."""
    data = tmp_path_factory.mktemp("microops")
    run_id = ingest([fixture("h200/microops.pt.trace.json.gz")], data_dir=data)
    s = Store(data)
    facts = Facts(load_run(s, run_id), spec=match_spec("NVIDIA H200"))
    ops, work = facts.ops, facts.all_work
    work = work[work["kind"] == "kernel"].merge(
        ops[["rank", "external_id", "input_dims", "input_types"]],
        left_on=["rank", "op_external_id"], right_on=["rank", "external_id"],
    )  # fmt: skip
    ncu = ncu_kernels(fixture("h200/ncu_microops_raw.csv.gz"), set(RANGES))
    ncu = ncu.groupby("range").median(numeric_only=True)
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


def test_fp32_simt_gemm_bytes_within_25_pct(compared: pd.DataFrame) -> None:
    """The cuBLAS xmma kernel reads A once per wave of CTAs (analysis.gemm_traffic): 409 MB
    modelled, 344 MB counted; operands alone (201 MB) would be 42 % short."""
    row = compared.loc["mm_fp32"]
    assert row["bytes"] > 2 * 3 * 4096 * 4096 * 4  # more than twice the operands
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
