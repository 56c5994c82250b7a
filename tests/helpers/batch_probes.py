"""The batch probes (tools/validation/batch_probe.py): a 4x batch pair's after run timed at
its batch and at the k x batch small-batch then suggests, read as the saving per step."""

from __future__ import annotations

import json
import statistics

from tools.validation import evaluate as ev

# The batch probes (tools/validation/batch_probe.py, 2026-12-07): 4x-batch after runs, each
# timed at its batch and at the k x batch small-batch then suggests. allocator (D100): three of
# the fifteenth's; gpu-bound and gpu-bound-vision (D101): four GPU-bound LMs', the tune pair
# batch-gpt2's and five timm models'.
PROBE_FILES = {
    "allocator": ("batch_probe.json", "batch-allocator-{}-after"),
    "gpu-bound": ("batch_probe_gpu.json", "batch-{}-b32-after"),
    "gpu-bound-vision": ("batch_probe_vision.json", "batch-{}-b512-after"),
}
PROBES = {p: json.loads((ev.DATA_H100 / file).read_text()) for p, (file, _) in PROBE_FILES.items()}


def probe_saving_ms(probe: str, model: str) -> tuple[float, float]:
    """(k, saving per the run's batch): the run's median step less the larger batch's, scaled
    to the run's batch, each the median of the probe's repeats."""
    cases = PROBES[probe]["cases"][model]
    batches = {int(b): [r["median_ms"] for r in rs] for b, rs in cases.items()}
    small, big = sorted(batches)
    step, bigger = (statistics.median(batches[b]) for b in (small, big))
    return big / small, step - bigger * small / big


def probe_after(probe: str, model: str) -> str:
    return "batch-gpt2-after" if model == "gpt2" else PROBE_FILES[probe][1].format(model)
