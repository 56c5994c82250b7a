"""The GEMM DRAM-traffic model against Nsight Compute on 17 GEMMs recorded by the project.

tests/data/gemm_traffic_h200 holds one H200 run of tools/record_gemm_traffic.py twice: a
torch.profiler trace (what the dashboard reads) and ncu's counters for the same launches
(dram__bytes_read.sum + dram__bytes_write.sum, the occupancy limits). The model's numbers
come from the trace alone: op shapes, kernel name, grid, registers, shared memory.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from helpers.ncu_csv import ncu_kernels
from helpers.paths import TEST_DATA
from helpers.raw_trace import load_trace_json, trace_events

from analysis.gemm_traffic import REREAD_COLUMNS, ctas_per_sm, panel_reads, run_rereads
from analysis.roofline import KERNEL_WORK_COLUMNS, kernel_work
from analysis.specs import match_spec
from analysis.work.args import dims
from collectors.ingest import ingest
from data import reads, reads_roofline
from data.store import Store

DATA = TEST_DATA / "gemm_traffic_h200"
L2_BYTES = 60 * 2**20
# NVTX range -> (op, dims of its tensor inputs, dtype), as tools/record_gemm_traffic.py runs them
CASES = {
    "f32_2048": ("aten::mm", [[2048, 2048], [2048, 2048]], "float"),
    "f32_4096": ("aten::mm", [[4096, 4096], [4096, 4096]], "float"),
    "f32_8192": ("aten::mm", [[8192, 8192], [8192, 8192]], "float"),
    "f32_tall": ("aten::mm", [[16384, 1024], [1024, 4096]], "float"),
    "f32_bigk": ("aten::mm", [[4096, 16384], [16384, 4096]], "float"),
    "f32_lmhead_fwd": ("aten::mm", [[7000, 768], [768, 50257]], "float"),
    "f32_lmhead_dx": ("aten::mm", [[7000, 50257], [50257, 768]], "float"),
    "f32_lmhead_dw": ("aten::mm", [[768, 7000], [7000, 50257]], "float"),
    "f32_addmm_6144": ("aten::addmm", [[6144], [6144, 6144], [6144, 6144]], "float"),
    "f32_bmm": ("aten::bmm", [[8, 2048, 2048], [8, 2048, 2048]], "float"),
    "bf16_8192": ("aten::mm", [[8192, 8192], [8192, 8192]], "c10::BFloat16"),
    "bf16_lmhead_fwd": ("aten::mm", [[7000, 768], [768, 50257]], "c10::BFloat16"),
    "tf32_4096": ("aten::mm", [[4096, 4096], [4096, 4096]], "float"),
    "tf32_8192": ("aten::mm", [[8192, 8192], [8192, 8192]], "float"),
    "tf32_bigk": ("aten::mm", [[4096, 16384], [16384, 4096]], "float"),
    "fp16_8192": ("aten::mm", [[8192, 8192], [8192, 8192]], "c10::Half"),
    "bf16_2048": ("aten::mm", [[2048, 2048], [2048, 2048]], "c10::BFloat16"),
}
# Non-persistent cuBLAS xmma kernels whose re-read operand exceeds L2: the model's cases
REREAD = ["f32_4096", "f32_8192", "f32_bigk", "f32_addmm_6144"]
# Kernels the model leaves at compulsory bytes, with data beyond L2: CUTLASS swizzled grids,
# split-K, and persistent kernels (nvjet; Hopper's TF32 xmma runs a 66 × 2 grid)
COMPULSORY = ["f32_tall", "f32_lmhead_fwd", "f32_lmhead_dx", "f32_bmm", "bf16_8192",
              "bf16_lmhead_fwd", "tf32_4096", "tf32_8192", "tf32_bigk", "fp16_8192"]  # fmt: skip


def _stem(kernel: str) -> str:
    """A kernel name up to its parameter list (ncu shortens template arguments there)."""
    return kernel.split("(")[0]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pd.DataFrame]:
    """Per case: the kernel name, our bytes with and without re-reads, ncu's DRAM bytes."""
    data = tmp_path_factory.mktemp("gemms")
    run_id = ingest([DATA / "gemms.pt.trace.json.gz"], data_dir=data)
    s = Store(data)
    ops = reads_roofline.launching_ops(s, run_id)
    events = reads.gpu_events(s, run_id)
    launches = reads_roofline.tiled_gemm_launches(s, run_id)
    rereads = run_rereads(launches, ops, match_spec("NVIDIA H200"))
    assert rereads is not None
    assert list(rereads.columns) == REREAD_COLUMNS
    both = []
    for extra in (rereads, None):
        w = kernel_work(events, ops, extra)
        assert list(w.columns) == KERNEL_WORK_COLUMNS
        both.append(w[(w["kind"] == "kernel") & (w["op_class"] == "gemm")])
    with_rereads, compulsory = both
    w = with_rereads.assign(compulsory=compulsory["bytes"]).merge(
        ops[["rank", "external_id", "input_dims", "input_types"]],
        left_on=["rank", "op_external_id"], right_on=["rank", "external_id"],
    )  # fmt: skip
    ncu = ncu_kernels(DATA / "ncu_gemms_raw.csv.gz", set(CASES))
    rows = []
    for label, (op, shapes, dtype) in CASES.items():
        mine = w[
            (w["op_name"] == op)
            & w["input_dims"].map(lambda t, want=shapes: dims(t)[: len(want)] == want)
            & w["input_types"].str.startswith(f'["{dtype}"')
        ]
        theirs = ncu[ncu["range"] == label]
        assert len(theirs) == 3, (label, len(theirs))
        (kernel,) = set(theirs["name"].map(_stem))
        # fp32 with and without TF32 share shapes and dtype: the kernel tells them apart
        mine = mine[mine["name"].astype(str).map(_stem) == kernel]
        assert len(mine) == 4, (label, len(mine))  # a warm-up call, then 3 in the NVTX range
        rows.append({
            "range": label, "name": str(mine["name"].iloc[0]), "bytes": mine["bytes"].median(),
            "compulsory": mine["compulsory"].median(), "ncu": theirs["dram_bytes"].median(),
        })  # fmt: skip
    yield pd.DataFrame(rows).set_index("range")
    s.close()


@pytest.mark.parametrize("label", REREAD)
def test_tiled_gemm_bytes_within_5_pct_of_ncu(compared: pd.DataFrame, label: str) -> None:
    row = compared.loc[label]
    assert row["name"].startswith("sm80_xmma_gemm_")
    assert row["bytes"] == pytest.approx(row["ncu"], rel=0.05)
    # and the re-reads are what gets it there: operands alone miss by half or more
    assert row["compulsory"] < 0.55 * row["ncu"]


def test_operand_that_fits_in_l2_is_not_read_again(compared: pd.DataFrame) -> None:
    """768×7000 @ 7000×50257: the 21.5 MB operand re-read per wave stays in L2."""
    row = compared.loc["f32_lmhead_dw"]
    assert row["name"].startswith("sm80_xmma_gemm_")
    assert row["bytes"] == row["compulsory"]
    assert row["bytes"] == pytest.approx(row["ncu"], rel=0.25)


@pytest.mark.parametrize("label", COMPULSORY)
def test_other_kernels_keep_operand_bytes_a_lower_bound(compared: pd.DataFrame, label: str) -> None:
    """Swizzled, split-K and persistent kernels: compulsory bytes, never above ncu's."""
    row = compared.loc[label]
    assert not row["name"].startswith("sm80_xmma_gemm_")
    assert row["compulsory"] > L2_BYTES
    assert row["bytes"] == row["compulsory"]
    assert row["bytes"] <= row["ncu"]


def test_ctas_per_sm_matches_ncu_occupancy_limits() -> None:
    """Register, shared-memory and thread limits, from the trace's launch fields, against
    ncu's launch__occupancy_limit_* for every GEMM kernel profiled."""
    ncu = ncu_kernels(DATA / "ncu_gemms_raw.csv.gz", set(CASES)).drop_duplicates("name")
    doc = load_trace_json(DATA / "gemms.pt.trace.json.gz")
    launches = {_stem(e["name"]): e["args"] for e in trace_events(doc) if e.get("cat") == "kernel"}
    props = doc["deviceProperties"][0]
    # sm80 xmma 256×128 and 128×128, sm90 xmma (TF32), CUTLASS SIMT and tensor-op, 3 nvjet
    assert len(ncu) == 8
    for r in ncu.itertuples():
        a = launches[_stem(str(r.name))]
        got = ctas_per_sm(
            a["block"][0] * a["block"][1] * a["block"][2], a["registers per thread"],
            a["shared memory"], props["regsPerMultiprocessor"],
            props["sharedMemPerMultiprocessor"], props["maxThreadsPerMultiprocessor"],
        )  # fmt: skip
        assert got == r.occupancy_limit, r.name


def test_panel_reads_by_hand() -> None:
    """16 × 32 tiles, 132 CTAs a wave (4096³ fp32 on an H200, one CTA per SM): 4 waves each
    touch all 16 x panels; rows 0–8, 8–16, 16–24 and 24–31 are 9 + 9 + 9 + 8 y panels."""
    assert panel_reads(16, 32, 1, 132) == (64, 35)
    assert panel_reads(16, 32, 1, 512) == (16, 32)  # one wave: every panel once
    # 2 batches of 4 × 2 tiles, 3 CTAs a wave: ids 0-2, 3-5, 6-8 (batch 0's 6, 7 and batch
    # 1's 8: x panels of two batches), 9-11, 12-14, 15
    assert panel_reads(4, 2, 2, 3) == (3 + 3 + (2 + 1) + 3 + 3 + 1, 1 + 2 + 2 + 1 + 1 + 1)
