"""The model gives the same loss and gradients with every attention implementation (CPU ones here;
triton in interpreted_triton_cases.py, and on a GPU in test_attention_gpu.py)."""

import pytest
import torch

from attention_reference import model_loss_and_grads
from lmperf.attention import IMPLEMENTATIONS, attention
from lmperf.errors import UsageError


@pytest.mark.parametrize("impl", ["sdpa", "torch"])
def test_model_matches_naive_attention(impl):
    loss, grads = model_loss_and_grads(impl)
    expected_loss, expected_grads = model_loss_and_grads("naive")
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=1e-5)
    for grad, expected in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected, rtol=1e-4, atol=1e-5)


def test_dispatch_knows_every_implementation_and_rejects_others():
    assert set(IMPLEMENTATIONS) == {"naive", "sdpa", "torch", "triton"}
    q = torch.randn(1, 2, 8, 16)
    torch.testing.assert_close(attention(q, q, q, True, "torch"), attention(q, q, q, True, "naive"))
    with pytest.raises(UsageError):
        attention(q, q, q, impl="flash3")


def test_triton_on_cpu_without_interpreter_is_a_usage_error():
    q = torch.randn(1, 2, 8, 16)
    with pytest.raises(UsageError, match="CUDA"):
        attention(q, q, q, impl="triton")


def test_a_compiled_block_traces_flash_attention_as_one_graph(monkeypatch):
    # The attention modules import on first use; an import inside the compiled block split it in
    # two graphs around attention (benchmarks/attention/model-profile-h100-e906d3b). The block
    # imports when built, so dynamo sees one graph. "torch" shares "triton"'s dispatch and runs
    # on a CPU. Expected: one graph, no break (what dynamo gives SDPA's block).
    import lmperf.attention as attention_module
    from lmperf.model.config import preset
    from lmperf.model.transformer import Block

    monkeypatch.setattr(attention_module, "_LOADED", {})  # as in a fresh process
    torch._dynamo.reset()
    config = preset("tiny", attention="torch")
    block = Block(config)
    explanation = torch._dynamo.explain(block)(torch.randn(2, 16, config.d_model))
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1
