"""How a finding's saving follows from what its fix removes, in one sentence a user can check:
the evidence names GPU time (2.41 ms of S×S kernels against 1 ms fused) while the saving is the
host's 918 µs, because the host sets that step's pace. The arithmetic is the step model's
(analysis.step_model.StepModel.saving); this writes it out."""

from __future__ import annotations

from analysis.rules.registry import Finding
from analysis.step_model import StepModel
from analysis.text import ms


def _parts(found: Finding) -> str:
    named = (("GPU time", found.gpu_ms), ("host time", found.host_ms), ("waiting", found.serial_ms))
    off = [f"{ms(v)} of {name}" for name, v in named if v >= 1e-6]
    on = [f"{ms(-v)} of {name}" for name, v in named if v <= -1e-6]
    said = [f"takes {' and '.join(off)} off"] if off else []
    said += [f"adds {' and '.join(on)}"] if on else []
    return " and ".join(said) if said else "removes nothing the step model counts"


def _still(serial_ms: float) -> str:
    return f" and {ms(serial_ms)} with both standing still" if serial_ms >= 1e-3 else ""


def _work(gpu_ms: float, host_ms: float) -> str:
    """Which side's work sets the pace, and the other's beside it."""
    if StepModel.host_sets_pace(gpu_ms, host_ms):
        return f"the host's {ms(host_ms)} of work (the GPU's {ms(gpu_ms)} runs beside it)"
    return f"the GPU's {ms(gpu_ms)} of work (the host's {ms(host_ms)} runs beside it)"


def saving_basis(found: Finding, model: StepModel | None, saving_ms: float) -> str:
    """The sentence that turns the fix's GPU, host and waiting time into `saving_ms`."""
    if found.saving_ms is not None:
        basis = "the step without the profiler" if model else "the trace's timeline"
        return (
            f"This saving is the rule's own measure (its evidence says of what), against "
            f"{basis}, not the step model's GPU and host parts."
        )
    if model is None:
        return (
            f"Per step the fix {_parts(found)}. The trace has no ProfilerStep ranges, so the "
            f"parts are added on the profiled timeline: {ms(saving_ms)}."
        )
    g, h, s = model.gpu_ms, model.host_ms, model.serial_ms
    after_g = max(g - found.gpu_ms, 0.0)
    after_h = max(h - found.host_ms, 0.0)
    after_s = max(s - found.serial_ms, 0.0)
    before = (
        f"{_work(g, h)}{_still(s)}"
        if max(g, h) <= model.unprofiled_ms + 1e-6
        else f"shorter than the modelled work ({_work(g, h)})"
    )
    after = model.after(found.gpu_ms, found.host_ms, found.serial_ms)
    if saving_ms > 0:
        change = f"{ms(saving_ms)} less"
    elif after > model.unprofiled_ms + 1e-6:
        change = f"{ms(after - model.unprofiled_ms)} more, so no saving"
    else:
        change = "no saving"
    return (
        f"Per step the fix {_parts(found)}. Without the profiler the step is "
        f"{ms(model.unprofiled_ms)}: {before}. After the fix: {_work(after_g, after_h)}"
        f"{_still(after_s)}, {ms(after)}: {change}."
    )
