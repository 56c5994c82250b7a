"""Probe: on 4x-batch "after" runs, does the batch small-batch then suggests save what it
estimates? Each run's batch against k x that batch (k from the rule's evidence on the run),
unprofiled as the recorder times (tools/validation/timing.py), twice each, alternated, in one
process. Two sets:
- allocator (D100): the fifteenth recording's batch-allocator-{llama,neox,opt}-s, batch 64
  against 2.79, 2.25, 2.36 x, the emptied cache kept;
- gpu-bound (D101): the ninth to eleventh recordings' batch-{llama,neox,qwen2,opt}-b32, GPU
  busy 94-98 % of the step, batch 32 against 2.74, 2.14, 2.73, 2.27 x (the rule's k on each
  H100 after run with D101's fixed GPU time), and the tune pair batch-gpt2's after run
  (its for-loop AdamW kept), 3.54 x;
- gpu-bound-vision (D101): the ninth to eleventh recordings' batch-{ghostnet,mobilenet,regnety,
  mixnet,densenet}-b512 (timm), batch 512 against 4, 4, 3.15, 3.15 and 1.81 x.

    python -m tools.validation.batch_probe OUT.json [SET]    (on the GPU machine; allocator)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from tools.validation.changes import empty_cache
from tools.validation.fresh_pairs import (
    _SMALL_LM,
    DENSENET,
    LLAMA,
    MOBILENET,
    NEOX,
    OPT,
    QWEN2,
    REGNET,
)
from tools.validation.language_models import lm_train
from tools.validation.pairs import GPT2_6L
from tools.validation.runner import clean_up
from tools.validation.timing import WARMUP_STEPS, time_unprofiled
from tools.validation.vision import timm_model, vision_train
from tools.validation.workload import Ctx, Workload

Build = Callable[[Ctx, Any, int], Workload]


def emptied_lm(ctx: Ctx, cfg: dict[str, Any], batch: int) -> Workload:
    """The LM with its cache emptied after every step, at the fourteenth's small sizes."""
    return lm_train(ctx, **{**cfg, **_SMALL_LM, "batch": batch}, after_step=empty_cache)


def lm(ctx: Ctx, cfg: dict[str, Any], batch: int) -> Workload:
    return lm_train(ctx, **{**cfg, "batch": batch})


def _timm(ctx: Ctx, model: str, batch: int) -> Workload:
    return vision_train(ctx, timm_model(model), batch)


# set: (the workload, the runs' batch, {case: (model, k x batch)})
PROBES: dict[str, tuple[Build, int, dict[str, tuple[Any, int]]]] = {
    "allocator": (
        emptied_lm, 64,
        {"llama-s": (LLAMA, 176), "neox-s": (NEOX, 144), "opt-s": (OPT, 152)},
    ),
    "gpu-bound": (
        lm, 32,
        {"llama": (LLAMA, 88), "neox": (NEOX, 68), "qwen2": (QWEN2, 87), "opt": (OPT, 73),
         "gpt2": ({**GPT2_6L, "optimizer": "for-loop"}, 113)},
    ),
    "gpu-bound-vision": (
        _timm, 512,
        {"ghostnet": ("ghostnet_100", 2048), "mobilenet": (MOBILENET, 2048),
         "regnety": (REGNET, 1613), "mixnet": ("mixnet_s", 1613), "densenet": (DENSENET, 927)},
    ),
}  # fmt: skip
REPEATS = 2


def _time(ctx: Ctx, build: Build, model: Any, batch: int) -> dict[str, Any]:
    w = build(ctx, model, batch)
    w.run(WARMUP_STEPS, lambda: None)
    t = time_unprofiled(ctx, w)
    return {"median_ms": t["median_ms"], "peak_gib": torch.cuda.max_memory_reserved() / 2**30}


def timed(ctx: Ctx, build: Build, model: Any, batch: int) -> dict[str, Any]:
    """The unprofiled step of `model` at `batch` and the allocator's peak, or the error; the
    workload freed (its frame gone) before the clean-up."""
    try:
        return _time(ctx, build, model, batch)
    except Exception as e:  # a batch that does not fit is a result too
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    finally:
        clean_up(ctx)


def main(out: Path, probe: str) -> None:
    ctx = Ctx(smoke=False, device=torch.device("cuda"), started=time.perf_counter(),
              budget_s=None)  # fmt: skip
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "cases": {}}
    build, run_batch, cases = PROBES[probe]
    for name, (model, big) in cases.items():
        runs = result["cases"].setdefault(name, {str(run_batch): [], str(big): []})
        for _ in range(REPEATS):
            for batch in (run_batch, big):
                runs[str(batch)].append(timed(ctx, build, model, batch))
                print(name, batch, runs[str(batch)][-1], flush=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "allocator")
