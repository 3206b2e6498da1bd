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


def _launch_run_of(profiled: str, after: dict[int, str]) -> str:
    """What ncu's launch-statistics run of the same program prints: every kernel of the profiled
    run's raw page in order, with the collective named in `after` launched after kernel i, and
    only the descriptive and launch columns."""
    import csv
    import io

    lines = profiled.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    header, units, *rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    keep = [i for i, column in enumerate(header) if column in ("ID", "Kernel Name", "Grid Size", "Block Size")]
    keep += [header.index("launch__grid_size"), header.index("launch__block_size")]
    launched = []
    for row in rows:
        launched.append([row[i] for i in keep])
        if int(row[0]) in after:
            collective = {
                "ID": "0",
                "Kernel Name": after[int(row[0])],
                "Grid Size": "(2, 1, 1)",
                "Block Size": "(640, 1, 1)",
                "launch__grid_size": "2",
                "launch__block_size": "640",
            }
            launched.append([collective[header[i]] for i in keep])
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(
        [[header[i] for i in keep], [units[i] for i in keep], *launched]
    )
    return "==PROF== Connected to process 7 (/usr/bin/python3)\n" + out.getvalue()


def _megatron_places(profiled: str) -> dict[int, str]:
    """Where the NCCL rank's forward hooks launch a collective: an all-reduce after the embedding
    (its gather, then the masked fill that zeroes other ranks' rows), after each o and down
    projection (q, k, v, o, gate, up, down a layer), and an all-gather after the LM head."""
    from lmperf.analysis.kernels import MATMUL
    from lmperf.pmc.kernels import category
    from lmperf.pmc.parse import parse_text

    kernels = parse_text(profiled).kernels
    gather = next(k.index for k in kernels if "gather_kernel" in k.name)
    # the first GEMM, of one block in fp32, computes the rotary angles
    gemms = [k.index for k in kernels if category(k) == MATMUL][1:]
    assert len(gemms) == 2 * 7 + 1  # two layers and the head, as the truth file says
    places = {gather + 1: ALL_REDUCE, gemms[-1]: ALL_GATHER}
    for layer in range(2):
        places[gemms[7 * layer + 3]] = places[gemms[7 * layer + 6]] = ALL_REDUCE
    return places


def test_the_nccl_ranks_collectives_go_back_in_place_and_read_as_tensor_parallel():
    from lmperf.pmc.collective_rows import with_collectives
    from lmperf.pmc.infer import infer
    from lmperf.pmc.parse import parse_text, read_text

    from pmc_fixtures import FIXTURES

    profiled = read_text(FIXTURES / "limits" / "m_llama_h16_kv4_t128_tp2_nccl.csv.gz")
    places = _megatron_places(profiled)
    merged, placed = with_collectives(profiled, _launch_run_of(profiled, places))
    before, after = parse_text(profiled).kernels, parse_text(merged).kernels
    assert placed == 6 and len(after) == len(before) + 6
    assert [k.index for k in after] == list(range(len(after)))
    collectives = [k for k in after if k.name in (ALL_REDUCE, ALL_GATHER)]
    kept = [k for k in after if k.name not in (ALL_REDUCE, ALL_GATHER)]
    assert [k.name for k in kept] == [k.name for k in before]
    # each collective right after the profiled kernel it was launched after
    follows = {kept.index(after[k.index - 1]): k.name for k in collectives}
    assert follows == places
    assert all(k.grid == (2, 1, 1) and k.block == (640, 1, 1) for k in collectives)
    assert all(v is None for k in collectives for v in k.metrics.values())
    assert [k.metrics for k in kept] == [k.metrics for k in before]
    result = infer(parse_text(merged))
    assert result.values["parallelism"] == "tensor", result.evidence.get("parallelism")
    assert "1 all-gather, 5 all-reduce" in result.evidence["parallelism"]
    # the rank's residual width, its attention half as wide (8 of the model's 16 heads of 64)
    assert (result.values["n_layers"], result.values["d_model"], result.values["n_heads"]) == (2, 1024, 8)


def test_collectives_are_not_placed_where_the_two_runs_launched_other_kernels():
    import pytest

    from lmperf.pmc.collective_rows import NotPlaced, with_collectives
    from lmperf.pmc.parse import read_text

    from pmc_fixtures import FIXTURES

    profiled = read_text(FIXTURES / "limits" / "m_llama_h16_kv4_t128_tp2_nccl.csv.gz")
    launches = _launch_run_of(profiled, {3: ALL_REDUCE}).splitlines()
    del launches[5]  # a kernel the launch run did not launch
    with pytest.raises(NotPlaced, match="not the profiled run's"):
        with_collectives(profiled, "\n".join(launches))
