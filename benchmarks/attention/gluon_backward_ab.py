"""A change to flash_gluon_backward measured against the module as committed, on an H100.

    PYTHONPATH=src [AB_HEAD_DIMS=128] [AB_LENGTHS=1024,2048] [AB_CAUSAL=1] [AB_FWD_BWD=1] [AB_PEERS=...] [AB_ROUNDS=6] python3 benchmarks/attention/gluon_backward_ab.py PATCH[,PATCH...] OUT.jsonl

PATCH, a diff of src/lmperf/attention/flash_gluon_backward.py (`git diff` format; several,
comma-separated, are applied in order; several such stacks apart by ";" are candidates timed side
by side, "candidate", "candidate2", ...), is applied to a copy of the module, which is loaded
beside the committed one under its own custom-op name. First the candidate's dQ, dK, dV against float64 (SDPA in float64, variants.py's `_reference`)
on ragged shapes: odd lengths, seq_q != seq_k both ways, GQA and MQA, causal and not, d 64 and
128. Then, per point, backward time of the committed module ("committed"), the candidate and
flash_triton's atomic backward with the Gluon kernels off ("triton-atomic-bwd"), on the same
saved O, LSE and delta, two interleaved rounds, the second reversed (gluon_backward.py's
`_interleaved`); bf16, 16k tokens per batch, heads x d = 2048; a backward counts 2.5x the
forward's FLOPs. Rows as gluon_backward.py's, so `trials/gluon_backward_summary.py OUT.jsonl`
prints errors and ratios (committed / candidate > 1: the change is faster).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "trials")]
from gluon_backward import _cudnn, _interleaved, _rows  # noqa: E402
from variants import _reference  # noqa: E402

from lmperf.attention import flash_gluon_backward, flash_triton  # noqa: E402

DEVICE = "cuda"  # a dry run on the CPU swaps it and the kernels for stand-ins
RAGGED = [  # (head_dim, causal, seq_q, seq_k, heads, kv_heads)
    (64, True, 777, 1025, 8, 2), (64, False, 1025, 777, 4, 1), (64, True, 300, 300, 2, 2), (64, True, 1, 130, 2, 2),
    (128, True, 1000, 1000, 4, 4), (128, False, 777, 1025, 8, 2), (128, True, 1025, 777, 4, 1),
    (80, True, 777, 1025, 8, 2), (80, False, 1025, 777, 4, 1),
    # 144 and 4096 items (key blocks x batch x key/value heads) on an H100's 132 SMs: more items
    # than programs (each persistent program takes several) and a last wave of 12 and 4, which
    # the tail-split trial split into parts (backward-persistent-h100-3843e56/patches/B-tail-split.patch)
    (64, False, 1000, 1024, 18, 9), (64, False, 333, 16384, 16, 16),
]
LENGTHS = {64: (1024, 2048, 4096, 16384), 80: (1024, 4096, 16384), 128: (1024, 4096, 16384)}
COLUMNS = {80: 2560}  # query heads x head_dim (2048 unless named: 80 does not divide it)
# AB_HEAD_DIMS=128 times only d=128 (a change that touches only that head size: half the device time)
HEAD_DIMS = [int(d) for d in os.environ.get("AB_HEAD_DIMS", "64,128").split(",")]
# AB_FWD_BWD=1 also times each backward after its forward, committed, candidate and cuDNN's
# (`*-fwd-bwd`, 3.5x the forward's FLOPs): whether a backward slows what follows it
FWD_BWD = os.environ.get("AB_FWD_BWD") == "1"
# AB_LENGTHS (comma-separated key counts) replaces LENGTHS at every head_dim
_LENGTHS = os.environ.get("AB_LENGTHS")


def grid(causal_values=(False, True)) -> list:
    """(head_dim, causal, keys) points: HEAD_DIMS x causal_values x AB_LENGTHS or LENGTHS[d]
    (gluon_forward_ab.py's grid too)."""
    return [(d, causal, seq) for d in HEAD_DIMS for causal in causal_values
            for seq in ([int(n) for n in _LENGTHS.split(",")] if _LENGTHS else LENGTHS[d])]


# AB_CAUSAL=1 times causal points only, 0 non-causal only (gluon_forward_ab.py reads it too)
CAUSAL = {"1": (True,), "0": (False,)}.get(os.environ.get("AB_CAUSAL", ""), (False, True))
GRID = grid(CAUSAL)
# AB_PEERS=committed,candidate,sdpa-cudnn-bwd times only these (device time goes where the question is)
PEERS = [name for name in os.environ.get("AB_PEERS", "").split(",") if name]


def candidate(patches: str, module=flash_gluon_backward, suffix: str = "_ab"):
    """`module` (one of lmperf.attention's files) with the (comma-separated) patches applied,
    imported from a temporary copy, its custom ops renamed (`lmperf::NAME` -> `lmperf::NAME` +
    suffix)."""
    work = Path(tempfile.mkdtemp())
    relative = Path("src/lmperf/attention") / Path(module.__file__).name
    (work / relative).parent.mkdir(parents=True)
    shutil.copy(Path(module.__file__), work / relative)
    for patch in patches.split(","):
        subprocess.run(["patch", "-p1", "-d", str(work), "-i", str(Path(patch).resolve())], check=True)
    source = re.sub(r'"lmperf::(\w+)"', rf'"lmperf::\1{suffix}"', (work / relative).read_text())
    name = f"{relative.stem}{suffix}"
    path = work / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)  # from a file, so gluon.jit can read the kernels' source
    return loaded


def _saved(q, k, v, do, causal):
    o, lse = flash_triton.triton_forward(q, k, v, causal)
    return o, lse, flash_triton.row_delta(o, do)


def check(emit, module, variant: str = "candidate") -> None:
    for d, causal, seq_q, seq_k, heads, kv_heads in RAGGED:
        gen = torch.Generator(device=DEVICE).manual_seed(d + seq_q + seq_k)
        q, do = (torch.randn(2, heads, seq_q, d, device=DEVICE, generator=gen).bfloat16() for _ in range(2))
        k, v = (torch.randn(2, kv_heads, seq_k, d, device=DEVICE, generator=gen).bfloat16() for _ in range(2))
        o, lse, delta = _saved(q, k, v, do, causal)
        grads = module.backward(q, k, v, do, lse, delta, causal)
        _, *expected = _reference(q, k, v, do, causal)
        errors = {f"max_rel_error_{name}": ((g.double() - e).abs().max() / e.abs().max()).item()
                  for name, g, e in zip(("dq", "dk", "dv"), grads, expected)}
        emit(dict(kind="check", variant=variant, head_dim=d, causal=causal, seq_q=seq_q, seq_k=seq_k,
                  heads=heads, kv_heads=kv_heads, **errors))


def main(patches: str, out_path: str, tokens: int = 16384) -> None:
    # candidates apart by ";": "candidate", "candidate2", ..., timed side by side
    modules = {("candidate" if i == 0 else f"candidate{i + 1}"): candidate(stack, suffix=f"_ab{i or ''}")
               for i, stack in enumerate(patches.split(";"))}
    emit = _rows(out_path)
    for name, module in modules.items():
        check(emit, module, name)
    for d, causal, seq in GRID:
        heads = COLUMNS.get(d, 2048) // d
        q, k, v, do = (torch.randn(tokens // seq, heads, seq, d, device=DEVICE).bfloat16() for _ in range(4))
        o, lse, delta = _saved(q, k, v, do, causal)
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        o_cudnn = _cudnn(*leaves, causal) if DEVICE == "cuda" else None
        peers = {
            "committed": lambda: flash_gluon_backward.backward(q, k, v, do, lse, delta, causal),
            **{name: (lambda m=module: m.backward(q, k, v, do, lse, delta, causal)) for name, module in modules.items()},
            "triton-atomic-bwd": lambda: flash_triton.triton_backward(q, k, v, o, lse, do, causal, "atomic", gluon=False),
            # SDPA cuDNN's backward kernels on its own forward's saved tensors: the yardstick
            "sdpa-cudnn-bwd": lambda: torch.autograd.grad(o_cudnn, leaves, do, retain_graph=True),
        }
        if FWD_BWD:  # each backward after its forward (the Gluon or Triton forward, delta): no autograd
            peers["committed-fwd-bwd"] = lambda: flash_gluon_backward.backward(q, k, v, do, *_saved(q, k, v, do, causal)[1:],
                                                                            causal)
            for name, module in modules.items():
                peers[f"{name}-fwd-bwd"] = lambda m=module: m.backward(q, k, v, do, *_saved(q, k, v, do, causal)[1:], causal)
            peers["sdpa-cudnn-fwd-bwd"] = lambda: torch.autograd.grad(_cudnn(*leaves, causal), leaves, do)
        if o_cudnn is None:  # the CPU dry run has no cuDNN
            peers = {name: fn for name, fn in peers.items() if not name.startswith("sdpa-cudnn")}
        if PEERS:
            peers = {name: fn for name, fn in peers.items() if name in PEERS}
        forward_work = 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1)
        work = {name: (3.5 if name.endswith("fwd-bwd") else 2.5) * forward_work for name in peers}
        _interleaved(emit, peers, work, dict(head_dim=d, causal=causal, seq=seq))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
