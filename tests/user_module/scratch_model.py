"""The from-scratch test model's shapes (tests/user_models/scratch_lm.py, its build() defaults) and
what follows from them by hand: parameters, matmul FLOPs, bytes of parameters and AdamW state;
and `run_cli`, a command run into a fresh runs folder."""

from pathlib import Path

from typer.testing import CliRunner

from lmperf.cli import app
from lmperf.report.rundir import read_rows

SCRATCH = f"{Path(__file__).parents[1] / 'user_models' / 'scratch_lm.py'}:build"
HF_LLAMA = f"{Path(__file__).parents[1] / 'user_models' / 'hf_llama.py'}:build"
BAD = Path(__file__).parents[1] / "user_models" / "bad_factories.py"

V, D, L, H, F = 256, 32, 2, 4, 64  # vocabulary, width, layers, heads, SwiGLU width

# Embedding V·d; per layer q, k, v, output (4·d²), SwiGLU w1, w2, w3 (3·d·f), two RMSNorm gains
# (2·d); the final RMSNorm's gain d; the LM head V·d.
PARAMS = V * D + L * (4 * D * D + 3 * D * F + 2 * D) + D + V * D
assert PARAMS == 37_024
# Parameter tensors: embedding; per layer 4 projections, 3 SwiGLU matrices, 2 gains; final gain; head.
PARAM_TENSORS = 1 + L * 9 + 1 + 1
MATMUL_PARAMS = L * (4 * D * D + 3 * D * F) + V * D  # the embedding is a gather


def forward_flops(batch: int, context: int) -> int:
    """Per layer: q, k, v, output projections 4·2·T·d², the scores and the weighted sum
    2·2·T²·d (einsum over every head, the full T×T square: the mask is applied after), SwiGLU
    3·2·T·d·f; then the LM head 2·T·d·V; for each of `batch` sequences of T tokens."""
    T = context
    per_layer = 4 * 2 * T * D * D + 2 * 2 * T * T * D + 3 * 2 * T * D * F
    return batch * (L * per_layer + 2 * T * D * V)


def step_flops(batch: int, context: int, mode: str) -> int:
    """The backward computes two matmuls for each of the forward's (input and weight gradients;
    for the attention einsums, the gradients of both operands)."""
    return forward_flops(batch, context) * (1 if mode == "forward" else 3)


def run_cli(root: Path, args: list[str], key=lambda row: row["mode"]) -> tuple[Path, dict]:
    """Run `lmperf ARGS --runs ROOT`; its one run directory and its rows by `key` (the mode)."""
    result = CliRunner().invoke(app, [*args, "--runs", str(root)])
    assert result.exit_code == 0, result.output
    (run_dir,) = root.iterdir()
    return run_dir, {key(row): row for row in read_rows(run_dir / "results.jsonl")}
