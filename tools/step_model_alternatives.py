"""The two changes to the step model that D90 measured and did not adopt, measured again.

1. A profiler cost per runtime call beside the cost per CPU op: the cost is fitted on the
   H200's host-bound validation runs (GPU time under 85 % of the unprofiled step, no sync)
   and judged by 5-fold cross-validation, each model (its runs) held out of the fit of its
   fold, then on the H100's host-bound runs with a fit on every H200 one.
2. The GPU backlog at the first recorded step (the median time from a kernel's launch to its
   start): work queued on the GPU when recording began shows a host that ran ahead of the
   GPU unprofiled, a GPU-bound step, whatever the host model says.

Usage: python3 tools/step_model_alternatives.py H200_STORE H100_STORE   (scratch stores;
made when missing, ~20 min for the H200's runs on 2 cores)
"""

from __future__ import annotations

import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.facts import Facts
from analysis.step_model import OVERHEAD_NS_PER_OP
from tools.validation import evaluate as ev
from tools.validation.step_errors import HOST_BOUND_SHARE

FOLDS = 5


@dataclass(frozen=True)
class HostRun:
    """One run's median step: what the profiler recorded, and the step measured without it."""

    workload: str
    measured_ms: float
    gpu_ms: float
    host_profiled_ms: float
    cpu_ops: float
    runtime_calls: float
    backlog_ms: float  # median launch-to-start delay of the first recorded step's kernels
    waits: bool  # a sync, or a millisecond of blocked copies or allocator calls

    @property
    def host_bound(self) -> bool:
        return self.gpu_ms < HOST_BOUND_SHARE * self.measured_ms and not self.waits


def host_run(key: str, f: Facts, measured_ms: float) -> HostRun | None:
    m = f.step_model
    if m is None:
        return None
    k = f.events[(f.events["kind"] == "kernel") & f.events["step"].notna()]
    first = k[k["step"] == k["step"].min()]
    delay = (first["ts_ns"] - first["launch_ts_ns"].astype("Int64")).dropna()
    return HostRun(
        workload=key,
        measured_ms=measured_ms,
        gpu_ms=m.gpu_ms,
        host_profiled_ms=m.host_profiled_ms,
        cpu_ops=m.cpu_ops,
        runtime_calls=float(f.host.step_host["runtime_calls"].median()),
        backlog_ms=float(delay.median()) / 1e6 if len(delay) else 0.0,
        waits=sum(m.waits_ms.values()) >= 1.0 or bool(f.host.step_host["syncs"].any()),
    )


def runs(store: Path, folder: Path, ceilings: Path | None) -> list[HostRun]:
    workloads = ev.summary(folder)
    facts_of = ev.scratch_store(store, workloads, folder, ceilings)
    out = []
    for key, w in sorted(workloads.items()):
        if w.get("status") == "ok" and (r := host_run(key, facts_of(key), ev.unprofiled_ms(w))):
            out.append(r)
    return out


def fit(train: list[HostRun], per_call: bool) -> np.ndarray:
    """ms of profiler cost per op (and per runtime call): the per-op median, or least squares."""
    extra = np.array([r.host_profiled_ms - r.measured_ms for r in train])
    if not per_call:
        return np.array([statistics.median(extra / [r.cpu_ops for r in train]), 0.0])
    x = np.array([[r.cpu_ops, r.runtime_calls] for r in train])
    return np.asarray(np.linalg.lstsq(x, extra, rcond=None)[0], dtype=float)


def error_pct(r: HostRun, cost: np.ndarray) -> float:
    host = max(r.host_profiled_ms - float(cost @ [r.cpu_ops, r.runtime_calls]), 0.0)
    return abs(100 * (host - r.measured_ms) / r.measured_ms)


def summary(name: str, errors: list[float]) -> str:
    e = np.array(errors)
    within = np.mean(e <= 30) * 100
    return (f"{name:14s} runs {len(e):3d}  median |error| {np.median(e):5.1f} %  "
            f"p90 {np.percentile(e, 90):5.1f} %  within 30 % {within:3.0f} %")  # fmt: skip


def cross_validated(h200: list[HostRun], per_call: bool) -> list[float]:
    model_of = {r.workload: r.workload.split("-")[1] for r in h200}
    models = sorted(set(model_of.values()))
    random.Random(0).shuffle(models)
    fold = {m: i % FOLDS for i, m in enumerate(models)}
    errors = []
    for k in range(FOLDS):
        train = [r for r in h200 if fold[model_of[r.workload]] != k]
        cost = fit(train, per_call)
        errors += [error_pct(r, cost) for r in h200 if fold[model_of[r.workload]] == k]
    return errors


def main() -> None:
    h200 = runs(Path(sys.argv[1]), ev.DATA, ev.CEILINGS)
    h100 = runs(Path(sys.argv[2]), ev.DATA_H100, None)
    bound200 = [r for r in h200 if r.host_bound and r.cpu_ops]
    bound100 = [r for r in h100 if r.host_bound and r.cpu_ops]
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
        host = r.host_profiled_ms - r.cpu_ops * OVERHEAD_NS_PER_OP / 1e6
        if r.workload.endswith("-before") and r.backlog_ms >= 1.0 and host >= r.gpu_ms:
            print(f"  {r.workload:32s} measured {r.measured_ms:7.2f}  GPU {r.gpu_ms:7.2f}  "
                  f"host modelled {host:7.2f}  backlog {r.backlog_ms:6.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
