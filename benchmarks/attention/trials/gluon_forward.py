"""Trial (not on main, not yet run on a GPU): the attention forward in Gluon, with FA3's
intra-warpgroup overlap that Triton 3.6's tl.dot pipeline cannot express.

Why: Triton waits on every non-accumulating tl.dot as soon as it is issued (docs/attention.md
items 8 and 26), so Q·K^T of the next key tile never runs under this tile's softmax, and
`warp_specialize` is not applied to our loops. Gluon (triton.experimental.gluon, in Triton 3.6)
exposes the wgmma wait count itself. Per key tile j the program here:
  1. refills the K/V slot tile j-1 used (TMA) and issues S_{j+1} = Q K_{j+1}^T (async),
  2. runs the online softmax of S_j while S_{j+1} runs on the tensor cores,
  3. rescales O, issues P_j V_j (async) and waits for both.
FA3 also leaves P_j V_j in flight into the next step; written that way (first version of this
file, and again with tile 0 peeled off the loop so every step starts alike) ptxas serialises
every wgmma of the kernel (C7514): any wgmma in flight across the loop's back edge did it here,
so step 3 retires it.
K and V stream through a 3-slot ring of TMA loads (mbarriers); Q is loaded once. One program
per (128 query rows, batch x head), 8 warps (two warp groups of 64 rows each). GQA via the
key/value head index. Inputs (B, H, S, d) contiguous, bf16 or fp16, d in {64, 128}; causal is
top-left aligned (query i sees keys j <= i), as in lmperf.attention.

Status: compiles for sm90 with Triton 3.6 (`PYTHONPATH=src python benchmarks/attention/trials/gluon_forward.py`
prints the compiler's resource report, no GPU needed); in the SASS the next tile's 8 HGMMA
(d=128) sit before the softmax's MUFU.EX2, and ptxas reports no serialisation. Not yet run: on
an H100, `PYTHONPATH=src python3 benchmarks/attention/trials/gluon_forward.py gpu OUT.jsonl`
checks O, LSE and (through flash_triton's backward, GluonForwardAttention) the gradients against
float64 (odd lengths, seq_q != seq_k, GQA), then times forward and forward+backward beside
flash_triton's and SDPA cuDNN's, interleaved. Prediction: forward +5-15% at d=128, where our tile's
tensor pipe is busy 54% of the time against cuDNN's 75% (stall-profile-h100-cd88912).
"""

from __future__ import annotations

import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from lmperf.attention.flash_gluon import _softmax_step  # the same step the warp-specialised forward takes

LOG2E = 1.4426950408889634
STAGES = 3  # K/V slots: the next tile's Q K^T is issued before the slot of tile j-1 is refilled


@gluon.jit
def _load_kv(k_desc, v_desc, k_smem, v_smem, bars, tile, kv_row0, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    slot = tile % STAGES
    bar = bars.index(slot)
    mbarrier.expect(bar, 2 * k_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(k_desc, [kv_row0 + tile * BLOCK_N, 0], bar, k_smem.index(slot))
    tma.async_copy_global_to_shared(v_desc, [kv_row0 + tile * BLOCK_N, 0], bar, v_smem.index(slot))


@gluon.jit
def _qk(q_smem, k_smem, bars, tile, zero_s, STAGES: gl.constexpr):
    """Issue S = Q K^T for key tile `tile` once its K has landed; returns the wgmma token."""
    slot = tile % STAGES
    mbarrier.wait(bars.index(slot), (tile // STAGES) & 1)
    return warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zero_s, use_acc=False, is_async=True)


@gluon.jit
def _attn_fwd(
    q_desc, k_desc, v_desc, O, LSE, qk_scale, seq_q, seq_k, H, group,
    stride_ob, stride_oh, stride_on,
    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
    CAUSAL: gl.constexpr, num_warps: gl.constexpr,
):
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    cols_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    cols_o: gl.constexpr = gl.SliceLayout(0, o_layout)

    tile_m = gl.program_id(0)
    if CAUSAL:  # the last query tiles see the most keys: start them first
        tile_m = gl.num_programs(0) - 1 - tile_m
    bh = gl.program_id(1)
    start_m = tile_m * BLOCK_M
    kv_row0 = (bh // group) * seq_k  # first row of this key/value head in the (B*KVH*S, d) view
    hi = seq_k
    if CAUSAL:
        hi = gl.minimum(seq_k, start_m + BLOCK_M)
    n_tiles = gl.cdiv(hi, BLOCK_N)
    mask_from = seq_k  # key tiles ending past this need a mask
    if CAUSAL:
        mask_from = gl.minimum(seq_k, start_m)

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    kv_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(kv_bars.index(s), count=1)

    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [bh * seq_q + start_m, 0], q_bar, q_smem)
    for s in gl.static_range(STAGES):
        if s < n_tiles:
            _load_kv(k_desc, v_desc, k_smem, v_smem, kv_bars, s, kv_row0, BLOCK_N, STAGES)

    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=rows_s)
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=rows_s)
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
    offs_m = start_m + gl.arange(0, BLOCK_M, layout=rows_s)

    mbarrier.wait(q_bar, 0)
    s_tile = warpgroup_mma_wait(0, deps=(_qk(q_smem, k_smem, kv_bars, 0, zero_s, STAGES),))
    for j in range(n_tiles):
        # The slot of tile j-1 is free (its S and P V finished last step): refill it.
        if j >= 1:
            if j - 1 + STAGES < n_tiles:
                _load_kv(k_desc, v_desc, k_smem, v_smem, kv_bars, j - 1 + STAGES, kv_row0, BLOCK_N, STAGES)
        # 1. the next tile's scores, in flight during this tile's softmax (on the last tile, the
        #    last tile's again: no branch around an async wgmma; its slot is not refilled, so its
        #    barrier phase is still complete)
        s_next = _qk(q_smem, k_smem, kv_bars, gl.minimum(j + 1, n_tiles - 1), zero_s, STAGES)
        # 2. online softmax of this tile, in base 2 with the scale folded
        p, m_i, alpha, l_i = _softmax_step(s_tile, m_i, l_i, j, offs_m, qk_scale, seq_k, mask_from, BLOCK_N, CAUSAL, cols_s)
        # 3. P V of this tile, then both in flight retired. (Leaving P V in flight into the next
        #    step, FA3's full overlap, makes ptxas serialise every wgmma of the kernel: "non wgmma
        #    instructions reading accumulator registers ... between start and end of the pipeline
        #    stage", C7514, with Triton 3.6's ptxas.)
        o = o * gl.convert_layout(alpha, rows_o)[:, None]
        p_op = gl.convert_layout(p.to(v_desc.dtype), p_layout)
        pv = warpgroup_mma(p_op, v_smem.index(j % STAGES), o, is_async=True)
        s_tile, o = warpgroup_mma_wait(0, deps=(s_next, pv))

    for s in gl.static_range(STAGES):
        mbarrier.invalidate(kv_bars.index(s))
    mbarrier.invalidate(q_bar)

    o = o / gl.convert_layout(l_i, rows_o)[:, None]
    rows = start_m + gl.arange(0, BLOCK_M, layout=rows_o)
    cols = gl.arange(0, HEAD_DIM, layout=cols_o)
    b = bh // H
    h = bh % H
    out = O + b.to(gl.int64) * stride_ob + h.to(gl.int64) * stride_oh + rows[:, None] * stride_on + cols[None, :]
    gl.store(out, o.to(O.dtype.element_ty), mask=rows[:, None] < seq_q)
    lse = (m_i + gl.log2(l_i)) / 1.4426950408889634
    gl.store(LSE + bh.to(gl.int64) * seq_q + offs_m, lse, mask=offs_m < seq_q)


# (BLOCK_M, num_warps): one program of two warp groups (128 query rows), or programs of one warp
# group (64 rows) small enough that two share an SM, so the scheduler runs one's softmax while
# the other's wgmma runs (ping-pong without FA3's explicit barriers).
SHAPES = {"128x8": (128, 8), "64x4": (64, 4)}


def _tiles(head_dim: int, block_m: int = 128) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N): key tiles small enough for S, S_next, O and P in registers at d=128
    (64 keys), wider at d=64 (128 keys)."""
    return block_m, (128 if head_dim <= 64 else 64)


def _descriptors(q, k, v, block_m, block_n):
    dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    d = q.shape[-1]
    q_layout = gl.NVMMASharedLayout.get_default_for([block_m, d], dtype)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, d], dtype)
    return (
        TensorDescriptor.from_tensor(q.reshape(-1, d), [block_m, d], q_layout),
        TensorDescriptor.from_tensor(k.reshape(-1, d), [block_n, d], kv_layout),
        TensorDescriptor.from_tensor(v.reshape(-1, d), [block_n, d], kv_layout),
    )


def gluon_attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, shape: str = "128x8"):
    """Output (B, H, S, d) (stored (B, S, H, d), as flash_triton stores it) and LSE (B*H, S)."""
    batch, heads, seq_q, d = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    assert d in (64, 128) and q.dtype in (torch.bfloat16, torch.float16), "trial: d 64/128, bf16/fp16"
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    block_m, num_warps = SHAPES[shape]
    block_m, block_n = _tiles(d, block_m)
    q_desc, k_desc, v_desc = _descriptors(q, k, v, block_m, block_n)
    o = torch.empty((batch, seq_q, heads, d), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((batch * heads, seq_q), dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(seq_q, block_m), batch * heads)
    _attn_fwd[grid](
        q_desc, k_desc, v_desc, o, lse, LOG2E / math.sqrt(d), seq_q, seq_k, heads, heads // kv_heads,
        o.stride(0), o.stride(1), o.stride(2),
        HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=STAGES, CAUSAL=is_causal, num_warps=num_warps,
    )
    return o, lse


class GluonForwardAttention(torch.autograd.Function):
    """A Gluon forward (`forward(q, k, v, causal)`, default this file's 128x8 program) with
    flash_triton's backward: O is stored and LSE laid out as flash_triton's forward leaves them,
    so its backward takes them as they are."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, forward=None):
        from lmperf.attention.flash_triton import backward_mode

        o, lse = (forward or gluon_attention_forward)(q, k, v, is_causal)
        ctx.save_for_backward(q, k, v, o, lse.view(q.shape[:-1]))
        ctx.is_causal, ctx.mode = is_causal, backward_mode(None, is_causal, k.shape[-2])
        return o

    @staticmethod
    def backward(ctx, grad_out):
        from lmperf.attention.flash_triton import triton_backward

        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = triton_backward(q, k, v, o, lse, grad_out.contiguous(), ctx.is_causal, ctx.mode)
        return dq, dk, dv, None, None


def compile_sm90(head_dim: int, causal: bool, shape: str = "128x8"):
    """Compile for an H100 without a GPU (as sm90_report.py does for the Triton kernels)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    block_m, num_warps = SHAPES[shape]
    block_m, block_n = _tiles(head_dim, block_m)
    q_layout = gl.NVMMASharedLayout.get_default_for([block_m, head_dim], gl.bfloat16)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, head_dim], gl.bfloat16)
    signature = {
        "q_desc": f"tensordesc<bf16[{block_m}, {head_dim}],{q_layout!r}>",
        "k_desc": f"tensordesc<bf16[{block_n}, {head_dim}],{kv_layout!r}>",
        "v_desc": f"tensordesc<bf16[{block_n}, {head_dim}],{kv_layout!r}>",
        "O": "*bf16", "LSE": "*fp32", "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "stride_ob", "stride_oh", "stride_on")},
        **{name: "constexpr" for name in ("HEAD_DIM", "BLOCK_M", "BLOCK_N", "STAGES", "CAUSAL", "num_warps")},
    }
    constexprs = dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=STAGES, CAUSAL=causal, num_warps=num_warps)
    source = GluonASTSource(_attn_fwd, signature, constexprs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=num_warps))


def check_and_time_on_gpu(out_path: str, forwards: dict | None = None, with_backward: tuple = ("gluon",),
                          seqs=(4096, 16384), tokens: int = 16384) -> None:
    """On an H100, for each trial forward in `forwards` (name -> fn(q, k, v, causal) returning
    O and LSE; default this file's two program shapes): largest relative error of O and LSE
    against float64 on ragged shapes (odd lengths, seq_q != seq_k, GQA 4), and of the gradients
    through flash_triton's backward for those in `with_backward`; then forward TFLOP/s of each
    beside flash_triton's forward and SDPA cuDNN, and forward+backward TFLOP/s of those in
    `with_backward` beside flash_triton's and cuDNN's, interleaved, two rounds, the second in
    reverse order (bf16, `tokens` per batch, heads x d = 2048). One JSON row per line."""
    import json

    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    from lmperf.attention.flash_triton import FlashAttention2Triton, triton_forward
    from lmperf.report.environment import environment

    forwards = forwards or {"gluon": gluon_attention_forward,
                            "gluon-64x4": lambda q, k, v, causal: gluon_attention_forward(q, k, v, causal, "64x4")}
    env = environment("cuda")
    rows = []
    with open(out_path, "w") as out:
        def emit(row):
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()  # rows so far survive a hang or a crash later on

        for d, causal, seq_q, seq_k, heads, kv_heads in [
            (64, False, 1000, 1000, 4, 4), (64, True, 1000, 1000, 4, 4), (128, True, 777, 1025, 8, 2),
            (128, False, 1025, 777, 4, 4), (128, True, 4096, 4096, 8, 2), (64, True, 300, 300, 2, 2),
        ]:
            gen = torch.Generator(device="cuda").manual_seed(d + seq_q)
            q = torch.randn(2, heads, seq_q, d, device="cuda", generator=gen).bfloat16().requires_grad_()
            k, v = (torch.randn(2, kv_heads, seq_k, d, device="cuda", generator=gen).bfloat16().requires_grad_() for _ in range(2))
            do = torch.randn(2, heads, seq_q, d, device="cuda", generator=gen).bfloat16()
            group = heads // kv_heads
            qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
            scores = qd @ kd.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(d)
            if causal:
                scores = scores.masked_fill(torch.ones(seq_q, seq_k, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
            ref_lse = torch.logsumexp(scores, -1)
            ref_o = torch.softmax(scores, -1) @ vd.repeat_interleave(group, 1)
            ref_o.backward(do.double())

            def rel(got, want):
                return ((got.double() - want).abs().max() / want.abs().max()).item()

            for name, forward in forwards.items():
                o, lse = forward(q.detach(), k.detach(), v.detach(), causal)
                torch.cuda.synchronize()
                row = dict(kind="check", forward=name, head_dim=d, causal=causal, seq_q=seq_q, seq_k=seq_k, heads=heads,
                           kv_heads=kv_heads, max_rel_error_o=rel(o, ref_o.detach()),
                           max_rel_error_lse=rel(lse.view(2, heads, seq_q), ref_lse.detach()))
                if name in with_backward:
                    q.grad = k.grad = v.grad = None
                    GluonForwardAttention.apply(q, k, v, causal, forward).backward(do)
                    row["max_rel_error_grads"] = max(rel(t.grad, r.grad) for t, r in ((q, qd), (k, kd), (v, vd)))
                emit(row | {"env": env})
                print(row, flush=True)

        def cudnn(q, k, v, causal):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def fwd_bwd(apply, *extra):
            def run(q, k, v, causal):
                apply(q, k, v, causal, *extra).backward(q.grad_seed)
            return run

        peers = dict(forwards, flash_triton=triton_forward, **{"sdpa-cudnn": cudnn})
        peers.update({f"{name}+bwd": fwd_bwd(GluonForwardAttention.apply, forwards[name]) for name in with_backward})
        peers.update({"flash_triton+bwd": fwd_bwd(FlashAttention2Triton.apply), "sdpa-cudnn+bwd": fwd_bwd(cudnn)})
        for d in (64, 128):
            for causal in (False, True):
                for seq in seqs:
                    heads = 2048 // d
                    q, k, v = (torch.randn(tokens // seq, heads, seq, d, device="cuda").bfloat16().requires_grad_() for _ in range(3))
                    q.grad_seed = torch.randn_like(q)  # dO for the +bwd peers
                    flops = 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1)
                    for round_ in (0, 1):
                        for name in list(peers) if round_ == 0 else list(peers)[::-1]:
                            backward = name.endswith("+bwd")
                            if backward:
                                ms = do_bench(lambda: peers[name](q, k, v, causal), warmup=25, rep=100, grad_to_none=(q, k, v))
                            else:
                                with torch.no_grad():
                                    ms = do_bench(lambda: peers[name](q, k, v, causal), warmup=25, rep=100)
                            work = flops * (3.5 if backward else 1)  # fwd + bwd counted 1 + 2.5
                            emit(dict(kind="time", peer=name, head_dim=d, causal=causal, seq=seq, round=round_,
                                      ms=ms, tflops=work / ms / 1e9, env=env))
                            print(f"r{round_} {name:20s} d{d} {'causal' if causal else 'full'} {seq}: {work / ms / 1e9:6.1f} TFLOP/s", flush=True)


def _sm90_report() -> None:
    """Per program shape, head_dim and causal: sm90_report.py's resource figures (registers,
    spills, shared memory) and whether ptxas serialises the wgmma pipeline (its C7514 note)."""
    import re
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/attention
    from sm90_report import TOOLS, resources

    print(f"triton {triton.__version__}: Gluon attention forward for sm90")
    for head_dim, causal, shape in [(d, c, sh) for sh in SHAPES for d in (64, 128) for c in (False, True)]:
        compiled = compile_sm90(head_dim, causal, shape)
        usage = resources(compiled)
        waits = re.findall(r"wgmma.wait_group.sync.aligned (\d+)", compiled.asm["ptx"])
        with tempfile.NamedTemporaryFile("w", suffix=".ptx") as ptx:
            ptx.write(compiled.asm["ptx"])
            ptx.flush()
            note = subprocess.run([TOOLS / "ptxas", "-arch=sm_90a", "-v", ptx.name, "-o", "/dev/null"], capture_output=True, text=True).stderr
        print(f"{shape} d{head_dim} {'causal' if causal else 'full'}: registers {usage['registers']}, stack {usage['stack']} B, "
              f"shared {usage['shared_kb']} KB, wgmma waits (pending allowed) {waits}, "
              f"ptxas serialises wgmma: {'serialized' in note}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["gpu"]:  # python gluon_forward.py gpu OUT.jsonl (on the H100)
        check_and_time_on_gpu(sys.argv[2])
    else:
        _sm90_report()
