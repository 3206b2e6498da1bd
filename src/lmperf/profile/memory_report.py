"""memory.md of a `lmperf memory` run, rendered from its results.jsonl alone."""

from __future__ import annotations

from pathlib import Path

from lmperf.analysis.memory import memory_model
from lmperf.model.step import StepConfig
from lmperf.report import tables
from lmperf.report.environment import measured_on
from lmperf.report.rundir import RunDir

GB = 1e9
PEAK_COLUMNS: list[tables.Column] = [
    ("preset", "preset", ""),
    ("ctx", "seq_len", "d"),
    ("batch", "batch", "d"),
    ("prec", "precision", ""),
    ("attn", "attention", ""),
    ("mode", "mode", ""),
    ("status", "status", ""),
    ("measured peak GB", "measured_peak_gb", ".2f"),
    ("analytic peak GB", "analytic_peak_gb", ".2f"),
    ("measured − analytic GB", "difference_gb", "+.2f"),
]
COMPONENT_COLUMNS: list[tables.Column] = [
    ("ctx", "seq_len", "d"),
    ("prec", "precision", ""),
    ("part", "part", ""),
    ("measured GB", "measured", ".3f"),
    ("analytic GB", "analytic", ".3f"),
]
ALLOCATION_COLUMNS: list[tables.Column] = [
    ("MB", "size_mb", ",.1f"),
    ("count", "count", "d"),
    ("phase", "phase", ""),
    ("Python line", "line", ""),
]
EXPLANATION = """The analytic peak (lmperf.analysis.memory) counts parameters, gradients, AdamW state, the
bf16 weight copies autocast keeps, the activations each layer saves for its backward, and the
logits around the loss. The measured peak is higher by what the model leaves out: the transient
buffers inside one layer (the scores, scaled and masked copies of the attention matrix before
softmax; the gradient buffers of the layer being back-propagated), the cuBLAS workspace and the
allocator's rounding of every block. The parts table shows where the two differ: "parameters"
is what is allocated after building the model (it also holds the batch and, from the second
configuration of a run on, workspaces kept from the one before), "AdamW state" what the first
train step leaves allocated, "saved by forward" what a forward pass leaves allocated for the
backward.
"""


def component_rows(row: dict) -> list[dict]:
    """Measured parts beside their analytic counterparts, for one configuration's forward row."""
    analytic, measured = row["analytic"], row.get("measured", {})
    saved = analytic["autocast_weight_copies"] + analytic["activations"] + analytic["head_activations"]
    parts = [
        ("parameters + rotary tables", "parameters", analytic["parameters"] + analytic["rotary_tables"]),
        ("AdamW state", "optimizer_state", analytic["optimizer_state"]),
        ("saved by forward (casts + activations + head)", "saved_by_forward", saved),
    ]
    return [
        {
            "seq_len": row["seq_len"],
            "precision": row["precision"],
            "part": name,
            "measured": measured.get(key),
            "analytic": value / GB,
        }
        for name, key, value in parts
    ]


def _snapshot_section(row: dict) -> str:
    if row["status"] != "ok":
        return f"Snapshot: status **{row['status']}** ({row.get('error', '')}).\n"
    residual = row["residual_stream"]
    return (
        f"\nSnapshots (open in https://pytorch.org/memory_viz): {', '.join(row['snapshots'])}; "
        f"timeline `{row['timeline']}` ({row['preset']}, ctx {row['seq_len']}, {row['precision']}).\n\n"
        f"One residual-stream activation (a block's output) is {residual['mb']:.2f} MB: shape "
        f"{residual['shape']}, {residual['dtype']}.\n\nLargest allocations of one training step:\n\n"
        + tables.markdown(row["largest"], ALLOCATION_COLUMNS)
    )


def model_line(row: dict) -> str:
    """The model a row measured, shape in full (rows from before the shape was recorded get
    their preset's), and what lmperf's block approximates of it."""
    shape = StepConfig.from_dict(row).model_config()
    width = "" if shape.attention_width == shape.d_model else f" of {shape.head_dim}"
    kv = "" if shape.n_kv_heads == shape.n_heads else f" ({shape.n_kv_heads} K/V heads)"
    qk_norm = ", q/k norms" if shape.qk_norm else ""
    line = (
        f"Model {row['preset']}: d_model {shape.d_model}, d_ff {shape.d_ff} ({shape.mlp}), {shape.n_layers} layers, "
        f"{shape.n_heads} heads{width}{kv}{qk_norm}, vocabulary {shape.vocab_size:,}, "
        f"max context {shape.max_seq_len:,}, {'tied' if shape.tie_embeddings else 'untied'} embeddings"
    )
    approximations = row.get("approximations")
    return line + (f"; approximated: {approximations}.\n" if approximations else ".\n")


def with_current_model(row: dict) -> dict:
    """The peak row with its analytic figures from the current memory model (the rows keep what
    the model said when they were measured; a corrected model re-renders old measurements)."""
    config = StepConfig.from_dict(row)
    model = memory_model(
        config.model_config(), config.batch, config.seq_len, config.precision, checkpoint=config.checkpoint
    )
    row = {**row, "analytic": model.to_dict(), "analytic_peak_gb": model.peak(row["mode"]) / GB}
    if row.get("measured_peak_gb") is not None:
        row["difference_gb"] = row["measured_peak_gb"] - row["analytic_peak_gb"]
    return row


MB = 1e6
TENSOR_PARTS = ("parameters", "buffers", "gradients", "optimizer_state", "activations")
PEAK_PARTS = ("parameters", "optimizer_state", "other_resident", "gradients", "activations", "temporaries")
CONFIG_COLUMNS: list[tables.Column] = [
    ("ctx", "seq_len", "d"),
    ("batch", "batch", "d"),
    ("prec", "precision", ""),
    ("params", "param_dtype", ""),
    ("checkpoint", "checkpoint", ""),
    ("status", "status", ""),
]
BREAKDOWN_EXPLANATION = """Each part from the tensors' own sizes (lmperf.profile.breakdown): parameters and buffers;
gradients after a backward; the optimizer's state after a step; activations, the storages one
forward keeps for the backward (autograd's saved tensors, and the inputs of checkpointed blocks).
"""
PEAK_EXPLANATION = """At the peak of one training step, replayed from the allocator's history (its snapshot opens in
https://pytorch.org/memory_viz): what was allocated before the step (parameters, optimizer state,
the rest), and of what the step allocated, gradients, activations (allocated by the forward) and
temporaries (allocated by the backward or the optimizer step, not gradients).
"""


def _in_mb(row: dict, parts: dict, names: tuple[str, ...], total: str | None = None) -> dict:
    values = {f"{name}_mb": parts[name] / MB for name in names}
    return {**row, **values, **({"total_mb": sum(parts[n] for n in names) / MB} if total else {})}


def module_line(row: dict) -> str:
    module = row["module"]
    arguments = ", ".join(f"{k}={v!r}" for k, v in module["arguments"].items())
    return (
        f"Module {module['name']}: `{module['factory']}({arguments})`, {module['params']:,} parameters, "
        f"source hash {module['source_hash']}.\n"
    )


def breakdown_section(rows: list[dict]) -> str:
    """The memory of a user's module by part, and on CUDA at the peak of a training step."""
    if not rows:
        return ""
    ok = [row for row in rows if row["status"] == "ok"]
    text = "".join(dict.fromkeys(module_line(row) for row in rows)) + "\n" + BREAKDOWN_EXPLANATION + "\n"
    columns = CONFIG_COLUMNS + [(f"{n.replace('_', ' ')} MB", f"{n}_mb", ",.3f") for n in TENSOR_PARTS]
    text += tables.markdown(
        [_in_mb(r, r["parts"], TENSOR_PARTS) for r in ok] + [r for r in rows if r["status"] != "ok"], columns
    )
    at_peak = [row for row in ok if row.get("at_peak")]
    if at_peak:
        columns = (
            CONFIG_COLUMNS
            + [(f"{n.replace('_', ' ')} MB", f"{n}_mb", ",.1f") for n in PEAK_PARTS]
            + [("peak MB", "total_mb", ",.1f"), ("max_memory_allocated MB", "max_mb", ",.1f")]
        )
        peaks = [
            {**_in_mb(r, r["at_peak"], PEAK_PARTS, "total"), "max_mb": r["max_memory_allocated"] / MB} for r in at_peak
        ]
        text += "\n" + PEAK_EXPLANATION + "\n" + tables.markdown(peaks, columns)
        text += "\nSnapshots: " + ", ".join(f"`{name}`" for row in at_peak for name in row["snapshots"]) + "\n"
    return text


def write_memory_report(run_path: Path) -> list[Path]:
    rows = RunDir(run_path).rows()
    breakdown = breakdown_section([row for row in rows if row["kind"] == "breakdown"])
    if breakdown:
        md = run_path / "memory.md"
        md.write_text(measured_on(rows) + breakdown, encoding="utf-8")
        return [md] + sorted(run_path.glob("*.pickle"))
    peaks = [with_current_model(row) for row in rows if row["kind"] == "peak"]
    forward_rows = [row for row in peaks if row["mode"] == "forward" and row.get("measured")]
    text = (
        measured_on(rows)
        + "".join(dict.fromkeys(model_line(row) for row in peaks))
        + "\n"
        + "Peak memory (torch.cuda.max_memory_allocated):\n\n"
        + tables.markdown(peaks, PEAK_COLUMNS)
        + "\n"
        + EXPLANATION
        + "\nParts, measured and analytic:\n\n"
        + tables.markdown([part for row in forward_rows for part in component_rows(row)], COMPONENT_COLUMNS)
        + "".join(_snapshot_section(row) for row in rows if row["kind"] == "snapshot")
    )
    md = run_path / "memory.md"
    md.write_text(text, encoding="utf-8")
    return [md] + sorted(run_path.glob("*.png")) + sorted(run_path.glob("*.pickle"))
