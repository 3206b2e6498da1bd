"""The sm90 Gluon kernels' host side on the CPU: descriptors, and what each launch is given.

The launches are recorded instead of run (no GPU here); what a launch must be given is derived
in each test from the shapes and the tuning in force.
"""

import dataclasses

import pytest
import torch

descriptors = pytest.importorskip("lmperf.attention.sm90.descriptors")
from lmperf.attention.sm90 import backward, forward, schedule, tma, tuning  # noqa: E402  (needs Gluon)


@pytest.fixture
def launches(monkeypatch):
    """Every forward and backward kernel launch, recorded as (grid, args, constexprs), on 132 SMs."""
    recorded = []
    record = lambda grid, *args, **kw: recorded.append((grid, args, kw))  # noqa: E731
    monkeypatch.setattr(forward, "_FWD_LAUNCH", record)
    monkeypatch.setattr(backward, "_BWD_LAUNCH", record)
    monkeypatch.setattr(schedule, "multiprocessors", lambda device: 132)
    return recorded


def test_column_blocks_are_powers_of_two_of_at_least_16_columns():
    assert [tma.column_blocks(d) for d in (64, 80, 96, 128, 160)] == [(64, 0), (64, 16), (64, 32), (128, 0), (128, 32)]
    for head_dim in (72, 112):  # a tail of 8 columns (below wgmma's 16), and of 48 (not a power of two)
        with pytest.raises(ValueError):
            tma.column_blocks(head_dim)


def test_block_descriptors_view_each_column_block_of_the_tensor():
    x = torch.empty(2, 4, 300, 80, dtype=torch.bfloat16)
    first, tail = descriptors.block_descriptors(x, 64)
    # columns 0-63 and 64-79 of each row: the tail's base 64 elements (128 bytes) in
    assert (first.base.storage_offset(), list(first.base.shape), first.block_shape) == (
        0,
        [2, 4, 300, 64],
        [1, 1, 64, 64],
    )
    assert (tail.base.storage_offset(), list(tail.base.shape), tail.block_shape) == (
        64,
        [2, 4, 300, 16],
        [1, 1, 64, 16],
    )
    assert list(first.strides) == list(tail.strides) == list(x.stride())
    assert descriptors.block_descriptors(x, 64, 32)[0].block_shape == [1, 1, 64, 32]  # dQ's column boxes
    # without a tail, None: the kernels take it as a constexpr and never read it
    whole, none = descriptors.block_descriptors(torch.empty(2, 4, 300, 128, dtype=torch.bfloat16), 64)
    assert none is None and whole.block_shape == [1, 1, 64, 128]


def test_descriptors_equal_the_validated_constructors_field_by_field():
    """descriptor skips TensorDescriptor's __post_init__ checks: every field must still be what
    from_tensor (which runs them) sets, and a field without a default that Triton adds must fail
    here, not be left unset."""
    hopper = pytest.importorskip("triton.experimental.gluon.nvidia.hopper")
    fields = dataclasses.fields(hopper.TensorDescriptor)
    required = [field.name for field in fields if field.default is dataclasses.MISSING]
    assert required == ["base", "shape", "strides", "block_shape", "layout"]
    x = torch.empty(2, 4, 300, 80, dtype=torch.bfloat16).transpose(1, 2)  # strides not those of a contiguous tensor
    for tensor, rows, columns in (
        (x[..., :64], 64, None),
        (x[..., 64:], 64, None),
        (x[..., :64], 64, 32),
        (torch.empty(1, 2, 5, 128, dtype=torch.float32), 128, 64),
    ):
        ours = descriptors.descriptor(tensor, rows, columns)
        box = [1, 1, rows, columns or tensor.shape[-1]]
        validated = hopper.TensorDescriptor.from_tensor(
            tensor, box, descriptors.shared_layout(box[2], box[3], tensor.dtype)
        )
        assert ours.base is validated.base
        for name in ("shape", "strides", "block_shape"):
            assert list(getattr(ours, name)) == list(getattr(validated, name)), name
        for field in fields[5:]:  # padding and any field a later Triton adds
            assert getattr(ours, field.name) == getattr(validated, field.name), field.name
        assert ours.layout == validated.layout


def test_descriptors_share_the_layout_triton_derives_for_their_box():
    gl = pytest.importorskip("triton.experimental.gluon.language")
    for dtype, gl_dtype in ((torch.bfloat16, gl.bfloat16), (torch.float16, gl.float16), (torch.float32, gl.float32)):
        for rows, columns in ((64, 64), (128, 64), (64, 128), (64, 16)):
            x = torch.empty(2, 3, 300, columns, dtype=dtype)
            expected = gl.NVMMASharedLayout.get_default_for([1, 1, rows, columns], gl_dtype)  # uncached
            assert descriptors.descriptor(x, rows).layout == expected
            assert descriptors.descriptor(x, rows).layout is descriptors.descriptor(x, rows).layout  # one derivation
    # the cache keys on the box's columns: head_dim 80's 16-column tail swizzles 32-byte rows
    first, tail = descriptors.block_descriptors(torch.empty(2, 3, 300, 80, dtype=torch.bfloat16), 64)
    assert first.layout == gl.NVMMASharedLayout.get_default_for([1, 1, 64, 64], gl.bfloat16)
    assert tail.layout == gl.NVMMASharedLayout.get_default_for([1, 1, 64, 16], gl.bfloat16) != first.layout


@pytest.mark.parametrize("o_by_tma", [frozenset(), frozenset({(64, True), (80, False)})])
def test_o_leaves_by_tma_where_the_tuning_says(launches, o_by_tma):
    """Where tuning.o_by_tma names (head_dim, causal), O leaves by a TMA store: descriptors over the
    (B, S, H, d) output in boxes of 64 rows, O_BY_TMA set; elsewhere no descriptors."""
    with tuning.variant(o_by_tma=o_by_tma):
        for head_dim, causal in ((64, True), (64, False), (80, False), (80, True), (128, False)):
            q = torch.empty(2, 4, 300, head_dim, dtype=torch.bfloat16)
            o, _ = forward.forward(q, q, q, causal)
            _, args, kw = launches.pop()
            o_desc, ot_desc = args[6:8]
            expected = (head_dim, causal) in o_by_tma
            assert kw["O_BY_TMA"] is expected, (head_dim, causal)
            if not expected:
                assert o_desc is None and ot_desc is None
                continue
            assert o_desc.base.data_ptr() == o.data_ptr() and o_desc.block_shape == [1, 1, 64, min(head_dim, 64)]
            assert list(o_desc.strides) == list(o.stride())  # (B, H, S, d) strides of the (B, S, H, d) storage
            assert (ot_desc is None) == (head_dim == 64)


def test_the_forward_takes_the_tunings_tiles_and_flags(launches):
    q = torch.empty(1, 2, 300, 128, dtype=torch.bfloat16)
    with tuning.variant(key_tile=64, kv_slots=4, half_diagonal=frozenset(), sums_to_shared=frozenset({128})):
        forward.forward(q, q, q, True)
    _, args, kw = launches.pop()
    assert (kw["BLOCK_N"], kw["STAGES"], kw["HALF_DIAGONAL"], kw["SUMS_TO_SHARED"]) == (64, 4, False, True)
    assert args[1].block_shape == [1, 1, 64, 128]  # K's boxes follow the key tile
    forward.forward(q, q, q, True)
    _, args, kw = launches.pop()
    assert (kw["BLOCK_N"], kw["STAGES"], kw["HALF_DIAGONAL"]) == (128, 3, True) and args[1].block_shape == [
        1,
        1,
        128,
        128,
    ]


@pytest.mark.parametrize("persistent_from", [{64: 1024}, {64: 0}, {}])
def test_the_backward_is_persistent_where_the_tuning_says(launches, persistent_from):
    """Persistent: one program per SM (grid min(items, SMs)), items then chunks of dQ's conversion
    (256 rows of a batch x key/value head's query heads each) counted by the kernel, which returns
    dQ in the inputs' dtype; else one program per item and dQ's fp32 sums converted after it. The
    kernel gets the key-block count, the item count and where the chunks end."""
    with tuning.variant(persistent_backward_from_keys=persistent_from):
        for head_dim, causal, seq in (
            (64, False, 16384),
            (64, True, 1024),
            (64, True, 512),
            (80, False, 16384),
            (128, True, 16384),
        ):
            q = torch.empty(1, 4, seq, head_dim, dtype=torch.bfloat16)
            k = torch.empty(1, 2, seq, head_dim, dtype=torch.bfloat16)
            stats = torch.empty(1, 4, seq)
            dq, _, _ = backward.backward(q, k, k, q, stats, stats, causal)
            grid, args, kw = launches.pop()
            persistent = seq >= persistent_from.get(head_dim, float("inf"))
            items = seq // 128 * 2  # key blocks x (batch x key/value heads)
            chunks = 2 * -(-2 * seq // 256) if persistent else 0  # 2 query heads a key/value head, 2 of those
            assert kw["PERSISTENT"] is persistent, (head_dim, causal, seq)
            assert kw["STAGES"] == (3 if persistent else 2)
            assert grid == ((min(items, 132),) if persistent else (items,))
            assert args[-3:] == (seq // 128, items, items + chunks)
            assert args[16].dtype == (torch.int32 if persistent else torch.float32)  # the counter, or LSE unread
            assert dq.dtype == torch.bfloat16 and dq.shape == q.shape
            assert kw["KV_IN_REGISTERS"] is (head_dim == 64)


def test_causal_forwards_take_single_tiles_in_the_hosts_order(launches, monkeypatch):
    """Causal forwards at tuning.ordered_causal's head dims take single tiles (per_head = n_m)
    from the int32 table (codes, then each program's start), built once per shape and kept (past
    MAX_TABLES kept, a new shape runs pairs); non-causal ones and the other head dims do not:
    pairs in a fixed turn there."""
    q = torch.empty(2, 4, 1000, 64, dtype=torch.bfloat16)
    forward.forward(q, q, q, True)
    grid, args, kw = launches.pop()
    table, n_m, per_head, items = args[10], args[18], args[19], args[20]
    assert kw["ORDERED"] and not kw["PAIRS"] and n_m == per_head == 8 and items == 2 * 4 * 8 == 64 and grid == (64,)
    section = 16 * 2**20 // (2 * 1000 * 64 * 2)  # heads whose K and V (1000 keys, bf16) fit 16 MB: 65
    assert table.dtype == torch.int32
    assert table.tolist() == sum(schedule.ordered_items(8, 8, 64, 1000, 128, 128, section, 1.0), [])
    forward.forward(q, q, q, True)
    assert launches.pop()[1][10] is table  # built once
    for ordered in (frozenset(), frozenset({80})):
        with tuning.variant(ordered_causal=ordered):
            d80 = torch.empty(2, 4, 1000, 80, dtype=torch.bfloat16)
            forward.forward(d80, d80, d80, True)
            grid, args, kw = launches.pop()
            assert kw["ORDERED"] is bool(ordered) and kw["PAIRS"] is not bool(ordered)
            assert args[19] == (8 if ordered else 4) and grid == ((64,) if ordered else (2 * 4 * 4,))
    monkeypatch.setattr(schedule, "MAX_TABLES", len(schedule._TABLES))  # full: kept tables serve, new shapes pair
    forward.forward(q, q, q, True)
    assert launches.pop()[1][10] is table
    other = torch.empty(2, 4, 999, 64, dtype=torch.bfloat16)
    forward.forward(other, other, other, True)
    grid, args, kw = launches.pop()
    assert not kw["ORDERED"] and kw["PAIRS"] and args[19] == 4 and args[10] is not table
    forward.forward(q, q, q, False)
    assert not launches[-1][2]["ORDERED"] and not launches.pop()[2]["PAIRS"]


def test_a_kept_order_table_is_made_by_a_thread_of_its_own(monkeypatch):
    """A CUDA graph's warm-up routes its thread's allocations to the graph's private pool, so the
    order table kept past it is made by another thread, and an error there reaches the caller."""
    import threading

    makers = []
    real = torch.tensor
    monkeypatch.setattr(torch, "tensor", lambda *a, **kw: makers.append(threading.get_ident()) or real(*a, **kw))
    table = schedule._kept_tensor([7, 0, 3], torch.device("cpu"))
    assert table.dtype == torch.int32 and table.tolist() == [7, 0, 3]
    assert len(makers) == 1 and makers[0] != threading.get_ident()
    with pytest.raises(RuntimeError):  # 2**40 does not fit in int32
        schedule._kept_tensor([2**40], torch.device("cpu"))


def test_non_causal_forwards_run_a_sparse_last_round_as_runs_over_keys(launches, monkeypatch):
    """From tuning.split_from_keys's key counts a non-causal forward launches the kernel for
    schedule.split_plan's whole tiles (one program per SM, the runs' arguments unread: LSE,
    items, 1), then with PIECES for the runs (one a program, with fp32 buffers for them), and
    merges the runs into O and LSE; causal forwards, shorter ones and other head dims launch once."""
    merges = []
    monkeypatch.setattr(forward.combine, "combine", lambda *args: merges.append(args))
    # 133 heads x 8 query tiles of 128 rows = 1064 = 8 x 132 + 8 tiles, 8 key tiles of 128 each:
    # the last 8 tiles in 8 runs (132 // 8 = 16 capped by the key tiles)
    q = torch.empty(1, 133, 1000, 64, dtype=torch.bfloat16)
    with tuning.variant(split_from_keys={64: 1000}):
        o, lse = forward.forward(q, q, q, False)
        (grid, args, kw), (run_grid, run_args, run_kw) = launches
        assert not kw["PIECES"] and grid == (132,) and args[20:23] == (1056, 1056, 1) and args[11] is args[12] is lse
        part_o, part_lse = run_args[11], run_args[12]
        assert run_kw["PIECES"] and run_grid == (64,) and run_args[20:23] == (64, 1056, 8)
        assert part_o.shape == (64, 128, 64) and part_lse.shape == (64, 128)
        assert part_o.dtype == part_lse.dtype == torch.float32
        (merged,) = merges
        assert merged[0] is part_o and merged[1] is part_lse and merged[2] is o and merged[3] is lse
        assert merged[4:] == (1056, 8, 8)
        launches.clear()
        few = torch.empty(1, 8, 1000, 64, dtype=torch.bfloat16)  # 64 tiles on 132 SMs: no whole launch, two runs each
        forward.forward(few, few, few, False)
        ((run_grid, run_args, run_kw),) = launches
        assert run_kw["PIECES"] and run_grid == (128,) and run_args[20:23] == (128, 0, 2)
        launches.clear()
        for head_dim, seq, causal in ((64, 1000, True), (128, 1000, False), (64, 999, False)):
            other = torch.empty(1, 133, seq, head_dim, dtype=torch.bfloat16)
            o, lse = forward.forward(other, other, other, causal)
            ((grid, args, kw),) = launches
            launches.clear()
            assert not kw["PIECES"] and args[22] == 1 and args[21] == args[20] and args[11] is args[12] is lse
    assert len(merges) == 2
