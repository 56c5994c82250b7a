"""Measure the GPU's real ceilings: `python -m collectors.calibrate`.

Datasheet peaks are optimistic (on an H200: bf16 GEMM reaches ~75-80 % of 989 TFLOP/s, a copy
~88 % of 4.8 TB/s), so the roofline draws measured ceilings beside them. This measures, with
CUDA events, the median of several timed repetitions after warm-ups:

- ``copy_bytes_per_s``: a device-to-device copy of a 2 GiB buffer, bytes read + written;
- ``matmul_<p>_flop_per_s``: an 8192³ matmul on random data (2·n³ FLOP) for p in fp32 (TF32
  off, no tensor cores), tf32, bf16, fp16 and, where ``torch._scaled_mm`` runs, fp8 (e4m3).

The result is one row per metric in the ``ceilings`` stream table of the lake (written with
``Lake.write_segment``, so no database lock is needed) and, with ``-o FILE``, a JSON file in
the format of ``../shared/fixtures/h200/ceilings.json``. ``--import FILE`` stores such a
JSON file instead of measuring (a card measured elsewhere). Without CUDA it exits with 2 and
one line; ``--json`` prints the result or the error as one JSON line (data.cli).
"""

from __future__ import annotations

import importlib
import json
import socket
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from data.cli import CommandParser, Result, add_json_flag, parse_command, run_command
from data.errors import CudaUnavailableError, DashError
from data.lake import LAKE_FOLDER, Lake
from data.valid_text import valid_text

DEFAULT_DATA_DIR = Path("data/local")  # data.store's default; importing it would need duckdb
MATMUL_N = 8192
COPY_BYTES = 2 << 30
WARMUP, REPEAT = 3, 10
METRIC_SUFFIXES = ("_bytes_per_s", "_flop_per_s")


def _torch() -> Any:
    """torch, imported only here: the dashboard and the other CLIs never need it."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise CudaUnavailableError("cuda: torch is not installed; calibrate needs a GPU") from None
    if not torch.cuda.is_available():
        raise CudaUnavailableError("cuda: no CUDA device visible; calibrate needs a GPU")
    return torch


def _median_s(torch: Any, fn: Callable[[], object]) -> float:
    """Median seconds of one call of `fn`, timed with CUDA events after warm-ups."""
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPEAT):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return float(statistics.median(times))


def _matmul_rates(torch: Any) -> dict[str, float]:
    n, flop = MATMUL_N, 2.0 * MATMUL_N**3
    out: dict[str, float] = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype, tf32 in (
            ("fp32", torch.float32, False),
            ("tf32", torch.float32, True),
            ("bf16", torch.bfloat16, False),
            ("fp16", torch.float16, False),
        ):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            out[f"matmul_{name}_flop_per_s"] = flop / _median_s(torch, partial(torch.matmul, a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    fp8 = getattr(torch, "float8_e4m3fn", None)
    if fp8 is not None and torch.cuda.get_device_capability() >= (8, 9):
        a = torch.randn(n, n, device="cuda").to(fp8)
        b = torch.randn(n, n, device="cuda").to(fp8).t()  # _scaled_mm wants B column-major
        one = torch.ones((), device="cuda")
        try:
            s = _median_s(torch, lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16))
            out["matmul_fp8_flop_per_s"] = flop / s
        except RuntimeError as e:  # an fp8 path this build of torch lacks: skip, say so
            print(f"fp8 matmul skipped: {str(e).splitlines()[0]}", file=sys.stderr)
    return out


def measure() -> dict[str, Any]:
    """Measure this machine's GPU 0; returns the ceilings dict (see the module docstring)."""
    torch = _torch()
    props = torch.cuda.get_device_properties(0)
    src = torch.empty(COPY_BYTES // 4, device="cuda", dtype=torch.float32).normal_()
    dst = torch.empty_like(src)
    copy_s = _median_s(torch, lambda: dst.copy_(src))
    return {
        "copy_bytes_per_s": 2.0 * COPY_BYTES / copy_s,
        **_matmul_rates(torch),
        "device": {
            "name": props.name,
            "sm_count": props.multi_processor_count,
            "total_memory": props.total_memory,
            "cc": f"{props.major}.{props.minor}",
            "l2_bytes": getattr(props, "L2_cache_size", None),
        },
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }


def load_ceilings(path: Path) -> dict[str, Any]:
    """Read and check a ceilings JSON file (the format `measure` returns)."""
    try:
        doc = json.loads(path.read_text())
        json.dumps(doc, ensure_ascii=False).encode()  # a "\udcff" escape is not text
    except (OSError, UnicodeError, json.JSONDecodeError, RecursionError) as e:
        raise DashError(f"{path}: cannot read a ceilings JSON file ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("device"), dict):
        raise DashError(f"{path}: expected an object with a 'device' object")
    if not doc["device"].get("name"):
        raise DashError(f"{path}: device.name is missing")
    rates = {k: v for k, v in doc.items() if k.endswith(METRIC_SUFFIXES)}
    if not rates or not all(isinstance(v, int | float) and v > 0 for v in rates.values()):
        raise DashError(f"{path}: no positive *_bytes_per_s / *_flop_per_s values")
    return doc


def ceiling_rows(doc: dict[str, Any], source: str, measured_at_ns: int) -> pa.Table:
    """The `ceilings` rows (without `host`) of one ceilings dict: one row per metric."""
    details = json.dumps(
        {k: v for k, v in doc.items() if not k.endswith(METRIC_SUFFIXES)}, sort_keys=True
    )
    metrics = sorted(k for k in doc if k.endswith(METRIC_SUFFIXES))
    n = len(metrics)
    return pa.table({
        "measured_at_ns": [measured_at_ns] * n,
        "device_name": [str(doc["device"]["name"])] * n,
        "metric": metrics,
        "value": [float(doc[m]) for m in metrics],
        "source": [source] * n,
        "details": [details] * n,
    })  # fmt: skip


def store_ceilings(data_dir: Path, doc: dict[str, Any], source: str) -> Path:
    """Append one calibration to the lake's `ceilings` table; returns the segment path."""
    rows = ceiling_rows(doc, source, time.time_ns())
    return Lake(Path(data_dir) / LAKE_FOLDER).write_segment("ceilings", socket.gethostname(), rows)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
        prog="python -m collectors.calibrate",
        description="Measure GPU 0's copy bandwidth and matmul rate per precision and store "
        "them as the roofline's measured ceilings (needs CUDA and torch).",
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    ap.add_argument(
        "--import",
        dest="import_file",
        type=Path,
        metavar="FILE",
        help="store the ceilings of a JSON file (e.g. measured on another machine) instead",
    )
    ap.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="also write the ceilings as a JSON file (the format --import reads)",
    )
    add_json_flag(ap)
    args = parse_command(ap, argv)

    def body() -> Result:
        if args.import_file:
            doc = load_ceilings(args.import_file)
            source = valid_text(f"import:{args.import_file.name}")
        else:
            doc, source = measure(), "measured"
        store_ceilings(args.data, doc, source)
        if args.output:
            args.output.write_text(json.dumps(doc, indent=1) + "\n")
        metrics = {k: doc[k] for k in sorted(doc) if k.endswith(METRIC_SUFFIXES)}
        return {"device": doc["device"]["name"], "source": source, "ceilings": metrics}

    def show(result: Result) -> None:
        for k, v in result["ceilings"].items():
            unit = "TB/s" if k.endswith("_bytes_per_s") else "TFLOP/s"
            print(f"{k}: {v / 1e12:,.1f} {unit}", file=sys.stderr)
        print(f"{result['device']}: {result['source']}")

    return run_command(body, json_line=args.json, show=show)


if __name__ == "__main__":
    sys.exit(main())
