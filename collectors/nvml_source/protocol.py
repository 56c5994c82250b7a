"""The seam between the sampler and a source of GPU samples: `NvmlSource`, the sample and
inventory columns a source fills, and the two ways a sample can end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from data.schema import column_names

# Sample columns a source fills; the sampler adds the keys and the cost.
METRICS: tuple[str, ...] = tuple(
    c
    for c in column_names("gpu_samples")
    if c not in ("host", "gpu", "ts_ns", "source", "agent_id", "sample_cost_ns")
)
INVENTORY: tuple[str, ...] = tuple(
    c
    for c in column_names("gpu_inventory")
    if c not in ("host", "gpu", "ts_ns", "source", "agent_id", "tags")
)

Warn = Callable[[str], None]


class GpuLostError(Exception):
    """A GPU stopped answering (fell off the bus, reset): the sampler drops it."""


class ReplayFinished(Exception):
    """A replay without --loop has played every recorded row."""


class NvmlSource(Protocol):
    """What the sampler needs from a source of GPU samples."""

    kind: str  # "nvml" or "replay": stored in the `source` column

    def gpu_indices(self) -> list[int]: ...

    def inventory(self, gpu: int) -> dict[str, Any]:
        """The gpu_inventory columns of one GPU (see data/schema.py)."""
        ...

    def sample(self, gpu: int) -> dict[str, Any]:
        """One sample: the METRICS columns (None = not available), and `ts_ns` when the
        source keeps recorded times. Raises GpuLostError or ReplayFinished."""
        ...

    def close(self) -> None: ...
