"""GPU checks (skipped without CUDA): compiled Triton kernels in fp32/fp16/bf16 at real sizes."""

import functools

import pytest
import torch

from attention_reference import check_against_reference, model_loss_and_grads, random_qkv, reference, rel_err
from lmperf.attention import attention, flash_triton, repeat_kv
from lmperf.attention.naive import naive_attention_with_lse
from lmperf.attention.flash_torch import FlashAttention2Torch, flash_attention_torch_with_lse
from lmperf.attention.flash_triton import FlashAttention2Triton, flash_attention_triton_with_lse

pytestmark = pytest.mark.gpu
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}
TRITON = (flash_attention_triton_with_lse, FlashAttention2Triton.apply)


@pytest.fixture(autouse=True)
def fixed_tiles(monkeypatch):
    """Fixed tiles keep compilation short; test_autotuned_tiles covers the tuned path."""
    monkeypatch.setattr(flash_triton, "AUTOTUNE", False)


@pytest.mark.parametrize(
    "lead, seq_q, seq_k, head_dim, is_causal, dtype",
    [
        ((2, 3), 1000, 1000, 64, True, torch.bfloat16),
        ((2, 3), 1000, 1000, 64, False, torch.float16),
        ((1, 2), 777, 1025, 128, True, torch.bfloat16),
        ((1, 2), 1025, 777, 128, False, torch.bfloat16),
        ((3,), 513, 300, 32, True, torch.float32),
        ((2, 1), 257, 257, 16, False, torch.float32),
        ((2, 1), 257, 250, 16, True, torch.float16),
        ((1, 2), 300, 301, 256, True, torch.bfloat16),
        ((1, 2), 300, 301, 256, False, torch.float32),
        ((2, 2), 700, 700, 80, True, torch.bfloat16),  # the 2.7B preset's head_dim: 64 + 16 columns
        ((1, 3), 650, 901, 96, False, torch.float16),  # 64 + 32
        ((2, 2), 333, 333, 48, True, torch.float32),  # 32 + 16, fixed fp32 tiles
        ((1, 2), 400, 399, 112, True, torch.bfloat16),  # no split: padded to 128
    ],
)
def test_triton_matches_float64_reference(lead, seq_q, seq_k, head_dim, is_causal, dtype):
    q, k, v, do = random_qkv(lead, seq_q, seq_k, head_dim, dtype, device="cuda", seed=seq_q)
    check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[dtype])


@pytest.mark.parametrize("head_dim", [64, 128, 80])
def test_autotuned_tiles(monkeypatch, head_dim):
    monkeypatch.setattr(flash_triton, "AUTOTUNE", True)
    q, k, v, do = random_qkv((2, 4), 1500, 1500, head_dim, torch.bfloat16, device="cuda")
    check_against_reference(*TRITON, q, k, v, do, True, 3e-2)


def test_triton_on_model_layout_and_five_dims():
    # q, k, v as the model slices them from its packed (B, T, 3, H, d) projection: no copies
    qkv = torch.randn(2, 300, 3, 4, 64, device="cuda", dtype=torch.bfloat16)
    q, k, v = (t.requires_grad_() for t in qkv.permute(2, 0, 3, 1, 4).unbind(0))  # (B, H, T, d)
    assert not q.is_contiguous()
    check_against_reference(*TRITON, q, k, v, torch.randn_like(q), True, 3e-2)
    q5, k5, v5, do5 = random_qkv((2, 2, 2), 100, 90, 32, torch.float16, device="cuda")
    check_against_reference(*TRITON, q5, k5, v5, do5, True, 5e-3)


@pytest.mark.parametrize("backward", [*flash_triton.BACKWARDS, "atomic-per-thread"])
@pytest.mark.parametrize(
    "lead, kv_heads, seq_q, seq_k, head_dim, is_causal, autotune",
    [
        ((2, 8), 2, 1000, 1000, 64, True, True),
        ((1, 4), 1, 777, 1025, 128, False, False),
        ((2, 3), None, 1025, 777, 128, True, False),
        ((1, 8), 2, 900, 900, 80, True, True),
    ],
)
def test_backward_modes_and_gqa(monkeypatch, backward, lead, kv_heads, seq_q, seq_k, head_dim, is_causal, autotune):
    """Each backward against float64; "atomic" adds dQ by TMA bulk reductions where it can (d=64
    and 128 here), "atomic-per-thread" is the same backward with per-thread atomics."""
    monkeypatch.setattr(flash_triton, "AUTOTUNE", autotune)
    if backward == "atomic-per-thread":
        monkeypatch.setattr(flash_triton, "ATOMIC_DQ_BY_TMA", False)
        backward = "atomic"
    q, k, v, do = random_qkv(lead, seq_q, seq_k, head_dim, torch.bfloat16, device="cuda", seed=7, kv_heads=kv_heads)
    apply = lambda q, k, v, c: FlashAttention2Triton.apply(q, k, v, c, backward)  # noqa: E731
    check_against_reference(flash_attention_triton_with_lse, apply, q, k, v, do, is_causal, 3e-2)


HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed):
    """q, k, v (requiring grad) and dO of a Gluon test case; packed: (B, H, T, d) views of a
    (B, T, 3, H, d) projection, as the model slices them (seq_k = seq_q, no GQA)."""
    if not packed:
        return random_qkv(lead, seq_q, seq_k, head_dim, dtype, device="cuda", seed=seq_q, kv_heads=kv_heads)
    packed_qkv = torch.randn(lead[0], seq_q, 3, lead[1], head_dim, device="cuda", dtype=dtype)
    q, k, v = (t.requires_grad_() for t in packed_qkv.permute(2, 0, 3, 1, 4).unbind(0))
    return q, k, v, torch.randn_like(q)


@pytest.mark.skipif(not HOPPER or flash_triton.flash_gluon is None, reason="the Gluon forward is written for sm90")
@pytest.mark.parametrize(
    "lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed",
    [
        ((2, 3), None, 1000, 1000, 64, True, torch.bfloat16, False),
        ((2, 3), None, 1000, 1000, 64, False, torch.float16, False),
        ((1, 8), 2, 777, 1025, 128, True, torch.bfloat16, False),  # GQA, seq_q < seq_k
        ((1, 4), 1, 1025, 777, 128, False, torch.bfloat16, False),  # MQA, seq_q > seq_k
        ((2, 2), None, 300, 300, 64, True, torch.bfloat16, True),  # the model's strided layout
        ((1, 2), None, 1, 130, 128, True, torch.float16, False),  # one query row
        ((1, 2), None, 4097, 4097, 128, True, torch.bfloat16, True),  # 33 query tiles, 65 key tiles
        # head_dim 80 as 64 + 16 columns (two descriptors and chained products per tile)
        ((2, 3), None, 1000, 1000, 80, True, torch.bfloat16, False),
        ((1, 8), 2, 777, 1025, 80, False, torch.float16, False),  # GQA, seq_q < seq_k
        ((2, 2), None, 300, 300, 80, True, torch.bfloat16, True),  # the model's strided layout
    ],
)
@pytest.mark.parametrize("consumers", [2, 3])  # consumer warp groups per program (flash_gluon.CONSUMERS)
# None: one per SM (or per item, `schedule`); 0: one per query tile wherever causal (the schedule
# PERSISTENT_CAUSAL_MAX_KEYS names, none by default)
# ordered: causal persistent programs take single query tiles in the host's order (True), or pairs
# in a fixed turn (False), at every head_dim (flash_gluon.ORDERED_CAUSAL chooses by head_dim)
@pytest.mark.parametrize("programs, ordered", [(None, True), (3, True), (3, False), (0, True)])
def test_gluon_forward_matches_float64_reference(monkeypatch, lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed,
                                                 consumers, programs, ordered):
    """The forward flash_triton hands to flash_gluon on an H100 (it must be the one that ran; at
    every length here, not only where it is faster), with flash_triton's backward on its O and
    LSE, against float64; with two and with three consumer warp groups per program at either
    head_dim (128- and 192-row programs: every length here leaves a ragged last one). With three
    persistent programs, each takes many query tiles (causal: in the host's order, or pairs of
    them in a fixed turn; the 4097-row case too), so the ring's running count and the barriers'
    phases carry across them; and, causal, with one program per query tile (the schedule that
    PERSISTENT_CAUSAL_MAX_KEYS can still choose)."""
    gluon, calls = flash_triton.flash_gluon, []
    if not ordered and not is_causal:
        pytest.skip("non-causal forwards take single tiles in a fixed turn either way")
    monkeypatch.setattr(gluon, "ORDERED_CAUSAL", set(gluon.TILES) if ordered else set())
    monkeypatch.setattr(gluon, "FROM_KEYS", {d: {False: 0, True: 0} for d in gluon.TILES})
    monkeypatch.setattr(gluon, "CONSUMERS", dict.fromkeys(gluon.TILES, consumers))
    if programs:
        monkeypatch.setattr(gluon, "multiprocessors", lambda device: programs)
        monkeypatch.setattr(gluon, "PERSISTENT_CAUSAL_MAX_KEYS", {})
    elif programs == 0:
        if not is_causal:
            pytest.skip("non-causal forwards are persistent at every length")
        monkeypatch.setattr(gluon, "PERSISTENT_CAUSAL_MAX_KEYS", dict.fromkeys(gluon.TILES, 0))
        assert gluon.schedule(head_dim, seq_k, True) == (False, False)
    real_forward = gluon.forward
    monkeypatch.setattr(gluon, "forward", lambda *args: calls.append(args[0].shape) or real_forward(*args))
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[dtype])
    assert calls, "flash_triton did not run the Gluon forward"


@pytest.mark.skipif(not HOPPER or flash_triton.flash_gluon is None, reason="the Gluon forward is written for sm90")
@pytest.mark.parametrize(
    "lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed",
    [
        ((2, 3), None, 1000, 1000, 64, torch.bfloat16, False),
        ((1, 4), 1, 1025, 777, 128, torch.bfloat16, False),  # MQA, seq_q > seq_k, ragged last key tile
        ((1, 8), 2, 777, 1025, 80, torch.float16, False),  # GQA, 64 + 16 columns
        ((2, 2), None, 300, 300, 64, torch.bfloat16, True),  # the model's strided layout
        ((1, 3), None, 200, 1300, 64, torch.bfloat16, False),  # 11 key tiles
    ],
)
@pytest.mark.parametrize("consumers", [2, 3])
def test_gluon_forward_with_its_last_round_split_over_keys_matches_float64(monkeypatch, lead, kv_heads, seq_q, seq_k,
                                                                           head_dim, dtype, packed, consumers):
    """Non-causal, with a program count for which split_keys.plan splits the last round (a launch in
    which programs take two or more whole tiles each, then one of runs over parts of the other
    tiles' keys; where no count gives that, more programs than tiles: every tile in runs), O and
    LSE merged by split_keys.combine, against float64 (O, LSE and flash_triton's backward on them)."""
    gluon, merges = flash_triton.flash_gluon, []
    monkeypatch.setattr(gluon, "SPLIT_FROM_KEYS", dict.fromkeys(gluon.TILES, 0))
    monkeypatch.setattr(gluon, "FROM_KEYS", {d: {False: 0, True: 0} for d in gluon.TILES})
    monkeypatch.setattr(gluon, "CONSUMERS", dict.fromkeys(gluon.TILES, consumers))
    block_n = gluon.tiles(head_dim, consumers)[0]
    units = lead[0] * lead[1] * -(-seq_q // (consumers * gluon.ROWS))
    # two or more whole tiles a program where a count allows it, else fewer tiles than programs
    candidates = [*range(units // 2, 1, -1), *range(4 * units - 1, units, -1)]
    programs = next(p for p in candidates if gluon.split_keys.plan(units, p, -(-seq_k // block_n))[1] >= 2)
    monkeypatch.setattr(gluon, "multiprocessors", lambda device: programs)
    real_combine = gluon.split_keys.combine
    monkeypatch.setattr(gluon.split_keys, "combine", lambda *args: merges.append(args[4:]) or real_combine(*args))
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    check_against_reference(*TRITON, q, k, v, do, False, TOLERANCE[dtype])
    assert merges and all(parts >= 2 for _, parts, _ in merges), merges


@pytest.mark.skipif(not HOPPER or flash_triton.flash_gluon is None, reason="the Gluon forward is written for sm90")
def test_gluon_forward_only_where_it_was_faster(monkeypatch):
    gluon, calls = flash_triton.flash_gluon, []
    real_forward = gluon.forward
    monkeypatch.setattr(gluon, "forward", lambda *args: calls.append(args[0].shape[-1]) or real_forward(*args))
    for head_dim in (64, 128):  # 64 causal over 1000 keys: Triton's forward; 128: Gluon's
        q, k, v, _ = random_qkv((1, 2), 1000, 1000, head_dim, torch.bfloat16, device="cuda")
        flash_attention_triton_with_lse(q, k, v, True)
    assert calls == [128]


GLUON_BACKWARD = HOPPER and flash_triton.flash_gluon_backward is not None


def record_gluon_backward(monkeypatch, everywhere: bool) -> list:
    """The head_dims flash_gluon_backward.backward ran at (directly or through its custom op);
    everywhere: at any shape it fits, not only where it was faster."""
    gluon_backward, calls = flash_triton.flash_gluon_backward, []
    if everywhere:
        monkeypatch.setattr(gluon_backward, "faster_here", lambda head_dim, seq_k: True)
    real_backward = gluon_backward.backward
    monkeypatch.setattr(gluon_backward, "backward", lambda *args: calls.append(args[0].shape[-1]) or real_backward(*args))
    return calls


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon backward is written for sm90")
@pytest.mark.parametrize(
    "lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed",
    [
        ((2, 8), 2, 777, 1025, 64, True, torch.bfloat16, False),  # GQA, seq_q < seq_k
        ((2, 4), 1, 1025, 777, 64, False, torch.bfloat16, False),  # MQA, seq_q > seq_k
        ((2, 2), None, 300, 300, 64, True, torch.float16, True),  # the model's strided layout
        ((1, 4), None, 1000, 1000, 128, True, torch.bfloat16, False),
        ((1, 8), 2, 777, 1025, 128, False, torch.bfloat16, False),
        ((1, 4), 1, 1025, 777, 128, True, torch.float16, False),
        ((1, 2), None, 1, 130, 64, True, torch.bfloat16, False),  # one query row: the second key block sees none
        ((1, 2), None, 4097, 4097, 64, True, torch.bfloat16, True),  # 65 query tiles, 33 key blocks
        # head_dim 128's dQ_i buffers and barriers alternate by tile parity: odd tile counts, long
        ((1, 2), None, 4097, 4097, 128, True, torch.bfloat16, True),
        ((1, 4), 2, 2049, 3001, 128, False, torch.float16, False),
        # head_dim 80 as 64 + 16 columns: the tail's own descriptors, products and dQ_i reduction
        ((2, 8), 2, 777, 1025, 80, True, torch.bfloat16, False),
        ((2, 4), 1, 1025, 777, 80, False, torch.float16, False),
        ((2, 2), None, 300, 300, 80, True, torch.bfloat16, True),
        ((1, 2), None, 4097, 4097, 80, True, torch.bfloat16, True),
    ],
)
def test_gluon_backward_matches_float64_reference(monkeypatch, lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed):
    """The backward FlashAttention2Triton's default hands to flash_gluon_backward on an H100 (it
    must be the one that ran; at every shape here, not only where it is faster), against float64."""
    calls = record_gluon_backward(monkeypatch, everywhere=True)
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[dtype])
    assert calls == [head_dim], "FlashAttention2Triton did not run the Gluon backward"


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon backward is written for sm90")
@pytest.mark.parametrize("programs", [1, 3])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("convert", [True, False])
def test_gluon_backward_persistent_takes_items_in_turn(monkeypatch, programs, is_causal, convert):
    """At head_dim 64 the backward is persistent (non-causal from PERSISTENT_FROM_KEYS, causal
    from PERSISTENT_CAUSAL_FROM_KEYS; here at every length), its items from an atomic counter and
    after them dQ's conversion chunks, each waiting for its head's items (CONVERT_IN_KERNEL; off,
    non-causal items go in a fixed turn and a kernel after converts): with one or three programs
    each takes many (key block, head) items and chunks, so the K/V buffers' phases, the ring's
    count, the dS^T barriers, the dK/dV staging and the heads' signals carry across them; against
    float64 on ragged, GQA and MQA shapes (partial chunks: 777 and 1025 rows a head)."""
    calls = record_gluon_backward(monkeypatch, everywhere=True)
    monkeypatch.setattr(flash_triton.flash_gluon_backward, "PERSISTENT_FROM_KEYS", {64: 0})
    monkeypatch.setattr(flash_triton.flash_gluon_backward, "PERSISTENT_CAUSAL_FROM_KEYS", {64: 0})
    monkeypatch.setattr(flash_triton.flash_gluon_backward, "CONVERT_IN_KERNEL", convert)
    monkeypatch.setattr(flash_triton.flash_gluon, "multiprocessors", lambda device: programs)
    for lead, kv_heads, seq_q, seq_k in (((2, 8), 2, 777, 1025), ((2, 4), 1, 1025, 777), ((1, 4), None, 2049, 2049)):
        q, k, v, do = random_qkv(lead, seq_q, seq_k, 64, torch.bfloat16, device="cuda", seed=seq_q, kv_heads=kv_heads)
        check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[torch.bfloat16])
    assert calls == [64] * 3


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon backward is written for sm90")
def test_gluon_backward_only_where_it_was_faster_and_nondeterminism_is_allowed(monkeypatch):
    calls = record_gluon_backward(monkeypatch, everywhere=False)
    shapes = [(64, 1024, None), (128, 1024, None), (128, 1023, None), (64, 1023, None), (64, 2048, "split")]
    for head_dim, seq, backward in shapes:
        q, k, v, do = random_qkv((1, 2), seq, seq, head_dim, torch.bfloat16, device="cuda")
        FlashAttention2Triton.apply(q, k, v, False, backward).backward(do)
    # by default d64 and d128 from 1024 keys; not at 1023, not "split"
    assert calls == [64, 128]
    q, k, v, do = random_qkv((1, 2), 2048, 2048, 64, torch.bfloat16, device="cuda")
    torch.use_deterministic_algorithms(True)
    try:
        FlashAttention2Triton.apply(q, k, v, True).backward(do)
    finally:
        torch.use_deterministic_algorithms(False)
    with flash_triton.flash_gluon.disabled():  # around the forward only: its decision holds for the backward
        out = FlashAttention2Triton.apply(q, k, v, True)
    out.backward(do)
    monkeypatch.setattr(flash_triton.flash_gluon_backward, "ENABLED", False)  # the Gluon forward alone
    FlashAttention2Triton.apply(q, k, v, True).backward(do)
    assert calls == [64, 128]


class _CountingKernel:
    """A JITFunction stand-in that counts the launches going through `kernel[grid]` (a
    CachedLaunch's first call of each key) and runs the real kernel."""

    def __init__(self, kernel):
        self.kernel, self.params, self.runs = kernel, kernel.params, 0

    def __getitem__(self, grid):
        self.runs += 1
        return self.kernel[grid]


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon kernels are written for sm90")
def test_cached_gluon_launches_follow_every_specialisation(monkeypatch):
    """launch.CachedLaunch sends a repeat of a key straight to the kernel compiled for it: in one
    process, shapes whose integer arguments change what Triton specialises on (divisible by 16
    or not, equal to 1), each twice and in an order that returns to earlier keys, must all match
    float64, with some launches served from the cache (a key coarser than Triton's would run a
    kernel compiled for other values here and fail the comparison)."""
    gluon, gluon_backward = flash_triton.flash_gluon, flash_triton.flash_gluon_backward
    monkeypatch.setattr(gluon, "FROM_KEYS", {d: {False: 0, True: 0} for d in gluon.TILES})
    monkeypatch.setattr(gluon_backward, "faster_here", lambda head_dim, seq_k: True)
    counters = []
    for cached in (gluon._FWD_LAUNCH, gluon_backward._BWD_LAUNCH, flash_triton._PREPROCESS_LAUNCH):
        counters.append(_CountingKernel(cached.kernel))
        monkeypatch.setattr(cached, "kernel", counters[-1])
        monkeypatch.setattr(cached, "compiled", {})
    cases = [(1024, 1024, 64), (1000, 1000, 64), (1, 130, 64), (1024, 1024, 64), (1040, 1040, 128), (1000, 1000, 64),
             (1040, 1040, 128), (1, 130, 64), (777, 1025, 128), (1024, 1024, 64)]
    for seq_q, seq_k, head_dim in cases:
        q, k, v, do = random_qkv((2, 3), seq_q, seq_k, head_dim, torch.bfloat16, device="cuda", seed=seq_q + head_dim)
        check_against_reference(*TRITON, q, k, v, do, True, TOLERANCE[torch.bfloat16])
    launches = (2 * len(cases), len(cases), len(cases))  # forward_with_lse and apply; one backward; its delta
    assert all(0 < counter.runs < total for counter, total in zip(counters, launches)), [c.runs for c in counters]


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon kernels are written for sm90")
def test_repeat_launches_go_direct_to_the_c_launcher(monkeypatch):
    """With Triton 3.6 (the launcher layout launch.DirectLaunch knows) every key the Gluon forward,
    backward and delta kernels store is a DirectLaunch: the float64 tests above then check
    the direct path, not a fallback. Two shapes, the second launch of each through the cache,
    checked against float64 after the direct launches."""
    import triton

    from lmperf.attention import launch

    if not triton.__version__.startswith("3.6."):
        pytest.skip(f"DirectLaunch knows Triton 3.6's launcher; this is {triton.__version__}")
    gluon, gluon_backward = flash_triton.flash_gluon, flash_triton.flash_gluon_backward
    monkeypatch.setattr(gluon, "FROM_KEYS", {d: {False: 0, True: 0} for d in gluon.TILES})
    monkeypatch.setattr(gluon_backward, "faster_here", lambda head_dim, seq_k: True)
    cached = (gluon._FWD_LAUNCH, gluon_backward._BWD_LAUNCH, flash_triton._PREPROCESS_LAUNCH)
    for launcher in cached:
        monkeypatch.setattr(launcher, "compiled", {})
    for seq, head_dim in ((1000, 64), (1040, 128)):
        q, k, v, do = random_qkv((2, 3), seq, seq, head_dim, torch.bfloat16, device="cuda", seed=seq)
        for _ in range(2):
            q.grad = k.grad = v.grad = None  # check_against_reference reads the gradients backward accumulates
            check_against_reference(*TRITON, q, k, v, do, True, TOLERANCE[torch.bfloat16])
    for launcher in cached:
        assert launcher.compiled and all(isinstance(entry, launch.DirectLaunch) for entry in launcher.compiled.values())
    assert any(entry.tensor_maps for entry in gluon._FWD_LAUNCH.compiled.values())


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon kernels are written for sm90")
@pytest.mark.parametrize("head_dim", [64, 128])
def test_forward_backward_replays_from_a_cuda_graph(monkeypatch, head_dim):
    """Captured in a CUDA graph and replayed on new values, the Gluon forward and backward (and the
    delta kernel) match float64: every launch, DirectLaunch's included, goes to the capturing
    stream, and the CUtensorMaps made at capture stay valid for the graph's fixed addresses. The
    causal d=64 backward is the counter-fed persistent one (its counter zeroed inside the graph)."""
    gluon, gluon_backward = flash_triton.flash_gluon, flash_triton.flash_gluon_backward
    monkeypatch.setattr(gluon, "FROM_KEYS", {d: {False: 0, True: 0} for d in gluon.TILES})
    monkeypatch.setattr(gluon_backward, "faster_here", lambda head_dim, seq_k: True)
    *inputs, do = random_qkv((2, 3), 1100, 1100, head_dim, torch.bfloat16, device="cuda", seed=head_dim)
    static = [x.detach().clone().requires_grad_() for x in inputs]
    static_do = do.clone()

    def step():
        return torch.autograd.grad(FlashAttention2Triton.apply(*static, True), static, static_do)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream: compiles and fills the launch caches
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        grads = step()
    *fresh, fresh_do = random_qkv((2, 3), 1100, 1100, head_dim, torch.bfloat16, device="cuda", seed=head_dim + 1)
    with torch.no_grad():
        for target, values in zip([*static, static_do], [*fresh, fresh_do]):
            target.copy_(values)
    graph.replay()
    torch.cuda.synchronize()
    *_, dq, dk, dv = reference(*fresh, fresh_do, True)
    for name, actual, expected in zip(("dq", "dk", "dv"), grads, (dq, dk, dv)):
        assert rel_err(actual, expected) < TOLERANCE[torch.bfloat16], name


@pytest.mark.skipif(not GLUON_BACKWARD, reason="the Gluon backward is written for sm90")
def test_gluon_backward_compiled_on_a_sum_loss(monkeypatch):
    """torch.compile around forward + .sum(): the output gradient arrives expanded (stride 0),
    which TMA cannot address (the backward copies it), and the launch goes through the custom op."""
    calls = record_gluon_backward(monkeypatch, everywhere=True)
    q, k, v, _ = random_qkv((2, 4), 1000, 1000, 64, torch.bfloat16, device="cuda", kv_heads=2)
    compiled = torch.compile(lambda q, k, v: FlashAttention2Triton.apply(q, k, v, True).sum())
    compiled(q, k, v).backward()
    *_, dq, dk, dv = reference(q, k, v, torch.ones_like(q), True)
    for name, actual, expected in (("dq", q.grad, dq), ("dk", k.grad, dk), ("dv", v.grad, dv)):
        assert rel_err(actual, expected) < 3e-2, name
    assert calls == [64]


@pytest.mark.parametrize("head_dim", [64, 80])
@pytest.mark.parametrize("backward", ["ordered", "split"])
def test_deterministic_backwards_are_bitwise_repeatable(backward, head_dim):
    q, k, v, do = random_qkv((4, 8), 2048, 2048, head_dim, torch.bfloat16, device="cuda", kv_heads=2)
    grads = []
    for _ in range(3):
        for t in (q, k, v):
            t.grad = None
        FlashAttention2Triton.apply(q, k, v, True, backward).backward(do)
        grads.append([t.grad.clone() for t in (q, k, v)])
    assert all(torch.equal(a, b) for run in grads[1:] for a, b in zip(grads[0], run))


@pytest.mark.parametrize("backward", [None, "atomic"])
def test_triton_under_torch_compile(backward):
    # "atomic": the TMA bulk reductions' descriptors need Triton's allocator inside compiled code
    q, k, v, do = random_qkv((2, 4), 512, 512, 64, torch.bfloat16, device="cuda")
    compiled = torch.compile(lambda q, k, v, c: FlashAttention2Triton.apply(q, k, v, c, backward))
    check_against_reference(flash_attention_triton_with_lse, compiled, q, k, v, do, True, 3e-2)


@pytest.mark.skipif(not HOPPER, reason="the Gluon kernels and the TMA-reduced dQ run on sm90")
@pytest.mark.parametrize(
    "head_dim, seq, backward",
    [(64, 2048, None), (64, 8192, None), (128, 4096, None), (64, 512, "atomic"), (128, 512, "atomic"), (80, 4096, None),
     (96, 2048, "atomic")],
)
def test_compiled_attention_is_one_graph(head_dim, seq, backward):
    """fullgraph=True: any graph break inside FlashAttention2Triton, forward or backward, is an
    error. The paths: the Gluon backward (d64, d80 and d128 from 1024 keys) and forward (d64 causal
    from 2048, d80 split in two column blocks), flash_triton's atomic backward whose dQ goes by
    TMA when eager (d64 and d128 at 512, below the Gluon backward's lengths, named), and its
    per-thread atomics over two column blocks (d96). Each graph break cost host time in every
    layer of a compiled model (docs/attention.md item 33)."""
    torch._dynamo.reset()
    q, k, v, do = random_qkv((1, 4), seq, seq, head_dim, torch.bfloat16, device="cuda")
    compiled = torch.compile(lambda q, k, v, c: FlashAttention2Triton.apply(q, k, v, c, backward), fullgraph=True)
    check_against_reference(flash_attention_triton_with_lse, compiled, q, k, v, do, True, 3e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_version_on_gpu(dtype):
    q, k, v, do = random_qkv((2, 3), 300, 333, 64, dtype, device="cuda")
    forward = functools.partial(flash_attention_torch_with_lse, tile=64)
    apply = lambda q, k, v, c: FlashAttention2Torch.apply(q, k, v, c, 64)  # noqa: E731
    check_against_reference(forward, apply, q, k, v, do, True, TOLERANCE[dtype])


def test_sdpa_fp32_grouped_query_stays_fused():
    """fp32 SDPA with 16 query heads over 4 K/V heads at 4096 tokens: PyTorch's math fallback
    would hold the 1.07 GB of fp32 scores (1·16·4096² · 4 bytes); a fused kernel holds the
    output, its log-sum-exp and the repeated K/V (~17 MB each). And it matches float64."""
    q, k, v, do = random_qkv((1, 16), 4096, 4096, 64, torch.float32, device="cuda", kv_heads=4)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = attention(q, k, v, is_causal=True, impl="sdpa")
    assert torch.cuda.max_memory_allocated() - before < 16 * 4096 * 4096 * 4 / 8
    del out
    forward = lambda q, k, v, c: naive_attention_with_lse(q, repeat_kv(q, k), repeat_kv(q, v), c)  # noqa: E731
    apply = lambda q, k, v, c: attention(q, k, v, is_causal=c, impl="sdpa")  # noqa: E731
    check_against_reference(forward, apply, q, k, v, do, True, TOLERANCE[torch.float32])


@pytest.mark.parametrize("impl", ["sdpa", "torch", "triton"])
def test_model_bf16_matches_naive(impl):
    loss, grads = model_loss_and_grads(impl, "cuda", "bf16")
    expected_loss, expected_grads = model_loss_and_grads("naive", "cuda", "bf16")
    torch.testing.assert_close(loss, expected_loss, rtol=2e-2, atol=2e-2)
    for grad, expected in zip(grads, expected_grads):
        assert (grad - expected).norm() / expected.norm() < 5e-2
