"""Record GEMMs of many shapes twice: under torch.profiler, and under Nsight Compute.

The pair tests the GEMM DRAM-traffic model (analysis/gemm_traffic.py) against counters on
shapes beyond the one fp32 GEMM of ../shared/fixtures/h200/microops: operands that fit in
L2 and ones that do not, tall, wide, large-K and batched products, fp32 on CUDA cores (TF32
off) and bf16 on tensor cores. Run on the GPU machine:

    python tools/record_gemm_traffic.py OUT_DIR     # writes OUT_DIR/gemms.pt.trace.json.gz
    ncu --nvtx --clock-control none --csv --page raw --metrics \
      dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__grid_dim_x,\
    launch__grid_dim_y,launch__grid_dim_z,launch__block_size,launch__registers_per_thread,\
    launch__shared_mem_per_block,launch__occupancy_limit_registers,\
    launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,\
    launch__occupancy_limit_blocks,launch__waves_per_multiprocessor,launch__sm_count,\
    lts__t_sector_hit_rate.pct,lts__t_bytes.sum \
      python tools/record_gemm_traffic.py --ncu > ncu_gemms_raw.csv

(ncu's default cache control flushes L2 before each profiled kernel.)

Each case runs inside an NVTX range named after it (the ncu CSV's Push/Pop range column),
three times, after one warm-up outside any range.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

import torch

DEV = "cuda"
REPEATS = 3

# label -> (op, dtype, shapes): mm (M, K, N), bmm (B, M, K, N), addmm (M, K, N). fp32 runs on
# CUDA cores (TF32 off, as in microops) except the tf32_* cases.
CASES: dict[str, tuple[str, torch.dtype, tuple[int, ...]]] = {
    "f32_2048": ("mm", torch.float32, (2048, 2048, 2048)),
    "f32_4096": ("mm", torch.float32, (4096, 4096, 4096)),
    "f32_8192": ("mm", torch.float32, (8192, 8192, 8192)),
    "f32_tall": ("mm", torch.float32, (16384, 1024, 4096)),
    "f32_bigk": ("mm", torch.float32, (4096, 16384, 4096)),
    "f32_lmhead_fwd": ("mm", torch.float32, (7000, 768, 50257)),
    "f32_lmhead_dx": ("mm", torch.float32, (7000, 50257, 768)),
    "f32_lmhead_dw": ("mm", torch.float32, (768, 7000, 50257)),
    "f32_addmm_6144": ("addmm", torch.float32, (6144, 6144, 6144)),
    "f32_bmm": ("bmm", torch.float32, (8, 2048, 2048, 2048)),
    "bf16_8192": ("mm", torch.bfloat16, (8192, 8192, 8192)),
    "bf16_lmhead_fwd": ("mm", torch.bfloat16, (7000, 768, 50257)),
    "tf32_4096": ("mm", torch.float32, (4096, 4096, 4096)),
    "tf32_8192": ("mm", torch.float32, (8192, 8192, 8192)),
    "tf32_bigk": ("mm", torch.float32, (4096, 16384, 4096)),
    "fp16_8192": ("mm", torch.float16, (8192, 8192, 8192)),
    "bf16_2048": ("mm", torch.bfloat16, (2048, 2048, 2048)),
}


def operands(op: str, dtype: torch.dtype, shape: tuple[int, ...]) -> list[torch.Tensor]:
    if op == "bmm":
        b, m, k, n = shape
        return [torch.randn(b, m, k, device=DEV, dtype=dtype),
                torch.randn(b, k, n, device=DEV, dtype=dtype)]  # fmt: skip
    m, k, n = shape
    ab = [torch.randn(m, k, device=DEV, dtype=dtype), torch.randn(k, n, device=DEV, dtype=dtype)]
    return [torch.randn(n, device=DEV, dtype=dtype), *ab] if op == "addmm" else ab


def run_all() -> None:
    for label, (op, dtype, shape) in CASES.items():
        torch.backends.cuda.matmul.allow_tf32 = label.startswith("tf32")
        args = operands(op, dtype, shape)
        fn = getattr(torch, op)
        fn(*args)  # warm-up: cuBLAS picks and loads its kernel outside the range
        torch.cuda.synchronize()
        for _ in range(REPEATS):
            with torch.cuda.nvtx.range(label):
                fn(*args)
        torch.cuda.synchronize()
        del args
        torch.cuda.empty_cache()


def main() -> None:
    if "--ncu" in sys.argv:
        run_all()
        return
    out = Path(next((a for a in sys.argv[1:] if not a.startswith("--")), "gemm_out"))
    out.mkdir(parents=True, exist_ok=True)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        run_all()
    raw = out / "gemms.pt.trace.json"
    prof.export_chrome_trace(str(raw))
    with raw.open("rb") as src, gzip.open(f"{raw}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()


if __name__ == "__main__":
    main()
