"""Record before/after pairs of real-framework workloads, timed without the profiler.

The command line of tools/record_validation_pairs.py (the usage: tools/validation/__init__.py)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from tools.validation.interleave import measure_pair
from tools.validation.pairs import CASES, PAIRS
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


def renamed(cases: list[Case], suffix: str) -> list[tuple[Case, Case]]:
    """The pairs among `cases` (their own before and after runs, not the flag variants),
    renamed PAIR-SUFFIX, so that a recording of them joins the others as replicates; under
    their own names for an empty suffix (pairs recorded only this way)."""
    wanted = {c.id for c in cases}
    out = []
    for before, after in zip(PAIRS[::2], PAIRS[1::2], strict=True):
        if before.id in wanted or after.id in wanted:
            pair = f"{before.pair}-{suffix}" if suffix else before.pair
            out.append(
                (
                    dataclasses.replace(before, id=f"{pair}-before", pair=pair),
                    dataclasses.replace(after, id=f"{pair}-after", pair=pair),
                )
            )
    return out


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
    ap.add_argument(
        "--interleave",
        metavar="SUFFIX",
        nargs="?",
        const="",
        help="record each selected pair in one process, its runs' timing interleaved "
        "(tools/validation/interleave.py), as pair PAIR-SUFFIX (without SUFFIX: as PAIR)",
    )
    ap.add_argument(
        "--suffix",
        help="record each selected pair one run after the other, as pair PAIR-SUFFIX (a "
        "session's pairs whose CUDA graphs --interleave cannot take)",
    )
    args = ap.parse_args()
    if args.list:
        for c in CASES:
            print(f"{c.id:34s} {c.planted or '-':22s} {c.change}")
        return 0
    if args.out is None:
        ap.error("OUT is required")
    if args.suffix is not None and args.interleave is not None:
        ap.error("--suffix names a recording one run after the other; with --interleave, "
                 "give the suffix to --interleave")  # fmt: skip
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
    if args.interleave is not None:
        record_interleaved(ctx, renamed(cases, args.interleave), args.out, summary)
    else:
        if args.suffix:
            cases = [case for pair in renamed(cases, args.suffix) for case in pair]
        record(ctx, [c for c in cases if not (args.resume and summary.done(c))], args.out, summary)
    invocation.update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), elapsed_s=round(ctx.elapsed()))
    summary.write()
    if args.tar:
        pack(args.out, summary, args.tar)
    return 0


def skipped(ctx: Ctx, case: Case) -> dict[str, Any] | None:
    """The record of a workload that is not run (the budget spent, a library missing)."""
    if ctx.seconds_left() <= 0:
        return {
            **base_record(case),
            "status": "skipped",
            "reason": f"budget of {ctx.budget_s:.0f} s spent",
        }
    if lacking := missing(case):
        why = f"needs {', '.join(lacking)}: not importable"
        return {**base_record(case), "status": "skipped", "reason": why}
    return None


def record_interleaved(
    ctx: Ctx, pairs: list[tuple[Case, Case]], out: Path, summary: Summary
) -> None:
    for i, (before, after) in enumerate(pairs, 1):
        why = skipped(ctx, before)
        records = (
            [why, {**why, **base_record(after)}] if why else measure_pair(ctx, before, after, out)
        )
        for case, r in zip((before, after), records, strict=True):
            summary.put(case.id, r)
            print(f"[{i:2d}/{len(pairs)}] {line(case, r)}", flush=True)


def record(ctx: Ctx, cases: list[Case], out: Path, summary: Summary) -> None:
    for i, case in enumerate(cases, 1):
        r = skipped(ctx, case) or run_case(ctx, case, out)
        summary.put(case.id, r)
        print(f"[{i:2d}/{len(cases)}] {line(case, r)}", flush=True)
