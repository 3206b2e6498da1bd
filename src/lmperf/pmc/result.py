"""The answer of `lmperf pmc infer`: one value, a confidence and its evidence per field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FIELDS = (
    "mode",
    "dtype",
    "batch",
    "seq_len",
    "n_layers",
    "d_model",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "d_ff",
    "mlp",
    "vocab_size",
    "params_blocks",
    "params_total",
)


@dataclass(frozen=True)
class Gap:
    """A part of the step the capture lacks (a phase its range cuts short, a counter column): how
    the lack shows, and the fields that rest on the missing part."""

    part: str
    why: str
    fields: tuple[str, ...]


@dataclass
class Inference:
    """Field values (None = not determined), confidence in [0, 1] and evidence per field."""

    values: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(FIELDS))
    confidence: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0.0))
    evidence: dict[str, str] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # Fields the counters only bound: (lowest, highest) possible value; the point value is None.
    intervals: dict[str, tuple[int, int]] = field(default_factory=dict)
    extras: list[str] = field(default_factory=list)  # fields beyond FIELDS, in the order set
    gaps: list[Gap] = field(default_factory=list)  # what the capture lacks (see `retract`)

    def set(self, name: str, value: Any, confidence: float, evidence: str) -> None:
        """A point value for `name`; it replaces any interval recorded before."""
        self.intervals.pop(name, None)
        self.values[name] = value
        self.confidence[name] = round(confidence, 2)
        self.evidence[name] = evidence

    def unknown(self, name: str, why: str) -> None:
        """Record that `name` could not be determined, and why, instead of guessing."""
        self.values[name] = None
        self.confidence[name] = 0.0
        self.evidence[name] = why
        self.missing.append(f"{name}: {why}")

    def extra(self, name: str, value: Any, confidence: float, evidence: str) -> None:
        """A field only some captures have (a generate capture's prompt_len, decode_steps)."""
        self.set(name, value, confidence, evidence)
        if name not in self.extras:
            self.extras.append(name)

    def bound(self, name: str, low: int, high: int | None, confidence: float, evidence: str) -> None:
        """Record that `name` lies in [low, high] (high None: no upper bound) but no counter pins
        it: no point value."""
        self.set(name, None, confidence, evidence)
        self.intervals[name] = (low, high)

    def retract(self, gap: Gap) -> None:
        """Record that the capture lacks a part: every field resting on it becomes undetermined,
        however confidently the part that is there read."""
        self.gaps.append(gap)
        self.missing.append(f"{gap.part}: {gap.why}")
        for name in gap.fields:
            if name in self.values:
                self.set(name, None, 0.0, f"not determined: {gap.part}: {gap.why}")
                self.intervals.pop(name, None)

    def warnings(self) -> list[str]:
        """One line per missing part, for the report's head and for stderr."""
        return [
            f"warning: incomplete capture ({gap.part}): {gap.why}; undetermined: "
            + ", ".join(name for name in gap.fields if name in self.values)
            for gap in self.gaps
        ]

    def to_json(self) -> dict:
        out = dict(self.values)
        for name, (low, high) in self.intervals.items():
            out.update({f"{name}_min": low, f"{name}_max": high})
        out.update(
            confidence=self.confidence,
            evidence=self.evidence,
            assumptions=self.assumptions,
            missing=self.missing,
            incomplete=[dict(part=gap.part, why=gap.why, fields=list(gap.fields)) for gap in self.gaps],
        )
        return out

    def report(self) -> str:
        """A readable report: one line per field, then assumptions and what is missing."""
        width = max(map(len, FIELDS))
        lines = [*self.warnings(), "Inferred architecture (value, confidence, evidence):"]
        for name in (*FIELDS, *self.extras):
            value = self.values[name]
            shown = "?" if value is None else (f"{value:,}" if isinstance(value, int) else str(value))
            if name in self.intervals:
                low, high = self.intervals[name]
                shown = f"[{low:,}, {'?' if high is None else f'{high:,}'}]"
            lines.append(f"  {name:<{width}}  {shown:>14}  {self.confidence[name]:.2f}  {self.evidence.get(name, '')}")
        for title, items in (("Assumptions", self.assumptions), ("Missing evidence", self.missing)):
            if items:
                lines.append(f"{title}:")
                lines.extend(f"  - {item}" for item in items)
        return "\n".join(lines)
