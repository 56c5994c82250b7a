"""How one window of the explorable timeline spends its shapes (analysis.timeline_view).

A window never carries more than MAX_SHAPES shapes: when it holds more, the GPU lanes get a
busy-fraction grid (at most GRID_SHARE of the shapes, aggregated in DuckDB) and the rest goes
to the longest slices, CPU slices at least a pixel long, so the outer ops, the steps and the
long kernels are drawn and the short ones appear as the window narrows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.timeline import MAX_SHAPES

PIXELS = 2_000  # about one per horizontal pixel of a wide chart: 1 px of the window
GRID_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Budget:
    """How a window's shapes are spent: `exact` when every slice fits; else the CPU slices
    at least `min_dur_ns` long (about a pixel), and every GPU activity when they fit beside
    them, else a grid of `buckets` per GPU lane behind the longest `gpu_limit` activities
    and `cpu_limit` slices."""

    exact: bool
    buckets: int
    gpu_limit: int
    cpu_limit: int
    min_dur_ns: int


def plan(
    t0_ns: int, t1_ns: int, gpu: int, cpu: int, cpu_long: int, gpu_lanes: int,
    max_shapes: int = MAX_SHAPES,
) -> Budget:  # fmt: skip
    """The budget of a window holding `gpu` GPU activities and `cpu` CPU slices (`cpu_long`
    of them at least a pixel, (t1 − t0) / PIXELS, long)."""
    min_dur = max(1, (t1_ns - t0_ns) // PIXELS)
    if gpu + cpu <= max_shapes:
        return Budget(True, 0, gpu, cpu, 0)
    if gpu + cpu_long <= max_shapes:  # every GPU activity and every slice a pixel long
        return Budget(False, 0, gpu, cpu_long, min_dur)
    cells = int(max_shapes * GRID_SHARE) if gpu else 0
    buckets = max(1, min(PIXELS, cells // max(gpu_lanes, 1))) if gpu else 0
    room = max_shapes - buckets * gpu_lanes
    cpu_limit = min(cpu_long, room // 2)
    return Budget(False, buckets, min(gpu, room - cpu_limit), cpu_limit, min_dur)


def bucket_ns_of(t0_ns: int, t1_ns: int, buckets: int) -> int:
    """The bucket width that spreads [t0, t1) over `buckets`."""
    return max(1, math.ceil((t1_ns - t0_ns) / max(buckets, 1)))
