"""Make a synthetic distributed run from real rank traces by rank relabelling.

Each output rank is a byte copy of one source trace (the sources taken in turn) whose
`distributedInfo` says `"rank": r, "world_size": N`; nothing else changes, so the ingest
reads what a real exporter wrote, N times.

    python benchmarks/make_rank_run.py OUT_DIR --ranks 512 [SOURCE.json[.gz] ...]
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DDP = REPO / "tests/data/ddp_gpu_bound_2rank"  # two real H200 DDP ranks, 8.5-8.7 MB each
DEFAULT_SOURCES = [DDP / f"rank{r}.pt.trace.json.gz" for r in (0, 1)]
_RANK = re.compile(rb'("rank": ?)-?\d+')
_WORLD = re.compile(rb'("world_size": ?)\d+')


def relabelled(source: bytes, rank: int, world: int) -> bytes:
    """`source` with its distributedInfo naming `rank` of `world` (the header only)."""
    events = source.index(b'"traceEvents"')
    head = source[:events]
    info = head.index(b'"distributedInfo"')
    end = head.index(b"}", info)
    part = _WORLD.sub(rb"\g<1>%d" % world, _RANK.sub(rb"\g<1>%d" % rank, head[info:end], 1), 1)
    return head[:info] + part + head[end:] + source[events:]


def make_run(out: Path, ranks: int, sources: list[Path]) -> list[Path]:
    raw = [
        gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes() for p in sources
    ]
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in range(ranks):
        path = out / f"rank{r}.pt.trace.json"
        path.write_bytes(relabelled(raw[r % len(raw)], r, ranks))
        files.append(path)
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("sources", nargs="*", type=Path, default=DEFAULT_SOURCES)
    args = ap.parse_args()
    files = make_run(args.out, args.ranks, args.sources)
    total = sum(f.stat().st_size for f in files)
    print(f"{args.out}: {len(files)} ranks, {total / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
