"""A predicted step by hand: exposed communication under each bound, compute, memory, rates."""

import pytest

from lmperf.model.step import StepConfig
from lmperf.plan.collectives import Line, Links, Network
from lmperf.plan.predict import Compute, Overlap, PlanInputs, communication, compute_from_mfu, predict
from lmperf.plan.schedule import Parallelism
from plan_tiny import BLOCK, ROOT, TINY

US = 1e-6
# alpha 1 us, 100 GB/s for every collective; 4 GPUs: bus factor 3/4 for gathers and scatters.
LINES = {op: Line(1 * US, 100e9) for op in ("all-reduce", "all-gather", "reduce-scatter")}
NETWORK = Network(Links(LINES, "GPU", "hand", (2,)))
STEP = StepConfig("tiny", 4, "train-step", "bf16", batch=1, model=TINY)

# FSDP2, reshard, bf16 on 4 GPUs:
#   gathers: 4 of a block (656 x 2 B) and 1 of the root (168 x 2 B): 4 x 1,312 + 336 = 5,584 B in 5 calls;
#   reduce-scatters in fp32: 2 of a block (656 x 4 B) and the root's: 2 x 2,624 + 672 = 5,920 B in 3 calls.
#   comm = 8 calls x 1 us + 3/4 x (5,584 + 5,920) B / 100e9 B/s = 8e-6 + 8.628e-8 s
COMM = 8 * US + 0.75 * (4 * BLOCK * 2 + ROOT * 2 + 2 * BLOCK * 4 + ROOT * 4) / 100e9
#   edge: the root's and one block's gather and reduce-scatter: 4 us + 3/4 x (336 + 1,312 + 2,624 + 672) / 100e9
EDGE = 4 * US + 0.75 * (ROOT * 2 + BLOCK * 2 + BLOCK * 4 + ROOT * 4) / 100e9


def _inputs(compute_s, overlap, strategy="fsdp"):
    return PlanInputs(
        STEP, Parallelism(strategy), NETWORK, Overlap(overlap, "given"), Compute(compute_s, "given"), 1e-6
    )


def test_fsdp_pays_the_unhidden_share_when_compute_covers_the_rest():
    assert COMM == pytest.approx(8.08628e-6)
    comm, exposed = communication(_inputs(1.0, 0.25), 4)
    assert comm == pytest.approx(COMM)
    assert exposed == pytest.approx(0.75 * COMM)  # above the edge collectives' 4.037 us


def test_fsdp_pays_at_least_the_collectives_nothing_runs_beside():
    assert EDGE == pytest.approx(4.03708e-6)
    assert communication(_inputs(1.0, 0.9), 4)[1] == pytest.approx(EDGE)  # 0.1 x comm is less


def test_fsdp_pays_what_a_short_compute_cannot_cover():
    # 2 us of compute hides at most 2 us: 8.086 - 2 = 6.086 us, more than the edge or 0.1 x comm
    assert communication(_inputs(2 * US, 0.9), 4)[1] == pytest.approx(COMM - 2 * US)


def test_ddp_hides_only_under_the_backward():
    # One bucket of 1,480 x 4 B: 1 us + 2 x 3/4 x 5,920 / 100e9 = 1.0888 us, all of it the last
    # bucket: exposed whatever the overlap.
    one_bucket = 1 * US + 1.5 * 1480 * 4 / 100e9
    assert communication(_inputs(1.0, 0.9, "ddp"), 4) == pytest.approx((one_bucket, one_bucket))


def test_the_predicted_row_adds_exposed_communication_to_compute():
    row = predict(_inputs(0.01, 0.25), 4)
    step_s = 0.01 + 0.75 * COMM
    assert row.step_ms == pytest.approx(step_s * 1e3)
    assert row.tokens_per_s == pytest.approx(4 / step_s)  # 1 sequence of 4 tokens per GPU
    assert row.tokens_per_s_total == pytest.approx(4 * 4 / step_s)
    # matmul FLOPs of the train step (below) over the step at a peak of 1e-6 TFLOP/s = 1e6 FLOP/s
    assert row.mfu == pytest.approx(35712 / step_s / 1e6)
    assert (row.gpus, row.nodes, row.overlap) == (4, 1, 0.25)


def test_compute_from_an_assumed_mfu():
    # Forward matmuls of 4 tokens, per layer: qkv 2*4*8*24 = 1,536, out 2*4*8*8 = 512,
    # w1 and w3 2*4*8*32 = 2,048, w2 2*4*16*8 = 1,024, scores and weighted sum 2 x 2*(2*4*4)*4 = 512:
    # 5,632; two layers 11,264, LM head 2*4*8*10 = 640: 11,904; train step 3x: 35,712 FLOPs.
    compute = compute_from_mfu(STEP, 0.5, 1e-6, "GPU")
    assert compute.seconds == pytest.approx(35712 / (0.5 * 1e6))
    assert "assumed MFU of 50%" in compute.source


def test_memory_per_rank_of_a_tiny_model_by_hand():
    # FSDP2 on 4 ranks, fp32 parameters: parameters 4, AdamW 8 bytes each, sharded: 12 x 1,480 / 4
    # = 4,440 B; rotary tables, whole: 2 layers x (cos, sin) x 16 positions x head_dim/2 = 2 x 4 B
    # = 512 B.
    row = predict(_inputs(0.01, 0.25), 4)
    assert row.persistent_memory_gb == pytest.approx((4440 + 512) / 1e9)


def test_the_row_says_what_it_assumes():
    row = predict(_inputs(0.01, 0.25), 16).to_dict()
    assert row["preset"] == "tiny" and row["seq_len"] == 4  # the step's own fields, flat
    said = " ".join(row["assumptions"])
    assert "Weak scaling" in said and "Overlap 25%: given" in said and "50 GB/s per GPU" in said
    assert "Across nodes" not in " ".join(predict(_inputs(0.01, 0.25), 8).assumptions)
