"""split_keys: which query tiles the forward splits over their keys, and (under the interpreter)
the merge of their runs."""

from pathlib import Path

import pytest

split_keys = pytest.importorskip("lmperf.attention.split_keys")


def test_plan_splits_only_a_last_round_at_most_half_full():
    # 4096 tiles on 132 SMs: 31 whole rounds, then 4 tiles in 33 runs each (132 // 4), or in as
    # many as they have key tiles
    assert split_keys.plan(4096, 132, 64) == (4092, 33)
    assert split_keys.plan(4096, 132, 16) == (4092, 16)
    assert split_keys.plan(264, 132, 8) == (264, 1)  # every round full
    assert split_keys.plan(200, 132, 8) == (200, 1)  # 68 in the last round: two runs each would need 136 programs
    assert split_keys.plan(64, 132, 8) == (0, 2)  # fewer tiles than programs: every tile in two runs
    assert split_keys.plan(5, 132, 1) == (5, 1)  # one key tile: nothing to split


@pytest.mark.parametrize("parts, key_tiles", [(2, 8), (33, 64), (16, 16), (3, 7), (5, 6), (2, 2)])
def test_key_ranges_cover_every_key_tile_once_in_runs_within_one_tile(parts, key_tiles):
    ranges = [split_keys.key_range(part, parts, key_tiles) for part in range(parts)]
    assert ranges[0][0] == 0 and ranges[-1][1] == key_tiles
    assert all(previous[1] == following[0] for previous, following in zip(ranges, ranges[1:]))
    sizes = [stop - first for first, stop in ranges]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


def test_combine_under_the_interpreter(run_interpreted):
    run_interpreted(Path(__file__).parent / "interpreted_split_keys_cases.py")
