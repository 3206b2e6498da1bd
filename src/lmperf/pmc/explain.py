"""`lmperf pmc explain`: measured counters beside the analytic FLOP model for a known model.

The prediction is `lmperf.analysis.flops.forward_ops` (the one FLOP model), with the causal-tile
effect (`causal_tile_fraction`) for fused attention kernels. Residuals per kernel class show what
the counters add: tile padding of GEMM widths, executed causal tiles, 3xTF32 passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmperf.analysis.flops import Op, causal_tile_fraction, forward_ops
from lmperf.analysis.kernels import ATTENTION, MATMUL, kernel_category
from lmperf.errors import UsageError
from lmperf.model import ModelConfig, preset
from lmperf.pmc import gemms as g
from lmperf.pmc.infer import layer_roles
from lmperf.pmc.parse import Capture, KernelRecord

GATED_FAMILIES = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "phi3"}
_ATTENTION_OPS = ("attn_scores", "attn_weighted_sum")


@dataclass(frozen=True)
class KnownModel:
    config: ModelConfig
    n_kv_heads: int
    gated_mlp: bool


def from_preset(name: str, overrides: dict | None = None) -> KnownModel:
    config = preset(name, **(overrides or {}))
    return KnownModel(config, config.n_heads, True)


def from_hf_config(fields: dict) -> KnownModel:
    """The shapes of a Hugging Face config.json (GPT-2, Llama-like, GPT-NeoX, OPT key names)."""
    def first(*keys, default=None):
        return next((fields[k] for k in keys if fields.get(k) is not None), default)

    d = first("hidden_size", "n_embd", "d_model")
    heads = first("num_attention_heads", "n_head")
    layers = first("num_hidden_layers", "n_layer")
    if not (d and heads and layers):
        raise UsageError("the Hugging Face config lacks hidden size, heads or layers")
    if first("head_dim", default=d // heads) != d // heads:
        raise UsageError("configs whose head_dim differs from hidden_size / heads are not modelled")
    config = ModelConfig(d_model=d, d_ff=first("intermediate_size", "ffn_dim", "n_inner", default=4 * d),
                         n_layers=layers, n_heads=heads, vocab_size=first("vocab_size", default=50257))
    return KnownModel(config.validate(), first("num_key_value_heads", default=heads),
                      fields.get("model_type") in GATED_FAMILIES)


def measured_flops(kernel: KernelRecord) -> float:
    """FLOPs the counters report: tensor-pipe ops, or 2 per FFMA for fp32 GEMMs."""
    return 2.0 * g.macs(kernel)


def predicted_ops(model: KnownModel, batch: int, seq_len: int) -> dict[str, Op]:
    ops = forward_ops(model.config, batch, seq_len, causal_tile_fraction(seq_len),
                      n_kv_heads=model.n_kv_heads, gated_mlp=model.gated_mlp)
    return {op.name: op for op in ops if op.is_matmul}


def class_rows(capture: Capture, model: KnownModel, batch: int, seq_len: int) -> list[dict]:
    """Forward pass per kernel class: measured vs predicted FLOPs and the residual."""
    forward = g.split_phases(capture).forward
    ops = predicted_ops(model, batch, seq_len)
    fused = any(kernel_category(k.name) == ATTENTION for k in forward)
    eager = forward_ops(model.config, batch, seq_len, 1.0, model.n_kv_heads, model.gated_mlp)
    full_square = sum(op.total_forward for op in eager if op.name in _ATTENTION_OPS)
    attention = sum(ops[name].total_forward for name in _ATTENTION_OPS)
    gemm = sum(op.total_forward for name, op in ops.items() if name not in _ATTENTION_OPS)
    predicted = {MATMUL: gemm if fused else gemm + full_square, ATTENTION: attention if fused else 0.0}
    rows = []
    for cls, expected in predicted.items():
        kernels = [k for k in forward if kernel_category(k.name) == cls]
        measured = sum(measured_flops(k) for k in kernels)
        rows.append(dict(kernel_class=cls, kernels=len(kernels), measured=measured,
                         predicted=expected, residual=_residual(measured, expected)))
    return rows


def role_rows(capture: Capture, model: KnownModel, batch: int, seq_len: int) -> list[dict]:
    """First layer's GEMMs by role (and the LM head): counted vs predicted, per instance."""
    layer = g.find_layers(g.split_phases(capture).forward)
    roles = layer_roles(layer) if layer else None
    if roles is None:
        raise UsageError("the capture's forward GEMMs show no layer structure to line up")
    ops = predicted_ops(model, batch, seq_len)
    pairs = [("qkv_proj", roles["qkv"]), ("out_proj", [roles["out"]]),
             ("ffn_w1_w3", roles["ups"]), ("ffn_w2", [roles["down"]]), ("lm_head", [layer.lm_head])]
    if roles["kind"] == ATTENTION:
        pairs.append(("attention (fused)", [roles["marker"]]))
    else:  # eager: the score and weighted-sum matmuls run over the full square
        ops.update({op.name: op for op in forward_ops(model.config, batch, seq_len, 1.0)
                    if op.name in _ATTENTION_OPS})
        pairs += [("attn_scores", [roles["qk"]]), ("attn_weighted_sum", [roles["pv"]])]
    rows = []
    for name, kernels in pairs:
        expected = (sum(ops[n].forward_flops for n in _ATTENTION_OPS) if name.startswith("attention")
                    else ops[name].forward_flops)
        measured = sum(measured_flops(k) for k in kernels)
        rows.append(dict(op=name, kernels=", ".join(k.name.removeprefix("void ")[:40] for k in kernels),
                         measured=measured, predicted=expected, residual=_residual(measured, expected)))
    return rows


def _residual(measured: float, predicted: float) -> float | None:
    return (measured - predicted) / predicted if predicted else None


CLASS_COLUMNS = [("class", "kernel_class", ""), ("kernels", "kernels", "d"),
                 ("measured FLOPs", "measured", ".4g"), ("predicted FLOPs", "predicted", ".4g"),
                 ("residual", "residual", "+.1%")]
ROLE_COLUMNS = [("op (layer 1)", "op", ""), ("kernels", "kernels", ""),
                ("measured FLOPs", "measured", ".4g"), ("predicted FLOPs", "predicted", ".4g"),
                ("residual", "residual", "+.1%")]
