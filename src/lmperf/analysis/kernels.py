"""What a GPU kernel's name says: which kind of work it does, and a short name a reader can
scan. The one classifier and the one shortener that the profile (time by category, matmul share,
kernel tables) and pmc (which kernel is which layer's GEMM, the tidy kernel table) both read.

Names differ between cuBLAS (`sm90_xmma_gemm_*`, `ampere_sgemm_*`), nvjet (`nvjet_tst_*`), cutlass
(`cutlass::Kernel...`), cuDNN (`cudnn_generated_fort_native_sdpa_*`), FlashAttention
(`flash_fwd_kernel`, `flash_bwd_*`), PyTorch's memory-efficient attention (`fmha_cutlassF_*`),
Triton (`triton_poi_*`, `triton_red_*`) and PyTorch's own elementwise, reduction and norm kernels;
on a CPU the profiled "kernels" are ATen ops (`aten::mm`). The first matching rule wins, so
specific rules come before generic ones: attention before matmul (flash kernels carry cutlass
templates), the loss before softmax (log_softmax), split-K's reduction before matmul.
"""

from __future__ import annotations

import functools
import re

MATMUL, MATMUL_AUX, ATTENTION, SOFTMAX, NORM, LOSS, EMBEDDING, OPTIMIZER, REDUCTION, ELEMENTWISE, COPY, OTHER = (
    "matmul",
    "matmul_aux",
    "attention",
    "softmax",
    "norm",
    "loss",
    "embedding",
    "optimizer",
    "reduction",
    "elementwise",
    "copy/memset",
    "other",
)
CATEGORIES = (
    MATMUL,
    MATMUL_AUX,
    ATTENTION,
    SOFTMAX,
    NORM,
    LOSS,
    EMBEDDING,
    OPTIMIZER,
    REDUCTION,
    ELEMENTWISE,
    COPY,
    OTHER,
)

_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (category, re.compile(pattern, re.IGNORECASE))
    for category, pattern in (
        # torch.compile's kernels are named after the operators they fuse: a pointwise kernel
        # that lays out Q, K and V for a library's attention names that attention, and a GEMM
        # template (max-autotune) names its epilogue's operators.
        (ELEMENTWISE, r"^triton_poi_\w*(attention|sdpa|attn)"),
        (MATMUL, r"^triton_tem_(?!\w*flex_attention)"),
        (COPY, r"^(memcpy|memset)|catarraybatchedcopy|copy_kernel|^aten::(copy_|_to_copy|clone|cat|stack|contiguous)$"),
        (OPTIMIZER, r"adam|multi_tensor_apply|fused_sgd|^aten::_foreach|^aten::_fused"),
        # cuDNN's SDPA backward also launches two helpers: rowsum(dO * O) and dQ's cast to 16 bits.
        (
            ATTENTION,
            r"flash|fmha|attention_kernel|efficient_attention|sdpa|cudnn_generated_fort_native|attn"
            r"|attention|^aten::_?scaled_dot_product|cudnn::fusion::(compute_dot_do_o|convert_dq)"
            r"|^_(fwd|bwd|bwd_dkdv|bwd_dq|bwd_preprocess)_kernel$",
        ),  # lmperf's Triton and Gluon FlashAttention
        (LOSS, r"nll_loss|cross_entropy|log_softmax|logsoftmax"),
        (SOFTMAX, r"softmax"),
        (NORM, r"layer_?norm|rms_?norm|group_?norm|batch_?norm"),
        (MATMUL_AUX, r"splitkreduce|split_k_reduce|reduce_kernel.*gemm"),
        (
            MATMUL,
            r"gemm|nvjet|cutlass|xmma|cublas|gemv|dot_kernel|wgmma|sm\d+_.*_\d+x\d+"
            r"|^aten::(mm|bmm|addmm|matmul|linear|baddbmm)$",
        ),
        (EMBEDDING, r"embedding|index_select|indexselect|indexing_backward"),
        (REDUCTION, r"reduce|reduction|scan|triton_(red|per)_|^aten::(sum|mean|max|min|amax|logsumexp)$"),
        (
            ELEMENTWISE,
            r"elementwise|vectorized|unrolled|copy|fill|cat_|catarray|where|dropout|fused_|triton_"
            r"|gelu|silu|relu|tanh|index|gather|scatter|bernoulli|arange|^aten::",
        ),
    )
)


@functools.lru_cache(maxsize=8192)  # a capture repeats a few dozen names hundreds of times
def kernel_category(name: str) -> str:
    """One of CATEGORIES for a kernel's (demangled or mangled) name, or an ATen op's name."""
    return next((category for category, pattern in _RULES if pattern.search(name)), OTHER)


# CUDA kernel names are full C++ signatures, often several hundred characters of nested
# templates. A short name keeps what a reader needs: the kernel's own name, the functor or op it
# runs (mul, mean, silu, FusedAdam) and the element type; an ATen op (a CPU profile's "kernel")
# loses its namespace.
_DTYPES = [
    ("c10::BFloat16", "bf16"),
    ("bfloat16", "bf16"),
    ("c10::Half", "fp16"),
    ("half", "fp16"),
    ("double", "fp64"),
    ("float", "fp32"),
    ("long", "int64"),
]
# What a templated kernel runs, most telling first: a named *_kernel_cuda lambda (silu_kernel),
# a functor (MulFunctor, CUDAFunctor_add), a reduction (MeanOps, sum_functor).
_DETAIL_PATTERNS = [
    re.compile(r"(?:^|::)(\w+?)_kernel(?:_cuda|_impl)?(?:<[^<>]*>)?\(at::TensorIterator"),
    re.compile(r"(?:^|[:<\s])(?:CUDAFunctor(?:OnSelf|OnOther)?_(\w+))"),
    re.compile(r"(\w+?)(?:Math)?Functor\b"),
    re.compile(r"(\w+?)Ops<"),
    re.compile(r"(\w+?)_functor\b"),
    re.compile(r"(cutlass_\w+)"),
    re.compile(r"(LogSoftMax)ForwardEpilogue"),
    re.compile(r"std::(plus|minus|multiplies|divides)<"),
]
# Wrappers around the functor that says what is computed (AUnaryFunctor<..., MulFunctor>).
_GENERIC_DETAILS = {"Binary", "Unary", "AUnary", "BUnary", "BinaryOpScalar", "gpu_kernel_impl", "", None}
MAX_SHORT = 72


def _split_signature(name: str) -> tuple[str, str]:
    """('kernel base name', 'its template arguments') of a C++ kernel signature."""
    # torch.profiler writes anonymous namespaces as "(anonymous namespace)", ncu as "<unnamed>".
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "").replace("<unnamed>::", "").strip()
    template, arguments = name.find("<"), name.find("(")
    if template >= 0 and (arguments < 0 or template < arguments):
        # Up to the '>' that closes the template: the argument list after it names only C types
        # (`float const*` would pass for the kernel's dtype).
        depth, end = 0, len(name)
        for i in range(template, len(name)):
            depth += {"<": 1, ">": -1}.get(name[i], 0)
            if depth == 0:
                end = i
                break
        return name[:template].split("::")[-1], name[template + 1 : end]
    return (name[:arguments] if arguments >= 0 else name).split("::")[-1], ""


def _detail(template: str) -> str:
    for pattern in _DETAIL_PATTERNS:
        for match in pattern.finditer(template):
            found = next((group for group in match.groups() if group), None)
            if found not in _GENERIC_DETAILS:
                return found.removeprefix("_").lower() if not found.startswith("cutlass") else found
    return ""


def _dtype(template: str) -> str:
    positions = [(template.find(token), short) for token, short in _DTYPES if token in template]
    return min(positions)[1] if positions else ""


def short_name(name: str) -> str:
    """A readable name, at most MAX_SHORT characters: `vectorized_elementwise_kernel[add, fp32]`,
    `mm`, `nvjet_tst_...`; torch.profiler's and ncu's spellings of a name give the same one."""
    if name.startswith("aten::"):
        return name.removeprefix("aten::")
    if name.startswith(("Memcpy", "Memset")):
        return name
    base, template = _split_signature(name)
    tags = [tag for tag in (_detail(template), _dtype(template)) if tag]
    short = f"{base}[{', '.join(tags)}]" if tags else base
    return short if len(short) <= MAX_SHORT else short[: MAX_SHORT - 1] + "…"
