"""sm90.tuning and sm90.resources on the CPU: every configuration fits an SM, and variants run and
undo as documented.

The expected shared memory comes from the compiler: `benchmarks/attention-sm90-report.txt` (ptxas
via Triton 3.6, bf16) reports each kernel's allocation in whole KB, which the buffer count must
match up to the mbarriers and alignment the compiler adds (under 2 KB).
"""

import pytest

from lmperf.attention.sm90 import resources, tuning

# (head_dim, causal) -> KB the compiled forward allocates (its default schedule)
FORWARD_KB = {(64, False): 144, (64, True): 144, (80, False): 160, (80, True): 140, (128, False): 224, (128, True): 224}
# (head_dim, persistent) -> KB the compiled backward allocates (causal or not alike)
BACKWARD_KB = {(64, False): 145, (64, True): 226, (80, False): 169, (128, False): 225}


def assert_matches_the_compiler(counted: int, reported_kb: int) -> None:
    """The compiler's allocation lies in [reported_kb, reported_kb + 1) KB and adds at most 2 KB
    to the buffers counted."""
    assert reported_kb * 1024 - 2048 <= counted < (reported_kb + 1) * 1024, (counted, reported_kb)


@pytest.mark.parametrize("head_dim, causal", FORWARD_KB)
def test_forward_shared_memory_is_the_compilers_and_fits_an_sm(head_dim, causal):
    counted = resources.forward_shared_bytes(tuning.DEFAULT, head_dim, causal)
    assert_matches_the_compiler(counted, FORWARD_KB[head_dim, causal])
    assert counted <= resources.SHARED_BYTES == 227 * 1024


def test_forward_shared_memory_by_hand():
    """Head_dim 128, bf16: Q of two consumers (2 x 64 x 128 x 2 B = 32 KB), three slots of 128-key K
    and V (3 x 2 x 128 x 128 x 2 B = 192 KB), no O staging, 512 B of row sums: 224.5 KB of 227.
    Head_dim 64: two Q buffers (32 KB), the ring (96 KB), O staged (16 KB)."""
    assert resources.forward_shared_bytes(tuning.DEFAULT, 128, True) == (32 + 192) * 1024 + 512
    assert resources.forward_shared_bytes(tuning.DEFAULT, 64, False) == (32 + 96 + 16) * 1024 + 512


@pytest.mark.parametrize("head_dim, persistent", BACKWARD_KB)
def test_backward_shared_memory_is_the_compilers_and_fits_an_sm(head_dim, persistent):
    counted = resources.backward_shared_bytes(tuning.DEFAULT, head_dim, persistent)
    assert_matches_the_compiler(counted, BACKWARD_KB[head_dim, persistent])
    assert counted <= resources.SHARED_BYTES


def test_registers_of_two_consumers_and_a_producer_fill_the_register_file():
    """setmaxnreg 240 for each consumer warp group and 24 for the producer's: 128 x (2 x 240 + 24)
    = 64,512 of the SM's 65,536 registers; the report's 168 registers at launch over the program's
    three warp groups (384 threads) are the same 64,512."""
    assert resources.register_file(tuning.DEFAULT) == 128 * (2 * 240 + 24) == 168 * 384 <= 65536


def test_a_variant_replaces_fields_for_the_block_and_restores_them():
    before = tuning.current()
    with tuning.variant(query_slots={64: 1}, kv_slots=2) as chosen:
        assert tuning.current() is chosen and chosen.query_buffers(64) == 1 and chosen.kv_slots == 2
        with tuning.variant(key_tile=64):  # nested: on top of the outer one
            assert tuning.current().key_tile == 64 and tuning.current().kv_slots == 2
        assert tuning.current() is chosen
    assert tuning.current() is before is tuning.DEFAULT


def test_a_variant_that_cannot_run_is_refused_before_the_block():
    ran = []
    with pytest.raises(ValueError, match="no sm90 tuning field"):
        with tuning.variant(queryslots={64: 1}):
            ran.append(1)
    # a second Q buffer at head_dim 128: 64 KB of Q beside the 192 KB ring
    with pytest.raises(ValueError, match="forward head_dim 128"):
        with tuning.variant(query_slots={64: 2, 128: 2}):
            ran.append(2)
    # a persistent backward at 128 needs a second K/V buffer and dK/dV staging it has no room for
    with pytest.raises(ValueError, match="backward head_dim 128 persistent"):
        with tuning.variant(persistent_backward_from_keys={64: 1024, 128: 1024}):
            ran.append(3)
    with pytest.raises(ValueError, match="registers"):
        with tuning.variant(consumer_registers=256):
            ran.append(4)
    assert not ran and tuning.current() is tuning.DEFAULT


def test_the_default_tuning_fits():
    resources.check(tuning.DEFAULT)  # raises if not
