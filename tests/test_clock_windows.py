"""benchmarks/scripts/clock_windows.py: busy samples of a window, their clock and power, by hand."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scripts" / "clock_windows.py"
HEADER = "timestamp, index, clocks.current.sm [MHz], power.draw [W], temperature.gpu, clocks_event_reasons.active\n"


def _run(tmp_path, lines: list[str], *windows: str):
    log, env = tmp_path / "smi.csv", tmp_path / "env.json"
    log.write_text(HEADER + "".join(lines), encoding="utf-8")
    env.write_text(json.dumps({"device": "GPU"}), encoding="utf-8")
    return subprocess.run([sys.executable, str(SCRIPT), str(log), str(env), *windows], capture_output=True, text=True)


def test_a_window_keeps_its_gpus_busy_samples_only(tmp_path):
    lines = [
        "2026/11/27 10:00:00.000, 0, 345 MHz, 80.0 W, 30, 0x0000000000000001\n",  # idle: below 300 W
        "2026/11/27 10:00:01.000, 0, 1500 MHz, 690.0 W, 50, 0x0000000000000004\n",  # at the power cap
        "2026/11/27 10:00:02.000, 0, 1600 MHz, 680.0 W, 50, 0x0000000000000000\n",
        "2026/11/27 10:00:02.000, 1, 1900 MHz, 690.0 W, 50, 0x0000000000000004\n",  # another GPU
        "2026/11/27 10:00:03.000, 0, 1700 MHz, 700.0 W, 50, 0x0000000000000004\n",
        "2026/11/27 10:00:09.000, 0, 1980 MHz, 700.0 W, 50, 0x0000000000000000\n",  # after the window
    ]
    done = _run(tmp_path, lines, "step=10:00:00-10:00:05@0")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert (row["samples"], row["sm_mhz_median"], row["power_w_median"]) == (3, 1600, 690.0)
    assert row["power_capped_share"] == round(2 / 3, 3) and row["env"] == {"device": "GPU"}


def test_a_bad_window_or_an_empty_one_is_one_line_and_exit_2(tmp_path):
    line = "2026/11/27 10:00:01.000, 0, 1500 MHz, 690.0 W, 50, 0x0000000000000004\n"
    for window in ("no-times@0", "step=11:00:00-11:00:05@0"):
        done = _run(tmp_path, [line], window)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
