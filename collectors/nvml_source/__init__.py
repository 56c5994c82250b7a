"""Where GPU samples come from: NVML/GPM on a real GPU, or a recording played back.

The only place that imports pynvml (gpu.py). `NvmlSource` is the seam the sampler loop uses;
`PynvmlSource` reads a GPU, `ReplaySource` replays CSVs recorded on a real GPU (the shared
H200 fixtures, data/samples, tests/data) so the dashboard can be shown and tested without one.

Rules from measurements on the H200 (docs/decisions.md D8):
- nothing that blocks: no nvmlDeviceGetPcieThroughput (21 ms), no energy counter (3 ms);
  PCIe and NVLink rates come from GPM;
- GPM needs >= ~100 ms between the two samples it compares; a closer pair returns NaN or a
  false 0, so such a pair is stored as NULL;
- a metric the GPU cannot report is NULL with one warning, never 0.

Modules: `protocol` (NvmlSource, the columns a source fills, the errors a sample raises),
`gpu` (PynvmlSource: NVML and GPM), `replay` (ReplaySource and the recordings it reads).
"""

from collectors.nvml_source.gpu import PynvmlSource
from collectors.nvml_source.protocol import (
    INVENTORY,
    METRICS,
    GpuLostError,
    NvmlSource,
    ReplayFinished,
)
from collectors.nvml_source.replay import ReplaySource, read_recording

__all__ = [
    "INVENTORY",
    "METRICS",
    "GpuLostError",
    "NvmlSource",
    "PynvmlSource",
    "ReplayFinished",
    "ReplaySource",
    "read_recording",
]
