"""`lmperf bench`: step benchmarks of TransformerLM (steps.py builds, timing.py times,
sweep.py runs a grid of configurations into a run directory)."""
