"""The process ncu launches: `python -m lmperf.pmc.runner SPEC.json [TRUTH.json]`.

Builds the model a `Target` names, runs one warm-up step, then one step inside the NVTX range
`targets.RANGE`, and writes the true configuration (counted from the instantiated modules, so
it is what ran, not what a config file claims) to TRUTH.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

import torch

from lmperf.dtypes import torch_dtype
from lmperf.model import preset
from lmperf.model.hf_config import FAMILIES, from_fields
from lmperf.model.step import ModelStep, StepConfig
from lmperf.pmc.quantized import DESCRIPTIONS, quantize_linears
from lmperf.pmc.serving import DRAFT_TOKENS, PAD_ID, as_draft, left_padded, padding_truth, with_passes_recorded
from lmperf.pmc.targets import RANGE, Target
from lmperf.pmc.tensor_parallel import (
    SHARDED_FIELDS,
    VocabShardEmbedding,
    add_collectives,
    join_ranks,
    leave_ranks,
    shard_fields,
    shard_truth,
    tp_rank,
)

WARMUP_COMPILED = 3


def _preset_step(target: Target, device: torch.device) -> tuple[Callable[[], None], dict]:
    config = StepConfig(
        target.preset,
        target.seq_len,
        target.mode,
        target.dtype,
        "eager",
        target.attention,
        target.batch,
        model=preset(target.preset, **target.overrides),
        loss=target.loss,
    )
    step = ModelStep(config, device)
    if target.compile:
        step.model.compile(mode=target.compile)
    model_config = config.model_config()
    truth = dict(
        family="lmperf",
        n_layers=model_config.n_layers,
        d_model=model_config.d_model,
        n_heads=model_config.n_heads,
        n_kv_heads=model_config.n_kv_heads,
        head_dim=model_config.head_dim,
        d_ff=model_config.d_ff,
        mlp="gated" if model_config.mlp == "swiglu" else "gelu",
        vocab_size=model_config.vocab_size,
        tied_embeddings=model_config.tie_embeddings,
        position_table=False,
    )
    truth.update(_param_counts(step.model, step.model.blocks))
    return (lambda: step.run(target.mode)), truth


def _hf_model(target: Target):
    """The config and model that run: for a tensor-parallel target, rank 0's shard."""
    if target.sdpa_backend == "efficient_attention":
        _repeat_kv_for_sdpa()
    if target.kernels == "liger":
        _patch_with_liger(target.hf_config["model_type"])
    fields = target.hf_config
    if target.tensor_parallel > 1:
        fields = shard_fields(fields, target.tensor_parallel)
    config, model = _hf_build(fields, target.attention)
    if target.tensor_parallel > 1:
        start = tp_rank() * config.vocab_size  # this rank's first row of the whole vocabulary
        model.set_input_embeddings(VocabShardEmbedding(model.get_input_embeddings(), start))
    return config, model


def _hf_build(fields: dict, attention: str, device: torch.device | None = None):
    """A Hugging Face config and its model with random weights (on `device`, "meta" to count
    parameters without allocating them)."""
    from transformers import AutoConfig, AutoModelForCausalLM  # the optional `hf` extra

    fields = dict(fields)
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    impl = "eager" if attention == "naive" else "sdpa"  # Hugging Face's word for naive
    with device or torch.device("cpu"):
        return config, AutoModelForCausalLM.from_config(config, attn_implementation=impl)


def _patch_with_liger(family: str) -> None:
    """Liger-Kernel's kernels in place of the family's modules (they patch the classes, so before
    the model is built): RMSNorm, SwiGLU MLP, rotary, and the fused linear cross-entropy that a
    training step's loss runs instead of logits and a cross-entropy."""
    import liger_kernel.transformers as liger  # not a dependency of lmperf: the capture's program

    patch = getattr(liger, f"apply_liger_kernel_to_{family}")
    patch(rope=True, rms_norm=True, swiglu=True, cross_entropy=False, fused_linear_cross_entropy=True)


def _repeat_kv_for_sdpa() -> None:
    """Hugging Face hands GQA to SDPA as `enable_gqa`, which the memory-efficient backend cannot
    run ("No available kernel"); make it repeat K/V to every head first, as it does itself
    whenever an attention mask is passed."""
    from transformers.integrations import sdpa_attention

    sdpa_attention.use_gqa_in_sdpa = lambda *args, **kwargs: False


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The decoder blocks: the module list that holds the most parameters."""
    return max(
        (m for m in model.modules() if isinstance(m, torch.nn.ModuleList)),
        key=lambda m: sum(p.numel() for p in m.parameters()),
    )


def _hf_truth(config, model) -> dict:
    layers = decoder_layers(model)
    truth = dict(
        family=config.model_type,
        **_hf_shape(config),
        mlp="gated" if any("gate_proj" in name for name, _ in layers[0].named_modules()) else "gelu",
        position_table=config.model_type in ("gpt2", "opt"),
    )
    truth.update(_param_counts(model, layers))
    return truth


def _hf_shape(config) -> dict:
    """The shape fields of a Hugging Face config: through lmperf's reader for the families it
    maps, else from the Llama-style keys as the model reads them (head_dim, where the config
    names one, need not be hidden_size / heads)."""
    if config.model_type in FAMILIES:
        shape = from_fields(config.to_dict()).config
        return dict(
            n_layers=shape.n_layers,
            d_model=shape.d_model,
            n_heads=shape.n_heads,
            n_kv_heads=shape.n_kv_heads,
            head_dim=shape.head_dim,
            d_ff=shape.d_ff,
            vocab_size=shape.vocab_size,
            tied_embeddings=shape.tie_embeddings,
        )
    return dict(
        n_layers=config.num_hidden_layers,
        d_model=config.hidden_size,
        n_heads=config.num_attention_heads,
        n_kv_heads=config.num_key_value_heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
        d_ff=config.intermediate_size,
        vocab_size=config.vocab_size,
        tied_embeddings=bool(config.tie_word_embeddings),
    )


def _rank_truth(target: Target, shard: torch.nn.Module) -> dict:
    """A tensor-parallel rank's truth: the full model's shape (counted on the meta device) with
    the sharded sizes divided by the degree, the parameters the shard's modules hold, and the
    full model under `tp_rank` (`tensor_parallel` holds the degree, as for every target)."""
    _, full = _hf_build(target.hf_config, target.attention, torch.device("meta"))
    whole, degree = _hf_truth(full.config, full), target.tensor_parallel
    truth = {**whole, **{name: whole[name] // degree for name in SHARDED_FIELDS}}
    truth.update(_param_counts(shard, decoder_layers(shard)), tp_rank=shard_truth(whole, degree, target.tp_nccl))
    return truth


def _generate_step(
    model, tokens: torch.Tensor, mask: torch.Tensor, new_tokens: int, static_cache: bool, **assisted
) -> Callable[[], None]:
    """Greedy generate with the KV cache: one prefill over the prompt, then new_tokens - 1
    decode steps (the prefill yields the first new token); no early stop at an end token. A
    static cache makes Hugging Face compile the decode step (CUDA graphs replayed). `assisted`:
    `assistant_model=draft` for speculative decoding."""
    cache = dict(cache_implementation="static") if static_cache else {}

    def step() -> None:
        with torch.no_grad():
            model.generate(
                input_ids=tokens,
                attention_mask=mask,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                use_cache=True,
                pad_token_id=PAD_ID,
                **cache,
                **assisted,
            )

    return step


def _hf_step(target: Target, device: torch.device) -> tuple[Callable[[], None], dict]:
    config, model = _hf_model(target)
    truth = _hf_truth(config, model) if target.tensor_parallel == 1 else _rank_truth(target, model)
    dtype = torch_dtype(target.dtype)
    # a tensor-parallel rank's ids span the whole vocabulary, of which it holds the first rows
    vocab = config.vocab_size * target.tensor_parallel
    tokens = torch.randint(0, vocab, (target.batch, target.seq_len), device=device)
    inputs = dict(input_ids=tokens)
    if target.request_lengths:
        tokens, mask, positions = left_padded(tokens, target.request_lengths)
        inputs = dict(input_ids=tokens, attention_mask=mask, position_ids=positions)
        truth["padding"] = padding_truth(target.batch, target.seq_len, target.request_lengths)
    if target.mode == "generate":
        return _hf_generate(target, model.to(device=device, dtype=dtype).eval(), inputs, truth)
    if target.mode == "forward":
        model = model.to(device=device, dtype=dtype).eval()
        if target.tp_nccl:
            add_collectives(model, decoder_layers(model))
        if target.quantize:
            linears = quantize_linears(decoder_layers(model), target.quantize)
            truth["quantization"] = dict(
                scheme=target.quantize, how=DESCRIPTIONS[target.quantize], linears=len(linears)
            )
        if target.compile:
            model.compile(mode=target.compile)

        def step() -> None:
            with torch.no_grad():
                model(**inputs)

        return step, truth
    model = model.to(device).train()
    if target.compile:
        model.compile(mode=target.compile)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    mixed = target.dtype != "fp32"  # mixed-precision training: fp32 weights, autocast matmuls

    def train_step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=mixed):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()

    return train_step, truth


def _hf_generate(target: Target, model, inputs: dict, truth: dict) -> tuple[Callable[[], None], dict]:
    """Greedy generate, or with a draft model proposing tokens (speculative decoding)."""
    tokens = inputs["input_ids"]
    mask = inputs.get("attention_mask", torch.ones_like(tokens))
    truth.update(prompt_len=target.seq_len, new_tokens=target.new_tokens, decode_steps=target.new_tokens - 1)
    if target.draft_config is None:
        return _generate_step(model, tokens, mask, target.new_tokens, target.static_cache), truth
    config, draft = _hf_build(target.draft_config, target.attention)
    truth["speculative"] = dict(draft=_hf_truth(config, draft), draft_tokens=DRAFT_TOKENS)
    truth["decode_steps"] = None  # the target verifies several tokens a pass: its passes say how many
    draft = as_draft(draft.to(device=tokens.device, dtype=model.dtype).eval())
    step = _generate_step(model, tokens, mask, target.new_tokens, False, assistant_model=draft)
    models = dict(target_passes=model, draft_passes=draft)
    return with_passes_recorded(step, models, truth["speculative"]), truth


def _param_counts(model: torch.nn.Module, blocks: torch.nn.Module) -> dict:
    return dict(
        params_blocks=sum(p.numel() for p in blocks.parameters()),
        params_total=sum(p.numel() for p in model.parameters()),  # tied weights counted once
    )


def _pinned_backend(step: Callable[[], None], backend: str | None) -> Callable[[], None]:
    """The step with SDPA restricted to one backend (an error if that backend cannot run it)."""
    if backend is None:
        return step
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def pinned() -> None:
        with sdpa_kernel([getattr(SDPBackend, backend.upper())]):
            step()

    return pinned


def build_step(target: Target, device: torch.device) -> tuple[Callable[[], None], dict]:
    """The step a target runs, on `device`, and its true configuration so far (a step of a
    speculative target records its passes into it when called)."""
    build = _preset_step if target.preset is not None else _hf_step
    return build(target, device)


def run_target(target: Target) -> dict:
    """Warm up, then run one step inside the NVTX range; returns the true configuration."""
    peers = []
    if target.validate().tp_nccl:  # the peers run this module on the same target
        peers = join_ranks(target.to_json(), target.tensor_parallel, [sys.executable, "-m", "lmperf.pmc.runner"])
    device = torch.device("cuda")  # a rank's own GPU once join_ranks has set it
    torch.manual_seed(0)  # every rank the same tokens
    step, truth = build_step(target, device)
    step = _pinned_backend(step, target.sdpa_backend)
    # Warm-up outside the range; a compiled step needs more: the first compiles, and CUDA graphs
    # are recorded on a later call and replayed only after that.
    for _ in range(WARMUP_COMPILED if target.compile or target.static_cache else 1):
        step()
    torch.cuda.synchronize()
    # A start/end range, not push/pop: push/pop ranges belong to one thread, and autograd runs
    # the backward pass on its own thread, whose kernels a push/pop range would miss.
    range_id = torch.cuda.nvtx.range_start(RANGE)
    step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_end(range_id)
    if target.tp_nccl:
        leave_ranks(peers)
    truth.update(
        batch=target.batch,
        seq_len=target.seq_len,
        mode=target.mode.replace("-", "_"),
        dtype=target.dtype,
        attention=target.attention,
        sdpa_backend=target.sdpa_backend,
        compile=target.compile,
        kernels=target.kernels,
        loss=target.loss,
        static_cache=target.static_cache,
        quantize=target.quantize,
        tensor_parallel=target.tensor_parallel,
        tp_nccl=target.tp_nccl,
    )
    return truth


def main(argv: list[str]) -> None:
    target = Target(**json.loads(Path(argv[0]).read_text()))
    truth = run_target(target)
    if len(argv) > 1:
        Path(argv[1]).write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
