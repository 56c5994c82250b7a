"""What a pair is made of: the two cases of one change, flag variants of a run, and the
changes made after each step (a loss read back, the cache emptied)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tools.validation.workload import Case, Ctx, Workload


def host_sync_every_step() -> Callable[[torch.Tensor], None]:
    losses: list[float] = []
    return lambda loss: losses.append(loss.item())


def host_sync_every_100() -> Callable[[torch.Tensor], None]:
    state: dict[str, Any] = {"sum": None, "n": 0, "read": []}

    def after(loss: torch.Tensor) -> None:
        state["sum"] = loss.detach() if state["sum"] is None else state["sum"] + loss.detach()
        state["n"] += 1
        if state["n"] % 100 == 0:
            state["read"].append(state["sum"].item() / 100)
            state["sum"] = None

    return after


def empty_cache(_: torch.Tensor) -> None:
    torch.cuda.empty_cache()


def pair(
    pair_id: str,
    planted: str,
    framework: str,
    change: str,
    needs: tuple[str, ...],
    before: Callable[[Ctx], Workload],
    after: Callable[[Ctx], Workload],
) -> list[Case]:
    common = {"pair": pair_id, "framework": framework, "change": change, "needs": needs}
    return [
        Case(f"{pair_id}-before", role="before", planted=planted, build=before, **common),
        Case(f"{pair_id}-after", role="after", planted=None, build=after, **common),
    ]


def variant(cases: list[Case], pair_ids: tuple[str, ...], suffix: str, **flags: bool) -> list[Case]:
    """The tuned runs of these pairs once more, profiled with other profiler flags
    (with_stack, record_shapes, profile_memory): the profiler-overhead model is fitted on
    traces of each kind."""
    return [
        Case(**{**vars(c), "id": f"{c.id}-{suffix}", **flags})
        for c in cases
        if c.pair in pair_ids and c.role == "after"
    ]


TF = ("transformers",)
