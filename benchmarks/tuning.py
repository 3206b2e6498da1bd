"""docs/attention-tuning.md's table: every tuning choice of lmperf.attention (the fields of
sm90.tuning.Tuning, its structural constants, the dispatch and tile rules), with the A/B rows
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
        by_point = F.ratios(
            [r for r in rows if r.get("kind", "time") == "time"],
            self.theirs,
            self.ours,
            self.metric,
            name_key,
            lambda r: (r["head_dim"], r["causal"], r["seq"]),
        )
        medians, low = F.medians_and_low(by_point, self.points)
        rounds = {len(by_point[p]) for p in self.points}
        groups: dict = {}
        for point, middle in zip(self.points, medians):
            groups.setdefault(point[:2], []).append((point[2], middle))
        parts = [
            f"d{d} {'causal' if c else 'full'} {' / '.join(F.keys_label(k) for k, _ in g)}: "
            f"{' / '.join(f'{m:.3f}' for _, m in g)}"
            for (d, c), g in groups.items()
        ]
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
T = "Tuning"  # a field of lmperf.attention.sm90.tuning.Tuning
SM90 = "sm90.tuning"  # the structural constants beside it

CONSTANTS = [
    # ------------------------------------------------------------------ the Gluon forward
    Constant(
        f"{T}.key_tile",
        "128",
        "Keys per K/V tile: S, P and O of a consumer fit its registers, and Q K^T from shared memory needs "
        "three quarters of the SM's shared-memory bandwidth at 128 keys where 64 keys need all of it.",
        (
            Figure(
                "forward time, 64-key tiles with three consumers / 128-key tiles with two",
                "tiles-58319fb",
                "gluon-d128-3c",
                "default",
                _points([128], [False, True], K),
                "fwd_ms",
            ),
        ),
    ),
    Constant(
        f"{T}.kv_slots",
        "3",
        "K/V ring slots: two starve the ring; four do not fit beside Q at head_dim 128.",
        no_figure="four slots exceed the shared memory at head_dim 128 (sm90.resources refuses them); "
        "the rows hold no A/B of two",
    ),
    Constant(
        f"{SM90}.CONSUMERS",
        "2",
        "A program's 128 query rows are two consumer warp groups of 64 at 240 registers a thread; three "
        "at 160 registers were slower.",
        (
            Figure(
                "forward time, three consumers / two",
                "consumers-c9f5415",
                "default-3-consumers",
                "default",
                _points([64], [False, True], (4096, 16384)),
                "fwd_ms",
            ),
        ),
    ),
    Constant(
        f"{T}.consumer_registers, {T}.producer_registers",
        "240, 24",
        "setmaxnreg of the consumer warp groups and of the producer (padded to a warp group): two consumers "
        "at 240 and a producer at 24 fill the 64K registers of an SM.",
        no_figure="a register-file limit",
    ),
    Constant(
        f"{T}.o_by_tma",
        "(64, full), (64, causal), (80, full)",
        "O leaves by a TMA store staged in shared memory where that beats register stores; slower at d80 "
        "causal, and d128 has no room (224 of 227 KB).",
        (
            Figure(
                "forward time, register stores / TMA store",
                "o-by-tma-30ec68e",
                "committed",
                "candidate",
                _points([64], [False, True], K) + _points([80], [False], (1024, 2048, 4096)),
            ),
            Figure(
                "not adopted", "o-by-tma-30ec68e", "committed", "candidate", _points([80], [True], (2048, 4096, 16384))
            ),
        ),
    ),
    Constant(
        "sm90.schedule.multiprocessors",
        "the forward's grid: one program per SM at every length",
        "The forward is persistent: one program per SM takes query tiles in turn, loading the next tile's Q "
        "and K/V under the current one's P V and epilogue.",
        (
            Figure(
                "forward time, a program per tile / persistent",
                "persistent-03ffae7",
                "committed",
                "candidate",
                _points([64], [False, True], K) + _points([80, 128], [False], (1024, 4096, 16384)),
            ),
        ),
    ),
    Constant(
        f"{T}.ordered_causal",
        "{64, 128}",
        "Causal forwards take single query tiles in a host-built order (longest first, each to the least-loaded "
        "program) instead of pairs k, n-1-k in a fixed turn; the pairs are faster at d80.",
        (
            Figure(
                "forward time, pairs / ordered",
                "ordered-3d19d48",
                "committed",
                "candidate",
                _points([64], [True], (1024, 2048, 4096, 8192, 16384))
                + _points([128], [True], (1024, 2048, 4096, 8192)),
            ),
            Figure(
                "at d80", "ordered-d80-bc63f30", "committed", "candidate", _points([80], [True], (1024, 2048, 4096))
            ),
        ),
    ),
    Constant(
        f"{T}.l2_share",
        "16 MB",
        "The ordered tiles go in sections of heads whose K and V fit this share of the H100's 50 MB L2, "
        "so the tiles at work at once share the L2.",
        no_figure="not timed apart from Tuning.ordered_causal",
    ),
    Constant(
        f"{T}.tile_cost",
        "1.0 key tile",
        "A query tile's own cost beside its key tiles (first S, last P V, epilogue) in the ordered schedule's balance.",
        no_figure="not timed apart from Tuning.ordered_causal",
    ),
    Constant(
        f"{T}.split_from_keys",
        "{64: 4096}",
        "A non-causal forward's sparse last round runs as runs over its tiles' keys in a second launch, merged "
        "after it (sm90.combine); mixed at d80, and the benchmark shapes leave no sparse last round at d128.",
        (
            Figure(
                "forward time, unsplit / split",
                "split-keys-8e5f646",
                "candidate",
                "committed",
                _points([64], [False], (4096, 8192, 16384)),
            ),
            Figure(
                "at d80", "split-keys-8e5f646", "candidate", "committed", _points([80], [False], (4096, 8192, 16384))
            ),
        ),
    ),
    Constant(
        f"{T}.query_slots",
        "{64: 2} (others 1)",
        "A second Q buffer lets the producer load the next query tile's Q under the current one's last Q K^T; "
        "slower at d80, and d128 has no room.",
        (
            Figure(
                "forward time, one Q buffer / two",
                "query-slots-9e392d4",
                "committed",
                "candidate",
                _points([64], [False, True], (1024, 2048, 4096)),
            ),
            Figure(
                "at d80", "query-slots-9e392d4", "committed", "candidate", _points([80], [False], (1024, 2048, 4096))
            ),
        ),
    ),
    Constant(
        f"{T}.forward_from_keys",
        "{(64, causal): 2048} (others 1)",
        "Where the Gluon forward runs instead of the portable one: everywhere but d64 causal below 2048 keys "
        "(at 1024 causal keys one round of two lost, at d64 and at d80).",
        (
            Figure(
                "forward time, Triton's / Gluon's",
                "from-keys-f5af9f9",
                "default",
                "gluon-forward-everywhere",
                _points([64, 80], [False, True], (1024, 2048)),
                "fwd_ms",
            ),
        ),
    ),
    Constant(
        f"{T}.half_diagonal",
        "{128}",
        "Causal: the first consumer's rows end in the first half of the diagonal 128-key tile, so its last "
        "Q K^T and P V run at half width; mixed at d64, so d64 keeps whole tiles.",
        (
            Figure(
                "forward time, whole / half",
                "half-diagonal-8f8d9be",
                "committed",
                "candidate",
                _points([128], [True], K),
            ),
            Figure("at d64", "half-diagonal-8f8d9be", "committed", "candidate", _points([64], [True], K)),
        ),
    ),
    Constant(
        f"{T}.sums_to_shared",
        "{128}",
        "A shared-memory store of the row sums every key tile keeps ptxas from moving the P V wait above the "
        "softmax, so the softmax runs under P V.",
        (
            Figure(
                "forward time, without / with",
                "softmax-order-849d5ff",
                "committed",
                "candidate",
                _points([128], [False, True], K),
            ),
        ),
    ),
    Constant(
        f"{SM90}.COMBINE_ELEMENTS",
        "8192",
        "The split forward's merge loads at most this many run x row x column values at once: 64 fp32 "
        "registers a thread of its four warps.",
        no_figure="a register budget",
    ),
    # ------------------------------------------------------------------ the Gluon backward
    Constant(
        f"{T}.backward_from_keys",
        "1024",
        "The Gluon backward runs from 1024 keys (the shortest benchmark length) at every head_dim it takes: "
        "ahead of both portable backwards there.",
        (
            Figure(
                "backward time, Triton's split / Gluon's",
                "d64-from-keys-338e4be",
                "default",
                "gluon-d64-backward-1k",
                _points([64], [False, True], (1024,)),
                "bwd_ms",
            ),
            Figure(
                "Triton's split / Gluon's",
                "d128-from-keys-f919e46",
                "default",
                "gluon-d128-backward-1k",
                _points([128], [False, True], (1024, 2048)),
                "bwd_ms",
            ),
            Figure(
                "Triton's default / Gluon's",
                "d80-backward-4c27cc7",
                "default-triton-backward",
                "default",
                _points([80], [False, True], (1024, 4096, 16384)),
                "bwd_ms",
            ),
        ),
    ),
    Constant(
        f"{T}.persistent_backward_from_keys",
        "{64: 1024}",
        "The d64 backward runs one program per SM from 1024 keys, K/V double-buffered, items from an atomic "
        "counter, and dQ converted in the kernel after the last items; d80 and d128 have no shared memory "
        "left for the second K/V buffer.",
        (
            Figure(
                "backward time, per-item programs / persistent",
                "bwd-persistent-63460bd",
                "candidate",
                "committed",
                _points([64], [False], (1024, 2048, 4096)),
            ),
            Figure(
                "causal",
                "bwd-persistent-causal-1k-57db6e4",
                "committed",
                "candidate",
                _points([64], [True], (1024, 2048, 4096)),
            ),
            Figure(
                "longer",
                "bwd-persistent-causal-57db6e4",
                "committed",
                "candidate",
                _points([64], [True], (8192, 16384)),
            ),
            Figure(
                "dQ converted by a kernel after it / in it",
                "convert-d3cd296",
                "committed",
                "candidate",
                _points([64], [False, True], K),
            ),
        ),
    ),
    Constant(
        f"{T}.backward_slots",
        "2",
        "Q/dO ring slots of a backward program per item: a third gains nothing there.",
        no_figure="the rows hold no A/B of it (the third slot's A/B is the persistent kernel's)",
    ),
    Constant(
        f"{T}.persistent_backward_slots",
        "3",
        "A third Q_i/dO_i slot in the persistent d64 backward (226 of 227 KB).",
        (
            Figure(
                "backward time, two slots / three",
                "bwd-stages-8445d8e",
                "committed",
                "candidate",
                _points([64], [False, True], K),
            ),
        ),
    ),
    Constant(
        f"{T}.kv_in_registers",
        "{64}",
        "K and V as the register operands of S^T and dP^T, read from shared memory once per item, and K^T "
        "for dQ_i^T = K^T dS^T, so each tile's dQ wgmma reads dS^T only; d80 spilled and lost.",
        (
            Figure(
                "backward time, shared-memory operands / registers",
                "kv-registers-849d5ff",
                "committed",
                "candidate",
                _points([64], [False, True], K),
            ),
            Figure("at d80", "kv-registers-849d5ff", "committed", "candidate", _points([80], [False, True], K)),
            Figure(
                "K^T in registers too, without / with",
                "kt-registers-edd3e3f",
                "committed",
                "candidate",
                _points([64], [False, True], K),
            ),
        ),
    ),
    Constant(
        f"{SM90}.DQ_COLUMNS",
        "64",
        "At head_dim 128 both warp groups make 64 of dQ_i's columns each tile; one owner of a 64 x 128 "
        "fp32 dQ_i spilled beside dK and dV.",
        (
            Figure(
                "backward time, one owner / split columns",
                "dq-columns-b1ecd71",
                "committed",
                "candidate",
                _points([128], [False, True], (4096, 16384)),
            ),
        ),
    ),
    Constant(
        "sm90.backward._hide_keys",
        "P^T masked only where a key can be hidden",
        "Most tiles need no mask.",
        (
            Figure(
                "backward time, every tile masked / where needed",
                "bwd-masks-b1ecd71",
                "committed",
                "candidate",
                _points([64], [True], K),
            ),
        ),
    ),
    Constant(
        f"{SM90}.HEAD_DIMS, {SM90}.ROWS, {SM90}.BACKWARD_KEYS",
        "(64, 80, 128); 64; 64",
        "The head dims whose tiles are fitted to the registers and shared memory; a consumer's query rows "
        "(one wgmma's M); a backward consumer's keys (two a program: 128 keys).",
        no_figure="the shapes the kernels are written around",
    ),
    # ------------------------------------------------------------------ the portable Triton kernels
    Constant(
        "dispatch.ATOMIC_FROM_KEYS",
        "4096",
        "Where no Gluon backward runs, the default is atomic for causal attention from 4096 keys (five "
        "matmuls against split's seven), split otherwise.",
        (
            Figure(
                "fwd+bwd time, split / atomic",
                "atomic-from-keys-1ce55aa",
                "main",
                "atomic",
                _points([64, 80, 128], [True], (4096, 16384)),
                "fwd_bwd_ms",
            ),
            Figure(
                "full",
                "atomic-from-keys-1ce55aa",
                "main",
                "atomic",
                _points([64, 128], [False], (4096, 16384)),
                "fwd_bwd_ms",
            ),
        ),
    ),
    Constant(
        "dispatch.dq_by_tma",
        "Hopper or newer, one column block, head_dim a multiple of 4, compiled, not while torch.compile traces",
        "The portable atomic backward adds dQ's shares by TMA bulk reductions instead of per-thread atomics, "
        "which move each share through shared memory with barriers every query tile.",
        (
            Figure(
                "backward time, per-thread atomics / TMA",
                "dq-by-tma-cd88912",
                "atomic",
                "atomic-tma",
                _points([64, 128], [False, True], (4096, 16384)),
                "bwd_ms",
            ),
        ),
    ),
    Constant(
        "triton_kernels.tiles.column_blocks",
        "split=True: 80 = 64 + 16",
        "A head_dim that is two powers of two runs as two column blocks instead of padded to the next power of two.",
        (
            Figure(
                "fwd+bwd time, padded / two blocks",
                "split-head-dim-3f878a7",
                "padded-head-dim",
                "main",
                _points([80], [False, True], (1024, 4096, 16384)),
                "fwd_bwd_ms",
            ),
        ),
    ),
    Constant(
        "triton_kernels.tiles.TILES",
        "per kernel and head_dim class, 3-4 candidates",
        "The autotuner's picks on an H100 and their runners-up; the tuner chooses per shape at run time.",
        no_figure="chosen per shape by the autotuner",
    ),
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
