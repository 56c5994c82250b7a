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

import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.step_model_alternatives import HostRun, host_ms, runs

# D90's least-squares fit over every H200 host-bound run (tools/step_model_alternatives.py):
# ms per recorded op, per runtime call.
TWO_CONSTANTS_MS = np.array([2.79e-3, 4.01e-3])


def two_constant_host_ms(r: HostRun) -> float:
    """H with D90's two constants, less the waits, as the shipped model's H is."""
    return max(host_ms(r, TWO_CONSTANTS_MS) - sum(r.error.model.waits_ms.values()), 0.0)


def main() -> None:
    first = True
    for arg in sys.argv[1:]:
        name, folder, store = arg.split(":")
        print(f"== {name}")
        print(f"{'run':28s} {'U':>7s} {'G':>7s} {'H':>7s} {'H 2c':>7s} {'H prof':>7s} "
              f"{'ops':>6s} {'calls':>6s}")  # fmt: skip
        errors: dict[str, list[float]] = {"per op": [], "per op + call": []}
        cost_us: list[float] = []
        for r in sorted(runs(Path(store), Path(folder), None), key=lambda r: r.error.workload):
            e, m = r.error, r.error.model
            h2 = two_constant_host_ms(r)
            print(f"{e.workload:28s} {e.measured_ms:7.2f} {m.gpu_ms:7.2f} {m.host_ms:7.2f} "
                  f"{h2:7.2f} {m.host_profiled_ms:7.2f} {m.cpu_ops:6.0f} "
                  f"{r.runtime_calls:6.0f}")  # fmt: skip
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
