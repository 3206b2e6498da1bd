"""Nsight Systems capture of the same steps `lmperf profile` runs, warm-up excluded.

The profiled program runs each mode's warm-up, then its measured steps inside one NVTX range
`lmperf_measured`, without torch.profiler. nsys starts capturing at that range and stops at its
end (`--capture-range=nvtx`), once per mode; the model's own NVTX ranges (regions and phases)
appear in the report as in torch.profiler's tables.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import torch

from lmperf.model.step import ModelStep, StepConfig
from lmperf.profile.run import ProfileSettings, regions_of
from lmperf.profile.trace import MEASURED, run_measured


def nsys_command(program: Sequence[str], output: Path, captures: int) -> list[str]:
    """The nsys command line that profiles `program` from its `captures` measured ranges."""
    return [
        "nsys",
        "profile",
        "--trace=cuda,nvtx,osrt",
        "--capture-range=nvtx",
        f"--nvtx-capture={MEASURED}",
        f"--capture-range-end=repeat-shutdown:{captures}",
        # nsys matches a capture range only against registered NVTX strings unless told otherwise.
        "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0",
        "--force-overwrite=true",
        "-o",
        str(output),
        *program,
    ]


def run_nsys(command: Sequence[str]) -> int | None:
    """Run the command if nsys is on the PATH; its exit status, or None when nsys is missing."""
    if shutil.which("nsys") is None:
        return None
    return subprocess.run(list(command), check=False).returncode


def run_for_nsys(config: StepConfig, modes: Sequence[str], settings: ProfileSettings) -> None:
    """The program nsys runs: per mode, warm-up, then the measured steps in `lmperf_measured`."""
    settings.validate()
    step = ModelStep(replace(config, mode=modes[0]).validate(), torch.device(settings.device))
    with regions_of(step):
        for mode in modes:
            for _ in range(settings.warmup):
                step.run(mode)
            run_measured(lambda: step.run(mode), settings.steps, step.device)
