"""`lmperf attention`: every attention implementation a user could pick, timed side by side
(benchmark.py measures, report.py renders, commands.py is the CLI)."""

from lmperf.report.rundir import register_command

register_command("attention", lambda row: "impl" in row and "head_dim" in row)
