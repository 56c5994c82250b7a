"""`python -m analysis.report RUN --format html|md|json|pdf [-o FILE] [--data DIR] [--json]`.

RUN is a run id, a run name (the latest run of that name) or a trace path (ingested first,
by `python -m collectors.ingest` in a child process: analysis never imports collectors).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from analysis.facts import gather
from analysis.load import DEFAULT_DATA_DIR, open_store, resolve
from analysis.report.document import report_json
from analysis.report.export import FORMATS, export
from analysis.report.run import load_report
from data.cli import CommandParser, add_json_flag, cli_output, parse_command


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
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
    add_json_flag(ap)
    args = parse_command(ap, argv)

    def produce() -> str | bytes:
        run_id = resolve(args.data, args.run)
        store = open_store(args.data)
        if args.format == "json":  # no charts: the JSON report is the document alone
            return export(report_json(gather(store, run_id)), None, "json")
        return export(*load_report(store, run_id), args.format)

    return cli_output(produce, args.output, json_line=args.json)


if __name__ == "__main__":
    sys.exit(main())
