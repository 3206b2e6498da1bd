"""A Transformer language model written from scratch, the way a course's reference solution is:
its own Linear, Embedding, RMSNorm, rotary embedding, softmax, causal attention by einsum, SwiGLU
and pre-norm blocks, nothing from torch.nn but Module, Parameter and ModuleList. lmperf's tests
and the GPU script run it through `--module tests/user_models/scratch_lm.py:build`.
"""

import math

import torch
from torch import nn


class Linear(nn.Module):
    """y = x W^T, W of shape (d_out, d_in), no bias."""

    def __init__(self, d_in, d_out):
        super().__init__()
        std = math.sqrt(2.0 / (d_in + d_out))
        self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(d_out, d_in), std=std, a=-3 * std, b=3 * std))

    def forward(self, x):
        return torch.einsum("...i,oi->...o", x, self.weight)


class Embedding(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.weight = nn.Parameter(nn.init.trunc_normal_(torch.empty(vocab_size, d_model), std=1.0, a=-3.0, b=3.0))

    def forward(self, token_ids):
        return self.weight[token_ids]


class RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        in_dtype = x.dtype
        x = x.float()
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x / rms * self.gain).to(in_dtype)


class RotaryEmbedding(nn.Module):
    """Rotates each (even, odd) channel pair of a head by an angle that grows with position."""

    def __init__(self, head_dim, max_seq_len, theta=10000.0):
        super().__init__()
        freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
        angles = torch.arange(max_seq_len).float()[:, None] * freqs[None, :]  # (max_seq_len, head_dim/2)
        self.register_buffer("cos", torch.cos(angles), persistent=False)
        self.register_buffer("sin", torch.sin(angles), persistent=False)

    def forward(self, x, positions):  # x: (batch, heads, seq, head_dim)
        cos, sin = self.cos[positions], self.sin[positions]
        x_even, x_odd = x[..., 0::2], x[..., 1::2]
        rotated_even = x_even * cos - x_odd * sin
        rotated_odd = x_even * sin + x_odd * cos
        return torch.stack([rotated_even, rotated_odd], dim=-1).flatten(-2)


def softmax(x, dim):
    shifted = x - x.max(dim=dim, keepdim=True).values
    exps = torch.exp(shifted)
    return exps / exps.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(q, k, v, mask):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.einsum("...qk,...kd->...qd", softmax(scores, dim=-1), v)


class CausalMultiHeadSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_seq_len, rope_theta):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = Linear(d_model, d_model)
        self.k_proj = Linear(d_model, d_model)
        self.v_proj = Linear(d_model, d_model)
        self.output_proj = Linear(d_model, d_model)
        self.rope = RotaryEmbedding(d_model // num_heads, max_seq_len, rope_theta)

    def forward(self, x):
        batch, seq, d_model = x.shape
        head_dim = d_model // self.num_heads

        def split_heads(t):
            return t.view(batch, seq, self.num_heads, head_dim).transpose(1, 2)

        q, k, v = split_heads(self.q_proj(x)), split_heads(self.k_proj(x)), split_heads(self.v_proj(x))
        positions = torch.arange(seq, device=x.device)
        q, k = self.rope(q, positions), self.rope(k, positions)
        mask = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=x.device))
        out = scaled_dot_product_attention(q, k, v, mask)
        return self.output_proj(out.transpose(1, 2).reshape(batch, seq, d_model))


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = Linear(d_model, d_ff)
        self.w2 = Linear(d_ff, d_model)
        self.w3 = Linear(d_model, d_ff)

    def forward(self, x):
        gate = self.w1(x)
        return self.w2(gate * torch.sigmoid(gate) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, max_seq_len, rope_theta):
        super().__init__()
        self.ln1 = RMSNorm(d_model)
        self.attn = CausalMultiHeadSelfAttention(d_model, num_heads, max_seq_len, rope_theta)
        self.ln2 = RMSNorm(d_model)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta=10000.0):
        super().__init__()
        self.token_embeddings = Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            TransformerBlock(d_model, num_heads, d_ff, context_length, rope_theta) for _ in range(num_layers)
        )
        self.ln_final = RMSNorm(d_model)
        self.lm_head = Linear(d_model, vocab_size)

    def forward(self, token_ids):
        x = self.token_embeddings(token_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))


def build(vocab_size=256, context_length=64, d_model=32, num_layers=2, num_heads=4, d_ff=64):
    return TransformerLM(vocab_size, context_length, d_model, num_layers, num_heads, d_ff)
