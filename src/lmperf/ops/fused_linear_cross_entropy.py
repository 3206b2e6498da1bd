"""Cross-entropy of a linear layer's output without ever holding the (N, V) logits.

`fused_linear_cross_entropy(hidden, weight, targets)` equals
`F.cross_entropy(hidden @ weight.T, targets, ignore_index=-100)`. The tokens are taken in
chunks: each chunk's logits (chunk, V) are formed by one matmul, reduced to the loss in fp32 and
turned at once into the chunk's gradient of the logits (softmax - one-hot), which two more
matmuls carry to dhidden and dweight; then the chunk's logits are dropped, before the next
chunk's are formed. So the forward does the backward's work too (the Liger-Kernel approach), and
the backward only scales the stored gradients by the incoming one.

Its working set, beside the dhidden and fp32 dweight it keeps for the backward, is one (chunk, V)
block instead of the (N, V) logits, log-probabilities and their gradient (at N = 32k tokens and
V = 152k in bf16, 0.5 GB instead of ~60 GB): on CUDA the logits in the inputs' dtype, their
gradient written over them; on a CPU one fp32 (fp64 for fp64 inputs) block that the loss and
gradient are computed in, in place, plus the 16-bit logits it is converted from and the 16-bit
gradient converted back, each alive beside it for one conversion: at most 1.5 fp32 blocks for
16-bit inputs (tests/ops/test_fused_linear_cross_entropy.py measures it op by op).

Per chunk, one cuBLAS matmul forms the logits in the inputs' dtype (bf16 on a GPU, accumulating
in fp32 inside the GEMM). On CUDA a Triton kernel (`cross_entropy_rows_triton`) then reduces each
row to its loss and overwrites the logits by their gradient in one pass, in fp32 arithmetic; on a
CPU (and for fp64) the same arithmetic runs as PyTorch ops on an fp32 copy. Two more matmuls carry
the gradient to dhidden and dweight; dweight accumulates over chunks in fp32 (on CUDA inside the
GEMM, cuBLAS's bf16 x bf16 -> fp32 addmm, so no (V, d) temporary per chunk).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import torch

from lmperf.ops.targets import check_targets
from lmperf.ops.triton_device import takes_triton

IGNORE_INDEX = -100
REDUCTIONS = ("mean", "sum")
# Elements of one chunk's logits: 2**28 is 512 MiB in bf16, 1 GiB as the CPU path's fp32 copy.
CHUNK_ELEMENTS = 2**28


def default_chunk_size(vocab_size: int) -> int:
    return max(1, CHUNK_ELEMENTS // vocab_size)


def triton_rows_kernel(logits: torch.Tensor) -> ModuleType | None:
    """The Triton row kernel's module when it takes these logits, else None (the PyTorch path).

    Imported on first use: Triton comes with CUDA builds of torch, not with CPU ones.
    """
    return importlib.import_module("lmperf.ops.cross_entropy_rows_triton") if takes_triton(logits) else None


def _cross_entropy_rows_torch(
    logits: torch.Tensor, targets: torch.Tensor, scale: float, need_grad: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The Triton row kernel's arithmetic as PyTorch ops, in place over `logits` (a block of the
    caller's own, fp32 or fp64): the summed loss, and the gradient in the same block."""
    valid = targets != IGNORE_INDEX
    safe_targets = torch.where(valid, targets, 0)
    target_logit = logits.gather(1, safe_targets[:, None]).squeeze(1)
    row_max = logits.amax(dim=-1, keepdim=True)
    sums = logits.sub_(row_max).exp_().sum(dim=-1)  # the block now holds exp(x - max)
    lse = row_max.squeeze(1) + sums.log()  # (C,), torch.logsumexp without its temporary block
    loss = ((lse - target_logit) * valid).sum()
    if not need_grad:
        return loss, None
    grad = logits.div_(sums[:, None])  # softmax
    grad.scatter_add_(1, safe_targets[:, None], -torch.ones_like(grad[:, :1]))
    grad.mul_((valid.to(grad.dtype) * scale)[:, None])  # ignored rows contribute nothing
    return loss, grad


def _chunk_loss_and_grad(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    scale: float,
    need_grad: bool,
    accumulate: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Summed loss of one chunk and its gradient of the logits times `scale` (in hidden's dtype)."""
    logits = hidden @ weight.T  # (C, V)
    rows_kernel = triton_rows_kernel(logits)  # None for fp64, whose accumulation stays fp64
    if rows_kernel is not None:  # the gradient overwrites the logits
        losses = rows_kernel.cross_entropy_rows_(logits, targets, scale, IGNORE_INDEX, need_grad)
        return losses.sum(), logits if need_grad else None
    logits = logits.to(accumulate)  # rebound: 16-bit logits are freed once their copy exists
    loss, grad = _cross_entropy_rows_torch(logits, targets, scale, need_grad)
    return loss, None if grad is None else grad.to(hidden.dtype)


def _add_weight_grad(grad_weight: torch.Tensor, grad_logits: torch.Tensor, hidden: torch.Tensor) -> None:
    """grad_weight (V, d, fp32) += grad_logits.T @ hidden, summed in grad_weight's precision."""
    if grad_logits.dtype == grad_weight.dtype:
        grad_weight.addmm_(grad_logits.T, hidden)
    elif grad_weight.is_cuda:  # bf16/fp16 operands, fp32 accumulator read and written by the GEMM
        torch.addmm(grad_weight, grad_logits.T, hidden, out_dtype=grad_weight.dtype, out=grad_weight)
    else:
        grad_weight += (grad_logits.T @ hidden).to(grad_weight.dtype)


class FusedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, reduction, chunk_size):
        n_tokens = hidden.shape[0]
        n_valid = int((targets != IGNORE_INDEX).sum())
        scale = 1.0 / n_valid if reduction == "mean" and n_valid else 1.0
        need_grad = hidden.requires_grad or weight.requires_grad
        accumulate = torch.promote_types(weight.dtype, torch.float32)
        total = torch.zeros((), dtype=accumulate, device=hidden.device)
        grad_hidden = torch.empty_like(hidden) if need_grad else None
        grad_weight = torch.zeros(weight.shape, dtype=accumulate, device=weight.device) if need_grad else None
        for start in range(0, n_tokens, chunk_size):
            rows = slice(start, start + chunk_size)
            loss, grad_logits = _chunk_loss_and_grad(hidden[rows], weight, targets[rows], scale, need_grad, accumulate)
            total += loss
            if need_grad:
                torch.matmul(grad_logits, weight, out=grad_hidden[rows])  # (C, d)
                _add_weight_grad(grad_weight, grad_logits, hidden[rows])  # (V, d), summed over chunks
            del grad_logits  # gone before the next chunk's logits exist, not beside them
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.weight_dtype = weight.dtype
        if reduction == "mean" and not n_valid:  # a mean over no token is 0/0, nan as in F.cross_entropy
            return torch.full_like(total, float("nan"))
        return total * scale

    @staticmethod
    def backward(ctx, grad_output):
        grad_hidden, grad_weight = ctx.saved_tensors
        grad_hidden = grad_hidden * grad_output.to(grad_hidden.dtype)
        grad_weight = (grad_weight * grad_output).to(ctx.weight_dtype)
        return grad_hidden, grad_weight, None, None, None


# torch.compile of a whole model runs the loss eagerly (a graph break): dynamo cannot trace the
# in-place fp32-accumulating addmm of the weight gradient (`out=` with `out_dtype=`), and the
# target check reads values; the chunked loss is one kernel per chunk either way.
@torch.compiler.disable
def fused_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    reduction: str = "mean",
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Cross-entropy of `hidden @ weight.T` against `targets` (ignore_index -100), fp32 result.

    hidden (N, d), weight (V, d), targets (N,) int64, each in [0, V) or -100 (a ValueError
    otherwise, before any kernel runs); a "mean" over targets that are all -100 is nan, as in
    F.cross_entropy. Under autocast both inputs are cast to the
    autocast dtype first (outside the Function, so their gradients flow back through the casts),
    as autocast would cast them for `hidden @ weight.T`.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(f"need hidden (N, d) and weight (V, d), got {tuple(hidden.shape)} and {tuple(weight.shape)}")
    if targets.shape != hidden.shape[:1]:
        raise ValueError(f"targets must be ({hidden.shape[0]},), got {tuple(targets.shape)}")
    check_targets(targets, weight.shape[0], IGNORE_INDEX)
    device_type = hidden.device.type
    if torch.is_autocast_enabled(device_type):
        dtype = torch.get_autocast_dtype(device_type)
        hidden, weight = hidden.to(dtype), weight.to(dtype)
    elif hidden.dtype != weight.dtype:
        hidden = hidden.to(weight.dtype)
    with torch.autocast(device_type, enabled=False):
        return FusedLinearCrossEntropy.apply(
            hidden, weight, targets, reduction, chunk_size or default_chunk_size(weight.shape[0])
        )
