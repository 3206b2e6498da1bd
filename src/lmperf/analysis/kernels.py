"""Which kind of work a GPU kernel does, from its name: the one classifier that the profile
(time by category, matmul share) and pmc (which kernel is which layer's GEMM) both read.

Names differ between cuBLAS (`sm90_xmma_gemm_*`, `ampere_sgemm_*`), nvjet (`nvjet_tst_*`), cutlass
(`cutlass::Kernel...`), cuDNN (`cudnn_generated_fort_native_sdpa_*`), FlashAttention
(`flash_fwd_kernel`, `flash_bwd_*`), PyTorch's memory-efficient attention (`fmha_cutlassF_*`),
Triton (`triton_poi_*`, `triton_red_*`) and PyTorch's own elementwise, reduction and norm kernels;
on a CPU the profiled "kernels" are ATen ops (`aten::mm`). The first matching rule wins, so
specific rules come before generic ones: attention before matmul (flash kernels carry cutlass
templates), the loss before softmax (log_softmax), split-K's reduction before matmul.
"""

from __future__ import annotations

import re

MATMUL, MATMUL_AUX, ATTENTION, SOFTMAX, NORM, LOSS, EMBEDDING, OPTIMIZER, REDUCTION, ELEMENTWISE, COPY, OTHER = (
    "matmul", "matmul_aux", "attention", "softmax", "norm", "loss", "embedding", "optimizer",
    "reduction", "elementwise", "copy/memset", "other",
)
CATEGORIES = (MATMUL, MATMUL_AUX, ATTENTION, SOFTMAX, NORM, LOSS, EMBEDDING, OPTIMIZER, REDUCTION,
              ELEMENTWISE, COPY, OTHER)

_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (category, re.compile(pattern, re.IGNORECASE))
    for category, pattern in (
        (COPY, r"^(memcpy|memset)|catarraybatchedcopy|copy_kernel|^aten::(copy_|_to_copy|clone|cat|stack|contiguous)$"),
        (OPTIMIZER, r"adam|multi_tensor_apply|fused_sgd|^aten::_foreach|^aten::_fused"),
        # cuDNN's SDPA backward also launches two helpers: rowsum(dO * O) and dQ's cast to 16 bits.
        (ATTENTION, r"flash|fmha|attention_kernel|efficient_attention|sdpa|cudnn_generated_fort_native|attn"
                    r"|attention|^aten::_?scaled_dot_product|cudnn::fusion::(compute_dot_do_o|convert_dq)"
                    r"|^_(fwd|bwd_dkdv|bwd_dq|bwd_preprocess)_kernel$"),  # lmperf's Triton FlashAttention
        (LOSS, r"nll_loss|cross_entropy|log_softmax|logsoftmax"),
        (SOFTMAX, r"softmax"),
        (NORM, r"layer_?norm|rms_?norm|group_?norm|batch_?norm"),
        (MATMUL_AUX, r"splitkreduce|split_k_reduce|reduce_kernel.*gemm"),
        (MATMUL, r"gemm|nvjet|cutlass|xmma|cublas|gemv|dot_kernel|wgmma|sm\d+_.*_\d+x\d+"
                 r"|^aten::(mm|bmm|addmm|matmul|linear|baddbmm)$"),
        (EMBEDDING, r"embedding|index_select|indexselect|indexing_backward"),
        (REDUCTION, r"reduce|reduction|scan|triton_(red|per)_|^aten::(sum|mean|max|min|amax|logsumexp)$"),
        (ELEMENTWISE, r"elementwise|vectorized|unrolled|copy|fill|cat_|catarray|where|dropout|fused_|triton_"
                      r"|gelu|silu|relu|tanh|index|gather|scatter|bernoulli|arange|^aten::"),
    )
)


def kernel_category(name: str) -> str:
    """One of CATEGORIES for a kernel's (demangled or mangled) name, or an ATen op's name."""
    return next((category for category, pattern in _RULES if pattern.search(name)), OTHER)
