"""What tools/host_time_probe.py recorded, against the step model (D91).

Each argument is NAME:RECORDING:STORE, a recording folder (its summary.json and traces, as the
probe or tools/record_validation_pairs.py writes them) and a scratch store for it (ingested
when new). Per run: the measured unprofiled step U, the GPU time G, the modelled host time H
(the profiled host time less OVERHEAD_NS_PER_OP per recorded op, less the waits), the same with
D90's two constants per op and per runtime call, the profiled host time, ops and runtime calls
per step. For the first recording (the tiny batch, where the step is the host's own time):
each host model's error against U, and what the profiler cost per op.

    python3 tools/host_time_probe_eval.py tiny:P2_DIR:STORE [full:FULL_DIR:STORE …]
"""

from __future__ import annotations

import functools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.facts import Facts
from tools.validation import evaluate as ev
from tools.validation.step_errors import StepError, step_errors

# D90's least-squares fit over every H200 host-bound run: ms per recorded op, per runtime call.
PER_OP_MS, PER_CALL_MS = 2.79e-3, 4.01e-3


def runs(folder: Path, store: Path) -> list[tuple[StepError, Facts]]:
    workloads = ev.summary(folder)
    facts_of = functools.cache(ev.scratch_store(store, workloads, folder, None))
    return [(e, facts_of(e.workload)) for e in step_errors(facts_of, workloads)]


def two_constant_host_ms(e: StepError, calls: float) -> float:
    m = e.model
    profiler_ms = PER_OP_MS * m.cpu_ops + PER_CALL_MS * calls
    return max(m.host_profiled_ms - profiler_ms - sum(m.waits_ms.values()), 0.0)


def main() -> None:
    first = True
    for arg in sys.argv[1:]:
        name, folder, store = arg.split(":")
        print(f"== {name}")
        print(f"{'run':28s} {'U':>7s} {'G':>7s} {'H':>7s} {'H 2c':>7s} {'H prof':>7s} "
              f"{'ops':>6s} {'calls':>6s}")  # fmt: skip
        errors: dict[str, list[float]] = {"per op": [], "per op + call": []}
        cost_us: list[float] = []
        for e, f in sorted(runs(Path(folder), Path(store)), key=lambda r: r[0].workload):
            m = e.model
            calls = float(f.host.step_host["runtime_calls"].median())
            h2 = two_constant_host_ms(e, calls)
            print(f"{e.workload:28s} {e.measured_ms:7.2f} {m.gpu_ms:7.2f} {m.host_ms:7.2f} "
                  f"{h2:7.2f} {m.host_profiled_ms:7.2f} {m.cpu_ops:6.0f} {calls:6.0f}")  # fmt: skip
            if first and e.host_bound and m.cpu_ops:
                for key, h in (("per op", m.host_ms), ("per op + call", h2)):
                    errors[key].append(abs(100 * (h - e.measured_ms) / e.measured_ms))
                cost_us.append(e.profiler_ms * 1e3 / m.cpu_ops)
        if first and cost_us:
            for key, errs in errors.items():
                within = sum(x <= 30 for x in errs)
                print(f"host time {key}: median |error| {statistics.median(errs):.1f} % "
                      f"(within 30 %: {within} of {len(errs)})")  # fmt: skip
            print(f"the profiler's cost per op: median {statistics.median(cost_us):.2f} µs, "
                  f"{min(cost_us):.2f} to {max(cost_us):.2f}")  # fmt: skip
        first = False


if __name__ == "__main__":
    main()
