"""Which process owns a lock, a staging folder or a scratch folder, and whether it still lives.

A process that is killed (kill -9, OOM, power loss) cannot remove what it was writing, so
everything it writes that must not outlive it carries its owner: host, pid and the process's
start time (a pid alone is reused). The next ingest or agent start removes what a dead owner
left (data.lake_sweep, data.scratch). An owner on another host is never judged: it may be
alive, and only that host can tell.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Owner:
    host: str
    pid: int
    start: str  # the process's start time in clock ticks since boot ('' where unknown)

    def text(self) -> str:
        """The owner as a lock file holds it: one line, 'host pid start'."""
        return f"{self.host} {self.pid} {self.start}\n"

    def tag(self) -> str:
        """The owner in a file or folder name on this host: 'pid.start'."""
        return f"{self.pid}.{self.start or 0}"

    def alive(self) -> bool:
        """Whether the owner may still run: True for another host (it cannot be told)."""
        if self.host != socket.gethostname():
            return True
        if self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's process
        started = _start_time(self.pid)
        return not (self.start and started and started != self.start)  # reused pid: dead


@cache
def me() -> Owner:
    """This process (forked children get their own: see os.register_at_fork below)."""
    return Owner(socket.gethostname(), os.getpid(), _start_time(os.getpid()))


os.register_at_fork(after_in_child=me.cache_clear)

_TAG = re.compile(r"(\d+)\.(\d+)")


def owned_tmp_path(path: Path) -> Path:
    """A private temporary name beside `path` that names its owner and thread:
    `.<name>.<pid>.<start>.<thread>.tmp` (data.lake_sweep removes those of dead owners)."""
    return path.with_name(f".{path.name}.{me().tag()}.{threading.get_ident()}.tmp")


def owner_of_text(text: str) -> Owner | None:
    """The owner a lock file's text names; None for an empty or garbled one."""
    parts = text.split()
    if len(parts) not in (2, 3) or not parts[1].isdigit():
        return None
    return Owner(parts[0], int(parts[1]), parts[2] if len(parts) == 3 else "")


def owner_of_tag(tag: str) -> Owner | None:
    """The owner a 'pid.start' tag (this host's) names; None when it is not one."""
    m = _TAG.fullmatch(tag)
    if m is None:
        return None
    start = m.group(2) if m.group(2) != "0" else ""
    return Owner(socket.gethostname(), int(m.group(1)), start)


def read_owner(path: Path) -> Owner | None:
    """The owner written in a file; None when it is missing, empty or garbled."""
    try:
        return owner_of_text(path.read_text(errors="replace")[:200])
    except OSError:
        return None


def _start_time(pid: int) -> str:
    """Field 22 of /proc/PID/stat (the start time); '' where /proc does not tell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: count after its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""
