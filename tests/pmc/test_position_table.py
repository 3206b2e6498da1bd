"""A learned position table (GPT-2's wpe, OPT's positions) is read from a second lookup before the
first layer GEMM only where that lookup stores one row per position, not from every kernel named
after an embedding: inductor's pad_mm copy of the first norm's output is named after the token
lookup it fuses and stores more rows than the lookup did."""

import pytest

from lmperf.pmc.gemms import STORE_BYTES, split_phases
from lmperf.pmc.infer import infer_file
from lmperf.pmc.params import position_table, stores_position_rows
from lmperf.pmc.parse import KernelRecord

from pmc_fixtures import SERVED_CAPTURES, capture_path, parsed, truth

TOKEN_NORM = "triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0"
PADDED_COPY = "triton_poi_fused__to_copy_add_embedding_mean_mm_mul_pow_rsqrt_view_1"
GATHER = "void at::vectorized_gather_kernel<16, long>(char *, char *, T2 *, int, long, long, long, long, bool)"


def lookup(name: str, stored: float | None) -> KernelRecord:
    return KernelRecord(0, name, (1, 1, 1), (256, 1, 1), {} if stored is None else {STORE_BYTES: stored})


@pytest.mark.parametrize(
    "token_stored, stored, seen",
    [
        # B=1, T=150, d=1536, bf16: the token lookup stores 150·1536·2 = 460,800 B; a position
        # table's T rows store as much
        (460_800, 460_800, True),
        # B=2, T=88, d=768, fp32: 176 token rows store 540,672 B; the positions of one sequence,
        # broadcast over the batch, 88·768·4 = 270,336 B (a half)
        (540_672, 270_336, True),
        # pad_mm's copy of the first norm's output: 150 rows rounded up to 152, 152·1536·2 =
        # 466,944 B, more than the lookup's 460,800
        (460_800, 466_944, False),
        # B=1, T=100, d=3200: one padded copy per q, k and v projection, 3·104·3200·2 = 1,996,800 B
        (640_000, 1_996_800, False),
        # a kernel that stores nothing looks nothing up
        (460_800, 0, False),
    ],
)
def test_a_second_lookup_is_a_position_table_where_its_stores_divide_the_tokens(token_stored, stored, seen):
    assert stores_position_rows(lookup(PADDED_COPY, stored), lookup(TOKEN_NORM, token_stored)) is seen


def test_without_store_counters_a_second_lookup_is_read_by_its_name():
    """An older capture without st.global bytes: two gathers before the first GEMM (GPT-2's wte
    and wpe) are all the counters say."""
    assert stores_position_rows(lookup(GATHER, None), lookup(GATHER, None))


# Rotary models run compiled or under CUDA graphs: inductor fuses the token lookup into the first
# RMSNorm (N·d stored) and copies its output into rows padded to a multiple of 8 for the first
# projection (untied heads: the total is the interval's upper end).
PADDED_COPIES = [
    "an_mistral_h12_kv4_t150_compile",
    "aq_qwen3_h16_kv4_t110_compile",
    "ba_qwen3_h8_kv2_t150_compile",
    "bc_qwen3_h8_kv2_t158_compile",
    "bg_qwen2_h14_kv2_t150_graphs_fp16",
    "bs_llama_h20_kv4_t90_graphs",
    "bx_llama_h32_kv8_t60_compile",
    "ci_llama_h32_kv32_t100_autotune",
    "w_qwen2_h16_kv2_t90_graphs",
]


@pytest.mark.parametrize("name", PADDED_COPIES)
def test_a_padded_copy_named_after_the_embedding_leaves_the_total_closed(name):
    """Blocks + final RMSNorm (d) + one V x d matrix (tied) to two (untied); e.g. Mistral's d=1536,
    V=32,768: 50,337,792 + 2·32,768·1,536 + 1,536 = 151,002,624, the total that ran."""
    expected = truth(name)
    d, v, blocks = expected["d_model"], expected["vocab_size"], expected["params_blocks"]
    assert not position_table(split_phases(parsed(name)))
    assert infer_file(capture_path(name)).intervals["params_total"] == (blocks + v * d + d, blocks + 2 * v * d + d)
    assert blocks + 2 * v * d + d == expected["params_total"]


def test_no_served_model_without_a_position_table_reads_one():
    """Every served capture: a rotary model never reads a position table, and GPT-2 and OPT run
    eagerly still do (two gathers apart: the tokens' B·T rows, the positions' B·T or T)."""
    seen = {name: position_table(split_phases(parsed(name))) for name in SERVED_CAPTURES}
    assert [name for name, table in seen.items() if table and not truth(name)["position_table"]] == []
    eager = [name for name in SERVED_CAPTURES if truth(name)["position_table"] and truth(name)["compile"] is None]
    assert len(eager) >= 40 and all(seen[name] for name in eager)
