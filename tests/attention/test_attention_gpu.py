"""GPU checks (skipped without CUDA): every kernel path in fp32/fp16/bf16 at real sizes.

`python -m pytest -m gpu tests/attention` on a GPU machine. The portable Triton kernels run on any
CUDA GPU; the Gluon kernels (lmperf.attention.sm90) need an H100 (sm90) and the Triton they were
written for (dispatch.GLUON_TRITON), else their tests skip.
"""

import functools

import pytest
import torch

from attention_reference import check_against_reference, model_loss_and_grads, random_qkv, reference, rel_err
from lmperf.attention import attention, repeat_kv
from lmperf.attention.flash_torch import FlashAttention2Torch, flash_attention_torch_with_lse
from lmperf.attention.naive import naive_attention_with_lse

triton = pytest.importorskip("triton")
from lmperf.attention import dispatch, flash_triton  # noqa: E402  (Triton needed from here on)
from lmperf.attention.flash_triton import FlashAttention2Triton, flash_attention_triton_with_lse  # noqa: E402
from lmperf.attention.triton_kernels import tiles  # noqa: E402

pytestmark = pytest.mark.gpu
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}
TRITON = (flash_attention_triton_with_lse, FlashAttention2Triton.apply)
HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
GLUON = HOPPER and dispatch.GLUON_TRITON_OK
needs_gluon = pytest.mark.skipif(not GLUON, reason="the Gluon kernels need sm90 and Triton " + dispatch.GLUON_TRITON)
if GLUON:
    from lmperf.attention.sm90 import backward as sm90_backward
    from lmperf.attention.sm90 import combine, schedule, tuning
    from lmperf.attention.sm90 import forward as sm90_forward


@pytest.fixture(autouse=True)
def fixed_tiles(monkeypatch):
    """Fixed tiles keep compilation short; test_autotuned_tiles covers the tuned path."""
    monkeypatch.setattr(tiles, "AUTOTUNE", False)


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
    monkeypatch.setattr(tiles, "AUTOTUNE", True)
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
    """Each portable backward against float64 (the Gluon backward off: it has tests of its own);
    "atomic" adds dQ by TMA bulk reductions where it can (d=64 and 128 here, on Hopper),
    "atomic-per-thread" is the same backward with per-thread atomics."""
    monkeypatch.setattr(tiles, "AUTOTUNE", autotune)
    monkeypatch.setattr(dispatch, "ENABLED", False)
    if backward == "atomic-per-thread":
        monkeypatch.setattr(dispatch, "dq_by_tma", lambda q, head_dim, second_block: False)
        backward = "atomic"
    q, k, v, do = random_qkv(lead, seq_q, seq_k, head_dim, torch.bfloat16, device="cuda", seed=7, kv_heads=kv_heads)
    apply = lambda q, k, v, c: FlashAttention2Triton.apply(q, k, v, c, backward)  # noqa: E731
    check_against_reference(flash_attention_triton_with_lse, apply, q, k, v, do, is_causal, 3e-2)


def gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed):
    """q, k, v (requiring grad) and dO of a Gluon test case; packed: (B, H, T, d) views of a
    (B, T, 3, H, d) projection, as the model slices them (seq_k = seq_q, no GQA)."""
    if not packed:
        return random_qkv(lead, seq_q, seq_k, head_dim, dtype, device="cuda", seed=seq_q, kv_heads=kv_heads)
    packed_qkv = torch.randn(lead[0], seq_q, 3, lead[1], head_dim, device="cuda", dtype=dtype)
    q, k, v = (t.requires_grad_() for t in packed_qkv.permute(2, 0, 3, 1, 4).unbind(0))
    return q, k, v, torch.randn_like(q)


def record_gluon_forward(monkeypatch) -> list:
    """The head dims sm90.forward.forward ran at (directly or through its custom op)."""
    calls, real_forward = [], sm90_forward.forward
    monkeypatch.setattr(sm90_forward, "forward", lambda *args: calls.append(args[0].shape[-1]) or real_forward(*args))
    return calls


def record_gluon_backward(monkeypatch) -> list:
    """The head dims sm90.backward.backward ran at (directly or through its custom op)."""
    calls, real_backward = [], sm90_backward.backward
    monkeypatch.setattr(
        sm90_backward, "backward", lambda *args: calls.append(args[0].shape[-1]) or real_backward(*args)
    )
    return calls


@pytest.fixture
def gluon_everywhere():
    """The Gluon kernels at every shape they fit, not only where they were faster."""
    with tuning.variant(forward_from_keys={}, backward_from_keys=1):
        yield


@needs_gluon
@pytest.mark.parametrize(
    "lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed",
    [
        ((2, 3), None, 1000, 1000, 64, True, torch.bfloat16, False),
        ((2, 3), None, 1000, 1000, 64, False, torch.float16, False),
        ((1, 8), 2, 777, 1025, 128, True, torch.bfloat16, False),  # GQA, seq_q < seq_k
        ((1, 4), 1, 1025, 777, 128, False, torch.bfloat16, False),  # MQA, seq_q > seq_k
        ((2, 2), None, 300, 300, 64, True, torch.bfloat16, True),  # the model's strided layout
        ((1, 2), None, 1, 130, 128, True, torch.float16, False),  # one query row
        ((1, 2), None, 4097, 4097, 128, True, torch.bfloat16, True),  # 33 query tiles, 33 key tiles
        # head_dim 80 as 64 + 16 columns (two descriptors and chained products per tile)
        ((2, 3), None, 1000, 1000, 80, True, torch.bfloat16, False),
        ((1, 8), 2, 777, 1025, 80, False, torch.float16, False),  # GQA, seq_q < seq_k
        ((2, 2), None, 300, 300, 80, True, torch.bfloat16, True),  # the model's strided layout
    ],
)
# programs: None, one per SM; 3, each takes many query tiles (causal: in the host's order, or
# pairs of them in a fixed turn), so the ring's running count and the barriers' phases carry
# across them. key_tile 64: key tiles shorter than a program's rows, so that the first consumer
# releases the tiles it skips.
@pytest.mark.parametrize(
    "programs, ordered, key_tile", [(None, True, 128), (3, True, 128), (3, False, 128), (None, False, 64)]
)
def test_gluon_forward_matches_float64_reference(
    monkeypatch,
    gluon_everywhere,
    lead,
    kv_heads,
    seq_q,
    seq_k,
    head_dim,
    is_causal,
    dtype,
    packed,
    programs,
    ordered,
    key_tile,
):
    """The forward flash_triton hands to sm90.forward (it must be the one that ran), with the
    portable backward on its O and LSE, against float64; every length here leaves a ragged last
    program of 128 rows."""
    if not ordered and not is_causal and key_tile == 128:
        pytest.skip("non-causal forwards take single tiles in a fixed turn either way")
    if programs:
        monkeypatch.setattr(schedule, "multiprocessors", lambda device: programs)
    calls = record_gluon_forward(monkeypatch)
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    with tuning.variant(
        ordered_causal=frozenset(tuning.HEAD_DIMS) if ordered else frozenset(),
        key_tile=key_tile,
        backward_from_keys=10**9,
    ):
        check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[dtype])
    assert calls, "flash_triton did not run the Gluon forward"


@needs_gluon
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
def test_gluon_forward_with_its_last_round_split_over_keys_matches_float64(
    monkeypatch, gluon_everywhere, lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed
):
    """Non-causal, with a program count for which schedule.split_plan splits the last round (a
    launch in which programs take two or more whole tiles each, then one of runs over parts of
    the other tiles' keys; where no count gives that, more programs than tiles: every tile in
    runs), O and LSE merged by sm90.combine, against float64 (O, LSE and the backward on them)."""
    merges = []
    block_n = tuning.DEFAULT.key_tile
    units = lead[0] * lead[1] * -(-seq_q // (tuning.CONSUMERS * tuning.ROWS))
    # two or more whole tiles a program where a count allows it, else fewer tiles than programs
    candidates = [*range(units // 2, 1, -1), *range(4 * units - 1, units, -1)]
    programs = next(p for p in candidates if schedule.split_plan(units, p, -(-seq_k // block_n))[1] >= 2)
    monkeypatch.setattr(schedule, "multiprocessors", lambda device: programs)
    real_combine = combine.combine
    monkeypatch.setattr(combine, "combine", lambda *args: merges.append(args[4:]) or real_combine(*args))
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    with tuning.variant(split_from_keys=dict.fromkeys(tuning.HEAD_DIMS, 0)):
        check_against_reference(*TRITON, q, k, v, do, False, TOLERANCE[dtype])
    assert merges and all(parts >= 2 for _, parts, _ in merges), merges


@needs_gluon
def test_gluon_forward_only_where_it_was_faster(monkeypatch):
    calls = record_gluon_forward(monkeypatch)
    for head_dim in (64, 128):  # 64 causal over 1000 keys: the portable forward; 128: Gluon's
        q, k, v, _ = random_qkv((1, 2), 1000, 1000, head_dim, torch.bfloat16, device="cuda")
        flash_attention_triton_with_lse(q, k, v, True)
    assert calls == [128]


@needs_gluon
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
@pytest.mark.parametrize("persistent", [False, True])
def test_gluon_backward_matches_float64_reference(
    monkeypatch, gluon_everywhere, lead, kv_heads, seq_q, seq_k, head_dim, is_causal, dtype, packed, persistent
):
    """The backward FlashAttention2Triton's default hands to sm90.backward (it must be the one that
    ran), against float64: a program per item, and (head_dim 64, the only one with the shared
    memory for it) persistent at every length."""
    if persistent and head_dim not in tuning.DEFAULT.persistent_backward_from_keys:
        pytest.skip("persistent only where a second K/V buffer fits")
    calls = record_gluon_backward(monkeypatch)
    q, k, v, do = gluon_case_inputs(lead, kv_heads, seq_q, seq_k, head_dim, dtype, packed)
    with tuning.variant(persistent_backward_from_keys={64: 0} if persistent else {}):
        check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[dtype])
    assert calls == [head_dim], "FlashAttention2Triton did not run the Gluon backward"


@needs_gluon
@pytest.mark.parametrize("programs", [1, 3])
@pytest.mark.parametrize("is_causal", [False, True])
def test_gluon_backward_persistent_takes_items_and_conversion_chunks_in_turn(
    monkeypatch, gluon_everywhere, programs, is_causal
):
    """The persistent backward's items come from an atomic counter and after them dQ's conversion
    chunks, each waiting for its head's items: with one or three programs each takes many (key
    block, head) items and chunks, so the K/V buffers' phases, the ring's count, the dS^T
    barriers, the dK/dV staging and the heads' signals carry across them; against float64 on
    ragged, GQA and MQA shapes (partial chunks: 777 and 1025 rows a head)."""
    calls = record_gluon_backward(monkeypatch)
    monkeypatch.setattr(schedule, "multiprocessors", lambda device: programs)
    with tuning.variant(persistent_backward_from_keys={64: 0}):
        for lead, kv_heads, seq_q, seq_k in (
            ((2, 8), 2, 777, 1025),
            ((2, 4), 1, 1025, 777),
            ((1, 4), None, 2049, 2049),
        ):
            q, k, v, do = random_qkv(
                lead, seq_q, seq_k, 64, torch.bfloat16, device="cuda", seed=seq_q, kv_heads=kv_heads
            )
            check_against_reference(*TRITON, q, k, v, do, is_causal, TOLERANCE[torch.bfloat16])
    assert calls == [64] * 3


@needs_gluon
def test_gluon_backward_only_where_it_was_faster_and_nondeterminism_is_allowed(monkeypatch):
    calls = record_gluon_backward(monkeypatch)
    threshold = tuning.DEFAULT.backward_from_keys
    shapes = [
        (64, threshold, None),
        (128, threshold, None),
        (128, threshold - 1, None),
        (64, threshold - 1, None),
        (64, 2048, "split"),
    ]
    for head_dim, seq, backward in shapes:
        q, k, v, do = random_qkv((1, 2), seq, seq, head_dim, torch.bfloat16, device="cuda")
        FlashAttention2Triton.apply(q, k, v, False, backward).backward(do)
    assert calls == [64, 128]  # from the threshold on; not below it, not "split"
    q, k, v, do = random_qkv((1, 2), 2048, 2048, 64, torch.bfloat16, device="cuda")
    torch.use_deterministic_algorithms(True)
    try:
        FlashAttention2Triton.apply(q, k, v, True).backward(do)
    finally:
        torch.use_deterministic_algorithms(False)
    with dispatch.gluon_disabled():  # around the forward only: its decision holds for the backward
        out = FlashAttention2Triton.apply(q, k, v, True)
    out.backward(do)
    with tuning.variant(backward_from_keys=10**9):  # the Gluon forward alone
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


@needs_gluon
def test_cached_gluon_launches_follow_every_specialisation(monkeypatch, gluon_everywhere):
    """launch.CachedLaunch sends a repeat of a key straight to the kernel compiled for it: in one
    process, shapes whose integer arguments change what Triton specialises on (divisible by 16
    or not, equal to 1), each twice and in an order that returns to earlier keys, must all match
    float64, with some launches served from the cache (a key coarser than Triton's would run a
    kernel compiled for other values here and fail the comparison)."""
    counters = []
    for cached in (sm90_forward._FWD_LAUNCH, sm90_backward._BWD_LAUNCH, flash_triton._PREPROCESS_LAUNCH):
        counters.append(_CountingKernel(cached.kernel))
        monkeypatch.setattr(cached, "kernel", counters[-1])
        monkeypatch.setattr(cached, "compiled", {})
    cases = [
        (1024, 1024, 64),
        (1000, 1000, 64),
        (1, 130, 64),
        (1024, 1024, 64),
        (1040, 1040, 128),
        (1000, 1000, 64),
        (1040, 1040, 128),
        (1, 130, 64),
        (777, 1025, 128),
        (1024, 1024, 64),
    ]
    for seq_q, seq_k, head_dim in cases:
        q, k, v, do = random_qkv((2, 3), seq_q, seq_k, head_dim, torch.bfloat16, device="cuda", seed=seq_q + head_dim)
        check_against_reference(*TRITON, q, k, v, do, True, TOLERANCE[torch.bfloat16])
    launches = (2 * len(cases), len(cases), len(cases))  # forward_with_lse and apply; one backward; its delta
    assert all(0 < counter.runs < total for counter, total in zip(counters, launches)), [c.runs for c in counters]


@needs_gluon
def test_repeat_launches_go_direct_to_the_c_launcher(monkeypatch, gluon_everywhere):
    """With Triton 3.6 (the launcher layout launch.DirectLaunch knows) every key the Gluon forward,
    backward and delta kernels store is a DirectLaunch: the float64 tests above then check
    the direct path, not a fallback. Two shapes, the second launch of each through the cache,
    checked against float64 after the direct launches."""
    from lmperf.attention import launch

    if not triton.__version__.startswith("3.6."):
        pytest.skip(f"DirectLaunch knows Triton 3.6's launcher; this is {triton.__version__}")
    cached = (sm90_forward._FWD_LAUNCH, sm90_backward._BWD_LAUNCH, flash_triton._PREPROCESS_LAUNCH)
    for launcher in cached:
        monkeypatch.setattr(launcher, "compiled", {})
    for seq, head_dim in ((1000, 64), (1040, 128)):
        q, k, v, do = random_qkv((2, 3), seq, seq, head_dim, torch.bfloat16, device="cuda", seed=seq)
        for _ in range(2):
            q.grad = k.grad = v.grad = None  # check_against_reference reads the gradients backward accumulates
            check_against_reference(*TRITON, q, k, v, do, True, TOLERANCE[torch.bfloat16])
    for launcher in cached:
        assert launcher.compiled and all(isinstance(entry, launch.DirectLaunch) for entry in launcher.compiled.values())
    assert any(entry.tensor_maps for entry in sm90_forward._FWD_LAUNCH.compiled.values())


@needs_gluon
@pytest.mark.parametrize("head_dim", [64, 128])
def test_forward_backward_replays_from_a_cuda_graph(gluon_everywhere, head_dim):
    """Captured in a CUDA graph and replayed on new values, the Gluon forward and backward (and the
    delta kernel) match float64: every launch, DirectLaunch's included, goes to the capturing
    stream, and the CUtensorMaps made at capture stay valid for the graph's fixed addresses. The
    causal d=64 backward is the counter-fed persistent one (its counter zeroed inside the graph)."""
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


@needs_gluon
def test_gluon_backward_compiled_on_a_sum_loss(monkeypatch, gluon_everywhere):
    """torch.compile around forward + .sum(): the output gradient arrives expanded (stride 0),
    which TMA cannot address (the backward copies it), and the launch goes through the custom op."""
    calls = record_gluon_backward(monkeypatch)
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


@needs_gluon
def test_a_causal_forward_under_cuda_graphs_keeps_its_table_in_the_ordinary_pool(gluon_everywhere):
    """torch.compile(mode="reduce-overhead") warms a graph up in its private pool, whose blocks its
    outputs reuse and whose live blocks it checks against them: the causal forward's order table,
    built for a new shape inside that warm-up and kept, comes from the ordinary pool (pool id
    (0, 0)), and the replays read it right."""
    kept = set(schedule._TABLES)
    compiled = torch.compile(lambda q, k, v: FlashAttention2Triton.apply(q, k, v, True), mode="reduce-overhead")
    for seed in range(3):
        q, k, v, do = random_qkv((1, 3), 1111, 1111, 128, torch.bfloat16, device="cuda", seed=seed)
        with torch.no_grad():
            out = compiled(q.detach(), k.detach(), v.detach()).clone()
        assert rel_err(out, reference(q, k, v, do, True)[0]) < 3e-2, seed
    (table,) = [schedule._TABLES[key] for key in set(schedule._TABLES) - kept]
    segments = torch.cuda.memory._snapshot()["segments"]
    address = table.data_ptr()
    (pool,) = [s["segment_pool_id"] for s in segments if s["address"] <= address < s["address"] + s["total_size"]]
    assert tuple(pool) == (0, 0)


@needs_gluon
@pytest.mark.parametrize(
    "head_dim, seq, backward",
    [
        (64, 2048, None),
        (64, 8192, None),
        (128, 4096, None),
        (64, 512, "atomic"),
        (128, 512, "atomic"),
        (80, 4096, None),
        (96, 2048, "atomic"),
    ],
)
def test_compiled_attention_is_one_graph(head_dim, seq, backward):
    """fullgraph=True: any graph break inside FlashAttention2Triton, forward or backward, is an
    error. The paths: the Gluon backward (d64, d80 and d128 from 1024 keys) and forward (d64 causal
    from 2048, d80 split in two column blocks), the portable atomic backward whose dQ goes by
    TMA when eager (d64 and d128 at 512, below the Gluon backward's lengths, named), and its
    per-thread atomics over two column blocks (d96). A graph break costs host time in every
    layer of a compiled model."""
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
