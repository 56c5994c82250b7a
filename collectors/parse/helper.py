"""The helper process that decodes slices of a big trace beside the parent: forked, sharing a
counter that hands out the next slice, its tables returned as Arrow IPC files in /dev/shm
(a data.scratch folder, removed by the next ingest if both processes were killed)."""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import shutil
import signal
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from collectors.parse.document import Buffer, NotSliceable, slices
from collectors.parse.rank_trace import MAX_EXAMPLES, RankTrace, new_trace
from collectors.parse.tables import Parts, build
from data.errors import DashError
from data.scratch import SHARED_MEMORY, new_scratch

PARALLEL_MIN_BYTES = 64 << 20  # below this a helper process costs more than it saves


def worth_a_helper(buf: Buffer) -> bool:
    return len(buf) >= PARALLEL_MIN_BYTES and (os.cpu_count() or 1) >= 2 and hasattr(os, "fork")


class SharedCounter:
    """0, 1, 2, ... across this process and the processes it forks."""

    def __init__(self) -> None:
        self.value = multiprocessing.get_context("fork").Value("q", 0)

    def __call__(self) -> int:
        with self.value.get_lock():
            index: int = self.value.value
            self.value.value = index + 1
        return index


class Helper:
    """A forked child that decodes slices of a big trace beside this process.

    Decoding holds the GIL, so the second core needs a second process. It is forked once the
    events array is cut (fork shares the buffer without a copy). The child's Arrow tables
    come back as IPC files in a folder in shared memory that the parent maps (a pipe would
    copy them twice and make the parent wait on the transfer); the folder is removed
    whatever happens.
    """

    def __init__(self, proc: Any, recv: Any, folder: str) -> None:
        self.proc, self.recv, self.folder = proc, recv, folder

    @classmethod
    def start(
        cls,
        path: Path,
        buf: Buffer,
        cuts: list[int],
        take: SharedCounter,
        include_python: bool,
    ) -> Helper:
        shm = SHARED_MEMORY if SHARED_MEMORY.is_dir() else None
        folder = str(new_scratch("trace-parse", shm))
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        args = (send, path, buf, cuts, take, include_python, folder, os.getpid())
        proc = ctx.Process(target=_child, args=args, daemon=True)
        proc.start()
        send.close()
        return cls(proc, recv, folder)

    def merge_into(self, trace: RankTrace, parts: Parts) -> None:
        try:
            status, payload = self.recv.recv()
        except EOFError:  # it died without a word (killed, out of memory)
            raise DashError(f"{trace.path}: the parse helper process died") from None
        if status == "not sliceable":
            raise NotSliceable
        if status != "ok":
            raise payload  # what failed in the child, raised again here
        files, counts, total, skipped, malformed, examples = payload
        for table, (file, sizes) in files.items():
            # Memory-mapped Arrow IPC: the child's tables arrive without a copy.
            with pa.memory_map(file) as source:
                whole = pa.ipc.open_file(source).read_all()
            at = 0
            for index, rows in sizes:
                parts.setdefault(table, []).append((index, whole.slice(at, rows)))
                at += rows
        trace.category_counts.update(counts)
        trace.events_total += total
        trace.events_skipped += skipped
        trace.malformed += malformed
        trace.malformed_examples = (trace.malformed_examples + examples)[:MAX_EXAMPLES]

    def close(self) -> None:
        self.recv.close()
        if self.proc.is_alive():  # the parent failed first (e.g. not a trace): stop the child
            self.proc.terminate()
        self.proc.join()
        shutil.rmtree(self.folder, ignore_errors=True)  # mapped tables stay readable


def _child(
    send: Any, path: Path, buf: Buffer, cuts: list[int], take: SharedCounter,
    include_python: bool, folder: str, parent: int,
) -> None:  # fmt: skip
    die_with_parent(parent)
    trace = new_trace(path, {})
    try:
        files = {}
        for table, parts in build(trace, slices(buf, cuts, take, None), include_python).items():
            file = os.path.join(folder, f"{table}.arrow")
            whole = pa.concat_tables([p for _, p in parts])
            with pa.OSFile(file, "wb") as sink, pa.ipc.new_file(sink, whole.schema) as w:
                w.write_table(whole)
            files[table] = (file, [(index, p.num_rows) for index, p in parts])
        result = (files, trace.category_counts, trace.events_total, trace.events_skipped,
                  trace.malformed, trace.malformed_examples)  # fmt: skip
        send.send(("ok", result))
    except msgspec.DecodeError:
        with contextlib.suppress(OSError):
            send.send(("not sliceable", None))
    except BaseException as e:  # raised again in the parent, which reports it
        with contextlib.suppress(OSError):
            send.send(("error", e if _picklable(e) else DashError(f"{type(e).__name__}: {e}")))
    finally:
        send.close()


def _picklable(e: BaseException) -> bool:
    try:
        pickle.loads(pickle.dumps(e))
    except Exception:
        return False
    return True


def die_with_parent(parent: int) -> None:
    """Have Linux kill this child when its parent dies (a kill -9 of the ingest left it
    running, holding its shared-memory folder); elsewhere it ends with its slices."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1
