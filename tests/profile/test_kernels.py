"""Kernel-name shortener and categories on real CUDA kernel names (collected on an H100 by
benchmarks/scripts/profile_h100.sh and the pmc captures: cuBLAS/cuBLASLt xmma, nvjet, cutlass, split-K,
elementwise, reduction, softmax, fused AdamW, cuDNN flash SDPA forward and backward with its
helper kernels, mem-efficient fmha) and on the ATen op names a CPU profile shows."""

from pathlib import Path

import pytest

from lmperf import regions
from lmperf.analysis.kernels import CATEGORIES, MAX_SHORT, kernel_category, short_name
from lmperf.profile.kernels import category

NAMES = (Path(__file__).parent / "fixtures" / "cuda_kernel_names.txt").read_text().splitlines()


def test_fixture_covers_the_kernel_families():
    for family in (
        "nvjet",
        "xmma_gemm",
        "cutlass",
        "elementwise_kernel",
        "reduce_kernel",
        "softmax",
        "FusedAdam",
        "sdpa_sm90_flash",
        "fmha_cutlass",
        "compute_dot_do_o",
        "convert_dq_to_16bits",
    ):
        assert any(family in name for name in NAMES), family


# Each real name with the category a reader gives it, written next to it (reviewed family by
# family: cuBLAS/nvjet/cutlass GEMMs are matmul, split-K's reduction matmul_aux, log_softmax and
# nll_loss kernels (forward and backward) loss, direct_copy/casts copy/memset, ...).
EXPECTED = [
    line.split("\t", 1)
    for line in (Path(__file__).parent / "fixtures" / "cuda_kernel_categories.tsv").read_text().splitlines()
]


def test_the_category_table_covers_every_real_name():
    assert sorted(name for _, name in EXPECTED) == sorted(NAMES)
    assert {cat for cat, _ in EXPECTED} <= set(CATEGORIES)


@pytest.mark.parametrize("expected, name", EXPECTED)
def test_every_real_name_gets_its_category_and_a_short_readable_name(expected, name):
    assert kernel_category(name) == expected
    short = short_name(name)
    assert 0 < len(short) <= min(len(name), MAX_SHORT)
    assert (
        not short.startswith("void ")
        and "anonymous namespace" not in short
        and "(" not in short.removeprefix("Memcpy DtoD (").removeprefix("Memset (")
    )


@pytest.mark.parametrize(
    "fragment, short, cat",
    [
        (
            "MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<c10::BFloat16",
            "elementwise_kernel[mul, bf16]",
            "elementwise",
        ),
        (
            "AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor",
            "vectorized_elementwise_kernel[mul, fp32]",
            "elementwise",
        ),
        ("MeanOps<float", "reduce_kernel[mean, fp32]", "reduction"),
        (
            "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}",
            "vectorized_elementwise_kernel[silu, bf16]",
            "elementwise",
        ),
        ("softmax_warp_forward<float", "softmax_warp_forward[fp32]", "softmax"),
        ("at::<unnamed>::fused_dropout_kernel_vec<c10::Half", "fused_dropout_kernel_vec[fp16]", "elementwise"),
        (
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop",
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x1…",
            "attention",
        ),
        ("fmha_cutlassF_f32_aligned_64x64_rf_sm80", "fmha_cutlassF_f32_aligned_64x64_rf_sm80", "attention"),
        # The argument list's `float const*` is no dtype: the template holds none, so none is shown.
        ("compute_dot_do_o_specialized<true, 64>", "compute_dot_do_o_specialized", "attention"),
        ("LogSoftMaxForwardEpilogue", "cunn_SoftMaxForwardSmem[logsoftmax, fp32]", "loss"),
        ("FusedAdamMathFunctor", "multi_tensor_apply_kernel[fusedadam, fp32]", "optimizer"),
        ("bfloat16_copy_kernel_cuda", "vectorized_elementwise_kernel[bfloat16_copy, bf16]", "copy/memset"),
        (
            "cutlass_80_simt_sgemm_256x128_8x4_nn_align1",
            "Kernel2[cutlass_80_simt_sgemm_256x128_8x4_nn_align1]",
            "matmul",
        ),
        ("splitKreduce_kernel", "splitKreduce_kernel[fp32]", "matmul_aux"),
    ],
)
def test_known_kernels(fragment, short, cat):
    (name,) = [n for n in NAMES if fragment in n and short_name(n) == short][:1]
    assert category(name) == cat


def test_short_names_keep_plain_cublas_and_nvjet_names():
    nvjet = next(n for n in NAMES if n.startswith("nvjet"))
    assert short_name(nvjet) == nvjet and category(nvjet) == "matmul"
    xmma = next(n for n in NAMES if "xmma_gemm" in n)
    assert short_name(xmma).startswith("sm80_xmma_gemm_f32f32") and category(xmma) == "matmul"


def test_generic_kernels_are_placed_by_region_and_phase():
    mul = next(n for n in NAMES if short_name(n) == "elementwise_kernel[mul, fp32]")
    assert category(mul, regions.FFN, regions.FORWARD) == "elementwise"
    assert category(mul, regions.ATTN_NORM, regions.BACKWARD) == "norm"
    assert category(mul, regions.ATTN_SOFTMAX, regions.BACKWARD) == "softmax"
    assert category(mul, "", regions.OPTIMIZER) == "optimizer"
    gemm = next(n for n in NAMES if n.startswith("nvjet"))
    assert category(gemm, regions.ATTN_NORM, regions.FORWARD) == "matmul"


@pytest.mark.parametrize(
    "op, cat",
    [
        ("aten::mm", "matmul"),
        ("aten::bmm", "matmul"),
        ("aten::_softmax", "softmax"),
        ("aten::_fused_adamw_", "optimizer"),
        ("aten::copy_", "copy/memset"),
        ("aten::mul", "elementwise"),
        ("aten::sum", "reduction"),
        ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ],
)
def test_cpu_aten_ops(op, cat):
    assert category(op) == cat and short_name(op) == op.removeprefix("aten::")


@pytest.mark.parametrize(
    "name, cat",
    [  # torch.compile's kernels, as named in the pmc captures of compiled and max-autotune steps
        ("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy__unsafe_view_3", "elementwise"),
        ("triton_tem_fused_mm_t_view_2", "matmul"),
        ("triton_tem_fused__unsafe_view_mm_mul_silu_t_view_8", "matmul"),
        ("triton_tem_fused__to_copy__unsafe_view_add_mean_mm_mul_pow_rsqrt_t_view_14", "matmul"),
        ("triton_tem_fused_flex_attention_0", "attention"),
        ("triton_per_fused__softmax__to_copy_add_arange_bitwise_and_exp_6", "softmax"),
        ("triton_poi_fused__unsafe_view_mul_silu_8", "elementwise"),
        ("triton_per_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_11", "reduction"),
    ],
)
def test_compiled_kernels_get_the_category_of_their_work_not_of_every_name_they_list(name, cat):
    assert kernel_category(name) == cat
