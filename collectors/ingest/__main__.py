"""The command line: `python -m collectors.ingest PATH...`; the new run id is the last line of
standard output, progress and messages go to standard error. With --json standard output is
one JSON line instead: the new run (id, name, counts) or the error (data.cli)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from collectors.ingest.pipeline import StageProgress, ingest
from collectors.ingest.rank_jobs import default_jobs
from data.cli import CommandParser, Result, add_json_flag, parse_command, run_command
from data.store import DEFAULT_DATA_DIR, Store


def _progress_printer(json_lines: bool) -> StageProgress:
    last = [-1.0]

    def show(stage: str, frac: float) -> None:
        if json_lines:
            print(
                json.dumps({"stage": stage, "fraction": round(frac, 4)}),
                file=sys.stderr,
                flush=True,
            )
        elif frac - last[0] >= 0.1 or stage != "parse":
            print(f"{stage}: {frac:.0%}", file=sys.stderr, flush=True)
            last[0] = frac

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
        prog="python -m collectors.ingest",
        description="Ingest torch.profiler traces (.json, .json.gz; a folder or archive = one "
        "run with one file per rank). Prints the new run id on the last line of stdout; bad "
        "input exits with status 2 and one error line.",
    )
    ap.add_argument("paths", nargs="+", type=Path, help="trace files, folders or archives")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    ap.add_argument("--name", help="run name (default: the file or folder name)")
    ap.add_argument(
        "--tag", action="append", default=[], metavar="KEY=VALUE", help="run metadata, repeatable"
    )
    ap.add_argument(
        "--python-functions",
        action="store_true",
        help="store every python_function event (by default only the nn.Module ones: the "
        "others are large)",
    )
    ap.add_argument(
        "--progress-json",
        action="store_true",
        help="progress as JSON lines on stderr (for the dashboard)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="rank files parsed side by side, one worker process each (default: the cores)",
    )
    add_json_flag(ap)
    args = parse_command(ap, argv)
    tags = dict(t.split("=", 1) if "=" in t else (t, "") for t in args.tag)
    t0 = time.perf_counter()

    def body() -> Result:
        run_id = ingest(
            args.paths,
            data_dir=args.data,
            name=args.name,
            tags=tags,
            include_python=args.python_functions,
            progress=_progress_printer(args.progress_json),
            jobs=args.jobs or default_jobs(),
        )
        summary = Store(args.data).run_summary(run_id)
        return {
            "run_id": run_id,
            "name": summary["name"],
            "ranks": summary["rank_count"],
            "kernels": summary["kernel_count"],
            "events": summary["events_total"],
            "malformed": summary["events_malformed"],
        }

    def show(run: Result) -> None:
        print(
            f"ingested {run['name']!r}: {run['ranks']} rank(s), {run['kernels']} kernels, "
            f"{run['events']} events ({run['malformed']} malformed)"
            f" in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        print(run["run_id"])

    return run_command(
        body, json_line=args.json, show=show, interrupted="interrupted; nothing was written"
    )


if __name__ == "__main__":
    sys.exit(main())
