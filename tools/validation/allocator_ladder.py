"""Probe: how an emptied cache's cost grows with the batch (D102, for small-batch's waiting).
The fourteenth recording's small LMs (llama-s, opt-s: d 512, 8 layers, 512 tokens) timed at
several batches with torch.cuda.empty_cache() after every step and without, unprofiled as
the recorder times, twice each, alternated, in one process: the difference is what the
emptied cache costs a step at that batch.

    python -m tools.validation.allocator_ladder OUT.json    (on the GPU machine)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from tools.validation.batch_probe import REPEATS, emptied_lm, lm, timed
from tools.validation.fresh_pairs import _SMALL_LM, LLAMA, OPT
from tools.validation.workload import Ctx

LADDERS = {
    "llama-s": ({**LLAMA, **_SMALL_LM}, (16, 32, 64, 128, 176)),
    "opt-s": ({**OPT, **_SMALL_LM}, (16, 64, 152)),
}
WAYS = {"emptied": emptied_lm, "kept": lm}


def main(out: Path) -> None:
    ctx = Ctx(smoke=False, device=torch.device("cuda"), started=time.perf_counter(),
              budget_s=None)  # fmt: skip
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "cases": {}}
    for name, (cfg, batches) in LADDERS.items():
        case = result["cases"].setdefault(name, {w: {str(b): [] for b in batches} for w in WAYS})
        for _ in range(REPEATS):
            for batch in batches:
                for way, build in WAYS.items():
                    case[way][str(batch)].append(timed(ctx, build, cfg, batch))
                    print(name, way, batch, case[way][str(batch)][-1], flush=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
