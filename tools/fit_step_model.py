"""Fit the profiler's host cost per recorded op (analysis.step_model.OVERHEAD_NS_PER_OP) on the
validation runs, and state the step model's error where it was not fitted.

The cost is read off host-bound runs (GPU time under 85 % of the unprofiled step, no sync in
the step): there the unprofiled step is the host's own time, so the profiled host time less
the recorder's unprofiled median is what the profiler added. The fit is the median cost per
recorded CPU op over the tune half's host-bound runs (evaluate.OVERHEAD_HALVES); the
error is the modelled unprofiled step (no hook, no tag) against the recorder's median, for
every run of each half.

Usage: python3 tools/fit_step_model.py [STORE_DIR]   (a scratch store; made when missing)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.validation import evaluate as ev
from tools.validation.step_errors import (
    profiler_cost_per_op_ns,
    step_error_summary,
    step_errors,
)


def main() -> None:
    workloads = ev.summary()
    facts_of = ev.scratch_store(Path(sys.argv[1]) if len(sys.argv) > 1 else None, workloads)
    errors = step_errors(facts_of, workloads)
    per_op = profiler_cost_per_op_ns(e for e in errors if e.half == "tune")
    print(f"tune host-bound runs: {len(per_op)}; profiler cost per recorded op: median "
          f"{statistics.median(per_op) / 1e3:.2f} µs, range {min(per_op) / 1e3:.2f} to "
          f"{max(per_op) / 1e3:.2f} µs (the model uses step_model.py's constant)")  # fmt: skip
    for e in errors:
        print(f"  {e.workload:36s} {e.half:9s} {'host-bound' if e.host_bound else '':10s} "
              f"modelled {e.modelled_ms:8.2f} measured {e.measured_ms:8.2f} ms "
              f"({100 * (e.modelled_ms - e.measured_ms) / e.measured_ms:+.0f} %)")  # fmt: skip
    print(step_error_summary(errors))


if __name__ == "__main__":
    main()
