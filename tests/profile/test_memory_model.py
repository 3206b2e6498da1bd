"""The analytic memory model against hand-computed values and against autograd's saved tensors."""

import pytest
import torch

from lmperf.analysis.memory import memory_model
from lmperf.errors import UsageError
from lmperf.model import TransformerLM, preset
from lmperf.model.transformer import lm_loss

# tiny: d=64, d_ff=256, 2 layers, 4 heads, vocab 512. Batch 2, context 8: N=16 tokens,
# S = 2·4·8·8 = 512 attention entries.
TINY_PARAMS = 512 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 256 + 2 * 64) + 64 + 64 * 512  # 196,928


def test_parameters_gradients_and_adamw_state_by_hand():
    model = memory_model(preset("tiny"), 2, 8, "fp32")
    assert TINY_PARAMS == 196_928
    assert model.parameters == model.gradients == 4 * 196_928
    assert model.optimizer_state == 8 * 196_928
    assert model.autocast_weight_copies == 0
    assert model.rotary_tables == 2 * 2 * 1024 * 8 * 4  # layers · (cos, sin) · max_seq_len · hd/2 · fp32
    assert memory_model(preset("tiny"), 2, 8, "bf16").autocast_weight_copies == 2 * (196_928 - 512 * 64 - 5 * 64)


def test_activations_by_hand_fp32_and_bf16():
    # fp32 layer: 6 N·d·4 (residuals, norms) + 2·N·4 (rsqrt) + 4 N·d·4 (q, k, v copy, merged)
    #   + 4 N·d_ff·4 (SwiGLU) + S·4 (probabilities) + 8·8 (mask)
    fp32 = 6 * 16 * 64 * 4 + 2 * 16 * 4 + 4 * 16 * 64 * 4 + 4 * 16 * 256 * 4 + 512 * 4 + 64
    # bf16: fp32 residuals and normalised x, 3 bf16 casts of the norm outputs (which are freed),
    #   bf16 attention vectors and SwiGLU, probabilities in fp32 plus a bf16 copy, and rope's bf16
    #   casts of cos and sin for q and for k (4 tensors of context 8 × head_dim/2 8)
    bf16 = (
        4 * 16 * 64 * 4
        + 2 * 16 * 4
        + 3 * 16 * 64 * 2
        + 4 * 16 * 64 * 2
        + 4 * 16 * 256 * 2
        + 512 * 6
        + 64
        + 4 * 8 * 8 * 2
    )
    assert memory_model(preset("tiny"), 2, 8, "fp32").activations_per_layer == fp32 == 108_736
    assert memory_model(preset("tiny"), 2, 8, "bf16").activations == 2 * bf16
    assert memory_model(preset("tiny"), 2, 8, "fp32").residual_stream_tensor == 16 * 64 * 4


def test_peaks_combine_the_parts():
    model = memory_model(preset("small"), 4, 512, "bf16")
    live = model.autocast_weight_copies + model.activations + model.head_activations + model.logits_working_set
    resident = model.parameters + model.rotary_tables
    assert model.peak("forward") == resident + live
    assert model.peak("train-step") == resident + model.optimizer_state + max(live, model.gradients)
    with pytest.raises(UsageError):
        model.peak("inference")
    with pytest.raises(UsageError):
        memory_model(preset("tiny"), 2, 8, "fp8")


def _saved_bytes(config, precision: str, device: str, seq_len: int = 8) -> int:
    """Bytes of the distinct storages autograd saves in a real forward of batch 2, context
    `seq_len` (parameters, buffers and index tensors left out; under bf16 autocast the weights' bf16
    casts are left out too: the model counts them as autocast_weight_copies)."""
    torch.manual_seed(0)
    with torch.device(device):
        model = TransformerLM(config)
    data = torch.randint(0, config.vocab_size, (2, seq_len + 1), device=device)
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    # A matmul saves its weight's bf16 cast transposed ((d, 3d) for the (3d, d) qkv weight).
    weight_shapes = {
        shape for p in model.parameters() if p.dim() == 2 for shape in (tuple(p.shape), tuple(p.shape)[::-1])
    }
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        is_weight_cast = tensor.dtype == torch.bfloat16 and tuple(tensor.shape) in weight_shapes
        if storage.data_ptr() not in own and tensor.dtype != torch.int64 and not is_weight_cast:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), autocast:
        lm_loss(model(data[:, :-1]), data[:, 1:])
    return sum(saved.values())


@pytest.mark.parametrize(
    "precision, device",
    [
        ("fp32", "cpu"),
        # bf16 needs CUDA's autocast policy (softmax in fp32, then a bf16 copy for PV), which the
        # model follows; CPU autocast keeps softmax in bf16, so a CPU run would not be the same step.
        # On an H100 this check found rope's bf16 casts of cos and sin (1,024 bytes here), which the
        # model then gained.
        pytest.param("bf16", "cuda", marks=pytest.mark.gpu),
    ],
)
def test_activations_equal_what_autograd_saves(precision, device):
    """The measured saved tensors are the model's activations, to the byte, plus the loss's
    4-byte fp32 scalar: an independent check of every term."""
    analytic = memory_model(preset("tiny"), 2, 8, precision)
    assert _saved_bytes(preset("tiny"), precision, device) - (analytic.activations + analytic.head_activations) == 4


@pytest.mark.parametrize(
    "attention, seq_len, precision",
    [
        ("naive", 8, "fp32"),
        ("sdpa", 8, "fp32"),
        ("torch", 128, "fp32"),  # torch: whole tiles
        # SDPA's path has no softmax of its own, the one op whose CPU autocast policy differs from
        # CUDA's, so its bf16 step on a CPU is the CUDA step's
        ("sdpa", 8, "bf16"),
    ],
)
@pytest.mark.parametrize(
    "overrides",
    [
        dict(n_kv_heads=2),
        dict(n_kv_heads=1, tie_embeddings=True),
        dict(n_kv_heads=2, mlp="gelu", vocab_size=300),
        dict(n_kv_heads=2, head_dim=32, qk_norm=True),  # Qwen3-like: 4 heads of 32, 128 wide over d 64
        dict(n_kv_heads=1, head_dim=8, qk_norm=True, tie_embeddings=True),  # 32 wide
        dict(head_dim=32),  # wide, without the q and k norms
        dict(qk_norm=True),
    ],
)
def test_other_shapes_save_what_the_model_says(attention, seq_len, precision, overrides):
    """Grouped-query K/V, tied embeddings, a GELU MLP, heads whose width is not d / heads and the
    per-head q and k norms, against autograd's saved tensors: fused attention saves K and V at
    n_kv_heads, naive attention their repeated copies; the q and k norms keep their fp32 input
    (in fp32 the QKV output itself)."""
    config = preset("tiny", attention=attention, **overrides)
    analytic = memory_model(config, 2, seq_len, precision)
    assert _saved_bytes(config, precision, "cpu", seq_len) - (analytic.activations + analytic.head_activations) == 4


def test_grouped_query_and_tied_embeddings_by_hand():
    """tiny with 1 K/V head (kv width 16), tied, sdpa, batch 2, context 8 (N = 16 tokens)."""
    config = preset("tiny", attention="sdpa", n_kv_heads=1, tie_embeddings=True)
    params = 512 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 16 + 3 * 64 * 256 + 2 * 64) + 64  # no separate LM head
    model = memory_model(config, 2, 8, "bf16")
    assert model.parameters == model.gradients == 4 * params and model.optimizer_state == 8 * params
    # the tied matrix is cast once for the LM head's matmul; the embedding gathers from fp32
    assert model.autocast_weight_copies == 2 * (params - 512 * 64 - 5 * 64 + 64 * 512)
    # fused attention, bf16: q 64, k 16, the QKV output 96, merged heads 64, kernel output 64 (per
    # token, 2 bytes), log-sum-exp 2·4·8 fp32
    attention = (64 + 16 + 96 + 64 + 64) * 16 * 2 + 2 * 4 * 8 * 4
    others = (
        4 * 16 * 64 * 4 + 2 * 16 * 4 + 3 * 16 * 64 * 2 + 4 * 16 * 256 * 2 + 4 * 8 * 8 * 2
    )  # as in the bf16 count above
    assert model.activations_per_layer == attention + others


def test_fp32_sdpa_repeats_grouped_kv_by_hand():
    """tiny with 1 K/V head, sdpa, fp32, batch 2, context 8 (N = 16): no fused SDPA kernel takes
    grouped K/V in fp32, so K and V are repeated to all 4 heads and the copies are what it saves;
    the same model with naive attention or under bf16 keeps K/V at one head."""
    config = preset("tiny", attention="sdpa", n_kv_heads=1)
    fp32, bf16 = memory_model(config, 2, 8, "fp32"), memory_model(config, 2, 8, "bf16")
    # q, repeated k, repeated v, merged heads (64 each per token, 4 bytes); output 64, lse 2·4·8
    attention = 4 * 16 * 64 * 4 + 16 * 64 * 4 + 2 * 4 * 8 * 4
    others = 2 * 16 * 64 * (4 + 4) + 2 * 16 * 4 + 2 * 16 * 64 * 4 + 4 * 16 * 256 * 4  # residuals, norms, MLP
    assert fp32.activations_per_layer == attention + others
    # under bf16: q 64, k 16, the QKV output 96, merged heads 64, output 64 (2 bytes), lse
    bf16_attention = (64 + 16 + 96 + 64 + 64) * 16 * 2 + 2 * 4 * 8 * 4
    ungrouped = memory_model(preset("tiny", attention="sdpa"), 2, 8, "bf16")
    assert bf16.activations_per_layer - bf16_attention == ungrouped.activations_per_layer - (
        (64 + 64 + 192 + 64 + 64) * 16 * 2 + 2 * 4 * 8 * 4
    )


def test_fused_loss_by_hand():
    """tiny, bf16, batch 2, context 8 (N = 16 tokens, V = 512, d = 64): no log-probabilities; one
    (16, 512) bf16 block of logits (the chunk is all 16 tokens), dhidden in bf16, fp32 dweight."""
    eager = memory_model(preset("tiny"), 2, 8, "bf16")
    fused = memory_model(preset("tiny"), 2, 8, "bf16", loss="fused")
    norm = (2 * 64 + 1) * 16 * 4 + 16 * 64 * 2  # last residual, normalised x, rsqrt; the LM head's cast
    assert eager.head_activations == norm + 16 * 512 * 4  # log-probabilities
    assert fused.head_activations == norm + 16 * 64 * 2 + 512 * 64 * 4
    assert fused.logits_working_set == 16 * 512 * 2
    assert eager.logits_working_set == 16 * 512 * (2 + 4 + 4)  # bf16 logits, fp32 copy, log-probabilities


def test_selective_k_lies_between_selective_and_keeping_everything():
    # K = 0 is plain selective checkpointing, K = n_layers keeps every block's activations (and
    # then nothing is recomputed); each kept block adds one block's activations less its saves.
    from lmperf.analysis.memory import memory_model
    from lmperf.model import preset

    config = preset("small")
    run = lambda checkpoint: memory_model(config, 2, 256, "bf16", "bf16", checkpoint)  # noqa: E731
    selective, everything = run("selective"), run("none")
    assert run("selective:0").activations == selective.activations
    assert run(f"selective:{config.n_layers}").activations == everything.activations
    step = run("selective:3").activations - run("selective:2").activations
    per_block_saves = (selective.activations - selective.activations_per_layer) / config.n_layers
    assert step == selective.activations_per_layer - per_block_saves


def test_selective_mm_out_keeps_one_more_model_wide_tensor_per_block():
    # selective-mm-out keeps, besides selective-mm's tensors, the output projection's output:
    # one (batch, context, d_model) bf16 tensor per block, 2 x 8 x 64 x 2 bytes in tiny.
    from lmperf.analysis.memory import memory_model
    from lmperf.model import preset

    config = preset("tiny")
    run = lambda checkpoint: memory_model(config, 2, 8, "bf16", "bf16", checkpoint)  # noqa: E731
    assert run("selective-mm-out").activations - run("selective-mm").activations == config.n_layers * 2 * 8 * 64 * 2
    assert (
        run("selective-mm-out:1").activations - run("selective-mm:1").activations
        == (config.n_layers - 1) * 2 * 8 * 64 * 2
    )
    # counted out block by block: one block keeping the output projection's output, one tensor more
    mixed = run(f"selective-mm-out*1+selective-mm*{config.n_layers - 1}")
    assert mixed.activations - run("selective-mm").activations == 2 * 8 * 64 * 2
