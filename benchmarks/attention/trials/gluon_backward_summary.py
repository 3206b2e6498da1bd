"""Summarise gluon_backward.py's rows (any of its device commands; also gluon_backward_ab.py's and
gluon_forward_ab.py's): the float64 check's largest error per variant (of every max_* field), then per grid point each peer's ms and its ratio to the reference peers,
measured side by side (ranges over the rounds: min(reference)/max(peer) to max(reference)/min(peer),
> 1 = the peer faster; then the median of the same-round ratios, which resolves smaller changes
once there are more than two rounds).

    python benchmarks/attention/trials/gluon_backward_summary.py ROWS.jsonl
"""

import collections
import json
import statistics
import sys

BACKWARD_REFERENCES = ("triton-atomic-bwd", "committed", "sdpa-cudnn-bwd", "sdpa-cudnn-fwd")  # committed: gluon_backward_ab.py's unpatched module
FORWARD_BACKWARD_REFERENCES = ("flash_triton+bwd", "sdpa-cudnn+bwd")


def _ratio(reference: dict, peer: dict) -> str:
    """reference / peer over the rounds (round -> ms): the widest range, and the median of the
    ratios within a round."""
    ranged = f"{min(reference.values()) / max(peer.values()):.3f}-{max(reference.values()) / min(peer.values()):.3f}"
    paired = [reference[r] / peer[r] for r in reference.keys() & peer.keys()]
    return ranged + (f" (per round median {statistics.median(paired):.3f})" if paired else "")


def round_times(rows: list[dict]) -> dict:
    """(head_dim, causal, seq) -> peer -> round -> ms of the rows' timings."""
    times = collections.defaultdict(lambda: collections.defaultdict(dict))
    for row in rows:
        if row["kind"] == "time":
            times[(row["head_dim"], row["causal"], row["seq"])][row["peer"]][row.get("round", 0)] = row["ms"]
    return times


def summarise(path: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    env = rows[0]["env"] if rows else {}
    print(f"{path}: {len(rows)} rows, {env.get('device')}, commit {str(env.get('commit'))[:7]}, {env.get('date')}")
    errors = collections.defaultdict(list)
    for row in rows:
        if row["kind"] == "check":
            name = row.get("variant") or f"mode {row.get('dq_mode', 0)}"
            errors[name].append(max(value for key, value in row.items() if key.startswith("max_")))
    for name, values in errors.items():
        print(f"  check {name}: {len(values)} shapes, largest relative error {min(values):.4f}-{max(values):.4f}")
    for (head_dim, causal, seq), peers in round_times(rows).items():
        print(f"  d{head_dim} {'causal' if causal else 'full'} {seq}:")
        for name, rounds in peers.items():
            ms = list(rounds.values())
            line = f"    {name:40s} {min(ms):8.3f}-{max(ms):.3f} ms"
            if name.endswith("+bwd") or name.endswith("+fwd"):
                refs = [r for r in FORWARD_BACKWARD_REFERENCES if r in peers and r != name]
            else:
                refs = [r for r in BACKWARD_REFERENCES if r in peers and r != name]
            line += "".join(f"   {ref} / it {_ratio(peers[ref], rounds)}" for ref in refs)
            print(line)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        summarise(path)
