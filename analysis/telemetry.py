"""What GPU telemetry means: throttle reasons, the "100 % utilized" trap, activity, alerts.

`utilization.gpu` is a duty cycle: the share of time at least one kernel (or a copy) ran,
whatever it ran on. Measured on an H200 (data/samples/nvml_phases_h200.csv): a pinned
host-to-device copy reads 99 % with SM activity 0 %, one spinning single-block kernel 99 %
with SM activity 0.8 %, a loop of 1-element kernels 18–30 % with 0 %. GPM's SM activity and
DRAM bandwidth say what the GPU really did, so the trap is `util_gpu_pct` well above
`gpm_sm_util_pct`. Samples whose GPM metrics are NULL (GPM unsupported, first sample) are
never judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# nvmlClocksEventReason* bits (nvml.h): why the SM clock is below its maximum.
CLOCK_REASONS = {
    0x1: "idle",
    0x2: "application clocks setting",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
    0x100: "display clock setting",
}
THROTTLE_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # reasons that cost performance under load
TRAP_GAP_PCT = 15.0  # util.gpu this many points above SM activity: the GPU is not as busy
COPY_MIB_S = 1024.0  # PCIe traffic above this with idle SMs: a copy-engine transfer
MEMORY_FULL_PCT = 90.0
ACTIVITIES = ("idle", "tensor", "hbm", "compute", "copy", "few-sm", "launch-bound", "unknown")


def clock_reasons(mask: int | None) -> list[str]:
    """Names of the bits set in a clocks_event_reasons mask (empty for None or 0)."""
    if mask is None or pd.isna(mask):
        return []
    return [name for bit, name in CLOCK_REASONS.items() if int(mask) & bit]


def activity(samples: pd.DataFrame) -> pd.Series:
    """What each sample's GPU was doing, one of ACTIVITIES (index of `samples`).

    idle: util.gpu < 5 % and SMs idle; tensor: tensor cores >= 40 %; hbm: DRAM bandwidth
    >= 50 % of peak; copy, few-sm, launch-bound: the three faces of the utilization trap
    (see `utilization_trap`); compute: anything else busy; unknown: no GPM metrics.
    """
    util = samples["util_gpu_pct"].astype("float64")
    sm = samples["gpm_sm_util_pct"].astype("float64")
    out = pd.Series("compute", index=samples.index, dtype="object")
    trap = utilization_trap(samples)
    out[trap["trap"]] = trap["kind"][trap["trap"]]
    out[(samples["gpm_dram_bw_util_pct"] >= 50) & ~trap["trap"]] = "hbm"
    out[(samples["gpm_tensor_util_pct"] >= 40) & ~trap["trap"]] = "tensor"
    out[(util < 5) & (sm < 2) & ~trap["trap"]] = "idle"
    out[sm.isna()] = "unknown"
    return out


def utilization_trap(samples: pd.DataFrame) -> pd.DataFrame:
    """Samples where utilization.gpu overstates the work: columns trap (bool), kind
    (copy, few-sm, launch-bound or None) and why (one sentence), on the samples' index.

    copy: the copy engines moved data over PCIe while no SM worked; few-sm: kernels ran all
    the time on a few SMs; launch-bound: short kernels with gaps, the CPU cannot launch them
    fast enough.
    """
    util = samples["util_gpu_pct"].astype("float64")
    sm = samples["gpm_sm_util_pct"].astype("float64")
    pcie = samples["gpm_pcie_rx_mib_s"].astype("float64").fillna(0) + samples[
        "gpm_pcie_tx_mib_s"
    ].astype("float64").fillna(0)
    trap = ((util >= TRAP_GAP_PCT) & (util - sm >= TRAP_GAP_PCT)).fillna(False).astype(bool)
    kind = pd.Series(
        np.select(  # type: ignore[call-overload]
            [
                (trap & (pcie >= COPY_MIB_S) & (sm < 10)).to_numpy(),
                (trap & (util >= 80)).to_numpy(),
                trap.to_numpy(),
            ],
            ["copy", "few-sm", "launch-bound"],
            default=None,
        ),
        index=samples.index,
        dtype="object",
    )
    why = pd.Series(None, index=samples.index, dtype="object")
    for i in kind[trap].index:
        u, s, p = util[i], sm[i], pcie[i]
        why[i] = {
            "copy": f"utilization.gpu {u:.0f} % counts a PCIe copy ({p:,.0f} MiB/s) as busy; "
            f"SMs were {s:.1f} % active",
            "few-sm": f"utilization.gpu {u:.0f} %: kernels ran all the time, but on few SMs "
            f"(SM activity {s:.1f} %)",
            "launch-bound": f"utilization.gpu {u:.0f} % with SM activity {s:.1f} %: short "
            "kernels with gaps between them (launch-bound; try CUDA graphs or larger batches)",
        }[kind[i]]
    return pd.DataFrame({"trap": trap, "kind": kind, "why": why})


def phase_signature(samples: pd.DataFrame, phase: pd.Series) -> pd.DataFrame:
    """Median of the key metrics per phase label, plus the most common activity:
    index phase; columns util_gpu_pct, gpm_sm_util_pct, gpm_sm_occupancy_pct,
    gpm_dram_bw_util_pct, gpm_tensor_util_pct, gpm_pcie_rx_mib_s, power_mw, sm_clock_mhz,
    throttled_share (share of samples with a THROTTLE_BITS reason), activity."""
    cols = ["util_gpu_pct", "gpm_sm_util_pct", "gpm_sm_occupancy_pct", "gpm_dram_bw_util_pct",
            "gpm_tensor_util_pct", "gpm_pcie_rx_mib_s", "power_mw", "sm_clock_mhz"]  # fmt: skip
    frame = (
        samples[cols]
        .astype("float64")
        .assign(
            phase=phase.to_numpy(),
            throttled=(samples["clocks_event_reasons"].fillna(0).astype("int64") & THROTTLE_BITS)
            > 0,
            activity=activity(samples).to_numpy(),
        )
    )
    grouped = frame.groupby("phase", sort=False)
    out = grouped[cols].median()
    out["throttled_share"] = grouped["throttled"].mean()
    out["activity"] = grouped["activity"].agg(lambda a: a.value_counts().index[0])
    return out


# Samples newer than this are live: the agent writes a segment a second, so a GPU whose
# newest sample is older has stopped reporting (or its data is a replay with recorded times).
LIVE_WITHIN_S = 10.0


def gpu_label(host: str, gpu: int) -> str:
    """How every view names one GPU: 'node7 · GPU 0'."""
    return f"{host} · GPU {gpu}"


def freshness(newest_ns: int, now_ns: int) -> tuple[bool, float]:
    """(live, age in s) of the newest sample at `now_ns`: live when at most LIVE_WITHIN_S
    old (a clock a little ahead of the agent's reads as 0 s)."""
    age = max(now_ns - newest_ns, 0) / 1e9
    return age <= LIVE_WITHIN_S, age


def age_text(age_s: float) -> str:
    """'0.8 s', '4 min', '3.2 h', '2.0 days': an age in the unit a reader expects."""
    if age_s < 60:
        return f"{age_s:.1f} s"
    if age_s < 3600:
        return f"{age_s / 60:.0f} min"
    if age_s < 86400:
        return f"{age_s / 3600:.1f} h"
    return f"{age_s / 86400:.1f} days"


@dataclass(frozen=True, slots=True)
class Alert:
    """One thing a user should look at on one GPU."""

    host: str
    gpu: int
    kind: str  # throttling, memory, utilization-trap
    message: str


def alerts(window: pd.DataFrame, gpus: pd.DataFrame, min_share: float = 0.5) -> list[Alert]:
    """Alerts over a recent window of samples (raw or bucketed gpu_samples rows) for each GPU
    in `gpus` (data.reads_telemetry.gpus columns: host, gpu, mem_total_bytes, …).

    throttling: a THROTTLE_BITS reason in at least `min_share` of the samples; memory: used
    memory at or above MEMORY_FULL_PCT of capacity in the newest sample; utilization-trap:
    the trap in at least `min_share` of the samples with GPM data.
    """
    out: list[Alert] = []
    for key, w in window.groupby(["host", "gpu"], sort=True):
        host, gpu = str(key[0]), int(key[1])  # type: ignore[call-overload]
        reasons = w["clocks_event_reasons"].dropna().astype("int64")
        throttled = reasons[(reasons & THROTTLE_BITS) > 0]
        if len(reasons) and len(throttled) / len(reasons) >= min_share:
            names = sorted({n for m in throttled for n in clock_reasons(m & THROTTLE_BITS)})
            clock = w["sm_clock_mhz"].astype("float64").median()
            out.append(
                Alert(
                    str(host),
                    int(gpu),
                    "throttling",
                    f"clocks held down by {', '.join(names)} in "
                    f"{len(throttled) / len(reasons):.0%} of samples "
                    f"(SM clock median {clock:.0f} MHz)",
                )
            )
        inv = gpus[(gpus["host"] == host) & (gpus["gpu"] == gpu)]
        total = inv["mem_total_bytes"].iloc[0] if len(inv) else None
        used_col = "mem_used_max_bytes" if "mem_used_max_bytes" in w else "mem_used_bytes"
        used = w[used_col].dropna()
        if not pd.isna(total) and total and len(used):
            pct = 100 * float(used.iloc[-1]) / float(total)
            if pct >= MEMORY_FULL_PCT:
                out.append(
                    Alert(
                        str(host),
                        int(gpu),
                        "memory",
                        f"memory {pct:.0f} % full: the next allocation may fail",
                    )
                )
        judged = w[w["gpm_sm_util_pct"].notna()]
        trap = utilization_trap(judged)
        if len(judged) and trap["trap"].mean() >= min_share:
            kinds = trap.loc[trap["trap"], "kind"].value_counts()
            example = trap.loc[trap["kind"] == kinds.index[0], "why"].iloc[-1]
            out.append(
                Alert(
                    str(host),
                    int(gpu),
                    "utilization-trap",
                    f"utilization.gpu overstates the work in "
                    f"{trap['trap'].mean():.0%} of samples: {example}",
                )
            )
    return out
