"""What tools/host_time_probe.py recorded, against the step model (D91).

Each argument is NAME:RECORDING:STORE, a recording folder (its summary.json and traces, as the
probe or tools/record_validation_pairs.py writes them) and a scratch store for it (ingested
when new). Per run: the measured unprofiled step U, the GPU time G, the modelled host time H
(the profiled host time, its waits already out, less the profiler's cost per recorded op and
runtime call, from the trace's own aten::empty duration: D94), the same with D93's constant
costs per op and per call and with the one cost per op before them, the profiled host time,
ops and runtime calls per step, and the median aten::empty duration. For the first recording
(the tiny batch, where the step is the host's own time): each host model's error against U,
and what the profiler cost per op.

    python3 tools/host_time_probe_eval.py tiny:P2_DIR:STORE [full:FULL_DIR:STORE …]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.step_model_alternatives import HostRun, host_ms, runs

# The earlier models' constant costs, ms per recorded op and per runtime call: D93's, and the
# one cost per op before it.
D93_MS = np.array([2.9e-3, 3.1e-3])
PER_OP_BEFORE_D93_MS = np.array([3.5e-3, 0.0])


def shipped_host_ms(r: HostRun) -> float:
    m = r.error.model
    return m.host_ms_of(m.host_profiled_ms * 1e6, m.cpu_ops)


def main() -> None:
    first = True
    for arg in sys.argv[1:]:
        name, folder, store = arg.split(":")
        print(f"== {name}")
        print(f"{'run':28s} {'U':>7s} {'G':>7s} {'H':>7s} {'H D93':>7s} {'H 1c':>7s} "
              f"{'H prof':>7s} {'ops':>6s} {'calls':>6s} {'empty':>6s}")  # fmt: skip
        errors: dict[str, list[float]] = {"from aten::empty (D94)": [], "per op + call (D93)": [],
                                          "per op (before D93)": []}  # fmt: skip
        cost_us: list[float] = []
        for r in sorted(runs(Path(store), Path(folder), None), key=lambda r: r.error.workload):
            e, m = r.error, r.error.model
            hosts = (shipped_host_ms(r), host_ms(r, D93_MS), host_ms(r, PER_OP_BEFORE_D93_MS))
            print(f"{e.workload:28s} {e.measured_ms:7.2f} {m.gpu_ms:7.2f} "
                  + " ".join(f"{h:7.2f}" for h in hosts)
                  + f" {m.host_profiled_ms:7.2f} {m.cpu_ops:6.0f} {m.runtime_calls:6.0f}"
                  f" {m.empty_ns / 1e3:6.2f}")  # fmt: skip
            if first and e.host_bound and m.cpu_ops:
                for key, h in zip(errors, hosts, strict=True):
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
