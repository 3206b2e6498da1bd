"""Kernel classes from kernel names: GEMM libraries, attention kernels, vector work, optimizer.

Names differ between cuBLAS (`sm90_xmma_gemm_*`, `ampere_sgemm_*`), nvjet (`nvjet_tst_*`), cutlass
(`cutlass::Kernel...`), cuDNN (`cudnn_generated_fort_native_sdpa_*`), FlashAttention
(`flash_fwd_kernel`, `flash_bwd_*`), PyTorch's memory-efficient attention (`fmha_cutlassF_*`) and
PyTorch's own elementwise, reduction and norm kernels. The first matching rule wins, so specific
rules (attention, loss) come before generic ones (GEMM, softmax, elementwise).
"""

from __future__ import annotations

import re

ATTENTION, GEMM, GEMM_AUX, SOFTMAX, NORM, LOSS, EMBEDDING, OPTIMIZER, REDUCTION, ELEMENTWISE, OTHER = (
    "attention", "gemm", "gemm_aux", "softmax", "norm", "loss", "embedding", "optimizer",
    "reduction", "elementwise", "other",
)

_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (cls, re.compile(pattern, re.IGNORECASE))
    for cls, pattern in (
        (OPTIMIZER, r"adam|multi_tensor_apply|fused_sgd"),
        (ATTENTION, r"flash_fwd|flash_bwd|flash::|fmha|attention_kernel|efficient_attention"
                    r"|sdpa|cudnn_generated_fort_native|attn"),
        (LOSS, r"nll_loss|cross_entropy|log_softmax|logsoftmax"),
        (SOFTMAX, r"softmax"),
        (NORM, r"layer_norm|layernorm|rms_?norm|group_norm|batch_norm"),
        (GEMM_AUX, r"splitkreduce|split_k_reduce|reduce_kernel.*gemm"),
        (GEMM, r"gemm|nvjet|cutlass|xmma|cublas|gemv|dot_kernel|wgmma|sm\d+_.*_\d+x\d+"),
        (EMBEDDING, r"embedding|index_select|indexselect|indexing_backward"),
        (REDUCTION, r"reduce_kernel|reduction"),
        (ELEMENTWISE, r"elementwise|vectorized|unrolled|copy|fill|cat_|catarray|where|"
                      r"dropout|fused_|triton_|gelu|silu|relu|tanh|index|bernoulli|arange"),
    )
)
_BACKWARD = re.compile(r"backward|bwd|_grad|grad_|dgrad|wgrad", re.IGNORECASE)


def kernel_class(name: str) -> str:
    """The class of a kernel from its (demangled or mangled) name."""
    for cls, pattern in _RULES:
        if pattern.search(name):
            return cls
    return OTHER


def is_backward(name: str) -> bool:
    """True for kernels only a backward pass launches (gradient kernels by name)."""
    return bool(_BACKWARD.search(name))


def short_name(name: str, width: int = 60) -> str:
    """A kernel name cut to its identifier: no 'void ', no template or argument lists."""
    base = name.removeprefix("void ").split("(")[0]
    depth, out = 0, []
    for char in base:  # drop template arguments, which can be hundreds of characters
        depth += char == "<"
        if depth == 0:
            out.append(char)
        depth -= char == ">" and depth > 0
    text = "".join(out).strip() or base
    return text if len(text) <= width else text[: width - 1] + "…"
