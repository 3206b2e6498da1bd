"""Rank 0 of Megatron-style tensor parallelism: emulated on one GPU, or one of `degree` NCCL ranks.

A rank of degree tp runs every attention and MLP GEMM of the full model sharded: Q, K, V and the
MLP's gate and up projections split by output columns (H/tp query heads, KV/tp K/V heads,
d_ff/tp), the attention output and down projections split by inner rows ((H/tp)·hd and d_ff/tp,
output d). Those are exactly the GEMMs of a model with H/tp heads of the same head_dim, KV/tp K/V
heads, d_ff/tp and the same d_model, which is what runs here; the norms and residual adds keep
the full width, as on every rank. The embedding and the LM head are vocabulary-parallel, as in
Megatron and vLLM: V/tp rows each, the lookup zeroing the token ids of other ranks' rows.

Emulated, one process has no peer, so the all-reduce after each attention and MLP block, the
embedding's all-reduce and the logits' all-gather are left out. With NCCL (`Target.tp_nccl`),
the profiled process is rank 0 and starts the other ranks itself, one GPU each and outside the
profiler, and ncu profiles it alone, NCCL's kernels left out (lmperf.pmc.ncu); the collectives
run as forward hooks on the Hugging Face modules.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Mapping

import torch
import torch.distributed as dist
from torch import nn

from lmperf.pmc.targets import TP_EMULATION, TP_NCCL

SHARDED = ("num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size")
SHARDED_FIELDS = ("n_heads", "n_kv_heads", "d_ff", "vocab_size")  # the same, as truth files name them
RANK_ENV, PORT_ENV = "LMPERF_TP_RANK", "LMPERF_TP_PORT"  # set by rank 0 for the ranks it starts
PEER_TIMEOUT_S = 120  # how long rank 0 waits for its peers to finish the step before stopping them


def shard_fields(fields: dict, degree: int) -> dict:
    """A Llama-family config.json dict of the full model -> rank 0's shard: heads, K/V heads,
    d_ff and vocabulary divided by `degree`, head_dim pinned (the config would otherwise derive
    it from d_model / heads and double it)."""
    heads = fields["num_attention_heads"]
    full = {**fields, "num_key_value_heads": fields.get("num_key_value_heads", heads)}
    full.setdefault("head_dim", fields["hidden_size"] // heads)
    return {**full, **{key: full[key] // degree for key in SHARDED}}


class VocabShardEmbedding(nn.Module):
    """A rank's rows of a vocabulary-parallel embedding, ids start .. start + rows: a token id
    outside them looks up row 0 and is zeroed (an all-reduce then sums every rank's rows)."""

    def __init__(self, embedding: nn.Embedding, start: int = 0) -> None:
        super().__init__()
        self.embedding = embedding
        self.start = start

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        local = ids - self.start
        outside = (local < 0) | (local >= self.embedding.num_embeddings)  # (B, T)
        rows = self.embedding(local.masked_fill(outside, 0))  # (B, T, d)
        return rows.masked_fill(outside.unsqueeze(-1), 0.0)


def tp_rank() -> int:
    """This process's rank: 0 unless rank 0 started it as a peer."""
    return int(os.environ.get(RANK_ENV, "0"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _profiler_variable(name: str, value: str) -> bool:
    """Whether an environment variable is one an Nsight tool sets to inject itself into a process
    (NV_NSIGHT_INJECTION_*, NVTX_INJECTION64_PATH, NV_CUDA_START_SUSPENDED, ...)."""
    return (
        name.startswith("NV_")
        or "INJECTION" in name
        or "NSIGHT" in name.upper()
        or (name == "LD_PRELOAD" and "nsight" in value.lower())
    )


def unprofiled(environment: Mapping[str, str]) -> dict[str, str]:
    """`environment` without the profiler's variables. A peer that inherits them from a rank ncu
    profiles with `--target-processes application-only` (NV_CUDA_START_SUSPENDED among them)
    never gets past NCCL's init, nor do the other ranks; without them the ranks run."""
    return {name: value for name, value in environment.items() if not _profiler_variable(name, value)}


def join_ranks(target_json: str, degree: int, program: list[str]) -> list[subprocess.Popen]:
    """Join the NCCL group of `degree` ranks, one GPU each: rank 0 (the process ncu profiles)
    starts ranks 1.. as `program` + [a spec file of the same target] and returns them; a peer
    returns []. The peers run unprofiled, so their collectives meet rank 0's."""
    if torch.cuda.device_count() < degree:
        raise RuntimeError(f"NCCL tensor parallelism of degree {degree} needs {degree} GPUs")
    rank = tp_rank()
    peers = []
    if rank == 0:
        port = os.environ.get(PORT_ENV) or str(_free_port())
        spec = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"lmperf_tp_{port}.json")
        with open(spec, "w", encoding="utf-8") as f:
            f.write(target_json)
        for peer in range(1, degree):
            env = {**unprofiled(os.environ), RANK_ENV: str(peer), PORT_ENV: port}
            peers.append(subprocess.Popen([*program, spec], env=env))
        os.environ[PORT_ENV] = port
    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://127.0.0.1:{os.environ[PORT_ENV]}",
        rank=rank,
        world_size=degree,
        device_id=torch.device("cuda", rank),
    )
    return peers


def leave_ranks(peers: list[subprocess.Popen]) -> None:
    """Leave the group; rank 0 waits for its peers (and stops one that hangs), then removes the
    spec file it started them with (their last argument)."""
    dist.destroy_process_group()
    for peer in peers:
        try:
            peer.wait(timeout=PEER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            peer.kill()
            peer.wait()
    for spec in {peer.args[-1] for peer in peers}:
        with contextlib.suppress(FileNotFoundError):
            os.remove(spec)
    if any(peer.returncode for peer in peers):
        raise RuntimeError(f"a tensor-parallel peer failed: exit {[peer.returncode for peer in peers]}")


def add_collectives(model: nn.Module, layers: nn.ModuleList) -> None:
    """Megatron's communication as forward hooks on a Hugging Face Llama-family shard: the
    embedding's rows and each attention and MLP block's partial outputs summed over the ranks
    (all-reduce), the logits' vocabulary slices gathered (all-gather)."""

    def summed(module, args, output):
        dist.all_reduce(output[0] if isinstance(output, tuple) else output)
        return output

    def gathered(module, args, logits):
        parts = [torch.empty_like(logits) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, logits.contiguous())
        return torch.cat(parts, dim=-1)

    model.get_input_embeddings().register_forward_hook(summed)
    for layer in layers:
        layer.self_attn.register_forward_hook(summed)
        layer.mlp.register_forward_hook(summed)
    model.get_output_embeddings().register_forward_hook(gathered)


def shard_truth(full_shape: dict, degree: int, nccl: bool = False) -> dict:
    """What the truth file says of the parallelism: the degree, the rank, how it ran, and the
    full model the shard belongs to."""
    return dict(degree=degree, rank=tp_rank(), how=TP_NCCL if nccl else TP_EMULATION, full_model=full_shape)
