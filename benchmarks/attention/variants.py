"""Forward variants of FlashAttention2Triton on the GPU: checked, then timed beside the default.

Run by gpu_run.sh: `python3 benchmarks/attention/variants.py OUT_JSONL`. Each variant is first
compared with a float64 reference on a ragged shape, then its forward is timed (do_bench median)
on the issue's grid points in the same process as the default kernel and SDPA cuDNN.
"""

import json
import sys

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from lmperf.analysis.flops import attention_kernel_flops
from lmperf.attention import flash_triton
from lmperf.attention.naive import naive_attention_with_lse
from lmperf.report.environment import environment


def warp_specialized():
    """FWD_WARP_SPECIALIZE on, autotuned over the 8-warp tiles only (4 warps fail to compile)."""
    flash_triton.FWD_WARP_SPECIALIZE = True
    tiles = [t for t in flash_triton.FWD_TILES if t[2] == 8]
    flash_triton._TUNED["fwd"] = triton.autotune(flash_triton._configs(tiles), key=flash_triton.TUNE_KEY)(flash_triton._fwd_kernel)


def default():
    flash_triton.FWD_WARP_SPECIALIZE = False
    flash_triton._TUNED["fwd"] = triton.autotune(flash_triton._configs(flash_triton.FWD_TILES), key=flash_triton.TUNE_KEY)(flash_triton._fwd_kernel)


def rel_error(variant_out, q, k, v, causal):
    ref, _ = naive_attention_with_lse(q.double(), k.double(), v.double(), causal)
    return ((variant_out.double() - ref).norm() / ref.norm()).item()


def measure(name, d, causal, env, seq=16384):
    """Check the variant on a ragged shape, then time its forward and cuDNN's at 16k tokens."""
    q, k, v = (torch.randn(2, 4, 777, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    row = dict(variant=name, head_dim=d, causal=causal, seq=seq, env=env)
    try:
        err = rel_error(flash_triton.flash_attention_triton_with_lse(q, k, v, causal)[0], q, k, v, causal)
    except Exception as error:  # a variant that does not compile is a row, not a crash
        return dict(row, status="failed", error=str(error)[:300])
    batch, heads = 16384 // seq, 2048 // d
    q, k, v = (torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    bench = lambda f: do_bench(f, warmup=20, rep=60, return_mode="median")  # noqa: E731
    ms = bench(lambda: flash_triton.flash_attention_triton_with_lse(q, k, v, causal))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cudnn_ms = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
    flops = attention_kernel_flops(batch * heads, seq, seq, d, causal)["forward"]
    return dict(
        row, status="ok", rel_error=err, fwd_ms=ms, fwd_tflops=flops / ms / 1e9,
        cudnn_fwd_ms=cudnn_ms, cudnn_fwd_tflops=flops / cudnn_ms / 1e9,
    )


def main(out_path):
    env = environment("cuda")
    with open(out_path, "w") as f:
        for name, setup in {"default": default, "warp_specialize": warp_specialized}.items():
            setup()
            for d, causal in ((64, True), (128, False)):  # the two ends of the grid
                row = measure(name, d, causal, env)
                f.write(json.dumps(row) + "\n")
                f.flush()
                if row["status"] == "ok":
                    print(f"fwd {name:16s} d={d} causal={causal} seq={row['seq']}: {row['fwd_ms']:.3f} ms "
                          f"{row['fwd_tflops']:.0f} TFLOP/s (cuDNN {row['cudnn_fwd_tflops']:.0f}), err {row['rel_error']:.1e}")
                else:
                    print(f"fwd {name} d={d} causal={causal}: failed: {row['error'][:200]}")


if __name__ == "__main__":
    main(sys.argv[1])
