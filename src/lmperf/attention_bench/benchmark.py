"""The attention benchmark: every implementation a user could pick, timed on the same inputs.

Each case (implementation, seq, head_dim, dtype, causal, batch, heads) is timed with
triton.testing.do_bench (median) for the forward, the backward alone and forward+backward, and
becomes one row appended at once to runs/<timestamp>-attention/results.jsonl. An implementation
that runs out of memory is a row with status "oom"; one that PyTorch cannot run for these inputs
(an SDPA backend without fp32, say) is a row with status "unavailable". With rounds > 1 each
point's implementations are timed that many times in turn (`interleaved`), each row naming its
round, since one do_bench median per implementation and point moves by several percent between
identical kernels in one run.
"""

from __future__ import annotations

import gc
import itertools
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F

from lmperf.analysis.flops import attention_kernel_flops
from lmperf.attention.naive import naive_attention
from lmperf.attention_names import check_benchmark_implementation
from lmperf.dtypes import torch_dtype
from lmperf.errors import UsageError
from lmperf.report.environment import environment
from lmperf.report.rows import ResultRow, failure_row
from lmperf.report.rundir import RunDir

TOKENS_PER_BATCH = 16384  # FlashAttention's benchmark shapes: batch = 16k / seq
MODEL_WIDTH = 2048  # ... and heads = 2048 / head_dim
AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]


@dataclass
class AttentionCase:
    impl: str
    seq: int
    head_dim: int
    dtype: str
    causal: bool
    batch: int
    heads: int


@dataclass
class AttentionRow(ResultRow, AttentionCase):
    """status: ok | oom | unavailable (a backend that refuses these inputs) | skipped."""

    fwd_ms: float | None = None
    bwd_ms: float | None = None
    fwd_bwd_ms: float | None = None
    fwd_tflops: float | None = None
    bwd_tflops: float | None = None
    fwd_bwd_tflops: float | None = None
    peak_memory_gb: float | None = None
    round: int = 0


def _sdpa(backend_name: str) -> AttentionFn:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)

    def run(q, k, v, is_causal):
        with sdpa_kernel(backend):  # the backward op follows the forward's choice
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)

    return run


def _flex_compiled() -> AttentionFn:
    """torch.nn.attention.flex_attention compiled; the causal block mask is built once per length."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled = torch.compile(flex_attention, dynamic=False)
    masks = {}

    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx

    def run(q, k, v, is_causal):
        if not is_causal:
            return compiled(q, k, v)
        key = (q.shape[-2], k.shape[-2], q.device)
        if key not in masks:
            masks[key] = create_block_mask(causal, None, None, q.shape[-2], k.shape[-2], device=q.device)
        return compiled(q, k, v, block_mask=masks[key])

    return run


def attention_function(impl: str) -> AttentionFn:
    """The callable a case times; compiled ones are compiled afresh (dynamo is reset)."""
    check_benchmark_implementation(impl)
    if impl.endswith("-compiled"):
        torch._dynamo.reset()  # one compilation per shape without hitting the recompile limit
    if impl == "naive":
        return naive_attention
    if impl == "naive-compiled":
        return torch.compile(naive_attention, dynamic=False)
    if impl.startswith("sdpa-"):  # sdpa-flash: SDPBackend.FLASH_ATTENTION, and so on
        return _sdpa(impl.removeprefix("sdpa-").upper() + "_ATTENTION")
    if impl == "torch-compiled":
        from lmperf.attention.flash_torch import FlashAttention2Torch

        return torch.compile(FlashAttention2Torch.apply, dynamic=False)
    if impl == "flex-compiled":
        return _flex_compiled()
    from lmperf.attention.flash_triton import FlashAttention2Triton

    if impl == "triton-no-gluon":
        return _without_gluon(FlashAttention2Triton.apply)
    # triton: the default backward; triton-<mode>: that backward (flash_triton.BACKWARDS)
    backward = impl.partition("-")[2] or None
    return lambda q, k, v, is_causal: FlashAttention2Triton.apply(q, k, v, is_causal, backward)


def _without_gluon(apply) -> AttentionFn:
    """`apply` with the Gluon kernels switched off while it runs: the portable Triton kernels
    everywhere (the forward decides for the backward run later, FlashAttention2Triton.forward)."""
    from lmperf.attention import dispatch

    def run(q, k, v, is_causal):
        with dispatch.gluon_disabled():
            return apply(q, k, v, is_causal)

    return run


def cases(
    impls: Sequence[str],
    seqs: Sequence[int],
    head_dims: Sequence[int],
    dtypes: Sequence[str],
    causals: Sequence[bool],
    batch: int = 0,
    heads: int = 0,
) -> list[AttentionCase]:
    """The grid, validated up front; batch/heads 0 mean 16k tokens per batch and width 2048."""
    for impl in impls:
        check_benchmark_implementation(impl)
    for dtype in dtypes:
        torch_dtype(dtype)
    if min(seqs) <= 0 or min(head_dims) <= 0 or batch < 0 or heads < 0:
        raise UsageError("sequence lengths and head dims must be positive, batch and heads >= 0")
    return [
        AttentionCase(
            impl,
            seq,
            d,
            dtype,
            causal,
            batch or max(1, TOKENS_PER_BATCH // seq),
            heads or max(1, MODEL_WIDTH // d),
        )
        for dtype, d, causal, seq, impl in itertools.product(dtypes, head_dims, causals, seqs, impls)
    ]


def _inputs(case: AttentionCase, device: str) -> tuple[torch.Tensor, ...]:
    shape = (case.batch, case.heads, case.seq, case.head_dim)
    dtype = torch_dtype(case.dtype)
    return tuple(torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in range(3))


def _time(case: AttentionCase, fn: AttentionFn, device: str, rep_ms: int) -> dict[str, float]:
    from triton.testing import do_bench

    q, k, v = _inputs(case, device)
    bench = lambda f: do_bench(f, warmup=rep_ms // 4, rep=rep_ms, grad_to_none=[q, k, v], return_mode="median")  # noqa: E731
    fwd = bench(lambda: fn(q, k, v, case.causal))
    out = fn(q, k, v, case.causal)
    grad = torch.randn_like(out)
    bwd = bench(lambda: out.backward(grad, retain_graph=True))
    fwd_bwd = bench(lambda: fn(q, k, v, case.causal).backward(grad))
    return {"fwd_ms": fwd, "bwd_ms": bwd, "fwd_bwd_ms": fwd_bwd}


def measure(case: AttentionCase, device: str = "cuda", rep_ms: int = 100, torch_max_seq: int = 4096) -> AttentionRow:
    """One case -> one row; out-of-memory and unsupported inputs become rows too."""
    row = AttentionRow(**asdict(case), status="ok", env=environment(device))
    if case.impl == "torch-compiled" and case.seq > torch_max_seq:
        row.status, row.error = "skipped", f"seq > {torch_max_seq}: the compiled tile loops grow too long"
        return row
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    try:
        times = _time(case, attention_function(case.impl), device, rep_ms)
    except RuntimeError as error:  # out of memory, or an SDPA backend that refuses these inputs
        row = failure_row(row, error, status="unavailable")
    else:
        flops = attention_kernel_flops(case.batch * case.heads, case.seq, case.seq, case.head_dim, case.causal)
        for phase, key in (("fwd", "forward"), ("bwd", "backward"), ("fwd_bwd", "forward_backward")):
            ms = times[f"{phase}_ms"]
            setattr(row, f"{phase}_ms", ms)
            setattr(row, f"{phase}_tflops", flops[key] / (ms * 1e-3) / 1e12)
        row.peak_memory_gb = torch.cuda.max_memory_allocated(device) / 1e9
    gc.collect()
    torch.cuda.empty_cache()
    return row


def check_rounds(rounds: int) -> None:
    if rounds < 1:
        raise UsageError(f"--rounds must be at least 1, got {rounds}")


def interleaved(case_list: Iterable[AttentionCase], rounds: int = 1) -> list[tuple[int, AttentionCase]]:
    """(round, case) in the order to time them: point by point (a point: everything but the
    implementation), its implementations `rounds` times in turn, every other round in reverse
    order, so that drift within a run (clocks, heat, the host) falls on each of them alike."""
    check_rounds(rounds)
    points: dict[tuple, list[AttentionCase]] = {}
    for case in case_list:
        points.setdefault((case.seq, case.head_dim, case.dtype, case.causal, case.batch, case.heads), []).append(case)
    return [
        (round_, case)
        for group in points.values()
        for round_ in range(rounds)
        for case in (group if round_ % 2 == 0 else group[::-1])
    ]


def run_attention_sweep(
    case_list: Iterable[AttentionCase],
    run_dir: RunDir,
    device: str = "cuda",
    rep_ms: int = 100,
    torch_max_seq: int = 4096,
    on_row: Callable[[AttentionRow], None] | None = None,
    rounds: int = 1,
) -> list[AttentionRow]:
    """Measure every case `rounds` times (`interleaved`), appending each row to `run_dir` the
    moment it is finished."""
    if not str(device).startswith("cuda"):
        raise UsageError("lmperf attention times GPU kernels; it needs --device cuda")
    rows = []
    for round_, case in interleaved(case_list, rounds):
        row = measure(case, device, rep_ms, torch_max_seq)
        row.round = round_
        run_dir.append(asdict(row))
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def time_compiled_fwd_sum_bwd(
    impl: str = "triton", shape=(16, 16384, 64), is_causal: bool = True, dtype: str = "bf16"
) -> float:
    """Median ms of torch.compile(impl's function) forward, then .sum().backward().

    SDPA backends need (B, H, S, d): a 3-d shape gets a leading 1 for them (same work).
    """
    from triton.testing import do_bench

    if impl.startswith("sdpa-"):
        shape = (1, *shape) if len(shape) == 3 else shape
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch_dtype(dtype), requires_grad=True) for _ in range(3))
    compiled = torch.compile(attention_function(impl))
    step = lambda: compiled(q, k, v, is_causal).sum().backward()  # noqa: E731
    return do_bench(step, warmup=100, rep=500, grad_to_none=[q, k, v], return_mode="median")
