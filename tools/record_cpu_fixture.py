"""Record tests/data/cpu_mlp.pt.trace.json.gz: a small real CPU-only torch.profiler trace.

Run with the CPU build of torch (requirements-dev pins nothing for it; `pip install
torch==2.13.0`). The trace has ProfilerSteps, shapes and memory events but no GPU.
"""

import gzip
import shutil
import sys
from pathlib import Path

import torch

out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/cpu_mlp.pt.trace.json.gz")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
raw = out.with_suffix("")
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU],
    record_shapes=True,
    profile_memory=True,
    schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),
    on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
) as prof:
    for _ in range(5):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        prof.step()
with raw.open("rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
    shutil.copyfileobj(src, dst)
raw.unlink()
print(out, out.stat().st_size, "bytes, torch", torch.__version__)
