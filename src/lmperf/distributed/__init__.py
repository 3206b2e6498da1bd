"""Data-parallel benchmarks on torch.distributed: collectives (comm.py), DDP and FSDP2 train steps
(strategies.py, bench.py) and communication overlap from profiles (overlap.py); the memory each
strategy keeps per rank is lmperf.analysis.sharding's. launch.py starts one process per GPU through torchrun or
joins a launch that already exists; guard.py keeps a failing rank from hanging the others."""

from lmperf.report.rundir import register_command

register_command("comm", lambda row: "op" in row and "size_bytes" in row)
register_command("bench-dist", lambda row: "strategy" in row)
