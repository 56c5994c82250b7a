"""Record before/after pairs of real-framework workloads, timed without the profiler.

The command line of tools/record_validation_pairs.py (the usage: tools/validation/__init__.py)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
import warnings
from pathlib import Path

import torch

from tools.validation.pairs import CASES
from tools.validation.runner import Summary, base_record, line, missing, pack, run_case, versions
from tools.validation.workload import Case, Ctx


def select(only: str | None) -> list[Case]:
    if not only:
        return CASES
    wanted = {s.strip() for s in only.split(",") if s.strip()}
    known = {c.id for c in CASES} | {c.pair for c in CASES}
    if unknown := wanted - known:
        sys.exit(f"--only: unknown workload or pair {', '.join(sorted(unknown))} (see --list)")
    return [c for c in CASES if c.id in wanted or c.pair in wanted]


def quiet() -> None:
    """One line per workload: the frameworks' notices and warnings are not wanted here."""
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    logging.getLogger("torch._inductor").setLevel(logging.ERROR)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", help="output folder")
    ap.add_argument("--tar", type=Path, help="pack OUT's summary and traces into this tar")
    ap.add_argument("--list", action="store_true", help="print the workloads and exit")
    ap.add_argument("--only", help="comma-separated workload or pair ids")
    ap.add_argument("--budget-s", type=float, help="start no workload after this many seconds")
    ap.add_argument("--resume", action="store_true", help="skip workloads OUT has done (ok)")
    ap.add_argument("--smoke", action="store_true", help="tiny CPU versions, for checking here")
    args = ap.parse_args()
    if args.list:
        for c in CASES:
            print(f"{c.id:34s} {c.planted or '-':22s} {c.change}")
        return 0
    if args.out is None:
        ap.error("OUT is required")
    cases = select(args.only)
    if not args.smoke and not torch.cuda.is_available():
        sys.exit("no CUDA device: run on the GPU machine, or pass --smoke")
    quiet()
    if args.smoke:  # one thread: on a small shared CPU, more spin against other jobs
        torch.set_num_threads(1)
    device = torch.device("cpu" if args.smoke else "cuda")
    ctx = Ctx(args.smoke, device, time.perf_counter(), args.budget_s)
    args.out.mkdir(parents=True, exist_ok=True)
    invocation = {
        "argv": sys.argv,
        "smoke": args.smoke,
        "versions": versions(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    summary = Summary(args.out, invocation)
    if args.resume:
        cases = [c for c in cases if not summary.done(c)]
    for i, case in enumerate(cases, 1):
        if ctx.seconds_left() <= 0:
            why = f"budget of {args.budget_s:.0f} s spent"
            record = {**base_record(case), "status": "skipped", "reason": why}
        elif lacking := missing(case):
            why = f"needs {', '.join(lacking)}: not importable"
            record = {**base_record(case), "status": "skipped", "reason": why}
        else:
            record = run_case(ctx, case, args.out)
        summary.put(case.id, record)
        print(f"[{i:2d}/{len(cases)}] {line(case, record)}", flush=True)
    invocation.update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), elapsed_s=round(ctx.elapsed()))
    summary.write()
    if args.tar:
        pack(args.out, summary, args.tar)
    return 0
