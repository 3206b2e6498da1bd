"""lmperf.profile (see ../shared/DESIGN.md)."""
