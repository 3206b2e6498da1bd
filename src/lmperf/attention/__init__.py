"""Attention implementations behind one function.

`attention(q, k, v, is_causal, impl)` takes inputs of shape (..., seq, head_dim) and dispatches:
- naive: explicit scores, masked softmax, weighted sum (lmperf.attention.naive);
- sdpa: torch.nn.functional.scaled_dot_product_attention (PyTorch picks its backend);
- torch: FlashAttention-2 tiled in PyTorch (lmperf.attention.flash_torch);
- triton: FlashAttention-2 in Triton (lmperf.attention.flash_triton), with Hopper's Gluon kernels
  (lmperf.attention.sm90) where lmperf.attention.dispatch picks them.
The FlashAttention modules are imported on first use, so Triton is needed only by `triton`;
code compiled with torch.compile calls `load(impl)` first (the model does when built).

Grouped-query attention: k and v may have fewer heads than q (dimension -3), each shared by
H_q / H_kv consecutive query heads (query head h reads K/V head h // group, as Hugging Face's
`repeat_kv` and SDPA's `enable_gqa`). lmperf's FlashAttention kernels take that directly, and
so does SDPA in fp16/bf16; naive attention, and SDPA in fp32 (no fused SDPA kernel takes grouped
K/V there), get K and V repeated to H_q heads first (a copy: the FLOPs are the same, the K/V
memory is not).
"""

from __future__ import annotations

import importlib
from typing import Callable

import torch
import torch.nn.functional as F

from lmperf import regions
from lmperf.attention.naive import naive_attention, naive_attention_with_lse
from lmperf.attention_names import check_implementation
from lmperf.errors import UsageError

AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]


def _grouped(q: torch.Tensor, k: torch.Tensor) -> bool:
    """True when k has fewer heads (dimension -3) than q: grouped-query attention."""
    return q.dim() >= 3 and k.shape[-3] != q.shape[-3]


GQA_NATIVE_SDPA_DTYPES = (torch.float16, torch.bfloat16)  # what SDPA's flash and cuDNN kernels take


def _compute_dtype(q: torch.Tensor) -> torch.dtype:
    """The dtype SDPA computes in: autocast's when it is on for q's device, else q's own."""
    device = q.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else q.dtype


def sdpa_repeats_kv(grouped: bool, compute_dtype: torch.dtype) -> bool:
    """Whether "sdpa" repeats grouped K/V to every query head before calling SDPA.

    Only SDPA's flash and cuDNN kernels take `enable_gqa`, and both need 16-bit inputs. In fp32
    the memory-efficient kernel refuses it, and the math fallback it leaves saves every score
    (gigabytes at a few thousand tokens). Repeating K and V first, as Hugging Face does,
    keeps a fused kernel at the cost of the copies (which the memory model counts).
    """
    return grouped and compute_dtype not in GQA_NATIVE_SDPA_DTYPES


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> torch.Tensor:
    with regions.region(regions.ATTN_FUSED):
        grouped = _grouped(q, k)
        if sdpa_repeats_kv(grouped, _compute_dtype(q)):
            k, v, grouped = repeat_kv(q, k), repeat_kv(q, v), False
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=grouped)


# Implementations whose autograd.Function lives in a module imported on first use.
FLASH_FUNCTIONS = {
    "torch": ("lmperf.attention.flash_torch", "FlashAttention2Torch"),
    "triton": ("lmperf.attention.flash_triton", "FlashAttention2Triton"),
}
_LOADED: dict[str, type] = {}  # impl -> its autograd.Function, once imported


def _loaded(impl: str) -> type:
    if impl not in _LOADED:
        module, name = FLASH_FUNCTIONS[impl]
        try:
            _LOADED[impl] = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as error:  # Triton is not a core dependency (CPU-only installs)
            raise UsageError(
                f"attention {impl!r} needs the {error.name} package, which is not installed (pip install {error.name})"
            ) from None
    return _LOADED[impl]


def _flash_function(impl: str) -> AttentionFn:
    def run(q, k, v, is_causal):
        function = _loaded(impl)
        with regions.region(regions.ATTN_FUSED):
            return function.apply(q, k, v, is_causal)

    return run


def load(impl: str) -> None:
    """Import `impl`'s module now, outside any torch.compile'd code that will call `attention`.

    Dynamo does not trace an import: the first call inside a compiled region would split the
    graph there, and the model's compiled blocks would run attention eagerly between two graphs
    (with extra gradient adds and copies). After this, `attention` finds it in a dict.
    """
    if check_implementation(impl) in FLASH_FUNCTIONS:
        _loaded(impl)


IMPLEMENTATIONS: dict[str, AttentionFn] = {
    "naive": naive_attention,
    "sdpa": _sdpa,
    **{impl: _flash_function(impl) for impl in FLASH_FUNCTIONS},
}
NATIVE_GQA = frozenset({"sdpa", "torch", "triton"})  # implementations that take fewer K/V heads than query heads


def repeat_kv(q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    """K or V (..., H_kv, T, d) repeated to q's H_q heads, each K/V head serving a group in turn."""
    heads_q, heads_kv = q.shape[-3], kv.shape[-3]
    if heads_q % heads_kv:
        raise UsageError(f"{heads_q} query heads cannot share {heads_kv} K/V heads evenly")
    return kv.repeat_interleave(heads_q // heads_kv, dim=-3)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    impl: str = "sdpa",
) -> torch.Tensor:
    """Scaled dot-product attention over (..., seq, head_dim) inputs with the chosen `impl`.

    Causal masks are top-left aligned: query i sees keys 0..i whatever the lengths, as
    PyTorch's `is_causal` does. FlashAttention (since 2.1) aligns a rectangular mask bottom-right
    instead (query i sees keys up to i + seq_k - seq_q, the convention for a query block at the
    end of a cache); the two agree only where seq_q == seq_k.
    """
    if _grouped(q, k) and impl not in NATIVE_GQA:
        k, v = repeat_kv(q, k), repeat_kv(q, v)
    return IMPLEMENTATIONS[check_implementation(impl)](q, k, v, is_causal)


__all__ = [
    "IMPLEMENTATIONS",
    "NATIVE_GQA",
    "attention",
    "check_implementation",
    "load",
    "naive_attention",
    "naive_attention_with_lse",
    "repeat_kv",
    "sdpa_repeats_kv",
]
