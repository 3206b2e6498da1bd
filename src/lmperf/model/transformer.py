"""TransformerLM: token embedding, pre-norm blocks (RMSNorm, rotary causal attention with
grouped-query K/V, heads of any width, optional per-head q/k norms, SwiGLU or GELU MLP), final
norm, LM head (optionally tied to the embedding) and cross-entropy loss. Every part of a block
runs inside a named region.

Two options change how a step spends memory, never what it computes:
- `checkpoint`: "none" keeps every block's activations for the backward; "full" keeps only each
  block's input and recomputes the block in the backward; "selective" also keeps the fused
  attention kernel's outputs (its output and log-sum-exp: SDPA's operators and lmperf's own
  lmperf::flash_attention, `attention_ops`), so the backward recomputes the matmuls and
  elementwise parts but not attention, the costliest part at long context; "selective:K"
  checkpoints all but the last K blocks selectively and lets those K keep everything, trading
  memory for K blocks' recomputed matmuls (the last ones, whose activations the backward frees
  before any recomputation needs room); "selective-mm" keeps, besides attention's outputs, the
  outputs of the matmuls that widen the residual stream (QKV, gate, up), so that only the output
  projection and the elementwise work run again (the down projection's output no backward
  needs); "selective-mm-out" keeps the output projection's output as well, so that only the
  elementwise work runs again, for one more (B, T, d_model) tensor per block. Each selective
  policy takes ":K" (the last K blocks keep everything), and "POLICY*N+POLICY*M" gives blocks
  their policies counted out from the first (lmperf.model.checkpointing). All are
  torch.utils.checkpoint (non-reentrant; selective through torch's selective-checkpoint policy),
  inside the block so a compiled block compiles them too. lmperf's PyTorch FlashAttention
  ("torch") is an autograd.Function, not an operator: under "selective" its forward runs again in
  the backward, as under "full" (tests/test_step_options.py counts the calls).
- `loss`: "eager" forms the (B, T, V) logits and takes F.cross_entropy of them; "fused" computes
  the same loss chunk by chunk without the logits (lmperf.ops.fused_linear_cross_entropy).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

from lmperf import regions
from lmperf.attention import attention, load
from lmperf.model.checkpointing import BY_WIDTH, model_block_policies
from lmperf.model.config import ModelConfig
from lmperf.ops import fused_linear_cross_entropy

LOSSES = ("eager", "fused")


@functools.cache
def _sdpa_ops() -> frozenset:
    """SDPA's fused-kernel operators of this torch build (flash, cuDNN, memory-efficient, CPU flash)."""
    names = (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
    )
    return frozenset(getattr(torch.ops.aten, name).default for name in names if hasattr(torch.ops.aten, name))


def attention_ops() -> frozenset:
    """The fused attention operators whose outputs selective checkpointing keeps: SDPA's, and
    lmperf::flash_attention once lmperf's Triton attention has registered it."""
    if hasattr(torch.ops.lmperf, "flash_attention"):
        return _sdpa_ops() | {torch.ops.lmperf.flash_attention.default}
    return _sdpa_ops()


def _keep_attention(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy

    return CheckpointPolicy.MUST_SAVE if op in attention_ops() else CheckpointPolicy.PREFER_RECOMPUTE


def _keep_attention_and_matmuls(d_model: int, d_ff: int | None):
    """The "selective-mm" policy: attention's outputs and every matmul output whose width is not
    the model's (QKV, gate, up) are kept; the output projection and the elementwise work are
    recomputed (recomputation stops before the down projection, whose output no backward needs).
    `d_ff` ("selective-mm-out"): every matmul output but the down projection's, told by its input
    width d_ff, so the output projection's too (a model with two of these widths alike could not
    tell the matmuls apart: model_block_policies refuses it)."""
    from torch.utils.checkpoint import CheckpointPolicy

    def policy(ctx, op, *args, **kwargs):
        matmul = op is torch.ops.aten.mm.default
        widening = matmul and args[1].shape[-1] != d_model
        projection = d_ff is not None and matmul and args[0].shape[-1] != d_ff
        keep = widening or projection or op in attention_ops()
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def checkpoint_options(policy: str, d_model: int | None = None, d_ff: int | None = None) -> dict:
    """torch.utils.checkpoint's keyword arguments for one block's policy (`d_model`, `d_ff`: the
    widths by which "selective-mm" and "selective-mm-out" tell the matmuls apart)."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    if policy == "selective":
        return {"context_fn": functools.partial(create_selective_checkpoint_contexts, _keep_attention)}
    if policy in BY_WIDTH:
        keep = _keep_attention_and_matmuls(d_model, d_ff if policy == "selective-mm-out" else None)
        return {"context_fn": functools.partial(create_selective_checkpoint_contexts, keep)}
    return {}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32: under autocast x may be bf16, whose mean of squares loses precision.
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * self.weight).to(x.dtype)


class RotaryEmbedding(nn.Module):
    """Rotates pairs of channels (even, odd) of q and k by position-dependent angles."""

    def __init__(self, head_dim: int, max_seq_len: int, theta: float):
        super().__init__()
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(max_seq_len, dtype=torch.float32), inv_freq)
        # Buffers, not parameters: they move with .to(device) but are not trained or counted.
        self.register_buffer("cos", angles.cos(), persistent=False)  # (T_max, hd/2)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, H, T, hd)
        seq_len = x.shape[-2]
        cos, sin = self.cos[:seq_len].to(x.dtype), self.sin[:seq_len].to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rotated.flatten(-2)


@torch.compiler.disable
def _eager_qk_norms(q_norm: RMSNorm, k_norm: RMSNorm, q: torch.Tensor, k: torch.Tensor):
    """The per-head q and k norms, run eagerly where the block around them is compiled: inductor's
    CUDA code for them (torch 2.11, a bf16 model or bf16 autocast) computes NaN losses, or
    gradients off by more than their own size, whatever the formulation (F.rms_norm too), where
    eager and inductor's CPU code agree. The cost is a graph break before and after them in each
    compiled block."""
    return q_norm(q), k_norm(k)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.impl = config.attention
        load(self.impl)  # now, not inside the compiled forward (an import there splits the graph)
        self.qkv_proj = nn.Linear(config.d_model, config.attention_width + 2 * config.kv_width, bias=False)
        self.out_proj = nn.Linear(config.attention_width, config.d_model, bias=False)
        self.qk_norm = config.qk_norm
        if config.qk_norm:
            self.q_norm = RMSNorm(config.head_dim, config.norm_eps)
            self.k_norm = RMSNorm(config.head_dim, config.norm_eps)
        self.rope = RotaryEmbedding(config.head_dim, config.max_seq_len, config.rope_theta)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        with regions.region(regions.QKV_PROJ):
            qkv = self.qkv_proj(x)  # (B, T, H·hd + 2·Hkv·hd)
            heads = qkv.view(B, T, self.n_heads + 2 * self.n_kv_heads, self.head_dim).transpose(1, 2)
            q, k, v = heads.split((self.n_heads, self.n_kv_heads, self.n_kv_heads), dim=1)
        if self.qk_norm:
            with regions.region(regions.QK_NORM):
                q, k = _eager_qk_norms(self.q_norm, self.k_norm, q, k)  # each head over its head_dim
        with regions.region(regions.ROPE):
            q, k = self.rope(q), self.rope(k)  # (B, H, T, hd), (B, Hkv, T, hd)
        y = attention(q, k, v, is_causal=True, impl=self.impl)  # (B, H, T, hd)
        with regions.region(regions.OUT_PROJ):
            return self.out_proj(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))


class SwiGLU(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.w1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.w3 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.w2 = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GeluMLP(nn.Module):
    """GPT-2's MLP: up-projection, GELU (tanh approximation, as GPT-2's gelu_new), down."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.w1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.w2 = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x), approximate="tanh"))


MLPS = {"swiglu": SwiGLU, "gelu": GeluMLP}


class Block(nn.Module):
    def __init__(self, config: ModelConfig, checkpoint: str = "none"):
        super().__init__()
        self.checkpoint = checkpoint
        self.d_ff = config.d_ff
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = CausalSelfAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.ffn = MLPS[config.mlp](config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C)
        if self.checkpoint == "none":
            return self._forward(x)
        return torch.utils.checkpoint.checkpoint(
            self._forward, x, use_reentrant=False, **checkpoint_options(self.checkpoint, x.shape[-1], self.d_ff)
        )

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        with regions.region(regions.ATTN_NORM):
            h = self.attn_norm(x)
        attended = self.attn(h)
        with regions.region(regions.OUT_PROJ):  # the FLOP model counts this residual add there
            x = x + attended
        with regions.region(regions.FFN_NORM):
            h = self.ffn_norm(x)
        with regions.region(regions.FFN):
            return x + self.ffn(h)


class TransformerLM(nn.Module):
    def __init__(self, config: ModelConfig, checkpoint: str = "none", loss: str = "eager"):
        super().__init__()
        self.config = config.validate()
        self.loss = loss
        self.embedding = nn.Embedding(config.vocab_size, config.d_model)
        policies = model_block_policies(checkpoint, config)
        self.blocks = nn.ModuleList(Block(config, policy) for policy in policies)
        self.final_norm = RMSNorm(config.d_model, config.norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        if config.tie_embeddings:  # one (V, d) matrix: gathered from at the input, multiplied at the output
            self.lm_head.weight = self.embedding.weight

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            fan_in = module.weight.shape[-1]
            nn.init.trunc_normal_(
                module.weight, std=1 / math.sqrt(fan_in), a=-3 / math.sqrt(fan_in), b=3 / math.sqrt(fan_in)
            )

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, V) for token ids (B, T); with `targets` (B, T), the mean loss instead.

        The loss is computed here, not by the caller, so that a sharded model (FSDP2) still has
        its LM head gathered when the loss needs it.
        """
        with regions.region(regions.EMBEDDING):
            x = self.embedding(tokens)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        with regions.region(regions.FINAL_NORM):
            x = self.final_norm(x)
        if targets is not None and self.loss == "fused":
            with regions.region(regions.LOSS):  # the LM head's matmuls run inside the loss
                return fused_linear_cross_entropy(x.flatten(0, 1), self.lm_head.weight, targets.flatten())
        with regions.region(regions.LM_HEAD):
            logits = self.lm_head(x)  # (B, T, V)
        return logits if targets is None else lm_loss(logits, targets)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy, computed in fp32 whatever the logits' dtype."""
    with regions.region(regions.LOSS):
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
