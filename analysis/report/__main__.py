"""`python -m analysis.report RUN --format html|md|json|pdf [-o FILE] [--data DIR]`.

RUN is a run id, a run name (the latest run of that name) or a trace path (ingested first,
by `python -m collectors.ingest` in a child process: analysis never imports collectors).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from analysis.facts import gather
from analysis.load import DEFAULT_DATA_DIR, open_store
from analysis.report.document import report_json
from analysis.report.export import FORMATS, export
from analysis.report.run import load_report
from data.errors import DashError, error_line

REPO = Path(__file__).resolve().parents[2]


def _resolve(ref: str, data: Path) -> str:
    """A run id or name, or a trace path that is ingested first; returns the run id."""
    if not Path(ref).exists():
        return open_store(data).resolve_run(ref)
    proc = subprocess.run(
        [sys.executable, "-m", "collectors.ingest", ref, "--data", str(data)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0:
        return proc.stdout.strip().splitlines()[-1]
    err = proc.stderr.strip().splitlines()
    line = err[-1].removeprefix("error: ") if err else f"ingest exited with {proc.returncode}"
    if "already ingested as run " in line:  # the same trace: report on that run
        return line.rsplit("already ingested as run ", 1)[1].split()[0]
    raise DashError(line)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis.report",
        description="Write the report of one run: self-contained HTML with interactive "
        "charts, Markdown, JSON, or PDF with static charts.",
    )
    ap.add_argument("run", help="run id, run name (latest of that name) or trace path")
    ap.add_argument("--format", choices=FORMATS, default="json", help="report format")
    ap.add_argument(
        "-o", "--output", type=Path, help="output file (default: standard output; PDF bytes too)"
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    args = ap.parse_args(argv)

    def produce() -> str | bytes:
        run_id = _resolve(args.run, args.data)
        store = open_store(args.data)
        if args.format == "json":  # no charts: the JSON report is the document alone
            return export(report_json(gather(store, run_id)), None, "json")
        return export(*load_report(store, run_id), args.format)

    return cli_output(produce, args.output)


def cli_output(produce: Callable[[], str | bytes], output: Path | None) -> int:
    """A CLI's exit status: what `produce` returns goes to `output` (else standard output,
    bytes as they are); a DashError or OSError becomes one line on stderr and status 2."""
    try:
        out = produce()
        data = out.encode() if isinstance(out, str) else out
        if output:
            output.write_bytes(data)
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
    except (DashError, OSError) as e:
        print(error_line(e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
