"""Float64 check of the persistent Gluon backward (trials/gluon-backward-persistent.patch) with
few programs, so that each takes many items in turn (the ring's count, the K/V buffers' phases,
the dS^T barriers and the dK/dV staging all carried across items), which the A/B script's small
ragged shapes never reach (fewer items than SMs).

    PYTHONPATH=PATCHED_SRC python3 benchmarks/attention/trials/gluon_backward_persistent_check.py

Prints, per shape and program count, the largest relative error of dQ, dK and dV against
float64 (SDPA in float64); exits 1 if any is above 0.02 (bf16).
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from variants import _reference  # noqa: E402

from lmperf.attention import flash_gluon, flash_gluon_backward, flash_triton  # noqa: E402

SHAPES = [  # (batch, heads, kv_heads, seq_q, seq_k, causal)
    (2, 8, 2, 777, 1025, True), (2, 4, 1, 1025, 777, False), (1, 4, 4, 2049, 2049, True),
    (1, 4, 4, 2049, 2049, False), (2, 2, 2, 300, 300, True), (1, 2, 2, 1, 130, True), (3, 3, 3, 1000, 1000, False),
]


def main() -> int:
    # the first patch had PERSISTENT_HEAD_DIMS (persistent at d64 everywhere), v2 and src/ PERSISTENT_FROM_KEYS
    if hasattr(flash_gluon_backward, "PERSISTENT_FROM_KEYS"):
        flash_gluon_backward.PERSISTENT_FROM_KEYS = {64: 0}
    if hasattr(flash_gluon_backward, "PERSISTENT_CAUSAL_FROM_KEYS"):  # the dynamic-turn patch: causal too
        flash_gluon_backward.PERSISTENT_CAUSAL_FROM_KEYS = {64: 0}
    assert hasattr(flash_gluon_backward, "PERSISTENT_HEAD_DIMS") or hasattr(flash_gluon_backward, "PERSISTENT_FROM_KEYS")
    worst = 0.0
    for programs in (1, 3, 7, None):
        if programs:
            flash_gluon.multiprocessors = lambda device, n=programs: n
        else:
            flash_gluon.multiprocessors = lambda device: torch.cuda.get_device_properties(device).multi_processor_count
        for batch, heads, kv_heads, seq_q, seq_k, causal in SHAPES:
            torch.manual_seed(seq_q + heads)
            q = torch.randn(batch, heads, seq_q, 64, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(batch, kv_heads, seq_k, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            do = torch.randn_like(q)
            o, lse = flash_triton.triton_forward(q, k, v, causal)
            delta = flash_triton.row_delta(o, do)
            dq, dk, dv = flash_gluon_backward.backward(q, k, v, do, lse, delta, causal)
            _, rq, rk, rv = _reference(q, k, v, do, causal)
            errors = [((a.double() - e).norm() / max(e.norm().item(), 1.0)).item() for a, e in ((dq, rq), (dk, rk), (dv, rv))]
            worst = max(worst, *errors)
            print(f"programs {programs} {(batch, heads, kv_heads, seq_q, seq_k, causal)} dq/dk/dv rel err "
                  + " ".join(f"{e:.2e}" for e in errors), flush=True)
    print(f"worst {worst:.2e}")
    return 0 if worst < 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
