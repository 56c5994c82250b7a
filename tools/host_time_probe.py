"""The host's own time per step of image-classification workloads, measured (D91).

The step model splits a step into GPU time G and host time H, and on a GPU-bound step the
trace cannot show H: the profiled host time there is the model's guess. This records the same
validation workloads (same model, precision, layout, optimizer, step) at a batch of TINY
images, where the GPU's share is a few milliseconds, so the unprofiled step is the host's own
time: nearly the same ops launched (D91), the same Python. Each run is recorded as
tools/validation records a workload (20 unprofiled steps timed, then profiled with the hook),
so its summary and trace load with tools/validation/evaluate.py's helpers
(tools/host_time_probe_eval.py compares them).

On the GPU machine, from the repository root:

    PYTHONUNBUFFERED=1 python3 tools/host_time_probe.py OUT TINY CASE_ID[,CASE_ID…]

(CASE_IDs of timm or torchvision workloads: `tools/record_validation_pairs.py --list`).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from tools.validation.cli import quiet, record, select
from tools.validation.runner import Summary, pack, versions
from tools.validation.workload import Ctx

# The batches the vision workloads pick (Ctx.pick(full, smoke)); every other size (the
# images' 224 pixels) stays.
BATCHES = (32, 64, 128, 256, 512)


@dataclasses.dataclass
class TinyBatch(Ctx):
    """A GPU context whose workloads take `tiny` images a batch."""

    tiny: int = 2

    def pick(self, full: Any, smoke: Any) -> Any:
        return self.tiny if full in BATCHES else full


def main() -> int:
    out, tiny, ids = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cases = [c for c in select(ids) if c.framework in ("timm", "torchvision", "timm+torchvision")]
    if not cases:
        sys.exit(f"{ids}: no timm or torchvision workload among them")
    quiet()
    ctx = TinyBatch(False, torch.device("cuda"), time.perf_counter(), None, tiny)
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary(out, {"argv": sys.argv, "tiny_batch": tiny, "versions": versions()})
    record(ctx, cases, out, summary)
    pack(out, summary, out / "probe.tar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
