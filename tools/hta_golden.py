"""Write tests/golden/hta_breakdown.json: HTA's temporal breakdown of the shared fixtures.

Holistic Trace Analysis (`pip install holistictraceanalysis==0.5.0`, not a project
dependency: it pulls jupyterlab and friends) is the independent source that
tests/integration/test_breakdown_vs_hta.py compares analysis.breakdown.hta_comparable with. Every
fixture is loaded in its own child process (HTA keeps global state and can take minutes or
crash on a trace); a fixture HTA fails on is recorded with its error, not skipped silently.

    python tools/hta_golden.py            # from the repo root, ~5 minutes on 2 cores
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
OUT = REPO / "tests" / "golden" / "hta_breakdown.json"
MULTI_RANK = ("foreign/hta/trace_filter",)
TIMEOUT_S = 600

# Run in a child: HTA's default settings (include_last_profiler_step=False).
_CHILD = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
from hta.trace_analysis import TraceAnalysis
path, work, folder = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if folder:
    ta = TraceAnalysis(trace_dir=path)
else:
    ta = TraceAnalysis(trace_files={0: path}, trace_dir=work)
df = ta.get_temporal_breakdown(visualize=False)
print("HTA_RESULT " + df.to_json(orient="records"))
"""


def fixtures() -> list[tuple[str, Path, bool]]:
    """(name relative to the fixtures folder, path, is a multi-rank folder) of every trace."""
    files = [f for top in ("h200", "foreign") for f in sorted((FIXTURES / top).rglob("*.json.gz"))]
    out = [
        (str(f.relative_to(FIXTURES)), f, False)
        for f in files
        if not any(str(f.relative_to(FIXTURES)).startswith(m) for m in MULTI_RANK)
    ]
    out += [(m + "/", FIXTURES / m, True) for m in MULTI_RANK]
    return out


def run_hta(path: Path, folder: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as work:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), work, "1" if folder else "0"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    for line in proc.stdout.splitlines():
        if line.startswith("HTA_RESULT "):
            rows = json.loads(line.removeprefix("HTA_RESULT "))
            return {"ranks": {str(r["rank"]): r for r in rows}}
    lines = [
        ln.strip() for ln in proc.stderr.splitlines() if ln.strip().strip("^~")
    ]  # without the ^^^ markers of 3.11 tracebacks
    if not lines:
        return {"error": f"exit status {proc.returncode}, no output"}
    # The error and the source line that raised it (HTA's asserts carry no message).
    return {"error": lines[-1], "raised_at": lines[-2] if len(lines) > 1 else None}


def main() -> int:
    result: dict[str, object] = {
        "tool": "holistictraceanalysis",
        "version": metadata.version("holistictraceanalysis"),
        "call": "TraceAnalysis(...).get_temporal_breakdown(visualize=False), defaults "
        "(include_last_profiler_step=False)",
        "units": "µs as HTA reports them (it rounds ts up and ends down to whole µs)",
        "fixtures": {},
    }
    table: dict[str, object] = {}
    for name, path, folder in fixtures():
        print(name, file=sys.stderr, flush=True)
        table[name] = run_hta(path, folder)
        print("  ", json.dumps(table[name])[:200], file=sys.stderr, flush=True)
    result["fixtures"] = table
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
