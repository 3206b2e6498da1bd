"""Collective times from an alpha-beta model, fitted to `lmperf comm` rows and scaled past them.

One collective on n GPUs of one node is a ring: time = alpha + bus factor(n) x size / bus
bandwidth (lmperf.analysis.collectives), with alpha and the bus bandwidth fitted per collective to
the rows. Across m nodes of g GPUs (n = g·m) the collective is hierarchical: the ring inside each
node at the fitted figures, then a ring across the nodes among the GPUs of one local rank, each
carrying its node's 1/g share of the buffer S over its own network link (B = the inter-node
bandwidth per GPU):

    all-reduce      [alpha + 2(g-1)/g · S / B_all-reduce]     + [alpha + 2(m-1)/m · (S/g) / B]
    all-gather      [alpha + (g-1)/g · S / B_all-gather]      + [alpha + (m-1)/m · (S/g) / B]
    reduce-scatter  [alpha + (g-1)/g · S / B_reduce-scatter]  + [alpha + (m-1)/m · (S/g) / B]

alpha is the fitted one, not grown with n or m.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from lmperf.analysis.collectives import COLLECTIVES, bus_factor
from lmperf.errors import UsageError


@dataclass(frozen=True)
class Line:
    """One collective's fit: latency in seconds and bus bandwidth in bytes per second."""

    alpha_s: float
    busbw: float

    def seconds(self, op: str, size: float, n: int) -> float:
        """A ring of `n` GPUs moving a `size`-byte buffer (no collective on one GPU)."""
        if n == 1:
            return 0.0
        return self.alpha_s + bus_factor(op, n) * size / self.busbw


def fit_line(points: Sequence[tuple[float, float]]) -> Line:
    """The line t = alpha + x / busbw through (x, t) points, x being bus bytes (bus factor x
    size) and t seconds, by least squares on the relative error, so that 1 MB and 1 GB messages
    weigh alike. A negative alpha is refitted as zero."""
    if len({x for x, _ in points}) < 2:
        raise UsageError("fitting a collective needs rows of at least two message sizes")
    u = [1 / t for _, t in points]
    v = [x / t for x, t in points]
    suu, suv, svv = sum(a * a for a in u), sum(a * b for a, b in zip(u, v)), sum(b * b for b in v)
    su, sv = sum(u), sum(v)
    det = suu * svv - suv * suv
    alpha, slope = (svv * su - suv * sv) / det, (suu * sv - suv * su) / det
    if alpha < 0:
        alpha, slope = 0.0, sv / svv
    if slope <= 0:
        raise UsageError("the comm rows' times do not grow with the message size; cannot fit a bandwidth")
    return Line(alpha, 1 / slope)


@dataclass(frozen=True)
class Links:
    """Fitted lines per collective and what they were fitted to."""

    lines: dict[str, Line]
    device: str
    source: str
    nproc: tuple[int, ...]  # the GPU counts the rows ran on

    def line(self, op: str) -> Line:
        if op not in self.lines:
            raise UsageError(f"the comm rows ({self.source}) have no {op} rows, which this strategy needs")
        return self.lines[op]


def fit_links(rows: Iterable[dict], source: str) -> Links:
    """Lines for every collective with finished rows in `rows` (`lmperf comm`'s)."""
    rows = [r for r in rows if r.get("status") == "ok" and r.get("op") in COLLECTIVES and r.get("mean_us")]
    if not rows:
        raise UsageError(f"{source} has no finished `lmperf comm` rows")
    devices = {r.get("env", {}).get("device", "unknown") for r in rows}
    if len(devices) > 1:
        raise UsageError(f"{source} mixes GPUs ({', '.join(sorted(devices))}); fit one kind at a time")
    lines = {}
    for op in COLLECTIVES:
        points = [(bus_factor(op, r["nproc"]) * r["size_bytes"], r["mean_us"] / 1e6) for r in rows if r["op"] == op]
        if points:
            lines[op] = fit_line(points)
    return Links(lines, devices.pop(), source, tuple(sorted({r["nproc"] for r in rows})))


@dataclass(frozen=True)
class Network:
    """The fitted lines inside a node, and a given bandwidth between nodes (GB/s per GPU)."""

    links: Links
    gpus_per_node: int = 8
    inter_node_gbps: float = 50.0

    def validate(self) -> "Network":
        if self.gpus_per_node <= 0:
            raise UsageError(f"--gpus-per-node must be positive, got {self.gpus_per_node}")
        if self.inter_node_gbps <= 0:
            raise UsageError(f"--inter-node-gbps must be positive, got {self.inter_node_gbps}")
        return self

    def nodes(self, n: int) -> int:
        """Nodes `n` GPUs fill; a count above one node must fill whole nodes."""
        if n <= 0:
            raise UsageError(f"GPU counts must be positive, got {n}")
        if n > self.gpus_per_node and n % self.gpus_per_node:
            raise UsageError(
                f"{n} GPUs do not fill whole nodes of {self.gpus_per_node}; the hierarchical "
                f"ring runs the same ring in every node (give a multiple of {self.gpus_per_node})"
            )
        return max(1, n // self.gpus_per_node)

    def seconds(self, op: str, size: float, n: int) -> float:
        """One collective of a `size`-byte buffer over `n` GPUs (module docstring)."""
        nodes = self.nodes(n)
        inside = self.links.line(op).seconds(op, size, n // nodes)
        if nodes == 1:
            return inside
        between = Line(self.links.line(op).alpha_s, self.inter_node_gbps * 1e9)
        return inside + between.seconds(op, size / (n // nodes), nodes)
