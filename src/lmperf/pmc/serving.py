"""How a server feeds a model, for the runner's serving targets: requests of different lengths
left-padded into one batch, and a draft model proposing tokens for the target to verify
(speculative decoding, Hugging Face's assisted generate)."""

from __future__ import annotations

from typing import Callable

import torch

PAD_ID = 0
# The candidates a draft proposes before each verifying pass of the target: a constant schedule
# (Hugging Face's default grows and shrinks it with what was accepted).
DRAFT_TOKENS = 2


def left_padded(tokens: torch.Tensor, lengths: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input ids, attention mask, position ids) of requests of `lengths` tokens left-padded to the
    batch's length, as a server batches prompts: request i fills the last lengths[i] positions,
    and its positions count from its own first token."""
    length = tokens.shape[1]
    starts = length - torch.tensor(lengths, device=tokens.device)[:, None]  # (B, 1)
    real = torch.arange(length, device=tokens.device) >= starts  # (B, T)
    mask = real.long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return tokens.masked_fill(~real, PAD_ID), mask, positions


def padding_truth(batch: int, padded_len: int, lengths: tuple[int, ...]) -> dict:
    return dict(
        side="left",
        padded_len=padded_len,
        request_lengths=list(lengths),
        tokens_run=batch * padded_len,
        tokens_real=sum(lengths),
    )


def as_draft(model: torch.nn.Module) -> torch.nn.Module:
    """`model` set to propose DRAFT_TOKENS candidates every round, whatever it believes."""
    config = model.generation_config
    config.num_assistant_tokens = DRAFT_TOKENS
    config.num_assistant_tokens_schedule = "constant"
    # a draft of random weights is never confident: a threshold would stop it after one token
    config.assistant_confidence_threshold = 0.0
    return model


def _forward_passes(model: torch.nn.Module) -> list[list[int]]:
    """A list that records the (batch, tokens) of each forward pass of `model` from now on."""
    passes: list[list[int]] = []

    def record(module, args, kwargs) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            passes.append(list(ids.shape))

    model.register_forward_pre_hook(record, with_kwargs=True)
    return passes


def with_passes_recorded(step: Callable[[], None], models: dict, truth: dict) -> Callable[[], None]:
    """The step, recording under truth[name] the (batch, tokens) of each forward pass that each
    model of `models` runs in it: the last call's, so the captured step's."""
    recorders = {name: _forward_passes(model) for name, model in models.items()}

    def recorded() -> None:
        for passes in recorders.values():
            passes.clear()
        step()
        truth.update(recorders)

    return recorded
