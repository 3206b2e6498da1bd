"""Runs interpreted_adamw_cases.py under Triton's CPU interpreter (conftest's run_interpreted)."""

from pathlib import Path


def test_adamw_kernel_under_the_interpreter(run_interpreted):
    run_interpreted(Path(__file__).parent / "interpreted_adamw_cases.py")
