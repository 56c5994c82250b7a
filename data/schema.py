"""The store's contract: every table, every column, its type and unit.

Timestamps are integer nanoseconds on the trace's own clock (Kineto's `ts`, in µs with
3 decimals, parsed exactly, never through a float). Units are in the column names.
JSON columns hold the trace's own value verbatim (shapes, dtypes, process-group ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCHEMA_VERSION = 1

I32, I64, F64, STR, BOOL = pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_()


@dataclass(frozen=True, slots=True)
class Column:
    """One column: name (with its unit), Arrow type and a one-line meaning."""

    name: str
    type: pa.DataType
    doc: str


def _cols(*spec: tuple[str, pa.DataType, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in spec)


_RUN_RANK = (("run_id", STR, "run the row belongs to"), ("rank", I32, "distributed rank"))

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": _cols(
        ("run_id", STR, "unique id, e.g. 20261129-215301-a1b2c3"),
        ("name", STR, "user-facing name (file stem unless given)"),
        ("source", STR, "ingested path(s), JSON list"),
        ("source_sha256", STR, "sha256 over the ranks' file hashes; detects re-ingest"),
        ("ingested_at_ns", I64, "wall-clock time of ingest, unix ns"),
        ("rank_count", I32, "number of rank files"),
        ("device_name", STR, "GPU name from deviceProperties, NULL for CPU-only traces"),
        ("events_total", I64, "trace events read, all ranks"),
        ("events_malformed", I64, "events dropped or partly read because a field was invalid"),
        ("kernel_count", I64, "GPU kernels, all ranks"),
        ("tags", STR, "user metadata, JSON object"),
        ("schema_version", I32, "schema version that wrote the run"),
    ),
    "ranks": _cols(
        *_RUN_RANK,
        ("world_size", I32, "distributedInfo.world_size, NULL if absent"),
        ("rank_source", STR, "where the rank came from: distributedInfo, file name or default"),
        ("file_name", STR, "trace file name"),
        ("file_bytes", I64, "trace file size on disk"),
        ("file_sha256", STR, "sha256 of the file bytes"),
        ("host_name", STR, "host_name metadata, if any"),
        ("backend", STR, "distributed backend (nccl, gloo)"),
        ("distributed_info", STR, "distributedInfo, JSON"),
        ("trace_metadata", STR, "other top-level keys (versions, flags), JSON"),
        ("base_time_ns", I64, "baseTimeNanoseconds: add to ts_ns for unix ns"),
        ("start_ns", I64, "first event start"),
        ("end_ns", I64, "last event end"),
        ("events_total", I64, "trace events in the file"),
        ("events_malformed", I64, "events with an invalid field"),
        (
            "events_skipped",
            I64,
            "events not stored (flows, metadata, python_function but nn.Module by default)",
        ),
        ("malformed_examples", STR, "up to 5 examples of what was invalid, JSON list"),
        ("category_counts", STR, "events per ph/cat, JSON object"),
    ),
    "devices": _cols(
        *_RUN_RANK,
        ("device_id", I32, "device index (GPU events' pid)"),
        ("name", STR, "device name"),
        ("total_global_mem_bytes", I64, "device memory"),
        ("compute_major", I32, "compute capability major"),
        ("compute_minor", I32, "compute capability minor"),
        ("num_sms", I32, "streaming multiprocessors (CUs on AMD)"),
        ("max_threads_per_block", I32, "threads per block limit"),
        ("max_threads_per_sm", I32, "threads per SM limit"),
        ("regs_per_block", I32, "32-bit registers per block"),
        ("regs_per_sm", I32, "32-bit registers per SM"),
        ("warp_size", I32, "threads per warp"),
        ("shared_mem_per_block_bytes", I64, "shared memory per block"),
        ("shared_mem_per_sm_bytes", I64, "shared memory per SM"),
        ("shared_mem_per_block_optin_bytes", I64, "opt-in shared memory per block"),
    ),
    "gpu_events": _cols(
        *_RUN_RANK,
        ("kind", STR, "kernel, memcpy or memset"),
        ("name", STR, "kernel name or memcpy/memset description"),
        ("device", I32, "device index"),
        ("stream", I64, "CUDA/HIP stream id"),
        ("ts_ns", I64, "start on the GPU"),
        ("dur_ns", I64, "duration on the GPU"),
        ("correlation", I64, "id shared with the launching runtime call"),
        ("external_id", I64, "External id of the CPU op on the stack at launch, if recorded"),
        (
            "op_external_id",
            I64,
            "External id of the launching CPU op (own, else its launch call's)",
        ),
        ("launch_api", STR, "launching runtime/driver call (cudaLaunchKernel, cudaGraphLaunch…)"),
        ("launch_ts_ns", I64, "start of that runtime call (CPU clock)"),
        ("step", I32, "ProfilerStep number of the launching call, NULL if outside steps"),
        ("grid_x", I32, "grid size x"),
        ("grid_y", I32, "grid size y"),
        ("grid_z", I32, "grid size z"),
        ("block_x", I32, "block size x"),
        ("block_y", I32, "block size y"),
        ("block_z", I32, "block size z"),
        ("registers_per_thread", I32, "registers per thread"),
        ("shared_mem_bytes", I64, "static + dynamic shared memory per block"),
        ("blocks_per_sm", F64, "grid blocks / number of SMs"),
        ("warps_per_sm", F64, "blocks per SM × warps per block"),
        ("est_occupancy_pct", F64, "Kineto's estimated achieved occupancy, %"),
        ("bytes", I64, "bytes copied or set (memcpy/memset)"),
        ("memcpy_kind", STR, "HtoD, DtoH, DtoD, HtoH, PtoP (memcpy)"),
        ("src_memory", STR, "Pageable, Pinned, Device, Host… (memcpy source)"),
        ("dst_memory", STR, "destination memory kind (memcpy)"),
        ("graph_id", I64, "CUDA graph id, when launched by a graph"),
        ("graph_node_id", I64, "CUDA graph node id"),
    ),
    "runtime_calls": _cols(
        *_RUN_RANK,
        ("category", STR, "runtime, driver or sync (cuda_sync events)"),
        ("call_kind", STR, "launch, graph_launch, memcpy, memset, sync, other"),
        ("name", STR, "API name, e.g. cudaLaunchKernel, cudaStreamSynchronize"),
        ("pid", I64, "process id"),
        ("tid", I64, "thread id"),
        ("ts_ns", I64, "start (CPU clock)"),
        ("dur_ns", I64, "duration"),
        ("correlation", I64, "id shared with the GPU activity it caused"),
        ("external_id", I64, "External id of the enclosing CPU op"),
        ("cbid", I32, "CUPTI callback id"),
        ("step", I32, "ProfilerStep number containing the call"),
    ),
    "cpu_ops": _cols(
        *_RUN_RANK,
        ("name", STR, "operator or record_function name"),
        ("pid", I64, "process id"),
        ("tid", I64, "thread id"),
        ("ts_ns", I64, "start"),
        ("dur_ns", I64, "duration (inclusive)"),
        ("external_id", I64, "External id (links GPU activity)"),
        ("record_function_id", I64, "Record function id"),
        ("sequence_number", I64, "autograd sequence number (forward/backward pairing)"),
        ("fwd_thread_id", I64, "forward thread id of a backward op"),
        ("step", I32, "ProfilerStep number containing the op"),
        ("input_dims", STR, "Input Dims, JSON list of shapes"),
        ("input_types", STR, "Input type, JSON list of dtypes"),
        ("input_strides", STR, "Input Strides, JSON list"),
        ("concrete_inputs", STR, "Concrete Inputs, JSON list of scalar values as strings"),
    ),
    "annotations": _cols(
        *_RUN_RANK,
        ("kind", STR, "cpu (user_annotation) or gpu (gpu_user_annotation)"),
        ("name", STR, "annotation name (record_function / NVTX-style ranges)"),
        ("pid", I64, "process id (cpu) or device (gpu)"),
        ("tid", I64, "thread id (cpu) or stream (gpu)"),
        ("ts_ns", I64, "start"),
        ("dur_ns", I64, "duration"),
        ("external_id", I64, "External id"),
    ),
    "steps": _cols(
        *_RUN_RANK,
        ("step", I32, "N of ProfilerStep#N"),
        ("ts_ns", I64, "CPU-side start of the step"),
        ("dur_ns", I64, "CPU-side duration of the step"),
        ("gpu_start_ns", I64, "first start of GPU work launched in the step"),
        ("gpu_end_ns", I64, "last end of GPU work launched in the step"),
        ("kernel_count", I64, "kernels launched in the step"),
        ("kernel_time_ns", I64, "sum of those kernels' durations"),
        ("gpu_busy_ns", I64, "union of the step's GPU activity intervals, all streams"),
    ),
    "collectives": _cols(
        *_RUN_RANK,
        ("source", STR, "cpu_op (record_param_comms) or kernel"),
        ("name", STR, "op or kernel name"),
        ("ts_ns", I64, "start"),
        ("dur_ns", I64, "duration"),
        ("external_id", I64, "External id"),
        ("correlation", I64, "correlation (kernels)"),
        ("collective_name", STR, "allreduce, allgather, reduce_scatter, send, recv…"),
        ("dtype", STR, "element type"),
        ("in_msg_nelems", I64, "input elements"),
        ("out_msg_nelems", I64, "output elements"),
        ("group_size", I32, "ranks in the process group"),
        ("pg_name", STR, "process group name"),
        ("pg_desc", STR, "process group description"),
        ("pg_ranks", STR, "process group ranks, JSON list"),
        ("in_split_size", STR, "input split sizes, JSON"),
        ("out_split_size", STR, "output split sizes, JSON"),
    ),
    "memory_events": _cols(
        *_RUN_RANK,
        ("ts_ns", I64, "time of the allocation or free"),
        ("device_type", I32, "0 CPU, 1 CUDA"),
        ("device_id", I32, "device index (-1 for CPU)"),
        ("addr", I64, "address"),
        ("bytes", I64, "bytes allocated (negative: freed)"),
        ("total_allocated_bytes", I64, "allocator's allocated total after the event"),
        ("total_reserved_bytes", I64, "allocator's reserved total after the event"),
    ),
    "python_functions": _cols(
        *_RUN_RANK,
        ("name", STR, "python frame or nn.Module name"),
        ("pid", I64, "process id"),
        ("tid", I64, "thread id"),
        ("ts_ns", I64, "start"),
        ("dur_ns", I64, "duration"),
        ("python_id", I64, "Python id"),
        ("python_parent_id", I64, "Python parent id"),
    ),
}


# Tables that agents append to as a stream of small segments, partitioned by the host that
# wrote them (lake/<table>/host=<host>/<segment>.parquet) rather than committed per run.
# Their first column is `host`, which lives in the partition path, not in the files.
# One dict per feature, so that features add tables without touching each other's lines.

# The NVML/GPM agent (collectors/nvml*.py). Timestamps here are Unix ns (time.time_ns()).
# A metric the GPU cannot report (GPM before Hopper, no NVLink, MIG) is NULL, never 0.
TELEMETRY_TABLES: dict[str, tuple[Column, ...]] = {
    "gpu_samples": _cols(
        ("host", STR, "host the agent ran on (partition)"),
        ("gpu", I32, "NVML device index"),
        ("ts_ns", I64, "sample time, Unix ns"),
        ("source", STR, "nvml (read from a GPU) or replay (a recording played back)"),
        ("agent_id", STR, "one agent start: <pid>-<start Unix ns>; joins gpu_inventory"),
        ("util_gpu_pct", I32, "utilization.gpu: % of time any kernel ran (a duty cycle)"),
        ("util_mem_pct", I32, "utilization.memory: % of time HBM was read or written"),
        ("sm_clock_mhz", I32, "clocks.sm"),
        ("mem_clock_mhz", I32, "clocks.mem"),
        ("power_mw", I64, "power.draw, 1 s average on Ampere and newer"),
        ("power_instant_mw", I64, "instantaneous power (NVML_FI_DEV_POWER_INSTANT)"),
        ("temp_gpu_c", I32, "temperature.gpu"),
        ("temp_mem_c", I32, "HBM temperature (NVML_FI_DEV_MEMORY_TEMP)"),
        ("mem_used_bytes", I64, "memory used by applications (memory info v2)"),
        ("mem_reserved_bytes", I64, "memory the driver reserves (memory info v2)"),
        ("clocks_event_reasons", I64, "why clocks dropped, bitmask: 0x4 power cap, 0x40 thermal"),
        ("gpm_sm_util_pct", F64, "GPM SM_UTIL: % of SMs busy"),
        ("gpm_sm_occupancy_pct", F64, "GPM SM_OCCUPANCY: % of warps resident vs the maximum"),
        ("gpm_dram_bw_util_pct", F64, "GPM DRAM_BW_UTIL: HBM bandwidth used vs theoretical peak"),
        ("gpm_tensor_util_pct", F64, "GPM ANY_TENSOR_UTIL: tensor-core activity"),
        ("gpm_fp16_util_pct", F64, "GPM FP16_UTIL (non-tensor)"),
        ("gpm_fp32_util_pct", F64, "GPM FP32_UTIL (non-tensor)"),
        ("gpm_pcie_rx_mib_s", F64, "GPM PCIE_RX_PER_SEC, MiB/s"),
        ("gpm_pcie_tx_mib_s", F64, "GPM PCIE_TX_PER_SEC, MiB/s"),
        ("gpm_nvlink_rx_mib_s", F64, "GPM NVLINK_TOTAL_RX_PER_SEC, MiB/s (NULL without NVLink)"),
        ("gpm_nvlink_tx_mib_s", F64, "GPM NVLINK_TOTAL_TX_PER_SEC, MiB/s (NULL without NVLink)"),
        ("process_count", I32, "compute processes on the GPU (read once a second)"),
        ("processes", STR, "compute processes, JSON list of [pid, used bytes] (once a second)"),
        ("sample_cost_ns", I64, "wall time the agent spent reading this sample"),
    ),
    "gpu_inventory": _cols(
        ("host", STR, "host the agent ran on (partition)"),
        ("gpu", I32, "NVML device index"),
        ("ts_ns", I64, "when the agent started, Unix ns"),
        ("source", STR, "nvml or replay"),
        ("agent_id", STR, "one agent start: <pid>-<start Unix ns>"),
        ("uuid", STR, "GPU UUID"),
        ("name", STR, "GPU name, e.g. NVIDIA H200"),
        ("architecture", STR, "Volta, Ampere, Hopper, Blackwell…"),
        ("compute_major", I32, "compute capability major"),
        ("compute_minor", I32, "compute capability minor"),
        ("cuda_cores", I32, "CUDA cores"),
        ("mem_bus_width_bits", I32, "memory bus width"),
        ("max_sm_clock_mhz", I32, "maximum SM clock"),
        ("max_mem_clock_mhz", I32, "maximum memory clock"),
        ("mem_total_bytes", I64, "device memory"),
        ("power_limit_mw", I64, "enforced power limit"),
        ("peak_hbm_bytes_per_s", F64, "2 × max memory clock × bus width / 8"),
        ("pcie_gen", I32, "current PCIe link generation"),
        ("pcie_width", I32, "current PCIe link width"),
        ("gpm_supported", BOOL, "GPM metrics available (Hopper and newer, not MIG)"),
        ("unsupported", STR, "metrics stored as NULL on this GPU, JSON list"),
        ("driver_version", STR, "driver version"),
        ("tags", STR, "the agent's tags, JSON object"),
    ),
}

# Measured hardware ceilings (collectors/calibrate.py).
CALIBRATION_TABLES: dict[str, tuple[Column, ...]] = {
    "ceilings": _cols(
        ("host", STR, "host that measured (or imported) the ceilings"),
        ("measured_at_ns", I64, "when the calibration ran, unix ns"),
        ("device_name", STR, "GPU name as the driver reports it, e.g. NVIDIA H200"),
        ("metric", STR, "copy_bytes_per_s or matmul_<precision>_flop_per_s"),
        ("value", F64, "the measured rate, in the unit its metric name says"),
        ("source", STR, "measured, or import:<file> for an imported ceilings JSON"),
        ("details", STR, "device properties and library versions, JSON"),
    ),
}

STREAM_TABLES: dict[str, tuple[Column, ...]] = {**TELEMETRY_TABLES, **CALIBRATION_TABLES}


def columns(table: str) -> tuple[Column, ...]:
    """The columns of a run table or a stream table."""
    return TABLES[table] if table in TABLES else STREAM_TABLES[table]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a store table."""
    return pa.schema([pa.field(c.name, c.type) for c in columns(table)])


def column_names(table: str) -> list[str]:
    """Column names of a store table, in order."""
    return [c.name for c in columns(table)]


RUN_TABLE_PURPOSE = {
    "runs": "one row per ingested run (one trace file, or one file per rank)",
    "ranks": "one row per rank file: distributed info, event counts, malformed-event examples",
    "devices": "deviceProperties of each rank's trace",
    "gpu_events": "kernels, memcpy and memset on the GPU, linked to launch call, op and step",
    "runtime_calls": "CUDA/HIP runtime and driver calls (launches, syncs, copies)",
    "cpu_ops": "PyTorch operators with recorded shapes, dtypes, strides and scalar inputs",
    "annotations": "user annotations (record_function) on the CPU and their GPU spans",
    "steps": "ProfilerStep#N ranges with the GPU work each step launched",
    "collectives": "NCCL/Gloo collective metadata (record_param_comms ops and NCCL kernels)",
    "memory_events": "allocator events from profile_memory=True",
    "python_functions": "nn.Module ranges of python_function events (every python_function "
    "event with --python-functions)",
}
TELEMETRY_PURPOSE: dict[str, str] = {
    "gpu_samples": "NVML/GPM telemetry: one row per GPU per agent tick (Unix ns)",
    "gpu_inventory": "each GPU's static facts, one row per GPU per agent start",
}
CALIBRATION_PURPOSE: dict[str, str] = {
    "ceilings": "measured copy bandwidth and matmul rate per precision (collectors.calibrate)",
}
TABLE_PURPOSE = {**RUN_TABLE_PURPOSE, **TELEMETRY_PURPOSE, **CALIBRATION_PURPOSE}


def markdown() -> str:
    """The schema as Markdown (docs/schema.md is this output; a test keeps it current)."""
    out = [
        "# Store schema",
        "",
        f"Schema version {SCHEMA_VERSION}. Generated by `python -m data.schema`; do not edit.",
        "Timestamps are integer nanoseconds on the trace's clock; units are in column names.",
        "",
    ]
    for table, cols in [*TABLES.items(), *STREAM_TABLES.items()]:
        out += [
            f"## `{table}`",
            "",
            TABLE_PURPOSE[table],
            "",
            "| column | type | meaning |",
            "|---|---|---|",
        ]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in cols]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown())
