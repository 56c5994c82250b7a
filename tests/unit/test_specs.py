"""The device spec table: dense and sparse apart, every row sourced, names matched."""

from __future__ import annotations

import pytest

from analysis.specs import PRECISIONS, SPECS, match_spec, spec_names

REQUIRED = {
    "A100 40GB SXM4", "A100 80GB SXM4", "A100 40GB PCIe", "A100 80GB PCIe", "H100 SXM5 80GB",
    "H100 PCIe 80GB", "H200 SXM 141GB", "B200 (HGX, per GPU)", "L4", "L40S", "A10G (AWS G5)",
    "GeForce RTX 4090",
}  # fmt: skip


def test_the_issue_s_gpus_are_all_in_the_table() -> None:
    assert set(spec_names()) >= REQUIRED


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_row_is_complete_and_sourced(spec) -> None:  # type: ignore[no-untyped-def]
    assert spec.source
    assert set(spec.dense_tflops) == set(spec.sparse_tflops) == set(PRECISIONS)
    assert spec.hbm_gb_per_s > 0
    assert spec.dense_tflops["fp32"]
    for p in ("tf32", "bf16", "fp16", "fp8", "int8"):
        dense, sparse = spec.dense_tflops[p], spec.sparse_tflops[p]
        # 2:4 sparsity doubles tensor-core rates: a dense figure equal to a datasheet's
        # sparse one is the classic spec error this separation exists to prevent.
        assert (dense is None and sparse is None) or sparse == pytest.approx(2 * dense)
    for p in ("fp64", "fp64_tc", "fp32"):
        assert spec.sparse_tflops[p] is None


def test_h200_dense_figures_are_the_hopper_whitepaper_s() -> None:
    h200 = match_spec("NVIDIA H200")
    assert h200 is not None
    assert h200.peak_flop_per_s("bf16") == pytest.approx(989.4e12)
    assert h200.peak_flop_per_s("bf16", sparse=True) == pytest.approx(1978.8e12)
    assert h200.peak_flop_per_s("fp8") == pytest.approx(1978.9e12)
    assert h200.hbm_bytes_per_s == 4.8e12


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H200", "H200 SXM 141GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"),
        ("NVIDIA H100 PCIe", "H100 PCIe 80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM4"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB PCIe"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA B200", "B200 (HGX, per GPU)"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA A10G", "A10G (AWS G5)"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ],
)
def test_device_names_match(name: str, expected: str) -> None:
    spec = match_spec(name)
    assert spec is not None
    assert spec.name == expected


@pytest.mark.parametrize("name", [None, "", "AMD Instinct MI300X", "Tesla V100-SXM2-16GB"])
def test_unknown_devices_match_nothing(name: str | None) -> None:
    assert match_spec(name) is None


def test_override_wins_and_a_wrong_override_names_the_choices() -> None:
    assert match_spec("NVIDIA H200", "L4") == match_spec("NVIDIA L4")
    assert match_spec(None, "H100 PCIe 80GB") is not None
    with pytest.raises(KeyError, match="H200 SXM 141GB"):
        match_spec("NVIDIA H200", "H300")
