"""PyTorch's memory-efficient attention forward (cutlass): its schedule's exact tensor work and
stores, and the heads of a width no other reading takes that they show."""

import pytest

from lmperf.pmc.attention_shape import (
    _mem_efficient_ops,
    _mem_efficient_shape,
    _mem_efficient_stores,
    _mem_efficient_tiles,
    fused_shape,
)
from lmperf.pmc.gemms import STORE_BYTES, TENSOR_PATHS
from lmperf.pmc.infer import infer
from lmperf.pmc.parse import KernelRecord, read_capture

from pmc_fixtures import capture_path, truth

_F32_128 = (
    "fmha_cutlassF_f32_aligned_64x128_rf_sm80"
    "(PyTorchMemEffAttention::AttentionKernel<float, arch::Sm80, 1, 64, 128, 128, 1, 1>::Params)"
)


def _forward(grid: tuple[int, int, int], ops: float, stored: float) -> KernelRecord:
    metrics = {TENSOR_PATHS["tf32"]: ops, STORE_BYTES: stored}
    return KernelRecord(0, _F32_128, grid, (32, 8, 1), metrics)


@pytest.mark.parametrize(
    ("tokens", "grid", "ops", "stored", "read"),
    [
        # B=1, T=64, 32 heads of 100 (d 3200) in fp32, causal: one 64-row query tile sees one
        # 128-key block; Q·K^T 64·128·128 (100 in 4 steps of 32) = 1,048,576 and P·V 64·128·64
        # (64 keys in 2 steps) = 524,288 multiply-adds a head, x 2 ops x 3 TF32 passes x 32 heads
        # = 301,989,888 tensor ops; its stores are 64·3200·4 = 819,200 B of unpadded outputs
        (64, (1, 32, 1), 301_989_888.0, 819_200.0, (1, 64, 32, 100)),
        # a training step adds 32 heads' log-sum-exps of 64 rows: 819,200 + 32·64·4 = 827,392 B
        (64, (1, 32, 1), 301_989_888.0, 827_392.0, (1, 64, 32, 100)),
        # T=100 causal, two query tiles: the first sees 64 keys (1,048,576 + 524,288), the second
        # 100 (1,048,576 + 64·128·128): 3,670,016 multiply-adds a head, x 6 x 32 = 704,643,072
        (100, (2, 32, 1), 704_643_072.0, 1_280_000.0, (1, 100, 32, 100)),
        # the same under a mask passed as a tensor: both tiles see all 100 keys, 4,194,304 a head
        (100, (2, 32, 1), 805_306_368.0, 1_280_000.0, (1, 100, 32, 100)),
        # its log-sum-exps are rows padded to 32: 100·3200·4 + 32·128·4 = 1,296,384 B
        (100, (2, 32, 1), 704_643_072.0, 1_296_384.0, (1, 100, 32, 100)),
        # N·H log-sum-exps unpadded (100·3200·4 + 100·32·4) are not what it stores
        (100, (2, 32, 1), 704_643_072.0, 1_292_800.0, None),
        # heads of 96 (Q·K^T 64·128·96): 251,658,240 ops are not what heads of 100 run
        (64, (1, 32, 1), 251_658_240.0, 819_200.0, None),
        # one pass (no 3xTF32) is no fp32 forward's work: 100,663,296
        (64, (1, 32, 1), 100_663_296.0, 819_200.0, None),
        # outputs padded to 104 (64·32·104·4 = 851,968 B) are not heads of 100 run unpadded (the
        # padded-head reading, `_padded_heads`, takes those)
        (64, (1, 32, 1), 301_989_888.0, 851_968.0, None),
        # a grid of 2 query tiles is not T=64's one
        (64, (2, 32, 1), 301_989_888.0, 819_200.0, None),
    ],
)
def test_a_memory_efficient_forward_shows_heads_of_100_by_its_grid_work_and_stores(tokens, grid, ops, stored, read):
    """Heads of 100 are no plausible width; the memory-efficient forward reads them only where
    its grid (query tiles, H, B) names B and H, its tensor work is exactly its schedule's, and
    its stores are the unpadded N·d outputs (with its log-sum-exps, rows padded to 32)."""
    kernel = _forward(grid, ops, stored)
    shape = _mem_efficient_shape(kernel, tokens, 3200)
    if read is None:
        assert shape is None
        return
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == read
    assert shape.error == 0 and "names B=1, H=32" in shape.evidence and "heads unpadded" in shape.evidence
    assert fused_shape(kernel, tokens, 3200) == shape  # no head of a plausible width fits it


@pytest.mark.parametrize(
    "name",
    [
        "ac_neox_h20_t72_eager_fp32",  # fp32, 64 x 64 tiles, causal over two query tiles
        "ce_llama_h32_kv32_t80_eager_fp32",  # fp32, 64 x 128 tiles, heads of 96
        "ci_opt_h32_t70_eager_fp32",  # heads of 80 in 3 steps of 32, the output tile 128 wide
        "af_qwen3_h16_kv4_t90_compile_fp32",  # torch.compile's mask: every tile sees all T keys
        "ah_qwen3_h16_kv4_t72_train_compile_fp32",  # a training step: log-sum-exps of rows to 96
        "e_llama_hd128_h16_kv2_t301_eff",  # bf16: one pass
        "s_gpt2_h40_t96_eff",  # fp16, B=3
    ],
)
def test_the_memory_efficient_schedule_counts_every_launch_exactly(name):
    """The schedule's work (`_mem_efficient_ops`) is what every memory-efficient forward launch of
    a capture counts at the configuration that ran, causal in an eager step and masked in a
    compiled one, and its stores are the N·d outputs with or without padded log-sum-exps."""
    expected = truth(name)
    B, T, H = expected["batch"], expected["seq_len"], expected["n_heads"]
    hd = expected["head_dim"]
    causal = expected.get("compile") is None  # the sweep ran eager, without the key
    launches = [k for k in read_capture(capture_path(name)).kernels if "fmha_cutlassF" in k.name]
    assert launches
    for kernel in launches:
        tiles = _mem_efficient_tiles(kernel)
        counted = sum(kernel.metric(m) for m in TENSOR_PATHS.values())
        assert _mem_efficient_ops(tiles, B, H, hd, T, causal) == counted
        assert _mem_efficient_ops(tiles, B, H, hd, T, not causal) != counted or T <= tiles[1]
        assert _mem_efficient_stores(kernel, tiles[0], B, H, T, H * hd)


def test_the_fp32_forward_of_heads_of_100_reads_as_ran():
    """OpenLLaMA-3B's shape in fp32 eager (32 heads of 100, d 3200, B=1, T=64): SDPA runs the
    memory-efficient forward on heads of 100 unpadded; every attention field as ran."""
    name = "ch_llama_h32_kv32_t64_eager_fp32"
    result, expected = infer(read_capture(capture_path(name))), truth(name)
    for field in ("batch", "seq_len", "n_heads", "n_kv_heads", "head_dim"):
        assert result.values[field] == expected[field], result.evidence[field]
        assert result.confidence[field] == 0.9
    assert "tensor ops are exactly its causal schedule's over heads of 100" in result.evidence["head_dim"]
    low, high = result.intervals["params_total"]
    assert low <= expected["params_total"] <= high
