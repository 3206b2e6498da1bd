"""Kernel variants of FlashAttention2Triton on the GPU, timed side by side with SDPA cuDNN.

Run by a device script: `python3 benchmarks/attention/variants.py OUT_JSONL [VARIANT ...]`.
A VARIANT of the form `file:PATH` is another version of flash_triton.py (e.g. an earlier
commit's, from `git show REV:src/lmperf/attention/flash_triton.py`), loaded as its own module and
run with its own defaults and the split backward (`file:PATH@atomic`: the atomic one), so two
versions of the kernels are timed side by side in one process. Each variant sets flash_triton's switches and tile tables (its own autotuned kernels), is
checked against a float64 reference (output and all three gradients; 1008 rows, so every tile
size leaves a ragged edge), then timed with do_bench medians: forward, backward and
forward+backward at each point of the grid (VARIANTS_GRID: head_dim 64/128, causal and not, seq
4k/16k; or head_dim 80 at 1k-16k; 16k tokens per batch, heads x head_dim = 2048, 2560 at 80; or
8b-gqa, the 8B model's causal attention at 32k: 32 query and 8 key/value heads x 128; or the
short lengths, d128-short (head_dim 128 at 1k/2k) and short (64 and 80 at 1k/2k, 25 heads at 80)).
At each point every peer (SDPA cuDNN, SDPA's default, the variants) runs on the same inputs,
twice (VARIANTS_ROUNDS), interleaved, every other round in reverse order. One JSON row per peer,
point and round; the autotuner's choice and its per-config timings are kept in the row.
"""

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from lmperf.analysis.flops import attention_kernel_flops
from lmperf.attention import flash_triton as ft
from lmperf.report.environment import environment

GRIDS = {
    "d64-d128": [(d, causal, seq) for d in (64, 128) for causal in (False, True) for seq in (4096, 16384)],
    # The 2.7B preset's head_dim (32 heads x 80 = 2560 columns), seq 1k-16k.
    "d80": [(80, causal, seq) for causal in (False, True) for seq in (1024, 4096, 16384)],
    # The 8B model's attention (32 query heads and 8 key/value heads x 128), causal, 32k tokens.
    "8b-gqa": [(128, True, 32768)],
    # head_dim 128 below 4096 keys, where neither the Gluon forward's consumer count nor the Gluon
    # backward had been timed side by side.
    "d128-short": [(128, causal, seq) for causal in (False, True) for seq in (1024, 2048)],
    # head_dim 64 and 80 below 4096 keys, where the Gluon forward did not run before it was persistent
    # (80 as 25 heads: 2000 columns)
    "short": [(d, causal, seq) for d in (64, 80) for causal in (False, True) for seq in (1024, 2048)],
    # head_dim 64 alone at 1k/2k: where D64_FROM_KEYS hands the backward from "split" to the Gluon kernel
    "d64-short": [(64, causal, seq) for causal in (False, True) for seq in (1024, 2048)],
}
GRID_NAME = os.environ.get("VARIANTS_GRID", "d64-d128")
GRID = GRIDS[GRID_NAME]
COLUMNS = {"d80": 2560, "8b-gqa": 4096}.get(GRID_NAME, 2048)  # query heads x head_dim
KV_GROUP = {"8b-gqa": 4}.get(GRID_NAME, 1)  # query heads per key/value head
MAIN_TILES = {name: {size: list(tiles) for size, tiles in by_size.items()} for name, by_size in ft.TILES.items()}
# The candidates timed on 2026-11-23 (commit 3ea1cdb): the tables main had then, plus configs
# picked on the CPU from the sm90 compiler's resource report (registers, spills, shared memory):
# each fits two programs per SM (so one's softmax can overlap the other's matmuls) or is a larger
# tile; maxnreg caps registers where a small spill buys the second program. TILES now holds the
# winners of this table.
_OLD = {
    "fwd": [(128, 64, 4, 3), (128, 128, 8, 3), (128, 64, 8, 3), (128, 128, 8, 2)],
    "dkdv": [(32, 128, 4, 5), (64, 128, 8, 3), (32, 128, 4, 3)],
    "dq": [(128, 32, 4, 5), (128, 64, 8, 3), (128, 32, 4, 3)],
}
WIDE_TILES = {
    "fwd": {
        False: _OLD["fwd"] + [(128, 128, 8, 2, 128), (128, 64, 8, 4), (256, 64, 8, 3)],
        True: _OLD["fwd"] + [(128, 64, 8, 2, 128), (64, 64, 4, 3), (64, 64, 4, 2), (128, 64, 8, 4)],
    },
    "dkdv": {size: _OLD["dkdv"] + [(64, 128, 8, 2), (32, 64, 4, 3), (32, 128, 8, 3), (64, 64, 4, 2)] for size in (False, True)},
    "dq": {
        False: _OLD["dq"] + [(128, 64, 8, 2, 128), (64, 64, 4, 3), (128, 128, 8, 2)],
        True: _OLD["dq"] + [(64, 64, 4, 3), (64, 64, 4, 2), (128, 64, 8, 2)],
    },
    "dkdv_dq": MAIN_TILES["dkdv_dq"],
}
# The atomic backward before its own table (fifth session of 2026-11-23): dK/dV tiles of 32 query
# rows at head_dim <= 64, which leave its dS^T K product off wgmma.
ATOMIC_32_ROW_TILES = dict(MAIN_TILES, dkdv_dq=MAIN_TILES["dkdv"])


# flash_gluon's FROM_KEYS as imported, which variants change entries of.
_GLUON_FROM_KEYS = dict(ft.flash_gluon.FROM_KEYS)
# flash_gluon's CONSUMERS and TILES as imported (by module name), which variants change entries of.
_GLUON_TABLES = {ft.flash_gluon.__name__: (dict(ft.flash_gluon.CONSUMERS), dict(ft.flash_gluon.TILES))}


def prepare(tiles=MAIN_TILES, backward="split", tma=None, split_head_dim=True, gluon_forward=True, gluon_backward=True,
            gluon_backward_stages=2, gluon_consumers=None, gluon_tiles=None, gluon_backward_from_keys=None, gluon_forward_from_keys=None,
            direct_launch=True, module=ft):
    """A variant's switches and its own autotuned kernels (each keeps its tuning cache).
    backward None: FlashAttention2Triton's default for the shape. tma None: the module's own
    default for the atomic backward's dQ adds. gluon_forward False: Triton's kernels where
    flash_gluon's and flash_gluon_backward's would run; gluon_backward False: Triton's backward
    where flash_gluon_backward's would run; gluon_backward_stages: its Q/dO ring's slots;
    gluon_consumers, gluon_tiles: entries of flash_gluon.CONSUMERS and flash_gluon.TILES the
    variant changes (by head_dim; the module's own for the rest); gluon_backward_from_keys:
    head_dim -> the key count from which the Gluon backward runs (flash_gluon_backward's
    D{head_dim}_FROM_KEYS; the module's own for the rest); gluon_forward_from_keys: entries of
    flash_gluon.FROM_KEYS (head_dim -> {is_causal: keys}) the variant changes; direct_launch False:
    launch.CachedLaunch's repeats through the compiled kernel's Python runner (launch.DIRECT)."""
    tuned = module.tuned_kernels(tiles)
    gluon = getattr(module, "flash_gluon", None)
    if gluon is not None and hasattr(gluon, "CONSUMERS"):  # an older flash_triton's module has neither
        # over the tables as imported: activate() replaces the module's with a variant's own
        consumers, tiles_ = _GLUON_TABLES.setdefault(gluon.__name__, (dict(gluon.CONSUMERS), dict(gluon.TILES)))
        gluon_consumers = {**consumers, **(gluon_consumers or {})}
        gluon_tiles = {**tiles_, **(gluon_tiles or {})}
    tma = getattr(module, "ATOMIC_DQ_BY_TMA", False) if tma is None else tma
    return dict(tiles=tiles, tuned=tuned, backward=backward, tma=tma, split_head_dim=split_head_dim,
                gluon_forward=gluon_forward, gluon_backward=gluon_backward, gluon_backward_stages=gluon_backward_stages,
                gluon_consumers=gluon_consumers, gluon_tiles=gluon_tiles,
                gluon_backward_from_keys=gluon_backward_from_keys or {},
                gluon_forward_from_keys={**_GLUON_FROM_KEYS, **(gluon_forward_from_keys or {})},
                direct_launch=direct_launch, module=module)


def prepare_file(spec_text):
    """Another version of flash_triton.py as a variant: its own module, tiles and defaults.
    `PATH@BACKWARD` runs it with that backward ("atomic", "ordered") instead of "split"."""
    path, _, backward = spec_text.partition("@")
    spec = importlib.util.spec_from_file_location(f"flash_triton_{Path(path).stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a file, so triton.jit can read the kernels' source
    return prepare(tiles=module.TILES, backward=backward or "split", module=module)


# flash_gluon_backward's own key counts from which its kernel runs, restored for every variant
# that does not change them.
_GLUON_BACKWARD_FROM_KEYS = {d: getattr(ft.flash_gluon_backward, f"D{d}_FROM_KEYS") for d in (64, 80, 128)}


def _direct_launches(direct: bool) -> None:
    """launch.DIRECT as the variant has it; the cached launches start over where it changes (each
    key's entry is made by the setting at its first call)."""
    from lmperf.attention import flash_gluon, flash_gluon_backward, launch

    if getattr(launch, "DIRECT", direct) != direct:
        launch.DIRECT = direct
        for cached in (flash_gluon._FWD_LAUNCH, flash_gluon_backward._BWD_LAUNCH, ft._PREPROCESS_LAUNCH):
            cached.compiled.clear()


def activate(variant):
    """Point the variant's flash_triton module at its switches; returns its backward mode."""
    module = variant["module"]
    module.TILES, module._TUNED = variant["tiles"], variant["tuned"]
    module.ATOMIC_DQ_BY_TMA, module.SPLIT_HEAD_DIM = variant["tma"], variant["split_head_dim"]
    _direct_launches(variant.get("direct_launch", True))
    if getattr(module, "flash_gluon", None) is not None:
        module.flash_gluon.ENABLED = variant["gluon_forward"]
        if variant["gluon_consumers"] is not None:
            module.flash_gluon.CONSUMERS = variant["gluon_consumers"]
        if variant["gluon_tiles"] is not None:
            module.flash_gluon.TILES = variant["gluon_tiles"]
        if hasattr(module.flash_gluon, "FROM_KEYS"):
            module.flash_gluon.FROM_KEYS = variant["gluon_forward_from_keys"]
    if getattr(module, "flash_gluon_backward", None) is not None:
        module.flash_gluon_backward.ENABLED = variant["gluon_backward"]
        module.flash_gluon_backward.STAGES = variant["gluon_backward_stages"]
        for head_dim, default in _GLUON_BACKWARD_FROM_KEYS.items():
            keys = variant.get("gluon_backward_from_keys", {}).get(head_dim, default)
            setattr(module.flash_gluon_backward, f"D{head_dim}_FROM_KEYS", keys)
    return variant["backward"]


# name -> prepare() kwargs. (The run of 2026-11-23 also listed forward switches, a conditional
# rescale and a QK^T look-ahead, that its time limit cut off; their code is in commit 3ea1cdb.)
VARIANTS = {
    "wide-tiles": dict(tiles=WIDE_TILES),
    "main": {},
    # FlashAttention2Triton as a user gets it: its default backward for the shape (the Gluon
    # backward where flash_gluon_backward.faster_here says), then the same with Triton's backward there,
    # and with three Q/dO slots in the Gluon backward's ring (144 KB of shared memory at d=64).
    "default": dict(backward=None),
    # the same with launch.CachedLaunch's repeats through Triton's Python runner (before DirectLaunch)
    "default-runner-launch": dict(backward=None, direct_launch=False),
    # "default" again under another name: its rows against default's in the same rounds are the
    # measurement's own spread (identical kernels and launches)
    "default-again": dict(backward=None),
    "default-triton-backward": dict(backward=None, gluon_backward=False),
    "default-3-slots": dict(backward=None, gluon_backward_stages=3),
    # the Gluon forward with three consumer warp groups (192 query rows a program, 160 registers;
    # 64-key tiles at 128, flash_gluon.THREE_CONSUMER_TILES); at head_dim 64 also with 64-key tiles;
    # at 128 (two consumers) with 64-key tiles in four K/V slots
    "default-3-consumers": dict(backward=None, gluon_consumers={64: 3, 128: 3}),
    "gluon-d64-3c-n64": dict(backward=None, gluon_consumers={64: 3, 128: 3}, gluon_tiles={64: (64, 3)}),
    "gluon-d128-4-slots": dict(backward=None, gluon_tiles={128: (64, 4)}),
    # head_dim 128 with the Gluon forward's three consumer warp groups and 64-key tiles (the
    # default before 2026-11-26's wide tiles: two, 128-key), and with the Gluon backward from 1024
    # keys (the default: from 4096)
    "gluon-d128-3c": dict(backward=None, gluon_consumers={128: 3}),
    "gluon-d128-backward-1k": dict(backward=None, gluon_backward_from_keys={128: 1024}),
    # head_dim 64 with the Gluon backward from 1024 keys (the default: from 2048; causal it is
    # persistent from 1024, flash_gluon_backward.PERSISTENT_CAUSAL_FROM_KEYS)
    "gluon-d64-backward-1k": dict(backward=None, gluon_backward_from_keys={64: 1024}),
    # the Gluon forward at every length at head_dim 64 and 80 (the default: from 4096 keys, 8192
    # causal at 64)
    "gluon-forward-everywhere": dict(backward=None, gluon_forward_from_keys={64: {False: 0, True: 0},
                                                                             80: {False: 0, True: 0}}),
    # head_dim 80 (64 + 16 columns) with 64-key tiles, three or two consumers ("default": 128-key
    # tiles, two); "triton-forward" is Triton's forward there, as before the Gluon forward took 80
    "gluon-d80-3c-n64": dict(backward=None, gluon_consumers={80: 3}, gluon_tiles={80: (64, 3)}),
    "gluon-d80-2c-n64": dict(backward=None, gluon_tiles={80: (64, 3)}),
    "atomic-tma": dict(backward="atomic", tma=True),
    "atomic": dict(backward="atomic"),
    # main's kernels with Triton's forward where flash_gluon's runs by default
    "triton-forward": dict(gluon_forward=False),
    "default-triton-forward": dict(backward=None, gluon_forward=False),  # the default backward for the shape
    "atomic-triton-forward": dict(backward="atomic", gluon_forward=False),
    "atomic-per-thread": dict(backward="atomic", tma=False),  # dQ shares by per-thread atomics
    "atomic-32-row-tiles": dict(tiles=ATOMIC_32_ROW_TILES, backward="atomic"),
    "ordered": dict(backward="ordered"),
    # A head_dim such as 80 padded to 128 columns (the kernels before commit of 2026-11-23's
    # fourth session) instead of tiled as 64 + 16; "main" tiles it.
    "padded-head-dim": dict(split_head_dim=False),
}


def _reference(q, k, v, do, causal):
    group = q.shape[1] // k.shape[1]
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    kr, vr = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    o = torch.nn.functional.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
    o.backward(do.double())
    return o, q.grad, k.grad, v.grad


def check(apply, d, causal):
    """Largest relative error (output, dQ, dK, dV) against float64 on a ragged shape."""
    heads = COLUMNS // d
    gen = torch.Generator(device="cuda").manual_seed(d + causal)
    shape = lambda h: (1, h, 1008, d)  # noqa: E731
    q = torch.randn(shape(heads), device="cuda", generator=gen).bfloat16().requires_grad_()
    k, v = (torch.randn(shape(heads // KV_GROUP), device="cuda", generator=gen).bfloat16().requires_grad_() for _ in range(2))
    do = torch.randn(shape(heads), device="cuda", generator=gen).bfloat16()
    o = apply(q, k, v, causal)
    o.backward(do)
    expected = _reference(q, k, v, do, causal)
    actual = (o, q.grad, k.grad, v.grad)
    return max(((a.double() - e).norm() / e.norm()).item() for a, e in zip(actual, expected))


def _tuned(module):
    """Config chosen and per-config ms of each autotuner's last tuning."""
    out = {}
    for (name, large), tuner in module._TUNED.items():
        timings = getattr(tuner, "configs_timings", None)
        if timings:
            out[f"{name}/{'d128' if large else 'd64'}"] = {str(c): round(t[0] if isinstance(t, list) else t, 4) for c, t in timings.items()}
    return out


def _bench(fn, grads=()):
    return do_bench(fn, warmup=25, rep=150, grad_to_none=list(grads), return_mode="median")


def point_inputs(d, seq):
    """q, k, v, dO of one grid point (16k tokens per batch, or one sequence), shared by every peer."""
    batch, heads = max(1, 16384 // seq), COLUMNS // d
    q = torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(batch, heads // KV_GROUP, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    return q, k, v, torch.randn_like(q)


def time_point(apply, inputs, causal):
    q, k, v, do = inputs
    batch, heads, seq, d = q.shape
    row = {"fwd_ms": _bench(lambda: apply(q, k, v, causal))}
    o = apply(q, k, v, causal)
    row["bwd_ms"] = _bench(lambda: o.backward(do, retain_graph=True), (q, k, v))
    row["fwd_bwd_ms"] = _bench(lambda: apply(q, k, v, causal).backward(do), (q, k, v))
    flops = attention_kernel_flops(batch * heads, seq, seq, d, causal)
    for part, key in (("fwd", "forward"), ("bwd", "backward"), ("fwd_bwd", "forward_backward")):
        row[f"{part}_tflops"] = round(flops[key] / row[f"{part}_ms"] / 1e9, 1)
    return dict(row, batch=batch, heads=heads)


def cudnn(q, k, v, causal):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return sdpa_default(q, k, v, causal)


def sdpa_default(q, k, v, causal):
    """SDPA with PyTorch's own backend choice: what the model's --attention sdpa runs (bf16)."""
    grouped = k.shape[1] != q.shape[1]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=grouped)


# Timed first at every point; every variant is compared with these rows (VARIANTS_BASELINES:
# a comma-separated subset, to spend a call's time on the variants).
BASELINES = {"sdpa-cudnn": cudnn, "sdpa-default": sdpa_default}
BASELINES = {name: BASELINES[name] for name in os.environ.get("VARIANTS_BASELINES", ",".join(BASELINES)).split(",")}


def time_peer(name, apply, inputs, d, causal, seq, checked=False):
    """One peer's row at one grid point; a peer that fails to compile or run is a row, not a crash."""
    row = dict(variant=name, head_dim=d, causal=causal, seq=seq)
    try:
        if checked:
            row["max_rel_error"] = check(apply, d, causal)
        row.update(time_point(apply, inputs, causal), status="ok")
    except Exception as error:
        row.update(status="failed", error=str(error)[-400:])
    return row


def triton_with(module, backward):
    return lambda q, k, v, c: module.FlashAttention2Triton.apply(q, k, v, c, backward)


def summary(row):
    head = f"{row['variant']:11s} d={row['head_dim']:3d} {'causal' if row['causal'] else 'full  '} {row['seq']:5d}"
    if row["status"] != "ok":
        return f"{head} FAILED {row['error'][-200:]}"
    cells = [f"{p} {row[p + '_tflops']:5.0f}" for p in ("fwd", "bwd", "fwd_bwd") if p + "_tflops" in row]
    err = f" err {row['max_rel_error']:.1e}" if "max_rel_error" in row else ""
    return f"{head} TFLOP/s " + "  ".join(cells) + err


# VARIANTS_ROUNDS: rounds per point (2 by default), every odd one in reverse order. One call's two
# rounds disagreed by up to 10% at 16k and contradicted themselves at 1k-2k (final-h100-2015b2c).
ROUNDS = int(os.environ.get("VARIANTS_ROUNDS", "2"))


def main(out_path, names):
    """Every peer at one grid point before the next point, ROUNDS times, every other time in
    reverse order: the GPU's clocks drift over minutes (2026-11-23, fifth session: the same kernel
    5-17% apart between variants timed one after another), so side-by-side means interleaved."""
    env = environment("cuda")
    deadline = time.time() + float(os.environ.get("VARIANTS_S", "300"))
    variants = {
        name: prepare_file(name[len("file:"):]) if name.startswith("file:") else prepare(**VARIANTS[name])
        for name in names or VARIANTS
    }
    peers = [*BASELINES, *variants]
    with open(out_path, "w") as out:
        for d, causal, seq in GRID:
            if time.time() > deadline:
                print(f"out of time before d={d} causal={causal} seq={seq}")
                return
            inputs = point_inputs(d, seq)
            for round_ in range(ROUNDS):
                for name in peers if round_ % 2 == 0 else peers[::-1]:
                    if name in BASELINES:
                        row = time_peer(name, BASELINES[name], inputs, d, causal, seq)
                    else:
                        backward = activate(variants[name])
                        module = variants[name]["module"]
                        checked = round_ == 0 and seq == GRID[0][2]
                        row = time_peer(name, triton_with(module, backward), inputs, d, causal, seq, checked)
                        row["tuned"] = _tuned(module)
                    out.write(json.dumps(dict(row, round=round_, env=env)) + "\n")
                    out.flush()
                    print(f"r{round_} " + summary(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
