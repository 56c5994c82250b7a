"""The ingest benchmark's results: medians, the floors, the machine and code it ran on, and
the Markdown table for BENCHMARKS.md (benchmarks/bench_ingest.py writes them)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import statistics
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[1]
FLOOR_MBPS = 90.0  # ingest throughput, uncompressed MB/s (issue 15; issue 2 asked 60)
CEILING_RSS_BYTES = 1.0e9  # peak RSS of the ingest process tree (issue 15; issue 2 asked 1.5 GB)
FLOOR_HTA_RATIO = 8.0  # HTA load wall time / our ingest wall time


def summarize(runs: list[dict[str, Any]], raw_bytes: int) -> dict[str, Any]:
    """Times over the clean runs (all runs if none was clean); memory over all runs."""
    clean = [r for r in runs if not r["noisy"]] or runs
    walls = [r["wall_s"] for r in clean]
    rss = [r["peak_rss_bytes"] for r in runs]
    wall = statistics.median(walls)
    return {
        "runs": runs, "runs_timed": len(clean), "only_noisy_runs": not any(
            not r["noisy"] for r in runs),
        "wall_s_median": wall, "wall_s_min": min(walls), "wall_s_max": max(walls),
        "mb_per_s_median": raw_bytes / 1e6 / wall,
        "mb_per_s_all": [raw_bytes / 1e6 / r["wall_s"] for r in runs],
        "peak_rss_bytes_median": int(statistics.median(rss)), "peak_rss_bytes_max": max(rss),
        "peak_pss_bytes_max": max(r["peak_pss_bytes"] for r in runs),
        "cpu_s_median": statistics.median(r["cpu_s"] for r in clean),
        "other_cpu_s_max": max(r["other_cpu_s"] for r in clean),
    }  # fmt: skip


def floors(
    plain: dict[str, Any], gz: dict[str, Any], hta: dict[str, Any] | None
) -> list[dict[str, Any]]:
    out = []
    for label, s in (("plain .json", plain), ("gzip .json.gz", gz)):
        v = s["mb_per_s_median"]
        out.append(
            {
                "floor": f"ingest throughput, {label}",
                "value": v,
                "unit": "MB/s",
                "limit": f">= {FLOOR_MBPS:g}",
                "pass": v >= FLOOR_MBPS,
                "margin_pct": (v / FLOOR_MBPS - 1) * 100,
                "only_noisy_runs": s["only_noisy_runs"],
            }
        )
    for label, s in (("plain .json", plain), ("gzip .json.gz", gz)):
        v = s["peak_rss_bytes_max"]
        out.append(
            {
                "floor": f"peak RSS (max of runs), {label}",
                "value": v / 1e9,
                "unit": "GB",
                "limit": f"<= {CEILING_RSS_BYTES / 1e9:g}",
                "pass": v <= CEILING_RSS_BYTES,
                "margin_pct": (1 - v / CEILING_RSS_BYTES) * 100,
                "only_noisy_runs": False,  # memory does not depend on the machine's other load
            }
        )
    if hta is not None:
        v = hta["wall_s_median"] / plain["wall_s_median"]
        out.append(
            {
                "floor": "HTA load time / our ingest time, plain .json",
                "value": v,
                "unit": "x",
                "limit": f">= {FLOOR_HTA_RATIO:g}",
                "pass": v >= FLOOR_HTA_RATIO,
                "margin_pct": (v / FLOOR_HTA_RATIO - 1) * 100,
                "only_noisy_runs": plain["only_noisy_runs"] or hta["only_noisy_runs"],
            }
        )
    return out


# ---------------------------------------------------------------------------- reporting


def code_version() -> dict[str, Any]:
    """The commit measured, and whether the ingest's code differs from it (a shared tree)."""

    def git(*a: str) -> str:
        r = subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True)
        return r.stdout.rstrip() if r.returncode == 0 else ""

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": git(
            "status", "--porcelain", "--", "collectors", "data"
        ).splitlines(),
        "sha256_12": {
            str(f.relative_to(REPO)): hashlib.sha256(f.read_bytes()).hexdigest()[:12]
            for package in ("collectors/ingest", "collectors/parse")
            for f in sorted((REPO / package).glob("*.py"))
        },
    }


def machine() -> dict[str, Any]:
    model = platform.processor() or "?"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
        model = m[1].strip() if m else model
    except (OSError, subprocess.CalledProcessError):
        pass
    versions: dict[str, str | None] = {}
    for pkg in (
        "msgspec",
        "pyarrow",
        "duckdb",
        "numpy",
        "pandas",
        "psutil",
        "holistictraceanalysis",
    ):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"cpu_model": model, "logical_cpus": os.cpu_count(),
            "memory_bytes": psutil.virtual_memory().total, "python": platform.python_version(),
            "platform": platform.platform(), "packages": versions}  # fmt: skip


def markdown(res: dict[str, Any]) -> str:
    inp = res["input"]
    lines = [
        f"Input: `{inp['plain']}` {inp['plain_bytes'] / 1e6:.1f} MB "
        f"(gzip copy {inp['gz_bytes'] / 1e6:.1f} MB), {inp.get('events', '?')} events; "
        f"{res['repeats']} ingest runs each, {res['hta_repeats']} HTA run(s); "
        f"machine: {res['machine']['cpu_model']}, {res['machine']['logical_cpus']} CPUs.",
        "",
        "| what | median wall s | MB/s (median) | all runs, wall s | peak RSS max (median) "
        "| peak PSS max | CPU s (median) | other load, max CPU-s |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    rows = [("ours, plain .json", res["ours_plain"]), ("ours, .json.gz", res["ours_gz"])]
    if res.get("hta"):
        rows.append(("HTA 0.5.0 load, plain .json", res["hta"]))
    for label, s in rows:
        lines.append(
            f"| {label} | {s['wall_s_median']:.2f} | {s['mb_per_s_median']:.1f} | "
            + ", ".join(f"{r['wall_s']:.2f}{'*' if r['noisy'] else ''}" for r in s["runs"])
            + f" | {s['peak_rss_bytes_max'] / 1e6:.0f} MB ({s['peak_rss_bytes_median'] / 1e6:.0f})"
            + f" | {s['peak_pss_bytes_max'] / 1e6:.0f} MB"
            + f" | {s['cpu_s_median']:.1f} | {s['other_cpu_s_max']:.1f} |"
        )
    lines += [
        "",
        "\\* noisy run (the rest of the machine used more than "
        f"{res['max_noise_cpus']:g} CPUs on average meanwhile): listed, not in the median "
        "wall time; peak memory is over all runs.",
        "",
        "| floor | value | limit | result | margin |",
        "|---|---:|---:|---|---:|",
    ]
    for f in res["floors"]:
        verdict = ("PASS" if f["pass"] else "FAIL") + (
            " (noisy runs only)" if f["only_noisy_runs"] else ""
        )
        lines.append(
            f"| {f['floor']} | {f['value']:.2f} {f['unit']} | {f['limit']} {f['unit']} "
            f"| {verdict} | {f['margin_pct']:+.0f}% |"
        )
    return "\n".join(lines)
