"""Dense peak throughput by GPU, for MFU. Vendor datasheet figures (dense, no sparsity), TFLOP/s.

`fp32` is plain fp32 on the CUDA cores (lmperf leaves TF32 off, torch's default), `bf16` the
tensor cores. Match is by substring of torch.cuda.get_device_name(), most specific first.
"""

from __future__ import annotations

from lmperf.errors import UsageError

PEAK_TFLOPS: list[tuple[str, dict[str, float]]] = [
    ("H100 PCIe", {"bf16": 756.0, "fp32": 51.2}),
    ("H100", {"bf16": 989.4, "fp32": 66.9}),  # SXM
    ("H200", {"bf16": 989.4, "fp32": 66.9}),
    ("H800", {"bf16": 989.4, "fp32": 66.9}),
    ("GH200", {"bf16": 989.4, "fp32": 66.9}),
    ("B200", {"bf16": 2250.0, "fp32": 80.0}),
    ("A100", {"bf16": 312.0, "fp32": 19.5}),
    ("A10G", {"bf16": 70.0, "fp32": 31.2}),
    ("L40S", {"bf16": 362.0, "fp32": 91.6}),
    ("L4", {"bf16": 121.0, "fp32": 30.3}),
    ("RTX 4090", {"bf16": 165.2, "fp32": 82.6}),
    ("RTX 3090", {"bf16": 71.0, "fp32": 35.6}),
    ("V100", {"bf16": 125.0, "fp32": 15.7}),  # fp16 tensor cores; V100 has no bf16
]


def peak_tflops(device_name: str, precision: str, override: float | None = None) -> float | None:
    """Dense peak for `precision` on the named GPU; `override` wins; None if unknown (e.g. CPU)."""
    if override is not None:
        if override <= 0:
            raise UsageError(f"peak TFLOP/s must be positive, got {override}")
        return override
    for fragment, peaks in PEAK_TFLOPS:
        if fragment in device_name:
            return peaks[precision]
    return None
