"""The demo set: the bundled traces, the H200's measured ceilings and its recorded telemetry.

Loaded once per store, by `make demo` before the server starts (`python -m data.demo`), so
the first page a new user opens is ready, or by the dashboard's first page visit when the
server was started some other way. Every step is one of the command lines (in a child, as
the Upload page ingests), so this module imports nothing of collectors.

    python -m data.demo [--data DIR]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

from data.cli import CommandParser, Result, add_json_flag, parse_command, run_command
from data.cli_child import ingest_child, run_child
from data.errors import DuplicateTraceError
from data.store import dashboard_data_dir

SAMPLES = Path(__file__).resolve().parent / "samples"
MARKER = ".demo-ingested"  # in the store folder once the demo set is in


def pending(store_dir: Path) -> bool:
    """Whether the demo set still has to be loaded into `store_dir`."""
    return SAMPLES.is_dir() and not (store_dir / MARKER).exists()


def traces() -> list[Path]:
    """The bundled traces, in the order they are ingested (the last is the run the
    dashboard opens on): trace files and multi-rank trace folders."""
    return sorted(p for p in SAMPLES.iterdir() if p.is_dir() or p.name.endswith(".json.gz"))


def load(store_dir: Path, on_step: Callable[[str], None] = lambda _: None) -> list[str]:
    """Load the demo set into `store_dir` unless it is there; the steps taken. A trace
    already in the store is skipped, so a load cut short can be run again."""
    if not pending(store_dir):
        return []
    bundled = traces()
    for path in bundled:  # in order: the last one ingested is the run the dashboard opens on
        on_step(path.name)
        with contextlib.suppress(DuplicateTraceError):  # already in the store is fine
            ingest_child([path], data_dir=store_dir, tags={"demo": "1"})
    on_step("measured H200 ceilings")
    run_child("collectors.calibrate", "--import", str(SAMPLES / "ceilings_h200.json"),
              "--data", str(store_dir))  # fmt: skip
    on_step("recorded H200 telemetry")
    recordings = sorted(str(p) for p in SAMPLES.glob("*.csv"))
    run_child("collectors.nvml", "--replay", *recordings, "--keep-time", "--host", "demo",
              "--data", str(store_dir))  # fmt: skip
    (store_dir / MARKER).touch()
    return [p.name for p in bundled] + ["ceilings", "telemetry"]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
        prog="python -m data.demo",
        description="Load the bundled demo runs, ceilings and telemetry into the store "
        "(once; a store that has them is left as it is).",
    )
    ap.add_argument("--data", type=Path, default=None, help="store folder (default: $DASH_DATA, "
                    "else data/local)")  # fmt: skip
    add_json_flag(ap)
    args = parse_command(ap, argv)
    store_dir = args.data or dashboard_data_dir()

    def body() -> Result:
        step = (lambda _: None) if args.json else (lambda s: print(s, flush=True))
        return {"data": str(store_dir), "loaded": load(store_dir, step)}

    def show(r: Result) -> None:
        print("demo set " + ("loaded" if r["loaded"] else "already there") + f" in {r['data']}")

    return run_command(body, json_line=args.json, show=show)


if __name__ == "__main__":
    raise SystemExit(main())
