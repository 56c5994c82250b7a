"""A seeded random search for hostile inputs the corpus lacks (D106): a real trace or NVML
recording, changed in a few places, through the same code a user's file goes through.

    python3 tools/mutate_inputs.py trace SEED COUNT [TRACE]     # default: the corpus's base
    python3 tools/mutate_inputs.py recording SEED COUNT [CSV]   # default: the H200 phases
    python3 tools/mutate_inputs.py archive SEED COUNT           # real ranks, hostile packing

A trace is ingested, gathered, ranked and reported (JSON, HTML, Markdown) in this process;
an archive (zip or tar of real rank files, under hostile member names and types, sometimes
truncated or with bytes flipped) is ingested;
anything raised outside the DashError family is a defect (the command line would print
"unexpected …", naming no file). A recording goes through `collectors.nvml --replay
--keep-time`: exit 0, or 2 with one line naming the file. Prints one line per case, the
defects marked DEFECT, and exits 1 if there was one.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import gzip
import io
import json
import random
import sys
import tarfile
import tempfile
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.facts import gather
from analysis.load import Store, open_store
from analysis.report.document import report_json
from analysis.report.export import export
from analysis.report.run import load_report
from collectors.ingest import ingest
from collectors.nvml import main as nvml_main
from data.errors import DashError

REPO = Path(__file__).resolve().parents[1]

VALUES: list[Any] = [None, [], {}, "", "x", -1, 0, 2**70, -(2**70), 1e308, -1e308, True,
                     False, [1, 2], {"a": 1}, "NaN", 0.5, "1e999", [[[]]], "\u202e",
                     "a" * 5000]  # fmt: skip
# top-level keys the parser reads, beside the trace's own; and malformed objects for them
TOP = ["deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName",
       "dashboardUnprofiledSteps", "schemaVersion", "displayTimeUnit"]  # fmt: skip
OBJECTS: list[Any] = [{"median_ms": -1}, {"median_ms": 1e308},
                      {"median_ms": True, "steps": "x"},
                      [{"name": 5, "totalGlobalMem": 2**70, "numSms": -1}],
                      {"rank": "1", "world_size": 2**70}, {"rank": 2**31, "backend": [1]},
                      [None, 1, "a"]]  # fmt: skip
CELLS = ["", "nan", "inf", "-inf", "-1", "1e400", "x", str(2**70), str(-(2**70)), "1.5", "\x00",
         "9" * 400, "0", "[[1, 2]]", '[["a"]]', '"', "1e-400", "-0", "True", "[]"]  # fmt: skip
INVENTORY_VALUES: list[Any] = [None, "x", -1, 2**70, 1e308, True, [], {}, "\u202e" * 50, 0.5]


def mutated_trace(base: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    doc, ops = copy.deepcopy(base), []
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.7:  # a field of one event, or of its args
            event = rng.choice(doc["traceEvents"])
            args = event.get("args") if isinstance(event, dict) else None
            where = args if isinstance(args, dict) and args and rng.random() < 0.5 else event
            if not isinstance(where, dict) or not where:
                continue
            key = rng.choice(list(where))
            if rng.random() < 0.2:
                del where[key]
                ops.append(f"del {key}")
            else:
                where[key] = rng.choice(VALUES)
                ops.append(f"{key}={str(where[key])[:20]}")
        elif kind < 0.85:
            key = rng.choice([k for k in doc if k != "traceEvents"] + TOP)
            doc[key] = rng.choice(VALUES + OBJECTS)
            ops.append(f"top {key}={str(doc[key])[:20]}")
        else:
            events = doc["traceEvents"]
            events.insert(rng.randrange(len(events)), copy.deepcopy(rng.choice(events)))
            ops.append("duplicate")
    return doc, ops


def defect_of(work: Callable[[], object]) -> str:
    """'' when `work` ends or raises a DashError; else the defect: anything else it raised
    (an OSError too: no disk fills up here)."""
    try:
        work()
    except DashError:
        return ""
    except Exception as e:  # the defect this search is for
        return "".join(traceback.format_exception(e)[-3:])
    return ""


def try_trace(doc: dict[str, Any], folder: Path) -> str:
    """'' when ingested and reported, or refused as a DashError; else the defect."""
    path = folder / "mutated.json"
    path.write_text(json.dumps(doc))

    def work() -> None:
        run = ingest([path], data_dir=folder / "store")
        export(report_json(gather(Store(folder / "store"), run)), None, "json")  # ranks too
        report = load_report(open_store(folder / "store"), run)
        for fmt in ("html", "md"):
            export(*report, fmt)

    return defect_of(work)


def mutated_recording(
    rows: list[list[str]], inventory: list[dict[str, Any]], rng: random.Random
) -> tuple[list[list[str]], list[dict[str, Any]], list[str]]:
    rows, inventory, ops = [list(r) for r in rows], copy.deepcopy(inventory), []
    for _ in range(rng.randint(1, 2)):
        kind, y = rng.random(), rng.randrange(1, len(rows))
        if kind < 0.7:
            x = rng.randrange(len(rows[y]))
            rows[y][x] = rng.choice(CELLS)
            ops.append(f"{rows[0][x]}={rows[y][x][:12]!r}")
        elif kind < 0.8:
            x = rng.randrange(len(rows[0]))
            ops.append(f"header {rows[0][x]}")
            rows[0][x] = rng.choice(["gpu", "ts_ns", "", "power_mw", "zz"])
        elif kind < 0.9:
            rows[y] = rows[y][: rng.randrange(len(rows[y]) + 1)]
            ops.append("short row")
        else:
            rows[y] += ["1", "2"]
            ops.append("long row")
    if inventory and rng.random() < 0.4:
        key = rng.choice(list(inventory[0]))
        inventory[0][key] = rng.choice(INVENTORY_VALUES)
        ops.append(f"inventory {key}")
    return rows, inventory, ops


def try_recording(rows: list[list[str]], inventory: list[dict[str, Any]], folder: Path) -> str:
    path = folder / "rec.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    (folder / "rec.inventory.json").write_text(json.dumps(inventory))
    err = io.StringIO()
    argv = ["--replay", str(path), "--keep-time", "--data", str(folder / "store")]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status: Any = nvml_main(argv)
    except SystemExit as e:
        status = e.code
    except Exception as e:  # the defect this search is for
        return "".join(traceback.format_exception(e)[-3:])
    lines = err.getvalue().strip().splitlines()
    if status == 0 or (status == 2 and len(lines) == 1 and str(folder) in lines[0]):
        return ""
    return f"exit {status}: {err.getvalue().strip()[:300]}"


# Member names an archive can hold (D107): traversal, absolute, NUL, bytes not UTF-8, too long,
# bidi, near-miss suffixes; "{prev}" repeats or nests under the previous member's name.
NAMES = ["rank{r}.json.gz", "run/rank{r}.pt.trace.json.gz", "../../rank{r}.json.gz",
         "/abs/rank{r}.json.gz", "C:\\rank{r}.json.gz", "a\0b{r}.json.gz",
         "caf\udcff{r}.json.gz", "x" * 300 + "{r}.json.gz", "\u202erank{r}.json.gz", ".json",
         "{prev}", "{prev}/rank{r}.json.gz", "rank{r}.JSON", " .json.gz", "r{r}.json.gz.txt",
         "dir/./../rank{r}.json.gz"]  # fmt: skip
TAR_TYPES = [tarfile.REGTYPE] * 6 + [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE,
                                     tarfile.FIFOTYPE, tarfile.CHRTYPE]  # fmt: skip


def mutated_archive(
    contents: list[bytes], rng: random.Random, folder: Path
) -> tuple[Path, list[str]]:
    """An archive of 1-4 members (real ranks, sometimes garbage), packed as zip or tar."""
    ops, prev, members = [], "r.json", []
    for r in range(rng.randint(1, 4)):
        name = rng.choice(NAMES).format(r=r, prev=prev)
        data = rng.choice([*contents, b"", b"garbage", contents[0][: len(contents[0]) // 2]])
        members.append((name, data))
        ops.append(f"{name[:24]!r}:{len(data)}")
        prev = name
    kind = rng.choice(["zip", "tar", "tar.gz"])
    path = folder / f"m.{kind}"
    if kind == "zip":
        method = rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
        with zipfile.ZipFile(path, "w", method) as zf:
            for name, data in members:
                # zipfile cuts a name at NUL and writes only UTF-8 (0xff becomes U+FFFD)
                raw_name = name.replace("\0", "").encode("utf-8", "surrogateescape")
                zf.writestr(raw_name.decode("utf-8", "replace"), data)
    else:
        fmt = rng.choice([tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w", format=fmt) as tf:
            for name, data in members:
                info = tarfile.TarInfo("m")
                info.type, info.size = rng.choice(TAR_TYPES), len(data)
                info.linkname = rng.choice(["../../etc/passwd", prev, "/dev/zero"])
                if fmt == tarfile.PAX_FORMAT:
                    info.pax_headers = {"path": name}
                else:
                    info.name = name.replace("\0", "")
                tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
                ops.append(f"type {info.type!r}")
    raw = bytearray(path.read_bytes())
    for _ in range(rng.choice([0, 0, 1, 3])):
        at = rng.randrange(len(raw))
        raw[at] ^= 1 << rng.randrange(8)
        ops.append(f"flip {at}")
    if rng.random() < 0.15:
        raw = raw[: rng.randrange(len(raw))]
        ops.append(f"cut {len(raw)}")
    path.write_bytes(bytes(raw))
    return path, ops


def search(kind: str, seed: int, count: int, base: Path | None) -> int:
    rng, defects = random.Random(seed), 0
    case: Callable[[Path], tuple[list[str], str]]
    if kind == "trace":
        sys.path.insert(1, str(REPO / "tests"))  # the corpus's base trace
        from helpers.hostile import base_doc

        doc = json.loads(gzip.decompress(base.read_bytes())) if base else base_doc()

        def case(folder: Path) -> tuple[list[str], str]:
            mutated, ops = mutated_trace(doc, rng)
            return ops, try_trace(mutated, folder)
    elif kind == "archive":
        samples = REPO / "data" / "samples"
        files = [
            "ddp_gpt_bf16_2rank/rank0.pt.trace.json.gz",
            "ddp_gpt_bf16_2rank/rank1.pt.trace.json.gz",
            "gpt_train_bf16.pt.trace.json.gz",
        ]
        contents = [(samples / f).read_bytes() for f in files]  # real H200 ranks

        def case(folder: Path) -> tuple[list[str], str]:
            path, ops = mutated_archive(contents, rng, folder)
            jobs = 2 if rng.random() < 0.1 else 1
            return ops, defect_of(lambda: ingest([path], data_dir=folder / "store", jobs=jobs))
    else:
        csv_path = base or REPO / "data" / "samples" / "nvml_phases_h200.csv"
        rows = list(csv.reader(csv_path.open(newline="")))
        side = csv_path.with_name(csv_path.name.removesuffix(".csv") + ".inventory.json")
        inventory = json.loads(side.read_text()) if side.is_file() else []

        def case(folder: Path) -> tuple[list[str], str]:
            new_rows, new_inventory, ops = mutated_recording(rows, inventory, rng)
            return ops, try_recording(new_rows, new_inventory, folder)

    for i in range(count):
        with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
            ops, defect = case(Path(tmp))
        defects += bool(defect)
        print(i, ops, f"DEFECT {defect}" if defect else "ok", flush=True)
    print(f"{count} cases, {defects} defects")
    return 1 if defects else 0


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("trace", "recording", "archive"):
        sys.exit(__doc__)
    base = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    sys.exit(search(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), base))
