"""docs/attention-tuning.md's table: every tuning constant of lmperf.attention, with the A/B rows
behind its value (benchmarks/rows/attention-tuning-h100.jsonl.gz, one set per A/B run).

A figure is "time without the setting / time with it" per round (above 1: the setting is
faster), the median over rounds per point and the lowest round among the points (figures.py).
A constant without an A/B says why it has no figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import figures as F

PAGE = "attention-tuning-h100"


@dataclass(frozen=True)
class Figure:
    """`theirs / ours` of `metric` in set `set_name` at `points` ((head_dim, causal, keys))."""

    what: str
    set_name: str
    theirs: str
    ours: str
    points: tuple
    metric: str = "ms"  # A/B rows time one pass as `ms`; variants rows have fwd_ms, bwd_ms, fwd_bwd_ms

    def text(self) -> str:
        rows = F.of_set(PAGE, self.set_name)
        name_key = "peer" if any(r.get("kind") == "time" for r in rows) else "variant"
        by_point = F.ratios([r for r in rows if r.get("kind", "time") == "time"], self.theirs, self.ours,
                            self.metric, name_key, lambda r: (r["head_dim"], r["causal"], r["seq"]))
        medians, low = F.medians_and_low(by_point, self.points)
        rounds = {len(by_point[p]) for p in self.points}
        groups: dict = {}
        for point, middle in zip(self.points, medians):
            groups.setdefault(point[:2], []).append((point[2], middle))
        parts = [f"d{d} {'causal' if c else 'full'} {' / '.join(F.keys_label(k) for k, _ in g)}: "
                 f"{' / '.join(f'{m:.3f}' for _, m in g)}" for (d, c), g in groups.items()]
        tail = "one round" if rounds == {1} else f"lowest round {low:.3f}"
        return f"{self.what}: {'; '.join(parts)} ({tail})"


@dataclass(frozen=True)
class Constant:
    name: str
    value: str
    why: str
    figures: tuple = field(default_factory=tuple)
    no_figure: str = ""


def _points(head_dims, causals, keys) -> tuple:
    return tuple((d, c, k) for d in head_dims for c in causals for k in keys)


K = (1024, 2048, 4096, 16384)
FWD = "flash_gluon"
BWD = "flash_gluon_backward"
TRI = "flash_triton"

CONSTANTS = [
    Constant(f"{FWD}.TILES", "64, 80, 128: 128 keys a tile, 3 K/V slots",
             "Q K^T reads both operands from shared memory: at 64 keys a tile that takes all of an SM's "
             "shared-memory bandwidth, at 128 three quarters; three 128-key slots still fit beside Q.",
             (Figure("forward time, 64-key tiles with three consumers / 128-key tiles with two", "tiles-58319fb",
                     "gluon-d128-3c", "default", _points([128], [False, True], K), "fwd_ms"),)),
    Constant(f"{FWD}.CONSUMERS", "2 at every head_dim",
             "Two consumer warp groups of 64 query rows at 240 registers a thread; a third (160 registers) "
             "only pays with 64-key tiles.",
             (Figure("forward time, three consumers / two", "consumers-c9f5415", "default-3-consumers", "default",
                     _points([64], [False, True], (4096, 16384)), "fwd_ms"),)),
    Constant(f"{FWD}.THREE_CONSUMER_TILES", "128: 64 keys, 3 slots",
             "The three-consumer layout (kept selectable, tested): 48 KB of Q and three 64 KB slots of "
             "128-key K/V would pass the 227 KB of shared memory.", no_figure="a shared-memory limit"),
    Constant(f"{FWD}.CONSUMER_REGISTERS", "2: 240, 3: 160",
             "What the register file holds beside the producer warp's 24 registers.",
             no_figure="a register-file limit"),
    Constant(f"{FWD}.O_BY_TMA", "(64, full), (64, causal), (80, full)",
             "O leaves by a TMA store staged in shared memory where that was faster than register stores; "
             "d80 causal lost and d128 has no room (224 of 227 KB).",
             (Figure("forward time, register stores / TMA store", "o-by-tma-30ec68e", "committed", "candidate",
                     _points([64], [False, True], K) + _points([80], [False], (1024, 2048, 4096))),
              Figure("not adopted", "o-by-tma-30ec68e", "committed", "candidate", _points([80], [True], (2048, 4096, 16384))))),
    Constant(f"{FWD}.PERSISTENT_CAUSAL_MAX_KEYS", "{} (persistent at every length)",
             "One program per SM takes query tiles in turn, loading the next tile's Q and K/V under the "
             "current one's P V and epilogue.",
             (Figure("forward time, a program per tile / persistent", "persistent-03ffae7", "committed", "candidate",
                     _points([64], [False, True], K) + _points([80, 128], [False], (1024, 4096, 16384))),)),
    Constant(f"{FWD}.ORDERED_CAUSAL", "{64, 128}",
             "Causal persistent forwards take single query tiles in a host-built order (longest first, "
             "each to the least-loaded program) instead of pairs k, n-1-k in a fixed turn; d80 keeps pairs.",
             (Figure("forward time, pairs / ordered", "ordered-3d19d48", "committed", "candidate",
                     _points([64], [True], (1024, 2048, 4096, 8192, 16384)) + _points([128], [True], (1024, 2048, 4096, 8192))),
              Figure("at d80", "ordered-d80-bc63f30", "committed", "candidate", _points([80], [True], (1024, 2048, 4096))))),
    Constant(f"{FWD}.L2_SHARE", "16 MB",
             "The ordered tiles go in sections of heads whose K and V fit this share of the H100's 50 MB L2, "
             "so the tiles at work at once read few heads.", no_figure="not timed apart from ORDERED_CAUSAL"),
    Constant(f"{FWD}.TILE_COST", "1.0 key tile",
             "A query tile's own cost (first S, last P V, epilogue) when the host balances ordered tiles.",
             no_figure="not timed apart from ORDERED_CAUSAL"),
    Constant(f"{FWD}.SPLIT_FROM_KEYS", "64: 4096",
             "A non-causal persistent forward's sparse last round runs as runs over its tiles' keys in a "
             "second launch, merged after it (split_keys); d80 gained nothing.",
             (Figure("forward time, unsplit / split", "split-keys-8e5f646", "candidate", "committed",
                     _points([64], [False], (4096, 8192, 16384))),
              Figure("at d80", "split-keys-8e5f646", "candidate", "committed", _points([80], [False], (4096, 8192, 16384))))),
    Constant(f"{FWD}.QUERY_SLOTS", "64: 2 (others 1)",
             "A second Q buffer lets the producer load the next query tile's Q while the current one runs; "
             "d80 lost (cause not found), d128 has no room.",
             (Figure("forward time, one Q buffer / two", "query-slots-9e392d4", "committed", "candidate",
                     _points([64], [False, True], (1024, 2048, 4096))),
              Figure("at d80", "query-slots-9e392d4", "committed", "candidate", _points([80], [False], (1024, 2048, 4096))))),
    Constant(f"{FWD}.FROM_KEYS", "64: full 0, causal 2048; 80 and 128: 0",
             "Where the persistent Gluon forward runs instead of Triton's; d64 causal at 1024 keys stays on "
             "Triton's (one round of two lost).",
             (Figure("forward time, Triton's / Gluon's", "from-keys-f5af9f9", "default", "gluon-forward-everywhere",
                     _points([64, 80], [False, True], (1024, 2048)), "fwd_ms"),)),
    Constant(f"{FWD}._consumer HALF_DIAGONAL", "head_dim 128, causal",
             "The first consumer's rows end in the first half of the diagonal 128-key tile: its last Q K^T "
             "and P V run at half width; mixed at d64, so d64 keeps whole tiles.",
             (Figure("forward time, whole / half", "half-diagonal-8f8d9be", "committed", "candidate",
                     _points([128], [True], K)),
              Figure("at d64", "half-diagonal-8f8d9be", "committed", "candidate", _points([64], [True], K)))),
    Constant(f"{FWD}._consumer sums store", "head_dim 128",
             "A shared-memory store of the row sums keeps ptxas from hoisting the P V wait above the softmax, "
             "so the softmax runs under P V.",
             (Figure("forward time, without / with", "softmax-order-849d5ff", "committed", "candidate",
                     _points([128], [False, True], K)),)),
    Constant(f"{BWD}.PERSISTENT_STAGES", "3 (per-item kernel: STAGES = 2)",
             "A third Q_i/dO_i slot in the persistent d64 backward (226 of 227 KB).",
             (Figure("backward time, two slots / three", "bwd-stages-8445d8e", "committed", "candidate",
                     _points([64], [False, True], K)),)),
    Constant(f"{BWD}.DQ_COLUMNS", "64",
             "At head_dim 128 both warp groups make 64 of dQ_i's columns each tile; one owner of a 64 x 128 "
             "fp32 dQ_i spilled beside dK and dV.",
             (Figure("backward time, one owner / split columns", "dq-columns-b1ecd71", "committed", "candidate",
                     _points([128], [False, True], (4096, 16384))),)),
    Constant(f"{BWD}.PERSISTENT_FROM_KEYS", "64: 1024",
             "The non-causal d64 backward runs one program per SM from 1024 keys, K/V double-buffered.",
             (Figure("backward time, per-item programs / persistent", "bwd-persistent-63460bd", "candidate",
                     "committed", _points([64], [False], (1024, 2048, 4096))),)),
    Constant(f"{BWD}.PERSISTENT_CAUSAL_FROM_KEYS", "64: 1024",
             "The causal d64 backward is persistent with items from an atomic counter (a fixed turn lost).",
             (Figure("backward time, per-item programs / persistent", "bwd-persistent-causal-1k-57db6e4", "committed",
                     "candidate", _points([64], [True], (1024, 2048, 4096))),
              Figure("longer", "bwd-persistent-causal-57db6e4", "committed", "candidate", _points([64], [True], (8192, 16384))))),
    Constant(f"{BWD}.CONVERT_IN_KERNEL", "True",
             "The persistent d64 backward converts dQ's fp32 sums itself after its last items instead of a "
             "kernel after it.",
             (Figure("backward time, conversion kernel / in the backward", "convert-d3cd296", "committed",
                     "candidate", _points([64], [False, True], K)),)),
    Constant(f"{BWD}.D64_FROM_KEYS", "1024",
             "The Gluon backward at d64 from 1024 keys (the split Triton backward below 2048 before).",
             (Figure("backward time, default then / Gluon", "d64-from-keys-338e4be", "default",
                     "gluon-d64-backward-1k", _points([64], [False, True], (1024,)), "bwd_ms"),)),
    Constant(f"{BWD}.D128_FROM_KEYS", "1024",
             "The Gluon backward at d128 from 1024 keys (Triton's split backward below 4096 before).",
             (Figure("backward time, default then / Gluon", "d128-from-keys-f919e46", "default",
                     "gluon-d128-backward-1k", _points([128], [False, True], (1024, 2048)), "bwd_ms"),)),
    Constant(f"{BWD}.D80_FROM_KEYS", "1024",
             "The Gluon backward at d80 (64 + 16 columns) from 1024 keys.",
             (Figure("backward time, Triton's / Gluon's", "d80-backward-4c27cc7", "default-triton-backward", "default",
                     _points([80], [False, True], (1024, 4096, 16384)), "bwd_ms"),)),
    Constant(f"{BWD}._consume_item K, V in registers", "head_dim 64",
             "K and V as the register operands of S^T and dP^T, read once per item; d80 spilled and lost.",
             (Figure("backward time, shared-memory operands / registers", "kv-registers-849d5ff", "committed",
                     "candidate", _points([64], [False, True], K)),
              Figure("at d80", "kv-registers-849d5ff", "committed", "candidate", _points([80], [False, True], K)))),
    Constant(f"{BWD}._consume_item K^T in registers", "head_dim 64",
             "dQ_i^T = K^T dS^T with K^T in registers: each tile's wgmma reads dS^T only.",
             (Figure("backward time, without / with", "kt-registers-edd3e3f", "committed", "candidate",
                     _points([64], [False, True], K)),)),
    Constant(f"{BWD}._consume_item masks", "P^T masked only where a key can be hidden",
             "Most tiles need no mask.",
             (Figure("backward time, every tile masked / where needed", "bwd-masks-b1ecd71", "committed", "candidate",
                     _points([64], [True], K)),)),
    Constant(f"{TRI}.ATOMIC_DQ_BY_TMA", "True",
             "The Triton atomic backward adds dQ's shares by TMA bulk reductions on Hopper (one column "
             "block, not while torch.compile traces).",
             (Figure("backward time, per-thread atomics / TMA", "dq-by-tma-cd88912", "atomic", "atomic-tma",
                     _points([64, 128], [False, True], (4096, 16384)), "bwd_ms"),)),
    Constant(f"{TRI}.ATOMIC_FROM_KEYS", "4096",
             "Without a Gluon backward, the default is atomic for causal attention from 4096 keys, split "
             "otherwise.",
             (Figure("fwd+bwd time, split / atomic", "atomic-from-keys-1ce55aa", "main", "atomic",
                     _points([64, 80, 128], [True], (4096, 16384)), "fwd_bwd_ms"),
              Figure("full", "atomic-from-keys-1ce55aa", "main", "atomic", _points([64, 128], [False], (4096, 16384)),
                     "fwd_bwd_ms"))),
    Constant(f"{TRI}.SPLIT_HEAD_DIM", "True",
             "A head_dim that is two powers of two (80 = 64 + 16) runs as two column blocks instead of "
             "padded to 128.",
             (Figure("fwd+bwd time, padded / two blocks", "split-head-dim-3f878a7", "padded-head-dim", "main",
                     _points([80], [False, True], (1024, 4096, 16384)), "fwd_bwd_ms"),)),
    Constant(f"{TRI}.TILES", "per kernel and head_dim class, 3-4 candidates",
             "The autotuner's picks on an H100 and their runners-up; the tuner chooses per shape at run time.",
             no_figure="chosen per shape by the autotuner"),
    Constant(f"{TRI}.FWD_WARP_SPECIALIZE", "False",
             "Triton 3.6 compiles the 8-warp forward tiles to the same SASS with it; 4-warp tiles fail.",
             no_figure="the same machine code (a compile check, not a timing)"),
    Constant("split_keys.MERGED_ELEMENTS", "8192",
             "The merge loads at most this many run x row x column values at once: 64 fp32 registers a "
             "thread of its four warps.", no_figure="a register budget"),
]


def _env(constant: Constant) -> tuple[str, str]:
    rows = [r for fig in constant.figures for r in F.of_set(PAGE, fig.set_name)]
    devices = sorted({r["env"]["device"].replace("NVIDIA ", "") for r in rows})
    dates = sorted({r["env"]["date"][:10] for r in rows})
    return ", ".join(devices), ", ".join(dates)


def tuning_table() -> str:
    body = []
    for c in CONSTANTS:
        if c.figures:
            device, date = _env(c)
            figure = "; ".join(fig.text() for fig in c.figures)
            sets = ", ".join(f"`{s}`" for s in dict.fromkeys(fig.set_name for fig in c.figures))
        else:
            device = date = "-"
            figure, sets = f"none: {c.no_figure}", "-"
        body.append([f"`{c.name}`", c.value, c.why, figure, device, date, sets])
    lines = ["| constant | value | why | figure | GPU | date | set |", "|---|---|---|---|---|---|---|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])

