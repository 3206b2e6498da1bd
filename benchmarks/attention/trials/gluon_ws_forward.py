"""Trial: the attention forward in Gluon with FA3's warp specialisation and ping-pong.

Why: the first Gluon trial (gluon_forward.py, rows in ../gluon-forward-h100-0f79eb9/) showed
that overlapping the next tile's Q K^T with the softmax inside one warp group is not enough: its
128-row program runs both warp groups' softmax at the same moment (4-26% slower than
flash_triton's forward), and its 64-row programs fill shared memory with K and V twice per FLOP
(+3-9% at causal d=128 only). Here, as in FlashAttention-3, one program holds 128 query rows in
two consumer warp groups of 64 rows that share each K/V tile, and a producer warp streams K/V
through a ring of TMA loads:
  - producer (1 warp, few registers): Q once, then K_t, V_t into slot t % STAGES once both
    consumers have released it (an `empty` mbarrier per slot, two arrivals);
  - consumer (4 warps each, most registers), per key tile j: issue S_{j+1} = Q K_{j+1}^T and
    O += P_j V_j together, then wait for S_{j+1} only and run its softmax while P_j V_j is still
    on the tensor cores, then wait for P_j V_j, rescale O and release slot j. Nothing stays in
    flight across the loop's back edge (what made ptxas serialise the first trial's full
    overlap);
  - ping-pong (PINGPONG): a consumer issues its two products only on its turn and hands the turn
    to the other right after issuing, so one warp group's softmax runs under the other's wgmma
    (FA3 uses named barriers; two mbarriers here, one arrival per warp group).
Inputs (B, H, S, d) contiguous, bf16 or fp16, d in {64, 128}; GQA by the key/value head index;
causal top-left aligned (query i sees keys j <= i), as in lmperf.attention.

`python benchmarks/attention/trials/gluon_ws_forward.py` compiles each variant for sm90 (no GPU)
and prints registers per partition (setmaxnreg), spills, shared memory and whether ptxas
serialises the wgmma pipeline. On an H100:
`PYTHONPATH=src python3 benchmarks/attention/trials/gluon_ws_forward.py gpu OUT.jsonl` checks O,
LSE and (through flash_triton's backward) the gradients against float64, then times the
variants beside flash_triton's forward, the first trial's 64x4 program and SDPA cuDNN.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gluon_forward import LOG2E, _load_kv  # noqa: E402  (the first trial's K/V slot load)

HALF_M = 64  # query rows per consumer warp group; a program holds two


@gluon.jit
def _producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, ready, empty, q_row0, kv_row0, n_tiles,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    mbarrier.expect(q_bar, 2 * q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [q_row0, 0], q_bar, q_smem.index(0))
    tma.async_copy_global_to_shared(q_desc, [q_row0 + q_desc.block_type.shape[0], 0], q_bar, q_smem.index(1))
    for t in range(n_tiles):
        if t >= STAGES:  # both consumers done with tile t - STAGES, which held this slot
            mbarrier.wait(empty.index(t % STAGES), (t // STAGES - 1) & 1)
        _load_kv(k_desc, v_desc, k_smem, v_smem, ready, t, kv_row0, BLOCK_N, STAGES)


@gluon.jit
def _take_turn(turns, WG: gl.constexpr, count, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.wait(turns.index(WG), count & 1)


@gluon.jit
def _pass_turn(turns, WG: gl.constexpr, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.arrive(turns.index(1 - WG), count=1)


@gluon.jit
def _softmax_step(s, m_i, l_i, tile, offs_m, qk_scale, seq_k, mask_from,
                  BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr, cols_s: gl.constexpr):
    """Online softmax of key tile `tile` (base 2, scale folded): P, new max, rescale factor, sum."""
    if (tile + 1) * BLOCK_N > mask_from:
        offs_n = tile * BLOCK_N + gl.arange(0, BLOCK_N, layout=cols_s)
        visible = offs_n[None, :] < seq_k
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        s = gl.where(visible, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    return p, m_new, alpha, l_i * alpha + gl.sum(p, 1)


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H, n_tiles,
              stride_ob, stride_oh, stride_on,
              WG: gl.constexpr, PINGPONG: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    ROWS: gl.constexpr = 64
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    cols_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    cols_o: gl.constexpr = gl.SliceLayout(0, o_layout)

    row0 = start_m + WG * ROWS
    offs_m = row0 + gl.arange(0, ROWS, layout=rows_s)
    mask_from = seq_k  # key tiles ending past this need a mask
    if CAUSAL:
        mask_from = gl.minimum(seq_k, row0)
    q = q_smem.index(WG)
    zero_s = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=s_layout)
    o = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=rows_s)
    l_i = gl.zeros([ROWS], gl.float32, layout=rows_s)

    mbarrier.wait(q_bar, 0)
    mbarrier.wait(ready.index(0), 0)
    _take_turn(turns, WG, 0, PINGPONG)
    s_tok = warpgroup_mma(q, k_smem.index(0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    _pass_turn(turns, WG, PINGPONG)
    s = warpgroup_mma_wait(0, deps=(s_tok,))
    p, m_i, alpha, l_i = _softmax_step(s, m_i, l_i, 0, offs_m, qk_scale, seq_k, mask_from, BLOCK_N, CAUSAL, cols_s)
    for j in range(n_tiles - 1):
        nxt = j + 1
        mbarrier.wait(ready.index(nxt % STAGES), (nxt // STAGES) & 1)
        _take_turn(turns, WG, nxt, PINGPONG)
        s_tok = warpgroup_mma(q, k_smem.index(nxt % STAGES).permute((1, 0)), zero_s, use_acc=False, is_async=True)
        p_op = gl.convert_layout(p.to(k_smem.dtype), p_layout)
        pv_tok = warpgroup_mma(p_op, v_smem.index(j % STAGES), o, is_async=True)
        _pass_turn(turns, WG, PINGPONG)
        s = warpgroup_mma_wait(1, deps=(s_tok,))  # S_{j+1} done, P_j V_j may still run
        p, m_i, alpha, l_i = _softmax_step(s, m_i, l_i, nxt, offs_m, qk_scale, seq_k, mask_from, BLOCK_N, CAUSAL, cols_s)
        o = warpgroup_mma_wait(0, deps=(pv_tok,))
        o = o * gl.convert_layout(alpha, rows_o)[:, None]
        mbarrier.arrive(empty.index(j % STAGES), count=1)
    last = n_tiles - 1
    _take_turn(turns, WG, n_tiles, PINGPONG)
    p_op = gl.convert_layout(p.to(k_smem.dtype), p_layout)
    pv_tok = warpgroup_mma(p_op, v_smem.index(last % STAGES), o, is_async=True)
    _pass_turn(turns, WG, PINGPONG)
    o = warpgroup_mma_wait(0, deps=(pv_tok,))

    o = o / gl.convert_layout(l_i, rows_o)[:, None]
    rows = row0 + gl.arange(0, ROWS, layout=rows_o)
    cols = gl.arange(0, HEAD_DIM, layout=cols_o)
    b = bh // H
    h = bh % H
    out = O + b.to(gl.int64) * stride_ob + h.to(gl.int64) * stride_oh + rows[:, None] * stride_on + cols[None, :]
    gl.store(out, o.to(O.dtype.element_ty), mask=rows[:, None] < seq_q)
    lse = (m_i + gl.log2(l_i)) / 1.4426950408889634
    gl.store(LSE + bh.to(gl.int64) * seq_q + offs_m, lse, mask=offs_m < seq_q)


@gluon.jit
def _consumer0(q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H, n_tiles,
               stride_ob, stride_oh, stride_on, PINGPONG: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr,
               STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    _consumer(q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H, n_tiles,
              stride_ob, stride_oh, stride_on, 0, PINGPONG, HEAD_DIM, BLOCK_N, STAGES, CAUSAL)


@gluon.jit
def _consumer1(q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H, n_tiles,
               stride_ob, stride_oh, stride_on, PINGPONG: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr,
               STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    _consumer(q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H, n_tiles,
              stride_ob, stride_oh, stride_on, 1, PINGPONG, HEAD_DIM, BLOCK_N, STAGES, CAUSAL)


@gluon.jit
def _attn_fwd_ws(
    q_desc, k_desc, v_desc, O, LSE, qk_scale, seq_q, seq_k, H, group,
    stride_ob, stride_oh, stride_on,
    HEAD_DIM: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
    PINGPONG: gl.constexpr, CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr,
):
    BLOCK_M: gl.constexpr = 128
    tile_m = gl.program_id(0)
    if CAUSAL:  # the last query tiles see the most keys: start them first
        tile_m = gl.num_programs(0) - 1 - tile_m
    bh = gl.program_id(1)
    start_m = tile_m * BLOCK_M
    kv_row0 = (bh // group) * seq_k
    hi = seq_k
    if CAUSAL:
        hi = gl.minimum(seq_k, start_m + BLOCK_M)
    n_tiles = gl.cdiv(hi, BLOCK_N)

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [2, BLOCK_M // 2, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)  # one arrival per consumer warp group
    mbarrier.init(turns.index(0), count=1)
    mbarrier.init(turns.index(1), count=1)
    fence_async_shared()
    mbarrier.arrive(turns.index(0), count=1)  # consumer 0 issues first

    # The argument tuples are written inline: a tuple first bound to a name turns its constexprs
    # into tensors on the way into the partitions (Triton 3.6).
    gl.warp_specialize([
        (_consumer0, (q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H,
                      n_tiles, stride_ob, stride_oh, stride_on, PINGPONG, HEAD_DIM, BLOCK_N, STAGES, CAUSAL)),
        (_consumer1, (q_smem, k_smem, v_smem, q_bar, ready, empty, turns, O, LSE, qk_scale, seq_q, seq_k, start_m, bh, H,
                      n_tiles, stride_ob, stride_oh, stride_on, PINGPONG, HEAD_DIM, BLOCK_N, STAGES, CAUSAL)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bar, ready, empty, bh * seq_q + start_m, kv_row0,
                     n_tiles, BLOCK_N, STAGES)),
    ],
                       [4, 1], [CONSUMER_REGS, 24])


# name -> (BLOCK_N at d=64, BLOCK_N at d=128, STAGES at d=64, STAGES at d=128, PINGPONG)
VARIANTS = {
    "ws": (128, 64, 3, 3, False),
    "ws-pingpong": (128, 64, 3, 3, True),
    "ws-pingpong-n128": (128, 128, 3, 2, True),
}
CONSUMER_REGS = 240


def _descriptors(q, k, v, block_n):
    dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
    d = q.shape[-1]
    q_layout = gl.NVMMASharedLayout.get_default_for([HALF_M, d], dtype)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, d], dtype)
    return (
        TensorDescriptor.from_tensor(q.reshape(-1, d), [HALF_M, d], q_layout),
        TensorDescriptor.from_tensor(k.reshape(-1, d), [block_n, d], kv_layout),
        TensorDescriptor.from_tensor(v.reshape(-1, d), [block_n, d], kv_layout),
    )


def _variant(name: str, head_dim: int) -> tuple[int, int, bool]:
    n64, n128, st64, st128, pingpong = VARIANTS[name]
    return (n64, st64, pingpong) if head_dim <= 64 else (n128, st128, pingpong)


def ws_attention_forward(q, k, v, is_causal=False, variant="ws-pingpong"):
    """Output (B, H, S, d) (stored (B, S, H, d), as flash_triton stores it) and LSE (B*H, S)."""
    batch, heads, seq_q, d = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    assert d in (64, 128) and q.dtype in (torch.bfloat16, torch.float16), "trial: d 64/128, bf16/fp16"
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    block_n, stages, pingpong = _variant(variant, d)
    q_desc, k_desc, v_desc = _descriptors(q, k, v, block_n)
    o = torch.empty((batch, seq_q, heads, d), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((batch * heads, seq_q), dtype=torch.float32, device=q.device)
    grid = (triton.cdiv(seq_q, 128), batch * heads)
    _attn_fwd_ws[grid](
        q_desc, k_desc, v_desc, o, lse, LOG2E / math.sqrt(d), seq_q, seq_k, heads, heads // kv_heads,
        o.stride(0), o.stride(1), o.stride(2),
        HEAD_DIM=d, BLOCK_N=block_n, STAGES=stages, CAUSAL=is_causal, PINGPONG=pingpong, CONSUMER_REGS=CONSUMER_REGS,
        num_warps=4,
    )
    return o, lse


def compile_sm90(head_dim: int, causal: bool, variant: str):
    """Compile for an H100 without a GPU (as sm90_report.py does for the Triton kernels)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    block_n, stages, pingpong = _variant(variant, head_dim)
    q_layout = gl.NVMMASharedLayout.get_default_for([HALF_M, head_dim], gl.bfloat16)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, head_dim], gl.bfloat16)
    signature = {
        "q_desc": f"tensordesc<bf16[{HALF_M}, {head_dim}],{q_layout!r}>",
        "k_desc": f"tensordesc<bf16[{block_n}, {head_dim}],{kv_layout!r}>",
        "v_desc": f"tensordesc<bf16[{block_n}, {head_dim}],{kv_layout!r}>",
        "O": "*bf16", "LSE": "*fp32", "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "stride_ob", "stride_oh", "stride_on")},
        **{name: "constexpr" for name in ("HEAD_DIM", "BLOCK_N", "STAGES", "CAUSAL", "PINGPONG", "CONSUMER_REGS", "num_warps")},
    }
    constexprs = dict(HEAD_DIM=head_dim, BLOCK_N=block_n, STAGES=stages, CAUSAL=causal, PINGPONG=pingpong,
                      CONSUMER_REGS=CONSUMER_REGS, num_warps=4)
    source = GluonASTSource(_attn_fwd_ws, signature, constexprs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))


def _sm90_report() -> None:
    """Per variant, head_dim and causal: registers (and each partition's setmaxnreg), spills,
    shared memory, and whether ptxas serialises the wgmma pipeline (its C7514 note)."""
    import re
    import subprocess
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/attention
    from sm90_report import TOOLS, resources

    print(f"triton {triton.__version__}: warp-specialised Gluon attention forward for sm90")
    for variant in VARIANTS:
        for head_dim, causal in [(d, c) for d in (64, 128) for c in (False, True)]:
            compiled = compile_sm90(head_dim, causal, variant)
            usage = resources(compiled)
            ptx = compiled.asm["ptx"]
            maxnreg = sorted(set(re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)", ptx)))
            with tempfile.NamedTemporaryFile("w", suffix=".ptx") as file:
                file.write(ptx)
                file.flush()
                note = subprocess.run([TOOLS / "ptxas", "-arch=sm_90a", "-v", file.name, "-o", "/dev/null"],
                                      capture_output=True, text=True).stderr
            print(f"{variant} d{head_dim} {'causal' if causal else 'full'}: registers {usage['registers']}, "
                  f"setmaxnreg {maxnreg}, stack {usage['stack']} B, shared {usage['shared_kb']} KB, "
                  f"ptxas serialises wgmma: {'serialized' in note}")


def check_and_time(out_path: str) -> None:
    """Each variant checked and timed beside the first trial's 64x4 program, flash_triton and
    cuDNN (gluon_forward.check_and_time_on_gpu); forward+backward for ws-pingpong."""
    from gluon_forward import check_and_time_on_gpu, gluon_attention_forward

    forwards = {name: (lambda q, k, v, causal, name=name: ws_attention_forward(q, k, v, causal, name)) for name in VARIANTS}
    forwards["gluon-64x4"] = lambda q, k, v, causal: gluon_attention_forward(q, k, v, causal, "64x4")
    check_and_time_on_gpu(out_path, forwards, with_backward=("ws-pingpong",))


if __name__ == "__main__":
    if sys.argv[1:2] == ["gpu"]:  # python gluon_ws_forward.py gpu OUT.jsonl (on the H100)
        check_and_time(sys.argv[2])
    else:
        _sm90_report()
