"""The step model (analysis/step_model.py) on validation runs, against what was measured beside
them and not fitted on (D90, D93, D94, D95): the profiler's cost per runtime call, the host's speed
read off the trace's own aten::empty calls, and the host-bound call where the modelled host
time is under the GPU's."""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Callable

import pytest

from analysis.facts import Facts
from analysis.rules.fusion import fused_optimizer
from analysis.step_model import HOST_BOUND_SHARE
from tools.validation import evaluate as ev
from tools.validation.step_errors import StepError, step_errors

WORKLOADS = ev.summary()
RUNS = (
    "precision-regnety-before", "precision-regnety-after", "optimizer-swin-before",
    "allocator-regnetx-after",
)  # fmt: skip


@pytest.fixture(scope="module")
def facts_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Facts]:
    workloads = {k: WORKLOADS[k] for k in RUNS}
    return ev.scratch_store(tmp_path_factory.mktemp("step-model"), workloads)


@pytest.fixture(scope="module")
def modelled(facts_of: Callable[[str], Facts]) -> dict[str, StepError]:
    """Each run's step as the model has it without the hook's measurement."""
    return {e.workload: e for e in step_errors(facts_of, {k: WORKLOADS[k] for k in RUNS})}


def test_a_step_of_many_runtime_calls_pays_for_them(modelled: dict[str, StepError]) -> None:
    # RegNetY's fp32 step launches 2.5 runtime calls per op. Its bf16 after run, the same host
    # work on a GPU done sooner, measured 89.14 ms unprofiled: the fp32 step's host time is no
    # more, under its 122.7 ms of GPU time, so bf16's GPU saving counts. One cost per op put
    # it at 133.6 ms, host-bound (D90).
    before = modelled["precision-regnety-before"].model
    after_ms = modelled["precision-regnety-after"].measured_ms
    assert before.runtime_calls > 2 * before.cpu_ops
    host_ms = before.host_ms_of(before.host_profiled_ms * 1e6, before.cpu_ops)
    assert host_ms < before.gpu_ms
    assert host_ms <= 1.1 * after_ms


def raw_empty_ns(workload: str) -> float:
    """The median over the trace's ProfilerSteps of each step's median aten::empty duration,
    read from the trace file itself."""
    with gzip.open(ev.DATA / WORKLOADS[workload]["trace"]) as f:
        events = json.load(f)["traceEvents"]
    x = [e for e in events if e.get("ph") == "X"]
    steps = [
        e for e in x if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    ]
    empty = [e for e in x if e.get("cat") == "cpu_op" and e["name"] == "aten::empty"]
    per_step = [
        statistics.median(e["dur"] for e in empty if s["ts"] <= e["ts"] < s["ts"] + s["dur"])
        for s in steps
    ]
    return statistics.median(per_step) * 1e3


def test_the_hosts_speed_comes_from_the_trace(modelled: dict[str, StepError]) -> None:
    # The profiler's cost per op and call is a multiple of the trace's own aten::empty time
    # (D94). Swin's step under its per-parameter optimizer: the model reads that time as the
    # trace has it, and its host time (a step of no sync or wait, where the measured 81.1 ms
    # is the host's own) comes out at 63.5 ms, over the GPU's 58.8 and within 30 % of the
    # measurement; D93's constant costs put it at 57.5 ms, under the GPU's.
    e = modelled["optimizer-swin-before"]
    m = e.model
    assert m.empty_ns == pytest.approx(raw_empty_ns(e.workload), rel=1e-3)
    host_ms = m.host_ms_of(m.host_profiled_ms * 1e6, m.cpu_ops)
    assert host_ms > m.gpu_ms
    assert abs(host_ms - e.measured_ms) <= 0.3 * e.measured_ms


def test_a_gpu_idle_for_a_sixth_of_a_serial_free_step_is_host_bound(
    facts_of: Callable[[str], Facts],
) -> None:
    # RegNetX once its allocator keeps memory: 50.6 ms measured (the recorder's tag), 42.8 on
    # the GPU, no sync or wait in the step. The modelled host time, 29.7 ms, comes out well
    # under the GPU's; the step is the host's all the same (the GPU's time is measured, the
    # host's only modelled), so a host-side saving is taken against the host.
    model = facts_of("allocator-regnetx-after").step_model
    assert model is not None
    assert model.source == "tag"
    assert sum(model.waits_ms.values()) < 1.0
    assert model.gpu_ms < HOST_BOUND_SHARE * model.unprofiled_ms
    assert model.host_ms_of(model.host_profiled_ms * 1e6, model.cpu_ops) < model.gpu_ms
    assert model.host_ms == model.unprofiled_ms
    assert model.serial_ms == 0


def test_a_host_bound_steps_parts_share_its_measured_host_time(
    facts_of: Callable[[str], Facts],
) -> None:
    # Swin's per-parameter AdamW step is host-bound: its 81.10 ms measured unprofiled is the
    # host's time, where the overhead model leaves 63.5 ms of the trace's. The optimizer's
    # region gets the same proportion (D95): the fused optimizer's estimate came to 22.3 ms
    # against the 22.93 ms the fused run saved (17.05 ms before, 26 % short).
    f = facts_of("optimizer-swin-before")
    m = f.step_model
    assert m is not None
    assert m.source == "tag"
    assert m.host_ms == m.unprofiled_ms
    modelled = m.host_ms_of(m.host_profiled_ms * 1e6, m.cpu_ops)
    assert m.host_scale == pytest.approx(m.host_ms / modelled, rel=0.02)
    assert 1.2 < m.host_scale < 1.4
    found = fused_optimizer(f)
    assert found is not None
    estimate = m.saving(gpu_ms=found.gpu_ms, host_ms=found.host_ms)
    measured = ev.measured_saving(WORKLOADS, "optimizer-swin")
    assert estimate == pytest.approx(measured, rel=0.1)
    unscaled = m.saving(gpu_ms=found.gpu_ms, host_ms=found.host_ms / m.host_scale)
    assert unscaled < 0.8 * measured
