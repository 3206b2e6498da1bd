"""The analytic memory model of one TransformerLM step on a GPU: what is alive at the peak.

Counting rules (bytes; N = batch·context tokens, S = batch·heads·context² attention entries,
w = heads·head_dim the attention's width (d where head_dim is d / heads), `a` = bytes of a matmul
output: 4 in fp32, 2 under bf16 autocast):
- Parameters, and their gradients, are fp32 (autocast never changes a parameter's dtype).
- Rotary tables: every attention layer keeps fp32 cos and sin buffers of max_seq_len × head_dim/2.
- AdamW keeps two fp32 moments per parameter (exp_avg, exp_avg_sq).
- Under bf16 autocast every matmul weight is cast to a bf16 copy, cached for the step and saved
  for the backward: 2 bytes per matmul parameter (the embedding is a gather, not a matmul).
- Saved activations per layer follow the model code (lmperf.model.transformer) and what autograd
  keeps for each op's backward:
  - residual stream: the block input and the mid-block sum, fp32 (RMSNorm normalises in fp32
    and fp32 + bf16 promotes to fp32): 2·N·d·4;
  - the two RMSNorms: normalised x, fp32, 2·N·d·4, and their rsqrt per token, 2·N·4; then what
    the matmuls after them save: in fp32 the norm output x·gain itself (2·N·d·4); under bf16 its
    bf16 casts instead (the QKV projection casts once, SwiGLU's w1 and w3 cast separately:
    3·N·d·2; a GELU MLP's w1 alone: 2·N·d·2), and the fp32 norm output is freed;
  - rotary under bf16: rope casts its fp32 cos and sin tables to q's and k's bf16, four new
    context × head_dim/2 tensors per layer that its multiplications save: 4·context·head_dim
    bytes (in fp32 the cast is the buffer itself);
  - the per-head q and k norms (`qk_norm`), which normalise in fp32 like the others: their input
    (in fp32 a view of the QKV output, which they keep alive, N·(w + 2·kv)·4, where the attention
    does not keep it already; under bf16 an fp32 copy of q and k, N·(w + kv)·4), normalised q
    and k (fp32, N·(w + kv)·4) and an rsqrt per head and token (N·(heads + kv_heads)·4); their
    output goes to rope, which saves none of it;
  - naive attention: rotated q and k: 2·N·w·a; v, which the weighted sum copies to a contiguous
    tensor because it is a permuted view of the QKV output: N·w·a; the head-merged output saved
    by out_proj: N·w·a. The QKV output itself is not kept: rope multiplies by constants, which
    saves only them. Grouped-query K/V are repeated to every query head before naive attention
    (the copies are what its matmuls save), so these terms are the same for any n_kv_heads;
  - attention probabilities: fp32 in fp32 (S·4); under bf16 softmax runs in fp32 (autocast's
    fp32 list) and the weighted sum saves a bf16 copy too (S·6); the causal mask, context² bytes;
  - fused attention (every implementation but naive) takes K and V with their own n_kv_heads and
    saves its inputs as given: rotated q (N·w·a) and k (N·kv·a, kv = n_kv_heads·head_dim), and
    v, a view of the QKV output, which keeps that whole output alive (N·(w + 2·kv)·a); then its
    output (N·w·a) and fp32 log-sum-exp (batch·heads·context·4), and the head-merged output
    saved by out_proj (N·w·a); except SDPA in fp32 with grouped K/V, which gets K and V repeated
    to every query head first (no fused SDPA kernel takes them grouped in fp32): q, the two
    copies and the merged heads, 4·N·w·a, then the kernel's output and log-sum-exp;
  - SwiGLU: w1 and w3 outputs, silu output and the gated product: 4·N·d_ff·a; a GELU MLP: the
    up-projection's output and GELU's: 2·N·d_ff·a.
- Head: the last residual and the final norm's normalised x (fp32, 2·N·d·4), its output (fp32,
  N·d·4; under bf16 the LM head's cast, N·d·2), its rsqrt (N·4), and the log-probabilities the
  loss saves (N·V·4).
- Logits working set (alive only around the loss): the logits (a), their fp32 copy (bf16 only)
  and the log-probabilities (4) per logit.

Step options (lmperf.model.step.StepConfig) change these counts:
- bf16 parameters (`param_dtype="bf16"`): parameters, gradients and both AdamW moments take 2
  bytes each, autocast makes no weight copies, and the residual stream is bf16.
- Checkpointing keeps per layer only the block input (full), or the block input and the fused
  attention kernel's output and log-sum-exp (selective), and the QKV, gate and up outputs
  (selective-mm), and the output projection's (selective-mm-out); a model's policy may differ
  block by block (lmperf.model.checkpointing); the backward recomputes one block at a time, so
  one layer's full activations come on top.
- The fused loss (`loss="fused"`) keeps no log-probabilities: its working set is one (chunk, V)
  block of logits in `a` bytes, which its Triton kernel overwrites with their gradient (the CPU
  path holds an fp32 copy too), and it holds dhidden (N·d·a) and an fp32 dweight (V·d·4) from
  the forward to the backward.

Peaks: a forward pass (autograd on, as in training) holds weights, casts, saved activations and
the logits working set. A training step holds weights and optimizer state throughout; the saved
activations are freed layer by layer while the gradients appear, so the step holds the larger
of the two, not their sum. What the model leaves out (allocator rounding and fragmentation, the
cuBLAS workspace, transient buffers inside one layer's forward or backward) is the measured
excess that `lmperf memory` reports beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from lmperf.analysis.flops import MODES
from lmperf.attention import sdpa_repeats_kv
from lmperf.errors import UsageError
from lmperf.model.checkpointing import BY_WIDTH, model_block_policies
from lmperf.model.config import ModelConfig, block_matmul_parameters, parameter_count
from lmperf.ops.fused_linear_cross_entropy import default_chunk_size

FP32, BF16 = 4, 2
MEMORY_PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class MemoryModel:
    """Bytes of each part of a step's memory, and the peaks of a forward pass and a train step."""

    parameters: int
    rotary_tables: int
    gradients: int
    optimizer_state: int
    autocast_weight_copies: int
    activations_per_layer: int
    activations: int
    head_activations: int
    logits_working_set: int
    residual_stream_tensor: int

    def peak(self, mode: str) -> int:
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
        forward_live = self.autocast_weight_copies + self.activations + self.head_activations + self.logits_working_set
        resident = self.parameters + self.rotary_tables
        if mode == "forward":
            return resident + forward_live
        optimizer = self.optimizer_state if mode == "train-step" else 0
        return resident + optimizer + max(forward_live, self.gradients)

    def to_dict(self) -> dict:
        return asdict(self)


def matmul_parameters(config: ModelConfig) -> int:
    """Parameters that are matmul weights (everything but the embedding and the norm gains;
    a tied LM head is the embedding matrix used as a matmul weight, so it counts here too)."""
    return config.n_layers * block_matmul_parameters(config) + config.d_model * config.vocab_size


def rotary_table_bytes(config: ModelConfig) -> int:
    """The fp32 cos and sin buffers every attention layer keeps (max_seq_len × head_dim/2 each)."""
    return config.n_layers * 2 * config.max_seq_len * (config.head_dim // 2) * FP32


def _attention_kernel_saves(config: ModelConfig, batch: int, seq_len: int, a: int) -> int:
    """A fused attention kernel's saved output (N·w·a, w the attention's width) and fp32
    log-sum-exp per row."""
    return batch * seq_len * config.attention_width * a + batch * config.n_heads * seq_len * FP32


def _sdpa_repeats_kv(config: ModelConfig, bf16: bool) -> bool:
    """Whether the model's "sdpa" attention copies grouped K/V to every query head (fp32 does)."""
    grouped = config.n_kv_heads < config.n_heads
    return config.attention == "sdpa" and sdpa_repeats_kv(grouped, torch.bfloat16 if bf16 else torch.float32)


def activations_per_layer(
    config: ModelConfig, batch: int, seq_len: int, precision: str, param_dtype: str = "fp32"
) -> int:
    """Bytes one block saves for its backward (see the module docstring for each term)."""
    tokens, d, f = batch * seq_len, config.d_model, config.d_ff
    bf16 = precision == "bf16"
    a = BF16 if bf16 else FP32
    residual = BF16 if param_dtype == "bf16" else FP32
    fp32_vectors = 2 * tokens * d * (residual + FP32) + 2 * tokens * FP32  # residuals, norms, rsqrt
    norm_casts = 3 if config.mlp == "swiglu" else 2  # QKV's, then w1's and w3's (SwiGLU) or w1's
    norm_outputs = norm_casts * tokens * d * BF16 if bf16 else 2 * tokens * d * FP32
    ffn = (4 if config.mlp == "swiglu" else 2) * tokens * f * a
    rotary_casts = 4 * seq_len * (config.head_dim // 2) * BF16 if bf16 else 0  # (cos, sin) for q and for k
    return fp32_vectors + norm_outputs + _attention_saves(config, batch, seq_len, bf16) + ffn + rotary_casts


def _attention_saves(config: ModelConfig, batch: int, seq_len: int, bf16: bool) -> int:
    """Bytes one block's attention saves, from the q and k norms to the merged heads."""
    tokens, width, kv = batch * seq_len, config.attention_width, config.kv_width
    a = BF16 if bf16 else FP32
    if config.attention == "naive":  # q, k (or its repeated copy), v copy, merged heads; probabilities, mask
        square = batch * config.n_heads * seq_len * seq_len
        saved = 4 * tokens * width * a + square * (FP32 + BF16 if bf16 else FP32) + seq_len * seq_len
        return saved + _qk_norm_saves(config, tokens, bf16, qkv_output_kept=False)
    kernel = _attention_kernel_saves(config, batch, seq_len, a)
    if _sdpa_repeats_kv(config, bf16):  # q, the repeated copies of k and v, merged heads; kernel saves
        return 4 * tokens * width * a + kernel + _qk_norm_saves(config, tokens, bf16, qkv_output_kept=False)
    # q, k, the QKV output (v's base), merged heads; the kernel's output and log-sum-exp
    saved = (width + kv + (width + 2 * kv) + width) * tokens * a + kernel
    return saved + _qk_norm_saves(config, tokens, bf16, qkv_output_kept=True)


def _qk_norm_saves(config: ModelConfig, tokens: int, bf16: bool, qkv_output_kept: bool) -> int:
    """What the per-head norms of q and k save (nothing without qk_norm): their fp32 input, which
    in fp32 is a view of the QKV output (no extra bytes where the attention keeps that output
    already) and under bf16 an fp32 copy of q and k; normalised q and k, fp32; an fp32 rsqrt per
    head and token."""
    if not config.qk_norm:
        return 0
    width, kv = config.attention_width, config.kv_width
    if bf16:
        inputs = tokens * (width + kv) * FP32
    else:
        inputs = 0 if qkv_output_kept else tokens * (width + 2 * kv) * FP32
    return inputs + tokens * (width + kv) * FP32 + tokens * (config.n_heads + config.n_kv_heads) * FP32


def _saved_per_layer(
    config: ModelConfig, batch: int, seq_len: int, precision: str, param_dtype: str, checkpoint: str
) -> int:
    """What each block keeps from its forward to its backward under a checkpoint policy."""
    block_input = batch * seq_len * config.d_model * (BF16 if param_dtype == "bf16" else FP32)
    if checkpoint == "full":
        return block_input
    a = BF16 if precision == "bf16" else FP32
    if checkpoint == "selective":
        return block_input + _attention_kernel_saves(config, batch, seq_len, a)
    if checkpoint in BY_WIDTH:  # and the QKV, gate and up outputs
        widening = config.attention_width + 2 * config.kv_width + (2 if config.mlp == "swiglu" else 1) * config.d_ff
        kept = widening + (config.d_model if checkpoint == "selective-mm-out" else 0)  # the output projection's
        return block_input + _attention_kernel_saves(config, batch, seq_len, a) + batch * seq_len * kept * a
    return activations_per_layer(config, batch, seq_len, precision, param_dtype)


def _head(config: ModelConfig, tokens: int, a: int, loss: str) -> tuple[int, int]:
    """(what the head keeps for the backward, the loss's transient working set), in bytes."""
    d, V = config.d_model, config.vocab_size
    norm = (2 * d + 1) * tokens * FP32 + tokens * d * a  # last residual, normalised x, rsqrt, output
    if loss == "fused":  # dhidden and the fp32 dweight, computed in the forward
        chunk = min(tokens, default_chunk_size(V))
        return norm + tokens * d * a + V * d * FP32, chunk * V * a
    working = tokens * V * ((BF16 + FP32 if a == BF16 else FP32) + FP32)
    return norm + tokens * V * FP32, working


def memory_model(
    config: ModelConfig,
    batch: int,
    seq_len: int,
    precision: str,
    param_dtype: str = "fp32",
    checkpoint: str = "none",
    loss: str = "eager",
) -> MemoryModel:
    """The analytic memory of `config` at `batch` × `seq_len` in `precision` (fp32 or bf16), with
    the step options of lmperf.model.step.StepConfig (module docstring)."""
    if precision not in MEMORY_PRECISIONS:
        raise UsageError(f"unknown precision {precision!r}; choose from {', '.join(MEMORY_PRECISIONS)}")
    if batch <= 0 or seq_len <= 0:
        raise UsageError(f"batch and context length must be positive, got {batch}, {seq_len}")
    params = parameter_count(config)["total"]
    bf16 = precision == "bf16"
    param_bytes = BF16 if param_dtype == "bf16" else FP32
    tokens = batch * seq_len
    per_layer = activations_per_layer(config, batch, seq_len, precision, param_dtype)
    policies = model_block_policies(checkpoint, config)
    saved = sum(_saved_per_layer(config, batch, seq_len, precision, param_dtype, p) for p in policies)
    recomputed = per_layer if set(policies) != {"none"} else 0  # one block at a time in the backward
    head, working = _head(config, tokens, BF16 if bf16 else FP32, loss)
    return MemoryModel(
        parameters=params * param_bytes,
        rotary_tables=rotary_table_bytes(config),
        gradients=params * param_bytes,
        optimizer_state=2 * params * param_bytes,
        autocast_weight_copies=matmul_parameters(config) * BF16 if bf16 and param_dtype == "fp32" else 0,
        activations_per_layer=per_layer,
        activations=saved + recomputed,
        head_activations=head,
        logits_working_set=working,
        residual_stream_tensor=tokens * config.d_model * param_bytes,
    )
