"""Disk faults the tests provoke for real: a store on a full disk, on a read-only one.

The store is copied onto a small tmpfs mounted in a private mount namespace (`unshare -rm`:
no root needed where user namespaces are allowed, nothing visible outside), optionally
remounted read-only, and the command runs there. Where no namespace can be made, a full disk
is the kernel's file-size limit (RLIMIT_FSIZE: writes fail with EFBIG) and a read-only store
a store without write permission (for a user that is not root); neither replaces any code
of ours. `on_small_disk` returns the command's outcome and the store's snapshot
(helpers.cli.store_snapshot) before and after it, taken on that disk.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO

# Runs inside the namespace: snapshot, the command, snapshot; the outcome as JSON in argv[2].
_DRIVER = """
import json, subprocess, sys
sys.path[:0] = ["tests", "."]
from helpers.cli import store_snapshot
store, out, cmd = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
def snap():
    checksums, files = store_snapshot(store)
    return [checksums, sorted(files)]
before = snap()
proc = subprocess.run(cmd, capture_output=True, text=True)
json.dump({"status": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
           "before": before, "after": snap()}, open(out, "w"))
"""


@dataclass(frozen=True)
class OnDisk:
    status: int
    stdout: str
    stderr: str
    before: Any  # (checksums, files) as JSON gives them back
    after: Any


@cache
def namespaces() -> bool:
    """Whether this machine lets us mount a tmpfs in a private mount namespace."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def on_small_disk(
    store: Path,
    module: str,
    *args: str | Path,
    free_kb: int,
    read_only: bool = False,
    tmp_on_disk: bool = False,
    env: dict[str, str] | None = None,
) -> OnDisk:
    """Copy `store` onto a disk with `free_kb` kB free beyond it (read-only if asked; with
    `tmp_on_disk` also the temporary folder) and run `python -m MODULE ARGS` there, with
    `env` added to its environment; the store keeps its path, mounted over it."""
    work = store.parent / f"{store.name}.outcome.json"
    seed = store.parent / f"{store.name}.seed"
    shutil.copytree(store, seed)
    cmd = [sys.executable, "-m", module, *map(str, args)]
    run_env = {**os.environ, **(env or {})}
    driver = [sys.executable, "-c", _DRIVER, str(store), str(work), json.dumps(cmd)]
    if namespaces():
        pages = sum(-(-f.stat().st_size // 4096) for f in seed.rglob("*") if f.is_file())
        size = 4 * pages + free_kb  # tmpfs counts 4 kB pages; folders take none
        steps = [
            f"mount -t tmpfs -o size={size}k tmpfs {shlex.quote(str(store))}",
            f"cp -a {shlex.quote(str(seed))}/. {shlex.quote(str(store))}/",
        ]
        if read_only:
            steps.append(f"mount -o remount,ro {shlex.quote(str(store))}")
        if tmp_on_disk:
            run_env["TMPDIR"] = str(store)
        steps.append(shlex.join(driver))
        subprocess.run(
            ["unshare", "-rm", "sh", "-ec", " && ".join(steps)], cwd=REPO, env=run_env, check=True
        )
    else:
        _without_namespaces(store, driver, free_kb, read_only, run_env)
    shutil.rmtree(seed)
    got = json.loads(work.read_text())
    work.unlink()
    return OnDisk(got["status"], got["stdout"], got["stderr"], got["before"], got["after"])


def _without_namespaces(
    store: Path, driver: list[str], free_kb: int, read_only: bool, env: dict[str, str]
) -> None:
    if read_only:
        if os.geteuid() == 0:
            pytest.skip("a read-only store needs unshare, or a user that is not root")
        for p in [store, *store.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            subprocess.run(driver, cwd=REPO, env=env, check=True)
        finally:
            for p in [store, *store.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
        return

    def limit() -> None:  # no file may grow past free_kb: the write that would fails
        resource.setrlimit(resource.RLIMIT_FSIZE, (free_kb * 1024, free_kb * 1024))

    subprocess.run(driver, cwd=REPO, env=env, check=True, preexec_fn=limit)
