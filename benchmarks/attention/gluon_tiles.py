"""Where flash_gluon's forward should run: its key-tile width against Triton's forward and cuDNN
at short and long contexts (the dispatch rule in flash_triton.triton_forward).

Why: at head_dim 64, causal, 4096 keys, flash_gluon's forward (128 keys per tile) ran at
0.94-0.97x Triton's (benchmarks/attention/gluon-default-h100-2b44515) while it led at 16k. A
program's first Q K^T and last P V overlap nothing, and causal programs at 4k average 16 tiles of
128 keys; 64-key tiles double the tiles per program. Prediction: 64-key tiles recover the
short-context causal points at d=64, and both widths trail Triton at 1k.

Run on an H100: `PYTHONPATH=src python3 benchmarks/attention/gluon_tiles.py OUT.jsonl`.
Forward only (bf16, 16k tokens per batch, heads x head_dim = 2048), do_bench medians, every
peer at a point before the next point, twice, the second round in reverse order.
"""

import json
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from lmperf.attention import flash_gluon
from lmperf.attention.flash_triton import triton_forward
from lmperf.report.environment import environment

# GLUON_TILES_DIMS / GLUON_TILES_SEQS (comma-separated) narrow the grid.
DIMS = [int(d) for d in os.environ.get("GLUON_TILES_DIMS", "64,128").split(",")]
SEQS = [int(s) for s in os.environ.get("GLUON_TILES_SEQS", "1024,2048,4096,16384").split(",")]
POINTS = [(d, causal, seq) for d in DIMS for causal in (True, False) for seq in SEQS]


def gluon_with(block_n):
    def run(q, k, v, causal):
        tiles = dict(flash_gluon.TILES)
        # 128 keys at d=128: two K/V slots (three overflow shared memory)
        flash_gluon.TILES[q.shape[-1]] = (block_n, 2 if block_n * q.shape[-1] > 8192 else 3)
        try:
            return flash_gluon.forward(q, k, v, causal)
        finally:
            flash_gluon.TILES.update(tiles)
    return run


def triton(q, k, v, causal):
    with flash_gluon.disabled():
        return triton_forward(q, k, v, causal)


def cudnn(q, k, v, causal):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def main(out_path):
    env = environment("cuda")
    peers = {"gluon-n128": gluon_with(128), "gluon-n64": gluon_with(64), "triton": triton, "sdpa-cudnn": cudnn}
    with open(out_path, "w") as out, torch.no_grad():
        for d, causal, seq in POINTS:
            heads = 2048 // d
            q, k, v = (torch.randn(16384 // seq, heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            reference = cudnn(q, k, v, causal)
            flops = 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1)
            for round_ in (0, 1):
                for name in list(peers) if round_ == 0 else list(peers)[::-1]:
                    result = peers[name](q, k, v, causal)
                    o = result[0] if isinstance(result, tuple) else result
                    error = ((o.float() - reference.float()).abs().max() / reference.float().abs().max()).item()
                    ms = do_bench(lambda: peers[name](q, k, v, causal), warmup=25, rep=100)
                    row = dict(peer=name, head_dim=d, causal=causal, seq=seq, round=round_, ms=ms,
                               tflops=flops / ms / 1e9, max_rel_diff_vs_cudnn=error, env=env)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(f"r{round_} {name:11s} d{d} {'causal' if causal else 'full'} {seq:5d}: {row['tflops']:6.1f} TFLOP/s "
                          f"(diff vs cuDNN {error:.1e})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
