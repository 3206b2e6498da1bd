"""The profiled step's kernel table: kernel-to-op links, GEMM shapes and FLOPs, time beside NCCL,
the GEMMs timed alone, and the report's summaries, on a synthetic trace and on torch's own."""

import json

import pytest
import torch
import torch.distributed as dist

from lmperf.distributed import gemm_alone, kernel_table, overlap
from lmperf.distributed.bench import _write_kernel_table
from lmperf.distributed.launch import joined_world
from lmperf.distributed.report import kernel_table_markdown, kernel_tables_markdown
from lmperf.report.rundir import read_rows

from world_spawn import spawn_world

MM_FLOPS = 2 * 512 * 4096 * 1024  # aten::mm (512, 1024) @ (1024, 4096)
BMM_FLOPS = 2 * 8 * 128 * 256 * 64  # aten::bmm (8, 128, 64) @ (8, 64, 256)


def _op(external_id, name, dims, strides, types, start=0.0):
    args = {"External id": external_id, "Input Dims": dims, "Input Strides": strides, "Input type": types}
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": start, "dur": 5, "args": args}


def _kernel(name, start, duration, stream=7, **args):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": start, "dur": duration, "args": {"stream": stream, **args}}


def _by_op(external_id):
    return {"External id": external_id}


GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64"


def _trace(dtype="c10::BFloat16"):
    """Two steps of 1000 us; the table reads the second. In it: a GEMM linked to aten::mm only by
    its launch's correlation (1100-1500 us), a FlashAttention kernel whose External id names a
    range marker, no op (1500-1550), a bmm linked by External id (1600-1700), an elementwise
    kernel (1800-1850), and an NCCL all-gather on its own stream (1300-1700)."""
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 2, "dur": 1}
    return {
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "lmperf_step", "ts": 0, "dur": 1000, "args": {}},
            {"ph": "X", "cat": "user_annotation", "name": "lmperf_step", "ts": 1000, "dur": 1000, "args": {}},
            {"ph": "X", "cat": "user_annotation", "name": "## Call CompiledFxGraph", "ts": 1490, "dur": 9}
            | {"args": _by_op(3)},
            _op(10, "aten::mm", [[512, 1024], [1024, 4096]], [[1024, 1], [1, 1024]], [dtype, dtype]),
            _op(11, "aten::bmm", [[8, 128, 64], [8, 64, 256]], [[8192, 64, 1], [16384, 256, 1]], [dtype, dtype]),
            launch | {"args": {"External id": 10, "correlation": 500}},
            _kernel(GEMM, 100, 300, correlation=499, **_by_op(10)),  # the first step's: not in the table
            _kernel(GEMM, 1100, 400, correlation=500),
            _kernel("flash_fwd_kernel", 1500, 50, correlation=501, **_by_op(3)),
            _kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNN", 1600, 100, correlation=502, **_by_op(11)),
            _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 1800, 50),
            _kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1300, 400, stream=20),
        ]
    }


def _rows(trace):
    kernels, steps = overlap.kernels_and_steps(trace)
    return kernel_table.kernel_rows(kernels, steps[-1], kernel_table.launching_ops(trace))


def test_kernels_link_to_their_ops_by_external_id_or_correlation():
    kernels, _ = overlap.kernels_and_steps(_trace())
    assert [k.op_id for k in kernels if k.start >= 1000] == [10, 3, 11, None, None]


def test_gemm_rows_carry_shape_flops_time_and_nccl_overlap():
    rows = _rows(_trace())
    mm, flash, bmm = [r for r in rows if r["row"] == "kernel"]
    assert (mm["op"], mm["op_id"], mm["category"], mm["stream"]) == ("aten::mm", 10, "matmul", 7)
    assert (mm["m"], mm["n"], mm["k"], mm["batch"], mm["dtype"], mm["layout"]) == (512, 4096, 1024, 1, "bf16", "nt")
    assert mm["flops"] == MM_FLOPS == 4_294_967_296
    assert mm["start_ms"] == pytest.approx(0.1) and mm["duration_ms"] == pytest.approx(0.4)
    assert mm["tflops"] == pytest.approx(4_294_967_296 / 400e-6 / 1e12)
    assert mm["nccl_overlap_ms"] == pytest.approx(0.2)  # NCCL 1300-1700 over the GEMM's 1100-1500
    assert mm["input_strides"] == [[1024, 1], [1, 1024]] and mm["alone_ms"] is None
    # the attention kernel's External id names a range marker, not an op: no shape
    assert (flash["category"], flash["op"], flash["m"], flash["flops"]) == ("attention", None, None, None)
    assert flash["nccl_overlap_ms"] == pytest.approx(0.05)
    assert (bmm["batch"], bmm["m"], bmm["n"], bmm["k"], bmm["layout"]) == (8, 128, 256, 64, "nn")
    assert bmm["flops"] == BMM_FLOPS and bmm["nccl_overlap_ms"] == pytest.approx(0.1)


def test_other_categories_are_one_summary_row_each():
    summaries = {r["category"]: r for r in _rows(_trace()) if r["row"] == "category"}
    assert set(summaries) == {"nccl", "elementwise"}
    assert summaries["nccl"]["count"] == 1 and summaries["nccl"]["duration_ms"] == pytest.approx(0.4)
    assert summaries["nccl"]["nccl_overlap_ms"] is None
    assert summaries["elementwise"]["duration_ms"] == pytest.approx(0.05)
    assert summaries["elementwise"]["nccl_overlap_ms"] == 0.0


@pytest.mark.parametrize(
    "op, dims, strides, expected",
    [
        # nn.Linear's forward: addmm(bias, x, W.t())
        (
            "aten::addmm",
            [[4096], [512, 1024], [1024, 4096], [], []],
            [[1], [1024, 1], [1, 1024], [], []],
            (512, 4096, 1024, "nt"),
        ),
        # a weight gradient: grad.t() @ x
        ("aten::mm", [[1024, 512], [512, 4096]], [[1, 1024], [4096, 1]], (1024, 4096, 512, "tn")),
        ("aten::mm", [[512, 1024], [1024, 4096]], [[3072, 1], [4096, 1]], (512, 4096, 1024, "nn")),  # a slice
        ("aten::mm", [[512, 1024], [1024, 4096]], [[2048, 2], [4096, 1]], (512, 4096, 1024, "sn")),
    ],
)
def test_gemm_shapes_and_layouts(op, dims, strides, expected):
    gemm = kernel_table.gemm_of(kernel_table.Op(op, dims, strides, ["float"] * len(dims)))
    assert (gemm.m, gemm.n, gemm.k, gemm.layout, gemm.batch, gemm.dtype) == (*expected, 1, "fp32")
    assert gemm.flops == MM_FLOPS  # 2 * 512 * 4096 * 1024, the same product in every case here


def test_ops_that_are_no_gemm_have_no_shape():
    assert kernel_table.gemm_of(kernel_table.Op("aten::add", [[4, 4], [4, 4]], None, ["float"] * 2)) is None
    assert kernel_table.gemm_of(kernel_table.Op("aten::mm", [[4, 4]], None, ["float"])) is None
    gemm = kernel_table.gemm_of(kernel_table.Op("aten::mm", [[4, 8], [8, 2]], None, ["float", "float"]))
    assert (gemm.m, gemm.n, gemm.k, gemm.layout) == (4, 2, 8, None)


def test_torch_own_trace_gives_the_shapes_and_strides():
    x, weight, bias = torch.randn(64, 32), torch.randn(48, 32), torch.randn(48)
    trace = overlap.profile_trace(lambda: torch.nn.functional.linear(x, weight, bias), 1)
    gemms = [(op.name, kernel_table.gemm_of(op)) for op in kernel_table.launching_ops(trace).values()]
    found = [(name, g) for name, g in gemms if g is not None]
    assert found == [("aten::addmm", kernel_table.Gemm(1, 64, 48, 32, "fp32", "nt"))]


def test_an_op_with_two_gemm_kernels_counts_once():
    trace = _trace()
    trace["traceEvents"].append(_kernel("sm90_xmma_gemm_bf16_splitk", 1750, 100, **_by_op(11)))
    rows = _rows(trace)
    bmm_rows = [r for r in rows if r.get("op") == "aten::bmm"]
    assert len(bmm_rows) == 2 and all(r["tflops"] == pytest.approx(BMM_FLOPS / 200e-6 / 1e12) for r in bmm_rows)
    (bmm,) = [s for s in kernel_table.gemm_summary(rows) if s["op"] == "bmm"]
    assert bmm["count"] == 1 and bmm["total_ms"] == pytest.approx(0.2)
    assert bmm["step_tflops"] == pytest.approx(BMM_FLOPS / 200e-6 / 1e12)
    assert bmm["nccl_share"] == pytest.approx(0.1 / 0.2)


def test_summaries_per_gemm_and_per_attention_kernel():
    rows = _rows(_trace())
    for row in rows:  # as if timed alone: the mm at twice its in-step rate
        if row.get("op") == "aten::mm":
            row["alone_ms"], row["alone_tflops"] = 0.2, MM_FLOPS / 0.2e-3 / 1e12
    gemms = kernel_table.gemm_summary(rows)
    assert [g["op"] for g in gemms] == ["mm", "bmm"]
    mm = gemms[0]
    assert (mm["count"], mm["m"], mm["n"], mm["k"]) == (1, 512, 4096, 1024)
    assert mm["step_tflops"] == pytest.approx(MM_FLOPS / 400e-6 / 1e12)
    assert mm["alone_over_step"] == pytest.approx(2.0) and mm["nccl_share"] == pytest.approx(0.5)
    (flash,) = kernel_table.attention_summary(rows)
    assert (flash["name"], flash["count"]) == ("flash_fwd_kernel", 1)
    assert flash["total_ms"] == pytest.approx(0.05) and flash["mean_ms"] == pytest.approx(0.05)
    text = kernel_table_markdown(rows, "kernels-x.jsonl")
    assert "| mm | 1 | 512 | 4096 | 1024 | nt | bf16 | 1 | 0.40 | 11 | 21 | 2.00 | 50% |" in text
    assert "| flash_fwd_kernel | 1 | 0.05 | 0.050 | 100% |" in text


def test_an_operand_keeps_its_strides():
    transposed = gemm_alone.operand([32, 48], [1, 32], torch.float32, torch.device("cpu"))
    assert transposed.stride() == (1, 32) and transposed.t().is_contiguous()
    sliced = gemm_alone.operand([4, 64], [192, 1], torch.float32, torch.device("cpu"))
    assert sliced.stride() == (192, 1) and sliced.std() > 0  # random values, not zeros


@pytest.mark.parametrize(
    "op, dims, strides, shape",
    [
        ("aten::addmm", [[48], [64, 32], [32, 48], [], []], [[1], [32, 1], [1, 32], [], []], (64, 48)),
        # inductor's extern calls record their output last: the op makes its own
        ("aten::mm", [[64, 32], [32, 48], [64, 48]], [[32, 1], [1, 32], [48, 1]], (64, 48)),
        ("aten::addmm", [[48], [64, 32], [32, 48], [], [], [64, 48]], None, (64, 48)),
        ("aten::baddbmm", [[4, 8, 6], [4, 8, 5], [4, 5, 6], [], []], None, (4, 8, 6)),
    ],
)
def test_the_gemm_alone_is_the_op_on_such_operands(op, dims, strides, shape):
    row = {"op": op, "input_dims": dims, "input_strides": strides, "dtype": "fp32"}
    assert gemm_alone.gemm_call(row, torch.device("cpu"))().shape == shape


def _cpu_rows():
    """The synthetic step with fp32 GEMMs small enough to run on a CPU."""
    trace = _trace(dtype="float")
    for event in trace["traceEvents"]:
        if event.get("name") == "aten::mm":
            event["args"]["Input Dims"], event["args"]["Input Strides"] = [[16, 32], [32, 24]], [[32, 1], [1, 32]]
    return trace


def test_time_alone_times_the_longest_gemms_first():
    rows = _rows(_cpu_rows())
    assert gemm_alone.time_alone(rows, torch.device("cpu"), max_shapes=1) == 1
    mm, bmm = [r for r in rows if r.get("flops")]
    assert mm["alone_ms"] > 0 and mm["alone_tflops"] == pytest.approx(2 * 16 * 24 * 32 / mm["alone_ms"] / 1e9)
    assert bmm["alone_ms"] is None  # 0.1 ms in the step against the mm's 0.4: past the cap of one


def test_rank_0_writes_the_table_and_the_report_shows_it(tmp_path):
    trace = _cpu_rows()
    kernels, steps = overlap.kernels_and_steps(trace)
    env = {"device": "cpu", "commit": "abc1234"}
    name = _write_kernel_table(trace, kernels, steps[-1], torch.device("cpu"), tmp_path / "kernels-a.jsonl", env)
    rows = read_rows(tmp_path / name)
    assert name == "kernels-a.jsonl" and all(r["alone_ms"] > 0 for r in rows if r.get("flops"))
    assert all(r["env"] == env for r in rows)  # every row names the run it came from
    text = kernel_tables_markdown([{"kernel_table": name}, {"kernel_table": ""}], tmp_path)
    assert text.count("## GEMMs in the profiled step") == 1 and "| bmm | 8 | 128 | 256 | 64 | nn | fp32 |" in text
    json.dumps(rows)  # every field is plain JSON


def _rank_0_times_alone_while_the_other_waits():
    with joined_world("cpu", 60) as world:
        if world.is_main:
            assert gemm_alone.time_alone(_rows(_cpu_rows()), world.device) == 2
        dist.barrier()
        # the ranks still agree on their collectives afterwards
        total = torch.ones(1)
        dist.all_reduce(total)
        assert total.item() == 2


def test_rank_0_times_gemms_alone_without_collectives():
    spawn_world(_rank_0_times_alone_while_the_other_waits, 2)
