"""Runs interpreted_triton_cases.py in a subprocess with TRITON_INTERPRET=1 and no GPU.

The variable must be set before Triton first compiles a kernel, and it must not leak into the
other tests of this session (on a GPU machine they use the compiled kernels).
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_triton_kernels_under_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "interpreted_triton_cases.py")],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
