"""Write tests/golden/report_sha256.json: the sha256 of every real trace's JSON report.

The check behind a refactoring: the JSON report of each trace the project tests on (the shared
fixtures, the demo samples, tests/data) must stay byte-identical unless a change means to
alter it. Reports come from the command-line contract (`python -m collectors.ingest`, then
`python -m analysis.report RUN --format json`), so the tool runs unchanged on any commit; the
store holds the H200's measured ceilings (../shared/fixtures/h200/ceilings.json), as the
recommendation tests' store does. The run id, the one value that differs between two ingests,
is replaced by `<run>` before hashing.

    python tools/report_golden.py            # from the repo root, ~46 minutes on 2 cores
    python tools/report_golden.py --check    # compare with the committed file, exit 1 on drift
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
OUT = REPO / "tests" / "golden" / "report_sha256.json"
MULTI_RANK = ("foreign/hta/trace_filter",)


def runs() -> dict[str, list[Path]]:
    """label -> the paths ingested as one run: every fixture file, multi-rank folders whole."""
    out: dict[str, list[Path]] = {}
    folders = [FIXTURES / f for f in MULTI_RANK]
    for top in ("h200", "foreign"):
        for f in sorted((FIXTURES / top).rglob("*.json.gz")):
            if not any(d in f.parents for d in folders):
                out[str(f.relative_to(FIXTURES))] = [f]
    out.update({str(d.relative_to(FIXTURES)) + "/": [d] for d in folders})
    for base in (REPO / "data" / "samples", REPO / "tests" / "data"):
        for f in sorted(base.rglob("*.json.gz")):
            folder = f.parent != base and f.name.startswith("rank")  # one run, a file per rank
            run = f.parent if folder else f
            out.setdefault(str(run.relative_to(REPO)) + ("/" if folder else ""), [run])
    return out


def _cli(*args: str | Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", *map(str, args)], cwd=REPO, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def digest(paths: list[Path], data: Path) -> str:
    run_id = _cli("collectors.ingest", *paths, "--data", data).strip().splitlines()[-1]
    report = _cli("analysis.report", run_id, "--format", "json", "--data", data)
    return hashlib.sha256(report.replace(run_id, "<run>").encode()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed digests")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="report-golden-") as tmp:
        data = Path(tmp)
        _cli("collectors.calibrate", "--import", FIXTURES / "h200/ceilings.json", "--data", data)
        todo = runs()
        with ThreadPoolExecutor(2) as pool:
            digests = pool.map(lambda p: digest(p, data), todo.values())
            found = dict(zip(todo, digests, strict=True))
    if args.check:
        want = json.loads(OUT.read_text())
        drift = sorted(k for k in want.keys() | found.keys() if want.get(k) != found.get(k))
        print("\n".join(drift) or "every report is byte-identical")
        return 1 if drift else 0
    OUT.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"{len(found)} reports -> {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
