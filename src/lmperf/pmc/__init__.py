"""What model ran on this GPU: collect a step's hardware counters with ncu (collect.py), infer the
architecture from them (infer.py), and explain measured counters with the FLOP model (explain.py)."""

from lmperf.report.rundir import register_command

register_command("pmc-sweep", lambda row: "axis" in row)
