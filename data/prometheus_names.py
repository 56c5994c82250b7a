"""The Prometheus names of our telemetry: one table that the agent's /metrics and the
dashboard's Prometheus reads share, so what one writes the other reads back.

Names, types, units and labels are dcgm-exporter's (NVIDIA/dcgm-exporter
etc/default-counters.csv and etc/dcp-metrics-included.csv; the field names of DCGM's
dcgm_fields.h as NVIDIA/go-dcgm lists them), so Grafana boards built on dcgm-exporter read
the agent's series, and the dashboard reads a plain dcgm-exporter's. What DCGM has no field
for is ours, named in the same style: DASH_FI_*. Every series is a gauge, as those CSVs
declare each of these fields (docs/decisions.md D22).

`scale` is our column's unit in the series' unit (series = column / scale, column = series
× scale): W to mW 1000, MiB to bytes 2**20 (DCGM's "MB" are MiB), a 0–1 ratio to % 100
(DCGM_FI_PROF_*), B/s to MiB/s 2**-20. Dividing keeps the exported value the exact decimal
(122 320 mW is 122.32 W, where × 0.001 gives 122.32000000000001).
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 2**20


@dataclass(frozen=True, slots=True)
class Series:
    """One gpu_samples or gpu_inventory column as a Prometheus gauge."""

    column: str
    name: str  # the name the agent exports
    help: str
    scale: float = 1.0
    aliases: tuple[str, ...] = ()  # older names a dcgm-exporter may still use; read only

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


# Labels of every GPU series, as dcgm-exporter writes them. `Hostname` is the label of every
# released dcgm-exporter (up to 4.5.3-4.8.2); its main branch renamed it `hostname` on
# 2026-05-12 (#655), so reads accept both, then Prometheus' own `instance`.
LABELS = ("gpu", "UUID", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "dash_source")
HOST_LABELS = ("Hostname", "hostname", "instance")
SOURCE_LABEL = "dash_source"  # ours: nvml or replay; absent on dcgm-exporter's series

SAMPLE_SERIES: tuple[Series, ...] = (
    Series("util_gpu_pct", "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    Series("util_mem_pct", "DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."),
    Series("sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    Series("mem_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
    Series("power_mw", "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 1000),
    Series(
        "power_instant_mw",
        "DCGM_FI_DEV_POWER_USAGE_INSTANT",
        "Current instantaneous power usage (in W).",
        1000,
    ),
    Series("temp_gpu_c", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
    Series("temp_mem_c", "DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C)."),
    Series("mem_used_bytes", "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", MIB),
    Series(
        "mem_reserved_bytes",
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        MIB,
    ),
    Series(
        "clocks_event_reasons",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*).",
        aliases=("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",),
    ),
    Series(
        "gpm_sm_util_pct",
        "DCGM_FI_PROF_SM_ACTIVE",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        100,
    ),
    Series(
        "gpm_sm_occupancy_pct",
        "DCGM_FI_PROF_SM_OCCUPANCY",
        "The ratio of number of warps resident on an SM.",
        100,
    ),
    Series(
        "gpm_dram_bw_util_pct",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        100,
    ),
    Series(
        "gpm_tensor_util_pct",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        100,
    ),
    Series(
        "gpm_fp16_util_pct",
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        "Ratio of cycles the fp16 pipes are active.",
        100,
    ),
    Series(
        "gpm_fp32_util_pct",
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
        "Ratio of cycles the fp32 pipes are active.",
        100,
    ),
    Series(
        "gpm_pcie_rx_mib_s",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "The rate of data received over the PCIe bus (in B/s).",
        1 / MIB,
    ),
    Series(
        "gpm_pcie_tx_mib_s",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "The rate of data transmitted over the PCIe bus (in B/s).",
        1 / MIB,
    ),
    Series(
        "gpm_nvlink_rx_mib_s",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "The rate of data received over NVLink, all links (in B/s).",
        1 / MIB,
    ),
    Series(
        "gpm_nvlink_tx_mib_s",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "The rate of data transmitted over NVLink, all links (in B/s).",
        1 / MIB,
    ),
    Series("process_count", "DASH_FI_DEV_PROCESS_COUNT", "Compute processes on the GPU."),
    Series(
        "sample_cost_ns",
        "DASH_FI_AGENT_SAMPLE_COST",
        "Wall time the agent spent reading this sample (in us).",
        1000,
    ),
)

# Static facts, exported on every scrape beside the samples (the agent's gpu_inventory row).
# uuid, name and driver_version travel as the UUID, modelName and DCGM_FI_DRIVER_VERSION
# labels, as dcgm-exporter carries them.
INVENTORY_SERIES: tuple[Series, ...] = (
    Series("mem_total_bytes", "DCGM_FI_DEV_FB_TOTAL", "Total framebuffer memory (in MiB).", MIB),
    Series(
        "power_limit_mw",
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
        "Effective power limit that the driver enforces (in W).",
        1000,
    ),
    Series("max_sm_clock_mhz", "DCGM_FI_DEV_MAX_SM_CLOCK", "Maximum SM clock (in MHz)."),
    Series("max_mem_clock_mhz", "DCGM_FI_DEV_MAX_MEM_CLOCK", "Maximum memory clock (in MHz)."),
    Series("pcie_gen", "DCGM_FI_DEV_PCIE_LINK_GEN", "Current PCIe link generation."),
    Series("pcie_width", "DCGM_FI_DEV_PCIE_LINK_WIDTH", "Current PCIe link width."),
    Series(
        "peak_hbm_bytes_per_s",
        "DASH_FI_DEV_PEAK_HBM_BANDWIDTH",
        "Theoretical peak memory bandwidth: 2 x max memory clock x bus width (in B/s).",
    ),
    Series("mem_bus_width_bits", "DASH_FI_DEV_MEM_BUS_WIDTH", "Memory bus width (in bits)."),
    Series("cuda_cores", "DASH_FI_DEV_CUDA_CORES", "CUDA cores."),
    Series("compute_major", "DASH_FI_DEV_COMPUTE_CAPABILITY_MAJOR", "Compute capability major."),
    Series("compute_minor", "DASH_FI_DEV_COMPUTE_CAPABILITY_MINOR", "Compute capability minor."),
)

# dcgm-exporter's default counters have no FB_TOTAL: the total is free + used + reserved.
FB_PARTS = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED")
