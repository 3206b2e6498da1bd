"""cuDNN's time / ours per round from `lmperf attention --rounds N` rows (`results.jsonl`): what
the record folders' summary.py scripts print about their sweeps.

    import sys; sys.path.insert(0, ".../benchmarks/attention"); from sweep_summary import print_points
"""

import collections
import json
import statistics
from pathlib import Path


def ratios(paths) -> dict:
    """(head_dim, causal, seq) -> per round of every file, (cuDNN / ours fwd+bwd time, backward time,
    ours fwd+bwd ms, cuDNN fwd+bwd ms, cuDNN / ours forward time); rounds missing a peer are left out."""
    rounds = collections.defaultdict(dict)
    for path in paths:
        for line in open(path):
            row = json.loads(line)
            if row["status"] == "ok":
                rounds[(row["head_dim"], row["causal"], row["seq"], str(path), row["round"])][row["impl"]] = row
    by_point = collections.defaultdict(list)
    for key, impls in rounds.items():
        if {"triton", "sdpa-cudnn"} <= impls.keys():
            ours, cudnn = impls["triton"], impls["sdpa-cudnn"]
            by_point[key[:3]].append((cudnn["fwd_bwd_ms"] / ours["fwd_bwd_ms"], cudnn["bwd_ms"] / ours["bwd_ms"],
                                      ours["fwd_bwd_ms"], cudnn["fwd_bwd_ms"], cudnn["fwd_ms"] / ours["fwd_ms"]))
    return by_point


def print_points(paths: list[Path], before_paths: list[Path], before_label: str) -> None:
    """Per point: the fwd+bwd ratio's median (range, rounds; each file's median), the forward's and
    backward's medians and ours in ms, then the same point's medians over `before_paths`."""
    now, before = ratios(paths), ratios(before_paths)
    each = [ratios([path]) for path in paths]
    median = lambda values, field: statistics.median(v[field] for v in values)  # noqa: E731
    for point in sorted(now):
        head_dim, causal, seq = point
        fwd_bwd = sorted(v[0] for v in now[point])
        print(f"   d{head_dim} {'causal' if causal else 'full'} {seq:>5}: fwd+bwd median {statistics.median(fwd_bwd):.3f} "
              f"({fwd_bwd[0]:.3f}-{fwd_bwd[-1]:.3f}, {len(fwd_bwd)} rounds; per sweep "
              + " ".join(f"{median(sweep[point], 0):.3f}" for sweep in each)
              + f"), forward {median(now[point], 4):.3f}, backward {median(now[point], 1):.3f}, "
              f"ours {median(now[point], 2):.3f} ms; {before_label} fwd+bwd {median(before[point], 0):.3f}, "
              f"forward {median(before[point], 4):.3f}, backward {median(before[point], 1):.3f}")
