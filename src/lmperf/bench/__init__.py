"""`lmperf bench`: step benchmarks of TransformerLM over a grid of configurations.

`run_bench(options)` runs a sweep (lmperf.run.sweep) into a new or resumed run directory and
renders its reports (report.py); `lmperf bench` is that function behind the command line."""

from lmperf.bench.run import COMMAND, BenchRun, run_bench
from lmperf.report.rundir import register_command

register_command(COMMAND, lambda row: "matmul_flops" in row and "strategy" not in row)

__all__ = ["BenchRun", "run_bench"]
