"""The sm90 compile report of the Gluon forward at the points the half-diagonal patch touches
(d128 and d64 causal) and at three it must leave alone (d128 and d64 non-causal, d80 causal: the
same SASS hash with and without it), on a machine without a GPU (Triton 3.6):

    python3 gluon_forward_half_diagonal_report.py SRC_DIR   (a checkout's src/, patched or not)
"""

import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), sys.argv[1]]
import gluon_sm90_report as report  # noqa: E402

for head_dim, causal in [(128, True), (64, True), (128, False), (80, True), (64, False)]:
    start = time.time()
    try:
        kernel = report.compile_sm90(head_dim, causal)
        print(head_dim, causal, kernel.metadata.shared, report.warp_specialised_report(kernel).replace("\n", " | ")[:400],
              f"{time.time() - start:.0f}s", flush=True)
    except Exception as error:  # a failed compile is the report
        print(head_dim, causal, "FAILED", str(error)[:3000], flush=True)
