"""`lmperf profile --module` on the from-scratch model: the region table names its modules by path,
collapsed over its repeated layers, with FLOPs per region worked out by hand, and backward
kernels attributed to the module whose forward they differentiate."""

import shutil

import pytest

from lmperf.profile.run import rebuild_from_traces
from scratch_model import D, F, L, SCRATCH, V, run_cli

BATCH, T = 2, 16
ARGS = [
    "profile",
    "--module",
    SCRATCH,
    "--context",
    str(T),
    "--batch",
    str(BATCH),
    "--warmup",
    "1",
    "--steps",
    "1",
    "--device",
    "cpu",
    "--modes",
    "forward,train-step",
]
MODULES = [
    "token_embeddings",
    "layers.*.ln1",
    "layers.*.attn",
    "layers.*.attn.q_proj",
    "layers.*.attn.k_proj",
    "layers.*.attn.v_proj",
    "layers.*.attn.output_proj",
    "layers.*.attn.rope",
    "layers.*.ln2",
    "layers.*.ffn.w1",
    "layers.*.ffn.w2",
    "layers.*.ffn.w3",
    "ln_final",
    "lm_head",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_cli(tmp_path_factory.mktemp("runs"), ARGS)


def test_region_table_names_the_modules_in_module_order(run):
    run_dir, rows = run
    for row in rows.values():
        names = [r["region"] for r in row["regions"]]
        assert [n for n in names if n in MODULES] == MODULES, names
        assert not any(n.startswith("module:") or "layers.0" in n or "layers.1" in n for n in names)
        assert sum(r["time_share"] for r in row["regions"]) == pytest.approx(1.0)
    assert "layers.*.attn.q_proj" in (run_dir / "profile.md").read_text()


@pytest.mark.parametrize("mode, passes", [("forward", 1), ("train-step", 3)])
def test_region_flops_by_hand(run, mode, passes):
    """Forward: q_proj 2·B·T·d², the attention module's own einsums (scores, weighted sum)
    2·2·B·T²·d, w1 2·B·T·d·f, the head 2·B·T·d·V, each layer's summed over the L layers; the
    backward twice the forward again."""
    regions = {r["region"]: r for r in run[1][mode]["regions"]}
    by_hand = {
        "layers.*.attn.q_proj": L * 2 * BATCH * T * D * D,
        "layers.*.attn": L * 2 * 2 * BATCH * T * T * D,
        "layers.*.ffn.w1": L * 2 * BATCH * T * D * F,
        "lm_head": 2 * BATCH * T * D * V,
        "layers.*.ln1": 0,
    }
    for name, flops in by_hand.items():
        assert regions[name].get("gflop", 0) * 1e9 == pytest.approx(passes * flops, rel=1e-12), name


def test_backward_kernels_go_to_the_module_they_differentiate(run):
    regions = {r["region"]: r for r in run[1]["train-step"]["regions"]}
    for name in ("layers.*.attn.q_proj", "layers.*.ffn.w2", "lm_head"):
        assert regions[name]["forward_ms"] > 0 and regions[name]["backward_ms"] > 0
    assert regions["optimizer_step"]["optimizer_step_ms"] > 0


def test_rebuild_from_traces_gives_the_same_regions(run, tmp_path):
    run_dir, rows = run
    rebuilt = {row["mode"]: row for row in rebuild_from_traces(shutil.copytree(run_dir, tmp_path / "copy"))}
    for mode, row in rows.items():
        assert [r["region"] for r in rebuilt[mode]["regions"]] == [r["region"] for r in row["regions"]]
        assert [r.get("gflop") for r in rebuilt[mode]["regions"]] == [r.get("gflop") for r in row["regions"]]
