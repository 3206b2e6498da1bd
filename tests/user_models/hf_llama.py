"""A Hugging Face Llama with random weights, built from a config (no download), for
`--module tests/user_models/hf_llama.py:build`. The defaults are a ~0.85B-parameter model
(TinyLlama's widths at 16 layers); the tests pass tiny ones in --module-args."""


def build(
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=4096,
    attn_implementation="sdpa",
):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=max_position_embeddings,
        use_cache=False,  # a training step keeps no key/value cache
        attn_implementation=attn_implementation,
    )
    return LlamaForCausalLM(config)
