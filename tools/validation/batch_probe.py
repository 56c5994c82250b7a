"""Probe: on three 4x-batch "after" runs that still raise small-batch (the fifteenth
recording's batch-allocator-{llama,neox,opt}-s), does the batch the rule then suggests save
what it estimates? Each run's batch (64) against k x 64 (k from the rule's evidence on the
run: 2.79, 2.25, 2.36), unprofiled as the recorder times (tools/validation/timing.py), the
emptied cache kept, twice each, alternated, in one process.

    python -m tools.validation.batch_probe OUT.json    (on the GPU machine)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from tools.validation.changes import empty_cache
from tools.validation.fresh_pairs import _SMALL_LM, LLAMA, NEOX, OPT
from tools.validation.language_models import lm_train
from tools.validation.runner import clean_up
from tools.validation.timing import WARMUP_STEPS, time_unprofiled
from tools.validation.workload import Ctx

RUN_BATCH = 64
CASES = {"llama-s": (LLAMA, 176), "neox-s": (NEOX, 144), "opt-s": (OPT, 152)}
REPEATS = 2


def _time(ctx: Ctx, cfg: dict[str, Any], batch: int) -> dict[str, Any]:
    w = lm_train(ctx, **{**cfg, **_SMALL_LM, "batch": batch}, after_step=empty_cache)
    w.run(WARMUP_STEPS, lambda: None)
    t = time_unprofiled(ctx, w)
    return {"median_ms": t["median_ms"], "peak_gib": torch.cuda.max_memory_reserved() / 2**30}


def timed(ctx: Ctx, cfg: dict[str, Any], batch: int) -> dict[str, Any]:
    """The unprofiled step of `cfg` at `batch` and the allocator's peak, or the error; the
    workload freed (its frame gone) before the clean-up."""
    try:
        return _time(ctx, cfg, batch)
    except Exception as e:  # a batch that does not fit is a result too
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    finally:
        clean_up(ctx)


def main(out: Path) -> None:
    ctx = Ctx(smoke=False, device=torch.device("cuda"), started=time.perf_counter(),
              budget_s=None)  # fmt: skip
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "cases": {}}
    for name, (cfg, big) in CASES.items():
        runs = result["cases"].setdefault(name, {str(RUN_BATCH): [], str(big): []})
        for _ in range(REPEATS):
            for batch in (RUN_BATCH, big):
                runs[str(batch)].append(timed(ctx, cfg, batch))
                print(name, batch, runs[str(batch)][-1], flush=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
