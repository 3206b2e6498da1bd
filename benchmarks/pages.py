"""The tables of the published pages, rendered from the rows files (benchmarks/rows/).

Each page holds its tables between `<!-- table NAME -->` and `<!-- /table -->`;
`python benchmarks/check_figures.py --write` writes them from TABLES, and the check fails where
a page's table differs from its rendering. Ratios follow figures.py's rule.
"""

from __future__ import annotations

import re
import statistics
from typing import Callable

import figures as F
import leaderboard as L
from tuning import tuning_table

from lmperf.pmc.accuracy import PARAMS_TOLERANCE, STRUCTURE, interval_holds
from lmperf.pmc.limits import LIMIT_CLAIMS

MODES = ["forward", "forward-backward", "train-step"]
PRESETS = ["small", "medium", "large", "xl", "2.7B"]


def markdown(headers: list[str], body: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in body]
    return "\n".join(lines)


def number(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def mask(causal: bool) -> str:
    return "causal" if causal else "full"


# ------------------------------------------------------------------------------------ attention


def _attention_point(row: dict) -> tuple:
    return row["head_dim"], row["causal"], row["seq"]


CUDNN_METRICS = ("fwd_bwd_ms", "fwd_ms", "bwd_ms")
CUDNN_HEADERS = ["fwd+bwd: cuDNN / ours", "forward: cuDNN / ours", "backward: cuDNN / ours"]


def cudnn_ratios(set_name: str) -> dict[str, dict]:
    """{metric: {point: [cuDNN's time / ours, one per round]}} of a sweep of triton and sdpa-cudnn."""
    rows = F.of_set("attention-h100", set_name)
    return {m: F.ratios(rows, "sdpa-cudnn", "triton", m, "impl", _attention_point) for m in CUDNN_METRICS}


def round_times(set_name: str, impl: str, metric: str = "fwd_bwd_ms") -> dict:
    """{point: [`impl`'s time, one per round]} of a sweep."""
    by_round = F.per_round(F.of_set("attention-h100", set_name), "impl", metric, _attention_point)
    return {point: [names[impl] for names in rounds.values()] for point, rounds in by_round.items()}


def attention_cudnn() -> str:
    by_metric = cudnn_ratios("sweep-1f651d0")
    ours = round_times("sweep-1f651d0", "triton")
    body = [
        [
            point[0],
            mask(point[1]),
            F.keys_label(point[2]),
            *(F.ratio_cell(by_metric[m][point]) for m in CUDNN_METRICS),
            f"{statistics.median(ours[point]):.3f}",
            len(by_metric["fwd_bwd_ms"][point]),
        ]
        for point in sorted(by_metric["fwd_bwd_ms"])
    ]
    return markdown(["head_dim", "mask", "keys", *CUDNN_HEADERS, "ours fwd+bwd ms", "rounds"], body)


# ---- attention after the restructure: sweep-7653377 beside sweep-1f651d0 at the same points

AFTER, BEFORE = "sweep-7653377", "sweep-1f651d0"


def attention_after_restructure() -> str:
    after, before = cudnn_ratios(AFTER), cudnn_ratios(BEFORE)
    ours_after, ours_before = round_times(AFTER, "triton"), round_times(BEFORE, "triton")
    body = [
        [
            point[0],
            mask(point[1]),
            F.keys_label(point[2]),
            F.ratio_cell(after["fwd_bwd_ms"][point]),
            F.ratio_cell(before["fwd_bwd_ms"][point]),
            F.span(before["fwd_bwd_ms"][point]),
            *(
                cell
                for m in CUDNN_METRICS[1:]
                for cell in (F.ratio_cell(after[m][point]), F.ratio_cell(before[m][point]))
            ),
            f"{statistics.median(ours_after[point]):.3f}",
            f"{statistics.median(ours_before[point]):.3f}",
            len(after["fwd_bwd_ms"][point]),
        ]
        for point in sorted(after["fwd_bwd_ms"])
    ]
    return markdown(
        [
            "head_dim",
            "mask",
            "keys",
            "fwd+bwd: cuDNN / ours",
            "at 1f651d0",
            "fwd+bwd: 1f651d0's rounds",
            "forward: cuDNN / ours",
            "at 1f651d0",
            "backward: cuDNN / ours",
            "at 1f651d0",
            "ours fwd+bwd ms",
            "at 1f651d0",
            "rounds",
        ],
        body,
    )


# ---- end of attention after the restructure


# ---- attention before and after, A/B: the two trees in alternating processes on one H100

AB, BEFORE_TREE, AFTER_TREE = "ab-79509b2-7be7ac0", "before (79509b2)", "after (7be7ac0)"


def attention_before_after() -> str:
    """Ours before / ours after per round (same process pair, same round index), fwd+bwd."""
    times: dict = {}
    for row in F.of_set("attention-h100", AB):
        if row["impl"] == "triton" and row.get("status", "ok") == "ok":
            rounds = times.setdefault(_attention_point(row), {})
            rounds.setdefault((row["pair"], row["round"]), {})[row["tree"]] = row["fwd_bwd_ms"]
    body = []
    for point in sorted(times):
        both = [t for t in times[point].values() if len(t) == 2]
        before, after = [t[BEFORE_TREE] for t in both], [t[AFTER_TREE] for t in both]
        body.append(
            [
                point[0],
                mask(point[1]),
                F.keys_label(point[2]),
                F.ratio_cell([b / a for b, a in zip(before, after)]),
                f"{statistics.median(before):.3f}",
                F.span(before),
                f"{statistics.median(after):.3f}",
                F.span(after),
                len(both),
            ]
        )
    headers = [
        "head_dim",
        "mask",
        "keys",
        "fwd+bwd: before / after",
        "before ms",
        "before's rounds",
        "after ms",
        "after's rounds",
        "rounds",
    ]
    return markdown(headers, body)


# ---- end of attention before and after


def attention_backends() -> str:
    rows = F.of_set("attention-h100", "backends-7661679")
    ratio = {
        (theirs, m): F.ratios(rows, theirs, "triton", m, "impl", _attention_point)
        for theirs in ("sdpa-cudnn", "sdpa-flash")
        for m in ("fwd_bwd_ms", "fwd_ms")
    }
    body = [
        [p[0], mask(p[1]), F.keys_label(p[2]), *(F.ratio_cell(ratio[key][p]) for key in ratio)]
        for p in sorted(ratio["sdpa-cudnn", "fwd_bwd_ms"])
    ]
    return markdown(
        [
            "head_dim",
            "mask",
            "keys",
            "fwd+bwd: cuDNN / ours",
            "forward: cuDNN / ours",
            "fwd+bwd: FA2 / ours",
            "forward: FA2 / ours",
        ],
        body,
    )


def step_ratios(set_name: str) -> list[float]:
    """sdpa's median step time / triton's, one per round, of a 2.7B step set."""
    rows = F.of_set("attention-h100", set_name)
    (ratio,) = F.ratios(rows, "sdpa", "triton", "median_ms", "attention", lambda r: r["seq_len"]).values()
    return ratio


def attention_step() -> str:
    body = []
    for set_name in ("step-1024-1f651d0", "step-1024-7653377", "step-4096-8b7d99a"):
        ratio = step_ratios(set_name)
        first = F.of_set("attention-h100", set_name)[0]
        body.append(
            [
                first["seq_len"],
                first["batch"],
                first["env"]["commit"][:7],
                first["env"]["date"][:10],
                F.ratio_cell(ratio),
                len(ratio),
            ]
        )
    return markdown(["context", "batch", "commit", "date", "step time: sdpa / triton", "rounds"], body)


# ------------------------------------------------------------------------------------- bench


def _bench_sort(row: dict) -> tuple:
    return PRESETS.index(row["preset"]), row["seq_len"], row["precision"], row["compile"], MODES.index(row["mode"])


def bench_sweep() -> str:
    body = []
    for r in sorted(F.of_set("bench-h100", "sweep"), key=_bench_sort):
        ok = r["status"] == "ok"
        body.append(
            [
                r["preset"],
                r["seq_len"],
                r["mode"],
                r["precision"],
                r["compile"],
                r["status"],
                *(
                    number(r.get(k) if ok else None, ".2f")
                    for k in ("median_ms", "min_ms", "max_ms", "mean_ms", "std_ms")
                ),
                number(r.get("cold_ms") if ok else None, ".1f"),
                number(r.get("tflops") if ok else None, ".1f"),
                number(100 * r["mfu"] if ok else None, ".1f"),
                number(r.get("peak_memory_gb") if ok else None, ".2f"),
            ]
        )
    return markdown(
        [
            "preset",
            "ctx",
            "mode",
            "prec",
            "compile",
            "status",
            "median ms",
            "min ms",
            "max ms",
            "mean ms",
            "std ms",
            "cold ms",
            "TFLOP/s (mean)",
            "MFU % (mean)",
            "peak GB",
        ],
        body,
    )


def bench_warmup() -> str:
    rows = [r for w in (0, 1, 2, 5) for r in F.of_set("bench-h100", f"warmup-{w}")]
    rows.sort(key=lambda r: (r["precision"], MODES.index(r["mode"]), r["warmup"]))
    body = [
        [
            r["mode"],
            r["precision"],
            r["warmup"],
            f"{r['cold_ms']:.1f}",
            f"{r['median_ms']:.2f}",
            f"{r['mean_ms']:.2f}",
            f"{r['std_ms']:.2f}",
            f"{r['max_ms']:.2f}",
            ", ".join(f"{t:.0f}" for t in r["warmup_ms"]) or "-",
        ]
        for r in rows
    ]
    return markdown(
        ["mode", "prec", "warm-up steps", "cold ms", "median ms", "mean ms", "std ms", "max ms", "warm-up steps ms"],
        body,
    )


def bench_agreement() -> str:
    body = [
        [
            r["preset"],
            r["seq_len"],
            r["mode"],
            r["precision"],
            f"{r['lmperf_median_ms']:.2f}",
            f"{r['do_bench_median_ms']:.2f}",
            f"{r['torch_benchmark_median_ms']:.2f}",
            f"{r['do_bench_median_ms'] / r['lmperf_median_ms']:.3f}",
            f"{r['torch_benchmark_median_ms'] / r['lmperf_median_ms']:.3f}",
        ]
        for r in F.of_set("bench-h100", "agreement")
    ]
    return markdown(
        [
            "preset",
            "ctx",
            "mode",
            "prec",
            "lmperf median ms",
            "do_bench median ms",
            "torch.utils.benchmark median ms",
            "do_bench / lmperf",
            "torch.utils.benchmark / lmperf",
        ],
        body,
    )


def bench_hf() -> str:
    body = [
        [
            r["preset"],
            r["seq_len"],
            r["attention"],
            f"{r['median_ms']:.2f}",
            f"{r['mean_ms']:.2f}",
            f"{r['std_ms']:.2f}",
            f"{r['tflops']:.1f}",
            f"{100 * r['mfu']:.1f}",
            f"{r['peak_memory_gb']:.2f}",
        ]
        for r in F.of_set("bench-h100", "hf-be59b61")
    ]
    return markdown(
        ["config", "ctx", "attention", "median ms", "mean ms", "std ms", "TFLOP/s (mean)", "MFU % (mean)", "peak GB"],
        body,
    )


# ---- bench: the user's own module (--module), sets user-module-7653377 and user-module-timer-7653377

USER_MODULE, USER_TIMER = "user-module-7653377", "user-module-timer-7653377"


def user_module_rows() -> list[dict]:
    """The bench rows of the user's modules, in the order the script ran them."""
    return F.of_set("bench-h100", USER_MODULE)


def user_module_train_step(preset: str, compile_: str) -> dict:
    (row,) = F.of_set("bench-h100", USER_MODULE, preset=preset, mode="train-step", compile=compile_)
    return row


def user_module_name(row: dict) -> str:
    return f"`{row['module']['factory']}`"


def bench_user_module() -> str:
    body = [
        [
            user_module_name(r),
            f"{r['params'] / 1e9:.3f}B",
            r["mode"],
            r["compile"],
            f"{r['median_ms']:.2f}",
            f"{r['mean_ms']:.2f}",
            f"{r['std_ms']:.2f}",
            f"{r['tokens_per_s']:,.0f}",
            f"{r['tflops']:.1f}",
            f"{100 * r['mfu']:.1f}",
            f"{r['peak_memory_gb']:.2f}",
        ]
        for r in user_module_rows()
    ]
    return markdown(
        [
            "module",
            "params",
            "mode",
            "compile",
            "median ms",
            "mean ms",
            "std ms",
            "tok/s (mean)",
            "TFLOP/s (mean)",
            "MFU % (mean)",
            "peak GB",
        ],
        body,
    )


def bench_user_module_flops() -> str:
    body = []
    for preset in dict.fromkeys(r["preset"] for r in user_module_rows()):
        forward, step = (
            F.of_set("bench-h100", USER_MODULE, preset=preset, mode=mode, compile="eager")[0]
            for mode in ("forward", "train-step")
        )
        body.append(
            [
                user_module_name(step),
                f"{step['module']['matmul_params'] / 1e9:.3f}B",
                step["flop_count"],
                step["causal_attention"],
                f"{forward['matmul_flops'] / 1e12:.2f}",
                f"{step['matmul_flops'] / 1e12:.2f}",
                f"{step['flops_over_transformer']:.4f}",
            ]
        )
    return markdown(
        [
            "module",
            "matmul params",
            "FLOPs counted by",
            "attention counted as",
            "forward TFLOP per step",
            "train step TFLOP per step",
            "counted / (6N + 12·L·d·T)",
        ],
        body,
    )


def user_module_timers() -> tuple[dict, dict]:
    """(lmperf's eager train-step row of the scratch model, the independent loop's row)."""
    (timer,) = F.of_set("bench-h100", USER_TIMER)
    return user_module_train_step(timer["preset"], timer["compile"]), timer


def bench_user_module_timer() -> str:
    lmperf_row, timer = user_module_timers()
    body = [
        [
            name,
            r["steps"],
            r["warmup"],
            f"{r['mean_ms']:.2f}",
            f"{r['median_ms']:.2f}",
            f"{r['median_ms'] / lmperf_row['median_ms']:.3f}",
        ]
        for name, r in (("lmperf bench", lmperf_row), (timer["what"], timer))
    ]
    return markdown(["timer", "timed steps", "warm-up steps", "mean ms", "median ms", "median / lmperf's"], body)


# ---- end of bench: the user's own module


# ----------------------------------------------------------------------------------- profile

PROFILE_RUNS = ["small-bf16", "small-fp32", "2.7B-bf16", "2.7B-fp32"]


def _profile(run: str, mode: str) -> dict:
    (row,) = F.of_set("profile-h100", f"profile-{run}", mode=mode)
    return row


def profile_matmul_share() -> str:
    body = []
    for run in PROFILE_RUNS:
        forward, step = _profile(run, "forward"), _profile(run, "train-step")
        body.append(
            [
                forward["preset"],
                forward["precision"],
                f"{forward['step_ms']:,.2f}",
                f"{100 * forward['matmul_share']:.1f}",
                f"{step['step_ms']:,.2f}",
                f"{100 * step['matmul_share']:.1f}",
            ]
        )
    return markdown(["preset", "prec", "forward ms", "forward matmul %", "train step ms", "train step matmul %"], body)


def profile_top_kernels() -> str:
    body = []
    for run in PROFILE_RUNS:
        for mode in ("forward", "train-step"):
            row = _profile(run, mode)
            top, second = sorted(row["kernels"], key=lambda k: -k["ms_per_step"])[:2]
            body.append(
                [
                    f"{row['preset']} {row['precision']} {mode}",
                    *(
                        f"`{k['kernel']}` ({k['phase']}): {k['calls_per_step']:.0f} calls, {k['ms_per_step']:.2f} ms, "
                        f"{100 * k['share']:.1f}%"
                        for k in (top, second)
                    ),
                ]
            )
    return markdown(["run", "top kernel per step", "second"], body)


def profile_regions() -> str:
    row = _profile("2.7B-bf16", "forward")
    body = [
        [
            r["region"],
            f"{r['forward_ms']:.2f}",
            f"{100 * r['time_share']:.1f}",
            number(100 * r["flop_share"] if "flop_share" in r else None, ".2f"),
            number(r.get("tflops"), ".1f"),
            number(r.get("time_over_flop_share"), ",.1f"),
        ]
        for r in row["regions"]
        if r["forward_ms"] > 0
    ]
    return markdown(["region", "ms/step", "time %", "FLOP %", "TFLOP/s", "time share / FLOP share"], body)


def profile_memory() -> str:
    peaks = {
        (r["seq_len"], r["precision"], r["mode"]): r["measured_peak_gb"]
        for r in F.of_set("profile-h100", "memory-2.7B", kind="peak")
    }
    body = [
        [seq, prec, f"{peaks[seq, prec, 'forward']:.2f}", f"{peaks[seq, prec, 'train-step']:.2f}"]
        for seq in sorted({k[0] for k in peaks})
        for prec in ("fp32", "bf16")
    ]
    return markdown(["ctx", "prec", "forward peak GB", "train step peak GB"], body)


def profile_allocations() -> str:
    (row,) = F.of_set("profile-h100", "memory-2.7B", kind="snapshot")
    body = [
        [f"{a['size_mb']:.1f}", a["count"], a["phase"], "-" if a["line"] == "-" else f"`{a['line']}`"]
        for a in row["largest"]
    ]
    return markdown(["MB", "count", "phase", "Python line"], body)


def profile_memory_hf() -> str:
    body = []
    for set_name, label in (
        ("memory-llama-1b-03b45b4", "llama-1b-gqa, sdpa"),
        ("memory-llama-1b-fp32-da0d6a1", "llama-1b-gqa, sdpa"),
        ("memory-medium-gqa-03b45b4", "medium + 4 K/V heads, tied, 32k vocab, naive"),
    ):
        peaks: dict = {}
        for r in F.of_set("profile-h100", set_name, kind="peak"):
            peaks[r["seq_len"], r["precision"], r["env"]["commit"], r["mode"]] = r
        for seq, prec, commit in sorted({k[:3] for k in peaks}):
            cells = []
            for mode in ("forward", "train-step"):
                r = peaks.get((seq, prec, commit, mode))
                cells.append(
                    "-" if r is None else "out of memory" if r["status"] == "oom" else f"{r['measured_peak_gb']:.2f}"
                )
            body.append([label, seq, prec, commit, *cells])
    return markdown(["model", "ctx", "prec", "commit", "forward peak GB", "train step peak GB"], body)


# --------------------------------------------------------------------------- leaderboard, loss


def leaderboard_headline() -> str:
    r = L.headline()
    body = [
        [
            f"{r['leaderboard_ms']:,.1f}",
            r["leaderboard_calls"],
            f"{r['median_ms']:,.1f}",
            f"{r['mean_ms']:,.1f}",
            f"{r['min_ms']:,.1f}-{r['max_ms']:,.1f}",
            r["steps"],
            f"{r['peak_memory_gb']:.1f}",
            f"{r['persistent_memory_gb']:.1f}",
            f"{100 * L.mfu(r, r['leaderboard_ms']):.1f}",
            f"{r['cold_ms'] / 1e3:.1f}",
        ]
    ]
    headers = [
        "leaderboard_ms",
        "do_bench calls",
        "median ms",
        "mean ms",
        "min-max ms",
        "timed steps",
        "peak GB per rank",
        "between steps GB",
        "MFU % (causal PaLM count, leaderboard_ms)",
        "cold first step s",
    ]
    return markdown(headers, body)


def _leaderboard_peer(name: str, checkpoint: str, r: dict) -> list:
    """A peers-table row; a row read from a run's log has no median, step count or cold step."""
    median = r.get("median_ms")
    return [
        name,
        checkpoint,
        number(median, ",.1f"),
        f"{r['mean_ms']:,.1f}",
        number(r.get("leaderboard_ms"), ",.1f"),
        r.get("steps", "-"),
        f"{r['peak_memory_gb']:.1f}",
        "-" if median is None else f"{100 * L.mfu(r, median):.1f}",
        number(r["cold_ms"] / 1e3 if "cold_ms" in r else None, ".1f"),
    ]


def leaderboard_peers() -> str:
    body = [
        [*_leaderboard_peer("torchtitan 0.2.2", "selective:op", L.titan_same_call()), f"`{L.SAME_CALL_TITAN}`"],
        [*_leaderboard_peer("lmperf, triton, lmperf's AdamW", L.OUT12, L.headline()), f"`{L.HEADLINE}`"],
        [
            *_leaderboard_peer("torchtitan 0.2.2", "selective:op", L.titan_same_call(L.EARLIER_TITAN)),
            f"`{L.EARLIER_TITAN}`",
        ],
        [*_leaderboard_peer("lmperf, triton", "selective-mm", L.earlier_headline()), f"`{L.EARLIER_HEADLINE}`"],
        [
            *_leaderboard_peer("torchtitan 0.2.2", "selective:op", L.titan("selective:op", L.LATER_TITAN)),
            f"`{L.LATER_TITAN}`",
        ],
        [*_leaderboard_peer("lmperf, triton", "selective-mm", L.later_call("selective-mm")), f"`{L.LATER_CALL}`"],
    ]
    body += [
        [*_leaderboard_peer("torchtitan 0.2.2", ac, L.titan(ac)), "`torchtitan-83e214f`"]
        for ac in ("selective:op", "full")
    ]
    body += [
        [*_leaderboard_peer(f"lmperf, {r['attention']}", r["checkpoint"], r), "`step-83e214f`"]
        for r in F.of_set(L.PAGE, "step-83e214f", param_dtype="bf16")
    ]
    headers = [
        "step",
        "checkpointing",
        "median ms",
        "mean ms",
        "leaderboard_ms",
        "timed steps",
        "peak GB per rank",
        "MFU % (causal PaLM count, median step)",
        "cold first step s",
        "set",
    ]
    return markdown(headers, body)


def leaderboard_gemms() -> str:
    body = [
        [
            g["op"],
            f"{g['m']:,}",
            f"{g['n']:,}",
            f"{g['k']:,}",
            g["layout"],
            g["count"],
            f"{g['total_ms']:,.1f}",
            f"{g['step_tflops']:,.0f}",
            number(g["alone_tflops"], ",.0f"),
            f"{100 * g['nccl_share']:.0f}",
        ]
        for g in L.gemm_shapes()
    ]
    headers = [
        "op",
        "M",
        "N",
        "K",
        "layout",
        "calls per step",
        "ms in step",
        "TFLOP/s in step",
        "TFLOP/s alone",
        "% of its time beside NCCL",
    ]
    return markdown(headers, body)


def leaderboard_attention() -> str:
    body = [
        [
            a["what"],
            a["launches"],
            f"{a['step_ms']:.2f}",
            f"{a['alone_ms']:.2f}",
            f"{a['alone_ms'] / a['step_ms']:.3f}",
            f"{a['cudnn_ms']:.2f}",
        ]
        for a in L.attention_beside_alone()
    ]
    headers = [
        "lmperf's attention, one layer",
        "launches per step",
        "mean ms in the step",
        "ms alone (median of 3 rounds)",
        "alone / in the step",
        "cuDNN alone, ms",
    ]
    return markdown(headers, body)


def leaderboard_tries() -> str:
    cdt, base = L.step("mm-cdt-06e1beb"), L.earlier_headline()
    mm, out = L.later_call("selective-mm"), L.later_call("selective-mm-out")
    nccl = F.of_set(L.PAGE, "nccl4-3d8b4cd")
    default = next(r for r in nccl if r["nccl"] == "default")
    limited = next(r for r in nccl if r["nccl"] != "default")
    body = [
        [
            "NCCL held to 4 channels (`NCCL_MAX_NCHANNELS=4`, `NCCL_MAX_CTAS=4`)",
            f"{default['mean_ms']:,.1f}",
            f"{limited['mean_ms']:,.1f}",
            f"{default['mean_ms'] / limited['mean_ms']:.3f}",
            "`nccl4-3d8b4cd`",
        ],
        [
            "inductor's coordinate-descent tuning (`TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1`)",
            f"{base['mean_ms']:,.1f}",
            f"{cdt['mean_ms']:,.1f}",
            f"{base['mean_ms'] / cdt['mean_ms']:.3f}",
            f"`{L.EARLIER_HEADLINE}`, `mm-cdt-06e1beb`",
        ],
        [
            "`--checkpoint selective-mm-out`: the output projection's output kept too, nothing recomputed but "
            "elementwise work",
            f"{mm['mean_ms']:,.1f}",
            f"{out['mean_ms']:,.1f}",
            f"{mm['mean_ms'] / out['mean_ms']:.3f}",
            f"`{L.LATER_CALL}`",
        ],
    ]
    headers = ["try", "without: mean ms", "with: mean ms", "without / with", "sets"]
    return markdown(headers, body)


def leaderboard_clocks() -> str:
    body = [
        [
            r["window"],
            r["gpus"],
            r["samples"],
            f"{r['sm_mhz_median']:,.0f}",
            f"{r['sm_mhz_p10']:,.0f}-{r['sm_mhz_p90']:,.0f}",
            f"{r['power_w_median']:.0f}",
            f"{100 * r['power_capped_share']:.0f}",
            r["env"]["commit"],
        ]
        for r in L.clocks()
    ]
    headers = [
        "what ran",
        "GPUs",
        "busy samples",
        "SM clock MHz, median",
        "p10-p90 MHz",
        "power W, median",
        "% of samples at the power cap",
        "commit",
    ]
    return markdown(headers, body)


def leaderboard_layouts() -> str:
    inputs = {
        "contiguous": "q, k, v, dO contiguous (B, H, T, hd)",
        "step": "q, k contiguous; v a view of the fused QKV output; dO transposed",
        "step views": "q, k, v views of the fused QKV output; dO transposed",
    }
    body = [
        [
            name,
            inputs[name],
            f"{v['fwd_median']:.2f} ({v['fwd_min']:.2f})",
            f"{v['bwd_median']:.2f} ({v['bwd_min']:.2f})",
            v["rounds"],
        ]
        for name, v in L.attention_layouts().items()
    ]
    headers = ["layout", "inputs", "forward ms, median (lowest)", "backward ms, median (lowest)", "rounds"]
    return markdown(headers, body)


def leaderboard_titan_settings() -> str:
    r, full = L.titan("selective:op"), L.titan("full")
    body = [
        ["activation checkpointing", f"`{r['activation_checkpoint']}`, `{full['activation_checkpoint']}`"],
        ["training dtype (parameters, gradients, AdamW state)", r["training_dtype"]],
        ["FSDP2 parameters / gradient reduction", f"{r['fsdp_param_dtype']} / {r['fsdp_reduce_dtype']}"],
        ["FSDP2 reshard after forward", r["fsdp_reshard_after_forward"]],
        ["torch.compile", f"{', '.join(r['compile']['components'])} ({r['compile']['backend']})"],
        ["optimizer", f"{r['optimizer']['name']}, {r['optimizer']['implementation']}"],
        ["attention", r["attention"]],
        ["loss", r["loss"]],
        ["allocator", f"`{r['alloc_conf']}`"],
    ]
    return markdown(["torchtitan setting", "value"], body)


def leaderboard_changes() -> str:
    body = [
        [
            what,
            r["checkpoint"],
            f"{r['median_ms']:,.1f}",
            f"{r['mean_ms']:,.1f}",
            number(r.get("leaderboard_ms"), ",.1f"),
            f"{r['peak_memory_gb']:.1f}",
            number(r.get("alloc_retries"), "d"),
            f"`{set_name}`",
            L.run_stamp(r),
        ]
        for (set_name, *_, what), r in zip(L.CHANGES, L.change_rows())
    ]
    headers = [
        "change",
        "checkpointing",
        "median ms",
        "mean ms",
        "leaderboard_ms",
        "peak GB per rank",
        "allocator retries",
        "set",
        "run started (UTC)",
    ]
    return markdown(headers, body)


def leaderboard_adamw() -> str:
    body = [
        [
            a["optimizer"],
            f"{a['median_ms']:.2f} ({a['lowest_ms']:.2f})",
            f"{a['tb_per_s']:.2f}",
            f"{a['over_lmperf']:.2f}",
            a["rounds"],
        ]
        for a in L.adamw_alone()
    ]
    headers = ["AdamW", "ms per step, median (lowest round)", "TB/s moved", "its time / lmperf's", "rounds"]
    return markdown(headers, body)


def leaderboard_kernels() -> str:
    r = L.profiled()
    flops = L.category_flops(r)
    body = [
        [
            category,
            f"{ms:,.1f}",
            f"{100 * ms / r['median_ms']:.1f}",
            number(flops[category] / 1e12 if category in flops else None, ",.1f"),
            number(L.tflops(flops[category], ms) if category in flops else None, ",.1f"),
        ]
        for category, ms in sorted(r["kernel_ms_by_category"].items(), key=lambda kv: -kv[1])
    ]
    headers = ["kernel category", "ms per step (rank 0)", "% of the median step", "TFLOP per GPU (model)", "TFLOP/s"]
    return markdown(headers, body)


def leaderboard_memory() -> str:
    body = [
        [
            r["attention"],
            r["checkpoint"],
            r["param_dtype"],
            f"{r['persistent_memory_gb']:.1f}",
            f"{L.model_between_steps_gb(r):.1f}",
            f"{r['peak_memory_gb']:.1f}",
            f"{L.model_peak_gb(r):.1f}",
        ]
        for r in L.memory_rows()
    ]
    headers = [
        "attention",
        "checkpointing",
        "parameters",
        "between steps GB",
        "model: between steps GB",
        "peak GB",
        "model: peak GB",
    ]
    return markdown(headers, body)


def leaderboard_fp32_master() -> str:
    body = [
        [
            r["param_dtype"],
            r["checkpoint"],
            f"{r['median_ms']:,.1f}",
            f"{r['mean_ms']:,.1f}",
            f"{r['peak_memory_gb']:.1f}",
            f"{r['persistent_memory_gb']:.1f}",
            f"`{r['set']}`",
            L.run_stamp(r),
        ]
        for r in L.fp32_master_pair()
    ]
    headers = [
        "parameters, gradients, AdamW state",
        "checkpointing",
        "median ms",
        "mean ms",
        "peak GB per rank",
        "between steps GB",
        "set",
        "run started (UTC)",
    ]
    return markdown(headers, body)


def fused_loss() -> str:
    names = {
        "eager": "eager (bf16 logits, fp32 `F.cross_entropy`)",
        "fused-torch": "fused, PyTorch chunks",
        "fused-triton": "fused, Triton row kernel",
    }
    body = [
        [
            names[r["variant"]],
            f"{r['ms_median']:.1f}",
            f"{r['ms_p20']:.1f}-{r['ms_p80']:.1f}",
            f"{r['peak_gb_above_inputs']:.2f}",
        ]
        for r in F.of_set("fused-loss-h200", "loss-1ca1dab", what="loss forward+backward")
    ]
    return markdown(["loss", "median ms", "p20-p80 ms", "peak GB above inputs"], body)


def fused_loss_step() -> str:
    rows = F.of_set("fused-loss-h200", "step-8-layers-1ca1dab") + F.of_set(
        "fused-loss-h200", "step-8-layers-eager-1ca1dab"
    )
    body = [
        [
            r["loss"],
            r["compile"],
            f"{r['median_ms']:,.1f}",
            f"{r['min_ms']:,.1f}-{r['max_ms']:,.1f}",
            r["steps"],
            f"{r['peak_memory_gb']:.2f}",
        ]
        for r in rows
    ]
    return markdown(["loss", "blocks", "median ms", "min-max ms", "timed steps", "peak GB"], body)


LIGER_NAMES = {
    "lmperf": "lmperf (`lmperf.ops`, dweight summed in fp32)",
    "liger": "Liger-Kernel as shipped (dweight summed in bf16)",
    "liger-fp32acc": "Liger-Kernel, `accum_dtype=torch.float32`",
}


def liger_rows(what: str) -> list[dict]:
    return F.of_set("fused-loss-h200", "peers-9a55b2b", what=what)


def liger_ratios() -> dict[str, list[float]]:
    """{Liger variant: [its time / lmperf's, per round]} at the 8B head's shapes (one point)."""
    rows = liger_rows("fused loss forward+backward")
    out = {}
    for name in ("liger", "liger-fp32acc"):
        (out[name],) = F.ratios(rows, name, "lmperf", "ms_median", "variant", lambda r: r["tokens"]).values()
    return out


def fused_loss_liger() -> str:
    timed = liger_rows("fused loss forward+backward")
    times = {name: statistics.median(r["ms_median"] for r in timed if r["variant"] == name) for name in LIGER_NAMES}
    peaks = {r["variant"]: r["peak_gb_above_inputs"] for r in timed}
    ratios = liger_ratios()
    body = [
        [
            LIGER_NAMES[r["variant"]],
            f"{times[r['variant']]:.1f}",
            F.ratio_cell(ratios[r["variant"]]) if r["variant"] in ratios else "-",
            f"{peaks[r['variant']]:.2f}",
            f"{r['loss_abs_err']:.1e}",
            f"{r['dhidden_rel_err']:.2e}",
            f"{r['dweight_rel_err']:.2e}",
        ]
        for r in liger_rows("fused loss correctness vs fp64")
    ]
    headers = [
        "loss",
        "median ms",
        "their time / lmperf's",
        "peak GB above inputs",
        "loss: absolute error vs float64",
        "dhidden: relative error",
        "dweight: relative error",
    ]
    return markdown(headers, body)


# ------------------------------------------------------------------------------- distributed

OPS = ["all-reduce", "all-gather", "reduce-scatter"]


def distributed_comm() -> str:
    rows = sorted(F.of_set("distributed-h200x2", "comm"), key=lambda r: (OPS.index(r["op"]), r["size_bytes"]))
    body = [
        [
            r["op"],
            f"{r['size_bytes'] / 2**20:,.0f}",
            f"{r['median_us']:,.1f}",
            f"{r['algbw_gbps']:.1f}",
            f"{r['busbw_gbps']:.1f}",
        ]
        for r in rows
    ]
    return markdown(["collective", "MiB", "median us", "algbw GB/s", "busbw GB/s"], body)


def _step_rows() -> list[dict]:
    rows = F.of_set("distributed-h200x2", "baseline") + F.of_set("distributed-h200x2", "steps")
    order = {"none": 0, "ddp": 1, "fsdp": 2}
    return sorted(rows, key=lambda r: (PRESETS.index(r["preset"]), r["seq_len"], order[r["strategy"]]))


def distributed_steps() -> str:
    rows = _step_rows()
    single = {(r["preset"], r["seq_len"]): r for r in rows if r["strategy"] == "none"}
    body = []
    for r in rows:
        # equal batch per GPU: N GPUs' tokens/s over N times one GPU's is one GPU's step time over N GPUs'
        one = single[r["preset"], r["seq_len"]]
        scaling = one["median_ms"] / r["median_ms"] if r["strategy"] != "none" else None
        body.append(
            [
                r["preset"],
                r["seq_len"],
                r["strategy"],
                r["nproc"],
                f"{r['median_ms']:.1f}",
                f"{r['min_ms']:.1f}",
                f"{r['max_ms']:.1f}",
                number(scaling, ".3f"),
                f"{r['persistent_memory_gb']:.1f}",
                f"{max(r['peak_memory_gb_ranks'] or [r['peak_memory_gb']]):.1f}",
            ]
        )
    return markdown(
        [
            "preset",
            "ctx",
            "strategy",
            "GPUs",
            "median ms",
            "min ms",
            "max ms",
            "scaling: 1 GPU / N GPUs",
            "between steps GB",
            "peak GB (max rank)",
        ],
        body,
    )


def distributed_overlap() -> str:
    body = [
        [
            r["strategy"],
            number(r["bucket_mb"], ".0f"),
            "-" if r["strategy"] == "ddp" else r["reshard"],
            f"{r['mean_ms']:.1f}",
            f"{r['comm_ms']:.1f}",
            f"{100 * r['comm_share']:.1f}",
            f"{r['exposed_ms']:.1f}",
            f"{100 * r['exposed_share']:.1f}",
            f"{max(r['peak_memory_gb_ranks']):.1f}",
        ]
        for r in F.of_set("distributed-h200x2", "overlap")
    ]
    return markdown(
        [
            "strategy",
            "bucket MB",
            "reshard",
            "step ms (mean)",
            "NCCL ms",
            "NCCL %",
            "exposed ms",
            "exposed %",
            "peak GB (max rank)",
        ],
        body,
    )


# ------------------------------------------------------------------------------------ pmc


def wrong_fields(row: dict) -> set[str]:
    """The field names a score file's "wrong fields" cell lists ("-": none)."""
    if row["wrong"] == "-":
        return set()
    return {part.split("=", 1)[0].strip() for part in row["wrong"].split("), ") if "=" in part}


def blind_scorings() -> list[tuple[str, list[dict]]]:
    """(scoring, its blind captures) in order: each held-out sweep capture scored with the code of
    its capture commit: a re-run at that code ("at-capture" scorings) where the capture's first
    scoring ran later code, else its first scoring."""
    captures = [r for r in F.page_rows("pmc-accuracy") if r.get("kind") == "capture" and r["corpus"] == "sweep"]
    first: dict[str, dict] = {}
    for row in sorted(captures, key=lambda r: ("at-capture" not in r["scoring"], r["scoring_number"])):
        if row["split"] == "held-out":
            first.setdefault(row["capture"], row)
    by_scoring: dict[str, list[dict]] = {}
    for row in first.values():
        by_scoring.setdefault(row["scoring"], []).append(row)
    earliest = {}
    for row in captures:  # a capture's first scoring of any kind orders its batch
        earliest[row["capture"]] = min(earliest.get(row["capture"], row["scoring_number"]), row["scoring_number"])

    def capture_order(item: tuple[str, list[dict]]) -> int:
        return min(earliest[row["capture"]] for row in item[1])

    return sorted(by_scoring.items(), key=capture_order)


def pmc_blind() -> str:
    body, total = [], [0, 0, 0]
    for scoring, rows in blind_scorings():
        counts = [
            len(rows),
            sum(not wrong_fields(r) & set(STRUCTURE) for r in rows),
            sum("vocab_size" not in wrong_fields(r) for r in rows),
        ]
        total = [a + b for a, b in zip(total, counts)]
        body.append([f"`{scoring}`", rows[0]["env"]["commit"], *counts])
    body.append(["all blind scorings", "", *total])
    return markdown(["scoring", "code at", "blind captures", "every structural field exact", "vocab_size exact"], body)


# Each blind batch of the served kinds (its letter) and its one scoring, at its capture commit.
SERVED_BLIND = {
    "x": "score-16-served-blindx-1f0230b",
    "y": "score-17-served-blindy-73fb399",
    "z": "score-24-served-blindz-6bd415b",
    "w": "score-26-served-blindw-5207cc3",
    "v": "score-28-served-blindv-98d099b",
    "u": "score-30-served-blindu-c498df2",
    "t": "score-32-served-blindt-1c93c6c",
    "q": "score-33-served-blindq-45d4973",
    "p": "score-35-served-blindp-9845978",
    "o": "score-37-served-blindo-8e16180",
    "n": "score-39-served-blindn-a3ff7ca",
    "k": "score-42-served-blindk-ebd43db",
    "j": "score-43-served-blindj-accabea",
    "i": "score-46-served-blindi-cbf6df9",
    "h": "score-48-served-blindh-82a4f10",
    "f": "score-49-served-blindf-afa04d1",
    "l": "score-51-served-blindl-32a36f4",
    "a": "score-54-served-blinda-4a08e29",
    "aa": "score-56-served-blindaa-d5cfac8",
    "ab": "score-58-served-blindab-1018dcf",
    "ac": "score-60-served-blindac-90a25fc",
    "ad": "score-62-served-blindad-aea90b8",
    "ae": "score-64-served-blindae-f30af0a",
    "af": "score-66-served-blindaf-326962f",
    "ag": "score-68-served-blindag-686da0e",
    "ah": "score-69-served-blindah-e0b796a",
    "ai": "score-71-served-blindai-518c962",
    "aj": "score-73-served-blindaj-c715432",
    "ak": "score-75-served-blindak-8f6c64b",
    "al": "score-77-served-blindal-c7d2b95",
    "am": "score-79-served-blindam-f56e455",
    "an": "score-80-served-blindan-0f515e0",
    "ao": "score-81-served-blindao-b792da4",
    "ap": "score-83-served-blindap-0624af0",
    "aq": "score-84-served-blindaq-1ad4906",
    "ar": "score-85-served-blindar-7dd12e5",
    "as": "score-86-served-blindas-913570d",
    "at": "score-87-served-blindat-5af5150",
    "au": "score-88-served-blindau-112cdd0",
    "av": "score-89-served-blindav-fd564c5",
    "aw": "score-91-served-blindaw-355c24a",
    "ax": "score-92-served-blindax-b5b64ba",
    "ay": "score-93-served-blinday-250ee36",
    "az": "score-94-served-blindaz-656f814",
    "ba": "score-95-served-blindba-a328916",
    "bb": "score-96-served-blindbb-8a6c438",
    "bc": "score-99-served-blindbc-3dbc7c3",
    "bd": "score-100-served-blindbd-326bcd7",
    "be": "score-101-served-blindbe-ec9f6c2",
    "bf": "score-102-served-blindbf-fe1a6db",
    "bg": "score-103-served-blindbg-6ac70c3",
    "bh": "score-104-served-blindbh-79da3ea",
    "bi": "score-106-served-blindbi-ae92d72",
    "bj": "score-107-served-blindbj-f6ff51b",
    "bk": "score-108-served-blindbk-9abed1b",
    "bl": "score-109-served-blindbl-7356a06",
    "bm": "score-110-served-blindbm-b258630",
    "bn": "score-111-served-blindbn-b7483c0",
    "bo": "score-113-served-blindbo-c9e866b",
    "bp": "score-114-served-blindbp-ba1d8a4",
    "bq": "score-115-served-blindbq-6e8463f",
    "br": "score-116-served-blindbr-dbea245",
    "bs": "score-117-served-blindbs-5ed6e24",
    "bt": "score-119-served-blindbt-bc7a75d",
    "bu": "score-120-served-blindbu-c506283",
    "bv": "score-121-served-blindbv-bedcaca",
    "bw": "score-122-served-blindbw-80ee218",
    "bx": "score-123-served-blindbx-ac7f765",
    "by": "score-125-served-blindby-8c1ba60",
    "bz": "score-126-served-blindbz-8f80a2d",
    "ca": "score-127-served-blindca-3819cab",
    "cb": "score-128-served-blindcb-2411b2b",
    "cc": "score-129-served-blindcc-6307754",
    "cd": "score-131-served-blindcd-0590e84",
    "ce": "score-132-served-blindce-0590e84",
    "cf": "score-133-served-blindcf-0590e84",
    "cg": "score-135-served-blindcg-0d2da84",
    "ch": "score-136-served-blindch-0d2da84",
    "ci": "score-137-served-blindci-0d2da84",
    "cj": "score-138-served-blindcj-0d2da84",
    "ck": "score-140-served-blindck-d298b66",
    "cl": "score-141-served-blindcl-d298b66",
    "cm": "score-142-served-blindcm-d298b66",
    "cn": "score-143-served-blindcn-d298b66",
    "co": "score-144-served-blindco-d298b66",
}
SERVED_NOW = "score-145-served-all-3f2953d"
SERVED_KINDS = ("eager", "compiled", "max-autotune", "CUDA graphs", "Liger", "fused loss")
SERVED_TARGETS = ("structure", "vocab_size", "vocab exact or in interval", "params_total within 1% or in interval")


def pmc_served_blind() -> str:
    """Each blind batch of the served kinds at its one scoring, by kind of run, then all of them."""
    body, total = [], [0, 0, 0]
    for scoring in SERVED_BLIND.values():
        rows = F.of_set("pmc-accuracy", scoring, kind="capture")
        for run in SERVED_KINDS:
            part = [r for r in rows if r["run"] == run]
            if part:
                counts = [
                    len(part),
                    sum(not wrong_fields(r) & set(STRUCTURE) for r in part),
                    sum("vocab_size" not in wrong_fields(r) for r in part),
                ]
                total = [a + b for a, b in zip(total, counts)]
                body.append([f"`{scoring}`", rows[0]["env"]["commit"], run, *counts])
    body.append(["all blind batches", "", "", *total])
    return markdown(
        ["scoring", "code at", "run", "blind captures", "every structural field exact", "vocab_size exact"], body
    )


def served_field_counts(scoring: str, split: str = "held_out") -> dict[str, tuple[int, int]]:
    """field -> (captures right, captures) of a served scoring's `split`: for the targets, from
    its captures' wrong fields; for any other field, from its field rates (whole percentages, as
    the score file prints them), the one count of n captures that prints as that percentage (a
    field whose percentage two counts print as, 201 or 202 of 202, is left out)."""
    counts = {}
    for row in F.of_set("pmc-accuracy", scoring, kind="field"):
        n, rate = row[f"{split}_n"], row[f"{split}_exact"]
        right = [k for k in range(n + 1) if f"{k / n:.0%}" == rate] if n else [0]
        if len(right) == 1:
            counts[row["field"]] = (right[0], n)
    captures = [
        r
        for r in F.of_set("pmc-accuracy", scoring, kind="capture")
        if r["split"] == split.replace("_", "-") or (split == "dev" and r["split"] == "dev")
    ]
    if captures:
        for target in SERVED_TARGETS:
            counts[target] = (sum(target_met(r, target) for r in captures), len(captures))
    return counts


_WRONG_VALUE = re.compile(r"(\w+)=(\[[^\]]*\]|\S+) \(true ([^)]*)\)")


def target_met(row: dict, target: str) -> bool:
    """Whether a scored capture meets one of the issue's targets, from its wrong-fields cell: every
    structural field exact; the vocabulary exact; the vocabulary exact or an interval holding it;
    the total parameters within 1% or an interval holding them."""
    wrong = {m[1]: (m[2], m[3]) for m in _WRONG_VALUE.finditer(row["wrong"])}
    if target == "structure":
        return not wrong_fields(row) & set(STRUCTURE)
    field = "vocab_size" if target.startswith("vocab") else "params_total"
    if field not in wrong:
        return True
    if target == "vocab_size":
        return False
    value, true = wrong[field]
    if not value.startswith("["):
        return False  # a value listed wrong is off by more than the 1% a parameter count may be
    # an interval holds the truth within the tolerance at its ends (lmperf.pmc.accuracy's rule);
    # an open end prints as ? (a forward pass bounds a learned position table from below only)
    low, high = (None if v.strip() == "?" else int(v) for v in value[1:-1].split(","))
    return interval_holds(low, high, int(true), PARAMS_TOLERANCE if field == "params_total" else 0.0)


def served_blind_totals() -> dict[str, tuple[int, int]]:
    """field -> (captures right, captures) over every blind batch of the served kinds."""
    batches = [served_field_counts(s) for s in SERVED_BLIND.values()]
    return {field: tuple(map(sum, zip(*(b[field] for b in batches)))) for field in SERVED_TARGETS}


def pmc_served_fields() -> str:
    """The blind batches' counts of the fields the issue sets targets for, their total, and the re-score."""
    batches = [served_field_counts(s) for s in SERVED_BLIND.values()]
    totals = served_blind_totals()
    now, now_dev = served_field_counts(SERVED_NOW), served_field_counts(SERVED_NOW, "dev")

    def count(right: int, n: int) -> str:
        return f"{right} of {n}"

    body = [
        [
            field,
            *(count(*b[field]) for b in batches),
            f"{count(*totals[field])} ({100 * totals[field][0] / totals[field][1]:.1f}%)",
            f"{count(*now[field])} held out, {count(*now_dev[field])} dev",
        ]
        for field in SERVED_TARGETS
    ]
    header = [
        "field",
        *(f"batch {letter}, blind" for letter in SERVED_BLIND),
        "all blind batches",
        "every served capture now (not blind)",
    ]
    return markdown(header, body)


def pmc_served_now() -> str:
    body = [
        [r["run"], r["captures"], r["structure"], r["vocab_exact"]]
        for r in F.of_set("pmc-accuracy", SERVED_NOW, kind="run")
    ]
    return markdown(["run", "captures", "every structural field exact", "vocab_size exact"], body)


# The limit captures' claims held against the inference code of their capture commit (one set per
# capture call's commit), then today's.
LIMITS_AT_CAPTURE = (
    "limits-at-capture-98d099b",
    "limits-at-capture-1c93c6c",
    "limits-at-capture-d461497",
    "limits-at-capture-3cd2926",
)
LIMITS_NOW = "limits-3f2953d"


def _limit_reading(row: dict) -> str:
    """What a capture's inference got: the fields read wrong, then those left undetermined."""
    wrong = [f"{name} {pair['read']} (true {pair['true']})" for name, pair in row["wrong"].items()]
    parts = [f"read {', '.join(wrong)}"] if wrong else []
    if row["undetermined"]:
        parts.append(f"undetermined: {', '.join(row['undetermined'])}")
    return "; ".join(parts) or "every field right"


def _claim(row: dict) -> str:
    return "held" if row["claim_held"] else f"broken ({'; '.join(row['broken'])})"


def _claim_then(then: dict, now: dict) -> str:
    """The claim at capture held or broken with that commit's code, and, where the claim was
    revised after capture (its text says so), that it was, with the verdict it claimed then."""
    revised = ""
    if "revised after capture" in LIMIT_CLAIMS[now["capture"]].claim.lower():
        revised = f" (that claim: {then['verdict']}; revised since, not blind)"
    return f"{then['env']['commit']}: {_claim(then)}{revised}"


def pmc_limits() -> str:
    """Each limit's claimed verdict, whether its capture holds the claim with the code of its
    capture commit and with today's, and what today's code reads."""
    then = {r["capture"]: r for s in LIMITS_AT_CAPTURE for r in F.of_set("pmc-accuracy", s, kind="limit")}
    now = F.of_set("pmc-accuracy", LIMITS_NOW, kind="limit")
    body = [
        [
            r["limit"],
            f"`{r['capture']}`",
            r["verdict"],
            _claim_then(then[r["capture"]], r),
            _claim(r),
            _limit_reading(r),
        ]
        for r in now
    ]
    headers = [
        "limit",
        "capture",
        "claimed verdict",
        "claim, code at capture (its commit)",
        f"claim, code now ({now[0]['env']['commit']})",
        "what the code now reads (of the structural fields and the vocabulary)",
    ]
    return markdown(headers, body)


def pmc_fields() -> str:
    sweep = {r["field"]: r for r in F.of_set("pmc-accuracy", "score-15-sweep-blind5-bd78081", kind="field")}
    first = {r["field"]: r for r in F.of_set("pmc-accuracy", "score-14-first-corpus-fa8354f", kind="field")}
    body = [
        [
            name,
            f"{s['held_out_exact']} of {s['held_out_n']}",
            f"{s['dev_exact']} of {s['dev_n']}",
            f"{first[name]['held_out_exact']} of {first[name]['held_out_n']}" if name in first else "-",
            f"{first[name]['dev_exact']} of {first[name]['dev_n']}" if name in first else "-",
        ]
        for name, s in sweep.items()
    ]
    return markdown(["field", "sweep held-out", "sweep dev", "first corpus held-out", "first corpus dev"], body)


def pmc_paths() -> str:
    body = [
        [r["path"], r["captures"], r["structure"], r["vocab_exact"]]
        for r in F.of_set("pmc-accuracy", "score-15-sweep-blind5-bd78081", kind="path")
    ]
    return markdown(["attention path", "captures", "every structural field exact", "vocab_size exact"], body)


INFER_TIME = "infer-time-3f2953d"


def _timed_capture(what: str) -> str:
    """A timing record's capture, as pmc_infer_time.py words it: the largest real one by name, or
    a 34-layer one built from a real capture."""
    if "34-layer forward" in what:
        return "34-layer forward (built from a real capture)"
    if "34-layer training-step" in what:
        return "34-layer training step (built from a real capture)"
    name = re.search(r"infer (\S+)\.csv\.gz", what)
    return f"largest real capture ({name[1]})" if name else what


def pmc_infer_time() -> str:
    groups: dict[int, list[dict]] = {}
    for r in F.of_set("pmc-accuracy", INFER_TIME):
        groups.setdefault(r["kernels"], []).append(r)
    body = [
        [
            _timed_capture(rs[0]["what"]),
            k,
            F.span([r["wall_s"] for r in rs], 2),
            F.span([r["cpu_s"] for r in rs], 2),
            len(rs),
        ]
        for k, rs in sorted(groups.items())
    ]
    return markdown(["capture", "kernels", "wall s", "CPU s", "runs"], body)


# ------------------------------------------------------------------------------------ registry

TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "attention-cudnn": ("benchmarks/attention-h100.md", attention_cudnn),
    "attention-backends": ("benchmarks/attention-h100.md", attention_backends),
    "attention-step": ("benchmarks/attention-h100.md", attention_step),
    "attention-after-restructure": ("benchmarks/attention-h100.md", attention_after_restructure),
    "attention-before-after": ("benchmarks/attention-h100.md", attention_before_after),
    "bench-sweep": ("benchmarks/bench-h100.md", bench_sweep),
    "bench-warmup": ("benchmarks/bench-h100.md", bench_warmup),
    "bench-agreement": ("benchmarks/bench-h100.md", bench_agreement),
    "bench-hf": ("benchmarks/bench-h100.md", bench_hf),
    "bench-user-module": ("benchmarks/bench-h100.md", bench_user_module),
    "bench-user-module-flops": ("benchmarks/bench-h100.md", bench_user_module_flops),
    "bench-user-module-timer": ("benchmarks/bench-h100.md", bench_user_module_timer),
    "profile-matmul-share": ("benchmarks/profile-h100.md", profile_matmul_share),
    "profile-top-kernels": ("benchmarks/profile-h100.md", profile_top_kernels),
    "profile-regions": ("benchmarks/profile-h100.md", profile_regions),
    "profile-memory": ("benchmarks/profile-h100.md", profile_memory),
    "profile-allocations": ("benchmarks/profile-h100.md", profile_allocations),
    "profile-memory-hf": ("benchmarks/profile-h100.md", profile_memory_hf),
    "leaderboard-headline": ("benchmarks/leaderboard-h200x2.md", leaderboard_headline),
    "leaderboard-peers": ("benchmarks/leaderboard-h200x2.md", leaderboard_peers),
    "leaderboard-titan-settings": ("benchmarks/leaderboard-h200x2.md", leaderboard_titan_settings),
    "leaderboard-changes": ("benchmarks/leaderboard-h200x2.md", leaderboard_changes),
    "leaderboard-gemms": ("benchmarks/leaderboard-h200x2.md", leaderboard_gemms),
    "leaderboard-attention": ("benchmarks/leaderboard-h200x2.md", leaderboard_attention),
    "leaderboard-tries": ("benchmarks/leaderboard-h200x2.md", leaderboard_tries),
    "leaderboard-clocks": ("benchmarks/leaderboard-h200x2.md", leaderboard_clocks),
    "leaderboard-layouts": ("benchmarks/leaderboard-h200x2.md", leaderboard_layouts),
    "leaderboard-kernels": ("benchmarks/leaderboard-h200x2.md", leaderboard_kernels),
    "leaderboard-memory": ("benchmarks/leaderboard-h200x2.md", leaderboard_memory),
    "leaderboard-fp32-master": ("benchmarks/leaderboard-h200x2.md", leaderboard_fp32_master),
    "leaderboard-adamw": ("benchmarks/leaderboard-h200x2.md", leaderboard_adamw),
    "fused-loss": ("benchmarks/fused-loss-h200.md", fused_loss),
    "fused-loss-step": ("benchmarks/fused-loss-h200.md", fused_loss_step),
    "fused-loss-liger": ("benchmarks/fused-loss-h200.md", fused_loss_liger),
    "distributed-comm": ("benchmarks/distributed-h200x2.md", distributed_comm),
    "distributed-steps": ("benchmarks/distributed-h200x2.md", distributed_steps),
    "distributed-overlap": ("benchmarks/distributed-h200x2.md", distributed_overlap),
    "pmc-blind": ("benchmarks/pmc-accuracy.md", pmc_blind),
    "pmc-fields": ("benchmarks/pmc-accuracy.md", pmc_fields),
    "pmc-paths": ("benchmarks/pmc-accuracy.md", pmc_paths),
    "pmc-served-blind": ("benchmarks/pmc-accuracy.md", pmc_served_blind),
    "pmc-served-fields": ("benchmarks/pmc-accuracy.md", pmc_served_fields),
    "pmc-served-now": ("benchmarks/pmc-accuracy.md", pmc_served_now),
    "pmc-infer-time": ("benchmarks/pmc-accuracy.md", pmc_infer_time),
    "pmc-limits": ("benchmarks/pmc-accuracy.md", pmc_limits),
    "attention-tuning": ("docs/attention-tuning.md", tuning_table),
}


# ======================================================================= distributed-h200x4 (begin)
# The tables of benchmarks/distributed-h200x4.md: collectives on 1, 2 and 4 GPUs, weak scaling of
# the 2.7B and 8B steps, communication from the profiled steps, two "nodes" against one.

H200X4 = "distributed-h200x4"
# NVIDIA's H200 SXM datasheet: NVLink 900 GB/s per GPU, both directions together. nccl-tests'
# bus bandwidth counts the bytes each rank sends (doc/PERFORMANCE.md), so its peak is one
# direction: 450 GB/s. The vendor's figure, not a measurement.
NVLINK_ONE_WAY_GBPS = 450.0
H200X4_STEPS = ["b27-1", "b27-2", "b27-4", "b8-1", "b8-2", "b8-4"]


def h200x4_comm() -> str:
    by_count = {n: {(r["op"], r["size_bytes"]): r for r in F.of_set(H200X4, f"comm{n}")} for n in (1, 2, 4)}
    body = []
    for op, size in sorted(by_count[4], key=lambda key: (OPS.index(key[0]), key[1])):
        one, two, four = (by_count[n][op, size] for n in (1, 2, 4))
        body.append(
            [
                op,
                f"{size / 2**20:,.0f}",
                f"{one['median_us']:,.1f}",
                f"{two['median_us']:,.1f}",
                f"{two['busbw_gbps']:.1f}",
                f"{two['busbw_gbps'] / NVLINK_ONE_WAY_GBPS:.0%}",
                f"{four['median_us']:,.1f}",
                f"{four['busbw_gbps']:.1f}",
                f"{four['busbw_gbps'] / NVLINK_ONE_WAY_GBPS:.0%}",
            ]
        )
    return markdown(
        [
            "collective",
            "MiB",
            "1 GPU median us",
            "2 GPUs median us",
            "2 GPUs busbw GB/s",
            "2 GPUs busbw / 450",
            "4 GPUs median us",
            "4 GPUs busbw GB/s",
            "4 GPUs busbw / 450",
        ],
        body,
    )


def h200x4_step_rows() -> list[dict]:
    """The weak-scaling rows with lmperf's analytic memory per rank beside the measured."""
    from lmperf.distributed.report import with_memory_model  # the model the bench-dist report uses

    return with_memory_model([r for name in H200X4_STEPS for r in F.of_set(H200X4, name)])


def h200x4_one_gpu(rows: list[dict]) -> dict[str, dict]:
    return {r["preset"]: r for r in rows if r["nproc"] == 1}


def h200x4_scaling(row: dict, one: dict) -> float:
    """One GPU's median step over the N-GPU median, the batch per GPU the same."""
    return one["median_ms"] / row["median_ms"]


def _ranks_gb(row: dict) -> str:
    return F.span(row["peak_memory_gb_ranks"], 1)


def h200x4_weak() -> str:
    rows = h200x4_step_rows()
    one = h200x4_one_gpu(rows)
    order = {"none": 0, "ddp": 1, "fsdp": 2}
    body = [
        [
            r["preset"],
            r["strategy"],
            r["nproc"],
            f"{r['median_ms']:,.1f}",
            f"{r['min_ms']:,.1f}",
            f"{r['max_ms']:,.1f}",
            "-" if r["nproc"] == 1 else f"{h200x4_scaling(r, one[r['preset']]):.3f}",
            f"{r['tokens_per_s_total']:,.0f}",
            _ranks_gb(r),
            f"{r['model_peak_gb']:.1f}",
            f"{r['persistent_memory_gb']:.1f}",
            f"{r['model_persistent_gb']:.1f}",
        ]
        for r in sorted(rows, key=lambda r: (r["preset"] != "2.7B", order[r["strategy"]], r["nproc"]))
    ]
    return markdown(
        [
            "preset",
            "strategy",
            "GPUs",
            "median ms",
            "min ms",
            "max ms",
            "scaling: 1 GPU / N GPUs",
            "tok/s total (mean step)",
            "peak GB per rank",
            "model: peak GB",
            "between steps GB",
            "model: between steps GB",
        ],
        body,
    )


def h200x4_profiled() -> list[dict]:
    return [r for name in ("b27-2", "b27-4") for r in F.of_set(H200X4, name) if r["profiled_steps"]]


def h200x4_extra_ms(row: dict) -> float:
    """What the N-GPU step costs beyond the one-GPU step of the same configuration (medians)."""
    (one,) = F.of_set(H200X4, "b27-1")
    return row["median_ms"] - one["median_ms"]


def h200x4_exposed() -> str:
    body = [
        [
            r["strategy"],
            r["nproc"],
            f"{r['median_ms']:.1f}",
            f"{h200x4_extra_ms(r):.1f}",
            f"{r['comm_ms']:.1f}",
            f"{r['hidden_ms']:.1f}",
            f"{r['exposed_ms']:.1f}",
            f"{r['hidden_ms'] / r['comm_ms']:.0%}",
        ]
        for r in sorted(h200x4_profiled(), key=lambda r: (r["strategy"], r["nproc"]))
    ]
    return markdown(
        [
            "strategy",
            "GPUs",
            "median ms",
            "beyond 1 GPU ms",
            "NCCL ms",
            "hidden ms",
            "exposed ms",
            "hidden share",
        ],
        body,
    )


def h200x4_layouts() -> list[tuple[str, dict]]:
    (one_node,) = F.of_set(H200X4, "b27-4", strategy="ddp")
    (two_nodes,) = F.of_set(H200X4, "nodes0")
    return [("one node of four (b27-4)", one_node), ("two nodes of two (nodes0)", two_nodes)]


def h200x4_nodes() -> str:
    body = [
        [
            name,
            r["nproc"],
            f"{r['median_ms']:.1f}",
            f"{r['min_ms']:.1f}",
            f"{r['max_ms']:.1f}",
            f"{r['tokens_per_s_total']:,.0f}",
            ", ".join(f"{gb:.1f}" for gb in r["peak_memory_gb_ranks"]),
            f"{r['persistent_memory_gb']:.1f}",
        ]
        for name, r in h200x4_layouts()
    ]
    return markdown(
        [
            "layout (set)",
            "GPUs",
            "median ms",
            "min ms",
            "max ms",
            "tok/s total (mean step)",
            "peak GB, ranks 0-3",
            "between steps GB",
        ],
        body,
    )


TABLES.update(
    {
        "h200x4-comm": ("benchmarks/distributed-h200x4.md", h200x4_comm),
        "h200x4-weak": ("benchmarks/distributed-h200x4.md", h200x4_weak),
        "h200x4-exposed": ("benchmarks/distributed-h200x4.md", h200x4_exposed),
        "h200x4-nodes": ("benchmarks/distributed-h200x4.md", h200x4_nodes),
    }
)
# ========================================================================= distributed-h200x4 (end)
