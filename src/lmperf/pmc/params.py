"""Parameter counts from inferred shapes: the blocks exactly (as far as the shapes go), the total
with its assumptions stated (counters cannot tell tied embeddings or a position table's length)."""

from __future__ import annotations

from lmperf.pmc.gemms import FADD, Phases
from lmperf.analysis.kernels import NORM, kernel_category
from lmperf.pmc.parse import Capture
from lmperf.pmc.result import Inference

# PyTorch's fused AdamW (fp32 state) executes 2 FADD per element plus 13,312 per block, one block
# per chunk of at most 65,536 elements: (FADD - 13312·blocks) / 2 gave every training capture of
# the corpus its exact parameter count. Where that reading is no whole count of elements the
# chunks can hold (another AdamW variant), about 2.21 FADD per parameter (2.206-2.267) sizes it.
ADAMW_FADD_PER_ELEMENT, ADAMW_FADD_PER_BLOCK, ADAMW_CHUNK = 2, 13312, 65536
ADAMW_FADD_PER_PARAM = 2.21

_NEEDED = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads", "head_dim", "mlp", "vocab_size")


def block_parameters(d: int, d_ff: int, n_heads: int, n_kv_heads: int, head_dim: int,
                     gated: bool, biases: bool, layer_norm: bool) -> int:
    """Weights, biases and norms of one block (q, k, v, o; two or three MLP matrices; 2 norms)."""
    q, kv = n_heads * head_dim, n_kv_heads * head_dim
    weights = d * q + 2 * d * kv + q * d + (3 if gated else 2) * d * d_ff
    bias = (q + 2 * kv + d + (2 if gated else 1) * d_ff + d) if biases else 0
    norms = 2 * (2 * d if layer_norm else d)
    return weights + bias + norms


def optimizer_parameters(phases: Phases) -> tuple[int, bool] | None:
    """All trained parameters from the fused AdamW kernels' FADD count, and whether it is exact
    (else about ±3%); None without them."""
    adam = [k for k in phases.optimizer if "adam" in k.name.lower()]
    fadd = sum(k.metric(FADD) for k in adam)
    if not fadd:
        return None
    blocks = sum(k.blocks for k in adam)
    elements = (fadd - ADAMW_FADD_PER_BLOCK * blocks) / ADAMW_FADD_PER_ELEMENT
    if elements == int(elements) and blocks <= elements <= blocks * ADAMW_CHUNK:
        return int(elements), True
    return int(round(fadd / ADAMW_FADD_PER_PARAM)), False


def add_parameter_counts(result: Inference, roles: dict, capture: Capture, phases: Phases) -> None:
    v = result.values
    if any(v[name] is None for name in _NEEDED if name not in result.intervals):
        result.unknown("params_blocks", "needs every shape field")
        result.unknown("params_total", "needs every shape field")
        return
    layer_gemms = roles["qkv"] + [roles["out"], *roles["ups"], roles["down"]]
    biases = any("bias" in k.name.lower() for k in layer_gemms)
    layer_norm = any(kernel_category(k.name) == NORM and "layer_norm" in k.name.lower()
                     for k in capture.kernels)
    per_block = block_parameters(v["d_model"], v["d_ff"], v["n_heads"], v["n_kv_heads"],
                                 v["head_dim"], v["mlp"] == "gated", biases, layer_norm)
    blocks = v["n_layers"] * per_block
    confidence = min(result.confidence[name] for name in _NEEDED if name != "vocab_size")
    result.set("params_blocks", blocks, confidence,
               f"{v['n_layers']} x {per_block:,} ({'with' if biases else 'no'} biases: GEMM "
               f"epilogues {'add' if biases else 'add no'} bias; "
               f"{'LayerNorm' if layer_norm else 'RMSNorm'} by kernel names)")
    trained = optimizer_parameters(phases)
    if trained and trained[1]:
        result.set("params_total", trained[0], 0.9, "fused AdamW: (FADD - "
                   f"{ADAMW_FADD_PER_BLOCK:,} per block) / {ADAMW_FADD_PER_ELEMENT} per element; "
                   "counts tied weights once")
        return
    if trained:
        result.set("params_total", trained[0], 0.6, "fused AdamW FADD count / "
                   f"{ADAMW_FADD_PER_PARAM} per parameter (±3%); counts tied weights once")
        return
    final_norm = (2 if layer_norm else 1) * v["d_model"]

    def total(vocab: int) -> int:
        return blocks + 2 * vocab * v["d_model"] + final_norm

    why = "blocks + token embedding + untied LM head + final norm"
    if "vocab_size" in result.intervals:
        low, high = result.intervals["vocab_size"]
        result.bound("params_total", total(low), total(high), min(confidence, 0.5),
                     f"{why}, over the vocabulary's interval")
    else:
        result.set("params_total", total(v["vocab_size"]),
                   min(confidence, result.confidence["vocab_size"], 0.5), why)
    result.assumptions.append("params_total assumes an untied LM head and no learned position "
                              "table; tied embeddings subtract vocab_size·d_model, a position "
                              "table adds max_positions·d_model (neither shows in the counters)")
