"""GPU-to-GPU and host links and their bandwidth per direction, for the device specs.

NVLink on SXM parts (NVIDIA datasheets, both directions: A100 600, H100/H200 900, B200
1800 GB/s), the PCIe x16 link elsewhere (Gen4 32 GB/s, Gen5 64 GB/s per direction).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Link:
    name: str
    bytes_per_s: float  # per direction


NVLINK3 = Link("NVLink 3", 300e9)
NVLINK4 = Link("NVLink 4", 450e9)
NVLINK5 = Link("NVLink 5", 900e9)
PCIE4_X16 = Link("PCIe Gen4 x16", 32e9)
PCIE5_X16 = Link("PCIe Gen5 x16", 64e9)
