"""Host-side choices of flash_triton, on the CPU without Triton's interpreter."""

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
