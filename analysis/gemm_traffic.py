"""DRAM bytes that a tiled GEMM kernel reads beyond its operands: one re-read per wave.

A GEMM's compulsory traffic (analysis.work) reads A and B once and writes C. cuBLAS's
non-persistent `sm80_xmma_gemm_*_tilesize{TX}x{TY}x{TK}_*` kernels launch one CTA per output
tile, x fastest; the CTAs resident at one time (a wave: SMs × CTAs per SM) walk K together,
so each panel they share is read from DRAM once per wave. A wave spans every x tile of a few
y rows, so the x operand is read once per wave, unless it stays in L2 from one wave to the
next (it fits), and each y panel once, plus the rows cut by a wave boundary.

Measured on an H200 against Nsight Compute (tests/data/gemm_traffic_h200, tools/
record_gemm_traffic.py): the fp32 4096³, 8192³, 4096×16384×4096 and 6144³ addmm kernels read
within 3.2 % of this model, where operand bytes alone fall short by 2.0× to 6.1×.

Other kernels keep compulsory bytes: persistent kernels (nvjet, and Hopper's TF32
sm90_xmma kernels: grid = SMs) and CUTLASS's swizzled grids schedule tiles in orders a trace
does not record, and split-K grids add partial sums; the grid check (one CTA per output tile)
keeps the model off them. For those, compulsory bytes are a lower bound: an 8192³ bf16 nvjet
GEMM read 3.4× its operands, an 8192³ TF32 one 3.6×.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable
from typing import Any

import pandas as pd

from analysis.kernel_classes import NAME_CHARS
from analysis.model.dtypes import BYTES_PER_ELEMENT
from analysis.model.gemm import GEMM_OPERANDS, TILED_GEMM_OPS
from analysis.specs import DeviceSpec
from analysis.work.args import dims, json_list

TILED_KERNEL = re.compile(r"^sm\d+_xmma_gemm_\w*?_tilesize(\d+)x(\d+)x\d+_")
REREAD_COLUMNS = ["rank", "external_id", "reread_bytes"]
_REG_ALLOC_PER_WARP = 256  # registers are allocated per warp in units of 256 (sm_80, sm_90)
_SMEM_RESERVED_PER_CTA = 1024  # the driver's shared memory per CTA (sm_80 and later)


def ctas_per_sm(
    threads: int, regs_per_thread: int, smem_bytes: int, regs_per_sm: int,
    smem_per_sm: int, max_threads_per_sm: int,
) -> int:  # fmt: skip
    """CTAs one SM holds at once: the tightest of its register, shared-memory and thread
    limits (ncu's launch__occupancy_limit_*)."""
    warps = math.ceil(threads / 32)
    regs_cta = math.ceil(regs_per_thread * 32 / _REG_ALLOC_PER_WARP) * _REG_ALLOC_PER_WARP * warps
    limits = [max_threads_per_sm // max(threads, 1), 32]
    if regs_cta:
        limits.append(regs_per_sm // regs_cta)
    limits.append(smem_per_sm // (smem_bytes + _SMEM_RESERVED_PER_CTA))
    return max(1, min(limits))


def panel_reads(gx: int, gy: int, gz: int, wave: int) -> tuple[int, int]:
    """(x panels, y panels) read over all waves of a gx × gy × gz grid run x fastest, `wave`
    CTAs at a time: a panel of one batch (z) counts once per wave that touches it."""
    total, per_batch = gx * gy * gz, gx * gy
    x_reads = y_reads = 0
    for start in range(0, total, wave):
        end = min(start + wave, total)
        y_reads += (end - 1) // gx - start // gx + 1  # distinct (y, z) rows
        for z in range(start // per_batch, (end - 1) // per_batch + 1):
            lo, hi = max(start, z * per_batch), min(end, (z + 1) * per_batch)
            x_reads += min(gx, hi - lo)  # consecutive ids: all distinct until a full row
    return x_reads, y_reads


def run_rereads(
    launches: pd.DataFrame, ops: pd.DataFrame, spec: DeviceSpec | None
) -> pd.DataFrame | None:
    """reread_bytes of a run's tiled GEMM launches; None when its device's L2 size is
    unknown (no spec)."""
    if spec is None or spec.l2_mb is None:
        return None
    return reread_bytes(launches, ops, spec.l2_mb * 2**20)


def reread_bytes(launches: pd.DataFrame, ops: pd.DataFrame, l2_bytes: float) -> pd.DataFrame:
    """Bytes each op's tiled GEMM kernels read beyond its operands.

    Args:
        launches: data.reads_roofline.tiled_gemm_launches rows: rank, op_external_id, name,
            grid_x/y/z, threads, registers_per_thread, shared_mem_bytes, num_sms, regs_per_sm,
            shared_mem_per_sm_bytes, max_threads_per_sm.
        ops: launching ops: rank, external_id, name, input_dims, input_types.
        l2_bytes: the device's L2 size; an x operand that fits is not read again.
    Returns REREAD_COLUMNS, one row per op with a modelled re-read (others are absent).
    """
    o = ops[["rank", "external_id", "name", "input_dims", "input_types"]].rename(
        columns={"name": "op_name"}
    )
    m = launches.merge(o, left_on=["rank", "op_external_id"], right_on=["rank", "external_id"])
    # A run repeats a few shapes thousands of times: model each distinct launch once.
    keys = [c for c in m.columns if c not in ("rank", "op_external_id", "external_id")]
    distinct = m.drop_duplicates(keys)
    extra = [_launch_reread(r, l2_bytes) for r in distinct.to_dict("records")]
    m = m.merge(distinct[keys].assign(reread_bytes=extra), on=keys)
    return (
        m.loc[m["reread_bytes"] > 0]
        .groupby(["rank", "external_id"], as_index=False)
        .agg(reread_bytes=("reread_bytes", "sum"))
    )


def _launch_reread(r: dict[Hashable, Any], l2_bytes: float) -> float:
    """Re-read bytes of one launch (0 when the model does not apply)."""
    op = str(r["op_name"])
    tile = TILED_KERNEL.match(str(r["name"])[:NAME_CHARS])  # a kernel name's start names it
    if tile is None or op not in TILED_GEMM_OPS:
        return 0.0
    ia, ib = GEMM_OPERANDS[op].a, GEMM_OPERANDS[op].b
    shapes, types = dims(r["input_dims"]), json_list(r["input_types"])
    batched = op.endswith("bmm")
    if len(shapes) <= ib or len(shapes[ia]) != 2 + batched or len(shapes[ib]) != 2 + batched:
        return 0.0
    batch = shapes[ia][0] if batched else 1
    m, k, n = shapes[ia][-2], shapes[ia][-1], shapes[ib][-1]
    bpe = BYTES_PER_ELEMENT.get(str(types[ia]) if len(types) > ia else "", 4)
    a_bytes, b_bytes = batch * m * k * bpe, batch * k * n * bpe
    tx, ty = int(tile.group(1)), int(tile.group(2))
    gx, gy, gz = (int(r[c]) for c in ("grid_x", "grid_y", "grid_z"))
    # Which output dimension runs along x: cuBLAS's column-major view puts N there, but
    # the library may swap operands; the grid tells (square outputs read alike either way).
    if (math.ceil(n / tx), math.ceil(m / ty)) == (gx, gy):
        x_bytes, y_bytes = b_bytes, a_bytes
    elif (math.ceil(m / tx), math.ceil(n / ty)) == (gx, gy):
        x_bytes, y_bytes = a_bytes, b_bytes
    else:
        return 0.0  # split-K or another schedule: not one CTA per output tile
    if gz != batch or x_bytes / batch <= l2_bytes:
        return 0.0
    per_sm = ctas_per_sm(
        int(r["threads"]), int(r["registers_per_thread"]),
        int(r["shared_mem_bytes"]), int(r["regs_per_sm"]),
        int(r["shared_mem_per_sm_bytes"]), int(r["max_threads_per_sm"]),
    )  # fmt: skip
    x_reads, y_reads = panel_reads(gx, gy, gz, int(r["num_sms"]) * per_sm)
    return x_bytes * (x_reads / (gx * gz) - 1) + y_bytes * (y_reads / (gy * gz) - 1)
