"""Where a forward + backward's host time goes, segment by segment, as autograd runs it.

    PYTHONPATH=src python3 benchmarks/attention/host_segments.py OUT.jsonl

host_overhead.py put FlashAttention2Triton's forward + backward (`autograd.grad`) at 0.63-0.99 ms
of CPU time per call at 2048 tokens, while its parts, timed alone, summed to about half of that
(cached-launch-h100-e69f878/host-profile.txt: apply 166 us, the backward's body 221, an empty
Function's forward + backward 76). This times the parts inside the real call: a subclass of
FlashAttention2Triton stamps perf_counter_ns (and the thread) at the forward's and the backward's
entry and exit, and wrappers stamp row_delta and the Gluon launches; 300 calls issued back to back
with 2048 tokens (the GPU's part is shorter than the CPU's, so the CPU never waits for it).
Per segment: the median over the calls, in microseconds. HOST_HEAD_DIMS, HOST_SEQS pick points;
HOST_PIN=3 pins the process (every thread) to core 3, HOST_DEEP=1 stamps inside the launches
(CachedLaunch.key, the descriptors, Triton's launcher and make_tensordesc_arg; since 702562e a
repeat launch skips the last two, so their stamps show only with launch.DIRECT off or an older
source), HOST_AB=1 times DirectLaunch against Triton's runner instead (`direct_against_runner`).
The runs of host-launch-h100-702562e used this script before its loops moved into `points`,
`fwd_bwd` and `cudnn_us` and its timer and empty Function came from host_overhead.py and
host_profile.py (the same calls in the same order).
"""

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host_overhead import host_us  # noqa: E402  CPU microseconds per call, calls back to back
from host_profile import Identity  # noqa: E402  an autograd Function that launches nothing

from lmperf.attention import flash_gluon, flash_gluon_backward, flash_triton
from lmperf.attention.flash_triton import FlashAttention2Triton
from lmperf.report.environment import environment

STAMPS: list[tuple[str, int, int]] = []  # (label, perf_counter_ns, thread id)


def stamp(label: str) -> None:
    STAMPS.append((label, time.perf_counter_ns(), threading.get_ident()))


class Stamped(FlashAttention2Triton):
    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, backward=None):
        stamp("forward-in")
        out = FlashAttention2Triton.forward(ctx, q, k, v, is_causal, backward)
        stamp("forward-out")
        return out

    @staticmethod
    def backward(ctx, grad_out):
        stamp("backward-in")
        grads = FlashAttention2Triton.backward(ctx, grad_out)
        stamp("backward-out")
        return grads


def wrap(owner, name: str, label: str) -> None:
    inner = getattr(owner, name)

    def stamped(*args, **kwargs):
        stamp(f"{label}-in")
        out = inner(*args, **kwargs)
        stamp(f"{label}-out")
        return out

    setattr(owner, name, stamped)


def segments(calls: list[list[tuple[str, int, int]]]) -> dict[str, float]:
    """Per call, the microseconds between consecutive stamps summed by name 'a->b'; the median
    over the calls of each sum (a span that repeats in a call, as per descriptor, is added up)."""
    sums: list[dict[str, float]] = []
    for stamps in calls:
        spans: dict[str, float] = {}
        for (a, ta, _), (b, tb, _) in zip(stamps, stamps[1:]):
            spans[f"{a}->{b}"] = spans.get(f"{a}->{b}", 0.0) + (tb - ta) / 1e3
        sums.append(spans)
    names = list(sums[-1])
    return {name: round(statistics.median(s.get(name, 0.0) for s in sums), 1) for name in names}


def points(tokens: int):
    """(head_dim, seq, causal, q, k, v, output gradient) for each point HOST_HEAD_DIMS and
    HOST_SEQS name, causal and not: bf16, heads x head_dim = 2048, `tokens` per batch."""
    for d in [int(x) for x in os.environ.get("HOST_HEAD_DIMS", "64,128").split(",")]:
        for seq in [int(x) for x in os.environ.get("HOST_SEQS", "2048").split(",")]:
            for causal in (False, True):
                q, k, v = (torch.randn(tokens // seq, 2048 // d, seq, d, device="cuda", dtype=torch.bfloat16,
                                       requires_grad=True) for _ in range(3))
                yield d, seq, causal, q, k, v, torch.randn_like(q)


def fwd_bwd(function, q, k, v, causal, grad):
    """One forward + backward of an attention function as the benchmarks' peers run it."""
    return torch.autograd.grad(function(q, k, v, causal), (q, k, v), grad)


def cudnn_us(q, k, v, causal, grad) -> float:
    """host_us (300 calls) of SDPA's forward + backward with its cuDNN backend, chosen once around the calls."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
        return host_us(lambda: torch.autograd.grad(sdpa(q, k, v, is_causal=causal), (q, k, v), grad), calls=300)


def direct_against_runner(out_path: str, env: dict) -> None:
    """HOST_AB=1: CPU microseconds per forward + backward with launch.DIRECT on and off in one
    process, four interleaved rounds per point (every other one in reverse order), cuDNN's beside
    in each round: what DirectLaunch saves, on a machine whose speed drifts between processes."""
    from lmperf.attention import launch

    cached = (flash_gluon._FWD_LAUNCH, flash_gluon_backward._BWD_LAUNCH, flash_triton._PREPROCESS_LAUNCH)
    with open(out_path, "w") as out:
        for d, seq, causal, q, k, v, grad in points(2048):
            for round_ in range(4):
                for peer in ("direct", "runner", "sdpa-cudnn")[::1 if round_ % 2 == 0 else -1]:
                    if peer == "sdpa-cudnn":
                        us = cudnn_us(q, k, v, causal, grad)
                    else:
                        launch.DIRECT = peer == "direct"
                        for launcher in cached:
                            launcher.compiled.clear()
                        for _ in range(3):  # the first call of each key goes through kernel[grid]
                            fwd_bwd(FlashAttention2Triton.apply, q, k, v, causal, grad)
                        us = host_us(lambda: fwd_bwd(FlashAttention2Triton.apply, q, k, v, causal, grad), calls=300)
                    row = dict(peer=peer, head_dim=d, seq=seq, causal=causal, tokens=2048, round=round_,
                               host_us=round(us, 1), env=env)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"r{round_} d={d} causal={causal} {peer:10s} {us:6.0f} us per fwd+bwd", flush=True)
    launch.DIRECT = True


def main(out_path: str) -> None:
    env = environment("cuda")
    if os.environ.get("HOST_AB") == "1":
        direct_against_runner(out_path, env)
        return
    pin = os.environ.get("HOST_PIN")
    if pin:  # every thread of the process on these cores (os.sched_setaffinity: the whole process)
        os.sched_setaffinity(0, {int(c) for c in pin.split(",")})
    wrap(flash_triton, "row_delta", "row_delta")
    wrap(flash_gluon_backward, "launch", "bwd-launch")
    wrap(flash_gluon, "launch", "fwd-launch")
    if os.environ.get("HOST_DEEP") == "1":  # inside the launches: our key, descriptors, Triton's launcher
        import triton.backends.nvidia.driver as driver
        from lmperf.attention import launch
        wrap(launch.CachedLaunch, "key", "key")
        wrap(flash_gluon, "descriptor", "descriptor")
        wrap(driver, "make_tensordesc_arg", "tma")
        wrap(driver.CudaLauncher, "__call__", "launcher")
    with open(out_path, "w") as out:
        for d, seq, causal, q, k, v, grad in points(2048):
            for _ in range(5):
                fwd_bwd(Stamped.apply, q, k, v, causal, grad)
            torch.cuda.synchronize()
            calls = []
            start = time.perf_counter()
            for _ in range(300):
                STAMPS.clear()
                stamp("call")
                fwd_bwd(Stamped.apply, q, k, v, causal, grad)
                stamp("returned")
                calls.append(list(STAMPS))
            per_call = (time.perf_counter() - start) / 300 * 1e6
            torch.cuda.synchronize()
            plain_us = host_us(lambda: fwd_bwd(FlashAttention2Triton.apply, q, k, v, causal, grad), calls=300)
            cudnn_q, cudnn_k, cudnn_v = (x.detach().clone().requires_grad_() for x in (q, k, v))
            cudnn_time = cudnn_us(cudnn_q, cudnn_k, cudnn_v, causal, grad)
            identity_us = host_us(lambda: torch.autograd.grad(Identity.apply(q), (q,), grad), calls=300)
            threads = sorted({label for label, _, tid in calls[-1] if tid != calls[-1][0][2]})
            row = dict(head_dim=d, seq=seq, causal=causal, tokens=2048, per_call_us=round(per_call, 1),
                       unstamped_us=round(plain_us, 1), cudnn_fwd_bwd_us=round(cudnn_time, 1),
                       identity_fwd_bwd_us=round(identity_us, 1), pinned=pin, deep=os.environ.get("HOST_DEEP") == "1",
                       segments_us=segments(calls), other_thread=threads, env=env)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"d={d} seq={seq} causal={causal} pin={pin}: {per_call:.0f} us per call ({plain_us:.0f} unstamped, "
                  f"cuDNN {cudnn_time:.0f}, an empty Function {identity_us:.0f}); other thread: {threads}")
            for name, us in row["segments_us"].items():
                print(f"    {name:40s} {us:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
