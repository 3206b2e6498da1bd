"""Issue 48's limits: the serving targets (padded requests, a draft model, quantised weights, a
tensor-parallel rank), the truth each writes, and the claims about what pmc reads from each.

Expected shapes are worked out by hand from the configs (a Megatron shard of each GEMM), never
read from the code under test. The claims are checked against captures once they are committed
in tests/pmc/fixtures/limits/; until then those tests skip."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from lmperf.errors import UsageError
from lmperf.pmc.corpus import corpus, llama
from lmperf.pmc.limits import LIMIT_CLAIMS, VERDICTS, LimitClaim, broken_claims
from lmperf.pmc.quantized import Fp8Linear, Int8Linear, Int8WeightOnlyLinear
from lmperf.pmc.runner import build_step, decoder_layers
from lmperf.pmc.serving import DRAFT_TOKENS, left_padded
from lmperf.pmc.targets import Target
from lmperf.pmc.tensor_parallel import VocabShardEmbedding

LIMIT_CAPTURES = Path(__file__).parent / "fixtures" / "limits"
CPU = torch.device("cpu")
# A tiny Llama: d 128, 4 heads of 32, 2 K/V heads, d_ff 256, vocabulary 512.
TINY = llama(2, 128, 4, 2, 256, 512)
TINY_DRAFT = llama(1, 64, 2, 1, 128, 512)


def _limit_entries() -> dict[str, Target]:
    return {name: target for name, target, _ in corpus() if name.startswith("m_")}


def _step(target: Target):
    torch.manual_seed(0)
    return build_step(target.validate(), CPU)


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(hf_config=TINY, batch=2, request_lengths=(3, 4, 5)), "one per request of the batch"),
        (dict(hf_config=TINY, batch=2, seq_len=8, request_lengths=(3, 9)), "must lie in 1..8"),
        (dict(hf_config=TINY, batch=2, seq_len=8, request_lengths=(8, 8)), "one of them shorter"),
        (dict(hf_config=TINY, mode="train-step", batch=1, seq_len=8, request_lengths=(3,)), "forward or generate"),
        (dict(preset="tiny", batch=1, seq_len=8, request_lengths=(3,)), "eager Hugging Face config"),
        (dict(hf_config=TINY, draft_config=TINY_DRAFT, batch=1), "assisted generate"),
        (dict(hf_config=TINY, draft_config=TINY_DRAFT, mode="generate", new_tokens=3), "batch 1"),
        (
            dict(
                hf_config=TINY, draft_config={**TINY_DRAFT, "vocab_size": 500}, mode="generate", new_tokens=3, batch=1
            ),
            "family and vocabulary",
        ),
        (
            dict(hf_config=TINY, draft_config=TINY_DRAFT, mode="generate", new_tokens=3, batch=1, compile="default"),
            "no preset, compile mode or kernel set",
        ),
        (dict(hf_config=TINY, quantize="int4"), "unknown quantisation 'int4'"),
        (dict(hf_config=TINY, quantize="fp8", dtype="fp16"), "bf16 forward"),
        (dict(hf_config=TINY, quantize="fp8", mode="generate", new_tokens=2), "bf16 forward"),
        (dict(hf_config={"model_type": "gpt2"}, quantize="fp8"), "replace nn.Linear layers"),
        (dict(hf_config=TINY, quantize="int8", batch=2, seq_len=8), "more than 16 token rows"),
        (dict(hf_config=TINY, tensor_parallel=0), "a whole number >= 1"),
        (dict(hf_config=TINY, tensor_parallel=2, mode="generate", new_tokens=2), "for a forward"),
        (dict(hf_config={"model_type": "gpt2", "n_head": 4}, tensor_parallel=2), "llama, mistral, qwen2"),
        (dict(hf_config=llama(2, 128, 4, 1, 256, 512), tensor_parallel=2), "must divide heads, K/V heads"),
        (dict(hf_config=llama(2, 128, 4, 2, 256, 511), tensor_parallel=2), "and the vocabulary"),
        (dict(hf_config=TINY, quantize="fp8", tensor_parallel=2), "one serving limit per target"),
        (dict(hf_config=TINY, tp_nccl=True), "degree of 2 or more"),
        (dict(hf_config=TINY, tp_nccl=True, tensor_parallel=2, mode="train-step"), "for a forward"),
    ],
)
def test_a_serving_target_that_cannot_run_is_refused_with_its_reason(fields, message):
    with pytest.raises(UsageError, match=message):
        Target(**fields).validate()


def test_request_lengths_survive_the_json_spec_as_a_tuple():
    target = Target(hf_config=TINY, batch=2, seq_len=8, request_lengths=[3, 8])
    again = Target(**json.loads(target.to_json()))
    assert again == target and again.request_lengths == (3, 8)


def test_left_padding_puts_each_request_at_the_end_and_counts_its_positions_from_its_start():
    tokens = torch.tensor([[11, 12, 13, 14], [21, 22, 23, 24]])
    ids, mask, positions = left_padded(tokens, (2, 4))
    assert ids.tolist() == [[0, 0, 13, 14], [21, 22, 23, 24]]
    assert mask.tolist() == [[0, 0, 1, 1], [1, 1, 1, 1]]
    assert positions.tolist() == [[0, 0, 0, 1], [0, 1, 2, 3]]


def test_a_padded_forward_runs_the_padded_batch_and_its_truth_keeps_the_request_lengths():
    step, truth = _step(Target(hf_config=TINY, batch=3, seq_len=16, request_lengths=(5, 16, 9)))
    step()
    assert truth["padding"] == dict(
        side="left", padded_len=16, request_lengths=[5, 16, 9], tokens_run=48, tokens_real=30
    )


def test_a_tensor_parallel_rank_runs_the_megatron_shard_of_every_gemm():
    # TP=2 of d 128, 4 heads of 32, 2 K/V heads, d_ff 256, V 512. Column-split: q (4/2)·32 = 64
    # outputs, k and v (2/2)·32 = 32, gate and up 256/2 = 128; row-split: o from 64 inputs, down
    # from 128, both to d = 128; vocabulary-parallel embedding and LM head: 512/2 = 256 rows.
    step, truth = _step(Target(hf_config=TINY, batch=2, seq_len=16, tensor_parallel=2))
    model = _model_of(step)
    block = decoder_layers(model)[0]
    shapes = {name: tuple(m.weight.shape) for name, m in block.named_modules() if isinstance(m, torch.nn.Linear)}
    assert shapes == {
        "self_attn.q_proj": (64, 128),
        "self_attn.k_proj": (32, 128),
        "self_attn.v_proj": (32, 128),
        "self_attn.o_proj": (128, 64),
        "mlp.gate_proj": (128, 128),
        "mlp.up_proj": (128, 128),
        "mlp.down_proj": (128, 128),
    }
    assert tuple(model.get_output_embeddings().weight.shape) == (256, 128)
    assert isinstance(model.get_input_embeddings(), VocabShardEmbedding)
    step()
    # shard: per layer 128·(64 + 32 + 32) + 64·128 + 3·128·128 + 2·128 (norms) = 73984;
    # total 2·73984 + 2·256·128 (embedding, head) + 128 (final norm) = 213632
    assert {k: truth[k] for k in ("n_heads", "n_kv_heads", "head_dim", "d_model", "d_ff", "vocab_size")} == dict(
        n_heads=2, n_kv_heads=1, head_dim=32, d_model=128, d_ff=128, vocab_size=256
    )
    assert (truth["params_blocks"], truth["params_total"]) == (2 * 73984, 213632)
    tp = truth["tp_rank"]
    assert (tp["degree"], tp["rank"], tp["how"]) == (2, 0, "emulated TP rank (no communication kernels)")
    full = tp["full_model"]
    assert (full["n_heads"], full["n_kv_heads"], full["d_ff"], full["vocab_size"]) == (4, 2, 256, 512)
    # full: per layer 128·(128 + 64 + 64) + 128·128 + 3·128·256 + 256 = 147712
    assert (full["params_blocks"], full["params_total"]) == (2 * 147712, 2 * 147712 + 2 * 512 * 128 + 128)


# One rank of TP=2 over gloo: the full model's weights sliced as Megatron shards them (by hand,
# below), the collectives lmperf.pmc.tensor_parallel adds, and rank 0's logits saved beside the
# full model's own (float64, one process, no parallelism).
_RANK_PROGRAM = """
import sys, torch, torch.distributed as dist
from transformers import AutoConfig, AutoModelForCausalLM
from lmperf.pmc.tensor_parallel import VocabShardEmbedding, add_collectives, shard_fields
rank, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fields = dict(model_type="llama", num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=256, vocab_size=512, max_position_embeddings=64)
def build(f):
    f = dict(f)
    return AutoModelForCausalLM.from_config(AutoConfig.for_model(f.pop("model_type"), **f),
                                            attn_implementation="sdpa").double().eval()
torch.manual_seed(0)
full = build(fields)
shard = build(shard_fields(fields, 2))
def rows(w, n): return w[rank * n:(rank + 1) * n]
def cols(w, n): return w[:, rank * n:(rank + 1) * n]
with torch.no_grad():
    for a, b in zip(full.model.layers, shard.model.layers):
        b.self_attn.q_proj.weight.copy_(rows(a.self_attn.q_proj.weight, 64))
        b.self_attn.k_proj.weight.copy_(rows(a.self_attn.k_proj.weight, 32))
        b.self_attn.v_proj.weight.copy_(rows(a.self_attn.v_proj.weight, 32))
        b.self_attn.o_proj.weight.copy_(cols(a.self_attn.o_proj.weight, 64))
        b.mlp.gate_proj.weight.copy_(rows(a.mlp.gate_proj.weight, 128))
        b.mlp.up_proj.weight.copy_(rows(a.mlp.up_proj.weight, 128))
        b.mlp.down_proj.weight.copy_(cols(a.mlp.down_proj.weight, 128))
        b.input_layernorm.weight.copy_(a.input_layernorm.weight.detach() + 0.5)
        a.input_layernorm.weight.copy_(b.input_layernorm.weight)
    shard.model.embed_tokens.weight.copy_(rows(full.model.embed_tokens.weight, 256))
    shard.lm_head.weight.copy_(rows(full.lm_head.weight, 256))
shard.set_input_embeddings(VocabShardEmbedding(shard.get_input_embeddings(), rank * 256))
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
add_collectives(shard, shard.model.layers)
tokens = torch.randint(0, 512, (2, 9), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    ours, theirs = shard(input_ids=tokens).logits, full(input_ids=tokens).logits
dist.destroy_process_group()
if rank == 0:
    torch.save(dict(ours=ours, theirs=theirs), out)
"""


def test_the_collectives_make_two_shards_compute_the_full_models_logits(tmp_path):
    import socket
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    out = tmp_path / "logits.pt"
    ranks = [
        subprocess.Popen([sys.executable, "-c", _RANK_PROGRAM, str(rank), port, str(out)], stderr=subprocess.PIPE)
        for rank in (0, 1)
    ]
    errors = [rank.communicate(timeout=180)[1].decode()[-2000:] for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0], errors
    logits = torch.load(out)
    assert logits["ours"].shape == (2, 9, 512)
    torch.testing.assert_close(logits["ours"], logits["theirs"], rtol=1e-10, atol=1e-10)


def test_rank_0_removes_the_spec_file_it_started_its_peers_with(tmp_path, monkeypatch):
    import subprocess
    import sys

    from lmperf.pmc import tensor_parallel

    spec = tmp_path / "lmperf_tp_29500.json"
    spec.write_text("{}", encoding="utf-8")
    peer = subprocess.Popen([sys.executable, "-c", "import sys; open(sys.argv[1]).read()", str(spec)])
    monkeypatch.setattr(tensor_parallel.dist, "destroy_process_group", lambda: None)
    tensor_parallel.leave_ranks([peer])
    assert peer.returncode == 0 and not spec.exists()


def test_rank_0_starts_its_peers_without_the_profilers_variables(tmp_path, monkeypatch):
    # What ncu 2025.3 set in a rank it profiled (`--target-processes application-only`): a peer
    # that inherited them hung in NCCL's init with rank 0; one started without them ran.
    from lmperf.pmc import tensor_parallel

    injected = {
        "NV_CUDA_START_SUSPENDED": "1",
        "NVTX_INJECTION64_PATH": "libcuda-injection.so",
        "NV_NSIGHT_INJECTION_TRANSPORT_TYPE": "uds",
        "NV_TPS_LAUNCH_TOKEN": "Interactive Profile",
        "NVIDIA_PROCESS_INJECTION_CRASH_REPORTING": "0",
        "LD_PRELOAD": "/opt/nvidia/nsight-compute/2025.3.1/target/libInterceptorInjectionTarget.so",
    }
    kept = {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_NVLS_ENABLE": "0", "TMPDIR": str(tmp_path)}
    for name, value in {**injected, **kept}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv(tensor_parallel.RANK_ENV, raising=False)
    monkeypatch.delenv(tensor_parallel.PORT_ENV, raising=False)
    started = []
    monkeypatch.setattr(tensor_parallel.torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(tensor_parallel.torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(tensor_parallel.dist, "init_process_group", lambda *args, **kwargs: None)
    monkeypatch.setattr(tensor_parallel.subprocess, "Popen", lambda args, env: started.append(env) or args)
    tensor_parallel.join_ranks("{}", 2, ["python", "-m", "peer"])
    (env,) = started
    assert not set(injected) & set(env)
    assert {name: env[name] for name in kept} == kept and env[tensor_parallel.RANK_ENV] == "1"
    assert os.environ["NV_CUDA_START_SUSPENDED"] == "1"  # rank 0's own environment is left alone


def test_a_tensor_parallel_rank_past_rank_0_looks_up_its_own_rows():
    embedding = torch.nn.Embedding(4, 3)
    rows = VocabShardEmbedding(embedding, start=4)(torch.tensor([[1, 5, 7, 8]]))
    assert torch.equal(rows[0, 1], embedding.weight[1]) and torch.equal(rows[0, 2], embedding.weight[3])
    assert not rows[0, 0].any() and not rows[0, 3].any()


def test_the_shards_embedding_zeroes_the_ids_of_other_ranks():
    embedding = torch.nn.Embedding(4, 3)
    rows = VocabShardEmbedding(embedding)(torch.tensor([[1, 5, 3, 4]]))
    assert torch.equal(rows[0, 0], embedding.weight[1]) and torch.equal(rows[0, 2], embedding.weight[3])
    assert not rows[0, 1].any() and not rows[0, 3].any()


@pytest.mark.parametrize(
    "scheme, module, stored",
    [
        ("fp8", Fp8Linear, torch.float8_e4m3fn),
        ("int8", Int8Linear, torch.int8),
        ("int8-weight-only", Int8WeightOnlyLinear, torch.int8),
    ],
)
def test_quantising_replaces_every_decoder_linear_and_keeps_the_forward(scheme, module, stored):
    target = Target(hf_config=TINY, batch=2, seq_len=32, quantize=scheme)
    torch.manual_seed(0)
    reference_step, _ = build_step(Target(hf_config=TINY, batch=2, seq_len=32).validate(), CPU)
    step, truth = _step(target)
    # 7 Linear layers a Llama block (q, k, v, o, gate, up, down), 2 blocks
    assert truth["quantization"]["scheme"] == scheme and truth["quantization"]["linears"] == 14
    assert truth["params_total"] == 2 * 147712 + 2 * 512 * 128 + 128  # the weights, whatever their storage
    model = _model_of(step)
    quantised = [m for m in decoder_layers(model).modules() if isinstance(m, module)]
    assert len(quantised) == 14 and all(m.weight.dtype == stored for m in quantised)
    assert not any(isinstance(m, torch.nn.Linear) for m in decoder_layers(model).modules())
    assert isinstance(model.get_output_embeddings(), torch.nn.Linear)  # the LM head stays bf16
    with torch.no_grad():
        tokens = torch.randint(0, 512, (2, 32))
        want, got = _model_of(reference_step)(input_ids=tokens).logits, model(input_ids=tokens).logits
    assert torch.nn.functional.cosine_similarity(want.float().flatten(), got.float().flatten(), dim=0) > 0.95


def _model_of(step):
    """The model a forward step closes over."""
    return next(cell.cell_contents for cell in step.__closure__ if isinstance(cell.cell_contents, torch.nn.Module))


def test_a_speculative_step_records_the_passes_of_both_models_in_the_last_call():
    target = Target(hf_config=TINY, batch=1, seq_len=16, mode="generate", new_tokens=3, draft_config=TINY_DRAFT)
    step, truth = _step(target)
    step()
    step()
    spec = truth["speculative"]
    assert spec["draft"]["n_layers"] == 1 and spec["draft"]["d_model"] == 64 and spec["draft_tokens"] == DRAFT_TOKENS
    # the draft's first pass reads the prompt; the target's first verifies it and the candidates
    assert spec["draft_passes"][0] == [1, 16] and spec["target_passes"][0] == [1, 16 + DRAFT_TOKENS]
    # one call's passes only: 3 new tokens need at most 3 verifying passes
    assert 1 <= len(spec["target_passes"]) <= 3 and truth["decode_steps"] is None


def test_every_limit_entry_is_a_valid_target_with_a_claim():
    entries = _limit_entries()
    assert set(entries) == set(LIMIT_CLAIMS)
    for name, target in entries.items():
        target.validate()
        claim = LIMIT_CLAIMS[name]
        assert claim.verdict in VERDICTS and claim.claim and (claim.reads or claim.neither), name


def test_the_batch_script_selects_exactly_the_limit_entries():
    """pmc_served_batch.sh m collects the entries its own selection line names: run that line."""
    root = Path(__file__).parents[2]
    script = (root / "benchmarks" / "scripts" / "pmc_served_batch.sh").read_text()
    (line,) = [line for line in script.splitlines() if line.startswith("NAMES=")]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    result = subprocess.run(["bash", "-c", f'PREFIX=m; {line}; echo "$NAMES"'], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.strip().split(",")) == sorted(LIMIT_CLAIMS)


def test_a_claim_is_broken_by_a_wrong_field_or_by_reading_a_model_it_must_not():
    truth = dict(mode="forward", n_layers=2, d_model=512, speculative=dict(draft=dict(n_layers=1, d_model=256)))
    claim = LimitClaim("x", "defeats", "", {"mode": "truth", "d_model": None})
    assert broken_claims(claim, dict(mode="forward", d_model=None), truth) == []
    assert broken_claims(claim, dict(mode="generate", d_model=512), truth) == [
        "mode: read 'generate', claimed 'forward'",
        "d_model: read 512, claimed None",
    ]
    draft = dict(n_layers=1, d_model=256, n_heads=None, n_kv_heads=None, head_dim=None, d_ff=None)
    neither = LimitClaim("x", "defeats", "", neither=("speculative.draft",))
    assert broken_claims(neither, draft, {**truth, "speculative": {"draft": draft}}) != []
    tied = LimitClaim("x", "defeats", "", {"mode": "truth"}, assumes=("B=4, T=64",))
    said = ["batch and seq_len: B=4, T=64 explain the attention kernel's grid and work as well as B=1, T=256"]
    assert broken_claims(tied, dict(mode="forward"), truth, said) == []
    assert broken_claims(tied, dict(mode="forward"), truth, ["B=2, T=128 explain it as well"]) == [
        "no assumption says 'B=4, T=64'"
    ]


@pytest.mark.parametrize("name", sorted(LIMIT_CLAIMS))
def test_each_limit_capture_holds_its_claim(name):
    from lmperf.pmc.infer import infer_file

    capture = LIMIT_CAPTURES / f"{name}.csv.gz"
    if not capture.exists():
        pytest.skip(f"{name} not captured yet (benchmarks/scripts/pmc_served_batch.sh m)")
    truth = json.loads(capture.with_name(f"{name}.truth.json").read_text(encoding="utf-8"))
    result = infer_file(capture)
    assert broken_claims(LIMIT_CLAIMS[name], result.values, truth, result.assumptions) == []


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(LIMIT_CLAIMS))
def test_each_limit_entry_runs_its_step_on_a_gpu_and_writes_its_truth(name):
    from lmperf.pmc.runner import run_target

    target = _limit_entries()[name]
    if target.tp_nccl and torch.cuda.device_count() < target.tensor_parallel:
        pytest.skip(f"{name} runs {target.tensor_parallel} NCCL ranks, one GPU each")
    truth = run_target(target)
    assert truth["batch"] == target.batch and truth["seq_len"] == target.seq_len
    assert (truth["quantize"], truth["tensor_parallel"]) == (target.quantize, target.tensor_parallel)
    if target.request_lengths:
        assert truth["padding"]["request_lengths"] == list(target.request_lengths)
    if target.draft_config:
        assert truth["speculative"]["target_passes"] and truth["speculative"]["draft_passes"]
    if target.quantize:
        assert truth["quantization"]["linears"] == 14
    if target.tensor_parallel > 1:
        assert truth["n_heads"] * 2 == truth["tp_rank"]["full_model"]["n_heads"]
        assert truth["tp_rank"]["how"].startswith("NCCL" if target.tp_nccl else "emulated")


@pytest.mark.parametrize(
    "truth, kind",
    [
        ({"padding": {"padded_len": 128}}, "padded"),
        ({"speculative": {"draft_tokens": 2}}, "speculative"),
        ({"quantization": {"scheme": "fp8"}, "compile": None}, "fp8 weights"),
        ({"tensor_parallel": 2, "tp_rank": {"degree": 2}}, "TP rank (emulated)"),
        ({"tensor_parallel": 2, "tp_nccl": True}, "TP rank (NCCL)"),
        ({"quantize": None, "tensor_parallel": 1}, "eager"),
    ],
)
def test_a_score_names_the_serving_limit_a_capture_ran(truth, kind):
    from lmperf.pmc.accuracy import run_kind

    assert run_kind(truth) == kind


TP_CAPTURES = ["m_llama_h16_kv4_t128_tp2", "m_llama_h16_kv4_t128_tp2_nccl", "m_llama_h16_kv4_t96_tp2_nccl_placed"]


def _missing_width(line: str) -> tuple[int, int, int]:
    """(d, low, high) of the output projection's note: 'd = D (...) ... a in [LOW, HIGH]'."""
    import re

    d = re.search(r"and d = (\d+) ", line)
    span = re.search(r"a in \[(\d+), (\d+)\]", line)
    assert d and span, line
    return int(d[1]), int(span[1]), int(span[2])


@pytest.mark.parametrize("name", TP_CAPTURES)
def test_a_tensor_parallel_shard_reads_as_its_shard_and_names_the_split(name):
    """A rank's out-projection runs N·d·(its heads x head_dim): 1024 x 8·64 on these ranks. pmc
    reads the shard as the truth records it (8 heads of 64, 2 K/V heads, d_ff 1408 at d 1024),
    the three widths a split would change below a reading nothing contests, and names the model
    whose 2-way split the same counters are: the truth's full model (16 heads, 4 K/V heads, d_ff
    2816, vocabulary 32,000), worked out apart from the code."""
    from lmperf.pmc.infer import infer_file

    truth = json.loads((LIMIT_CAPTURES / f"{name}.truth.json").read_text(encoding="utf-8"))
    full, degree = truth["tp_rank"]["full_model"], truth["tp_rank"]["degree"]
    result = infer_file(LIMIT_CAPTURES / f"{name}.csv.gz")
    for field in ("d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "batch", "seq_len"):
        assert result.values[field] == truth[field], (field, result.evidence[field])
    assert truth["n_heads"] * truth["head_dim"] * degree == truth["d_model"]
    for field in ("n_heads", "n_kv_heads", "d_ff"):
        assert result.confidence[field] <= 0.6
    split = (
        f"{degree}-way tensor parallelism over a model of {full['n_heads']} heads, {full['n_kv_heads']} K/V heads, "
        f"d_ff {full['d_ff']}, a vocabulary of {truth['vocab_size']:,} or {full['vocab_size']:,}"
    )
    assert any(split in line for line in result.assumptions), result.assumptions


def test_an_attention_wider_than_d_is_said_so():
    """The plain control's out-projection with four times its work, as a model whose attention
    is 4·512 wide over d 512 would run it (Qwen3's 0.6B: 16 heads of 128 over d 1024). No kernel
    counts N·2048 (the query and its rotary stay 512 wide), so no width is read: the note names
    d = 512 and an attention width holding 2048, wider than d, and no field is read."""
    import dataclasses

    from lmperf.pmc.infer import infer
    from lmperf.pmc.parse import read_capture

    capture = read_capture(LIMIT_CAPTURES / "m_llama_h8_kv2_t128_plain.csv.gz")
    from lmperf.analysis.kernels import ATTENTION, MATMUL, kernel_category

    # the output projections: the first GEMM after each attention kernel
    kinds = [kernel_category(k.name) for k in capture.kernels]
    attention = [i for i, kind in enumerate(kinds) if kind == ATTENTION]
    outs = {next(j for j in range(i, len(kinds)) if kinds[j] == MATMUL) for i in attention}
    assert len(outs) == 2
    kernels = [
        dataclasses.replace(k, metrics={m: v * 4 if "tensor" in m else v for m, v in k.metrics.items()})
        if i in outs
        else k
        for i, k in enumerate(capture.kernels)
    ]
    result = infer(dataclasses.replace(capture, kernels=kernels))
    line = next(line for line in result.missing if line.startswith("tokens/d_model"))
    d, low, high = _missing_width(line)
    assert d == 512 and d < low <= 4 * 512 <= high
    assert "wider than d" in line
    assert result.values["d_model"] is None


def test_an_attention_off_d_that_the_attention_kernel_denies_reads_nothing():
    """The TP rank with its attention kernels' grids made (7, 1, 1) and their counters zeroed,
    which no (B, T, H) fits: the output projection's N·d·512 alone sets no d_model, and no width
    is read."""
    import dataclasses

    from lmperf.analysis.kernels import ATTENTION, kernel_category
    from lmperf.pmc.infer import infer
    from lmperf.pmc.parse import read_capture

    capture = read_capture(LIMIT_CAPTURES / "m_llama_h16_kv4_t96_tp2_nccl_placed.csv.gz")

    def denied(kernel):
        return dataclasses.replace(
            kernel, grid=(7, 1, 1), metrics={m: 0.0 if v else v for m, v in kernel.metrics.items()}
        )

    kernels = [denied(k) if kernel_category(k.name) == ATTENTION else k for k in capture.kernels]
    result = infer(dataclasses.replace(capture, kernels=kernels))
    for field in ("d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size"):
        assert result.values[field] is None, (field, result.evidence[field])
    assert "no (B, T, H, head_dim) of the attention kernel confirms" in result.evidence["d_model"]
