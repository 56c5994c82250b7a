"""Where a profiling session's traces and store are, who this rank is, and the run's tags.

The default store comes from data.store, which needs duckdb: it is looked up only when the
store, or the traces folder inside it, is used (with ingest=False and a trace_dir, never).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist


def store_and_traces(
    data_dir: Path | str | None, trace_dir: Path | str | None, ingest: bool
) -> tuple[Path | None, Path]:
    """The store folder (None without ingest) and the root folder of the trace files.

    The default store comes from data.store, which needs duckdb: it is looked up only when
    the store, or the traces folder inside it, is used.
    """
    if not ingest and trace_dir is not None:
        return None, Path(trace_dir).resolve()
    if data_dir is None:
        from data.store import dashboard_data_dir  # imports duckdb: only when it is needed

        data_dir = dashboard_data_dir()
    store = Path(data_dir).resolve()
    traces = Path(trace_dir).resolve() if trace_dir is not None else store / "traces"
    return (store if ingest else None), traces


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the world size: torch.distributed's, else torchrun's env."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def shared_session(rank: int, world: int) -> str:
    """One id for this profiling session, the same on every rank.

    With a process group rank 0's id is broadcast (once, on entry, where every rank is);
    without one, ranks started by torchrun share TORCHELASTIC_RUN_ID.
    """
    own = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    if world > 1 and dist.is_available() and dist.is_initialized():
        box: list[Any] = [own if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return str(box[0])
    elastic = os.environ.get("TORCHELASTIC_RUN_ID")
    return elastic if world > 1 and elastic and elastic != "none" else own


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def run_metadata(
    world_size: int, tokens_per_step: int | None, tags: dict[str, Any] | None
) -> dict[str, str]:
    """The run tags: versions, git commit, world size, tokens per step, then the user's tags.

    Values are strings, as the ingest CLI's `--tag KEY=VALUE` writes them, so that a run's
    tags read the same whichever way it was ingested.
    """
    meta: dict[str, Any] = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "git_commit": _git_commit(),
        "world_size": world_size,
        "tokens_per_step": tokens_per_step,
        **(tags or {}),
    }
    return {k: str(v) for k, v in meta.items() if v is not None}
