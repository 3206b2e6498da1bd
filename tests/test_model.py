import pytest
import torch

from lmperf.errors import UsageError
from lmperf.model import PRESETS, TransformerLM, parameter_count, preset
from lmperf.model.transformer import lm_loss


def test_logits_shape_for_odd_lengths():
    config = preset("tiny")
    model = TransformerLM(config)
    tokens = torch.randint(0, config.vocab_size, (3, 37))
    assert model(tokens).shape == (3, 37, config.vocab_size)


@pytest.mark.parametrize("name", list(PRESETS))
def test_parameter_count_matches_closed_form(name):
    config = preset(name)
    with torch.device("meta"):  # no memory: the 2.7B preset has 3.4e9 parameters
        model = TransformerLM(config)
    d, f, L, V = config.d_model, config.d_ff, config.n_layers, config.vocab_size
    closed_form = 2 * V * d + L * (4 * d * d + 3 * d * f + 2 * d) + d
    assert sum(p.numel() for p in model.parameters()) == closed_form
    assert parameter_count(config)["total"] == closed_form


def test_loss_falls_when_overfitting_one_batch():
    torch.manual_seed(0)
    config = preset("tiny")
    model = TransformerLM(config)
    data = torch.randint(0, config.vocab_size, (2, 33))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = lm_loss(model(data[:, :-1]), data[:, 1:])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


def test_naive_and_sdpa_models_agree():
    torch.manual_seed(0)
    tokens = torch.randint(0, 512, (2, 29))
    outputs = {}
    for impl in ("naive", "sdpa"):
        torch.manual_seed(1)
        model = TransformerLM(preset("tiny", attention=impl))
        loss = lm_loss(model(tokens), tokens)
        loss.backward()
        outputs[impl] = (loss.detach(), model.blocks[0].attn.qkv_proj.weight.grad)
    torch.testing.assert_close(outputs["naive"][0], outputs["sdpa"][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outputs["naive"][1], outputs["sdpa"][1], rtol=1e-4, atol=1e-6)


def test_causality_future_tokens_do_not_change_past_logits():
    torch.manual_seed(0)
    model = TransformerLM(preset("tiny"))
    tokens = torch.randint(0, 512, (1, 20))
    changed = tokens.clone()
    changed[0, 10:] = (changed[0, 10:] + 1) % 512
    torch.testing.assert_close(model(tokens)[:, :10], model(changed)[:, :10])


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(d_model=100, n_heads=3), "not divisible"),
        (dict(d_model=60, n_heads=20), "odd"),
        (dict(head_dim=7), "head dimension 7 is odd"),
        (dict(head_dim=0), "head_dim must be positive, got 0"),
        (dict(head_dim=-16), "head_dim must be positive, got -16"),
        (dict(n_layers=0), "positive"),
        (dict(d_ff=-4), "positive"),
        (dict(attention="magic"), "unknown attention"),
    ],
)
def test_impossible_configs_are_usage_errors(overrides, message):
    with pytest.raises(UsageError, match=message):
        preset("tiny", **overrides)


def test_an_explicit_head_dim_needs_no_width_divisible_by_the_heads():
    config = preset("tiny", d_model=100, n_heads=3, n_kv_heads=1, head_dim=32)
    assert (config.attention_width, config.kv_width) == (96, 32)


def test_a_derived_head_dim_follows_new_widths_and_an_own_one_stays():
    assert preset("tiny").with_(d_model=128).head_dim == 32  # 128 / 4 heads
    assert preset("tiny", head_dim=16).with_(n_heads=8).head_dim == 8  # 16 is tiny's 64 / 4: derived
    assert preset("tiny", head_dim=32).with_(d_model=128, n_heads=8).head_dim == 32
    assert preset("tiny", head_dim=32).with_(head_dim=None).head_dim == 16


def test_a_model_without_head_dim_or_qk_norm_writes_the_shape_it_always_wrote():
    """The shape in a row (and so the resume key) of a model that uses neither names neither:
    tiny's, as rows on disk have it, also when its derived head_dim is given."""
    from lmperf.model.step import StepConfig

    written = dict(
        d_model=64,
        d_ff=256,
        n_layers=2,
        n_heads=4,
        vocab_size=512,
        max_seq_len=1024,
        rope_theta=10000.0,
        norm_eps=1e-5,
        n_kv_heads=4,
        tie_embeddings=False,
        mlp="swiglu",
    )
    assert StepConfig("tiny", 16, "forward").to_dict()["model"] == written
    assert StepConfig("tiny", 16, "forward", model=preset("tiny", head_dim=16)).to_dict()["model"] == written
    wide = preset("tiny", head_dim=32, qk_norm=True)
    shape = StepConfig("tiny", 16, "forward", model=wide).to_dict()["model"]
    assert shape == {**written, "head_dim": 32, "qk_norm": True}
    assert StepConfig.from_dict({"preset": "tiny", "seq_len": 16, "mode": "forward", "model": shape}).model == wide


def test_the_qk_norm_region_reaches_the_profiler_and_the_flop_model():
    from torch.profiler import ProfilerActivity, profile

    from lmperf.analysis.flops import region_flops

    config = preset("tiny", head_dim=32, qk_norm=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        TransformerLM(config)(torch.randint(0, 512, (1, 8)))
    assert "qk_norm" in {event.name for event in prof.events()}
    # per layer 4 FLOPs for each of q's and k's 8 x (128 + 128) elements, two layers, forward only
    assert region_flops(config, 1, 8, "forward")["qk_norm"] == 2 * 4 * 8 * (128 + 128)
    assert "qk_norm" not in region_flops(preset("tiny"), 1, 8, "forward")


def test_unknown_preset_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown preset"):
        preset("gigantic")


def test_regions_reach_the_profiler_only_when_it_listens():
    from torch.profiler import ProfilerActivity, profile

    model = TransformerLM(preset("tiny"))
    tokens = torch.randint(0, 512, (1, 8))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(tokens)
    names = {event.name for event in prof.events()}
    assert {"qkv_proj", "attn_scores", "attn_softmax", "ffn", "lm_head"} <= names
