"""Fit the profiler's host cost per recorded CPU op or runtime call
(analysis.step_model.COST_PER_EVENT_EMPTY, a multiple of the trace's median aten::empty
duration, and FALLBACK_NS_PER_EVENT) on validation runs, and state the step model's error
where it was not fitted.

The cost is read off profiler-bound runs (GPU time under 85 % of the unprofiled step, no sync,
under a millisecond of waits: step_errors.StepError.profiler_bound): there the unprofiled
step is the host's own time, so the profiled host time less the recorder's unprofiled median
is what the profiler added. The fit (step_errors.profiler_cost_fit) takes the H200's tune
half (halves.OVERHEAD_HALVES) alone (D94). Its error is stated on the H200's held-out half
and on the H100's runs, another machine; the modelled unprofiled step (no hook, no tag)
against the recorder's median, for every run of each half.

Usage: python3 tools/fit_step_model.py H200_STORE H100_STORE   (scratch stores; made when
missing, ~7 minutes on 2 cores)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.step_model import COST_PER_EVENT_EMPTY, FALLBACK_NS_PER_EVENT
from tools.validation import evaluate as ev
from tools.validation.step_errors import (
    StepError,
    profiler_cost_fit,
    step_error_summary,
    step_errors,
)


def host_error_pct(e: StepError) -> float:
    """The shipped model's host time (the profiled host time, its waits already out, less the
    profiler's cost) against the measured step of a profiler-bound run."""
    m = e.model
    host = m.host_ms_of(m.host_profiled_ms * 1e6, m.cpu_ops)
    return abs(100 * (host - e.measured_ms) / e.measured_ms)


def main() -> None:
    workloads = ev.summary()
    errors = step_errors(ev.scratch_store(Path(sys.argv[1]), workloads), workloads)
    h100 = ev.summary(ev.DATA_H100)
    h100_errors = step_errors(ev.scratch_store(Path(sys.argv[2]), h100, ev.DATA_H100, None), h100)
    tune = [e for e in errors if e.half == "tune"]
    multiple, fallback_ns = profiler_cost_fit(tune)
    print(f"fitted on {sum(e.profiler_bound for e in tune)} profiler-bound runs of the H200's "
          f"tune half: {multiple:.3f} × the median aten::empty per op or runtime call, "
          f"{fallback_ns:.0f} ns without one; the model uses {COST_PER_EVENT_EMPTY} and "
          f"{FALLBACK_NS_PER_EVENT}")  # fmt: skip
    for name, runs in (("H200 tune", tune),
                       ("H200 held-out", [e for e in errors if e.half == "held-out"]),
                       ("H100", h100_errors)):  # fmt: skip
        err = [host_error_pct(e) for e in runs if e.profiler_bound]
        within = sum(x <= 30 for x in err)
        print(f"host time, {name}: {len(err)} profiler-bound runs, median |error| "
              f"{statistics.median(err):.1f} %, within 30 %: {within}")  # fmt: skip
    for e in errors:
        print(f"  {e.workload:36s} {e.half:9s} {'host-bound' if e.host_bound else '':10s} "
              f"modelled {e.modelled_ms:8.2f} measured {e.measured_ms:8.2f} ms "
              f"({100 * (e.modelled_ms - e.measured_ms) / e.measured_ms:+.0f} %)")  # fmt: skip
    print(step_error_summary(errors))


if __name__ == "__main__":
    main()
