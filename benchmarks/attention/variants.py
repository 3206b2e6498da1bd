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


def main(out_path):
    env = environment("cuda")
    variants = {"default": default, "warp_specialize": warp_specialized}
    rows = []
    for name, setup in variants.items():
        setup()
        for d in (64, 128):
            for causal in (False, True):
                q, k, v = (torch.randn(2, 4, 777, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
                try:
                    out = flash_triton.flash_attention_triton_with_lse(q, k, v, causal)[0]
                    err = rel_error(out, q, k, v, causal)
                except Exception as error:  # a variant that does not compile is a row, not a crash
                    rows.append(dict(variant=name, head_dim=d, causal=causal, status="failed", error=str(error)[:300], env=env))
                    continue
                for seq in (4096, 16384):
                    batch, heads = 16384 // seq, 2048 // d
                    q, k, v = (torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
                    ms = do_bench(lambda: flash_triton.flash_attention_triton_with_lse(q, k, v, causal), warmup=20, rep=60, return_mode="median")
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        cudnn_ms = do_bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal), warmup=20, rep=60, return_mode="median")
                    flops = attention_kernel_flops(batch * heads, seq, seq, d, causal)["forward"]
                    rows.append(dict(variant=name, head_dim=d, causal=causal, seq=seq, status="ok", rel_error=err, fwd_ms=ms, fwd_tflops=flops / ms / 1e9, cudnn_fwd_ms=cudnn_ms, cudnn_fwd_tflops=flops / cudnn_ms / 1e9, env=env))
                    print(f"fwd {name:16s} d={d} causal={causal} seq={seq}: {ms:.3f} ms {flops / ms / 1e9:.0f} TFLOP/s (cuDNN {flops / cudnn_ms / 1e9:.0f}), err {err:.1e}")
    with open(out_path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main(sys.argv[1])
