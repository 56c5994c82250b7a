"""Where the workloads run, what a built workload is, and one row of the pairs table."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

Boundary = Callable[[], None]


@dataclass
class Ctx:
    """Where the workloads run and at what size."""

    smoke: bool
    device: torch.device
    started: float
    budget_s: float | None

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def pick(self, full: Any, smoke: Any) -> Any:
        """A size: `full` on the GPU machine, `smoke` in the CPU smoke run."""
        return smoke if self.smoke else full

    def seconds_left(self) -> float:
        return float("inf") if self.budget_s is None else self.budget_s - self.elapsed()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


@dataclass
class Workload:
    """A built workload: `run(n, boundary)` runs n steps, calling boundary() before the first
    and after each (a loop, or a framework's callbacks)."""

    run: Callable[[int, Boundary], None]
    units_per_step: int
    unit: str  # tokens, samples or sequences
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    id: str
    pair: str
    role: str  # before | after
    planted: str | None  # the recommendation the run should trigger; None for the tuned runs
    framework: str
    change: str
    needs: tuple[str, ...]  # importable modules; "a|b" for either
    build: Callable[[Ctx], Workload]
    with_stack: bool = False
    record_shapes: bool = True
    profile_memory: bool = True


def loop(step: Callable[[], None]) -> Callable[[int, Boundary], None]:
    """The plain training or decode loop: step, then a boundary."""

    def run(n: int, boundary: Boundary) -> None:
        boundary()
        for _ in range(n):
            step()
            boundary()

    return run


def forever(make: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """Epoch after epoch of an iterable (a DataLoader), as one iterator."""
    while True:
        yield from make()
