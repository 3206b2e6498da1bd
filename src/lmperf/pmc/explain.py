"""`lmperf pmc explain`: measured counters beside the analytic FLOP model for a known model.

The prediction is `lmperf.analysis.flops.forward_ops` (the one FLOP model), with the causal-tile
effect (`causal_tile_fraction`) for fused attention kernels. Residuals per kernel class show what
the counters add: tile padding of GEMM widths, executed causal tiles, 3xTF32 passes.
"""

from __future__ import annotations

from lmperf.analysis.flops import Op, forward_ops
from lmperf.analysis.tiles import causal_tile_fraction
from lmperf.analysis.kernels import ATTENTION, MATMUL
from lmperf.pmc.kernels import category
from lmperf.errors import UsageError
from lmperf.model import ModelConfig, preset
from lmperf.model.hf_config import from_fields
from lmperf.pmc import gemms as g
from lmperf.pmc.counts import SLACK
from lmperf.pmc.roles import layer_roles
from lmperf.pmc.parse import Capture, KernelRecord

_ATTENTION_OPS = ("attn_scores", "attn_weighted_sum")


def from_preset(name: str, overrides: dict | None = None) -> ModelConfig:
    return preset(name, **(overrides or {}))


def from_hf_config(fields: dict) -> ModelConfig:
    """The shapes of a Hugging Face config.json (lmperf.model.hf_config reads every family)."""
    return from_fields(fields).config


def measured_flops(kernel: KernelRecord) -> float:
    """FLOPs the counters report: tensor-pipe ops, or 2 per FFMA for fp32 GEMMs."""
    return 2.0 * g.macs(kernel)


def predicted_ops(model: ModelConfig, batch: int, seq_len: int) -> dict[str, Op]:
    ops = forward_ops(model, batch, seq_len, causal_tile_fraction(seq_len))
    return {op.name: op for op in ops if op.is_matmul}


def class_rows(capture: Capture, model: ModelConfig, batch: int, seq_len: int) -> list[dict]:
    """Forward pass per kernel class: measured vs predicted FLOPs and the residual."""
    forward = g.split_phases(capture).forward
    ops = predicted_ops(model, batch, seq_len)
    fused = any(category(k) == ATTENTION for k in forward)
    naive_ops = forward_ops(model, batch, seq_len, 1.0)
    full_square = sum(op.total_forward for op in naive_ops if op.name in _ATTENTION_OPS)
    attention = sum(ops[name].total_forward for name in _ATTENTION_OPS)
    gemm = sum(op.total_forward for name, op in ops.items() if name not in _ATTENTION_OPS)
    predicted = {MATMUL: gemm if fused else gemm + full_square, ATTENTION: attention if fused else 0.0}
    rows = []
    for cls, expected in predicted.items():
        kernels = [k for k in forward if category(k) == cls]
        measured = sum(measured_flops(k) for k in kernels)
        rows.append(
            dict(
                kernel_class=cls,
                kernels=len(kernels),
                measured=measured,
                predicted=expected,
                residual=_residual(measured, expected),
            )
        )
    return rows


def role_rows(capture: Capture, model: ModelConfig, batch: int, seq_len: int) -> list[dict]:
    """First layer's GEMMs by role (and the LM head): counted vs predicted, per instance."""
    layer = g.find_layers(g.split_phases(capture).forward)
    roles = layer_roles(layer) if layer else None
    if roles is None:
        raise UsageError("the capture's forward GEMMs show no layer structure to line up")
    ops = predicted_ops(model, batch, seq_len)
    pairs = [
        ("qkv_proj", roles["qkv"]),
        ("out_proj", [roles["out"]]),
        ("ffn_w1_w3", roles["ups"]),
        ("ffn_w2", [roles["down"]]),
        ("lm_head", [layer.lm_head]),
    ]
    if roles["kind"] == ATTENTION:
        pairs.append(("attention (fused)", [roles["marker"]]))
    else:  # naive: the score and weighted-sum matmuls run over the full square
        ops.update({op.name: op for op in forward_ops(model, batch, seq_len, 1.0) if op.name in _ATTENTION_OPS})
        pairs += [("attn_scores", [roles["qk"]]), ("attn_weighted_sum", [roles["pv"]])]
    rows = []
    for name, kernels in pairs:
        expected = (
            sum(ops[n].forward_flops for n in _ATTENTION_OPS)
            if name.startswith("attention")
            else ops[name].forward_flops
        )
        measured = sum(measured_flops(k) for k in kernels)
        rows.append(
            dict(
                op=name,
                kernels=", ".join(k.name.removeprefix("void ")[:40] for k in kernels),
                measured=measured,
                predicted=expected,
                residual=_residual(measured, expected),
            )
        )
    return rows


# The residuals the model's own error allows: tile padding counts up to SLACK more per padded
# dimension (token rows and width), fp32 GEMMs run as 3xTF32 count three passes, and nothing
# counts much less than the model (a kernel class the capture lacks is the exception it flags).
PLAUSIBLE_RESIDUAL = (1 / SLACK - 1, 3 * SLACK * SLACK - 1)


def implausible(rows: list[dict]) -> list[dict]:
    """Rows whose residual lies beyond PLAUSIBLE_RESIDUAL: a different model, batch or length ran."""
    low, high = PLAUSIBLE_RESIDUAL
    return [row for row in rows if row["residual"] is not None and not low <= row["residual"] <= high]


def _residual(measured: float, predicted: float) -> float | None:
    return (measured - predicted) / predicted if predicted else None


CLASS_COLUMNS = [
    ("class", "kernel_class", ""),
    ("kernels", "kernels", "d"),
    ("measured FLOPs", "measured", ".4g"),
    ("predicted FLOPs", "predicted", ".4g"),
    ("residual", "residual", "+.1%"),
]
ROLE_COLUMNS = [
    ("op (layer 1)", "op", ""),
    ("kernels", "kernels", ""),
    ("measured FLOPs", "measured", ".4g"),
    ("predicted FLOPs", "predicted", ".4g"),
    ("residual", "residual", "+.1%"),
]
