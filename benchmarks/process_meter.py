"""How long a command runs and how much memory its process tree holds, on a shared machine.

`measure` runs a command and samples its process tree from /proc: wall time, peak RSS summed
over the tree (every `interval`), peak PSS (shared pages split), and the CPU the rest of the
machine used meanwhile, so a noisy run can be told apart. Used by benchmarks/bench_ingest.py.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]


@dataclass
class Measurement:
    wall_s: float
    peak_rss_bytes: int  # the floor's number: RSS summed over the tree, every sample
    peak_pss_bytes: int  # PSS summed over the tree (shared pages split, not double counted)
    peak_procs: int  # most processes seen in the tree at one sample
    samples: int
    returncode: int
    cpu_s: float  # user+sys CPU of the measured tree (children's rusage, waited-for ones)
    other_cpu_s: float  # busy CPU of everything else on the machine over the run (noise)
    loadavg_1m_before: float
    busy_pct_before: float  # whole-machine CPU busy % in the 2 s before the start
    sampler_cpu_s: float  # CPU this process spent sampling meanwhile (overhead on the machine)
    started_at: str


def measure(
    cmd: list[str],
    *,
    cwd: Path,
    interval: float,
    pss_interval: float = 0.0,
    wait: float = 0.0,
    env: dict[str, str] | None = None,
) -> tuple[Measurement, str, str]:
    """Run `cmd`; wall time and peak summed RSS of its process tree, sampled every `interval` s.

    PSS is sampled every `pss_interval` s (0: never): /proc/PID/smaps_rollup walks the page
    tables, about 27 ms for a 1.7 GB process here, so at 20 ms it would take a core.
    """
    idle_pct = wait_idle(wait)
    load = os.getloadavg()[0]
    started = time.strftime("%H:%M:%S")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        ru0, sys0, me0 = resource.getrusage(resource.RUSAGE_CHILDREN), _busy(), _own_cpu()
        t0 = time.perf_counter()
        popen = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=env)
        root = popen.pid
        peak = pss_peak = procs_peak = samples = 0
        next_pss = t0 + min(pss_interval, 0.5) if pss_interval > 0 else float("inf")
        while popen.poll() is None:
            now = time.perf_counter()
            full = now >= next_pss
            if full:
                next_pss = now + pss_interval
            total, pss, n = _tree_mem(root, full)
            peak, procs_peak, samples = max(peak, total), max(procs_peak, n), samples + 1
            pss_peak = max(pss_peak, pss)
            time.sleep(max(0.0, now + interval - time.perf_counter()))
        wall = time.perf_counter() - t0
        ru1, sys1, me1 = resource.getrusage(resource.RUSAGE_CHILDREN), _busy(), _own_cpu()
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        other = max(0.0, (sys1 - sys0) - cpu - (me1 - me0))
        sampler = me1 - me0
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    m = Measurement(
        wall, peak, pss_peak, procs_peak, samples, popen.returncode, cpu, other, load, idle_pct,
        sampler, started,
    )  # fmt: skip
    return m, stdout, stderr


def wait_idle(max_wait: float, busy_pct: float = 15.0, window: float = 2.0) -> float:
    """Wait (at most `max_wait` s) for a `window` with the machine under `busy_pct` % CPU busy.

    Returns the busy % of the last window. The machine may be shared; this keeps the runs
    from starting in the middle of someone else's burst (it cannot stop one starting later).
    """
    deadline = time.monotonic() + max_wait
    while True:
        pct = psutil.cpu_percent(interval=window)
        if pct < busy_pct or time.monotonic() >= deadline:
            return float(pct)
        log(f"  (machine {pct:.0f}% busy; waiting for it to go idle)")


def _busy() -> float:
    """Busy CPU seconds of the whole machine, all cores."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0))


def _own_cpu() -> float:
    """CPU seconds of this (sampling) process."""
    t = os.times()
    return t.user + t.system


_PAGE = os.sysconf("SC_PAGE_SIZE")
_HAS_CHILDREN_FILE = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _tree_mem(root: int, full: bool) -> tuple[int, int, int]:
    """(summed RSS, summed PSS if `full` else 0, process count) of `root` and its descendants.

    Reads /proc directly: psutil's children(recursive=True) scans every process on the machine
    (about 3 ms a call here, 15% of a core at 50 Hz, on a 2-core machine the ingest needs whole).
    """
    rss = pss = n = 0
    for pid in _tree_pids(root):
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                rss += int(fh.read().split()[1]) * _PAGE
            if full:  # smaps_rollup walks the page tables: dearer, so sparser
                with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                    for line in fh:
                        if line.startswith(b"Pss:"):
                            pss += int(line.split()[1]) * 1024
                            break
            n += 1
        except (OSError, ValueError, IndexError):  # a process that just exited
            pass
    return rss, pss, n


def _tree_pids(root: int) -> list[int]:
    if not _HAS_CHILDREN_FILE:  # kernel without CONFIG_PROC_CHILDREN
        try:
            proc = psutil.Process(root)
            return [root, *(c.pid for c in proc.children(recursive=True))]
        except psutil.Error:
            return []
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            pass
    return pids


# ---------------------------------------------------------------------------- the input


def log(msg: str) -> None:
    """Progress on standard error (standard output carries the results)."""
    print(msg, file=sys.stderr, flush=True)
