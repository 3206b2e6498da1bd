"""lmperf.distributed (see ../shared/DESIGN.md)."""
