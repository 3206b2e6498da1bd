"""The vocabulary from byte counters around the LM head, on real captures with a counter edited
the way another kernel choice would report it (expected values from the truth files)."""

import dataclasses

import pytest

from lmperf.pmc import gemms as g
from lmperf.pmc.infer import infer
from lmperf.pmc.parse import read_capture
from lmperf.pmc.gemms import TMA_STORE_BYTES
from lmperf.pmc.vocab import L2_WRITE_SECTORS, SECTOR_BYTES

from pmc_fixtures import capture_path, truth


def _edited(name: str, pick, **metrics):
    """The capture with `metrics` set on every kernel `pick` selects."""
    capture = read_capture(capture_path(name))
    kernels = [dataclasses.replace(k, metrics={**k.metrics, **metrics}) if pick(k) else k for k in capture.kernels]
    return dataclasses.replace(capture, kernels=kernels)


def _lm_head(name: str):
    capture = read_capture(capture_path(name))
    return g.find_layers(g.split_phases(capture).forward).lm_head


def test_generate_pins_the_vocabulary_by_the_fp32_copy_of_the_logits():
    # as if the last-position head stored with TMA (0 st.global bytes): the copy after it still
    # stores B·V·4 bytes
    name = "g_gpt2_h12_p37"
    head = _lm_head(name)
    capture = _edited(name, lambda k: k.name == head.name, **{g.STORE_BYTES: 0.0})
    result = infer(capture)
    assert result.values["vocab_size"] == truth(name)["vocab_size"]
    assert "fp32 copy of the logits" in result.evidence["vocab_size"]


@pytest.mark.parametrize("metric, scale", [(TMA_STORE_BYTES, 1), (L2_WRITE_SECTORS, SECTOR_BYTES)])
def test_a_tma_store_head_is_pinned_by_its_output_bytes(metric, scale):
    name = "s_llama_h14_kv2_t200"  # bf16 nvjet head, 0 st.global bytes, V = 32000
    expected = truth(name)
    rows = expected["batch"] * expected["seq_len"]
    head = _lm_head(name)
    capture = _edited(name, lambda k: k.index == head.index, **{metric: rows * expected["vocab_size"] * 2 / scale})
    result = infer(capture)
    assert result.values["vocab_size"] == expected["vocab_size"]
    assert "vocab_size" not in result.intervals


def test_output_bytes_that_are_no_whole_number_of_rows_leave_an_interval():
    name = "s_llama_h14_kv2_t200"
    expected = truth(name)
    rows = expected["batch"] * expected["seq_len"]
    head = _lm_head(name)
    # L2 write sectors of all sources were about 1.5 x N·V·bytes on the probe (not from the SMs)
    capture = _edited(
        name,
        lambda k: k.index == head.index,
        **{L2_WRITE_SECTORS: rows * expected["vocab_size"] * 3 / SECTOR_BYTES + 7},
    )
    result = infer(capture)
    assert result.values["vocab_size"] is None
    low, high = result.intervals["vocab_size"]
    assert low <= expected["vocab_size"] <= high


@pytest.mark.parametrize("weight_copy_whole, pinned", [(True, True), (False, False)])
def test_a_compiled_autocast_head_is_pinned_by_the_copy_of_its_weight(weight_copy_whole, pinned):
    """lmperf's compiled forward keeps its weights in fp32 and casts the head's V x d weight to bf16
    just before the head. With the head's own TMA bytes 16% over N·V·2 B (as a 400x64 nvjet head
    stored them), the cast's V·d·2 bytes pin V; cast bytes that are no whole number of d·2 leave
    an interval."""
    name = "l_lmperf_h12_t144_compile"
    expected = truth(name)
    rows, vocab, d = expected["batch"] * expected["seq_len"], expected["vocab_size"], expected["d_model"]
    head = _lm_head(name)
    over = {TMA_STORE_BYTES: rows * vocab * 2 * 1.16, L2_WRITE_SECTORS: rows * vocab * 2 * 1.16 / SECTOR_BYTES}
    capture = _edited(name, lambda k: k.index == head.index, **over)
    casts = [k for k in capture.kernels if k.index < head.index and g.stored_width(k, d, 2) == vocab]
    assert len(casts) == 1 and "copy" in casts[0].name
    if not weight_copy_whole:
        capture = dataclasses.replace(
            capture,
            kernels=[
                dataclasses.replace(k, metrics={**k.metrics, g.STORE_BYTES: vocab * d * 2 + 2}) if k in casts else k
                for k in capture.kernels
            ],
        )
    result = infer(capture)
    if pinned:
        assert result.values["vocab_size"] == vocab
        assert "copy of its weight" in result.evidence["vocab_size"]
    else:
        assert result.values["vocab_size"] is None
        low, high = result.intervals["vocab_size"]
        assert low <= vocab <= high


def test_a_copy_of_half_the_logits_bytes_is_no_reading_the_head_tiles_deny():
    """Blind batch at's lmperf compiled training step: a kernel after the head stores N·V·2 B (the
    logits' gradient in bf16), which reads as an fp32 copy of V/2 logits, inside the bound the
    rows' padding leaves. The head's tiles (152 wide) hold V = 10,000 and not 5,000: with the cast
    of its weight gone, V is an interval holding the truth, not 5,000."""
    name = "at_lmperf_h8_t128_train_compile"
    expected = truth(name)
    vocab, d = expected["vocab_size"], expected["d_model"]
    capture = read_capture(capture_path(name))
    casts = [k for k in capture.kernels if g.stored_width(k, d, 2) == vocab and "copy" in k.name]
    assert casts
    capture = dataclasses.replace(capture, kernels=[k for k in capture.kernels if k not in casts])
    result = infer(capture)
    assert result.values["vocab_size"] is None
    low, high = result.intervals["vocab_size"]
    assert low <= vocab <= high and low > vocab // 2


def test_lmperf_fused_loss_row_kernel_pins_the_vocabulary():
    """lmperf's fused loss writes each row's gradient over its logits (V values) and one fp32 loss:
    7 rows of V = 1,000 bf16 logits store 7·(1,000·2 + 4) bytes; bytes that are no whole number of
    such rows pin nothing."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import fused_loss_vocab

    def loss_kernel(stored: float) -> KernelRecord:
        return KernelRecord(0, "_cross_entropy_rows_kernel", (7, 1, 1), (256, 1, 1), metrics={g.STORE_BYTES: stored})

    assert fused_loss_vocab([loss_kernel(7 * (1000 * 2 + 4))], 2) == 1000
    assert fused_loss_vocab([loss_kernel(7 * (1000 * 4 + 4))], 4) == 1000
    assert fused_loss_vocab([loss_kernel(7 * (1000 * 2 + 4) + 2)], 2) is None
    assert fused_loss_vocab([loss_kernel(7 * 4)], 2) is None  # losses alone: no logits stored


def test_a_compiled_lmperf_step_reads_the_vocabulary_from_its_fused_loss():
    """Blind batch w's compiled lmperf training step: its LM head stores with TMA more bytes than
    N·V·2 (no whole number of rows), so only the fused loss's row kernel pins V."""
    name = "w_lmperf_h16_t160_train_compile_fused"
    assert infer(read_capture(capture_path(name))).values["vocab_size"] == truth(name)["vocab_size"]


@pytest.mark.parametrize(
    "name",
    [
        "j_gpt2_h20_t90_graphs",  # 90 rows, fp16, CUDA graphs
        "b_gpt2_h25_t301_cudnn",  # 301 rows, bf16
        "c_gpt2_h20_t77_cudnn",  # 4 x 77 rows, fp16
        "s_gpt2_h25_t333_flash",
        "s_gpt2_h40_t96_eff",  # 3 x 96 rows
    ],
)
def test_a_split_k_cutlass_head_is_pinned_by_its_slices_stores(name):
    """GPT-2's LM head of 50,257 columns runs as a serial split-K cutlass GEMM (grid z = 2, 128 x
    128 tiles): its st.global bytes are 2 x (N·V·2 + 4·ceil(N/128)·ceil(V/128)), which only
    V = 50,257 gives; two bytes more or less is no reading."""
    expected = truth(name)
    result = infer(read_capture(capture_path(name)))
    assert result.values["vocab_size"] == expected["vocab_size"], result.evidence["vocab_size"]
    assert "2 split-K slices" in result.evidence["vocab_size"]
    head = _lm_head(name)
    for off in (-2, 2):  # stays divisible by the two slices
        capture = _edited(name, lambda k: k.index == head.index, **{g.STORE_BYTES: head.metrics[g.STORE_BYTES] + off})
        result = infer(capture)
        low, high = result.intervals["vocab_size"]
        assert result.values["vocab_size"] is None and low <= expected["vocab_size"] <= high


def test_an_fp32_split_k_head_summing_in_a_workspace_is_pinned_by_fadd_and_stores():
    """Blind batch az's fp32 Llama (170 token rows, V = 32,000): its LM head is cuBLAS's xmma
    SIMT GEMM of 64 x 64 tiles split along k in two (grid (3, 500, 2)). One slice stores its
    partial sums over the padded 3 x 64 = 192 rows, and one FADD an element adds them: FADD =
    192·32,000 = 6,144,000 and st.global bytes = (170 + 192)·32,000·4 = 46,336,000. Either
    counter off by a little is no reading, and V stays an interval that holds the truth."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import split_k_sums_vocab

    name = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_execute_kernel"

    def head(fadd, stored):
        metrics = {g.FFMA: 1.0, g.FADD: fadd, g.STORE_BYTES: stored}
        return KernelRecord(0, name, (3, 500, 2), (128, 1, 1), metrics)

    assert split_k_sums_vocab(head(6_144_000, 46_336_000), 170) == 32_000
    assert split_k_sums_vocab(head(6_144_000, 46_336_000 + 4), 170) is None
    assert split_k_sums_vocab(head(6_144_000 + 192, 46_336_000), 170) is None
    assert split_k_sums_vocab(dataclasses.replace(head(6_144_000, 46_336_000), grid=(3, 500, 1)), 170) is None
    assert split_k_sums_vocab(head(6_144_000, 0), 170) is None  # no stores counted

    capture_name = "az_llama_h10_kv5_t170_eager_fp32"
    expected = truth(capture_name)
    result = infer(read_capture(capture_path(capture_name)))
    assert result.values["vocab_size"] == expected["vocab_size"] == 32_000
    assert "4 B for each FADD" in result.evidence["vocab_size"]
    lm_head = _lm_head(capture_name)
    edited = _edited(capture_name, lambda k: k.index == lm_head.index, **{g.FADD: lm_head.metrics[g.FADD] + 192})
    result = infer(edited)
    low, high = result.intervals["vocab_size"]
    assert result.values["vocab_size"] is None and low <= expected["vocab_size"] <= high


def test_an_fp32_split_k_head_sums_over_whole_column_tiles_of_a_padded_vocabulary():
    """Blind batch ce's fp32 Phi-3-mini shape (80 token rows, V = 32,064, no multiple of 128): its
    LM head is cuBLAS's xmma SIMT GEMM of 128 x 128 tiles split along k in two (grid (1, 251, 2)).
    The first slice's partial sums fill whole tiles, 128 padded rows x 251·128 = 32,128 columns, so
    FADD = 128·32,128 = 4,112,384 (not 128·32,064 = 4,104,192), and st.global bytes = 80·32,064·4 +
    4·4,112,384 = 26,710,016. The stores give V; a FADD count of unpadded columns, or stores one
    row of logits short, give none."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import split_k_sums_vocab

    name = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4"

    def head(fadd, stored):
        metrics = {g.FFMA: 1.0, g.FADD: fadd, g.STORE_BYTES: stored}
        return KernelRecord(0, name, (1, 251, 2), (128, 1, 1), metrics)

    assert split_k_sums_vocab(head(4_112_384, 26_710_016), 80) == 32_064
    assert split_k_sums_vocab(head(4_104_192, 80 * 32_064 * 4 + 4 * 4_104_192), 80) is None
    assert split_k_sums_vocab(head(4_112_384, 26_710_016 - 32_064 * 4), 80) is None


def test_a_head_over_a_padded_copy_of_its_weight_holds_v_within_eight():
    """Blind batch az's compiled GPT-2 (V = 50,257, d 768): inductor copies the head's weight
    padded to 50,264 = 8·6,283 rows before the head (77,205,504 B = 50,264·768·2), and no counter
    pins V, so V lies in [50,257, 50,264]. Without that copy's stores the interval is the head's
    tiles' again, far wider. Only the kernel just before the head counts, and not where its rows
    are the N token rows a final norm stores."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import padded_weight_vocab

    name = "az_gpt2_h12_t150_compile"
    expected = truth(name)
    assert -(-expected["vocab_size"] // 8) * 8 * expected["d_model"] * 2 == 77_205_504
    result = infer(read_capture(capture_path(name)))
    assert result.values["vocab_size"] is None
    assert result.intervals["vocab_size"] == (50_257, 50_264)
    assert "copies its weight padded to 50264" in result.evidence["vocab_size"]

    pad = _edited(name, lambda k: k.metrics.get(g.STORE_BYTES) == 77_205_504, **{g.STORE_BYTES: 0.0})
    low, high = infer(pad).intervals["vocab_size"]
    assert high - low > 1000 and low <= expected["vocab_size"] <= high

    def copy(rows):
        return KernelRecord(0, "triton_poi_fused_mm_t", (rows, 1, 1), (128, 1, 1), {g.STORE_BYTES: rows * 768 * 2.0})

    assert padded_weight_vocab([copy(50_264)], 450, 768, 2, 45_480, 50_432) == 50_264
    # only the kernel just before the head: another weight's cast before it is no reading
    assert padded_weight_vocab([copy(50_264), copy(46_000)], 450, 768, 2, 45_480, 50_432) == 46_000
    assert padded_weight_vocab([copy(50_264), copy(100)], 450, 768, 2, 45_480, 50_432) is None
    assert padded_weight_vocab([copy(50_257)], 450, 768, 2, 45_480, 50_432) is None  # no multiple of 8
    assert padded_weight_vocab([copy(50_440)], 450, 768, 2, 45_480, 50_432) is None  # outside the tiles
    assert padded_weight_vocab([copy(46_000)], 46_000, 768, 2, 45_480, 50_432) is None  # N rows of d


def _padded_logits_sectors(rows: int, width: int, tile: int, box: int = 64, size: int = 2) -> int:
    """32-byte sectors a TMA-store head touches writing `rows` x `width` logits of `size` bytes in
    column tiles of `tile`, each stored in boxes of `box` columns (128 B in 16 bits)."""
    touched = 0
    for row in range(rows):
        start = row * width * size
        for first in range(0, width, tile):
            for left in range(first, min(first + tile, width), box):
                right = min(left + box, first + tile, width)
                touched += (start + right * size - 1) // SECTOR_BYTES - (start + left * size) // SECTOR_BYTES + 1
    return touched


@pytest.mark.parametrize("name, rows", [("ci_gpt2_h16_t200_graphs_fp16", 400), ("bd_gpt2_h16_t120_compile_fp16", 480)])
def test_a_head_over_the_padded_weight_stores_the_padded_logits_and_leaves_v_within_eight(name, rows):
    """Blind batches ci's and bd's fp16 GPT-2 (V = 50,257, d 1024) ran inductor's pad_mm: the
    kernel before the head copies its weight to 50,264 rows (102,940,672 B = 50,264·1024·2) and
    the head (nvjet 192x208 / 192x160, TMA stores) writes N x 50,264 logits, which the graph
    returns sliced to 50,257 columns as a view: the range ends at the head, with no loss and no
    copy of the logits. Its rows of 100,528 B start 16 B off a sector every other row, so in
    64-column boxes a row touches 785·4 + 2 = 3,142 sectors or 785·5 + 2 = 3,927: ci's 400 rows
    200·7,069 = 1,413,800 sectors (45,241,600 B, 12.5% over N·50,264·2), bd's 480 rows 1,696,560.
    Those bytes read as 45,241,600 / 800 = 56,552 columns at ci, which the head's tiles (49,921 to
    50,304) refuse; no counter sees the 50,257 real columns, so V stays [50,257, 50,264]."""
    from lmperf.pmc.vocab import tma_vocab

    expected = truth(name)
    head = _lm_head(name)
    padded = -(-expected["vocab_size"] // 8) * 8
    assert head.metric(L2_WRITE_SECTORS) == _padded_logits_sectors(rows, padded, 192)
    assert head.metric(L2_WRITE_SECTORS) != _padded_logits_sectors(rows, expected["vocab_size"], 192)
    assert head.metric(TMA_STORE_BYTES) == head.metric(L2_WRITE_SECTORS) * SECTOR_BYTES
    if rows == 400:
        assert _padded_logits_sectors(rows, padded, 192) == 200 * (3_142 + 3_927) == 1_413_800
        assert tma_vocab(head, rows, 2)[0] == 56_552
    result = infer(read_capture(capture_path(name)))
    assert result.values["vocab_size"] is None
    assert result.intervals["vocab_size"] == (50_257, 50_264)
    assert "copies its weight padded to 50264" in result.evidence["vocab_size"]


def test_the_padded_copy_of_the_weight_reads_the_rows_it_pads():
    """The same CUDA-graph GPT-2 as batch ci's, captured again with the L2 read sectors collected
    (tests/pmc/fixtures/l2reads): the pad_mm copy before the head stores 50,264 rows of d = 1024
    in fp16 and reads 3,216,448 sectors, 3,216,448·32 = 102,926,336 B = 50,257·1024·2, the V
    rows it copies. Without that counter, as in batch ci, V stays [50,257, 50,264]."""
    from pmc_fixtures import FIXTURES

    from lmperf.pmc.vocab import L2_READ_SECTORS

    path = FIXTURES / "l2reads" / "gpt2_h16_t200_graphs_fp16.csv.gz"
    capture = read_capture(path)
    copy = _lm_head_leader(capture)
    assert copy.metric(L2_READ_SECTORS) == 3_216_448 and copy.metric(g.STORE_BYTES) == 50_264 * 1024 * 2
    result = infer(capture)
    assert result.values["vocab_size"] == 50_257
    assert "reads V·d·2 B" in result.evidence["vocab_size"]
    unread = dataclasses.replace(
        capture,
        kernels=[dataclasses.replace(k, metrics={**k.metrics, L2_READ_SECTORS: None}) for k in capture.kernels],
    )
    assert infer(unread).intervals["vocab_size"] == (50_257, 50_264)


def test_a_final_norm_before_the_head_is_no_copy_of_its_weight():
    """A norm storing the N token rows of d reads them too: with N = 400 rows of d = 1024 in
    fp16 (819,200 B stored, 25,600 sectors read), its reads would give 400 rows, which is N, not V;
    a d-wide copy of 50,264 rows reading 3,216,448 sectors gives 50,257."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import L2_READ_SECTORS, copied_weight_vocab

    def kernel(stored_rows, sectors, name):
        metrics = {g.STORE_BYTES: stored_rows * 1024 * 2, L2_READ_SECTORS: sectors}
        return KernelRecord(0, name, (400, 1, 1), (256, 1, 1), metrics)

    norm = kernel(400, 400 * 1024 * 2 // SECTOR_BYTES, "triton_per_fused_native_layer_norm_8")
    assert copied_weight_vocab([norm], 400, 1024, 2) is None
    copy = kernel(50_264, 3_216_448, "triton_poi_fused_mm_t_9")
    assert copied_weight_vocab([copy], 400, 1024, 2) == 50_257


def _lm_head_leader(capture):
    """The kernel just before the LM head."""
    head = g.find_layers(g.split_phases(capture).forward).lm_head
    return capture.kernels[capture.kernels.index(head) - 1]


def test_the_weight_cast_nearest_the_head_gives_v_before_other_weights_casts():
    """Blind batch bl's lmperf model under CUDA graphs (V = 10,000, d 2048, d_ff 5632): autocast
    casts the down-projection's 5632 x 2048 weight five kernels before the head and the head's
    10,000 x 2048 weight just before it; both store a whole number of d-wide bf16 rows, and both
    lie in the head's bound (10,208), so the cast nearest the head is read first."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import readings

    def cast(rows):
        return KernelRecord(
            0, "triton_poi_fused__to_copy_t", (rows, 1, 1), (128, 1, 1), {g.STORE_BYTES: rows * 2048 * 2.0}
        )

    def other(index):
        return KernelRecord(index, "triton_poi_fused__unsafe_view_mul_silu", (704, 1, 1), (256, 1, 1), {})

    head = KernelRecord(9, "nvjet_sm90_tst_88x64_64x11_4x1_v_bz_TNN", (4, 29, 1), (384, 1, 1), {})
    leaders = [cast(5632), other(1), other(2), other(3), cast(10_000)]
    assert [v for v, _ in readings(head, [], 64, "bf16", leaders, 2048)] == [10_000, 5632]

    name = "bl_lmperf_h16_t64_graphs"
    result = infer(read_capture(capture_path(name)))
    assert result.values["vocab_size"] == truth(name)["vocab_size"] == 10_000


@pytest.mark.parametrize(
    "name, gradient_reading",
    [
        # 128 rows of 50,272 logits: the gradient's 12,869,632 B = 128·25,136·4, and 25,136 lies
        # between the head's tile readings 16,641-16,768 and 49,921-50,304
        ("k_opt_h12_t128_train_compile", 25_136),
        # 160 rows of 10,000 logits: 3,200,000 B = 160·5,000·4, within the head's bound of 10,752
        ("cb_lmperf_h16_t160_train_compile", 5_000),
    ],
)
def test_the_logits_gradient_in_16_bits_is_no_fp32_copy_of_half_the_logits(name, gradient_reading):
    """Compiled bf16 training steps: the backward's first kernel after the head stores the logits'
    gradient, N·V·2 B, which read as an fp32 copy gives V/2. With the head's own TMA stores 16%
    over N·V·2 B (as a 400x64 nvjet head stored them), that V/2 was read with confidence; only a
    forward copy counts as the fp32 copy, and the cast of the head's weight before it (V·d·2 B)
    pins V."""
    expected = truth(name)
    rows, vocab = expected["batch"] * expected["seq_len"], expected["vocab_size"]
    assert vocab // 2 == gradient_reading
    head = _lm_head(name)
    over = {TMA_STORE_BYTES: rows * vocab * 2 * 1.16, L2_WRITE_SECTORS: rows * vocab * 2 * 1.16 / SECTOR_BYTES}
    capture = _edited(name, lambda k: k.index == head.index, **over)
    copies = [k for k in capture.kernels if k.index > head.index and "copy" in k.name]
    gradients = [k for k in copies if k.metrics.get(g.STORE_BYTES) == rows * vocab * 2]
    assert gradients and all(k in g.split_phases(capture).backward for k in gradients)
    result = infer(capture)
    assert result.values["vocab_size"] == vocab, result.evidence["vocab_size"]
    assert "copy of its weight" in result.evidence["vocab_size"]


def test_only_a_forward_copy_after_the_head_is_the_fp32_copy_of_the_logits():
    """128 rows of 50,272 logits: the forward's fp32 upcast stores 128·50,272·4 = 25,739,264 B
    (V = 50,272), the backward's bf16 cast of their gradient 128·50,272·2 = 12,869,632 B, which as
    fp32 values would be 25,136 logits a row. Only the forward's copy is read; without a forward
    copy there is no reading."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.vocab import readings

    def copy(index, name, stored):
        return KernelRecord(index, name, (12_568, 1, 1), (128, 1, 1), {g.STORE_BYTES: stored})

    head = KernelRecord(0, "nvjet_sm90_tst_192x128_64x5_2x1_v_bz_coopB_TNT", (2, 66, 1), (384, 1, 1), {})
    upcast = copy(1, "void at::unrolled_elementwise_kernel<at::direct_copy_kernel_cuda>", 25_739_264.0)
    gradient = copy(2, "void at::vectorized_elementwise_kernel<8, at::bfloat16_copy_kernel_cuda>", 12_869_632.0)
    assert [v for v, _ in readings(head, [upcast, gradient], 128, "bf16")] == [50_272, 25_136]
    assert [v for v, _ in readings(head, [upcast, gradient], 128, "bf16", gradients=[gradient])] == [50_272]
    assert readings(head, [gradient], 128, "bf16", gradients=[gradient]) == []


def test_a_reading_between_the_head_tiles_readings_is_refused():
    """An OPT-like compiled step's head: 192x128 tiles in 2x1 clusters, 128 rows, d 768, doing
    128·50,304·768 MACs. Rows padded to 384 leave 16,768 = 131·128 columns (V in 16,641-16,768);
    rows in one 128 tile leave 50,304 = 131·384 (V in 49,921-50,304). A copy storing 128·25,136·4 B
    reads V = 25,136: inside the readings' outer span, inside neither reading, so it is refused and
    the next reading is tried; 50,272 and 16,700 each lie inside one."""
    from lmperf.pmc.parse import KernelRecord, TENSOR_PATHS
    from lmperf.pmc.result import Inference
    from lmperf.pmc.vocab import set_vocab

    work = {TENSOR_PATHS["bf16"]: 2.0 * 128 * 50_304 * 768}  # two tensor ops a multiply-add
    head = KernelRecord(0, "nvjet_sm90_tst_192x128_64x5_2x1_v_bz_coopB_TNT", (2, 66, 1), (384, 1, 1), work)
    tiles = g.width_readings(head, 128, 768)
    assert sorted(tiles) == [(16_641, 16_768), (49_921, 50_304)]

    def copy(index, vocab):
        return KernelRecord(
            index, "triton_poi_fused__to_copy", (1, 1, 1), (128, 1, 1), {g.STORE_BYTES: 128 * vocab * 4.0}
        )

    def read(*vocabs):
        result = Inference()
        result.values["dtype"] = "bf16"
        followers = [copy(i + 1, v) for i, v in enumerate(vocabs)]
        return set_vocab(result, head, followers, 128, 16_641, 50_304, tiles=tiles), result.values["vocab_size"]

    assert read(25_136) == (False, None)
    assert read(25_136, 50_272) == (True, 50_272)
    assert read(16_700) == (True, 16_700)
    # without tile readings (a head whose name declares none) the work bound alone decides
    result = Inference()
    result.values["dtype"] = "bf16"
    assert set_vocab(result, head, [copy(1, 25_136)], 128, 16_641, 50_304)
    assert result.values["vocab_size"] == 25_136
