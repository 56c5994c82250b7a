"""Datasheet specs of common GPUs: peak rate per precision (dense and sparse apart), HBM
bandwidth, L2 size and SM count, each row with its source.

NVIDIA datasheets print tensor-core numbers "with sparsity" (2:4); the dense rate, which is
what a normal GEMM can reach, is half. Confusing the two is the most common roofline error, so
a spec keeps `dense_tflops` and `sparse_tflops` in separate fields. Values and sources:
../shared/reference/roofline-specs-and-recommendation-rules.md §5 (vendor datasheets,
whitepapers; `[3p]` marks third-party figures). Precisions: fp64 (vector), fp64_tc, fp32
(CUDA cores, no tensor cores), tf32, bf16, fp16, fp8, int8 (TOPS); tensor-core figures assume
FP32 accumulation, as PyTorch GEMMs use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from analysis.model.links import NVLINK3, NVLINK4, NVLINK5, PCIE4_X16, PCIE5_X16, Link

PRECISIONS = ("fp64", "fp64_tc", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One GPU's datasheet peaks. Rates in TFLOP/s (TOPS for int8); None = not published."""

    name: str
    match: str  # regex over the lower-cased device name (deviceProperties or NVML)
    dense_tflops: Mapping[str, float | None]
    sparse_tflops: Mapping[str, float | None]
    hbm_gb_per_s: float
    memory_gb: float
    l2_mb: float | None
    sm_count: int | None
    source: str
    link: Link | None = None  # GPU-to-GPU link (NVLink on SXM parts, else PCIe)
    host_link: Link = PCIE4_X16  # to the host (Hopper and Blackwell parts: Gen5)
    confidence: str = "high"  # high: vendor datasheet; low: third-party or derived
    notes: str = field(default="")

    def peak_flop_per_s(self, precision: str, *, sparse: bool = False) -> float | None:
        """Peak rate for a precision in FLOP/s (None where the datasheet has none)."""
        table = self.sparse_tflops if sparse else self.dense_tflops
        v = table.get(precision)
        return None if v is None else v * 1e12

    @property
    def hbm_bytes_per_s(self) -> float:
        """Datasheet memory bandwidth in bytes/s."""
        return self.hbm_gb_per_s * 1e9


def _tc(
    fp64: float | None,
    fp64_tc: float | None,
    fp32: float,
    tf32: float | None,
    bf16: float | None,
    fp8: float | None,
    int8: float | None,
    fp16: float | None = None,
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """(dense, sparse) tables from the dense figures; sparse = 2 × dense for tensor cores."""
    dense = {
        "fp64": fp64, "fp64_tc": fp64_tc, "fp32": fp32, "tf32": tf32, "bf16": bf16,
        "fp16": bf16 if fp16 is None else fp16, "fp8": fp8, "int8": int8,
    }  # fmt: skip
    sparse = {
        k: (2 * v if v is not None and k in ("tf32", "bf16", "fp16", "fp8", "int8") else None)
        for k, v in dense.items()
    }
    return dense, sparse


_A100 = (
    "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), Ampere whitepaper"
)
_H100 = "NVIDIA H100 datasheet https://www.nvidia.com/en-us/data-center/h100/ + Hopper whitepaper"

SPECS: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "H200 SXM 141GB", r"h200", *_tc(34, 67, 67, 494.7, 989.4, 1978.9, 1978.9),
        host_link=PCIE5_X16, link=NVLINK4, hbm_gb_per_s=4800, memory_gb=141, l2_mb=60, sm_count=132,
        source="https://www.nvidia.com/en-us/data-center/h200/ (compute as H100 SXM)",
        notes="L2 60 MiB as the runtime reports it (62,914,560 bytes)",
    ),
    DeviceSpec(
        "H100 PCIe 80GB", r"h100.*pcie", *_tc(26, 51, 51, 378, 756, 1513, 1513),
        host_link=PCIE5_X16, link=PCIE5_X16, hbm_gb_per_s=2000, memory_gb=80, l2_mb=50,
        sm_count=114, source=_H100,
    ),
    DeviceSpec(
        "H100 SXM5 80GB", r"h100", *_tc(34, 67, 67, 494.7, 989.4, 1978.9, 1978.9),
        host_link=PCIE5_X16, link=NVLINK4, hbm_gb_per_s=3350, memory_gb=80, l2_mb=50,
        sm_count=132, source=_H100,
    ),
    DeviceSpec(
        "A100 80GB PCIe", r"a100.*(80gb.*pcie|pcie.*80gb)",
        *_tc(9.7, 19.5, 19.5, 156, 312, None, 624),
        link=PCIE4_X16, hbm_gb_per_s=1935, memory_gb=80, l2_mb=40, sm_count=108, source=_A100,
    ),
    DeviceSpec(
        "A100 40GB PCIe", r"a100.*pcie", *_tc(9.7, 19.5, 19.5, 156, 312, None, 624),
        link=PCIE4_X16, hbm_gb_per_s=1555, memory_gb=40, l2_mb=40, sm_count=108, source=_A100,
    ),
    DeviceSpec(
        "A100 80GB SXM4", r"a100.*80", *_tc(9.7, 19.5, 19.5, 156, 312, None, 624),
        link=NVLINK3, hbm_gb_per_s=2039, memory_gb=80, l2_mb=40, sm_count=108, source=_A100,
    ),
    DeviceSpec(
        "A100 40GB SXM4", r"a100", *_tc(9.7, 19.5, 19.5, 156, 312, None, 624),
        link=NVLINK3, hbm_gb_per_s=1555, memory_gb=40, l2_mb=40, sm_count=108, source=_A100,
    ),
    DeviceSpec(
        "B200 (HGX, per GPU)", r"b200", *_tc(37, 37, 75, 1100, 2250, 4500, 4500),
        host_link=PCIE5_X16, link=NVLINK5, hbm_gb_per_s=7700, memory_gb=180, l2_mb=None,
        sm_count=148,
        source="NVIDIA HGX page https://www.nvidia.com/en-us/data-center/hgx/ (later revision)",
        confidence="medium",
        notes="earlier revision: 40 TF FP64, 8 TB/s, 192 GB; SM count [3p]; L2 not published",
    ),
    DeviceSpec(
        "L40S", r"l40s", *_tc(1.43, None, 91.6, 183, 362, 733, 733),
        link=PCIE4_X16, hbm_gb_per_s=864, memory_gb=48, l2_mb=None, sm_count=142,
        source="https://www.nvidia.com/en-us/data-center/l40s/",
        notes="FP64 derived (1/64 of FP32); L2 unverified",
    ),
    DeviceSpec(
        "L4", r"\bl4\b", *_tc(0.49, None, 30.3, 60, 121, 242.5, 242.5),
        link=PCIE4_X16, hbm_gb_per_s=300, memory_gb=24, l2_mb=48, sm_count=58,
        source="https://www.nvidia.com/en-us/data-center/l4/",
        notes="FP64 derived (1/64 of FP32); L2 and SM count [3p]",
    ),
    DeviceSpec(
        "A10G (AWS G5)", r"a10g", *_tc(None, None, 35, 35, 70, None, 140),
        link=PCIE4_X16, hbm_gb_per_s=600, memory_gb=24, l2_mb=6, sm_count=None,
        source="AWS G5 documentation and Baseten 'A10 vs A10G' [3p]; no NVIDIA datasheet",
        confidence="low", notes="calibrate this card: its figures are third-party",
    ),
    DeviceSpec(
        "A10", r"\ba10\b", *_tc(0.98, None, 31.2, 62.5, 125, None, 250),
        link=PCIE4_X16, hbm_gb_per_s=600, memory_gb=24, l2_mb=6, sm_count=72,
        source="https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
    ),
    DeviceSpec(
        "GeForce RTX 4090", r"4090", *_tc(1.29, None, 82.6, 82.6, 165.2, 330.3, 660.6),
        link=PCIE4_X16, hbm_gb_per_s=1008, memory_gb=24, l2_mb=72, sm_count=128,
        source="NVIDIA Ada Lovelace architecture whitepaper, appendix A",
        notes="bf16/fp16/fp8 with FP32 accumulate (half the FP16-accumulate rate)",
    ),
)  # fmt: skip

_BY_NAME = {s.name: s for s in SPECS}


def spec_names() -> list[str]:
    """Names of every spec in the table (for an override picker)."""
    return [s.name for s in SPECS]


def match_spec(device_name: str | None, override: str | None = None) -> DeviceSpec | None:
    """The spec of a device, matched from its deviceProperties or NVML name.

    Args:
        device_name: e.g. "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 PCIe".
        override: a spec name from `spec_names()`; when given it wins over the match (the
            user knows the card better than its name, e.g. an H100 NVL or a power cap).
    Returns None for an unknown device (e.g. an AMD GPU) or a missing name.
    """
    if override:
        if override not in _BY_NAME:
            raise KeyError(f"{override}: no such spec; known: {', '.join(_BY_NAME)}")
        return _BY_NAME[override]
    if not device_name:
        return None
    name = device_name.lower()
    return next((s for s in SPECS if re.search(s.match, name)), None)
