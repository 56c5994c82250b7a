"""The command line: `python -m collectors.ingest PATH...`; the new run id is the last line of
standard output, progress and messages go to standard error."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from collectors.ingest.pipeline import StageProgress, ingest
from data.errors import DashError
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
    ap = argparse.ArgumentParser(
        prog="python -m collectors.ingest",
        description="Ingest torch.profiler traces (.json, .json.gz; a folder or archive = one "
        "run with one file per rank). Prints the new run id on the last line of stdout.",
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
        help="also store python_function events (off by default: large)",
    )
    ap.add_argument(
        "--progress-json",
        action="store_true",
        help="progress as JSON lines on stderr (for the dashboard)",
    )
    args = ap.parse_args(argv)
    tags = dict(t.split("=", 1) if "=" in t else (t, "") for t in args.tag)
    t0 = time.perf_counter()
    try:
        run_id = ingest(
            args.paths,
            data_dir=args.data,
            name=args.name,
            tags=tags,
            include_python=args.python_functions,
            progress=_progress_printer(args.progress_json),
        )
    except DashError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; nothing was written", file=sys.stderr)
        return 130
    summary = Store(args.data).run_summary(run_id)
    print(
        f"ingested {summary['name']!r}: {summary['rank_count']} rank(s), "
        f"{summary['kernel_count']} kernels, {summary['events_total']} events"
        f" ({summary['events_malformed']} malformed) in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    print(run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
