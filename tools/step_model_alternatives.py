"""The two changes to the step model that D90 measured and did not adopt, measured again.

1. A profiler cost per runtime call beside the cost per CPU op: the cost is fitted on the
   H200's host-bound validation runs (GPU time under 85 % of the unprofiled step, no sync)
   and judged by 5-fold cross-validation, each model group (evaluate.model_group: the pairs
   that run one model) held out of the fit of its fold, then on the H100's host-bound runs
   with a fit on every H200 one.
2. The GPU backlog at the first recorded step (the median time from a kernel's launch to its
   start): work queued on the GPU when recording began shows a host that ran ahead of the
   GPU unprofiled, a GPU-bound step, whatever the host model says.

Usage: python3 tools/step_model_alternatives.py H200_STORE H100_STORE   (scratch stores;
made when missing, ~20 min for the H200's runs on 2 cores)
"""

from __future__ import annotations

import functools
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.facts import Facts
from tools.validation import evaluate as ev
from tools.validation.step_errors import StepError, profiler_cost_per_op_ns, step_errors

FOLDS = 5


@dataclass(frozen=True)
class HostRun:
    """One run's step as step_errors models it, its model group, and what this tool adds."""

    error: StepError
    group: tuple[str, ...]  # evaluate.model_group: the pairs that run the same model
    backlog_ms: float  # median launch-to-start delay of the first recorded step's kernels

    @property
    def host_bound(self) -> bool:
        return self.error.profiler_bound


def backlog_ms(f: Facts) -> float:
    k = f.events[(f.events["kind"] == "kernel") & f.events["step"].notna()]
    first = k[k["step"] == k["step"].min()]
    delay = (first["ts_ns"] - first["launch_ts_ns"].astype("Int64")).dropna()
    return float(delay.median()) / 1e6 if len(delay) else 0.0


def runs(store: Path, folder: Path, ceilings: Path | None) -> list[HostRun]:
    workloads = ev.summary(folder)
    facts_of = functools.cache(ev.scratch_store(store, workloads, folder, ceilings))
    return [
        HostRun(
            error=e,
            group=ev.model_group(workloads[e.workload]["pair"]),
            backlog_ms=backlog_ms(facts_of(e.workload)),
        )
        for e in step_errors(facts_of, workloads)
    ]


def fit(train: list[HostRun], per_call: bool) -> np.ndarray:
    """ms of profiler cost per op (and per runtime call): the per-op median, or least squares."""
    if not per_call:
        per_op_ns = profiler_cost_per_op_ns(r.error for r in train)
        return np.array([statistics.median(per_op_ns) / 1e6, 0.0])
    extra = np.array([r.error.profiler_ms for r in train])
    x = np.array([[r.error.model.cpu_ops, r.error.model.runtime_calls] for r in train])
    return np.asarray(np.linalg.lstsq(x, extra, rcond=None)[0], dtype=float)


def host_ms(r: HostRun, cost: np.ndarray) -> float:
    m = r.error.model
    return max(m.host_profiled_ms - float(cost @ [m.cpu_ops, m.runtime_calls]), 0.0)


def error_pct(r: HostRun, cost: np.ndarray) -> float:
    return abs(100 * (host_ms(r, cost) - r.error.measured_ms) / r.error.measured_ms)


def summary(name: str, errors: list[float]) -> str:
    e = np.array(errors)
    within = np.mean(e <= 30) * 100
    return (f"{name:14s} runs {len(e):3d}  median |error| {np.median(e):5.1f} %  "
            f"p90 {np.percentile(e, 90):5.1f} %  within 30 % {within:3.0f} %")  # fmt: skip


def cross_validated(h200: list[HostRun], per_call: bool) -> list[float]:
    """Each model group's runs judged by a fit on the folds without it."""
    groups = sorted({r.group for r in h200})
    random.Random(0).shuffle(groups)
    fold = {g: i % FOLDS for i, g in enumerate(groups)}
    errors = []
    for k in range(FOLDS):
        cost = fit([r for r in h200 if fold[r.group] != k], per_call)
        errors += [error_pct(r, cost) for r in h200 if fold[r.group] == k]
    return errors


def main() -> None:
    h200 = runs(Path(sys.argv[1]), ev.DATA, ev.CEILINGS)
    h100 = runs(Path(sys.argv[2]), ev.DATA_H100, None)
    bound200 = [r for r in h200 if r.host_bound]
    bound100 = [r for r in h100 if r.host_bound]
    print(f"host-bound runs: H200 {len(bound200)} in {len({r.group for r in bound200})} model "
          f"groups, H100 {len(bound100)}")  # fmt: skip
    for per_call, name in ((False, "per op"), (True, "per op + call")):
        cost = fit(bound200, per_call)
        print(f"{name}: {cost[0] * 1e3:.2f} µs per op, {cost[1] * 1e3:.2f} µs per call (all H200)")
        print("  H200, 5-fold " + summary(name, cross_validated(bound200, per_call)))
        print("  H100          " + summary(name, [error_pct(r, cost) for r in bound100]))
    backlog = [r.backlog_ms for r in bound200]
    print(f"H200 host-bound runs' backlog: median {statistics.median(backlog):.3f} ms, "
          f"max {max(backlog):.3f} ms")  # fmt: skip
    print("before runs with a backlog of 1 ms or more whose modelled host time reaches the GPU's:")
    for r in h200 + h100:
        m = r.error.model
        host = m.host_ms_of(m.host_profiled_ms * 1e6, m.cpu_ops)  # the shipped model's
        if r.error.workload.endswith("-before") and r.backlog_ms >= 1.0 and host >= m.gpu_ms:
            print(f"  {r.error.workload:32s} measured {r.error.measured_ms:7.2f}  "
                  f"GPU {m.gpu_ms:7.2f}  host modelled {host:7.2f}  "
                  f"backlog {r.backlog_ms:6.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
