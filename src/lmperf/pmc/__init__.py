"""lmperf.pmc (see ../shared/DESIGN.md)."""
