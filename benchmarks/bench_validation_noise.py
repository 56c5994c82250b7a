"""How reproducible the validation pairs' measured savings are, and what that does to the
verdicts on the estimates.

The eighth recording (tests/data/validation_h200_interleaved, `tools/record_validation_pairs.py
--interleave i8`) measured every pair again on the H200 with both runs in one process and
their timing interleaved in 4 rounds (tools/validation/interleave.py). Per pair this prints:

- the saving as the validation set has it (one run after the other, tests/data/validation_h200);
- the interleaved saving (the median of the rounds' paired differences) and its rounds' range;
- the estimate (the validation set's before trace), and whether it is within 35 % or 5 points
  of the step of each measurement.

The counts per half say how many verdicts of "within" the choice of measurement decides. With
`--traces DIR` (the recording's traces, unpacked from the device's tars: not in the repository,
whose copy to the GPU machine is limited to 64 MiB), the eighth recording's own before runs are
judged against their own session's saving as well, the table bench_validation.py prints.
Pure analysis: no timing.

    python3 benchmarks/bench_validation_noise.py [--store DIR] [--traces DIR]   # ~4 minutes
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.validation import evaluate as ev
from tools.validation import summaries


@dataclass(frozen=True)
class Row:
    first: ev.PairResult  # the estimate against the validation set's own measurement
    again: ev.PairResult  # the same estimate against the interleaved one
    rounds: list[float]

    @property
    def moved_ms(self) -> float:
        return abs(self.first.measured_ms - self.again.measured_ms)

    @property
    def spread_ms(self) -> float:
        return max(self.rounds) - min(self.rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, help="scratch store for the validation set's runs")
    ap.add_argument("--traces", type=Path, help="the eighth recording's unpacked traces")
    args = ap.parse_args()
    old = ev.summary()
    again = ev.summary(ev.DATA_INTERLEAVED)
    results = {r.pair: r for r in ev.evaluate(ev.scratch_store(args.store, old), old)}
    rows = []
    for p in ev.pairs(again):
        r, rounds = results.get(ev.base_pair(p)), ev.round_savings(again, p)
        if r is not None and rounds:
            rows.append(Row(r, replace(r, measured_ms=ev.measured_saving(again, p)), rounds))
    rows.sort(key=lambda x: (x.first.half != "tune", x.first.pair))
    print(
        "| pair | half | planted | estimate (ms) | saving, one after the other (ms) | "
        "interleaved: median (ms) | its 4 rounds (ms) | step (ms) | within: first / "
        "interleaved |\n|---|---|---|---|---|---|---|---|---|"
    )
    yes = {True: "yes", False: "no"}
    for x in rows:
        r = x.first
        est = "—" if r.est_ms is None else f"{r.est_ms:.2f}"
        print(
            f"| {r.pair} | {r.half} | `{r.planted}` | {est} | {r.measured_ms:.2f} | "
            f"{x.again.measured_ms:.2f} | {min(x.rounds):.2f} to {max(x.rounds):.2f} | "
            f"{r.step_ms:.2f} | {yes[r.within]} / {yes[x.again.within]} |"
        )
    print()
    for half in ("tune", "held-out"):
        h = [x for x in rows if x.first.half == half]
        print(
            f"{half}: {len(h)} pairs; estimate within the first measurement "
            f"{sum(x.first.within for x in h)}, within the interleaved one "
            f"{sum(x.again.within for x in h)} (both "
            f"{sum(x.first.within and x.again.within for x in h)}); the saving moved between "
            f"the recordings by a median {statistics.median(x.moved_ms for x in h):.2f} ms (max "
            f"{max(x.moved_ms for x in h):.2f}); a pair's rounds spread over a median "
            f"{statistics.median(x.spread_ms for x in h):.2f} ms, wider than the check's "
            f"tolerance in {sum(x.spread_ms > x.again.tolerance_ms for x in h)}"
        )
    if args.traces:
        print()
        same_session(args.traces, again)


def same_session(traces: Path, workloads: dict[str, Any]) -> None:
    """The eighth recording judged on its own traces (as bench_validation.py judges the set)."""
    results = ev.evaluate(ev.scratch_store(None, workloads, traces), workloads)
    print(summaries.table(results))
    print()
    for half in ("tune", "held-out"):
        print(summaries.half_counts(results, half))


if __name__ == "__main__":
    main()
