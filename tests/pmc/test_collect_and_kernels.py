"""ncu command, failure lines, metric filtering, kernel classes, collect's CLI bad input."""

import sys

import pytest
from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.errors import UsageError
from lmperf.pmc import collect, ncu
from lmperf.pmc.collect import compiled_once, kernel_rows, sibling
from lmperf.analysis.kernels import ATTENTION, LOSS, MATMUL, NORM, OPTIMIZER, SOFTMAX, kernel_category, short_name
from lmperf.pmc.parse import read_capture
from lmperf.pmc.targets import Target

from pmc_fixtures import FIXTURES


def test_command_profiles_one_range_in_base_units_without_clock_control():
    cmd = ncu.NcuRun(["python", "x.py"], "step").command()
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert "step/" in cmd and "step" in cmd  # push/pop or start/end range
    assert cmd[-2:] == ["python", "x.py"]
    assert {"--csv", "raw", "base"} <= set(cmd)
    with pytest.raises(UsageError):
        ncu.NcuRun([], "step").command()
    with pytest.raises(UsageError):
        ncu.NcuRun(["x"], "a/b").command()
    assert "--kernel-name" not in cmd and "--target-processes" not in cmd


def test_a_program_with_nccl_peers_profiles_only_its_own_process_and_no_collective():
    import re

    cmd = ncu.NcuRun(["python", "x.py"], "step", skip_collectives=True).command()
    assert cmd[cmd.index("--target-processes") + 1] == "application-only"
    kernels = cmd[cmd.index("--kernel-name") + 1]
    assert kernels.startswith("regex:")
    keeps = re.compile(kernels.removeprefix("regex:"))  # ncu's regex grammar is ECMAScript's
    assert not keeps.search("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
    assert keeps.search("nvjet_sm90_tst_64x64_64x13_2x4_h_bz_TNT") and keeps.search("triton_poi_fused_add_0")
    assert cmd[-2:] == ["python", "x.py"]


def _alive(pid: int, grace_s: float = 5.0) -> bool:
    """Whether process `pid` still runs `grace_s` after it was killed (SIGKILL lands a moment later)."""
    import time

    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in "ZX":  # a zombie has stopped
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.05)
    return True


def test_a_stopped_capture_gives_its_last_line_and_leaves_no_process(tmp_path):
    # A stand-in for ncu: attaches, then hangs with a child of its own (the profiled program's
    # NCCL peer) that would outlive a kill of ncu alone.
    fake = tmp_path / "ncu"
    child = tmp_path / "child.pid"
    fake.write_text(
        "#!/bin/sh\n"
        f"sleep 60 & echo $! > {child}\n"
        "echo '==PROF== Connected to process 7 (/usr/bin/python3)'\n"
        "echo 'NCCL version 2.28.9+cuda13.0' >&2\n"
        "sleep 60\n"
    )
    fake.chmod(0o755)
    spec = ncu.NcuRun(["python", "x.py"], "step", ncu=str(fake))
    with pytest.raises(UsageError) as stopped:
        ncu.run(spec, tmp_path / "raw.csv", timeout_s=2)
    assert str(stopped.value) == "ncu did not finish within 2 s; its last line: 'NCCL version 2.28.9+cuda13.0'"
    assert not _alive(int(child.read_text()))
    assert not (tmp_path / "raw.csv").exists()


def test_an_interrupted_capture_leaves_no_process(tmp_path):
    import os
    import signal
    import threading

    child = tmp_path / "child.pid"
    hanging = ["sh", "-c", f"sleep 60 & echo $! > {child}; sleep 60"]
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C, which the session does not see
    with pytest.raises(KeyboardInterrupt):
        ncu.run_in_session(hanging, timeout_s=30)
    assert not _alive(int(child.read_text()))


def test_a_run_with_nccl_peers_gets_its_collectives_placed_by_a_launch_run(tmp_path):
    """A stand-in for ncu prints the NCCL rank's capture when asked to leave NCCL's kernels out,
    and a launch-statistics run of the same kernels with the collectives among them otherwise;
    collect writes the capture with them in place. Where the launch run fails, the profiled
    capture is kept as it was, and collect says why."""
    from test_pmc_collectives import _launch_run_of, _megatron_places

    from lmperf.pmc.collect import collect_command
    from lmperf.pmc.parse import read_text

    profiled = read_text(FIXTURES / "limits" / "m_llama_h16_kv4_t128_tp2_nccl.csv.gz")
    (tmp_path / "profiled.csv").write_text(profiled)
    (tmp_path / "launches.csv").write_text(_launch_run_of(profiled, _megatron_places(profiled)))
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--query-metrics*) exit 0;; esac\n'
        f'case "$*" in *--kernel-name*) cat {tmp_path}/profiled.csv;; *) cat {tmp_path}/launches.csv || exit 3;; esac\n'
    )
    fake.chmod(0o755)
    done = collect_command(["python", "x.py"], "step", tmp_path / "x.csv.gz", str(fake), 60, skip_collectives=True)
    kernels = read_capture(done.raw_csv).kernels
    assert done.collectives == "6 NCCL kernels placed from a launch-statistics run"
    assert done.kernels == len(kernels) == len(read_capture(tmp_path / "profiled.csv").kernels) + 6
    assert sum("nccl" in k.name for k in kernels) == 6
    (tmp_path / "launches.csv").unlink()
    kept = collect_command(["python", "x.py"], "step", tmp_path / "y.csv.gz", str(fake), 60, skip_collectives=True)
    assert kept.collectives.startswith("NCCL's kernels not placed: ncu wrote no CSV (exit 3)")
    assert kept.kernels == done.kernels - 6 and not any("nccl" in k.name for k in read_capture(kept.raw_csv).kernels)


@pytest.mark.parametrize(
    "output, expected",
    [
        ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", "permission"),
        ("==PROF== No kernels were profiled.", "no kernel"),
        ("==ERROR== Failed to find metric sm__nope", "does not know"),
    ],
)
def test_failures_become_one_clear_line(output, expected):
    assert expected in ncu.failure_message(output, "step")
    assert ncu.failure_message("==PROF== Disconnected from process 1", "step") is None


def test_unknown_metrics_are_dropped_and_launch_statistics_kept():
    known = {name.split(".")[0] for name in ncu.METRICS} - {"sm__ops_path_tensor_src_fp8"}
    kept, dropped = ncu.supported(ncu.METRICS, known)
    assert dropped == ["sm__ops_path_tensor_src_fp8.sum"]
    assert "launch__grid_size" in kept
    assert ncu.supported(ncu.METRICS, {"unrelated"}) == (ncu.METRICS, [])  # misread query


def test_missing_ncu_is_a_usage_error():
    with pytest.raises(UsageError, match="not found"):
        ncu.find_ncu("/no/such/ncu")


@pytest.mark.parametrize(
    "name, cls",
    [
        ("nvjet_sm90_tst_64x48_64x15_2x4_h_bz_TNT", MATMUL),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3", MATMUL),
        ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(T1::Params)", MATMUL),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64", ATTENTION),
        ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float>)", ATTENTION),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4>>(Flash_fwd_params)", ATTENTION),
        ("void <unnamed>::softmax_warp_forward<float, float, float, 8, 0, 0>(T2 *)", SOFTMAX),
        ("void at::<unnamed>::cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>", LOSS),
        ("void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float>", NORM),
        ("void at::<unnamed>::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>", OPTIMIZER),
    ],
)
def test_kernel_classes(name, cls):
    assert kernel_category(name) == cls


@pytest.mark.parametrize(
    "spelling",
    [
        "void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float>(int, float, const T1 *, T2 *)",  # ncu
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float*)",
    ],
)
def test_ncu_and_torch_profiler_spellings_get_the_profile_tables_short_name(spelling):
    assert short_name(spelling) == "vectorized_layer_norm_kernel[fp32]"


def test_tidy_table_has_classes_and_the_requested_counters_only():
    rows = kernel_rows(read_capture(FIXTURES / "gpt2_l4_d512.csv.gz"))
    assert rows[-1]["class"] == "matmul"  # the LM head
    assert "gpu__time_duration.sum" in rows[0]
    assert not any(key.startswith("device__") for key in rows[0])
    assert sibling("runs/x.csv.gz", ".kernels.csv").name == "x.kernels.csv"


@pytest.mark.parametrize(
    "target",
    [
        Target(),
        Target(preset="small", hf_config={"model_type": "gpt2"}),
        Target(preset="small", mode="backward"),
        Target(preset="small", dtype="fp16"),
        Target(preset="small", batch=0),
        Target(hf_config={"n_layer": 2}),
    ],
)
def test_bad_targets_are_usage_errors(target):
    with pytest.raises(UsageError):
        target.validate()


@pytest.mark.parametrize(
    "args",
    [
        ["pmc", "collect"],  # no target
        ["pmc", "collect", "--preset", "tiny", "--ncu", "/no/such/ncu"],
        ["pmc", "collect", "--preset", "tiny", "--set", "n_layers"],
        ["pmc", "collect", "--hf-config", "/no/such/config.json"],
    ],
)
def test_collect_bad_input_is_one_line_and_exit_2(args):
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 2, out.output
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.gpu
def test_collect_on_a_gpu_captures_forward_backward_and_optimizer(tmp_path):
    import shutil

    from lmperf.pmc.collect import collect_target
    from lmperf.pmc.infer import infer_file

    if shutil.which("ncu") is None:
        pytest.skip("ncu not on the PATH")
    target = Target(
        preset="small",
        overrides={"n_layers": 2, "d_model": 256, "n_heads": 4, "d_ff": 688},
        mode="train-step",
        dtype="bf16",
    )
    result = collect_target(target, tmp_path / "cap.csv.gz", timeout_s=300)
    inferred = infer_file(result.raw_csv)
    assert inferred.values["mode"] == "train_step" and inferred.values["n_layers"] == 2
    assert "backward kernels" in inferred.evidence["mode"] and "after 0 backward" not in inferred.evidence["mode"]


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            dict(hf_config={"model_type": "gpt2"}, attention="naive", sdpa_backend="flash_attention"),
            "needs --attention sdpa",
        ),
        (dict(hf_config={"model_type": "gpt2"}, sdpa_backend="flash"), "one of flash_attention"),
        (dict(hf_config={"model_type": "gpt2"}, attention="triton"), "only with an lmperf preset"),
        (dict(hf_config={"model_type": "gpt2"}, mode="generate"), "new tokens > 0"),
        (dict(hf_config={"model_type": "gpt2"}, new_tokens=4), "new tokens > 0"),
        (dict(preset="tiny", mode="generate", new_tokens=4), "Hugging Face config"),
        (dict(preset="tiny", compile="max-autotune"), "unknown compile mode"),
        (dict(hf_config={"model_type": "gpt2"}, kernels="liger"), "llama, mistral, qwen2, qwen3"),
        (dict(preset="tiny", kernels="liger"), "llama, mistral, qwen2, qwen3"),
        (dict(hf_config={"model_type": "llama"}, kernels="apex"), "unknown kernel set"),
        (dict(preset="tiny", loss="fused"), "train-step"),
        (dict(hf_config={"model_type": "llama"}, mode="train-step", loss="fused"), "lmperf preset"),
        (dict(hf_config={"model_type": "llama"}, static_cache=True), "mode generate"),
        (
            dict(
                hf_config={"model_type": "llama"}, mode="generate", new_tokens=2, static_cache=True, compile="default"
            ),
            "compiles its decode itself",
        ),
    ],
)
def test_a_target_that_cannot_run_is_refused_with_its_reason(fields, message):
    with pytest.raises(UsageError, match=message):
        Target(**fields).validate()


def test_generate_and_pinned_backends_are_valid_targets():
    Target(hf_config={"model_type": "llama"}, mode="generate", new_tokens=4, seq_len=37).validate()
    Target(hf_config={"model_type": "gpt2"}, sdpa_backend="cudnn_attention").validate()
    Target(preset="tiny", attention="triton").validate()
    Target(preset="tiny", mode="train-step", loss="fused", compile="default").validate()
    Target(hf_config={"model_type": "qwen2"}, kernels="liger", compile="reduce-overhead").validate()
    Target(hf_config={"model_type": "llama"}, mode="generate", new_tokens=2, static_cache=True).validate()


def test_collect_names_a_bad_compile_mode_in_one_line():
    out = CliRunner().invoke(app, ["pmc", "collect", "--preset", "tiny", "--compile", "fast"])
    assert out.exit_code == 2 and "unknown compile mode 'fast'" in out.stderr


def lmperf_attention_kernel_names() -> list[str]:
    """Every kernel lmperf's attention modules launch (their JIT functions named *_kernel), read
    from the modules, so a kernel added or renamed there is checked here without editing this
    list (the Gluon backward's `_bwd_kernel` was profiled as "other" for a day)."""
    import importlib

    names = set()
    for module_name in ("triton_kernels.forward", "triton_kernels.backward", "sm90.forward", "sm90.backward"):
        try:
            module = importlib.import_module(f"lmperf.attention.{module_name}")
        except ImportError:  # a Triton without Gluon: those kernels cannot run here either
            continue
        names |= {
            name
            for name, value in vars(module).items()
            if name.endswith("_kernel") and type(value).__name__.endswith("JITFunction")
        }
    return sorted(names)


def test_lmperfs_attention_kernels_are_found_and_are_attention():
    names = lmperf_attention_kernel_names()
    assert {"_fwd_kernel", "_bwd_dkdv_kernel", "_bwd_dq_kernel", "_bwd_preprocess_kernel"} <= set(names)
    assert {name: kernel_category(name) for name in names} == {name: ATTENTION for name in names}


def _script(tmp_path, body: str) -> list[str]:
    path = tmp_path / "target.py"
    path.write_text(body, encoding="utf-8")
    return [sys.executable, str(path)]


def test_a_compiling_target_runs_once_into_its_own_inductor_cache(tmp_path):
    # The run without ncu sees the cache it is given; the profiled run gets the same cache and
    # compiles in its own process.
    seen = tmp_path / "seen.txt"
    program = _script(tmp_path, f"import os; open({str(seen)!r}, 'w').write(os.environ['TORCHINDUCTOR_CACHE_DIR'])")
    env = compiled_once(program, tmp_path / "cache", timeout_s=60)
    assert seen.read_text() == str(tmp_path / "cache") == env["TORCHINDUCTOR_CACHE_DIR"]
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"


def test_a_target_failing_or_hanging_before_ncu_is_one_usage_error(tmp_path):
    failing = _script(tmp_path, "import sys; print('no GPU here'); sys.exit(3)")
    with pytest.raises(UsageError, match=r"failed before profiling \(exit 3\): no GPU here"):
        compiled_once(failing, tmp_path / "cache", timeout_s=60)
    hanging = _script(tmp_path, "import time; time.sleep(30)")
    with pytest.raises(UsageError, match="did not finish within 1 s"):
        compiled_once(hanging, tmp_path / "cache", timeout_s=1)


@pytest.mark.parametrize(
    "target, warmed",
    [
        (Target(preset="tiny"), False),
        (Target(preset="tiny", compile="max-autotune-no-cudagraphs"), True),
        (Target(hf_config={"model_type": "llama"}, mode="generate", new_tokens=4, static_cache=True), True),
    ],
)
def test_only_compiling_targets_run_before_ncu_and_share_the_cache(tmp_path, monkeypatch, target, warmed):
    calls = []
    monkeypatch.setattr(
        collect, "compiled_once", lambda program, cache, timeout: calls.append(cache) or {"C": str(cache)}
    )
    monkeypatch.setattr(collect.ncu, "find_ncu", lambda path=None: "ncu")
    monkeypatch.setattr(collect, "collect_command", lambda *args, **kwargs: args[-1])
    env = collect.collect_target(target, tmp_path / "x.csv.gz", timeout_s=100)
    assert bool(calls) == warmed
    assert env == ({"C": str(calls[0])} if warmed else None)


def test_a_qwen3_target_records_the_head_dim_its_config_sets():
    """Qwen3's attention need not span hidden_size: head_dim is a key of its own (the 0.6B runs 16
    heads of 128 over d 1024). A tiny one of 4 heads of 64 over d 128 runs on the CPU, and its
    truth keeps that head_dim; the blocks' count, from the modules, is the one worked out by hand:
    q 128·256, k and v 128·128 each, o 256·128, three MLP matrices 128·256, two norms of 128 and
    the q and k norms of 64, a layer."""
    import torch

    from lmperf.pmc.runner import build_step
    from lmperf.pmc.targets import Target

    config = dict(
        model_type="qwen3",
        num_hidden_layers=2,
        hidden_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        intermediate_size=256,
        vocab_size=512,
        max_position_embeddings=2048,
    )
    step, truth = build_step(Target(hf_config=config, batch=2, seq_len=16).validate(), torch.device("cpu"))
    step()
    assert (truth["d_model"], truth["n_heads"], truth["n_kv_heads"], truth["head_dim"]) == (128, 4, 2, 64)
    layer = 128 * 256 + 2 * 128 * 128 + 256 * 128 + 3 * 128 * 256 + 2 * 128 + 2 * 64
    assert truth["params_blocks"] == 2 * layer and truth["mlp"] == "gated"


def test_a_target_that_fails_after_its_kernels_is_no_capture(tmp_path):
    """ncu prints the kernels it profiled even when the program then exits with an error; the
    capture is only whole once the target has written its true configuration after them."""
    from lmperf.pmc.collect import collect_command
    from lmperf.pmc.parse import read_text

    (tmp_path / "profiled.csv").write_text(read_text(FIXTURES / "limits" / "m_llama_h16_kv4_t128_tp2_nccl.csv.gz"))
    truth = tmp_path / "x.truth.json"
    fake = tmp_path / "ncu"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--query-metrics*) exit 0;; esac\n'
        f"cat {tmp_path}/profiled.csv\n"
        f"if [ -e {tmp_path}/ok ]; then echo {{}} > {truth}; exit 0; fi\n"
        "echo 'RuntimeError: cuDNN Frontend error: no valid execution plan' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(UsageError) as failed:
        collect_command(["python", "x.py"], "step", tmp_path / "x.csv.gz", str(fake), 60, truth)
    assert str(failed.value) == (
        "the target wrote no x.truth.json after its kernels (exit 1): "
        "RuntimeError: cuDNN Frontend error: no valid execution plan"
    )
    assert not (tmp_path / "x.csv.gz").exists()
    (tmp_path / "ok").touch()
    done = collect_command(["python", "x.py"], "step", tmp_path / "x.csv.gz", str(fake), 60, truth)
    assert done.truth_json == truth and truth.exists() and done.kernels > 0
