"""Where a step's time and memory go: kernels, model regions and FLOPs vs time (run.py), memory
peaks beside the analytic model (memory.py), dtypes under autocast (precision.py), nsys captures."""

from lmperf.report.rundir import register_command

register_command("profile", lambda row: "mode" in row and not {"matmul_flops", "kind", "strategy"} & row.keys())
register_command("memory", lambda row: "kind" in row)
