"""What a server can do to defeat pmc, and what pmc is claimed to read from each: issue 48's
limits, written down before any capture of them (the corpus's `m_` entries).

Each claim says which kind of limit it is — pmc *detects* it (a field of its report shows it),
*reads through* it (the architecture comes out right, and the limit leaves no trace), or is
*defeated* (fields come out wrong or undetermined) — and the fields pmc is expected to report:
the truth file's value (`TRUTH`), a value of its own, or None (reported as not determined). A
speculative capture is claimed to read as neither of its two models (`neither`). The claims are
predictions from how the inference works (lmperf.pmc.infer), to be held against the captures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

TRUTH = "truth"  # the field as the truth file has it
VERDICTS = ("control", "reads through", "detects", "defeats")
ARCHITECTURE = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff")
_STRUCTURE = ("mode", "dtype", "batch", "seq_len", *ARCHITECTURE, "mlp")
_AS_TRUTH = dict.fromkeys(_STRUCTURE, TRUTH)
_UNDETERMINED = dict.fromkeys(("batch", "seq_len", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff"))


@dataclass(frozen=True)
class LimitClaim:
    limit: str
    verdict: str
    claim: str
    reads: dict = field(default_factory=dict)  # field -> TRUTH, a value, or None (not determined)
    # truth-file paths of models the report must not match on every ARCHITECTURE field
    neither: tuple[str, ...] = ()
    # text that one of the report's assumptions must hold (where pmc says what it could not tell apart)
    assumes: tuple[str, ...] = ()


LIMIT_CLAIMS = {
    "m_llama_h8_kv2_t128_plain": LimitClaim(
        "none (the control)",
        "control",
        "The model the limits run, as a plain bf16 forward: every structural field exact, so what "
        "goes wrong in a limit's capture is the limit's doing.",
        _AS_TRUTH,
    ),
    "m_llama_h8_kv2_t128_padded": LimitClaim(
        "padding",
        "reads through",
        "Four requests of 37, 64, 90 and 111 tokens left-padded to a bucket of 128 run as B=4, "
        "T=128: pmc reads that padded batch (batch 4, seq_len 128) and the architecture exactly; "
        "the requests' own lengths leave no trace in the counters (padded rows do full work).",
        _AS_TRUTH,
    ),
    "m_llama_h8_kv2_p64_b4_static": LimitClaim(
        "batching across requests",
        "reads through",
        "Four prompts of 64 tokens generated together (static cache): pmc reads batch 4, the "
        "requests served at once, indistinguishable from one caller's batch of 4, with prompt "
        "length 64 and the architecture exact.",
        _AS_TRUTH,
    ),
    "m_llama_h8_kv2_p64_speculative": LimitClaim(
        "speculative decoding",
        "defeats",
        "A 1-layer draft (d 256) proposes 2 tokens before each verifying pass of the 2-layer target "
        "(d 512): both models' layers run in one range, and the target's passes cover unequal token "
        "counts (the prompt with the first candidates, then the later rounds' few tokens), so no LM "
        "head repeats over whole equal steps. pmc reports one architecture, or "
        "none, and it is neither the target's nor the draft's; nothing in its report names a "
        "second model.",
        neither=("", "speculative.draft"),
    ),
    "m_llama_h8_kv2_t128_fp8": LimitClaim(
        "quantised weights (fp8)",
        "detects",
        "Every decoder GEMM runs on the fp8 tensor pipe, which pmc requests "
        "(sm__ops_path_tensor_src_fp8) and counts as GEMM work: dtype reads fp8 (the truth's "
        "activations are bf16) and the architecture exactly; the activations' quantising kernels "
        "(amax, scale, cast) do not disturb the widths.",
        {**_AS_TRUTH, "dtype": "fp8"},
    ),
    "m_llama_h8_kv2_t128_int8": LimitClaim(
        "quantised weights (int8, W8A8)",
        "defeats",
        "torch._int_mm runs on the int8 tensor pipe, a counter pmc does not request: the layer "
        "GEMMs count no work, only the bf16 LM head remains, no layer structure is found, and pmc "
        "says so (mode and dtype at low confidence, every shape field not determined).",
        {"mode": "forward", "dtype": "bf16", "n_layers": None, **_UNDETERMINED},
    ),
    "m_llama_h8_kv2_t128_int8_weight_only": LimitClaim(
        "quantised weights (int8, weight-only)",
        "defeats",
        "torch._weight_int8pack_mm's CUDA kernel (weight_int8pack_mm_kernel) is named like no "
        "GEMM, so pmc classes it 'other' although it counts K FFMA per output element: as with int8 "
        "W8A8, no layer structure is found and pmc says so.",
        {"mode": "forward", "dtype": "bf16", "n_layers": None, **_UNDETERMINED},
    ),
    "m_llama_h8_kv2_p64_b4_prefill": LimitClaim(
        "batching across requests (prefill only)",
        "defeats",
        "Four prompts of 64 tokens prefilled together into a static cache, with no decode step "
        "after. Claimed at capture: the masked prefill runs whole padded key tiles, so B=4, T=64 "
        "and B=1, T=256 count the same attention work, pmc takes the fewest sequences (batch 1, "
        "seq_len 256) and names B=4, T=64 among its assumptions. Revised after capture, not blind, "
        "once pmc reads cuDNN's grid as a block per 128 query rows of each head: its 32 blocks are "
        "B=4, T=64 (B=1, T=256 would launch 16), so batch and seq_len read right, with the "
        "architecture. The sampling after the LM head reads as a generate that the range cut after "
        "its prefill, so the mode is not determined; the LM head runs on each prompt's last "
        "position only, so neither is the vocabulary: the limit still defeats those two.",
        {**_AS_TRUTH, "mode": None, "vocab_size": None},
    ),
    "m_llama_h16_kv4_t128_tp2": LimitClaim(
        "tensor parallelism (emulated rank, no communication kernels)",
        "reads through",
        "Rank 0 of TP=2 over a Llama of d 1024, 16 heads, 4 K/V heads, d_ff 2816 runs 8 heads, "
        "2 K/V heads, d_ff 1408 at d 1024. Claimed at capture: defeats (pmc read heads x head_dim "
        "= d only, so d_model and every field resting on it were not determined). Revised after "
        "capture, not blind, once pmc reads an attention narrower than d from the output "
        "projection's N·d·a work: the shard reads as the truth records it (d 1024, 8 heads of 64, "
        "2 K/V heads, d_ff 1408), and an assumption names the other model the same counters fit, "
        "16 heads, 4 K/V heads, d_ff 2816 split over 2 ranks. Nothing in this emulated rank's "
        "counters says parallelism.",
        {**_AS_TRUTH, "parallelism": None},
        assumes=("2-way tensor parallelism over a model of 16 heads, 4 K/V heads, d_ff 2816",),
    ),
    "m_llama_h16_kv4_t128_tp2_nccl": LimitClaim(
        "tensor parallelism (NCCL, rank 0 of 2 GPUs)",
        "reads through",
        "The emulated rank's model and shard, now with its peer on a second GPU and Megatron's "
        "communication: an all-reduce after the embedding and after each attention and MLP block "
        "and the logits' all-gather. ncu cannot profile a collective (it replays a kernel alone, "
        "and the peer never joins it), so collect leaves NCCL's kernels unprofiled and profiles "
        "rank 0's others, which read as the emulated rank's. Claimed at capture: defeats, as the "
        "emulated rank was; revised after capture, not blind, as it is: the shard read as the "
        "truth records it, the 2-way split named among the assumptions, and no collective there "
        "to report parallelism.",
        {**_AS_TRUTH, "parallelism": None},
        assumes=("2-way tensor parallelism over a model of 16 heads, 4 K/V heads, d_ff 2816",),
    ),
    "m_llama_h16_kv4_t96_tp2_nccl_placed": LimitClaim(
        "tensor parallelism (NCCL, collectives placed by a launch run)",
        "detects",
        "The NCCL rank over 96 tokens, collected since collect's second run records every kernel's "
        "launch alone (one pass, which the peer joins) and puts NCCL's kernels back between the "
        "profiled ones: the all-reduces between the forward's layers read as a tensor-parallel "
        "rank, the widths said to be the rank's shard's. Claimed at capture with the shard's "
        "fields not determined (mode, dtype, n_layers read); revised after capture, not blind: "
        "the shard reads as the truth records it, and an assumption names the full model that a "
        "2-way split of an attention spanning d gives (16 heads, 4 K/V heads, d_ff 2816).",
        {**_AS_TRUTH, "parallelism": "tensor"},
        assumes=("2-way tensor parallelism over a model of 16 heads, 4 K/V heads, d_ff 2816",),
    ),
}


def truth_at(truth: dict, path: str) -> dict:
    """The truth of the model at `path` ("" the captured model, "speculative.draft" its draft)."""
    for key in filter(None, path.split(".")):
        truth = truth[key]
    return truth


def broken_claims(claim: LimitClaim, values: dict, truth: dict, assumptions: Sequence[str] = ()) -> list[str]:
    """Where an inference's `values` and `assumptions` break `claim` for a capture with `truth`:
    one line each."""
    broken = [f"no assumption says {text!r}" for text in claim.assumes if not any(text in a for a in assumptions)]
    for name, expected in claim.reads.items():
        want = truth.get(name) if expected == TRUTH else expected
        if values.get(name) != want:
            broken.append(f"{name}: read {values.get(name)!r}, claimed {want!r}")
    for path in claim.neither:
        model = truth_at(truth, path)
        if all(values.get(name) == model[name] for name in ARCHITECTURE):
            broken.append(f"reads as the model at {path or 'the target'!r}, claimed neither")
    return broken
