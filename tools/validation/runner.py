"""Running one workload into its record, the summary rewritten after each, and the tar."""

from __future__ import annotations

import gc
import importlib.metadata
import importlib.util
import json
import os
import platform
import tarfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from tools.validation.timing import (
    PROFILE_STEPS,
    SCHEDULE,
    TIMED_STEPS,
    WARMUP_STEPS,
    profile,
    sync,
    time_unprofiled,
)
from tools.validation.training import set_precision
from tools.validation.workload import Case, Ctx

TAR_LIMIT_BYTES = 16 << 20


def dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__}
    for dist in ("transformers", "timm", "torchvision", "peft", "lightning", "accelerate"):
        out[dist] = dist_version(dist)
    out["cuda"] = torch.version.cuda
    out["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return out


class Summary:
    """OUT/summary.json, rewritten (atomically) after every workload. A later invocation on
    the same OUT keeps the workloads it does not run, and adds itself to `invocations`."""

    def __init__(self, out: Path, invocation: dict[str, Any]) -> None:
        self.path = out / "summary.json"
        old = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.data: dict[str, Any] = {
            "steps": {"warmup": WARMUP_STEPS, "timed": TIMED_STEPS, "profiled": PROFILE_STEPS},
            "invocations": [*old.get("invocations", []), invocation],
            "workloads": old.get("workloads", {}),
        }

    def done(self, case: Case) -> bool:
        return bool(self.data["workloads"].get(case.id, {}).get("status") == "ok")

    def put(self, case_id: str, record: dict[str, Any]) -> None:
        self.data["workloads"][case_id] = record
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        os.replace(tmp, self.path)


def missing(case: Case) -> list[str]:
    def found(alternatives: str) -> bool:
        return any(importlib.util.find_spec(m) is not None for m in alternatives.split("|"))

    return [m for m in case.needs if not found(m)]


def clean_up(ctx: Ctx) -> None:
    """Between workloads: free what the last one held and put global settings back."""
    torch._dynamo.reset()
    set_precision("bf16-autocast")
    free_memory(ctx)


def free_memory(ctx: Ctx) -> None:
    """Return what freed workloads held to the device, and start the peak afresh."""
    gc.collect()
    if ctx.cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def base_record(case: Case) -> dict[str, Any]:
    """What the summary says of a workload whether it ran or not."""
    return {
        "pair": case.pair,
        "role": case.role,
        "planted": case.planted,
        "framework": case.framework,
        "change": case.change,
        "versions": {"torch": torch.__version__, "transformers": dist_version("transformers")},
        "profiler": {
            "record_shapes": case.record_shapes,
            "profile_memory": case.profile_memory,
            "with_stack": case.with_stack,
            "schedule": SCHEDULE,
        },
        "errors": [],
        "seconds": {},
    }


STAGES = ("build", "warmup", "timed", "profile")


def measure(ctx: Ctx, case: Case, out: Path, record: dict[str, Any]) -> None:
    """Build, warm up, time unprofiled, profile; each stage's seconds go into the record as
    it ends (the workload, and what it holds on the device, ends with this call)."""
    t0 = time.perf_counter()

    def done(stage: str) -> None:
        nonlocal t0
        sync(ctx)
        record["seconds"][stage] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()

    torch.manual_seed(0)
    w = case.build(ctx)
    record.update(units_per_step=w.units_per_step, unit=w.unit, notes=w.notes)
    done("build")
    w.run(WARMUP_STEPS, lambda: None)
    done("warmup")
    record["unprofiled"] = time_unprofiled(ctx, w)
    done("timed")
    record.update(profile(ctx, case, w, out))
    done("profile")
    if ctx.cuda:
        record["peak_memory_bytes"] = torch.cuda.max_memory_allocated()


def run_case(ctx: Ctx, case: Case, out: Path) -> dict[str, Any]:
    """One workload's record; whatever it raises is recorded with its stage, and the next
    workload runs."""
    record = base_record(case)
    try:
        measure(ctx, case, out, record)
    except Exception as e:
        stage = next(s for s in STAGES if s not in record["seconds"])
        record["errors"].append(error_line(stage, e))
    try:
        clean_up(ctx)
    except Exception as e:  # a broken CUDA context: the next workloads will say so too
        record["errors"].append(error_line("clean-up", e))
    record["seconds"]["total"] = round(sum(record["seconds"].values()), 2)
    record["status"] = "error" if record["errors"] else "ok"
    return record


def error_line(stage: str, e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)[-1]
    return f"{stage}: {type(e).__name__}: {e} ({Path(tb.filename).name}:{tb.lineno})"[:2000]


def line(case: Case, r: dict[str, Any]) -> str:
    """The one line printed per workload."""
    head = f"{case.id:34s} {r['seconds'].get('total', 0):6.1f} s"
    if r["status"] != "ok":
        return f"{head}  {r['status'].upper()}: {(r['errors'] or [r.get('reason', '')])[0]}"
    u = r["unprofiled"]
    hook = (r.get("hook_unprofiled") or {}).get("median_ms")
    hook_s = f"{hook:8.2f}" if hook is not None else "       -"
    return (
        f"{head}  median {u['median_ms']:8.2f}  mean {u['mean_ms']:8.2f}  "
        f"wall {u['wall_mean_ms']:8.2f}  hook {hook_s} ms  "
        f"trace {r['trace_bytes'] / 1024:6.0f} kB"
    )


def pack(out: Path, summary: Summary, tar_path: Path) -> None:
    """OUT's summary and traces in uncompressed tars of at most TAR_LIMIT_BYTES each (what one
    file back from the GPU machine may be): tar_path holds the summary and the first traces,
    NAME-2.tar, NAME-3.tar… the rest. A trace too large for any is left out and listed in
    the summary's `tar_left_out`."""
    traces = sorted((out / "traces").rglob("*.json.gz")) if (out / "traces").is_dir() else []
    room = TAR_LIMIT_BYTES - 512 * 1024  # the summary, headers, the end-of-archive blocks
    parts: list[list[Path]] = [[]]
    left, free = [], room
    for t in traces:
        size = 512 + -(-t.stat().st_size // 512) * 512
        if size > room:
            left.append(t)
            continue
        if size > free:
            parts.append([])
            free = room
        parts[-1].append(t)
        free -= size
    summary.data["tar_left_out"] = [t.relative_to(out).as_posix() for t in left]
    summary.write()
    for i, part in enumerate(parts, 1):
        path = tar_path if i == 1 else tar_path.with_name(f"{tar_path.stem}-{i}{tar_path.suffix}")
        with tarfile.open(path, "w") as tar:
            if i == 1:
                tar.add(summary.path, arcname="summary.json")
            for t in part:
                tar.add(t, arcname=t.relative_to(out).as_posix())
        mib = path.stat().st_size / 2**20
        print(f"packed {len(part)} traces into {path}: {mib:.1f} MiB", flush=True)
    if left:
        print(f"left out {len(left)} traces over {TAR_LIMIT_BYTES >> 20} MiB", flush=True)
