"""NCCL's collectives in a capture: left out of the model's reading, reported as parallelism.

The captures are built by hand: a forward pass of GEMMs with NCCL kernels placed where Megatron's
tensor parallelism (between the layers) or data parallelism (after the forward) launches them."""

from __future__ import annotations

from lmperf.pmc.collectives import collective_kind, read_parallelism, without_collectives
from lmperf.pmc.parse import Capture, KernelRecord
from lmperf.pmc.result import Inference

ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
ALL_GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "nvjet_sm90_tst_64x64_64x13_2x4_h_bz_TNT"


def _capture(names: list[str]) -> Capture:
    kernels = [KernelRecord(i, name, (1, 1, 1), (128, 1, 1)) for i, name in enumerate(names)]
    return Capture(kernels, (), {})


def _read(names: list[str], forward_names: int) -> Inference:
    capture = _capture(names)
    forward = [k for k in without_collectives(capture).kernels if k.index < forward_names]
    result = Inference()
    read_parallelism(result, capture, forward)
    return result


def test_collectives_are_named_by_their_kind_and_left_out_with_indices_kept():
    assert collective_kind(ALL_REDUCE) == "all-reduce" and collective_kind(ALL_GATHER) == "all-gather"
    capture = _capture([GEMM, ALL_REDUCE, GEMM])
    kept = without_collectives(capture).kernels
    assert [k.index for k in kept] == [0, 2]
    plain = _capture([GEMM, GEMM])
    assert without_collectives(plain) is plain


def test_all_reduces_between_the_forward_layers_read_as_a_tensor_parallel_rank():
    result = _read([GEMM, ALL_REDUCE, GEMM, ALL_REDUCE, GEMM, ALL_GATHER], forward_names=5)
    assert result.values["parallelism"] == "tensor"
    assert "2 all-reduce" in result.evidence["parallelism"] and "1 all-gather" in result.evidence["parallelism"]
    assert any("tensor-parallel run" in a and "degree is not read" in a for a in result.assumptions)


def test_collectives_only_after_the_forward_read_as_data_parallel():
    result = _read([GEMM, GEMM, GEMM, ALL_REDUCE, ALL_REDUCE], forward_names=3)
    assert result.values["parallelism"] == "data"
    assert not any("degree" in a for a in result.assumptions)


def test_a_capture_without_collectives_says_nothing_of_parallelism():
    result = _read([GEMM, GEMM], forward_names=2)
    assert "parallelism" not in result.values
