"""Which ranks the analyses of a run of many ranks read: a sample that keeps the extremes.

Above MAX_ANALYSED_RANKS ranks the report, the recommendations and every page built on
analysis.facts read and model a sample of the run's ranks, so their cost grows with the
events of a few ranks, not with ranks × events (512 ranks of one DDP job: 21.7 s for all of
them; docs/decisions.md D64). The sample is chosen from per-rank step times and
communication time read over every rank (data.reads.rank_load), so the ranks a user acts on
first are always in it: the slowest step, the most and the least time outside
communication (the likely straggler, and the rank that waits most), and the rest evenly
spaced in that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.kernel_classes import classify

MAX_ANALYSED_RANKS = 16
# Why a rank is in the sample, in the order a summary names them.
MOST, SLOWEST, LEAST, SPREAD = (
    "most time outside communication",
    "slowest step",
    "least time outside communication",
    "spread of time outside communication",
)


@dataclass(frozen=True, slots=True)
class RankSample:
    """The analysed ranks of a run of `of` ranks, in order, and why each was chosen; the
    whole run's kernel count and kernel time (ns), which a sum over the sample is not."""

    ranks: tuple[int, ...]
    of: int
    reasons: dict[int, str]
    kernel_count: int
    kernel_ns: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "ranks": list(self.ranks),
            "of": self.of,
            "chosen_by": [{"rank": r, "why": self.reasons[r]} for r in self.ranks],
        }


def choose(load: pd.DataFrame, size: int) -> RankSample | None:
    """The sample of the ranks in `load` (data.reads.rank_load), None when there are no
    more than `size` ranks (then every rank is analysed). Ties are broken by rank, so the
    same run always gives the same sample."""
    if size < 3:  # its two ends and the slowest step
        raise ValueError(f"a sample of ranks holds at least 3, not {size}")
    per_rank = _per_rank(load)
    if len(per_rank) <= size:
        return None
    slowest = int(per_rank.sort_values(["step_ms", "rank"], kind="stable").index[-1])
    # Ties (ranks alike to the nanosecond) put the lowest rank at the top end: the one the
    # straggler rule names among equals, so the summary and the finding name the same rank.
    order = per_rank.sort_values(
        ["outside_ms", "rank"], ascending=[True, False], kind="stable"
    ).index.tolist()
    # Evenly spaced through the order of time outside communication, both ends included:
    # in a data-parallel job every rank's step takes as long as the slowest's, and what
    # differs is the time outside communication (the others wait inside their
    # collectives), which the straggler rule compares. Evenly spaced keeps the sample's
    # averages near the run's (bench_rank_sample.py); a finer grid each pass until full.
    picked: dict[int, str] = {
        int(order[-1]): MOST,
        int(order[0]): LEAST,
    }
    picked.setdefault(slowest, SLOWEST)
    grid = size - len(picked)
    while len(picked) < size:
        for i in np.linspace(0, len(order) - 1, grid).round().astype(int):
            if len(picked) == size:
                break
            picked.setdefault(int(order[int(i)]), SPREAD)
        grid *= 2
    ranks = tuple(sorted(picked))
    return RankSample(
        ranks,
        len(per_rank),
        {r: picked[r] for r in ranks},
        int(per_rank["kernel_count"].sum()),
        int(per_rank["kernel_ns"].sum()),
    )


def _per_rank(load: pd.DataFrame) -> pd.DataFrame:
    """Per rank (index): step_ms, outside_ms (the step less its communication kernels'
    time per step: a rank-order proxy of the straggler rule's time outside exposed
    communication, Spearman 0.88 on the mixed 64-rank run of bench_rank_sample.py),
    kernel_count, kernel_ns."""
    comm = classify(load["name"].fillna(""))["kernel_class"].to_numpy() == "comm"
    frame = load.assign(comm_ns=load["total_ns"].where(comm, 0))
    g = frame.groupby("rank", sort=True)
    step_ms = g["step_ms"].first()
    out = pd.DataFrame(
        {
            "step_ms": step_ms,
            "outside_ms": step_ms - g["comm_ns"].sum() / 1e6 / g["steps"].first(),
            "kernel_count": g["count"].sum(),
            "kernel_ns": g["total_ns"].sum(),
        }
    )
    out.index = out.index.astype(int)
    return out


def sample_text(sample: dict[str, Any]) -> str:
    """One line saying which ranks of a run of many the figures come from, grouped by why
    each was chosen (`sample`: RankSample.as_dict, as the JSON report holds it)."""
    by_why: dict[str, list[int]] = {why: [] for why in (MOST, SLOWEST, LEAST, SPREAD)}
    for c in sample["chosen_by"]:
        by_why.setdefault(str(c["why"]), []).append(int(c["rank"]))
    return (
        f"Figures other than the run's kernel count and time come from "
        f"{len(sample['ranks'])} of its {sample['of']} ranks: "
        + "; ".join(f"{why} {', '.join(map(str, ranks))}" for why, ranks in by_why.items() if ranks)
        + "."
    )
