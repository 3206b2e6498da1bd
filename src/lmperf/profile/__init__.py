"""Where a step's time and memory go: kernels, model regions and FLOPs vs time (run.py), memory
peaks beside the analytic model (memory.py), dtypes under autocast (precision.py), nsys captures."""
