"""The kernel-name table, on names seen on real GPUs (every H200 fixture's kernels: in
tests/integration/test_kernel_classes_real_traces.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.kernel_classes import KERNEL_CLASSES, classify, classify_name

CASES = [
    # name, class, precision hint, tensor cores  (names as recorded on an H200, CUDA 13)
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "gemm", "bf16", True),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_"
     "aligna4_alignc4_execute_kernel__5x_cublas", "gemm", "fp32", False),
    ("void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1>("
     "cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1::Params)", "gemm", "bf16", True),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>", "gemm",
     "tf32", True),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas", "gemm", "bf16", True),
    ("ampere_sgemm_128x64_nn", "gemm", "fp32", False),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
     "cga1x1x1_kernel0_0", "attention", "fp16", True),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, "
     "128, 4, false, false, cutlass::bfloat16_t>>", "attention", "bf16", True),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", "attention", "fp16", True),
    ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3_"
     "warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn", "conv", "fp32", False),
    ("sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
     "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer", "conv", "tf32", True),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
     "elementwise", "fp32", False),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 4>(float*, float const*, "
     "long)", "softmax", "fp32", False),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>"
     "(int, float, float const*, float const*, float const*, float*, float*, float*)", "norm",
     "fp32", False),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
     "at::TensorIteratorBase&)::{lambda()#1}>", "copy", "bf16", False),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
     "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>>>>",
     "reduction", "fp32", False),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>",
     "optimizer", "fp32", False),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm", None,
     False),
    ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "elementwise", "bf16", False),
    ("Memcpy HtoD (Pageable -> Device)", "memcpy", None, False),
    ("Memset (Device)", "memset", None, False),
    ("some_custom_kernel", "other", None, False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "cls", "precision", "tc"), CASES, ids=lambda v: str(v)[:40])
def test_names_seen_on_real_gpus(name: str, cls: str, precision: str | None, tc: bool) -> None:
    assert classify_name(name) == (cls, precision, tc)


def test_classify_keeps_the_index_and_handles_missing_names() -> None:
    names = pd.Series(["nvjet_sm90_tst_x_NNT", None, "Memset (Device)"], index=[7, 8, 9])
    out = classify(names)
    assert list(out.index) == [7, 8, 9]
    assert out["kernel_class"].tolist() == ["gemm", "other", "memset"]
    assert out["tensor_core"].tolist() == [True, False, False]
    assert set(out["kernel_class"]) <= set(KERNEL_CLASSES)
