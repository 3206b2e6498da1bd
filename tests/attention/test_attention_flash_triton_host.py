"""Host-side choices of flash_triton, on the CPU without Triton's interpreter."""

import dataclasses
import random
import warnings

import pytest
import torch

flash_triton = pytest.importorskip("lmperf.attention.flash_triton")


def test_dq_by_tma_only_where_a_tensor_descriptor_fits_and_was_faster(monkeypatch):
    monkeypatch.setattr(flash_triton, "INTERPRETED", False)
    capability = {"now": (9, 0)}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability["now"])
    q = torch.empty(1)

    def by_tma(head_dim):
        return flash_triton._dq_by_tma(q, head_dim, flash_triton._column_blocks(head_dim))

    # One column block (112 padded to 128), rows of 256-512 bytes: bulk reductions.
    assert by_tma(64) and by_tma(128) and by_tma(112)
    # Two column blocks: per-thread atomics (bulk reductions per block ran slower, docs item 25).
    assert not by_tma(80) and not by_tma(96)
    # 34 fp32 columns are 136-byte rows, not 16-byte aligned: no tensor descriptor.
    assert not by_tma(34)
    capability["now"] = (8, 0)  # no TMA before Hopper
    assert not by_tma(64)
    capability["now"] = (9, 0)
    monkeypatch.setattr(flash_triton, "ATOMIC_DQ_BY_TMA", False)
    assert not by_tma(64)


def test_gluon_column_blocks_are_powers_of_two_of_at_least_16_columns():
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    assert [flash_gluon.column_blocks(d) for d in (64, 80, 96, 128, 160)] == [(64, 0), (64, 16), (64, 32), (128, 0), (128, 32)]
    for head_dim in (72, 112):  # a tail of 8 columns (below wgmma's 16), and of 48 (not a power of two)
        with pytest.raises(ValueError):
            flash_gluon.column_blocks(head_dim)


def test_gluon_block_descriptors_view_each_column_block_of_the_tensor():
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    x = torch.empty(2, 4, 300, 80, dtype=torch.bfloat16)
    first, tail = flash_gluon.block_descriptors(x, 64)
    # columns 0-63 and 64-79 of each row: the tail's base 64 elements (128 bytes) in
    assert (first.base.storage_offset(), list(first.base.shape), first.block_shape) == (0, [2, 4, 300, 64], [1, 1, 64, 64])
    assert (tail.base.storage_offset(), list(tail.base.shape), tail.block_shape) == (64, [2, 4, 300, 16], [1, 1, 64, 16])
    assert list(first.strides) == list(tail.strides) == list(x.stride())
    assert flash_gluon.block_descriptors(x, 64, 32)[0].block_shape == [1, 1, 64, 32]  # dQ's column boxes
    # without a tail, None: the kernels take it as a constexpr and never read it
    whole, none = flash_gluon.block_descriptors(torch.empty(2, 4, 300, 128, dtype=torch.bfloat16), 64)
    assert none is None and whole.block_shape == [1, 1, 64, 128]


def test_gluon_descriptors_equal_the_validated_constructors_field_by_field():
    """flash_gluon.descriptor skips TensorDescriptor's __post_init__ checks: every field must still
    be what from_tensor (which runs them) sets, and a field without a default that Triton adds
    must fail here, not be left unset."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    hopper = pytest.importorskip("triton.experimental.gluon.nvidia.hopper")
    fields = dataclasses.fields(hopper.TensorDescriptor)
    required = [field.name for field in fields if field.default is dataclasses.MISSING]
    assert required == ["base", "shape", "strides", "block_shape", "layout"]
    x = torch.empty(2, 4, 300, 80, dtype=torch.bfloat16).transpose(1, 2)  # strides not those of a contiguous tensor
    for tensor, rows, columns in ((x[..., :64], 64, None), (x[..., 64:], 64, None), (x[..., :64], 64, 32),
                                  (torch.empty(1, 2, 5, 128, dtype=torch.float32), 128, 64)):
        ours = flash_gluon.descriptor(tensor, rows, columns)
        box = [1, 1, rows, columns or tensor.shape[-1]]
        validated = hopper.TensorDescriptor.from_tensor(tensor, box, flash_gluon.shared_layout(box[2], box[3], tensor.dtype))
        assert ours.base is validated.base
        for name in ("shape", "strides", "block_shape"):
            assert list(getattr(ours, name)) == list(getattr(validated, name)), name
        for field in fields[5:]:  # padding and any field a later Triton adds
            assert getattr(ours, field.name) == getattr(validated, field.name), field.name
        assert ours.layout == validated.layout


def test_gluon_forward_stores_o_by_tma_where_it_was_faster(monkeypatch):
    """O leaves by a TMA store (its descriptors over the (B, S, H, d) output, boxes of 64 rows)
    at head_dim 64 and non-causal 80; by register stores (no descriptors) at causal 80, at 128
    (no shared memory left) and with three consumer warp groups."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    launches = []
    monkeypatch.setattr(flash_gluon, "_FWD_LAUNCH", lambda grid, *args, **kw: launches.append((args, kw)))
    monkeypatch.setattr(flash_gluon, "multiprocessors", lambda device: 132)
    for head_dim, causal, consumers in ((64, True, 2), (64, False, 2), (80, False, 2), (80, True, 2), (128, False, 2),
                                        (64, False, 3)):
        monkeypatch.setitem(flash_gluon.CONSUMERS, head_dim, consumers)
        q = torch.empty(2, 4, 300, head_dim, dtype=torch.bfloat16)
        o, _ = flash_gluon.forward(q, q, q, causal)
        args, kw = launches.pop()
        o_desc, ot_desc = args[6:8]
        expected = {(64, True, 2): True, (64, False, 2): True, (80, False, 2): True}.get((head_dim, causal, consumers), False)
        assert kw["O_BY_TMA"] is expected, (head_dim, causal, consumers)
        if not expected:
            assert o_desc is None and ot_desc is None
            continue
        assert o_desc.base.data_ptr() == o.data_ptr() and o_desc.block_shape == [1, 1, 64, min(head_dim, 64)]
        assert list(o_desc.strides) == list(o.stride())  # (B, H, S, d) strides of the (B, S, H, d) storage
        assert (ot_desc is None) == (head_dim == 64)


def test_gluon_backward_is_persistent_only_where_it_was_faster(monkeypatch):
    """One program per SM taking (key block, head) items from an atomic counter at head_dim 64,
    non-causal from PERSISTENT_FROM_KEYS, causal from PERSISTENT_CAUSAL_FROM_KEYS, then chunks of
    dQ's conversion (256 rows of a batch x key/value head's query heads each), so the kernel
    returns dQ in the inputs' dtype; elsewhere one program per item and dQ's fp32 sums converted
    after it. The kernel gets the key-block count, the item count and where the chunks end."""
    fb = pytest.importorskip("lmperf.attention.flash_gluon_backward")
    launches = []
    monkeypatch.setattr(fb, "_BWD_LAUNCH", lambda grid, *args, **kw: launches.append((grid, args, kw)))
    monkeypatch.setattr(fb.flash_gluon, "multiprocessors", lambda device: 132)
    for head_dim, causal, seq, persistent in ((64, False, 16384, True), (64, False, 1024, True), (64, True, 1024, True),
                                              (64, True, 512, False), (64, False, 512, False), (80, False, 16384, False),
                                              (128, True, 16384, False)):
        q = torch.empty(1, 4, seq, head_dim, dtype=torch.bfloat16)
        k = torch.empty(1, 2, seq, head_dim, dtype=torch.bfloat16)
        stats = torch.empty(1, 4, seq)
        dq, _, _ = fb.backward(q, k, k, q, stats, stats, causal)
        grid, args, kw = launches.pop()
        items = seq // 128 * 2  # key blocks x (batch x key/value heads)
        chunks = 2 * -(-2 * seq // 256) if persistent else 0  # 2 query heads a key/value head, 2 of those
        assert kw["PERSISTENT"] is persistent, (head_dim, causal, seq)
        assert kw["DYNAMIC"] is kw["CONVERT"] is persistent
        assert grid == ((min(items, 132),) if persistent else (items,))
        assert args[-3:] == (seq // 128, items, items + chunks)
        assert dq.dtype == torch.bfloat16 and dq.shape == q.shape


def test_gluon_descriptors_share_the_layout_triton_derives_for_their_box():
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    gl = pytest.importorskip("triton.experimental.gluon.language")
    for dtype, gl_dtype in ((torch.bfloat16, gl.bfloat16), (torch.float16, gl.float16), (torch.float32, gl.float32)):
        for rows, columns in ((64, 64), (128, 64), (64, 128), (64, 16)):
            x = torch.empty(2, 3, 300, columns, dtype=dtype)
            expected = gl.NVMMASharedLayout.get_default_for([1, 1, rows, columns], gl_dtype)  # uncached
            assert flash_gluon.descriptor(x, rows).layout == expected
            assert flash_gluon.descriptor(x, rows).layout is flash_gluon.descriptor(x, rows).layout  # one derivation
    # the cache keys on the box's columns: head_dim 80's 16-column tail swizzles 32-byte rows
    first, tail = flash_gluon.block_descriptors(torch.empty(2, 3, 300, 80, dtype=torch.bfloat16), 64)
    assert first.layout == gl.NVMMASharedLayout.get_default_for([1, 1, 64, 64], gl.bfloat16)
    assert tail.layout == gl.NVMMASharedLayout.get_default_for([1, 1, 64, 16], gl.bfloat16) != first.layout


def test_gluon_forward_takes_only_what_its_kernel_and_tma_can_address():
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")

    def qkv(head_dim=64, dtype=torch.bfloat16, heads=4, kv_heads=4):
        return (torch.empty(2, heads, 300, head_dim, dtype=dtype), *(torch.empty(2, kv_heads, 300, head_dim, dtype=dtype)
                                                                       for _ in range(2)))

    assert flash_gluon.fits(*qkv()) and flash_gluon.fits(*qkv(128, torch.float16))
    assert flash_gluon.fits(*qkv(kv_heads=1))  # GQA: K/V head by index
    # The model's layout: (B, H, T, d) views of a packed (B, T, 3, H, d) projection, no copies.
    packed = torch.empty(2, 300, 3, 4, 64, dtype=torch.bfloat16)
    assert flash_gluon.fits(*packed.permute(2, 0, 3, 1, 4).unbind(0))
    assert flash_gluon.fits(*qkv(80))  # as 64 + 16 columns
    assert not flash_gluon.fits(*qkv(96)) and not flash_gluon.fits(*qkv(32))  # Triton's forward runs those
    backward = pytest.importorskip("lmperf.attention.flash_gluon_backward")
    assert backward.fits(*qkv()) and backward.fits(*qkv(128)) and backward.fits(*qkv(80))
    assert not flash_gluon.fits(*qkv(dtype=torch.float32))
    q, k, v = qkv()
    assert not flash_gluon.fits(q, k.half(), v.half())
    assert not flash_gluon.fits(q[:, :, :0], k, v)
    # A base 2 bytes past a 16-byte boundary: no TMA descriptor.
    shifted = torch.empty(2 * 4 * 300 * 64 + 1, dtype=torch.bfloat16)[1:].view(2, 4, 300, 64)
    assert not flash_gluon.fits(shifted, k, v)
    # Rows 68 bf16 apart (136 bytes): a stride TMA cannot take; 72 apart (144 bytes) it can.
    assert not flash_gluon.fits(torch.empty(2, 4, 300, 68, dtype=torch.bfloat16)[..., :64], k, v)
    assert flash_gluon.fits(torch.empty(2, 4, 300, 72, dtype=torch.bfloat16)[..., :64], k, v)
    assert not flash_gluon.supported(q, k, v, True)  # CPU tensors


def test_gluon_forward_runs_where_it_beat_triton_on_the_h100():
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    # Persistent: ahead at every measured length but head_dim 64 causal at 1024 keys.
    assert flash_gluon.faster_here(128, 1024, True) and flash_gluon.faster_here(128, 1, False)
    assert flash_gluon.faster_here(64, 1024, False) and flash_gluon.faster_here(80, 1024, True)
    assert not flash_gluon.faster_here(64, 2047, True) and flash_gluon.faster_here(64, 2048, True)
    assert not flash_gluon.faster_here(96, 16384, True)  # no kernel there


def test_gluon_forward_tiles_fit_hoppers_shared_memory_with_two_or_three_consumers():
    """A program's Q (64 rows per consumer) and its ring of K and V slots, bf16, counted by hand
    against sm90's 227 KB per block: 128-key tiles at head_dim 128 fit two consumers (224 KB) but
    not three (240 KB), which take 64-key tiles there; the defaults are 128-key tiles, two
    consumers (the layout that was faster on the H100)."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")

    def kilobytes(head_dim, consumers):
        block_n, slots = flash_gluon.tiles(head_dim, consumers)
        return 2 * head_dim * (64 * consumers + 2 * block_n * slots) / 1024

    assert kilobytes(128, 2) == 32 + 3 * 64 == 224  # Q of two consumers, three slots of K and V
    assert 2 * 128 * (64 * 3 + 2 * 128 * 3) / 1024 == 48 + 3 * 64 == 240 > 227  # TILES' at 128, three consumers
    assert flash_gluon.tiles(128, 3) == (64, 3) and kilobytes(128, 3) == 48 + 3 * 32 == 144
    assert all(kilobytes(d, c) <= 227 for d in (64, 80, 128) for c in (2, 3))
    assert flash_gluon.CONSUMERS == {64: 2, 80: 2, 128: 2}
    assert {d: flash_gluon.tiles(d, 2) for d in (64, 80, 128)} == {64: (128, 3), 80: (128, 3), 128: (128, 3)}


def test_gluon_forward_is_persistent_at_every_length():
    """Persistent (one program per SM) everywhere, causal too (pairs of query tiles in a fixed
    turn, which `forward` turns into single tiles in the host's order); one program per query
    tile only where PERSISTENT_CAUSAL_MAX_KEYS says (the GPU test's mode)."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    assert flash_gluon.schedule(64, 16384, False) == (False, True)
    assert flash_gluon.schedule(64, 16384, True) == (True, True)
    assert flash_gluon.schedule(80, 1024, True) == (True, True)
    assert flash_gluon.schedule(128, 32768, False) == (False, True)
    assert flash_gluon.schedule(128, 8192, True) == (True, True)
    assert flash_gluon.schedule(128, 32768, True) == (True, True)
    assert flash_gluon.PERSISTENT_CAUSAL_MAX_KEYS == {}


def test_ordered_items_go_longest_first_to_the_program_with_least_work():
    """Worked by hand, TILE_COST 1: one head of 4 causal 128-row tiles over 128-key tiles costs
    2, 3, 4, 5; tile 3 to program 0 (5), tile 2 to 1 (4), tile 1 to the lighter 1 (7), tile 0 to
    0 (7). Two heads of 2 tiles in sections of one: head 0's tile 1 (3) to 0, tile 0 (2) to 1;
    then head 1's tile 1 to the lighter 1 (5), tile 0 to 0 (5). On random shapes, every tile
    exactly once, and no program's work ahead of another's by more than one tile's cost."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    assert flash_gluon.TILE_COST == 1.0
    assert flash_gluon.ordered_items(4, 1, 2, 512, 128, 128, 1) == ([3, 0, 2, 1], [0, 2, 4])
    assert flash_gluon.ordered_items(2, 2, 2, 256, 128, 128, 1) == ([0 * 2 + 1, 1 * 2 + 0, 0, 1 * 2 + 1], [0, 2, 4])
    rng = random.Random(0)
    for _ in range(30):
        n_m, heads, programs = rng.randint(1, 40), rng.randint(1, 20), rng.randint(1, 140)
        block_m, block_n = rng.choice([(128, 128), (192, 64)])
        seq_k = rng.randint(1, n_m * block_m + 300)
        codes, starts = flash_gluon.ordered_items(n_m, heads, programs, seq_k, block_m, block_n, rng.randint(1, 8))
        assert sorted(codes) == list(range(n_m * heads)) and starts[0] == 0 and starts[-1] == len(codes)
        cost = [-(-min(seq_k, (t + 1) * block_m) // block_n) + 1 for t in range(n_m)]  # key tiles + TILE_COST
        work = [sum(cost[c % n_m] for c in codes[a:b]) for a, b in zip(starts, starts[1:])]
        assert len(work) == programs and max(work) - min(work) <= max(cost)


def test_causal_persistent_forwards_launch_in_the_host_order(monkeypatch):
    """Causal persistent launches take single tiles (per_head = n_m) from the int32 table
    (codes, then each program's start), built once per shape and kept (past MAX_TABLES kept, a new
    shape runs the pairs); non-causal ones, one program per
    tile (PERSISTENT_CAUSAL_MAX_KEYS, here d128 past 8192 keys) and head_dims outside
    ORDERED_CAUSAL (80, where it measured slower) do not: pairs in a fixed turn there."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    launches = []
    monkeypatch.setattr(flash_gluon, "_FWD_LAUNCH", lambda grid, *args, **kw: launches.append((grid, args, kw)))
    monkeypatch.setattr(flash_gluon, "multiprocessors", lambda device: 132)
    q = torch.empty(2, 4, 1000, 64, dtype=torch.bfloat16)
    flash_gluon.forward(q, q, q, True)
    grid, args, kw = launches.pop()
    table, n_m, per_head, items = args[10], args[18], args[19], args[20]
    assert kw["ORDERED"] and not kw["PAIRS"] and n_m == per_head == 8 and items == 2 * 4 * 8 == 64 and grid == (64,)
    section = 16 * 2**20 // (2 * 1000 * 64 * 2)  # heads whose K and V (1000 keys, bf16) fit 16 MB: 65
    assert table.dtype == torch.int32 and table.tolist() == sum(flash_gluon.ordered_items(8, 8, 64, 1000, 128, 128, section), [])
    flash_gluon.forward(q, q, q, True)
    assert launches.pop()[1][10] is table  # built once
    monkeypatch.setattr(flash_gluon, "MAX_TABLES", len(flash_gluon._TABLES))  # full: kept tables serve, new shapes pair
    flash_gluon.forward(q, q, q, True)
    assert launches.pop()[1][10] is table
    other = torch.empty(2, 4, 999, 64, dtype=torch.bfloat16)
    flash_gluon.forward(other, other, other, True)
    grid, args, kw = launches.pop()
    assert not kw["ORDERED"] and kw["PAIRS"] and args[19] == 4 and args[10] is not table
    flash_gluon.forward(q, q, q, False)
    assert not launches[-1][2]["ORDERED"] and not launches.pop()[2]["PAIRS"]
    monkeypatch.setitem(flash_gluon.PERSISTENT_CAUSAL_MAX_KEYS, 128, 8192)
    long = torch.empty(1, 1, 8193, 128, dtype=torch.bfloat16)
    flash_gluon.forward(long, long, long, True)
    grid, args, kw = launches.pop()
    assert not kw["ORDERED"] and not kw["PAIRS"] and grid == (65,)
    assert flash_gluon.ORDERED_CAUSAL == {64, 128}
    d80 = torch.empty(2, 4, 1000, 80, dtype=torch.bfloat16)
    flash_gluon.forward(d80, d80, d80, True)
    grid, args, kw = launches.pop()
    assert not kw["ORDERED"] and kw["PAIRS"] and args[19] == 4 and grid == (2 * 4 * 4,)


def test_non_causal_forwards_run_a_sparse_last_round_as_runs_over_keys(monkeypatch):
    """From SPLIT_FROM_KEYS's key counts a non-causal forward launches the kernel for split_keys.plan's
    whole tiles (one program per SM, the runs' arguments unread: LSE, items, 1), then with PIECES for
    the runs (one a program, with fp32 buffers for them), and merges the runs into O and LSE;
    causal forwards, shorter ones and other head_dims launch once, unsplit. By default d64 splits
    from 4096 keys."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    launches, merges = [], []
    monkeypatch.setattr(flash_gluon, "_FWD_LAUNCH", lambda grid, *args, **kw: launches.append((grid, args, kw)))
    monkeypatch.setattr(flash_gluon.split_keys, "combine", lambda *args: merges.append(args))
    monkeypatch.setattr(flash_gluon, "multiprocessors", lambda device: 132)
    default = flash_gluon.SPLIT_FROM_KEYS
    monkeypatch.setattr(flash_gluon, "SPLIT_FROM_KEYS", {64: 1000})
    # 133 heads x 8 query tiles of 128 rows = 1064 = 8 x 132 + 8 tiles, 8 key tiles of 128 each:
    # the last 8 tiles in 8 runs (132 // 8 = 16 capped by the key tiles)
    q = torch.empty(1, 133, 1000, 64, dtype=torch.bfloat16)
    o, lse = flash_gluon.forward(q, q, q, False)
    (grid, args, kw), (run_grid, run_args, run_kw) = launches
    assert not kw["PIECES"] and grid == (132,) and args[20:23] == (1056, 1056, 1) and args[11] is args[12] is lse
    part_o, part_lse = run_args[11], run_args[12]
    assert run_kw["PIECES"] and run_grid == (64,) and run_args[20:23] == (64, 1056, 8)
    assert part_o.shape == (64, 128, 64) and part_lse.shape == (64, 128) and part_o.dtype == part_lse.dtype == torch.float32
    (merged,) = merges
    assert merged[0] is part_o and merged[1] is part_lse and merged[2] is o and merged[3] is lse and merged[4:] == (1056, 8, 8)
    launches.clear()
    few = torch.empty(1, 8, 1000, 64, dtype=torch.bfloat16)  # 64 tiles on 132 SMs: no whole launch, two runs each
    flash_gluon.forward(few, few, few, False)
    ((run_grid, run_args, run_kw),) = launches
    assert run_kw["PIECES"] and run_grid == (128,) and run_args[20:23] == (128, 0, 2)
    launches.clear()
    monkeypatch.setattr(flash_gluon, "SPLIT_FROM_KEYS", default)
    for head_dim, seq, causal in ((64, 1000, True), (128, 1000, False), (64, 2048, False), (64, 4096, False)):
        # 133 heads x 16 or 32 query tiles leave 16 or 32 tiles for the last round, 8 or 4 runs each
        other = torch.empty(1, 133, seq, head_dim, dtype=torch.bfloat16)
        o, lse = flash_gluon.forward(other, other, other, causal)
        split = seq == 4096
        assert [kw["PIECES"] for _, _, kw in launches] == [False, True][:1 + split]
        grid, args, kw = launches[0]
        launches.clear()
        assert args[22] == 1 and args[21] == args[20] and args[11] is args[12] is lse
    assert len(merges) == 3 and merges[-1][4:] == (4224, 4, 32)


def test_gluon_backward_takes_what_the_gluon_forward_takes_where_it_beat_triton():
    flash_gluon_backward = pytest.importorskip("lmperf.attention.flash_gluon_backward")
    q, k, v = (torch.empty(2, 4, 4096, 64, dtype=torch.bfloat16) for _ in range(3))
    assert flash_gluon_backward.fits(q, k, v) and not flash_gluon_backward.fits(q.float(), k.float(), v.float())
    assert not flash_gluon_backward.supported(q, k, v)  # CPU tensors
    # Ahead of both flash_triton backwards at head_dim 64, 80 and 128 from 1024 keys (the shortest
    # lengths timed there).
    assert flash_gluon_backward.faster_here(64, 1024) and flash_gluon_backward.faster_here(64, 16384)
    assert not flash_gluon_backward.faster_here(64, 1023) and not flash_gluon_backward.faster_here(128, 1023)
    assert flash_gluon_backward.faster_here(128, 1024) and flash_gluon_backward.faster_here(128, 32768)
    assert flash_gluon_backward.faster_here(80, 1024) and not flash_gluon_backward.faster_here(80, 1023)
    assert not flash_gluon_backward.faster_here(96, 16384)  # no kernel there


def test_atomic_backward_hands_over_to_gluon_with_the_preprocessed_delta(monkeypatch):
    """Where the Gluon backward runs, "atomic" launches it with the preprocess kernel's delta and
    nothing of Triton's dK/dV kernel; "split" never does."""
    flash_gluon_backward = pytest.importorskip("lmperf.attention.flash_gluon_backward")
    launched = []
    monkeypatch.setattr(flash_triton, "gluon_backward_runs", lambda q, k, v: True)
    monkeypatch.setattr(flash_triton, "_PREPROCESS_LAUNCH", lambda grid, *args, **kw: launched.append("delta"))
    monkeypatch.setattr(flash_triton, "_launch", lambda name, *args, **kw: launched.append(name))
    grads = tuple(torch.full((1,), float(n)) for n in range(3))
    monkeypatch.setattr(flash_gluon_backward, "launch", lambda *args: launched.append(args) or grads)
    q, do, o = (torch.randn(2, 3, 40, 64) for _ in range(3))
    k, v = torch.randn(2, 1, 50, 64), torch.randn(2, 1, 50, 64)
    lse = torch.randn(2, 3, 40)
    assert flash_triton.triton_backward(q, k, v, o, lse, do, True, "atomic") is grads
    assert launched[0] == "delta" and len(launched) == 2
    gq, gk, gv, gdo, glse, gdelta, causal = launched[1]
    assert (gq, gk, gv, gdo, glse) == (q, k, v, do, lse) and gdelta.shape == lse.shape and causal is True
    launched.clear()
    flash_triton.triton_backward(q, k, v, o, lse, do, True, "split")
    assert launched == ["delta", "dkdv", "dq"]


def test_gluon_checks_trace_under_torch_compile_without_a_graph_break():
    """fits (and so supported) runs inside FlashAttention2Triton while torch.compile traces the
    model: a graph break there (Dynamo cannot read data_ptr) split every compiled layer; the
    custom ops realign a base instead. fullgraph=True turns a graph break into an error."""
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    q = torch.randn(1, 2, 128, 64, dtype=torch.bfloat16)
    compiled = torch.compile(lambda q, k, v: q * 2 if flash_gluon.fits(q, k, v) else q * 3, fullgraph=True, backend="eager")
    assert torch.equal(compiled(q, q, q), q * 2)
    shifted = torch.empty(2 * 128 * 64 + 1, dtype=torch.bfloat16)[1:].view(1, 2, 128, 64)
    assert not flash_gluon.tma_ready(shifted) and flash_gluon.aligned(shifted).data_ptr() % 16 == 0
    assert flash_gluon.aligned(q) is q


def test_gluon_asks_the_device_capability_once_per_device(monkeypatch):
    flash_gluon = pytest.importorskip("lmperf.attention.flash_gluon")
    asked = []

    def capability(device=None):  # a def, not a lambda: Dynamo traces it below
        asked.append(device)
        return (9, 0) if device.index == 0 else (8, 0)

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    flash_gluon._sm90.cache_clear()
    try:
        assert flash_gluon.hopper(torch.device("cuda", 0)) and flash_gluon.hopper(torch.device("cuda", 0))
        assert asked == [torch.device("cuda", 0)]  # the second call answered from the cache
        assert not flash_gluon.hopper(torch.device("cuda", 1))  # another device asks again
        assert asked == [torch.device("cuda", 0), torch.device("cuda", 1)]
        # traced by torch.compile: no graph break, and no warning about a cache wrapper
        compiled = torch.compile(lambda x: x * 2 if flash_gluon.hopper(torch.device("cuda", 0)) else x * 3,
                                 fullgraph=True, backend="eager")
        x = torch.ones(3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert torch.equal(compiled(x), x * 2)
        assert not [w for w in caught if "lru_cache" in str(w.message)]
    finally:
        flash_gluon._sm90.cache_clear()  # no answer from a stand-in outlives the test
