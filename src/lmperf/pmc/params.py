"""Parameter counts from inferred shapes: the blocks exactly (as far as the shapes go); the total
exactly from a training step's optimizer, else an interval (a forward pass cannot tell tied
embeddings, nor a learned position table's length)."""

from __future__ import annotations

from lmperf.analysis.kernels import MATMUL, MATMUL_AUX, NORM
from lmperf.pmc.kernels import category, is_generated, runs_norm
from lmperf.pmc.completeness import lookups_before_first_gemm
from lmperf.pmc.gemms import FADD, STORE_BYTES, Phases, tensor_path, whole
from lmperf.pmc.parse import Capture, KernelRecord
from lmperf.pmc.result import Inference

# PyTorch's fused AdamW (fp32 state) executes 2 FADD per element plus 13,312 per block, one block
# per chunk of at most 65,536 elements: (FADD - 13312·blocks) / 2 gave every training capture of
# the corpus its exact parameter count. Where that reading is no whole count of elements the
# chunks can hold (another AdamW variant), about 2.21 FADD per parameter (2.206-2.267) sizes it.
ADAMW_FADD_PER_ELEMENT, ADAMW_FADD_PER_BLOCK, ADAMW_CHUNK = 2, 13312, 65536
ADAMW_FADD_PER_PARAM = 2.21

_NEEDED = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads", "head_dim", "mlp", "vocab_size")


def block_parameters(
    d: int,
    d_ff: int,
    n_heads: int,
    n_kv_heads: int,
    head_dim: int,
    gated: bool,
    biases: tuple[bool, bool],
    layer_norm: bool,
    head_norms: bool = False,
) -> int:
    """Weights, biases and norms of one block (q, k, v, o; two or three MLP matrices; 2 norms).
    `biases`: whether q, k and v have them, and whether the other projections do; `head_norms`:
    whether q and k are normalized head by head before the attention (Qwen3), one norm of
    head_dim each."""
    q, kv = n_heads * head_dim, n_kv_heads * head_dim
    weights = d * q + 2 * d * kv + q * d + (3 if gated else 2) * d * d_ff
    bias = (q + 2 * kv if biases[0] else 0) + (d + (2 if gated else 1) * d_ff + d if biases[1] else 0)
    per_norm = 2 if layer_norm else 1
    norms = 2 * per_norm * d + (2 * per_norm * head_dim if head_norms else 0)
    return weights + bias + norms


def normalizes_heads(roles: dict) -> bool:
    """Whether the first layer normalizes q or k between the first projection and the attention
    kernel: only per-head q and k norms (Qwen3) run a norm there; rotary and reshapes do not."""
    first, marker = roles["qkv"][0].index, roles["marker"].index
    return any(first < k.index < marker and runs_norm(k) for k in roles["first_layer"])


def _biases(roles: dict, gated: bool, kernels: list[KernelRecord]) -> tuple[bool, bool]:
    """Which projections add a bias, by their kernels' names (`kernels`: the capture's, in launch
    order). A gated MLP's model may bias q, k and v alone (Qwen2), which its down-projection's
    plain kernel tells; elsewhere every projection has one or none, and a kernel that names no
    bias may still add one (`_hides_bias`)."""

    def named(gemms: list[KernelRecord]) -> bool:
        return any(_names_bias(k, kernels) for k in gemms)

    if not gated:
        every = named(_layer_gemms(roles))
        return every, every
    return named(roles["qkv"]), named([roles["down"]])


def _names_bias(gemm: KernelRecord, kernels: list[KernelRecord]) -> bool:
    """A cuBLAS epilogue named for its bias; a max-autotune template inductor names after addmm
    (after mm where it adds none); or, where inductor leaves the GEMM to cuBLAS and adds the bias
    in the next kernel it generates, that kernel named after addmm."""
    if "bias" in gemm.name.lower() or (is_generated(gemm.name) and "addmm" in gemm.name):
        return True
    # by index, not position: a capture without its collectives, or one decode step, keeps the
    # kernels' indices
    after = next((k for k in kernels if k.index > gemm.index and category(k) not in (MATMUL, MATMUL_AUX)), None)
    return after is not None and is_generated(after.name) and "addmm" in after.name


def _layer_gemms(roles: dict) -> list:
    return roles["qkv"] + [roles["out"], *roles["ups"], roles["down"]]


def _hides_bias(kernel: KernelRecord) -> bool:
    """A GEMM whose name says nothing of a bias it adds: an fp32 SIMT GEMM (cuBLAS adds addmm's
    bias as beta·C, the FFMA some variants spend on scaling anyway), or a generated template
    named after neither mm nor addmm."""
    return tensor_path(kernel) is None or (is_generated(kernel.name) and "mm" not in kernel.name)


_BIASES = {
    (True, True): "with biases: GEMM epilogues add bias",
    (True, False): "biases on q, k and v alone: only their GEMM epilogues add bias",
    (False, True): "biases on the output and MLP projections alone, by their GEMM epilogues",
    (False, False): "no biases: GEMM epilogues add no bias",
}


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
    biases = _biases(roles, v["mlp"] == "gated", capture.kernels)
    unnamed = not any(biases) and any(_hides_bias(k) for k in _layer_gemms(roles))
    layer_norm = any(category(k) == NORM and "layer_norm" in k.name.lower() for k in capture.kernels)
    head_norms = normalizes_heads(roles)
    # K/V heads and a d_ff the counters only bound (several widths fit the K projection, or
    # the MLP's counts tie) bound the blocks
    kv_low, kv_high = result.intervals.get("n_kv_heads") or (v["n_kv_heads"], v["n_kv_heads"])
    ff_low, ff_high = result.intervals.get("d_ff") or (v["d_ff"], v["d_ff"])
    per_block, most_per_block = (
        block_parameters(
            v["d_model"],
            ff,
            v["n_heads"],
            kv,
            v["head_dim"],
            v["mlp"] == "gated",
            most,
            layer_norm,
            head_norms,
        )
        for kv, ff, most in ((kv_low, ff_low, biases), (kv_high, ff_high, (True, True) if unnamed else biases))
    )
    blocks, most_blocks = v["n_layers"] * per_block, v["n_layers"] * most_per_block
    confidence = min(result.confidence[name] for name in _NEEDED if name != "vocab_size")
    why = (
        f"{v['n_layers']} x {per_block:,} ({_BIASES[biases]}; "
        f"{'LayerNorm' if layer_norm else 'RMSNorm'} by kernel names"
        + (", q and k normalized per head before the attention" if head_norms else "")
        + ")"
    )
    if most_blocks == blocks:
        result.set("params_blocks", blocks, confidence, why)
    else:
        open_ends = (
            [f"K/V heads in [{kv_low}, {kv_high}]"] * (kv_low != kv_high)
            + [f"d_ff in [{ff_low}, {ff_high}]"] * (ff_low != ff_high)
            + [
                "biases every projection may add unnamed (an fp32 SIMT GEMM adds one in the FFMA that "
                "scales its output, a max-autotune template in an epilogue named otherwise)"
            ]
            * unnamed
        )
        result.bound(
            "params_blocks",
            blocks,
            most_blocks,
            min(confidence, 0.5),
            f"{why}, up to {v['n_layers']} x {most_per_block:,}: {'; '.join(open_ends)}",
        )
    trained = optimizer_parameters(phases)
    if trained and trained[1]:
        result.set(
            "params_total",
            trained[0],
            0.9,
            "fused AdamW: (FADD - "
            f"{ADAMW_FADD_PER_BLOCK:,} per block) / {ADAMW_FADD_PER_ELEMENT} per element; "
            "counts tied weights once",
        )
        return
    if trained:
        result.set(
            "params_total",
            trained[0],
            0.6,
            f"fused AdamW FADD count / {ADAMW_FADD_PER_PARAM} per parameter (±3%); counts tied weights once",
        )
        return
    final_norm = (2 if layer_norm else 1) * v["d_model"]
    d = v["d_model"]
    low_v, high_v = result.intervals.get("vocab_size") or (v["vocab_size"], v["vocab_size"])
    # A forward pass cannot tell a tied LM head from an untied one (both run the same GEMM), nor
    # a learned position table's length (it reads only the T positions in use): the total is an
    # interval, from one V x d matrix to two, and open above when a position table is looked up.
    table = position_table(phases)
    low = blocks + low_v * d + final_norm + (v["seq_len"] or 0) * d * table
    high = None if table else most_blocks + 2 * high_v * d + final_norm
    why = "blocks + final norm + a tied (one) or untied (two) V x d embedding and LM head" + (
        ", + a learned position table of at least T rows (a second lookup before the first "
        "layer; its length is not in the counters)"
        if table
        else ""
    )
    result.bound("params_total", low, high, min(confidence, 0.5), why)


def position_table(phases: Phases) -> bool:
    """Whether the forward looks up a learned position table (GPT-2's wpe, OPT's positions): a
    second embedding lookup before the first layer GEMM, beside the token embedding's, that
    stores what a position lookup does."""
    lookups = lookups_before_first_gemm(phases.forward)
    return any(stores_position_rows(k, lookups[0]) for k in lookups[1:])


def stores_position_rows(lookup: KernelRecord, token: KernelRecord) -> bool:
    """Whether a lookup after the `token` embedding's stores one row per position, as a position
    table's does: T rows (the positions of one sequence, broadcast over the batch) or B·T, so
    its store bytes divide the token lookup's B·T rows. Inductor names a kernel after every
    operator it fuses, so the copy pad_mm makes of the first norm's output (its rows rounded up
    to a multiple of 8, once per projection it feeds) is named after the embedding too, and
    stores more than the token lookup: no second table. Without store counters the name
    decides."""
    stored, token_stored = lookup.metrics.get(STORE_BYTES), token.metrics.get(STORE_BYTES)
    if stored is None or token_stored is None:
        return True
    return stored > 0 and whole(token_stored, stored) is not None
