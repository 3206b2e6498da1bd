"""Inference on every committed capture: structural fields against the configuration that ran."""

import json

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.pmc.infer import infer_file
from lmperf.pmc.result import FIELDS

from pmc_fixtures import (
    FIXTURES,
    GENERATE_CAPTURES,
    MODEL_CAPTURES,
    SERVED_CAPTURES,
    SERVED_GENERATE,
    SWEEP_CAPTURES,
    capture_path,
    truth,
)

EXACT = ("mode", "dtype", "batch", "seq_len", "n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "mlp")


@pytest.mark.parametrize("name", MODEL_CAPTURES + SWEEP_CAPTURES + SERVED_CAPTURES)
def test_structural_fields_match_the_configuration_that_ran(name):
    result, expected = infer_file(capture_path(name)), truth(name)
    for field in EXACT:
        assert result.values[field] == expected[field], (field, result.evidence.get(field))
    assert_blocks_exact_or_bounded(result, expected["params_blocks"])
    if expected["mode"] == "train_step":  # the loss's log-softmax pins the vocabulary
        assert result.values["vocab_size"] == expected["vocab_size"]
    assert_vocabulary_is_exact_or_bounded(result, expected["vocab_size"])


def assert_blocks_exact_or_bounded(result, blocks: int) -> None:
    """The blocks' parameters exact where the kernels show which projections add a bias, else no
    value with an interval holding them (fp32 SIMT GEMMs and templates add biases unnamed)."""
    if result.values["params_blocks"] is not None:
        assert result.values["params_blocks"] == blocks, result.evidence["params_blocks"]
    else:
        low, high = result.intervals["params_blocks"]
        assert low <= blocks <= high, (low, high, result.evidence["params_blocks"])


def assert_vocabulary_is_exact_or_bounded(result, vocab: int) -> None:
    """A pinned vocabulary is exact; an unpinned one is no value with an interval holding it."""
    if result.values["vocab_size"] is not None:
        assert result.values["vocab_size"] == vocab and "vocab_size" not in result.intervals
        return
    low, high = result.intervals["vocab_size"]
    assert low <= vocab <= high, (low, high, result.evidence["vocab_size"])


@pytest.mark.parametrize("name", MODEL_CAPTURES)
def test_every_field_has_a_confidence_and_evidence(name):
    result = infer_file(FIXTURES / f"{name}.csv.gz")
    for field in FIELDS:
        assert 0.0 < result.confidence[field] <= 1.0
        assert result.evidence[field]


def test_a_capture_that_is_no_language_model_reports_what_is_missing():
    result = infer_file(FIXTURES / "cli_cmd_matmul.csv.gz")  # one 512x512 fp32 matmul
    assert result.values["n_layers"] is None and result.values["d_model"] is None
    assert result.missing
    assert result.values["dtype"] == "fp32"


def test_cli_json_prints_one_object_with_every_key():
    out = CliRunner().invoke(app, ["pmc", "infer", str(FIXTURES / "llama_l4_d512_gqa.csv.gz"), "--json"])
    assert out.exit_code == 0
    payload = json.loads(out.stdout)
    assert set(FIELDS) | {"confidence", "evidence"} <= set(payload)
    assert payload["n_kv_heads"] == 2 and payload["mlp"] == "gated"


def test_cli_report_is_readable():
    out = CliRunner().invoke(app, ["pmc", "infer", str(FIXTURES / "gpt2_l4_d512.csv.gz")])
    params_line = next(line for line in out.stdout.splitlines() if line.strip().startswith("params_total"))
    assert out.exit_code == 0 and "n_layers" in out.stdout
    assert ", ?]" in params_line and "position table" in params_line  # GPT-2's wpe: open above


@pytest.mark.parametrize(
    "name",
    ["s_llama_h14_kv2_t200", "s_qwen2_h14_kv2_t200", "b_opt_h12_t129_flash", "b_gpt2_h14_t513_fp32", "b_neox_h20_t200"],
)
def test_a_forward_pass_bounds_the_total_by_tied_and_untied_heads(name):
    """Counted from the modules (truth), tied or not, with or without a position table: the
    total lies in the interval; without a position table (rotary models) the interval is exactly
    one V x d matrix wide, the difference between a tied and an untied head."""
    result, expected = infer_file(capture_path(name)), truth(name)
    low, high = result.intervals["params_total"]
    v_low, v_high = result.intervals.get("vocab_size", (result.values["vocab_size"],) * 2)
    assert result.values["params_total"] is None and low <= expected["params_total"] * 1.01
    if expected["position_table"]:
        assert high is None
    else:  # one matrix more when untied (and the vocabulary's own interval, when it has one)
        assert high - low == (2 * v_high - v_low) * expected["d_model"]
        end = low if expected["tied_embeddings"] else high  # blocks within 1% (Qwen2's biases)
        assert abs(end - expected["params_total"]) <= 0.01 * expected["params_total"]


@pytest.mark.parametrize("args", [["pmc", "infer", "/no/such.csv"], ["pmc", "infer", __file__]])
def test_cli_bad_input_is_one_line_and_exit_2(args):
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "name, extent",
    [
        ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x256x8_stage3_warpsize2x4x1", 256),
        ("nvjet_sm90_tst_64x40_64x16_1x4_h_bz_NNT", 64),
        ("void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm_f16_128x128_tn_align8>(T1::Params)", 128),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", None),
    ],
)
def test_tile_extent_bounds_the_padding_of_a_width(name, extent):
    from lmperf.pmc.gemms import tile_extent

    assert tile_extent(name) == extent


@pytest.mark.parametrize("name", ["gpt2_l4_d512", "s_llama_h14_kv2_t200"])
def test_an_unpinned_vocabulary_is_null_with_an_interval_in_json_and_text(name):
    # bf16 LM heads with Hopper TMA stores (no store bytes counted) and no loss kernel
    path, vocab = str(capture_path(name)), truth(name)["vocab_size"]
    payload = json.loads(CliRunner().invoke(app, ["pmc", "infer", path, "--json"]).stdout)
    assert payload["vocab_size"] is None and payload["params_total"] is None
    assert payload["vocab_size_min"] <= vocab <= payload["vocab_size_max"]
    # no upper bound where a learned position table of unknown length is looked up (GPT-2)
    assert payload["params_total_min"] <= truth(name)["params_total"]
    assert (payload["params_total_max"] is None) == truth(name)["position_table"]
    low, high = payload["vocab_size_min"], payload["vocab_size_max"]
    assert f"[{low:,}, {high:,}]" in CliRunner().invoke(app, ["pmc", "infer", path]).stdout


@pytest.mark.parametrize("name, vocab", [("s_gpt2_h14_t77_eager", 50257), ("s_gpt2_h12_t200_fp32", 8000)])
def test_the_lm_heads_store_bytes_pin_the_vocabulary_without_a_loss(name, vocab):
    # bf16 with V odd (no TMA store) and fp32: N·V·bytes requested by st.global
    result = infer_file(capture_path(name))
    assert truth(name)["mode"] == "forward"
    assert result.values["vocab_size"] == vocab and "global store bytes" in result.evidence["vocab_size"]


def test_a_capture_without_the_store_counter_is_still_read():
    result = infer_file(FIXTURES / "gpt2_l4_d768.csv.gz")  # collected before the counter was added
    assert result.values["d_model"] == 768 and "vocab_size" in result.intervals


@pytest.mark.parametrize("name", GENERATE_CAPTURES + SERVED_GENERATE)
def test_a_generate_capture_gives_prompt_decode_steps_and_the_architecture(name):
    result, expected = infer_file(capture_path(name)), truth(name)
    assert result.values["mode"] == "generate"
    assert result.values["prompt_len"] == expected["prompt_len"]
    assert result.values["decode_steps"] == expected["decode_steps"]
    for field in ("dtype", "batch", "n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "mlp"):
        assert result.values[field] == expected[field], (field, result.evidence.get(field))
    assert_vocabulary_is_exact_or_bounded(result, expected["vocab_size"])
    payload = result.to_json()
    assert payload["prompt_len"] == expected["prompt_len"] and "decode_steps" in result.report()


def _decode_only(name: str, skip: int):
    """The capture's kernels after its prefill's LM head (plus `skip` more): decode steps alone."""
    import dataclasses
    from lmperf.pmc.generate import split_steps
    from lmperf.pmc.parse import read_capture

    capture = read_capture(capture_path(name))
    prefill_head = split_steps(capture).steps[0][-1].index
    return dataclasses.replace(capture, kernels=[k for k in capture.kernels if k.index > prefill_head + skip])


SEVERAL_DECODE_STEPS = [n for n in GENERATE_CAPTURES if truth(n)["decode_steps"] > 1]
ONE_DECODE_STEP = [n for n in GENERATE_CAPTURES if truth(n)["decode_steps"] == 1]


@pytest.mark.parametrize("name", ONE_DECODE_STEP)
@pytest.mark.parametrize("skip", [0, 30])
def test_a_lone_decode_step_gives_the_architecture_or_nothing_wrong(name, skip):
    """One decode step without its prefill (Llama eager, Qwen2, Mistral at batch 2, all GQA):
    no second step repeats, and its attention ran one query per sequence against the cache.
    Opened right after the prefill (skip 0) it is known for a decode step: B from its token rows,
    head_dim and both head counts from its rotary tables and rotated q and k, confirmed by the
    K/V-cache update, whose rows give the prompt. Opened inside the sampling (skip 30), what is
    read must still be right."""
    from lmperf.pmc.infer import infer

    result, expected = infer(_decode_only(name, skip)), truth(name)
    for field in ("n_layers", "d_model", "d_ff", "mlp", "dtype"):
        assert result.values[field] == expected[field], (field, result.evidence.get(field))
    shape = ("batch", "n_heads", "n_kv_heads", "head_dim", "vocab_size", "prompt_len")
    for field in shape:
        assert result.values.get(field) in (None, expected[field]), (field, result.evidence.get(field))
    if skip == 0:
        assert result.values["mode"] == "generate" and result.values["decode_steps"] == 1
        assert [result.values[f] for f in shape] == [expected[f] for f in shape]
        assert_blocks_exact_or_bounded(result, expected["params_blocks"])


@pytest.mark.parametrize("name", SEVERAL_DECODE_STEPS)
@pytest.mark.parametrize("skip", [0, 30])  # the range opens right after the prefill, or mid-step
def test_decode_steps_without_their_prefill_give_the_prompt_and_the_architecture(name, skip):
    import dataclasses
    from lmperf.pmc.generate import split_steps
    from lmperf.pmc.infer import infer
    from lmperf.pmc.parse import read_capture

    capture, expected = read_capture(capture_path(name)), truth(name)
    prefill_head = split_steps(capture).steps[0][-1].index
    decode_only = dataclasses.replace(capture, kernels=[k for k in capture.kernels if k.index > prefill_head + skip])
    result = infer(decode_only)
    assert result.values["mode"] == "generate"
    assert result.values["decode_steps"] == expected["decode_steps"]
    assert result.values["prompt_len"] == expected["prompt_len"]
    for field in (
        "dtype",
        "batch",
        "n_layers",
        "d_model",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "d_ff",
        "mlp",
        "vocab_size",
        "params_blocks",
    ):
        assert result.values[field] == expected[field], (field, result.evidence.get(field))


def test_a_learned_position_table_is_seen_as_a_second_lookup():
    """Every committed capture: GPT-2 and OPT look up a position table before their first layer
    (truth: the module has one), rotary models do not."""
    from lmperf.pmc import gemms as g
    from lmperf.pmc.params import position_table
    from lmperf.pmc.parse import read_capture

    names = [
        p.name.removesuffix(".truth.json")
        for folder in (FIXTURES, FIXTURES / "sweep")
        for p in sorted(folder.glob("*.truth.json"))
    ]
    checked = [
        (name, position_table(g.split_phases(read_capture(capture_path(name)))))
        for name in names
        if "position_table" in truth(name)
    ]
    assert len(checked) >= 60 and any(seen for _, seen in checked) and not all(seen for _, seen in checked)
    assert [name for name, seen in checked if seen != truth(name)["position_table"]] == []


@pytest.mark.parametrize(
    "name",
    [
        "c_opt_h40_t200_fp32",
        "c_lmperf_h28_t129_triton",
        "c_gpt2_h20_t77_cudnn",
        "b_llama_hd128_h28_kv7_t190_flash",
        "b_neox_h20_t200",
        "d_opt_h20_t300_flash",
    ],
)
def test_the_blind_batches_misses_are_read_now(name):
    """The six captures of the blind batches that failed at their one blind scoring (fp32 SIMT
    GEMMs with split-K epilogues, fp32 Triton attention, an equal-grid cuDNN tie, FlashAttention's
    split-KV grid, exact GELU, a LayerNorm count taken for OPT's ReLU width): every structural
    field against the configuration that ran."""
    result, expected = infer_file(capture_path(name)), truth(name)
    for field in EXACT:
        assert result.values[field] == expected[field], (field, result.evidence.get(field))


def _served(name: str) -> tuple:
    """A served capture's kernels and the configuration that ran."""
    from lmperf.pmc.parse import read_capture

    path = FIXTURES / "served" / f"{name}.csv.gz"
    return read_capture(path), json.loads(path.with_name(f"{name}.truth.json").read_text())


def test_a_compiled_norm_grid_allows_a_last_program_of_fewer_rows():
    """torch.compile's norms run 2 (or 4) rows a program: 116 programs hold 231 rows or 232."""
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.tokens import token_candidates

    norm = KernelRecord(0, "triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0", (116, 1, 1), (512, 1, 1))
    rows = token_candidates([norm])
    assert rows[231] == rows[232] > 0 and rows[230] == 0


def test_a_compiled_step_of_odd_token_rows_reads_its_attention():
    """Blind batch z's Llama under CUDA graphs: B·T = 3·77 = 231 token rows, an odd count its
    compiled norms (2 rows a program, 116 programs) share with 232, and its LM head multiplies
    232 rows (the input padded to 8). The attention's grid fits B·T = 231 alone, and the head's
    stores hold V over the padded rows: every field against the configuration that ran."""
    _assert_every_field_read_as_ran("z_llama_h24_kv8_t77_graphs")


def _assert_every_field_read_as_ran(name: str) -> None:
    """Every structural field and V exact, the parameters of the blocks exact or in their interval
    and the total within 1% or its interval (tied or untied head) holding the truth."""
    from lmperf.pmc.infer import infer

    capture, expected = _served(name)
    result = infer(capture)
    for field in (*EXACT, "vocab_size"):
        assert result.values[field] == expected[field], (field, result.evidence.get(field))
    assert_blocks_exact_or_bounded(result, expected["params_blocks"])
    if result.values["params_total"] is not None:  # a training step's optimizer counts them
        assert result.values["params_total"] == pytest.approx(expected["params_total"], rel=0.01)
    else:
        low, high = result.intervals["params_total"]  # high None: open above (a learned table)
        assert low <= expected["params_total"] and (high is None or expected["params_total"] <= high)


def test_a_fused_qkv_of_two_fitting_widths_is_read_from_its_rotated_q_and_k():
    """Blind batch z's GPT-NeoX, eager attention compiled: its fused QKV GEMM's tiles fit 1536
    (4 K/V heads) or 3072 (16) columns, and a norm storing two N·d rows counts N·2048, a width
    between the two readings that read as 8 K/V heads. The rotary kernel after the GEMM stores q
    and k, N·(d + K/V width) elements: 16 heads, as ran."""
    _assert_kv_heads_read_as_ran("z_neox_h16_t150_eager_compile", "q and k")


def _assert_kv_heads_read_as_ran(name: str, how: str) -> None:
    """The K/V heads exact, read the way `how` names, and the parameters of the blocks with them."""
    from lmperf.pmc.infer import infer

    capture, expected = _served(name)
    result = infer(capture)
    assert result.values["n_kv_heads"] == expected["n_kv_heads"], result.evidence["n_kv_heads"]
    assert how in result.evidence["n_kv_heads"]
    assert_blocks_exact_or_bounded(result, expected["params_blocks"])


def test_a_fused_qkv_of_two_fitting_widths_and_no_rotary_store_is_only_bounded():
    """The same capture without its rotary kernels and without the TMA store counter (as
    captured before collect asked for it): nothing picks one of the widths the tiles allow, so
    the K/V heads, and the parameters resting on them, are intervals holding the configuration
    that ran, not a guess."""
    import dataclasses

    from lmperf.pmc.gemms import TMA_STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, expected = _served("z_neox_h16_t150_eager_compile")
    unrotated = [
        dataclasses.replace(k, metrics={m: v for m, v in k.metrics.items() if m != TMA_STORE_BYTES})
        for k in capture.kernels
        if not ("cos" in k.name and "sin" in k.name)
    ]
    result = infer(dataclasses.replace(capture, kernels=unrotated))
    for field in ("n_kv_heads", "params_blocks", "params_total"):
        low, high = result.intervals[field]
        assert result.values[field] is None and low <= expected[field] <= high, (field, result.evidence[field])
    assert result.to_json()["n_kv_heads_min"] < expected["n_kv_heads"]


def test_a_fused_qkv_read_by_its_tma_stores_where_its_bias_count_is_padded():
    """Batch j's GPT-2 under CUDA graphs, 90 token rows in fp16: the fused QKV's tiles allow
    1408 to 3840 columns, its bias epilogue counts padded rows (96·3840 FADD), and nothing after
    it stores the product whole; its TMA stores, 691,200 B = 90·3840·2 B, give 20 K/V heads.
    (Its vocabulary comes from the split-K LM head's stores: test_vocab.)"""
    _assert_kv_heads_read_as_ran("j_gpt2_h20_t90_graphs", "TMA store bytes = N·3840·2 B")
    _assert_every_field_read_as_ran("j_gpt2_h20_t90_graphs")


def test_a_fused_qkv_read_by_its_bias_epilogue_or_else_only_bounded():
    """Batch u's GPT-2 training step: its fused QKV's tiles allow 1536 (6 K/V heads) or 2304
    (12) columns over 256 rows; the GEMM's epilogue adds one bias an output, 589,824 FADD =
    256·2304: 12 heads, as ran. Batch n's GPT-NeoX step without its bias count and without the
    kernel that copies the product whole: a norm's two N·d rows count N·1536, the width of 6
    heads, which is no evidence, so the K/V heads are an interval holding the 12 that ran."""
    import dataclasses

    from lmperf.pmc.infer import infer
    from lmperf.pmc.parse import FADD

    _assert_kv_heads_read_as_ran("u_gpt2_h12_t128_train_compile", "epilogue")
    capture, expected = _served("n_neox_h12_t96_train_compile")
    kernels = [
        dataclasses.replace(k, metrics={**k.metrics, FADD: 0.0}) if "bias" in k.name else k
        for k in capture.kernels
        if "cat_split" not in k.name
    ]
    result = infer(dataclasses.replace(capture, kernels=kernels))
    low, high = result.intervals["n_kv_heads"]
    assert result.values["n_kv_heads"] is None and low <= expected["n_kv_heads"] <= high, result.evidence["n_kv_heads"]


def test_counts_at_multiples_of_d_are_no_evidence_of_a_fused_width():
    """N = 10, d = 64: N·128 and N·192 (two and three d-wide rows) go, N·96 stays; a count with
    one fp32 statistic a row (row_extra 2) that reads as N·128 goes too."""
    from lmperf.pmc.counts import StoredCounts
    from lmperf.pmc.kv_heads import _counts_off_multiples

    counts = StoredCounts({1280: 2, 1920: 1, 960: 4, 1300: 1})
    counts.row_extra = 2
    kept = _counts_off_multiples(counts, 10, 64)
    assert dict(kept) == {960: 4} and kept.row_extra == 2


def test_a_gemm_that_stores_its_own_output_gives_the_kv_width():
    """Blind batch w's Mistral under max-autotune: B·T = 64 rows, and its K projection, a Triton
    template, does 64·1024·256 MACs and stores 64·256·2 B itself. Its causal mask stores T² =
    4,096 = N·64 elements, a width within the row padding a 64-row GEMM allows, that read as one
    K/V head; the GEMM's own store says 256 columns: 4 K/V heads, as ran."""
    _assert_kv_heads_read_as_ran("w_mistral_h16_kv4_t64_autotune", "own store")


def test_eager_kernels_that_rotate_q_then_k_give_k_s_share_of_q_s_width():
    """Eager rotary: multiply by cos, negate a half, concatenate, multiply by sin, add, for q's 8
    heads (N·q = 1,024 elements a float op: 512 of them in the negated half), then the same five
    kernels for k's 2 heads at a quarter of that work: the ratio is 2/8. A k run whose work is no
    one multiple of q's (one kernel at a quarter, another at a half) gives none."""
    from fractions import Fraction

    from lmperf.pmc.gemms import FMUL
    from lmperf.pmc.kv_heads import _rotated_in_turn
    from lmperf.pmc.parse import KernelRecord

    ops = ("mul_cos", "neg", "cat", "mul_sin", "add")
    q_work = (1024, 512, 0, 1024, 1024)

    def layer(k_work):
        kernels = [KernelRecord(0, "gemm_qkv", (1, 1, 1), (128, 1, 1), {})]
        for work in (q_work, k_work):
            for op, ops_done in zip(ops, work):
                kernels.append(KernelRecord(len(kernels), op, (1, 1, 1), (128, 1, 1), {FMUL: float(ops_done)}))
        kernels.append(KernelRecord(len(kernels), "flash_fwd_kernel", (1, 1, 1), (128, 1, 1), {}))
        return {"first_layer": kernels, "qkv": kernels[:1], "qk": None, "marker": kernels[-1]}

    assert _rotated_in_turn(layer((256, 128, 0, 256, 256))) == {Fraction(2, 8)}
    assert _rotated_in_turn(layer((256, 256, 0, 256, 256))) == set()


def test_an_nvjet_gemm_runs_its_inner_size_in_whole_steps():
    """nvjet_..._32x64_64x16_4x1 takes k in 64-deep steps: 180 rows of d 1120 over k 1120 run as
    192 padded rows (64-row side) x 1152 columns (128-column side) x 1152 (18 steps), 254,803,968
    MACs, which no unpadded k explains (254,803,968 / 1120 is no whole number). 180 rows of 1024
    over k 1024 would need 1296 padded columns on the 128 side or 972 on the 64 side: neither."""
    from lmperf.pmc.gemms import tiles_allow

    out = _gemm(0, "nvjet_sm90_hsh_32x64_64x16_4x1_v_bz_TNN", 192 * 1152 * 1152)
    assert tiles_allow(out, 180, 1120, 1120)
    assert not tiles_allow(out, 180, 1024, 1024)


def test_a_split_k_nvjet_gemm_runs_each_slices_share_of_k_in_whole_steps():
    """Qwen3's output projection of 70 rows, an attention 4096 wide in and d 2560 out, in nvjet
    64x72 tiles of 4x1 clusters split along k in 3 slices: each slice runs ceil(4096 / 3 / 64) = 22
    steps of 64, 1408 deep, 4224 in all, over 72 padded rows and 2560 columns: 778,567,680 MACs,
    which no single slice explains (778,567,680 / (72 x 4096) = 2640 is no whole number of
    256-column clusters). The grid pins the slices: 40 CTAs of 64 columns times 3 is its 120; a
    grid of 121 CTAs pins none and leaves the reading out."""
    from lmperf.pmc.gemms import tiles_allow
    from lmperf.pmc.parse import KernelRecord

    def out(grid):
        metrics = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 2 * 72 * 2560 * 4224}
        return KernelRecord(0, "nvjet_sm90_tst_64x72_64x12_4x1_v_bz_splitK_TNT", grid, (384, 1, 1), metrics)

    assert tiles_allow(out((4, 30, 1)), 70, 4096, 2560)
    assert not tiles_allow(out((4, 30, 1)), 70, 4096, 2048)
    assert not tiles_allow(out((11, 11, 1)), 70, 4096, 2560)


def test_a_split_k_projection_is_read_from_the_reduction_that_stores_its_output():
    """A K projection of N = 30 rows, which pad_mm rounds up to 32, d 1024 in, 8 K/V heads of 64
    (512) out, 16 query heads: nvjet 64x32 tiles in 4x1 clusters (sides of 256 and 32), k in 2
    slices of 8 steps of 64, 32·512·1024 = 16,777,216 MACs. Rows on the 32 side pad to 32 and
    512 columns fill two 256 sides; rows on the 256 side pad to 256 and leave 64 columns: 1 K/V
    head fits as well as 8, and both count 8 output tiles (16 CTAs in 2 slices), so neither the
    work nor the grid picks one. cuBLAS's splitKreduce after it scales each output once and stores
    it: 16,384 FMUL and 32,768 B are 32 x 512 bf16 outputs, while 64 columns would need 256 rows.
    Without the reduction, or with one storing a bias epilogue's 6 B an output, the heads stay
    bounded by [1, 8]."""
    from lmperf.pmc.attention_shape import AttentionShape
    from lmperf.pmc.gemms import FMUL, STORE_BYTES
    from lmperf.pmc.counts import StoredCounts
    from lmperf.pmc.kv_heads import kv_heads
    from lmperf.pmc.parse import FADD, KernelRecord
    from lmperf.pmc.result import Inference

    tensor = "sm__ops_path_tensor_src_bf16_dst_fp32.sum"
    split_k = "nvjet_sm90_tst_64x32_64x16_4x1_v_bz_splitK_TNT"
    reduce = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16>"

    def read(reduction_stores: float | None):
        q = KernelRecord(0, "nvjet_sm90_tst_64x64_64x13_4x1_v_bz_TNT", (4, 4, 1), (384, 1, 1), {tensor: 0.0})
        k = KernelRecord(1, split_k, (4, 4, 1), (384, 1, 1), {tensor: 2.0 * 32 * 512 * 1024})
        v = KernelRecord(3, split_k, (4, 4, 1), (384, 1, 1), {tensor: 2.0 * 32 * 512 * 1024})
        attention = KernelRecord(5, "flash_fwd_kernel", (1, 16, 1), (128, 1, 1), {})
        layer = [q, k, v, attention]
        if reduction_stores is not None:
            sums = {FMUL: 32.0 * 512, FADD: 2 * 32.0 * 512, STORE_BYTES: reduction_stores}
            layer = [q, k, KernelRecord(2, reduce, (16, 2, 1), (32, 16, 1), sums), v, attention]
        roles = {"qkv": [q, k, v], "first_layer": layer, "qk": None, "marker": attention}
        result = Inference()
        result.values["dtype"] = "bf16"
        shape = AttentionShape(batch=1, seq_len=30, n_heads=16, head_dim=64, error=0.0, evidence="")
        kv_heads(result, roles, 30, 1024, shape, StoredCounts())
        return result

    result = read(32 * 512 * 2)
    assert result.values["n_kv_heads"] == 8, result.evidence["n_kv_heads"]
    assert "32 rows x 512 values of 2 B" in result.evidence["n_kv_heads"]
    for stores in (None, 32 * 512 * 6):
        result = read(stores)
        assert result.values["n_kv_heads"] is None and result.intervals["n_kv_heads"] == (1, 8)


def test_an_off_d_output_projection_pads_its_rows_and_d_not_the_attention():
    """Qwen3's output projection of 144 rows, an attention 1344 wide in and d 1024 out, in
    nvjet 64x24 tiles of 4x2 clusters (sides of 256 and 48): 144·1024·1344 = 198,180,864 MACs,
    the 144 rows on the 48 side and 1024 on the 256 side, none padded. Read the other way round
    (1344 outputs over k 1024) no tile fits: 1344 columns on the 256 side, or 756 on the 48 side
    over 256 padded rows, are no whole number of tiles."""
    from lmperf.pmc.widths import _in_span, _out_projection_allows

    out = _gemm(0, "nvjet_sm90_tst_64x24_64x16_4x2_h_bz_TNT", 144 * 1024 * 1344)
    assert not _in_span(1344, out, 144, 1024)
    assert _out_projection_allows(out, 144, 1024, 1344)
    assert not _out_projection_allows(out, 144, 1024, 1024) and not _out_projection_allows(out, 144, 1024, 1280)


def test_an_nvjet_gemms_tiles_rule_out_a_width_its_work_cannot_hold():
    """An nvjet 64x32 tile in 4x2 clusters pads rows to 64 (or 256) and columns to 256 (or 64):
    314,572,800 MACs are 192 padded rows of 1280 columns x 1280 (144 rows of d = 1280), while
    72 rows of d = 1024 would need 1200 or 2400 padded columns, no whole number of tiles."""
    from lmperf.pmc.gemms import tiles_allow

    out = _gemm(0, "nvjet_sm90_hsh_64x32_64x16_4x2_h_bz_TNT", 192 * 1280 * 1280)
    assert tiles_allow(out, 144, 1280, 1280)
    assert not tiles_allow(out, 72, 1024, 1024)


def test_a_compiled_norm_grid_of_two_row_programs_is_not_read_as_the_rows():
    """Blind batch w's Mistral, eager attention compiled, B·T = 144: its compiled RMSNorms run
    72 programs of 2 rows, and its rotary kernel stores 73,728 = 72·1024 elements, so N=72 read
    d = 1024 (and d_ff, V twice the truth, the attention fitting nothing). The out-projection's
    nvjet tiles cannot produce 1024 columns from 72 rows: every field against what ran."""
    _assert_every_field_read_as_ran("w_mistral_h20_kv4_t144_eager_compile")


def test_a_batch_the_attention_cannot_decide_is_decided_by_the_mask_or_left_an_assumption():
    # A compiled fp32 OPT forward of 1 x 100 tokens, 16 heads of 64, hands SDPA its mask as a
    # tensor, so the kernel runs whole padded tiles: in 64-query x 128-key tiles, 1 x 100 runs
    # 16 heads x (2 x 64) x 128 scores and 2 x 50 runs 2 x 16 heads x 64 x 128, the same work.
    # The mask itself is 100 x 100 fp32 = 40,000 B; 2 x 50 x 50 would be 20,000 B.
    import dataclasses

    from lmperf.pmc.infer import infer

    # PyTorch's memory-efficient kernel launches (query tiles, heads, batch): (2, 16, 1) is 1 x 100
    # already. Named as a kernel whose grid order is not known, the mask decides.
    capture, _ = _served("z_opt_h16_t100_fp32_compile")
    result = infer(capture)
    assert (result.values["batch"], result.values["seq_len"]) == (1, 100)
    assert result.confidence["batch"] == 0.9 and not result.assumptions
    capture = dataclasses.replace(
        capture,
        kernels=[dataclasses.replace(k, name=k.name.replace("cutlassF", "generic")) for k in capture.kernels],
    )
    result = infer(capture)
    assert (result.values["batch"], result.values["seq_len"]) == (1, 100)
    assert result.confidence["batch"] == 0.9 and "40,000 B" in result.evidence["batch"]
    assert not result.assumptions
    unmasked = [k for k in capture.kernels if k.metrics.get("sm__sass_data_bytes_mem_global_op_st.sum") != 40_000]
    assert len(unmasked) == len(capture.kernels) - 2  # one mask a layer
    result = infer(dataclasses.replace(capture, kernels=unmasked))
    assert (result.values["batch"], result.values["seq_len"]) == (1, 100)
    assert result.confidence["batch"] <= 0.6 and result.confidence["seq_len"] <= 0.6
    assert any("B=2, T=50" in line for line in result.assumptions)


def test_a_decode_step_decides_the_batch_its_prefill_leaves_open():
    # Three static-cache requests of 48 tokens: the prefill's masked attention counts the work of
    # one sequence of 144 as exactly; each decode step runs one token for each of the 3 requests.
    result = infer_file(capture_path("u_llama_h12_kv4_p48_b3_static"))
    assert (result.values["batch"], result.values["seq_len"], result.values["vocab_size"]) == (3, 48, 32000)
    assert result.confidence["batch"] == 0.9 and not result.assumptions


@pytest.mark.parametrize(
    "name, field, how",
    [
        # layer 0's QKV a template over 160 rows padded to 256 (1.6x layer 1's cuBLAS QKV)
        ("t_gpt2_h16_t80_autotune", "n_layers", "repeat 2 times"),
        # two templates of one up-projection tuned to different tiles, 1.33x apart
        ("q_lmperf_h12_t112_autotune", "n_layers", "repeat 2 times"),
        # ReLU counts no float op: the up-projection template's own stores give N·d_ff
        ("q_opt_h16_t72_autotune", "d_ff", "the up-projection's own stores"),
        # pad_mm stores 104 of the 100 token rows through the out-projection template
        ("q_neox_h16_t100_autotune", "d_model", "N·d"),
        # the V projection after the softmax, its padded work equal to QK^T's
        ("q_qwen2_h14_kv2_t88_eager_compile", "d_model", "N·d"),
        # B=3, T=64 tied B=1, T=192 at the attention when 64-row query tiles counted; cuDNN's
        # grid of a block per 128 query rows of each head does not (60 blocks, not 40)
        ("q_mistral_h20_kv4_t64_autotune", "batch", "ceil(T/128)"),
        # B=3, T=56 tied B=1, T=168 at the attention when 64-row query tiles counted (GPT-2: no
        # rotary table; its mask broke the tie); cuDNN's 128-row blocks do not (36, not 24)
        ("p_gpt2_h12_t56_autotune", "batch", "ceil(T/128)"),
        # one query tile, a (1, B·H) grid, where B=2, H=8 of two 64-row tiles gives the blocks too
        ("p_lmperf_h16_t96_train_compile_fused", "n_heads", "log-sum-exps"),
        # q and k rotated by kernels of their own, k stored twice
        ("p_mistral_h12_kv4_t200_eager_compile", "n_kv_heads", "rotated apart"),
        # a fused QKV whose tiles allow 6 or 12 K/V heads, and a norm's 2·N·d count passed for 6
        ("n_neox_h12_t96_train_compile", "n_kv_heads", "copied whole"),
        # the same in fp32, its QKV a split-K GEMM of 5 slices, each storing N·2304 fp32 sums
        ("n_gpt2_h12_t64_fp32_autotune", "n_kv_heads", "split-K slices"),
        # a K projection whose tiles allow 1 or 2 K/V heads; its TMA epilogue stores N·128 values
        ("j_mistral_h14_kv2_t112_compile", "n_kv_heads", "TMA store bytes = N·128·2 B"),
        # d 1120: the output projection's tensor work runs k in whole 64-deep steps (1152)
        ("ak_llama_h10_kv2_t180_graphs_fp16", "d_model", "elementwise counts 201,600 = N·d"),
        # attentions off d, their output projections' tiles padding N and d, not a
        ("ak_qwen3_h12_kv4_t144_compile", "d_model", "an attention 1344 wide"),
        ("ak_qwen3_h8_kv2_t250_liger", "d_model", "an attention 768 wide"),
        # cuDNN's head tile of 128 runs heads of 112: its work fits them padded, exactly
        ("ak_qwen3_h12_kv4_t144_compile", "head_dim", "relative error 0.000) give B=1, T=144, H=12 (heads of 112"),
        # OPT's ReLU counts no float op, and cuBLAS's up-projection stores its N·d_ff outputs by TMA
        ("al_opt_h14_t120_eager", "d_ff", "the up-projection's own stores = N·4480·2 B"),
        # a fused QKV whose tiles allow 2 or 14 K/V heads of 80; eager kernels rotate q, then k
        ("ao_neox_h14_t120_eager_fp16", "n_kv_heads", "rotated in turn"),
        # an nvjet head of 400x64 tiles whose TMA stores are 16% over N·V·2 B; autocast casts
        # its fp32 weight to bf16 just before it
        ("ar_lmperf_h12_t160_compile", "vocab_size", "copy of its weight before it stores V·d·2 B"),
        # an attention off d whose N·2048 a norm's FADD (N·1920) and a split-K reduction's sums
        # (N·2048) both fit; the query projection stores its N·2048 outputs
        ("as_qwen3_h16_kv4_t120_liger", "d_model", "the query projection's stores of N·2048 values pick"),
        # a bf16 copy of the logits (N·V·2 B) read as an fp32 one of V/2 inside the rows' padding
        # bound; the head's 152-wide tiles hold 10,000 and not 5,000
        ("at_lmperf_h8_t128_train_compile", "vocab_size", "copy of its weight before it stores V·d·2 B"),
        # fp32 eager, N·d = 210·768 not a whole number of the adds' 1,024-element blocks: their
        # FADD counts round up to 161,792, their stores hold 161,280 elements
        ("aw_opt_h12_t210_eager_fp32", "d_model", "elementwise counts 161,280 = N·d"),
        # max-autotune's gate template stores its output beside the product: 2·N·d_ff, where the
        # other up-projection stores N·d_ff
        ("aw_lmperf_h8_t200_autotune", "d_ff", "= N·1408·2 B each, or twice that from a gate"),
        # an fp32 head split along k whose slices sum in a workspace over padded rows
        ("az_llama_h10_kv5_t170_eager_fp32", "vocab_size", "4 B for each FADD, which adds 1 split-K slice(s)' sums"),
        # heads of 128 over d 768 whose work cuDNN's 128-wide head tiles and the output
        # projection's padded tiles give heads of 96 too; the query projection stores its 1024-wide
        # output over the 152 rows pad_mm rounds 150 up to (fixed so; the attention's TMA stores of
        # its 150·1024 outputs, counted since, decide first: see the test after this one)
        ("ba_qwen3_h8_kv2_t150_compile", "d_model", "the attention's 307,200 B of stores deny"),
        # 64 rows at d 2048 whose compiled norms run two rows a program (a grid of 32) and whose
        # GEMMs' row tiles pad 32 and 64 alike; cuDNN's TMA stores hold 64·2048 outputs
        ("bk_qwen3_h16_kv8_t64_graphs_fp16", "d_model", "not N=32, which more launches count"),
        # autocast casts the down-projection's 5632 x 2048 weight a few kernels before the head's
        # 10,000 x 2048 one; the cast nearest the head is its weight's
        ("bl_lmperf_h16_t64_graphs", "vocab_size", "copy of its weight before it stores V·d·2 B gives V=10000"),
        # an attention 4096 wide over d 2560 whose output projection splits k in 3 slices of 1408
        # (22 steps of 64 each): its work is N·2560·4224 over 72 padded rows
        ("bj_qwen3_h32_kv8_t70_graphs", "d_model", "an attention 4096 wide"),
        # 64 rows at d 2048 whose max-autotune norms run four rows a program (grids of 16): at 16
        # rows of d 4096 no (B, T, H) fits cuDNN's grid, and its TMA stores hold 64·2048 outputs
        ("bq_qwen3_h16_kv8_t64_autotune", "d_model", "not N=16, which more launches count"),
        # a split-K K projection whose tiles fit 3 or 8 K/V heads in the same padded area (so the
        # same grid); the reduction summing its slices stores the 96 x 1024 outputs of the 96 rows
        # pad_mm rounds 90 up to
        ("bq_mistral_h24_kv8_t90_graphs", "n_kv_heads", "what the split-K reduction after it stores"),
        # lmperf's naive attention compiled: its forward keeps gradients on, so the softmax stores
        # each row's fp32 maximum and sum beside its probabilities
        ("bp_lmperf_h8_t96_graphs_naive", "n_heads", "probabilities and each row's fp32 maximum and sum"),
        # heads of 100 (no multiple of 8) in bf16 send SDPA to its math path, which upcasts: QK^T
        # runs as an fp32 GEMM and the softmax stores 4-byte scores, 32 heads and not 64 of 50
        ("ca_llama_h32_kv32_t80_graphs", "n_heads", "in fp32 scores of the fp32 QK^T product"),
        # heads of 100 in fp16 reach FlashAttention padded to 104 (its stores: 96·32·(104·2 + 4) B)
        # and run in its 128-wide kernel; no such head counted as plausible, so no shape fitted
        ("cd_llama_h32_kv32_t96_eager_fp16", "n_heads", "heads of 100 padded to 104, its products 128 wide"),
        # SDPA's math path in a training step: layer 0's safe softmax stores its fp32
        # probabilities and 9 bytes a row (maximum, sum and a masked-row byte), not 8
        ("cd_llama_h32_kv32_t64_train_compile", "n_heads", "and a byte saying whether the row is masked whole"),
        # fp16 graphs: inductor splits the softmax into a reduction storing each row's statistics
        # and a kernel applying them, with the V projection between: counted as two layers'
        # attention each, 4 for 2 layers, and the forward read as cut short
        ("cd_llama_h32_kv32_t77_graphs_fp16", "n_heads", "B·H·T·9 B, only each row's fp32 maximum and sum"),
        # 16 heads of 256 over d 3072: no per-head norm counts N·4096, and q and k are rotated by
        # one kernel storing N·8192; the query projection's TMA stores hold its N·4096 outputs
        ("cd_llama_h16_kv16_t80_compile", "d_model", "the query projection's own stores hold its N·4096 outputs"),
        ("ce_llama_h16_kv16_t64_graphs", "d_model", "the query projection's own stores hold its N·4096 outputs"),
        # Hugging Face's eager attention compiled in a training step: the softmax stores beside its
        # 16-bit probabilities a dropout's one-byte keep mask and each row's statistics (GPT-2,
        # 1200·(100·3 + 8) B) or their fp32 copy (Mistral, 1280·80·6 B), which no count of
        # probabilities with or without statistics fits; the QK^T product's stores count B·H·T²
        ("cf_gpt2_h12_t100_train_compile_naive_fp16", "n_heads", "probabilities, the dropout keep mask and each"),
        ("cf_mistral_h16_kv8_t80_train_compile_naive", "n_heads", "probabilities and their fp32 copy"),
        # an fp32 head split along k in two whose first slice sums over whole 128 x 128 tiles, 128
        # rows x 32,128 columns of a 32,064-entry vocabulary: FADD 4,112,384, stores N·V·4 + 4·FADD
        ("ce_llama_h32_kv32_t80_eager_fp32", "vocab_size", "4 B for each FADD, which adds 1 split-K slice(s)' sums"),
        # QK^T and P V one cutlass kernel of 32·128³ MACs a layer (T = 100 and heads of 128, both
        # padded to 128): P V was skipped as the V projection, QK^T's twin, and the MLP misread
        ("cg_llama_h32_kv8_t100_train_compile_naive_fp16", "n_heads", "give H=32"),
        # pad_mm pads the QK^T product to 96 x 96 over T = 90: its stores, 12·96²·2 B, hold no
        # whole number of heads over 90² scores
        ("ch_gpt2_h12_t90_train_compile_naive", "n_heads", "(T padded to 96 by pad_mm) give H=12"),
        # SDPA's memory-efficient fp32 forward takes heads of 100 unpadded: its grid names B and
        # H, its work is its schedule's over heads of 100 in steps of 32
        ("ch_llama_h32_kv32_t64_eager_fp32", "n_heads", "exactly its causal schedule's over heads of 100"),
        # max-autotune's math path at T = head_dim = 100: QK^T and P V one bmm template whose grid
        # (4, 32, 1) counts B·H
        ("ci_llama_h32_kv32_t100_autotune", "n_heads", "(tiles, B·H, 1) and stores its 1,280,000 B"),
        # an nvjet QK^T product of 24 x 64 tiles stores 72 x 72 scores by TMA in boxes of 24: rows
        # of 144 B touch 6 sectors each, 16·72·192 = 221,184 B, no whole H over 72²·2 B
        ("cl_gpt2_h16_t72_train_compile_naive", "n_heads", "in boxes 24 wide counted in whole 32-byte sectors"),
        # an eager fp32 gate-times-up multiply of 96·5400 products runs 507 blocks of 1,024 and
        # counts 519,168 FMUL = 96·5408 beside SiLU's exact 518,400: its stores say 518,400
        ("co_llama_h20_kv20_t96_eager_fp32", "d_ff", "elementwise counts 518,400 = N·d_ff"),
    ],
)
def test_blind_batches_misses_read_as_ran(name, field, how):
    """The captures blind batches t, q, p, n, j, ak, al, ao, ar, as, at, aw, az, ba, bj, bk, bl, bp, bq, ca, cd, ce, cf, cg, ch, ci, cl and co missed (fixed after them, so not blind):
    every field against the configuration that ran, and the field the fix is about read the way
    `how` names."""
    from lmperf.pmc.infer import infer

    _assert_every_field_read_as_ran(name)
    result = infer(_served(name)[0])
    assert how in result.evidence[field], result.evidence[field]
    assert not result.assumptions, result.assumptions


def test_an_eager_elementwise_count_rounded_to_whole_blocks_reads_its_stores():
    """An eager fp32 add over N·d = 210·768 = 161,280 elements runs 158 blocks of 1,024 (128
    threads of 8): the last block's unrolled loop counts a whole block, 158·1,024 = 161,792 FADD,
    and its stores are the 161,280·4 B it wrote. Stores that the rounding cannot explain (fewer
    than 157 whole blocks), a count that is no whole number of blocks, or a kernel that is no
    elementwise one keep the count as it is."""
    from lmperf.pmc.gemms import STORE_BYTES
    from lmperf.pmc.counts import element_counts
    from lmperf.pmc.parse import KernelRecord

    def add(count, stored_bytes, name="void at::vectorized_elementwise_kernel<4, at::CUDAFunctor_add<float>>"):
        metrics = {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum": count, STORE_BYTES: stored_bytes}
        return KernelRecord(0, name, (158, 1, 1), (128, 1, 1), metrics)

    def counted(kernel):
        return set(element_counts([kernel], activation_size=4))

    assert counted(add(161_792, 161_280 * 4)) == {161_280}
    assert counted(add(161_792, 157 * 1024 * 4)) == {161_792}  # 1,024 short: no rounding of one block
    assert counted(add(161_791, 161_280 * 4)) == {161_791}
    assert counted(add(161_792, 161_280 * 4, name="void at::reduce_kernel<512, 1>")) == {161_792}
    assert set(element_counts([add(161_792, 161_280 * 4)])) == {161_792}  # no activation size given


def test_an_eager_step_whose_rounded_counts_have_no_stores_is_left_undetermined():
    """Blind batch aw's fp32 OPT without the store counter: its adds count N·d rounded up to
    whole blocks, no count is N·d, and d and what rests on it stay undetermined, not guessed."""
    import dataclasses

    from lmperf.pmc.gemms import STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, _ = _served("aw_opt_h12_t210_eager_fp32")
    stripped = dataclasses.replace(
        capture,
        kernels=[
            dataclasses.replace(k, metrics={m: v for m, v in k.metrics.items() if m != STORE_BYTES})
            for k in capture.kernels
        ],
    )
    result = infer(stripped)
    assert result.values["d_model"] is None and result.values["n_heads"] is None
    assert result.values["vocab_size"] is None


def test_an_eager_gate_multiply_rounded_to_whole_blocks_reads_d_ff_from_its_stores():
    """Blind batch co's fp32 Llama, d_ff 5400 over N = 96 rows: SiLU counts N·d_ff = 518,400 FADD
    exactly, while the vectorized multiply of gate and up runs 507 blocks of 1,024 elements
    (518,400 / 1,024 = 506.25) and its last block's unrolled loop counts a whole block: 507·1,024
    = 519,168 FMUL, N·5408. Its 2,073,600 B of stores are the 518,400 fp32 products, so d_ff is
    5400, and the blocks' parameters, 2·(4·2000² + 3·2000·5400 + 2·2000) = 96,808,000, lie in
    their interval."""
    from lmperf.pmc.gemms import FMUL, STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, _ = _served("co_llama_h20_kv20_t96_eager_fp32")
    multiplies = [k for k in capture.kernels if k.metric(FMUL) == 519_168]
    assert len(multiplies) == 2  # one a layer
    assert all(k.blocks == 507 and k.metric(STORE_BYTES) == 518_400 * 4 for k in multiplies)
    result = infer(capture)
    assert result.values["d_ff"] == 5400 and result.confidence["d_ff"] == 0.9
    assert "elementwise counts 518,400 = N·d_ff" in result.evidence["d_ff"]
    low, high = result.intervals["params_blocks"]
    assert low == 96_808_000 <= high
    _assert_every_field_read_as_ran("co_llama_h20_kv20_t96_eager_fp32")


def test_element_counts_that_tie_on_two_widths_read_neither():
    """N = 96 rows, d_ff 5400 under a down-projection bounding d_ff by 7,427 (slack 1.35 x 256/96
    = 3.6 from its padded rows): SiLU counts 96·5400 = 518,400 FADD, the gate·up multiply's 507
    blocks of 1,024 count 519,168 = 96·5408 FMUL, with no store counter. Each is seen once:
    neither width is read. The multiply's 518,400·4 B of stores read as 518,400 (seen twice):
    5400. A tie where one width is the bound itself, the down-projection's work of exactly
    N·d·w MACs with no padding (Liger's SwiGLU stores 96·2816 beside a copy of its 96·1024
    input), reads that width."""
    from collections import Counter

    from lmperf.pmc.counts import best_widths, element_counts, exact_width
    from lmperf.pmc.gemms import FMUL, STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    silu = KernelRecord(
        0,
        "void at::vectorized_elementwise_kernel<4, at::silu_kernel<float>>",
        (507, 1, 1),
        (128, 1, 1),
        {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 518_400},
    )

    def multiply(stored_bytes):
        name = (
            "void at::vectorized_elementwise_kernel<4, at::BinaryFunctor<float, float, float, at::MulFunctor<float>>>"
        )
        return KernelRecord(1, name, (507, 1, 1), (128, 1, 1), {FMUL: 519_168, STORE_BYTES: stored_bytes})

    unstored = element_counts([silu, multiply(None)], activation_size=4)
    assert unstored == Counter({518_400: 1, 519_168: 1})
    assert best_widths(7427, 96, unstored, 3.6) == [5400, 5408]
    assert exact_width(7427, 96, unstored, 3.6) is None
    assert exact_width(7427, 96, element_counts([silu, multiply(518_400 * 4)], activation_size=4), 3.6) == 5400
    liger = Counter({96 * 1024: 1, 96 * 2816: 1})
    assert exact_width(2816, 96, liger, 3.6) == 2816
    assert exact_width(2900, 96, liger, 3.6) is None  # padded work: 2816 fits no better than 1024


def test_an_eager_gate_multiply_without_stores_bounds_d_ff_between_its_tied_counts():
    """Blind batch co's fp32 Llama with the gate·up multiply's store counter gone: SiLU's
    518,400 = 96·5400 and the multiply's 519,168 = 96·5408 are seen once each, so d_ff is read
    as neither but lies in [5400, 5408], and the blocks' parameters 2·(4·2000² + 3·2000·5400 +
    2·2000) = 96,808,000 (5408: 96,904,000) and the total 224,810,000 lie in their intervals."""
    import dataclasses

    from lmperf.pmc.gemms import FMUL, STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, _ = _served("co_llama_h20_kv20_t96_eager_fp32")
    stripped = dataclasses.replace(
        capture,
        kernels=[
            dataclasses.replace(k, metrics={**k.metrics, STORE_BYTES: None}) if k.metric(FMUL) == 519_168 else k
            for k in capture.kernels
        ],
    )
    result = infer(stripped)
    assert result.values["d_ff"] is None and result.intervals["d_ff"] == (5400, 5408)
    assert result.confidence["d_ff"] <= 0.5
    low, high = result.intervals["params_blocks"]
    assert low == 96_808_000 and 96_904_000 <= high
    low, high = result.intervals["params_total"]
    assert low <= 224_810_000 <= high


def test_up_projections_storing_other_than_once_or_twice_d_ff_give_no_stores_reading():
    """Blind batch aw's lmperf model under max-autotune: one up-projection's template stores
    N·1408·2 B and the gate's 2·N·1408·2 B. With the gate's stores made three times the other's,
    no width is once or twice the narrowest, and d_ff is not read from the stores."""
    import dataclasses

    from lmperf.pmc.gemms import STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, expected = _served("aw_lmperf_h8_t200_autotune")
    rows = expected["batch"] * expected["seq_len"]
    once = rows * expected["d_ff"] * 2
    gates = [k for k in capture.kernels if k.name.startswith("triton_tem") and k.metrics.get(STORE_BYTES) == 2 * once]
    assert len(gates) == expected["n_layers"]
    tripled = dataclasses.replace(
        capture,
        kernels=[
            dataclasses.replace(k, metrics={**k.metrics, STORE_BYTES: 3 * once}) if k in gates else k
            for k in capture.kernels
        ],
    )
    result = infer(tripled)
    assert "own stores" not in result.evidence["d_ff"]
    assert result.confidence["d_ff"] <= 0.5


def test_a_query_projection_storing_padded_rows_of_d_keeps_the_attention_d_wide():
    """Blind batch ba's compiled Qwen3 (8 heads of 128 over d 768, 150 token rows): its query
    projection stores 152·1024·2 B by TMA, the rows pad_mm rounds 150 up to, which picks heads of
    128 over heads of 96. Edited to store 152·768·2 B, as an attention as wide as d would, the
    heads read as 96 wide: the stores decide either way. The attention's own TMA stores
    (150·1024·2 B) decide before them, so both captures drop that count, as one collected before
    the TMA counter joined the metric list would."""
    import dataclasses

    from lmperf.pmc.gemms import TMA_STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, expected = _served("ba_qwen3_h8_kv2_t150_compile")
    rows = expected["batch"] * expected["seq_len"]
    padded = -(-rows // 8) * 8
    width = expected["n_heads"] * expected["head_dim"]
    queries = [k for k in capture.kernels if k.metrics.get(TMA_STORE_BYTES) == padded * width * 2]
    attentions = [k for k in capture.kernels if "sdpa" in k.name and "fprop" in k.name]
    assert len(queries) == len(attentions) == expected["n_layers"] and padded == 152
    assert all(k.metrics[TMA_STORE_BYTES] == rows * width * 2 for k in attentions)

    def edited(query_width):
        def metrics(k):
            if k in queries:
                return {**k.metrics, TMA_STORE_BYTES: float(padded * query_width * 2)}
            return {**k.metrics, TMA_STORE_BYTES: 0.0} if k in attentions else k.metrics

        return dataclasses.replace(
            capture, kernels=[dataclasses.replace(k, metrics=metrics(k)) for k in capture.kernels]
        )

    as_ran = infer(edited(width))
    assert as_ran.values["head_dim"] == expected["head_dim"] == 128
    assert "the query projection's stores of N·1024 values deny" in as_ran.evidence["d_model"]
    assert infer(edited(expected["d_model"])).values["head_dim"] == expected["d_model"] // expected["n_heads"] == 96


def test_an_off_d_attention_without_its_query_stores_is_left_undetermined():
    """Blind batch as's Liger Qwen3 (16 heads of 128 over d 1024): two widths in the output
    projection's tile span are counted by kernels, 1920 (a norm's FADD) and 2048. Without the
    query projection's stores (a capture without the TMA counter) nothing picks one, and d, the
    heads and V stay undetermined rather than guessed."""
    import dataclasses

    from lmperf.pmc.gemms import TMA_STORE_BYTES
    from lmperf.pmc.infer import infer

    capture, expected = _served("as_qwen3_h16_kv4_t120_liger")
    rows = expected["batch"] * expected["seq_len"]
    query_bytes = rows * expected["n_heads"] * expected["head_dim"] * 2
    # the attention's output is as many bytes, and so are the split-K down projection's fp32
    # partial sums of N·d
    queries = [
        k
        for k in capture.kernels
        if k.metrics.get(TMA_STORE_BYTES) == query_bytes and k.name.startswith("nvjet") and "splitK" not in k.name
    ]
    assert len(queries) == expected["n_layers"]
    stripped = dataclasses.replace(
        capture,
        kernels=[
            dataclasses.replace(k, metrics={m: v for m, v in k.metrics.items() if m != TMA_STORE_BYTES})
            if k in queries
            else k
            for k in capture.kernels
        ],
    )
    result = infer(stripped)
    assert result.values["d_model"] is None and result.values["n_heads"] is None
    assert "more than one width" in result.evidence["d_model"]


def test_a_compiled_backward_with_its_embedding_gradient_fused_into_a_norm_is_whole():
    """Blind batch i's fp32 GPT-2 trained compiled: inductor fuses the embedding's gradient into
    the first layer's LayerNorm and dropout backward, a kernel named for the norm first. Its mode
    was withheld as a cut backward; the range holds the whole step and reads as one."""
    from lmperf.pmc.infer import infer

    name = "i_gpt2_h10_t100_train_compile_fp32"
    _assert_every_field_read_as_ran(name)
    result = infer(_served(name)[0])
    assert result.gaps == [], result.missing
    assert result.values["mode"] == _served(name)[1]["mode"] == "train_step"


def test_a_qwen2_biases_q_k_and_v_alone():
    """Qwen2 adds biases to its q, k and v projections and to nothing else: its blocks' count is
    the configuration's exactly, not 5,632 a layer more (out, gate, up and down biases)."""
    from lmperf.pmc.infer import infer

    capture, expected = _served("i_qwen2_h12_kv4_t128_compile")
    result = infer(capture)
    assert result.values["params_blocks"] == expected["params_blocks"], result.evidence["params_blocks"]
    assert "q, k and v alone" in result.evidence["params_blocks"]


def test_an_eager_fp32_gpt2_leaves_its_biases_open():
    """Eager fp32 GEMMs run on cuBLAS's SIMT kernels, which add addmm's bias unnamed, so the
    blocks are an interval from no biases to every projection's: 9·d a layer by hand (3d for q,
    k and v, d for the output, 4d and d for the MLP), with the configuration's count at its top."""
    from lmperf.pmc.infer import infer_file

    name = "s_gpt2_h12_t200_fp32"
    result, expected = infer_file(capture_path(name)), truth(name)
    d, layers = expected["d_model"], expected["n_layers"]
    assert result.values["params_blocks"] is None
    assert result.intervals["params_blocks"] == (expected["params_blocks"] - layers * 9 * d, expected["params_blocks"])


@pytest.mark.parametrize(
    "name",
    [
        # fp32 on cuBLAS, the bias added in the generated kernel after it (named after addmm)
        "i_gpt2_h10_t100_train_compile_fp32",
        # max-autotune templates named after addmm; a Qwen2's after addmm for q, k, v alone
        "h_gpt2_h20_t64_autotune",
        "h_qwen2_h14_kv2_t96_autotune",
    ],
)
def test_compiled_biases_are_read_from_the_ops_inductor_names(name):
    """Inductor names a kernel after the aten ops it runs: addmm where a bias is added, mm where
    none is. So a compiled model's blocks are exact where the GEMM or the kernel after it says."""
    from lmperf.pmc.infer import infer

    capture, expected = _served(name)
    result = infer(capture)
    assert result.values["params_blocks"] == expected["params_blocks"], result.evidence["params_blocks"]


def test_a_tie_across_b_is_broken_only_by_an_angle_table_one_fit_explains():
    """(1, T, w) or (B, T, w) fp32 angles, w dividing head_dim / 2: 8,192 B is 64 x 32 angles
    (B=3, T=64, hd 64) and no whole table of T=192; 32,768 B (4 x 64 x 32) fits B=4, T=64 as
    (B, T, w) and B=1, T=256 as (1, T, w), so it breaks nothing."""
    from lmperf.pmc.attention_shape import AttentionShape, untie_by_rotary_table
    from lmperf.pmc.parse import KernelRecord

    def table(stored: float) -> KernelRecord:
        return KernelRecord(
            0,
            "triton_tem_fused_arange_bmm_2",
            (2, 1, 1),
            (128, 1, 1),
            {
                "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 2048.0,
                "sm__sass_data_bytes_mem_global_op_st.sum": stored,
            },
        )

    tied = AttentionShape(1, 192, 20, 64, 0.0, "grid", ties=((3, 64, 20),))
    broken = untie_by_rotary_table(tied, [table(8192.0)])
    assert (broken.batch, broken.seq_len, broken.ties) == (3, 64, ())
    assert "8,192 B" in broken.evidence
    generate = AttentionShape(1, 256, 8, 64, 0.0, "grid", ties=((4, 64, 8),))
    assert untie_by_rotary_table(generate, [table(32768.0)]) == generate
    assert untie_by_rotary_table(tied, []) == tied


def test_a_tie_across_b_is_broken_only_by_a_causal_mask_one_fit_explains():
    """A mask of B x T x T or T x T entries of 1, 2 or 4 bytes, rows padded to 16 B: 18,816 B is
    3 x 56 x 56 fp16 and no mask of one sequence of 168 (28,224 entries); 4,096 B is 64 x 64 bool,
    a T x T mask of B=4, T=64 and too small for one of 256, but 65,536 B (256 x 256 bool or
    4 x 64 x 64 fp32) fits both, so it breaks nothing. A kernel doing arithmetic is no mask."""
    from lmperf.pmc.attention_shape import AttentionShape, untie_by_causal_mask
    from lmperf.pmc.parse import KernelRecord

    def kernel(stored: float, ffma: float = 0.0) -> KernelRecord:
        metrics = {"sm__sass_data_bytes_mem_global_op_st.sum": stored}
        if ffma:
            metrics["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] = ffma
        return KernelRecord(0, "triton_poi_fused_2", (37, 1, 1), (64, 1, 1), metrics)

    tied = AttentionShape(1, 168, 12, 64, 0.0, "grid", ties=((3, 56, 12),))
    broken = untie_by_causal_mask(tied, [kernel(18_816.0)])
    assert (broken.batch, broken.seq_len, broken.n_heads, broken.ties) == (3, 56, 12, ())
    assert "18,816 B" in broken.evidence
    assert untie_by_causal_mask(tied, [kernel(18_816.0, ffma=1.0)]) == tied
    generate = AttentionShape(1, 256, 8, 64, 0.0, "grid", ties=((4, 64, 8),))
    assert untie_by_causal_mask(generate, [kernel(4_096.0)]).batch == 4
    assert untie_by_causal_mask(generate, [kernel(65_536.0)]) == generate


def test_a_fused_forward_s_log_sum_exp_stores_give_its_heads():
    """A training forward stores N·d outputs and N·H fp32 statistics: 192 rows of d = 1024 in
    bf16 with 16 heads store 192·1024·2 + 192·16·4 = 405,504 B; a forward pass alone stores
    only its outputs and says nothing of H."""
    from lmperf.pmc.attention_shape import _log_sum_exp_heads
    from lmperf.pmc.parse import KernelRecord

    def forward(stored: float) -> KernelRecord:
        return KernelRecord(
            0, "_fwd_kernel", (1, 32, 1), (128, 1, 1), {"sm__sass_data_bytes_mem_global_op_st.sum": stored}
        )

    assert _log_sum_exp_heads(forward(405_504.0), 192, 1024) == 16
    assert _log_sum_exp_heads(forward(192 * 1024 * 4 + 192 * 8 * 4), 192, 1024) == 8
    assert _log_sum_exp_heads(forward(393_216.0), 192, 1024) is None


def test_a_fused_forward_s_stores_deny_readings_of_other_rows_and_widths():
    """A fused attention forward stores its N·a outputs with st.global, with or without N·H fp32
    log-sum-exps, or (cuDNN, its outputs by TMA) the statistics alone. 64 rows of an attention
    1536 wide in fp32 store 64·1536·4 = 393,216 B, which 32 rows of it (196,608 B) do not; with 12
    heads' statistics 393,216 + 64·12·4 = 396,288 B; cuDNN's 3,072 B are 64·12·4. A split-KV
    forward's partial sums, and a kernel whose stores count nothing, say nothing."""
    from lmperf.pmc.attention_shape import stores_fit
    from lmperf.pmc.parse import KernelRecord

    def forward(stored: float, name: str = "fmha_cutlassF_f32_aligned_64x128_rf_sm80") -> KernelRecord:
        return KernelRecord(0, name, (1, 12, 1), (128, 1, 1), {"sm__sass_data_bytes_mem_global_op_st.sum": stored})

    assert stores_fit(forward(393_216.0), 64, 1536, 12, 4) is True
    assert stores_fit(forward(393_216.0), 32, 1536, 12, 4) is False
    assert stores_fit(forward(396_288.0), 64, 1536, 12, 4) is True
    assert stores_fit(forward(396_288.0), 64, 1536, 16, 4) is False
    assert stores_fit(forward(3_072.0, "cudnn_generated_fort_native_sdpa_sm90"), 64, 1536, 12, 2) is True
    assert stores_fit(forward(0.0), 32, 1536, 12, 4) is None
    assert stores_fit(forward(5_490_240.0, "void pytorch_flash::flash_fwd_splitkv_kernel"), 32, 1536, 12, 2) is None


def test_cudnns_tma_stores_of_its_outputs_deny_half_the_rows():
    """cuDNN's forward stores its N·a outputs by TMA, clipped to N rows: 64 rows of 16 heads of
    128 in fp16 are 64·2048·2 = 262,144 B, which 32 rows (131,072 B) do not explain; a training
    forward adds its N·H fp32 log-sum-exps by st.global, 64·16·4 = 4,096 B."""
    from lmperf.pmc.attention_shape import stores_fit
    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def cudnn(tma: float, st: float = 0.0) -> KernelRecord:
        name = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1"
        return KernelRecord(0, name, (16, 1, 1), (384, 1, 1), {STORE_BYTES: st, TMA_STORE_BYTES: tma})

    assert stores_fit(cudnn(262_144.0), 64, 2048, 16, 2) is True
    assert stores_fit(cudnn(262_144.0), 32, 2048, 16, 2) is False
    assert stores_fit(cudnn(262_144.0, 4_096.0), 64, 2048, 16, 2) is True
    assert stores_fit(cudnn(262_144.0, 4_096.0), 64, 2048, 8, 2) is False


def test_cudnns_stores_deny_rows_at_which_no_heads_fit_its_grid():
    """A max-autotune Qwen3's norms run four rows a program: 64 rows of d 2048 launch grids of 16,
    and the output projection's 64·2048·2048 MACs are 16·4096·4096, as the K projection's
    64·1024 stored values are 16·4096. cuDNN's 16 blocks of 128 query rows over 16 rows of an
    attention 4096 wide would be B=1, T=16 and 16 heads of 256, which its 128-wide head tile
    cannot hold (fewer heads, wider still), so no (B, T, H) fits and no heads judge the
    log-sum-exps; its TMA stores, 64·2048·2 = 262,144 B, still judge the outputs: not 16·4096·2 =
    131,072 B, nor that plus 16·H·4 B of statistics (H = 2,048, heads of 2), nor those alone (H =
    4,096). They deny N=16 and hold N=64 (B=1, T=64, 16 heads of 128: 4·16·128·128·128 tensor
    ops over one 128 x 128 tile a head), which the launches count less often."""
    from collections import Counter

    from lmperf.analysis.kernels import ATTENTION
    from lmperf.pmc import gemms as g
    from lmperf.pmc.attention_shape import stores_deny
    from lmperf.pmc.widths import attention_stores, tokens_and_width
    from lmperf.pmc.parse import KernelRecord
    from lmperf.pmc.result import Inference

    bf16 = g.TENSOR_PATHS["bf16"]

    def kernel(index: int, name: str, grid: int, metrics: dict) -> KernelRecord:
        return KernelRecord(index, name, (grid, 1, 1), (128, 1, 1), metrics)

    name = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1"
    attention = kernel(0, name, 16, {bf16: 134_217_728.0, g.STORE_BYTES: 0.0, g.TMA_STORE_BYTES: 262_144.0})
    out = kernel(1, "triton_tem_fused_mm_t_view_1", 64, {bf16: 2 * 268_435_456.0, g.STORE_BYTES: 262_144.0})
    up = kernel(2, "nvjet_sm90_tst_64x64_64x13_4x1_v_bz_TNT", 4, {bf16: 2 * 805_306_368.0})
    roles = dict(kind=ATTENTION, marker=attention, qkv=[], qk=None, out=out, ups=[up], down=up)
    roles["first_layer"] = [attention, out, up]
    result = Inference()
    result.set("dtype", "bf16", 0.95, "the layer GEMMs' tensor pipe")
    stores = attention_stores(result, roles, g.Phases(roles["first_layer"], [], []))

    assert stores_deny(attention, 16, 4096, 2) and not stores_deny(attention, 64, 2048, 2)
    assert (stores(16, 4096), stores(64, 2048)) == (False, True)
    counts = Counter({65_536: 2, 131_072: 3})  # the K projection's N·1024 values; N·d
    assert tokens_and_width(result, Counter({16: 3, 64: 1}), roles, counts, None, stores) == (64, 2048)
    assert "not N=16, which more launches count" in result.evidence["d_model"]


def test_a_causal_mask_fits_one_sequence_length_of_the_same_rows():
    """160 rows as 2 x 80 or as 2 x 40 (an alias at half the rows and twice d): a kernel that
    stores 25,600 B with no arithmetic is an 80 x 80 fp32 mask (or 2 x 80 x 80 fp16), and no mask
    of T = 40 (40 x 40 x 4 = 6,400 B; 2 x 40 x 40 x 4 = 12,800 B); a kernel doing arithmetic is none."""
    from lmperf.pmc.attention_shape import mask_fits
    from lmperf.pmc.parse import KernelRecord

    def kernel(stored: float, fadd: float = 0.0) -> KernelRecord:
        metrics = {"sm__sass_data_bytes_mem_global_op_st.sum": stored}
        if fadd:
            metrics["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"] = fadd
        return KernelRecord(0, "triton_poi_fused_add_arange_expand_9", (200, 1, 1), (128, 1, 1), metrics)

    assert mask_fits([kernel(25_600.0)], 2, 80)
    assert not mask_fits([kernel(25_600.0)], 2, 40)
    assert mask_fits([kernel(12_800.0)], 2, 40)
    assert not mask_fits([kernel(25_600.0, fadd=6_400.0)], 2, 80)
    assert not mask_fits([], 2, 80)


def test_a_query_projection_s_own_stores_give_an_attention_wider_than_d():
    """Blind batch cd's Gemma-shaped Llama: 80 rows at d 3072, 16 heads of 256 (a = 4096). No
    per-head norm counts N·a, and the one kernel that rotates q and k together stores
    80·(4096 + 4096)·2 = 1,310,720 B, N·8192, outside the output projection's tiles. The query
    projection's TMA epilogue stores its 80·4096 outputs, 655,360 B: a = 4096. Half those bytes
    (N·2048) are a width the output projection's 80·3072·4096 MACs cannot hold, and without
    them no count gives a."""
    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.counts import element_counts
    from lmperf.pmc.widths import _off_d_at
    from lmperf.pmc.parse import KernelRecord

    def kernel(index, name, grid, work=0.0, stored=0.0, tma=0.0):
        metrics = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 2 * work, STORE_BYTES: stored, TMA_STORE_BYTES: tma}
        return KernelRecord(index, name, grid, (128, 1, 1), metrics)

    def read(query_tma: float):
        qkv_tile = "nvjet_sm90_tst_64x48_64x15_1x2_h_bz_TNT"  # 2 tiles of 48 rows: 96 rows of 4096
        layer = [
            kernel(0, "triton_red_fused_add_mean_mul_pow_rsqrt_0", (80, 1, 1), stored=80 * 3072 * 2),
            kernel(1, qkv_tile, (2, 64, 1), 96 * 3072 * 4096, tma=query_tma),
            kernel(2, qkv_tile, (2, 64, 1), 96 * 3072 * 4096, tma=80 * 4096 * 2),
            kernel(3, "triton_poi_fused_add_mul_cat_1", (320, 1, 1), stored=80 * 8192 * 2),
            kernel(4, qkv_tile, (2, 64, 1), 96 * 3072 * 4096, tma=80 * 4096 * 2),
            kernel(5, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", (16, 1, 1), 2**27, tma=80 * 4096 * 2),
            kernel(6, "nvjet_sm90_tst_64x80_64x11_4x1_v_bz_splitK_TNT", (4, 24, 1), 80 * 3072 * 4096),
            kernel(7, "void cublasLt::splitKreduce_kernel", (96, 5, 1), stored=80 * 3072 * 2),
            kernel(8, "triton_red_fused_add_mean_mul_pow_rsqrt_2", (80, 1, 1), stored=80 * 3072 * 2),
            kernel(9, "nvjet_sm90_tst_192x80_64x6_2x1_v_bz_TNT", (2, 64, 1), 80 * 3072 * 24576),
            kernel(10, "nvjet_sm90_tst_192x80_64x6_2x1_v_bz_TNT", (2, 64, 1), 80 * 3072 * 24576),
            kernel(11, "triton_poi_fused_mul_silu_3", (1920, 1, 1), stored=80 * 24576 * 2),
            kernel(12, "nvjet_sm90_tst_128x80_64x8_4x1_v_bz_splitK_TNT", (4, 30, 1), 80 * 24576 * 3072),
        ]
        roles = {
            "qkv": [layer[1], layer[2], layer[4]],
            "out": layer[6],
            "ups": [layer[9], layer[10]],
            "down": layer[12],
            "qk": None,
            "marker": layer[5],
            "first_layer": layer,
        }
        return _off_d_at(80, roles, element_counts(layer, 2), 2, None, False)

    reading, _ = read(80 * 4096 * 2)
    assert (reading.tokens, reading.d, reading.width) == (80, 3072, 4096)
    assert "the query projection's own stores hold its N·4096 outputs" in reading.evidence
    for stores in (80 * 2048 * 2, 0.0):
        reading, why = read(stores)
        assert reading is None and "no width there that kernels count N·a of" in why


def test_a_per_head_norm_s_stores_give_the_attention_s_width():
    """Liger's Qwen3 q norm runs a program a row of head_dim, N·H rows: 80 tokens x 10 heads of 128
    in bf16 store 800·128·2 values' bytes and an fp32 statistic a row, 204,800 + 3,200 = 208,000 B:
    N·1280. Its k norm, 160 rows: 41,600 B, N·256. The rotary kernel after them is no norm, and a
    norm before the first projection (the layer's input norm) is not between it and the attention."""
    from lmperf.pmc.widths import _head_norm_widths
    from lmperf.pmc.parse import KernelRecord

    def kernel(index: int, name: str, rows: int, stored: float) -> KernelRecord:
        return KernelRecord(
            index, name, (rows, 1, 1), (128, 1, 1), {"sm__sass_data_bytes_mem_global_op_st.sum": stored}
        )

    layer = [
        kernel(0, "_rms_norm_forward_kernel", 80, 102_720.0),
        kernel(1, "nvjet_sm90_tst_64x24_64x16_2x4_h_bz_TNT", 8, 0.0),
        kernel(2, "_rms_norm_forward_kernel", 800, 208_000.0),
        kernel(3, "nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", 8, 0.0),
        kernel(4, "_rms_norm_forward_kernel", 160, 41_600.0),
        kernel(5, "_triton_rope", 80, 245_760.0),
        kernel(6, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", 10, 0.0),
    ]
    roles = {"qkv": [layer[1], layer[3]], "qk": None, "marker": layer[6], "first_layer": layer}
    assert _head_norm_widths(roles, 80, 2) == {1280, 256}
    assert _head_norm_widths(roles, 96, 2) == set()
    assert _head_norm_widths({**roles, "qkv": []}, 80, 2) == set()


def test_an_fp32_simt_head_s_epilogue_leaves_d_the_aligned_width():
    """An fp32 SIMT LM head of 64 x 64 tiles, 64 rows, V = 151,936 (2,374 column tiles): its
    64·769·151,936 = 7,477,682,176 FFMA are N·(d + 1)·V at d = 768 (the epilogue's FFMA) and
    N·d·V at d = 769, and a training norm storing N·768 values and a statistic a row counts N·769
    too. d is 768, the width a multiple of 8, not 512, the width the most kernels count."""
    from collections import Counter

    from lmperf.pmc.widths import _residual_width
    from lmperf.pmc.parse import KernelRecord

    head = KernelRecord(
        0,
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4",
        (1, 2374, 1),
        (128, 1, 1),
        {
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 7_477_682_176.0,
            "sm__sass_data_bytes_mem_global_op_st.sum": 64 * 151_936 * 4.0,
        },
    )
    out = KernelRecord(1, "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8", (2, 24, 8), (64, 1, 1), {})
    widths = Counter({512: 10, 1536: 8, 768: 1, 769: 1})
    d, witness = _residual_width(widths, out, head, 64, 4)
    assert d == 768 and "LM head's tiles hold" in witness


def test_cudnn_s_forward_grid_counts_128_query_rows_a_block():
    """cuDNN's forward over B=1, T=96 and an attention 768 wide launches 8 blocks: 8 heads of 96
    in one 128-row query tile each, not 4 heads of 192 in two 64-row tiles (nor could its head
    tile of 128, last in its name, hold a head of 192). It pads a head of 96 to that tile, so its
    4·8·128·(2·64·128) = 67,108,864 tensor ops are exactly those of one 128-row query tile a
    head over the two 64-wide key tiles that hold its 96 keys."""
    from lmperf.pmc.attention_shape import fused_shape
    from lmperf.pmc.parse import KernelRecord

    kernel = KernelRecord(
        0,
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
        (8, 1, 1),
        (384, 1, 1),
        {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 67_108_864.0},
    )
    shape = fused_shape(kernel, 96, 768)
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 96, 8, 96)
    assert shape.error == 0 and "heads of 96 padded to its 128-wide tile" in shape.evidence


def test_a_compiled_softmax_s_row_statistics_join_its_stored_probabilities():
    """A compiled softmax in a step autograd records stores, beside its B·H·T² probabilities, each
    row's fp32 maximum and sum: B=2, T=8 and 4 heads of 16 (d = 64) in bf16 store
    2·4·8·(8·2 + 8) = 1,536 B. As probabilities alone those are 768 = B·T²·6, 6 heads, no divisor
    of 64; with the statistics, H=4. QK^T's N·T·d = 16·8·64 = 8,192 multiply-adds give T=8. With
    the masked scores stored too, 2·4·8·(2·8·2 + 8) = 2,560 B, H=4 again; the probabilities alone
    (1,024 B) read as before; 1,700 B fit no whole number of heads (6.64; with 8 or 9 bytes of
    statistics a row 4.43, 4.25, 2.66, 2.59). Over d = 120, 1,920 B are 5 heads with one copy a
    row or 3 with two: no reading."""
    from lmperf.pmc.attention_shape import naive_shape
    from lmperf.pmc.gemms import STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    qk = _gemm(0, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", 8_192.0)

    def softmax(stored: float) -> KernelRecord:
        name = "triton_per_fused__softmax__to_copy_arange_bitwise_not_exp_le_masked_fill_mul_3"
        return KernelRecord(1, name, (64, 1, 1), (64, 1, 1), {STORE_BYTES: stored})

    for stored, how in ((1_536.0, "probabilities and each row's"), (2_560.0, "the masked scores and each row's")):
        shape = naive_shape(qk, softmax(stored), 16, 64, stored_size=2)
        assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (2, 8, 4, 16)
        assert how in shape.evidence, shape.evidence
    plain = naive_shape(qk, softmax(1_024.0), 16, 64, stored_size=2)
    assert (plain.batch, plain.seq_len, plain.n_heads) == (2, 8, 4) and "B·H·T²" in plain.evidence
    assert naive_shape(qk, softmax(1_700.0), 16, 64, stored_size=2) is None
    wide_qk = _gemm(0, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", 15_360.0)
    assert naive_shape(wide_qk, softmax(1_920.0), 16, 120, stored_size=2) is None


def test_a_compiled_softmax_s_saved_tensors_read_by_the_qk_product_s_stores():
    """A Hugging Face step compiled may store beside its 16-bit probabilities their fp32 copy or a
    dropout's one-byte keep mask, and each row's statistics or not. B=2, T=8 and 4 heads of 16
    (d = 64): QK^T's N·T·d = 16·8·64 = 8,192 multiply-adds give T=8, and its product stores
    B·H·T²·2 = 2·4·64·2 = 1,024 B, H=4. With the fp32 copy the softmax stores 2·4·8·8·(2 + 4) =
    3,072 B: as probabilities alone 1,536 = B·T²·12 (no divisor of 64), as probabilities and
    statistics 3,072 / (16·(16 + 8)) = 8 heads (with a safe softmax's 9 bytes a row 7.68), whose
    2,048 B of scores the product's 1,024 deny. With the keep mask and statistics it stores
    2·4·8·(8·(2 + 1) + 8) = 2,048 B, 1,024 = B·T²·8 as probabilities alone: 8 heads again, denied
    (at T=8 those bytes are T·(2 + 2) too, so only H is asserted). Product stores of 1,100 B (4.3 heads, too few for 8) leave both without a
    reading, as do 2,500 B that no set of tensors makes up over 4 heads (39.06 B a row). B=1,
    T=10, 4 heads: 6,400 multiply-adds, 800 B of product, and the keep mask and statistics
    4·10·(10·(2 + 1) + 8) = 1,520 B."""
    import dataclasses

    from lmperf.pmc.attention_shape import naive_shape
    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def qk(work: float, product: float) -> KernelRecord:
        gemm = _gemm(0, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", work)
        return dataclasses.replace(gemm, metrics={**gemm.metrics, TMA_STORE_BYTES: product})

    def softmax(stored: float) -> KernelRecord:
        name = "triton_per_fused__softmax__to_copy_add_arange_exp_native_dropout_5"
        return KernelRecord(1, name, (64, 1, 1), (64, 1, 1), {STORE_BYTES: stored})

    for stored in (3_072.0, 2_048.0):
        shape = naive_shape(qk(8_192.0, 1_024.0), softmax(stored), 16, 64, stored_size=2)
        assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (2, 8, 4, 16)
        assert "product's 1,024 B of stores = B·H·T²·2 B give H=4" in shape.evidence
        assert naive_shape(qk(8_192.0, 1_100.0), softmax(stored), 16, 64, stored_size=2) is None
    fp32 = naive_shape(qk(8_192.0, 1_024.0), softmax(3_072.0), 16, 64, stored_size=2)
    assert "B·H·T·T·(2 + 4) B: probabilities and their fp32 copy" in fp32.evidence, fp32.evidence
    assert naive_shape(qk(8_192.0, 1_024.0), softmax(2_500.0), 16, 64, stored_size=2) is None
    dropout = naive_shape(qk(6_400.0, 800.0), softmax(1_520.0), 10, 64, stored_size=2)
    assert (dropout.batch, dropout.seq_len, dropout.n_heads, dropout.head_dim) == (1, 10, 4, 16)
    how = "B·H·T·(T·(2 + 1) + 8) B: probabilities, the dropout keep mask and each row's fp32 maximum and sum"
    assert how in dropout.evidence, dropout.evidence


def test_a_safe_softmax_keeps_a_masked_row_byte_beside_its_statistics_or_stores_those_alone():
    """SDPA's math path runs a safe softmax, whose rows keep a byte saying whether the whole row is
    masked beside their fp32 maximum and sum: 9 bytes a row. B=1, T=64 and 4 heads of 16 (d = 64)
    in bf16 (2-byte scores): QK^T's N·T·d = 64·64·64 = 262,144 multiply-adds give T=64. Stored with
    the probabilities, 1·4·64·(64·2 + 9) = 35,072 B: H=4 (with 8 bytes a row 4.03, as
    probabilities alone 4.28). Split by inductor, the reduction stores the statistics alone,
    1·4·64·9 = 2,304 B (with 8 bytes a row 4.5 heads) over 163,840 FADD, 71 ops a byte: H=4. The
    same 2,304 B over 20,000 FADD (9 a byte) are no kernel of statistics alone: no reading."""
    from lmperf.pmc.attention_shape import naive_shape, stores_row_statistics
    from lmperf.pmc.gemms import FADD, STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    qk = _gemm(0, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", 262_144.0)

    def softmax(stored: float, fadd: float = 163_840.0) -> KernelRecord:
        name = "triton_per_fused__safe_softmax_add_arange_exp_prepare_softmax_online_where_4"
        return KernelRecord(1, name, (64, 1, 1), (64, 1, 1), {STORE_BYTES: stored, FADD: fadd})

    with_probabilities = naive_shape(qk, softmax(35_072.0), 64, 64, stored_size=2)
    assert (with_probabilities.batch, with_probabilities.seq_len, with_probabilities.n_heads) == (1, 64, 4)
    assert "probabilities and each row's fp32 maximum and sum and a byte" in with_probabilities.evidence
    assert stores_row_statistics(softmax(2_304.0)) and not stores_row_statistics(softmax(35_072.0))
    alone = naive_shape(qk, softmax(2_304.0), 64, 64, stored_size=2)
    assert (alone.batch, alone.seq_len, alone.n_heads, alone.head_dim) == (1, 64, 4, 16)
    assert "B·H·T·9 B, only each row's" in alone.evidence, alone.evidence
    assert naive_shape(qk, softmax(2_304.0, fadd=20_000.0), 64, 64, stored_size=2) is None


def test_a_safe_softmax_s_heads_fit_the_qk_product_s_stores():
    """The product's stores bound every stored-softmax reading, a safe softmax's 9 bytes a row and
    its statistics alone too. B=1, T=64 and 4 heads of 16 (d = 64) in bf16: QK^T stores
    B·H·T²·2 = 1·4·64²·2 = 32,768 B of scores, and 35,072 B = 1·4·64·(64·2 + 9) or 2,304 B =
    1·4·64·9 of softmax stores read H=4. Product stores of 30,000 B hold 3.66 heads' scores, too
    few for 4: no reading, and none from those stores themselves (no whole number of heads)."""
    import dataclasses

    from lmperf.pmc.attention_shape import naive_shape
    from lmperf.pmc.gemms import FADD, STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def qk(product: float) -> KernelRecord:
        gemm = _gemm(0, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", 262_144.0)
        return dataclasses.replace(gemm, metrics={**gemm.metrics, TMA_STORE_BYTES: product})

    def softmax(stored: float) -> KernelRecord:
        name = "triton_per_fused__safe_softmax_add_arange_exp_prepare_softmax_online_where_4"
        return KernelRecord(1, name, (64, 1, 1), (64, 1, 1), {STORE_BYTES: stored, FADD: 163_840.0})

    for stored in (35_072.0, 2_304.0):
        shape = naive_shape(qk(32_768.0), softmax(stored), 64, 64, stored_size=2)
        assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 64, 4, 16)
        assert "and a byte saying whether the row is masked whole" in shape.evidence, shape.evidence
        assert naive_shape(qk(30_000.0), softmax(stored), 64, 64, stored_size=2) is None


def test_a_softmax_s_statistics_alone_are_no_layer_s_attention():
    """Inductor may split a softmax into a reduction storing each row's statistics and a kernel
    applying them, and launch the V projection between the two: one layer's attention, not two
    split by a GEMM. Layer [Q, K, QK^T, statistics, V, apply, PV, out] twice counts 2 layers'
    attention. The statistics kernel stores 2,304 B over 163,840 float ops (71 a byte); counted
    as attention of its own (8 a byte, or without a store counter) it makes 4."""
    from lmperf.pmc.completeness import attention_groups
    from lmperf.pmc.gemms import FADD, STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def softmax(index: int, stored: float, name: str = "triton_per_fused__safe_softmax_prepare_softmax_online_4"):
        return KernelRecord(index, name, (64, 1, 1), (64, 1, 1), {STORE_BYTES: stored, FADD: 163_840.0})

    def layer(start: int, statistics: float) -> list:
        gemms = {i: _gemm(start + i, "nvjet_sm90_tst_64x16_64x16_2x2_h_bz_TNT", 1e6) for i in (0, 1, 2, 4, 6, 7)}
        apply = softmax(start + 5, 35_072.0, "triton_poi_fused__safe_softmax_exp_sub_div_5")
        return [gemms[0], gemms[1], gemms[2], softmax(start + 3, statistics), gemms[4], apply, gemms[6], gemms[7]]

    assert attention_groups(layer(0, 2_304.0) + layer(8, 2_304.0)) == 2
    assert attention_groups(layer(0, 20_480.0) + layer(8, 20_480.0)) == 4
    assert attention_groups(layer(0, 0.0) + layer(8, 0.0)) == 4


def test_flash_s_forward_pads_a_head_no_multiple_of_8():
    """PyTorch pads heads of 100 (OpenLLaMA-3B's 32 over d = 3200) to 104 before FlashAttention,
    which runs them in its 128-wide kernel. B=1, T=96 in fp16: a (1, 1, 32) grid, one 128-row
    query tile a head over two 64-wide key tiles, 4·32·128·(128·128) = 268,435,456 tensor ops;
    its stores are 96·32 heads of 104 values of 2 B and 96·32 fp32 log-sum-exps,
    96·32·(104·2 + 4) = 651,264 B, which pin H=32. Products 104 wide would count 218,103,808
    (error 0.19); unpadded stores, 96·3200·2 + 96·32·4 = 626,688 B, show no padded head, and no
    head of 100 is read. The stores fit 32 heads of 100 over 96 rows, not 40 heads of 80."""
    from lmperf.pmc.attention_shape import fused_shape, stores_fit
    from lmperf.pmc.gemms import STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def flash(stored: float) -> KernelRecord:
        name = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, cutlass::half_t>>"
        metrics = {"sm__ops_path_tensor_src_fp16.sum": 268_435_456.0, STORE_BYTES: stored}
        return KernelRecord(0, name, (1, 1, 32), (128, 1, 1), metrics)

    shape = fused_shape(flash(651_264.0), 96, 3200)
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 96, 32, 100)
    assert shape.error == 0 and "heads of 100 padded to 104, its products 128 wide" in shape.evidence
    assert "N·H heads padded to 104 and N·H fp32 log-sum-exps, give H=32" in shape.evidence
    assert fused_shape(flash(626_688.0), 96, 3200) is None
    assert stores_fit(flash(651_264.0), 96, 3200, 32, 2) is True
    assert stores_fit(flash(651_264.0), 96, 3200, 40, 2) is False


def test_a_qk_product_padded_by_pad_mm_stores_its_padded_scores():
    """GPT-2 bf16 compiled in a training step, B=1, T=90, 12 heads of 64 (d = 768): inductor's
    pad_mm pads Q and K to 96 rows (12·96·64·2 = 147,456 B each) and the QK^T product, 96 x 96 a
    head, stores 12·96²·2 = 221,184 B (as B·T²·2 = 16,200 B a head 13.65 heads, no reading); its
    work over 128-wide column tiles, 12·96·128·64 = 9,437,184 multiply-adds, gives T=90 (the one
    divisor of N=90 up to 9,437,184 / (90·768) = 136.5). The softmax reads the T x T scores out
    of the padded product and stores per row of 90: layer 0 its probabilities, the dropout keep
    mask and the row's fp32 maximum and sum, 12·90·(90·3 + 8) = 300,240 B; layer 1 probabilities,
    their fp32 copy and the keep mask, 12·90·90·7 = 680,400 B. Neither is probabilities alone
    (150,120 / 8,100 = 18.5 heads), nor with statistics (300,240 / (90·188) = 17.7), so H=12
    comes from the padded product. Product stores of 221,000 B (no whole head count over 90 or
    96 rows) and softmax stores no set of tensors makes up (300,000 B) give no reading."""
    import dataclasses

    from lmperf.pmc.attention_shape import naive_shape
    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def qk(product: float) -> KernelRecord:
        gemm = _gemm(0, "nvjet_sm90_tst_64x24_64x16_2x4_h_bz_TNT", 9_437_184.0)
        return dataclasses.replace(gemm, metrics={**gemm.metrics, TMA_STORE_BYTES: product})

    def softmax(stored: float) -> KernelRecord:
        name = "triton_per_fused__softmax__to_copy_add_arange_bmm_exp_expand_le_mul_native_dropout_7"
        return KernelRecord(1, name, (1080, 1, 1), (64, 1, 1), {STORE_BYTES: stored})

    for stored, kept in (
        (300_240.0, "B·H·T·(T·(2 + 1) + 8) B: probabilities, the dropout keep mask and each row's fp32"),
        (680_400.0, "B·H·T·T·(2 + 4 + 1) B: probabilities, their fp32 copy and the dropout keep mask"),
    ):
        shape = naive_shape(qk(221_184.0), softmax(stored), 90, 768, stored_size=2)
        assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 90, 12, 64)
        assert "221,184 B of stores = B·H·96²·2 B (T padded to 96 by pad_mm) give H=12" in shape.evidence
        assert kept in shape.evidence, shape.evidence
        assert naive_shape(qk(221_000.0), softmax(stored), 90, 768, stored_size=2) is None
    assert naive_shape(qk(221_184.0), softmax(300_000.0), 90, 768, stored_size=2) is None


def test_a_qk_product_stored_by_tma_counts_whole_sectors():
    """GPT-2 bf16 compiled in a training step, B=1, T=72, 16 heads of 64 (d = 1024): the QK^T
    product, an nvjet of 24 x 64 tiles, stores rows of 72·2 = 144 B by TMA in boxes 24 scores
    (48 B) wide. Row r starts at 144·r, on a sector (32 B) boundary for even r and 16 B past one
    for odd r; its boxes touch sectors 0-1, 1-2 and 3-4 (even) or 0-1, 2-3 and 3-4 (odd): 6
    sectors, 192 B, a row either way, 16·72·192 = 221,184 B where the scores are
    16·72²·2 = 165,888 B (221,184 / (72²·2) = 21.3 heads: no reading). The softmax stores
    16·72·(72·3 + 8) = 258,048 B (probabilities, the dropout keep mask, each row's statistics),
    and the work, 16·72·128·64 = 9,437,184 multiply-adds over 64-wide column tiles, gives T=72.
    Were the boxes 64 wide (a 64 x 24 tile), a row would store 128 + 16 B: 4 + 1 sectors for
    even rows, 5 + 1 for odd ones, 5.5·32 = 176 B on average, 202,752 B for 16 heads, and
    221,184 B would be 17.45 heads: no reading."""
    import dataclasses

    from lmperf.pmc.attention_shape import naive_shape
    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    def qk(tiles: str) -> KernelRecord:
        gemm = _gemm(0, f"nvjet_sm90_tst_{tiles}_64x16_1x2_h_bz_TNN", 9_437_184.0)
        return dataclasses.replace(gemm, metrics={**gemm.metrics, TMA_STORE_BYTES: 221_184.0})

    name = "triton_per_fused__softmax__to_copy_add_arange_exp_expand_le_lift_fresh_native_dropout_5"
    softmax = KernelRecord(1, name, (1152, 1, 1), (64, 1, 1), {STORE_BYTES: 258_048.0})
    shape = naive_shape(qk("24x64"), softmax, 72, 1024, stored_size=2)
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 72, 16, 64)
    assert "in boxes 24 wide counted in whole 32-byte sectors (192 B a row), give H=16" in shape.evidence
    assert "probabilities, the dropout keep mask and each row's fp32 maximum and sum" in shape.evidence
    assert naive_shape(qk("64x24"), softmax, 72, 1024, stored_size=2) is None


def test_tma_counts_a_box_row_in_pieces_of_128_bytes():
    """TMA sector bytes by hand. Rows of 72 bf16 scores in boxes of 24: 6 sectors a row (see the
    test above), 1152 rows 221,184 B; in boxes of 64: 5 and 6 sectors on alternate rows, 202,752 B.
    A Llama's 20 heads over T=144 (an nvjet of 72 x 64 tiles): rows of 288 B, each starting on
    a sector; a box of 72 scores (144 B) stores as pieces of 128 and 16 B, at 0 and 128 (4 + 1
    sectors) and at 144 and 272 (sectors 4-8 and 8: 5 + 1), 11 sectors, 352 B a row: 20·144·352 =
    1,013,760 B, what that capture's QK^T stores; a box of 144 B in one piece would touch 5 + 5
    sectors, 921,600 B. Rows of 64 scores (128 B) in boxes of 64: exact, 16·64·128 = 131,072 B."""
    from lmperf.pmc.attention_shape import _tma_score_bytes

    assert _tma_score_bytes(24, 1152, 72, 2) == 221_184
    assert _tma_score_bytes(64, 1152, 72, 2) == 202_752
    assert _tma_score_bytes(72, 20 * 144, 144, 2) == 1_013_760
    assert _tma_score_bytes(64, 16 * 64, 64, 2) == 131_072


def test_a_compiled_gpt2_whose_qk_product_tma_stores_whole_sectors_reads_as_ran():
    """The served GPT-2 (B=1, T=72, 16 heads of 64) whose QK^T product's TMA stores count 192 B
    a row of 144 (`test_a_qk_product_stored_by_tma_counts_whole_sectors`): every field as ran."""
    from lmperf.pmc.infer import infer

    name = "cl_gpt2_h16_t72_train_compile_naive"
    _assert_every_field_read_as_ran(name)
    result = infer(_served(name)[0])
    assert "221,184 B of stores = B·H·T²·2 B, in boxes 24 wide" in result.evidence["n_heads"]


def test_a_compiled_softmax_after_an_fp32_qk_stores_fp32_scores():
    """A bf16 step (2-byte activations) whose QK^T runs on FFMA without tensor work makes fp32
    scores: B=1, T=80, 32 heads of 100 (d = 3200) store 1·32·80·80·4 = 819,200 B of them. Read
    as 4-byte scores they are 204,800 = B·T²·32, H=32, heads of 100; read as 2-byte ones they
    would be 409,600 = B·T²·64, heads of 50. QK^T's N·T·d = 80·80·3200 = 20,480,000 multiply-adds
    give T=80. A bf16 tensor-core QK^T keeps 2-byte scores (the same bytes then are 64 heads), a
    TF32 one makes 4-byte ones, and an eager step (no size) stays without one."""
    from lmperf.pmc.attention_shape import naive_shape, scores_size
    from lmperf.pmc.gemms import FFMA, STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    fp32_qk = KernelRecord(
        0, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8", (3, 3, 32), (64, 1, 1), {FFMA: 20_480_000.0}
    )
    bf16_qk = _gemm(0, "nvjet_sm90_tst_64x48_64x15_4x2_h_bz_TNT", 20_480_000.0)
    tf32_qk = KernelRecord(
        0, "cutlass_tf32_gemm", (3, 3, 32), (64, 1, 1), {"sm__ops_path_tensor_src_tf32_dst_fp32.sum": 40_960_000.0}
    )
    softmax = KernelRecord(1, "triton_per_fused__safe_softmax_exp", (80, 1, 1), (64, 1, 1), {STORE_BYTES: 819_200.0})

    assert (scores_size(fp32_qk, 2), scores_size(bf16_qk, 2), scores_size(tf32_qk, 2)) == (4, 2, 4)
    assert scores_size(fp32_qk, None) is None
    shape = naive_shape(fp32_qk, softmax, 80, 3200, stored_size=scores_size(fp32_qk, 2))
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 80, 32, 100)
    shape = naive_shape(bf16_qk, softmax, 80, 3200, stored_size=scores_size(bf16_qk, 2))
    assert (shape.batch, shape.seq_len, shape.n_heads, shape.head_dim) == (1, 80, 64, 50)


@pytest.mark.parametrize(
    ("name", "confidence"),
    [
        # memory-efficient fp32 forward: TF32 work not modelled exactly (error 0.11), but its grid
        # (1, 12, 1) names H=12 and B=1, and its 393,216 B of stores are 64·1536·4 exactly
        ("ae_qwen3_h12_kv4_t64_autotune_fp32", 0.9),
        # memory-efficient fp32 forward of a training step (error 0.14): its 595,968 B of stores
        # are its 72·2048·4 B of outputs and log-sum-exps of 16 heads of rows padded to 96, not
        # N·H of them, so they do not pin it
        ("ah_qwen3_h16_kv4_t72_train_compile_fp32", 0.6),
    ],
)
def test_an_inexact_attention_fit_is_confident_only_where_grid_and_stores_pin_it(name, confidence):
    from lmperf.pmc.infer import infer

    capture, expected = _served(name)
    result = infer(capture)
    for field in ("batch", "seq_len", "n_heads", "head_dim"):
        assert result.values[field] == expected[field]
        assert result.confidence[field] == confidence, result.evidence[field]


def test_a_split_k_simt_gemm_s_tiles_bound_an_off_d_attention_s_width():
    """cuBLAS's fp32 split-K query projection of 64 rows, d 768 in, 1536 out: tiles of 64 x 64, 11
    slices of ceil(768 / 11) = 70 rounded up to 72, 64·1536·792 = 77,856,768 FFMA. Its tiles
    allow the widths of 24 column tiles (1473-1536) at 64 rows; at 32 rows of d 1536 (the alias
    that halves the rows and doubles d: 144 x 11 = 1,584 a row) only 12 tiles' (705-768), not the
    1536 that alias's attention would need."""
    from lmperf.pmc.widths import _in_span
    from lmperf.pmc.parse import KernelRecord

    query = KernelRecord(
        0,
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4",
        (1, 24, 11),
        (128, 1, 1),
        {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 77_856_768.0},
    )
    assert _in_span(1536, query, 64, 768) and _in_span(1504, query, 64, 768)
    assert not _in_span(1440, query, 64, 768) and not _in_span(1600, query, 64, 768)
    assert [w for w in range(1, 4097) if _in_span(w, query, 32, 1536)] == list(range(705, 769))


def _gemm(index: int, name: str, work: float):
    """A bf16 tensor-core GEMM launch of `work` multiply-adds (two tensor ops each); its tile
    readings depend on its name and work alone."""
    from lmperf.pmc.parse import KernelRecord

    return KernelRecord(index, name, (8, 8, 1), (128, 1, 1), {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 2 * work})


def test_template_padding_is_loose_only_where_the_attention_fixes_the_period():
    """Layer GEMMs of two layers: [QKV, out, up, down] with layer 0's QKV a template over rows
    padded 160 -> 256 (1.6x layer 1's cuBLAS QKV). No period tiles them within a quarter; at the
    period two layers of attention fix, they tile within a template's row padding (2x), and no
    looser: 2.5x is another GEMM."""
    from lmperf.pmc.gemms import _tiles, layer_period

    works = [1.6, 0.33, 1.34, 1.34, 1.0, 0.33, 1.34, 1.34]
    templates = [True, False, False, False, False, False, False, False]
    assert layer_period(works, templates) == 8
    assert _tiles(works, templates, 4, pinned=True)
    assert not _tiles([2.5, *works[1:]], templates, 4, pinned=True)


def test_a_template_and_a_cublas_gemm_match_within_row_padding_only_when_loose():
    """The cut check asks loosely of a last GEMM that is not the forward's largest: layer 1's
    cuBLAS QKV (1.0) after layer 0's padded QKV template (1.6) is a layer's. Of the largest, an
    LM head (3.2) within twice a fused gate-and-up template (1.7), it asks within a quarter."""
    from lmperf.pmc.gemms import same_layer_gemm

    template, cublas = "triton_tem_fused_mm_1", "nvjet_sm90_tst_64x64_64x13_2x4_h_bz_TNT"
    assert same_layer_gemm(_gemm(9, cublas, 1.0), _gemm(0, template, 1.6), loose=True)
    assert not same_layer_gemm(_gemm(9, cublas, 3.2), _gemm(2, template, 1.7), loose=False)
    assert same_layer_gemm(_gemm(9, cublas, 3.2), _gemm(2, template, 1.7), loose=True)


def test_a_split_k_simt_gemm_s_ffma_pin_its_width_among_those_its_work_allows():
    """cuBLAS's fp32 xmma GEMM in 11 split-K slices of 64 x 64 tiles over N = 112 rows and
    k = 768: each slice takes ceil(768 / 11) = 70 of k, rounded up to 72, so the FFMA are
    128 x 768 x 792 = 77,856,768 for an output 768 wide. A width of 576, which a count of
    GPT-NeoX's unrotated head halves (12 x 48) offers, would run 128 x 576 x 792 at k = 576's
    slices (53 -> 56 a slice): no whole slice rounding gives those FFMA. cutlass's simt_sgemm
    rounds a slice to 2 elements and adds one FFMA a slice: k = 1024 in 3 slices is 3 x 342."""
    from lmperf.pmc.gemms import split_k_simt_allows, tiles_allow
    from lmperf.pmc.parse import KernelRecord

    def simt(name: str, slices: int, ffma: float) -> KernelRecord:
        metrics = {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": ffma}
        return KernelRecord(0, name, (2, 12, slices), (128, 1, 1), metrics)

    xmma = simt("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_ffma", 11, 128 * 768 * 792)
    assert split_k_simt_allows(xmma, 112, 768, 768)
    assert not split_k_simt_allows(xmma, 112, 576, 576)
    assert not tiles_allow(xmma, 112, 576, 576) and tiles_allow(xmma, 112, 768, 768)
    cutlass = simt("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>", 3, 128 * 1024 * (1026 + 3))
    assert split_k_simt_allows(cutlass, 128, 1024, 1024)
    assert not split_k_simt_allows(cutlass, 128, 1024, 896)  # 960 would pad to 1024 in 128-wide tiles


def test_only_a_norm_between_the_query_projection_and_the_attention_counts_as_q_k_norms():
    """Qwen3 normalizes q and k head by head after their projections (inductor names the kernel
    after the mean of squares it takes); a max-autotune template, or the kernel adding a
    projection's bias, named after the input norm it consumes is no norm of its own, nor is the
    input norm before the first projection."""
    from lmperf.pmc.params import normalizes_heads
    from lmperf.pmc.parse import KernelRecord

    def k(index: int, name: str) -> KernelRecord:
        return KernelRecord(index, name, (1, 1, 1), (128, 1, 1), {})

    def roles(*between: str) -> dict:
        norm = k(0, "triton_red_fused_add_mean_mul_pow_rsqrt_0")
        query = k(1, "nvjet_sm90_tst_64x32_64x16_4x1_v_bz_TNT")
        rest = [k(2 + i, name) for i, name in enumerate(between)]
        marker = k(2 + len(between), "cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
        return {"qkv": [query], "marker": marker, "first_layer": [norm, query, *rest, marker]}

    assert normalizes_heads(roles("triton_per_fused__to_copy__unsafe_view_mean_pow_view_1"))
    assert not normalizes_heads(roles("triton_poi_fused_add_cat_cos_mul_neg_sin_2"))
    assert not normalizes_heads(roles("triton_tem_fused_addmm_native_layer_norm_t_view_1"))
    assert not normalizes_heads(roles("triton_poi_fused_addmm_embedding_native_layer_norm_view_1"))


def test_an_lm_head_s_tiles_and_logits_deny_twice_the_rows_at_half_d():
    """96 rows of d 1536 through an LM head of 384x96 tiles in clusters of 2x1 over V = 151,936:
    the 96 rows fill one 96-row tile and V pads to 152,064 columns, so the work is 96·1536·152,064
    and the TMA stores 96·151,936·2 B. Read as 192 rows of d 768 (the same N·d), the stores give
    V = 75,968, which no tiling of 192·768·V' = that work holds, while another width counted at
    192 rows does (384, in 768-row tiles: 768·384·76,032): the head denies d 768 there. A head
    whose stores hold no logits for any counted width (a fused loss's) denies nothing."""
    from collections import Counter

    from lmperf.pmc.gemms import STORE_BYTES, TMA_STORE_BYTES
    from lmperf.pmc.widths import head_holds
    from lmperf.pmc.parse import TENSOR_PATHS, KernelRecord

    def head(stored: float) -> KernelRecord:
        metrics = {TENSOR_PATHS["bf16"]: 2.0 * 96 * 1536 * 152_064, STORE_BYTES: 0.0, TMA_STORE_BYTES: stored}
        return KernelRecord(0, "nvjet_sm90_tst_384x96_64x3_2x1_v_bz_coopA_TNT", (2, 66, 1), (384, 1, 1), metrics)

    logits = head(96 * 151_936 * 2)
    counts = Counter({192 * 768: 4, 96 * 768: 6})  # N·d at 96 rows of 1536 reads as 192 rows of 768
    assert head_holds(logits, 96, 1536, 2, counts)
    assert not head_holds(logits, 192, 768, 2, counts)
    assert head_holds(head(7_424_000.0), 192, 768, 2, counts)


def test_a_template_stores_its_product_and_at_most_one_more_tensor():
    """An fp32 max-autotune output projection over 80 rows of 1024 stores 80·1024·4 = 327,680 B.
    That is one product of 80 rows, or a product and an epilogue's second tensor at 40 rows, but
    four products of 20 rows is no epilogue: 20 rows of d 1024 are denied."""
    from lmperf.pmc.gemms import STORE_BYTES, stores_whole_outputs
    from lmperf.pmc.parse import KernelRecord

    out = KernelRecord(0, "triton_tem_fused_mm_t_transpose_view_6", (96, 1, 1), (128, 1, 1), {STORE_BYTES: 327_680.0})
    assert stores_whole_outputs(out, 80, 1024, 4)
    assert stores_whole_outputs(out, 40, 1024, 4)
    assert not stores_whole_outputs(out, 20, 1024, 4)
    assert not stores_whole_outputs(out, 80, 1000, 4)


def _naive_layer_at_t_equal_head_dim() -> list:
    """The first layer of a max-autotune Llama forward whose SDPA ran its math path (heads of 100),
    B=1, T=100, H=32, d=3200, d_ff=8640. QK^T is 32 products of (100 x 100) @ (100 x 100) and P V
    the same shape (T = head_dim), so inductor runs both in one fp32 bmm template: 64 x 64 tiles
    pad each product to 128 x 128 over k 100 -> 128, 32·128·128·128 = 67,108,864 FFMA, on a
    (4, 32, 1) grid, storing 32·100·100·4 = 1,280,000 B of fp32 scores. The K, V and output
    projections are one mm template over rows padded to 128 (128·3200·3200 = 1,310,720,000 MACs),
    the V projection launched after the softmax."""
    from lmperf.pmc.gemms import FFMA, STORE_BYTES
    from lmperf.pmc.parse import KernelRecord

    bmm = "triton_tem_fused__to_copy__unsafe_view_add_bmm_cat_cos_mm_mul_neg_sin_slice_transpose_unsqueeze_view_5"
    product = {FFMA: 32 * 128 * 128 * 128, STORE_BYTES: 32 * 100 * 100 * 4}

    def plain(index: int, name: str, stored: float) -> KernelRecord:
        return KernelRecord(index, name, (100, 1, 1), (128, 1, 1), {STORE_BYTES: stored})

    return [
        plain(0, "triton_red_fused__to_copy_add_embedding_mean_mul_pow_rsqrt_0", 100 * 3200 * 2),
        _gemm(1, "nvjet_sm90_tst_64x56_64x14_4x2_h_bz_TNT", 112 * 3328 * 3200),
        _gemm(2, "triton_tem_fused_mm_t_view_3", 128 * 3200 * 3200),
        plain(3, "triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_4", 3_200_000),
        KernelRecord(4, bmm, (4, 32, 1), (256, 1, 1), product),
        plain(5, "triton_per_fused__safe_softmax_add_exp_prepare_softmax_online_sub_6", 32 * 100 * 100 * 4),
        _gemm(6, "triton_tem_fused_mm_t_view_3", 128 * 3200 * 3200),
        plain(7, "triton_poi_fused__to_copy__unsafe_view_mm_transpose_view_7", 100 * 3200 * 4),
        KernelRecord(8, bmm, (4, 32, 1), (256, 1, 1), product),
        _gemm(9, "triton_tem_fused_mm_t_view_3", 128 * 3200 * 3200),
        plain(10, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_10", 100 * 3200 * 2),
        _gemm(11, "triton_tem_fused_mm_t_view_11", 128 * 8704 * 3200),
        _gemm(12, "triton_tem_fused_mm_t_view_11", 128 * 8704 * 3200),
        plain(13, "triton_poi_fused__unsafe_view_mul_silu_12", 100 * 8640 * 2),
        _gemm(14, "nvjet_sm90_tst_64x104_64x10_4x1_v_bz_splitK_TNT", 104 * 3328 * 8704),
    ]


def test_p_v_repeating_qk_s_kernel_and_work_is_no_v_projection():
    """A matmul after the softmax that repeats a projection's kernel and work from before it is the
    V projection; one that repeats QK^T's is P V: at T = head_dim = 100 both products run in the
    same bmm template of 67,108,864 FFMA. Taking QK^T for a projection left the down-projection,
    the nearest work after the softmax, as P V and no MLP after it."""
    from lmperf.pmc.gemms import Layers
    from lmperf.pmc.roles import layer_roles

    layer = _naive_layer_at_t_equal_head_dim()
    gemms = [layer[i] for i in (1, 2, 4, 6, 8, 9, 11, 12, 14)]
    roles = layer_roles(Layers(2, gemms, _gemm(15, "nvjet_sm90_tst_256x104_64x4_2x1_v_bz_coopA_TNT", 1.0), layer))
    assert roles is not None
    assert (roles["qk"].index, roles["pv"].index) == (4, 8)
    assert [k.index for k in roles["qkv"]] == [1, 2, 6]
    assert (roles["out"].index, [k.index for k in roles["ups"]], roles["down"].index) == (9, [11, 12], 14)


def test_a_bmm_template_s_grid_and_stores_pin_a_naive_reading_its_padded_work_leaves_loose():
    """The softmax's 320,000 fp32 scores are B·H·T² for every B = 100/T with H = 3200/T (T = head_dim
    = 100 makes H·T = d), and QK^T's 67,108,864 FFMA, 2.1x the 32,000,000 of B=1, bound T by 209
    only. Inductor's bmm template launches (tiles, batches, 1): its 32 batches are B·H, and its
    1,280,000 B of stores are 32·T²·4, T = 100, so B = 1 and H = 32. B=2, T=50, H=64 launches 64
    batches; 2-byte scores would be 640,000 B; a cuBLAS kernel's grid is not read so."""
    from lmperf.pmc.attention_shape import AttentionShape, template_pins_products
    from lmperf.pmc.parse import KernelRecord

    qk = _naive_layer_at_t_equal_head_dim()[4]
    as_ran = AttentionShape(1, 100, 32, 100, 1.1, "")
    assert template_pins_products(qk, as_ran, 4)
    assert not template_pins_products(qk, AttentionShape(2, 50, 64, 50, 3.2, ""), 4)
    assert not template_pins_products(qk, as_ran, 2)
    assert not template_pins_products(qk, as_ran, None)
    cublas = KernelRecord(4, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8", qk.grid, qk.block, qk.metrics)
    assert not template_pins_products(cublas, as_ran, 4)


def test_a_max_autotune_math_attention_at_t_equal_head_dim_reads_as_ran():
    """Blind batch ci's max-autotune Llama of 32 heads of 100 (SDPA's math path): every field as
    ran, B, T, H and head_dim at 0.9 from the bmm template's (4, 32, 1) grid and exact stores."""
    from lmperf.pmc.infer import infer

    name = "ci_llama_h32_kv32_t100_autotune"
    _assert_every_field_read_as_ran(name)
    result = infer(_served(name)[0])
    for field in ("batch", "seq_len", "n_heads", "head_dim"):
        assert result.confidence[field] == 0.9, result.evidence[field]
        assert "bmm template launches (4, 32, 1)" in result.evidence[field]
    assert not result.assumptions and not result.missing
