"""`lmperf attention`: every attention implementation a user could pick, timed side by side
(benchmark.py measures, report.py renders, commands.py is the CLI)."""
