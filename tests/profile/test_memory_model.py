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
    #   bf16 attention vectors and SwiGLU, probabilities in fp32 plus a bf16 copy
    bf16 = 4 * 16 * 64 * 4 + 2 * 16 * 4 + 3 * 16 * 64 * 2 + 4 * 16 * 64 * 2 + 4 * 16 * 256 * 2 + 512 * 6 + 64
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


def test_fp32_activations_equal_what_autograd_saves():
    """Sum the distinct storages autograd saves in a real forward (weights and index tensors
    left out): they are the model's activations, to the byte, plus the loss's 4-byte scalar."""
    config = preset("tiny")
    torch.manual_seed(0)
    model = TransformerLM(config)
    data = torch.randint(0, config.vocab_size, (2, 9))
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in own and tensor.dtype != torch.int64:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        lm_loss(model(data[:, :-1]), data[:, 1:])
    analytic = memory_model(config, 2, 8, "fp32")
    assert sum(saved.values()) - (analytic.activations + analytic.head_activations) == 4
