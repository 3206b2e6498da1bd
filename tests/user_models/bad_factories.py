"""Factories that break lmperf's contract one way each, for the bad-input tests."""

import torch
from torch import nn


def _check_width(width):
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")


def raises(width=-1):
    _check_width(width)
    return nn.Linear(width, width)


def not_a_module():
    return 42


class SumOfEmbeddings(nn.Module):
    """Token ids to one vector per sequence: (batch, width), not logits per position."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)

    def forward(self, token_ids):
        return self.embedding(token_ids).sum(dim=1)


def wrong_output():
    return SumOfEmbeddings()


class BiasedHead(nn.Module):
    """A language model whose output layer has a bias: no fused loss."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.head = nn.Linear(16, 50)

    def forward(self, token_ids):
        return self.head(self.embedding(token_ids))


def biased_head():
    return BiasedHead()


class FailsLate(nn.Module):
    """Runs at short contexts and raises past its table's length, as a model with learned
    positions would."""

    def __init__(self, max_context=16):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.positions = nn.Parameter(torch.zeros(max_context, 16))
        self.head = nn.Linear(16, 50, bias=False)

    def forward(self, token_ids):
        context = token_ids.shape[1]
        assert context <= self.positions.shape[0], f"context {context} is longer than {self.positions.shape[0]}"
        return self.head(self.embedding(token_ids) + self.positions[:context])


def fails_late():
    return FailsLate()
