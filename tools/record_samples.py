"""Record the demo traces in data/samples/ on a real GPU (run on the device machine).

Each workload runs under torch.profiler (CPU+CUDA, record_shapes, profile_memory,
schedule wait=1 warmup=1 active=3) while a thread samples NVML every 100 ms, so every
trace comes with the telemetry of its window. With 2+ GPUs it also records a 2-rank DDP
run (one trace file per rank). Usage: python tools/record_samples.py OUT_DIR

`--ddp-comm` records only the two DDP runs whose communication is the problem (the test
fixtures of the comm-overlap and nccl-topology rules, tests/data/): one gradient bucket for
the whole model (its all-reduce starts after backward: nothing to overlap with), and NCCL
with peer-to-peer disabled (traffic through host memory instead of NVLink); and the same
model with DDP's defaults, the "after" of both.
"""

from __future__ import annotations

import csv
import gzip
import math
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
OUT = Path(ARGS[0] if ARGS else "samples_out")
OUT.mkdir(parents=True, exist_ok=True)
DEV = "cuda"


class Block(nn.Module):
    def __init__(self, d: int, heads: int, fused_attn: bool) -> None:
        super().__init__()
        self.heads, self.fused = heads, fused_attn
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.fused:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # hand-written attention: what the fused kernel replaces
            s = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
            mask = torch.triu(torch.ones(t, t, device=x.device, dtype=torch.bool), 1)
            a = s.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, fused: bool) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, fused) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def nvml_sampler(stop: threading.Event, path: Path, gpu: int = 0) -> None:
    try:
        import pynvml as N
    except ImportError:
        return
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(gpu)
    ids = {
        "gpm_sm_util_pct": N.NVML_GPM_METRIC_SM_UTIL,
        "gpm_sm_occupancy_pct": N.NVML_GPM_METRIC_SM_OCCUPANCY,
        "gpm_dram_bw_util_pct": N.NVML_GPM_METRIC_DRAM_BW_UTIL,
        "gpm_tensor_util_pct": N.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
        "gpm_fp32_util_pct": N.NVML_GPM_METRIC_FP32_UTIL,
        "gpm_pcie_rx_mib_s": N.NVML_GPM_METRIC_PCIE_RX_PER_SEC,
        "gpm_pcie_tx_mib_s": N.NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    }
    try:  # GPM may be unsupported (or refused in a sandbox): keep the plain columns then
        gpm = bool(N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
        prev, cur = (N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()) if gpm else (None, None)
        if gpm:
            N.nvmlGpmSampleGet(h, prev)
    except N.NVMLError as e:
        print("nvml: no GPM metrics:", e, flush=True)
        gpm, prev, cur = False, None, None
    cols = [
        "ts_ns",
        "gpu",
        "util_gpu_pct",
        "util_mem_pct",
        "sm_clock_mhz",
        "mem_clock_mhz",
        "power_mw",
        "temp_c",
        "mem_used_bytes",
        "clocks_event_reasons",
        *ids,
    ]
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        while not stop.wait(0.1):
            u = N.nvmlDeviceGetUtilizationRates(h)
            row = [
                time.time_ns(),
                gpu,
                u.gpu,
                u.memory,
                N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
                N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM),
                N.nvmlDeviceGetPowerUsage(h),
                N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
                N.nvmlDeviceGetMemoryInfo(h).used,
                N.nvmlDeviceGetCurrentClocksEventReasons(h),
            ]
            vals: dict[int, float] = {}
            if gpm:
                N.nvmlGpmSampleGet(h, cur)
                mg = N.c_nvmlGpmMetricsGet_t()
                mg.version = N.NVML_GPM_METRICS_GET_VERSION
                mg.sample1, mg.sample2, mg.numMetrics = prev, cur, len(ids)
                for i, m in enumerate(ids.values()):
                    mg.metrics[i].metricId = m
                N.nvmlGpmMetricsGet(mg)
                vals = {
                    m.metricId: m.value
                    for m in mg.metrics[: len(ids)]
                    if m.nvmlReturn == 0 and not math.isnan(m.value)
                }
                prev, cur = cur, prev
            w.writerow(row + [vals.get(m, "") for m in ids.values()])


def profiled(name: str, step_fn, steps: int = 5) -> None:
    stop = threading.Event()
    t = threading.Thread(target=nvml_sampler, args=(stop, OUT / f"{name}.nvml.csv"), daemon=True)
    t.start()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)
    raw = OUT / f"{name}.pt.trace.json"
    with torch.profiler.profile(
        activities=acts,
        schedule=sched,
        record_shapes=True,
        profile_memory=True,
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
    ) as prof:
        for _ in range(steps):
            step_fn()
            prof.step()
    torch.cuda.synchronize()
    stop.set()
    t.join()
    with raw.open("rb") as src, gzip.open(f"{raw}.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    print(name, os.path.getsize(f"{raw}.gz"), "bytes", flush=True)


def train(name: str, *, bf16: bool, fused: bool, batch: int, seq: int, vocab: int) -> None:
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = GPT(vocab, 512, 4, 8, fused).to(DEV)
    opt = torch.optim.AdamW(
        model.parameters(), lr=1e-4, fused=bf16, foreach=False if not bf16 else None
    )
    host = torch.randint(0, vocab, (batch, seq + 1))
    if bf16:
        host = host.pin_memory()

    def step() -> None:
        data = host.to(DEV, non_blocking=bf16)
        x, y = data[:, :-1], data[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if not bf16:
            loss.item()  # a host sync every step, as naive loops do

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    profiled(name, step)


@torch.no_grad()
def decode(name: str) -> None:
    torch.manual_seed(0)
    model = GPT(8192, 1024, 6, 16, True).to(DEV, torch.bfloat16).eval()
    prompt = torch.randint(0, 8192, (1, 64), device=DEV)

    def step() -> (
        None
    ):  # one generated sequence of 8 tokens, eager, batch 1 (16 gave an ~870 KB trace)
        idx = prompt
        for _ in range(8):
            nxt = model(idx)[:, -1].argmax(-1, keepdim=True)
            idx = torch.cat([idx, nxt], 1)
        idx.cpu()

    step()
    profiled(name, step)


def ddp(
    rank: int, world: int, name: str = "ddp_gpt_bf16_2rank", d: int = 512, layers: int = 4,
    bucket_cap_mb: float = 25, env: dict[str, str] | None = None, batch: int = 8,
) -> None:  # fmt: skip
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", **(env or {}))
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        GPT(8192, d, layers, 8, True).cuda(rank), device_ids=[rank], bucket_cap_mb=bucket_cap_mb
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    data = torch.randint(0, 8192, (batch, 513), device=rank)

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(data[:, :-1]).flatten(0, 1).float(), data[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    folder = OUT / name
    folder.mkdir(exist_ok=True)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1)
    raw = folder / f"rank{rank}.pt.trace.json"
    with torch.profiler.profile(
        activities=acts,
        schedule=sched,
        record_shapes=True,
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
    ) as prof:
        for _ in range(5):
            step()
            prof.step()
    torch.cuda.synchronize()
    with raw.open("rb") as src, gzip.open(f"{raw}.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    dist.destroy_process_group()


if __name__ == "__main__" and "--ddp-comm" in sys.argv:
    import torch.multiprocessing as mp

    big = {"d": 1024, "layers": 8}  # ~120 M parameters: 0.5 GB of fp32 gradients per step
    mp.spawn(ddp, args=(2, "ddp_one_bucket_2rank", *big.values(), 4096), nprocs=2)
    p2p_off = {"NCCL_P2P_DISABLE": "1"}
    mp.spawn(ddp, args=(2, "ddp_p2p_disabled_2rank", *big.values(), 25, p2p_off), nprocs=2)
    # the "after" of both: default 25 MB buckets over NVLink
    mp.spawn(ddp, args=(2, "ddp_default_2rank", *big.values(), 25), nprocs=2)
    # GPU-bound (batch 32: the host runs ahead) with slow links, one bucket vs default
    # buckets: the all-reduce either waits for the end of backward or hides under it.
    for name, cap in (("ddp_gpu_bound_one_bucket_2rank", 4096), ("ddp_gpu_bound_2rank", 25)):
        mp.spawn(ddp, args=(2, name, *big.values(), cap, p2p_off, 32), nprocs=2)
    for f in sorted(OUT.rglob("*.gz")):
        print(f.relative_to(OUT), f.stat().st_size, flush=True)
elif __name__ == "__main__":
    print(torch.__version__, torch.cuda.get_device_name(0), torch.cuda.device_count(), flush=True)
    train("gpt_train_bf16", bf16=True, fused=True, batch=8, seq=512, vocab=8192)
    train("gpt_train_fp32_naive", bf16=False, fused=False, batch=7, seq=500, vocab=8191)
    decode("decode_b1_eager")
    if torch.cuda.device_count() >= 2:
        import torch.multiprocessing as mp

        mp.spawn(ddp, args=(2,), nprocs=2)
        print("ddp", sorted(os.listdir(OUT / "ddp_gpt_bf16_2rank")), flush=True)
