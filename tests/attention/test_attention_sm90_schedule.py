"""sm90.schedule on the CPU: the causal forward's order of query tiles, the split of a sparse last
round over keys, and (under the interpreter) sm90.combine's merge of the runs."""

import random
from pathlib import Path

import pytest

schedule = pytest.importorskip("lmperf.attention.sm90.schedule")


def test_plan_splits_only_a_last_round_at_most_half_full():
    # 4096 tiles on 132 SMs: 31 whole rounds, then 4 tiles in 33 runs each (132 // 4), or in as
    # many as they have key tiles
    assert schedule.split_plan(4096, 132, 64) == (4092, 33)
    assert schedule.split_plan(4096, 132, 16) == (4092, 16)
    assert schedule.split_plan(264, 132, 8) == (264, 1)  # every round full
    assert schedule.split_plan(200, 132, 8) == (200, 1)  # 68 in the last round: two runs each would need 136 programs
    assert schedule.split_plan(64, 132, 8) == (0, 2)  # fewer tiles than programs: every tile in two runs
    assert schedule.split_plan(5, 132, 1) == (5, 1)  # one key tile: nothing to split


@pytest.mark.parametrize("parts, key_tiles", [(2, 8), (33, 64), (16, 16), (3, 7), (5, 6), (2, 2)])
def test_key_ranges_cover_every_key_tile_once_in_runs_within_one_tile(parts, key_tiles):
    ranges = [schedule.key_range(part, parts, key_tiles) for part in range(parts)]
    assert ranges[0][0] == 0 and ranges[-1][1] == key_tiles
    assert all(previous[1] == following[0] for previous, following in zip(ranges, ranges[1:]))
    sizes = [stop - first for first, stop in ranges]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_combine_under_the_interpreter(run_interpreted):
    run_interpreted(Path(__file__).parent / "interpreted_combine_cases.py")


def test_ordered_items_go_longest_first_to_the_program_with_least_work():
    """Worked by hand, tile cost 1: one head of 4 causal 128-row tiles over 128-key tiles costs
    2, 3, 4, 5; tile 3 to program 0 (5), tile 2 to 1 (4), tile 1 to the lighter 1 (7), tile 0 to
    0 (7). Two heads of 2 tiles in sections of one: head 0's tile 1 (3) to 0, tile 0 (2) to 1;
    then head 1's tile 1 to the lighter 1 (5), tile 0 to 0 (5). On random shapes, every tile
    exactly once, and no program's work ahead of another's by more than one tile's cost."""
    assert schedule.ordered_items(4, 1, 2, 512, 128, 128, 1, 1.0) == ([3, 0, 2, 1], [0, 2, 4])
    assert schedule.ordered_items(2, 2, 2, 256, 128, 128, 1, 1.0) == ([0 * 2 + 1, 1 * 2 + 0, 0, 1 * 2 + 1], [0, 2, 4])
    rng = random.Random(0)
    for _ in range(30):
        n_m, heads, programs = rng.randint(1, 40), rng.randint(1, 20), rng.randint(1, 140)
        block_m, block_n = rng.choice([(128, 128), (192, 64)])
        seq_k = rng.randint(1, n_m * block_m + 300)
        codes, starts = schedule.ordered_items(n_m, heads, programs, seq_k, block_m, block_n, rng.randint(1, 8), 1.0)
        assert sorted(codes) == list(range(n_m * heads)) and starts[0] == 0 and starts[-1] == len(codes)
        cost = [-(-min(seq_k, (t + 1) * block_m) // block_n) + 1 for t in range(n_m)]  # key tiles + tile cost
        work = [sum(cost[c % n_m] for c in codes[a:b]) for a, b in zip(starts, starts[1:])]
        assert len(work) == programs and max(work) - min(work) <= max(cost)
