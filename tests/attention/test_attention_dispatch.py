"""lmperf.attention.dispatch on the CPU: which kernel runs for which inputs, and why not elsewhere."""

import subprocess
import sys

import pytest
import torch

dispatch = pytest.importorskip("lmperf.attention.dispatch")
from lmperf.attention.sm90 import tuning  # noqa: E402  (after the importorskip: needs Triton)


def qkv(head_dim=64, dtype=torch.bfloat16, heads=4, kv_heads=4, seq=300):
    return (
        torch.empty(2, heads, seq, head_dim, dtype=dtype),
        *(torch.empty(2, kv_heads, seq, head_dim, dtype=dtype) for _ in range(2)),
    )


def test_gluon_takes_only_what_its_kernels_and_tma_can_address():
    assert dispatch.gluon_fits(*qkv()) and dispatch.gluon_fits(*qkv(128, torch.float16))
    assert dispatch.gluon_fits(*qkv(kv_heads=1))  # GQA: K/V head by index
    # The model's layout: (B, H, T, d) views of a packed (B, T, 3, H, d) projection, no copies.
    packed = torch.empty(2, 300, 3, 4, 64, dtype=torch.bfloat16)
    assert dispatch.gluon_fits(*packed.permute(2, 0, 3, 1, 4).unbind(0))
    assert dispatch.gluon_fits(*qkv(80))  # as 64 + 16 columns
    assert not dispatch.gluon_fits(*qkv(96)) and not dispatch.gluon_fits(*qkv(32))  # the portable kernels run those
    assert not dispatch.gluon_fits(*qkv(dtype=torch.float32))
    q, k, v = qkv()
    assert not dispatch.gluon_fits(q, k.half(), v.half())
    assert not dispatch.gluon_fits(q[:, :, :0], k, v)
    # A base 2 bytes past a 16-byte boundary: no TMA descriptor.
    shifted = torch.empty(2 * 4 * 300 * 64 + 1, dtype=torch.bfloat16)[1:].view(2, 4, 300, 64)
    assert not dispatch.gluon_fits(shifted, k, v)
    # Rows 68 bf16 apart (136 bytes): a stride TMA cannot take; 72 apart (144 bytes) it can.
    assert not dispatch.gluon_fits(torch.empty(2, 4, 300, 68, dtype=torch.bfloat16)[..., :64], k, v)
    assert dispatch.gluon_fits(torch.empty(2, 4, 300, 72, dtype=torch.bfloat16)[..., :64], k, v)
    assert not dispatch.gluon_kernels_run(q, k, v)  # CPU tensors


def test_gluon_forward_runs_from_the_tunings_key_count_for_its_head_dim_and_mask():
    # the rule follows the table, whatever it holds
    with tuning.variant(forward_from_keys={(80, False): 700}):
        assert not dispatch.gluon_forward_runs(80, 699, False, True) and dispatch.gluon_forward_runs(
            80, 700, False, True
        )
        assert dispatch.gluon_forward_runs(80, 1, True, True)  # a point the table does not name: from 1 key
        assert dispatch.gluon_forward_runs(64, 1, True, True)
        assert not dispatch.gluon_forward_runs(80, 10**6, False, False)  # never where the kernels cannot run
    # by default the portable forward keeps head_dim 64 causal below 2048 keys, where it was faster
    assert not dispatch.gluon_forward_runs(64, 2047, True, True) and dispatch.gluon_forward_runs(64, 2048, True, True)
    assert dispatch.gluon_forward_runs(64, 1, False, True) and dispatch.gluon_forward_runs(128, 1, True, True)


def test_gluon_backward_runs_from_the_tunings_key_count():
    with tuning.variant(backward_from_keys=3000):
        assert not dispatch.gluon_backward_runs(2999, True) and dispatch.gluon_backward_runs(3000, True)
    assert not dispatch.gluon_backward_runs(10**6, False)
    threshold = tuning.DEFAULT.backward_from_keys
    assert not dispatch.gluon_backward_runs(threshold - 1, True) and dispatch.gluon_backward_runs(threshold, True)


@pytest.mark.parametrize(
    "version, supported",
    [
        ("3.6.0", True),
        ("3.6.1", True),
        ("3.6.0+git1a2b3c4", True),
        ("3.5.1", False),
        ("3.7.0", False),
        ("3.9.0", False),
        ("4.0.0", False),
        ("3.10.0", False),
    ],
)
def test_the_gluon_kernels_run_only_with_the_triton_they_were_checked_on(version, supported):
    assert dispatch.in_gluon_range(version) is supported


def test_another_triton_imports_cleanly_and_runs_the_portable_kernels():
    """In a fresh process whose Triton reports 3.9.0: lmperf.attention and its Triton kernels
    import, dispatch refuses Gluon before looking at any input, no sm90 kernel module is
    imported, and a forward launches the portable kernel."""
    code = """
import sys, torch, triton
triton.__version__ = "3.9.0"
from lmperf.attention import dispatch, flash_triton
from lmperf.attention.triton_kernels import tiles
assert dispatch.GLUON_TRITON_OK is False
dispatch.hopper = lambda device: True  # as if on an H100: the version alone must decide
q = torch.empty(1, 2, 300, 64, dtype=torch.bfloat16)
assert not dispatch.gluon_kernels_run(q, q, q)
launched = []
flash_triton.run_kernel = lambda name, *args, **kw: launched.append(name)
flash_triton.triton_forward(q, q, q, True)
assert launched == ["fwd"], launched
assert not [name for name in sys.modules if name.startswith("lmperf.attention.sm90.") and
            name.split(".")[-1] in ("forward", "backward", "descriptors", "pipeline")], sorted(sys.modules)
print("portable")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "portable", result.stderr[-3000:]


def test_gluon_disabled_keeps_the_portable_kernels_and_restores_the_switch(monkeypatch):
    monkeypatch.setattr(dispatch, "ENABLED", True)
    monkeypatch.setattr(dispatch, "GLUON_TRITON_OK", True)
    monkeypatch.setattr(dispatch, "INTERPRETED", False)
    monkeypatch.setattr(dispatch, "hopper", lambda device: True)
    q = torch.empty(1, 2, 300, 64, dtype=torch.bfloat16)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))  # the rules after the device check
    assert dispatch.gluon_kernels_run(q, q, q)
    with dispatch.gluon_disabled():
        assert not dispatch.gluon_kernels_run(q, q, q)
    assert dispatch.ENABLED and dispatch.gluon_kernels_run(q, q, q)
    monkeypatch.setattr(dispatch, "GLUON_TRITON_OK", False)
    assert not dispatch.gluon_kernels_run(q, q, q)


def test_dq_by_tma_only_where_a_tensor_descriptor_fits_and_was_faster(monkeypatch):
    tiles = pytest.importorskip("lmperf.attention.triton_kernels.tiles")
    monkeypatch.setattr(dispatch, "INTERPRETED", False)
    capability = {"now": (9, 0)}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability["now"])
    q = torch.empty(1)

    def by_tma(head_dim):
        return dispatch.dq_by_tma(q, head_dim, tiles.column_blocks(head_dim)["BLOCK_E"])

    # One column block (112 padded to 128), rows of 256-512 bytes: bulk reductions.
    assert by_tma(64) and by_tma(128) and by_tma(112)
    # Two column blocks: per-thread atomics (bulk reductions per block ran slower).
    assert not by_tma(80) and not by_tma(96)
    # 34 fp32 columns are 136-byte rows, not 16-byte aligned: no tensor descriptor.
    assert not by_tma(34)
    capability["now"] = (8, 0)  # no TMA before Hopper
    assert not by_tma(64)


def test_a_base_tma_cannot_take_is_realigned_by_a_copy():
    tma = pytest.importorskip("lmperf.attention.sm90.tma")
    q = torch.randn(1, 2, 128, 64, dtype=torch.bfloat16)
    shifted = torch.empty(2 * 128 * 64 + 1, dtype=torch.bfloat16)[1:].view(1, 2, 128, 64)
    assert not tma.tma_ready(shifted) and tma.aligned(shifted).data_ptr() % 16 == 0
    assert tma.aligned(q) is q


def test_gluon_asks_the_device_capability_once_per_device(monkeypatch):
    asked = []

    def capability(device=None):
        asked.append(device)
        return (9, 0) if device.index == 0 else (8, 0)

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability)
    dispatch._sm90.cache_clear()
    try:
        assert dispatch.hopper(torch.device("cuda", 0)) and dispatch.hopper(torch.device("cuda", 0))
        assert asked == [torch.device("cuda", 0)]  # the second call answered from the cache
        assert not dispatch.hopper(torch.device("cuda", 1))  # another device asks again
        assert asked == [torch.device("cuda", 0), torch.device("cuda", 1)]
    finally:
        dispatch._sm90.cache_clear()  # no answer from a stand-in outlives the test
