"""`lmperf bench`: step benchmarks of TransformerLM (timing.py times, sweep.py runs a grid of
configurations into a run directory; the step itself is lmperf.model.step)."""
